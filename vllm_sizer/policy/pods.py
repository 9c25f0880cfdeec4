"""The memory of one Ray worker pod that holds several Ray Serve engine replicas: the one place
that sums them, so the webhook, the controller and `check` agree.

Ray Serve places each replica of an engine as a placement group of accelerator bundles (one
per GPU worker, the replica actor and its engine core merged into the first:
ray-project/ray@898d8a70 python/ray/llm/_internal/serve/core/server/llm_server.py
get_deployment_options) wherever the bundles fit (PACK by default, STRICT_PACK in older
releases: ray@b4061b5 python/ray/llm/_internal/serve/engines/vllm/vllm_models.py
placement_strategy). A pod therefore holds at most what its accelerators (as Ray declares them:
workloads.platforms.ray_start_accelerators) can take: the pod total is the largest set of
replicas, from every engine placed on the group, whose bundles fit one pod, each replica's
host memory once (its estimate without Ray's node processes) and Ray's node processes once.
A replica that fits one pod is counted whole on one pod (PACK keeps a placement group on one
node when one has room). Where that cannot be known (a replica wider than a pod beside other
engines, fractional or unknown bundles, no accelerator count, an engine whose replicas the
manifest does not bound), the pod is sized for its largest engine and the reason is said.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..estimator.report import MemoryReport, Term
from ..workloads.model import Workload
from . import messages
from .decision import ContainerDecision, decide_container
from .settings import Mode, PolicySettings

MAX_POD_ACCELERATORS = 256  # beyond this the per-pod search is not run (no such node exists)
POD_SUFFIX = " (pod total)"


def pod_total_row(container: str) -> str:
    """The name of the row that holds the total of a pod whose container `container` runs
    several engine replicas (beside one row per engine)."""
    return container + POD_SUFFIX


def pod_container(row: str) -> str:
    """The pod's container a decision row stands for (a pod total row: its container)."""
    return row.removesuffix(POD_SUFFIX)


@dataclass(frozen=True)
class Part:
    """One engine's share of the pod total: `count` replicas of `each` bytes, `gpus` each."""

    engine: str
    count: int
    each: int
    gpus: int
    why: str


@dataclass(frozen=True)
class PodTotal:
    container: str
    parts: list[Part]
    ray_bytes: int
    ray_source: str
    total: int
    note: str  # how the parts were chosen, or why only the largest engine is counted
    largest: ContainerDecision


def _ray_term(report: MemoryReport) -> tuple[int, str]:
    t = next((t for t in report.terms if t.name == "ray_node_processes"), None)
    return (t.bytes, t.source) if t is not None else (0, "")


def _replica_gpus(w: Workload) -> tuple[int | None, str]:
    """Whole accelerators per replica, or None with why they are not known."""
    p, s = w.ray_placement, w.settings
    if p is None or s is None:
        return None, "its replicas' placement is not read from the manifest"
    workers = s.tensor_parallel_size * s.pipeline_parallel_size
    if s.data_parallel_size > 1:
        return None, "a data-parallel engine places its ranks its own way"
    if p.replica_accelerators is not None:
        total = p.replica_accelerators + p.actor_accelerators
    else:
        total = (p.worker_accelerators if p.worker_accelerators is not None else 1) * workers
        total += p.actor_accelerators
    if total != int(total):
        return None, f"{total:g} accelerators per replica (fractional bundles share a GPU)"
    return int(total), f"{int(total)} accelerator(s) per replica"


