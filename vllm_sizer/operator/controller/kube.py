"""A small async facade over the synchronous kubernetes client: generic JSON requests by path
(so every served kind, custom resources included, goes through one code path), each run in a
worker thread with a timeout, never on the event loop.

Requests run on the facade's own few threads (`concurrency`, 8 by default), and at most that
many are outstanding: a caller waits for a free slot first, and its timeout starts only when
its request does. At start-up Kopf hands the controller every pre-existing object at once; on
a shared thread pool 2,000 queued requests used to time out in the queue (the timeout counted
the wait), and each timeout became a retry 30 s later.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

log = logging.getLogger("vllm_sizer.controller")

ApiClientFactory = Callable[[], Any]  # () -> kubernetes.client.ApiClient
MERGE_PATCH = "application/merge-patch+json"
DEFAULT_CONCURRENCY = 8
JSON_PATCH = "application/json-patch+json"


class ApiError(Exception):
    def __init__(self, status: int, reason: str, body: str = ""):
        super().__init__(f"HTTP {status} {reason}: {body[:300]}")
        self.status = status
        self.reason = reason
        self.body = body


def default_api_client_factory(
    kubeconfig: str | None = None, context: str | None = None
) -> ApiClientFactory:
    """In-cluster configuration when running in a pod, else the kubeconfig (KUBECONFIG or
    ~/.kube/config). The configuration is loaded once; the client is made once."""
    cache: dict[str, Any] = {}

    def factory() -> Any:
        if "client" not in cache:
            from kubernetes import client, config

            cfg = client.Configuration()
            try:
                config.load_incluster_config(client_configuration=cfg)
            except config.ConfigException:
                config.load_kube_config(
                    config_file=kubeconfig, context=context, client_configuration=cfg
                )
            # room for the request slots (KubeApi.concurrency) and the watch threads beside them
            cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 0, 16)
            cache["client"] = client.ApiClient(cfg)
        return cache["client"]

    return factory


def api_client_for(host: str, token: str | None = None, verify_ssl: bool = True) -> Any:
    """An ApiClient for a plain URL (tests against kmock, a local kube-apiserver)."""
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = host.rstrip("/")
    cfg.verify_ssl = verify_ssl
    if token:
        cfg.api_key = {"authorization": token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(cfg)


_GROUP_VERSION = re.compile(r"(?:[a-z0-9]([a-z0-9.-]*[a-z0-9])?/)?[a-z0-9]+")
_PLURAL = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?")


def path_segment_name(value: Any) -> bool:
    """Whether `value` can name an object in a request path, as the API server's
    IsValidPathSegmentName rules: a non-empty string, neither `.` nor `..`, without `/` or
    `%`. Names written by users where the API server does not validate them (an
    ownerReference's, an Event's involvedObject) must pass this before a request is built:
    `.` would make urllib3 drop the segment and turn a GET of one object into a LIST."""
    return (
        isinstance(value, str)
        and value not in ("", ".", "..")
        and "/" not in value
        and "%" not in value
    )


def _string_map(value: Any) -> bool:
    return value is None or (
        isinstance(value, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    )


def object_problem(obj: Any) -> str | None:
    """Why `obj` is not shaped as the API server sends an object (None when it is): a mapping
    with a group/version and a kind (when given), whose metadata is a mapping with a name and a namespace that can stand in a request path
    (or no namespace), annotations and labels mapping strings to strings, ownerReferences a
    list of mappings. The controller reads and writes objects the API server sent; what it
    would never send (a hostile body handed to a Kopf handler, a test's fake) is skipped with
    this reason, never half-handled and never allowed to raise through a handler."""
    if not isinstance(obj, Mapping):
        return f"not an object ({type(obj).__name__})"
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version is not None and not (
        isinstance(api_version, str) and _GROUP_VERSION.fullmatch(api_version)
    ):
        return f"apiVersion {str(api_version)[:80]!r} is no group/version"
    if kind is not None and not (isinstance(kind, str) and kind.isidentifier()):
        return f"kind {str(kind)[:80]!r} is no kind"
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return "metadata is not a mapping"
    if not path_segment_name(meta.get("name")):
        return f"metadata.name {str(meta.get('name'))[:80]!r} cannot name an object"
    ns = meta.get("namespace")
    if ns is not None and ns != "" and not path_segment_name(ns):
        return f"metadata.namespace {str(ns)[:80]!r} cannot name a namespace"
    for key in ("annotations", "labels"):
        if not _string_map(meta.get(key)):
            return f"metadata.{key} is not a map of strings"
    refs = meta.get("ownerReferences")
    if refs is not None and not (
        isinstance(refs, list) and all(isinstance(r, Mapping) for r in refs)
    ):
        return "metadata.ownerReferences is not a list of objects"
    return None


def resource_path(
    api_version: str, plural: str, namespace: str | None = None, name: str | None = None
) -> str:
    """The request path of a collection (`name` None) or of one object. Raises ValueError for
    an api_version, plural, namespace or name that is not one path segment of its kind (see
    `path_segment_name`): a path is never built from a value that could point elsewhere."""
    if not isinstance(api_version, str) or not _GROUP_VERSION.fullmatch(api_version):
        raise ValueError(f"not an apiVersion: {str(api_version)[:100]!r}")
    if not isinstance(plural, str) or not _PLURAL.fullmatch(plural):
        raise ValueError(f"not a resource name: {str(plural)[:100]!r}")
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    if namespace is not None and namespace != "":
        if not path_segment_name(namespace):
            raise ValueError(f"not a namespace: {str(namespace)[:100]!r}")
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{plural}"
    if name is not None:
        if not path_segment_name(name):
            raise ValueError(f"not an object name: {str(name)[:100]!r}")
        base += f"/{quote(name, safe='')}"
    return base


class KubeApi:
    """`await api.get(path)`, `.patch(path, body, content_type)`, `.post(path, body)`,
    `.delete(path)`: JSON in, JSON out, ApiError on a non-2xx answer, asyncio.TimeoutError after
    `timeout` seconds of the request itself (waiting for one of the `concurrency` slots does not
    count)."""

    def __init__(
        self,
        api_client_factory: ApiClientFactory,
        timeout: float = 10.0,
        concurrency: int = DEFAULT_CONCURRENCY,
    ):
        self.api_client_factory = api_client_factory
        self.timeout = timeout
        self.calls = 0
        self.concurrency = max(1, int(concurrency))
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    def _slots_for(self, loop: asyncio.AbstractEventLoop) -> asyncio.Semaphore:
        # one semaphore per event loop (tests run several loops one after the other)
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.concurrency))
        return self._slots[1]

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=self.concurrency, thread_name_prefix="vllm-sizer-api"
            )
        return self._pool

    @property
    def client(self) -> Any:
        return self.api_client_factory()

    def request_sync(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        client = self.client
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        q = [(k, v) for k, v in (query or {}).items() if v is not None]
        method, url, headers, body, _post = client.param_serialize(
            method=method,
            resource_path=path,
            query_params=q or None,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        t = timeout if timeout is not None else self.timeout
        resp = client.call_api(
            method, url, header_params=headers, body=body, _request_timeout=(min(t, 5.0), t)
        )
        resp.read()
        text = resp.data.decode("utf-8", "replace") if resp.data else ""
        if not 200 <= resp.status <= 299:
            raise ApiError(resp.status, resp.reason or "", text)
        return json.loads(text) if text else None

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.calls += 1
        timeout = kwargs.get("timeout") or self.timeout
        loop = asyncio.get_running_loop()
        async with self._slots_for(loop):
            call = functools.partial(self.request_sync, method, path, **kwargs)
            return await asyncio.wait_for(loop.run_in_executor(self._executor(), call), timeout + 1)

    async def get(self, path: str, **query: Any) -> Any:
        return await self.request("GET", path, query=query or None)

    async def post(self, path: str, body: Any) -> Any:
        return await self.request("POST", path, body=body)

    async def patch(self, path: str, body: Any, content_type: str = MERGE_PATCH) -> Any:
        return await self.request("PATCH", path, body=body, content_type=content_type)

    async def delete(self, path: str) -> Any:
        return await self.request("DELETE", path)
