"""`vllm-sizer check [FILE|DIR|-]... [-o text|json|yaml] [--mode M] [--headroom F]`:
the admission decision, offline, on manifests. Exit 0: nothing denied; 1: something denied;
2: unreadable input."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterable

import yaml

from ..policy.limit_ranges import container_memory_max
from ..policy.review import ObjectDecision, review_object
from ..policy.settings import MODES, PolicySettings, parse_headroom
from ..workloads.model import ReadContext

CONTEXT_KINDS = {"LimitRange", "ServingRuntime", "ClusterServingRuntime"}
MODEL_CONFIGS_LABEL = "vllm-sizer.io/model-configs"


class InputError(Exception):
    pass


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001
    p = sub.add_parser("check", help="run the admission decision offline on manifests",
                       description="Read Kubernetes manifests and decide as the webhook would.")
    p.add_argument("paths", nargs="*", default=["-"], help="files, directories or - (stdin)")
    p.add_argument("-o", "--output", choices=["text", "json", "yaml"], default="text")
    p.add_argument("--mode", choices=list(MODES), default="mutate")
    p.add_argument("--headroom", default="0.10", help="fraction or percentage, e.g. 0.1 or 10%%")
    p.set_defaults(func=run)


def _files(paths: Iterable[str]) -> list[Path | None]:
    out: list[Path | None] = []
    for raw in paths:
        if raw == "-":
            out.append(None)
            continue
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.suffix in (".yaml", ".yml", ".json")))
        elif p.is_file():
            out.append(p)
        else:
            raise InputError(f"{raw}: no such file or directory")
    return out


def load_documents(paths: Iterable[str]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for f in _files(paths):
        name = "<stdin>" if f is None else str(f)
        try:
            text = sys.stdin.read() if f is None else f.read_text()
            loaded = list(yaml.safe_load_all(text))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise InputError(f"{name}: {exc}") from None
        for doc in loaded:
            if doc is None:
                continue
            if not isinstance(doc, dict):
                raise InputError(f"{name}: a document is not a mapping")
            if doc.get("kind") == "List" or str(doc.get("kind", "")).endswith("List") and "items" in doc:
                docs.extend(i for i in doc.get("items") or [] if isinstance(i, dict))
            else:
                docs.append(doc)
    return docs


def build_context(docs: list[dict[str, Any]]) -> tuple[ReadContext, dict[str | None, int]]:
    """Context objects the cluster would use: runtimes, model-config ConfigMaps, LimitRanges."""
    ctx = ReadContext()
    configs: dict[str, dict[str, Any]] = {}
    for d in docs:
        kind = d.get("kind")
        meta = d.get("metadata") or {}
        if kind == "ServingRuntime":
            ctx.serving_runtimes[meta.get("name", "")] = d
        elif kind == "ClusterServingRuntime":
            ctx.cluster_serving_runtimes[meta.get("name", "")] = d
        elif kind == "ConfigMap" and str((meta.get("labels") or {}).get(MODEL_CONFIGS_LABEL)) == "true":
            for key, value in (d.get("data") or {}).items():
                try:
                    configs[str(key).lower()] = json.loads(value)
                except (TypeError, ValueError):
                    continue
    if configs:
        ctx.model_resolver = lambda model: configs.get(model.lower()) or configs.get(
            model.lower().replace("/", "--"))
    limit_max = container_memory_max(d for d in docs if d.get("kind") == "LimitRange")
    return ctx, limit_max


def run(args: argparse.Namespace) -> int:
    try:
        headroom = parse_headroom(args.headroom)
    except ValueError as exc:
        print(f"vllm-sizer check: {exc}", file=sys.stderr)
        return 2
    try:
        docs = load_documents(args.paths)
    except InputError as exc:
        print(f"vllm-sizer check: {exc}", file=sys.stderr)
        return 2
    ctx, limit_max = build_context(docs)
    base = PolicySettings(mode=args.mode, headroom=headroom)
    results: list[tuple[dict[str, Any], ObjectDecision]] = []
    for doc in docs:
        if doc.get("kind") in CONTEXT_KINDS:
            results.append((doc, None))  # type: ignore[arg-type]
            continue
        ns = (doc.get("metadata") or {}).get("namespace")
        policy = base.model_copy(update={"limit_range_max_bytes": limit_max.get(ns)})
        results.append((doc, review_object(doc, ctx, policy)))
    decided = [(doc, r) for doc, r in results if r is not None]
    if args.output == "json":
        print(json.dumps([row for _, r in decided for row in json_rows(r)], indent=2))
    elif args.output == "yaml":
        out = [doc if r is None or r.verdict == "deny" else r.mutated(doc) for doc, r in results]
        print(yaml.safe_dump_all(out, sort_keys=False), end="")
    else:
        print(render_text([r for _, r in decided]))
    return 1 if any(r.verdict == "deny" for _, r in decided) else 0


def json_rows(r: ObjectDecision) -> list[dict[str, Any]]:
    rows = []
    for d in r.containers:
        s = d.workload.settings
        rep = d.report
        rows.append({
            "kind": r.kind, "namespace": r.namespace, "name": r.name,
            "container": d.workload.container, "verdict": d.verdict,
            "message": d.message, "warnings": d.warnings,
            "engine": {
                "model": d.workload.model,
                "device": s.device if s else "unknown",
                "max_num_batched_tokens": rep.resolved.max_num_batched_tokens if rep else (s and s.max_num_batched_tokens),
                "max_num_seqs": rep.resolved.max_num_seqs if rep else (s and s.max_num_seqs),
                "max_model_len": rep.resolved.max_model_len if rep else (s and s.max_model_len),
                "enable_lora": bool(s and s.enable_lora),
                "max_lora_rank": rep.resolved.max_lora_rank if rep else (s and s.max_lora_rank),
                "max_loras": rep.resolved.max_loras if rep else (s and s.max_loras),
                "tensor_parallel_size": s.tensor_parallel_size if s else 1,
                "dtype": rep.resolved.dtype if rep else (s.dtype if s else None),
            },
            "estimate": rep.model_dump(mode="json") if rep else None,
            "limit_bytes_before": d.limit_before,
            "limit_bytes_after": d.limit_after,
            "diagnostics": [str(x) for x in d.workload.diagnostics],
        })
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
        lines.append(f"  {'container':<20}{'verdict':<9}{'estimate':>10}{'limit':>10}{'→ new':>10}  model")
        for d in r.containers:
            est = gi(d.report.total_memory_bytes) if d.report else "-"
            after = gi(d.limit_after) if d.limit_after != d.limit_before else ""
            lines.append(f"  {d.workload.container:<20}{d.verdict:<9}{est:>10}"
                         f"{gi(d.limit_before):>10}{after:>10}  {d.workload.model or '?'}")
        if r.verdict == "deny":
            lines.append(f"  Error from server (Forbidden): error when creating: admission webhook "
                         f"\"validate.vllm-sizer.io\" denied the request: {r.message}")
        for w in r.warnings:
            lines.append(f"  Warning: {w}")
    return "\n".join(lines)
