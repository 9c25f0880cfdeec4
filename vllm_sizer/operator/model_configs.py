"""Model configs from the cluster: ConfigMaps labelled vllm-sizer.io/model-configs=true (keys are
model ids, values config.json), cached with a short TTL so every webhook replica can use them,
and an optional Hugging Face Hub fetch of config.json (off by default).

Contract used by the admission path (webhook) and the controller:
- `get(model)`  : synchronous, memory only (never blocks the event loop);
- `await load(model)`: refreshes the ConfigMap cache if older than the TTL, then (if enabled)
  fetches from the Hub; every outbound call bounded by settings timeouts; returns None on miss,
  timeout or error (the caller treats None as "cannot size", fail-open).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from typing import Any, Callable, Protocol

from ..estimator import catalog
from ..policy.limit_ranges import container_memory_max
from .settings import MODEL_CONFIGS_LABEL, OperatorSettings


class ModelConfigLookup(Protocol):
    def get(self, model: str) -> dict[str, Any] | None: ...

    async def load(self, model: str) -> dict[str, Any] | None: ...


class NoLookup:
    """The lookup used when the cluster offers none (tests, `check`)."""

    def get(self, model: str) -> dict[str, Any] | None:
        return None

    async def load(self, model: str) -> dict[str, Any] | None:
        return None


# ----------------------------------------------------------------------------- implementation
log = logging.getLogger("vllm_sizer.model_configs")

ApiClientFactory = Callable[[], Any]  # () -> kubernetes.client.ApiClient

# ConfigMap keys must match [-._a-zA-Z0-9]+, so "Org/Name" cannot be a key: write it as
# "Org--Name" (the first "--" stands for the "/"). Both spellings are accepted.
KEY_SLASH = "--"
HUB_NEGATIVE_TTL_SECONDS = 300.0  # a 404/401 from the Hub is remembered this long
HUB_ERROR_TTL_SECONDS = 30.0  # a timeout or connection error: retried sooner
HUB_POSITIVE_TTL_SECONDS = 24 * 3600.0
HUB_MAX_BYTES = 4 * 1024**2
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _keys_for(model: str) -> list[str]:
    """Lookup keys for a model id as the reader passes it ('Org/Name', 'hf://Org/Name@rev',
    '/models/Org/Name'): the normalised id, then its last two path parts."""
    key = catalog.normalise_model_id(model)
    out = [key]
    parts = [p for p in key.split("/") if p]
    if len(parts) > 2:
        out.append("/".join(parts[-2:]))
    return list(dict.fromkeys(out))


def configmap_key_to_model(key: str) -> str:
    """'Qwen--Qwen3-0.6B' → 'qwen/qwen3-0.6b'; 'Qwen/Qwen3-0.6B' (from a JSON-file mount or a
    kubectl-created map that bypassed validation) stays as it is (normalised)."""
    if "/" not in key and KEY_SLASH in key:
        key = key.replace(KEY_SLASH, "/", 1)
    return catalog.normalise_model_id(key)


def configs_from_configmaps(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{normalised model id: config.json} from ConfigMap objects (dicts). Items are taken in
    (namespace, name) order and the first map to define a model wins; values that are not a
    JSON object are skipped with a log line. ConfigMaps without the label are ignored too
    (a defensive re-check of the server-side selector)."""
    out: dict[str, dict[str, Any]] = {}

    def order(cm: dict[str, Any]) -> tuple[str, str]:
        meta = cm.get("metadata") or {}
        return str(meta.get("namespace") or ""), str(meta.get("name") or "")

    for cm in sorted((i for i in items if isinstance(i, dict)), key=order):
        meta = cm.get("metadata") or {}
        labels = meta.get("labels") or {}
        if str(labels.get(MODEL_CONFIGS_LABEL, "")).lower() != "true":
            continue
        for key, value in (cm.get("data") or {}).items():
            try:
                cfg = json.loads(value)
            except (TypeError, ValueError, RecursionError) as exc:
                log.warning("ConfigMap %s/%s key %r is not JSON (%s): ignored",
                            meta.get("namespace"), meta.get("name"), key, exc)
                continue
            if not isinstance(cfg, dict) or not cfg:
                log.warning("ConfigMap %s/%s key %r is not a config.json object: ignored",
                            meta.get("namespace"), meta.get("name"), key)
                continue
            out.setdefault(configmap_key_to_model(str(key)), cfg)
    return out


