"""measurements.csv: one row per run; reading, appending, skipping done rows."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable

# Column order of measurements.csv (new columns are appended at the end).
COLUMNS: list[str] = [
    "run_id",
    "key",
    "date",
    "host",
    "vllm_version",
    "torch_version",
    "build_family",
    "method",
    "preset",
    "architecture",
    "hidden_size",
    "intermediate_size",
    "num_layers",
    "num_heads",
    "num_kv_heads",
    "head_dim",
    "vocab_size",
    "tied_embeddings",
    "lora_width",
    "lora",
    "rank",
    "max_loras",
    "target_modules",
    "max_num_batched_tokens",
    "max_num_seqs",
    "num_prompts",
    "prompt_tokens",
    "prompt_tokens_seen",
    "max_model_len",
    "dtype",
    "kv_space_gib",
    "allocator",
    "ld_preload",
    "cap_bytes",
    "timeout_s",
    "peak_bytes",
    "peak_mib",
    "peak_phase",
    "peak_import_bytes",
    "peak_load_bytes",
    "peak_init_bytes",
    "peak_adapter_bytes",
    "peak_request_bytes",
    "peak_exit_bytes",
    "usage_after_init_bytes",
    "rss_peak_sampled_bytes",
    "cache_at_usage_peak_sampled_bytes",
    "hwm_sum_bytes",
    "formula_scratch_bytes",
    "formula_logits_bytes",
    "phase_end_s",
    "request_s",
    "wall_s",
    "outcome",
    "returncode",
    "oom_kills",
    "message",
    "notes",
    "phase_usage_end",
    "omp_bind",
]

# A row with one of these outcomes counts as measured; "error" rows are retried.
DONE_OUTCOMES = frozenset({"ok", "oom", "timeout"})


def read_rows(path: str) -> list[dict[str, str]]:
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def done_keys(rows: Iterable[dict[str, str]], retry_errors: bool = True) -> set[str]:
    out = set()
    for r in rows:
        if not r.get("key"):
            continue
        if retry_errors and r.get("outcome", "") not in DONE_OUTCOMES:
            continue
        out.add(r["key"])
    return out


def append_row(path: str, row: dict[str, object]) -> None:
    """Append one row; write the header if the file is new. When the row brings
    columns of COLUMNS that an existing file lacks, the file is rewritten with the
    widened header (old rows get empty cells)."""
    exists = os.path.exists(path) and os.path.getsize(path) > 0
    if exists:
        with open(path, newline="") as f:
            header = next(csv.reader(f), list(COLUMNS))
        missing = [c for c in COLUMNS if c in row and c not in header]
        if missing:
            old = read_rows(path)
            header = header + missing
            tmp = path + ".tmp"
            with open(tmp, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
                w.writeheader()
                for r in old:
                    w.writerow({k: r.get(k, "") for k in header})
            os.replace(tmp, path)
    else:
        header = COLUMNS + [k for k in row if k not in COLUMNS]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
        if not exists:
            w.writeheader()
        w.writerow({k: ("" if row.get(k) is None else row.get(k, "")) for k in header})
