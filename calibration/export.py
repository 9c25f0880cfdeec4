"""Generate the estimator's LoRA scratch calibration data from the measurements.

    python -m calibration.export [--check] [--csv PATH] [--published PATH] [--out PATH]

Reads calibration/measurements.csv (one row per run, see README.md) and
calibration/published.json (the published seed rows, verbatim, each with its
source) and writes vllm_sizer/estimator/data/lora_scratch_calibration.json:

* one row per LoRA-on prefill run: outcome ok -> kind "measured",
  difference_bytes = on peak - the LoRA-off twin's peak; outcome oom -> kind
  "floor", difference_bytes = cgroup cap - off twin's peak (the true
  difference is larger). The twin is the LoRA-off run with the same
  calibration.summarize.twin_key (preset, layers, T, max_num_seqs, prompts,
  max_model_len, KV space, allocator, dtype, OMP binding); repeated off twins
  are averaged (calibration.summarize._mean_row), exactly as the summary table
  pairs them.
* the lm_head logits experiment (max_num_seqs > 1, or prompts that do not fill
  the step: the step then holds far fewer tokens than T and the on-off
  difference is the per-row lm_head gather, not the prefill scratch) is not
  exported as prefill rows; calibration/fit.py reports it.
* "cpu_runtime_overhead": host bytes of the vLLM processes beyond weights,
  checkpoint page cache and KV cache, from the LoRA-off runs (see
  runtime_overhead()).

--check exits 1 when the package JSON differs from what would be written.
--withhold-csv-rows writes the published rows and cpu_runtime_overhead only
(marked "csv_rows_withheld" in the file; --check keeps the mode it finds): the
state to commit while the estimator's model cannot take the measured rows yet.
The output is deterministic (rows sorted, no timestamps), so re-running on an
unchanged CSV changes nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from .results import read_rows
from .summarize import _mean_row, twin_key

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CSV_PATH = os.path.join(HERE, "measurements.csv")
PUBLISHED_PATH = os.path.join(HERE, "published.json")
OUT_PATH = os.path.join(ROOT, "vllm_sizer", "estimator", "data", "lora_scratch_calibration.json")

MIB = 1 << 20
GIB = 1 << 30
ENVELOPE_ROUND_TO = 64 * 1024**2  # finer than ROUND_TO: the slope already carries the size
ROUND_TO = 256 * MIB

GENERATED_BY = (
    "calibration/export.py from calibration/measurements.csv and calibration/published.json"
)
DESCRIPTION = (
    "CPU LoRA prefill scratch calibration rows. difference_bytes = cgroup peak with LoRA on minus "
    "peak with LoRA off at the same max_num_batched_tokens (kind 'measured'), or, for kind 'floor', "
    "the cap at which the LoRA-on run was OOM-killed minus the LoRA-off peak (the true difference "
    "is larger). Rows with source 'calibration/measurements.csv ...' are runs of calibration/ on "
    "this project's machine; rows with another source are published measurements "
    "(calibration/published.json), copied verbatim. cpu_runtime_overhead is the host memory of the "
    "vLLM processes beyond weights, checkpoint page cache and KV cache, from the LoRA-off runs. "
    "GENERATED FILE: edit calibration/measurements.csv or calibration/published.json and run "
    "python -m calibration.export."
)

MODEL_TYPES = {"Qwen3ForCausalLM": "qwen3", "LlamaForCausalLM": "llama"}


# ---------------------------------------------------------------------------- reading


def _int(v) -> int | None:
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def _float(v) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def is_lora(r: dict[str, str]) -> bool:
    return str(r.get("lora", "")).strip().lower() in ("true", "1")


def is_off(r: dict[str, str]) -> bool:
    return str(r.get("lora", "")).strip().lower() in ("false", "0")


def tokens_in_step(r: dict[str, str]) -> int:
    """Tokens the first (prefill) step actually holds: the prompts scheduled together
    (at most max_num_seqs of them), capped by max_num_batched_tokens."""
    t = _int(r.get("max_num_batched_tokens")) or 0
    n = _int(r.get("num_prompts")) or 1
    s = _int(r.get("max_num_seqs")) or 1
    seen = _int(r.get("prompt_tokens_seen"))
    each = seen / n if seen else (_int(r.get("prompt_tokens")) or t)
    return int(min(t, min(n, s) * each))


def is_logits_experiment(r: dict[str, str]) -> bool:
    """The lm_head logits-gather experiment, not a prefill-scratch row: several sequences
    sampled in one step, or short prompts that leave the step far below T."""
    s = _int(r.get("max_num_seqs")) or 1
    t = _int(r.get("max_num_batched_tokens")) or 0
    return s > 1 or tokens_in_step(r) < t


def geometry_of(r: dict[str, str]) -> dict:
    arch = r.get("architecture", "")
    return {
        "model": f"{r['preset']} geometry, random weights (calibration/factory.py)",
        "model_type": MODEL_TYPES.get(arch, arch.lower()),
        "architecture": arch,
        "num_layers": int(r["num_layers"]),
        "hidden_size": int(r["hidden_size"]),
        "intermediate_size": int(r["intermediate_size"]),
        "num_attention_heads": int(r["num_heads"]),
        "num_kv_heads": int(r["num_kv_heads"]),
        "head_dim": int(r["head_dim"]),
        "vocab_size": int(r["vocab_size"]),
        "tie_word_embeddings": str(r.get("tied_embeddings", "")).lower() == "true",
    }


# ---------------------------------------------------------------------------- pairing


def off_twins(rows: list[dict[str, str]]) -> dict[tuple, tuple[dict[str, str], list[str]]]:
    """twin_key -> (averaged LoRA-off row, run ids averaged), as calibration.summarize pairs."""
    groups: dict[tuple, list[dict[str, str]]] = {}
    for r in rows:
        if r.get("outcome") == "ok" and is_off(r) and _int(r.get("peak_bytes")):
            groups.setdefault(twin_key(r), []).append(r)
    out = {}
    for k, v in groups.items():
        v = sorted(v, key=lambda x: x["run_id"])
        out[k] = (_mean_row(v), [x["run_id"] for x in v])
    return out


def pairs(rows: list[dict[str, str]]) -> list[dict]:
    """Every LoRA-on run with outcome ok or oom that has a LoRA-off twin:
    {"on": row, "off": averaged off row, "off_ids": [...], "kind", "difference_bytes",
     "tokens", "logits_experiment"}. Unpaired / error / timeout runs are left out."""
    twins = off_twins(rows)
    out = []
    for r in rows:
        if not is_lora(r) or r.get("outcome") not in ("ok", "oom"):
            continue
        tw = twins.get(twin_key(r))
        if tw is None:
            continue
        off, off_ids = tw
        off_peak = int(off["peak_bytes"])
        if r["outcome"] == "ok":
            peak = _int(r.get("peak_bytes"))
            if not peak:
                continue
            kind, diff = "measured", peak - off_peak
        else:
            cap = _int(r.get("cap_bytes"))
            if not cap:
                continue
            kind, diff = "floor", cap - off_peak
        out.append(
            {
                "on": r,
                "off": off,
                "off_ids": off_ids,
                "kind": kind,
                "difference_bytes": diff,
                "tokens": tokens_in_step(r),
                "logits_experiment": is_logits_experiment(r),
            }
        )
    return out


def unpaired(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    """(run_id, reason) of LoRA-on runs not exported, for the report."""
    twins = off_twins(rows)
    done = {r["run_id"] for r in rows if r.get("outcome") in ("ok", "oom")}
    out = []
    for r in rows:
        if not is_lora(r):
            continue
        if r.get("outcome") not in ("ok", "oom"):
            out.append(
                (
                    r["run_id"],
                    f"outcome {r.get('outcome')}"
                    + (", measured again later" if r["run_id"] in done else ""),
                )
            )
        elif twin_key(r) not in twins:
            out.append((r["run_id"], "no LoRA-off twin (yet)"))
    return out


def export_row(p: dict) -> dict:
    r, off = p["on"], p["off"]
    off_peak = int(off["peak_bytes"])
    n_off = len(p["off_ids"])
    off_desc = f"LoRA-off peak {off_peak / MIB:.0f} MiB" + (
        f" (mean of {n_off} runs)" if n_off > 1 else ""
    )
    setup = (
        f"max_num_seqs={r['max_num_seqs']}, one prompt of {p['tokens']} tokens, "
        f"VLLM_CPU_KVCACHE_SPACE={_float(r['kv_space_gib']):g} GiB, {r['dtype']}, "
        f"enforce_eager, OMP bind {r.get('omp_bind') or 'auto'}; {r['method']}"
    )
    if p["kind"] == "measured":
        on_peak = int(r["peak_bytes"])
        method = f"LoRA-on peak {on_peak / MIB:.0f} MiB minus {off_desc}, {setup}"
    else:
        on_peak = None
        cap = int(r["cap_bytes"])
        method = (
            f"LoRA-on run OOM-killed at a {cap / MIB:.0f} MiB cgroup cap; {off_desc}; the "
            f"difference is more than cap minus the off peak; {setup}"
        )
    out = {
        "id": f"calib-{r['run_id']}",
        "source": f"calibration/measurements.csv run {r['run_id']} (+ off twin "
        f"{', '.join(p['off_ids'])})",
        "run_id": r["run_id"],
        "off_run_ids": list(p["off_ids"]),
        "date": r.get("date", ""),
        "vllm_version": r.get("vllm_version", ""),
        "torch_version": r.get("torch_version", ""),
        "build_family": r.get("build_family", ""),
        "allocator": r.get("allocator", ""),
        "hardware": r.get("host", ""),
        "method": method,
        "kind": p["kind"],
        "geometry": geometry_of(r),
        "lora_dtype": r.get("dtype", "bfloat16"),
        "max_lora_rank": int(r["rank"]),
        "max_loras": _int(r.get("max_loras")) or 1,
        "max_num_seqs": int(r["max_num_seqs"]),
        "max_num_batched_tokens": int(r["max_num_batched_tokens"]),
        "batched_tokens": p["tokens"],
        "kv_space_gib": _float(r.get("kv_space_gib")),
        "omp_bind": r.get("omp_bind") or "auto",
        "lora_on_peak_bytes": on_peak,
        "lora_off_peak_bytes": off_peak,
        "difference_bytes": int(p["difference_bytes"]),
    }
    if p["kind"] == "floor":
        out["memory_limit_bytes"] = int(r["cap_bytes"])
    # The estimator builds its curve from "fit" rows; "validation" rows (other rank, layer
    # count or geometry) are held back and only guard their own configuration.
    from .fit import is_training

    out["role"] = "fit" if is_training(out) else "validation"
    return out


def measured_rows(rows: list[dict[str, str]]) -> list[dict]:
    """Exported prefill rows (lm_head experiment excluded), in CSV order. A run id that
    appears more than once with a result keeps its first row's id; later ones get -2, -3."""
    out, seen = [], {}
    for p in pairs(rows):
        if p["logits_experiment"]:
            continue
        r = export_row(p)
        n = seen[r["id"]] = seen.get(r["id"], 0) + 1
        if n > 1:
            r["id"] = f"{r['id']}-{n}"
        out.append(r)
    return out