class HubConfigFetcher:
    """config.json from a Hugging Face Hub compatible endpoint:
    GET {endpoint}/{org}/{name}/resolve/{revision or main}/config.json, with an optional bearer
    token read from a file (a mounted Secret; re-read when it changes), a total timeout, a
    positive cache and a negative cache. Only ids shaped like 'org/name' are fetched (never a
    local path). Uses aiohttp; never blocks the event loop."""

    def __init__(self, endpoint: str, token_file: str | None = None, timeout: float = 2.0,
                 *, negative_ttl: float = HUB_NEGATIVE_TTL_SECONDS,
                 error_ttl: float = HUB_ERROR_TTL_SECONDS,
                 positive_ttl: float = HUB_POSITIVE_TTL_SECONDS,
                 clock: Callable[[], float] = time.monotonic):
        self.endpoint = endpoint.rstrip("/")
        self.token_file = token_file
        self.timeout = timeout
        self.negative_ttl, self.error_ttl, self.positive_ttl = negative_ttl, error_ttl, positive_ttl
        self.clock = clock
        self._cache: dict[str, tuple[float, dict[str, Any] | None]] = {}  # key → (expiry, cfg)
        self._inflight: dict[str, asyncio.Future] = {}
        self._session: Any = None
        self._token: tuple[float, str | None] = (-1.0, None)
        self.requests = 0  # outbound requests made (tests, metrics)

    @staticmethod
    def split(model: str) -> tuple[str, str] | None:
        """'hf://Org/Name@rev' → ('Org/Name', 'rev'); None for anything not a Hub id."""
        m = model.strip()
        for prefix in ("hf://", "huggingface://", "https://huggingface.co/"):
            if m.lower().startswith(prefix):
                m = m[len(prefix):]
        m, _, rev = m.partition("@")
        m = m.rstrip("/")
        if not _HUB_ID.match(m) or ".." in m:
            return None
        rev = rev or "main"
        if not re.match(r"^[A-Za-z0-9_.-]+$", rev) or ".." in rev:
            return None
        return m, rev

    def _read_token(self) -> str | None:
        if not self.token_file:
            return None
        try:
            mtime = os.stat(self.token_file).st_mtime
            if mtime != self._token[0]:
                with open(self.token_file, encoding="utf-8") as fh:
                    self._token = (mtime, fh.read().strip() or None)
        except OSError as exc:
            log.warning("Hub token file %s unreadable: %s", self.token_file, exc)
            return None
        return self._token[1]

    def cached(self, model: str) -> dict[str, Any] | None:
        ids = self.split(model)
        if ids is None:
            return None
        hit = self._cache.get(f"{ids[0]}@{ids[1]}".lower())
        if hit and hit[0] > self.clock():
            return hit[1]
        return None

    async def fetch(self, model: str) -> dict[str, Any] | None:
        ids = self.split(model)
        if ids is None:
            return None
        key = f"{ids[0]}@{ids[1]}".lower()
        hit = self._cache.get(key)
        if hit and hit[0] > self.clock():
            return hit[1]
        fut = self._inflight.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_task(self._fetch(key, *ids))
            self._inflight[key] = fut
            fut.add_done_callback(lambda _f, k=key: self._inflight.pop(k, None))
        return await asyncio.shield(fut)

    async def _fetch(self, key: str, repo: str, rev: str) -> dict[str, Any] | None:
        import aiohttp

        url = f"{self.endpoint}/{repo}/resolve/{rev}/config.json"
        headers = {"Accept": "application/json", "User-Agent": "vllm-sizer"}
        token = self._read_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        ttl, cfg = self.error_ttl, None
        self.requests += 1
        try:
            if self._session is None or self._session.closed:
                self._session = aiohttp.ClientSession()
            timeout = aiohttp.ClientTimeout(total=self.timeout)
            async with self._session.get(url, headers=headers, timeout=timeout) as resp:
                if resp.status == 200:
                    raw = await resp.content.read(HUB_MAX_BYTES + 1)
                    if len(raw) > HUB_MAX_BYTES:
                        log.warning("Hub config.json for %s is larger than %d bytes: ignored",
                                    repo, HUB_MAX_BYTES)
                    else:
                        loaded = json.loads(raw)
                        if isinstance(loaded, dict) and loaded:
                            ttl, cfg = self.positive_ttl, loaded
                        else:
                            ttl = self.negative_ttl
                elif resp.status in (401, 403, 404):
                    ttl = self.negative_ttl
                    log.info("Hub has no readable config.json for %s@%s (HTTP %d)", repo, rev,
                             resp.status)
                else:
                    log.warning("Hub answered HTTP %d for %s@%s", resp.status, repo, rev)
        except asyncio.TimeoutError:
            log.warning("Hub fetch of %s@%s timed out after %.1fs", repo, rev, self.timeout)
        except (aiohttp.ClientError, ValueError, OSError) as exc:
            log.warning("Hub fetch of %s@%s failed: %s", repo, rev, exc)
        self._cache[key] = (self.clock() + ttl, cfg)
        return cfg

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


