"""The platforms' kinds, read from their published samples (tests/data/platforms, each file
names the repository and commit it was copied from), the structural rule for kinds with no
table, and pods: sized unless created from a template vllm-sizer sized."""

from __future__ import annotations

import copy
import pathlib

import jsonpatch
import pytest
import yaml

from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings
from vllm_sizer.workloads import kinds, read_workloads
from vllm_sizer.workloads.api_names import SIZED_LABEL

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "platforms"


def doc(name: str, kind: str) -> dict:
    for d in yaml.safe_load_all((DATA / name).read_text()):
        if d and d.get("kind") == kind:
            return copy.deepcopy(d)
    raise LookupError(kind)


def enforce() -> PolicySettings:
    return PolicySettings(mode="enforce")


# ---- KubeRay RayService: serveConfigV2 llm_configs ------------------------------------------

def test_rayservice_serve_llm_engine_kwargs_are_read_and_never_written():
    obj = doc("kuberay-rayservice-llm.yaml", "RayService")
    (w,) = read_workloads(obj)
    assert w.model == "Qwen/Qwen2.5-7B-Instruct"
    assert w.settings.max_model_len == 1024
    assert w.settings.dtype == "bfloat16"
    assert w.settings.gpu_memory_utilization == 0.75
    assert w.gpu_count == 4 and w.device == "cuda"  # the gpu-group worker (nvidia.com/gpu: 4)
    assert w.container_path.startswith("/spec/rayClusterConfig/workerGroupSpecs/0/")
    assert w.patchable is False
    assert any("Ray object store" in d.message for d in w.diagnostics)
    for mode in ("mutate", "enforce"):
        r = review_object(obj, policy=PolicySettings(mode=mode))
        assert r.verdict not in ("deny", "mutate") and r.patch == []


def test_rayservice_bad_serve_config_is_a_diagnostic():
    obj = doc("kuberay-rayservice-llm.yaml", "RayService")
    obj["spec"]["serveConfigV2"] = "llm_configs: [unclosed"
    (w,) = read_workloads(obj)
    assert w.settings is None and any("not valid YAML" in d.message for d in w.diagnostics)


def _ray_app(env_vars: dict, worker_limits: dict, import_path: str = "serve_tpu:model") -> dict:
    """A RayService whose custom Ray Serve app names vLLM only through its runtime_env, with a
    CPU-only first worker group and the engine's group second."""
    serve = yaml.safe_dump({"applications": [{"name": "llm", "import_path": import_path,
                                              "runtime_env": {"env_vars": env_vars}}]})
    group = lambda name, limits: {"groupName": name, "template": {"spec": {"containers": [
        {"name": name, "image": "${SERVE_IMAGE}", "resources": {"limits": limits}}]}}}
    return {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "r"},
            "spec": {"serveConfigV2": serve, "rayClusterConfig": {
                "headGroupSpec": {"template": {"spec": {"containers": [
                    {"name": "ray-head", "image": "${SERVE_IMAGE}"}]}}},
                "workerGroupSpecs": [group("cpu-worker", {"cpu": "8"}),
                                     group("ray-worker", worker_limits)]}}}


def test_rayservice_app_on_a_tpu_worker_group_is_read_there():
    """GKE's TPU samples: the app names vLLM only by VLLM_XLA_CACHE_PATH, the engine runs on the
    google.com/tpu group (not the first worker group), and serve_tpu.py's tensor parallelism is
    TPU_CHIPS."""
    obj = _ray_app({"MODEL_ID": "Qwen/Qwen3-4B-Instruct-2507", "TPU_CHIPS": "8",
                    "VLLM_XLA_CACHE_PATH": "/data"},
                   {"google.com/tpu": "8", "memory": "200Gi"})
    (w,) = read_workloads(obj)
    assert w.container == "ray-worker" and w.device == "other"
    assert w.model == "Qwen/Qwen3-4B-Instruct-2507"
    assert w.settings.tensor_parallel_size == 8
    assert w.limit_bytes == 200 * 2**30


def test_rayservice_app_whose_code_picks_the_model_is_found_not_guessed():
    """No model in the manifest: not vLLM's default model (the app's code picks one), found and
    said, not sized."""
    obj = _ray_app({"VLLM_XLA_CACHE_PATH": "/tmp/x"}, {"google.com/tpu": "4"},
                   "ai-ml.gke-ray.rayserve.llm.tpu.serve_tpu_multihost:deployment")
    (w,) = read_workloads(obj)
    assert w.container == "ray-worker" and w.settings is None and w.model is None
    assert any("picks the model" in d.message for d in w.diagnostics)
    r = review_object(obj, policy=enforce())
    assert r.patch == [] and r.verdict != "deny"


