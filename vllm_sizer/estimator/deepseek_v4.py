"""DeepSeek-V4 (model_type deepseek_v4, DeepseekV4ForCausalLM): the shapes vLLM 0.33.0 builds
from its config.json, for ModelGeometry.

Every number cites the vLLM 0.33.0 wheel (vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl; paths
under vllm/) or the config class transformers ships (models/deepseek_v4/
configuration_deepseek_v4.py, huggingface/transformers@015c078164151a049126942989817713e83a8f3e).

The stack (nvidia/model.py, the CUDA build; amd/ and cpu/ build the same parameters):
- every decoder layer is attention + MoE (no dense layers, no first_k_dense_replace); its type
  comes from compress_ratios (one entry per layer, MTP layers appended): 0 sliding-window
  attention only, 4 compressed sparse attention (CSA: a compressor and a lightning indexer),
  128 heavily compressed attention (HCA: a compressor) (transformers
  configuration_deepseek_v4.py _COMPRESS_RATIO_TO_LAYER_TYPE; vLLM models/deepseek_v4/
  attention.py:237-244 reads compress_rates per layer type, MTP layers ratio 1);
- the first num_hash_layers MoE layers route by a token-id table instead of the gate's scores
  (transformers __post_init__ mlp_layer_types; nvidia/model.py:286-301);
- manifold-constrained hyper-connections: the residual stream is hc_mult copies of the hidden
  state, mixed by per-layer fp32 parameters (nvidia/model.py:617-664, :883-900);
- the MTP layer (num_nextn_predict_layers) is dropped by the main model's weight mapper
  (nvidia/model.py:1257, :1267 "mtp.": None); vLLM builds it only as a speculative draft, so
  it is not counted here (mtp_parameters() gives its size, for comparison with the
  checkpoint's total).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from .errors import MissingConfigField

# Bytes per stored parameter of the formats a DeepSeek-V4 checkpoint holds (scales included):
# FP8 block 128x128 with one scale per block (quantization_config weight_block_size) ≈ 1.0;
# MXFP4 experts (quant_config.py:226-227 Mxfp4MoEMethod): 32-element blocks of 4-bit values plus
# one 8-bit UE8M0 scale = 4.25 bits; NVFP4 experts (quant_config.py:217-225,
# ModelOptNvFp4FusedMoE, group_size 16): 4-bit values plus one FP8 scale per 16 = 4.5 bits.
EXPERT_BYTES = {"mxfp4": 4.25 / 8, "nvfp4": 4.5 / 8, "fp8": 1.0}
FP8_BYTES = 1.0
# quant_methods vLLM routes to DeepseekV4FP8Config (quant_config.py:171-189: fp8 and
# deepseek_v4_fp8; quark is rerouted onto it, :191-205), and the name rules' NVFP4 spelling
V4_QUANT_METHODS = {"fp8", "deepseek_v4_fp8", "quark", "nvfp4", "modelopt_fp4"}

# KV cache layout vLLM 0.33.0 uses on its default CUDA / CPU backends: fp8_ds_mla
# (DeepseekV4Attention.use_fp8_ds_mla_layout = True, attention.py:152; "auto" resolves to
# fp8_ds_mla, attention.py:107-128). One compressed state: 448 B NoPE fp8 + 128 B RoPE bf16 +
# 8 B scales = 584 B (attention.py:880-882, state_content_bytes=584); pages rounded up to 576 B
# (alignment, attention.py:874; kv_cache_interface.py:719-725 _apply_alignment_padding);
# FlashMLA's kernel block is 256 tokens (sparse_mla.py:60-61).
MAIN_STATE_BYTES = 584
PAGE_ALIGNMENT = 576
BLOCK_TOKENS = 256
# The indexer's K cache, fp8 (the default indexer_kv_dtype, v1/attention/backends/mla/
# indexer.py:60-68): index_head_dim fp8 bytes + one fp32 scale per 128 (attention.py:1022-1029).
INDEXER_QUANT_BLOCK = 128
# DeepseekV4Config.default_compress_rates (transformers configuration_deepseek_v4.py)
DEFAULT_COMPRESS_RATES = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}


class CompressedAttention(BaseModel, frozen=True):
    """DeepSeek-V4 attention and residual shapes (see the module docstring)."""

    head_dim: int  # one shared KV head of head_dim (num_key_value_heads 1)
    rope_head_dim: int
    q_lora_rank: int
    o_groups: int
    o_lora_rank: int
    index_n_heads: int
    index_head_dim: int
    sliding_window: int
    hc_mult: int
    compress_ratios: tuple[int, ...]  # the main decoder layers' (MTP entries dropped)
    hash_layers: int
    mtp_layers: int
    expert_format: str | None  # "mxfp4" | "nvfp4" | "fp8"; None: unquantized checkpoint

    @property
    def csa_layers(self) -> int:
        return sum(1 for r in self.compress_ratios if r == 4)

    @property
    def hca_layers(self) -> int:
        return sum(1 for r in self.compress_ratios if r > 4)


def read_deepseek_v4(c: Mapping[str, Any], layers: int) -> CompressedAttention:
    """The V4 keys of a config.json; defaults are DeepseekV4Config's (transformers)."""
    ratios = [int(r) for r in (c.get("compress_ratios") or [])]
    types = c.get("layer_types")
    if len(ratios) < layers and isinstance(types, list) and len(types) >= layers:
        # the upstream config's spelling (vllm/transformers_utils/deepseek_v4_utils.py:6-20
        # get_compress_ratios): layer_types rated by compress_rates, sliding layers 0
        rates = c.get("compress_rates")
        rates = rates if isinstance(rates, Mapping) else DEFAULT_COMPRESS_RATES
        ratios = [int(rates.get(str(t), 0)) for t in types]
    if len(ratios) < layers:
        # DeepseekV4Config's default schedule (transformers __post_init__): two HCA layers,
        # then HCA / CSA alternating
        ratios = [128] * min(layers, 2) + [4 if i % 2 else 128 for i in range(max(layers - 2, 0))]
    q = c.get("quantization_config")
    expert_format: str | None = None
    method = str(q.get("quant_method") or "").lower() if isinstance(q, Mapping) else ""
    if method and method not in V4_QUANT_METHODS:
        raise MissingConfigField(
            "quantization_config",
            f"quant_method {method!r}: vLLM 0.33.0 loads DeepSeek-V4 with FP8-block linears and "
            "MXFP4 / NVFP4 / FP8 experts only (models/deepseek_v4/quant_config.py:171-189)",
        )
    if isinstance(q, Mapping) and method:
        if str(q.get("moe_quant_algo") or "").upper() == "NVFP4" or str(
            q.get("quant_method")
        ).lower() in ("nvfp4", "modelopt_fp4"):
            expert_format = "nvfp4"  # quant_config.py:217-225
        elif str(c.get("expert_dtype") or "fp4") == "fp4":
            expert_format = "mxfp4"  # expert_dtype defaults to fp4: quant_config.py:89-109
        else:
            expert_format = "fp8"  # expert_dtype "fp8": Fp8Config's block FP8 (:228-229)
    return CompressedAttention(
        head_dim=int(c.get("head_dim") or 512),
        rope_head_dim=int(c.get("qk_rope_head_dim") or 64),
        q_lora_rank=int(c.get("q_lora_rank") or 1024),
        o_groups=int(c.get("o_groups") or 8),
        o_lora_rank=int(c.get("o_lora_rank") or 1024),
        index_n_heads=int(c.get("index_n_heads") or 64),
        index_head_dim=int(c.get("index_head_dim") or 128),
        sliding_window=int(c.get("sliding_window") or 128),
        hc_mult=int(c.get("hc_mult") or 4),
        compress_ratios=tuple(ratios[:layers]),
        hash_layers=min(_hash_layers(c), layers),
        mtp_layers=int(c.get("num_nextn_predict_layers") or 0),
        expert_format=expert_format,
    )


