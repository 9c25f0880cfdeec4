"""Controller start-up: N pre-existing vLLM Deployments in a real API server (KUBECONFIG), then
`vllm-sizer run --role controller`; time until every one is annotated, and the controller's
peak RSS (VmHWM). Nothing runs the pods: only the API server is needed.

Run: KUBECONFIG=... .venv/bin/python bench/controller_startup.py --count 100 1000 2000
Bounded: creation and sizing each stop at their --timeout; the namespace is deleted after.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


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


def run(count: int, timeout: float) -> tuple[float, float, float]:
    from kubernetes import client, config

    config.load_kube_config()
    core, apps = client.CoreV1Api(), client.AppsV1Api()
    ns = f"vllm-sizer-bench-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    template = yaml.safe_load((ROOT / "examples/01-cpu-lora-deployment.yaml").read_text())
    try:
        t0 = time.perf_counter()

        def make(i: int) -> None:
            obj = copy.deepcopy(template)
            obj["metadata"] = {"name": f"vllm-{i}", "namespace": ns}
            apps.create_namespaced_deployment(ns, obj)

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(make, range(count)))
        created = time.perf_counter() - t0
        env = dict(os.environ, VLLM_SIZER_METRICS_PORT="-1")
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
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        start = time.perf_counter()
        peak = 0.0
        done = 0
        try:
            while time.perf_counter() - start < timeout:
                peak = max(peak, vm_hwm_mib(proc.pid))
                items = apps.list_namespaced_deployment(ns, _request_timeout=30).items
                done = sum(
                    1 for d in items if (d.metadata.annotations or {}).get("vllm-sizer.io/estimate")
                )
                if done >= count:
                    break
                time.sleep(0.5)
            elapsed = time.perf_counter() - start
            peak = max(peak, vm_hwm_mib(proc.pid))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        if done < count:
            print(f"  only {done}/{count} annotated within {timeout:.0f}s")
        return created, elapsed, peak
    finally:
        core.delete_namespace(ns)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, nargs="+", default=[100, 1000, 2000])
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    print("| Deployments | created in s | all annotated after s | controller peak RSS MiB |")
    print("|---|---|---|---|")
    for n in args.count:
        created, elapsed, peak = run(n, args.timeout)
        print(f"| {n} | {created:.1f} | {elapsed:.1f} | {peak:.0f} |", flush=True)


if __name__ == "__main__":
    main()