# ---------------------------------------------------------------------------- runtime


def weights_bytes(r: dict[str, str]) -> int:
    """Bytes of the checkpoint's tensors: calibration/factory.py writes every tensor of the
    architecture (tied embeddings: no lm_head tensor) as bf16, so this is both the weights
    vLLM holds and, up to the safetensors JSON header (tens of KiB), the file size."""
    from .factory import get_preset, model_tensor_shapes

    layers = _int(r.get("num_layers"))
    g = get_preset(r["preset"], layers)
    return 2 * sum(math.prod(s) for s in model_tensor_shapes(g).values())


RUNTIME_METHOD = (
    "For every LoRA-off run with outcome ok: cgroup v1 peak (memory.max_usage_in_bytes, which "
    "counts page cache as well as anonymous memory) minus the weights (parameters x 2 bytes, "
    "bf16, from the checkpoint's tensor shapes) minus the checkpoint's page cache (assumed equal "
    "to the weights: calibration/factory.py writes one bf16 safetensors file holding exactly those "
    "tensors plus a JSON header of tens of KiB; the runner evicts it before each run, so every run "
    "reads it through the page cache once and vLLM loads it by mmap) minus the KV cache "
    "(VLLM_CPU_KVCACHE_SPACE). What remains is the Python/torch/vLLM runtime of the three "
    "processes (front-end, engine core, worker), the tokenizer files' page cache, and at the "
    "request peak the forward pass's activations (which the estimator also counts separately, so "
    "this errs high). The residual grows with the model, so the constant is an upper envelope "
    "a + b x weights: b from a least-squares line through the largest residual of each model "
    "size, a raised until no run lies above the line and rounded up to 64 MiB."
)