def _hash_layers(c: Mapping[str, Any]) -> int:
    """Hash-routed MoE layers: mlp_layer_types' hash_moe entries, else num_hash_layers
    (DeepseekV4Config default 3); vLLM counts config.mlp_layer_types (nvidia/model.py:604-608)."""
    types = c.get("mlp_layer_types")
    if isinstance(types, list) and types:
        return sum(1 for t in types if str(t) == "hash_moe")
    n = c.get("num_hash_layers")
    return 3 if n is None else int(n)


class V4Parts(BaseModel, frozen=True):
    """Parameters of the text model by how the checkpoint stores them."""

    fp8: int  # quantized linears (FP8 block) when the checkpoint is quantized
    bf16: int  # unquantized linears (quant_config=None), embeddings, lm_head, norms
    fp32: int  # hyper-connection mixers, compressor ape, attention sinks, router bias
    int32: int  # hash-routing tables tid2eid
    experts: int  # routed experts (MXFP4 / NVFP4 / FP8)

    @property
    def total(self) -> int:
        return self.fp8 + self.bf16 + self.fp32 + self.int32 + self.experts


def _compressor(hidden: int, head_dim: int, ratio: int) -> tuple[int, int]:
    """(bf16, fp32) parameters of one DeepseekCompressor (compressor.py:239-280): overlap when
    ratio 4 (coff 2); ape (ratio, coff·head_dim) fp32; fused_wkv_wgate Linear(h, 2·coff·
    head_dim) with quant_config=None; norm RMSNorm(head_dim)."""
    coff = 2 if ratio == 4 else 1
    return hidden * 2 * coff * head_dim + head_dim, ratio * coff * head_dim


