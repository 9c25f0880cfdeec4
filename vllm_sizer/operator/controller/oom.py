"""OOM evidence: when a vLLM container of a sized workload is OOMKilled, say so on the workload.

Design: Kopf has no server-side label selectors (a Kopf pod handler would stream every pod of
the cluster into the operator, and `labels=` filters only after the fact). So the pods are
watched here with a plain list+watch on `labelSelector=vllm-sizer.io/sized=true` (cluster-wide,
or one watch per served namespace), running the synchronous kubernetes client in a daemon
thread that hands pods to the event loop. Only pods whose template was sized carry the label,
so the operator sees a handful of pods, not the cluster. The watch task is started from a Kopf
startup handler and stopped at cleanup (`handlers.py`).

For each OOMKilled termination of a vLLM container (`state.terminated` or
`lastState.terminated` with reason OOMKilled), the owning workload is found through controller
ownerReferences (Pod → ReplicaSet → Deployment, Pod → StatefulSet / Job, and further up to a
served kind such as an InferenceService owning the Deployment), then:
- an Event `OOMKilled` (Warning) is posted on it with the limit, the estimate (from its
  `vllm-sizer.io/estimate` annotation), the restart count and how long the container ran;
- `vllm-sizer.io/last-oom` is written on it (JSON: time, pod, container, limit, estimate,
  restarts);
- `vllm_sizer_oomkills_total{namespace,kind}` is incremented.
Deduplication: per (pod uid, container, container instance), the instance being restartCount
for `state` and restartCount - 1 for `lastState` (the same kill seen first in `state` and then,
after the restart, in `lastState` counts once); across restarts of the operator a kill no newer
than the `last-oom` time already stored on the workload is not reported again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...policy.pods import pod_total_row
from ...workloads.api_names import ESTIMATE_ANNOTATION, LAST_OOM_ANNOTATION, SIZED_LABEL
from ..settings import OperatorSettings
from .kube import ApiError, KubeApi, object_problem, resource_path
from .sizing import INTERMEDIATE_KINDS, KNOWN_KINDS, controller_owner, object_path, post_event

log = logging.getLogger("vllm_sizer.controller.oom")
SELECTOR = f"{SIZED_LABEL}=true"
WATCH_TIMEOUT_SECONDS = 290
STOP_JOIN_SECONDS = 12.0  # longer than a watch's connect timeout (10 s)
LIST_CHUNK = 250  # objects per request of the initial listing (bounded memory at start-up)


def _default_count(namespace: str, kind: str) -> None:
    from ..metrics import count_oomkill

    count_oomkill(namespace, kind)


def parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def estimate_for(annotation: str | None, container: str) -> str | None:
    """'17.3Gi' (one container) or 'a=17.3Gi,b=2.0Gi' → the container's estimate; where the
    container runs several engine replicas, the pod total's (what its limit had to hold)."""
    if not annotation:
        return None
    if "=" not in annotation:
        return annotation.strip()
    found: dict[str, str] = {}
    for part in annotation.split(","):
        name, _, value = part.partition("=")
        found.setdefault(name.strip(), value.strip())
    return found.get(pod_total_row(container), found.get(container))


@dataclass
class OomRecord:
    namespace: str
    pod: str
    container: str
    restarts: int
    limit: str | None
    estimate: str | None
    time: str
    ran_seconds: float | None
    workload: dict[str, Any] | None  # None: no served owner found (Event on the pod)
    event: dict[str, Any] | None = None

    def annotation(self) -> str:
        return json.dumps(
            {
                "time": self.time,
                "pod": self.pod,
                "container": self.container,
                "limit": self.limit,
                "estimate": self.estimate,
                "restarts": self.restarts,
            },
            separators=(",", ":"),
        )

    def message(self) -> str:
        ran = (
            f" after running {human_duration(self.ran_seconds)}"
            if self.ran_seconds is not None
            else ""
        )
        return (
            f"container {self.container} of pod {self.pod} was OOMKilled{ran}: memory limit "
            f"{self.limit or 'unset'}, vllm-sizer estimate {self.estimate or 'unknown'}, "
            f"restarts {self.restarts}"
        )


