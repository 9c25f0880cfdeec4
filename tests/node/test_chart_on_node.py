"""The image and the chart on a real kubelet: the image is built from the repository's
Dockerfile with buildah on a base made from the node's own Debian rootfs (nothing is pulled),
imported with `cluster import`, and the chart's rendered manifests are applied with values for
this loopback-only node (hostNetwork, per-role ports on 127.0.0.1, URL-mode webhooks). Checked:
both roles Running under the restricted securityContext with a read-only root filesystem, the
self-signed certificate created and the caBundle written, readiness and metrics answering, a
real admission through the in-cluster webhook, and the controller working with the chart's own
RBAC (any Forbidden in its log fails the test)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request
from typing import Any

import pytest
import yaml

from .conftest import ROOT, apply, base_rootfs, cluster, get, kubectl, wait_for

RELEASE_NS = "vllm-sizer"  # the namespace scripts/render-manifests.py renders for
IMAGE = "local/vllm-sizer:node"
PORTS = dict(webhook=19443, webhook_metrics=19080, controller_metrics=19082, liveness=19083)

pytestmark = pytest.mark.skipif(shutil.which("buildah") is None,
                                reason="chart-on-node test: needs buildah (apt-get install buildah)")


def run(*cmd: str, timeout: float = 1800) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> str:
    t0 = time.monotonic()
    if os.environ.get("VLLM_SIZER_NODE_REUSE_IMAGE") == "1" and subprocess.run(
            ["buildah", "inspect", "localhost/vllm-sizer:node"], capture_output=True).returncode == 0:
        tar = tmp_path_factory.mktemp("oci") / "vllm-sizer.tar"  # the image built last time
        run("buildah", "push", "--quiet", "localhost/vllm-sizer:node", f"oci-archive:{tar}:{IMAGE}")
        cluster("import", str(tar), IMAGE)
        return IMAGE
    base = "localhost/vllm-sizer-base:bookworm"
    ctr = run("buildah", "from", "scratch").strip()
    try:
        mnt = run("buildah", "mount", ctr).strip()
        run("cp", "-a", f"{base_rootfs()}/.", mnt)
        run("buildah", "umount", ctr)
        run("buildah", "commit", "--quiet", ctr, base)
    finally:
        subprocess.run(["buildah", "rm", ctr], capture_output=True)
    ca = "/etc/ssl/certs/ca-certificates.crt"
    run("buildah", "bud", "--quiet", "--network", "host", "-v", f"{ca}:{ca}:ro",
        "--build-arg", f"PYTHON_IMAGE={base}", "--build-arg", f"PIP_CERT={ca}",
        "-t", "localhost/vllm-sizer:node", "-f", str(ROOT / "Dockerfile"), str(ROOT))
    tar = tmp_path_factory.mktemp("oci") / "vllm-sizer.tar"
    run("buildah", "push", "--quiet", "localhost/vllm-sizer:node", f"oci-archive:{tar}:{IMAGE}")
    cluster("import", str(tar), IMAGE)
    print(f"\nchart-on-node: image built and imported in {time.monotonic() - t0:.0f} s")
    return IMAGE


def api_port() -> str:
    server = yaml.safe_load(open(os.environ["KUBECONFIG"]))["clusters"][0]["cluster"]["server"]
    return server.rsplit(":", 1)[1]


def values(served: str) -> dict[str, Any]:
    return {
        "image": {"repository": IMAGE.split(":")[0], "tag": IMAGE.split(":")[1],
                  "pullPolicy": "Never"},
        "namespaces": [served],
        "webhook": {"hostNetwork": True, "bindAddress": "127.0.0.1", "replicas": 1,
                    "pdb": {"enabled": False}, "port": PORTS["webhook"],
                    "metricsPort": PORTS["webhook_metrics"],
                    "url": f"https://127.0.0.1:{PORTS['webhook']}"},
        "controller": {"hostNetwork": True, "bindAddress": "127.0.0.1",
                       "metricsPort": PORTS["controller_metrics"],
                       "livenessPort": PORTS["liveness"]},
        "dnsPolicy": "Default",
        # no Service routing here: in-cluster clients reach the API server on loopback
        "extraEnv": [{"name": "KUBERNETES_SERVICE_HOST", "value": "127.0.0.1"},
                     {"name": "KUBERNETES_SERVICE_PORT", "value": api_port()}],
    }


@pytest.fixture(scope="module")
def installed(image, namespace):
    from tests.helm.conftest import render_objects

    objs = render_objects(values(namespace))
    kubectl("create", "namespace", RELEASE_NS, check=False)
    # hostNetwork pods: Pod Security must not hold this namespace at restricted or baseline
    kubectl("label", "--overwrite", "namespace", RELEASE_NS,
            "pod-security.kubernetes.io/enforce=privileged")
    apply(objs)
    try:
        yield objs
    finally:
        kubectl("delete", "-f", "-", "--wait=false", "--ignore-not-found",
                stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=False)
        kubectl("delete", "secret", "vllm-sizer-webhook-tls", "-n", RELEASE_NS,
                "--ignore-not-found", check=False)


def pods(component: str) -> list[dict[str, Any]]:
    out = kubectl("get", "pods", "-n", RELEASE_NS, "-l",
                  f"app.kubernetes.io/component={component}", "-o", "json")
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def ready(component: str):
    ps = pods(component)
    ok = [p for p in ps if p["status"].get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))]
    return ok[0] if ok else None


def http(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read().decode()


def test_both_roles_run_restricted_with_certificates_metrics_and_rbac(installed, namespace):
    t0 = time.monotonic()
    webhook = wait_for("the webhook pod Ready", lambda: ready("webhook"), 300, 3)
    controller = wait_for("the controller pod Ready", lambda: ready("controller"), 300, 3)

    for pod, name in ((webhook, "webhook"), (controller, "controller")):
        spec = pod["spec"]
        c = spec["containers"][0]
        assert spec["hostNetwork"] is True and spec["securityContext"]["runAsNonRoot"] is True
        sc = c["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"]["drop"] == ["ALL"]
        # ... and as the running process sees it
        uid = kubectl("exec", "-n", RELEASE_NS, pod["metadata"]["name"], "-c", name, "--",
                      "id", "-u").strip()
        assert uid == "65532"
        rofs = subprocess.run(["kubectl", "exec", "-n", RELEASE_NS, pod["metadata"]["name"], "-c",
                               name, "--", "touch", "/opt/x"], capture_output=True, text=True)
        assert rofs.returncode != 0 and "Read-only file system" in rofs.stderr

    # the self-signed certificate: Secret created, caBundle of both configurations = its CA
    secret = wait_for("the certificate Secret", lambda: get("secret", "vllm-sizer-webhook-tls",
                                                            RELEASE_NS), 60)
    ca = base64.b64decode(secret["data"]["ca.crt"])
    for kind, name in (("mutatingwebhookconfiguration", "vllm-sizer-mutating"),
                       ("validatingwebhookconfiguration", "vllm-sizer-validating")):
        cfg = get(kind, name)
        cc = cfg["webhooks"][0]["clientConfig"]
        assert cc["url"].startswith(f"https://127.0.0.1:{PORTS['webhook']}/")
        assert ca in base64.b64decode(cc["caBundle"]), f"{name}: caBundle not written"

    # readiness (the pod is Ready through its TLS probe) and metrics on both roles
    status, page = http(f"http://127.0.0.1:{PORTS['webhook_metrics']}/metrics")
    assert status == 200 and "vllm_sizer_admission_reviews_total" in page
    assert http(f"http://127.0.0.1:{PORTS['controller_metrics']}/healthz")[0] == 200
    assert http(f"http://127.0.0.1:{PORTS['liveness']}/healthz")[0] == 200
    assert "vllm_sizer_oomkills_total" in http(
        f"http://127.0.0.1:{PORTS['controller_metrics']}/metrics")[1]

    # a real admission through the in-cluster webhook (URL mode, its certificate's IP SAN)
    doc = next(d for d in yaml.safe_load_all((ROOT / "examples" / "01-cpu-lora-deployment.yaml")
                                             .read_text()) if d and d["kind"] == "Deployment")
    doc["metadata"]["namespace"] = namespace
    doc["metadata"]["name"] = "chart-lora"
    doc["spec"]["replicas"] = 0  # admission only: no 27Gi pod on this node
    apply(doc)
    stored = get("deployment", "chart-lora", namespace)
    from tests.expected import NEED_01_QUANTITY
    assert stored["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] \
        == NEED_01_QUANTITY, stored["metadata"].get("annotations")

    # the controller, with the chart's RBAC: its Event and marker on that object
    def sized():
        evs = json.loads(kubectl("get", "events", "-n", namespace, "-o", "json",
                                 "--field-selector", "involvedObject.name=chart-lora"))["items"]
        marker = (get("deployment", "chart-lora", namespace)["metadata"].get("annotations") or {}
                  ).get("vllm-sizer.io/last-event")
        return marker if marker and any(e["reason"] == "Sized" for e in evs) else None
    wait_for("the controller's Sized Event", sized, 120, 3)
    logs = kubectl("logs", "-n", RELEASE_NS, controller["metadata"]["name"], check=False) + \
        kubectl("logs", "-n", RELEASE_NS, webhook["metadata"]["name"], check=False)
    assert "forbidden" not in logs.lower(), logs[-3000:]
    print(f"\nchart-on-node: both roles Ready, certificates, metrics, admission and the "
          f"controller's Event with the chart's RBAC in {time.monotonic() - t0:.0f} s")
