"""End-to-end: a real API server (the cluster in KUBECONFIG) calling `vllm-sizer run --dev`.

Runs only with VLLM_SIZER_E2E=1 and KUBECONFIG set. Needs nothing but an API server that can
reach the webhook at VLLM_SIZER_E2E_WEBHOOK_HOST (default 127.0.0.1, right for an API server on
this machine; kind.sh passes the docker network gateway): no kubelet, no controller-manager, no
pods. Every test works in a fresh namespace `vllm-sizer-e2e-<random>`; the `namespace`
fixture deletes what the tests created and the namespace at the end of the session, pass or
fail (the namespace itself disappears where a namespace controller runs, as in CI)."""

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
    """A fresh namespace for the session; its objects and the namespace are deleted after the
    last test, whatever the tests did (a failed test must not leave vLLM workloads behind)."""
    from kubernetes import client

    name = f"vllm-sizer-e2e-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(kube).create_namespace({"metadata": {"name": name}})
    try:
        yield name
    finally:
        leftovers = cleanup_namespace(kube, name)
        assert leftovers == [], f"e2e cleanup left {leftovers} in {name}"


def cleanup_namespace(kube: Any, name: str) -> list[str]:
    """Delete the workloads, ConfigMaps and LimitRanges the suite creates, then the namespace.
    Returns what is still listed afterwards (workloads only: their deletion is synchronous)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    apps = client.AppsV1Api(kube)
    core = client.CoreV1Api(kube)
    kinds = ((apps.list_namespaced_deployment, apps.delete_namespaced_deployment, "Deployment"),
             (apps.list_namespaced_stateful_set, apps.delete_namespaced_stateful_set,
              "StatefulSet"),
             (core.list_namespaced_config_map, core.delete_namespaced_config_map, "ConfigMap"),
             (core.list_namespaced_limit_range, core.delete_namespaced_limit_range,
              "LimitRange"))
    for list_fn, delete_fn, _kind in kinds:
        for item in list_fn(name).items:
            try:
                delete_fn(item.metadata.name, name)
            except ApiException as exc:
                if exc.status != 404:
                    raise
    left = [f"{kind}/{item.metadata.name}" for list_fn, _d, kind in kinds[:2]
            for item in list_fn(name).items]
    try:
        core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise
    return left


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


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """One line saying what the e2e tier did and against which API server (CI runs pytest -q,
    which otherwise shows only dots)."""
    counts: dict[str, int] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for rep in terminalreporter.stats.get(outcome, []):
            if getattr(rep, "nodeid", "").startswith("tests/e2e/") and \
                    (rep.when == "call" or outcome != "passed"):
                counts[outcome] = counts.get(outcome, 0) + 1
    if not counts:
        return
    where = _server_version() if e2e_enabled() else SKIP_REASON
    terminalreporter.write_line(
        "e2e tier: " + ", ".join(f"{n} {k}" for k, n in counts.items()) + f" ({where})")


def _server_version() -> str:
    try:
        from kubernetes import client, config

        api = config.new_client_from_config(config_file=os.environ["KUBECONFIG"])
        v = client.VersionApi(api).get_code()
        return f"kube-apiserver {v.git_version} at {api.configuration.host}"
    except Exception as exc:  # noqa: BLE001 - the summary line must not fail the run
        return f"API server version unknown: {exc}"
