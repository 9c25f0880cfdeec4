"""Controller start-up: N pre-existing vLLM Deployments in a real cluster (KUBECONFIG), then
`vllm-sizer run --role controller`; time until every one is annotated, and the controller's
peak RSS (VmHWM).

On a control plane with a kube-controller-manager (the shared/kube toolkit starts one) every
Deployment brings its ReplicaSet and its pod, as in production; without a kubelet the pods
stay Pending, which is all the controller ever sees of them. The bench waits until the
ReplicaSets and pods exist (and the controller-manager has finished updating the Deployments'
status) before it starts the controller, so the controller finds a settled cluster.

Before/after in the same run: `--baseline REV` runs the controller of git revision REV (its
`vllm_sizer/` extracted with `git archive` into a temporary directory, first on PYTHONPATH, in
the same venv) alternately with the working tree's (or `--after REV`'s) on the same N
objects; before each run the Deployments are reset (every vllm-sizer.io/* and
controller.vllm-sizer.io/* annotation removed), so each controller finds them as they were
created.

Each Deployment gets its own selector label (`app: vllm-<i>`), so ReplicaSets and pods of
different Deployments never overlap.

Run: KUBECONFIG=... .venv/bin/python bench/controller_startup.py --count 2000 --repeat 2 \\
         --baseline main
Bounded: creation, settling, sizing and deletion each stop at their timeout; the namespace is
deleted at the end (`--keep` keeps it; `--namespace NAME` reuses a kept one).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ESTIMATE = "vllm-sizer.io/estimate"
SIZED_LABEL = "vllm-sizer.io/sized"
META_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


def vm_hwm_mib(pid: int) -> float:
    """Peak RSS of a process and its children still alive (kB → MiB)."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def cpu_seconds(pid: int) -> float:
    """utime + stime of a live process (clock ticks → s)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def extract_revision(rev: str) -> Path:
    """`vllm_sizer/` of git revision `rev` in a temporary directory (to put on PYTHONPATH)."""
    out = Path(tempfile.mkdtemp(prefix="vllm-sizer-bench-base-"))
    archive = out / "src.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "-o", str(archive), rev, "vllm_sizer"], check=True
    )
    with tarfile.open(archive) as tar:
        tar.extractall(out, filter="data")
    archive.unlink()
    return out


class Cluster:
    """The few raw calls the bench needs (JSON in and out, no model classes: a 2,000-object
    listing through the client's models would cost the bench seconds of the CPU it shares)."""

    def __init__(self) -> None:
        from kubernetes import client, config

        config.load_kube_config()
        self.api = client.ApiClient()
        self.apps = client.AppsV1Api(self.api)
        self.core = client.CoreV1Api(self.api)

    def get(self, path: str, accept: str = "application/json") -> dict:
        method, url, headers, _body, _post = self.api.param_serialize(
            method="GET",
            resource_path=path,
            header_params={"Accept": accept},
            auth_settings=["BearerToken"],
        )
        resp = self.api.call_api(method, url, header_params=headers, _request_timeout=60)
        resp.read()
        return json.loads(resp.data)

    def metadata(self, path: str) -> list[dict]:
        return self.get(path, META_ACCEPT).get("items") or []

    def count(self, path: str) -> int:
        return len(self.metadata(path))

    def sizes(self, path: str) -> tuple[int, int]:
        """(objects, bytes of their full JSON)."""
        items = self.get(path).get("items") or []
        return len(items), sum(len(json.dumps(i, separators=(",", ":"))) for i in items)


def wait(cond, timeout: float, step: float = 1.0) -> bool:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if cond():
            return True
        time.sleep(step)
    return False


def prepare(
    k: Cluster, count: int, settle_timeout: float, sized_template: bool = False
) -> tuple[str, dict]:
    """A fresh namespace with `count` Deployments; waits for their ReplicaSets and pods when a
    controller-manager makes them. Returns (namespace, facts)."""
    ns = f"vllm-sizer-bench-{uuid.uuid4().hex[:6]}"
    k.core.create_namespace({"metadata": {"name": ns}})
    # the ServiceAccount admission plugin refuses pods until the namespace's default SA exists
    has_sa = wait(lambda: k.count(f"/api/v1/namespaces/{ns}/serviceaccounts") > 0, 20, 0.5)
    template = yaml.safe_load((ROOT / "examples/01-cpu-lora-deployment.yaml").read_text())
    t0 = time.perf_counter()

    def make(i: int) -> None:
        obj = copy.deepcopy(template)
        obj["metadata"] = {"name": f"vllm-{i}", "namespace": ns}
        obj["spec"]["selector"] = {"matchLabels": {"app": f"vllm-{i}"}}
        obj["spec"]["template"]["metadata"]["labels"] = {"app": f"vllm-{i}"}
        if sized_template:  # as the webhook leaves a template it sized: its pods carry it too
            obj["spec"]["template"]["metadata"]["labels"][SIZED_LABEL] = "true"
        for attempt in range(5):
            try:
                k.apps.create_namespaced_deployment(ns, obj, _request_timeout=60)
                return
            except Exception:  # a loaded API server: retry a few times
                if attempt == 4:
                    raise
                time.sleep(1 + attempt)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(make, range(count)))
    facts: dict = {"created_s": time.perf_counter() - t0, "default_sa": has_sa}
    # settle: ReplicaSets and pods appear (controller-manager), then the Deployments' status
    # stops changing (observedGeneration caught up); without a controller-manager nothing comes
    t1 = time.perf_counter()
    last, stable_since = (-1, -1), time.perf_counter()
    while time.perf_counter() - t1 < settle_timeout:
        now = (
            k.count(f"/apis/apps/v1/namespaces/{ns}/replicasets"),
            k.count(f"/api/v1/namespaces/{ns}/pods"),
        )
        if now != last:
            last, stable_since = now, time.perf_counter()
        if now[0] >= count and now[1] >= count:
            break
        if time.perf_counter() - stable_since > 20:  # nothing new for 20 s: no controller-manager
            break
        time.sleep(2)
    time.sleep(5)  # the last status updates of the Deployment controller
    facts["settled_s"] = time.perf_counter() - t1
    facts.update(object_sizes(k, ns))
    return ns, facts


