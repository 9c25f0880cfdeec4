"""Background listings the admission path reads from memory: LimitRange ceilings and KServe
ServingRuntimes / ClusterServingRuntimes, each listed at start and every TTL, namespace-aware
(policy/cluster.py says how a review uses them)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from ..policy.cluster import cluster_runtimes_by_name, limit_range_maxima, runtimes_by_namespace
from .settings import OperatorSettings

log = logging.getLogger("vllm_sizer.model_configs")

ApiClientFactory = Callable[[], Any]  # () -> kubernetes.client.ApiClient


def list_items(resp: Any) -> list[dict[str, Any]]:
    """Items of a raw (`_preload_content=False`) kubernetes-client list response, as dicts."""
    try:
        data = json.loads(resp.data)
    finally:
        if hasattr(resp, "release_conn"):
            resp.release_conn()
    return list(data.get("items") or [])


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
            listed = await asyncio.wait_for(
                asyncio.to_thread(self._list_sync, timeout), timeout + 1
            )
        except Exception as exc:  # noqa: BLE001
            log.warning(
                "listing %s failed (%s: %s); keeping the previous view",
                self.what,
                type(exc).__name__,
                exc,
            )
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

        self._task = asyncio.get_running_loop().create_task(
            loop(ok), name=f"vllm-sizer-{self.what}"
        )

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

        return self._items(
            client.CoreV1Api(self._client()).list_limit_range_for_all_namespaces(
                _request_timeout=timeout, _preload_content=False
            )
        )

    def _apply(self, listed: list[dict[str, Any]]) -> None:
        self._maxima = limit_range_maxima(listed)


class ClusterServingRuntimes(BackgroundListing):
    """KServe ServingRuntimes and ClusterServingRuntimes for the reader, so an InferenceService
    is read with the runtime the cluster will use (its args, env and resources):
    `serving_runtimes` is {namespace: {name: object}} (an InferenceService only ever sees its
    own namespace's), `cluster_serving_runtimes` {name: object}. The dicts are updated in place.
    Clusters without KServe answer 404: the view stays empty (a runtime that is not found is
    unknown: its InferenceServices are not patched unless they set their own memory limit)."""

    what = "ServingRuntimes"

    def __init__(self, api_client_factory: ApiClientFactory, settings: OperatorSettings):
        super().__init__(api_client_factory, settings)
        self.serving_runtimes: dict[str, dict[str, dict[str, Any]]] = {}
        self.cluster_serving_runtimes: dict[str, dict[str, Any]] = {}

    def _list_sync(self, timeout: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        from kubernetes import client

        api = client.CustomObjectsApi(self._client())
        out = []
        for plural in ("servingruntimes", "clusterservingruntimes"):
            try:  # for a namespaced kind this lists every namespace
                out.append(
                    self._items(
                        api.list_cluster_custom_object(
                            "serving.kserve.io",
                            "v1alpha1",
                            plural,
                            _request_timeout=timeout,
                            _preload_content=False,
                        )
                    )
                )
            except Exception as exc:  # 404 without KServe
                if getattr(exc, "status", None) != 404:
                    raise
                out.append([])
        return out[0], out[1]

    def _apply(self, listed: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
        servings, clusters = listed
        fresh = runtimes_by_namespace(servings)
        self.serving_runtimes.clear()
        self.serving_runtimes.update(fresh)
        fresh_cluster = cluster_runtimes_by_name(clusters)
        self.cluster_serving_runtimes.clear()
        self.cluster_serving_runtimes.update(fresh_cluster)
