"""Kopf registration for the controller role.

- `kopf.on.resume` / `create` / `update` for every WATCHED_RESOURCES kind (served kinds minus
  Pod and ReplicaSet, which come in bulk and whose pods are sized at creation), one function under one
  handler id (Kopf calls it once per cycle even when a resume is mixed into an update), with a
  `when=` pre-filter so that objects which are not vLLM workloads, are owned by a controller, or
  sit in an unserved namespace are invisible to Kopf (it stores no state on them at all).
- Kopf's own state lives under `controller.vllm-sizer.io/` annotations (not the shared
  `kopf.zalando.org/` prefix), and the annotations this operator writes itself are left out of
  Kopf's diff-base, so writing them does not trigger another update cycle.
- Kopf's logging-to-Events is off: the only Events are the ones described in sizing.py / oom.py.
- The handler's annotations go into Kopf's patch of the handling cycle, which Kopf writes with
  its own state (diff-base, marker) in one merge patch: one write per sized object. Two writes
  cost twice over on a Deployment, where annotations bump the generation: each brings a status
  update from the controller-manager (and a copy of the annotations onto the ReplicaSet), and
  each of those an event to this watch.
- The initial listing is read in chunks (KOPF_LIST_CHUNK objects a request): one response of
  2,000 Deployments (~12 MB of JSON, held as bytes, text and objects at once) made the
  start-up peak.
- The OOM pod watch (oom.py) is started at startup and stopped at cleanup.
- At most KOPF_WORKER_LIMIT objects per watched kind are processed at once. At start-up Kopf
  lists every pre-existing object and, unbounded, ran all of them together: each held Kopf's
  diff-base copies, the handler's copy and its review while it queued for the API (about
  100 KB an object; 2,000 Deployments took the controller to 250-280 MiB). Pending objects
  now wait as their raw watch event only. Workers exit after KOPF_IDLE_TIMEOUT seconds idle
  (Kopf's default, 5 s, would hold a slot that long after each object).

Nothing here is used by the admission webhook: it never depends on Kopf or its indexes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import kopf

from ...workloads.api_names import KOPF_PREFIX
from ..settings import WATCHED_RESOURCES
from .kube import ApiError
from .oom import OomWatcher
from .sizing import OUTPUT_ANNOTATIONS, Sizer

log = logging.getLogger("vllm_sizer.controller")
HANDLER_ID = "size"
KOPF_WORKER_LIMIT = 100
KOPF_IDLE_TIMEOUT = 1.0
KOPF_LIST_CHUNK = 200


def configure_kopf(settings: kopf.OperatorSettings) -> None:
    """The Kopf settings this controller relies on (also usable from tests)."""
    settings.posting.enabled = False
    settings.persistence.finalizer = f"{KOPF_PREFIX}/finalizer"  # never added: no delete handlers
    settings.persistence.progress_storage = kopf.SmartProgressStorage(prefix=KOPF_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=KOPF_PREFIX,
        key="last-handled-configuration",
        ignored_fields=[("metadata", "annotations", key) for key in OUTPUT_ANNOTATIONS],
    )
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.queueing.worker_limit = KOPF_WORKER_LIMIT
    settings.queueing.idle_timeout = KOPF_IDLE_TIMEOUT
    if hasattr(settings.watching, "chunk_size"):  # not in every Kopf release
        settings.watching.chunk_size = KOPF_LIST_CHUNK


def register(
    registry: kopf.OperatorRegistry,
    sizer: Sizer,
    oom: OomWatcher | None = None,
    *,
    login: Callable[..., Any] | None = None,
    resources: tuple[tuple[str, str, str, str], ...] = WATCHED_RESOURCES,
) -> None:
    """Register the controller's handlers on `registry` (a fresh `kopf.OperatorRegistry()` in
    tests, Kopf's default registry in `vllm-sizer run`)."""

    @kopf.on.startup(registry=registry)
    async def _startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        configure_kopf(settings)
        if oom is not None:
            await oom.start()

    @kopf.on.cleanup(registry=registry)
    async def _cleanup(**_: Any) -> None:
        if oom is not None:
            await oom.stop()
        close = getattr(sizer.lookup, "close", None)
        if close is not None:
            try:
                await close()
            except Exception:  # noqa: BLE001
                pass

    if login is not None:
        kopf.on.login(registry=registry)(login)

    def when(body: Any, **_: Any) -> bool:
        return sizer.wants(body)

    async def size(
        body: Any,
        logger: logging.Logger | logging.LoggerAdapter[Any],
        patch: kopf.Patch | None = None,
        **_: Any,
    ) -> dict[str, Any] | None:
        try:
            # the annotations ride on Kopf's own patch: one write per object (see Sizer.size)
            result = await sizer.size(body, patch)
        except ApiError as exc:
            if exc.status == 404:  # deleted meanwhile: nothing left to size
                return None
            if exc.status in (400, 401, 403, 405):  # RBAC or a bad request: retrying won't help
                raise kopf.PermanentError(f"sizing failed: {exc}") from exc
            raise kopf.TemporaryError(f"sizing failed, retrying: {exc}", delay=30) from exc
        if result.action in ("annotated", "patched"):
            logger.info("%s: %s (%s)", result.action, result.reason, result.message[:200])
        return None  # nothing to store in status

    for group, version, plural, _kind in resources:
        for decorator in (kopf.on.resume, kopf.on.create, kopf.on.update):
            decorator(
                group, version, plural, id=HANDLER_ID, when=when, registry=registry, backoff=30
            )(size)
