"""Every sentence vllm-sizer shows a person, in one place.

Denials are one line: what is wrong, the estimate and its largest terms, what to do.
Warnings stay under ~120 characters where possible and carry no "Warning:" prefix (kubectl
adds it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..estimator.report import MemoryReport
from ..estimator.units import GiB
from ..workloads.model import Workload

if TYPE_CHECKING:
    from .decision import ContainerDecision
    from .pods import Part

KV_ENV_NAME = "VLLM_CPU_KVCACHE_SPACE"


def printable(text: str) -> str:
    """A message as a person's terminal should show it: characters that are not printable (C0 and
    C1 controls such as ESC or newline, bidi overrides, zero-width marks) come from names and
    values in the object and are written escaped (`\\x1b`), never interpreted: a container
    named with a terminal escape must not recolour `kubectl` output, and a Warning header must
    not carry a control character."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def gi(n: int | float | None) -> str:
    """Human quantity in Gi with one decimal, rounded up so it never understates: 22.4Gi."""
    if n is None:
        return "unset"
    tenths = -(-int(n) * 10 // GiB)
    return f"{tenths / 10:.1f}Gi"


def role(w: Workload) -> str:
    """ " (multi-node leader)" / " (multi-node worker)": the container is one node of an engine
    spread over several pods (a LeaderWorkerSet's Ray group), sized for that node only;
    " (Ray worker with the engine)": a Ray worker pod that may hold an engine's replica."""
    r = w.settings.node_role if w.settings is not None else None
    if r == "replica":
        return " (Ray worker with the engine)"
    return f" (multi-node {r})" if r else ""


def pod_total(w: Workload, parts: list[Part], ray: int, total: int, note: str) -> str:
    """Each engine's part of a Ray worker pod's total (policy/pods.py)."""
    each = " + ".join(
        f"{p.count} × {p.engine} {gi(p.each)}" if p.count > 1 else f"{p.engine} {gi(p.each)}"
        for p in parts
    )
    return f"{w.container}: {each} + Ray's node processes {gi(ray)} = {gi(total)}: {note}"


def _who(w: Workload) -> str:
    ns = f"{w.namespace}/" if w.namespace else ""
    return f"{w.kind} {ns}{w.name} container {w.container}{role(w)}"


def _terms(report: MemoryReport) -> str:
    return ", ".join(f"{t.name.replace('_', ' ')} {gi(t.bytes)}" for t in report.largest_terms(3))


def fitting_hint(tokens: int, limit: int) -> str:
    return f", or set --max-num-batched-tokens {tokens} to fit {gi(limit)}"


def levers_hint(levers: list[tuple[str, str]], limit: int) -> str:
    """What else fits when no --max-num-batched-tokens does (the base alone is over the limit):
    each single change at its largest fitting value."""
    if not levers:
        return (
            f"no --max-num-batched-tokens, KV cache size, LoRA rank, --max-loras or "
            f"--max-model-len alone fits {gi(limit)}"
        )
    options = " or ".join(
        f"{what}={value}" if what.startswith("env ") else f"{what} {value}"
        for what, value in levers
    )
    return f"no --max-num-batched-tokens fits {gi(limit)}, but {options} does"


def undersized(
    w: Workload,
    report: MemoryReport,
    needed: int,
    fitting: int | None,
    levers: list[tuple[str, str]] | None = None,
) -> str:
    msg = (
        f"vllm-sizer: {_who(w)}: memory limit {gi(w.limit_bytes)} is below the estimated "
        f"peak {gi(report.total_memory_bytes)} ({_terms(report)}); set resources.limits.memory "
        f"to at least {gi(needed)}"
    )
    if fitting:
        msg += fitting_hint(fitting, w.limit_bytes or 0)
    elif levers is not None:
        msg += "; " + levers_hint(levers, w.limit_bytes or 0)
    return msg


def undersized_warning(w: Workload, report: MemoryReport, needed: int, fitting: int | None) -> str:
    if w.limit_bytes is None:
        return (
            f"{w.container}{role(w)}: no memory limit; estimated peak {gi(report.total_memory_bytes)}, "
            f"suggest {gi(needed)}"
        )
    msg = (
        f"{w.container}{role(w)}: limit {gi(w.limit_bytes)} < estimated peak "
        f"{gi(report.total_memory_bytes)}; needs {gi(needed)}"
    )
    if fitting:
        msg += f" or --max-num-batched-tokens {fitting}"
    return msg


def over_ceiling(w: Workload, report: MemoryReport, needed: int, ceiling: int, reason: str) -> str:
    what = {
        "over-limitrange": "the namespace LimitRange max",
        "over-range": "the largest memory quantity Kubernetes represents",
    }.get(reason, "the largest node's memory")
    return (
        f"vllm-sizer: {_who(w)}: needs {gi(needed)} (estimated peak "
        f"{gi(report.total_memory_bytes)}: {_terms(report)}), above {what} {gi(ceiling)}, "
        "so the pod could never run"
    )


def kv_auto_sized(w: Workload, report: MemoryReport, pin_gib: float) -> str:
    return (
        f"vllm-sizer: {_who(w)}: vLLM {report.resolved.version} on CPU sizes its KV cache from "
        "the memory limit when VLLM_CPU_KVCACHE_SPACE is unset, so no limit leaves room for "
        f"the LoRA prefill scratch; set env VLLM_CPU_KVCACHE_SPACE (e.g. {pin_gib:g}) and a "
        f"limit of at least {gi(report.total_memory_bytes)}"
    )


def kv_auto_sized_warning(report: MemoryReport, pin_gib: float) -> str:
    return (
        f"VLLM_CPU_KVCACHE_SPACE unset: vLLM {report.resolved.version} grows the KV cache to "
        f"the limit; set it (e.g. {pin_gib:g})"
    )


def kv_pinned_warning(pin_gib: float) -> str:
    return f"VLLM_CPU_KVCACHE_SPACE={pin_gib:g} pins the KV cache, so it cannot grow into the LoRA scratch's room"


def gpu_does_not_fit(w: Workload, report: MemoryReport) -> str:
    return (
        f"vllm-sizer: {_who(w)}: the model does not fit the GPU memory "
        f"({gi(report.device_memory_bytes)} budget per GPU); use more GPUs "
        "(--tensor-parallel-size), a smaller --max-model-len or a quantized model"
    )


def kv_env_unknown_why(w: Workload) -> str:
    if KV_ENV_NAME in w.env_unknown:
        source = "valueFrom"
    else:
        source = "envFrom (" + ", ".join(w.env_from) + ")"
    return (
        f"{KV_ENV_NAME} may be set by {source}, so the CPU KV cache size is unknown and "
        "vllm-sizer does not pin it; set it as a literal env value (it wins over envFrom)"
    )


def cannot_patch(w: Workload, report: MemoryReport | None, why: str) -> str:
    est = f" (estimated peak {gi(report.total_memory_bytes)} as read)" if report else ""
    return f"vllm-sizer: {_who(w)}: not sized{est}: {why}"


def not_patchable(w: Workload) -> str:
    """Why a read and estimated container is not changed: its object cannot carry the limit."""
    then = (
        "its pods are sized when they are created"
        if w.pods_sized_at_creation
        else "nothing sizes its pods either: set the memory limit by hand from the estimate"
    )
    return (
        f"{w.container}: not changed: this object cannot carry the container's memory limit "
        f"(see the reader's note); {then}"
    )


def immutable_template(kind: str) -> str:
    return (
        f"an existing {kind}'s pod template is immutable: vllm-sizer changes it only on "
        "CREATE (decided as warn)"
    )


def cannot_size(w: Workload, why: str) -> str:
    return f"{w.container}: cannot size: {why}"


def will_not_start(w: Workload, why: str) -> str:
    """A container whose vLLM stops before it serves (its parser or its start-up configuration
    check rejects a value): nothing runs to size, so nothing is changed."""
    return f"{w.container}: not sized: {why}"


def _changes(d: ContainerDecision, limit: str, request: str, pin_suffix: str) -> list[str]:
    """What a mutation changes, worded for a warning or for the decision annotation."""
    parts = []
    if d.limit_after != d.limit_before:
        parts.append(f"{limit} {gi(d.limit_before)} → {gi(d.limit_after)}")
    if d.request_after != d.request_before:
        parts.append(f"{request} {gi(d.request_before)} → {gi(d.request_after)}")
    if d.pin_kv_gib is not None:
        parts.append(f"env VLLM_CPU_KVCACHE_SPACE={d.pin_kv_gib:g}{pin_suffix}")
    return parts


def mutated_warning(d: ContainerDecision) -> str:
    total = gi(d.report.total_memory_bytes) if d.report else "?"
    parts = _changes(d, "limit", "request", " added")
    return f"{d.workload.container}{role(d.workload)}: {', '.join(parts)} (estimated peak {total})"


def decision_text(d: ContainerDecision) -> str:
    """The `vllm-sizer.io/decision` annotation: what changed, from → to."""
    return _decision_text(d) + role(d.workload)


def _decision_text(d: ContainerDecision) -> str:
    if d.verdict == "deny":
        return f"deny: {d.reason}"
    changes = _changes(d, "limits.memory", "requests.memory", "")
    if changes:
        return "mutate: " + ", ".join(changes)
    if d.mode == "warn" and d.reason in ("undersized", "no-limit"):
        return f"warn: {d.reason}, needs {gi(d.needed_bytes)}"
    return f"allow: limits.memory {gi(d.limit_before)} covers {gi(d.report.total_memory_bytes if d.report else 0)}"
