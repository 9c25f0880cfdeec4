"""`vllm-sizer run --dev` as a subprocess against kmock (standing in for the API server):
registers URL webhook configurations with failurePolicy Ignore, serves TLS for the IP, and
deletes the configurations on SIGTERM and SIGINT."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import ssl
import sys
import uuid

import aiohttp
import pytest

from vllm_sizer.cli.run import DEV_MUTATING, DEV_VALIDATING

from .conftest import example

MUTATING = "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
VALIDATING = "admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


def kubeconfig(tmp_path, url: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "kmock",
        "clusters": [{"name": "kmock", "cluster": {"server": url}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "u"}}]}))
    return str(path)


def live(kmock, resource: str, name: str):
    for (res, _ns, n), obj in list(kmock.objects.items()):
        if n == name and f"{res.group}/{res.version}/{res.plural}" == resource and not obj.deleted:
            return obj
    return None


@pytest.mark.asyncio
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_dev_registers_serves_and_deletes_on_signal(kmock, tmp_path, sig):
    kmock.resources[MUTATING] = {}
    kmock.resources[VALIDATING] = {}
    env = {**os.environ, "KUBECONFIG": kubeconfig(tmp_path, str(kmock.url).rstrip("/")),
           "PYTHONUNBUFFERED": "1"}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "vllm_sizer.cli.main", "run", "--dev", "--role", "webhook",
        "--webhook-host", "127.0.0.1", "--port", "0", "--metrics-port", "-1",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        for _ in range(1200):  # up to 60 s: a loaded CI machine starts slowly
            if live(kmock, VALIDATING, DEV_VALIDATING) is not None or proc.returncode is not None:
                break
            await asyncio.sleep(0.05)
        mutating = live(kmock, MUTATING, DEV_MUTATING)
        validating = live(kmock, VALIDATING, DEV_VALIDATING)
        assert mutating is not None and validating is not None, \
            (await proc.stdout.read(4000)).decode() if proc.returncode is not None else "not registered"
        hook = dict(mutating)["webhooks"][0]
        url = hook["clientConfig"]["url"]
        assert url.startswith("https://127.0.0.1:") and url.endswith("/mutate")
        assert hook["failurePolicy"] == "Ignore" and hook["sideEffects"] == "None"
        assert dict(validating)["webhooks"][0]["clientConfig"]["url"].endswith("/validate")

        # The API server's view: TLS verified against caBundle for the IP, a real review.
        ca = base64.b64decode(hook["clientConfig"]["caBundle"]).decode()
        ctx = ssl.create_default_context(cadata=ca)
        obj = example("01-cpu-lora-deployment")
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {"uid": str(uuid.uuid4()), "operation": "CREATE",
                              "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                              "resource": {"group": "apps", "version": "v1",
                                           "resource": "deployments"},
                              "namespace": "llm", "name": obj["metadata"]["name"],
                              "object": obj, "dryRun": False,
                              "userInfo": {"username": "test"}}}
        async with aiohttp.ClientSession() as s:
            async with s.post(url, json=review, ssl=ctx) as resp:
                assert resp.status == 200
                answer = await resp.json()
        assert answer["response"]["allowed"] is True
        assert answer["response"].get("patchType") == "JSONPatch"
    finally:
        if proc.returncode is None:
            proc.send_signal(sig)
        out = (await asyncio.wait_for(proc.stdout.read(), 30)).decode()
        await asyncio.wait_for(proc.wait(), 30)
    assert live(kmock, MUTATING, DEV_MUTATING) is None, out
    assert live(kmock, VALIDATING, DEV_VALIDATING) is None, out
    assert f"deleted {DEV_MUTATING}" in out and f"deleted {DEV_VALIDATING}" in out


@pytest.mark.asyncio
async def test_dev_all_roles_in_one_process(kmock, tmp_path):
    """--role all: the webhook plus the Kopf controller (sizing a pre-existing Deployment,
    liveness endpoint), and the cleanup still happens when Kopf owns the signal handlers."""
    from .conftest import DEPLOYMENTS, events, put, stored
    from .test_kopf_operator import declare

    declare(kmock)
    kmock.resources["v1/pods"] = {}
    kmock.resources[MUTATING] = {}
    kmock.resources[VALIDATING] = {}
    put(kmock, DEPLOYMENTS, stored(example("01-cpu-lora-deployment")))
    liveness = f"http://127.0.0.1:{_free_port()}/healthz"
    env = {**os.environ, "KUBECONFIG": kubeconfig(tmp_path, str(kmock.url).rstrip("/")),
           "PYTHONUNBUFFERED": "1"}
    proc = await asyncio.create_subprocess_exec(
        # (no --namespace: with one, Kopf lists /api/v1/namespaces, which kmock 0.8 misparses)
        sys.executable, "-m", "vllm_sizer.cli.main", "run", "--dev",
        "--webhook-host", "127.0.0.1", "--port", "0", "--metrics-port", "-1",
        "--liveness", liveness, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    healthy = False
    try:
        # a budget for a loaded machine (the child imports kopf, kubernetes and aiohttp before
        # it lists anything), not a speed requirement: the Event normally comes within seconds
        deadline = asyncio.get_running_loop().time() + 90
        while asyncio.get_running_loop().time() < deadline:
            if events(kmock) or proc.returncode is not None:
                break
            await asyncio.sleep(0.05)
        assert [e["reason"] for e in events(kmock)] == ["Undersized"], (await _drain(proc))
        assert live(kmock, MUTATING, DEV_MUTATING) is not None
        async with aiohttp.ClientSession() as s:
            async with s.get(liveness) as resp:
                healthy = resp.status == 200
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        out = (await asyncio.wait_for(proc.stdout.read(), 30)).decode()
        rc = await asyncio.wait_for(proc.wait(), 30)
    assert healthy, out
    assert live(kmock, MUTATING, DEV_MUTATING) is None, out
    assert live(kmock, VALIDATING, DEV_VALIDATING) is None, out
    assert rc == 0, out


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _drain(proc) -> str:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    return (await asyncio.wait_for(proc.stdout.read(), 30)).decode()[-5000:]


@pytest.mark.asyncio
async def test_controller_role_serves_metrics_and_kopf_liveness(kmock, tmp_path):
    from .test_kopf_operator import declare

    declare(kmock)
    kmock.resources["v1/pods"] = {}
    metrics_port, liveness_port = _free_port(), _free_port()
    env = {**os.environ, "KUBECONFIG": kubeconfig(tmp_path, str(kmock.url).rstrip("/")),
           "PYTHONUNBUFFERED": "1"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "vllm_sizer.cli.main", "run", "--role", "controller",
        "--metrics-port", str(metrics_port),
        "--liveness", f"http://127.0.0.1:{liveness_port}/healthz", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    health, page = None, ""
    try:
        async with aiohttp.ClientSession() as s:
            for _ in range(1200):  # up to 60 s: a loaded CI machine starts slowly
                try:
                    async with s.get(f"http://127.0.0.1:{metrics_port}/healthz") as resp:
                        health = resp.status
                        if health == 200:
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)
            async with s.get(f"http://127.0.0.1:{metrics_port}/metrics") as resp:
                page = await resp.text()
    finally:
        out = await _drain(proc)
        rc = await asyncio.wait_for(proc.wait(), 30)
    assert health == 200, out
    assert "vllm_sizer_oomkills_total" in page or "vllm_sizer_oomkills" in page
    assert rc == 0, out


@pytest.mark.asyncio
async def test_webhook_role_in_cluster_self_signed_certificate(kmock, tmp_path):
    """Without --dev and with the default cert mode, the webhook role creates its CA + serving
    certificate in the Secret, writes the files and serves with them."""
    kmock.resources["v1/secrets"] = {}
    kmock.resources[MUTATING] = {}
    kmock.resources[VALIDATING] = {}
    cert_dir = tmp_path / "certs"
    port = _free_port()
    env = {**os.environ, "KUBECONFIG": kubeconfig(tmp_path, str(kmock.url).rstrip("/")),
           "PYTHONUNBUFFERED": "1", "VLLM_SIZER_CERT_DIR": str(cert_dir),
           "VLLM_SIZER_OPERATOR_NAMESPACE": "vllm-sizer"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "vllm_sizer.cli.main", "run", "--role", "webhook",
        "--bind", "127.0.0.1", "--port", str(port), "--metrics-port", "-1", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    status = None
    try:
        secret = None
        for _ in range(1200):  # up to 60 s: a loaded CI machine starts slowly
            secret = live(kmock, "/v1/secrets", "vllm-sizer-webhook-tls")
            if secret is not None and (cert_dir / "tls.crt").exists():
                break
            await asyncio.sleep(0.05)
        assert secret is not None, await _drain(proc)
        ca = base64.b64decode(dict(secret)["data"]["ca.crt"]).decode()
        ctx = ssl.create_default_context(cadata=ca)
        ctx.check_hostname = False  # the certificate names the Service, not 127.0.0.1
        async with aiohttp.ClientSession() as s:
            for _ in range(100):
                try:
                    async with s.get(f"https://127.0.0.1:{port}/healthz", ssl=ctx) as resp:
                        status = resp.status
                        break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.05)
    finally:
        out = await _drain(proc)
        rc = await asyncio.wait_for(proc.wait(), 30)
    assert status == 200, out
    assert rc == 0, out


def test_kopf_operator_arguments_and_no_kopf_in_the_webhook_role():
    import subprocess

    from vllm_sizer.cli.main import build_parser
    from vllm_sizer.cli.run import kopf_operator_kwargs
    from vllm_sizer.operator.settings import OperatorSettings

    args = build_parser().parse_args(["run", "--role", "controller"])
    kw = kopf_operator_kwargs(args, OperatorSettings(), "http://0.0.0.0:8081/healthz")
    assert kw == {"standalone": True, "clusterwide": True,
                  "liveness_endpoint": "http://0.0.0.0:8081/healthz"}
    args = build_parser().parse_args(["run", "--role", "controller", "--priority", "100"])
    kw = kopf_operator_kwargs(args, OperatorSettings(namespaces=["a", "b"]), None)
    assert kw == {"standalone": False, "priority": 100, "peering_name": "vllm-sizer",
                  "namespaces": ["a", "b"], "liveness_endpoint": None}

    # The admission path never imports Kopf (nothing on it may depend on Kopf or its indexes).
    code = ("import sys, vllm_sizer.cli.main, vllm_sizer.cli.run, vllm_sizer.operator.webhook.server;"
            "sys.exit(1 if 'kopf' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("argv, host", [
    (["run", "--dev", "--webhook-host", "127.0.0.1"], "127.0.0.1"),
    (["run", "--dev", "--webhook-host", "::1"], "[::1]"),
    (["run", "--role", "controller", "--bind", "127.0.0.1"], "127.0.0.1"),
    (["run", "--role", "controller"], "0.0.0.0"),
])
def test_kopf_liveness_binds_where_every_other_listener_binds(argv, host):
    """In --dev every listener belongs on the webhook host, and --bind moves them all: Kopf's
    liveness endpoint (no --liveness given) included."""
    from vllm_sizer.cli import run as run_mod
    from vllm_sizer.cli.main import build_parser

    args = build_parser().parse_args(argv + ["--metrics-port", "18080"])
    settings = run_mod._settings(args)
    cleanups: list = []
    if args.dev:
        settings = asyncio.run(run_mod._dev_setup(args, settings, lambda: None, cleanups))
    try:
        assert run_mod._liveness_url(args, settings) == f"http://{host}:18081/healthz"
        assert settings.webhook_host == host.strip("[]")
    finally:
        for fn in cleanups:
            fn()
