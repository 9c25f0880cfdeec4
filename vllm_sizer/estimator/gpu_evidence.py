"""Published vLLM GPU measurements (data/gpu_evidence.json) and the fit of the GPU constants.

Each device row is one startup profile (weights, non-torch, activation peak, KV cache, graph
pool, CUDA context) with its full configuration and its source (repo@commit:path and the quoted
line). Each host row is a published per-process RSS, allocator measurement or the working
memory limit of an official sample. Rows are split into "fit" (used by `fit_constants`) and
"validation" (never used to fit anything). `fit_constants` recomputes the "fitted" block the
estimator reads (constants.py); a test keeps the two equal.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .units import GiB
from .versions import VllmVersion

if TYPE_CHECKING:
    from .geometry import ModelGeometry

DATA = "data/gpu_evidence.json"
# The sort-based top-k/top-p path holds, per [rows, vocab] element: the fp32 logits (4), sorted
# values (4) and int64 indices (8), probs_sort (4), the scattered result (4), two bool masks (2)
# and the sort's temporary key/value double buffers (4 + 8): 38 bytes = 9.5 fp32 copies
# (0.16.0:vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p).
SORT_PATH_DERIVED_COPIES = 9.5


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files(__package__).joinpath(DATA).read_text())
    return data


def device_rows(split: str | None = None) -> list[dict[str, Any]]:
    return [r for r in load()["device"] if split in (None, r["split"])]


def host_rows(split: str | None = None) -> list[dict[str, Any]]:
    return [r for r in load()["host"] if split in (None, r["split"])]


def row_geometry(row: dict[str, Any]) -> ModelGeometry | None:
    """The catalog config with the served checkpoint's quantization_config, or None."""
    from .catalog import model_config
    from .geometry import ModelGeometry

    if not row.get("catalog_model"):
        return None
    cfg = dict(model_config(row["catalog_model"]))
    if row.get("quantization_config"):
        cfg["quantization_config"] = row["quantization_config"]
    return ModelGeometry.from_hf_config(cfg)


def _ceil(x: float, step: float = 0.01) -> float:
    return round(math.ceil(round(x / step, 6)) * step, 4)


