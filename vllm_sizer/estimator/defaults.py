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


def _tier_table(
    version: VllmVersion,
    usage: str,
    memory_bytes: int | None,
    gpu_product: str | None,
    notes: list[str],
    what: str,
) -> tuple[int, int, str]:
    """GPU tiers of EngineArgs defaults (docs/research/vllm-defaults.md §1b):
    ≥160 GiB (0.28+) 16384/16384, 1024; ≥70 GiB (not A100 from 0.9.2) API 8192 / LLM 16384,
    1024; otherwise API 2048 / LLM 8192, 256."""
    i = 0 if usage == "api_server" else 1
    if memory_bytes is None:
        if what == "GPU":
            notes.append(
                "GPU memory size unknown: vLLM's default batch limits for GPUs under "
                "70 GiB used (larger GPUs default to 8192 batched tokens on the API server)"
            )
        return (2048, 8192)[i], 256, f"{what} default (memory unknown, < 70 GiB assumed)"
    gib = memory_bytes / GiB
    a100 = "a100" in (gpu_product or "").lower() and version.at_least(0, 9, 2)
    if gib >= 160 and version.at_least(0, 28):
        return (16384, 16384)[i], 1024, f"{what} ≥ 160 GiB default (vLLM ≥ 0.28)"
    if gib >= 70 and not a100:
        return (8192, 16384)[i], 1024, f"{what} ≥ 70 GiB (not A100) default"
    return (2048, 8192)[i], 256, f"{what} < 70 GiB default"


def _default_table(
    version: VllmVersion,
    device: str,
    world_size: int,
    usage: str,
    gpu_memory_bytes: int | None,
    gpu_product: str | None,
    node_memory_bytes: int | None,
    notes: list[str],
) -> tuple[int, int, str]:
    """(max_num_batched_tokens, max_num_seqs, why) for V1-engine defaults (0.8.5+)."""
    i = 0 if usage == "api_server" else 1
    if device == "cpu":
        if version.at_least(0, 10, 1):  # CPU table, ws = tp·pp (0.10.1:arg_utils.py:1678)
            return (
                (2048, 4096)[i] * world_size,
                (128, 256)[i] * world_size,
                f"CPU default for world size {world_size}",
            )
        if version.at_least(0, 10):  # 0.10.0: device memory = the KV space → small tier
            return (2048, 8192)[i], 256, "CPU in vLLM 0.10.0: GPU small tier"
        # 0.9.x: GPU tiers with host RAM as "device memory" (0.9.2:platforms/cpu.py:76-77)
        return _tier_table(version, usage, node_memory_bytes, None, notes, "CPU host RAM")
    return _tier_table(version, usage, gpu_memory_bytes, gpu_product, notes, "GPU")


def batching_defaults(
    *,
    version: VllmVersion,
    device: str,
    world_size: int,
    usage: str,
    gpu_memory_bytes: int | None,
    gpu_product: str | None,
    max_model_len: int,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    enable_chunked_prefill: bool | None,
    performance_mode: str | None,
    notes: list[str],
    node_memory_bytes: int | None = None,
) -> Batching:
    reasons: dict[str, str] = {}
    # V0 engine: vLLM < 0.8.5, and the CPU backend until 0.9.2 (no supports_v1 in 0.8.5).
    v0 = not version.at_least(0, 8, 5) or (device == "cpu" and not version.at_least(0, 9, 2))
    # Chunked prefill: V0 off unless set; V1 0.8.5-0.11 forces it on (non-pooling models);
    # 0.12+ on by default and may be turned off.
    if v0:
        chunked = bool(enable_chunked_prefill)
        reasons["chunked_prefill"] = (
            "set" if enable_chunked_prefill is not None else "V0 default off"
        )
    elif not version.at_least(0, 12):
        chunked = True
        reasons["chunked_prefill"] = "forced on by the V1 engine (vLLM 0.8.5-0.11)"
        if enable_chunked_prefill is False:
            notes.append(
                "--no-enable-chunked-prefill has no effect in vLLM 0.8.5-0.11 (V1 forces it on)"
            )
    else:
        chunked = enable_chunked_prefill is not False
        reasons["chunked_prefill"] = "set" if enable_chunked_prefill is not None else "default on"

    if v0:
        # V0 (0.6.6 config.py:1427-1442): 256 sequences; max(max_model_len, 2048) tokens, or
        # 2048 with chunked prefill.
        d_seqs = 256
        if chunked:
            d_tokens, why = 2048, "V0 default with chunked prefill"
        else:
            d_tokens, why = max(max_model_len, 2048), "V0 default max(max_model_len, 2048)"
    else:
        d_tokens, d_seqs, why = _default_table(
            version,
            device,
            world_size,
            usage,
            gpu_memory_bytes,
            gpu_product,
            node_memory_bytes,
            notes,
        )

    if performance_mode == "throughput" and version.at_least(0, 17):
        d_tokens, d_seqs = d_tokens * 2, d_seqs * 2
        why += ", doubled by --performance-mode throughput"

    if max_num_batched_tokens is not None:
        tokens = max_num_batched_tokens
        reasons["max_num_batched_tokens"] = "set"
    else:
        tokens = d_tokens
        reason = f"default {d_tokens} ({why})"
        if version.at_least(0, 12):  # 0.12.0:arg_utils.py:1993-2006
            seqs_for_clamp = max_num_seqs if max_num_seqs is not None else d_seqs
            if not chunked and tokens < max_model_len:
                tokens = max_model_len
                reason += ", raised to max_model_len (chunked prefill off)"
            if tokens > seqs_for_clamp * max_model_len:
                tokens = seqs_for_clamp * max_model_len
                reason += f", clamped to max_num_seqs × max_model_len = {tokens}"
        elif not v0 and not chunked:
            tokens = max_model_len
        reasons["max_num_batched_tokens"] = reason
    if max_num_seqs is not None:
        seqs = max_num_seqs
        reasons["max_num_seqs"] = "set"
    else:
        seqs = d_seqs
        reasons["max_num_seqs"] = f"default {d_seqs} ({why})"
        if version.at_least(0, 10, 2) and seqs > tokens:  # 0.10.2:arg_utils.py:1742
            seqs = tokens
            reasons["max_num_seqs"] += f", clamped to max_num_batched_tokens = {tokens}"
    if not chunked and tokens < max_model_len:
        notes.append(
            f"max_num_batched_tokens {tokens} < max_model_len {max_model_len} with "
            "chunked prefill off: vLLM refuses to start"
        )
    if tokens < seqs:  # every version: 0.6.6:config.py:1476, 0.33.0:config/scheduler.py:331
        notes.append(
            f"max_num_batched_tokens {tokens} < max_num_seqs {seqs}: vLLM refuses to start"
        )
    return Batching(
        max_num_batched_tokens=tokens, max_num_seqs=seqs, chunked_prefill=chunked, reasons=reasons
    )
