"""Hypothesis over the hostile classes: bounded expansion (time and memory), tenant isolation
(objects of other namespaces never change a decision), env sources never clobbered, every patch
applies/validates/settles, mentions are never sized, bad documents never stop `check`.
Profiles in tests/hostile_strategies.py (`ci` under CI=true)."""

from __future__ import annotations

import copy
import json
import time
import tracemalloc

import jsonpatch
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.hostile_strategies import (HOSTILE, NAMESPACES, command_chain, doubling_script,
                                      kube_env_chain, yaml_bomb)
from vllm_sizer.cli.main import main
from vllm_sizer.policy.cluster import ClusterContext
from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings
from vllm_sizer.workloads.quantity import parse_quantity
from vllm_sizer.workloads.reader import read_workloads

from .test_patch_shapes import validate

WALL_S, PEAK = 15.0, 64 * 2**20  # wall generous for 2 shared cores


def deployment(container, ns="team-a", annotations=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "namespace": ns, "annotations": annotations or {}},
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}},
                                  "spec": {"containers": [{"name": "v", **container}]}}}}


def bounded_review(obj, policy=None):
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        d = review_object(obj, None, policy or PolicySettings())
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.perf_counter() - t0 < WALL_S and peak < PEAK, (time.perf_counter() - t0, peak)
    assert not any("internal error" in w for w in d.warnings)
    return d


def never_lowered(obj, d):
    before = obj["spec"]["template"]["spec"]["containers"][0].get("resources", {})
    for op in d.patch:
        if op["path"].endswith("/limits/memory") and "limits" in before:
            assert parse_quantity(op["value"]) >= parse_quantity(before["limits"]["memory"])


@HOSTILE
@given(doubling_script())
def test_scripts_that_grow_are_bounded(script):
    obj = deployment({"image": "vllm/vllm-openai:v0.11.0", "command": ["sh", "-c", script],
                      "resources": {"limits": {"memory": "8Gi"}}})
    never_lowered(obj, bounded_review(obj))


@HOSTILE
@given(kube_env_chain())
def test_kubelet_chains_are_bounded(chain):
    env, ref = chain
    obj = deployment({"image": "vllm/vllm-openai:v0.11.0", "env": env,
                      "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", f"--max-model-len={ref}"]})
    d = bounded_review(obj)
    assert d.patch == [] or d.containers[0].workload.settings is not None


@HOSTILE
@given(yaml_bomb(), st.booleans())
def test_yaml_bombs_are_bounded(bomb, in_script):
    if in_script:
        script = "cat > /c.yaml <<'EOF'\n" + bomb + "EOF\nvllm serve Qwen/Qwen3-0.6B --config /c.yaml"
        obj = deployment({"image": "vllm/vllm-openai:v0.11.0", "command": ["sh", "-c", script]})
    else:
        obj = deployment({"image": "vllm/vllm-openai:v0.11.0",
                          "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", "--config", "/c.yaml"]},
                         annotations={"vllm-sizer.io/vllm-config": bomb})
    bounded_review(obj)


@HOSTILE
@given(command_chain())
def test_only_executed_invocations_are_sized(chain):
    argv, executed = chain
    ws = read_workloads(deployment({"image": "vllm/vllm-openai:v0.11.0", "command": argv}))
    sized = [w for w in ws if w.settings is not None]
    assert bool(sized) == executed, (argv, [str(d) for w in ws for d in w.diagnostics])
    ws = read_workloads(deployment({"image": "bitnami/kubectl:1", "command": argv}))
    assert bool(ws) == executed


def _runtime(ns, memory):
    return {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
            "metadata": {"name": "rt", "namespace": ns},
            "spec": {"containers": [{"name": "kserve-container", "image": "vllm/vllm-openai:v0.11.0",
                                     "command": ["vllm", "serve"], "args": ["/mnt/models"],
                                     "resources": {"limits": {"memory": memory}}}]}}


def _configmap(ns, layers):
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
           "intermediate_size": 3072, "num_hidden_layers": layers, "num_attention_heads": 16,
           "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
           "max_position_embeddings": 40960, "torch_dtype": "bfloat16"}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "m", "namespace": ns,
                         "labels": {"vllm-sizer.io/model-configs": "true"}},
            "data": {"acme--private": json.dumps(cfg)}}


@HOSTILE
@given(st.lists(st.tuples(NAMESPACES, st.sampled_from(["1Gi", "40Gi", "1e31"]),
                          st.integers(1, 80)), max_size=5),
       st.sampled_from(["isvc", "deployment"]))
