"""Tenant safety: one namespace-aware cluster context for check, the webhook and the
controller. A review never uses another namespace's ServingRuntime or model config, never
writes a limit whose effective value it does not know (an unknown runtime, an unreadable
quantity), and never pins an env var that envFrom / valueFrom may set."""

from __future__ import annotations

import asyncio
import json

import pytest

from vllm_sizer.cli.main import main
from vllm_sizer.operator.cluster_listings import ClusterServingRuntimes
from vllm_sizer.operator.model_configs import ClusterModelConfigs
from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.operator.webhook.admission import MUTATE, VALIDATE, Admission
from vllm_sizer.policy.cluster import ClusterContext, model_key, model_keys
from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings
from vllm_sizer.workloads.quantity import parse_quantity

GiB = 1024**3
QWEN_LIKE = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2560,
             "intermediate_size": 9728, "num_hidden_layers": 36, "num_attention_heads": 32,
             "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
             "max_position_embeddings": 40960, "tie_word_embeddings": True,
             "torch_dtype": "bfloat16"}


def runtime(ns, memory, args=()):
    return {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
            "metadata": {"name": "vllm-rt", "namespace": ns},
            "spec": {"supportedModelFormats": [{"name": "vLLM"}],
                     "containers": [{"name": "kserve-container",
                                     "image": "vllm/vllm-openai-cpu:v0.11.0",
                                     "command": ["vllm", "serve"],
                                     "args": ["/mnt/models", "--max-model-len=4096", *args],
                                     "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "2"}],
                                     "resources": {"limits": {"memory": memory}}}]}}


def isvc(ns, runtime_name="vllm-rt", limits=None):
    model = {"modelFormat": {"name": "vLLM"}, "runtime": runtime_name,
             "storageUri": "hf://Qwen/Qwen3-0.6B"}
    if limits:
        model["resources"] = {"limits": limits}
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "q", "namespace": ns}, "spec": {"predictor": {"model": model}}}


def memory_ops(decision):
    return [op for op in decision.patch if op["path"].endswith("/memory")]


# ---------------------------------------------------------------- runtimes by namespace
def test_another_namespace_s_runtime_is_never_used():
    ctx = ClusterContext.from_objects([runtime("team-b", "1Gi"), runtime("team-a", "40Gi")])
    a = review_object(isvc("team-a"), ctx.read_context("team-a"))
    assert memory_ops(a) == []  # team-a's own 40Gi covers the estimate: nothing lowered
    assert a.containers[0].limit_before == 40 * GiB
    only_b = ClusterContext.from_objects([runtime("team-b", "1Gi")])
    d = review_object(isvc("team-a"), only_b.read_context("team-a"))
    assert memory_ops(d) == [], "team-b's runtime must not size team-a's InferenceService"
    assert d.containers[0].verdict == "unknown" and d.containers[0].reason == "limit-unknown"


@pytest.mark.parametrize("mode,verdict", [("mutate", "unknown"), ("warn", "unknown"),
                                          ("enforce", "deny")])
def test_unknown_runtime_never_gets_a_limit_written(mode, verdict):
    d = review_object(isvc("team-a", "custom-rt"), ClusterContext().read_context("team-a"),
                      PolicySettings(mode=mode))
    assert memory_ops(d) == [] and d.verdict == verdict
    text = d.message if verdict == "deny" else " ".join(d.warnings)
    assert "custom-rt" in text and "limits.memory" in text


def test_an_isvc_that_sets_its_own_limit_is_still_raised_never_lowered():
    d = review_object(isvc("team-a", "custom-rt", {"memory": "1Gi"}), ClusterContext().read_context("team-a"))
    ops = memory_ops(d)
    assert ops and all(parse_quantity(op["value"]) > GiB for op in ops)


@pytest.mark.parametrize("quantity", ["1e31", "1e400", "12Zi", "-4Gi", "lots"])
@pytest.mark.parametrize("where", ["isvc", "deployment"])
def test_absurd_quantity_is_an_error_and_nothing_is_patched(quantity, where):
    if where == "isvc":
        obj = isvc("a", limits={"memory": quantity})
        ctx = ClusterContext.from_objects([runtime("a", "8Gi")]).read_context("a")
    else:
        obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "a"},
               "spec": {"template": {"spec": {"containers": [{
                   "name": "v", "image": "vllm/vllm-openai:v0.11.0",
                   "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
                   "resources": {"limits": {"memory": quantity}}}]}}}}
        ctx = None
    for mode in ("mutate", "enforce"):
        d = review_object(obj, ctx, PolicySettings(mode=mode))
        assert d.patch == [], d.patch
        assert any("not a memory quantity" in w for w in d.warnings + [d.message])


