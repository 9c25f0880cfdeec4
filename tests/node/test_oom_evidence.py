"""OOM evidence from a real kubelet: a sized vLLM workload whose container the kernel kills at
its cgroup limit gets the controller's OOMKilled Event and `vllm-sizer.io/last-oom`.

The image is the node's Debian rootfs with a stand-in `vllm` executable that allocates (and
touches) 256 MiB more than its own cgroup memory limit, so the kill comes from the kernel's
memcg OOM killer, as it would for vLLM; the workload is in `warn` mode so the webhook leaves
its 256Mi limit alone (and still labels its pods as sized)."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import apply, cluster, derived_rootfs, get, kubectl, wait_for

IMAGE = "local/vllm-sizer-oom:1"
FAKE_VLLM = r'''#!/usr/bin/env python3
"""Stand-in for `vllm serve`: allocate beyond this container's memory limit."""
import mmap, os, sys, time
for path in ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory.max"):
    try:
        limit = int(open(path).read().split()[0])
        break
    except (OSError, ValueError):
        continue
else:
    sys.exit("no cgroup memory limit found")
want = limit + (256 << 20)
print(f"limit {limit} bytes, allocating {want} bytes", flush=True)
buf = mmap.mmap(-1, want)
for off in range(0, want, mmap.PAGESIZE):
    buf[off] = 1
print("survived: the limit was not enforced", flush=True)
time.sleep(3600)
'''


@pytest.fixture(scope="module")
def oom_image(tmp_path_factory) -> str:
    root = derived_rootfs(tmp_path_factory.mktemp("img") / "rootfs")
    exe = root / "usr" / "local" / "bin" / "vllm"
    exe.write_text(FAKE_VLLM)
    exe.chmod(0o755)
    cluster("import", str(root), IMAGE)
    return IMAGE


def test_oomkilled_sized_workload_gets_the_event_and_last_oom(namespace, dev, oom_image):
    t0 = time.monotonic()
    name = "oom-lora"
    apply({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {"vllm-sizer.io/mode": "warn"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {
                     "hostNetwork": True, "dnsPolicy": "Default",
                     "terminationGracePeriodSeconds": 2,
                     "containers": [{
                         "name": "vllm", "image": oom_image, "imagePullPolicy": "Never",
                         "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", "--device", "cpu",
                                     "--max-num-batched-tokens", "512", "--max-num-seqs", "1",
                                     "--max-model-len", "1024"],
                         "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "1"}],
                         "resources": {"limits": {"memory": "256Mi"},
                                       "requests": {"memory": "256Mi"}}}]}}},
    })
    dep = get("deployment", name, namespace)
    assert dep["metadata"]["annotations"]["vllm-sizer.io/decision"].startswith("warn: undersized")
    assert dep["spec"]["template"]["metadata"]["labels"]["vllm-sizer.io/sized"] == "true"

    def killed_pod():
        pods = json.loads(kubectl("get", "pods", "-n", namespace, "-l", f"app={name}", "-o", "json"))
        for pod in pods["items"]:
            for cs in pod["status"].get("containerStatuses", []):
                term = (cs.get("lastState") or {}).get("terminated") or \
                    (cs.get("state") or {}).get("terminated")
                if term and term.get("reason") == "OOMKilled":
                    return pod, cs, term
        return None

    pod, cs, term = wait_for("the kubelet to report OOMKilled", killed_pod, 240)
    assert term["exitCode"] == 137

    def evidence():
        dep = get("deployment", name, namespace)
        last = (dep["metadata"].get("annotations") or {}).get("vllm-sizer.io/last-oom")
        events = json.loads(kubectl("get", "events", "-n", namespace, "-o", "json",
                                    "--field-selector", f"involvedObject.name={name}"))["items"]
        ours = [e for e in events if e["reason"] == "OOMKilled"
                and (e.get("source") or {}).get("component") == "vllm-sizer"]
        return (json.loads(last), ours) if last and ours else None

    last_oom, events = wait_for("the controller's OOMKilled Event and last-oom", evidence, 120)
    assert events[0]["involvedObject"]["kind"] == "Deployment"
    assert events[0]["type"] == "Warning"
    assert last_oom["container"] == "vllm"
    assert last_oom["pod"] == pod["metadata"]["name"]
    assert last_oom["limit"] == "256Mi", last_oom
    assert f"memory limit {last_oom['limit']}" in events[0]["message"]
    assert last_oom["estimate"] == dep["metadata"]["annotations"]["vllm-sizer.io/estimate"]
    print(f"\nnode tier OOM: kubelet OOMKilled (exit 137) and the controller's Event + last-oom "
          f"{json.dumps(last_oom)} in {time.monotonic() - t0:.0f} s; Event: {events[0]['message']}")
