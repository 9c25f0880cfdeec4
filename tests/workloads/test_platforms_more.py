"""llmaz Playground, kthena ModelBooster, args-only vLLM images, the gRPC server module and
Hugging Face cache paths: read as their platforms run vLLM (sources in platforms.py)."""

import yaml

from vllm_sizer.estimator.names import resolve_model
from vllm_sizer.policy.cluster import ClusterContext
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import read_workloads

PLAYGROUND = """
apiVersion: llmaz.io/v1alpha1
kind: OpenModel
metadata: {name: qwen3-8b}
spec:
  source: {modelHub: {modelID: Qwen/Qwen3-8B}}
  inferenceConfig:
    flavors: [{name: a10, limits: {nvidia.com/gpu: 1}}]
---
apiVersion: inference.llmaz.io/v1alpha1
kind: Playground
metadata: {name: qwen3}
spec:
  replicas: 1
  modelClaim: {modelName: qwen3-8b}
  backendRuntimeConfig:
    args: [--max-model-len, "8192"]
    resources: {limits: {memory: 24Gi}}
"""


def test_llmaz_playground_reads_its_open_model_and_backend_args():
    model, playground = list(yaml.safe_load_all(PLAYGROUND))
    ctx = ClusterContext.from_objects([model]).read_context(None)
    (w,) = read_workloads(playground, ctx)
    assert w.model == "Qwen/Qwen3-8B" and w.settings.max_model_len == 8192
    assert w.device == "cuda" and w.gpu_count == 1  # the flavor's limits
    assert w.limit_bytes == 24 * 2**30 and not w.patchable
    assert review_object(playground, ctx).patch == []
    # the OpenModel not given (the webhook): the model is unknown, said so, not guessed
    (w,) = read_workloads(playground)
    assert w.model != "Qwen/Qwen3-8B"
    assert any("OpenModel qwen3-8b is not visible" in d.message for d in w.diagnostics)
    # another backend is not vLLM
    playground["spec"]["backendRuntimeConfig"]["backendName"] = "sglang"
    assert read_workloads(playground, ctx) == []


def test_llmaz_pods_load_from_a_hub_cache_directory():
    """llmaz's model loader writes /workspace/models/models--ORG--NAME: the pod's --model."""
    r = resolve_model("/workspace/models/models--Qwen--Qwen3-8B")
    assert r.model_id == "Qwen/Qwen3-8B" and r.rule == "path"
    r = resolve_model("/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/0123abc")
    assert r.model_id == "Qwen/Qwen3-8B"
    assert resolve_model("/x/models--acme--not-a-model").model_id is None


BOOSTER = """
apiVersion: workload.serving.volcano.sh/v1alpha1
kind: ModelBooster
metadata: {name: demo}
spec:
  backend:
    name: b
    type: vLLM
    modelURI: hf://Qwen/Qwen3-8B
    workers:
    - type: server
      image: vllm/vllm-openai:v0.11.0
      config: {max-model-len: 4096, enforce-eager: "", gpu-memory-utilization: 0.8}
      resources: {limits: {memory: 32Gi, nvidia.com/gpu: "1"}}
"""


def test_kthena_model_booster_runs_the_worker_config_as_flags():
    obj = yaml.safe_load(BOOSTER)
    (w,) = read_workloads(obj)
    assert w.model == "Qwen/Qwen3-8B" and w.container == "server"
    assert w.settings.max_model_len == 4096 and w.settings.enforce_eager is True
    assert w.settings.gpu_memory_utilization == 0.8 and w.limit_bytes == 32 * 2**30
    obj["spec"]["backend"]["type"] = "SGLang"
    assert read_workloads(obj) == []


def _args_only(image: str, args: list[str]) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "server", "image": image, "args": args}]}}


def test_an_unknown_vllm_image_given_only_vllm_arguments_is_sized_as_assumed():
    (w,) = read_workloads(_args_only("quay.io/acme/vllm-openai-ubi9:0.4.2",
                                     ["--model", "Qwen/Qwen3-8B", "--max-model-len", "6144"]))
    assert w.model == "Qwen/Qwen3-8B" and w.settings.max_model_len == 6144
    assert any("assumed" in d.message and "ENTRYPOINT" in d.message for d in w.diagnostics)
    # vllm serve's positional model
    (w,) = read_workloads(_args_only("ghcr.io/acme/engine:vllm-0.10",
                                     ["/mnt/Qwen/Qwen3-8B", "--max-model-len", "4096"]))
    assert w.settings.max_model_len == 4096


def test_arguments_that_are_not_all_vllm_flags_are_not_assumed():
    # a router on an image that says vLLM: not a vLLM server, never touched
    assert read_workloads(_args_only("quay.io/acme/vllm-router:1",
                                     ["--model", "Qwen/Qwen3-8B", "--routing-logic", "roundrobin"])) == []
    assert read_workloads(_args_only("quay.io/acme/router:1", ["--model", "Qwen/Qwen3-8B"])) == []


def test_the_grpc_server_module_takes_vllm_engine_flags():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "g"},
           "spec": {"containers": [{"name": "v", "image": "vllm/vllm-openai:v0.33.0",
                                    "command": ["python3", "-m", "vllm.entrypoints.grpc_server"],
                                    "args": ["--model", "Qwen/Qwen3-8B", "--max-num-seq", "64"]}]}}
    (w,) = read_workloads(pod)
    assert w.model == "Qwen/Qwen3-8B" and w.settings.max_num_seqs == 64


def test_routers_mocks_and_simulators_are_never_assumed_to_be_engines():
    for image in ("acme/vllm-router:1", "aibrix/vllm-mock:nightly", "acme/vllm-sim:0.1"):
        assert read_workloads(_args_only(image, ["--model", "Qwen/Qwen3-8B", "--port", "8000"])) == []


def test_a_model_path_in_a_hub_cache_directory_is_the_repository_it_holds():
    """Dynamo's llama-3-70b recipe: --model $MODEL_PATH, a snapshot directory of the HF cache:
    the model is the repository (said), as for a path an init container downloads into."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{
        "name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
        "command": ["vllm", "serve", "/opt/models/hub/models--RedHatAI--Llama-3.3-70B-Instruct-"
                    "FP8-dynamic/snapshots/ddb4128556dfcff99e0c41aee159ea6c3e655dcd"]}]}}
    (w,) = read_workloads(pod)
    assert w.model == "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"
    assert any("Hugging Face cache directory" in d.message for d in w.diagnostics)
    pod["spec"]["containers"][0]["command"][2] = "/models/Qwen3-8B"
    (w,) = read_workloads(pod)
    assert w.model == "/models/Qwen3-8B"