# ---------------------------------------------------------------- model configs
def configmap(ns, name, key, cfg):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"vllm-sizer.io/model-configs": "true"}},
            "data": {key: json.dumps(cfg)}}


def test_model_configs_own_namespace_then_trusted_never_first_namespace():
    small = {**QWEN_LIKE, "num_hidden_layers": 2}
    ctx = ClusterContext.from_objects([
        configmap("aaa-attacker", "m", "acme--private", small),
        configmap("team-b", "m", "acme--private", small),
        configmap("vllm-sizer", "m", "acme--private", QWEN_LIKE),
    ], trusted_namespace="vllm-sizer")
    assert ctx.model_config("team-a", "acme/private") == QWEN_LIKE
    assert ctx.model_config("team-b", "acme/private") == small  # its own wins
    assert ctx.model_config("zzz", "acme/private") == QWEN_LIKE
    no_trusted = ClusterContext.from_objects([configmap("aaa-attacker", "m", "acme--private", small)])
    assert no_trusted.model_config("team-a", "acme/private") is None


@pytest.mark.parametrize("spelling", ["acme/private", "hf://acme/private", "hf://Acme/Private@main",
                                      "acme/private@main", "/models/acme/private",
                                      "/mnt/models/Acme/Private/", "ACME/PRIVATE"])
@pytest.mark.parametrize("key", ["acme--private", "Acme--Private", "acme/private"])
def test_one_key_normalisation(spelling, key):
    assert model_key(key) in model_keys(spelling)
    ctx = ClusterContext.from_objects([configmap("ns", "m", key, QWEN_LIKE)])
    assert ctx.model_config("ns", spelling) == QWEN_LIKE


def test_check_and_the_webhook_resolve_the_same_config(capsys, tmp_path):
    cm = configmap("vllm-sizer", "m", "acme--private", QWEN_LIKE)
    attacker = configmap("aaa", "m", "acme--private", {**QWEN_LIKE, "num_hidden_layers": 1})
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "team-a"},
           "spec": {"template": {"spec": {"containers": [{
               "name": "v", "image": "vllm/vllm-openai:v0.11.0",
               "command": ["vllm", "serve", "hf://acme/private@main", "--max-model-len", "4096"],
               "resources": {"limits": {"memory": "1Gi"}}}]}}}}
    f = tmp_path / "all.yaml"
    import yaml
    f.write_text(yaml.safe_dump_all([attacker, cm, dep]))
    assert main(["check", "-o", "json", str(f)]) == 0
    check_after = json.loads(capsys.readouterr().out)[0]["limit_bytes_after"]

    class Listed(ClusterModelConfigs):
        def _list_sync(self, timeout):
            return [attacker, cm]
    settings = OperatorSettings(operator_namespace="vllm-sizer")
    lookup = Listed(lambda: None, settings)
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "u", "kind": {"group": "apps", "kind": "Deployment"},
                                   "operation": "CREATE", "namespace": "team-a", "object": dep}})
    status, out, _ = asyncio.run(Admission(settings, lookup).handle(MUTATE, body.encode()))
    import base64
    ops = json.loads(base64.b64decode(json.loads(out)["response"]["patch"]))
    webhook_after = next(op["value"] for op in ops if op["path"].endswith("limits/memory"))
    assert parse_quantity(webhook_after) == check_after


