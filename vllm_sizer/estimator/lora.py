"""LoRA memory: adapter storage, the CPU prefill scratch, and the CPU lm_head logits gather.

Mechanism (vLLM CPU backend, PunicaWrapperCPU → vllm/lora/ops/torch_ops/lora_ops.py, same
algorithm 0.8.5 → 0.33): sgmv_* repeats each sequence's LoRA index per token and bgmv_* gathers
one full LoRA weight per token, `weights[lora_indices].to(dtype)`:
  shrink over input width `in`: [T, R, in] in the LoRA dtype plus its fp32 copy;
  expand to output width `out`:   [T, out, R] in the LoRA dtype.
Tensors are freed per op, so the peak is the largest single op, not a sum over layers:
6·T·R·max(in) bytes for bf16 (down_proj's shrink at Qwen3-0.6B: 4.5 MiB per token at R=256).

Allocators hold freed memory, so measured peaks sit above the mechanism by a factor that is not
constant (1.14x-1.59x on the published tcmalloc rows, calibration/published.json). The scratch is therefore read off measured
calibration rows (data/lora_scratch_calibration.json) and only *scaled* by the mechanism:
  - inside the measured token range of an allocator family (glibc; tcmalloc, as vLLM's CPU
    images preload it): the factor over the mechanism is interpolated linearly in T between
    measured rows (concave in bytes: never below the chord);
  - below it: the largest factor the family showed;
  - above it: the larger of (mechanism × largest factor ever observed) and the linear
    extrapolation of the last two rows, plus a margin, and never below a measured OOM floor;
    the report says this is extrapolated and only a lower bound.
Scaling across rank, width and TP follows the mechanism (linear in R, in the widest projection,
per worker); which of those scalings were measured is derived from the rows and said in notes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from .constants import SCRATCH_EXTRAPOLATION_MARGIN
from .geometry import ModelGeometry
from .units import GiB
from .versions import VllmVersion

# ---------------------------------------------------------------------------- mechanism


def _shrink_bytes_per_element(lora_dtype_bytes: float) -> float:
    # gathered weights in the LoRA dtype, then `.to(float32)`; no copy when already fp32.
    return lora_dtype_bytes + 4 if lora_dtype_bytes != 4 else 4


def mechanism_bytes_per_token(
    geometry: ModelGeometry,
    rank: int,
    lora_dtype_bytes: float,
    tensor_parallel: int = 1,
    fully_sharded: bool = False,
) -> float:
    """Largest single bgmv op per token on one worker: bytes = this × T."""
    shrink_b = _shrink_bytes_per_element(lora_dtype_bytes)
    best = 0.0
    for shape in geometry.lora_linear_shapes():
        in_w = shape.in_features / tensor_parallel if shape.row_parallel else shape.in_features
        r_shrink = rank / tensor_parallel if (fully_sharded and not shape.row_parallel) else rank
        best = max(best, shrink_b * r_shrink * in_w)
        for out in shape.out_slices:
            out_w = out if shape.row_parallel else out / tensor_parallel
            best = max(best, lora_dtype_bytes * rank * out_w)
    return best


def widest_lora_projection(geometry: ModelGeometry) -> int:
    return max(max(s.in_features, *s.out_slices) for s in geometry.lora_linear_shapes())


# ---------------------------------------------------------------------------- storage


def has_vocab_lora(geometry: ModelGeometry, version: VllmVersion) -> bool:
    """Whether vLLM wraps lm_head / embed_tokens for LoRA: only models whose class declares
    them in `embedding_modules` (vllm/lora/model_manager.py): Llama-family in every version,
    Qwen3 from 0.16 (0.16.0:models/qwen3.py:274), Qwen2 never (0.33). Other architectures are
    assumed to have it (the larger estimate)."""
    mt = geometry.model_type
    if mt in ("qwen2", "qwen2_moe"):
        return False
    if mt.startswith("qwen3"):
        return version.at_least(0, 16)
    return True


def adapter_slot_bytes(
    geometry: ModelGeometry,
    rank: int,
    lora_dtype_bytes: float,
    tensor_parallel: int = 1,
    vocab_lora: bool = True,
) -> int:
    """One adapter slot over all workers: per wrapped linear, A [R, in] per output slice and
    B [out, R] per slice (vllm/lora/layers *_stacked buffers), plus lm_head and embedding
    LoRA buffers ([vocab, R] each). Upper bound for an adapter: assumes all modules at rank R."""
    per_layer = 0
    for s in geometry.lora_linear_shapes():
        per_layer += len(s.out_slices) * rank * s.in_features + sum(s.out_slices) * rank
    vocab_terms = (
        2 * (geometry.vocab_size * rank + geometry.hidden_size * rank) if vocab_lora else 0
    )
    # Column-parallel A buffers are replicated on every TP rank; count them once per rank.
    replicated_a = 0
    if tensor_parallel > 1:
        for s in geometry.lora_linear_shapes():
            if not s.row_parallel:
                replicated_a += len(s.out_slices) * rank * s.in_features
        replicated_a *= geometry.num_layers * (tensor_parallel - 1)
    return int((geometry.num_layers * per_layer + vocab_terms + replicated_a) * lora_dtype_bytes)


def calculate_lora_adapter_memory(
    geometry: ModelGeometry,
    rank: int,
    lora_dtype_bytes: float,
    max_loras: int,
    max_cpu_loras: int,
    device: str,
    tensor_parallel: int = 1,
    vocab_lora: bool = True,
) -> tuple[int, int]:
    """(host bytes, device bytes) of adapter storage: the GPU-side stacked buffers hold
    max_loras slots; the host LRU cache holds max_cpu_loras loaded adapters. On CPU both are
    host memory."""
    slot = adapter_slot_bytes(geometry, rank, lora_dtype_bytes, tensor_parallel, vocab_lora)
    cache = max_cpu_loras * slot
    stacked = max_loras * slot
    if device == "cpu":
        return cache + stacked, 0
    return cache, stacked


def calculate_lora_logits_scratch(
    geometry: ModelGeometry, rank: int, lora_dtype_bytes: float, rows: int
) -> int:
    """CPU add_lora_logits: lm_head LoRA B gathered once per sampled row, adapter or not:
    bytes(lora dtype) · rows · vocab · R (74 MiB per row at Qwen3, R=256)."""
    return int(lora_dtype_bytes * rows * geometry.vocab_size * rank)


# ---------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class CalibrationRow:
    id: str
    build_family: str
    allocator: str
    kind: str  # measured | floor
    geometry: ModelGeometry
    rank: int
    lora_dtype_bytes: float
    tokens: int
    difference_bytes: int
    source: str
    role: str = "fit"  # fit: shapes the curve; validation: held back, guards its own point only
    max_loras: int = 1
    # Derived once at load (see `_derive`): the scratch net of adapter storage, the mechanism at
    # this row's T, and the factor between them.
    scratch_bytes: float = 0.0
    mechanism: float = 0.0
    factor: float = 0.0


def _derive(row: CalibrationRow) -> CalibrationRow:
    """The prefill scratch alone: the on−off difference minus the adapter storage the LoRA-on
    run also held (max_loras stacked slots and as many cached adapters, vLLM's default
    max_cpu_loras). lm_head/embedding LoRA buffers are
    not subtracted (whether the run had them depends on its vLLM version): the scratch keeps
    them, the larger reading."""
    storage = (
        2
        * row.max_loras
        * adapter_slot_bytes(row.geometry, row.rank, row.lora_dtype_bytes, vocab_lora=False)
    )
    scratch = max(row.difference_bytes - storage, 0)
    mech = mechanism_bytes_per_token(row.geometry, row.rank, row.lora_dtype_bytes) * row.tokens
    return replace(row, scratch_bytes=scratch, mechanism=mech, factor=scratch / mech)


_DTYPE = {"bfloat16": 2, "float16": 2, "float32": 4}


def row_from_json(r: dict[str, Any]) -> CalibrationRow:
    """One row of data/lora_scratch_calibration.json → a CalibrationRow with its derived
    scratch, mechanism and factor (calibration/fit.py reads rows the same way)."""
    g = r["geometry"]
    geo = ModelGeometry(
        num_layers=g["num_layers"],
        hidden_size=g["hidden_size"],
        intermediate_size=g["intermediate_size"],
        num_attention_heads=g["num_attention_heads"],
        num_kv_heads=g["num_kv_heads"],
        head_dim=g["head_dim"],
        vocab_size=g["vocab_size"],
        model_type=g.get("model_type", ""),
    )
    return _derive(
        CalibrationRow(
            id=r["id"],
            build_family=r["build_family"],
            allocator=r["allocator"],
            kind=r["kind"],
            geometry=geo,
            rank=int(r["max_lora_rank"]),
            lora_dtype_bytes=_DTYPE[r["lora_dtype"]],
            tokens=int(r["batched_tokens"]),
            difference_bytes=int(r["difference_bytes"]),
            source=r["source"],
            role=r.get("role", "fit"),
            max_loras=int(r.get("max_loras") or 1),
        )
    )


@lru_cache(maxsize=1)
def load_calibration() -> tuple[CalibrationRow, ...]:
    raw = json.loads(
        resources.files(__package__).joinpath("data/lora_scratch_calibration.json").read_text()
    )
    return tuple(row_from_json(r) for r in raw["rows"])


@lru_cache(maxsize=1)
def _measured_ranges() -> dict[str, tuple[frozenset[Any], frozenset[Any]]]:
    """What the fit rows cover and what the validation rows checked: ranks, widest
    projections, layer counts, LoRA dtypes → (fit, validation)."""
    rows = load_calibration()

    def split(key: Callable[[CalibrationRow], Any]) -> tuple[frozenset[Any], frozenset[Any]]:
        return (
            frozenset(key(r) for r in rows if r.role == "fit"),
            frozenset(key(r) for r in rows if r.role != "fit"),
        )

    return {
        "rank": split(lambda r: r.rank),
        "width": split(lambda r: widest_lora_projection(r.geometry)),
        "layers": split(lambda r: r.geometry.num_layers),
        "dtype": split(lambda r: r.lora_dtype_bytes),
    }


@dataclass(frozen=True)
class ScratchEstimate:
    bytes: int
    case: str  # interpolated | below-range | extrapolated | mechanism-only
    notes: tuple[str, ...]


def _family_rows(
    allocator: str, rows: tuple[CalibrationRow, ...]
) -> tuple[list[CalibrationRow], str]:
    measured = [r for r in rows if r.kind == "measured" and r.role == "fit"]
    if allocator in ("glibc", "tcmalloc"):
        own = [r for r in measured if r.allocator == allocator]
        if own:
            return own, f"{allocator} rows"
        return measured, f"no {allocator} rows: all measured rows used"
    return measured, "allocator unknown: the larger of the glibc and tcmalloc curves"


def _factor_at(tokens: int, rows: list[CalibrationRow]) -> tuple[float, str]:
    """Factor over the mechanism at T from one family's rows (sorted by T)."""
    by_t: dict[int, float] = {}
    for r in rows:
        by_t[r.tokens] = max(by_t.get(r.tokens, 0.0), r.factor)
    ts = sorted(by_t)
    if tokens < ts[0]:
        return max(by_t.values()), "below-range"
    if tokens > ts[-1]:
        return max(by_t.values()), "extrapolated"
    for lo, hi in zip(ts, [*ts[1:], ts[-1]], strict=True):
        if lo <= tokens <= hi:
            if hi == lo:
                return by_t[lo], "interpolated"
            w = (tokens - lo) / (hi - lo)
            return by_t[lo] + w * (by_t[hi] - by_t[lo]), "interpolated"
    return max(by_t.values()), "extrapolated"  # unreachable: ts covers tokens


