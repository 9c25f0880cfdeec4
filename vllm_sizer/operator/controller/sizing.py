"""Sizing objects that already exist (or slipped past the webhook): review, annotate, tell.

The controller never changes a running workload's pod template unless
`settings.patch_existing` is on (changing it restarts the pods). Otherwise it reviews the object
as an observer (mode `mutate`/`enforce` read as `warn`: the object exists already, so there is
nothing to deny or raise), writes the `vllm-sizer.io/*` annotations that differ with one merge
patch on the object's metadata, and posts one Event: `Sized` (Normal), `Undersized` or
`CannotSize` (Warning).

Idempotency (resume handlers run again after every restart): the Event that was last posted is
remembered on the object itself as `vllm-sizer.io/last-event: "<Reason> <digest of message>"`,
written in the same patch as the other annotations and BEFORE the Event is posted. A handler
run that finds the same decision stored writes nothing and posts nothing, so restarts never
duplicate Events; a crash between the patch and the Event loses that one Event (never
duplicates it).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import hashlib
import logging
import os
import re
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...policy import messages
from ...policy.review import OUR_ANNOTATIONS, ObjectDecision, review_object, sized_label_patch
from ...workloads.api_names import (
    ANNOTATION_MODE,
    KOPF_PREFIX,
    LAST_EVENT_ANNOTATION,
    LAST_OOM_ANNOTATION,
    PODS_ANNOTATION,
)
from ...workloads.limits import json_copy
from ...workloads.model import ReadContext, Workload
from ..model_configs import ModelConfigLookup, NoLookup, namespaced
from ..settings import SERVED_RESOURCES, OperatorSettings
from .kube import (
    JSON_PATCH,
    ApiError,
    KubeApi,
    object_problem,
    path_segment_name,
    resource_path,
)

log = logging.getLogger("vllm_sizer.controller")

# Annotations the controller and the webhook write (outputs). Everything else under
# vllm-sizer.io/ on an object is an input (mode, headroom, skip, model-config, vllm-config).
OUTPUT_ANNOTATIONS: tuple[str, ...] = (
    *OUR_ANNOTATIONS,
    LAST_EVENT_ANNOTATION,
    LAST_OOM_ANNOTATION,
    PODS_ANNOTATION,
)
COMPONENT = "vllm-sizer"
EVENT_MESSAGE_MAX = 1024
SEEN_LIMIT = 100_000
KOPF_STATE = f"{KOPF_PREFIX}/"
UNDERSIZED_REASONS = (
    "undersized",
    "over-limitrange",
    "over-node",
    "over-range",
    "gpu-does-not-fit",
    "kv-auto-sized",
)

# kind → (group, version, plural), including the kinds met when walking owner chains.
KNOWN_KINDS: dict[str, tuple[str, str, str]] = {
    kind: (group, version, plural) for group, version, plural, kind in SERVED_RESOURCES
}
INTERMEDIATE_KINDS: dict[str, tuple[str, str, str]] = {
    "ReplicaSet": ("apps", "v1", "replicasets"),
}


def api_version_of(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


# --------------------------------------------------------------------------------- helpers
def controller_owner(obj: dict[str, Any]) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


_NOT_IN_NAME = re.compile(r"[^a-z0-9.-]+")


def event_name(of: Any, key: str) -> str:
    """An Event's name fixed by `key`, led by the name of the object it is about (`of`, which an
    ownerReference or another Event may have written: any text) made a DNS subdomain, as the
    API server requires of an Event's name."""
    base = _NOT_IN_NAME.sub("-", str(of or "object").lower())[:200].strip(".-") or "object"
    return f"{base}.{digest(key)}"


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@functools.lru_cache(maxsize=1)
def _reporting_instance() -> str:
    # read once: gethostname() was 4 ms a call on a loaded 2-core VM, once per Event
    return os.environ.get("POD_NAME") or socket.gethostname()


