"""Issue 15, remaining item: the worker pods of KServe's multinode predictor and of KubeRay
clusters are sized as worker nodes of their head's engine (one home for the rule:
reader._link_multinode), and a KServe worker pod reaching the pod webhook is never read as a
vLLM server of its own."""

import copy
from pathlib import Path

import pytest
import yaml

from vllm_sizer.estimator import EngineSettings, ModelGeometry, build_report
from vllm_sizer.estimator import constants as C
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import ReadContext, read_workloads
from vllm_sizer.workloads.kserve import ray_node_layout
from vllm_sizer.workloads.shell import run_script
from tests.conftest import QWEN3_0_6B

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "published"
GiB = 2**30


def docs(rel):
    return [d for d in yaml.safe_load_all((PUBLISHED / rel).read_text()) if d]


def term(report, name):
    return next((t.bytes for t in report.terms if t.name == name), 0)


# ---- KServe: the controller's layout (predictor.go computeRayNodeAndGPUs@aaac4e2) -------------

@pytest.mark.parametrize(("args", "want"), [
    ((1, 2, 0, 0, False), (2, 1, 1)),      # no GPU anywhere: one 1-GPU node per rank
    ((4, 2, 0, 0, False), (8, 1, 1)),
    ((4, 2, 0, 4, False), (2, 4, 4)),      # worker GPUs set: ceil(8/4) nodes, head the rest
    ((4, 2, 4, 0, False), (5, 4, 1)),      # head GPUs only: 1-GPU workers for the remainder
    ((4, 2, 8, 4, False), (1, 8, 0)),      # the head alone holds them all: no worker pods
    ((4, 2, 0, 4, True), (2, 4, 4)),       # mp backend: pp nodes of tp GPUs
])
def test_kserve_ray_layout_follows_the_controller(args, want):
    assert ray_node_layout(*args) == want


def test_kserve_layout_refusal_is_a_message_not_a_crash():
    assert "less than" in ray_node_layout(8, 1, 1, 4, False)


ISVC_WORKER = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: qwen, namespace: ml}
spec:
  predictor:
    model:
      modelFormat: {name: vLLM}
      runtime: vllm-multinode-runtime
      storageUri: hf://Qwen/Qwen3-8B
      env: [{name: MODEL_DIR, value: /mnt/models}]
      resources:
        limits: {nvidia.com/gpu: "4", memory: 64Gi}
        requests: {nvidia.com/gpu: "4", memory: 64Gi}
    workerSpec:
      tensorParallelSize: 4
      pipelineParallelSize: 2
      containers:
      - name: worker-container
        resources:
          limits: {nvidia.com/gpu: "4", memory: 2Gi}
          requests: {nvidia.com/gpu: "4", memory: 2Gi}