def calculate_lora_prefill_scratch_bytes(
    geometry: ModelGeometry,
    rank: int,
    tokens: int,
    lora_dtype_bytes: float,
    allocator: str = "unknown",
    tensor_parallel: int = 1,
    workers: int = 1,
    fully_sharded: bool = False,
) -> ScratchEstimate:
    """Peak transient of the CPU LoRA prefill over all workers of one pod (host bytes)."""
    rows = load_calibration()
    per_token = mechanism_bytes_per_token(
        geometry, rank, lora_dtype_bytes, tensor_parallel, fully_sharded
    )
    mech = per_token * tokens
    notes: list[str] = []
    if not rows:
        return ScratchEstimate(
            int(mech * workers),
            "mechanism-only",
            ("LoRA prefill scratch: no calibration rows, mechanism only",),
        )

    families: dict[str, list[CalibrationRow]] = {}
    chosen, family_note = _family_rows(allocator, rows)
    for r in chosen:
        # Rows are grouped by allocator: the factor over the mechanism is what the allocator
        # keeps of freed per-op tensors (vLLM's CPU image and a pip install with tcmalloc
        # preloaded behave alike), so their token ranges join into one curve.
        families.setdefault(r.allocator, []).append(r)

    best = 0.0
    case = "interpolated"
    for fam_rows in families.values():
        factor, fam_case = _factor_at(tokens, fam_rows)
        value = factor * mech  # beyond the range: the largest factor this family showed
        if fam_case == "extrapolated":
            value = max(value, _linear_extrapolation(tokens, fam_rows, per_token))
            value *= 1 + SCRATCH_EXTRAPOLATION_MARGIN.value
        if value >= best:
            best, case = value, fam_case

    # Never below a measured point or OOM floor at or below T: rows of the same configuration
    # (rank, LoRA dtype, widest projection) and allocator family, fit or validation alike.
    floor_row = None
    width = widest_lora_projection(geometry)
    guards = [
        r
        for r in rows  # rows were measured on one worker (TP=1)
        if tensor_parallel == 1
        and not fully_sharded
        and (allocator not in ("glibc", "tcmalloc") or r.allocator == allocator)
        and r.rank == rank
        and r.lora_dtype_bytes == lora_dtype_bytes
        and widest_lora_projection(r.geometry) == width
    ]
    for r in guards:
        if r.tokens <= tokens and r.scratch_bytes > best:
            best, floor_row = r.scratch_bytes, r
    measured_ts = sorted({r.tokens for r in chosen})
    t_range = f"T={measured_ts[0]}..{measured_ts[-1]}"
    if case == "interpolated":
        notes.append(
            f"LoRA prefill scratch interpolated between measured rows ({t_range}, {family_note})"
        )
    elif case == "below-range":
        notes.append(
            f"LoRA prefill scratch below the measured range ({t_range}): mechanism × "
            f"largest observed factor ({family_note})"
        )
    else:
        notes.append(
            f"LoRA prefill scratch EXTRAPOLATED beyond the largest measured T ({measured_ts[-1]}): "
            f"mechanism × largest observed factor + {SCRATCH_EXTRAPOLATION_MARGIN.value:.0%} margin; "
            "the term grows faster than linear there, treat it as a LOWER BOUND"
        )
    floors = [r for r in guards if r.kind == "floor" and r.tokens <= tokens]
    if floors:  # the nearest OOM floor below T says the most
        r = max(floors, key=lambda f: (f.tokens, f.difference_bytes))
        notes.append(
            f"measured floor: at T={r.tokens} ({r.id}) the scratch exceeded "
            f"{r.difference_bytes / GiB:.2f} GiB (OOM)"
        )
    if floor_row is not None:
        notes.append(f"LoRA prefill scratch raised to the measured point {floor_row.id}")
    notes.extend(_scaling_notes(geometry, rank, lora_dtype_bytes, tensor_parallel))
    if workers > 1:
        notes.append(
            f"LoRA prefill scratch counted on each of {workers} worker processes "
            "(they prefill in lockstep inside one pod)"
        )
    return ScratchEstimate(int(best * workers), case, tuple(notes))


