"""`vllm-sizer run --dev` against a real API server: mutation, denial, annotations, dry-run,
the controller's Event, cleanup on exit. See conftest.py for what is needed."""

from __future__ import annotations

import copy
import signal
import time
from typing import Any

import pytest
import yaml

from .conftest import EXAMPLES, DevProcess
from tests.expected import FIT_02, NEED_01_GI, NEED_01_QUANTITY  # noqa: F401

pytestmark = pytest.mark.e2e


def example(name: str, namespace: str, kind: str = "Deployment") -> dict[str, Any]:
    for doc in yaml.safe_load_all((EXAMPLES / f"{name}.yaml").read_text()):
        if doc and doc.get("kind") == kind:
            doc = copy.deepcopy(doc)
            doc["metadata"]["namespace"] = namespace
            return doc
    raise LookupError(name)


def container(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        obj = obj.to_dict() if hasattr(obj, "to_dict") else obj
    return obj["spec"]["template"]["spec"]["containers"][0]


def apps(kube: Any) -> Any:
    from kubernetes import client
    return client.AppsV1Api(kube)


def create(kube: Any, obj: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
    """Create through the API (server-side dry-run when asked) and return the stored JSON."""
    from kubernetes import client

    kwargs = {"dry_run": "All"} if dry_run else {}
    api = client.ApiClient() if kube is None else kube
    ns = obj["metadata"]["namespace"]
    if obj["kind"] == "Deployment":
        resp = client.AppsV1Api(api).create_namespaced_deployment(ns, obj, _preload_content=False,
                                                                  **kwargs)
    elif obj["kind"] == "StatefulSet":
        resp = client.AppsV1Api(api).create_namespaced_stateful_set(ns, obj, _preload_content=False,
                                                                    **kwargs)
    else:
        raise ValueError(obj["kind"])
    import json
    return json.loads(resp.data)


def expected_denial(obj: dict[str, Any], limit_range_max: int | None = None) -> str:
    from vllm_sizer.operator.settings import OperatorSettings
    from vllm_sizer.workloads.api_names import VALIDATING_WEBHOOK_NAME
    from vllm_sizer.policy.review import review_object

    decision = review_object(obj, None, OperatorSettings.from_env().policy(limit_range_max))
    assert decision.verdict == "deny"
    return f'admission webhook "{VALIDATING_WEBHOOK_NAME}" denied the request: {decision.message}'


def test_undersized_deployment_is_mutated_and_annotated(kube, namespace, dev):
    obj = example("01-cpu-lora-deployment", namespace)
    stored = create(kube, obj)
    c = container(stored)
    assert c["resources"]["limits"]["memory"] == NEED_01_QUANTITY  # raised from 8Gi
    assert c["resources"]["requests"]["memory"] == NEED_01_QUANTITY
    ann = stored["metadata"]["annotations"]
    assert ann["vllm-sizer.io/decision"].startswith(f"mutate: limits.memory 8.0Gi → {NEED_01_GI}")
    assert ann["vllm-sizer.io/estimate"].endswith("Gi")
    # Read back: what was stored is what the webhook returned.
    again = apps(kube).read_namespaced_deployment(obj["metadata"]["name"], namespace,
                                                  _preload_content=False)
    import json
    assert container(json.loads(again.data))["resources"]["limits"]["memory"] == NEED_01_QUANTITY


def test_server_side_dry_run_gets_the_same_mutation_and_stores_nothing(kube, namespace, dev):
    from kubernetes.client.exceptions import ApiException

    obj = example("01-cpu-lora-deployment", namespace)
    obj["metadata"]["name"] = "dry-run-lora"
    answered = create(kube, obj, dry_run=True)
    assert container(answered)["resources"]["limits"]["memory"] == NEED_01_QUANTITY
    assert "vllm-sizer.io/decision" in answered["metadata"]["annotations"]
    with pytest.raises(ApiException) as exc:
        apps(kube).read_namespaced_deployment("dry-run-lora", namespace)
    assert exc.value.status == 404


def test_enforce_denies_with_the_exact_message(kube, namespace, dev):
    from kubernetes.client.exceptions import ApiException

    obj = example("02-cpu-lora-undersized-enforce", namespace)
    # stay under the session's LimitRange (28Gi) so the enforce message, not the ceiling, answers
    c = container(obj)
    c["args"] = ["2394" if a == "4273" else a for a in c["args"]]
    for dry_run in (True, False):
        with pytest.raises(ApiException) as exc:
            create(kube, obj, dry_run=dry_run)
        assert exc.value.status == 403
        import json
        status = json.loads(exc.value.body)
        assert status["message"] == expected_denial(obj)
    with pytest.raises(ApiException):
        apps(kube).read_namespaced_deployment(obj["metadata"]["name"], namespace)


def test_limitrange_ceiling_denies_with_the_exact_message(kube, namespace, dev, limit_range):
    import json

    from kubernetes.client.exceptions import ApiException

    obj = example("12-limitrange-too-small", namespace)
    with pytest.raises(ApiException) as exc:
        create(kube, obj)
    assert exc.value.status == 403
    message = json.loads(exc.value.body)["message"]
    assert message == expected_denial(obj, limit_range)
    assert "LimitRange max 28.0Gi" in message


def test_non_vllm_deployment_is_untouched(kube, namespace, dev):
    obj = example("08-nginx-deployment", namespace)
    stored = create(kube, obj)
    assert not any(k.startswith("vllm-sizer.io/")
                   for k in (stored["metadata"].get("annotations") or {}))
    assert container(stored).get("resources", {}) == container(obj).get("resources", {})


def test_model_config_from_a_configmap(kube, namespace, dev):
    obj = example("10-configmap-model-config", namespace)
    stored = create(kube, obj)
    ann = stored["metadata"].get("annotations") or {}
    assert "vllm-sizer.io/estimate" in ann, ann
    assert container(stored)["resources"]["limits"]["memory"]


def test_controller_posts_a_sized_event(kube, namespace, dev):
    from kubernetes import client

    obj = example("01-cpu-lora-deployment", namespace)
    obj["metadata"]["name"] = "event-lora"
    create(kube, obj)
    core = client.CoreV1Api(kube)
    deadline = time.monotonic() + 60
    reasons: list[str] = []
    while time.monotonic() < deadline:
        evs = core.list_namespaced_event(
            namespace, field_selector="involvedObject.name=event-lora").items
        reasons = [e.reason for e in evs if e.source and e.source.component == "vllm-sizer"]
        if reasons:
            break
        time.sleep(0.5)
    assert reasons == ["Sized"], dev.output()[-3000:]
    # The Event is posted first, the marker annotation patched right after (sizing.py).
    marker, deadline = "", time.monotonic() + 30
    while time.monotonic() < deadline and not marker:
        stored = apps(kube).read_namespaced_deployment("event-lora", namespace)
        marker = (stored.metadata.annotations or {}).get("vllm-sizer.io/last-event", "")
        time.sleep(0.2)
    assert marker.startswith("Sized "), dev.output()[-3000:]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_webhook_configurations_are_deleted_on_exit(kube, namespace, tmp_path, sig, dev):
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from vllm_sizer.cli.run import DEV_MUTATING, DEV_VALIDATING

    # The session's process first (it owns the same names), then a fresh one per signal.
    if dev.proc is not None and dev.proc.poll() is None:
        assert dev.stop(signal.SIGTERM) == 0, dev.output()
    proc = DevProcess(namespace, tmp_path / "run.log", role="webhook").start()
    try:
        proc.wait_registered(kube)
    finally:
        rc = proc.stop(sig)
    api = client.AdmissionregistrationV1Api(kube)
    for read, name in ((api.read_mutating_webhook_configuration, DEV_MUTATING),
                       (api.read_validating_webhook_configuration, DEV_VALIDATING)):
        with pytest.raises(ApiException) as exc:
            read(name)
        assert exc.value.status == 404, proc.output()
    assert rc == 0, proc.output()
