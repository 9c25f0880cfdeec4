"""LimitRanges for the admission path: listed in the background every TTL, read from memory.

The webhook must not call the API while answering a review, so a refresher task keeps
{namespace: container memory max} current; `get(namespace)` is a dict lookup.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ..policy.limit_ranges import container_memory_max

log = logging.getLogger("vllm_sizer.limit_ranges")


class LimitRangeCache:
    def __init__(self, list_limit_ranges: Callable[[], list[dict[str, Any]]],
                 ttl_seconds: float = 30.0, timeout_seconds: float = 5.0):
        """`list_limit_ranges` is blocking (the kubernetes client); it runs in a thread."""
        self._list = list_limit_ranges
        self.ttl = ttl_seconds
        self.timeout = timeout_seconds
        self._max: dict[str | None, int] = {}

    def get(self, namespace: str) -> int | None:
        return self._max.get(namespace)

    async def refresh(self) -> bool:
        try:
            items = await asyncio.wait_for(asyncio.to_thread(self._list), self.timeout)
        except Exception as exc:  # noqa: BLE001 - keep the last good view, try again later
            log.warning("listing LimitRanges failed (%s); keeping the previous view", exc)
            return False
        self._max = container_memory_max(items)
        return True

    async def run(self) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(self.ttl)


def kubernetes_lister(api_client: Any) -> Callable[[], list[dict[str, Any]]]:
    """A blocking lister over every namespace through the kubernetes client."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)

    def list_all() -> list[dict[str, Any]]:
        result = core.list_limit_range_for_all_namespaces(_request_timeout=5)
        return [api_client.sanitize_for_serialization(i) for i in result.items]
    return list_all
