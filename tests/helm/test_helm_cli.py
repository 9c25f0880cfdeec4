"""Optional cross-checks with real CLIs, when they are on this machine: a `helm` binary (Helm 3
or 4: `helm template` must give the same objects as the SDK render, `helm lint --strict` must
pass) and `kubectl kustomize manifests/` (same objects as manifests/install.yaml).

Set VLLM_SIZER_HELM / VLLM_SIZER_KUBECTL to a binary, or have them on PATH; otherwise these
tests skip. (Checked by hand with Helm v3.8.1 and kubectl v1.20 from a registry package.)"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml

from .conftest import MATRIX, REPO, render_objects, requires_helm, rm

HELM = os.environ.get("VLLM_SIZER_HELM") or shutil.which("helm")
KUBECTL = os.environ.get("VLLM_SIZER_KUBECTL") or shutil.which("kubectl")
needs_helm_cli = pytest.mark.skipif(not HELM, reason="no helm binary (set VLLM_SIZER_HELM or put helm on PATH)")
needs_kubectl = pytest.mark.skipif(not KUBECTL, reason="no kubectl binary (set VLLM_SIZER_KUBECTL or put kubectl on PATH)")


def _key(o: dict) -> tuple:
    return (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])


@requires_helm
@needs_helm_cli
@pytest.mark.parametrize("case", ["defaults", "cert-manager", "existing-secret", "enforce",
                                  "metrics-servicemonitor"])
def test_helm_cli_template_equals_sdk_render(case: str, tmp_path) -> None:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(MATRIX[case]))
    out = subprocess.run([HELM, "template", rm.RELEASE_NAME, str(rm.CHART_DIR), "--namespace",
                          rm.NAMESPACE, "--kube-version", "1.30.0", "-f", str(values_file)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    cli = sorted((d for d in yaml.safe_load_all(out.stdout) if d), key=_key)
    sdk = sorted(render_objects(MATRIX[case]), key=_key)
    assert [_key(o) for o in cli] == [_key(o) for o in sdk]
    assert cli == sdk


@requires_helm
@needs_helm_cli
def test_helm_cli_lint_and_fail() -> None:
    out = subprocess.run([HELM, "lint", "--strict", str(rm.CHART_DIR)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    out = subprocess.run([HELM, "template", "x", str(rm.CHART_DIR), "--kube-version", "1.30.0",
                          "--set", "certManager.enabled=true", "--set", "existingSecret=tls"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "mutually exclusive" in out.stderr


@needs_kubectl
def test_kubectl_kustomize_builds_the_install() -> None:
    out = subprocess.run([KUBECTL, "kustomize", str(REPO / "manifests")], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    built = sorted((d for d in yaml.safe_load_all(out.stdout) if d), key=_key)
    plain = sorted((d for d in yaml.safe_load_all((REPO / "manifests" / "install.yaml").read_text()) if d), key=_key)
    assert built == plain
