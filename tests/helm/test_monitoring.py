"""The chart's Grafana dashboard and PrometheusRule: they render, the rules pass promtool (check
and unit tests with input series), and every metric they name is exported by the operator."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from .conftest import by_kind, one, render_objects, requires_helm

pytestmark = requires_helm
ON = {"monitoring": {"dashboard": {"enabled": True}, "prometheusRule": {"enabled": True}}}
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package prometheus; .ci/run installs it)")
METRIC = re.compile(r"\b(vllm_sizer_[a-z_]+)")


def exported_metric_names() -> set[str]:
    from prometheus_client import REGISTRY

    import vllm_sizer.operator.metrics  # noqa: F401 - registers the collectors

    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    names = set()
    for family in REGISTRY.collect():  # a labelled counter has no sample until first used
        names.add(family.name)
        names.update(family.name + s for s in suffixes.get(family.type, ()))
    return names


def rules_spec(values=ON) -> dict:
    return one(render_objects(values), "PrometheusRule")["spec"]


def dashboard(values=ON) -> dict:
    cm = one(render_objects(values), "ConfigMap", "vllm-sizer-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    return json.loads(cm["data"]["vllm-sizer.json"])


def test_off_by_default():
    objs = render_objects({})
    assert not by_kind(objs, "PrometheusRule")
    assert not [o for o in by_kind(objs, "ConfigMap") if o["metadata"]["name"].endswith("dashboard")]


def test_dashboard_loads_and_is_well_formed():
    d = dashboard()
    assert d["uid"] == "vllm-sizer" and isinstance(d["schemaVersion"], int)
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)) >= 6
    names = {v["name"] for v in d["templating"]["list"]}
    for p in d["panels"]:
        assert {"x", "y", "w", "h"} <= set(p["gridPos"]) and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        assert p["targets"] and all(t["expr"] and t["refId"] for t in p["targets"])
        for var in re.findall(r"\$\{?(\w+)", json.dumps(p)):
            assert var in names, f"panel {p['title']!r} uses an undefined variable ${var}"
    titles = " ".join(p["title"].lower() for p in d["panels"])
    for topic in ("verdict", "kind", "latency", "sized", "oomkill", "internal errors"):
        assert topic in titles


def test_every_metric_named_is_exported():
    exported = exported_metric_names()
    exprs = [t["expr"] for p in dashboard()["panels"] for t in p["targets"]]
    exprs += [r["expr"] for g in rules_spec()["groups"] for r in g["rules"]]
    named = {m for e in exprs for m in METRIC.findall(e)}
    assert named and named <= exported, sorted(named - exported)


def _rules_file(tmp_path: Path, annotations: bool = True) -> Path:
    groups = rules_spec()["groups"]
    if not annotations:  # the unit tests compare labels; annotations are checked by `check`
        for g in groups:
            for r in g["rules"]:
                r.pop("annotations", None)
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    return path


@needs_promtool
def test_promtool_accepts_the_rules(tmp_path):
    out = subprocess.run([PROMTOOL, "check", "rules", str(_rules_file(tmp_path))],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "4 rules found" in out.stdout


@needs_promtool
def test_promtool_unit_tests_fire_each_alert(tmp_path):
    rules = _rules_file(tmp_path, annotations=False)
    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": 'vllm_sizer_oomkills_total{namespace="llm",kind="Deployment"}',
                 "values": "0 0 1 1 1"},
                {"series": 'vllm_sizer_internal_errors_total{route="mutate"}', "values": "0 0 0 2 2"},
                {"series": 'vllm_sizer_estimate_failures_total{reason="unknown-model"}',
                 "values": "0+1x90"},
                {"series": 'vllm_sizer_admission_reviews_total{route="validate",verdict="allow",kind="Deployment"}',
                 "values": "0+2x90"},
                {"series": 'vllm_sizer_admission_review_seconds_bucket{route="mutate",le="0.5"}',
                 "values": "0+1x90"},
                {"series": 'vllm_sizer_admission_review_seconds_bucket{route="mutate",le="1"}',
                 "values": "0+10x90"},
                {"series": 'vllm_sizer_admission_review_seconds_bucket{route="mutate",le="+Inf"}',
                 "values": "0+10x90"},
            ],
            "alert_rule_test": [
                {"eval_time": "4m", "alertname": "VllmSizedPodOOMKilled",
                 "exp_alerts": [{"exp_labels": {"severity": "warning", "namespace": "llm",
                                                "kind": "Deployment"}}]},
                {"eval_time": "1m", "alertname": "VllmSizedPodOOMKilled", "exp_alerts": []},
                {"eval_time": "4m", "alertname": "VllmSizerWebhookFailingOpen",
                 "exp_alerts": [{"exp_labels": {"severity": "warning", "route": "mutate"}}]},
                {"eval_time": "80m", "alertname": "VllmSizerCannotSize",
                 "exp_alerts": [{"exp_labels": {"severity": "info"}}]},
                {"eval_time": "10m", "alertname": "VllmSizerCannotSize", "exp_alerts": []},
                {"eval_time": "60m", "alertname": "VllmSizerWebhookSlow",
                 "exp_alerts": [{"exp_labels": {"severity": "warning"}}]},
            ],
        }],
    }
    tests_file = tmp_path / "tests.yaml"
    tests_file.write_text(yaml.safe_dump(tests))
    out = subprocess.run([PROMTOOL, "test", "rules", str(tests_file)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout + out.stderr
