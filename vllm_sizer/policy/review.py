"""review_object: the whole pipeline for one Kubernetes object, shared by the admission webhook
and `vllm-sizer check`: read workloads → estimate each → decide → one JSON Patch.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from ..estimator import EstimatorError, MemoryReport, ModelGeometry, build_report
from ..estimator.catalog import cached_geometry
from ..estimator.units import GiB, MiB
from ..estimator.units import to_quantity as format_quantity
from ..workloads.api_names import (
    ANNOTATION_HEADROOM,
    ANNOTATION_MODE,
    ANNOTATION_MODEL_CONFIG,
    ANNOTATION_SKIP,
    BREAKDOWN_ANNOTATION,
    DECISION_ANNOTATION,
    ESTIMATE_ANNOTATION,
    ESTIMATOR_VERSION_ANNOTATION,
    MODEL_CONFIGS_LABEL,
    NOTES_ANNOTATION,
    SIZED_LABEL,
)
from ..workloads.limits import json_copy
from ..workloads.model import ReadContext, Workload
from ..workloads.quantity import MAX_QUANTITY
from ..workloads.reader import skip_requested
from ..workloads.vllm_args import Diagnostic
from . import messages
from .decision import KV_ENV, ContainerDecision, Verdict, decide_container
from .pods import pod_decisions
from .settings import MODES, Mode, PolicySettings, parse_headroom, parse_mode

# The annotations a review writes (a controller adds its own: operator/controller/sizing.py)
OUR_ANNOTATIONS = (
    ESTIMATE_ANNOTATION,
    BREAKDOWN_ANNOTATION,
    NOTES_ANNOTATION,
    DECISION_ANNOTATION,
    ESTIMATOR_VERSION_ANNOTATION,
)
_RANK = {"deny": 4, "mutate": 3, "unknown": 2, "allow": 1, "skip": 0}
# JSON pointers of the pod-template label maps, per kind (KServe copies spec.predictor.labels
# onto the predictor's pods).
TEMPLATE_LABELS: dict[str, tuple[str, ...]] = {
    "Deployment": ("/spec/template/metadata/labels",),
    "StatefulSet": ("/spec/template/metadata/labels",),
    "ReplicaSet": ("/spec/template/metadata/labels",),
    "DaemonSet": ("/spec/template/metadata/labels",),
    "Job": ("/spec/template/metadata/labels",),
    "CronJob": ("/spec/jobTemplate/spec/template/metadata/labels",),
    "Pod": ("/metadata/labels",),
    "ReplicationController": ("/spec/template/metadata/labels",),
    "LeaderWorkerSet": (
        "/spec/leaderWorkerTemplate/leaderTemplate/metadata/labels",
        "/spec/leaderWorkerTemplate/workerTemplate/metadata/labels",
    ),
    "InferenceService": ("/spec/predictor/labels",),
}
# Label value on the templates of an object created with vllm-sizer.io/skip (or mode off) on
# it: its pods are then left alone by the pod-level webhook too.
SKIPPED_LABEL_VALUE = "skip"
SKIP_ANNOTATION_REASON = f"{ANNOTATION_SKIP} annotation"  # the reader's skip_reason for it


@dataclass
class ObjectDecision:
    kind: str
    namespace: str | None
    name: str
    verdict: Verdict
    containers: list[ContainerDecision]
    patch: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    annotations: dict[str, str | None] = field(default_factory=dict)  # None: remove it

    @property
    def is_vllm(self) -> bool:
        return bool(self.containers)

    def mutated(self, obj: dict[str, Any]) -> dict[str, Any]:
        """`obj` as the patch leaves it (`obj` itself is never changed)."""
        return apply_patch(obj, self.patch) if self.patch else obj


def apply_patch(obj: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 `ops` applied to a copy of `obj` that shares every subtree the ops do not
    reach: only the objects and lists on each op's path are copied, one level at a time, so
    the cost is that of the paths, never of the object, and nothing recurses per level of
    nesting (jsonpatch.apply_patch deep-copies first: RecursionError on an object nested a few
    hundred levels deep, which a custom resource may be). Raises what jsonpatch raises for an
    op that does not apply."""
    root = _shallow(obj)
    fresh = {id(root)}  # the copies: written in place
    ops = [json_copy(op) for op in ops]  # what the ops add is never shared with the patch
    for op in ops:
        for key in ("path", "from"):
            if not isinstance(op.get(key), str):
                continue
            node = root
            for raw in op[key].split("/")[1:-1]:
                child = _step(node, raw)
                if not isinstance(child, dict | list):
                    break
                if id(child) not in fresh:
                    child = _shallow(child)
                    fresh.add(id(child))
                    part = raw.replace("~1", "/").replace("~0", "~")
                    node[int(part) if isinstance(node, list) else part] = child
                node = child
    return jsonpatch.apply_patch(root, ops, in_place=True)


