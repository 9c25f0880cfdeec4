"""The chart's two webhook configurations equal what vllm_sizer.operator.webhook.configurations
builds from the same settings (the settings read back from the chart's own environment), field
by field: rules, namespaceSelector, objectSelector, matchConditions, clientConfig paths, policies.
So `vllm-sizer run --dev`, the Python builder, the chart and manifests/ cannot drift apart."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from .conftest import MATRIX, one, render_objects, requires_helm, rm

pytestmark = requires_helm

configurations = pytest.importorskip("vllm_sizer.operator.webhook.configurations")


def _settings_from_chart(objs: list[dict[str, Any]]):
    from vllm_sizer.operator.settings import OperatorSettings

    dep = one(objs, "Deployment", "vllm-sizer-webhook")
    env = {e["name"]: e["value"] for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]
           if "value" in e}
    env["POD_NAMESPACE"] = dep["metadata"]["namespace"]
    return OperatorSettings.from_env(env)


# Cases the Python builder can express (it has no extra namespaceSelector terms).
CASES = ["defaults", "cert-manager", "existing-secret", "enforce", "metrics-servicemonitor",
         "no-controller"]
CASES_EXTRA = {
    "namespaces": {"namespaces": ["ml", "team-a"], "excludedNamespaces": ["monitoring"]},
    "object-selector": {"objectSelector": {"matchLabels": {"vllm-sizer.io/enabled": "true"}},
                        "timeoutSeconds": 2},
}


@pytest.mark.parametrize("case", CASES + sorted(CASES_EXTRA))
def test_chart_webhooks_equal_python_builder(case: str) -> None:
    values = MATRIX[case] if case in MATRIX else CASES_EXTRA[case]
    objs = render_objects(values)
    settings = _settings_from_chart(objs)
    mutating, validating = configurations.webhook_configurations(
        settings,
        failure_policy=values.get("failurePolicy", "Ignore"),
        object_selector=values.get("objectSelector") or None,
        with_match_conditions=values.get("matchConditions", True),
        timeout_seconds=values.get("timeoutSeconds", 5),
    )
    for built in (mutating, validating):
        rendered = one(objs, built["kind"])
        assert rendered["apiVersion"] == built["apiVersion"]
        assert rendered["metadata"]["name"] == built["metadata"]["name"]
        for k, v in built["metadata"]["labels"].items():
            assert rendered["metadata"]["labels"][k] == v
        assert len(rendered["webhooks"]) == len(built["webhooks"]) == 1
        got, want = rendered["webhooks"][0], built["webhooks"][0]
        # Field by field first, for a readable failure; then the whole webhook.
        for field in ("name", "rules", "matchConditions", "namespaceSelector", "objectSelector",
                      "failurePolicy", "matchPolicy", "sideEffects", "timeoutSeconds",
                      "admissionReviewVersions", "reinvocationPolicy"):
            assert got.get(field) == want.get(field), f"{built['kind']}: {field} differs"
        assert got["clientConfig"]["service"] == want["clientConfig"]["service"]
        got_cc = {k: v for k, v in got["clientConfig"].items() if k != "caBundle"}
        assert got_cc == want["clientConfig"]
        assert {k: v for k, v in got.items() if k != "clientConfig"} == \
            {k: v for k, v in want.items() if k != "clientConfig"}


def test_paths_are_the_servers_routes() -> None:
    from vllm_sizer.operator.settings import MUTATE_PATH, VALIDATE_PATH

    objs = render_objects()
    assert one(objs, "MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["service"]["path"] == MUTATE_PATH
    assert one(objs, "ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["service"]["path"] == VALIDATE_PATH


def test_match_conditions_file_is_generated_from_the_builder() -> None:
    text = rm.MATCH_CONDITIONS_FILE.read_text()
    assert text == rm.match_conditions_yaml(), (
        "helm/vllm-sizer/files/match-conditions.yaml is stale: run python scripts/render-manifests.py")
    assert yaml.safe_load(text) == configurations.match_conditions()
