"""Pod-level sizing benchmark: pod CREATE reviews/s of the vllm-sizer webhook against the bare
aiohttp TLS server in the same run (same harness as webhook_load.py: server on core 0, load
on core 1, 127.0.0.1 only, bounded by time), and the share of pod CREATEs that the CEL
matchConditions keep from being sent at all.

Pods are shaped as the ReplicaSet controller creates them from examples/01's template and
from examples/08 (nginx), with the fields kube-apiserver defaults before admission.

The matchConditions share is evaluated with cel-python on the exact expressions the webhook
configurations carry, over a pod mix that is stated (not measured in a cluster):
--vllm-share of the created pods run vLLM, of which --sized-share come from templates
vllm-sizer sized (label present) and the rest from workloads it did not size.

Run: .venv/bin/python bench/pod_reviews.py [--seconds 6] [--rate 200] [--pods 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import random
import shutil
import ssl
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from webhook_load import paced, payloads, saturate, start_server  # noqa: E402

from vllm_sizer.workloads.api_names import SIZED_LABEL  # noqa: E402


def pod_from(example: str, *, labelled: bool, owner: str = "ReplicaSet") -> dict:
    dep = yaml.safe_load((ROOT / "examples" / example).read_text())
    tmpl = dep["spec"]["template"]
    name = dep["metadata"]["name"]
    labels = {**tmpl["metadata"].get("labels", {}), "pod-template-hash": "7c9f8d5b4"}
    if labelled:
        labels[SIZED_LABEL] = "true"
    spec = copy.deepcopy(tmpl["spec"])
    spec.update(
        {
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
            "enableServiceLinks": True,
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
        }
    )
    for c in spec["containers"]:
        c.update(
            {
                "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [
                    {
                        "name": "kube-api-access-x",
                        "readOnly": True,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    }
                ],
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{name}-7c9f8d5b4-",
            "namespace": dep["metadata"].get("namespace", "llm"),
            "uid": str(uuid.uuid4()),
            "labels": labels,
            "creationTimestamp": None,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": owner,
                    "name": f"{name}-7c9f8d5b4",
                    "uid": str(uuid.uuid4()),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-12-01T08:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {}},
                }
            ],
        },
        "spec": spec,
        "status": {"phase": "Pending", "qosClass": "Guaranteed"},
    }


def review(pod: dict) -> bytes:
    meta = pod["metadata"]
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": str(uuid.uuid4()),
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "resource": {"group": "", "version": "v1", "resource": "pods"},
                "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
                "requestResource": {"group": "", "version": "v1", "resource": "pods"},
                "name": "",
                "namespace": meta["namespace"],
                "operation": "CREATE",
                "userInfo": {
                    "username": "system:serviceaccount:kube-system:replicaset-controller",
                    "groups": ["system:serviceaccounts", "system:authenticated"],
                },
                "object": pod,
                "oldObject": None,
                "dryRun": False,
                "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
            },
        }
    ).encode()


def filtered_share(n: int, vllm_share: float, sized_share: float, seed: int = 7) -> dict:
    """Evaluate the webhooks' matchConditions on a stated mix of pod CREATEs."""
    import celpy

    from vllm_sizer.operator.webhook.configurations import match_conditions

    env = celpy.Environment()
    programs = [env.program(env.compile(c["expression"])) for c in match_conditions()]
    rng = random.Random(seed)
    counts = {"nginx": [0, 0], "vllm, sized template": [0, 0], "vllm, unsized template": [0, 0]}
    shapes = {
        "nginx": pod_from("08-nginx-deployment.yaml", labelled=False),
        "vllm, sized template": pod_from("01-cpu-lora-deployment.yaml", labelled=True),
        "vllm, unsized template": pod_from("01-cpu-lora-deployment.yaml", labelled=False),
    }
    request = celpy.json_to_cel(
        {"kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE"}
    )
    acts = {k: {"object": celpy.json_to_cel(v), "request": request} for k, v in shapes.items()}
    # the expressions are pure functions of the object: one evaluation per shape, then the mix
    sent_by_shape = {k: all(bool(p.evaluate(a)) for p in programs) for k, a in acts.items()}
    for _ in range(n):
        r = rng.random()
        kind = (
            "nginx"
            if r >= vllm_share
            else (
                "vllm, sized template" if rng.random() < sized_share else "vllm, unsized template"
            )
        )
        counts[kind][0] += 1
        counts[kind][1] += sent_by_shape[kind]
    total_sent = sum(s for _, s in counts.values())
    return {"pods": n, "sent": total_sent, "filtered_share": 1 - total_sent / n, "by_kind": counts}


