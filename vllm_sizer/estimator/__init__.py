"""The estimator: model geometry + vLLM engine settings → MemoryReport.

Pure and lean: depends on pydantic and the standard library only, so control planes can import
it instead of copying its constants.
"""

from .calculator import LoraConfig, ModelMemoryCalculator, build_report, calculate_memory
from .catalog import catalog_ids, model_config
from .catalog import lookup as lookup_model
from .errors import EstimatorError, InvalidSettings, MissingConfigField, UnknownModel
from .geometry import ModelGeometry
from .inverse import gpu_limits_within, max_batched_tokens_within, max_lora_rank_within
from .lora import (
    calculate_lora_adapter_memory,
    calculate_lora_logits_scratch,
    calculate_lora_prefill_scratch_bytes,
    mechanism_bytes_per_token,
)
from .report import MemoryReport, Term
from .settings import EngineSettings, ResolvedSettings, resolve_settings
from .versions import VllmVersion

calculate_lora_prefill_scratch = ModelMemoryCalculator().calculate_lora_prefill_scratch

__all__ = [
    "EngineSettings",
    "EstimatorError",
    "InvalidSettings",
    "LoraConfig",
    "MemoryReport",
    "MissingConfigField",
    "ModelGeometry",
    "ModelMemoryCalculator",
    "ResolvedSettings",
    "Term",
    "UnknownModel",
    "VllmVersion",
    "build_report",
    "calculate_lora_adapter_memory",
    "calculate_lora_logits_scratch",
    "calculate_lora_prefill_scratch",
    "calculate_lora_prefill_scratch_bytes",
    "calculate_memory",
    "catalog_ids",
    "gpu_limits_within",
    "lookup_model",
    "max_batched_tokens_within",
    "max_lora_rank_within",
    "mechanism_bytes_per_token",
    "model_config",
    "resolve_settings",
]
