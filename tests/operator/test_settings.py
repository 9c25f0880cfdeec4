"""OperatorSettings reads the VLLM_SIZER_* environment with pydantic-settings: every variable the
chart, manifests/ and the Dockerfile set is one it reads, each variable it lists really sets its
field, "" is unset, a bad value names its variable, an unknown VLLM_SIZER_* variable is warned
about, and from_env(mapping) never reads os.environ."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
import yaml
from pydantic_settings import SettingsError

from vllm_sizer.operator.settings import DECISION_ENV, POLICY_FIELDS, OperatorSettings
from vllm_sizer.policy.settings import PolicySettings

REPO = Path(__file__).parents[2]

# A value for each field's variables (as text, the way the chart writes it) and what it reads as;
# every value differs from the field's default.
SAMPLES: dict[str, tuple[str, object]] = {
    "decision.mode": ("warn", "warn"),
    "decision.headroom": ("25%", 0.25),
    "decision.rounding_bytes": ("1Gi", 1024**3),
    "decision.pin_cpu_kv_gib": ("8", 8.0),
    "decision.largest_node_memory_bytes": ("512Gi", 512 * 1024**3),
    "decision.fail_closed": (" true ", True),
    "namespaces": ("ml, inference,,", ["ml", "inference"]),
    "excluded_namespaces": ("kube-system,monitoring", ["kube-system", "monitoring"]),
    "operator_namespace": ("ops", "ops"),
    "model_configs_namespace": ("model-configs", "model-configs"),
    "model_configs_trusted_namespace": ("trusted", "trusted"),
    "model_configs_ttl_seconds": ("60", 60.0),
    "hub_fetch": ("yes", True),
    "hub_endpoint": ("https://hf-mirror.internal", "https://hf-mirror.internal"),
    "hub_token_file": ("/var/run/token", "/var/run/token"),
    "hub_timeout_seconds": ("5", 5.0),
    "lookup_timeout_seconds": ("0.5", 0.5),
    "cert_dir": ("/certs", "/certs"),
    "cert_mode": ("cert-manager", "cert-manager"),
    "webhook_host": ("127.0.0.1", "127.0.0.1"),
    "webhook_port": ("19443", 19443),
    "metrics_port": ("19080", 19080),
    "max_request_bytes": ("16Mi", 16 * 1024**2),
    "service_name": ("sizer-webhook", "sizer-webhook"),
    "webhook_url": ("https://127.0.0.1:9443", "https://127.0.0.1:9443"),
    "patch_existing": ("1", True),
}


def field_value(settings: OperatorSettings, field: str) -> object:
    obj: object = settings
    for part in field.split("."):
        obj = getattr(obj, part)
    return obj


def test_every_field_has_variables_and_a_sample():
    fields = set(OperatorSettings.env_names().values())
    expected = {f"decision.{f}" for f in POLICY_FIELDS} | (set(OperatorSettings.model_fields) - {"decision"})
    assert fields == expected == set(SAMPLES)
    assert sorted(DECISION_ENV.values()) == sorted(POLICY_FIELDS)


@pytest.mark.parametrize("name", sorted(OperatorSettings.env_names()))
def test_each_variable_sets_its_field(name: str):
    field = OperatorSettings.env_names()[name]
    text, value = SAMPLES[field]
    default = field_value(OperatorSettings.from_env({}), field)
    assert value != default
    assert field_value(OperatorSettings.from_env({name: text}), field) == value
    # "" is unset, as it was before pydantic-settings (the chart writes "" for an empty value)
    assert field_value(OperatorSettings.from_env({name: ""}), field) == default


def _deployment_env_names(docs: list) -> set[str]:
    names = set()
    for d in docs:
        if d and d.get("kind") == "Deployment":
            for c in d["spec"]["template"]["spec"]["containers"]:
                names |= {e["name"] for e in c.get("env", [])}
    return names


def test_manifests_and_dockerfile_set_only_variables_that_are_read():
    """manifests/install.yaml (the chart's default render) and the image's ENV: each variable is
    one OperatorSettings reads (tests/helm/test_render.py checks every chart render too)."""
    known = set(OperatorSettings.env_names())
    docs = list(yaml.safe_load_all((REPO / "manifests" / "install.yaml").read_text()))
    names = _deployment_env_names(docs)
    assert {"VLLM_SIZER_MODE", "VLLM_SIZER_MAX_REQUEST_SIZE", "POD_NAMESPACE"} <= names
    assert names - known == set()
    image = set(re.findall(r"\b(VLLM_SIZER_[A-Z_]+)=", (REPO / "Dockerfile").read_text()))
    assert image and image - known == set()


def test_the_chart_templates_name_only_variables_that_are_read():
    """Without helm: every `- name: X` in the templates' env lists, every branch included."""
    known = set(OperatorSettings.env_names())
    text = "".join(p.read_text() for p in (REPO / "helm" / "vllm-sizer" / "templates").iterdir()
                   if p.suffix in (".yaml", ".tpl"))
    names = set(re.findall(r"- name: ((?:VLLM_SIZER|HF|POD)_[A-Z_]+)\b", text))
    assert len(names) >= 20
    assert names - known == set()
    # and every setting has a chart variable; the two not in the chart are synonyms of names
    # that are (HF_ENDPOINT, VLLM_SIZER_MAX_REQUEST_SIZE)
    assert known - names == {"VLLM_SIZER_HUB_ENDPOINT", "VLLM_SIZER_MAX_REQUEST_BYTES"}


def test_operator_namespace_falls_back_to_the_pod_namespace():
    assert OperatorSettings.from_env({"POD_NAMESPACE": "p"}).operator_namespace == "p"
    both = {"VLLM_SIZER_OPERATOR_NAMESPACE": "ops", "POD_NAMESPACE": "p"}
    assert OperatorSettings.from_env(both).operator_namespace == "ops"
    unset = {"VLLM_SIZER_OPERATOR_NAMESPACE": "", "POD_NAMESPACE": "p"}
    assert OperatorSettings.from_env(unset).operator_namespace == "p"


def test_hub_endpoint_reads_huggingface_hubs_variable():
    assert OperatorSettings.from_env({"HF_ENDPOINT": "https://a"}).hub_endpoint == "https://a"
    both = {"HF_ENDPOINT": "https://a", "VLLM_SIZER_HUB_ENDPOINT": "https://b"}
    assert OperatorSettings.from_env(both).hub_endpoint == "https://b"


def test_lists_split_on_commas():
    assert OperatorSettings.from_env({"VLLM_SIZER_NAMESPACES": " , "}).namespaces == []
    s = OperatorSettings.from_env({"VLLM_SIZER_EXCLUDED_NAMESPACES": "a,b"})
    assert s.excluded_namespaces == ["a", "b"]
    assert OperatorSettings.from_env({}).excluded_namespaces == ["kube-system"]


@pytest.mark.parametrize("env,names", [
    ({"VLLM_SIZER_HEADROOM": "abc"}, ["VLLM_SIZER_HEADROOM='abc'"]),
    ({"VLLM_SIZER_HEADROOM": "2000%"}, ["VLLM_SIZER_HEADROOM='2000%'"]),
    ({"VLLM_SIZER_ROUNDING": "12xyz"}, ["VLLM_SIZER_ROUNDING='12xyz'", "not a quantity"]),
    ({"VLLM_SIZER_ROUNDING": "0"}, ["VLLM_SIZER_ROUNDING='0'", "at least 1 byte"]),
    ({"VLLM_SIZER_LARGEST_NODE_MEMORY": "-1Gi"}, ["VLLM_SIZER_LARGEST_NODE_MEMORY='-1Gi'"]),
    ({"VLLM_SIZER_MAX_REQUEST_SIZE": "lots"}, ["VLLM_SIZER_MAX_REQUEST_SIZE='lots'"]),
    # what a kubelet Service link would put there (the chart turns them off)
    ({"VLLM_SIZER_WEBHOOK_PORT": "tcp://10.0.0.1:443"}, ["VLLM_SIZER_WEBHOOK_PORT='tcp://10.0.0.1:443'"]),
    ({"VLLM_SIZER_MODE": "loud", "VLLM_SIZER_HUB_FETCH": "banana"},
     ["VLLM_SIZER_MODE='loud'", "VLLM_SIZER_HUB_FETCH='banana'"]),
    ({"VLLM_SIZER_CERT_MODE": "acme"}, ["VLLM_SIZER_CERT_MODE='acme'"]),
])
def test_an_invalid_value_names_its_variable(env, names):
    with pytest.raises(SettingsError) as exc:
        OperatorSettings.from_env(env)
    for name in names:
        assert name in str(exc.value)


def test_unknown_prefixed_variables_are_ignored_with_a_warning(caplog):
    env = {"VLLM_SIZER_HEADROM": "0.5", "VLLM_SIZER_MODE": "warn", "PATH": "/bin", "HOME": "/"}
    with caplog.at_level(logging.WARNING, logger="vllm_sizer.operator.settings"):
        s = OperatorSettings.from_env(env)
    assert s.decision.mode == "warn" and s.decision.headroom == PolicySettings().headroom
    assert [r.getMessage() for r in caplog.records] == ["ignored, not vllm-sizer settings: VLLM_SIZER_HEADROM"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="vllm_sizer.operator.settings"):
        OperatorSettings.from_env({"VLLM_SIZER_MODE": "warn", "PATH": "/bin"})
    assert caplog.records == []


def test_from_env_reads_its_mapping_never_os_environ(monkeypatch):
    monkeypatch.setenv("VLLM_SIZER_MODE", "warn")
    monkeypatch.setenv("VLLM_SIZER_WEBHOOK_PORT", "1234")
    assert OperatorSettings.from_env({}).decision.mode == "mutate"
    assert OperatorSettings.from_env({}).webhook_port == 9443
    # os.environ is what the constructor and from_env() read by default
    assert OperatorSettings().decision.mode == "warn"
    assert OperatorSettings.from_env().webhook_port == 1234
    # keyword arguments win over the environment, flat or as the decision
    assert OperatorSettings(mode="enforce").decision.mode == "enforce"
    assert OperatorSettings(decision=PolicySettings(mode="off")).decision.mode == "off"
    assert OperatorSettings(webhook_port=5).webhook_port == 5
    # a flat keyword merges into the environment's decision, it does not replace it
    monkeypatch.setenv("VLLM_SIZER_HEADROOM", "30%")
    s = OperatorSettings(mode="enforce")
    assert (s.decision.mode, s.decision.headroom) == ("enforce", 0.3)


def test_keyword_arguments_are_checked():
    with pytest.raises(ValueError, match="bogus"):
        OperatorSettings(bogus=1)
    assert OperatorSettings(max_request_bytes="1Mi").max_request_bytes == 1024**2
    assert OperatorSettings(rounding_bytes="1Gi").decision.rounding_bytes == 1024**3


def test_run_says_which_variable_is_invalid(monkeypatch, capsys):
    from vllm_sizer.cli.main import main

    monkeypatch.setenv("VLLM_SIZER_ROUNDING", "12xyz")
    assert main(["run", "--role", "webhook"]) == 2
    err = capsys.readouterr().err
    assert "invalid settings: VLLM_SIZER_ROUNDING='12xyz'" in err and "not a quantity" in err
