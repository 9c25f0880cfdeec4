"""The Dockerfile, read (no Docker engine here): the image the chart runs."""

from __future__ import annotations

import fnmatch
import json
import re

from .conftest import REPO

DOCKERFILE = (REPO / "Dockerfile").read_text()
INSTRUCTIONS = [line.strip() for line in re.sub(r"\\\n", " ", DOCKERFILE).splitlines()
                if line.strip() and not line.lstrip().startswith("#")]


def _last(op: str) -> str:
    found = [i for i in INSTRUCTIONS if i.split()[0].upper() == op]
    assert found, f"no {op} in the Dockerfile"
    return found[-1][len(op):].strip()


def test_base_image_and_stages() -> None:
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in INSTRUCTIONS
    froms = [i for i in INSTRUCTIONS if i.startswith("FROM ")]
    assert froms and all("${PYTHON_IMAGE}" in f for f in froms)


def test_runs_as_the_charts_non_root_user() -> None:
    assert _last("USER") == "65532:65532"
    assert "--uid 65532" in DOCKERFILE and "--gid 65532" in DOCKERFILE
    assert "runAsUser: 65532" in (REPO / "helm" / "vllm-sizer" / "templates" / "_helpers.tpl").read_text()


def test_entrypoint_and_default_role() -> None:
    assert json.loads(_last("ENTRYPOINT")) == ["vllm-sizer", "run"]
    assert json.loads(_last("CMD")) == ["--role", "webhook"]
    assert "EXPOSE 9443 8080" in INSTRUCTIONS


def test_installs_the_package_from_the_repo() -> None:
    # the image runs both roles: the package with its operator extra
    assert re.search(r"pip install [^\n]*\s'\.\[operator\]'(\s|$)", " ".join(INSTRUCTIONS))
    copies = [i for i in INSTRUCTIONS if i.startswith("COPY ") and "--from" not in i]
    copied = {p for c in copies for p in c.split()[1:-1]}
    assert {"pyproject.toml", "README.md", "vllm_sizer"} <= copied


def test_dockerignore_keeps_what_pip_install_needs() -> None:
    """Evaluate .dockerignore (last matching rule wins, `!` re-includes) for a few paths."""
    rules = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]

    def ignored(path: str) -> bool:
        result = False
        for rule in rules:
            neg = rule.startswith("!")
            pat = rule[1:] if neg else rule
            pat = pat.rstrip("/")
            parts = path.split("/")
            prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
            hit = any(fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p, pat.replace("**/", ""))
                      for p in prefixes) or (pat.startswith("**/") and any(
                          fnmatch.fnmatch(seg, pat[3:]) for seg in parts))
            if hit:
                result = not neg
        return result

    for kept in ("pyproject.toml", "README.md", "vllm_sizer/__init__.py",
                 "vllm_sizer/estimator/catalog/Qwen__Qwen3-0.6B.json"):
        assert not ignored(kept), kept
    for dropped in (".venv/bin/python", "calibration/x.csv", "tests/conftest.py", ".git/HEAD",
                    "vllm_sizer/__pycache__/x.pyc", "helm/vllm-sizer/Chart.yaml"):
        assert ignored(dropped), dropped