def _shallow(value: Any) -> Any:
    return (
        dict(value)
        if isinstance(value, dict)
        else list(value)
        if isinstance(value, list)
        else value
    )


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _get(obj: Any, pointer: str) -> Any:
    """The value at a JSON pointer, or None when any step is missing or of the wrong type."""
    cur = obj
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list):
            if not part.isdigit() or int(part) >= len(cur):
                return None
            cur = cur[int(part)]
        elif isinstance(cur, dict):
            cur = cur.get(part)
        else:
            return None
        if cur is None:
            return None
    return cur


def _kind_of(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


def _unwritable(obj: Any, pointer: str, leaf: type | None = None) -> str | None:
    """Why writing at `pointer` would replace a value the object holds (a list, a string or a
    number where the path needs an object, or a leaf of another type than `leaf`), or None
    when every step is an object, an index into a list, or absent (then created). A custom
    resource holding such a value is refused by the API server (its schema) as written: a
    patch replacing it would drop what the user wrote and make the object valid."""
    parts = pointer.split("/")[1:]
    node = obj
    path = ""
    for raw, nxt in itertools.pairwise(parts):
        path += "/" + raw
        node = _step(node, raw)
        if node is None:
            return None
        # the reader's pointers step into lists by index only: an object keyed "0" is a
        # list written as a map, which the reader did not read as one
        if isinstance(node, list) != nxt.isdigit() or not isinstance(node, dict | list):
            what = "a list" if nxt.isdigit() else "an object"
            return f"{path} is {_kind_of(node)}, not {what}: nothing written under it"
    if leaf is not None and parts:
        node = _step(node, parts[-1])
        if node is not None and not isinstance(node, leaf):
            return f"{pointer} is {_kind_of(node)}, not {_kind_of(leaf())}: nothing written"
    return None


def _unwritable_workload(obj: Any, w: Workload) -> str | None:
    """The first place the patch of this container would replace a value (see _unwritable)."""
    for pointer, leaf in (
        (w.container_path, dict),
        (w.memory_limit_path, None),
        (w.memory_request_path, None),
        (w.env_list_path, list),
    ):
        why = _unwritable(obj, pointer, leaf)
        if why:
            return why
    return None


def _step(node: Any, raw: str) -> Any:
    part = raw.replace("~1", "/").replace("~0", "~") if "~" in raw else raw
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return None


class _PatchBuilder:
    """RFC 6902 ops against the incoming object; creates missing parents with `add`: a list
    where the next step is an index (`containers/0`), else an object.
    The incoming object is never copied or modified (admission is a hot path): what the ops
    add is tracked by pointer."""

    def __init__(self, obj: dict[str, Any]):
        self.obj = obj
        self.added: dict[str, Any] = {}  # pointer → value added or replaced by an op
        self.ops: list[dict[str, Any]] = []

    def get(self, pointer: str) -> Any:
        return self.added[pointer] if pointer in self.added else _get(self.obj, pointer)

    def set(self, pointer: str, value: Any) -> None:
        parts = pointer.split("/")[1:]
        path = ""
        node: Any = self.obj
        for raw, nxt in itertools.pairwise(parts):
            path += "/" + raw
            node = self.added[path] if path in self.added else _step(node, raw)
            # a list only holds integer steps; anything else must be an object
            if not (isinstance(node, dict) or (isinstance(node, list) and nxt.isdigit())):
                fresh: Any = [] if nxt.isdigit() else {}
                self.ops.append({"op": "add", "path": path, "value": fresh})
                node = self.added[path] = type(fresh)()
        current = self.added[pointer] if pointer in self.added else _step(node, parts[-1])
        if current == value:
            return
        self.ops.append(
            {"op": "add" if current is None else "replace", "path": pointer, "value": value}
        )
        self.added[pointer] = value

    def remove(self, pointer: str) -> None:
        parent, key = pointer.rsplit("/", 1)
        node = self.get(parent)
        if isinstance(node, dict) and key.replace("~1", "/").replace("~0", "~") in node:
            self.ops.append({"op": "remove", "path": pointer})
            self.added[pointer] = None

    def append(self, pointer: str, value: Any) -> None:
        if not isinstance(self.get(pointer), list):
            self.set(pointer, [value])
            return
        self.ops.append({"op": "add", "path": pointer + "/-", "value": value})


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _object_annotations(obj: dict[str, Any]) -> dict[str, Any]:
    return _dict(_dict(obj.get("metadata")).get("annotations"))


def _object_overrides(obj: dict[str, Any], policy: PolicySettings) -> tuple[Mode, float, list[str]]:
    ann = _object_annotations(obj)
    warnings = []
    mode = policy.mode
    raw_mode = ann.get(ANNOTATION_MODE)
    if raw_mode is not None:
        parsed = parse_mode(raw_mode)
        if parsed is not None:
            mode = parsed
        else:
            warnings.append(
                f"{ANNOTATION_MODE}={raw_mode!r} is not one of {', '.join(MODES)}: ignored"
            )
    headroom = policy.headroom
    raw_h = ann.get(ANNOTATION_HEADROOM)
    if raw_h is not None:
        try:
            headroom = parse_headroom(str(raw_h))
        except ValueError:
            warnings.append(
                f"{ANNOTATION_HEADROOM}={raw_h!r} is not a fraction or percentage: ignored"
            )
    if skip_requested(ann.get(ANNOTATION_SKIP)):  # the reader's reading of it
        mode = "off"
    return mode, headroom, warnings


UNKNOWN_MODEL_PREFIX = "cannot size: "


def _unknown_model_diagnostic(w: Workload) -> Diagnostic | None:
    """The reader's diagnostic that says the model is unknown and how to supply it, if any."""
    return next(
        (
            d
            for d in w.diagnostics
            if d.severity == "error" and d.message.startswith("cannot size: no config.json known")
        ),
        None,
    )


def startup_exit(w: Workload) -> Diagnostic | None:
    """The first diagnostic saying vLLM stops before it serves (its parser exits, or its
    start-up configuration check raises): the container will not start and is not sized."""
    return next((d for d in w.diagnostics if d.exits), None)


def _estimate(w: Workload) -> tuple[MemoryReport | None, ModelGeometry | None, str | None]:
    if w.settings is None:
        return None, None, "the vLLM command line could not be read"
    if w.model_config is None:
        said = _unknown_model_diagnostic(w)
        if said is not None:  # the reader's own words, with the way that fits this object
            return None, None, said.message.removeprefix(UNKNOWN_MODEL_PREFIX)
        return (
            None,
            None,
            (
                f"unknown model '{w.model or '?'}': add its config.json as the "
                f"{ANNOTATION_MODEL_CONFIG} annotation or a ConfigMap labelled "
                f"{MODEL_CONFIGS_LABEL}=true"
            ),
        )
    try:
        geometry = (
            cached_geometry(w.model_config)
            if w.model_config_source == "catalog"
            else ModelGeometry.from_hf_config(w.model_config)
        )
        report = build_report(geometry, w.settings)
        if w.model_note:  # the geometry was taken by a name rule: the report says so
            report = report.model_copy(update={"notes": [w.model_note, *report.notes]})
        return report, geometry, None
    except EstimatorError as exc:
        return None, None, str(exc)
    except (ArithmeticError, ValueError, TypeError, RecursionError) as exc:
        # a config.json or a flag value beyond what the estimate can compute: said, not raised
        return None, None, f"the estimate cannot be computed ({type(exc).__name__}: {exc})"


def _estimate_largest(
    w: Workload,
) -> tuple[Workload, MemoryReport | None, ModelGeometry | None, str | None, str | None]:
    """A container with several vLLM invocations (a script's branches) is sized by the one
    with the largest estimate; the note names it and the alternatives."""
    report, geometry, why = _estimate(w)
    if not w.alternatives:
        return w, report, geometry, why, None
    results = [(w, report, geometry, why)] + [(a, *_estimate(a)) for a in w.alternatives]
    sized = [r for r in results if r[1] is not None]
    best = (
        max(sized, key=lambda r: r[1].total_memory_bytes if r[1] is not None else -1)
        if sized
        else results[0]
    )

    def label(r: tuple[Workload, MemoryReport | None, ModelGeometry | None, str | None]) -> str:
        inv = " ".join(r[0].argv)[:80]
        size = messages.gi(r[1].total_memory_bytes) if r[1] is not None else f"not sized: {r[3]}"
        return f"{r[0].model or '?'} [{inv}] ({size})"

    others = [label(r) for r in results if r is not best]
    note = (
        f"{len(results)} vLLM invocations in this container (a script's branches): sized "
        f"the largest estimate, {label(best)}; alternatives: {'; '.join(others)}"
    )
    return best[0], best[1], best[2], best[3], note


def review_object(
    obj: Any,
    context: ReadContext | None = None,
    policy: PolicySettings | None = None,
    read: Callable[..., list[Workload]] | None = None,
    label_pods: bool = False,
    operation: str = "CREATE",
) -> ObjectDecision:
    """Decide one object. Never raises for bad input: a non-vLLM or unreadable object gets
    verdict "allow" with no containers and no patch. `label_pods` (a CREATE) puts the
    vllm-sizer.io/sized label on the pod templates of a sized object; a mutation does so
    anyway, since it changes the template. An existing template is never labelled alone:
    that would roll every pod. `operation` UPDATE of a kind whose pod template is immutable
    (a Job, a Pod) is decided as warn: the API server would refuse the patch (and with it
    a label edit or a finalizer removal)."""
    policy = policy or PolicySettings()
    if read is None:
        from ..workloads.reader import read_workloads

        read = read_workloads
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    # the object's identity as the API server types it (strings): a mutant's float namespace
    # or list name is no identity, and str() of a huge one would be megabytes
    kind, namespace, name = (
        obj.get("kind") if isinstance(obj, dict) else None,
        meta.get("namespace"),
        meta.get("name"),
    )
    result = ObjectDecision(
        kind=kind if isinstance(kind, str) else "",
        namespace=namespace if isinstance(namespace, str) else None,
        name=name if isinstance(name, str) else "",
        verdict="allow",
        containers=[],
    )
    if not isinstance(obj, dict):
        return result
    workloads = read(obj, context)
    if not workloads:
        return result
    mode, headroom, override_warnings = _object_overrides(obj, policy)
    result.warnings.extend(override_warnings)
    if operation == "UPDATE" and _template_immutable(obj) and mode in ("mutate", "enforce"):
        mode = "warn"
        label_pods = False
        result.warnings.append(messages.immutable_template(str(obj.get("kind"))))
    for w in workloads:
        if w.patchable and not w.patch_blocked:
            w.patch_blocked = _unwritable_workload(obj, w)
        pick = None
        stop = startup_exit(w)
        if mode != "off" and not w.skip_reason and stop is None:
            w, report, geometry, why, pick = _estimate_largest(w)
        else:
            report, geometry, why = None, None, None
        # an object that cannot carry the limit is reported on, never changed or denied
        w_mode = mode if w.patchable or mode not in ("mutate", "enforce") else "warn"
        d = decide_container(
            w,
            report,
            geometry,
            w.settings,
            policy,
            w_mode,
            headroom,
            why,
            str(stop) if stop is not None else None,
        )
        if w_mode != mode and d.verdict != "skip":
            d.warnings.append(messages.not_patchable(w))
        if pick:
            d.warnings.append(f"{w.container}: {pick}")
        said = (
            _unknown_model_diagnostic(w)
            if d.reason == "cannot-size"
            else stop
            if d.reason == "will-not-start"
            else None
        )
        for diag in w.diagnostics:
            if diag.severity in ("error", "warning") and diag is not said:
                d.warnings.append(f"{w.container}: {diag}")
        result.containers.append(d)
    # a Ray worker pod that holds several engine replicas: their sum, decided as the pod's
    result.containers = pod_decisions(result.containers, policy, mode, headroom)
    result.verdict = max((d.verdict for d in result.containers), key=_RANK.__getitem__)
    denials = [d.message for d in result.containers if d.verdict == "deny"]
    result.message = " ".join(denials)
    # two containers of one name (leader and worker): said once (a set: an object of 128
    # containers with hundreds of diagnostics each took seconds to deduplicate in a list)
    said_once = set(result.warnings)
    for d in result.containers:
        for x in d.warnings:
            if x not in said_once:
                said_once.add(x)
                result.warnings.append(x)
    # a Warning header with a control character is dropped by the API server (Go's
    # net.NewWarningHeader), and a terminal interprets one: names and values are shown escaped
    for d in result.containers:
        d.message = messages.printable(d.message)
        d.warnings = [messages.printable(x) for x in d.warnings]
    result.message = messages.printable(result.message)
    result.warnings = [messages.printable(x) for x in result.warnings]
    if result.verdict != "deny":
        result.patch, result.annotations = _patch(obj, result, label_pods)
        if (
            label_pods
            # nothing else changed but our own annotations (an exported manifest carrying
            # them): the label is still due, or the pods would be sized at creation
            and all(op["path"].startswith("/metadata/annotations") for op in result.patch)
            and mode == "off"
            and policy.mode != "off"
            and result.kind != "Pod"
            and all(w.skip_reason in (None, SKIP_ANNOTATION_REASON) for w in workloads)
        ):
            # created with vllm-sizer.io/skip or mode off: its pods must be left alone too
            pb = _PatchBuilder(obj)
            _label_templates(pb, obj, workloads, SKIPPED_LABEL_VALUE)
            result.patch = result.patch + pb.ops
    return result


def _quantity(n: int) -> str:
    """A limit or request as written: Mi or Gi, rounded up, unless rounding would pass the
    largest quantity Kubernetes represents (a request of 2^63-1 bytes kept by a raised
    limit): then the exact bytes."""
    rounded = -(-n // MiB) * MiB  # what to_quantity writes
    return format_quantity(n) if rounded <= MAX_QUANTITY else str(n)


def _template_immutable(obj: dict[str, Any]) -> bool:
    """Kinds whose pod template (containers' resources and env) cannot change after CREATE:
    batch Job (spec.template), v1 Pod (spec.containers; resizing is a subresource)."""
    kind, api = obj.get("kind"), str(obj.get("apiVersion", ""))
    return (kind == "Job" and api.startswith("batch/")) or (kind == "Pod" and api == "v1")


def _patch(
    obj: dict[str, Any], result: ObjectDecision, label_pods: bool = False
) -> tuple[list[dict[str, Any]], dict[str, str | None]]:
    pb = _PatchBuilder(obj)
    patchable = [d for d in result.containers if d.workload.patchable]
    for d in patchable:
        w = d.workload
        changes = (
            (d.limit_after is not None and d.limit_after != d.limit_before)
            or (d.request_after is not None and d.request_after != d.request_before)
            or d.pin_kv_gib is not None
        )
        if changes and not isinstance(pb.get(w.container_path), dict):
            # a container the object does not hold yet (an LLMInferenceService's `main`, which
            # KServe merges by name with its config's): add it, named, once
            pb.set(w.container_path, {"name": w.container})
        if d.limit_after is not None and d.limit_after != d.limit_before:
            pb.set(w.memory_limit_path, _quantity(d.limit_after))
        if d.request_after is not None and d.request_after != d.request_before:
            pb.set(w.memory_request_path, _quantity(d.request_after))
        if d.pin_kv_gib is not None:
            _pin_env(pb, w.env_list_path, f"{d.pin_kv_gib:g}")
    sized = any(d.report is not None for d in patchable)
    if sized and (label_pods or any(d.verdict == "mutate" for d in patchable)):
        _label_templates(pb, obj, [d.workload for d in patchable])
    annotations = _annotations(obj, result)
    for key, value in annotations.items():
        if value is None:
            pb.remove("/metadata/annotations/" + _escape(key))
        else:
            pb.set("/metadata/annotations/" + _escape(key), value)
    return pb.ops, annotations


def _label_pointers(obj: dict[str, Any], workloads: list[Workload] | None) -> list[str]:
    pointers = list(TEMPLATE_LABELS.get(str(obj.get("kind")), ()))
    if workloads is None:
        from ..workloads.reader import read_workloads

        workloads = read_workloads(obj)
    for w in workloads:
        if w.patchable and w.labels_path and w.labels_path not in pointers:
            pointers.append(w.labels_path)
    return pointers


def _label_templates(
    pb: _PatchBuilder,
    obj: dict[str, Any],
    workloads: list[Workload] | None = None,
    value: str = "true",
) -> None:
    for pointer in _label_pointers(obj, workloads):
        # the object the labels belong to: a PodTemplateSpec (…/metadata/labels), a Dynamo
        # service (…/extraPodMetadata/labels) or a KServe predictor (…/labels)
        parent = pointer.rsplit("/", 1)[0]
        if parent.rsplit("/", 1)[-1] in ("metadata", "extraPodMetadata"):
            parent = parent.rsplit("/", 1)[0]
        if parent and not isinstance(pb.get(parent), dict):
            continue  # no such template (e.g. a LeaderWorkerSet without a leader template)
        label = pointer + "/" + _escape(SIZED_LABEL)
        if _unwritable(obj, label):
            continue  # labels that are not a map: left as written (the API server refuses)
        pb.set(label, value)


def sized_label_patch(obj: Any) -> list[dict[str, Any]]:
    """JSON Patch ops that put vllm-sizer.io/sized=true on the pod templates of `obj` ([] when
    they carry it already or the kind has no template). Only for a template that changes
    anyway: labelling a running template rolls its pods."""
    if not isinstance(obj, dict):
        return []
    pb = _PatchBuilder(obj)
    _label_templates(pb, obj)
    return pb.ops


def _pin_env(pb: _PatchBuilder, env_path: str, value: str) -> None:
    """Set VLLM_CPU_KVCACHE_SPACE in the env list at `env_path`: replace an entry that vLLM
    would not read (empty, not a whole number), or add one."""
    env = pb.get(env_path)
    if isinstance(env, list):
        # the kubelet uses the last entry of a repeated name
        for i in reversed(range(len(env))):
            item = env[i]
            if isinstance(item, dict) and item.get("name") == KV_ENV:
                if "valueFrom" in item:
                    return  # set from elsewhere: leave it, the reader reported it
                pb.set(f"{env_path}/{i}/value", value)
                return
    pb.append(env_path, {"name": KV_ENV, "value": value})


def _annotations(obj: dict[str, Any], result: ObjectDecision) -> dict[str, str | None]:
    """Annotations to write (only those that differ; None: remove it). They describe the object
    as it is now: `decision` keeps an earlier mutation's text only while the object still
    carries what that mutation set and nothing needs changing (a webhook reinvocation, an
    unrelated update); a hand-lowered limit, a changed estimate or a mode switch rewrites it.
    An object that is no longer sized (mode off, skip, a model that cannot be sized) loses the
    estimate, breakdown, notes and version it carried, and its decision says why."""
    existing = _object_annotations(obj)
    sized = [d for d in result.containers if d.report is not None and d.workload.patchable]
    if not sized:
        if not result.containers or not any(k in existing for k in OUR_ANNOTATIONS):
            return {}  # never sized: nothing of ours to correct
        if all(
            d.workload.skip_reason and ANNOTATION_SKIP not in d.workload.skip_reason
            for d in result.containers
        ):
            return {}  # sized elsewhere (its owner, or the template it came from): keep them
        single = len(result.containers) == 1
        unsized: dict[str, str | None] = {k: None for k in OUR_ANNOTATIONS}
        unsized[DECISION_ANNOTATION] = "; ".join(
            (f"{d.workload.container}: " if not single else "") + _unsized_text(d)
            for d in result.containers
        )
        return _within_annotation_limit(
            existing, {k: v for k, v in unsized.items() if existing.get(k) != v}
        )
    single = len(sized) == 1
    reports = [(d.workload.container, d.report) for d in sized if d.report is not None]
    estimate = (
        messages.gi(reports[0][1].total_memory_bytes)
        if single
        else ",".join(f"{c}={messages.gi(r.total_memory_bytes)}" for c, r in reports)
    )
    breakdown = {
        c: {t.name: round(t.bytes / GiB, 2) for t in r.terms if t.bytes and t.enters != "device"}
        for c, r in reports
    }
    notes = " | ".join(dict.fromkeys(n for _, r in reports for n in r.notes))
    from .. import __version__

    desired: dict[str, str | None] = {
        ESTIMATE_ANNOTATION: estimate,
        BREAKDOWN_ANNOTATION: json.dumps(breakdown, separators=(",", ":"), sort_keys=True),
        NOTES_ANNOTATION: notes[:4000],
        ESTIMATOR_VERSION_ANNOTATION: __version__,
    }
    fresh = "; ".join(
        (f"{d.workload.container}: " if not single else "") + messages.decision_text(d)
        for d in sized
    )
    before = existing.get(DECISION_ANNOTATION)
    keep = (
        isinstance(before, str)
        and existing.get(ESTIMATE_ANNOTATION) == estimate
        and _mutation_still_applies(before, sized, single)
    )
    desired[DECISION_ANNOTATION] = before if keep else fresh
    return _within_annotation_limit(
        existing, {k: v for k, v in desired.items() if existing.get(k) != v}
    )


# the API server refuses an object whose annotations exceed this in all, keys and values in
# bytes (apimachinery ValidateAnnotationsSize, TotalAnnotationSizeLimitB)
ANNOTATIONS_LIMIT_BYTES = 256 * 1024
# what is given up first when the object's own annotations leave too little room (a large
# object's kubectl last-applied-configuration comes near the limit)
_DROP_ORDER = (
    NOTES_ANNOTATION,
    BREAKDOWN_ANNOTATION,
    ESTIMATOR_VERSION_ANNOTATION,
    ESTIMATE_ANNOTATION,
    DECISION_ANNOTATION,
)


def _annotation_bytes(ann: dict[str, Any]) -> int:
    return sum(
        len(str(k).encode("utf-8", "replace")) + len(str(v).encode("utf-8", "replace"))
        for k, v in ann.items()
        if v is not None
    )


def _within_annotation_limit(
    existing: dict[str, Any], changes: dict[str, str | None]
) -> dict[str, str | None]:
    """`changes` less what would take the object's annotations past the API server's limit
    (the object would be refused because of the patch): the notes first, then the breakdown,
    the version, the estimate, the decision; one of ours left out is removed if the object
    carries an earlier value of it (it would describe a review that is not this one)."""
    out = dict(changes)
    for key in _DROP_ORDER:
        if _annotation_bytes({**existing, **out}) <= ANNOTATIONS_LIMIT_BYTES:
            break
        if key in out or key in existing:
            out[key] = None
    return {k: v for k, v in out.items() if not (v is None and k not in existing)}


def _unsized_text(d: Any) -> str:
    if d.verdict == "skip":
        return f"off: not sized ({d.message})"
    return f"unknown: {d.message}"


_CHANGE = re.compile(r"\b(limits|requests)\.memory (\S+) → ([^,;\s]+)")


def _mutation_still_applies(text: str, sized: list[Any], single: bool) -> bool:
    """True when `text` (an earlier decision annotation) records a mutation whose results the
    object still carries, and the current review changes nothing: every container is allowed
    as it is, and each `limits.memory X → Y` / `requests.memory X → Y` has Y equal to the
    container's current value."""
    if any(d.verdict != "allow" for d in sized):
        return False
    segments = text.split("; ") if not single else [text]
    if len(segments) != len(sized):
        return False
    for d, segment in zip(sized, segments, strict=True):
        body = segment if single else segment.partition(": ")[2]
        if not single and segment.partition(": ")[0] != d.workload.container:
            return False
        if not body.startswith("mutate: "):
            if body != messages.decision_text(d):  # a container left as it was: same words
                return False
            continue
        current = {"limits": messages.gi(d.limit_before), "requests": messages.gi(d.request_before)}
        changes = _CHANGE.findall(body)
        if not changes and "VLLM_CPU_KVCACHE_SPACE=" not in body:
            return False
        if any(current[field] != after for field, _from, after in changes):
            return False
    return True