def _linear_extrapolation(tokens: int, rows: list[CalibrationRow], per_token: float) -> float:
    """Extend the line through the two largest-T rows, rescaled to this geometry."""
    pts = sorted(rows, key=lambda r: r.tokens)
    if len(pts) < 2:
        return 0.0
    a, b = pts[-2], pts[-1]
    ya = a.scratch_bytes / (a.mechanism / a.tokens) * per_token
    yb = b.scratch_bytes / (b.mechanism / b.tokens) * per_token
    if b.tokens == a.tokens:
        return max(ya, yb)
    slope = (yb - ya) / (b.tokens - a.tokens)
    return yb + slope * (tokens - b.tokens)


def _scaling_notes(
    geometry: ModelGeometry, rank: int, lora_dtype_bytes: float, tensor_parallel: int
) -> list[str]:
    notes = []
    covered = _measured_ranges()

    def note(
        what: str, value: Any, fit: frozenset[Any], validated: frozenset[Any], scaling: str
    ) -> None:
        if value in fit:
            return
        checked = (
            f"measured at {value} in a validation row"
            if value in validated
            else f"validation rows at {sorted(validated)}"
            if validated
            else "not measured"
        )
        notes.append(
            f"{what} {value}: scaled from the fitted {what}s {sorted(fit)} {scaling} ({checked})"
        )

    note("rank", rank, *covered["rank"], "linearly in rank (mechanism)")
    note(
        "widest LoRA projection",
        widest_lora_projection(geometry),
        *covered["width"],
        "linearly in width (mechanism)",
    )
    note(
        "layer count",
        geometry.num_layers,
        *covered["layers"],
        "as not a driver (ops are freed per layer)",
    )
    if lora_dtype_bytes not in covered["dtype"][0]:
        notes.append("LoRA dtype outside the measured dtypes: scaled by element size (mechanism)")
    if tensor_parallel > 1:
        notes.append(
            f"tensor parallel {tensor_parallel}: per-worker widths sharded as vLLM shards "
            "them (mechanism, not measured)"
        )
    return notes
