"""`vllm-sizer estimate [-o text|json] [--env K=V]... -- <vllm command line>`."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from ..estimator import EstimatorError, ModelGeometry, build_report
from ..estimator.names import resolve_model
from ..estimator.report import MemoryReport
from ..estimator.units import GiB
from ..estimator.versions import VllmVersion
from ..workloads.vllm_args import env_settings, find_invocation, parse_vllm_args


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "estimate",
        help="estimate a vLLM server's peak memory from its command line",
        description="Estimate the peak memory of `vllm serve ...` (after --).",
    )
    p.add_argument("-o", "--output", choices=["text", "json"], default="text")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="environment of the vLLM process, e.g. VLLM_CPU_KVCACHE_SPACE=4",
    )
    p.add_argument(
        "--device",
        choices=["cpu", "cuda", "rocm", "other", "unknown"],
        help="backend (vLLM's own --device exists only up to vLLM 0.9)",
    )
    p.add_argument(
        "--vllm-version", help="vLLM version whose defaults apply (default: latest known)"
    )
    p.add_argument(
        "--gpu-memory",
        type=float,
        metavar="GiB",
        help="memory of one GPU; without it the device-side fit check is skipped",
    )
    p.add_argument(
        "--model-config",
        type=Path,
        metavar="FILE",
        help="the model's config.json, for models not in the built-in catalog",
    )
    p.add_argument(
        "--allocator",
        choices=["glibc", "tcmalloc", "unknown"],
        default="unknown",
        help="malloc of the vLLM process (vLLM's CPU images preload tcmalloc)",
    )
    p.add_argument(
        "--sweep",
        metavar="FLAG=START:END[:STEP]",
        help="the sizing curve: one estimate per value of max-num-batched-tokens, "
        "max-lora-rank, max-num-seqs or max-model-len (doubling without STEP)",
    )
    p.add_argument(
        "--limit",
        metavar="QUANTITY",
        help="with --sweep: a pod memory limit (e.g. 16Gi) to mark what fits",
    )
    p.add_argument(
        "--plot",
        metavar="FILE.png|svg",
        help="with --sweep: draw the curve (needs the 'plot' extra: matplotlib)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- vllm serve MODEL [flags]")
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"vllm-sizer estimate: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    argv = [a for a in args.command if a != "--"] if args.command[:1] == ["--"] else args.command
    if len(argv) == 1 and " " in argv[0]:
        try:
            argv = shlex.split(argv[0])
        except ValueError as exc:
            return _fail(f"cannot split the command line: {exc}")
    if args.gpu_memory is not None and not (0 < args.gpu_memory <= 1 << 20):
        return _fail(f"--gpu-memory {args.gpu_memory!r}: a GPU's memory in GiB (0 to 1048576)")
    if not argv:
        return _fail("no vLLM command line given (e.g. --device cpu -- vllm serve Qwen/Qwen3-0.6B)")
    env: dict[str, str] = {}
    for item in args.env:
        key, eq, value = item.partition("=")
        if not eq or not key:
            return _fail(f"--env takes K=V, got {item!r}")
        env[key] = value
    found = find_invocation(argv)
    flags, positional = (
        found if found else (argv[2:] if argv[:2] == ["vllm", "serve"] else argv, True)
    )
    try:
        version = VllmVersion.parse(args.vllm_version) if args.vllm_version else None
    except ValueError as exc:
        return _fail(f"--vllm-version {args.vllm_version!r}: {exc}")
    parsed = parse_vllm_args(flags, version=version, positional_model=positional, strict=True)
    env_values, env_diags = env_settings(
        env,
        args.device or ("cpu" if env.get("VLLM_TARGET_DEVICE", "").lower() == "cpu" else None),
        version,
    )
    facts: dict[str, Any] = {
        **env_values,
        "vllm_version": args.vllm_version,
        "allocator": args.allocator,
    }
    if args.device:
        facts["device"] = args.device
    if args.gpu_memory:
        facts["gpu_memory_bytes"] = int(args.gpu_memory * GiB)
    settings, diags = parsed.to_settings(**facts)
    diags += env_diags
    stops = [d for d in diags if d.exits]
    if stops:  # vLLM stops before it serves: nothing runs to size (as check and the webhook say)
        return _fail("not sized: " + "; ".join(str(d) for d in stops))
    if settings is None:
        return _fail("; ".join(str(d) for d in diags))
    if args.device:
        settings = settings.model_copy(update={"device": args.device})

    if args.sweep or args.limit or args.plot:
        return _sweep(args, settings)
    try:
        config, note = _model_config(args.model_config, settings.model)
        report = build_report(ModelGeometry.from_hf_config(config), settings)
        if note:
            report.notes.insert(0, note)
    except EstimatorError as exc:
        return _fail(str(exc))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        return _fail(f"cannot read the model config: {exc}")
    except ArithmeticError as exc:  # a value beyond what the estimate can compute
        return _fail(f"the estimate cannot be computed for these values ({exc})")
    for d in diags:
        report.notes.append(f"{d.severity}: {d}")
    if parsed.unknown_flags:
        report.notes.append(
            "flags not read (no effect on memory assumed): " + " ".join(parsed.unknown_flags)
        )
    if args.output == "json":
        print(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        print(render_text(report))
    return 0


def _sweep(args: argparse.Namespace, settings: Any) -> int:
    from ..workloads.quantity import parse_quantity
    from . import sweep

    if not args.sweep:
        return _fail("--limit and --plot go with --sweep FLAG=START:END")
    try:
        spec = sweep.parse_sweep(args.sweep)
        limit = parse_quantity(args.limit) if args.limit else None
        config, _note = _model_config(args.model_config, settings.model)
        geometry = ModelGeometry.from_hf_config(config)
        points = sweep.run_sweep(geometry, settings, spec)
        best = (
            sweep.largest_fitting(geometry, settings, spec, points, limit)
            if limit is not None
            else None
        )
        if args.plot:
            sweep.plot(
                args.plot, spec, points, limit, best, sweep.describe(settings, settings.model)
            )
    except EstimatorError as exc:
        return _fail(str(exc))
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    render = sweep.render_json if args.output == "json" else sweep.render_table
    print(render(spec, points, limit, best))
    return 0


def _model_config(path: Path | None, model: str | None) -> tuple[dict[str, Any], str | None]:
    """The config and, when a name rule chose it, the note that says so."""
    if path is not None:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{path} is not a JSON object")
        return data, None
    if model is None:
        model = "Qwen/Qwen3-0.6B"  # vLLM ModelConfig default model (0.11, 0.33)
    res = resolve_model(model)
    if res.config is None:
        raise EstimatorError(
            f"unknown model '{model}'"
            + (f" ({res.refusal})" if res.refusal else "")
            + ": pass its config.json with --model-config FILE"
        )
    return res.config, res.note


def render_text(report: MemoryReport) -> str:
    r = report.resolved
    lines = [
        f"model: {report.model}  ({report.parameters / 1e9:.2f}B parameters)",
        f"vLLM {r.version} on {r.device}: dtype {r.dtype}, max_model_len {r.max_model_len}, "
        f"max_num_seqs {r.max_num_seqs}, max_num_batched_tokens {r.max_num_batched_tokens}"
        + (f", LoRA rank {r.max_lora_rank} × {r.max_loras}" if r.enable_lora else ""),
        "",
        f"{'term':<24}{'GiB':>10}  enters",
    ]
    for t in report.terms:
        lines.append(f"{t.name:<24}{t.bytes / GiB:>10.2f}  {t.enters}")
    lines.append(f"{'TOTAL (host memory)':<24}{report.total_memory_bytes / GiB:>10.2f}")
    if report.device_memory_bytes is not None:
        fit = {True: "fits", False: "DOES NOT FIT", None: "fit not checked"}[report.device_fits]
        lines.append(
            f"{'device memory per GPU':<24}{report.device_memory_bytes / GiB:>10.2f}  {fit}"
        )
    if report.notes:
        lines.append("")
        lines.append("notes:")
        lines.extend(f"- {n}" for n in report.notes)
    return "\n".join(lines)