def fit_constants(rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Recompute every fitted GPU constant from the fit rows only."""
    from .gpu_device import forward_elements_per_token, moe_workspace_bytes, sampler_rows
    from .units import DTYPE_BYTES

    rows = [r for r in (rows if rows is not None else device_rows()) if r["split"] == "fit"]
    out: dict[str, Any] = {}

    def geo(r: dict[str, Any]) -> ModelGeometry | None:
        return row_geometry(r)

    # forward factor: first PP stages never run the sampler, so their peak is the forward pass.
    fwd = []
    for r in rows:
        g = geo(r)
        if g is None:
            continue
        b = DTYPE_BYTES[r["dtype"]]
        if r["pp"] == 1:  # forward-dominated: a lower bound of the sampler explains < half
            rows_v = sampler_rows(r["max_num_seqs"], r["max_num_batched_tokens"]) * g.vocab_size
            low = (
                3.0
                if VllmVersion.parse(r["vllm_version"]).at_least(0, 17)
                else SORT_PATH_DERIVED_COPIES
            )
            if g.mla or rows_v * (b + 4 * low) >= 0.5 * r["measured"]["activation_gib"] * GiB:
                continue
        pred = r["max_num_batched_tokens"] * forward_elements_per_token(g, r["tp"]) * b
        fwd.append((r["measured"]["activation_gib"] * GiB / pred, r["id"]))
    out["forward_factor"] = {
        "value": _ceil(max(fwd)[0]),
        "rows": [i for _, i in fwd],
        "max_row": max(fwd)[1],
    }
    factor = out["forward_factor"]["value"]

    lo: tuple[int, ...]
    hi: tuple[int, ...]
    for path, lo, hi in (("sort", (0, 0), (0, 17)), ("triton", (0, 17), (99,))):
        ks = []
        for r in rows:
            g = geo(r)
            v = VllmVersion.parse(r["vllm_version"])
            if g is None or r["pp"] != 1 or not v.at_least(*lo) or v.at_least(*hi) or g.mla:
                continue  # MLA: the forward derivation omits the latent decompression
            b = DTYPE_BYTES[r["dtype"]]
            t = r["max_num_batched_tokens"]
            act = r["measured"]["activation_gib"] * GiB
            if factor * t * forward_elements_per_token(g, r["tp"]) * b >= 0.8 * act:
                continue  # forward-dominated: says nothing about the sampler
            n = sampler_rows(r["max_num_seqs"], t) * g.vocab_size
            ws = moe_workspace_bytes(g, v, b, t, r["tp"])
            k = ((act - t * g.hidden_size * b - ws) / n - b) / 4
            ks.append((k, r["id"]))
        value = _ceil(max(ks)[0])
        if path == "sort":
            value = max(value, SORT_PATH_DERIVED_COPIES)
        out[f"sampler_fp32_copies_{path}"] = {
            "value": value,
            "rows": [i for _, i in ks],
            "max_row": max(ks)[1],
            "max_fit": round(max(ks)[0], 3),
        }

    # non-torch per GPU by version class and TP, CUDA graph pool, CUDA context.
    # 0.12-0.17 is its own class: its TP > 1 value was not measured and falls back (in
    # constants.py) to the >= 0.18 one rather than to 0.11's.
    classes: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = (
        ("0.18", (0, 18), (99,)),
        ("0.12", (0, 12), (0, 18)),
        ("0.8.5", (0, 8, 5), (0, 12)),
        ("0.0", (0, 0), (0, 8, 5)),
    )
    table = []
    for name, lo, hi in classes:
        vals: dict[str, list[tuple[float, str]]] = {"tp1": [], "tpn": []}
        for r in rows:
            v = VllmVersion.parse(r["vllm_version"])
            if (
                v.at_least(*lo)
                and not v.at_least(*hi)
                and r["measured"].get("non_torch_gib") is not None
            ):
                vals["tp1" if r["tp"] == 1 else "tpn"].append(
                    (r["measured"]["non_torch_gib"], r["id"])
                )
        # logged to 0.01 GiB: the table rounds the largest fit row up to the next 0.05 GiB
        table.append(
            {
                "since": name,
                "tp1": _ceil(max(vals["tp1"])[0], 0.05) if vals["tp1"] else None,
                "tpn": _ceil(max(vals["tpn"])[0], 0.05) if vals["tpn"] else None,
                "rows": sorted(i for lst in vals.values() for _, i in lst),
            }
        )
    out["non_torch_gib"] = table
    graphs = [
        (r["measured"]["cuda_graph_gib"], r["id"])
        for r in rows
        if r["measured"].get("cuda_graph_gib") is not None
    ]
    out["cuda_graph_pool_gib"] = {"value": max(graphs)[0], "max_row": max(graphs)[1]}
    # Graph pool of the captured graphs (vLLM >= 0.12 rows, where the pool is logged):
    # dense models: a line in decoder layers per stage, shifted up to cover every fit row;
    # MoE models: the largest MoE fit row.
    dense: list[tuple[float, float, str]] = []
    moe: list[tuple[float, float, str]] = []
    for r in rows:
        g, c = geo(r), r["measured"].get("cuda_graph_gib")
        if g is None or not c or c <= 0 or not VllmVersion.parse(r["vllm_version"]).at_least(0, 12):
            continue
        (moe if g.moe else dense).append((g.num_layers / r["pp"], c, r["id"]))
    n = len(dense)
    mx = sum(x for x, _, _ in dense) / n
    my = sum(y for _, y, _ in dense) / n
    slope = sum((x - mx) * (y - my) for x, y, _ in dense) / sum((x - mx) ** 2 for x, _, _ in dense)
    base = max(y - slope * x for x, y, _ in dense)
    out["cuda_graph_dense"] = {
        "base_gib": _ceil(base),
        "per_layer_gib": round(slope, 5),
        "rows": len(dense),
    }
    top = max(moe, key=lambda m: m[1])
    out["cuda_graph_moe_gib"] = {"value": top[1], "max_row": top[2], "rows": len(moe)}
    for key, pred in (
        ("context_tp1_gib", lambda r: r["tp"] * r["pp"] == 1),
        ("context_tpn_gib", lambda r: r["tp"] * r["pp"] > 1),
    ):
        c = [
            (r["measured"]["context_gib"], r["id"])
            for r in rows
            if pred(r) and r["measured"].get("context_gib") is not None
        ]
        out[key] = {"value": max(c)[0], "max_row": max(c)[1]}
    return out
