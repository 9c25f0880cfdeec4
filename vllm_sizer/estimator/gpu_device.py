"""Device memory of one GPU as vLLM's startup profiler accounts it (docs/research/gpu-memory.md).

vLLM sizes the KV cache as  total × gpu_memory_utilization − (weights + non-torch increase +
torch activation peak of the profile run) [− the CUDA-graph estimate where it is subtracted].
Every term below is a mechanism read from vLLM's source per version; the constants it needs
(bytes per sampler element, forward-pass factor, non-torch per TP, graph pool, CUDA context)
come from data/gpu_evidence.json, fitted on the rows marked "fit" only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import constants as C
from .geometry import QUANT_BYTES_PER_PARAM, ModelGeometry, Quantization
from .units import GiB
from .versions import VllmVersion

# The sampler warm-up samples one row per request: min(max_num_batched_tokens, max_num_seqs)
# rows (0.11.0:vllm/v1/worker/gpu_model_runner.py:2977-2980, 3179-3180).


def sampler_path(version: VllmVersion) -> str:
    """Which top-k/top-p implementation the dummy sampler run takes on CUDA.
    ≤ 0.16: a full-vocab torch.sort (0.16.0:vllm/v1/sample/ops/topk_topp_sampler.py);
    ≥ 0.17: a Triton top-k/top-p kernel for batches ≥ 8 (0.17.0: same file, apply_top_k_top_p)."""
    return "triton" if version.at_least(0, 17) else "sort"


def sampler_fp32_copies(version: VllmVersion) -> C.Constant:
    return (
        C.GPU_SAMPLER_FP32_COPIES_TRITON
        if sampler_path(version) == "triton"
        else C.GPU_SAMPLER_FP32_COPIES_SORT
    )


def sampler_rows(max_num_seqs: int, max_num_batched_tokens: int) -> int:
    return max(1, min(max_num_seqs, max_num_batched_tokens))


def sampler_bytes(
    g: ModelGeometry,
    version: VllmVersion,
    dtype_bytes: float,
    max_num_seqs: int,
    max_num_batched_tokens: int,
) -> int:
    """Peak of the dummy sampler run: logits [rows, vocab] in the model dtype (compute_logits)
    plus K fp32 copies of that shape (logits.to(float32), sort values/indices or Triton
    buffers, softmax probs, exponential noise). The vocab is NOT split by TP: logits are
    gathered on every rank."""
    rows = sampler_rows(max_num_seqs, max_num_batched_tokens)
    k = sampler_fp32_copies(version).value
    return int(rows * g.vocab_size * (dtype_bytes + 4 * k))


def forward_elements_per_token(g: ModelGeometry, tp: int) -> float:
    """Live elements per token of one decoder layer in the dummy forward pass, per TP rank:
    residual, normed input and two more hidden-wide tensors (not split by TP), the qkv output,
    the MLP's gate_up output [2·inter] and its activation [inter] (split by TP). For MoE, the
    fused-MoE intermediate caches hold top_k × (2·N + N) per token plus top_k × hidden."""
    inter = g.intermediate_size / tp
    mlp = (3 if g.gated_mlp else 2) * inter
    if g.moe:
        e = g.moe
        moe = e.experts_per_token * (3 * e.expert_intermediate_size / tp + g.hidden_size)
        if e.shared_intermediate_size:
            moe += 3 * e.shared_intermediate_size / tp
        dense = mlp if e.num_moe_layers < g.num_layers else 0
        mlp = max(dense, moe)
    return 3 * g.hidden_size + g.residual_width + (g.q_width + 2 * g.kv_width) / tp + mlp


def forward_bytes(g: ModelGeometry, dtype_bytes: float, tokens: int, tp: int) -> int:
    return int(
        C.GPU_FORWARD_FACTOR.value * tokens * forward_elements_per_token(g, tp) * dtype_bytes
    )


def moe_workspace_bytes(
    g: ModelGeometry, version: VllmVersion, dtype_bytes: float, tokens: int, tp: int
) -> int:
    """From 0.13 the fused-MoE modular kernel takes its two workspaces from a per-worker
    WorkspaceManager that keeps the largest size it was asked for (0.13.0 and
    0.19.0:vllm/v1/worker/workspace.py; 0.19.0:vllm/model_executor/layers/fused_moe/
    modular_kernel.py:1060-1068, shapes fused_moe.py:1988-1991: (M, top_k, max(N/2, K)) and
    (M, top_k, max(N, K)), N = 2·expert_inter/TP, K = hidden). After the profile's forward of
    max_num_batched_tokens it stays allocated while the sampler runs. Absent in 0.12.0."""
    if not g.moe or not version.at_least(0, 13):
        return 0
    e = g.moe
    n = 2 * e.expert_intermediate_size / tp
    k = g.hidden_size
    return int(tokens * e.experts_per_token * (max(n / 2, k) + max(n, k)) * dtype_bytes)


def activation_peak(
    g: ModelGeometry,
    version: VllmVersion,
    dtype_bytes: float,
    tokens: int,
    max_num_seqs: int,
    tp: int,
    pp: int,
    rank: str = "last",
) -> int:
    """torch peak increase of profile_run on one rank: the forward pass of
    max_num_batched_tokens, then (last PP stage only) the sampler over max_num_seqs rows while
    the [tokens, hidden] hidden states are still referenced (0.11.0:gpu_model_runner.py:3389-3400)."""
    fwd = forward_bytes(g, dtype_bytes, tokens, tp)
    if pp > 1 and rank != "last":
        return fwd
    samp = (
        sampler_bytes(g, version, dtype_bytes, max_num_seqs, tokens)
        + int(tokens * g.hidden_size * dtype_bytes)
        + moe_workspace_bytes(g, version, dtype_bytes, tokens, tp)
    )
    return max(fwd, samp)


def served_geometry(g: ModelGeometry, quantization: str | None) -> ModelGeometry:
    """--quantization fp8 on an unquantized checkpoint quantizes linear layers at load time
    (vLLM logs the post-quantization size)."""
    q = (quantization or "").lower()
    if g.quantization or q not in ("fp8",):
        return g
    return g.model_copy(
        update={"quantization": Quantization(method=q, bytes_per_param=QUANT_BYTES_PER_PARAM[q])}
    )


def _round_up(x: float, m: int) -> int:
    return int(math.ceil(x / m) * m)


def mxfp4_padding_bytes(g: ModelGeometry, tp: int) -> int:
    """MXFP4 experts as served: vLLM pads hidden to a multiple of 256 and the per-rank expert
    intermediate to a multiple of 128 for the Marlin path (0.19.0:vllm/model_executor/layers/
    fused_moe/oracle/mxfp4.py:380-385; TRTLLM pads both to 256, Triton the intermediate to 64).
    Returns the bytes added over the checkpoint's layout (all ranks)."""
    q = g.quantization
    if not (q and q.method == "mxfp4" and g.moe):
        return 0
    e = g.moe
    h, i = g.hidden_size, e.expert_intermediate_size
    hp, ip = _round_up(h, 256), _round_up(i / tp, 128) * tp
    per_expert = 3 * (hp * ip - h * i)
    return int(e.num_moe_layers * e.num_experts * per_expert * q.bytes_per_param)


