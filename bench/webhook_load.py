"""Webhook load benchmark: the vllm-sizer webhook role against a bare aiohttp TLS server that
answers allow to the same payloads, in the same run, on 127.0.0.1 only.

The server runs pinned to core 0 and this load generator to core 1 (taskset), so "reviews/s"
is what one core of webhook serves. Bounded: every phase stops after its request count or its
time budget, whichever comes first.

Run: .venv/bin/python bench/webhook_load.py [--seconds 8] [--rate 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[1]


def review(obj: dict, path_kind: str = "deployments") -> dict:
    meta = obj["metadata"]
    group, _, version = obj["apiVersion"].rpartition("/")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "resource": {"group": group, "version": version, "resource": path_kind},
            "requestKind": {"group": group, "version": version, "kind": obj["kind"]},
            "requestResource": {"group": group, "version": version, "resource": path_kind},
            "name": meta["name"],
            "namespace": meta.get("namespace", "default"),
            "operation": "CREATE",
            "userInfo": {
                "username": "kubernetes-admin",
                "groups": ["system:masters", "system:authenticated"],
            },
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {
                "apiVersion": "meta.k8s.io/v1",
                "kind": "CreateOptions",
                "fieldManager": "kubectl-client-side-apply",
            },
        },
    }


def as_applied(obj: dict) -> dict:
    """The object as kube-apiserver sends it after `kubectl apply`: defaulted fields, the
    last-applied-configuration annotation and a managedFields entry (3-5 KB reviews)."""
    out = json.loads(json.dumps(obj))
    meta = out["metadata"]
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = (
        json.dumps(obj, separators=(",", ":"))
    )
    meta.update(
        {
            "uid": str(uuid.uuid4()),
            "creationTimestamp": None,
            "generation": 1,
            "managedFields": [
                {
                    "manager": "kubectl-client-side-apply",
                    "operation": "Update",
                    "apiVersion": out["apiVersion"],
                    "time": "2026-11-30T08:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:annotations": {".": {}}},
                        "f:spec": {
                            "f:replicas": {},
                            "f:selector": {},
                            "f:template": {"f:spec": {}},
                        },
                    },
                }
            ],
        }
    )
    spec = out["spec"]
    spec.update(
        {
            "progressDeadlineSeconds": 600,
            "revisionHistoryLimit": 10,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
        }
    )
    pod = spec["template"]["spec"]
    pod.update(
        {
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
        }
    )
    for c in pod["containers"]:
        c.update(
            {
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
            }
        )
    return out


def payloads() -> dict[str, bytes]:
    vllm = yaml.safe_load((ROOT / "examples/01-cpu-lora-deployment.yaml").read_text())
    vllm["metadata"]["labels"] = {"app.kubernetes.io/name": "qwen3-lora-cpu", "team": "ml-platform"}
    nginx = yaml.safe_load((ROOT / "examples/08-nginx-deployment.yaml").read_text())
    vllm, nginx = as_applied(vllm), as_applied(nginx)
    return {
        "vllm (mutated)": json.dumps(review(vllm)).encode(),
        "nginx (not vLLM)": json.dumps(review(nginx)).encode(),
    }


def start_server(kind: str, port: int, cert_dir: Path) -> subprocess.Popen:
    cmd = [sys.executable, str(ROOT / "bench/_serve.py"), kind, str(port), str(cert_dir)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline()
    if "ready" not in line:
        proc.kill()
        raise RuntimeError(f"{kind} server did not start")
    return proc


async def saturate(
    url: str,
    body: bytes,
    ssl_ctx,
    seconds: float,
    concurrency: int = 32,
    max_requests: int = 200_000,
) -> tuple[float, int]:
    """Closed loop: `concurrency` clients back to back; returns (reviews/s, errors)."""
    done = errors = 0
    deadline = time.perf_counter() + seconds
    conn = aiohttp.TCPConnector(ssl=ssl_ctx, limit=concurrency)
    async with aiohttp.ClientSession(connector=conn) as session:

        async def worker() -> None:
            nonlocal done, errors
            while time.perf_counter() < deadline and done < max_requests:
                async with session.post(
                    url, data=body, headers={"Content-Type": "application/json"}
                ) as r:
                    await r.read()
                    if r.status != 200:
                        errors += 1
                done += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done / (time.perf_counter() - start), errors


async def paced(
    url: str, body: bytes, ssl_ctx, rate: float, seconds: float
) -> tuple[float, float, int]:
    """Open loop at a fixed rate; returns (p50 ms, p99 ms, errors)."""
    latencies: list[float] = []
    errors = 0
    conn = aiohttp.TCPConnector(ssl=ssl_ctx, limit=256)
    async with aiohttp.ClientSession(connector=conn) as session:

        async def one() -> None:
            nonlocal errors
            t0 = time.perf_counter()
            async with session.post(
                url, data=body, headers={"Content-Type": "application/json"}
            ) as r:
                await r.read()
                if r.status != 200:
                    errors += 1
            latencies.append((time.perf_counter() - t0) * 1000)

        tasks = []
        start = time.perf_counter()
        n = int(rate * seconds)
        for i in range(n):
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one()))
        await asyncio.gather(*tasks)
    q = statistics.quantiles(latencies, n=100)
    return q[49], q[98], errors


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rate", type=float, default=200)
    args = ap.parse_args()
    if shutil.which("taskset"):
        os.sched_setaffinity(0, {1})
    from vllm_sizer.operator.certificates import generate_self_signed, write_certificates

    cert_dir = Path(tempfile.mkdtemp(prefix="vllm-sizer-bench-"))
    write_certificates(cert_dir, generate_self_signed("bench", "bench", ip_addresses=["127.0.0.1"]))
    ssl_ctx = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
    bodies = payloads()
    print("payload sizes: " + ", ".join(f"{k} {len(v)} B" for k, v in bodies.items()))
    results = {}
    for kind, port in (("bare", 18443), ("vllm-sizer", 18444)):
        proc = start_server(kind, port, cert_dir)
        try:
            for name, body in bodies.items():
                path = "/mutate"
                url = f"https://127.0.0.1:{port}{path}"
                await saturate(url, body, ssl_ctx, 1.0)  # warm up connections and caches
                rps, err = await saturate(url, body, ssl_ctx, args.seconds)
                p50, p99, perr = await paced(url, body, ssl_ctx, args.rate, args.seconds)
                results[(kind, name)] = (rps, err + perr, p50, p99)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(
        f"\n| server | payload | max reviews/s (1 core) | p50 ms @{args.rate:g}/s | p99 ms @{args.rate:g}/s | errors |"
    )
    print("|---|---|---|---|---|---|")
    for (kind, name), (rps, err, p50, p99) in results.items():
        print(f"| {kind} | {name} | {rps:,.0f} | {p50:.1f} | {p99:.1f} | {err} |")
    for name in bodies:
        ratio = results[("vllm-sizer", name)][0] / results[("bare", name)][0]
        print(f"ratio vllm-sizer / bare ({name}): {ratio:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
