from vllm_sizer.policy.limit_ranges import container_memory_max


def lr(ns, *limits):
    return {"kind": "LimitRange", "metadata": {"namespace": ns}, "spec": {"limits": list(limits)}}


def test_tightest_container_max_per_namespace():
    out = container_memory_max([
        lr("a", {"type": "Container", "max": {"memory": "16Gi"}}),
        lr("a", {"type": "Pod", "max": {"memory": "12Gi"}}),
        lr("b", {"type": "Container", "max": {"cpu": "4"}}),
        lr("c", {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}},
           {"type": "Container", "max": {"memory": "bogus"}}),
        "garbage", {"spec": []},
    ])
    assert out == {"a": 16 * 1024**3}  # a Pod max bounds the sum of containers: not used


