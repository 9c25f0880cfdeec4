"""A Ray worker pod that may hold several Ray Serve engine replicas (several LLMConfigs on one
worker group, or one engine's num_replicas) is sized as their sum, in one place
(policy/pods.py): each replica's host memory once, Ray's node processes once, only what fits
one pod's accelerators (as Ray declares them) together; where that cannot be known, the
largest engine and why."""

import copy
from pathlib import Path

import yaml

from vllm_sizer.operator.controller.sizing import classify
from vllm_sizer.policy.pods import POD_SUFFIX
from vllm_sizer.policy.review import review_object

PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "published"


def _obj(rel, kind="RayService"):
    docs = [d for d in yaml.safe_load_all((PUBLISHED / rel).read_text()) if d]
    (obj,) = [d for d in docs if d.get("kind") == kind]
    return obj


def _ray(report):
    return next(t.bytes for t in report.terms if t.name == "ray_node_processes")


def _rows(decision):
    pods = [d for d in decision.containers if d.workload.container.endswith(POD_SUFFIX)]
    engines = [d for d in decision.containers if not d.workload.container.endswith(POD_SUFFIX)]
    return engines, pods


def _config(obj):
    return yaml.safe_load(obj["spec"]["serveConfigV2"])


def _set_config(obj, cfg):
    obj["spec"]["serveConfigV2"] = yaml.safe_dump(cfg)


def test_gemma4_eight_replicas_on_one_eight_gpu_pod_are_summed():
    # kuberay's high-throughput sample: num_replicas 8 of a tp=1 engine, one pod of 8 GPUs
    d = review_object(_obj("kuberay/rayservice-high-throughput-gemma4.yaml"))
    (engine,), (pod,) = _rows(d)
    one = engine.report.total_memory_bytes
    ray = _ray(engine.report)
    assert pod.workload.container == "llm" + POD_SUFFIX
    assert pod.report.total_memory_bytes == 8 * (one - ray) + ray
    assert any("8 × gemma4-e2b-it" in w and "Ray's node processes" in w for w in d.warnings)
    assert any(w.startswith("llm (pod total): no memory limit") for w in d.warnings)