def list_items(resp: Any) -> list[dict[str, Any]]:
    """Items of a raw (`_preload_content=False`) kubernetes-client list response, as dicts."""
    try:
        data = json.loads(resp.data)
    finally:
        if hasattr(resp, "release_conn"):
            resp.release_conn()
    return list(data.get("items") or [])


class ClusterModelConfigs:
    """ModelConfigLookup backed by ConfigMaps labelled `vllm-sizer.io/model-configs: "true"`
    (in `settings.model_configs_namespace`, or every namespace when None), and optionally the
    Hugging Face Hub (`settings.hub_fetch`).

    ConfigMap format: each key is a model id, each value that model's config.json. Because a
    ConfigMap key cannot contain "/", write `Org--Name` for `Org/Name` (the first "--" is read as
    "/"); ids are matched case-insensitively, and `hf://`, `@revision` and local path prefixes
    (`/models/Org/Name`) are stripped as for the built-in catalog. When two ConfigMaps define the
    same model, the first in (namespace, name) order wins. With no namespace set, anyone who can
    create a labelled ConfigMap in any namespace can define a model config for everyone: set
    VLLM_SIZER_MODEL_CONFIGS_NAMESPACE where that matters.

    - `get(model)`: memory only (the last listing and the Hub cache); never does I/O.
    - `await load(model)`: a model found in the cached listing is returned at once (when the
      listing is older than `model_configs_ttl_seconds`, a new one is started in the
      background); a model not found waits for a new listing when the cached one is older
      than the TTL (one listing in flight at a time, bounded by `lookup_timeout_seconds`; a
      failed listing keeps the previous one and is retried after the TTL), then is fetched
      from the Hub when enabled (`hub_timeout_seconds`). None on a miss, a timeout or an
      error. So a ConfigMap change is seen within one TTL (plus one listing).

    The listing runs the synchronous kubernetes client in a worker thread.
    """

    def __init__(self, api_client_factory: ApiClientFactory, settings: OperatorSettings,
                 *, clock: Callable[[], float] = time.monotonic,
                 hub: HubConfigFetcher | None = None):
        self.api_client_factory = api_client_factory
        self.settings = settings
        self.clock = clock
        self._api: Any = None
        self._configs: dict[str, dict[str, Any]] = {}
        self._loaded_at: float | None = None
        self._refreshing: asyncio.Future | None = None
        self.listings = 0  # listings attempted (tests, metrics)
        self.hub = hub if hub is not None else (
            HubConfigFetcher(settings.hub_endpoint, settings.hub_token_file,
                             settings.hub_timeout_seconds, clock=clock)
            if settings.hub_fetch else None)

    # ---- ModelConfigLookup
    def get(self, model: str) -> dict[str, Any] | None:
        if not isinstance(model, str) or not model.strip():
            return None
        for key in _keys_for(model):
            cfg = self._configs.get(key)
            if cfg is not None:
                return cfg
        if self.hub is not None:
            return self.hub.cached(model)
        return None

    async def load(self, model: str) -> dict[str, Any] | None:
        if not isinstance(model, str) or not model.strip():
            return None
        cfg = self.get(model) if self._loaded_at is not None else None
        if cfg is not None:
            if not self.fresh:  # stale hit: answer now, refresh in the background
                self._start_refresh()
            return cfg
        await self.refresh()
        cfg = self.get(model)
        if cfg is None and self.hub is not None:
            try:
                cfg = await self.hub.fetch(model)
            except Exception as exc:  # noqa: BLE001 - a lookup must never raise
                log.warning("Hub fetch of %s failed: %s", model, exc)
                cfg = None
        return cfg

    # ---- cache
    @property
    def fresh(self) -> bool:
        return self._loaded_at is not None and \
            self.clock() - self._loaded_at < self.settings.model_configs_ttl_seconds

    async def refresh(self, force: bool = False) -> None:
        """List the ConfigMaps when the cache is stale (or `force`). Never raises."""
        if self.fresh and not force:
            return
        try:
            await asyncio.shield(self._start_refresh())
        except Exception:  # noqa: BLE001 - logged in _refresh
            pass

    def _start_refresh(self) -> asyncio.Future:
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.get_running_loop().create_task(self._refresh())
        return self._refreshing

    async def _refresh(self) -> None:
        self.listings += 1
        timeout = self.settings.lookup_timeout_seconds
        try:
            items = await asyncio.wait_for(asyncio.to_thread(self._list_sync, timeout), timeout)
        except Exception as exc:  # noqa: BLE001
            log.warning("listing model-config ConfigMaps failed (%s: %s); keeping %d cached "
                        "configs", type(exc).__name__, exc, len(self._configs))
            self._loaded_at = self.clock()  # retry after the TTL, not on every review
            return
        self._configs = configs_from_configmaps(items)
        self._loaded_at = self.clock()

    def _list_sync(self, timeout: float) -> list[dict[str, Any]]:
        from kubernetes import client

        if self._api is None:
            self._api = client.CoreV1Api(self.api_client_factory())
        selector = f"{MODEL_CONFIGS_LABEL}=true"
        kwargs: dict[str, Any] = dict(label_selector=selector, _request_timeout=timeout,
                                      _preload_content=False)
        ns = self.settings.model_configs_namespace
        resp = (self._api.list_namespaced_config_map(ns, **kwargs) if ns else
                self._api.list_config_map_for_all_namespaces(**kwargs))
        return list_items(resp)

    async def close(self) -> None:
        if self.hub is not None:
            await self.hub.close()