class OomWatcher:
    def __init__(
        self,
        api: KubeApi,
        settings: OperatorSettings,
        *,
        count: Callable[[str, str], None] | None = None,
        read: Callable[..., list] | None = None,
        verdicts: Any = None,
    ):
        """`verdicts` (pods.PodVerdicts, optional): pod-level sizing told on the top-level
        owner; with it the watch also follows FailedCreate Events (denied pods)."""
        self.api = api
        self.settings = settings
        self.verdicts = verdicts
        self.count = count or _default_count
        if read is None:
            from ...workloads.reader import read_workloads

            read = read_workloads
        self.read = read
        self._seen: set[tuple[str, str, int]] = set()
        self._tasks: list[asyncio.Task] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._streams: set[Any] = set()  # open watch responses, shut down on stop()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------- one pod's state
    def vllm_containers(self, pod: dict[str, Any]) -> set[str]:
        try:
            names = {w.container for w in self.read(pod, None)}
        except Exception:  # noqa: BLE001
            names = set()
        if not names:  # the label says its template was sized: every container counts
            names = {c.get("name") for c in ((pod.get("spec") or {}).get("containers") or [])}
        return names

    def terminations(self, pod: dict[str, Any]) -> list[tuple[dict, dict, int]]:
        """(containerStatus, terminated, instance) for each OOMKilled termination."""
        out = []
        names = None
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            restarts = int(cs.get("restartCount") or 0)
            for where, instance in (("state", restarts), ("lastState", restarts - 1)):
                term = (cs.get(where) or {}).get("terminated") or {}
                if term.get("reason") != "OOMKilled":
                    continue
                if names is None:
                    names = self.vllm_containers(pod)
                if cs.get("name") in names:
                    out.append((cs, term, instance))
        return out

    async def handle_pod(self, pod: dict[str, Any]) -> list[OomRecord]:
        if object_problem(pod) is not None:
            return []
        meta = pod.get("metadata") or {}
        if (meta.get("labels") or {}).get(SIZED_LABEL) != "true":
            return []
        if not self.settings.serves_namespace(meta.get("namespace")):
            return []
        if self.verdicts is not None:
            try:
                await self.verdicts.pod_sized(pod)
            except Exception:  # the OOM evidence below must still run
                log.exception("telling the owner of pod %s failed", meta.get("name"))
        records = []
        for cs, term, instance in self.terminations(pod):
            key = (str(meta.get("uid") or meta.get("name")), str(cs.get("name")), instance)
            if key in self._seen:
                continue
            record = await self._report(pod, cs, term)
            self._seen.add(key)
            if record is not None:
                records.append(record)
        return records

    async def find_workload(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The topmost served object in the pod's controller chain, or None."""
        ns = (pod.get("metadata") or {}).get("namespace")
        obj, target = pod, None
        for _ in range(6):
            ref = controller_owner(obj)
            if ref is None:
                break
            kind = str(ref.get("kind"))
            spec = KNOWN_KINDS.get(kind) or INTERMEDIATE_KINDS.get(kind)
            if spec is None:
                break
            api_version = str(ref.get("apiVersion") or f"{spec[0]}/{spec[1]}")
            try:
                obj = await self.api.get(resource_path(api_version, spec[2], ns, ref.get("name")))
            except (ApiError, ValueError) as exc:  # ValueError: a name no request can carry
                log.info(
                    "owner %s/%s of pod %s not readable: %s",
                    kind,
                    ref.get("name"),
                    (pod.get("metadata") or {}).get("name"),
                    exc,
                )
                break
            if not isinstance(obj, dict):
                break
            if kind in KNOWN_KINDS:
                target = obj
        return target

    async def _report(
        self, pod: dict[str, Any], cs: dict[str, Any], term: dict[str, Any]
    ) -> OomRecord | None:
        meta = pod.get("metadata") or {}
        ns, name, container = meta.get("namespace") or "default", meta.get("name"), cs.get("name")
        spec_c: dict[str, Any] = next(
            (
                c
                for c in ((pod.get("spec") or {}).get("containers") or [])
                if c.get("name") == container
            ),
            {},
        )
        limit = ((spec_c.get("resources") or {}).get("limits") or {}).get("memory")
        started, finished = parse_time(term.get("startedAt")), parse_time(term.get("finishedAt"))
        when = finished or dt.datetime.now(dt.UTC)
        workload = await self.find_workload(pod)
        target = workload or pod
        ann = (target.get("metadata") or {}).get("annotations") or {}
        record = OomRecord(
            namespace=ns,
            pod=str(name),
            container=str(container),
            restarts=int(cs.get("restartCount") or 0),
            limit=str(limit) if limit else None,
            estimate=estimate_for(ann.get(ESTIMATE_ANNOTATION), str(container)),
            time=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            ran_seconds=(finished - started).total_seconds() if started and finished else None,
            workload=workload,
        )
        if workload is not None:
            try:
                stored = json.loads(ann.get(LAST_OOM_ANNOTATION) or "null")
            except ValueError:
                stored = None
            stored_time = parse_time(stored.get("time")) if isinstance(stored, dict) else None
            if stored_time is not None and when <= stored_time:
                log.debug("OOMKill of %s/%s at %s already recorded", name, container, record.time)
                return None
            await self.api.patch(
                object_path(workload),
                {"metadata": {"annotations": {LAST_OOM_ANNOTATION: record.annotation()}}},
            )
        record.event = await post_event(
            self.api, target, "OOMKilled", record.message(), "Warning", action="OOMKilled"
        )
        try:
            self.count(ns, str(target.get("kind") or "Pod"))
        except Exception:  # metrics never break the watcher
            log.exception("counting an OOMKill failed")
        log.warning(
            "%s %s/%s: %s",
            target.get("kind"),
            ns,
            (target.get("metadata") or {}).get("name"),
            record.message(),
        )
        return record

    # -------------------------------------------------------------------------- the watch
    def watch_paths(self, plural: str = "pods") -> list[str]:
        if self.settings.namespaces:
            return [
                resource_path("v1", plural, ns)
                for ns in self.settings.namespaces
                if self.settings.serves_namespace(ns)
            ]
        return [resource_path("v1", plural)]

    def watches(self) -> list[tuple[str, dict[str, str]]]:
        """(path, selector query) of every list+watch: sized pods by label; with verdicts, the
        FailedCreate Events by field selector (both filtered by the API server)."""
        out = [(path, {"labelSelector": SELECTOR}) for path in self.watch_paths()]
        if self.verdicts is not None:
            out += [
                (path, {"fieldSelector": "reason=FailedCreate"})
                for path in self.watch_paths("events")
            ]
        return out

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue(maxsize=10000)
        self._stop.clear()
        for path, selector in self.watches():
            thread = threading.Thread(
                target=self._watch_thread,
                args=(path, loop, queue, selector),
                name=f"vllm-sizer-oom-watch {path}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        self._tasks.append(loop.create_task(self._consume(queue), name="vllm-sizer-oom"))

    async def stop(self) -> None:
        self._stop.set()
        with self._lock:
            streams = list(self._streams)
        for raw in streams:  # unblock the threads' reads now, not at the server's timeout
            try:
                raw.shutdown() if hasattr(raw, "shutdown") else raw.close()
            except Exception:  # noqa: BLE001
                pass
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        # the threads end within their read or connect timeout once stopped: wait for them,
        # so no watch (and no connection of its pool) outlives the watcher
        threads, self._threads = self._threads, []

        def join_all() -> None:
            for t in threads:
                t.join(timeout=STOP_JOIN_SECONDS)

        await asyncio.to_thread(join_all)

    async def _consume(self, queue: asyncio.Queue) -> None:
        # stop() sets the flag before it cancels this task: a cancellation lost inside an API
        # call (Python 3.11's asyncio.wait_for can drop one that lands as the call completes)
        # still ends the loop, instead of waiting on the queue forever
        while not self._stop.is_set():
            pod = await queue.get()
            try:
                if pod.get("kind") == "Event" or "involvedObject" in pod:
                    if self.verdicts is not None:
                        await self.verdicts.pod_denied(pod)
                    continue
                await self.handle_pod(pod)
            except Exception:  # one pod never stops the watcher
                log.exception(
                    "OOM evidence for pod %s failed", (pod.get("metadata") or {}).get("name")
                )

    def _push(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue, pod: Any) -> None:
        if isinstance(pod, dict) and not self._stop.is_set() and self.wanted(pod):

            def put() -> None:
                try:
                    queue.put_nowait(pod)
                except asyncio.QueueFull:
                    log.warning("OOM watch queue full: pod event dropped")

            loop.call_soon_threadsafe(put)

    def _watch_thread(
        self,
        path: str,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue,
        selector: dict[str, str] | None = None,
    ) -> None:
        selector = selector or {"labelSelector": SELECTOR}
        backoff = 1.0
        while not self._stop.is_set() and not loop.is_closed():
            try:
                rv = self._list(path, loop, queue, selector)
                self._stream(path, rv, loop, queue, selector)
                backoff = 1.0
            except Exception as exc:  # noqa: BLE001
                if self._stop.is_set() or loop.is_closed():
                    return
                log.warning(
                    "OOM pod watch on %s failed (%s: %s); relisting in %.0fs",
                    path,
                    type(exc).__name__,
                    exc,
                    backoff,
                )
                self._stop.wait(backoff + random.random())
                backoff = min(backoff * 2, 30.0)

    def _list(
        self,
        path: str,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue,
        selector: dict[str, str],
    ) -> str | None:
        """The initial listing, LIST_CHUNK objects a request; returns its resourceVersion."""
        token = ""
        while True:
            query = {**selector, "limit": str(LIST_CHUNK)}
            if token:
                query["continue"] = token
            listing = self.api.request_sync("GET", path, query=query) or {}
            for obj in listing.get("items") or []:
                self._push(loop, queue, obj)
            meta = listing.get("metadata") or {}
            token = meta.get("continue") or ""
            if not token or self._stop.is_set():
                return meta.get("resourceVersion")

    def wanted(self, obj: dict[str, Any]) -> bool:
        """Whether the consumer would do anything with this watched object; the rest are dropped
        in the watch thread, so the queue holds only pods with an OOMKilled termination or a
        decision of the webhook to tell (with verdicts), and FailedCreate Events. Every pod of
        a sized template carries the label: at start-up that is every such pod of the
        cluster, and nearly all of them have neither."""
        if obj.get("kind") == "Event" or "involvedObject" in obj:
            return True
        if self.verdicts is not None and self.verdicts.has_decision(obj):
            return True
        for cs in (obj.get("status") or {}).get("containerStatuses") or []:
            for where in ("state", "lastState"):
                if ((cs.get(where) or {}).get("terminated") or {}).get("reason") == "OOMKilled":
                    return True
        return False

    def _stream(
        self,
        path: str,
        rv: str | None,
        loop: asyncio.AbstractEventLoop,
        queue: asyncio.Queue,
        selector: dict[str, str] | None = None,
    ) -> None:
        client = self.api.client
        query = [
            *(selector or {"labelSelector": SELECTOR}).items(),
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(WATCH_TIMEOUT_SECONDS)),
        ]
        if rv and rv != "...":
            query.append(("resourceVersion", rv))
        method, url, headers, _body, _post = client.param_serialize(
            method="GET",
            resource_path=path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        resp = client.call_api(
            method, url, header_params=headers, _request_timeout=(10, WATCH_TIMEOUT_SECONDS + 30)
        )
        raw = resp.response
        with self._lock:
            self._streams.add(raw)
        if self._stop.is_set():
            raw.shutdown()
        if not 200 <= resp.status <= 299:
            raise ApiError(resp.status, resp.reason or "", raw.read().decode("utf-8", "replace"))
        buf = b""
        try:
            for chunk in raw.stream(64 * 1024, decode_content=True):
                if self._stop.is_set():
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    etype, obj = event.get("type"), event.get("object") or {}
                    if etype == "ERROR":
                        raise ApiError(
                            int(obj.get("code") or 500),
                            str(obj.get("reason")),
                            str(obj.get("message")),
                        )
                    if etype in ("ADDED", "MODIFIED"):
                        self._push(loop, queue, obj)
        finally:
            with self._lock:
                self._streams.discard(raw)
            raw.release_conn()
