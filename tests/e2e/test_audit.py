"""`vllm-sizer audit` against a real API server: sized, undersized, unknown-model and OOMKilled
workloads each get the right verdict and OOM history; nothing is changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

# annotations the cluster's own controllers write (the deployment controller's revision)
_CONTROLLER_ANNOTATION_PREFIXES = ("deployment.kubernetes.io/",)


def _own_annotations(annotations: dict[str, str] | None) -> dict[str, str]:
    return {key: value for key, value in (annotations or {}).items()
            if not key.startswith(_CONTROLLER_ANNOTATION_PREFIXES)}


def deployment(name: str, ns: str, command: list[str], memory: str | None,
               image: str = "vllm/vllm-openai:v0.11.0") -> dict[str, Any]:
    resources: dict[str, Any] = {"limits": {"nvidia.com/gpu": "1"}}
    if memory:
        resources["limits"]["memory"] = memory
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns,
                         "annotations": {"vllm-sizer.io/skip": "false"}},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{
                                      "name": "vllm", "image": image,
                                      "command": command, "resources": resources}]}}}}


def test_audit_lists_each_workload_with_its_verdict_and_oom_history(kube: Any, namespace: str):
    from kubernetes import client

    apps, core = client.AppsV1Api(kube), client.CoreV1Api(kube)
    serve = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "8192"]
    apps.create_namespaced_deployment(namespace, deployment("audit-fits", namespace, serve, "64Gi"))
    apps.create_namespaced_deployment(namespace, deployment("audit-small", namespace, serve, "2Gi"))
    apps.create_namespaced_deployment(namespace, deployment(
        "audit-unknown", namespace, ["vllm", "serve", "acme/private-model-13b"], "64Gi"))
    apps.create_namespaced_deployment(namespace, deployment(
        "audit-web", namespace, ["nginx", "-g", "daemon off;"], "1Gi", image="nginx:1.27"))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "audit-oomed", "namespace": namespace},
           "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                                    "command": serve,
                                    "resources": {"limits": {"nvidia.com/gpu": "1",
                                                             "memory": "64Gi"}}}]}}
    core.create_namespaced_pod(namespace, pod)
    # what a kubelet reports after an OOM kill (no kubelet here: the status is written directly)
    status = {"status": {"phase": "Running", "containerStatuses": [{
        "name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "imageID": "", "ready": False,
        "restartCount": 2, "started": False,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                     "startedAt": "2026-11-30T09:00:00Z",
                                     "finishedAt": "2026-11-30T10:00:00Z"}}}]}}
    core.patch_namespaced_pod_status("audit-oomed", namespace, status)
    def stored_state():
        # spec and metadata only: the controller-manager updates status (resourceVersion) on its own
        # (and the deployment controller writes its revision annotation whenever it gets to it)
        return {d.metadata.name: (d.metadata.generation, _own_annotations(d.metadata.annotations),
                                  d.metadata.labels,
                                  str(d.spec.template))
                for d in apps.list_namespaced_deployment(namespace).items}

    before = stored_state()

    out = subprocess.run([sys.executable, "-m", "vllm_sizer.cli.main", "audit", "-n", namespace,
                          "-o", "json"], capture_output=True, text=True, timeout=120,
                         env={**os.environ})
    assert out.returncode == 1, out.stderr  # something is at risk
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert set(rows) == {"audit-fits", "audit-small", "audit-unknown", "audit-oomed"}
    assert rows["audit-oomed"]["risk"] == "oomkilled"
    (oom,) = rows["audit-oomed"]["oomkills"]
    assert oom["time"] == "2026-11-30T10:00:00Z" and oom["limit"] == "64Gi" and oom["restarts"] == 2
    assert rows["audit-small"]["risk"] == "undersized"
    assert rows["audit-small"]["needed_limit_bytes"] > rows["audit-small"]["limit_bytes"]
    assert rows["audit-unknown"]["risk"] == "cannot-size"
    assert rows["audit-fits"]["risk"] == "ok"
    order = [r["name"] for r in json.loads(out.stdout)]
    assert order.index("audit-oomed") < order.index("audit-small") < order.index("audit-unknown") \
        < order.index("audit-fits")
    text = subprocess.run([sys.executable, "-m", "vllm_sizer.cli.main", "audit", "-n", namespace],
                          capture_output=True, text=True, timeout=120)
    assert text.stdout.splitlines()[0].startswith("RISK") and "OOMKilled 2026-11-30T10:00:00Z" in text.stdout
    time.sleep(0.5)
    assert stored_state() == before  # read-only
    for name in before:
        apps.delete_namespaced_deployment(name, namespace)
    core.delete_namespaced_pod("audit-oomed", namespace, grace_period_seconds=0)
