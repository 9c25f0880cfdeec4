"""Print measurements.csv as a table, pairing LoRA-on rows with their LoRA-off twin.

    python -m calibration.summarize [calibration/measurements.csv] [--markdown]

The on-off difference uses the off row with the same preset, layers,
max_num_batched_tokens, max_num_seqs, prompts, KV space and allocator; the
ratio divides it by the formula 6*T*R*W (T = tokens actually in the step).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .results import read_rows

MIB = 1 << 20


def _i(v: str) -> int | None:
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def _mean_row(rs: list[dict[str, str]]) -> dict[str, str]:
    import json

    if len(rs) == 1:
        return rs[0]
    out = dict(rs[-1])
    for col in ("peak_bytes", "peak_request_bytes"):
        vals = [_i(r.get(col, "")) for r in rs]
        vals = [v for v in vals if v is not None]
        if vals:
            out[col] = str(sum(vals) // len(vals))
    ends = [json.loads(r.get("phase_usage_end") or "{}") for r in rs]
    merged = {}
    for k in ("init", "adapter"):
        vals = [e[k] for e in ends if k in e]
        if vals:
            merged[k] = sum(vals) // len(vals)
    out["phase_usage_end"] = json.dumps(merged)
    return out


def twin_key(r: dict[str, str]) -> tuple:
    return (
        r["preset"],
        r["num_layers"],
        r["max_num_batched_tokens"],
        r["max_num_seqs"],
        r["num_prompts"],
        r["prompt_tokens"],
        r["max_model_len"],
        r["kv_space_gib"],
        r["allocator"],
        r["dtype"],
        r.get("omp_bind") or "auto",
    )


def request_start_usage(r: dict[str, str]) -> int | None:
    import json

    try:
        ends = json.loads(r.get("phase_usage_end") or "{}")
    except ValueError:
        return None
    v = ends.get("adapter", ends.get("init"))
    return None if v is None else int(v)


def request_increment(r: dict[str, str]) -> int | None:
    """Peak of the request phase minus the cgroup usage when the request phase
    started (end of the previous phase): the transient the first request adds on
    top of everything resident (weights, KV cache, loaded adapter)."""
    import json

    rq = _i(r.get("peak_request_bytes", ""))
    try:
        ends = json.loads(r.get("phase_usage_end") or "{}")
    except ValueError:
        return None
    prev = ends.get("adapter", ends.get("init"))
    if rq is None or prev is None:
        return None
    return rq - int(prev)


def summarize(rows: list[dict[str, str]]) -> list[dict[str, object]]:
    groups: dict[tuple, list[dict[str, str]]] = {}
    for r in rows:
        if r.get("outcome") == "ok" and r.get("lora") in ("False", "false", "0"):
            groups.setdefault(twin_key(r), []).append(r)
    # repeated off rows are averaged into one synthetic twin
    offs = {k: _mean_row(v) for k, v in groups.items()}
    out = []
    for r in rows:
        lora = r.get("lora") in ("True", "true", "1")
        peak = _i(r.get("peak_bytes", ""))
        d: dict[str, object] = {
            "run_id": r["run_id"],
            "model": r["preset"],
            "L": r["num_layers"],
            "T": r["max_num_batched_tokens"],
            "S": r["max_num_seqs"],
            "prompts": f"{r['num_prompts']}x{r['prompt_tokens']}",
            "lora": "on" if lora else "off",
            "R": r.get("rank") or "-",
            "alloc": r["allocator"],
            "outcome": r["outcome"],
            "peak_MiB": round(peak / MIB) if peak else "",
            "phase": r.get("peak_phase", ""),
        }
        for ph in ("load", "init", "request"):
            v = _i(r.get(f"peak_{ph}_bytes", ""))
            d[f"{ph}_MiB"] = round(v / MIB) if v else ""
        rss = _i(r.get("rss_peak_sampled_bytes", ""))
        d["rss_MiB"] = round(rss / MIB) if rss else ""
        d["diff_MiB"] = d["formula_MiB"] = d["ratio"] = d["req_diff_MiB"] = ""
        d["lmhead_formula_MiB"] = ""
        if lora and r["outcome"] == "ok":
            off = offs.get(twin_key(r))
            f = _i(r.get("formula_scratch_bytes", ""))
            d["formula_MiB"] = round(f / MIB) if f else ""
            lg = _i(r.get("formula_logits_bytes", ""))
            d["lmhead_formula_MiB"] = round(lg / MIB) if lg else ""
            if off is not None and peak:
                diff = peak - int(off["peak_bytes"])
                d["diff_MiB"] = round(diff / MIB)
                m = max(f or 0, lg or 0)  # the two terms peak at different times
                if m:
                    d["ratio"] = f"{diff / m:.2f}"
                rq, rq_off = (
                    _i(r.get("peak_request_bytes", "")),
                    _i(off.get("peak_request_bytes", "")),
                )
                if rq and rq_off:
                    d["req_diff_MiB"] = round((rq - rq_off) / MIB)
        d["req_incr_MiB"] = d["incr_diff_MiB"] = d["incr_ratio"] = ""
        inc = request_increment(r)
        if inc is not None:
            d["req_incr_MiB"] = round(inc / MIB)
            if lora and r["outcome"] == "ok":
                off = offs.get(twin_key(r))
                inc_off = request_increment(off) if off is not None else None
                m = max(
                    _i(r.get("formula_scratch_bytes", "")) or 0,
                    _i(r.get("formula_logits_bytes", "")) or 0,
                )
                if inc_off is not None:
                    d["incr_diff_MiB"] = round((inc - inc_off) / MIB)
                    if m:
                        d["incr_ratio"] = f"{(inc - inc_off) / m:.2f}"
        d["resident_diff_MiB"] = ""
        if lora and r["outcome"] == "ok":
            off = offs.get(twin_key(r))
            a, b = request_start_usage(r), request_start_usage(off) if off else None
            if a is not None and b is not None:
                d["resident_diff_MiB"] = round((a - b) / MIB)
        d["wall_s"] = r.get("wall_s", "")
        out.append(d)
    return out


def render(table: list[dict[str, object]], markdown: bool) -> str:
    if not table:
        return "(no rows)"
    cols = list(table[0])
    if markdown:
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in table]
        return "\n".join(lines)
    w = {c: max(len(c), *(len(str(r[c])) for r in table)) for c in cols}
    lines = ["  ".join(c.rjust(w[c]) for c in cols)]
    lines += ["  ".join(str(r[c]).rjust(w[c]) for c in cols) for r in table]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.summarize")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("csv", nargs="?", default=os.path.join(here, "measurements.csv"))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--compact", action="store_true", help="README columns only")
    ap.add_argument(
        "--update-readme",
        metavar="README",
        help="replace the table between the results markers in README",
    )
    args = ap.parse_args(argv)
    table = summarize(read_rows(args.csv))
    if args.compact or args.update_readme:
        keep = [
            "run_id",
            "model",
            "L",
            "T",
            "S",
            "prompts",
            "lora",
            "R",
            "alloc",
            "outcome",
            "peak_MiB",
            "phase",
            "diff_MiB",
            "formula_MiB",
            "ratio",
            "lmhead_formula_MiB",
            "req_incr_MiB",
            "incr_diff_MiB",
            "incr_ratio",
            "resident_diff_MiB",
            "wall_s",
        ]
        table = [{k: r[k] for k in keep} for r in table]
    if args.update_readme:
        text = Path(args.update_readme).read_text()
        a, b = "<!-- results:start -->", "<!-- results:end -->"
        i, j = text.index(a) + len(a), text.index(b)
        text = text[:i] + "\n" + render(table, True) + "\n" + text[j:]
        with open(args.update_readme, "w") as f:
            f.write(text)
        return 0
    print(render(table, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
