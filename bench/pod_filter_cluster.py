"""The share of pod CREATEs the webhooks' matchConditions keep from being sent, measured on a
real cluster (KUBECONFIG: kube-apiserver + kube-controller-manager; no kubelet needed) with
a real pod mix: the pods the controller-manager creates for the published manifests in
tests/data/published/ (every Deployment, ReplicaSet and bare Pod there; the custom resources
need their operators, which this cluster does not run).

The kube-apiserver evaluates the matchConditions itself; the webhook (`vllm-sizer run --dev
--role webhook`, registered by URL for one namespace, mode mutate) counts what reaches it
(`vllm_sizer_admission_reviews_total{kind="Pod"}`, read from its metrics port). Two runs, each
in a fresh namespace:

- installed first: the webhook runs when the workloads are created, so the templates it sizes
  carry `vllm-sizer.io/sized` and their pods are filtered; only pods of vLLM workloads it
  could not size, and bare vLLM pods, are sent;
- workloads from before the install: the Deployments and ReplicaSets are created with 0
  replicas before the webhook starts, then scaled to their written replicas (and the bare
  pods created): every vLLM pod is sent, every other pod filtered.

What the manifests are changed in, to be created at all (nothing the expressions read): the
namespace, the names (prefixed by the file's index: several files reuse names), and the
ServiceAccounts, PriorityClasses and RuntimeClasses the pod templates name are created first
(admission refuses a pod whose ServiceAccount, PriorityClass or RuntimeClass is missing).
Pods are counted as vLLM when the reader finds a vLLM container in the object that made them.

Run: KUBECONFIG=... .venv/bin/python bench/pod_filter_cluster.py
Bounded: each wait stops at --timeout; both namespaces and the cluster-scoped objects it
created are deleted at the end.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PUBLISHED = ROOT / "tests" / "data" / "published"
POD_MAKERS = ("Deployment", "ReplicaSet", "Pod")
BENCH_LABEL = "vllm-sizer.io/bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def published_objects() -> list[tuple[str, dict]]:
    """(file, object) for every Deployment, ReplicaSet and Pod of the published corpus."""
    out = []
    for path in sorted(PUBLISHED.rglob("*.yaml")):
        if path.name == "index.yaml":
            continue
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError:
            continue
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") in POD_MAKERS:
                out.append((str(path.relative_to(PUBLISHED)), doc))
    return out


def pod_spec(obj: dict) -> dict:
    if obj.get("kind") == "Pod":
        return obj.get("spec") or {}
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def is_vllm(obj: dict) -> bool:
    from vllm_sizer.workloads.reader import read_workloads

    try:
        return bool(read_workloads(obj, None))
    except Exception:  # noqa: BLE001
        return False


def prepared(objects: list[tuple[str, dict]], ns: str) -> list[dict]:
    out = []
    for i, (_file, obj) in enumerate(objects):
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta["namespace"] = ns
        meta["name"] = re.sub(r"[^a-z0-9-]", "-", f"p{i}-{meta.get('name', 'x')}".lower())[:50]
        meta.pop("resourceVersion", None)
        meta.pop("uid", None)
        out.append(obj)
    return out


class Kube:
    def __init__(self) -> None:
        from kubernetes import client, config, dynamic

        config.load_kube_config()
        self.api = client.ApiClient()
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.dyn = dynamic.DynamicClient(self.api)

    def create(self, obj: dict) -> str | None:
        from kubernetes.client.exceptions import ApiException

        res = self.dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        try:
            res.create(body=obj, namespace=obj["metadata"].get("namespace"))
            return None
        except ApiException as exc:
            return f"{exc.status} {exc.reason}: {(exc.body or '')[:200]}"

    def ensure_cluster_scoped(self, kind: str, name: str, body: dict, made: list) -> None:
        from kubernetes.client.exceptions import ApiException

        res = self.dyn.resources.get(api_version=body["apiVersion"], kind=kind)
        try:
            res.get(name=name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            res.create(body=body)
            made.append((body["apiVersion"], kind, name))


def prerequisites(k: Kube, objs: list[dict], ns: str, made: list) -> None:
    for obj in objs:
        spec = pod_spec(obj)
        sa = spec.get("serviceAccountName") or spec.get("serviceAccount")
        if sa and sa != "default":
            k.create(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": sa, "namespace": ns},
                }
            )
        pc = spec.get("priorityClassName")
        if pc and pc not in ("system-cluster-critical", "system-node-critical"):
            k.ensure_cluster_scoped(
                "PriorityClass",
                pc,
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": pc, "labels": {BENCH_LABEL: "true"}},
                    "value": 0,
                },
                made,
            )
        rc = spec.get("runtimeClassName")
        if rc:
            k.ensure_cluster_scoped(
                "RuntimeClass",
                rc,
                {
                    "apiVersion": "node.k8s.io/v1",
                    "kind": "RuntimeClass",
                    "metadata": {"name": rc, "labels": {BENCH_LABEL: "true"}},
                    "handler": "runc",
                },
                made,
            )


def pod_reviews(metrics_url: str) -> dict[str, float]:
    """route → Pod reviews answered so far."""
    text = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("vllm_sizer_admission_reviews_total{") and 'kind="Pod"' in line:
            route = re.search(r'route="([^"]+)"', line).group(1)
            out[route] = out.get(route, 0) + float(line.rsplit(" ", 1)[1])
    return out


def start_webhook(ns: str, port: int, metrics_port: int) -> subprocess.Popen:
    env = dict(os.environ, VLLM_SIZER_MODE="mutate")
    fd, log_path = tempfile.mkstemp(prefix="vllm-sizer-bench-webhook-", suffix=".log")
    log = os.fdopen(fd, "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vllm_sizer.cli.main",
            "run",
            "--dev",
            "--role",
            "webhook",
            "--namespace",
            ns,
            "--webhook-host",
            "127.0.0.1",
            "--port",
            str(port),
            "--metrics-port",
            str(metrics_port),
            "-q",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()  # the child holds its own copy of the descriptor
    url = f"http://127.0.0.1:{metrics_port}/metrics"
    t0 = time.time()
    while time.time() - t0 < 90:
        if proc.poll() is not None:
            raise RuntimeError(f"webhook exited: {Path(log_path).read_text()[-2000:]}")
        try:
            pod_reviews(url)
            if "registered" in Path(log_path).read_text():
                return proc
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("webhook did not come up in 90 s")


def settle(k: Kube, ns: str, timeout: float) -> int:
    """Wait until the number of pods in `ns` stops changing (10 s); return it."""
    last, since, t0 = -1, time.time(), time.time()
    while time.time() - t0 < timeout:
        n = len(k.core.list_namespaced_pod(ns, _request_timeout=30).items)
        if n != last:
            last, since = n, time.time()
        elif time.time() - since > 10:
            break
        time.sleep(2)
    return last


def pods_by_source(k: Kube, ns: str) -> dict[str, int]:
    """top-level object name → pods it made (bare pods count for themselves)."""
    rs_owner = {}
    for rs in k.apps.list_namespaced_replica_set(ns).items:
        refs = [r for r in (rs.metadata.owner_references or []) if r.controller]
        rs_owner[rs.metadata.name] = refs[0].name if refs else rs.metadata.name
    out: dict[str, int] = {}
    for pod in k.core.list_namespaced_pod(ns).items:
        refs = [r for r in (pod.metadata.owner_references or []) if r.controller]
        top = pod.metadata.name if not refs else rs_owner.get(refs[0].name, refs[0].name)
        out[top] = out.get(top, 0) + 1
    return out


def scenario(
    k: Kube, objects: list[tuple[str, dict]], installed_first: bool, timeout: float, made: list
) -> dict:
    ns = f"vllm-sizer-bench-pods-{uuid.uuid4().hex[:6]}"
    k.core.create_namespace({"metadata": {"name": ns}})
    t0 = time.time()
    while time.time() - t0 < 30 and not k.core.list_namespaced_service_account(ns).items:
        time.sleep(0.5)
    objs = prepared(objects, ns)
    prerequisites(k, objs, ns, made)
    vllm = {o["metadata"]["name"]: is_vllm(o) for o in objs}
    errors: list[str] = []
    replicas = {}
    if not installed_first:  # the workloads exist, scaled to 0, before the install
        for o in objs:
            if o["kind"] != "Pod":
                wanted = (o.get("spec") or {}).get("replicas", 1)
                o["spec"]["replicas"] = 0
                if err := k.create(o):
                    errors.append(f"{o['kind']}/{o['metadata']['name']}: {err}")
                else:
                    replicas[o["metadata"]["name"]] = wanted
    port, mport = free_port(), free_port()
    proc = start_webhook(ns, port, mport)
    metrics = f"http://127.0.0.1:{mport}/metrics"
    try:
        before = pod_reviews(metrics)
        for o in objs:
            if installed_first or o["kind"] == "Pod":
                if err := k.create(o):
                    errors.append(f"{o['kind']}/{o['metadata']['name']}: {err}")
            elif o["metadata"]["name"] in replicas:  # (those that could not be created: above)
                body = {"spec": {"replicas": replicas[o["metadata"]["name"]]}}
                if o["kind"] == "Deployment":
                    k.apps.patch_namespaced_deployment_scale(o["metadata"]["name"], ns, body)
                else:
                    k.apps.patch_namespaced_replica_set_scale(o["metadata"]["name"], ns, body)
        n_pods = settle(k, ns, timeout)
        time.sleep(2)
        after = pod_reviews(metrics)
        by_source = pods_by_source(k, ns)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        k.core.delete_namespace(ns)
    sent = {r: after.get(r, 0) - before.get(r, 0) for r in set(after) | set(before)}
    vllm_pods = sum(n for name, n in by_source.items() if vllm.get(name))
    return {
        "namespace": ns,
        "objects": len(objs),
        "vllm_objects": sum(vllm.values()),
        "pods": n_pods,
        "vllm_pods": vllm_pods,
        "sent": sent,
        "errors": errors,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    k = Kube()
    objects = published_objects()
    files = len({f for f, _ in objects})
    print(f"published corpus: {len(objects)} Deployments/ReplicaSets/Pods from {files} files")
    made: list = []
    try:
        results = {
            name: scenario(k, objects, first, args.timeout, made)
            for name, first in (
                ("installed first", True),
                ("workloads from before the install", False),
            )
        }
    finally:
        for api_version, kind, name in made:
            try:
                k.dyn.resources.get(api_version=api_version, kind=kind).delete(name=name)
            except Exception:  # noqa: BLE001
                pass
    print(
        "\n| run | objects (vLLM) | pods created (vLLM) | pod reviews sent: mutate / validate "
        "| never sent |"
    )
    print("|---|---|---|---|---|")
    for name, r in results.items():
        m, v = r["sent"].get("mutate", 0), r["sent"].get("validate", 0)
        share = 1 - max(m, v) / r["pods"] if r["pods"] else float("nan")
        print(
            f"| {name} | {r['objects']} ({r['vllm_objects']}) | {r['pods']} ({r['vllm_pods']}) "
            f"| {m:.0f} / {v:.0f} | {share:.1%} |"
        )
    for name, r in results.items():
        for e in r["errors"]:
            print(f"  {name}: not created: {e}")


if __name__ == "__main__":
    main()