def layer_parts(
    a: CompressedAttention, hidden: int, heads: int, ratio: int
) -> tuple[int, int, int]:
    """(fp8, bf16, fp32) attention + hyper-connection parameters of one decoder layer."""
    d, ql = a.head_dim, a.q_lora_rank
    # attention.py:250 attn_sink (heads, fp32); :252-259 fused_wqa_wkv Linear(h, q_lora +
    # head_dim); :261-268 wq_b Linear(q_lora, heads·head_dim); :271-280 wo_a, the grouped output
    # projection Linear(heads·head_dim / o_groups, o_groups·o_lora_rank) (a bmm over the
    # groups); :281-288 wo_b Linear(o_groups·o_lora_rank, h); :260 q_norm, :270 kv_norm
    fp8 = hidden * (ql + d) + ql * heads * d + heads * d * a.o_lora_rank
    fp8 += a.o_groups * a.o_lora_rank * hidden
    bf16 = ql + d
    fp32 = heads
    if ratio > 1:  # attention.py:368-378: a compressor over head_dim
        b, f = _compressor(hidden, d, ratio)
        bf16, fp32 = bf16 + b, fp32 + f
    if ratio == 4:
        # attention.py:302-320 the indexer, C4 layers only: :990-996 wq_b Linear(q_lora,
        # index_heads·index_head_dim) quantized; :997-1003 weights_proj Linear(h, index_heads)
        # with quant_config=None; :1037-1046 its own compressor over index_head_dim
        fp8 += ql * a.index_n_heads * a.index_head_dim
        b, f = _compressor(hidden, a.index_head_dim, 4)
        bf16, fp32 = bf16 + hidden * a.index_n_heads + b, fp32 + f
    # nvidia/model.py:621-664: hc_attn_fn / hc_ffn_fn (mix, hc·h), hc_*_base (mix),
    # hc_*_scale (3), mix = (2 + hc)·hc, all fp32
    hc = a.hc_mult
    mix = (2 + hc) * hc
    fp32 += 2 * (mix * hc * hidden + mix + 3)
    return fp8, bf16, fp32


def parts(
    a: CompressedAttention,
    *,
    hidden: int,
    heads: int,
    vocab: int,
    experts: int,
    experts_per_token: int,
    expert_width: int,
    shared_width: int,
) -> V4Parts:
    fp8 = bf16 = fp32 = int32 = routed = 0
    for i, ratio in enumerate(a.compress_ratios):
        f8, b16, f32 = layer_parts(a, hidden, heads, ratio)
        fp8, bf16, fp32 = fp8 + f8, bf16 + b16, fp32 + f32
        # MoE (nvidia/model.py): :268-274 gate Linear(h, experts) bf16 (GateLinear, fp32 out);
        # :286-301 hash layers tid2eid (vocab, experts_per_token) int32; :302-311 the others
        # e_score_correction_bias (experts) fp32 (topk_method noaux_tc); :326-341 shared
        # experts gate_up / down of moe_intermediate_size·n_shared_experts; routed experts
        # w13 / w2 of moe_intermediate_size
        bf16 += hidden * experts
        if i < a.hash_layers:
            int32 += vocab * experts_per_token
        else:
            fp32 += experts
        fp8 += 3 * hidden * shared_width
        routed += experts * 3 * hidden * expert_width
        bf16 += 2 * hidden  # attn_norm, ffn_norm (nvidia/model.py:615-616)
    # embed_tokens and lm_head (tie_word_embeddings false; the NVFP4 checkpoints' ignore list
    # keeps "head" unquantized), the final norm (nvidia/model.py:855-879); hc_head_fn (hc,
    # hc·h), hc_head_base (hc), hc_head_scale (1), fp32 (:883-900)
    bf16 += 2 * vocab * hidden + hidden
    fp32 += a.hc_mult * a.hc_mult * hidden + a.hc_mult + 1
    return V4Parts(fp8=fp8, bf16=bf16, fp32=fp32, int32=int32, experts=routed)


