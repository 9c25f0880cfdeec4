"""Contradictory or invalid values stop the render with a message naming the values involved:
values.schema.json for types and ranges, `fail` in templates/validate.yaml for combinations
(and again for the schema's own checks, for `--skip-schema-validation` users)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import deep_merge, requires_helm, rm

pytestmark = requires_helm


def _render_error(values: dict, chart_dir: Path | None = None) -> str:
    import helm_python

    with helm_python.Chart.load(str(chart_dir or rm.CHART_DIR)) as chart:
        with pytest.raises(helm_python.HelmError) as info:
            chart.render(values, name=rm.RELEASE_NAME, namespace=rm.NAMESPACE, is_install=True)
    return str(info.value)


@pytest.fixture(scope="module")
def chart_without_schema(tmp_path_factory) -> Path:
    """A copy of the chart without values.schema.json: the template checks alone."""
    dst = tmp_path_factory.mktemp("chart") / "vllm-sizer"
    shutil.copytree(rm.CHART_DIR, dst)
    (dst / "values.schema.json").unlink()
    return dst


CONTRADICTIONS = [
    ({"certManager": {"enabled": True}, "existingSecret": "tls"},
     "certManager.enabled and existingSecret are mutually exclusive"),
    ({"failurePolicy": "Fail", "webhook": {"replicas": 1, "pdb": {"enabled": False}}},
     "failurePolicy Fail with webhook.replicas 1"),
    ({"webhook": {"replicas": 1}}, "webhook.pdb.minAvailable (1) must be below webhook.replicas (1)"),
    ({"namespaces": ["vllm-sizer"]}, "namespaces lists the release namespace"),
    ({"namespaces": ["ml"], "excludedNamespaces": ["ml"]}, 'namespace "ml" is in both'),
    ({"metrics": {"enabled": False, "serviceMonitor": {"enabled": True}}},
     "metrics.serviceMonitor.enabled needs metrics.enabled"),
    ({"patchExisting": True, "mode": "warn"}, "patchExisting only applies in mode mutate"),
    ({"patchExisting": True, "controller": {"enabled": False}}, "patchExisting needs controller.enabled"),
    ({"caBundle": "QUJD"}, "caBundle is only used with existingSecret"),
    ({"hub": {"tokenSecret": {"name": "hf"}}}, "hub.tokenSecret.name is set but hub.enabled is false"),
    ({"certManager": {"issuerRef": {"name": "x"}}}, "certManager.issuerRef is set but certManager.enabled is false"),
]


@pytest.mark.parametrize("values,message", CONTRADICTIONS, ids=[m[:40] for _v, m in CONTRADICTIONS])
def test_contradictions_fail_with_a_clear_message(values: dict, message: str) -> None:
    err = _render_error(values)
    assert message in err, err
    assert "vllm-sizer:" in err


SCHEMA_ERRORS = [
    ({"mode": "bogus"}, "/mode"),
    ({"failurePolicy": "Sometimes"}, "/failurePolicy"),
    ({"timeoutSeconds": 31}, "/timeoutSeconds"),
    ({"timeoutSeconds": 0}, "/timeoutSeconds"),
    ({"headroom": "lots"}, "/headroom"),
    ({"headroom": 11}, "/headroom"),
    ({"rounding": "256 MB"}, "/rounding"),
    ({"webhook": {"replicas": 0}}, "/webhook/replicas"),
    ({"modeTypo": "warn"}, "modeTypo"),
    ({"namespaces": ["Not_A_Namespace"]}, "/namespaces/0"),
    ({"certManager": {"enabled": True, "issuerRef": {"name": "x", "kind": "Bogus"}}}, "/certManager/issuerRef/kind"),
    ({"objectSelector": {"matchExpressions": [{"key": "a", "operator": "Maybe"}]}}, "/objectSelector"),
    ({"image": {"digest": "latest"}}, "/image/digest"),
    ({"webhook": {"pdb": {"minAvailable": "50%"}}}, "/webhook/pdb/minAvailable"),
]


@pytest.mark.parametrize("values,where", SCHEMA_ERRORS, ids=[w for _v, w in SCHEMA_ERRORS])
def test_schema_rejects_invalid_values(values: dict, where: str) -> None:
    err = _render_error(values)
    assert "schema" in err and where in err, err


TEMPLATE_ONLY = [
    ({"mode": "bogus"}, 'mode "bogus" is not one of mutate, enforce, warn, off'),
    ({"failurePolicy": "Sometimes"}, 'failurePolicy "Sometimes" must be Ignore or Fail'),
    ({"timeoutSeconds": 60}, "timeoutSeconds 60 must be between 1 and 30"),
    ({"webhook": {"replicas": 0, "pdb": {"enabled": False}}}, "webhook.replicas must be at least 1"),
]


@pytest.mark.parametrize("values,message", TEMPLATE_ONLY, ids=[m[:30] for _v, m in TEMPLATE_ONLY])
def test_templates_check_even_without_the_schema(values: dict, message: str,
                                                 chart_without_schema: Path) -> None:
    err = _render_error(values, chart_without_schema)
    assert message in err, err


def test_valid_edge_values_render() -> None:
    ok = [{"headroom": "0%"}, {"headroom": 0}, {"headroom": "15.5%"}, {"timeoutSeconds": 30},
          {"failurePolicy": "Fail", "webhook": {"replicas": 2}},
          {"webhook": {"replicas": 1, "pdb": {"enabled": False}}},
          {"mode": "off"}, {"largestNodeMemory": "1Ti"}, {"rounding": "1Gi"},
          {"patchExisting": True}, {"existingSecret": "tls", "caBundle": "QUJD"}]
    for values in ok:
        assert rm.objects(values), values


def test_schema_documents_every_default_value() -> None:
    """values.yaml and values.schema.json list the same keys (the schema forbids unknown ones)."""
    import json

    import yaml

    values = yaml.safe_load((rm.CHART_DIR / "values.yaml").read_text())
    schema = json.loads((rm.CHART_DIR / "values.schema.json").read_text())

    def walk(v: dict, s: dict, path: str) -> None:
        props = s.get("properties", {})
        for k, sub in v.items():
            assert k in props, f"{path}{k} is in values.yaml but not in values.schema.json"
            if isinstance(sub, dict) and sub and "properties" in props[k] \
                    and props[k].get("additionalProperties") is False and k != "resources":
                walk(sub, props[k], f"{path}{k}.")
        for k in props:
            if k != "global":
                assert k in v, f"{path}{k} is in values.schema.json but not in values.yaml"

    walk(values, schema, "")
    assert deep_merge({}, values) == values
