import asyncio

from vllm_sizer.operator.limit_ranges import LimitRangeCache
from vllm_sizer.policy.limit_ranges import container_memory_max


def lr(ns, *limits):
    return {"kind": "LimitRange", "metadata": {"namespace": ns}, "spec": {"limits": list(limits)}}


def test_tightest_container_or_pod_max_per_namespace():
    out = container_memory_max([
        lr("a", {"type": "Container", "max": {"memory": "16Gi"}}),
        lr("a", {"type": "Pod", "max": {"memory": "12Gi"}}),
        lr("b", {"type": "Container", "max": {"cpu": "4"}}),
        lr("c", {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}},
           {"type": "Container", "max": {"memory": "bogus"}}),
        "garbage", {"spec": []},
    ])
    assert out == {"a": 12 * 1024**3}


def test_cache_refreshes_and_keeps_last_view_on_error():
    calls = {"n": 0}

    def lister():
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError("API down")
        return [lr("a", {"type": "Container", "max": {"memory": "8Gi"}})]

    cache = LimitRangeCache(lister, ttl_seconds=0.01, timeout_seconds=1)
    assert asyncio.run(cache.refresh()) is True and cache.get("a") == 8 * 1024**3
    assert asyncio.run(cache.refresh()) is False and cache.get("a") == 8 * 1024**3
    assert cache.get("other") is None


def test_hanging_lister_times_out():
    import time
    cache = LimitRangeCache(lambda: time.sleep(1) or [], timeout_seconds=0.1)

    async def timed():
        t0 = time.monotonic()
        ok = await cache.refresh()
        return ok, time.monotonic() - t0
    ok, took = asyncio.run(timed())
    assert ok is False and took < 0.8
