"""The controller learns models: config.json fetched from a local server that answers like the Hub
(200, 401 gated, 404, a timeout), stored in the learned-models ConfigMap through the API (kmock),
then read by the same ClusterModelConfigs every webhook replica uses."""

from __future__ import annotations

import json

import pytest

from vllm_sizer.operator.controller.model_learning import LEARNED_CONFIGMAP, ModelLearner
from vllm_sizer.operator.model_configs import HubConfigFetcher
from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.workloads.api_names import MODEL_CONFIGS_LABEL

from .conftest import current
from .test_model_configs import CONFIG, hub, lookup_for  # noqa: F401 - hub: the Hub-like server


def learner(api, endpoint, token_file=None, timeout=1.0):
    return ModelLearner(api, HubConfigFetcher(endpoint, token_file=token_file, timeout=timeout),
                        "vllm-sizer")


@pytest.mark.asyncio
async def test_learned_config_is_stored_and_read_by_the_webhook_lookup(kmock, api, hub):  # noqa: F811
    endpoint, seen = hub
    lr = learner(api, endpoint)
    got = await lr.learn("hf://acme/support-3b@main")
    assert got.outcome == "stored" and got.key == "acme--support-3b"
    cm = current(kmock, "v1/configmaps", "vllm-sizer", LEARNED_CONFIGMAP)
    assert cm["metadata"]["labels"][MODEL_CONFIGS_LABEL] == "true"
    assert json.loads(cm["data"]["acme--support-3b"]) == CONFIG
    # a second model is added to the same map; the first stays
    assert (await lr.learn("acme/support-3b")).outcome == "known"
    await lr.hub.close()
    # the webhook's lookup (no Hub of its own) now finds it
    lookup = lookup_for(kmock, OperatorSettings(lookup_timeout_seconds=10))
    assert lookup.hub is None
    assert await lookup.load("acme/support-3b") == CONFIG


@pytest.mark.asyncio
async def test_gated_missing_and_slow_repos_are_reported_and_nothing_is_stored(kmock, api, hub, tmp_path):  # noqa: F811
    endpoint, _ = hub
    lr = learner(api, endpoint, timeout=0.3)
    gated = await lr.learn("acme/gated")
    assert gated.outcome == "gated" and "401" in gated.detail and "hub.tokenSecret" in gated.detail
    missing = await lr.learn("acme/nothing-here")
    assert missing.outcome == "not-found" and "404" in missing.detail
    slow = await lr.learn("acme/slow")
    assert slow.outcome == "unavailable"
    local = await lr.learn("/models/acme/support-3b")
    assert local.outcome == "not-a-hub-id"
    assert ("v1/configmaps", "vllm-sizer", LEARNED_CONFIGMAP) not in kmock.objects
    # with the token the gated repo is learned
    token = tmp_path / "token"
    token.write_text("hf_secret\n")
    ok = await learner(api, endpoint, token_file=str(token)).learn("acme/gated")
    assert ok.outcome == "stored"
    await lr.hub.close()


@pytest.mark.asyncio
async def test_a_config_that_cannot_be_sized_is_not_stored(kmock, api, hub, monkeypatch):  # noqa: F811
    endpoint, _ = hub
    lr = learner(api, endpoint)

    async def broken(model):
        return {"model_type": "mystery"}
    monkeypatch.setattr(lr.hub, "fetch", broken)
    got = await lr.learn("acme/support-3b")
    assert got.outcome == "unreadable"
    assert ("v1/configmaps", "vllm-sizer", LEARNED_CONFIGMAP) not in kmock.objects


@pytest.mark.asyncio
async def test_the_controller_learns_an_unknown_model_and_sizes_the_object(kmock, api, hub):  # noqa: F811
    """The first apply could not be sized (no ConfigMap, webhook without Hub); the controller
    fetches the config, stores it where the webhooks read it, and posts Sized/Undersized."""
    from vllm_sizer.operator.controller import Sizer

    from .conftest import DEPLOYMENTS, events, example, put, stored

    endpoint, seen = hub
    settings = OperatorSettings(hub_fetch=True, hub_endpoint=endpoint, hub_timeout_seconds=1,
                                lookup_timeout_seconds=10)
    webhook_lookup = lookup_for(kmock, settings)
    webhook_lookup.hub = None  # as run.py builds it for the webhook role (use_hub=False)
    controller_lookup = lookup_for(kmock, settings)
    assert controller_lookup.hub is not None
    dep = put(kmock, DEPLOYMENTS, stored(example("10-configmap-model-config")))
    assert await webhook_lookup.load("acme/support-3b") is None  # first apply: cannot size
    learner = ModelLearner(api, controller_lookup.hub, settings.trusted_namespace)
    result = await Sizer(api, settings, controller_lookup, learner=learner).size(dep)
    assert result.reason in ("Sized", "Undersized"), result.message
    assert events(kmock)[0]["reason"] == result.reason
    assert [p for p, _ in seen] == ["/acme/support-3b/resolve/main/config.json"]
    # the next apply: every webhook replica's lookup finds the learned config
    await webhook_lookup.refresh(force=True)
    assert await webhook_lookup.load("acme/support-3b") == CONFIG
    await controller_lookup.hub.close()


@pytest.mark.asyncio
async def test_a_gated_model_says_so_in_the_cannotsize_event(kmock, api, hub):  # noqa: F811
    from vllm_sizer.operator.controller import Sizer

    from .conftest import DEPLOYMENTS, events, example, put, stored

    endpoint, _ = hub
    settings = OperatorSettings(hub_fetch=True, hub_endpoint=endpoint, hub_timeout_seconds=1,
                                lookup_timeout_seconds=10)
    lookup = lookup_for(kmock, settings)
    dep = stored(example("10-configmap-model-config"))
    c = dep["spec"]["template"]["spec"]["containers"][0]
    c["args"] = [a.replace("acme/support-3b", "acme/gated") for a in c.get("args", [])]
    c["command"] = [a.replace("acme/support-3b", "acme/gated") for a in c.get("command", [])]
    put(kmock, DEPLOYMENTS, dep)
    learner = ModelLearner(api, lookup.hub, settings.trusted_namespace)
    result = await Sizer(api, settings, lookup, learner=learner).size(dep)
    assert result.reason == "CannotSize"
    assert "gated or private" in events(kmock)[0]["message"]
    await lookup.hub.close()
