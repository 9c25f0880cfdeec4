"""ClusterModelConfigs: ConfigMaps through the API with a TTL cache; Hub fetch against a local
HTTP server serving the Hub's paths."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import pytest_asyncio
from aiohttp import web

from vllm_sizer.operator.controller import Sizer
from vllm_sizer.operator.model_configs import (ClusterModelConfigs, HubConfigFetcher,
                                               configmap_key_to_model)
from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.workloads.api_names import MODEL_CONFIGS_LABEL

from .conftest import DEPLOYMENTS, events, example, put, stored

CONFIG = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2560,
          "intermediate_size": 9728, "num_hidden_layers": 36, "num_attention_heads": 32,
          "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
          "max_position_embeddings": 40960, "tie_word_embeddings": True,
          "torch_dtype": "bfloat16"}


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def configmap(name: str, data: dict[str, str], namespace: str = "vllm-sizer",
              labelled: bool = True) -> dict:
    labels = {MODEL_CONFIGS_LABEL: "true"} if labelled else {}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": data}


def lookup_for(kmock, settings: OperatorSettings, clock: Clock | None = None) -> ClusterModelConfigs:
    from vllm_sizer.operator.controller import api_client_for

    client = api_client_for(str(kmock.url).rstrip("/"))
    return ClusterModelConfigs(lambda: client, settings, clock=clock or time.monotonic)


def test_configmap_keys():
    assert configmap_key_to_model("acme--support-3b") == "acme/support-3b"
    assert configmap_key_to_model("Qwen--Qwen3-0.6B") == "qwen/qwen3-0.6b"
    assert configmap_key_to_model("acme/support-3b") == "acme/support-3b"
    assert configmap_key_to_model("org--name--v2") == "org/name--v2"


@pytest.mark.asyncio
async def test_configmap_lookup_with_ttl(kmock, api):
    clock = Clock()
    # a generous listing budget: this test is about the TTL, not about slow API servers
    settings = OperatorSettings(model_configs_ttl_seconds=30, lookup_timeout_seconds=20)
    put(kmock, "v1/configmaps", configmap("models", {"acme--support-3b": json.dumps(CONFIG),
                                                     "broken": "{not json"}))
    put(kmock, "v1/configmaps", configmap("other", {"evil--model": json.dumps(CONFIG)},
                                          labelled=False))
    lookup = lookup_for(kmock, settings, clock)

    assert lookup.get("acme/support-3b") is None, "get() never does I/O"
    assert await lookup.load("acme/support-3b") == CONFIG
    assert lookup.get("ACME/Support-3B") == CONFIG
    assert lookup.get("hf://acme/support-3b@main") == CONFIG
    assert lookup.get("/models/acme/support-3b") == CONFIG
    assert lookup.get("evil/model") is None, "unlabelled ConfigMaps are ignored"
    assert lookup.listings == 1
    lists = [r for r in kmock if r.url.path == "/api/v1/configmaps"]
    assert lists[0].params["labelSelector"] == f"{MODEL_CONFIGS_LABEL}=true"

    # A new ConfigMap is not seen within the TTL (no listing per lookup)...
    put(kmock, "v1/configmaps", configmap("more", {"acme--new-7b": json.dumps(CONFIG)}))
    assert await lookup.load("acme/new-7b") is None
    assert lookup.listings == 1
    # ... and is after it.
    clock.t += 31
    assert await lookup.load("acme/new-7b") == CONFIG
    assert lookup.listings == 2

    # Concurrent loads after expiry share one listing.
    clock.t += 31
    await asyncio.gather(*(lookup.load("acme/support-3b") for _ in range(20)))
    assert lookup.listings == 3


@pytest.mark.asyncio
async def test_listing_failure_keeps_the_cache_and_never_raises(kmock, api):
    clock = Clock()
    put(kmock, "v1/configmaps", configmap("models", {"acme--support-3b": json.dumps(CONFIG)}))
    lookup = lookup_for(kmock, OperatorSettings(), clock)
    assert await lookup.load("acme/support-3b") == CONFIG
    kmock["get /api/v1/configmaps"] << 500
    clock.t += 60
    assert await lookup.load("acme/support-3b") == CONFIG  # stale but kept
    assert await lookup.load("acme/unknown") is None


@pytest.mark.asyncio
async def test_listing_timeout_is_bounded(kmock, api):
    async def slow(request):
        await asyncio.sleep(3)
        return {"items": []}

    kmock["get /api/v1/configmaps"] << slow
    lookup = lookup_for(kmock, OperatorSettings(lookup_timeout_seconds=0.3))
    t0 = time.monotonic()
    assert await lookup.load("acme/support-3b") is None
    assert time.monotonic() - t0 < 1.5


@pytest.mark.asyncio
async def test_namespaced_listing(kmock, api):
    put(kmock, "v1/configmaps", configmap("models", {"acme--support-3b": json.dumps(CONFIG)}))
    lookup = lookup_for(kmock, OperatorSettings(model_configs_namespace="vllm-sizer"))
    assert await lookup.load("acme/support-3b") == CONFIG
    assert [r.url.path for r in kmock] == ["/api/v1/namespaces/vllm-sizer/configmaps"]


@pytest.mark.asyncio
async def test_sizer_uses_configmap_model_configs(kmock, api, settings):
    put(kmock, "v1/configmaps", configmap("models", {"acme--support-3b": json.dumps(CONFIG)}))
    dep = put(kmock, DEPLOYMENTS, stored(example("10-configmap-model-config")))
    result = await Sizer(api, settings, lookup_for(kmock, settings)).size(dep)
    assert result.reason in ("Sized", "Undersized")
    assert "vllm-sizer.io/estimate" in result.annotations
    assert events(kmock)[0]["reason"] == result.reason


# ------------------------------------------------------------------------------ Hub fetch
@pytest_asyncio.fixture
async def hub(tmp_path):
    """A local server that answers like the Hub: /{org}/{name}/resolve/{rev}/config.json."""
    seen: list[tuple[str, str | None]] = []

    async def config(request: web.Request) -> web.StreamResponse:
        seen.append((request.path, request.headers.get("Authorization")))
        org, name = request.match_info["org"], request.match_info["name"]
        if name == "slow":
            await asyncio.sleep(2)
        if name == "gated" and request.headers.get("Authorization") != "Bearer hf_secret":
            return web.json_response({"error": "gated"}, status=401)
        if (org, name) in (("acme", "support-3b"), ("acme", "gated"), ("acme", "slow")):
            return web.json_response(CONFIG)
        return web.json_response({"error": "not found"}, status=404)

    app = web.Application()
    app.router.add_get("/{org}/{name}/resolve/{rev}/config.json", config)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


@pytest.mark.asyncio
async def test_hub_fetch_caches_and_negative_caches(hub):
    endpoint, seen = hub
    clock = Clock()
    fetcher = HubConfigFetcher(endpoint, timeout=1.0, clock=clock)
    try:
        assert await fetcher.fetch("acme/support-3b") == CONFIG
        assert seen[-1] == ("/acme/support-3b/resolve/main/config.json", None)
        assert await fetcher.fetch("acme/support-3b") == CONFIG
        assert fetcher.cached("acme/support-3b") == CONFIG
        assert await fetcher.fetch("hf://acme/support-3b@v2") == CONFIG
        assert seen[-1][0] == "/acme/support-3b/resolve/v2/config.json"
        assert fetcher.requests == 2

        assert await fetcher.fetch("acme/missing") is None
        assert await fetcher.fetch("acme/missing") is None
        assert fetcher.requests == 3, "a 404 is remembered"
        clock.t += 301
        assert await fetcher.fetch("acme/missing") is None
        assert fetcher.requests == 4

        for bad in ("/models/local", "../etc/passwd", "acme/../x", "a/b/c", ""):
            assert await fetcher.fetch(bad) is None
        assert fetcher.requests == 4, "paths that are not Hub ids are never fetched"
    finally:
        await fetcher.close()


@pytest.mark.asyncio
async def test_hub_token_from_file_and_timeout(hub, tmp_path):
    endpoint, seen = hub
    token = tmp_path / "token"
    token.write_text("hf_secret\n")
    fetcher = HubConfigFetcher(endpoint, token_file=str(token), timeout=0.3)
    try:
        assert await fetcher.fetch("acme/gated") == CONFIG
        assert seen[-1][1] == "Bearer hf_secret"
        t0 = time.monotonic()
        assert await fetcher.fetch("acme/slow") is None
        assert time.monotonic() - t0 < 1.5
    finally:
        await fetcher.close()


@pytest.mark.asyncio
async def test_cluster_lookup_falls_back_to_the_hub_when_enabled(kmock, api, hub):
    endpoint, seen = hub
    off = lookup_for(kmock, OperatorSettings(hub_endpoint=endpoint))
    assert await off.load("acme/support-3b") is None and seen == [], "off by default"
    on = lookup_for(kmock, OperatorSettings(hub_fetch=True, hub_endpoint=endpoint,
                                            hub_timeout_seconds=1))
    try:
        assert on.get("acme/support-3b") is None
        assert await on.load("acme/support-3b") == CONFIG
        assert on.get("acme/support-3b") == CONFIG  # from the Hub cache, no I/O
        assert len(seen) == 1
    finally:
        await on.close()


@pytest.mark.asyncio
async def test_stale_hit_answers_at_once_and_refreshes_in_the_background(kmock, api):
    clock = Clock()
    put(kmock, "v1/configmaps", configmap("models", {"acme--support-3b": json.dumps(CONFIG)}))
    lookup = lookup_for(kmock, OperatorSettings(lookup_timeout_seconds=2), clock)
    assert await lookup.load("acme/support-3b") == CONFIG

    async def slow(request):
        await asyncio.sleep(0.5)
        return {"items": [configmap("models", {"acme--support-3b": json.dumps({**CONFIG, "v": 2})})]}

    kmock["get /api/v1/configmaps"] << slow
    clock.t += 31
    t0 = time.monotonic()
    assert await lookup.load("acme/support-3b") == CONFIG  # the cached one, now
    assert time.monotonic() - t0 < 0.3
    await asyncio.sleep(0)
    assert lookup.listings == 2, "a refresh was started"
    await asyncio.sleep(0.8)
    assert (await lookup.load("acme/support-3b"))["v"] == 2


@pytest.mark.asyncio
async def test_limit_range_ceilings(kmock, api):
    from vllm_sizer.operator.cluster_listings import ClusterLimitRanges, limit_range_maxima

    kmock.resources["v1/limitranges"] = {}
    lr = {"apiVersion": "v1", "kind": "LimitRange",
          "metadata": {"name": "small", "namespace": "team-a"},
          "spec": {"limits": [{"type": "Container", "max": {"memory": "16Gi"}},
                              {"type": "Container", "max": {"memory": "24Gi"}},
                              {"type": "Pod", "max": {"memory": "1Gi"}}]}}
    put(kmock, "v1/limitranges", lr)
    from vllm_sizer.operator.controller import api_client_for

    client = api_client_for(str(kmock.url).rstrip("/"))
    ranges = ClusterLimitRanges(lambda: client, OperatorSettings(model_configs_ttl_seconds=0.2))
    await ranges.start()
    try:
        assert ranges("team-a") == 16 * 1024**3
        assert ranges("other") is None
        put(kmock, "v1/limitranges", {**lr, "metadata": {"name": "x", "namespace": "team-b"}})
        await asyncio.sleep(1.3)
        assert ranges("team-b") == 16 * 1024**3, "refreshed in the background"
    finally:
        await ranges.stop()
    assert limit_range_maxima([{"metadata": {"namespace": "n"},
                                "spec": {"limits": [{"max": {"memory": "bogus"}}]}}]) == {}