SERVE_APP = """
import os
from ray import serve
from vllm.engine.arg_utils import AsyncEngineArgs

@serve.deployment
class VLLMDeployment:
    def __init__(self, model, tensor_parallel_size, max_model_len=4096, dtype="auto"):
        args = AsyncEngineArgs(model=model, tensor_parallel_size=tensor_parallel_size,
                               max_model_len=max_model_len, dtype="bfloat16", device="cuda",
                               enforce_eager=os.environ.get("EAGER", "0") == "1")

deployment = VLLMDeployment.bind(
    model=os.environ.get('MODEL_ID', 'Qwen/Qwen3-8B'),
    tensor_parallel_size=int(os.environ.get('TENSOR_PARALLEL_SIZE', '1')),
)
"""


def _mounting(obj: dict, cm: str) -> dict:
    for group in obj["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        group["template"]["spec"]["volumes"] = [{"name": "app", "configMap": {"name": cm}}]
    return obj


def test_rayservice_app_code_in_a_mounted_config_map_is_read_not_its_variable_names():
    """ai-on-eks ships vllm_serve.py in a ConfigMap: the engine is what its AsyncEngineArgs(...)
    says (dtype bfloat16, the bind keywords, defaults); a variable the code never reads
    (MAX_NUM_BATCHED_TOKENS) is no engine setting."""
    from vllm_sizer.workloads import ReadContext

    obj = _mounting(_ray_app({"MODEL_ID": "Qwen/Qwen3-4B", "TENSOR_PARALLEL_SIZE": "2",
                              "MAX_NUM_BATCHED_TOKENS": "16384", "EAGER": "1"},
                             {"nvidia.com/gpu": "2"}, "vllm_serve:deployment"), "app-code")
    ctx = ReadContext(config_maps={"app-code": {"vllm_serve.py": SERVE_APP}})
    (w,) = read_workloads(obj, ctx)
    assert w.model == "Qwen/Qwen3-4B" and w.settings.tensor_parallel_size == 2
    assert w.settings.dtype == "bfloat16" and w.settings.max_model_len == 4096
    assert w.settings.enforce_eager is True
    assert w.settings.max_num_batched_tokens != 16384
    assert any("vllm_serve.py" in d.message for d in w.diagnostics)


RAY_JOB = """
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: batch}
spec:
  entrypoint: python /scripts/run.py
  runtimeEnvYAML: |
    env_vars:
      MODEL_SOURCE: "Qwen/Qwen3-8B"
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers: [{name: ray-head, image: rayproject/ray-llm:2.56.0}]
          volumes: [{name: s, configMap: {name: job-script}}]
    workerGroupSpecs:
    - groupName: gpu
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray-llm:2.56.0
            resources: {limits: {nvidia.com/gpu: "1", memory: 54Gi}}
"""
JOB_SCRIPT = """
import os
from ray.data.llm import build_processor, vLLMEngineProcessorConfig
MODEL = os.environ["MODEL_SOURCE"]
config = vLLMEngineProcessorConfig(model_source=MODEL, engine_kwargs=dict(
    max_model_len=8192, gpu_memory_utilization=0.92, enable_chunked_prefill=True), concurrency=1)
"""


def test_rayjob_script_builds_a_vllm_engine_on_the_gpu_workers():
    """data-on-eks's batch job: ray.data.llm's vLLMEngineProcessorConfig in the entrypoint's
    script (a ConfigMap in the file) runs vLLM on the GPU worker group; reported only."""
    from vllm_sizer.workloads import ReadContext

    obj = yaml.safe_load(RAY_JOB)
    ctx = ReadContext(config_maps={"job-script": {"run.py": JOB_SCRIPT}})
    (w,) = read_workloads(obj, ctx)
    assert (w.kind, w.container) == ("RayJob", "ray-worker") and w.device == "cuda"
    assert w.model == "Qwen/Qwen3-8B" and w.settings.max_model_len == 8192
    assert w.settings.gpu_memory_utilization == 0.92 and w.settings.enable_chunked_prefill
    assert w.limit_bytes == 54 * 2**30 and w.patchable is False
    assert read_workloads(obj) == []  # the script not visible: nothing is guessed
    assert review_object(obj, ctx, enforce()).patch == []


def test_python_app_reader_evaluates_only_what_it_can_know():
    from vllm_sizer.workloads import pyapp

    src = ("import os\nfrom vllm import LLM\nN = int(os.getenv('TP', '2'))\n"
           "llm = LLM(os.environ['M'], tensor_parallel_size=N, max_model_len=compute(),"
           " **dict(dtype='half'))\n")
    (e,) = pyapp.read_engines(src, {"M": "Qwen/Qwen3-0.6B"})
    assert e.model == "Qwen/Qwen3-0.6B" and e.kwargs == {"tensor_parallel_size": 2, "dtype": "half"}
    assert e.unknown == ["max_model_len"]
    (e,) = pyapp.read_engines(src, {})
    assert e.model is None and "model" in e.unknown
    assert pyapp.read_engines("def (:", {}) == [] and pyapp.read_engines("x" * 10**6, {}) == []
    (e,) = pyapp.read_engines("LLM('m', a=dict(c=f()), b={'x': [g()]}, c=b'raw', d=[1, 2])", {})
    assert e.kwargs == {"d": [1, 2]} and e.unknown == ["a", "b", "c"]  # never half a value
    fan = "".join(f"a{i} = [a{i + 1}, a{i + 1}, a{i + 1}, a{i + 1}]\n" for i in range(30))
    (e,) = pyapp.read_engines(fan + "a30 = 1\nLLM('m', hf_overrides=a0)\n", {})
    assert e.unknown == ["hf_overrides"]  # 4**30 evaluations are not attempted
    deep = "a0 = 1\n" + "".join(f"a{i} = a{i - 1}\n" for i in range(1, 200))
    (e,) = pyapp.read_engines(deep + "LLM('m', max_num_seqs=a199)\n", {})
    assert e.unknown == ["max_num_seqs"]  # bounded: a long chain of names is not followed


def test_rayservice_published_app_outside_the_manifest_is_read_from_the_table():
    """A published app the RayService fetches (working_dir archive) or whose image carries it:
    its fixed engine arguments (serve_tpu.py's enforce_eager=True; ai-on-eks's vllm_serve.py
    dtype auto, no chunked prefill, eager) and its env defaults come from data/ray_apps.json."""
    import re

    from vllm_sizer.workloads import platforms

    obj = _ray_app({"MODEL_ID": "google/gemma-7b-it", "TPU_CHIPS": "8", "MAX_MODEL_LEN": ""},
                   {"google.com/tpu": "8"}, "ai-ml.gke-ray.rayserve.llm.tpu.serve_tpu:model")
    app = yaml.safe_load(obj["spec"]["serveConfigV2"])
    app["applications"][0]["runtime_env"]["working_dir"] = (
        "https://github.com/GoogleCloudPlatform/kubernetes-engine-samples/archive/main.zip")
    obj["spec"]["serveConfigV2"] = yaml.safe_dump(app)
    (w,) = read_workloads(obj)
    assert w.model == "google/gemma-7b-it" and w.settings.tensor_parallel_size == 8
    assert w.settings.enforce_eager is True and w.settings.max_model_len is None
    assert any("published app" in d.message for d in w.diagnostics)

    obj = _ray_app({"MODEL_ID": "mistralai/Mistral-7B-Instruct-v0.2", "MAX_MODEL_LEN": "8192"},
                   {"nvidia.com/gpu": "1"}, "vllm_serve:deployment")
    for g in obj["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        g["template"]["spec"]["containers"][0]["image"] = (
            "public.ecr.aws/data-on-eks/ray2.24.0-py310-vllm-gpu:v1")
    (w,) = read_workloads(obj)
    assert w.settings.enforce_eager is True and w.settings.enable_chunked_prefill is False
    assert w.settings.max_model_len == 8192 and w.settings.gpu_memory_utilization == 0.8
    # another image with the same module name is not that app: read by variable names
    for g in obj["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        g["template"]["spec"]["containers"][0]["image"] = "my/vllm-app:1"
    (w,) = read_workloads(obj)
    assert w.settings.enforce_eager is False and w.settings.max_model_len == 8192
    # GKE's qwen3 tutorial creates the ConfigMap from serve_qwen3_tpu.py (not in the file)
    obj = _mounting(_ray_app({"MODEL_ID": "Qwen/Qwen3-4B-Instruct-2507", "VLLM_XLA_CACHE_PATH": "/t"},
                             {"google.com/tpu": "8"}, "serve_qwen3_tpu:deployment"),
                    "qwen3-serve-code")
    (w,) = read_workloads(obj)
    assert w.settings.max_model_len == 8192 and w.settings.tensor_parallel_size == 8
    for row in platforms.RAY_APPS:
        assert re.search(r"@[0-9a-f]{40}:", row["source"]), row["source"]


# ---- production-stack VLLMRuntime ------------------------------------------------------------

def test_vllmruntime_fields_become_the_command_and_memory_is_the_patch_path():
    obj = doc("production-stack-vllmruntime.yaml", "VLLMRuntime")
    (w,) = read_workloads(obj)
    assert w.model == "meta-llama/Llama-3.1-8B-Instruct"
    s = w.settings
    assert (s.enable_lora, s.max_loras, s.max_model_len, s.max_num_seqs, s.dtype) == \
        (True, 4, 4096, 32, "bfloat16")
    assert s.gpu_memory_utilization == 0.8 and w.gpu_count == 1
    assert w.limit_bytes == w.request_bytes == 32 * 1024**3
    assert w.memory_limit_path == "/spec/deploymentConfig/resources/memory"
    obj["spec"]["deploymentConfig"]["resources"]["memory"] = "1Gi"
    r = review_object(obj, policy=PolicySettings(mode="mutate"))
    assert r.verdict == "mutate"
    paths = {op["path"] for op in r.patch}
    assert "/spec/deploymentConfig/resources/memory" in paths
    assert not any("/limits/" in p or "/requests/" in p for p in paths)
    mutated = jsonpatch.apply_patch(obj, r.patch)
    (again,) = read_workloads(mutated)
    assert again.limit_bytes > 1024**3  # raised, one field for request and limit
    assert review_object(mutated, policy=PolicySettings(mode="mutate")).verdict == "allow"
    assert review_object(obj, policy=enforce()).verdict == "deny"


# ---- KubeAI Model: the platform builds the pod ------------------------------------------------

def test_kubeai_model_is_read_from_its_fields_with_no_patch_path():
    obj = doc("kubeai-model.yaml", "Model")
    (w,) = read_workloads(obj)
    assert w.model == "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8"
    assert w.device == "cuda" and w.gpu_count == 1  # resourceProfile nvidia-gpu-l4:1
    assert w.patchable is False
    assert any("pod-level webhook" in d.message for d in w.diagnostics)
    r = review_object(obj, policy=enforce())
    assert r.verdict != "deny" and r.patch == []
    obj["spec"]["engine"] = "OLlama"
    assert read_workloads(obj) == []


def test_kubeai_cpu_profile_and_args():
    obj = doc("kubeai-model.yaml", "Model")
    obj["spec"].update(url="hf://Qwen/Qwen3-0.6B", resourceProfile="cpu:2",
                       args=["--max-num-batched-tokens=1024"], adapters=[{"name": "a", "url": "hf://x/y"}])
    (w,) = read_workloads(obj)
    assert w.model == "Qwen/Qwen3-0.6B" and w.device == "cpu"
    assert w.settings.max_num_batched_tokens == 1024 and w.settings.enable_lora
    r = review_object(obj, policy=PolicySettings(mode="mutate"))
    assert r.patch == [] and any("cannot carry the container's memory limit" in x and "sized when they are created" in x for x in r.warnings)


# ---- AIBrix ------------------------------------------------------------------------------------

def test_stormservice_roles_are_pod_templates():
    obj = doc("aibrix-stormservice-1p1d.yaml", "StormService")
    ws = read_workloads(obj)
    assert [w.container for w in ws] == ["prefill", "decode"]
    for i, w in enumerate(ws):
        assert w.resources_path == f"/spec/template/spec/roles/{i}/template/spec/containers/0/resources"
        assert w.labels_path == f"/spec/template/spec/roles/{i}/template/metadata/labels"
        assert w.patchable and w.model == "/models/Qwen3-8B"
    r = review_object(obj, policy=PolicySettings(mode="mutate"), label_pods=True)
    labels = {op["path"] for op in r.patch if SIZED_LABEL.replace("/", "~1") in op["path"]}
    assert labels == {f"/spec/template/spec/roles/{i}/template/metadata/labels/vllm-sizer.io~1sized"
                      for i in (0, 1)}


def test_rayclusterfleet_without_vllm_is_not_a_workload():
    assert read_workloads(doc("aibrix-rayclusterfleet.yaml", "RayClusterFleet")) == []


# ---- Dynamo -----------------------------------------------------------------------------------

def test_dynamo_v1alpha1_main_container_and_component_resources():
    obj = doc("dynamo-agg-v1alpha1.yaml", "DynamoGraphDeployment")
    (w,) = read_workloads(obj)  # the Frontend runs no vLLM
    assert w.container == "VllmDecodeWorker/main" and w.model == "Qwen/Qwen3-0.6B"
    assert w.gpu_count == 1 and w.device == "cuda"
    assert w.resources_path == "/spec/services/VllmDecodeWorker/resources"
    assert not any("startup error" in d.message for d in w.diagnostics)
    assert any("dynamo.vllm" in d.message for d in w.diagnostics)
    assert w.vllm_version is None  # vllm-runtime:0.7.1 is Dynamo's release, not vLLM 0.7.1
    r = review_object(obj, policy=PolicySettings(mode="mutate"), label_pods=True)
    paths = {op["path"] for op in r.patch}
    assert "/spec/services/VllmDecodeWorker/resources/limits/memory" in paths
    assert "/spec/services/VllmDecodeWorker/extraPodMetadata/labels/vllm-sizer.io~1sized" in paths \
        or "/spec/services/VllmDecodeWorker/extraPodMetadata" in paths


def test_dynamo_v1beta1_pod_templates():
    obj = doc("dynamo-agg-v1beta1.yaml", "DynamoGraphDeployment")
    (w,) = read_workloads(obj)
    assert w.container_path == "/spec/components/1/podTemplate/spec/containers/0"
    assert w.labels_path == "/spec/components/1/podTemplate/metadata/labels"
    assert w.model == "Qwen/Qwen3-0.6B" and w.gpu_count == 1 and w.patchable


# ---- KAITO, Knative ---------------------------------------------------------------------------

def test_kaito_preset_is_read_as_kaito_runs_it_and_never_patched():
    """The preset names the model (KAITO's supported_models.yaml), KAITO's command line takes
    the ConfigMap's vllm: section; the Workspace is reported on, never changed."""
    from vllm_sizer.workloads import ReadContext

    obj = doc("kaito-workspace.yaml", "Workspace")
    cm = doc("kaito-workspace.yaml", "ConfigMap")
    ctx = ReadContext(config_maps={cm["metadata"]["name"]: cm["data"]})
    (w,) = read_workloads(obj, ctx)
    assert w.model == "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B" and w.device == "cuda"
    assert w.settings.gpu_memory_utilization == 0.95  # the ConfigMap's, over KAITO's 0.84
    assert w.settings.tensor_parallel_size == 2 and w.settings.max_model_len == 131072
    assert not w.patchable and not w.skip_reason
    assert review_object(obj, ctx, policy=enforce()).patch == []
    assert read_workloads(cm) == []
    # without the ConfigMap: KAITO's default, and the warning says the parameters are unseen
    (w,) = read_workloads(obj)
    assert w.settings.gpu_memory_utilization == 0.84
    assert any("not visible here" in d.message for d in w.diagnostics)
    # the Transformers runtime is not vLLM: nothing to size
    obj["metadata"]["annotations"] = {"kaito.sh/runtime": "transformers"}
    assert read_workloads(obj) == []


def test_kaito_pods_run_kaitos_vllm_script_and_are_sized_at_creation():
    """The pod KAITO creates runs `python3 /workspace/vllm/inference_api.py` with vLLM's flags
    after its own --kaito-* ones (inference_api.py:64-154)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ws-0"}, "spec": {"containers": [{
        "name": "ws", "image": "mcr.microsoft.com/aks/kaito/kaito-base:0.5.0",
        "command": ["/bin/sh", "-c", "python3 /workspace/vllm/inference_api.py "
                    "--kaito-config-file /mnt/config/inference_config.yaml --model Qwen/Qwen3-8B "
                    "--gpu-memory-utilization 0.84 --kaito-disable-rate-limit --max-model-len 8192"],
        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    (w,) = read_workloads(pod)
    assert w.model == "Qwen/Qwen3-8B" and w.settings.max_model_len == 8192
    assert not any("kaito" in f for f in w.argv)


def test_kaito_inference_set_reads_its_template():
    obj = {"apiVersion": "kaito.sh/v1alpha1", "kind": "InferenceSet", "metadata": {"name": "p"},
           "spec": {"replicas": 1, "template": {
               "inference": {"preset": {"name": "phi-4-mini-instruct"}},
               "resource": {"instanceType": "Standard_NV36ads_A10_v5"}}}}
    (w,) = read_workloads(obj)
    assert w.model == "microsoft/Phi-4-mini-instruct"
    assert w.settings.gpu_memory_utilization == 0.82  # KAITO's A10 value


def test_kaito_template_is_read_not_patched():
    obj = doc("kaito-workspace.yaml", "Workspace")
    del obj["inference"]["preset"]
    obj["inference"]["template"] = {"spec": {"containers": [{
        "name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
        "args": ["--model", "Qwen/Qwen3-0.6B"], "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    (w,) = read_workloads(obj)
    assert w.model == "Qwen/Qwen3-0.6B" and not w.patchable and not w.skip_reason


def test_knative_service_template():
    obj = doc("knative-service.yaml", "Service")
    (w,) = read_workloads(obj)
    assert w.resources_path == "/spec/template/spec/containers/0/resources" and w.patchable
    r = review_object(obj, policy=PolicySettings(mode="mutate"), label_pods=True)
    assert "/spec/template/metadata/labels" in {op["path"] for op in r.patch} or any(
        op["path"].startswith("/spec/template/metadata/labels/") for op in r.patch)
    core = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"template": obj["spec"]["template"]}}
    assert read_workloads(core) == []  # a core Service is not a workload


# ---- structural rule ---------------------------------------------------------------------------

VLLM = {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
        "args": ["--model", "Qwen/Qwen3-0.6B"], "resources": {"limits": {"nvidia.com/gpu": "1"}}}


def test_unknown_crd_is_read_by_structure_and_reported_only():
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "x"},
           "spec": {"serving": {"replicas": [{"podTemplate": {"spec": {"containers": [VLLM]}}}]}}}
    (w,) = read_workloads(obj)
    assert w.container_path == "/spec/serving/replicas/0/podTemplate/spec/containers/0"
    assert not w.patchable and any("read by structure" in d.message for d in w.diagnostics)
    for mode in ("mutate", "enforce"):
        r = review_object(obj, policy=PolicySettings(mode=mode))
        assert r.patch == [] and r.verdict not in ("mutate", "deny")


def test_unknown_crd_whose_operator_builds_the_command_names_the_object():
    obj = {"apiVersion": "example.com/v1", "kind": "Engine", "metadata": {"name": "e"},
           "spec": {"template": {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.11.0",
                                                          "command": ["/entrypoint.sh"]}]}}}}
    (w,) = read_workloads(obj)
    assert w.settings is None and (w.kind, w.name) == ("Engine", "e")
    assert any("no vLLM command" in d.message for d in w.diagnostics)


def test_structural_walk_is_bounded():
    node: dict = {"spec": {"containers": [VLLM]}}
    for i in range(50):
        node = {"x": node}
    obj = {"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "d"}, "spec": node}
    assert read_workloads(obj) == []  # deeper than MAX_DEPTH: not searched, no crash
    wide = {"apiVersion": "example.com/v1", "kind": "Wide", "metadata": {"name": "w"},
            "spec": {"items": [{"a": i} for i in range(20000)]}}
    assert read_workloads(wide) == []


# ---- pods --------------------------------------------------------------------------------------

def vllm_pod(owner=None, labelled=False):
    meta = {"name": "p", "namespace": "llm", "labels": {"app": "x"}}
    if labelled:
        meta["labels"][SIZED_LABEL] = "true"
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": "o",
                                    "uid": "u", "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [dict(VLLM)]}}


@pytest.mark.parametrize("owner, labelled, skipped", [
    (("apps/v1", "ReplicaSet"), True, True),  # template sized: left alone
    (("apps/v1", "StatefulSet"), True, True),
    (("batch/v1", "Job"), True, True),
    (("ray.io/v1", "RayCluster"), True, True),
    (("apps/v1", "ReplicaSet"), False, False),  # a workload created before the install
    (("example.com/v1", "Widget"), True, False),  # an operator vllm-sizer does not read
    (("example.com/v1", "Widget"), False, False),
    (None, False, False),  # bare
    (None, True, False),
])
def test_pods_are_sized_unless_created_from_a_sized_template(owner, labelled, skipped):
    (w,) = read_workloads(vllm_pod(owner, labelled))
    assert bool(w.skip_reason) is skipped
    r = review_object(vllm_pod(owner, labelled), policy=PolicySettings(mode="mutate"), label_pods=True)
    if skipped:
        assert r.patch == []
    else:
        paths = {op["path"] for op in r.patch}
        assert "/spec/containers/0/resources/limits/memory" in paths
        assert any(p.startswith("/metadata/annotations") for p in paths)


def test_skip_annotation_on_a_new_workload_labels_its_templates_skip():
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "d", "namespace": "llm", "annotations": {"vllm-sizer.io/skip": "true"}},
           "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [VLLM]}}}}
    r = review_object(dep, policy=PolicySettings(mode="mutate"), label_pods=True)
    assert r.patch == [{"op": "add", "path": "/spec/template/metadata/labels/vllm-sizer.io~1sized",
                        "value": "skip"}]
    # and so its pods (owned by its ReplicaSet, label "skip") are left alone
    pod = vllm_pod(("apps/v1", "ReplicaSet"))
    pod["metadata"]["labels"][SIZED_LABEL] = "skip"
    (w,) = read_workloads(pod)
    assert w.skip_reason
    # not on an UPDATE (labelling a running template rolls its pods)
    assert review_object(dep, policy=PolicySettings(mode="mutate"), label_pods=False).patch == []


# ---- the one table -----------------------------------------------------------------------------

def test_kinds_table_is_consistent():
    seen = set()
    for k in kinds.KINDS:
        assert (k.group, k.kind) not in seen
        seen.add((k.group, k.kind))
        assert k.api_version in k.api_versions
        assert kinds.lookup(k.api_version, k.kind) is k
        assert k.source, f"{k.kind} cites no source"
        assert k.pod_specs or k.always_send, f"{k.kind}: the matchConditions would never send it"
    assert kinds.lookup("v1", "Service") is None  # core Service: not a workload
    assert set(kinds.watched_resources()) < set(kinds.served_resources())
    assert {k for *_r, k in kinds.served_resources()} - {k for *_r, k in kinds.watched_resources()} \
        == {"Pod", "ReplicaSet"}


def test_a_dynamo_pod_made_by_an_unknown_controller_is_read_too():
    obj = doc("dynamo-agg-v1beta1.yaml", "DynamoGraphDeployment")
    c = obj["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "w-0", "namespace": "llm",
                        "ownerReferences": [{"apiVersion": "grove.io/v1alpha1", "kind": "PodClique",
                                             "name": "w", "uid": "u", "controller": True}]},
           "spec": {"containers": [c]}}
    (w,) = read_workloads(pod)
    assert w.model == "Qwen/Qwen3-0.6B" and not w.skip_reason and w.settings is not None


def test_kuberay_runs_ray_start_in_place_of_the_image_entrypoint():
    """A Ray group container with no command runs `ray start` (KubeRay rewrites it), never the
    vLLM image's ENTRYPOINT: it is not a vLLM server and is never patched; a command that runs
    vLLM before ray start is read."""
    from vllm_sizer.policy.review import review_object

    def cluster(worker: dict) -> dict:
        return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
                "spec": {"headGroupSpec": {"template": {"spec": {"containers": [
                    {"name": "head", "image": "rayproject/ray:2.9.0"}]}}},
                         "workerGroupSpecs": [{"groupName": "g", "template": {"spec": {
                             "containers": [worker]}}}]}}

    plain = cluster({"name": "w", "image": "vllm/vllm-openai:v0.11.0",
                     "resources": {"limits": {"nvidia.com/gpu": 1}}})
    decision = review_object(plain)
    assert not decision.patch and all(d.workload.settings is None for d in decision.containers)
    serving = cluster({"name": "w", "image": "vllm/vllm-openai:v0.11.0",
                       "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
                       "resources": {"limits": {"nvidia.com/gpu": 1}}})
    (w,) = [w for w in read_workloads(serving) if w.settings is not None]
    assert w.container == "w" and w.model == "Qwen/Qwen3-0.6B"


def _alias_bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_platform_yaml_is_read_with_bounds():
    """serveConfigV2 and a KAITO ConfigMap are user YAML: an alias bomb is refused with a
    diagnostic, never expanded (limits.load_yaml; 9**9 items if it were)."""
    from vllm_sizer.workloads import ReadContext

    ws = {"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace", "metadata": {"name": "w"},
          "inference": {"preset": {"name": "phi-4"}, "config": "c"}}
    (w,) = read_workloads(ws, ReadContext(config_maps={"c": {"inference_config.yaml": _alias_bomb()}}))
    assert any("aliases" in d.message for d in w.diagnostics)
    rs = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "r"},
          "spec": {"serveConfigV2": _alias_bomb()}}
    (w,) = read_workloads(rs)
    assert w.settings is None and any("aliases" in d.message for d in w.diagnostics)


def test_dynamo_workers_own_flags_are_not_vllm_startup_errors():
    # dynamo/vllm-dsv4-flash-agg (read_file, ai-dynamo/dynamo): `python3 -m dynamo.vllm ...
    # --dyn-reasoning-parser deepseek_r1 --dyn-tool-call-parser ...` was said to stop the pod
    # ("every known vLLM version rejects it"); Dynamo's parser takes them
    obj = yaml.safe_load("""
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: d}
spec:
  services:
    VllmDecodeWorker:
      componentType: worker
      resources: {limits: {gpu: "1"}}
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1.0
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-0.6B, --is-prefill-worker, --dyn-reasoning-parser,
                 qwen3, --max-model-len, "4096", --nonsense-flag, "7"]
