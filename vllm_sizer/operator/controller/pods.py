"""Pod-level verdicts, told on the object the user owns.

The mutating webhook sizes every vLLM pod at creation unless its template was sized already
(reader: a Pod without the vllm-sizer.io/sized label from a kind that creates pods from a
template vllm-sizer sized). The owning controller never sees a change, so the user's own
object would not say why its pods got a larger limit, or why they do not start in enforce
mode. This module walks the pod's controller ownerReferences up to the top-level owner
(Pod → ReplicaSet → Deployment, Pod → RayCluster → RayService, Pod → ReplicaSet → a custom
resource, ...) and there:

- posts an Event, `PodsSized` (Normal) for a pod the webhook sized (seen through the sized-pod
  watch: the webhook labels the pods it sizes and writes its decision on them), or
  `PodsDenied` (Warning) for a pod the validating webhook denied (seen through the
  controller's FailedCreate Events, which the ReplicaSet / StatefulSet / Job / DaemonSet
  controllers post with the webhook's message; a custom operator creating pods directly gets
  the same message in its create call, not as an Event vllm-sizer can see);
- writes `vllm-sizer.io/pods` (the decision) on the owner only where that is safe: a kind the
  controller is allowed to patch (WATCHED_RESOURCES) and metadata only. Owners of any other kind
  get the Event alone (the Event names them by their ownerReference; no read is needed).

Events carry a name fixed by (owner uid, verdict text), so the same verdict on the many pods
of one owner, or again after a restart, is posted once (the API server answers 409).
"""

from __future__ import annotations

import logging
from typing import Any

from ...workloads.api_names import (
    DECISION_ANNOTATION,
    ESTIMATE_ANNOTATION,
    PODS_ANNOTATION,
    VALIDATING_WEBHOOK_NAME,
)
from ..settings import WATCHED_RESOURCES, OperatorSettings
from .kube import ApiError, KubeApi, object_problem, path_segment_name, resource_path
from .sizing import controller_owner, digest, event_name, post_event

log = logging.getLogger("vllm_sizer.controller.pods")
DENIED_MARKER = f'admission webhook "{VALIDATING_WEBHOOK_NAME}" denied the request: '
MAX_HOPS = 6
_PATCHABLE = {(g, k): (v, p) for g, v, p, k in WATCHED_RESOURCES}