# ------------------------------------------------------------------------ LimitRange ceilings
# The pure part lives with the policy, shared with `vllm-sizer check`.
limit_range_maxima = container_memory_max


# A background listing is never on the admission path (reviews read its last view from
# memory), so it is not held to the review's `lookup_timeout_seconds`: the first listing of a
# fresh process (kubeconfig, TLS handshake, a busy API server) took over 2.5 s on a loaded
# 2-core machine, and a LimitRange ceiling then went unseen for a whole TTL.
LISTING_TIMEOUT_SECONDS = 10.0
# After a failed listing: retry after 1 s, doubling, never later than the TTL.
LISTING_RETRY_FIRST_SECONDS = 1.0


class BackgroundListing:
    """Objects the admission path needs from the cluster, listed once at start and then every
    `model_configs_ttl_seconds` in the background, read from memory by reviews. Each listing is
    bounded by LISTING_TIMEOUT_SECONDS (or `lookup_timeout_seconds` when larger). A failed
    listing keeps the previous view and is retried sooner than the TTL (1 s, doubling).
    Subclasses say what to list (`_list_sync`, blocking, in a thread) and what to keep
    (`_apply`)."""

    what = "objects"

    def __init__(self, api_client_factory: ApiClientFactory, settings: OperatorSettings):
        self.api_client_factory = api_client_factory
        self.settings = settings
        self._task: asyncio.Task | None = None
        self._api_client: Any = None
        self.listings = 0

    def _list_sync(self, timeout: float) -> Any:
        raise NotImplementedError

    def _apply(self, listed: Any) -> None:
        raise NotImplementedError

    def _client(self) -> Any:
        if self._api_client is None:
            self._api_client = self.api_client_factory()
        return self._api_client

    _items = staticmethod(list_items)

    async def refresh(self) -> bool:
        """One listing; True when it replaced the view. Never raises."""
        self.listings += 1
        timeout = max(self.settings.lookup_timeout_seconds, LISTING_TIMEOUT_SECONDS)
        try:
            listed = await asyncio.wait_for(asyncio.to_thread(self._list_sync, timeout), timeout + 1)
        except Exception as exc:  # noqa: BLE001
            log.warning("listing %s failed (%s: %s); keeping the previous view", self.what,
                        type(exc).__name__, exc)
            return False
        self._apply(listed)
        return True

    async def start(self) -> None:
        ok = await self.refresh()

        async def loop(ok: bool) -> None:
            ttl = max(self.settings.model_configs_ttl_seconds, 1.0)
            retry = LISTING_RETRY_FIRST_SECONDS
            while True:
                await asyncio.sleep(ttl if ok else min(retry, ttl))
                retry = LISTING_RETRY_FIRST_SECONDS if ok else retry * 2
                ok = await self.refresh()

        self._task = asyncio.get_running_loop().create_task(loop(ok),
                                                            name=f"vllm-sizer-{self.what}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None


class ClusterLimitRanges(BackgroundListing):
    """The webhook's `limit_range_max(namespace) -> bytes | None`: the LimitRange ceiling of a
    namespace. Only `type: Container` `max.memory` counts (a Pod-type max bounds the sum of
    containers, which the per-container decision cannot check)."""

    what = "LimitRanges"

    def __init__(self, api_client_factory: ApiClientFactory, settings: OperatorSettings):
        super().__init__(api_client_factory, settings)
        self._maxima: dict[str, int] = {}

    def __call__(self, namespace: str) -> int | None:
        return self._maxima.get(namespace)

    def _list_sync(self, timeout: float) -> list[dict[str, Any]]:
        from kubernetes import client

        return self._items(client.CoreV1Api(self._client()).list_limit_range_for_all_namespaces(
            _request_timeout=timeout, _preload_content=False))

    def _apply(self, listed: list[dict[str, Any]]) -> None:
        self._maxima = limit_range_maxima(listed)


class ClusterServingRuntimes(BackgroundListing):
    """KServe ServingRuntimes and ClusterServingRuntimes for the reader, so an InferenceService
    is read with the runtime the cluster will use (its args, env and resources). The dicts are
    updated in place: a ReadContext built once keeps seeing the current view. Clusters without
    KServe answer 404: the view stays empty (stock runtimes are assumed, as `check` does)."""

    what = "ServingRuntimes"

    def __init__(self, api_client_factory: ApiClientFactory, settings: OperatorSettings):
        super().__init__(api_client_factory, settings)
        self.serving_runtimes: dict[str, dict[str, Any]] = {}
        self.cluster_serving_runtimes: dict[str, dict[str, Any]] = {}

    def _list_sync(self, timeout: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        from kubernetes import client

        api = client.CustomObjectsApi(self._client())
        out = []
        for plural in ("servingruntimes", "clusterservingruntimes"):
            try:  # for a namespaced kind this lists every namespace
                out.append(self._items(api.list_cluster_custom_object(
                    "serving.kserve.io", "v1alpha1", plural, _request_timeout=timeout,
                    _preload_content=False)))
            except Exception as exc:  # noqa: BLE001 - 404 without KServe
                if getattr(exc, "status", None) != 404:
                    raise
                out.append([])
        return out[0], out[1]

    def _apply(self, listed: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
        for target, items in zip((self.serving_runtimes, self.cluster_serving_runtimes), listed):
            fresh = {str((i.get("metadata") or {}).get("name", "")): i
                     for i in items if isinstance(i, dict)}
            target.clear()
            target.update(fresh)