def test_autoscaled_replicas_bounded_by_the_pods_gpus():
    # max_replicas 4 of a tp=1 engine; the worker's rayStartParams declare 4 GPUs
    obj = _obj("kuberay/rayservice-llm-serve.yaml")
    d = review_object(copy.deepcopy(obj))
    (engine,), (pod,) = _rows(d)
    ray = _ray(engine.report)
    assert pod.report.total_memory_bytes == 4 * (engine.report.total_memory_bytes - ray) + ray
    # Ray declares 2 GPUs on the pod: only two replicas fit it
    obj["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["rayStartParams"]["num-gpus"] = "2"
    (engine,), (pod,) = _rows(review_object(obj))
    assert pod.report.total_memory_bytes == 2 * (engine.report.total_memory_bytes - ray) + ray


def test_one_replica_per_pod_adds_nothing():
    # num_replicas 4 over 4 pods of one GPU each; deepseek-r1: one tp8·pp2 replica over 2 pods
    for rel in ("kuberay/rayservice-high-throughput-llm.yaml", "kuberay/rayservice-deepseek-r1.yaml"):
        engines, pods = _rows(review_object(_obj(rel)))
        assert len(engines) == 1 and pods == []


def _two_engines(obj, a, b):
    cfg = _config(obj)
    llm = cfg["applications"][0]["args"]["llm_configs"][0]
    first, second = copy.deepcopy(llm), copy.deepcopy(llm)
    first.update(a)
    second.update(b)
    second["model_loading_config"] = {"model_id": "small", "model_source": "Qwen/Qwen3-0.6B"}
    cfg["applications"][0]["args"]["llm_configs"] = [first, second]
    _set_config(obj, cfg)
    return obj


def test_two_engines_that_fit_one_pod_are_summed_each_part_shown():
    obj = _two_engines(
        _obj("kuberay/rayservice-high-throughput-gemma4.yaml"),
        {"engine_kwargs": {"tensor_parallel_size": 2, "max_model_len": 4096},
         "deployment_config": {"num_replicas": 1}},
        {"engine_kwargs": {"tensor_parallel_size": 2}, "deployment_config": {"num_replicas": 2}},
    )
    d = review_object(obj)
    (a, b), (pod,) = _rows(d)
    ray = _ray(a.report)
    want = (a.report.total_memory_bytes - ray) + 2 * (b.report.total_memory_bytes - ray) + ray
    assert pod.report.total_memory_bytes == want
    names = {t.name for t in pod.report.terms}
    assert names == {"gemma4-e2b-it ×1", "small ×2", "ray_node_processes"}
    (line,) = [w for w in d.warnings if "Ray's node processes" in w and "pod total" in w]
    assert "gemma4-e2b-it" in line and "2 × small" in line


def test_only_what_fits_one_pod_is_summed():
    # two tp=8 engines on an 8-GPU pod: never on one pod together
    obj = _two_engines(
        _obj("kuberay/rayservice-high-throughput-gemma4.yaml"),
        {"engine_kwargs": {"tensor_parallel_size": 8}, "deployment_config": {"num_replicas": 1}},
        {"engine_kwargs": {"tensor_parallel_size": 8}, "deployment_config": {"num_replicas": 1}},
    )
    (a, b), (pod,) = _rows(review_object(obj))
    assert pod.report.total_memory_bytes == max(
        a.report.total_memory_bytes, b.report.total_memory_bytes
    )


def test_engines_of_different_accelerator_types_never_share_a_pod():
    obj = _two_engines(
        _obj("kuberay/rayservice-high-throughput-gemma4.yaml"),
        {"accelerator_type": "B200", "deployment_config": {"num_replicas": 1}},
        {"accelerator_type": "H100", "deployment_config": {"num_replicas": 1}},
    )
    (a, b), (pod,) = _rows(review_object(obj))
    assert pod.report.total_memory_bytes == max(
        a.report.total_memory_bytes, b.report.total_memory_bytes
    )
    obj2 = _two_engines(
        _obj("kuberay/rayservice-high-throughput-gemma4.yaml"),
        {"accelerator_type": "B200", "deployment_config": {"num_replicas": 1}},
        {"deployment_config": {"num_replicas": 1}},  # no type: fits beside either
    )
    (a, b), (pod,) = _rows(review_object(obj2))
    ray = _ray(a.report)
    assert pod.report.total_memory_bytes == (
        a.report.total_memory_bytes + b.report.total_memory_bytes - ray
    )


def test_placement_not_knowable_sizes_the_largest_and_says_why():
    # deepseek-r1's replica spans two pods: another engine's replicas may land beside its ranks
    obj = _obj("kuberay/rayservice-deepseek-r1.yaml")
    cfg = _config(obj)
    llm = cfg["applications"][0]["args"]["llm_configs"][0]
    second = copy.deepcopy(llm)
    second["model_loading_config"]["model_id"] = "other"
    second["engine_kwargs"] = {"tensor_parallel_size": 4}
    cfg["applications"][0]["args"]["llm_configs"].append(second)
    _set_config(obj, cfg)
    d = review_object(obj)
    engines, (pod,) = _rows(d)
    assert pod.report.total_memory_bytes == max(e.report.total_memory_bytes for e in engines)
    assert any("is not known" in w and "more than a pod's 8" in w for w in d.warnings)


def test_the_controller_reports_an_undersized_pod_total():
    obj = _obj("kuberay/rayservice-llm-serve.yaml")
    res = obj["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"][
        "containers"][0]["resources"]
    res["limits"]["memory"] = res["requests"]["memory"] = "16Gi"
    d = review_object(obj)
    (engine,), (pod,) = _rows(d)
    assert engine.reason == "fits" and pod.reason == "undersized"
    reason, kind, message = classify(d)
    assert reason == "Undersized" and "ray-worker (pod total)" in message
