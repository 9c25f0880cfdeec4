"""`helm lint --strict` on the chart (Helm's Go SDK through helm-python-sdk)."""

from __future__ import annotations

import pytest

from .conftest import MATRIX, requires_helm, rm

pytestmark = requires_helm

INFO = 1  # helm lint severities: 1 info, 2 warning, 3 error


@pytest.mark.parametrize("case", ["defaults", "cert-manager", "existing-secret", "enforce",
                                  "metrics-servicemonitor"])
@pytest.mark.parametrize("kube_version", ["v1.30.0", "v1.37.0"])
def test_lint_strict_clean(case: str, kube_version: str) -> None:
    import helm_python

    report = helm_python.lint(str(rm.CHART_DIR), MATRIX[case] or None, strict=True,
                              namespace=rm.NAMESPACE, kube_version=kube_version)
    assert report["total_charts_linted"] == 1
    assert report["errors"] == []
    problems = [m for m in report["messages"] if m["severity"] > INFO]
    assert problems == []
    # Only the "icon is recommended" note is accepted (the project has no icon URL).
    assert all("icon" in m["error"] for m in report["messages"]), report["messages"]


def test_chart_metadata() -> None:
    import helm_python

    with helm_python.Chart.load(str(rm.CHART_DIR)) as chart:
        meta = chart.metadata
        assert meta["apiVersion"] == "v2" and meta["name"] == "vllm-sizer"
        assert meta["kubeVersion"].startswith(">=1.30")
        assert chart.schema is not None
