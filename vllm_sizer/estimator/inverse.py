"""Inverse questions for rejection messages: the largest max_num_batched_tokens (or LoRA rank)
whose host total still fits a memory limit."""

from __future__ import annotations

from .calculator import build_report
from .geometry import ModelGeometry
from .report import MemoryReport
from .settings import ALLOWED_LORA_RANKS, EngineSettings


def _total(geometry: ModelGeometry, settings: EngineSettings, **change: int) -> int:
    return build_report(geometry, settings.model_copy(update=change)).total_memory_bytes


def max_batched_tokens_within(
    geometry: ModelGeometry,
    settings: EngineSettings,
    limit_bytes: int,
    floor: int = 1,
    ceiling: int = 1 << 20,
) -> int | None:
    """Largest max_num_batched_tokens whose total ≤ limit_bytes and with which vLLM starts, or
    None. The total is monotonic in T, so a binary search is exact; vLLM refuses a T below
    max_num_seqs (or below max_model_len with chunked prefill off), so when the largest T that
    fits is refused, every smaller one is too."""
    if _total(geometry, settings, max_num_batched_tokens=floor) > limit_bytes:
        return None
    lo, hi = floor, ceiling
    if _total(geometry, settings, max_num_batched_tokens=hi) <= limit_bytes:
        lo = hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _total(geometry, settings, max_num_batched_tokens=mid) <= limit_bytes:
            lo = mid
        else:
            hi = mid
    return (
        lo
        if _starts(
            build_report(geometry, settings.model_copy(update={"max_num_batched_tokens": lo}))
        )
        else None
    )


def max_lora_rank_within(
    geometry: ModelGeometry, settings: EngineSettings, limit_bytes: int
) -> int | None:
    """Largest allowed --max-lora-rank whose total ≤ limit_bytes, or None."""
    best = None
    for rank in ALLOWED_LORA_RANKS:
        if _total(geometry, settings, max_lora_rank=rank) <= limit_bytes:
            best = rank
        else:
            break
    return best


def _fits(
    geometry: ModelGeometry, settings: EngineSettings, limit_bytes: int, **change: int
) -> bool:
    """The changed settings fit the limit and vLLM would still start with them."""
    report = build_report(geometry, settings.model_copy(update=change))
    return report.total_memory_bytes <= limit_bytes and _starts(report)


def _starts(report: MemoryReport) -> bool:
    """No note of the report says vLLM refuses to start with these settings."""
    return not any("refuses to start" in n for n in report.notes)


def _largest_int_within(
    geometry: ModelGeometry,
    settings: EngineSettings,
    limit_bytes: int,
    field: str,
    below: int,
    floor: int = 1,
) -> int | None:
    """Largest value of an integer setting in [floor, below) that fits, by binary search (the
    total is monotonic in each of these settings), or None."""
    if below <= floor or not _fits(geometry, settings, limit_bytes, **{field: floor}):
        return None
    lo, hi = floor, below
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits(geometry, settings, limit_bytes, **{field: mid}):
            lo = mid
        else:
            hi = mid
    return lo


def levers_within(
    geometry: ModelGeometry, settings: EngineSettings, limit_bytes: int
) -> list[tuple[str, str]]:
    """The single changes (other settings as they are) that bring the host total within
    limit_bytes, each at its largest fitting value, as (what to set, value):
    VLLM_CPU_KVCACHE_SPACE (whole GiB, as vLLM reads it; CPU only), --max-lora-rank (an allowed
    rank), --max-loras, --max-model-len (LoRA or not). Empty when none fits alone."""
    report = build_report(geometry, settings)
    r = report.resolved
    out: list[tuple[str, str]] = []
    if r.device == "cpu" and r.cpu_kv_cache_bytes:
        current = -(-r.cpu_kv_cache_bytes // 1024**3)
        gib = _largest_int_within(geometry, settings, limit_bytes, "cpu_kvcache_space_gib", current)
        if gib is not None:
            out.append(("env VLLM_CPU_KVCACHE_SPACE", str(gib)))
    if r.enable_lora:
        best = None
        for rank in ALLOWED_LORA_RANKS:
            if rank >= r.max_lora_rank:
                break
            if _fits(geometry, settings, limit_bytes, max_lora_rank=rank):
                best = rank
        if best is not None:
            out.append(("--max-lora-rank", str(best)))
        n = _largest_int_within(geometry, settings, limit_bytes, "max_loras", r.max_loras)
        if n is not None:
            out.append(("--max-loras", str(n)))
    length = _largest_int_within(
        geometry, settings, limit_bytes, "max_model_len", r.max_model_len, floor=16
    )
    if length is not None:
        out.append(("--max-model-len", str(length)))
    return out


def gpu_limits_within(geometry: ModelGeometry, settings: EngineSettings) -> dict[str, int | None]:
    """Device side: the largest max_model_len (at the given max_num_seqs) and the largest
    max_num_seqs (at the given max_model_len) for which the upper estimate leaves vLLM's KV
    cache room for one max_model_len sequence on every GPU (a suggestion that surely fits).
    Needs settings.gpu_memory_bytes; None when nothing fits or the GPU size is unknown."""
    rep = build_report(geometry, settings)
    length, seqs = rep.device_max_model_len, rep.device_max_num_seqs
    return {
        "max_model_len": length if length and length >= 16 else None,
        "max_num_seqs": seqs if seqs else None,
    }
