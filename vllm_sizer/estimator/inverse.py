"""Inverse questions for rejection messages: the largest max_num_batched_tokens (or LoRA rank)
whose host total still fits a memory limit."""

from __future__ import annotations

from .calculator import build_report
from .geometry import ModelGeometry
from .settings import ALLOWED_LORA_RANKS, EngineSettings


def _total(geometry: ModelGeometry, settings: EngineSettings, **change: int) -> int:
    return build_report(geometry, settings.model_copy(update=change)).total_memory_bytes


def max_batched_tokens_within(geometry: ModelGeometry, settings: EngineSettings,
                              limit_bytes: int, floor: int = 1,
                              ceiling: int = 1 << 20) -> int | None:
    """Largest max_num_batched_tokens whose total ≤ limit_bytes, or None when even `floor`
    does not fit. The total is monotonic in T, so a binary search is exact."""
    if _total(geometry, settings, max_num_batched_tokens=floor) > limit_bytes:
        return None
    lo, hi = floor, ceiling
    if _total(geometry, settings, max_num_batched_tokens=hi) <= limit_bytes:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _total(geometry, settings, max_num_batched_tokens=mid) <= limit_bytes:
            lo = mid
        else:
            hi = mid
    return lo


def max_lora_rank_within(geometry: ModelGeometry, settings: EngineSettings,
                         limit_bytes: int) -> int | None:
    """Largest allowed --max-lora-rank whose total ≤ limit_bytes, or None."""
    best = None
    for rank in ALLOWED_LORA_RANKS:
        if _total(geometry, settings, max_lora_rank=rank) <= limit_bytes:
            best = rank
        else:
            break
    return best


def gpu_limits_within(geometry: ModelGeometry, settings: EngineSettings) -> dict[str, int | None]:
    """Device side: the largest max_model_len (at the given max_num_seqs) and the largest
    max_num_seqs (at the given max_model_len) for which the upper estimate leaves vLLM's KV
    cache room for one max_model_len sequence on every GPU (a suggestion that surely fits).
    Needs settings.gpu_memory_bytes; None when nothing fits or the GPU size is unknown."""
    rep = build_report(geometry, settings)
    length, seqs = rep.device_max_model_len, rep.device_max_num_seqs
    return {"max_model_len": length if length and length >= 16 else None,
            "max_num_seqs": seqs if seqs else None}
