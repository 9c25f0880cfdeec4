"""The read-only ClusterRole audit needs: the chart's and manifests/audit-rbac.yaml grant exactly
RBAC_RULES, and nothing but get/list."""

from pathlib import Path

import yaml

from vllm_sizer.cli.audit import RBAC_RULES

ROOT = Path(__file__).parents[2]


def _norm(rules):
    return sorted((tuple(r["apiGroups"]), tuple(sorted(r["resources"])), tuple(sorted(r["verbs"])))
                  for r in rules)


def test_manifest_grants_exactly_the_audit_rules():
    role = yaml.safe_load((ROOT / "manifests/audit-rbac.yaml").read_text())
    assert role["kind"] == "ClusterRole" and _norm(role["rules"]) == _norm(RBAC_RULES)


def test_chart_audit_role_equals_the_rules():
    from tests.helm.conftest import HELM_SKIP_REASON, one, render_objects
    import pytest
    if HELM_SKIP_REASON:
        pytest.skip(HELM_SKIP_REASON)
    role = one(render_objects({}), "ClusterRole", "vllm-sizer-audit")
    assert _norm(role["rules"]) == _norm(RBAC_RULES)
    assert all(set(r["verbs"]) <= {"get", "list"} for r in role["rules"])
    names = [o["metadata"]["name"] for o in render_objects({"rbac": {"audit": False}})]
    assert "vllm-sizer-audit" not in names
