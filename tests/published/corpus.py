"""Measure vllm-sizer against the published-manifests corpus (tests/data/published/).

`evaluate()` runs the project's own reader (`read_workloads`, with the context `vllm-sizer check`
builds from the same file) and the offline admission decision (`review_object`, what `check`
prints) on every file of the index, and compares each vLLM server with the truth written in
index.yaml. Used by tests/published/test_published_corpus.py and scripts/corpus_report.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml

from vllm_sizer.cli.check import CONTEXT_KINDS, _document_chunks, build_context, load_documents
from vllm_sizer.estimator.settings import EngineSettings
from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings
from vllm_sizer.workloads import Workload, parse_quantity, read_workloads

__all__ = ["CONTEXT_KINDS", "EngineSettings", "build_context", "load_documents", "read_workloads"]

DATA = Path(__file__).resolve().parents[1] / "data" / "published"
INDEX = DATA / "index.yaml"

# dtype spellings vLLM treats as the same type (vllm/config: _STR_DTYPE_TO_TORCH_DTYPE).
_DTYPE_ALIASES = {"half": "float16", "float": "float32", "float16": "float16",
                  "bfloat16": "bfloat16", "float32": "float32", "auto": "auto"}


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=1)
def load_index() -> list[dict[str, Any]]:
    return yaml.load(INDEX.read_text(), Loader=_Loader)["files"]


def server_id(entry: dict[str, Any], server: dict[str, Any]) -> str:
    where = server.get("container") or "-"
    if server.get("container_path"):
        where += "@" + server["container_path"]
    return f"{entry['file']}::{server['kind']}/{server['name']}/{where}"


def _matches(w: Workload, kind: str, name: str, container: str | None,
             container_path: str | None = None) -> bool:
    if w.kind != kind or w.name != name:
        return False
    if container_path is not None and w.container_path != container_path:
        return False
    if container is None:
        return True
    # DynamoGraphDeployment services have no container name of their own: a reader may name
    # the Workload after the service or point container_path into it.
    return w.container == container or f"/{container}/" in (w.container_path + "/")


@dataclass
class ServerResult:
    entry: dict[str, Any]
    server: dict[str, Any]
    found: bool = False
    read_right: bool = False
    sized: bool = False
    problems: list[str] = field(default_factory=list)  # why not read right
    why_not_sized: str = ""

    @property
    def id(self) -> str:
        return server_id(self.entry, self.server)


@dataclass
class FileResult:
    entry: dict[str, Any]
    servers: list[ServerResult]
    touched: list[str]  # non-vLLM containers that got a Workload (even an unreadable one)
    patched: list[str]  # non-vLLM containers the admission decision would change
    unexpected: list[str] = field(default_factory=list)  # Workloads matching no entry of the index
    error: str | None = None  # the file could not be loaded the way `check` loads it


def _same(key: str, want: Any, got: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return bool(want) == bool(got) and got is not None
    if isinstance(want, float) or isinstance(got, float):
        return got is not None and math.isclose(float(want), float(got), rel_tol=1e-9)
    if key == "dtype":
        w, g = str(want).lower(), str(got).lower()
        return _DTYPE_ALIASES.get(w, w) == _DTYPE_ALIASES.get(g, g)
    if isinstance(want, str):
        return got is not None and str(got).lower() == want.lower()
    return want == got


def compare(server: dict[str, Any], w: Workload) -> list[str]:
    """What the reader got wrong for this server (empty: read right)."""
    problems: list[str] = []
    if w.settings is None:
        if server.get("model") is not None or server.get("flags") or "memory_limit" in server:
            problems.append("command line not read (settings None): "
                            + "; ".join(d.message for d in w.diagnostics)[:200])
        return problems
    want_model = server.get("model")
    if want_model is not None and (w.model or "").lower() != want_model.lower():
        problems.append(f"model {w.model!r}, want {want_model!r}")
    for key, want in (server.get("flags") or {}).items():
        got = w.device if key == "device" else getattr(w.settings, key, None)
        if not _same(key, want, got):
            problems.append(f"{key} {got!r}, want {want!r}")
    if "memory_limit" in server:
        want_b = parse_quantity(str(server["memory_limit"]))
        if w.limit_bytes != want_b:
            problems.append(f"limit_bytes {w.limit_bytes}, want {want_b} ({server['memory_limit']})")
    return problems


def _load_chunks(text: str) -> list[Any]:
    """Every document of the text, cut at its document starts as check cuts it
    (check._document_chunks): a broken document (a `{{HF_TOKEN}}` placeholder in a tutorial's
    Secret) is dropped and the documents after it are still read."""
    out: list[Any] = []
    for chunk in _document_chunks(text):
        try:
            out.extend(yaml.load_all(chunk, Loader=_Loader))
        except yaml.YAMLError:
            continue
    return out


@cache
def documents(file: str) -> tuple[dict[str, Any], ...]:
    """The objects of one corpus file, as `vllm-sizer check` loads them (check.load_documents:
    empty documents dropped, `List` kinds flattened), parsed with libyaml when it is there:
    the pure-Python parser takes most of the corpus's run time. test_check_cli_reads_the_corpus
    compares these with what check's own loader gives."""
    docs: list[dict[str, Any]] = []
    for doc in _load_chunks((DATA / file).read_text()):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise TypeError(f"{file}: a document is not a mapping")
        if doc.get("kind") == "List" or str(doc.get("kind", "")).endswith("List") and "items" in doc:
            docs.extend(i for i in doc.get("items") or [] if isinstance(i, dict))
        else:
            docs.append(doc)
    return tuple(docs)


