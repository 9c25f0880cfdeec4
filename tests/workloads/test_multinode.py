"""Issue 15: a LeaderWorkerSet whose worker template only joins the leader's Ray cluster
(multi-node-serving.sh worker, `ray start --address ... --block`) runs the engine's GPU worker
actors on every pod of the group. The worker container is a Workload with the leader's engine
and role "worker"; the leader's role is "leader" (its own GPUs' ranks only)."""

import copy

import yaml

from vllm_sizer.workloads import read_workloads

LWS = yaml.safe_load("""
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: big, namespace: ml}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
        - name: vllm-leader
          image: vllm/vllm-openai:v0.11.0
          command: ["sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE); vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8 --pipeline-parallel-size 2 --cpu-offload-gb 2"]
          resources: {limits: {nvidia.com/gpu: "8", memory: 64Gi}}
    workerTemplate:
      spec:
        containers:
        - name: vllm-worker
          image: vllm/vllm-openai:v0.11.0
          command: ["sh", "-c", "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]
          resources: {limits: {nvidia.com/gpu: "8", memory: 16Gi}}
""")

WORKER_PATH = "/spec/leaderWorkerTemplate/workerTemplate/spec/containers/0"


def test_worker_becomes_a_workload_with_the_leaders_engine():
    leader, worker = read_workloads(copy.deepcopy(LWS))
    assert worker.container == "vllm-worker" and worker.container_path == WORKER_PATH
    assert worker.resources_path == WORKER_PATH + "/resources"
    assert worker.model == leader.model == "Qwen/Qwen3-32B"
    s = worker.settings
    assert s.node_role == "worker" and s.nodes == 2 and s.local_ranks == 8
    assert s.tensor_parallel_size == 8 and s.pipeline_parallel_size == 2
    assert s.cpu_offload_gb == 2
    assert worker.limit_bytes == 16 * 2**30 and s.memory_limit_bytes == 16 * 2**30
    assert worker.gpu_count == 8 and worker.device == "cuda"
    assert any("joins the Ray cluster of container vllm-leader" in d.message
               for d in worker.diagnostics)
    assert leader.settings.node_role == "leader" and leader.settings.local_ranks == 8
    assert leader.limit_bytes == 64 * 2**30


def test_multi_node_serving_script_worker_is_linked_too():
    lws = copy.deepcopy(LWS)
    c = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    c["command"] = ["sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh "
                    "worker --ray_address=$(LWS_LEADER_ADDRESS)"]
    _, worker = read_workloads(lws)
    assert worker.settings.node_role == "worker"


def test_no_link_without_a_ray_joining_worker_or_a_leader_engine():
    lws = copy.deepcopy(LWS)
    c = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    c["command"] = ["sleep", "infinity"]
    (leader,) = read_workloads(lws)
    assert leader.settings.node_role is None  # one node as before
    lws = copy.deepcopy(LWS)
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"] = [
        "sleep", "infinity"]
    assert read_workloads(lws) == []
    # a Ray head elsewhere (`ray start --head`) is not a worker node
    lws = copy.deepcopy(LWS)
    c = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    c["command"] = ["ray", "start", "--head", "--block"]
    (leader,) = read_workloads(lws)
    assert leader.settings.node_role is None


def test_worker_gpus_unknown_share_the_ranks_over_the_size():
    lws = copy.deepcopy(LWS)
    c = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    del c["resources"]["limits"]["nvidia.com/gpu"]
    _, worker = read_workloads(lws)
    assert worker.settings.local_ranks is None and worker.settings.nodes == 2


def test_the_leaders_script_branches_are_the_workers_too():
    lws = copy.deepcopy(LWS)
    lc = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    lc["command"] = ["sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh "
                     "leader; if [ -n \"$BIG\" ]; then vllm serve Qwen/Qwen3-32B -tp 8 -pp 2; "
                     "else vllm serve Qwen/Qwen3-8B -tp 8 -pp 2; fi"]
    leader, worker = read_workloads(lws)
    assert len(leader.alternatives) == len(worker.alternatives) == 1
    assert {worker.model, worker.alternatives[0].model} == {"Qwen/Qwen3-32B", "Qwen/Qwen3-8B"}
    assert worker.alternatives[0].settings.node_role == "worker"
    assert leader.alternatives[0].settings.node_role == "leader"