"""


def _odh_runtime():
    (rt,) = docs("opendatahub/servingruntime-vllm-multinode.yaml")
    return rt


def test_kserve_worker_in_the_isvc_is_a_worker_node_and_is_raised_there():
    obj = yaml.safe_load(ISVC_WORKER)
    ctx = ReadContext(serving_runtimes={"vllm-multinode-runtime": _odh_runtime()})
    head, worker = read_workloads(copy.deepcopy(obj), ctx)
    assert head.settings.node_role == "leader" and head.settings.nodes == 2
    assert head.settings.local_ranks == 4
    assert worker.container == "worker-container"
    assert worker.container_path == "/spec/predictor/workerSpec/containers/0"
    s = worker.settings
    assert s.node_role == "worker" and s.local_ranks == 4 and s.nodes == 2
    assert s.tensor_parallel_size == 4 and s.pipeline_parallel_size == 2
    assert worker.model == "Qwen/Qwen3-8B" and worker.patchable
    d = review_object(obj, ctx)
    wd = next(c for c in d.containers if c.workload.container == "worker-container")
    assert wd.verdict == "mutate" and wd.limit_after > 2 * GiB
    paths = {op["path"] for op in d.patch}
    assert "/spec/predictor/workerSpec/containers/0/resources/limits/memory" in paths
    assert "(multi-node worker)" in wd.message


def test_kserve_worker_only_in_the_runtime_is_reported_never_patched():
    obj = yaml.safe_load(ISVC_WORKER)
    del obj["spec"]["predictor"]["workerSpec"]["containers"]
    ctx = ReadContext(serving_runtimes={"vllm-multinode-runtime": _odh_runtime()})
    head, worker = read_workloads(copy.deepcopy(obj), ctx)
    assert not worker.patchable and worker.settings.node_role == "worker"
    assert worker.limit_bytes == 48 * GiB  # the runtime's worker-container limit
    # the runtime asks for no GPU on its worker: KServe gives 1-GPU workers for the rest
    assert worker.settings.local_ranks == 1 and worker.settings.nodes == 5
    assert any("comes from runtime" in d.message for d in worker.diagnostics)
    d = review_object(obj, ctx, )
    wd = next(c for c in d.containers if c.workload.container == "worker-container")
    assert wd.report is not None and wd.verdict == "allow"
    assert not any("workerSpec" in op["path"] for op in d.patch)


def test_kserve_website_multinode_sample_gets_its_worker():
    (obj,) = docs("kserve-website/multi-node-huggingface-llama3-pvc.yaml")
    head, worker = read_workloads(obj)
    assert head.settings.nodes == 2 and head.settings.local_ranks == 1
    assert worker.settings.node_role == "worker" and worker.settings.local_ranks == 1
    assert worker.patch_blocked is None and not worker.patchable


KSERVE_WORKER_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: llama3-predictor-worker-7d9f-abcde
  namespace: ml
  labels: {app: isvc.llama3-predictor-worker, component: predictor,
           serving.kserve.io/inferenceservice: llama3}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: llama3-predictor-worker-7d9f, controller: true, uid: x}
spec:
  containers:
  - name: worker-container
    image: kserve/huggingfaceserver:v0.15.0-gpu
    command:
    - bash
    - -c
    - |
      export RAY_HEAD_ADDRESS=${HEAD_SVC}.${POD_NAMESPACE}.svc.cluster.local:6379
      SECONDS=0
      while true; do
        if (( SECONDS <= 240 )); then
          if ray health-check --address "${RAY_HEAD_ADDRESS}" > /dev/null 2>&1; then
            break
          fi
        fi
        sleep 5
      done
      ray start --address="${RAY_HEAD_ADDRESS}" --block
    resources:
      limits: {memory: 12Gi, nvidia.com/gpu: "1"}
"""


def test_kserve_worker_pod_is_no_server_and_says_where_it_is_sized():
    pod = yaml.safe_load(KSERVE_WORKER_POD)
    (w,) = read_workloads(copy.deepcopy(pod))
    assert w.settings is None and w.skip_reason
    assert "InferenceService llama3" in w.skip_reason
    d = review_object(pod)
    assert d.verdict == "skip" and not d.patch
    # without a platform's label: no Workload at all, as before
    del pod["metadata"]["labels"]["serving.kserve.io/inferenceservice"]
    assert read_workloads(pod) == []


def test_arithmetic_command_runs_no_program():
    cmds = [c.words for c in run_script("if (( 1 < 2 )); then echo a; fi; (( n++ ))", {}, set(),
                                        False, positional=["sh"])]
    assert cmds == [[":"], ["echo", "a"], [":"]]


# ---- KubeRay --------------------------------------------------------------------------------

def test_raycluster_head_vllm_serve_over_the_cluster_links_its_gpu_worker_group():
    objs = docs("production-stack/helm-15-a-pp-raycluster.yaml")
    ctx_objs = [o for o in objs if o.get("kind") == "ConfigMap"]
    ctx = ReadContext(config_maps={o["metadata"]["name"]: o.get("data") or {} for o in ctx_objs})
    (rc,) = [o for o in objs if o.get("kind") == "RayCluster"]
    head, worker = read_workloads(rc, ctx)
    assert head.settings.node_role == "leader" and head.settings.local_ranks == 1
    assert worker.container == "vllm-ray-worker" and worker.settings.node_role == "worker"
    assert worker.settings.local_ranks == 1 and worker.settings.nodes == 2
    assert worker.container_path.startswith("/spec/workerGroupSpecs/0/")


RAYCLUSTER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: big}
spec:
  headGroupSpec:
    rayStartParams: {num-gpus: "0"}
    template:
      spec:
        containers:
        - name: head
          image: vllm/vllm-openai:v0.11.0
          command: ["bash", "-c", "ray start --head && vllm serve Qwen/Qwen3-8B -tp 8 --distributed-executor-backend ray"]
          resources: {limits: {memory: 16Gi}}
  workerGroupSpecs:
  - groupName: gpu
    replicas: 2
    template:
      spec:
        containers:
        - name: worker
          image: vllm/vllm-openai:v0.11.0
          resources: {limits: {nvidia.com/gpu: "4", memory: 64Gi}}
  - groupName: cpu
    replicas: 1
    template:
      spec:
        containers:
        - name: cpu-worker
          image: vllm/vllm-openai:v0.11.0
          resources: {limits: {memory: 8Gi}}