def evaluate_file(entry: dict[str, Any]) -> FileResult:
    try:
        docs = list(documents(entry["file"]))
    except Exception as exc:  # noqa: BLE001 - reported, and asserted on by the tests
        return FileResult(entry, [ServerResult(entry, s, problems=[f"file not loadable: {exc}"])
                                  for s in entry["servers"]], [], [], error=str(exc))
    cluster = build_context(docs)
    workloads: list[Workload] = []
    decisions = []
    patch_paths: list[tuple[str, str, str]] = []  # (kind, name, JSON pointer) of every patch op
    for doc in docs:
        if doc.get("kind") in CONTEXT_KINDS:
            continue
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        ctx = cluster.read_context(meta.get("namespace"))
        workloads.extend(read_workloads(doc, ctx))
        review = review_object(doc, ctx, PolicySettings())
        decisions.extend(review.containers)
        patch_paths.extend((review.kind, review.name, op.get("path", "")) for op in review.patch)
    results = []
    for s in entry["servers"]:
        r = ServerResult(entry, s)
        args = (s["kind"], s["name"], s.get("container"), s.get("container_path"))
        cands = [w for w in workloads if _matches(w, *args)]
        if not cands:
            r.problems.append(f"not found ({s['kind']} {s['name']}"
                              f"{' container ' + s['container'] if s.get('container') else ''})")
            r.why_not_sized = "not found"
            results.append(r)
            continue
        r.found = True
        r.problems = compare(s, cands[0])
        r.read_right = not r.problems
        ds = [d for d in decisions if _matches(d.workload, *args)]
        d = ds[0] if ds else None
        cannot = [x for x in (d.warnings if d else []) if "cannot size" in x]
        r.sized = bool(d and d.report is not None and d.reason != "cannot-size" and not cannot)
        if not r.sized:
            r.why_not_sized = (cannot[0] if cannot else (d.message or d.reason) if d else
                               "no decision")[:200]
        results.append(r)
    touched, patched = [], []
    for c in entry.get("non_vllm_containers") or []:
        label = f"{c['kind']}/{c['name']}/{c['container']}"
        mine = [w for w in workloads if _matches(w, c["kind"], c["name"], c["container"])]
        if mine:
            touched.append(label)
        for w in mine:
            mine_paths = (w.resources_path + "/", w.container_path + "/")
            if any(k == w.kind and n == w.name and p.startswith(mine_paths) for k, n, p in patch_paths):
                patched.append(label)
                break
    listed = [(s["kind"], s["name"], s.get("container"), s.get("container_path")) for s in entry["servers"]]
    listed += [(c["kind"], c["name"], c["container"], None)
               for c in (entry.get("non_vllm_containers") or []) + (entry.get("unasserted_containers") or [])]
    unexpected = [f"{w.kind}/{w.name}/{w.container} at {w.container_path}" for w in workloads
                  if not any(_matches(w, *args) for args in listed)]
    return FileResult(entry, results, touched, patched, unexpected)


@lru_cache(maxsize=1)
def evaluate() -> tuple[FileResult, ...]:
    return tuple(evaluate_file(e) for e in load_index())


def server_results() -> list[ServerResult]:
    return [s for f in evaluate() for s in f.servers]


def fractions(first: int | None = None) -> dict[str, float]:
    """Over all vLLM servers of the corpus (or of the index's first `first` entries: the index
    is append-only, so they are the corpus as it was when a floor was measured): found, read
    right, sized (an estimate with no `cannot size`); sized_known_model over the servers whose
    model the manifest names."""
    rs = server_results()
    if first is not None:
        files = {e["file"] for e in load_index()[:first]}
        rs = [r for r in rs if r.entry["file"] in files]
    known = [r for r in rs if r.server.get("model") is not None]
    n = len(rs)
    return {"servers": n,
            "found": sum(r.found for r in rs) / n,
            "read_right": sum(r.read_right for r in rs) / n,
            "sized": sum(r.sized for r in rs) / n,
            "sized_known_model": sum(r.sized for r in known) / len(known)}


# Operator-made kinds: the pod template is the operator's, built from the custom resource.
PLATFORM_KINDS = {"VLLMRuntime", "Model", "Workspace", "InferenceSet", "DynamoGraphDeployment",
                  "StormService", "RayClusterFleet", "RayCluster", "RayService"}


def failure_class(r: ServerResult) -> str:
    """A short name for why a server is not read right (for the xfail reasons and the report)."""
    p = "; ".join(r.problems)
    kind = r.server["kind"]
    if not r.found:
        if kind in PLATFORM_KINDS:
            return f"platform kind {kind} not read"
        if kind == "LLMInferenceService":
            return "LLMInferenceService spec.worker not read"
        return "args only, and the image's ENTRYPOINT is not known"
    if "settings None" in p:
        return "vLLM command line hidden in an image script"
    classes = []
    for problem in r.problems:
        if problem.startswith("model "):
            c = "model by local path: the id is in an init container's download"
        elif problem.startswith("pipeline_parallel_size") and kind == "InferenceService":
            c = "KServe workerSpec parallelism not read"
        elif problem.startswith("device 'unknown'"):
            c = "device not evident to the reader"
        elif problem.startswith("device"):
            c = "device misread"
        elif "None, want" in problem:
            c = "flag not read (unique prefix, alias or spelling)"
        else:
            c = "misread"
        if c not in classes:
            classes.append(c)
    return "; ".join(classes)


def xfail_reason(r: ServerResult) -> str:
    reason = failure_class(r) + ": " + "; ".join(r.problems)
    return reason if len(reason) <= 160 else reason[:157] + "..."