def test_kserve_multinode_head_is_the_leader_of_the_nodes_kserve_lays_out():
    """KServe's multinode predictor: with no GPU requested anywhere KServe's controller makes
    one 1-GPU node per rank (predictor.go computeRayNodeAndGPUs, case 4: RAY_NODE_COUNT =
    tp·pp); the head holds its own GPU's rank and the Ray head, not all tp·pp. (Read before as
    one node per pipeline stage, which is the mp backend's layout only.)"""
    from tests.workloads.test_kserve import MULTINODE

    w, worker = read_workloads(yaml.safe_load(MULTINODE))
    assert w.settings.node_role == "leader" and w.settings.nodes == 8
    assert w.settings.local_ranks == 1 and worker.settings.local_ranks == 1
    obj = yaml.safe_load(MULTINODE)
    obj["spec"]["predictor"]["workerSpec"] = {"tensorParallelSize": 1}
    (w,) = read_workloads(obj)
    assert w.settings.node_role is None  # one rank: one node, no worker pods


def test_kserve_multinode_head_message_says_its_role():
    from vllm_sizer.policy.review import review_object
    from tests.workloads.test_kserve import MULTINODE

    d, _worker = review_object(yaml.safe_load(MULTINODE)).containers
    # the stock runtime's limit is unknown here (not sized), but the role is said
    assert "container kserve-container (multi-node leader)" in d.message


def test_env_value_referencing_an_lws_variable_is_expanded():
    """LWS puts LWS_GROUP_SIZE (and the other LWS_* variables) at the front of every
    container's env (kubernetes-sigs/lws pkg/utils/pod addEnvVarsIfNotExists), so the kubelet
    expands `PIPELINE_PARALLEL_SIZE=$(LWS_GROUP_SIZE)` to the group size before the args use it
    (wg-serving's serving-catalog LWS: `--pipeline_parallel_size=$(PIPELINE_PARALLEL_SIZE)`)."""
    lws = copy.deepcopy(LWS)
    lws["spec"]["leaderWorkerTemplate"]["size"] = 3
    c = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    c["command"] = ["sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh "
                    "leader --ray_cluster_size=$(LWS_GROUP_SIZE); python3 -m "
                    "vllm.entrypoints.openai.api_server \"$@\"", "--"]
    c["args"] = ["--model=Qwen/Qwen3-32B", "--tensor-parallel-size=8",
                 "--pipeline_parallel_size=$(PIPELINE_PARALLEL_SIZE)"]
    c["env"] = [{"name": "PIPELINE_PARALLEL_SIZE", "value": "$(LWS_GROUP_SIZE)"}]
    leader, worker = read_workloads(lws)
    assert leader.settings.pipeline_parallel_size == 3
    assert worker.settings.pipeline_parallel_size == 3 and worker.settings.nodes == 3
    # a container that sets the variable itself: LWS adds nothing, its own value is used, and
    # an earlier entry cannot see it (the kubelet expands env in order)
    c["env"] = [{"name": "PIPELINE_PARALLEL_SIZE", "value": "$(LWS_GROUP_SIZE)"},
                {"name": "LWS_GROUP_SIZE", "value": "2"}]
    leader, _ = read_workloads(copy.deepcopy(lws))
    assert leader.settings.pipeline_parallel_size != 3


def test_lws_injected_variables_survive_env_entries_with_unhashable_names():
    # a hostile env entry whose name is a list must not break the injected LWS variables
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "l"},
        "spec": {"leaderWorkerTemplate": {"size": 2, "leaderTemplate": {"spec": {"containers": [{
            "name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
            "env": [{"name": ["x"]}, {"name": "PP", "value": "$(LWS_GROUP_SIZE)"}],
            "command": ["sh", "-c", "vllm serve Qwen/Qwen3-8B --pipeline-parallel-size $PP"],
            "resources": {"limits": {"nvidia.com/gpu": "1", "memory": "32Gi"}}}]}},
            "workerTemplate": {"spec": {"containers": [{
                "name": "w", "image": "vllm/vllm-openai:v0.11.0",
                "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}},
    }
    leader = read_workloads(lws)[0]
    assert not any("internal error" in d.message for d in leader.diagnostics)
    assert leader.settings is not None and leader.settings.pipeline_parallel_size == 2