def _best(items: list[tuple[int, int, int]], capacity: int) -> list[int]:
    """Bounded knapsack: counts of each (weight, value, most) item with the largest value whose
    weights fit `capacity` (weights ≥ 0; a weight-0 item is taken as many times as allowed)."""
    counts = [most if weight == 0 else 0 for weight, _value, most in items]
    pieces: list[tuple[int, int, int, int]] = []  # (item, multiplicity, weight, value)
    for i, (weight, value, most) in enumerate(items):
        if weight == 0:
            continue
        most = min(most, capacity // weight)
        k = 1
        while most > 0:  # binary splitting: every count up to `most` is a sum of pieces
            take = min(k, most)
            pieces.append((i, take, weight * take, value * take))
            most -= take
            k *= 2
    best = [0] * (capacity + 1)
    chosen: list[list[int]] = [[] for _ in range(capacity + 1)]
    for p, (_i, _take, weight, value) in enumerate(pieces):
        for c in range(capacity, weight - 1, -1):
            if best[c - weight] + value > best[c]:
                best[c] = best[c - weight] + value
                chosen[c] = [*chosen[c - weight], p]
    top = max(range(capacity + 1), key=lambda c: best[c])
    for p in chosen[top]:
        i, take, _w, _v = pieces[p]
        counts[i] += take
    return counts


def pod_total(group: list[ContainerDecision]) -> PodTotal | None:
    """The most host memory one pod of a Ray worker group holds, from the engines placed on it
    (decisions of role "replica" on one pod template); None when the pod can hold no more than
    one replica of one engine (its estimate already is the pod's)."""
    sized = [d for d in group if d.report is not None]
    if not sized:
        return None
    first = sized[0].workload
    container = first.ray_placement.container if first.ray_placement else first.container
    rays = [_ray_term(d.report) for d in sized if d.report is not None]
    ray_bytes, ray_source = max(rays, key=lambda r: r[0])
    largest = max(sized, key=lambda d: d.report.total_memory_bytes if d.report else 0)

    def only_largest(why: str) -> PodTotal | None:
        if len(group) < 2:
            return None
        assert largest.report is not None
        each = largest.report.total_memory_bytes - _ray_term(largest.report)[0]
        part = Part(_engine(largest.workload), 1, each, 0, "the largest engine")
        note = (
            f"which replicas Ray puts together on one pod is not known ({why}): sized for "
            f"the largest engine, {_engine(largest.workload)}, alone; the pod's real peak may be "
            "higher"
        )
        return PodTotal(container, [part], ray_bytes, ray_source, each + ray_bytes, note, largest)

    unsized = [d for d in group if d.report is None]
    if unsized:
        return only_largest(f"{_engine(unsized[0].workload)} is not sized")
    pods = {d.workload.ray_placement.pod_accelerators for d in group if d.workload.ray_placement}
    capacity = next(iter(pods)) if len(pods) == 1 else None
    if capacity is None or capacity <= 0:
        return only_largest("the accelerators Ray declares on the pod are not known")
    if capacity > MAX_POD_ACCELERATORS:
        return only_largest(f"{capacity} accelerators on one pod")
    engines: list[tuple[ContainerDecision, int, int, int, str]] = []
    for d in sized:
        w, report = d.workload, d.report
        assert report is not None
        gpus, why = _replica_gpus(w)
        if gpus is None or w.ray_placement is None:
            return only_largest(f"{_engine(w)}: {why}")
        if gpus > capacity:
            if len(group) == 1:
                return None  # one engine wider than a pod: its estimate is one pod's share
            return only_largest(
                f"a replica of {_engine(w)} needs {gpus} accelerators, more than a pod's "
                f"{capacity}, so its ranks spread over pods beside the other engines"
            )
        p = w.ray_placement
        most = p.replicas if p.replicas is not None else capacity  # bounded by the pod anyway
        if gpus == 0 and p.replicas is None:
            return only_largest(f"{_engine(w)} uses no accelerator and its replicas are unbounded")
        if p.max_per_node is not None:
            most = min(most, p.max_per_node)
        each = report.total_memory_bytes - _ray_term(report)[0]
        engines.append((d, gpus, each, most, p.replicas_source))
    # a node has one accelerator type: engines that name different ones never share a pod
    kinds = {
        d.workload.ray_placement.accelerator_type
        for d, *_ in engines
        if d.workload.ray_placement is not None
    } - {None}
    best_counts: list[int] = []
    best_value = -1
    for kind in sorted(kinds, key=str) or [None]:
        pick = [e if _fits(e[0], kind) else (e[0], e[1], e[2], 0, e[4]) for e in engines]
        counts = _best([(g, v, m) for _d, g, v, m, _s in pick], capacity)
        value = sum(c * e[2] for c, e in zip(counts, pick, strict=True))
        if value > best_value:
            best_value, best_counts = value, counts
    parts = [
        Part(_engine(d.workload), c, each, gpus, src)
        for c, (d, gpus, each, _m, src) in zip(best_counts, engines, strict=True)
        if c
    ]
    if sum(p.count for p in parts) <= 1 and len(group) < 2:
        return None
    total = sum(p.count * p.each for p in parts) + ray_bytes
    note = (
        f"the most that one pod of {container} holds ({capacity} accelerators as Ray declares "
        "them): Ray Serve places each replica's bundles where they fit, a replica that fits "
        "one pod on one pod, so any set of replicas that fits its accelerators may share it; "
        "each replica's host memory counted once, Ray's node processes once"
    )
    return PodTotal(container, parts, ray_bytes, ray_source, total, note, largest)


def _fits(d: ContainerDecision, kind: str | None) -> bool:
    p = d.workload.ray_placement
    return p is None or p.accelerator_type is None or p.accelerator_type == kind


def _engine(w: Workload) -> str:
    return w.ray_placement.engine if w.ray_placement else w.model or w.container


def _report(pod: PodTotal) -> MemoryReport:
    assert pod.largest.report is not None
    terms = [
        Term(
            name=f"{p.engine} ×{p.count}",
            bytes=p.count * p.each,
            enters="sum",
            source=(
                f"{p.count} replica(s) of {p.engine} ({messages.gi(p.each)} each without "
                f"Ray's node processes; {p.why}"
                + (f", {p.gpus} accelerator(s) each)" if p.gpus else ")")
            ),
        )
        for p in pod.parts
    ]
    terms.append(
        Term(name="ray_node_processes", bytes=pod.ray_bytes, enters="sum", source=pod.ray_source)
    )
    notes = [pod.note]
    return pod.largest.report.model_copy(
        update={
            "total_memory_bytes": pod.total,
            "terms": terms,
            "notes": notes,
            "device_fits": None,
            "kv_cache_auto_sized": False,
        }
    )


def pod_decisions(
    decisions: list[ContainerDecision],
    policy: PolicySettings,
    mode: Mode,
    headroom: float,
) -> list[ContainerDecision]:
    """The decisions with, after the engines of each Ray worker pod template that may hold
    more than one replica, that pod's total decided against the pod's limit."""
    groups: dict[str, list[ContainerDecision]] = {}
    for d in decisions:
        s = d.workload.settings
        if s is not None and s.node_role == "replica" and d.verdict != "skip":
            groups.setdefault(d.workload.container_path, []).append(d)
    out: list[ContainerDecision] = []
    last = {id(g[-1]): g for g in groups.values()}
    for d in decisions:
        out.append(d)
        group = last.get(id(d))
        if group is None:
            continue
        pod = pod_total(group)
        if pod is None:
            continue
        report = _report(pod)
        base = pod.largest.workload
        assert base.settings is not None
        w = dataclasses.replace(
            base,
            container=pod_total_row(pod.container),
            model=" + ".join(f"{p.count}× {p.engine}" for p in pod.parts),
            settings=base.settings.model_copy(update={"node_role": None}),
            diagnostics=[],
            alternatives=[],
        )
        w_mode: Mode = mode if w.patchable or mode not in ("mutate", "enforce") else "warn"
        pd = decide_container(w, report, None, None, policy, w_mode, headroom)
        pd.warnings.insert(0, messages.pod_total(w, pod.parts, pod.ray_bytes, pod.total, pod.note))
        pd.pod_parts = [(p.engine, p.count, p.each) for p in pod.parts]
        out.append(pd)
    return out
