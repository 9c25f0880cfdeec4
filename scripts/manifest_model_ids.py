#!/usr/bin/env python3
"""Which model ids do published vLLM manifests serve, and which does vllm-sizer not resolve?

    python scripts/manifest_model_ids.py                      # the corpus index + /work/.mirror
    python scripts/manifest_model_ids.py --mirror DIR --repo OWNER+NAME ...
    python scripts/manifest_model_ids.py --unresolved --json  # machine-readable

Model ids are taken from the corpus truth (tests/data/published/index.yaml: `model` and
`model_as_written`) and from the YAML / Markdown / shell / Helm files of mirrored repositories
(bare git directories, read with `git ls-tree` / `git cat-file` at HEAD), where they follow
`vllm serve`, `--model`, `hf://`, a `MODEL_ID` / `MODEL_NAME` variable, `modelName:` /
`model:` / `url:` keys or a `- --model` list item. Each id counts once per file it appears in
(its frequency is the number of files). Every id is checked with the project's own resolver
(`vllm_sizer.estimator.names.resolve_model`, what `vllm-sizer estimate --model` and the reader
use); an id counts as resolved when a config comes back (any rule), refused when the resolver
refuses it (GGUF, ambiguous), unresolved otherwise.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vllm_sizer.estimator.names import resolve_model  # noqa: E402

INDEX = ROOT / "tests" / "data" / "published" / "index.yaml"
MIRROR = Path("/work/.mirror")
# Repositories whose manifests, charts and docs deploy vLLM (mirrored under /work/.mirror).
REPOS = (
    "GoogleCloudPlatform+kubernetes-engine-samples",
    "GoogleCloudPlatform+ai-on-gke",
    "InftyAI+llmaz",
    "substratusai+kubeai",
    "vllm-project+production-stack",
    "vllm-project+aibrix",
    "vllm-project+semantic-router",
    "vllm-project+tpu-inference",
    "kserve+kserve",
    "kserve+website",
    "llm-d+llm-d",
    "llm-d+llm-d-benchmark",
    "llm-d+llm-d-inference-scheduler",
    "llm-d-incubation+llm-d-infra",
    "llm-d-incubation+llm-d-modelservice",
    "ai-dynamo+dynamo",
    "kaito-project+kaito",
    "kubernetes-sigs+lws",
    "kubernetes-sigs+gateway-api-inference-extension",
    "kubernetes-sigs+inference-perf",
    "volcano-sh+kthena",
    "awslabs+ai-on-eks",
    "awslabs+data-on-eks",
    "aws-samples+eks-workshop-v2",
    "aws-samples+aws-do-eks",
    "Azure+AKS",
    "Azure-Samples+aks-ai",
    "rh-aiservices-bu+llm-on-openshift",
    "opea-project+GenAIInfra",
    "opea-project+GenAIExamples",
    "sgl-project+ome",
    "ray-project+kuberay",
    "opendatahub-io+kserve",
    "opendatahub-io+odh-model-controller",
    "envoyproxy+ai-gateway",
)
_EXTENSIONS = (".yaml", ".yml", ".md", ".sh", ".tpl", ".txt", ".env", "Dockerfile", ".mdx")
_ID = r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.+-]*"
_PATTERNS = [
    re.compile(r"vllm\s+serve\s+[\"']?(" + _ID + ")"),
    re.compile(r"--model(?:[= ]+|[\"']\s*,\s*[\"'])[\"']?(?:hf://)?(" + _ID + ")"),
    re.compile(r"-\s+[\"']?--model[\"']?\s*\n\s*-\s+[\"']?(?:hf://)?(" + _ID + ")"),
    re.compile(r"hf://(" + _ID + ")"),
    re.compile(
        r"(?:MODEL_ID|MODEL_NAME|MODEL_REPO|HF_MODEL_ID|MODEL)[\"']?\s*(?:=|:|\n\s*value:)\s*"
        r"[\"']?(" + _ID + ")"
    ),
    re.compile(r"\b(?:modelName|model_name|modelId|model_id|model)\s*:\s*[\"']?(" + _ID + ")"),
    re.compile(r"huggingface\.co/(" + _ID + ")"),
]
# Strings these patterns catch that are not Hub model ids.
_NOT_MODELS = re.compile(
    r"(^(models?|v1|api|data|mnt|tmp|root|home|workspace|app|opt|var|etc|usr|cache|hub|"
    r"docs|spaces|datasets|blob|tree|settings|kubernetes|gs|s3|http|https|pvc|oci|local|"
    r"your-org|org|user|repo|my-org|example|path|templates?|charts?|config|apis?)/)"
    r"|(\.(ya?ml|json|md|py|sh|txt|gguf|html|png|svg|tpl)$)|(/v\d+(alpha|beta)\d*$)"
)


def _clean(raw: str) -> str | None:
    mid = raw.strip().strip("\"'`,;)(]").rstrip(".")
    if "{{" in mid or "$" in mid or mid.count("/") != 1:
        return None
    if _NOT_MODELS.search(mid.lower()):
        return None
    org, name = mid.split("/")
    if not org or not name or len(name) < 3 or not re.search(r"\d|[a-z]", name.lower()):
        return None
    return mid


def ids_in_text(text: str) -> set[str]:
    out: set[str] = set()
    for pattern in _PATTERNS:
        for m in pattern.finditer(text):
            mid = _clean(m.group(1))
            if mid is not None:
                out.add(mid)
    return out


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True
    ).stdout


def mirror_ids(git_dir: Path) -> dict[str, set[str]]:
    """id → the files (at HEAD) that name it (files absent from a partial mirror skipped)."""
    listing = _git(git_dir, "ls-tree", "-r", "-l", "HEAD").decode(errors="replace")
    wanted: list[tuple[str, str]] = []
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        _, kind, sha, size = meta.split()
        if kind != "blob" or not path.endswith(_EXTENSIONS) or not size.isdigit():
            continue
        if int(size) <= 400_000:
            wanted.append((sha, path))
    found: dict[str, set[str]] = defaultdict(set)
    if not wanted:
        return found
    batch = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(sha + "\n" for sha, _ in wanted).encode(),
        check=True,
        capture_output=True,
    ).stdout
    pos = 0
    for _sha, path in wanted:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] != b"blob":  # "<sha> missing"
            continue
        size = int(header[2])
        text = batch[pos : pos + size].decode(errors="replace")
        pos += size + 1
        for mid in ids_in_text(text):
            found[mid].add(path)
    return found


def index_ids() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    files = yaml.safe_load(INDEX.read_text())["files"]
    for entry in files:
        for server in entry.get("servers", []):
            for key in ("model", "model_as_written"):
                value = server.get(key)
                if isinstance(value, str) and value:
                    found[value].add("corpus:" + entry["file"])
    return found


def status(model: str) -> tuple[str, str]:
    res = resolve_model(model)
    if res.config is not None:
        return "resolved", f"{res.rule}:{res.model_id}"
    if res.refusal:
        return "refused", res.rule
    return "unresolved", ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, default=MIRROR)
    ap.add_argument("--repo", action="append", help="OWNER+NAME under --mirror (default: REPOS)")
    ap.add_argument("--unresolved", action="store_true", help="list only ids not resolved")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--top", type=int, default=0)
    args = ap.parse_args()

    files: dict[str, set[str]] = defaultdict(set)
    repos_read = []
    for mid, where in index_ids().items():
        files[mid] |= where
    for repo in args.repo or REPOS:
        git_dir = args.mirror / repo / "repo"
        if not git_dir.is_dir():
            print(f"# not mirrored: {repo}", file=sys.stderr)
            continue
        repos_read.append(repo)
        for mid, paths in mirror_ids(git_dir).items():
            files[mid] |= {f"{repo}:{p}" for p in paths}
    # one id per Hub repo, case aside (the Hub is case-insensitive)
    merged: dict[str, set[str]] = defaultdict(set)
    spelling: dict[str, Counter[str]] = defaultdict(Counter)
    for mid, where in files.items():
        key = mid if mid.startswith(("/", ".")) or "://" in mid else mid.lower()
        merged[key] |= where
        spelling[key][mid] += len(where)
    rows = []
    for key, where in merged.items():
        mid = spelling[key].most_common(1)[0][0]
        st, how = status(mid)
        rows.append(
            {"id": mid, "files": len(where), "status": st, "how": how, "where": sorted(where)[:3]}
        )
    rows.sort(key=lambda r: (-r["files"], r["id"].lower()))
    counts = Counter(r["status"] for r in rows)
    summary = {
        "repos": len(repos_read),
        "ids": len(rows),
        "resolved": counts["resolved"],
        "refused": counts["refused"],
        "unresolved": counts["unresolved"],
        "id_files": sum(r["files"] for r in rows),
        "resolved_id_files": sum(r["files"] for r in rows if r["status"] == "resolved"),
    }
    shown = [r for r in rows if r["status"] != "resolved"] if args.unresolved else rows
    if args.top:
        shown = shown[: args.top]
    if args.json:
        print(json.dumps({"summary": summary, "rows": shown}, indent=1))
        return 0
    for r in shown:
        print(f"{r['files']:4d}  {r['status']:10s}  {r['id']:60s}  {r['how']}  {r['where'][0]}")
    print("#", json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
