"""Render a published chart from a repository snapshot, like `helm template RELEASE REPO@COMMIT:CHART -f VALUES`.

Used for the `source: helm` entries of tests/data/published/index.yaml (their `render` field is the
command). The chart and values are read with `git archive` / `git show` from the snapshot under
/work/.mirror/OWNER+NAME/repo; `--auto-deps` vendors the chart's file:// dependencies (and theirs)
from the same snapshot into charts/ (remote dependencies are not fetched: a disabled one is simply
absent). Rendering uses helm-python-sdk like scripts/render-manifests.py; the output keeps every
document in Helm's install order under a first line that says how it was rendered.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import yaml

MIRROR = Path("/work/.mirror")


def _render_manifests() -> Any:
    spec = importlib.util.spec_from_file_location(
        "render_manifests", Path(__file__).resolve().parent / "render-manifests.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _git_dir(repo: str) -> str:
    return str(MIRROR / repo.replace("/", "+") / "repo")


def extract(repo: str, commit: str, path: str, dest: str) -> Path:
    data = subprocess.run(
        ["git", f"--git-dir={_git_dir(repo)}", "archive", commit, path],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest)
    return Path(dest) / path


def show(repo: str, commit: str, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={_git_dir(repo)}", "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def file_deps(repo: str, commit: str, chart: str) -> list[str]:
    """The chart's file:// dependencies, as paths in the same snapshot."""
    meta = yaml.safe_load(show(repo, commit, chart + "/Chart.yaml")) or {}
    out = []
    for dep in meta.get("dependencies") or []:
        where = str(dep.get("repository", ""))
        if where.startswith("file://"):
            out.append(os.path.normpath(os.path.join(chart, where[len("file://") :])))
    return out


def merge(into: dict[str, Any], new: dict[str, Any]) -> None:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo")
    ap.add_argument("commit")
    ap.add_argument("chart")
    ap.add_argument(
        "-f", dest="values", action="append", default=[], help="values file in the snapshot"
    )
    ap.add_argument("--name", default="vllm")
    ap.add_argument("-n", dest="namespace", default="default")
    ap.add_argument("--auto-deps", action="store_true", help="vendor file:// dependencies")
    ap.add_argument("--note", default="")
    ap.add_argument("-o", dest="out", required=True)
    a = ap.parse_args(argv)

    import helm_python

    chart_dir = extract(a.repo, a.commit, a.chart, tempfile.mkdtemp())
    deps = file_deps(a.repo, a.commit, a.chart) if a.auto_deps else []
    for dep in dict.fromkeys(deps):
        dep_dir = extract(a.repo, a.commit, dep, tempfile.mkdtemp())
        for sub in file_deps(a.repo, a.commit, dep):
            sub_dir = extract(a.repo, a.commit, sub, tempfile.mkdtemp())
            (dep_dir / "charts").mkdir(exist_ok=True)
            shutil.copytree(sub_dir, dep_dir / "charts" / sub_dir.name, dirs_exist_ok=True)
        (chart_dir / "charts").mkdir(exist_ok=True)
        shutil.copytree(dep_dir, chart_dir / "charts" / dep_dir.name, dirs_exist_ok=True)
    values: dict[str, Any] = {}
    for v in a.values:
        merge(values, yaml.safe_load(show(a.repo, a.commit, v)) or {})
    with helm_python.Chart.load(str(chart_dir)) as chart:
        rendered = chart.render(values, name=a.name, namespace=a.namespace, is_install=True)
    docs = _render_manifests().documents(rendered)
    ns = f" -n {a.namespace}" if a.namespace != "default" else ""
    files = "".join(f" -f {v}" for v in a.values)
    cmd = f"helm template {a.name} {a.repo}@{a.commit}:{a.chart}{ns}{files}"
    text = "# " + cmd + (f" ({a.note})" if a.note else "") + " (rendered with Helm v4 SDK)\n"
    for path, _obj, body in docs:
        text += f"---\n# Source: {path}\n{body}\n"
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    print(cmd)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