def object_sizes(k, ns: str) -> dict:
    """What the namespace holds for the controller to list: sizes of each kind's listing."""
    return {
        what: k.sizes(path)
        for what, path in (
            ("deployments", f"/apis/apps/v1/namespaces/{ns}/deployments"),
            ("replicasets", f"/apis/apps/v1/namespaces/{ns}/replicasets"),
            ("pods", f"/api/v1/namespaces/{ns}/pods"),
            ("events", f"/api/v1/namespaces/{ns}/events"),
        )
    }


def reset(k: Cluster, ns: str, count: int, settle: float = 5) -> float:
    """Remove what a previous controller wrote (the vllm-sizer.io/* outputs and Kopf's
    controller.vllm-sizer.io/* state) from every Deployment of `ns`, so the next controller
    finds them as they were created. Cheaper than deleting and re-creating N Deployments with
    their ReplicaSets and pods on a shared machine. Returns the seconds it took."""
    t0 = time.perf_counter()
    items = k.metadata(f"/apis/apps/v1/namespaces/{ns}/deployments")

    def strip(item: dict) -> None:
        meta = item.get("metadata") or {}
        ann = meta.get("annotations") or {}
        drop = {
            key: None
            for key in ann
            if key.startswith(("vllm-sizer.io/", "controller.vllm-sizer.io/"))
        }
        if drop:
            for attempt in range(5):
                try:
                    k.apps.patch_namespaced_deployment(
                        meta["name"], ns, {"metadata": {"annotations": drop}}, _request_timeout=60
                    )
                    return
                except Exception:  # a loaded API server: retry
                    if attempt == 4:
                        raise
                    time.sleep(1 + attempt)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(strip, items))
    time.sleep(settle)  # the Deployment controller copies the annotations to the ReplicaSets
    return time.perf_counter() - t0


def run_controller(
    k: Cluster, ns: str, count: int, timeout: float, pythonpath: Path | None
) -> dict:
    env = dict(os.environ, VLLM_SIZER_METRICS_PORT="-1")
    cwd = ROOT
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
        cwd = pythonpath  # `-m` puts the working directory first on sys.path
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vllm_sizer.cli.main",
            "run",
            "--role",
            "controller",
            "--namespace",
            ns,
            "-q",
            "--metrics-port",
            "-1",
        ],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    start = time.perf_counter()
    peak = done = 0
    cpu = 0.0
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    try:
        while time.perf_counter() - start < timeout:
            peak = max(peak, vm_hwm_mib(proc.pid))
            cpu = max(cpu, cpu_seconds(proc.pid))
            items = k.metadata(path)
            done = sum(
                1 for d in items if ESTIMATE in ((d.get("metadata") or {}).get("annotations") or {})
            )
            if done >= count:
                break
            time.sleep(0.5)
        elapsed = time.perf_counter() - start
        peak = max(peak, vm_hwm_mib(proc.pid))
        cpu = max(cpu, cpu_seconds(proc.pid))
        # a few seconds more: whatever the controller does after the last annotation (the
        # MODIFIED events its own patches cause) also counts toward the peak
        t_end = time.perf_counter()
        while time.perf_counter() - t_end < 5:
            peak = max(peak, vm_hwm_mib(proc.pid))
            time.sleep(0.5)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    return {"annotated": done, "elapsed_s": elapsed, "peak_mib": peak, "cpu_s": cpu}


