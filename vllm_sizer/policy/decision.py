"""The one decision: a workload + its estimate + policy → allow / mutate / deny / skip / unknown.

Pure: no I/O. The webhook and `vllm-sizer check` both call `review_object` (review.py), which
calls `decide_container` here for each vLLM container; messages are worded in messages.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..estimator import EngineSettings, ModelGeometry, build_report
from ..estimator.report import MemoryReport
from ..workloads.model import Workload
from ..workloads.quantity import MAX_QUANTITY
from . import messages
from .settings import Mode, PolicySettings

Verdict = Literal["allow", "mutate", "deny", "skip", "unknown"]
KV_ENV = "VLLM_CPU_KVCACHE_SPACE"


@dataclass
class ContainerDecision:
    workload: Workload
    verdict: Verdict
    reason: str  # fits | raised | no-limit | undersized | kv-auto-sized | over-limitrange |
    #              over-node | over-range | gpu-does-not-fit | cannot-size | skipped |
    #              limit-unknown | kv-env-unknown | will-not-start
    mode: Mode
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    report: MemoryReport | None = None
    needed_bytes: int | None = None
    limit_before: int | None = None
    limit_after: int | None = None
    request_before: int | None = None
    request_after: int | None = None
    pin_kv_gib: float | None = None  # VLLM_CPU_KVCACHE_SPACE value to add
    fitting_tokens: int | None = None  # largest --max-num-batched-tokens within the current limit
    # when no --max-num-batched-tokens fits: the other single changes that do, (what, value)
    levers: list[tuple[str, str]] = field(default_factory=list)
    # a Ray worker pod's total (policy/pods.py): (engine, replicas, bytes each) per engine
    pod_parts: list[tuple[str, int, int]] = field(default_factory=list)


def decide_container(
    w: Workload,
    report: MemoryReport | None,
    geometry: ModelGeometry | None,
    settings: EngineSettings | None,
    policy: PolicySettings,
    mode: Mode,
    headroom: float,
    cannot_size: str | None = None,
    will_not_start: str | None = None,
) -> ContainerDecision:
    d = ContainerDecision(
        workload=w,
        verdict="allow",
        reason="fits",
        mode=mode,
        limit_before=w.limit_bytes,
        request_before=w.request_bytes,
        limit_after=w.limit_bytes,
        request_after=w.request_bytes,
    )
    if w.skip_reason or mode == "off":
        d.verdict, d.reason = "skip", "skipped"
        d.message = w.skip_reason or "vllm-sizer mode is off"
        return d
    if will_not_start is not None:
        # vLLM exits before it serves: no estimate, no limit written, never a denial (the
        # container's own start-up error says it again; a vendor build may take the value)
        d.verdict, d.reason = "unknown", "will-not-start"
        d.message = messages.will_not_start(w, will_not_start)
        d.warnings.append(d.message)
        return d
    if report is None:
        d.verdict, d.reason = "unknown", "cannot-size"
        d.message = messages.cannot_size(w, cannot_size or "no estimate")
        d.warnings.append(d.message)
        return d
    cpu = report.resolved.device == "cpu"
    # Never write a limit without knowing the effective one, nor pin an env var another
    # source may set: warn (deny in enforce mode) and patch nothing.
    unknown_why, unknown_reason = None, ""
    if w.patch_blocked:
        unknown_why, unknown_reason = w.patch_blocked, "limit-unknown"
    elif cpu and KV_ENV not in w.effective_env and (KV_ENV in w.env_unknown or w.env_from):
        unknown_why = messages.kv_env_unknown_why(w)
        unknown_reason = "kv-env-unknown"
    if unknown_why:
        d.reason = unknown_reason
        d.message = messages.cannot_patch(w, report, unknown_why)
        if mode == "enforce":
            d.verdict = "deny"
        else:
            d.verdict = "unknown"
            d.warnings.append(d.message)
        return d
    d.report = report

    # vLLM sizes its CPU KV cache from memory: raising the limit would only grow it.
    if cpu and report.kv_cache_auto_sized:
        if mode == "mutate":
            d.pin_kv_gib = policy.pin_cpu_kv_gib
            if geometry is not None and settings is not None:
                # estimate the object as it will be after the pin, so a re-review agrees
                report = build_report(
                    geometry,
                    settings.model_copy(update={"cpu_kvcache_space_gib": policy.pin_cpu_kv_gib}),
                )
                d.report = report
        elif mode == "enforce":
            d.verdict, d.reason = "deny", "kv-auto-sized"
            d.message = messages.kv_auto_sized(w, report, policy.pin_cpu_kv_gib)
            return d
        else:
            d.warnings.append(messages.kv_auto_sized_warning(report, policy.pin_cpu_kv_gib))

    needed = policy.needed_limit(report.total_memory_bytes, headroom)
    d.needed_bytes = needed
    ceiling, ceiling_name = _ceiling(policy)
    if report.device_fits is False:
        if mode == "enforce":
            d.verdict, d.reason = "deny", "gpu-does-not-fit"
            d.message = messages.gpu_does_not_fit(w, report)
            return d
        d.warnings.append(messages.gpu_does_not_fit(w, report))

    limit = w.limit_bytes
    if needed > ceiling and (limit is None or limit < needed) and mode in ("mutate", "enforce"):
        d.verdict, d.reason = "deny", ceiling_name
        d.message = messages.over_ceiling(w, report, needed, ceiling, ceiling_name)
        # what fits must still fit after headroom and rounding are added
        room = (ceiling // policy.rounding_bytes * policy.rounding_bytes) / (1 + headroom)
        d.fitting_tokens = _fitting_tokens(geometry, settings, int(room), report)
        if d.fitting_tokens:
            d.message += messages.fitting_hint(d.fitting_tokens, ceiling).replace(
                ", or set", "; set"
            )
        else:
            d.levers = _levers(geometry, settings, int(room), report)
            d.message += "; " + messages.levers_hint(d.levers, ceiling)
        return d

    if mode == "warn":
        if limit is None or limit < report.total_memory_bytes:
            d.reason = "undersized" if limit is not None else "no-limit"
            d.fitting_tokens = _fitting_tokens(geometry, settings, limit, report)
            d.warnings.append(messages.undersized_warning(w, report, needed, d.fitting_tokens))
        return _finish(d)

    if mode == "enforce" and limit is not None and limit < report.total_memory_bytes:
        d.verdict, d.reason = "deny", "undersized"
        d.fitting_tokens = _fitting_tokens(geometry, settings, limit, report)
        levers = None
        if not d.fitting_tokens:
            d.levers = levers = _levers(geometry, settings, limit, report)
        d.message = messages.undersized(w, report, needed, d.fitting_tokens, levers)
        return d

    # mutate (and enforce where no limit is set): raise, never lower.
    if limit is None or (mode == "mutate" and limit < needed):
        # a request set higher than the new limit keeps its value; the limit rises to it
        d.limit_after = raised = max(needed, d.request_before or 0)
        d.reason = "no-limit" if limit is None else "raised"
        if (d.request_before or 0) < raised:
            d.request_after = raised
    return _finish(d)


def _finish(d: ContainerDecision) -> ContainerDecision:
    changed = (
        d.limit_after != d.limit_before
        or d.request_after != d.request_before
        or d.pin_kv_gib is not None
    )
    if changed:
        d.verdict = "mutate"
    d.message = messages.decision_text(d)
    if d.pin_kv_gib is not None:
        d.warnings.append(messages.kv_pinned_warning(d.pin_kv_gib))
    if d.verdict == "mutate":
        d.warnings.insert(0, messages.mutated_warning(d))
    return d


def _ceiling(policy: PolicySettings) -> tuple[int, str]:
    """The largest limit a pod could run with: the namespace's LimitRange max, the largest
    node, and in any case the largest quantity Kubernetes represents (2^63-1 bytes: an
    absurd engine's estimate is never written past it)."""
    candidates = [
        (policy.limit_range_max_bytes, "over-limitrange"),
        (policy.largest_node_memory_bytes, "over-node"),
    ]
    return min([(v, n) for v, n in candidates if v] + [(MAX_QUANTITY, "over-range")])


def _pinned(settings: EngineSettings, report: MemoryReport) -> EngineSettings:
    """The settings with an auto-sized CPU KV cache fixed at the size the report assumed."""
    if report.kv_cache_auto_sized and report.resolved.cpu_kv_cache_bytes:
        return settings.model_copy(
            update={"cpu_kvcache_space_gib": report.resolved.cpu_kv_cache_bytes / 1024**3}
        )
    return settings


def _levers(
    geometry: ModelGeometry | None,
    settings: EngineSettings | None,
    limit: int | None,
    report: MemoryReport,
) -> list[tuple[str, str]]:
    """The single changes that fit `limit` when no --max-num-batched-tokens does (the same
    inverse as the token hint: estimator/inverse.py)."""
    if not (geometry and settings and limit):
        return []
    from ..estimator.inverse import levers_within

    try:
        return levers_within(geometry, _pinned(settings, report), limit)
    except Exception:  # noqa: BLE001 - a hint must never break the decision
        return []


def _fitting_tokens(
    geometry: ModelGeometry | None,
    settings: EngineSettings | None,
    limit: int | None,
    report: MemoryReport,
) -> int | None:
    """Largest --max-num-batched-tokens whose estimate fits `limit` (LoRA on only)."""
    if not (geometry and settings and limit and report.resolved.enable_lora):
        return None
    from ..estimator.inverse import max_batched_tokens_within

    pinned = settings
    if report.kv_cache_auto_sized and report.resolved.cpu_kv_cache_bytes:
        pinned = settings.model_copy(
            update={"cpu_kvcache_space_gib": report.resolved.cpu_kv_cache_bytes / 1024**3}
        )
    tokens = max_batched_tokens_within(
        geometry, pinned, limit, ceiling=report.resolved.max_num_batched_tokens
    )
    if tokens is None or tokens >= report.resolved.max_num_batched_tokens:
        return None
    return tokens
