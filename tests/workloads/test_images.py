import pytest

from vllm_sizer.workloads import images


@pytest.mark.parametrize("image,parts", [
    ("vllm/vllm-openai:v0.11.0", ("vllm/vllm-openai", "v0.11.0", None)),
    ("localhost:5000/vllm/vllm-openai", ("localhost:5000/vllm/vllm-openai", None, None)),
    ("r.io:443/a/b:1.0@sha256:abc", ("r.io:443/a/b", "1.0", "sha256:abc")),
    ("", ("", None, None)), (None, ("", None, None)),
])
def test_split_image(image, parts):
    assert images.split_image(image) == parts


@pytest.mark.parametrize("image,version", [
    ("vllm/vllm-openai:v0.11.0", "0.11.0"), ("vllm/vllm-openai:v0.10.1.1", "0.10.1"),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.2", "0.10.2"),
    ("vllm/vllm-openai:v0.11.0-cpu", "0.11.0"), ("vllm/vllm-openai:latest", None),
    ("vllm/vllm-openai:nightly", None), ("vllm/vllm-openai@sha256:0", None),
    ("registry.redhat.io/rhaiis/vllm-cuda-rhel9:3.2.0", None),  # not a vLLM version
    ("kserve/huggingfaceserver:v0.15.2", None), ("python:3.12", None),
])
def test_image_version(image, version):
    v = images.image_version(image)
    assert (str(v) if v else None) == version
    if v:
        assert v.source == "image tag"


@pytest.mark.parametrize("image,entry", [
    ("vllm/vllm-openai:v0.6.6", images.API_SERVER), ("vllm/vllm-openai:v0.11.0", images.API_SERVER),
    ("vllm/vllm-openai:v0.11.1", images.VLLM_SERVE), ("vllm/vllm-openai:v0.20.0", images.VLLM_SERVE),
    ("vllm/vllm-openai:latest", images.VLLM_SERVE), ("vllm/vllm-openai", images.VLLM_SERVE),
    ("kserve/huggingfaceserver:v0.15.0", images.HF_SERVER), ("busybox", None),
])
def test_entrypoint_table(image, entry):
    assert images.entrypoint_for(image) == entry


def test_a_vendor_row_of_a_shared_repository_holds_only_its_tags():
    """intel/redhat-ai-services holds many images: only llm-on-openshift's Gaudi build
    (llm-on-openshift llm-servers/vllm/hpu/Containerfile) is known to run vLLM's server."""
    api = ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    assert images.entrypoint_for("intel/redhat-ai-services:llm-on-openshift_ubi9.4_1.20.0") == api
    assert images.image_device("docker.io/intel/redhat-ai-services:llm-on-openshift_x") == "other"
    assert images.entrypoint_for("intel/redhat-ai-services:some-other-image") is None
    assert images.entrypoint_for("intel/redhat-ai-services") is None


@pytest.mark.parametrize("image,cpu", [
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.10.2", True),
    ("vllm/vllm-openai-cpu:v0.12.0", True), ("my/vllm-cpu:1", True), ("x/y:v0.11.0-cpu", True),
    ("vllm/vllm-openai:v0.11.0", False), ("cpuburn:1", False), (None, False),
])
def test_cpu_images(image, cpu):
    assert images.is_cpu_image(image) is cpu


def test_vllm_omni_image_options_are_not_vllm_startup_errors():
    # aibrix samples/vllm_omni: `vllm serve Qwen/Qwen2.5-Omni-7B --omni` on vllm/vllm-omni:v0.20.0
    # was said to stop the pod (vLLM 0.20.0's parser lacks --omni; vLLM-Omni adds it)
    from vllm_sizer.workloads import read_workloads
    def pod(image):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "vllm-omni", "image": image, "command": [
                    "vllm", "serve", "Qwen/Qwen2.5-Omni-7B", "--omni", "--max-model-len", "8192"]}]}}
    (w,) = read_workloads(pod("vllm/vllm-omni:v0.20.0"))
    assert w.vllm_version.tuple == (0, 20, 0) and w.settings.max_model_len == 8192
    assert not [d for d in w.diagnostics if d.severity == "error"], w.diagnostics
    assert any("vLLM-Omni's own" in d.message and "--omni" in d.message for d in w.diagnostics)
    (w,) = read_workloads(pod("vllm/vllm-openai:v0.20.0"))
    assert any(d.severity == "error" and "--omni" in d.message for d in w.diagnostics)