def weights_per_rank(
    g: ModelGeometry, dtype_bytes: float, tp: int, pp: int, rank: str = "max"
) -> int:
    """Weights one GPU holds: everything sharded by TP (vocab-parallel embedding and lm_head
    included); with PP, a stage holds ceil(layers/pp) decoder layers plus the embedding (first
    stage) or the lm_head and final norm (last stage), vision tower on the first stage.
    Plus the rotary-embedding cos/sin caches, which every rank builds whole in the model dtype
    and vLLM logs inside "model weights take" (geometry._rope_cache_elements)."""
    total = g.weight_bytes(dtype_bytes) + mxfp4_padding_bytes(g, tp)
    rope = rope_cache_bytes(g, dtype_bytes)
    # parts every TP rank holds whole (DeepSeek-V4's replicated attention inputs, compressors,
    # indexers, hyper-connection mixers and router): counted whole on each rank
    replicated = g.tp_replicated_bytes(dtype_bytes) * (1 - 1 / tp)
    if pp == 1:
        return int(total / tp + replicated + rope)
    table = g.vocab_size * g.hidden_size * dtype_bytes
    tables = table * (1 if g.tie_word_embeddings else 2)
    vision = g.vision_parameters * dtype_bytes
    layers = max(total - tables - vision, 0)
    per_stage = layers * math.ceil(g.num_layers / pp) / g.num_layers
    first = per_stage + table + vision
    last = per_stage + table
    w = {"first": first, "last": last}.get(rank, max(first, last))
    return int(w / tp + replicated * math.ceil(g.num_layers / pp) / g.num_layers + rope)


