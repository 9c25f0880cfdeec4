"""Background listings (LimitRange ceilings, ServingRuntimes): off the admission path, so a slow
first listing is waited for longer than a review's lookup timeout, and a failed one is retried
within seconds, not after the TTL (a LimitRange max would go unseen that long)."""

from __future__ import annotations

import asyncio
import time

from vllm_sizer.operator import cluster_listings
from vllm_sizer.operator.cluster_listings import ClusterLimitRanges
from vllm_sizer.operator.settings import OperatorSettings

LIMIT_RANGE = {"metadata": {"name": "lr", "namespace": "team-a"},
               "spec": {"limits": [{"type": "Container", "max": {"memory": "16Gi"}}]}}


class ScriptedLimitRanges(ClusterLimitRanges):
    def __init__(self, settings, script):
        super().__init__(lambda: None, settings)
        self.script = list(script)
        self.timeouts: list[float] = []

    def _list_sync(self, timeout):
        self.timeouts.append(timeout)
        step = self.script.pop(0) if self.script else [LIMIT_RANGE]
        if isinstance(step, float):
            time.sleep(step)
            return [LIMIT_RANGE]
        if isinstance(step, Exception):
            raise step
        return step


def test_a_first_listing_slower_than_the_lookup_timeout_is_waited_for():
    settings = OperatorSettings(lookup_timeout_seconds=0.2, model_configs_ttl_seconds=60)
    lr = ScriptedLimitRanges(settings, [1.5])  # beyond the review's budget (0.2 s + 1 s)
    assert asyncio.run(lr.refresh()) is True
    assert lr("team-a") == 16 * 1024**3
    assert lr.timeouts == [cluster_listings.LISTING_TIMEOUT_SECONDS]


def test_a_failed_first_listing_is_retried_before_the_ttl(monkeypatch):
    monkeypatch.setattr(cluster_listings, "LISTING_RETRY_FIRST_SECONDS", 0.05)
    settings = OperatorSettings(model_configs_ttl_seconds=3600)
    lr = ScriptedLimitRanges(settings, [TimeoutError(), TimeoutError()])

    async def scenario():
        await lr.start()
        assert lr("team-a") is None  # the first listing failed: no ceiling known yet
        deadline = time.monotonic() + 5
        while lr("team-a") is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await lr.stop()

    asyncio.run(scenario())
    assert lr("team-a") == 16 * 1024**3
    assert lr.listings == 3  # failed, failed (after 0.05 s), then listed (after 0.1 s)