def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The controller ownerReference of `obj` when it can be followed: the API server checks
    little of an ownerReference (a name of `.` or `..` passes), so one that could not name an
    object in a request path is no reference to follow."""
    ref = controller_owner(obj)
    if ref is None or not path_segment_name(ref.get("name")):
        return None
    if not isinstance(ref.get("apiVersion"), str) or not isinstance(ref.get("kind"), str):
        return None
    return ref


def _stub(ref: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """An object as far as an ownerReference tells (enough for an Event's involvedObject)."""
    return {
        "apiVersion": ref.get("apiVersion"),
        "kind": ref.get("kind"),
        "metadata": {"name": ref.get("name"), "namespace": namespace, "uid": ref.get("uid")},
    }


class PodVerdicts:
    def __init__(self, api: KubeApi, settings: OperatorSettings):
        self.api = api
        self.settings = settings
        self._plurals: dict[tuple[str, str], str | None] = {
            (f"{g}/{v}" if g else v, k): p for g, v, p, k in WATCHED_RESOURCES
        }
        self._plurals[("apps/v1", "ReplicaSet")] = "replicasets"
        self._seen: set[str] = set()

    async def _plural(self, api_version: str, kind: str) -> str | None:
        key = (api_version, kind)
        if key not in self._plurals:
            plural = None
            try:  # discovery is readable by every authenticated user
                path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
                listing = await self.api.get(path)
                for r in (listing or {}).get("resources") or []:
                    if r.get("kind") == kind and "/" not in str(r.get("name")):
                        plural = r.get("name")
                        break
            except Exception as exc:  # noqa: BLE001 - an unknown group: stop the walk there
                log.debug("discovery of %s failed: %s", api_version, exc)
            self._plurals[key] = plural
        return self._plurals[key]

    async def top_owner(self, obj: dict[str, Any]) -> tuple[dict[str, Any], bool] | None:
        """(the top-level controller of `obj`, read from the API server?) or None when `obj` has
        no controller. An owner that cannot be read (RBAC, unknown kind, deleted) ends the walk:
        it is returned as its ownerReference describes it."""
        ns = (obj.get("metadata") or {}).get("namespace")
        ref = _controller_ref(obj)
        if ref is None:
            return None
        current: dict[str, Any] = _stub(ref, ns)
        read = False
        for _ in range(MAX_HOPS):
            api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
            plural = await self._plural(api_version, kind)
            if plural is None:
                return current, read
            try:
                got = await self.api.get(resource_path(api_version, plural, ns, ref.get("name")))
            except Exception as exc:  # noqa: BLE001 - 403 / 404 / timeout: stop here
                log.debug("owner %s/%s not readable: %s", kind, ref.get("name"), exc)
                return current, read
            if not isinstance(got, dict):
                return current, read
            got.setdefault("apiVersion", api_version)
            got.setdefault("kind", kind)
            current, read = got, True
            ref = _controller_ref(got)
            if ref is None:
                return current, read
            current, read = _stub(ref, ns), False
        return current, read

    def _safe_to_annotate(self, owner: dict[str, Any], read: bool) -> bool:
        return (
            read
            and (_group(str(owner.get("apiVersion") or "")), str(owner.get("kind"))) in _PATCHABLE
        )

    async def _tell(
        self,
        owner: dict[str, Any],
        read: bool,
        reason: str,
        type_: str,
        message: str,
        annotation: str | None,
    ) -> dict[str, Any]:
        meta = owner.get("metadata") or {}
        uid = meta.get("uid")
        name = event_name(meta.get("name"), f"{uid}|{reason}|{message}")
        event = await post_event(
            self.api, owner, reason, message, type_, action="Sizing", name=name
        )
        if annotation is not None and self._safe_to_annotate(owner, read):
            current = (meta.get("annotations") or {}).get(PODS_ANNOTATION)
            if current != annotation:
                try:
                    g, k = _group(str(owner.get("apiVersion"))), str(owner.get("kind"))
                    await self.api.patch(
                        resource_path(
                            str(owner.get("apiVersion")),
                            _PATCHABLE[(g, k)][1],
                            meta.get("namespace"),
                            meta.get("name"),
                        ),
                        {"metadata": {"annotations": {PODS_ANNOTATION: annotation}}},
                    )
                except ApiError as exc:
                    log.info(
                        "annotating %s/%s failed: %s", owner.get("kind"), meta.get("name"), exc
                    )
        return event

    @staticmethod
    def has_decision(pod: dict[str, Any]) -> bool:
        """The pod carries a change the webhook made at creation (what pod_sized tells)."""
        decision = ((pod.get("metadata") or {}).get("annotations") or {}).get(DECISION_ANNOTATION)
        # only a change is worth telling (an "allow" or "warn" pod keeps what its owner asked);
        # several containers: "c1: mutate: ...; c2: allow: ..."
        return isinstance(decision, str) and "mutate:" in decision

    async def pod_sized(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """A pod the webhook sized at creation (its own vllm-sizer.io/decision annotation):
        tell its top-level owner, once per (owner, decision)."""
        if object_problem(pod) is not None:
            return None
        meta = pod.get("metadata") or {}
        decision = (meta.get("annotations") or {}).get(DECISION_ANNOTATION)
        uid = str(meta.get("uid") or meta.get("name"))
        if not self.has_decision(pod) or uid in self._seen:
            return None
        if not self.settings.serves_namespace(meta.get("namespace")):
            return None
        self._seen.add(uid)
        found = await self.top_owner(pod)
        if found is None:
            return None  # a bare pod: its own annotations say it all
        owner, read = found
        estimate = (meta.get("annotations") or {}).get(ESTIMATE_ANNOTATION)
        message = (
            f"vllm-sizer sized the pods of this {owner.get('kind')} at creation (their "
            f"template is not sized): {decision}"
            + (f"; estimated peak {estimate}" if estimate else "")
        )
        return await self._tell(
            owner, read, "PodsSized", "Normal", message, f"sized at creation: {decision}"
        )

    async def pod_denied(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """A FailedCreate Event whose message is the validating webhook's denial: tell the
        top-level owner of the object that failed to create the pod."""
        message = str(event.get("message") or "")
        if event.get("reason") != "FailedCreate" or DENIED_MARKER not in message:
            return None
        involved = event.get("involvedObject")
        meta = event.get("metadata")
        if object_problem(event) is not None or not isinstance(involved, dict):
            return None
        if not isinstance(meta, dict):
            return None
        # Only the Event's own namespace says where it was posted: the API server lets an Event
        # with an eventTime name an involvedObject in any namespace, and whoever may post
        # Events in theirs could otherwise point this walk (its reads, its Event, its
        # annotation) at another tenant's objects.
        ns = meta.get("namespace")
        if not isinstance(ns, str) or not ns or involved.get("namespace") not in (None, "", ns):
            return None
        if not self.settings.serves_namespace(ns):
            return None
        denial = message.split(DENIED_MARKER, 1)[1]
        key = f"{involved.get('uid')}|{digest(denial)}"
        if key in self._seen:
            return None
        self._seen.add(key)
        child = {
            "apiVersion": involved.get("apiVersion"),
            "kind": involved.get("kind"),
            "metadata": {
                "name": involved.get("name"),
                "namespace": ns,
                "uid": involved.get("uid"),
                "ownerReferences": [
                    {
                        **{k: involved.get(k) for k in ("apiVersion", "kind", "name", "uid")},
                        "controller": True,
                    }
                ],
            },
        }
        found = await self.top_owner(child)
        owner, read = found if found is not None else (child, False)
        text = (
            f"vllm-sizer denied a pod of this {owner.get('kind')} "
            f"({involved.get('kind')}/{involved.get('name')} cannot create it): {denial}"
        )
        return await self._tell(owner, read, "PodsDenied", "Warning", text, f"denied: {denial}")