def runtime_overhead(rows: list[dict[str, str]]) -> dict | None:
    per_row = []
    for r in rows:
        if not is_off(r) or r.get("outcome") != "ok":
            continue
        peak = _int(r.get("peak_bytes"))
        if not peak:
            continue
        w = weights_bytes(r)
        kv = round((_float(r.get("kv_space_gib")) or 0) * GIB)
        per_row.append((r["run_id"], peak - w - w - kv, peak, w, kv))
    if not per_row:
        return None
    per_row.sort()
    best = max(v for _, v, *_ in per_row)
    worst = max(per_row, key=lambda x: x[1])
    # The residual grows with the model (loading transients, larger workspaces): an upper
    # envelope a + b·weights over the largest residual of each model size (b = 0 when one size
    # was measured), shifted up so that no run lies above it.
    by_size: dict[int, int] = {}
    for _, v, _, w, _ in per_row:
        by_size[w] = max(v, by_size.get(w, v))
    sizes = sorted(by_size)
    b = 0.0
    if len(sizes) > 1:
        mw = sum(sizes) / len(sizes)
        mv = sum(by_size[w] for w in sizes) / len(sizes)
        var = sum((w - mw) ** 2 for w in sizes)
        b = max(0.0, sum((w - mw) * (by_size[w] - mv) for w in sizes) / var) if var else 0.0
    a = max(v - b * w for _, v, _, w, _ in per_row)
    rounded = int(math.ceil(a / ENVELOPE_ROUND_TO) * ENVELOPE_ROUND_TO)
    hosts = sorted({r.get("host", "") for r in rows if is_off(r) and r.get("outcome") == "ok"})
    versions = sorted(
        {
            f"vLLM {r.get('vllm_version')}, torch {r.get('torch_version')}"
            for r in rows
            if is_off(r) and r.get("outcome") == "ok"
        }
    )
    return {
        "bytes": rounded,
        "per_weight_byte": round(b, 4),
        "kind": "measured",
        "source": (
            f"calibration/measurements.csv: LoRA-off runs ({len(per_row)}), {'; '.join(versions)} "
            f"on {'; '.join(hosts)}; largest residual {worst[1] / MIB:.0f} MiB (run "
            f"{worst[0]}: peak {worst[2] / MIB:.0f} MiB - 2 x weights {worst[3] / MIB:.0f} "
            f"MiB - KV {worst[4] / MIB:.0f} MiB); envelope {rounded / MIB:.0f} MiB "
            f"+ {b:.3f} x weights over {len(sizes)} model size(s)"
        ),
        "method": RUNTIME_METHOD,
        "max_residual_bytes": int(best),
        "rows": [rid for rid, *_ in per_row],
        "per_row_residual_bytes": {rid: int(v) for rid, v, *_ in per_row},
    }