def rope_cache_bytes(g: ModelGeometry, dtype_bytes: float) -> int:
    """Rotary cos/sin cache buffers of one rank, not split by TP (geometry._rope_cache_elements
    cites vLLM's source)."""
    return int(g.rope_cache_elements * (4 if g.rope_cache_fp32 else dtype_bytes))


def kv_bytes_per_token_per_rank(g: ModelGeometry, kv_dtype_bytes: float, tp: int, pp: int) -> float:
    """KV bytes one rank stores per token: its stage's layers, its share of the KV heads
    (heads are replicated when TP > kv_heads; MLA's latent is not split by TP); hybrid
    linear-attention layers hold no per-token KV."""
    if g.compressed_attention:
        # DeepSeek-V4: one shared KV head, every cache spec max_tp_shards=1 (replicated on
        # every TP rank, vLLM 0.33.0 models/deepseek_v4/attention.py:868-884, :912-925); PP
        # splits the layers
        n = len(g.compressed_attention.compress_ratios)
        return g.kv_bytes_per_token(kv_dtype_bytes) * math.ceil(n / pp) / max(n, 1)
    if g.attention_groups:
        # Gemma 4: per-layer shapes (geometry._read_gemma4); KV-shared layers hold no cache
        owned = [a for a in g.attention_groups if a.owns_kv]
        kv_layers = sum(a.layers for a in owned)
        elements = sum(a.layers * 2 * a.head_dim * max(a.kv_heads / tp, 1) for a in owned)
        return elements * math.ceil(kv_layers / pp) / max(kv_layers, 1) * kv_dtype_bytes
    layers = math.ceil(g.num_attention_layers / pp)
    per_layer: float
    if g.mla:
        per_layer = g.mla.kv_lora_rank + g.mla.qk_rope_head_dim
    else:
        per_layer = 2 * g.head_dim * max(g.num_kv_heads / tp, 1)
    return layers * per_layer * kv_dtype_bytes


def _by_version(
    table: tuple[tuple[tuple[int, ...], float, float, str], ...], version: VllmVersion, tp: int
) -> tuple[float, str]:
    for since, tp1, tpn, why in table:
        if version.at_least(*since):
            return (tp1 if tp == 1 else tpn), why
    _, tp1, tpn, why = table[-1]
    return (tp1 if tp == 1 else tpn), why


def non_torch_bytes(version: VllmVersion, tp: int) -> tuple[int, str]:
    """non_torch_increase per GPU (cuBLAS/NCCL workspaces, custom all-reduce buffers) from the
    init snapshot to after the profile run (0.11.0:vllm/utils/__init__.py:2854)."""
    v, why = _by_version(C.GPU_NON_TORCH_TABLE, version, tp)
    return int(v * GiB), why


def context_bytes(world: int) -> int:
    """CUDA context + NCCL memory already used when vLLM takes its init snapshot: outside the
    gpu_memory_utilization budget, but vLLM refuses to start when free memory then is below
    total × utilization (0.11.0:vllm/v1/worker/gpu_worker.py:183-195)."""
    c = C.GPU_CONTEXT_TP1 if world == 1 else C.GPU_CONTEXT_TPN
    return int(c.value * GiB)


