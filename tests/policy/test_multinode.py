"""Issue 15: the worker template of a multi-node LeaderWorkerSet is sized like any container
(limit and request raised, never lowered), with its role in the message and annotations; the
leader counts only its own GPUs' ranks."""

import copy

import jsonpatch

from vllm_sizer.estimator.units import GiB
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads.api_names import DECISION_ANNOTATION, ESTIMATE_ANNOTATION

from tests.workloads.test_multinode import LWS, WORKER_PATH

LEADER_PATH = "/spec/leaderWorkerTemplate/leaderTemplate/spec/containers/0"


def _memory(obj, path):
    node = jsonpatch.JsonPointer(path + "/resources").resolve(obj)
    return node["limits"]["memory"], node.get("requests", {}).get("memory")


def test_worker_limit_and_request_are_raised_with_its_role_said():
    obj = copy.deepcopy(LWS)
    review = review_object(obj)
    by = {d.workload.container: d for d in review.containers}
    worker, leader = by["vllm-worker"], by["vllm-leader"]
    assert worker.verdict == "mutate" and worker.limit_before == 16 * GiB
    assert worker.limit_after > 16 * GiB
    assert worker.report.total_memory_bytes < leader.report.total_memory_bytes
    names = [t.name for t in worker.report.terms if t.bytes and t.enters == "sum"]
    assert "ray_node_processes" in names and "runtime_overhead" not in names
    assert "cpu_offload" in names
    out = review.mutated(obj)
    limit, request = _memory(out, WORKER_PATH)
    assert limit == request and limit != "16Gi"
    assert any(p["path"].startswith(WORKER_PATH + "/resources") for p in review.patch)
    assert "(multi-node worker)" in worker.message
    assert any("vllm-worker (multi-node worker):" in w for w in review.warnings)
    decision = review.annotations[DECISION_ANNOTATION]
    assert "vllm-worker: mutate: " in decision and "(multi-node worker)" in decision
    assert "vllm-worker=" in review.annotations[ESTIMATE_ANNOTATION]
    # the leader's 64Gi covers its share: allowed, named as the leader
    assert leader.verdict == "allow" and "(multi-node leader)" in leader.message


def test_a_worker_limit_above_the_estimate_is_never_lowered():
    obj = copy.deepcopy(LWS)
    c = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    c["resources"]["limits"]["memory"] = "1124Gi"
    review = review_object(obj)
    (worker,) = [d for d in review.containers if d.workload.container == "vllm-worker"]
    assert worker.verdict == "allow"
    assert not any(p["path"].startswith(WORKER_PATH) for p in review.patch)


def test_leader_is_no_longer_charged_with_the_workers_ranks():
    obj = copy.deepcopy(LWS)
    review = review_object(obj)
    (leader,) = [d for d in review.containers if d.workload.container == "vllm-leader"]
    gpu = next(t for t in leader.report.terms if t.name == "gpu_worker_processes")
    assert gpu.source.startswith("8 GPU worker(s)")  # of tp·pp = 16, 8 on the leader's GPUs
    # a re-review of the mutated object changes nothing (annotations parse with the role)
    out = review.mutated(obj)
    again = review_object(out)
    assert again.patch == [] or all("annotations" in p["path"] for p in again.patch)