def test_other_namespaces_never_change_a_decision(others, what):
    ns = "team-a"
    own = [_runtime(ns, "24Gi"), _configmap(ns, 28)]
    if what == "isvc":
        obj = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
               "metadata": {"name": "q", "namespace": ns},
               "spec": {"predictor": {"model": {"modelFormat": {"name": "vLLM"}, "runtime": "rt",
                                                "storageUri": "hf://acme/private"}}}}
    else:
        obj = deployment({"image": "vllm/vllm-openai:v0.11.0",
                          "command": ["vllm", "serve", "acme/private"]}, ns)
    noise = [o for other_ns, mem, layers in others if other_ns not in (ns, "vllm-sizer")
             for o in (_runtime(other_ns, mem), _configmap(other_ns, layers))]
    base = review_object(obj, ClusterContext.from_objects(own, "vllm-sizer").read_context(ns))
    noisy = review_object(obj, ClusterContext.from_objects(noise + own + noise, "vllm-sizer")
                          .read_context(ns))
    assert noisy.patch == base.patch and noisy.verdict == base.verdict


KV = "VLLM_CPU_KVCACHE_SPACE"


@HOSTILE
@given(st.sampled_from(["v0.26.0", "v0.10.0", "v0.11.0"]),
       st.lists(st.sampled_from([
           {"name": KV, "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
           {"name": "OTHER", "value": "1"},
           {"name": "OTHER2", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]), max_size=3),
       st.booleans(), st.sampled_from(["mutate", "warn", "enforce"]))
def test_env_from_other_sources_is_never_clobbered(version, env, env_from, mode):
    c = {"image": f"vllm/vllm-openai-cpu:{version}", "env": copy.deepcopy(env),
         "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", "--enable-lora"],
         "resources": {"limits": {"memory": "2Gi"}}}
    if env_from:
        c["envFrom"] = [{"configMapRef": {"name": "vllm-env"}}]
    obj = deployment(c)
    d = review_object(obj, None, PolicySettings(mode=mode))
    other_source = env_from or any(e["name"] == KV for e in env)
    if other_source:
        assert d.patch == [] and not any("added" in w for w in d.warnings)
    if d.patch:
        out = jsonpatch.apply_patch(obj, d.patch)
        validate(out)
        assert review_object(out, None, PolicySettings(mode=mode)).patch == []


TEMPLATES = st.one_of(
    st.none(), st.just({}),
    st.lists(st.sampled_from([{"name": "main"}, {"name": "sidecar", "image": "busybox"},
                              {"name": "main", "env": [{"name": KV, "value": ""}]},
                              {"name": "main", "resources": {"limits": {"memory": "1Gi"}}}]),
             max_size=3, unique_by=lambda c: c["name"]).map(lambda cs: {"containers": cs}))


@HOSTILE
@given(st.sampled_from(["v1alpha1", "v1alpha2"]), TEMPLATES, st.booleans())
def test_llminferenceservice_patches_apply_validate_settle(version, template, prefill):
    spec = {"model": {"uri": "hf://Qwen/Qwen3-0.6B", "lora": {"maxRank": 64}}}
    if template is not None:
        spec["template"] = copy.deepcopy(template)
    if prefill:
        spec["prefill"] = {"template": copy.deepcopy(template) if template else {}}
    obj = {"apiVersion": f"serving.kserve.io/{version}", "kind": "LLMInferenceService",
           "metadata": {"name": "q", "namespace": "llm"}, "spec": spec}
    d = review_object(obj)
    out = jsonpatch.apply_patch(obj, d.patch) if d.patch else obj
    validate(out)
    again = review_object(out)
    assert all(op["path"].startswith("/metadata/annotations") for op in again.patch), again.patch


GARBAGE = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                       lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                       max_leaves=10)


@HOSTILE
@given(st.lists(st.one_of(GARBAGE, st.fixed_dictionaries({
    "apiVersion": st.sampled_from(["v1", "apps/v1", "serving.kserve.io/v1alpha1"]),
    "kind": st.sampled_from(["ConfigMap", "LimitRange", "ServingRuntime", "Deployment", "List"]),
    "metadata": GARBAGE, "spec": GARBAGE, "data": GARBAGE, "items": GARBAGE})), max_size=4))
def test_check_never_stops_on_bad_documents(tmp_path_factory, docs):
    good = deployment({"image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"]})
    good["metadata"]["name"] = "the-good-one"
    f = tmp_path_factory.mktemp("c") / "in.yaml"
    f.write_text(yaml.safe_dump_all([*docs, good]))
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["check", "-o", "json", str(f)])
    assert rc in (0, 1, 2) and "Traceback" not in err.getvalue()
    assert "internal error" not in err.getvalue(), err.getvalue()
    assert "the-good-one" in out.getvalue()
