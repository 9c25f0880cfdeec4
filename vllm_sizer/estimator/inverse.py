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
    max_num_seqs (at the given max_model_len) for which vLLM's KV cache still holds one
    max_model_len sequence on every GPU. Needs settings.gpu_memory_bytes."""
    if not settings.gpu_memory_bytes:
        return {"max_model_len": None, "max_num_seqs": None}

    def fits(**change: int) -> bool:
        return bool(build_report(geometry, settings.model_copy(update=change)).device_fits)

    def search(field: str, lo: int, hi: int) -> int | None:
        if not fits(**{field: lo}):
            return None
        if fits(**{field: hi}):
            return hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(**{field: mid}):
                lo = mid
            else:
                hi = mid
        return lo

    rep = build_report(geometry, settings)
    r = rep.resolved
    pin = {"max_num_batched_tokens": r.max_num_batched_tokens}
    base = settings.model_copy(update=pin)
    settings = base
    return {"max_model_len": search("max_model_len", 16, max(r.max_model_len, 16) * 4),
            "max_num_seqs": search("max_num_seqs", 1, max(r.max_num_seqs, 1) * 4)}
