"""vLLM's defaults, per version, as vLLM applies them. Sources: vLLM wheels read per version
(vllm/engine/arg_utils.py EngineArgs._set_default_args / get_batch_defaults, vllm/config/,
vllm/platforms/cpu.py); see docs/research/vllm-defaults.md for file:line citations.
"""

from __future__ import annotations

from pydantic import BaseModel

from .geometry import ModelGeometry
from .units import GiB
from .versions import VllmVersion

MAX_LORA_RANK = 16  # LoRAConfig.max_lora_rank default, 0.8.5-0.33
MAX_LORAS = 1  # LoRAConfig.max_loras default
SWAP_SPACE_GIB = 4  # CacheConfig.swap_space default (GiB per GPU), present up to 0.13


def gpu_memory_utilization(version: VllmVersion) -> float:
    """CacheConfig.gpu_memory_utilization: 0.9 up to 0.13, 0.92 from 0.20 (0.14-0.19 read as 0.9)."""
    return 0.92 if version.at_least(0, 20) else 0.9


def derived_max_model_len(geometry: ModelGeometry) -> int | None:
    """vLLM's derived max_model_len: the config's max_position_embeddings (rope scaling is
    folded in by vLLM only for some rope types; the catalog keeps the config value)."""
    return geometry.max_position_embeddings


class Batching(BaseModel):
    max_num_batched_tokens: int
    max_num_seqs: int
    chunked_prefill: bool
    reasons: dict[str, str]


def _default_table(version: VllmVersion, device: str, world_size: int, usage: str,
                   gpu_memory_bytes: int | None, gpu_product: str | None,
                   notes: list[str]) -> tuple[int, int, str]:
    """(max_num_batched_tokens, max_num_seqs, why) for vLLM 0.10.2+ V1 defaults
    (EngineArgs.get_batch_defaults): index 0 = API server, 1 = LLM class."""
    i = 0 if usage == "api_server" else 1
    if device == "cpu":
        tokens = (2048, 4096)[i] * world_size
        seqs = (128, 256)[i] * world_size
        return tokens, seqs, f"CPU default for world size {world_size}"
    if gpu_memory_bytes is None:
        if device in ("cuda", "rocm"):
            notes.append("GPU memory size unknown: vLLM's default batch limits for GPUs under "
                         "70 GiB used (larger GPUs default to 8192/16384 batched tokens)")
        return (2048, 8192)[i], 256, "GPU default (GPU memory unknown, < 70 GiB assumed)"
    gib = gpu_memory_bytes / GiB
    a100 = "a100" in (gpu_product or "").lower()
    if gib >= 160 and version.at_least(0, 28):
        return (16384, 16384)[i], 1024, "GPU ≥ 160 GiB default (vLLM ≥ 0.28)"
    if gib >= 70 and not a100:
        return (8192, 16384)[i], 1024, "GPU ≥ 70 GiB (not A100) default"
    return (2048, 8192)[i], 256, "GPU < 70 GiB default"


def batching_defaults(*, version: VllmVersion, device: str, world_size: int, usage: str,
                      gpu_memory_bytes: int | None, gpu_product: str | None, max_model_len: int,
                      max_num_seqs: int | None, max_num_batched_tokens: int | None,
                      enable_chunked_prefill: bool | None, performance_mode: str | None,
                      notes: list[str]) -> Batching:
    reasons: dict[str, str] = {}
    # Chunked prefill: V0 (< 0.8) off unless set; 0.8.5-0.11 V1 forces it on; 0.12+ on by
    # default and may be turned off.
    if not version.at_least(0, 8):
        chunked = bool(enable_chunked_prefill)
        reasons["chunked_prefill"] = "set" if enable_chunked_prefill is not None else "V0 default off"
    elif not version.at_least(0, 12):
        chunked = True
        reasons["chunked_prefill"] = "forced on by the V1 engine (vLLM 0.8.5-0.11)"
        if enable_chunked_prefill is False:
            notes.append("--no-enable-chunked-prefill has no effect in vLLM 0.8.5-0.11 (V1 forces it on)")
    else:
        chunked = enable_chunked_prefill is not False
        reasons["chunked_prefill"] = "set" if enable_chunked_prefill is not None else "default on"

    if not version.at_least(0, 10, 2):
        # V0 (0.6.6): max_num_seqs 256; batched tokens max(max_model_len, 2048), or 2048 with
        # chunked prefill. The 0.8.5-0.10.1 V1 API server also used 2048 / 256.
        d_seqs = 256
        if version.at_least(0, 8):
            d_tokens, why = 2048, "V1 default 2048 (vLLM 0.8.5-0.10.1)"
        elif chunked:
            d_tokens, why = 2048, "V0 default with chunked prefill"
        else:
            d_tokens, why = max(max_model_len, 2048), "V0 default max(max_model_len, 2048)"
    else:
        d_tokens, d_seqs, why = _default_table(version, device, world_size, usage,
                                               gpu_memory_bytes, gpu_product, notes)

    if performance_mode == "throughput" and version.at_least(0, 18):
        d_tokens, d_seqs = d_tokens * 2, d_seqs * 2
        why += ", doubled by --performance-mode throughput"

    seqs = max_num_seqs if max_num_seqs is not None else d_seqs
    reasons["max_num_seqs"] = "set" if max_num_seqs is not None else f"default {d_seqs} ({why})"
    if max_num_batched_tokens is not None:
        tokens = max_num_batched_tokens
        reasons["max_num_batched_tokens"] = "set"
    else:
        tokens = d_tokens
        reason = f"default {d_tokens} ({why})"
        if version.at_least(0, 12):
            if tokens > seqs * max_model_len:
                tokens = seqs * max_model_len
                reason += f", clamped to max_num_seqs × max_model_len = {tokens}"
            if not chunked and tokens < max_model_len:
                tokens = max_model_len
                reason += ", raised to max_model_len (chunked prefill off)"
        reasons["max_num_batched_tokens"] = reason
    if not chunked and tokens < max_model_len:
        notes.append(f"max_num_batched_tokens {tokens} < max_model_len {max_model_len} with "
                     "chunked prefill off: vLLM refuses to start")
    return Batching(max_num_batched_tokens=tokens, max_num_seqs=seqs, chunked_prefill=chunked,
                    reasons=reasons)
