"""envFrom ConfigMaps past the reader's bounds: a variable they set is never silently absent
(a VLLM_CPU_KVCACHE_SPACE=40 at key 600 of a ConfigMap was dropped with the keys past the
512th, and the KV cache sized at vLLM's default: 8.1 GiB estimated instead of 44.1 GiB), and
many large sources cost a bounded time."""

from __future__ import annotations

import time

import pytest

from vllm_sizer.policy.cluster import ClusterContext
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import limits

IMG = "vllm/vllm-openai-cpu:v0.11.0"


def _review(keys: int, sources: int = 1, where: str = "last"):
    c = {"name": "v", "image": IMG, "args": ["--model", "Qwen/Qwen3-0.6B"],
         "envFrom": [{"configMapRef": {"name": "cm"}}] * sources,
         "resources": {"limits": {"memory": "64Gi"}}}
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "x", "namespace": "ns"},
           "spec": {"template": {"spec": {"containers": [c]}}}}
    data = {f"K{i:05d}": "1" for i in range(keys)}
    if where == "first":
        data = {"VLLM_CPU_KVCACHE_SPACE": "40", **data}
    else:
        data["VLLM_CPU_KVCACHE_SPACE"] = "40"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"},
          "data": data}
    ctx = ClusterContext.from_objects([cm, obj], "vllm-sizer").read_context("ns")
    return review_object(obj, ctx)


def _gib(d):
    r = d.containers[0].report
    return r.total_memory_bytes / 2**30 if r is not None and d.verdict != "unknown" else None


def test_a_small_configmap_sets_the_kv_cache():
    assert _gib(_review(10)) > 40


@pytest.mark.parametrize("keys", [600, limits.MAX_ENV_FROM_KEYS + 10])
def test_a_variable_past_the_first_keys_is_never_silently_absent(keys):
    d = _review(keys)
    size = _gib(d)
    assert size is None or size > 40, (size, d.warnings)
    if size is None:
        assert any("VLLM_CPU_KVCACHE_SPACE" in w for w in d.warnings), d.warnings


def test_many_large_sources_cost_a_bounded_time():
    t0 = time.process_time()
    d = _review(5000, sources=600)
    assert time.process_time() - t0 < 2.0
    assert _gib(d) is None or _gib(d) > 40
