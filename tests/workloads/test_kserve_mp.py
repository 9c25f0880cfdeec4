"""KServe's multinode predictor with the mp executor backend (the runtime's
multinode/executor-backend: mp; kserve@aaac4e2 predictor.go:611-616 computeMpNodeAndGPUs): the
published runtime that runs that way is OpenDataHub's vllm-multinode-runtime (the head runs
`vllm serve --nnodes=PP --node-rank=0`, each worker pod `vllm serve --nnodes=PP --headless
--node-rank=<its rank>`). The worker is a node rank > 0 of the head's engine, sized from its own
command line: its local world size (tp·pp / nnodes) of GPU workers and its executor process,
no API server, no engine core, no Ray; the head has no Ray head either. vLLM's own --nnodes /
--node-rank are read the same way anywhere (0.33.0:vllm/config/parallel.py:323-326, 839-840;
entrypoints/cli/serve.py:218-231)."""

from pathlib import Path

import yaml

from vllm_sizer.estimator import constants as C
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import ReadContext, read_workloads
from vllm_sizer.workloads import templates

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "published"

ISVC = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llama, namespace: ml, annotations: {serving.kserve.io/deploymentMode: RawDeployment}}
spec:
  predictor:
    model:
      modelFormat: {name: vLLM}
      runtime: vllm-multinode-runtime
      storageUri: pvc://models/Qwen/Qwen3-8B
    workerSpec:
      tensorParallelSize: 4
      pipelineParallelSize: 2
"""


def _context():
    docs = [d for d in yaml.safe_load_all(
        (PUBLISHED / "opendatahub/kustomize-runtimes-vllm.yaml").read_text()) if d]
    (tpl,) = [d for d in docs if d["metadata"]["name"] == "vllm-multinode-runtime-template"]
    (sr,) = templates.process_template(tpl).objects
    assert sr["spec"]["annotations"]["multinode/executor-backend"] == "mp"
    return ReadContext(serving_runtimes={"vllm-multinode-runtime": sr})


def _term(report, name):
    return sum(t.bytes for t in report.terms if t.name == name)


def test_mp_worker_is_a_node_of_the_heads_engine():
    head, worker = read_workloads(yaml.safe_load(ISVC), _context())
    assert worker.container == "worker-container"
    s = worker.settings
    assert s.node_role == "worker" and s.nodes == 2 and s.nnodes == 2 and s.headless
    assert head.settings.node_role == "leader" and head.settings.nnodes == 2
    assert any("mp" in d.message and "no Ray" in d.message for d in worker.diagnostics)


def test_mp_worker_holds_its_local_ranks_and_its_executor_only():
    d = review_object(yaml.safe_load(ISVC), _context())
    head, worker = (c.report for c in d.containers)
    assert _term(worker, "gpu_worker_processes") == 4 * C.GPU_WORKER_PROCESS_BYTES.value
    assert _term(worker, "runtime_overhead") == C.EXTRA_PROCESS_BYTES.value
    assert _term(worker, "ray_node_processes") == 0
    # the head: API server, engine core and its own 4 ranks, no Ray head
    assert _term(head, "gpu_worker_processes") == 4 * C.GPU_WORKER_PROCESS_BYTES.value
    assert _term(head, "ray_node_processes") == 0
    assert _term(head, "runtime_overhead") > C.EXTRA_PROCESS_BYTES.value


DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  template:
    spec:
      containers:
      - name: v
        image: vllm/vllm-openai:v0.33.0
        command: [vllm, serve, Qwen/Qwen3-8B, -tp, '4', -pp, '2', --nnodes, '2', --master-addr, h]
        resources: {limits: {nvidia.com/gpu: 4, memory: 64Gi}}
"""


def test_vllm_nnodes_anywhere_gives_the_nodes_share():
    obj = yaml.safe_load(DEPLOY)
    c = obj["spec"]["template"]["spec"]["containers"][0]
    lead = review_object(obj).containers[0].report
    c["command"] += ["--node-rank", "1", "--headless"]
    work = review_object(obj).containers[0].report
    for r in (lead, work):
        assert _term(r, "gpu_worker_processes") == 4 * C.GPU_WORKER_PROCESS_BYTES.value
        assert _term(r, "ray_node_processes") == 0
    assert _term(work, "runtime_overhead") == C.EXTRA_PROCESS_BYTES.value
    assert work.total_memory_bytes < lead.total_memory_bytes