def mtp_parts(
    a: CompressedAttention,
    *,
    hidden: int,
    heads: int,
    experts: int,
    expert_width: int,
    shared_width: int,
) -> V4Parts:
    """The checkpoint's MTP layers, which vLLM loads only as a speculative draft
    (nvidia/mtp.py:98-145): enorm, hnorm, e_proj and h_proj Linear(h, h) (quantized), hc_head_*
    (fp32), the shared head's norm, and one decoder layer at compress ratio 1 (sliding window
    only, attention.py:241-242) with a non-hash MoE; the embedding and head are the main
    model's. For comparing with the checkpoint's total size; not part of the served model."""
    f8, b16, f32 = layer_parts(a, hidden, heads, 1)
    hc, n = a.hc_mult, a.mtp_layers
    return V4Parts(
        fp8=n * (f8 + 3 * hidden * shared_width + 2 * hidden * hidden),
        bf16=n * (b16 + hidden * experts + 2 * hidden + 3 * hidden),
        fp32=n * (f32 + experts + hc * hc * hidden + hc + 1),
        int32=0,
        experts=n * experts * 3 * hidden * expert_width,
    )


def weight_bytes(p: V4Parts, a: CompressedAttention, dtype_bytes: float) -> int:
    """Checkpoint bytes vLLM loads: FP8-block linears at 1 byte (or the model dtype when the
    checkpoint is unquantized), experts at their format, unquantized linears, embeddings and
    norms at the model dtype, fp32 and int32 tensors at 4 bytes."""
    if a.expert_format is None:
        return int((p.fp8 + p.bf16 + p.experts) * dtype_bytes + 4 * (p.fp32 + p.int32))
    return int(
        p.fp8 * FP8_BYTES
        + p.experts * EXPERT_BYTES[a.expert_format]
        + p.bf16 * dtype_bytes
        + 4 * (p.fp32 + p.int32)
    )


def tp_replicated_bytes(
    a: CompressedAttention,
    *,
    hidden: int,
    vocab: int,
    experts: int,
    experts_per_token: int,
    dtype_bytes: float,
) -> int:
    """Bytes every TP rank holds whole (not split by tensor parallelism): fused_wqa_wkv
    (disable_tp, attention.py:252-259), q_norm / kv_norm, the compressors (fused_wkv_wgate
    disable_tp and ape, compressor.py:261-279), the indexer (ReplicatedLinear wq_b and
    weights_proj, attention.py:989-1003), the hyper-connection mixers and norms (plain
    Parameters, nvidia/model.py:615-664, :879-900), the router gate, its bias and the hash
    tables (nvidia/model.py:268-311). The rest (wq_b, wo_a, wo_b, shared and routed experts,
    vocab-parallel embedding and lm_head) is split."""
    quantized = a.expert_format is not None
    fp8_bytes = FP8_BYTES if quantized else dtype_bytes
    hc = a.hc_mult
    mix = (2 + hc) * hc
    fp8 = bf16 = fp32 = int32 = 0
    for i, r in enumerate(a.compress_ratios):
        fp8 += hidden * (a.q_lora_rank + a.head_dim)
        bf16 += a.q_lora_rank + a.head_dim + 2 * hidden + hidden * experts
        fp32 += 2 * (mix * hc * hidden + mix + 3)
        if r > 1:
            b, f = _compressor(hidden, a.head_dim, r)
            bf16, fp32 = bf16 + b, fp32 + f
        if r == 4:
            fp8 += a.q_lora_rank * a.index_n_heads * a.index_head_dim
            b, f = _compressor(hidden, a.index_head_dim, 4)
            bf16, fp32 = bf16 + hidden * a.index_n_heads + b, fp32 + f
        if i < a.hash_layers:
            int32 += vocab * experts_per_token
        else:
            fp32 += experts
    fp32 += hc * hc * hidden + hc + 1
    bf16 += hidden
    return int(fp8 * fp8_bytes + bf16 * dtype_bytes + 4 * (fp32 + int32))


