"""An object the reader fails on is never taken for "not vLLM" (admitted unsized without a
word), and the reader's copies of user data do not recurse per level of nesting."""

from __future__ import annotations

import pytest

from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings
from vllm_sizer.workloads import reader
from vllm_sizer.workloads.limits import LimitExceeded, json_copy
from vllm_sizer.workloads.model import ReadContext

from .hostile_objects import deployment


def _nested(depth: int):
    v = "x"
    for _ in range(depth):
        v = {"a": [v]}
    return v


RUNTIME = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
           "metadata": {"name": "vllm-rt", "namespace": "ns"},
           "spec": {"supportedModelFormats": [{"name": "huggingface", "autoSelect": True}],
                    "containers": [{"name": "kserve-container",
                                    "image": "vllm/vllm-openai:v0.11.0",
                                    "args": ["--model", "Qwen/Qwen3-0.6B"],
                                    "resources": {"limits": {"memory": "8Gi"}}}]}}
ISVC = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "i", "namespace": "ns"},
        "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"},
                                         "runtime": "vllm-rt",
                                         "storageUri": "hf://Qwen/Qwen3-0.6B",
                                         "resources": {"limits": {"memory": "4Gi"}}}}}}


@pytest.mark.parametrize("where", ["container", "resources"])
def test_a_runtime_nested_deep_still_sizes_its_inference_services(where):
    """A ServingRuntime (anyone's in the namespace) with a field nested 600 levels deep made
    every InferenceService using it read as "not vLLM" (copy.deepcopy's RecursionError was
    swallowed by the reader)."""
    import copy

    rt = copy.deepcopy(RUNTIME)
    c = rt["spec"]["containers"][0]
    (c if where == "container" else c["resources"])["x-extra"] = _nested(600)
    (w,) = reader.read_workloads(ISVC, ReadContext(serving_runtimes={"vllm-rt": rt}))
    assert w.model == "Qwen/Qwen3-0.6B" and w.settings is not None


def test_an_object_the_reader_fails_on_is_said_never_silently_admitted(monkeypatch):
    """Whatever the reader's failure, the object is a workload that cannot be sized and says
    why: never [] (the webhook's fast path for "not vLLM")."""

    def boom(obj, ctx):
        raise RuntimeError("reader bug")

    monkeypatch.setattr(reader, "_views", boom)
    obj = deployment({"image": "vllm/vllm-openai:v0.11.0", "args": ["--model", "m"]})
    (w,) = reader.read_workloads(obj)
    assert w.settings is None and not w.patchable
    assert any("internal error" in d.message and "reader bug" in d.message
               for d in w.diagnostics)
    for mode in ("mutate", "enforce", "warn"):
        d = review_object(obj, None, PolicySettings(mode=mode))
        assert d.verdict == "unknown"
        assert any("reader bug" in x for x in d.warnings)
        assert not [op for op in d.patch if "/spec/" in op["path"]]


def test_json_copy_is_deep_and_bounded():
    deep = _nested(20_000)
    out = json_copy(deep)
    a, b = out, deep
    for _ in range(20_000):
        assert a == {"a": [a["a"][0]]} and a is not b and a["a"] is not b["a"]
        a, b = a["a"][0], b["a"][0]
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(LimitExceeded):
        json_copy(cyclic, max_nodes=1000)


def test_templates_rendered_over_deeply_nested_objects_are_read():
    # KServe renders an LLMInferenceService's merged container as a template, and `oc process`
    # an OpenShift Template's objects: a field nested 900 levels deep (the API server accepts
    # it in free-form fields) must not end the reading in a RecursionError
    import yaml
    from pathlib import Path
    from vllm_sizer.workloads import read_workloads
    from vllm_sizer.workloads import templates

    deep: object = 1
    for i in range(900):
        deep = {"a": [deep]} if i % 2 else [deep]
    root = Path(__file__).resolve().parents[1] / "data" / "published"
    (isvc,) = [d for d in yaml.safe_load_all((root / "kserve/llmisvc-lora-pvc-cpu.yaml").read_text())
               if d and d.get("kind") == "LLMInferenceService"]
    isvc["spec"]["template"]["containers"][0]["livenessProbe"] = {"timeoutSeconds": deep}
    (w,) = read_workloads(isvc)
    assert w.settings is not None
    assert not any("internal error" in d.message for d in w.diagnostics)
    tpl = {"apiVersion": "template.openshift.io/v1", "kind": "Template",
           "metadata": {"name": "t"}, "parameters": [{"name": "N", "value": "x"}],
           "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "${N}"},
                        "data": {"deep": deep}}]}
    (obj,) = templates.process_template(tpl).objects
    assert obj["metadata"]["name"] == "x"
