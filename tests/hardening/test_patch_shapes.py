"""Every patch applies and the patched object validates against its kind's schema
(kubernetes-validate for built-in kinds; KServe's published CRD schemas, vendored under
tests/data/kserve, for InferenceService and LLMInferenceService); a second review changes
nothing; immutable fields are left alone on UPDATE."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import jsonpatch
import jsonschema
import kubernetes_validate
import pytest

from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings

DATA = Path(__file__).parents[1] / "data" / "kserve"
KSERVE = {}
for name in ("inferenceservices", "llminferenceservices"):
    with gzip.open(DATA / f"{name}.schema.json.gz", "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    # one validator per version (jsonschema.validate re-checks the 400 KB schema every call)
    KSERVE[doc["kind"]] = {v: jsonschema.Draft7Validator(schema)
                           for v, schema in doc["versions"].items()}


def validate(obj):
    kind, api = obj["kind"], obj["apiVersion"]
    if kind in KSERVE:
        version = api.split("/", 1)[1]
        KSERVE[kind][version].validate(obj)
    else:
        kubernetes_validate.validate(obj, "1.30", strict=False)


def test_the_vendored_schemas_catch_the_shapes_the_api_server_rejects():
    bad = llmisvc("v1alpha2", {"template": {"containers": {"0": {"resources": {}}}}})
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)
    nameless = llmisvc("v1alpha2", {"template": {"containers": [{"resources": {}}]}})
    with pytest.raises(jsonschema.ValidationError):
        validate(nameless)


def applied(obj, **kw):
    decision = review_object(obj, None, PolicySettings(mode="mutate"), **kw)
    out = jsonpatch.apply_patch(obj, decision.patch) if decision.patch else obj
    validate(out)
    return decision, out


LORA_CPU = ["--device", "cpu", "--enable-lora", "--max-lora-rank", "64",
            "--max-num-batched-tokens", "2048", "--max-model-len", "4096"]


def llmisvc(version, spec_extra):
    return {"apiVersion": f"serving.kserve.io/{version}", "kind": "LLMInferenceService",
            "metadata": {"name": "q", "namespace": "llm"},
            "spec": {"model": {"uri": "hf://Qwen/Qwen3-0.6B", "name": "Qwen/Qwen3-0.6B",
                               "lora": {"maxRank": 64}}, **spec_extra}}


@pytest.mark.parametrize("version", ["v1alpha1", "v1alpha2"])
@pytest.mark.parametrize("template", [
    None,
    {},
    {"containers": []},
    {"containers": [{"name": "sidecar", "image": "busybox"}]},
    {"containers": [{"name": "main", "args": ["--max-num-batched-tokens", "4096"]}]},
])
def test_llminferenceservice_patches_apply_validate_and_settle(version, template):
    obj = llmisvc(version, {} if template is None else {"template": copy.deepcopy(template)})
    decision, out = applied(obj)
    assert decision.verdict == "mutate", decision.warnings
    containers = out["spec"]["template"]["containers"]
    assert isinstance(containers, list)
    mains = [c for c in containers if c.get("name") == "main"]
    assert len(mains) == 1 and mains[0]["resources"]["limits"]["memory"]
    assert all(c.get("name") for c in containers)
    again, out2 = applied(out)
    assert again.patch == [] or all(op["path"].startswith("/metadata/annotations")
                                    for op in again.patch), again.patch
    assert out2["spec"]["template"]["containers"] == containers  # nothing appended twice


def test_inferenceservice_patch_validates_against_the_crd():
    rt = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
          "metadata": {"name": "rt", "namespace": "llm"},
          "spec": {"supportedModelFormats": [{"name": "vLLM"}],
                   "containers": [{"name": "kserve-container",
                                   "image": "vllm/vllm-openai-cpu:v0.11.0",
                                   "command": ["vllm", "serve"], "args": ["/mnt/models"]}]}}
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "q", "namespace": "llm"},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "vLLM"}, "runtime": "rt",
                                             "storageUri": "hf://Qwen/Qwen3-0.6B",
                                             "args": LORA_CPU,
                                             "resources": {"limits": {"memory": "2Gi"}}}}}}
    from vllm_sizer.policy.cluster import ClusterContext

    ctx = ClusterContext.from_objects([rt]).read_context("llm")
    decision = review_object(isvc, ctx, PolicySettings(mode="mutate"))
    assert decision.verdict == "mutate"
    out = jsonpatch.apply_patch(isvc, decision.patch)
    validate(out)


def job(limit="1Gi"):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "a"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{
                "name": "vllm", "image": "vllm/vllm-openai-cpu:v0.11.0",
                "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", *LORA_CPU],
                "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "2"}],
                "resources": {"limits": {"memory": limit}}}]}}}}


@pytest.mark.parametrize("mode", ["mutate", "enforce"])
def test_job_update_never_touches_the_immutable_template(mode):
    obj = job()
    created = review_object(obj, None, PolicySettings(mode=mode), operation="CREATE")
    assert created.verdict in ("mutate", "deny")
    updated = review_object(obj, None, PolicySettings(mode=mode), operation="UPDATE")
    assert updated.verdict != "deny"  # a label edit or finalizer removal must go through
    assert all(not op["path"].startswith("/spec") for op in updated.patch), updated.patch
    assert any("immutable" in w for w in updated.warnings)


def test_pod_update_never_touches_container_resources():
    j = job()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"},
           "spec": j["spec"]["template"]["spec"]}
    updated = review_object(pod, None, PolicySettings(mode="mutate"), operation="UPDATE")
    assert all(not op["path"].startswith("/spec") for op in updated.patch)


@pytest.mark.parametrize("kind,api,wrap", [
    ("Deployment", "apps/v1", lambda pod: {"selector": {"matchLabels": {"a": "b"}},
                                           "template": {"metadata": {"labels": {"a": "b"}},
                                                        "spec": pod}}),
    ("StatefulSet", "apps/v1", lambda pod: {"selector": {"matchLabels": {"a": "b"}},
                                            "serviceName": "s",
                                            "template": {"metadata": {"labels": {"a": "b"}},
                                                         "spec": pod}}),
    ("Job", "batch/v1", lambda pod: {"template": {"spec": {**pod, "restartPolicy": "Never"}}}),
    ("CronJob", "batch/v1", lambda pod: {"schedule": "* * * * *", "jobTemplate": {"spec": {
        "template": {"spec": {**pod, "restartPolicy": "Never"}}}}}),
    ("Pod", "v1", lambda pod: pod),
])
@pytest.mark.parametrize("env", [None, [], [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": ""}]])
def test_builtin_kinds_patches_validate(kind, api, wrap, env):
    c = {"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.26.0",
         "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", *LORA_CPU]}
    if env is not None:
        c["env"] = env
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "x", "namespace": "a"},
           "spec": wrap({"containers": [c]})}
    decision, out = applied(obj)
    assert decision.verdict == "mutate"
    again, _ = applied(out)
    assert again.patch == []
