"""End-to-end: a real API server (the cluster in KUBECONFIG) calling `vllm-sizer run --dev`.

Runs only with VLLM_SIZER_E2E=1 and KUBECONFIG set. Needs nothing but an API server that can
reach the webhook at VLLM_SIZER_E2E_WEBHOOK_HOST (default 127.0.0.1, right for an API server on
this machine; kind.sh passes the docker network gateway): no kubelet, no controller-manager, no
pods. Every test works in a fresh namespace `vllm-sizer-e2e-<random>`; the objects are deleted
at the end (the namespace itself only disappears where a namespace controller runs)."""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import uuid
from typing import Any, Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SKIP_REASON = "end-to-end tests need VLLM_SIZER_E2E=1 and KUBECONFIG (a reachable API server)"


def e2e_enabled() -> bool:
    return os.environ.get("VLLM_SIZER_E2E") == "1" and bool(os.environ.get("KUBECONFIG"))


@pytest.fixture(scope="session", autouse=True)
def _require_e2e() -> None:
    if not e2e_enabled():
        pytest.skip(SKIP_REASON)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def kube() -> Any:
    from kubernetes import client, config

    config.load_kube_config(config_file=os.environ["KUBECONFIG"])
    return client.ApiClient()


@pytest.fixture(scope="session")
def namespace(kube: Any) -> Iterator[str]:
    from kubernetes import client

    name = f"vllm-sizer-e2e-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(kube).create_namespace({"metadata": {"name": name}})
    yield name
    try:
        client.CoreV1Api(kube).delete_namespace(name)
    except Exception:  # noqa: BLE001 - best effort
        pass


class DevProcess:
    """`vllm-sizer run --dev` as a subprocess; output collected into a file."""

    def __init__(self, namespace: str, log_path: pathlib.Path, role: str = "all"):
        self.host = os.environ.get("VLLM_SIZER_E2E_WEBHOOK_HOST", "127.0.0.1")
        self.port = free_port()
        self.metrics_port = free_port()
        self.liveness_port = free_port()
        self.log_path = log_path
        self.cmd = [sys.executable, "-m", "vllm_sizer.cli.main", "run", "--dev",
                    "--role", role, "--webhook-host", self.host, "--namespace", namespace,
                    "--port", str(self.port), "--metrics-port", str(self.metrics_port),
                    "--liveness", f"http://127.0.0.1:{self.liveness_port}/healthz"]
        if self.host != "127.0.0.1":
            self.cmd += ["--bind", "0.0.0.0"]
        self.proc: subprocess.Popen | None = None

    def start(self) -> "DevProcess":
        self._log = open(self.log_path, "wb")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(self.cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                     cwd=ROOT, env=env)
        return self

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_registered(self, kube: Any, timeout: float = 60) -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        from vllm_sizer.cli.run import DEV_VALIDATING

        api = client.AdmissionregistrationV1Api(kube)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, self.output()
            if "registered as" in self.output():
                try:
                    api.read_validating_webhook_configuration(DEV_VALIDATING)
                    time.sleep(1)  # the API server picks up new configurations within ~1 s
                    return
                except ApiException:
                    pass
            time.sleep(0.2)
        raise AssertionError("vllm-sizer run --dev did not register:\n" + self.output())

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait(10)
        self._log.close()
        return rc


@pytest.fixture(scope="session")
def model_configmap(kube: Any, namespace: str) -> str:
    """The model-config ConfigMap of examples/10, with the key spelled as ConfigMap keys must
    be ('acme--support-3b'), created before the server starts (the lookup's TTL cache)."""
    import yaml
    from kubernetes import client

    doc = next(d for d in yaml.safe_load_all((EXAMPLES / "10-configmap-model-config.yaml").read_text())
               if d and d["kind"] == "ConfigMap")
    data = {k.replace("/", "--", 1): v for k, v in doc["data"].items()}
    body = {"metadata": {"name": "e2e-model-configs", "namespace": namespace,
                         "labels": doc["metadata"]["labels"]}, "data": data}
    client.CoreV1Api(kube).create_namespaced_config_map(namespace, body)
    return body["metadata"]["name"]


@pytest.fixture(scope="session")
def limit_range(kube: Any, namespace: str) -> int:
    """examples/12's LimitRange, created before the server starts, with its max raised to 28Gi:
    the session shares one namespace, and examples/01 (about 27Gi needed) must still fit while
    examples/12 (31.5Gi needed) must not."""
    import yaml
    from kubernetes import client

    doc = next(d for d in yaml.safe_load_all((EXAMPLES / "12-limitrange-too-small.yaml").read_text())
               if d and d["kind"] == "LimitRange")
    doc["metadata"]["namespace"] = namespace
    doc["spec"]["limits"][0]["max"]["memory"] = "28Gi"
    client.CoreV1Api(kube).create_namespaced_limit_range(namespace, doc)
    return 28 * 1024**3


@pytest.fixture(scope="session")
def dev(kube: Any, namespace: str, model_configmap: str, limit_range: int,
        tmp_path_factory) -> Iterator[DevProcess]:
    proc = DevProcess(namespace, tmp_path_factory.mktemp("dev") / "run.log").start()
    try:
        proc.wait_registered(kube)
        yield proc
    finally:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.stop()