async def cpu_per_review(
    bodies: dict[str, bytes], seconds: float
) -> dict[str, tuple[float, float]]:
    """In-process, no network: reviews per CPU-second (time.process_time, so other processes on
    a shared machine do not count) of Admission.handle, and of a bare handler that only parses
    the review and answers allow, on the same bodies."""
    from vllm_sizer.operator.model_configs import NoLookup
    from vllm_sizer.operator.settings import OperatorSettings
    from vllm_sizer.operator.webhook.admission import Admission, dumps, loads

    admission = Admission(OperatorSettings(), NoLookup())

    async def bare(body: bytes) -> bytes:
        uid = loads(body)["request"]["uid"]
        return dumps(
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": uid, "allowed": True},
            }
        )

    async def rate(fn, body: bytes) -> float:
        n, t0 = 0, time.process_time()
        while time.process_time() - t0 < seconds and n < 1_000_000:
            await fn(body)
            n += 1
        return n / (time.process_time() - t0)

    out = {}
    for name, body in bodies.items():
        status, _answer, _ = await admission.handle("mutate", body)
        assert status == 200
        out[name] = (
            await rate(lambda b: admission.handle("mutate", b), body),
            await rate(bare, body),
        )
    return out


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--vllm-share", type=float, default=0.05)
    ap.add_argument("--sized-share", type=float, default=0.8)
    args = ap.parse_args()
    if shutil.which("taskset"):
        os.sched_setaffinity(0, {1})
    from vllm_sizer.operator.certificates import generate_self_signed, write_certificates

    cert_dir = Path(tempfile.mkdtemp(prefix="vllm-sizer-bench-"))
    write_certificates(cert_dir, generate_self_signed("bench", "bench", ip_addresses=["127.0.0.1"]))
    ssl_ctx = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
    bodies = {
        "vLLM pod, unsized template (mutated)": review(
            pod_from("01-cpu-lora-deployment.yaml", labelled=False)
        ),
        "vLLM pod, sized template (skipped)": review(
            pod_from("01-cpu-lora-deployment.yaml", labelled=True)
        ),
        "nginx pod (not vLLM)": review(pod_from("08-nginx-deployment.yaml", labelled=False)),
    }
    print("payload sizes: " + ", ".join(f"{k} {len(v)} B" for k, v in bodies.items()))
    results = {}
    for kind, port in (("bare", 18453), ("vllm-sizer", 18454)):
        proc = start_server(kind, port, cert_dir)
        try:
            for name, body in bodies.items():
                url = f"https://127.0.0.1:{port}/mutate"
                await saturate(url, body, ssl_ctx, 1.0)
                rps, err = await saturate(url, body, ssl_ctx, args.seconds)
                p50, p99, perr = await paced(url, body, ssl_ctx, args.rate, args.seconds)
                results[(kind, name)] = (rps, err + perr, p50, p99)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(
        f"\n| server | pod CREATE review | max reviews/s (1 core) | p50 ms @{args.rate:g}/s | p99 ms @{args.rate:g}/s | errors |"
    )
    print("|---|---|---|---|---|---|")
    for (kind, name), (rps, err, p50, p99) in results.items():
        print(f"| {kind} | {name} | {rps:,.0f} | {p50:.1f} | {p99:.1f} | {err} |")
    for name in bodies:
        ratio = results[("vllm-sizer", name)][0] / results[("bare", name)][0]
        print(f"ratio vllm-sizer / bare ({name}): {ratio:.2f}")
    cpu = await cpu_per_review(
        {**bodies, "Deployment examples/01 (mutated), baseline": payloads()["vllm (mutated)"]},
        min(args.seconds, 3),
    )
    print(
        "\n| in-process (CPU time) | vllm-sizer reviews per CPU-s | bare parse+allow per CPU-s | ratio |"
    )
    print("|---|---|---|---|")
    for name, (sizer, base) in cpu.items():
        print(f"| {name} | {sizer:,.0f} | {base:,.0f} | {sizer / base:.2f} |")
    share = filtered_share(args.pods, args.vllm_share, args.sized_share)
    print(
        f"\nmatchConditions on {share['pods']} pod CREATEs ({args.vllm_share:.0%} vLLM, "
        f"{args.sized_share:.0%} of those from sized templates): {share['sent']} sent, "
        f"{share['filtered_share']:.1%} never sent"
    )
    for kind, (n, sent) in share["by_kind"].items():
        print(f"  {kind}: {n} created, {sent} sent")


if __name__ == "__main__":
    asyncio.run(main())