def delete_namespace(k: Cluster, ns: str, timeout: float) -> bool:
    from kubernetes.client.exceptions import ApiException

    k.core.delete_namespace(ns)

    def gone() -> bool:
        try:
            k.core.read_namespace(ns)
            return False
        except ApiException as exc:
            return exc.status == 404

    return wait(gone, timeout, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, nargs="+", default=[100, 1000, 2000])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--baseline",
        help="git revision whose controller runs alternately with "
        "the working tree's, on fresh objects each time",
    )
    ap.add_argument(
        "--after",
        help="git revision to run as the 'after' controller instead of the working tree "
        "(so the tree can change while a long run goes on)",
    )
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--settle-timeout", type=float, default=900)
    ap.add_argument(
        "--namespace",
        help="reuse this bench namespace (made by an earlier --keep "
        "run with the same --count) instead of creating one",
    )
    ap.add_argument("--keep", action="store_true", help="keep the namespace at the end")
    ap.add_argument(
        "--sized-template",
        action="store_true",
        help="templates (and so pods) carry the vllm-sizer.io/sized label, as after an install: "
        "the controller's OOM watch lists every one of those pods",
    )
    args = ap.parse_args()
    k = Cluster()
    variants: list[tuple[str, Path | None]] = []
    if args.baseline:
        variants.append((f"before ({args.baseline})", extract_revision(args.baseline)))
    if args.after:
        variants.append((f"after ({args.after})", extract_revision(args.after)))
    else:
        variants.append(("after (working tree)" if args.baseline else "working tree", None))
    rows = []
    print(
        "| controller | Deployments | ReplicaSets | pods | created s | settled s | reset s | "
        "all annotated after s | peak RSS MiB | controller CPU s | load before | load after |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.count:
        if args.namespace:
            ns = args.namespace
            facts = {"created_s": float("nan"), "settled_s": float("nan")}
            facts.update(object_sizes(k, ns))
        else:
            ns, facts = prepare(k, n, args.settle_timeout, args.sized_template)
        print(
            f"  namespace {ns}; objects (count, JSON bytes): "
            + ", ".join(
                f"{w} {facts[w][0]} / {facts[w][1] / 2**20:.1f} MiB"
                for w in ("deployments", "replicasets", "pods", "events")
            ),
            flush=True,
        )
        try:
            for rep in range(args.repeat):
                for name, src in variants:
                    reset_s = reset(k, ns, n)
                    load0 = loadavg()
                    res = run_controller(k, ns, n, args.timeout, src)
                    load1 = loadavg()
                    if res["annotated"] < n:
                        print(f"  only {res['annotated']}/{n} annotated within {args.timeout:.0f}s")
                    rows.append((name, n, rep, facts, res))
                    print(
                        f"| {name} | {n} | {facts['replicasets'][0]} | {facts['pods'][0]} | "
                        f"{facts['created_s']:.1f} | {facts['settled_s']:.0f} | {reset_s:.0f} | "
                        f"{res['elapsed_s']:.1f} | {res['peak_mib']:.0f} | {res['cpu_s']:.1f} | "
                        f"{load0} | {load1} |",
                        flush=True,
                    )
        finally:
            if (
                not args.keep
                and not args.namespace
                and not delete_namespace(k, ns, args.settle_timeout)
            ):
                print(f"  namespace {ns} still terminating", flush=True)
    if args.baseline:
        print()
        for n in args.count:
            for rep in range(args.repeat):
                b = next(r for r in rows if r[1] == n and r[2] == rep and r[0].startswith("before"))
                a = next(
                    r for r in rows if r[1] == n and r[2] == rep and not r[0].startswith("before")
                )
                print(
                    f"N={n} repeat {rep + 1}: after/before time "
                    f"{a[4]['elapsed_s'] / b[4]['elapsed_s']:.2f}, peak RSS "
                    f"{a[4]['peak_mib'] / b[4]['peak_mib']:.2f}"
                )


if __name__ == "__main__":
    main()