""")
    (w,) = read_workloads(obj)
    assert w.model == "Qwen/Qwen3-0.6B" and w.settings.max_model_len == 4096
    assert not [d for d in w.diagnostics if d.severity == "error"], w.diagnostics
    (note,) = [d for d in w.diagnostics if "Dynamo's own, or unknown" in d.message]
    assert "--dyn-reasoning-parser" in note.message and "--nonsense-flag" in note.message
    # a plain vLLM container still gets vLLM's startup error for a flag it lacks
    obj["spec"]["services"]["VllmDecodeWorker"]["extraPodSpec"]["mainContainer"] = {
        "image": "vllm/vllm-openai:v0.12.0",
        "args": ["--model", "Qwen/Qwen3-0.6B", "--dyn-reasoning-parser", "qwen3"]}
    (w,) = read_workloads(obj)
    assert any(d.severity == "error" and "--dyn-reasoning-parser" in d.message
               for d in w.diagnostics)


@pytest.mark.parametrize(
    "container",
    [
        # list form (dynamo/vllm-omni-audio-agg.yaml, ai-dynamo/dynamo
        # examples/backends/vllm/deploy/agg_omni_audio.yaml): the worker was not found
        {"command": ["python3", "-m", "dynamo.vllm.omni"], "args": []},
        {"command": ["python3"], "args": ["-m", "dynamo.vllm.omni"]},
        # `sh -c` form (Dynamo's launch/agg_omni_*.sh scripts): the module was rewritten
        # to a module that does not exist (api_server.omni)
        {"command": ["/bin/sh", "-c"], "args": ["python -m dynamo.vllm.omni"]},
    ],
)
def test_dynamo_vllm_omni_worker_takes_vllm_engine_flags(container):
    # `python -m dynamo.vllm.omni` is Dynamo's vLLM-Omni worker: it "accepts the same
    # underlying vLLM engine arguments" (docs.nvidia.com/dynamo/reference/backends/
    # v-llm-omni-configuration) plus vLLM-Omni's own (--output-modalities, --stage-id ...)
    tail = ["--model", "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice", "--output-modalities", "audio",
            "--enforce-eager", "--max-model-len", "4096"]
    main = {"name": "main", "image": "my-registry/vllm-runtime:my-tag",
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    if container["command"][0] == "/bin/sh":
        main |= {"command": container["command"], "args": [container["args"][0] + " " + " ".join(tail)]}
    else:
        main |= {"command": container["command"], "args": container["args"] + tail}
    obj = {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
           "metadata": {"name": "omni"},
           "spec": {"components": [{"name": "W", "type": "worker",
                                    "podTemplate": {"spec": {"containers": [main]}}}]}}
    (w,) = read_workloads(obj)
    assert w.model == "Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice"
    assert w.settings.max_model_len == 4096 and w.settings.enforce_eager is True
    # vLLM-Omni's flags are not vLLM's startup errors (the model is not in the catalog: that
    # error is the sizing's, not the command line's)
    assert not [d for d in w.diagnostics
                if d.exits or (d.severity != "info" and "--output-modalities" in d.message)]
    # a module of Dynamo's that is not a vLLM worker is not read as one
    if container["command"][0] != "/bin/sh":
        other = {**main, "command": ["python3", "-m", "dynamo.vllm.nonexistent"], "args": tail}
        obj["spec"]["components"][0]["podTemplate"]["spec"]["containers"] = [other]
        assert not [x for x in read_workloads(obj) if x.model]