def test_webhook_runtimes_listing_is_keyed_by_namespace():
    class Fixed(ClusterServingRuntimes):
        def _list_sync(self, timeout):
            return [runtime("team-b", "1Gi")], []
    runtimes = Fixed(lambda: None, OperatorSettings())
    asyncio.run(runtimes.refresh())
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "u", "kind": {"group": "serving.kserve.io",
                                                        "kind": "InferenceService"},
                                   "operation": "CREATE", "namespace": "team-a",
                                   "object": isvc("team-a")}})
    adm = Admission(OperatorSettings(), runtimes=runtimes)
    _, out, _ = asyncio.run(adm.handle(MUTATE, body.encode()))
    resp = json.loads(out)["response"]
    if "patch" in resp:
        import base64
        ops = json.loads(base64.b64decode(resp["patch"]))
        assert not [op for op in ops if "/resources/" in op["path"]]
    enforce = Admission(OperatorSettings(mode="enforce"), runtimes=runtimes)
    _, out, _ = asyncio.run(enforce.handle(VALIDATE, body.encode()))
    resp = json.loads(out)["response"]
    assert resp["allowed"] is False and "vllm-rt" in resp["status"]["message"]


# ---------------------------------------------------------------- env sources
def cpu_deployment(env=None, env_from=None, version="v0.26.0"):
    c = {"name": "v", "image": f"vllm/vllm-openai-cpu:{version}",
         "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", "--enable-lora", "--max-lora-rank", "64"],
         "resources": {"limits": {"memory": "4Gi"}}}
    if env is not None:
        c["env"] = env
    if env_from is not None:
        c["envFrom"] = env_from
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "a"},
            "spec": {"template": {"spec": {"containers": [c]}}}}


VALUE_FROM = [{"name": "VLLM_CPU_KVCACHE_SPACE",
               "valueFrom": {"configMapKeyRef": {"name": "kv", "key": "gib"}}}]
ENV_FROM = [{"configMapRef": {"name": "vllm-env"}}]


@pytest.mark.parametrize("version", ["v0.26.0", "v0.10.0"])
@pytest.mark.parametrize("env,env_from,source", [(VALUE_FROM, None, "valueFrom"),
                                                 (None, ENV_FROM, "configMapRef vllm-env")])
def test_kv_env_from_another_source_is_never_pinned(version, env, env_from, source):
    obj = cpu_deployment(env, env_from, version)
    d = review_object(obj, None, PolicySettings(mode="mutate"))
    assert d.patch == [], d.patch  # no literal that overrides the ConfigMap's value
    assert not any("added" in w for w in d.warnings)
    assert any("VLLM_CPU_KVCACHE_SPACE" in w and source in w and "not pin" in w for w in d.warnings)
    assert review_object(obj, None, PolicySettings(mode="mutate")).patch == []  # idempotent
    denied = review_object(obj, None, PolicySettings(mode="enforce"))
    assert denied.verdict == "deny" and source in denied.message


def test_a_literal_kv_value_beside_envfrom_is_known():
    obj = cpu_deployment([{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "2"}], ENV_FROM)
    d = review_object(obj, None, PolicySettings(mode="mutate"))
    assert d.verdict == "mutate" and memory_ops(d)


def test_two_configmaps_of_one_name_the_last_wins_as_kubectl_apply():
    """check's input applied in order: a ConfigMap written twice holds the second's data."""
    def cm(value):
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "env", "namespace": "a"}, "data": {"K": value}}
    ctx = ClusterContext.from_objects([cm("first"), cm("second")])
    assert ctx.read_context("a").config_maps["env"] == {"K": "second"}
    assert ctx.read_context("b").config_maps.get("env") is None  # never another namespace's


@pytest.mark.parametrize("quantity", ["9" * 400, "9" * 20, "1e30", "8Ei", str(2**63), "1" * 70 + "Gi"])
def test_a_limit_past_what_kubernetes_represents_is_unreadable_not_a_crash(quantity):
    """Kubernetes caps a quantity at 2^63-1; a bigger one (a 400-digit limit crashed the
    review's message formatting) is 'not a memory quantity', never a patch."""
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "a"},
           "spec": {"template": {"spec": {"containers": [{
               "name": "v", "image": "vllm/vllm-openai:v0.11.0",
               "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
               "resources": {"limits": {"memory": quantity}}}]}}}}
    for mode in ("mutate", "enforce"):
        d = review_object(obj, None, PolicySettings(mode=mode))
        assert d.patch == [], d.patch
        assert any("not a memory quantity" in w for w in d.warnings + [d.message])


def test_the_largest_quantity_is_still_read():
    from vllm_sizer.workloads.quantity import MAX_QUANTITY, parse_quantity

    assert parse_quantity(str(MAX_QUANTITY)) == MAX_QUANTITY
    assert parse_quantity("7Ei") == 7 * 2**60
