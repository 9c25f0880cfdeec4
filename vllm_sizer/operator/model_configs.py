"""Model configs from the cluster: ConfigMaps labelled vllm-sizer.io/model-configs=true (keys are
model ids, values config.json), cached with a short TTL so every webhook replica can use them,
and an optional Hugging Face Hub fetch of config.json (off by default).

Contract used by the admission path (webhook) and the controller, for an object in `namespace`:
- `get(model, namespace)`  : synchronous, memory only (never blocks the event loop);
- `await load(model, namespace)`: refreshes the ConfigMap cache if older than the TTL, then (if enabled)
  fetches from the Hub; every outbound call bounded by settings timeouts; returns None on miss,
  timeout or error (the caller treats None as "cannot size", fail-open).
Configs come from the object's own namespace, then the trusted namespace (policy/cluster.py);
never from another tenant's.

The background listings of LimitRanges and ServingRuntimes live in cluster_listings.py (names
re-exported here).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..policy.cluster import (
    ClusterContext,
    model_configs_by_namespace,
    model_key,
    model_keys,
)
from ..workloads.api_names import MODEL_CONFIGS_LABEL
from .cluster_listings import (
    ApiClientFactory,
    BackgroundListing,  # noqa: F401
    list_items,
)
from .settings import OperatorSettings


class ModelConfigLookup(Protocol):
    def get(self, model: str, namespace: str | None = None) -> dict[str, Any] | None: ...

    async def load(self, model: str, namespace: str | None = None) -> dict[str, Any] | None: ...


def namespaced(
    lookup: Any,
) -> tuple[Callable[[str, str | None], Any], Callable[[str, str | None], Any]]:
    """(get, load) of a lookup as functions of (model, namespace); a lookup written before
    namespaces (get(model) only) is called without it."""
    import inspect

    def takes_namespace(fn: Any) -> bool:
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return False
        return "namespace" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())

    get, load = lookup.get, lookup.load
    return (
        (lambda m, ns: get(m, namespace=ns)) if takes_namespace(get) else (lambda m, ns: get(m)),
        (lambda m, ns: load(m, namespace=ns)) if takes_namespace(load) else (lambda m, ns: load(m)),
    )


class NoLookup:
    """The lookup used when the cluster offers none (tests, `check`)."""

    def get(self, model: str, namespace: str | None = None) -> dict[str, Any] | None:
        return None

    async def load(self, model: str, namespace: str | None = None) -> dict[str, Any] | None:
        return None


# ----------------------------------------------------------------------------- implementation
log = logging.getLogger("vllm_sizer.model_configs")


HUB_NEGATIVE_TTL_SECONDS = 300.0  # a 404/401 from the Hub is remembered this long
HUB_ERROR_TTL_SECONDS = 30.0  # a timeout or connection error: retried sooner
HUB_POSITIVE_TTL_SECONDS = 24 * 3600.0
HUB_MAX_BYTES = 4 * 1024**2
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


_keys_for = model_keys  # one normalisation for check and the webhook (policy/cluster.py)
configmap_key_to_model = model_key


class HubConfigFetcher:
    """config.json from a Hugging Face Hub compatible endpoint:
    GET {endpoint}/{org}/{name}/resolve/{revision or main}/config.json, with an optional bearer
    token read from a file (a mounted Secret; re-read when it changes), a total timeout, a
    positive cache and a negative cache. Only ids shaped like 'org/name' are fetched (never a
    local path). Uses aiohttp; never blocks the event loop."""

    def __init__(
        self,
        endpoint: str,
        token_file: str | None = None,
        timeout: float = 2.0,
        *,
        negative_ttl: float = HUB_NEGATIVE_TTL_SECONDS,
        error_ttl: float = HUB_ERROR_TTL_SECONDS,
        positive_ttl: float = HUB_POSITIVE_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
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
        self.statuses: dict[str, int | str] = {}  # key → last HTTP status, or "timeout"/"error"

    @staticmethod
    def split(model: str) -> tuple[str, str] | None:
        """'hf://Org/Name@rev' → ('Org/Name', 'rev'); None for anything not a Hub id."""
        m = model.strip()
        for prefix in ("hf://", "huggingface://", "https://huggingface.co/"):
            if m.lower().startswith(prefix):
                m = m[len(prefix) :]
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
            fut.add_done_callback(lambda _f: self._inflight.pop(key, None))
        return await asyncio.shield(fut)

    async def _fetch(self, key: str, repo: str, rev: str) -> dict[str, Any] | None:
        import aiohttp

        url = f"{self.endpoint}/{repo}/resolve/{rev}/config.json"
        headers = {"Accept": "application/json", "User-Agent": "vllm-sizer"}
        token = self._read_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        ttl, cfg = self.error_ttl, None
        status: int | str = "error"
        self.requests += 1
        try:
            if self._session is None or self._session.closed:
                self._session = aiohttp.ClientSession()
            timeout = aiohttp.ClientTimeout(total=self.timeout)
            async with self._session.get(url, headers=headers, timeout=timeout) as resp:
                status = resp.status
                if resp.status == 200:
                    raw = await resp.content.read(HUB_MAX_BYTES + 1)
                    if len(raw) > HUB_MAX_BYTES:
                        log.warning(
                            "Hub config.json for %s is larger than %d bytes: ignored",
                            repo,
                            HUB_MAX_BYTES,
                        )
                    else:
                        loaded = json.loads(raw)
                        if isinstance(loaded, dict) and loaded:
                            ttl, cfg = self.positive_ttl, loaded
                        else:
                            ttl = self.negative_ttl
                elif resp.status in (401, 403, 404):
                    ttl = self.negative_ttl
                    log.info(
                        "Hub has no readable config.json for %s@%s (HTTP %d)",
                        repo,
                        rev,
                        resp.status,
                    )
                else:
                    log.warning("Hub answered HTTP %d for %s@%s", resp.status, repo, rev)
        except TimeoutError:
            status = "timeout"
            log.warning("Hub fetch of %s@%s timed out after %.1fs", repo, rev, self.timeout)
        except (aiohttp.ClientError, ValueError, OSError) as exc:
            status = "error"
            log.warning("Hub fetch of %s@%s failed: %s", repo, rev, exc)
        self.statuses[key] = status
        self._cache[key] = (self.clock() + ttl, cfg)
        return cfg

    def status_of(self, model: str) -> int | str | None:
        """The last answer for a model: an HTTP status, "timeout", "error", or None."""
        ids = self.split(model)
        return self.statuses.get(f"{ids[0]}@{ids[1]}".lower()) if ids else None

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


class ClusterModelConfigs:
    """ModelConfigLookup backed by ConfigMaps labelled `vllm-sizer.io/model-configs: "true"`
    (listed in `settings.model_configs_namespace`, or every namespace when None), and optionally
    the Hugging Face Hub (`settings.hub_fetch`). An object in namespace N sees the maps of N,
    then those of the trusted namespace (`settings.trusted_namespace`), never another's.

    ConfigMap format: each key is a model id, each value that model's config.json. Because a
    ConfigMap key cannot contain "/", write `Org--Name` for `Org/Name` (the first "--" is read as
    "/"); ids are matched case-insensitively, and `hf://`, `@revision` and local path prefixes
    (`/models/Org/Name`) are stripped as for the built-in catalog (policy.cluster.model_key).
    Within one namespace, when two ConfigMaps define the same model, the first by name wins.

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

    def __init__(
        self,
        api_client_factory: ApiClientFactory,
        settings: OperatorSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        hub: HubConfigFetcher | None = None,
        use_hub: bool = True,
    ):
        """`use_hub=False` for the webhook role: the admission path never waits on the network
        (the controller fetches unknown models and stores them in a ConfigMap instead)."""
        self.api_client_factory = api_client_factory
        self.settings = settings
        self.clock = clock
        self._api: Any = None
        self._configs: dict[str, dict[str, dict[str, Any]]] = {}  # namespace → id → config
        self._loaded_at: float | None = None
        self._refreshing: asyncio.Future | None = None
        self.listings = 0  # listings attempted (tests, metrics)
        self.hub = (
            hub
            if hub is not None
            else (
                HubConfigFetcher(
                    settings.hub_endpoint,
                    settings.hub_token_file,
                    settings.hub_timeout_seconds,
                    clock=clock,
                )
                if settings.hub_fetch and use_hub
                else None
            )
        )

    # ---- ModelConfigLookup
    def get(self, model: str, namespace: str | None = None) -> dict[str, Any] | None:
        if not isinstance(model, str) or not model.strip():
            return None
        cfg = ClusterContext(
            model_configs=self._configs, trusted_namespace=self.settings.trusted_namespace
        ).model_config(namespace, model)
        if cfg is not None:
            return cfg
        if self.hub is not None:
            return self.hub.cached(model)
        return None

    def in_configmaps(self, model: str, namespace: str | None = None) -> bool:
        """The model's config is in the ConfigMaps' view (not only in the Hub cache)."""
        return (
            ClusterContext(
                model_configs=self._configs, trusted_namespace=self.settings.trusted_namespace
            ).model_config(namespace, model)
            is not None
        )

    async def load(self, model: str, namespace: str | None = None) -> dict[str, Any] | None:
        if not isinstance(model, str) or not model.strip():
            return None
        cfg = self.get(model, namespace) if self._loaded_at is not None else None
        if cfg is not None:
            if not self.fresh:  # stale hit: answer now, refresh in the background
                self._start_refresh()
            return cfg
        await self.refresh()
        cfg = self.get(model, namespace)
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
        return (
            self._loaded_at is not None
            and self.clock() - self._loaded_at < self.settings.model_configs_ttl_seconds
        )

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
            log.warning(
                "listing model-config ConfigMaps failed (%s: %s); keeping the cached "
                "configs of %d namespaces",
                type(exc).__name__,
                exc,
                len(self._configs),
            )
            self._loaded_at = self.clock()  # retry after the TTL, not on every review
            return
        self._configs = model_configs_by_namespace(items)
        self._loaded_at = self.clock()

    def _list_sync(self, timeout: float) -> list[dict[str, Any]]:
        from kubernetes import client

        if self._api is None:
            self._api = client.CoreV1Api(self.api_client_factory())
        selector = f"{MODEL_CONFIGS_LABEL}=true"
        kwargs: dict[str, Any] = dict(
            label_selector=selector, _request_timeout=timeout, _preload_content=False
        )
        ns = self.settings.model_configs_namespace
        resp = (
            self._api.list_namespaced_config_map(ns, **kwargs)
            if ns
            else self._api.list_config_map_for_all_namespaces(**kwargs)
        )
        return list_items(resp)

    async def close(self) -> None:
        if self.hub is not None:
            await self.hub.close()