# ---------------------------------------------------------------------------- document


def _sort_key(row: dict) -> tuple:
    g = row["geometry"]
    return (
        0 if row["source"].startswith("calibration/") else -1,
        row.get("build_family", ""),
        row.get("allocator", ""),
        g.get("hidden_size", 0),
        g.get("num_layers", 0),
        row["max_lora_rank"],
        row["batched_tokens"],
        row["kind"],
        row["id"],
    )


WITHHELD_REASON = (
    "The prefill rows of calibration/measurements.csv are withheld from this file (written with "
    "--withhold-csv-rows): with them the estimator's factor-over-mechanism model breaks "
    "tests/estimator/test_calibration_points.py (see calibration/REPORT.md, 'Effect on the "
    "estimator'). Only the published rows and cpu_runtime_overhead are in use; "
    "python -m calibration.export without the flag writes every row."
)


def build_document(
    csv_rows: list[dict[str, str]], published: dict, withhold_csv_rows: bool = False
) -> dict:
    rows = list(published["rows"]) + ([] if withhold_csv_rows else measured_rows(csv_rows))
    ids = [r["id"] for r in rows]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"duplicate calibration row ids: {dup}")
    doc = {"schema": 1, "generated_by": GENERATED_BY, "description": DESCRIPTION}
    if withhold_csv_rows:
        doc["csv_rows_withheld"] = WITHHELD_REASON
    ro = runtime_overhead(csv_rows)
    if ro is not None:
        doc["cpu_runtime_overhead"] = ro
    doc["rows"] = sorted(rows, key=_sort_key)
    return doc