def graph_pool_bytes(g: ModelGeometry, pp: int) -> int:
    """CUDA graph pool per GPU (vLLM's default capture sizes): dense models a line in decoder
    layers per stage over the fit rows, MoE models the largest MoE fit row."""
    if g.moe:
        return math.ceil(C.GPU_GRAPH_MOE.value * GiB)
    layers = math.ceil(g.num_layers / pp)
    return math.ceil(
        (C.GPU_GRAPH_DENSE_BASE.value + C.GPU_GRAPH_DENSE_PER_LAYER.value * layers) * GiB
    )


def context_inside_budget(version: VllmVersion) -> bool:
    """0.8.5's V1 worker subtracts all non-torch device memory, CUDA context included, from
    total × utilization (0.8.5:vllm/v1/worker/gpu_worker.py:180-210); 0.9.2 moved to the init
    snapshot + memory_profiling accounting (0.9.2:vllm/v1/worker/gpu_worker.py:140-151, 206-224).
    0.9.0-0.9.1 were not read: the older (larger) accounting is used for them. V0 rows
    (PR 10511, 0.6.5) log a non-torch figure that already includes the context."""
    return version.at_least(0, 8, 5) and not version.at_least(0, 9, 2)


def graphs_inside_budget(version: VllmVersion) -> bool:
    """Up to 0.19 the CUDA-graph pool is captured after the KV cache and is NOT subtracted
    (0.19.0:vllm/v1/worker/gpu_worker.py:395-399: only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1);
    from 0.20 it is estimated and subtracted by default (not read from a wheel here: assumed)."""
    return version.at_least(0, 20)


@dataclass
class DeviceSide:
    weights: int
    activation: int
    non_torch: int
    graphs: int
    context: int
    lora: int
    budget: int | None
    kv: int | None
    one_seq_kv: int
    per_token_kv: float
    fits: bool | None
    starts: bool | None
    notes: list[str]
    non_torch_source: str
    max_model_len_fit: int | None = None  # largest max_model_len whose one sequence fits
    max_num_seqs_fit: int | None = None  # largest max_num_seqs that leaves one sequence room


