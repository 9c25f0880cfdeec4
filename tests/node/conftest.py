"""Node tier: a real kubelet (real cgroup limits, real OOMKills). Run by hand, not in CI.

Needs a cluster started with `cluster up --node` (root; the kubelet changes host sysctls, so
CI does not start it) and:

    VLLM_SIZER_NODE=1 KUBECONFIG=$KUBE_STATE/kubeconfig KUBE_STATE=... \\
        python -m pytest -q -s tests/node

KUBE_STATE is the cluster's state directory (for `cluster import` and the base rootfs);
VLLM_SIZER_CLUSTER is the `cluster` script (default ../shared/kube/cluster beside the
repository). The node runs hostNetwork pods only and pulls no image: images are built here and
imported. Each test module works in its own namespace, deleted afterwards.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import time
import uuid
from typing import Any, Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLUSTER = pathlib.Path(os.environ.get("VLLM_SIZER_CLUSTER", ROOT.parent / "shared" / "kube" / "cluster"))


def _skip_reason() -> str | None:
    if os.environ.get("VLLM_SIZER_NODE") != "1":
        return ("node tier: set VLLM_SIZER_NODE=1 with a cluster started by `cluster up --node` "
                "(root, changes host sysctls: not part of CI)")
    for var in ("KUBECONFIG", "KUBE_STATE"):
        if not os.environ.get(var):
            return f"node tier: {var} is not set"
    if not CLUSTER.is_file():
        return f"node tier: the cluster script {CLUSTER} is missing (set VLLM_SIZER_CLUSTER)"
    try:
        out = kubectl("get", "nodes", "-o", "json", check=True, timeout=20)
    except Exception as exc:  # noqa: BLE001
        return f"node tier: cannot list nodes ({exc})"
    for node in json.loads(out)["items"]:
        for cond in node["status"].get("conditions", []):
            if cond["type"] == "Ready" and cond["status"] == "True":
                return None
    return "node tier: no Ready node (start it with `cluster up --node`)"


@pytest.fixture(scope="session", autouse=True)
def _require_node() -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)


def kubectl(*args: str, stdin: str | None = None, check: bool = True, timeout: float = 120) -> str:
    proc = subprocess.run(["kubectl", *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def apply(doc: dict[str, Any] | list[dict[str, Any]]) -> None:
    docs = doc if isinstance(doc, list) else [doc]
    kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List",
                                                  "items": docs}))


def get(kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    args = ["get", kind, name, "-o", "json"] + (["-n", namespace] if namespace else [])
    out = kubectl(*args, check=False)
    return json.loads(out) if out.strip() else None


def wait_for(what: str, fn, timeout: float, interval: float = 2.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


def cluster(*args: str, timeout: float = 900) -> str:
    proc = subprocess.run(["bash", str(CLUSTER), *args], capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"cluster {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def kube_state() -> pathlib.Path:
    return pathlib.Path(os.environ["KUBE_STATE"])


def base_rootfs() -> pathlib.Path:
    """The node's debootstrap rootfs (Debian 12 minbase + python3), which `cluster up --node`
    caches and from which it packs local/debian:bookworm."""
    path = kube_state() / "images" / "rootfs-bookworm"
    assert path.is_dir(), f"{path} is missing: was the node started with `cluster up --node`?"
    return path


def derived_rootfs(dest: pathlib.Path) -> pathlib.Path:
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(["cp", "-a", str(base_rootfs()), str(dest)], check=True)
    return dest


def pod_logs(namespace: str, selector: str, tail: int = 80) -> str:
    """The last lines of the current and the previous (crashed) containers."""
    args = ["logs", "-n", namespace, "-l", selector, "--tail", str(tail), "--all-containers",
            "--prefix"]
    return kubectl(*args, "--previous", check=False) + kubectl(*args, check=False)


@pytest.fixture(scope="module")
def namespace() -> Iterator[str]:
    name = f"vllm-sizer-node-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", name)
    # hostNetwork pods (the only kind this node runs) are refused where Pod Security enforces
    # restricted or baseline; a fresh namespace enforces nothing, say so explicitly anyway.
    kubectl("label", "namespace", name, "pod-security.kubernetes.io/enforce=privileged")
    try:
        yield name
    finally:
        kubectl("delete", "namespace", name, "--wait=false", check=False)


def kubelet_get(path: str) -> Any:
    """GET on the kubelet API with the admin client certificate (no node proxy here)."""
    import ssl
    import urllib.request

    pki = kube_state() / "pki"
    ports = (kube_state() / "ports.env").read_text() if (kube_state() / "ports.env").exists() else ""
    base = next((int(line.split("=", 1)[1]) for line in ports.splitlines()
                 if line.startswith("KUBE_PORT_BASE=") and line.split("=", 1)[1]), None)
    port = base + 5 if base else 10250
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    ctx.check_hostname = False
    with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", context=ctx, timeout=20) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def kube() -> Any:
    from kubernetes import client, config

    config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    return client.ApiClient()


@pytest.fixture(scope="module")
def dev(kube: Any, namespace: str, tmp_path_factory) -> Iterator[Any]:
    """`vllm-sizer run --dev --namespace NS` (webhook + controller) on 127.0.0.1, stopped and
    its webhook configurations deleted at the end of the module."""
    from tests.e2e.conftest import DevProcess

    proc = DevProcess(namespace, tmp_path_factory.mktemp("dev") / "run.log").start()
    try:
        proc.wait_registered(kube)
        yield proc
    finally:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.stop()
