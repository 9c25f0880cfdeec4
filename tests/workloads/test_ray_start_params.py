"""KubeRay's rayStartParams (num-gpus, resources) and a group's top-level `resources` set what
Ray declares on a node (`ray start --num-gpus`), over the container's GPU limit
(ray-project/kuberay@feeaf72 ray-operator/controllers/ray/common/pod.go:1390-1416,
1649-1675): the ranks a Ray worker pod holds follow Ray's count, read in one place
(platforms.ray_start_accelerators)."""

import copy
from pathlib import Path

import yaml

from vllm_sizer.workloads import read_workloads
from vllm_sizer.workloads.platforms import ray_start_accelerators

from tests.workloads.test_multinode_workers import RAYCLUSTER

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "published"


def _published(rel):
    return [d for d in yaml.safe_load_all((PUBLISHED / rel).read_text()) if d]


def _deepseek():
    (obj,) = _published("kuberay/rayservice-deepseek-r1.yaml")
    return obj


def test_num_gpus_below_the_limit_sets_the_replica_pods_ranks():
    obj = _deepseek()
    group = obj["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
    (before,) = read_workloads(copy.deepcopy(obj))
    assert before.settings.local_ranks == 8  # the container's nvidia.com/gpu: 8
    group.setdefault("rayStartParams", {})["num-gpus"] = "4"
    (w,) = read_workloads(obj)
    assert w.settings.node_role == "replica" and w.settings.local_ranks == 4
    assert any("Ray declares 4 GPU(s)" in d.message and "num-gpus" in d.message
               for d in w.diagnostics)


def test_group_resources_override_ray_start_params():
    obj = _deepseek()
    group = obj["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]
    group["rayStartParams"] = {"num-gpus": "4"}
    group["resources"] = {"nvidia.com/gpu": "2"}
    (w,) = read_workloads(obj)
    assert w.settings.local_ranks == 2


def test_a_gpu_group_that_ray_declares_without_gpus_holds_no_ranks():
    obj = yaml.safe_load(RAYCLUSTER)
    gpu, cpu = obj["spec"]["workerGroupSpecs"]
    gpu["rayStartParams"] = {"num-gpus": "0"}
    # GPUs reach the cpu group's pods another way (a device plugin Ray is told about)
    cpu["rayStartParams"] = {"num-gpus": "2"}
    head, worker = read_workloads(obj)
    assert worker.container == "cpu-worker" and worker.settings.node_role == "worker"
    assert worker.settings.local_ranks == 2
    assert head.settings.nodes == 2  # the head and the one cpu-worker replica


def test_head_gpus_ray_does_not_declare_are_still_seen_by_vllms_mp_executor():
    obj = yaml.safe_load(RAYCLUSTER)  # the head's rayStartParams say num-gpus "0"
    h = obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    h["command"] = ["bash", "-c", "ray start --head && vllm serve Qwen/Qwen3-8B -tp 8 "
                    "--distributed-executor-backend ray"]
    h["resources"]["limits"]["nvidia.com/gpu"] = "8"
    head, worker = read_workloads(obj)
    # the Ray executor places its actors where Ray declares GPUs: none on the head
    assert head.settings.node_role == "leader" and head.settings.local_ranks == 0


def test_ray_start_accelerators_reads_what_kuberay_passes():
    limit8 = {"resources": {"limits": {"nvidia.com/gpu": "8"}}}
    assert ray_start_accelerators({}, limit8)[0] == 8
    assert ray_start_accelerators({"rayStartParams": {"num-gpus": 2}}, limit8)[0] == 2
    # not a whole number: `ray start --num-gpus` refuses it; the container's count stands
    assert ray_start_accelerators({"rayStartParams": {"num-gpus": "1.5"}}, limit8)[0] == 8
    mig = {"resources": {"limits": {"nvidia.com/mig-1g.10gb": "2"}}}
    assert ray_start_accelerators({}, mig)[0] == 2
    # TPU / Neuron: KubeRay passes them as custom resources in other units: the container's
    # own count stands (None here)
    tpu = {"resources": {"limits": {"google.com/tpu": "4"}}}
    assert ray_start_accelerators({}, tpu)[0] is None
    assert ray_start_accelerators({"rayStartParams": {"num-gpus": "0"}}, {})[0] == 0