def device_side(
    g: ModelGeometry,
    version: VllmVersion,
    *,
    dtype_bytes: float,
    kv_dtype_bytes: float,
    tokens: int,
    max_num_seqs: int,
    max_model_len: int,
    tp: int,
    pp: int,
    util: float,
    gpu_memory_bytes: int | None,
    enforce_eager: bool,
    cpu_offload_bytes: float = 0,
    lora_bytes: int = 0,
    kv_cache_memory_bytes: int | None = None,
) -> DeviceSide:
    """The worst rank of one engine (the last PP stage: it holds the lm_head and runs the
    sampler)."""
    notes: list[str] = []
    w = max(weights_per_rank(g, dtype_bytes, tp, pp, "max") - cpu_offload_bytes, 0)
    act = activation_peak(g, version, dtype_bytes, tokens, max_num_seqs, tp, pp, "last")
    nt, nt_why = non_torch_bytes(version, tp)
    graphs = 0 if enforce_eager else graph_pool_bytes(g, pp)
    ctx = context_bytes(tp * pp)
    if not version.at_least(0, 8, 5):
        ctx = 0  # V0: the logged non-torch figure includes the context (table value)
    elif context_inside_budget(version):
        nt, ctx = nt + ctx, 0
        nt_why += "; + the CUDA context, which vLLM 0.8.5-0.9.1 subtract inside the budget"
    per_tok = kv_bytes_per_token_per_rank(g, kv_dtype_bytes, tp, pp)
    one_seq = int(per_tok * max_model_len)
    inside = graphs if graphs_inside_budget(version) else 0
    if inside:
        notes.append(
            "CUDA graph memory subtracted from the KV cache from vLLM 0.20 (assumed: "
            "0.19 does so only with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1)"
        )
    if version.at_least(0, 9) and not version.at_least(0, 9, 2):
        notes.append(
            "vLLM 0.9.0-0.9.1 profiler not read: the 0.8.5 accounting (CUDA context "
            "inside the budget) is assumed"
        )
    if "assumed" in nt_why and tp > 1:
        notes.append(f"non-torch device memory at TP {tp}: {nt_why}")
    if gpu_memory_bytes is None:
        return DeviceSide(
            int(w),
            act,
            nt,
            graphs,
            ctx,
            lora_bytes,
            None,
            None,
            one_seq,
            per_tok,
            None,
            None,
            notes,
            nt_why,
        )
    budget = int(gpu_memory_bytes * util)
    kv: float
    if kv_cache_memory_bytes:
        kv = int(kv_cache_memory_bytes)
        notes.append(
            "--kv-cache-memory-bytes set: vLLM skips the utilization budget; the KV "
            "cache has exactly that size"
        )
        used = w + lora_bytes + nt + act + kv + graphs + ctx
        fits = used <= gpu_memory_bytes
    else:
        kv = budget - (w + lora_bytes + nt + act + inside)
        fits = kv >= one_seq
        if not fits:
            # Deny only what surely fails: the lower bound takes the derived forward pass
            # without the fitted factor, the sampler's unavoidable logits + fp32 copy, no
            # non-torch memory and no graph estimate.
            rows = sampler_rows(max_num_seqs, tokens)
            low_act = max(
                forward_bytes(g, dtype_bytes, tokens, tp) / C.GPU_FORWARD_FACTOR.value,
                rows * g.vocab_size * (dtype_bytes + 4),
            )
            kv_low = budget - (w + lora_bytes + low_act)
            if kv_low >= one_seq:
                fits = None
                notes.append(
                    f"GPU may not fit: the upper estimate leaves {max(kv, 0) / GiB:.2f} GiB "
                    f"of KV cache, {one_seq / GiB:.2f} GiB needed for one max_model_len "
                    f"sequence; the lower bound ({kv_low / GiB:.2f} GiB) fits, so this is "
                    "not a denial (vLLM's own profile decides)"
                )
    len_fit = seqs_fit = None
    if not kv_cache_memory_bytes:
        room = budget - (w + lora_bytes + nt + inside)
        len_fit = int((room - act) // per_tok) // 16 * 16 if room - act > 0 else 0
        lo, hi = 0, max_num_seqs
        while hi > lo:  # activation grows with the sampled rows; KV needs one sequence
            mid = (lo + hi + 1) // 2
            a = activation_peak(g, version, dtype_bytes, tokens, mid, tp, pp, "last")
            lo, hi = (mid, hi) if room - a >= one_seq else (lo, mid - 1)
        seqs_fit = lo
        if fits is not True:
            notes.append(
                "fits with --max-model-len "
                + (
                    f"{len_fit}"
                    if len_fit >= 16
                    else "(none: weights and activation alone exceed the budget)"
                )
                + (f", or --max-num-seqs {seqs_fit}" if seqs_fit else "")
                + " (or a higher gpu_memory_utilization, more TP)"
            )
    starts = budget + ctx <= gpu_memory_bytes if version.at_least(0, 9, 2) else True
    if not starts:
        notes.append(
            f"gpu_memory_utilization {util:g} × {gpu_memory_bytes / GiB:.1f} GiB exceeds "
            f"the memory free at startup (CUDA context {ctx / GiB:.2f} GiB already "
            "used): vLLM refuses to start"
        )
    outside = graphs - inside
    if outside and budget + ctx + outside > gpu_memory_bytes:
        notes.append(
            f"CUDA graphs ({outside / GiB:.2f} GiB) are captured after the KV cache, "
            "outside gpu_memory_utilization, and may not fit in the rest of the GPU: "
            "lower gpu_memory_utilization or use --enforce-eager"
        )
    return DeviceSide(
        int(w),
        act,
        nt,
        graphs,
        ctx,
        lora_bytes,
        budget,
        int(kv),
        one_seq,
        per_tok,
        fits,
        starts,
        notes,
        nt_why,
        len_fit,
        seqs_fit,
    )