def event_body(
    obj: dict[str, Any],
    reason: str,
    message: str,
    type_: str = "Normal",
    action: str = "Sizing",
    instance: str | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """A core/v1 Event about `obj` (kubectl describe shows it under the object)."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or "default"
    ts = now_rfc3339()
    # names and values in it come from objects: escaped, as every message is (kubectl
    # describe prints it to a terminal)
    message = messages.printable(message)
    if len(message) > EVENT_MESSAGE_MAX:
        message = message[: EVENT_MESSAGE_MAX - 1] + "…"
    involved = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "namespace": ns,
        "uid": meta.get("uid"),
    }
    if meta.get("resourceVersion"):
        involved["resourceVersion"] = meta.get("resourceVersion")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": name or event_name(meta.get("name"), uuid.uuid4().hex),
            "namespace": ns,
            "labels": {"app.kubernetes.io/name": COMPONENT},
        },
        "involvedObject": {k: v for k, v in involved.items() if v is not None},
        "reason": reason,
        "message": message,
        "type": type_,
        "action": action,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance or _reporting_instance(),
        "firstTimestamp": ts,
        "lastTimestamp": ts,
        "count": 1,
    }


async def post_event(
    api: KubeApi,
    obj: dict[str, Any],
    reason: str,
    message: str,
    type_: str = "Normal",
    action: str = "Sizing",
    name: str | None = None,
) -> dict[str, Any]:
    """Post an Event; with a deterministic `name`, a second post of the same Event is a 409
    from the API server, which counts as already posted (exactly once across crashes)."""
    body = event_body(obj, reason, message, type_, action, name=name)
    try:
        await api.post(resource_path("v1", "events", body["metadata"]["namespace"]), body)
    except ApiError as exc:
        if not (name and exc.status == 409):
            raise
    return body


def read_version(meta: dict[str, Any]) -> Any:
    """What changes whenever something the reader reads may have changed: the generation (the
    API server bumps it on every spec change) with the labels and the annotations other than
    Kopf's state; the resourceVersion when there is no generation. A status update (the
    controller-manager's, after each write to a Deployment) keeps it."""
    generation = meta.get("generation")
    if generation is None:
        return meta.get("resourceVersion") or None
    annotations = meta.get("annotations") or {}
    return (
        generation,
        hash(tuple(sorted((meta.get("labels") or {}).items()))),
        hash(tuple(sorted((k, v) for k, v in annotations.items() if not k.startswith(KOPF_STATE)))),
    )


def object_path(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind"))
    group, version, plural = KNOWN_KINDS.get(kind) or INTERMEDIATE_KINDS.get(kind) or ("", "", "")
    api_version = str(obj.get("apiVersion") or api_version_of(group, version))
    if not plural:
        raise ValueError(f"unknown kind {kind!r}")
    name = meta.get("name")
    if not path_segment_name(name):  # None would be the collection's path
        raise ValueError(f"{kind} without a usable name: {str(name)[:100]!r}")
    return resource_path(api_version, plural, meta.get("namespace"), name)


# ----------------------------------------------------------------------------------- sizing
@dataclass
class SizeResult:
    action: str  # skipped | unchanged | annotated | patched
    reason: str | None = None  # Event reason (Sized / Undersized / CannotSize)
    message: str = ""
    annotations: dict[str, str | None] = field(default_factory=dict)  # written (None: removed)
    event: dict[str, Any] | None = None  # posted
    decision: ObjectDecision | None = None


def classify(decision: ObjectDecision, patched: bool = False) -> tuple[str, str, str] | None:
    """(reason, type, message) for an object's Event, or None when every container is skipped."""
    active = [d for d in decision.containers if d.verdict != "skip"]
    if not active:
        return None
    under = [
        (d, d.report)
        for d in active
        if d.reason in UNDERSIZED_REASONS and d.report is not None and d.verdict != "mutate"
    ]
    unknown = [d for d in active if d.verdict == "unknown" or d.report is None]
    parts: list[str] = []
    if patched:
        for d in active:
            if d.verdict == "mutate":
                parts.append(messages.mutated_warning(d))
        return "Sized", "Normal", "vllm-sizer raised memory: " + "; ".join(parts)
    if under:
        for d, r in under:
            w = d.workload
            needed = d.needed_bytes or 0
            if d.reason == "undersized" and w.limit_bytes is not None:
                parts.append(messages.undersized(w, r, needed, d.fitting_tokens))
            else:
                parts.append(
                    d.message
                    if d.message.startswith("vllm-sizer:")
                    else f"{w.container}: {d.reason}; estimated peak "
                    f"{messages.gi(r.total_memory_bytes)}, needs {messages.gi(needed)}"
                )
        return "Undersized", "Warning", "; ".join(parts)
    if unknown:
        return "CannotSize", "Warning", "; ".join(d.message for d in unknown)
    for d, r in ((d, d.report) for d in active if d.report is not None):  # all, after `unknown`
        if d.limit_before is None:
            parts.append(
                f"{d.workload.container}: no memory limit; estimated peak "
                f"{messages.gi(r.total_memory_bytes)}, suggested limit "
                f"{messages.gi(d.needed_bytes)}"
            )
        else:
            parts.append(
                f"{d.workload.container}: limit {messages.gi(d.limit_before)} covers "
                f"the estimated peak {messages.gi(r.total_memory_bytes)}"
            )
    return "Sized", "Normal", "; ".join(parts)


def observer_view(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` with a `mutate`/`enforce` mode annotation read as `warn` (shallow copies only)."""
    meta = dict(obj.get("metadata") or {})
    ann = dict(meta.get("annotations") or {})
    if str(ann.get(ANNOTATION_MODE, "")).strip().lower() in ("mutate", "enforce"):
        ann[ANNOTATION_MODE] = "warn"
        meta["annotations"] = ann
        obj = {**obj, "metadata": meta}
    return obj


class Sizer:
    """Reviews one served object and writes the outcome (see the module docstring)."""

    def __init__(
        self,
        api: KubeApi,
        settings: OperatorSettings,
        lookup: ModelConfigLookup | None = None,
        read: Callable[..., list[Workload]] | None = None,
        learner: Any = None,
    ):
        self.api = api
        # ModelLearner (model_learning.py) when the Hub lookup is enabled: unknown models are
        # fetched here, off the admission path, into the ConfigMap every webhook replica reads
        self.learner = learner
        self.learned: dict[str, Any] = {}  # model → its last Learned outcome
        self.settings = settings
        self.lookup = lookup or NoLookup()
        if read is None:
            from ...workloads.reader import read_workloads

            read = read_workloads
        self.read = read
        self.policy = settings.policy()
        mode = settings.decision.mode
        observe_mode = "warn" if mode in ("mutate", "enforce") else mode
        self.observer_policy = self.policy.model_copy(update={"mode": observe_mode})
        # (uid, resourceVersion) handled in this process: Kopf may call the same function for
        # a mixed-in resume and an update in one cycle with the same (stale) body.
        self._seen: dict[str, str] = {}
        # uid → (version, wants): Kopf asks the `when=` filter once per handler and event
        # (three handlers share one function), and size() asks again; one read per version of
        # what the reader reads (spec, labels, annotations: a status update is no new version)
        self._wanted: dict[str, tuple[Any, bool]] = {}
        # At most this many objects are reviewed and written at once. At start-up Kopf hands
        # over every pre-existing object together; without a bound each one held its copy and
        # its review while it queued for the API (the bound is the API facade's own).
        self.concurrency = max(1, int(getattr(api, "concurrency", 8) or 8))
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    def _slots_for(self, loop: asyncio.AbstractEventLoop) -> asyncio.Semaphore:
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.concurrency))
        return self._slots[1]

    # ---- filters (cheap, used as the Kopf `when=` callback)
    def wants(self, body: Any) -> bool:
        if object_problem(body) is not None:  # size() says why
            return False
        try:
            obj = body if isinstance(body, dict) else dict(body)
            meta = obj.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                return False
            if not self.settings.serves_namespace(meta.get("namespace")):
                return False
            if controller_owner(obj) is not None:
                return False
            uid, version = str(meta.get("uid") or ""), read_version(meta)
            if uid and version:
                known = self._wanted.get(uid)
                if known is not None and known[0] == version:
                    return known[1]
            wanted = bool(self.read(obj, None))
            if uid and version:
                if len(self._wanted) > SEEN_LIMIT:
                    self._wanted.clear()
                self._wanted[uid] = (version, wanted)
            return wanted
        except Exception:  # a filter must not raise
            log.exception("vLLM pre-check failed")
            return False

    async def context_for(self, obj: dict[str, Any], workloads: list[Workload]) -> ReadContext:
        """Model configs of the object's namespace then the trusted one; ServingRuntimes of its
        namespace and the ClusterServingRuntimes (policy/cluster.py)."""
        ns = (obj.get("metadata") or {}).get("namespace")
        get, load = namespaced(self.lookup)
        for w in workloads:
            if w.model_config is None and w.model and not w.skip_reason:
                try:
                    found = await load(w.model, ns)
                except Exception as exc:  # noqa: BLE001 - lookups are best effort
                    log.warning("model config lookup for %s failed: %s", w.model, exc)
                    found = None
                # a config only the Hub had (or none yet) is stored where the webhooks read it
                if self.learner is not None and not (
                    found is not None
                    and getattr(self.lookup, "in_configmaps", lambda *_: True)(w.model, ns)
                ):
                    await self._learn(w.model)
        ctx = ReadContext(model_resolver=lambda model: get(model, ns))
        if obj.get("kind") == "InferenceService":
            await self._serving_runtimes(obj, ctx)
        return ctx

    async def _learn(self, model: str) -> None:
        """Fetch an unknown model's config from the Hub into the learned-models ConfigMap; on
        success the lookup is refreshed so this review already sizes it."""
        learned = await self.learner.learn(model)
        self.learned[model] = learned
        if learned.stored and hasattr(self.lookup, "refresh"):
            await self.lookup.refresh(force=True)
        elif not learned.stored:
            log.info("could not learn %s: %s", model, learned.detail)

    async def _serving_runtimes(self, obj: dict[str, Any], ctx: ReadContext) -> None:
        ns = (obj.get("metadata") or {}).get("namespace")
        for plural, target, namespace in (
            ("servingruntimes", ctx.serving_runtimes, ns),
            ("clusterservingruntimes", ctx.cluster_serving_runtimes, None),
        ):
            try:
                listing = await self.api.get(
                    resource_path("serving.kserve.io/v1alpha1", plural, namespace)
                )
            except Exception as exc:  # noqa: BLE001 - absent CRD, RBAC: read without them
                log.debug("listing %s failed: %s", plural, exc)
                continue
            for item in (listing or {}).get("items") or []:
                name = (item.get("metadata") or {}).get("name")
                if name:
                    target[name] = item

    async def size(self, body: Any, patch: Any = None) -> SizeResult:
        """Review `body` and write what differs. `patch` (Kopf's patch of this handling cycle,
        a dict): the annotations go into it instead of a request of their own, so Kopf writes
        them with its own state in one merge patch when the handler returns (one write per
        object instead of two; on a Deployment each write also costs a status update by the
        controller-manager, because annotations bump its generation, and the echo events)."""
        problem = object_problem(body)
        if problem is not None:
            log.warning("not sized: %s (the API server sends no such object)", problem)
            return SizeResult("skipped", message=problem)
        meta = body.get("metadata") or {}
        uid, rv = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
        if uid and rv and self._seen.get(uid) == rv:
            return SizeResult("unchanged")
        if not self.wants(body):
            return SizeResult("skipped")
        async with self._slots_for(asyncio.get_running_loop()):
            if uid and rv and self._seen.get(uid) == rv:  # handled while this call waited
                return SizeResult("unchanged")
            return await self._size(body, uid, rv, patch)

    async def _size(self, body: Any, uid: str, rv: str, patch: Any = None) -> SizeResult:
        # Kopf's body is a view of the watch event: a copy (without recursion: a custom
        # resource may nest deeper than copy.deepcopy can follow)
        obj = body if isinstance(body, dict) else json_copy(body)
        meta = obj.get("metadata") or {}
        workloads = self.read(obj, None)
        ctx = await self.context_for(obj, workloads)
        stored = dict(meta.get("annotations") or {})

        result: SizeResult | None = None
        if self.settings.patch_existing:
            decision = review_object(obj, ctx, self.policy, read=self.read, operation="UPDATE")
            if decision.verdict == "mutate":
                result = await self._patch_template(obj, decision, ctx)
        if result is None:
            decision = review_object(observer_view(obj), ctx, self.observer_policy, read=self.read)
            result = await self._annotate(obj, decision, stored, patch)
        if uid and rv:
            if len(self._seen) > SEEN_LIMIT:  # a bound, not an LRU: clearing only costs a
                self._seen.clear()  # comparison with the stored annotations
            self._seen[uid] = rv
        return result

    async def _write_annotations(
        self, obj: dict[str, Any], annotations: dict[str, str | None], patch: Any
    ) -> None:
        if patch is not None:
            meta = patch.setdefault("metadata", {})
            (meta.setdefault("annotations", {})).update(annotations)
            return
        await self.api.patch(object_path(obj), {"metadata": {"annotations": annotations}})

    async def _annotate(
        self,
        obj: dict[str, Any],
        decision: ObjectDecision,
        stored: dict[str, str],
        patch: Any = None,
    ) -> SizeResult:
        verdict = classify(decision)
        if verdict is None:
            # Not sized any more (mode off, skip): still correct what our annotations say.
            fix = {k: v for k, v in decision.annotations.items() if stored.get(k) != v}
            if fix:
                await self._write_annotations(obj, fix, patch)
                return SizeResult("annotated", decision=decision, annotations=fix)
            return SizeResult("skipped", decision=decision)
        reason, type_, message = verdict
        if reason == "CannotSize":  # what the Hub said of the models it could not learn
            said = [
                self.learned[d.workload.model].detail
                for d in decision.containers
                if d.workload.model in self.learned and not self.learned[d.workload.model].stored
            ]
            if said:
                message = f"{message} (Hub: {'; '.join(dict.fromkeys(said))})"
        annotations = dict(decision.annotations)
        marker = f"{reason} {digest(message)}"
        post = stored.get(LAST_EVENT_ANNOTATION) != marker
        if post:
            annotations[LAST_EVENT_ANNOTATION] = marker
        annotations = {k: v for k, v in annotations.items() if stored.get(k) != v}
        result = SizeResult("unchanged", reason, message, decision=decision)
        if post:
            # The Event first, under a name fixed by (object, version, decision): a crash before
            # the marker below is stored re-posts the same name, which the API server refuses
            # (409), so a restart neither loses nor duplicates it.
            meta = obj.get("metadata") or {}
            key = f"{meta.get('uid')}|{meta.get('resourceVersion')}|{marker}"
            name = event_name(meta.get("name"), key)
            result.event = await post_event(self.api, obj, reason, message, type_, name=name)
        if annotations:
            await self._write_annotations(obj, annotations, patch)
            result.action, result.annotations = "annotated", annotations
        return result

    async def _patch_template(
        self, obj: dict[str, Any], decision: ObjectDecision, ctx: ReadContext
    ) -> SizeResult:
        verdict = classify(decision, patched=True)
        assert verdict is not None
        reason, type_, message = verdict
        mutated = decision.mutated(obj)
        ops = list(decision.patch)
        ops += sized_label_patch(mutated)
        # The marker is that of the patched object as the next run will observe it, so the
        # next resume finds it stored and posts nothing.
        steady = (
            classify(
                review_object(observer_view(mutated), ctx, self.observer_policy, read=self.read)
            )
            or verdict
        )
        marker = f"{steady[0]} {digest(steady[2])}"
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        guard = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv}] if rv else []
        if not (obj.get("metadata") or {}).get("annotations") and not any(
            o["path"] == "/metadata/annotations" for o in ops
        ):
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        ops.append(
            {
                "op": "add",
                "path": "/metadata/annotations/" + _escape(LAST_EVENT_ANNOTATION),
                "value": marker,
            }
        )
        await self.api.patch(object_path(obj), guard + ops, content_type=JSON_PATCH)
        result = SizeResult(
            "patched",
            reason,
            message,
            decision=decision,
            annotations={**decision.annotations, LAST_EVENT_ANNOTATION: marker},
        )
        result.event = await post_event(self.api, obj, reason, message, type_)
        return result
