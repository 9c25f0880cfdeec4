"""The static gates: CI (.ci/run) and pre-commit run the same ones (.ci/gates), before pytest,
and the rules they hold catch what they are meant to catch."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.util import find_spec
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
GATES = ROOT / ".ci" / "gates"


def _gate_names() -> list[str]:
    m = re.search(r"^ORDER=\((.*)\)$", GATES.read_text(), re.M)
    assert m, "ORDER=(...) not found in .ci/gates"
    return m.group(1).split()


def test_ci_runs_the_gates_before_pytest_and_stops_on_a_failure():
    run = (ROOT / ".ci" / "run").read_text()
    gates_at = run.index("bash .ci/gates")
    assert gates_at < run.index("python -m pytest")
    after = run[gates_at:]
    assert after.index("exit 1") < after.index("python -m pytest"), "a failed gate must stop CI"


def test_pre_commit_runs_each_gate_of_ci_locally():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = [h for repo in config["repos"] for h in repo["hooks"]]
    assert all(repo["repo"] == "local" for repo in config["repos"]), "no download at run time"
    assert [h["entry"] for h in hooks] == [f"bash .ci/gates {n}" for n in _gate_names()]
    assert all(h["language"] == "system" and h["pass_filenames"] is False for h in hooks)


def test_the_gate_tools_come_with_the_test_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=]", d)[0] for d in extras["test"]}
    assert {"ruff", "mypy", "types-PyYAML"} <= names


def test_an_unknown_gate_is_refused():
    out = subprocess.run(["bash", str(GATES), "no-such-gate"], capture_output=True, text=True)
    assert out.returncode == 2 and "unknown gate" in out.stderr


@pytest.mark.skipif(find_spec("ruff") is None, reason="ruff not installed (the test extra)")
def test_the_lint_gate_refuses_a_blind_except_without_its_reason(tmp_path):
    bad = tmp_path / "vllm_sizer_sample.py"
    bad.write_text("def f():\n    try:\n        return 1\n    except Exception:\n        return 0\n")
    config = ROOT / "pyproject.toml"
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--config", str(config), "--no-cache", str(bad)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and "BLE001" in out.stdout
    bad.write_text(bad.read_text().replace("Exception:", "Exception:  # noqa: BLE001 - a reason"))
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--config", str(config), "--no-cache", str(bad)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout
