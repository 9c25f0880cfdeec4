"""Devices named by DRA claims and classes, NPU device plugins, and vendor images whose
ENTRYPOINT runs vLLM (the source of each row is in workloads/images.py)."""

import pytest

from vllm_sizer.workloads import read_workloads


def deployment(container: dict, pod_extra: dict | None = None) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [container], **(pod_extra or {})}}}}


@pytest.mark.parametrize(("template_name", "image", "want"), [
    ("intel-gaudi-claim-template", "vllm/vllm-openai:v0.10.0", "other"),
    ("amd-mi300-claim", "vllm/vllm-openai:v0.10.0", "rocm"),
    ("nvidia-h100-claim", "vllm/vllm-openai:v0.10.0", "cuda"),
    ("accelerator-claim", "intel/vllm:0.10.0-xpu", "other"),  # no vendor word: the image's
    ("accelerator-claim", "vllm/vllm-openai:v0.10.0", "cuda"),  # nothing: assumed, said so
])
def test_dra_claims_name_their_vendor(template_name, image, want):
    c = {"name": "vllm", "image": image, "command": ["vllm", "serve", "Qwen/Qwen3-8B"],
         "resources": {"claims": [{"name": "acc"}]}}
    (w,) = read_workloads(deployment(c, {"resourceClaims": [
        {"name": "acc", "resourceClaimTemplateName": template_name}]}))
    assert w.device == want
    assert any("DRA resource claims" in d.message for d in w.diagnostics)


def test_kserve_managed_dra_annotation_gives_the_device():
    obj = {"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
           "metadata": {"name": "q", "annotations": {
               "serving.kserve.io/exp-dra-device-class": "gpu.nvidia.com"}},
           "spec": {"model": {"uri": "hf://Qwen/Qwen3-8B", "name": "Qwen/Qwen3-8B"},
                    "template": {"containers": [{"name": "main"}]}}}
    (w,) = read_workloads(obj)
    assert w.device == "cuda"
    obj["metadata"]["annotations"]["serving.kserve.io/exp-dra-device-class"] = "gaudi.intel.com"
    assert read_workloads(obj)[0].device == "other"
    del obj["metadata"]["annotations"]
    assert read_workloads(obj)[0].device == "unknown"


@pytest.mark.parametrize("resource", ["huawei.com/Ascend910", "rebellions.ai/ATOM"])
def test_npu_device_plugins_are_accelerators(resource):
    c = {"name": "v", "image": "vllm/vllm-openai:v0.11.0", "command": ["vllm", "serve", "Qwen/Qwen3-8B"],
         "resources": {"limits": {resource: "1"}}}
    (w,) = read_workloads(deployment(c))
    assert w.device == "other"


@pytest.mark.parametrize("image", ["ghcr.io/llm-d/llm-d-xpu:latest",
                                   "repo.rebellions.ai/rebellions/vllm-rbln-rhel9:3.3"])
def test_vendor_images_whose_entrypoint_serves_take_args_only(image):
    c = {"name": "vllm", "image": image, "args": ["--model", "Qwen/Qwen3-0.6B", "--port", "8000"]}
    (w,) = read_workloads(deployment(c))
    assert w.model == "Qwen/Qwen3-0.6B" and w.device == "other"
    assert any("ENTRYPOINT" in d.message for d in w.diagnostics)


def test_ascend_image_has_no_serving_entrypoint():
    c = {"name": "vllm", "image": "quay.io/ascend/vllm-ascend:v0.11.0rc1",
         "args": ["--model", "Qwen/Qwen3-0.6B"]}
    (w,) = read_workloads(deployment(c))
    assert w.settings is None  # CMD /bin/bash: args alone start nothing
    c["command"] = ["vllm", "serve", "Qwen/Qwen3-0.6B"]
    (w,) = read_workloads(deployment(c))
    assert w.device == "other" and w.model == "Qwen/Qwen3-0.6B"
