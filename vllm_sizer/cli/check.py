"""`vllm-sizer check [FILE|DIR|-]... [-o text|json|yaml] [--mode M] [--headroom F]`:
the admission decision, offline, on manifests. Exit 0: nothing denied; 1: something denied;
2: unreadable input (a missing file, a file that is not UTF-8 YAML, a document that is not a
Kubernetes object or is beyond the YAML bounds): each is reported on stderr with its file and
document position, and every other document is still checked."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from ..policy.cluster import ClusterContext
from ..policy.messages import printable
from ..policy.review import ObjectDecision, review_object
from ..policy.settings import MODES, PolicySettings, parse_headroom
from ..workloads import limits, templates
from ..workloads.api_names import VALIDATING_WEBHOOK_NAME

CONTEXT_KINDS = {"LimitRange", "ServingRuntime", "ClusterServingRuntime"}


class InputError(Exception):
    pass


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="run the admission decision offline on manifests",
        description="Read Kubernetes manifests and decide as the webhook would.",
    )
    p.add_argument("paths", nargs="*", default=["-"], help="files, directories or - (stdin)")
    p.add_argument("-o", "--output", choices=["text", "json", "yaml"], default="text")
    p.add_argument("--mode", choices=list(MODES), default="mutate")
    p.add_argument("--headroom", default="0.10", help="fraction or percentage, e.g. 0.1 or 10%%")
    p.add_argument(
        "--trusted-namespace",
        default="vllm-sizer",
        metavar="NS",
        help="namespace whose model-config ConfigMaps apply to every namespace, as "
        "the operator's (default: vllm-sizer, the chart's namespace); each object "
        "also reads those of its own namespace",
    )
    p.set_defaults(func=run)


def _files(paths: Iterable[str], errors: list[str] | None = None) -> list[Path | None]:
    """Files to read; a path that does not exist is an error (raised, or added to `errors`)."""
    out: list[Path | None] = []
    for raw in paths:
        if raw == "-":
            out.append(None)
            continue
        p = Path(raw)
        try:
            if p.is_dir():
                out.extend(
                    sorted(
                        f
                        for f in p.rglob("*")
                        if f.suffix in (".yaml", ".yml", ".json") and f.is_file()
                    )
                )
                continue
            if p.is_file():
                out.append(p)
                continue
            problem = f"{raw}: no such file or directory"
        except OSError as exc:
            problem = f"{raw}: {exc}"
        if errors is None:
            raise InputError(problem)
        errors.append(problem)
    return out


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


def _read_text(f: Path | None) -> str:
    if f is None:
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    else:
        data = f.read_bytes()
    return data.decode("utf-8") if isinstance(data, bytes) else data


_DOCUMENT_START = re.compile(r"^---(?=[ \t]|$)", re.M)


def _document_chunks(text: str) -> list[str]:
    """The text cut at each `---` that starts a line (a document start: block scalars are
    indented, so one at column 0 always ends the document before), so that one broken document
    does not take the rest of the file with it. A chunk keeps its `---`."""
    cuts = [m.start() for m in _DOCUMENT_START.finditer(text)]
    if not cuts or cuts[0] != 0:
        cuts.insert(0, 0)
    return [
        text[a:b] for a, b in zip(cuts, [*cuts[1:], len(text)], strict=True) if text[a:b].strip()
    ]


def load_documents(
    paths: Iterable[str], errors: list[str] | None = None, notes: list[str] | None = None
) -> list[dict[str, Any]]:
    """The Kubernetes objects in the files (List kinds flattened, OpenShift Templates processed
    as `oc process` does with their parameters' defaults: workloads/templates.py). With
    `errors`, an unreadable file or document is described there (file and document number)
    and reading goes on with the next; without it the first problem raises InputError.
    `notes` gets what is read but worth saying (a mapping key written twice with two values)."""
    docs: list[dict[str, Any]] = []
    problems: list[str] = [] if errors is None else errors
    for f in _files(paths, problems):
        name = "<stdin>" if f is None else str(f)
        try:
            text = _read_text(f)
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{name}: {_first_line(exc)}")
            continue
        position = 0
        for chunk in _document_chunks(text):
            repeated: list[str] = []
            try:
                # a key written twice with two values: read as kubectl apply reads it (the
                # last), and said, as server-side apply refuses the file
                parsed = list(limits.load_all_yaml(chunk, repeated_keys=repeated))
            except (yaml.YAMLError, limits.LimitExceeded, RecursionError, ValueError) as exc:
                # one broken document: said with its position, the next ones are still read
                problems.append(f"{name}: document {position + 1}: {_first_line(exc)}")
                position += 1
                continue
            if notes is not None:
                notes.extend(f"{name}: document {position + 1}: {r}" for r in repeated)
            for doc in parsed:
                position += 1
                where = f"{name}: document {position}"
                if doc is None:
                    continue
                if not isinstance(doc, dict):
                    problems.append(f"{where}: not a mapping ({type(doc).__name__})")
                    continue
                kind = doc.get("kind")
                if not isinstance(kind, str) or not isinstance(doc.get("apiVersion"), str):
                    problems.append(f"{where}: not a Kubernetes object (no kind/apiVersion)")
                    continue
                if kind == "List" or (kind.endswith("List") and "items" in doc):
                    items = doc.get("items")
                    if not isinstance(items, list):
                        problems.append(f"{where}: {kind} items is not a list")
                        continue
                    for k, item in enumerate(items):
                        if isinstance(item, dict) and isinstance(item.get("kind"), str):
                            docs.append(item)
                        else:
                            problems.append(f"{where} item {k}: not a Kubernetes object")
                elif templates.is_template(doc):
                    # `oc process` with the parameters' defaults: its objects are read as
                    # objects (the webhook never receives a Template: the API server creates
                    # nothing from one)
                    processed = templates.process_template(doc)
                    problems.extend(f"{where}: {p}" for p in processed.problems)
                    docs.extend(processed.objects)
                else:
                    docs.append(doc)
        if errors is None and problems:
            raise InputError(problems[0])
    return docs


def build_context(
    docs: list[dict[str, Any]], trusted_namespace: str | None = None
) -> ClusterContext:
    """Context objects the cluster would use (runtimes, model-config ConfigMaps, LimitRanges),
    namespace by namespace, exactly as the webhook resolves them (policy/cluster.py)."""
    return ClusterContext.from_objects(docs, trusted_namespace)


def run(args: argparse.Namespace) -> int:
    try:
        headroom = parse_headroom(args.headroom)
    except ValueError as exc:
        print(f"vllm-sizer check: {exc}", file=sys.stderr)
        return 2
    errors: list[str] = []
    notes: list[str] = []  # said, without changing the exit code
    docs = load_documents(args.paths, errors, notes)
    cluster = build_context(docs, args.trusted_namespace or None)
    base = PolicySettings(mode=args.mode, headroom=headroom)
    results: list[tuple[dict[str, Any], ObjectDecision | None]] = []
    for doc in docs:
        if doc.get("kind") in CONTEXT_KINDS:
            results.append((doc, None))
            continue
        meta = doc.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        ns = meta.get("namespace")
        ns = ns if isinstance(ns, str) else None
        policy = base.model_copy(update={"limit_range_max_bytes": cluster.limit_range_max(ns)})
        try:
            results.append((doc, review_object(doc, cluster.read_context(ns), policy)))
        except Exception as exc:  # noqa: BLE001 - one object must not stop the others
            errors.append(
                f"{doc.get('kind')} {meta.get('name', '?')}: internal error "
                f"({type(exc).__name__}: {_first_line(exc)})"
            )
            results.append((doc, None))
    for problem in errors + notes:
        print(f"vllm-sizer check: {printable(problem)}", file=sys.stderr)
    decided = [(doc, r) for doc, r in results if r is not None]
    if args.output == "json":
        print(json.dumps([row for _, r in decided for row in json_rows(r)], indent=2))
    elif args.output == "yaml":
        out = [doc if r is None or r.verdict == "deny" else r.mutated(doc) for doc, r in results]
        print(limits.dump_all_yaml(out), end="")
    else:
        print(render_text([r for _, r in decided]))
    if errors:
        return 2
    return 1 if any(r.verdict == "deny" for _, r in decided) else 0


def json_rows(r: ObjectDecision) -> list[dict[str, Any]]:
    rows = []
    for d in r.containers:
        s = d.workload.settings
        rep = d.report
        rows.append(
            {
                "kind": r.kind,
                "namespace": r.namespace,
                "name": r.name,
                "container": d.workload.container,
                "verdict": d.verdict,
                "message": d.message,
                "warnings": d.warnings,
                "engine": {
                    "model": d.workload.model,
                    "device": s.device if s else "unknown",
                    "max_num_batched_tokens": rep.resolved.max_num_batched_tokens
                    if rep
                    else (s and s.max_num_batched_tokens),
                    "max_num_seqs": rep.resolved.max_num_seqs if rep else (s and s.max_num_seqs),
                    "max_model_len": rep.resolved.max_model_len if rep else (s and s.max_model_len),
                    "enable_lora": bool(s and s.enable_lora),
                    "max_lora_rank": rep.resolved.max_lora_rank if rep else (s and s.max_lora_rank),
                    "max_loras": rep.resolved.max_loras if rep else (s and s.max_loras),
                    "tensor_parallel_size": s.tensor_parallel_size if s else 1,
                    "dtype": rep.resolved.dtype if rep else (s.dtype if s else None),
                },
                "estimate": rep.model_dump(mode="json") if rep else None,
                # a Ray worker pod's total over the engine replicas it may hold (policy/pods.py)
                "pod_parts": [
                    {"engine": e, "replicas": n, "bytes_each": b} for e, n, b in d.pod_parts
                ],
                "limit_bytes_before": d.limit_before,
                "limit_bytes_after": d.limit_after,
                "diagnostics": [str(x) for x in d.workload.diagnostics],
            }
        )
    return rows


def render_text(results: list[ObjectDecision]) -> str:
    from ..policy.messages import gi

    lines = []
    for r in results:
        ident = f"{r.kind} {r.namespace + '/' if r.namespace else ''}{r.name}"
        if not r.containers:
            lines.append(f"{ident}: not a vLLM workload, untouched")
            continue
        lines.append(f"{ident}: {r.verdict.upper()}")
        width = max([20, *(len(d.workload.container) + 2 for d in r.containers)])
        lines.append(
            f"  {'container':<{width}}{'verdict':<9}{'estimate':>10}{'limit':>10}{'→ new':>10}"
            "  model"
        )
        for d in r.containers:
            est = gi(d.report.total_memory_bytes) if d.report else "-"
            after = gi(d.limit_after) if d.limit_after != d.limit_before else ""
            lines.append(
                f"  {d.workload.container:<{width}}{d.verdict:<9}{est:>10}"
                f"{gi(d.limit_before):>10}{after:>10}  {d.workload.model or '?'}"
            )
        if r.verdict == "deny":
            lines.append(
                f"  Error from server (Forbidden): error when creating: admission webhook "
                f'"{VALIDATING_WEBHOOK_NAME}" denied the request: {r.message}'
            )
        for w in r.warnings:
            lines.append(f"  Warning: {w}")
    # names and values come from the manifest: escaped, never interpreted by the terminal
    return "\n".join(printable(line) for line in lines)
