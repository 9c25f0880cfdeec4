"""`vllm-sizer estimate ... --sweep FLAG=START:END[:STEP] [--limit Q] [--plot FILE]`: the sizing
curve, one report per value of one engine setting, as a table, JSON or a stacked picture.

Without STEP the values double from START and END is always included (512, 1024, ... 8192);
`--max-lora-rank` takes the ranks vLLM allows within the range. The largest value whose total
fits `--limit` is marked (for max-num-batched-tokens found exactly by the estimator's inverse).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..estimator import ModelGeometry, build_report, max_batched_tokens_within
from ..estimator.report import MemoryReport
from ..estimator.settings import ALLOWED_LORA_RANKS, EngineSettings
from ..estimator.units import GiB

# flag → EngineSettings field. Each of these makes the total grow monotonically.
SWEEPABLE = {
    "max-num-batched-tokens": "max_num_batched_tokens",
    "max-lora-rank": "max_lora_rank",
    "max-num-seqs": "max_num_seqs",
    "max-model-len": "max_model_len",
}
MAX_POINTS = 64


@dataclass
class Sweep:
    flag: str
    field: str
    values: list[int]


def parse_sweep(text: str) -> Sweep:
    """'max-num-batched-tokens=512:8192[:512]' → Sweep. Raises ValueError with the reason."""
    flag, eq, span = text.partition("=")
    flag = flag.strip().lstrip("-").replace("_", "-")
    if not eq or flag not in SWEEPABLE:
        raise ValueError(
            f"--sweep takes FLAG=START:END[:STEP] with FLAG one of "
            f"{', '.join(SWEEPABLE)}; got {text!r}"
        )
    parts = span.split(":")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        raise ValueError(
            f"--sweep range must be whole numbers START:END[:STEP], got {span!r}"
        ) from None
    if (
        len(nums) not in (2, 3)
        or nums[0] < 1
        or nums[1] < nums[0]
        or (len(nums) == 3 and nums[2] < 1)
    ):
        raise ValueError(f"--sweep range must be 1 <= START <= END (STEP >= 1), got {span!r}")
    start, end = nums[0], nums[1]
    if flag == "max-lora-rank":
        values = [r for r in ALLOWED_LORA_RANKS if start <= r <= end]
    elif len(nums) == 3:
        values = list(range(start, end + 1, nums[2]))
    else:
        values, v = [], start
        while v < end:
            values.append(v)
            v *= 2
        values.append(end)
    values = sorted(set(values))
    if not values:
        raise ValueError(f"--sweep {text!r} selects no value")
    if len(values) > MAX_POINTS:
        raise ValueError(f"--sweep {text!r} gives {len(values)} points; at most {MAX_POINTS}")
    return Sweep(flag, SWEEPABLE[flag], values)


def run_sweep(
    geometry: ModelGeometry, settings: EngineSettings, sweep: Sweep
) -> list[tuple[int, MemoryReport]]:
    return [
        (v, build_report(geometry, settings.model_copy(update={sweep.field: v})))
        for v in sweep.values
    ]


def largest_fitting(
    geometry: ModelGeometry,
    settings: EngineSettings,
    sweep: Sweep,
    points: list[tuple[int, MemoryReport]],
    limit: int,
) -> int | None:
    if sweep.field == "max_num_batched_tokens":
        return max_batched_tokens_within(
            geometry, settings, limit, floor=1, ceiling=max(sweep.values[-1], 1)
        )
    fits = [v for v, r in points if r.total_memory_bytes <= limit]
    return max(fits) if fits else None


def _host_terms(points: list[tuple[int, MemoryReport]]) -> list[str]:
    names: list[str] = []
    for _, r in points:
        for t in r.terms:
            if t.enters in ("sum", "max-of-transients") and t.name not in names:
                names.append(t.name)
    return names


def _counted(report: MemoryReport) -> dict[str, int]:
    """Bytes each term adds to the host total: sums in full, the transients only the largest."""
    out = {t.name: t.bytes for t in report.terms if t.enters == "sum"}
    transients = [t for t in report.terms if t.enters == "max-of-transients"]
    if transients:
        top = max(transients, key=lambda t: t.bytes)
        out[top.name] = top.bytes
    return out


def render_table(
    sweep: Sweep, points: list[tuple[int, MemoryReport]], limit: int | None, best: int | None
) -> str:
    names = _host_terms(points)
    head = f"{sweep.flag:>24}  {'TOTAL':>8}  " + "  ".join(f"{n[:18]:>18}" for n in names)
    lines = [head]
    for v, r in points:
        counted = _counted(r)
        mark = " *" if limit is not None and r.total_memory_bytes > limit else ""
        lines.append(
            f"{v:>24}  {r.total_memory_bytes / GiB:>8.2f}  "
            + "  ".join(f"{counted.get(n, 0) / GiB:>18.2f}" for n in names)
            + mark
        )
    lines.append("GiB of host memory; a transient term shows only where it is the largest.")
    if limit is not None:
        lines.append(
            f"limit {limit / GiB:.2f} GiB (* over it); largest {sweep.flag} that fits: "
            + (str(best) if best is not None else "none")
        )
    return "\n".join(lines)


def render_json(
    sweep: Sweep, points: list[tuple[int, MemoryReport]], limit: int | None, best: int | None
) -> str:
    return json.dumps(
        {
            "flag": sweep.flag,
            "limit_bytes": limit,
            "largest_fitting": best,
            "points": [
                {
                    "value": v,
                    "total_memory_bytes": r.total_memory_bytes,
                    "counted_bytes": _counted(r),
                }
                for v, r in points
            ],
        },
        indent=2,
    )


def plot(
    path: str,
    sweep: Sweep,
    points: list[tuple[int, MemoryReport]],
    limit: int | None,
    best: int | None,
    title: str,
) -> None:
    """Stacked host terms against the swept value, the limit as a line, the largest fitting
    value marked. matplotlib is an optional extra (`pip install 'vllm-sizer[plot]'`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("--plot needs matplotlib: pip install 'vllm-sizer[plot]'") from None
    names = _host_terms(points)
    xs = [v for v, _ in points]
    ys: list[list[float]] = [[_counted(r).get(n, 0) / GiB for _, r in points] for n in names]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    ax.stackplot(xs, *ys, labels=names, alpha=0.85)
    ax.plot(
        xs,
        [r.total_memory_bytes / GiB for _, r in points],
        color="black",
        lw=1.2,
        label="total (host)",
    )
    if limit is not None:
        ax.axhline(limit / GiB, color="red", ls="--", lw=1.2, label=f"limit {limit / GiB:.1f} GiB")
        if best is not None:
            ax.axvline(best, color="red", ls=":", lw=1.0)
            ax.annotate(
                f"largest that fits: {best}",
                xy=(best, limit / GiB),
                xytext=(5, 8),
                textcoords="offset points",
                color="red",
                fontsize=8,
            )
    if len(xs) > 2 and xs[-1] / max(xs[0], 1) >= 16:
        from matplotlib.ticker import FuncFormatter

        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.set_xlabel(f"--{sweep.flag}")
    ax.set_ylabel("GiB (host memory)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def describe(settings: EngineSettings, model: str | None) -> str:
    parts: list[Any] = [model or "?", settings.device]
    if settings.enable_lora:
        parts.append(f"LoRA rank {settings.max_lora_rank}")
    return "vllm-sizer: " + ", ".join(str(p) for p in parts)
