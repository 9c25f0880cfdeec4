"""Fixtures for the webhook tests: a self-signed certificate for 127.0.0.1, the real server on an
ephemeral port, and AdmissionReview bodies shaped like kube-apiserver's."""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import ssl
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from vllm_sizer.operator.certificates import generate_self_signed, write_certificates
from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.operator.webhook.server import bound_port, metrics_bound_port, start_webhook_server

SERVICE = "vllm-sizer-webhook"
NAMESPACE = "vllm-sizer"


def lora_deployment(limit: str = "8Gi", name: str = "qwen3-lora-cpu", namespace: str = "llm",
                    annotations: dict[str, str] | None = None, model: str = "Qwen/Qwen3-0.6B",
                    tokens: int = 2394) -> dict[str, Any]:
    """A CPU LoRA Deployment as kube-apiserver hands it to admission: defaults filled in,
    managedFields, kubectl's last-applied annotation."""
    manifest = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, **({"annotations": dict(annotations)} if annotations else {})},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "vllm",
                    "image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.11.0",
                    "command": ["vllm", "serve", model],
                    "args": ["--enable-lora", "--max-lora-rank=256",
                             f"--max-num-batched-tokens={tokens}", "--max-num-seqs=1",
                             "--max-model-len=4096", "--lora-modules", "support=/adapters/support"],
                    "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "4"}],
                    "resources": {"requests": {"cpu": "8", "memory": limit},
                                  "limits": {"cpu": "8", "memory": limit}},
                }]},
            },
        },
    }
    return apiserver_defaults(manifest)


def nginx_deployment(namespace: str = "llm") -> dict[str, Any]:
    return apiserver_defaults({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                                                       "ports": [{"containerPort": 80}],
                                                       "resources": {"limits": {"memory": "256Mi"}}}]}}},
    })


def apiserver_defaults(manifest: dict[str, Any]) -> dict[str, Any]:
    """What the API server adds before admission (CREATE): defaults, generation,
    creationTimestamp, managedFields, kubectl's last-applied-configuration."""
    obj = copy.deepcopy(manifest)
    meta = obj.setdefault("metadata", {})
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = \
        json.dumps(manifest, separators=(",", ":")) + "\n"
    meta.update({"generation": 1, "creationTimestamp": None,
                 "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update",
                                    "apiVersion": "apps/v1", "time": "2026-11-30T06:00:00Z",
                                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]})
    spec = obj["spec"]
    spec.setdefault("strategy", {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    pod = spec["template"]["spec"]
    pod.setdefault("restartPolicy", "Always")
    pod.setdefault("terminationGracePeriodSeconds", 30)
    pod.setdefault("dnsPolicy", "ClusterFirst")
    pod.setdefault("securityContext", {})
    pod.setdefault("schedulerName", "default-scheduler")
    spec["template"]["metadata"].setdefault("creationTimestamp", None)
    for c in pod["containers"]:
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("imagePullPolicy", "IfNotPresent")
    obj["status"] = {}
    return obj


def review(obj: Any, operation: str = "CREATE", *, old: Any = None, dry_run: bool = False,
           sub_resource: str | None = None, uid: str | None = None,
           kind: tuple[str, str, str] = ("apps", "v1", "Deployment"),
           resource: str = "deployments", namespace: str | None = None) -> dict[str, Any]:
    """An AdmissionReview v1 as kube-apiserver sends it."""
    group, version, k = kind
    meta = (obj or old or {}).get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    ns = namespace or meta.get("namespace")
    name = meta.get("name", "")
    options = {"CREATE": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                          "fieldManager": "kubectl-client-side-apply", "fieldValidation": "Strict"},
               "UPDATE": {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1",
                          "fieldManager": "kubectl-client-side-apply", "fieldValidation": "Strict"},
               "DELETE": {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                          "propagationPolicy": "Background"}}.get(operation)
    req: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": k},
        "resource": {"group": "apps", "version": "v1", "resource": resource},
        "requestKind": {"group": group, "version": version, "kind": k},
        "requestResource": {"group": "apps", "version": "v1", "resource": resource},
        "name": name, "namespace": ns, "operation": operation,
        "userInfo": {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]},
        "object": obj, "oldObject": old, "dryRun": dry_run, "options": options,
    }
    if sub_resource:
        req["subResource"] = sub_resource
        req["requestSubResource"] = sub_resource
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": req}


def decode_patch(response: dict[str, Any]) -> list[dict[str, Any]] | None:
    if "patch" not in response:
        return None
    assert response["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))


@pytest.fixture(scope="session")
def cert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("certs")
    bundle = generate_self_signed(SERVICE, NAMESPACE, ip_addresses=["127.0.0.1"],
                                  extra_dns_names=["localhost"])
    write_certificates(d, bundle)
    return d


def client_ssl(cert_dir: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
    return ctx  # verifies the chain and the 127.0.0.1 IP SAN


class Webhook:
    def __init__(self, runner, session: aiohttp.ClientSession, settings: OperatorSettings):
        self.runner = runner
        self.session = session
        self.settings = settings
        self.port = bound_port(runner)
        self.metrics_port = metrics_bound_port(runner)
        self.base = f"https://127.0.0.1:{self.port}"

    async def post_raw(self, path: str, data: bytes, **kw: Any) -> aiohttp.ClientResponse:
        return await self.session.post(self.base + path, data=data,
                                       headers={"Content-Type": "application/json"}, **kw)

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        async with await self.post_raw(path, json.dumps(body).encode()) as resp:
            assert resp.status == 200, await resp.text()
            out = await resp.json()
        assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
        assert out["response"]["uid"] == body["request"]["uid"]
        return out["response"]


@pytest_asyncio.fixture
async def start_webhook(cert_dir: Path):
    """`await start_webhook(lookup=..., **settings)` → a running Webhook; all stopped at teardown."""
    started: list[tuple[Any, aiohttp.ClientSession]] = []

    async def start(lookup=None, limit_range_max=None, read=None, reload_interval: float = 10.0,
                    certs: Path | None = None, **overrides: Any) -> Webhook:
        values = {"cert_dir": str(certs or cert_dir), "webhook_host": "127.0.0.1",
                  "webhook_port": 0, "metrics_port": 0, **overrides}
        settings = OperatorSettings(**values)
        runner = await start_webhook_server(settings, lookup, limit_range_max, read=read,
                                            reload_interval=reload_interval)
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_ssl(cert_dir), limit=0))
        started.append((runner, session))
        return Webhook(runner, session, settings)

    yield start
    for runner, session in started:
        with contextlib.suppress(Exception):
            await session.close()
        await runner.cleanup()