def render(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def load_published(path: str = PUBLISHED_PATH) -> dict:
    with open(path) as f:
        return json.load(f)


def generate(
    csv_path: str = CSV_PATH, published_path: str = PUBLISHED_PATH, withhold_csv_rows: bool = False
) -> str:
    return render(
        build_document(read_rows(csv_path), load_published(published_path), withhold_csv_rows)
    )


def _withheld(path: str) -> bool:
    try:
        with open(path) as f:
            return "csv_rows_withheld" in json.load(f)
    except (OSError, ValueError):
        return False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.export")
    ap.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the package JSON is not what the inputs generate",
    )
    ap.add_argument(
        "--withhold-csv-rows",
        action="store_true",
        help="write only the published rows (+ cpu_runtime_overhead) and mark the "
        "file so; --check then keeps that mode",
    )
    ap.add_argument("--csv", default=CSV_PATH)
    ap.add_argument("--published", default=PUBLISHED_PATH)
    ap.add_argument("--out", default=OUT_PATH)
    args = ap.parse_args(argv)
    withhold = args.withhold_csv_rows or (args.check and _withheld(args.out))
    text = generate(args.csv, args.published, withhold)
    current = Path(args.out).read_text() if os.path.exists(args.out) else None
    if args.check:
        if current != text:
            print(
                f"{os.path.relpath(args.out)} is out of date: run python -m calibration.export",
                file=sys.stderr,
            )
            return 1
        print(f"{os.path.relpath(args.out)} is up to date")
        return 0
    if current != text:
        with open(args.out, "w") as f:
            f.write(text)
    doc = json.loads(text)
    n = {k: sum(1 for r in doc["rows"] if r["kind"] == k) for k in ("measured", "floor")}
    print(
        f"wrote {os.path.relpath(args.out)}: {len(doc['rows'])} rows "
        f"({n['measured']} measured, {n['floor']} floor)"
        + (
            f", cpu_runtime_overhead {doc['cpu_runtime_overhead']['bytes'] / MIB:.0f} MiB"
            if "cpu_runtime_overhead" in doc
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
