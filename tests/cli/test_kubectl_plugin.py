"""kubectl plugin: `kubectl vllm-sizer ...` through a real kubectl, and the krew manifest with an
archive whose sha256 and shim are checked."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="no kubectl on PATH")


def plugin_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a kubectl-vllm_sizer that runs this checkout's CLI with this interpreter (an
    installed console script would run whatever package its venv holds)."""
    shim = tmp_path / "bin" / "kubectl-vllm_sizer"
    shim.parent.mkdir()
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m vllm_sizer.cli.main \"$@\"\n")
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{shim.parent}:{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT), "KUBECONFIG": str(tmp_path / "none")}


def test_console_script_is_declared():
    import tomllib
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-vllm_sizer"] == scripts["vllm-sizer"] == "vllm_sizer.cli.main:main"


@needs_kubectl
def test_kubectl_finds_and_runs_the_plugin(tmp_path):
    env = plugin_env(tmp_path)
    listed = subprocess.run([KUBECTL, "plugin", "list"], capture_output=True, text=True, env=env)
    assert "kubectl-vllm_sizer" in listed.stdout
    out = subprocess.run([KUBECTL, "vllm-sizer", "estimate", "--device", "cpu", "--",
                          "vllm", "serve", "Qwen/Qwen3-0.6B"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "TOTAL (host memory)" in out.stdout
    helped = subprocess.run([KUBECTL, "vllm-sizer", "audit", "--help"], capture_output=True,
                            text=True, env=env, timeout=60)
    assert helped.returncode == 0 and "-n NAMESPACE" in helped.stdout and "--context" in helped.stdout


def test_krew_manifest_matches_its_archive_and_the_shim_runs(tmp_path):
    check = subprocess.run([sys.executable, str(ROOT / "scripts/build_krew_plugin.py"), "--check"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    manifest = yaml.safe_load((ROOT / "plugins/krew/vllm-sizer.yaml").read_text())
    assert manifest["kind"] == "Plugin" and manifest["metadata"]["name"] == "vllm-sizer"
    (platform,) = manifest["spec"]["platforms"]
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_krew_plugin
    finally:
        sys.path.pop(0)
    data = build_krew_plugin.archive_bytes()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = tar.getnames()
        assert platform["bin"] in names
        assert {f["from"] for f in platform["files"]} <= set(names)
        tar.extractall(tmp_path / "x")
    shim = tmp_path / "x" / platform["bin"]
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out = subprocess.run(["sh", str(shim), "estimate", "--device", "cpu", "--", "vllm", "serve",
                          "Qwen/Qwen3-0.6B"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "TOTAL (host memory)" in out.stdout