"""


def test_head_without_gpus_holds_the_front_and_ray_head_only_cpu_groups_hold_nothing():
    head, worker = read_workloads(yaml.safe_load(RAYCLUSTER))
    assert head.settings.node_role == "leader" and head.settings.local_ranks == 0
    assert worker.container == "worker" and worker.settings.local_ranks == 4
    assert head.settings.nodes == 3  # the head and the GPU group's 2 replicas
    geo = ModelGeometry.from_hf_config(dict(QWEN3_0_6B))
    r = build_report(geo, head.settings.model_copy(update={"model": "Qwen/Qwen3-0.6B"}))
    assert term(r, "gpu_worker_processes") == 0 and term(r, "runtime_overhead") > 0
    assert term(r, "ray_node_processes") == (
        C.RAY_NODE_PROCESSES_BYTES.value + C.RAY_HEAD_EXTRA_BYTES.value)


def test_engine_that_fits_the_head_links_nothing():
    obj = yaml.safe_load(RAYCLUSTER)
    h = obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    h["command"] = ["bash", "-c", "ray start --head && vllm serve Qwen/Qwen3-8B -tp 8"]
    h["resources"]["limits"]["nvidia.com/gpu"] = "8"
    (head,) = read_workloads(obj)
    assert head.settings.node_role is None


def test_rayservice_llm_engine_over_two_worker_pods_is_sized_per_pod():
    (obj,) = docs("kuberay/rayservice-deepseek-r1.yaml")
    (w,) = read_workloads(obj)
    assert w.container == "ray-worker" and w.settings.node_role == "replica"
    assert w.settings.local_ranks == 8
    d = review_object(obj)
    (c,) = d.containers
    assert c.report is not None
    assert term(c.report, "gpu_worker_processes") == 8 * C.GPU_WORKER_PROCESS_BYTES.value
    assert term(c.report, "ray_node_processes") == C.RAY_NODE_PROCESSES_BYTES.value
    assert term(c.report, "runtime_overhead") > 0  # the replica and engine core may be here
    assert "(Ray worker with the engine)" in c.message


def test_several_engines_on_one_group_say_the_worst_case_per_pod():
    (obj,) = docs("kuberay/rayservice-deepseek-r1.yaml")
    cfg = yaml.safe_load(obj["spec"]["serveConfigV2"])
    llm = cfg["applications"][0]["args"]["llm_configs"][0]
    second = copy.deepcopy(llm)
    second["model_loading_config"]["model_id"] = "other"
    second["engine_kwargs"] = {"tensor_parallel_size": 4}
    cfg["applications"][0]["args"]["llm_configs"].append(second)
    obj["spec"]["serveConfigV2"] = yaml.safe_dump(cfg)
    ws = read_workloads(obj)
    assert len(ws) == 2 and all(w.settings.node_role == "replica" for w in ws)
    # each engine says how Ray places its replicas; the pod's sum is decided in policy/pods.py
    # (tests/policy/test_ray_pods.py): here the first engine's replica spans two pods
    assert [w.ray_placement.replicas for w in ws] == [1, 1]
    assert all(w.ray_placement.pod_accelerators == 8 for w in ws)
    d = review_object(obj)
    (pod,) = [c for c in d.containers if c.workload.container == "ray-worker (pod total)"]
    assert pod.report.total_memory_bytes == max(
        c.report.total_memory_bytes for c in d.containers if c is not pod)


def test_estimator_replica_role_has_front_ranks_and_ray_node_processes_no_head():
    geo = ModelGeometry.from_hf_config(dict(QWEN3_0_6B))
    base = dict(model="Qwen/Qwen3-0.6B", vllm_version="0.19.0", device="cuda",
                tensor_parallel_size=8, pipeline_parallel_size=2)
    rep = build_report(geo, EngineSettings(**base, node_role="replica", local_ranks=8))
    lead = build_report(geo, EngineSettings(**base, node_role="leader", local_ranks=8))
    assert lead.total_memory_bytes - rep.total_memory_bytes == C.RAY_HEAD_EXTRA_BYTES.value
    with pytest.raises(ValueError):
        EngineSettings(**base, node_role="worker", local_ranks=-1)
