"""The webhook configuration objects: schema-valid (kubernetes-validate), the fields issue 6
asks for, and matchConditions (CEL) evaluated on real shapes with cel-python."""

from __future__ import annotations

import base64
import copy
from pathlib import Path

import pytest
import yaml

from vllm_sizer.operator.settings import (MUTATE_PATH, MUTATING_CONFIG_NAME, SERVED_RESOURCES,
                                          VALIDATE_PATH, VALIDATING_CONFIG_NAME, OperatorSettings)
from vllm_sizer.operator.webhook import configurations as cfg
from vllm_sizer.workloads.reader import read_workloads

from .conftest import lora_deployment, nginx_deployment

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def rendered():
    s = OperatorSettings(operator_namespace="ops", excluded_namespaces=["kube-system", "monitoring"])
    yield "service", cfg.webhook_configurations(s, ca_bundle=CA)
    yield "url", cfg.webhook_configurations(s, url="https://192.168.1.10:9443/", ca_bundle=CA,
                                            failure_policy="Fail")
    yield "restricted", cfg.webhook_configurations(
        OperatorSettings(namespaces=["llm", "team-a"]), object_selector={"matchLabels": {"a": "b"}},
        with_match_conditions=False)


@pytest.mark.parametrize("label, pair", list(rendered()), ids=lambda x: x if isinstance(x, str) else "")
def test_rendered_configurations_validate_against_the_kubernetes_schema(label, pair):
    kv = pytest.importorskip("kubernetes_validate")
    for obj in pair:
        kv.validate(copy.deepcopy(obj), kv.latest_version(), strict=True)
        hooks = obj["webhooks"]
        assert len(hooks) == 1
        hook = hooks[0]
        for field in ("name", "clientConfig", "rules", "sideEffects", "admissionReviewVersions"):
            assert field in hook  # required by admissionregistration.k8s.io/v1
        assert hook["name"].count(".") >= 2


def test_service_configuration_fields():
    s = OperatorSettings(operator_namespace="ops")
    mut, val = cfg.webhook_configurations(s, ca_bundle=CA)
    assert mut["metadata"]["name"] == MUTATING_CONFIG_NAME and mut["metadata"]["name"].startswith("vllm-sizer")
    assert val["metadata"]["name"] == VALIDATING_CONFIG_NAME
    m, v = mut["webhooks"][0], val["webhooks"][0]
    assert m["clientConfig"] == {"service": {"namespace": "ops", "name": s.service_name,
                                             "path": MUTATE_PATH, "port": 443},
                                 "caBundle": base64.b64encode(CA).decode()}
    assert v["clientConfig"]["service"]["path"] == VALIDATE_PATH
    for h in (m, v):
        assert h["timeoutSeconds"] == 5 and h["sideEffects"] == "None"
        assert h["matchPolicy"] == "Equivalent" and h["admissionReviewVersions"] == ["v1"]
        assert h["failurePolicy"] == "Ignore"
        assert h["namespaceSelector"] == {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "ops"]}]}
        assert len(h["rules"]) == len(SERVED_RESOURCES)
        for rule, (group, version, plural, _kind) in zip(h["rules"], SERVED_RESOURCES):
            # pods are sized on CREATE only (their resources are immutable afterwards)
            ops = ["CREATE"] if (group, plural) == ("", "pods") else ["CREATE", "UPDATE"]
            assert rule == {"apiGroups": [group], "apiVersions": [version], "resources": [plural],
                            "operations": ops, "scope": "Namespaced"}
        assert [c["name"] for c in h["matchConditions"]] == ["vllm-workload", "not-sized-elsewhere"]
    assert m["reinvocationPolicy"] == "IfNeeded"
    assert "reinvocationPolicy" not in v


def test_url_configuration_and_restricted_namespaces():
    mut, val = cfg.webhook_configurations(OperatorSettings(namespaces=["llm"]),
                                          url="https://10.0.0.5:9443", failure_policy="Fail")
    assert mut["webhooks"][0]["clientConfig"] == {"url": "https://10.0.0.5:9443/mutate"}
    assert val["webhooks"][0]["clientConfig"] == {"url": "https://10.0.0.5:9443/validate"}
    assert val["webhooks"][0]["failurePolicy"] == "Fail"
    exprs = mut["webhooks"][0]["namespaceSelector"]["matchExpressions"]
    assert {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["llm"]} in exprs
    with pytest.raises(ValueError):
        cfg.mutating_configuration(OperatorSettings(), failure_policy="Sometimes")  # type: ignore[arg-type]


# ---- CEL ---------------------------------------------------------------------------------------

celpy = pytest.importorskip("celpy")


def evaluate(obj, kind=None):
    env = celpy.Environment()
    kind = kind or obj.get("kind", "")
    activation = {"object": celpy.json_to_cel(obj),
                  "request": celpy.json_to_cel({"kind": {"group": "", "version": "v1", "kind": kind},
                                                "operation": "CREATE"})}
    results = []
    for cond in cfg.match_conditions():
        prog = env.program(env.compile(cond["expression"]))
        value = prog.evaluate(activation)
        assert isinstance(value, celpy.celtypes.BoolType), (cond["name"], value)  # never an error
        results.append(bool(value))
    return all(results)