def _page_bytes(state_bytes: int, ratio: int) -> int:
    """One page of BLOCK_TOKENS tokens: BLOCK_TOKENS / ratio states (kv_cache_interface.py:
    270-275 get_num_kernel_states; :586-602 page = heads·states·state bytes), rounded up to
    PAGE_ALIGNMENT (:719-725)."""
    raw = (BLOCK_TOKENS // ratio) * state_bytes
    return -(-raw // PAGE_ALIGNMENT) * PAGE_ALIGNMENT


def kv_bytes_per_token(a: CompressedAttention) -> float:
    """Per-token KV bytes of the caches that grow with the context, in vLLM's fp8_ds_mla
    layout: each compressed layer's MLAAttentionSpec (attention.py:859-884, one 584 B state per
    `ratio` tokens) and each CSA layer's indexer K cache (attention.py:912-925, one
    index_head_dim + 4·index_head_dim/128 B state per 4 tokens), per page of 256 tokens with
    the 576 B alignment. Sliding-window-only layers (ratio 0) keep no per-token cache.
    vLLM packs the mixed page sizes block-outermost (the indexer backend's layout BLHNC,
    v1/attention/backends/mla/indexer.py:314-315; v1/core/kv_cache_planning.py:914-1041
    _get_packed_kv_cache_groups) without equalising pages, so a block of 256 tokens costs the
    sum of these pages."""
    index_state = a.index_head_dim + a.index_head_dim // INDEXER_QUANT_BLOCK * 4
    total = 0
    for r in a.compress_ratios:
        if r > 1:
            total += _page_bytes(MAIN_STATE_BYTES, r)
        if r == 4:
            total += _page_bytes(index_state, 4)
    return total / BLOCK_TOKENS


def per_sequence_cache_bytes(a: CompressedAttention) -> int:
    """Caches bounded per sequence, not per token (not in kv_bytes_per_token): every layer's
    sliding-window cache, window tokens of 584 B (v1/attention/backends/mla/sparse_swa.py:
    120-147, a SlidingWindowMLASpec), and each compressor's fp32 state, coff·ratio tokens of
    2·coff·head_dim floats (compressor.py:157-160, :282-287). At block granularity vLLM holds
    more (whole blocks, plus the tokens in flight): this is the floor."""
    swa = len(a.compress_ratios) * a.sliding_window * MAIN_STATE_BYTES
    state = 0
    for r in a.compress_ratios:
        for d, present in ((a.head_dim, r > 1), (a.index_head_dim, r == 4)):
            if present:
                coff = 2 if r == 4 else 1
                state += coff * r * 2 * coff * d * 4
    return swa + state


def rope_cache_elements(a: CompressedAttention, max_position: int, c: Mapping[str, Any]) -> int:
    """fp32 cos/sin cache elements: the sliding layers' rope (deepseek_yarn at factor 1 over
    max_position_embeddings rows) and the compressed layers' (original_max_position × factor
    rows), rope_head_dim wide each (models/deepseek_v4/common/rope.py:20-46;
    rotary_embedding/__init__.py:66 rotary_dim = rope_dim, :284-311;
    deepseek_scaling_rope.py:234-251 an fp32 buffer of max_position·factor rows)."""
    rows = max_position
    if any(r > 1 for r in a.compress_ratios):
        p = c.get("rope_scaling") or c.get("rope_parameters") or {}
        if isinstance(p, Mapping) and isinstance(p.get("compress"), Mapping):
            p = p["compress"]
        scaled = isinstance(p, Mapping) and (p.get("rope_type") or p.get("type") or "default")
        if isinstance(p, Mapping) and scaled != "default":
            orig = int(p.get("original_max_position_embeddings") or max_position)
            rows += int(orig * float(p.get("factor") or 1.0))
        else:  # unscaled: factor 1 over max_position rows, at compress_rope_theta
            rows += max_position
    return rows * a.rope_head_dim


def notes(a: CompressedAttention) -> list[str]:
    """What the DeepSeek-V4 estimate assumes, for the report."""
    per_seq = per_sequence_cache_bytes(a) / 2**20
    return [
        f"DeepSeek-V4 KV cache: {kv_bytes_per_token(a):.2f} bytes/token in vLLM's fp8_ds_mla "
        f"layout ({a.csa_layers} CSA layers: 584 B per 4 tokens + the indexer's fp8 keys; "
        f"{a.hca_layers} HCA layers: 584 B per 128 tokens; 256-token pages padded to 576 B), "
        "whatever --kv-cache-dtype says (vLLM 0.33.0 resolves auto to fp8_ds_mla on its "
        "FlashMLA backend); the FlashInfer backend's bf16 rows are not modelled",
        f"DeepSeek-V4 per-sequence caches not counted per token: sliding-window KV and "
        f"compressor states, at least {per_seq:.1f} MiB per running sequence (vLLM holds whole "
        "blocks of them, so more)",
        f"DeepSeek-V4: the checkpoint's {a.mtp_layers} MTP layer(s) are not counted (vLLM loads "
        "them only as a speculative draft)",
    ]