def pod(containers):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "llm"},
            "spec": {"containers": containers}}


def test_cel_sends_vllm_deployments_and_pods():
    assert evaluate(lora_deployment()) is True
    assert evaluate(pod([{"name": "a", "image": "busybox"},
                         {"name": "b", "image": "vllm/vllm-openai:v0.11.0"}])) is True
    assert evaluate(pod([{"name": "b", "image": "registry/llm:1",
                          "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"]}])) is True
    assert evaluate(pod([{"name": "b", "image": "registry/llm:1", "command": ["sh", "-c"],
                          "args": ["set -e\nexec vllm serve Qwen/Qwen3-0.6B"]}])) is True
    assert evaluate(pod([{"name": "b", "image": "kserve/huggingfaceserver:v0.15.0"}])) is True
    # the kubelet (and the reader) expand $(VAR) from literal env values
    expanded = pod([{"name": "b", "image": "registry/llm:1", "command": ["$(LAUNCHER)", "serve", "Qwen/Qwen3-0.6B"],
                     "env": [{"name": "LAUNCHER", "value": "vllm"}, {"name": "X", "valueFrom": {}}]}])
    assert evaluate(expanded) is True


def test_cel_skips_obvious_non_vllm_objects():
    assert evaluate(nginx_deployment()) is False
    assert evaluate(pod([{"name": "a", "image": "busybox", "command": ["sleep", "3600"]}])) is False
    assert evaluate(pod([{"name": "a"}])) is False  # no image at all: no error either
    assert evaluate({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}) is False
    assert evaluate({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
                     "spec": {"template": {"metadata": {}}}}) is False


def test_cel_kinds_and_shapes():
    assert evaluate({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                     "metadata": {"name": "m"},
                     "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"}}}}}) is True
    assert evaluate({"apiVersion": "serving.kserve.io/v1alpha1", "kind": "LLMInferenceService",
                     "metadata": {"name": "m"}, "spec": {}}) is True
    c = [{"name": "vllm", "image": "vllm/vllm-openai:latest"}]
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "l"},
           "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"containers": c}}}}}
    assert evaluate(lws) is True
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": c}}}}}}
    assert evaluate(cron) is True


def test_cel_skips_controller_owned_objects():
    owned = lora_deployment()
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "serving.kserve.io/v1beta1",
                                             "kind": "InferenceService", "name": "m", "uid": "1",
                                             "controller": True}]
    assert evaluate(owned) is False
    owned["metadata"]["ownerReferences"][0]["controller"] = False
    assert evaluate(owned) is True


def _example_objects():
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict):
                yield path.name, doc


@pytest.mark.parametrize("name, obj", list(_example_objects()), ids=lambda x: x if isinstance(x, str) else "")
def test_cel_sends_every_example_the_reader_would_size(name, obj):
    """The matchConditions must never hide an object the reader sizes."""
    workloads = [w for w in read_workloads(obj) if not w.skip_reason]
    if workloads:
        assert evaluate(obj) is True, name


class FakeAdmissionApi:
    def __init__(self, existing=()):
        self.store = {n: {"metadata": {"name": n, "resourceVersion": "7"}} for n in existing}
        self.calls = []

    def __getattr__(self, attr):
        verb = attr.split("_", 1)[0]

        def call(*args):
            from kubernetes.client.exceptions import ApiException
            self.calls.append((verb, args[0] if verb != "create" else args[0]["metadata"]["name"]))
            if verb == "read":
                if args[0] not in self.store:
                    raise ApiException(status=404)
                return self.store[args[0]]
            if verb == "create":
                self.store[args[0]["metadata"]["name"]] = args[0]
            elif verb == "replace":
                assert args[1]["metadata"]["resourceVersion"] == "7"
                self.store[args[0]] = args[1]
            elif verb == "delete":
                if args[0] not in self.store:
                    raise ApiException(status=404)
                del self.store[args[0]]
        return call


def test_apply_and_delete_configurations():
    api = FakeAdmissionApi(existing=[VALIDATING_CONFIG_NAME])
    mut, val = cfg.webhook_configurations(OperatorSettings(), url="https://127.0.0.1:9443", ca_bundle=CA)
    cfg.apply_configurations(api, [mut, val])
    assert ("create", MUTATING_CONFIG_NAME) in api.calls and ("replace", VALIDATING_CONFIG_NAME) in api.calls
    assert api.store[MUTATING_CONFIG_NAME]["webhooks"][0]["clientConfig"]["url"] == "https://127.0.0.1:9443/mutate"
    assert "resourceVersion" not in val["metadata"]  # the caller's object is left alone
    cfg.delete_configurations(api)
    assert api.store == {}
    cfg.delete_configurations(api)  # already gone: fine


def test_render_yaml_round_trips():
    s = OperatorSettings()
    docs = list(yaml.safe_load_all(cfg.render_yaml(s, ca_bundle=CA)))
    assert docs == list(cfg.webhook_configurations(s, ca_bundle=CA))
