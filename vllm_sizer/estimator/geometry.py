"""Model geometry: the shape of a transformer, read once from a Hugging Face config.json dict.

Everything downstream (weights, KV cache, LoRA buffers, the CPU LoRA scratch) is computed from
this typed model, never from the raw dict. Parameter counts are derived from the layer shapes
of the reference implementations (transformers / vLLM model files) and checked in tests against
published counts (the catalog entries' "published_parameters", tests/estimator/test_catalog.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from pydantic import BaseModel

from .deepseek_v4 import (
    EXPERT_BYTES,
    FP8_BYTES,
    CompressedAttention,
    V4Parts,
    layer_parts,
    read_deepseek_v4,
)
from .deepseek_v4 import kv_bytes_per_token as v4_kv_bytes_per_token
from .deepseek_v4 import parts as v4_parts
from .deepseek_v4 import rope_cache_elements as v4_rope_cache_elements
from .deepseek_v4 import tp_replicated_bytes as v4_tp_replicated_bytes
from .deepseek_v4 import weight_bytes as v4_weight_bytes
from .errors import ImpossibleEstimate, InvalidConfigField, MissingConfigField

# Model types whose MLP is two matrices (up, down) with biases, not a gated three-matrix MLP.
# Source: the transformers modeling files of each (OPTDecoderLayer.fc1/fc2, GPT2MLP, ...).
NON_GATED_MLP_TYPES = {
    "opt",
    "gpt2",
    "gpt_neox",
    "gptj",
    "phi",
    "falcon",
    "bloom",
    "mpt",
    "starcoder2",
    "gpt_bigcode",
    "refinedweb",
    "refinedwebmodel",
    "nemotron_h",  # NemotronHMLP / NemotronHMoE experts: up_proj, relu2, down_proj
    "bert",
    "roberta",
    "xlm-roberta",
    "persimmon",  # PersimmonMLP: dense_h_to_4h, relu2, dense_4h_to_h (adept persimmon, fuyu)
}
# BERT-style encoders (embedding / reranking models): every linear and LayerNorm has a bias, the
# embeddings add learned position and token-type tables and a LayerNorm, and BertModel /
# XLMRobertaModel checkpoints carry a pooler (Linear(h, h)). Source: transformers
# models/bert/modeling_bert.py (BertEmbeddings, BertSelfAttention, BertSelfOutput,
# BertIntermediate, BertOutput, BertPooler); models/xlm_roberta/modeling_xlm_roberta.py the same.
ENCODER_TYPES = {"bert", "roberta", "xlm-roberta"}
# Every linear (q/k/v, o, MLP) and LayerNorm carries a bias: OPT, GPT-2, the encoders and
# Persimmon (transformers PersimmonAttention query_key_value/dense and PersimmonMLP, bias=True).
BIASED_LINEAR_TYPES = {"opt", "gpt2", "persimmon"} | ENCODER_TYPES
# Falcon checkpoints published before transformers' FalconConfig carry model_type RefinedWeb /
# RefinedWebModel (transformers FalconConfig reads them; vLLM maps RWConfig to FalconConfig).
FALCON_TYPES = {"falcon", "refinedweb", "refinedwebmodel"}
# BLOOM: every linear and LayerNorm carries a bias and the embeddings pass through their own
# LayerNorm (transformers models/bloom/modeling_bloom.py: BloomAttention.query_key_value and
# dense with bias, BloomMLP dense_h_to_4h / dense_4h_to_h with bias,
# BloomModel.word_embeddings_layernorm); its width is n_embed. GPT-NeoX (Pythia) likewise
# biases query_key_value, dense, dense_h_to_4h and dense_4h_to_h (modeling_gpt_neox.py).
# Phi-3-small too (modeling_phi3_small.py: query_key_value / dense / up_proj / down_proj are
# nn.Linear with bias, its norms nn.LayerNorm); its MLP width is ff_intermediate_size
# (up_proj: hidden -> 2 * ff_intermediate_size, gegelu-gated).
ALL_BIAS_TYPES = {"opt", "gpt2", "bloom", "gpt_neox", "phi3small"}
EMBED_NORM_TYPES = {"bloom"}
# Model types with a bias on q/k/v projections (Qwen2Attention: q_proj(bias=True) ...).
QKV_BIAS_TYPES = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_5_omni_text"}
# Model types with RMSNorm on q and k per head (Qwen3Attention.q_norm/k_norm, Gemma3Attention).
QK_NORM_TYPES = {
    "qwen3",
    "qwen3_moe",
    "gemma3",
    "gemma3_text",
    "olmo2",
    "qwen3_vl_text",
    "qwen3_vl_moe_text",
    "qwen3_next",
    "qwen3_5_text",
    "qwen3_5_moe_text",
}  # Qwen3-VL text: Qwen3VLTextAttention.q_norm; Qwen3-Next / Qwen3.5 full-attention layers too
# MoE types whose shared expert has a scalar sigmoid gate (see MoE.shared_expert_gate).
SHARED_EXPERT_GATE_TYPES = {"qwen2_moe", "qwen3_next", "qwen3_5_moe_text"}
# Gemma 2/3 decoder layers hold four norms (input, post-attn, pre-ffn, post-ffn), others two;
# GLM-4-0414 adds post_self_attn_layernorm and post_mlp_layernorm (transformers Glm4DecoderLayer).
FOUR_NORM_TYPES = {"gemma2", "gemma3", "gemma3_text", "glm4"}
# q/k RMSNorm per head only when the config's use_qk_norm says so (Glm4MoeAttention; Hunyuan
# remote code HunYuanAttention.query_layernorm / key_layernorm).
QK_NORM_FLAG_TYPES = {"glm4_moe", "hunyuan", "hunyuan_v1_moe", "hunyuan_v1_dense"}
# attention_bias puts a bias on q/k/v only, o_proj has none: transformers Glm4Attention and
# Glm4MoeAttention (o_proj bias=False); Glm4MoeAttention also has q/k RMSNorm when use_qk_norm.
QKV_ONLY_BIAS_TYPES = {"glm4", "glm4_moe"}
# Decoder checkpoints saved without an LM head (embedding models such as
# intfloat/e5-mistral-7b-instruct, architectures ["MistralModel"]): vLLM serves them as pooling
# models and drops lm_head (vllm/model_executor/models/adapters.py, ModelForPooling), so only
# the embedding table is vocab-sized even when tie_word_embeddings is false.
HEADLESS_DECODER_ARCHITECTURES = {
    "MistralModel",
    "LlamaModel",
    "Qwen2Model",
    "Qwen3Model",
    "GemmaModel",
    "Gemma2Model",
}

# Bytes per parameter of quantized linear weights, including scales: derived from each format.
# awq/gptq 4-bit, group 128: 4 bits + fp16 scale + 4-bit zero per 128 weights = 4.16 bits.
# fp8 (block 128x128 scales, DeepSeek-V3): 8 bits + one fp32 per 16384 weights ≈ 1.0 byte.
# mxfp4 (OCP MX spec): 32-element blocks of 4-bit values + one 8-bit scale = 4.25 bits.
QUANT_BYTES_PER_PARAM: dict[str, float] = {
    "awq": 4.16 / 8,
    "gptq": 4.16 / 8,
    "awq_marlin": 4.16 / 8,
    "gptq_marlin": 4.16 / 8,
    "bitsandbytes": 4.0 / 8 + 1 / 64,  # nf4, blocksize 64 absmax fp32 quantized to 8 bit ≈ 4.13
    "fp8": 1.0,
    "compressed-tensors": 1.0,  # most published compressed-tensors checkpoints are w8a8 fp8/int8
    "mxfp4": 4.25 / 8,
    # NVFP4 (NVIDIA ModelOpt): 4-bit E2M1 values, one FP8 E4M3 scale per 16 values (plus one
    # fp32 per tensor) = 4.5 bits.
    "nvfp4": 4.5 / 8,
    "modelopt_fp4": 4.5 / 8,
}


# Phi-3(.5)-vision configs name their image tower only ("img_processor"); vLLM builds it from a
# fixed CLIP ViT-L/14-336 config (vllm/model_executor/models/phi3v.py,
# CLIP_VIT_LARGE_PATCH14_336_CONFIG: hidden 1024, intermediate 4096, 24 layers, patch 14).
PHI3V_CLIP_VISION: dict[str, Any] = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "patch_size": 14,
}

# Molmo (allenai/Molmo-7B-D-0924, model_type molmo): ff_proj emits intermediate_size and is
# split into the two SwiGLU halves, ff_out reads intermediate_size // 2 (vLLM molmo.py
# LanguageModelMLP); q/k/v carry a bias when qkv_bias. Its config names no image tower; vLLM
# builds OpenAI CLIP ViT-L/14-336 and uses 23 of its layers (molmo.py VisionBackboneConfig:
# image_emb_dim 1024, image_mlp_dim 4096, image_num_layers 23, image_patch_size 14); its 2x2
# pooling attention and projector MLP (about 0.11B for Molmo-7B-D) are not counted.
MOLMO_CLIP_VISION: dict[str, Any] = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 23,
    "patch_size": 14,
}

# Hub configs list only non-default keys; these are the defaults of the config classes they
# omit (transformers Gemma3TextConfig.__init__ defaults), so sparse configs read correctly.
MODEL_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "vocab_size": 262208,
        "max_position_embeddings": 131072,
        "sliding_window_pattern": 6,
        "tie_word_embeddings": True,
    },
}


# Composite (multimodal) configs serialize only the non-default keys of their text_config (e.g.
# llava-hf/llava-1.5-7b-hf: text_config {"model_type": "llama", "vocab_size": 32064, ...} with no
# hidden_size); transformers fills the rest from the sub-config class defaults
# (transformers LlamaConfig.__init__). Applied only to a nested text_config, never to a top-level
# config, so a top-level config missing a field still gets its diagnostic.
TEXT_CONFIG_DEFAULTS: dict[str, dict[str, Any]] = {
    # Mistral3 (Mistral Small 3.1+/Magistral/Devstral with vision) text_config omits
    # tie_word_embeddings; transformers MistralConfig.__init__ defaults it to False.
    "mistral": {"tie_word_embeddings": False},
    "llama": {
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
    },
    # transformers Qwen2Config defaults (Qwen2-Audio's text_config lists only a few keys)
    "qwen2": {
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
    },
}


class MoE(BaseModel, frozen=True):
    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_intermediate_size: int = 0  # total width of always-on shared experts
    num_moe_layers: int  # layers whose MLP is the expert block (others are dense)
    expert_bias: bool = False  # gpt-oss experts and router carry biases
    # Qwen2-MoE / Qwen3-Next scale the shared expert by sigmoid(Linear(hidden, 1)): transformers
    # models/qwen2_moe/modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock.shared_expert_gate
    # (nn.Linear(config.hidden_size, 1, bias=False)); vLLM qwen2_moe.py the same ReplicatedLinear.
    shared_expert_gate: bool = False
    # Nemotron 3 Super/Ultra latent MoE (moe_latent_size): routed experts run in a latent width
    # between fc1_latent_proj Linear(h, latent) and fc2_latent_proj Linear(latent, h) (vLLM
    # nemotron_h.py NemotronHMoE); the shared expert and the router stay at the hidden width.
    latent_size: int = 0
    # Gemma 4 (vLLM 0.33.0 gemma4.py:289-330 Gemma4Router): besides proj Linear(h, experts) the
    # router holds scale (h) and per_expert_scale (experts) parameters.
    router_scale: bool = False


class AttentionGroup(BaseModel, frozen=True):
    """Decoder layers that share one attention shape, for stacks whose layers differ (Gemma 4:
    sliding layers at head_dim / num_key_value_heads, full layers at global_head_dim /
    num_global_key_value_heads; KV-shared layers own no K/V projection and no KV cache)."""

    layers: int
    head_dim: int
    kv_heads: int
    owns_kv: bool = True


class MLA(BaseModel, frozen=True):
    """DeepSeek-V2/V3 multi-head latent attention."""

    kv_lora_rank: int
    q_lora_rank: int | None
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


class LinearAttention(BaseModel, frozen=True):
    """Gated DeltaNet layers of the hybrid Qwen3-Next / Qwen3.5 stacks (layer_types
    "linear_attention", or every layer but each full_attention_interval-th). transformers
    models/qwen3_next/modeling_qwen3_next.py Qwen3NextGatedDeltaNet: in_proj_qkvz
    Linear(h, 2*key_dim + 2*value_dim), in_proj_ba Linear(h, 2*num_v_heads), depthwise conv1d
    over 2*key_dim + value_dim channels (no bias), dt_bias and A_log (num_v_heads each),
    RMSNormGated(head_v_dim), out_proj Linear(value_dim, h); Qwen3.5 splits the same in_proj
    into in_proj_qkv / in_proj_z / in_proj_b / in_proj_a (models/qwen3_5). They hold a
    fixed-size recurrent state per sequence, no per-token KV cache.
    kind "lightning": MiniMax-M1 / MiniMax-Text-01 lightning attention (attn_type_list 0),
    remote code modeling_minimax_m1.py MiniMaxM1LightningAttention: qkv_proj Linear(h, 3*H*d),
    output_gate Linear(h, H*d), out_proj Linear(H*d, h), RMSNorm(H*d), no biases.
    kind "mamba2": Nemotron-H Mamba-2 mixers (vLLM nemotron_h.py / mamba_mixer2.py
    MambaMixer2): in_proj Linear(h, 2*d_inner + 2*groups*state + heads), conv1d over
    d_inner + 2*groups*state channels (bias with use_conv_bias), dt_bias, A_log and D (heads
    each), gated RMSNorm(d_inner), out_proj Linear(d_inner, h); here num_key_heads = n_groups,
    key_head_dim = ssm_state_size, num_value_heads = mamba_num_heads, value_head_dim =
    mamba_head_dim (d_inner = heads * head_dim)."""

    kind: str = "gated_deltanet"
    num_layers: int
    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int
    conv_bias: bool = False

    def parameters_per_layer(self, hidden: int) -> int:
        if self.kind == "mamba2":
            d_inner = self.num_value_heads * self.value_head_dim
            bc = 2 * self.num_key_heads * self.key_head_dim
            conv = (d_inner + bc) * (self.conv_kernel + (1 if self.conv_bias else 0))
            return (
                hidden * (2 * d_inner + bc + self.num_value_heads)
                + conv
                + 3 * self.num_value_heads
                + d_inner
                + d_inner * hidden
            )
        if self.kind == "lightning":
            width = self.num_value_heads * self.value_head_dim
            return 4 * hidden * width + width * hidden + width
        key_dim = self.num_key_heads * self.key_head_dim
        value_dim = self.num_value_heads * self.value_head_dim
        in_proj = hidden * (2 * key_dim + 2 * value_dim) + hidden * 2 * self.num_value_heads
        conv = (2 * key_dim + value_dim) * self.conv_kernel
        return in_proj + conv + 2 * self.num_value_heads + self.value_head_dim + value_dim * hidden


class Quantization(BaseModel, frozen=True):
    method: str
    bits: int | None = None
    bytes_per_param: float  # for quantized linear weights, scales included
    # whole parts of the text model the checkpoint leaves at the model dtype (its
    # quantization_config `ignore` / `exclude_modules` / `modules_to_not_convert`), as
    # (part, layers named; 0 = every layer): ("attention", 0), ("linear_attention", 36)
    unquantized: tuple[tuple[str, int], ...] = ()
    # parts stored at another format than bytes_per_param (ModelOpt MIXED_PRECISION's
    # quantized_layers: FP8 attention beside NVFP4 MLPs), as (part, bytes per parameter)
    part_bytes: tuple[tuple[str, float], ...] = ()


class LinearShape(BaseModel, frozen=True):
    """One LoRA-wrappable linear layer: input width, output slices, and how TP splits it."""

    name: str
    in_features: int
    out_slices: tuple[int, ...]
    row_parallel: bool  # True: input dim sharded by TP (o_proj, down_proj)


class ModelGeometry(BaseModel, frozen=True):
    model_type: str = ""
    architecture: str = ""
    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool = True
    max_position_embeddings: int | None = None
    torch_dtype: str | None = None
    gated_mlp: bool = True
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    norms_per_layer: int = 2
    layernorm_bias: bool = False
    learned_positions: int = 0  # OPT / GPT-2 / BERT: learned position table rows
    token_type_rows: int = 0  # BERT-style encoders: token-type embedding rows
    # BERT-style encoders: BertPooler.dense (BertModel, BertForSequenceClassification) or the
    # classification head's dense (RobertaClassificationHead.dense), h*h + h either way
    pooler: bool = False
    attention_sinks: bool = False
    moe: MoE | None = None
    mla: MLA | None = None
    linear_attention: LinearAttention | None = None
    # Qwen3-Next / Qwen3.5 full attention: q_proj also emits a sigmoid output gate (2x q width)
    attn_output_gate: bool = False
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    quantization: Quantization | None = None
    vision_parameters: int = 0  # vision (or audio) encoder tower of multimodal configs
    # Llama-Nemotron NAS (DeciLM block_configs): layers that keep attention (the others hold
    # no attention and no KV cache), each layer's MLP width (0 = no MLP), and blocks replaced
    # by one Linear(h, h). None / () / 0 for every other model.
    attention_layers: int | None = None
    mlp_widths: tuple[int, ...] = ()
    linear_blocks: int = 0
    # elements of vLLM's rotary-embedding cos/sin caches (rows x rotary_dim, summed over the
    # distinct rope instances): device buffers vLLM allocates with the model (_rope_cache_elements)
    rope_cache_elements: int = 0
    # towers the config declares and no formula here counts (an audio encoder other than
    # Qwen2-Audio's / Qwen2.5-Omni's): their weights are missing from the count, and the report
    # says so rather than give a silently low number
    uncounted_towers: tuple[str, ...] = ()
    # per-layer attention shapes where layers differ (Gemma 4); () = every layer the same
    attention_groups: tuple[AttentionGroup, ...] = ()
    # Gemma 4 per-layer embeddings (PLE): hidden_size_per_layer_input and its vocabulary
    per_layer_input_size: int = 0
    per_layer_vocab_size: int = 0
    # DeepSeek-V4: compressed / sparse attention, grouped output projection, hyper-connections
    # (deepseek_v4.py, from vLLM 0.33.0's models/deepseek_v4); None for every other model
    compressed_attention: CompressedAttention | None = None
    # the rotary cos/sin caches are fp32 buffers, not the model dtype (DeepSeek-V4)
    rope_cache_fp32: bool = False

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any]) -> ModelGeometry:
        if not isinstance(config, Mapping):
            raise MissingConfigField("config", "a config.json object (dict) is required")
        check_config_values(config)
        top = _omni_thinker(dict(config))
        c = text_model_config(config)
        model_type = str(c.get("model_type") or "").lower()
        archs = top.get("architectures") or c.get("architectures") or [""]
        arch = str(archs[0]) if isinstance(archs, list) and archs else ""

        def first(*keys: str) -> Any:
            for k in keys:
                v = c.get(k)
                if v is not None:
                    return v
            return None

        def need_int(field: str, *aliases: str) -> int:
            v = first(field, *aliases)
            if v is None:
                raise MissingConfigField(field, "add it to the model config (config.json)")
            try:
                iv = int(v)
            except (TypeError, ValueError):
                raise MissingConfigField(field, f"value {v!r} is not an integer") from None
            if iv <= 0:
                raise MissingConfigField(field, f"value {v!r} must be positive")
            return iv

        layers = need_int("num_hidden_layers", "n_layer", "num_layers", "n_layers")
        hidden = need_int("hidden_size", "d_model", "n_embd", "n_embed")  # BLOOM: n_embed
        heads = need_int("num_attention_heads", "n_head", "num_heads", "n_heads")  # MPT: n_heads
        # ChatGLM (THUDM chatglm2/3, glm-4-9b-chat): the embedding has padded_vocab_size rows
        # (modeling_chatglm.py Embedding(config.padded_vocab_size, hidden)).
        vocab = (
            need_int("padded_vocab_size", "vocab_size")
            if model_type == "chatglm"
            else need_int("vocab_size")
        )
        kv_heads = int(
            first("num_key_value_heads", "num_kv_heads", "n_head_kv")
            or (c.get("multi_query_group_num") if c.get("multi_query_attention") else None)
            or (1 if c.get("multi_query") else heads)
        )
        if model_type in FALCON_TYPES and c.get("new_decoder_architecture") is False:
            # Falcon's old decoder ignores num_kv_heads (falcon-7b(-instruct) configs carry 71):
            # one KV head when multi_query, else one per query head (transformers FalconAttention
            # num_kv_heads; vLLM falcon.py FalconAttention total_num_kv_heads).
            kv_heads = 1 if c.get("multi_query", True) else heads
        head_dim = int(first("head_dim", "kv_channels") or hidden // heads)
        gated = model_type not in NON_GATED_MLP_TYPES
        inter = first(
            "intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size", "ff_intermediate_size"
        )
        intermediate = int(inter) if inter else 4 * hidden
        if model_type == "molmo":
            intermediate //= 2

        mla = None
        if c.get("use_mla") is not False and c.get("kv_lora_rank"):
            mla = MLA(
                kv_lora_rank=int(c["kv_lora_rank"]),
                q_lora_rank=int(c["q_lora_rank"]) if c.get("q_lora_rank") else None,
                qk_nope_head_dim=int(c.get("qk_nope_head_dim") or 128),
                qk_rope_head_dim=int(c.get("qk_rope_head_dim") or 64),
                # MiniCPM3 has no v_head_dim key: modeling_minicpm.py MiniCPMAttention sets
                # v_head_dim = hidden_size // num_attention_heads (64 for MiniCPM3-4B)
                v_head_dim=int(
                    c.get("v_head_dim") or (hidden // heads if model_type == "minicpm3" else 128)
                ),
            )

        moe = _read_moe(c, layers, intermediate, model_type)
        if moe and moe.num_moe_layers == layers and not first("intermediate_size"):
            intermediate = moe.expert_intermediate_size
        if moe and c.get("intermediate_size_mlp"):
            # Llama 4: dense (non-MoE) layers use intermediate_size_mlp, experts intermediate_size
            # (transformers Llama4TextDecoderLayer: Llama4TextMLP(config, intermediate_size_mlp)).
            intermediate = int(c["intermediate_size_mlp"])

        sliding, sliding_layers = _read_sliding(c, layers, model_type)
        attention_groups: tuple[AttentionGroup, ...] = ()
        ple_size = ple_vocab = 0
        gemma4_widths: tuple[int, ...] = ()
        if model_type == "gemma4_text":
            attention_groups, gemma4_widths = _read_gemma4(
                c, layers, kv_heads, head_dim, intermediate
            )
            ple_size = int(c.get("hidden_size_per_layer_input") or 0)
            ple_vocab = int(c.get("vocab_size_per_layer_input") or vocab) if ple_size else 0
        linear_attention = _read_linear_attention(c, layers)
        nas = _read_nas_blocks(c, hidden, heads)
        if nas:
            kv_heads, attention_layers, mlp_widths, linear_blocks = nas
            intermediate = max(mlp_widths)
        else:
            attention_layers, mlp_widths, linear_blocks = None, gemma4_widths, 0
        pattern = c.get("hybrid_override_pattern")
        if model_type == "nemotron_h" and isinstance(pattern, str) and len(pattern) == layers:
            # Nemotron-H: one mixer per layer, M Mamba-2, * attention, - MLP, E MoE
            # (transformers NemotronHConfig.layers_block_type, vLLM nemotron_h.py)
            attention_layers = pattern.count("*")
            mlp_widths = tuple(intermediate if ch == "-" else 0 for ch in pattern)
            moe = (
                moe.model_copy(
                    update={
                        "num_moe_layers": pattern.count("E"),
                        "latent_size": int(c.get("moe_latent_size") or 0),
                    }
                )
                if moe
                else None
            )
            if moe and not moe.num_moe_layers:
                moe = None
            mamba = pattern.count("M")
            linear_attention = (
                LinearAttention(
                    kind="mamba2",
                    num_layers=mamba,
                    num_key_heads=int(c.get("n_groups") or 8),
                    num_value_heads=need_int("mamba_num_heads"),
                    key_head_dim=int(c.get("ssm_state_size") or 128),
                    value_head_dim=int(c.get("mamba_head_dim") or 64),
                    conv_kernel=int(c.get("conv_kernel") or 4),
                    conv_bias=bool(c.get("use_conv_bias", True)),
                )
                if mamba
                else None
            )
        compressed = read_deepseek_v4(c, layers) if model_type == "deepseek_v4" else None
        tie = c.get("tie_word_embeddings")
        if tie is None:
            tie = top.get("tie_word_embeddings", True)  # transformers' PretrainedConfig default
        if arch in HEADLESS_DECODER_ARCHITECTURES:
            tie = True  # no lm_head: the embedding table is the only vocab-sized matrix

        audio_config = top.get("audio_config")
        audio = _audio_parameters(audio_config, str(top.get("model_type") or ""), hidden)
        geometry = cls(
            model_type=model_type,
            architecture=arch,
            num_layers=layers,
            hidden_size=hidden,
            intermediate_size=intermediate,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            vocab_size=vocab,
            tie_word_embeddings=bool(tie),
            max_position_embeddings=_int_or_none(
                first("max_position_embeddings", "n_positions", "max_seq_len")
            ),
            torch_dtype=str(first("torch_dtype", "dtype") or "") or None,
            gated_mlp=gated,
            qkv_bias=bool(c.get("attention_bias"))
            or model_type in QKV_BIAS_TYPES
            or model_type in ALL_BIAS_TYPES | BIASED_LINEAR_TYPES
            or bool(c.get("enable_bias"))
            or bool(c.get("add_qkv_bias"))
            or (model_type == "molmo" and bool(c.get("qkv_bias"))),
            o_bias=(bool(c.get("attention_bias")) and model_type not in QKV_ONLY_BIAS_TYPES)
            or model_type in ALL_BIAS_TYPES | BIASED_LINEAR_TYPES
            or bool(c.get("enable_bias"))
            or bool(c.get("add_bias_linear")),
            mlp_bias=bool(c.get("mlp_bias"))
            or model_type in ALL_BIAS_TYPES | BIASED_LINEAR_TYPES
            or bool(c.get("enable_bias"))
            or bool(c.get("add_bias_linear")),
            qk_norm=model_type in QK_NORM_TYPES
            or (model_type in QK_NORM_FLAG_TYPES and bool(c.get("use_qk_norm")))
            or (model_type == "persimmon" and bool(c.get("qk_layernorm"))),
            norms_per_layer=_gemma4_norms(c, moe, ple_size)
            if model_type == "gemma4_text"
            else 4
            if model_type in FOUR_NORM_TYPES
            else 1
            if model_type == "nemotron_h"  # one pre-mixer RMSNorm per block
            else _falcon_norms(c, model_type),
            layernorm_bias=model_type
            in {"opt", "gpt2", "gpt_neox", "phi", "bloom", "persimmon"}
            | FALCON_TYPES
            | ENCODER_TYPES
            | ALL_BIAS_TYPES,
            learned_positions=_learned_positions(c, model_type),
            token_type_rows=int(c.get("type_vocab_size") or 0)
            if model_type in ENCODER_TYPES
            else 0,
            pooler=model_type in ENCODER_TYPES
            and (arch.endswith("Model") or arch.endswith("ForSequenceClassification")),
            attention_sinks=model_type == "gpt_oss",
            moe=moe,
            mla=mla,
            linear_attention=linear_attention,
            attn_output_gate=bool(c.get("attn_output_gate", model_type == "qwen3_next"))
            and linear_attention is not None,
            sliding_window=sliding,
            sliding_window_layers=sliding_layers,
            quantization=_v4_quantization(compressed)
            if compressed
            else _read_quantization(c.get("quantization_config") or top.get("quantization_config")),
            rope_cache_elements=v4_rope_cache_elements(
                compressed, int(first("max_position_embeddings") or 0), c
            )
            if compressed
            else _rope_cache_elements(c, model_type, head_dim, mla, sliding_layers),
            rope_cache_fp32=compressed is not None,
            compressed_attention=compressed,
            vision_parameters=_vision_parameters(
                top.get("vision_config")
                or (
                    PHI3V_CLIP_VISION
                    if isinstance(top.get("img_processor"), Mapping)
                    else MOLMO_CLIP_VISION
                    if model_type == "molmo"
                    else None
                ),
                str(top.get("model_type") or "").lower(),
                text_hidden=hidden,
                top=top,
            )
            + audio,
            uncounted_towers=("audio encoder",)
            if isinstance(audio_config, Mapping) and audio_config and not audio
            else (),
            attention_layers=attention_layers,
            mlp_widths=mlp_widths,
            linear_blocks=linear_blocks,
            attention_groups=attention_groups,
            per_layer_input_size=ple_size,
            per_layer_vocab_size=ple_vocab,
        )
        _refuse_negative(geometry)
        return geometry

    # ------------------------------------------------------------------ shapes
    @property
    def q_width(self) -> int:
        if self.mla:
            return self.num_attention_heads * (
                self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim
            )
        if self.attention_groups:  # Gemma 4: the widest layer (full attention, 512-wide heads)
            return self.num_attention_heads * max(g.head_dim for g in self.attention_groups)
        return self.num_attention_heads * self.head_dim

    @property
    def attn_out_in_width(self) -> int:
        """Input width of o_proj."""
        if self.mla:
            return self.num_attention_heads * self.mla.v_head_dim
        return self.q_width if self.attention_groups else self.num_attention_heads * self.head_dim

    @property
    def residual_width(self) -> int:
        """Width of the residual stream: hidden_size, or DeepSeek-V4's hc_mult streams
        (tokens, hc_mult, hidden) (vLLM 0.33.0 models/deepseek_v4/nvidia/model.py:937-945)."""
        a = self.compressed_attention
        return self.hidden_size * (a.hc_mult if a else 1)

    @property
    def kv_width(self) -> int:
        if self.attention_groups:  # activation and LoRA widths: the widest layer's
            return max(g.kv_heads * g.head_dim for g in self.attention_groups)
        return self.num_kv_heads * self.head_dim

    def lora_linear_shapes(self) -> tuple[LinearShape, ...]:
        return self._lora_shapes

    @cached_property
    def _lora_shapes(self) -> tuple[LinearShape, ...]:
        """The linear layers vLLM wraps for LoRA in one decoder layer (vllm/lora/layers):
        merged qkv (column parallel, 3 slices), o_proj (row), merged gate_up (column, 2 slices),
        down_proj (row). For MLA the q/kv projections stand in for qkv. MoE expert weights are
        listed through the expert width (vLLM's FusedMoE LoRA path stacks per expert)."""
        h = self.hidden_size
        shapes: list[LinearShape] = []
        a = self.compressed_attention
        if a:
            # DeepSeek-V4 attention (vLLM 0.33.0 models/deepseek_v4/attention.py:252-288):
            # fused_wqa_wkv (replicated), wq_b (column), wo_a (column, the grouped output
            # projection), wo_b (row); the compressors' and indexers' linears are not listed
            hd = self.num_attention_heads * a.head_dim
            shapes += [
                LinearShape(
                    name="fused_wqa_wkv",
                    in_features=h,
                    out_slices=(a.q_lora_rank, a.head_dim),
                    row_parallel=False,
                ),
                LinearShape(
                    name="wq_b", in_features=a.q_lora_rank, out_slices=(hd,), row_parallel=False
                ),
                LinearShape(
                    name="wo_a",
                    in_features=hd // a.o_groups,
                    out_slices=(a.o_groups * a.o_lora_rank,),
                    row_parallel=False,
                ),
                LinearShape(
                    name="wo_b",
                    in_features=a.o_groups * a.o_lora_rank,
                    out_slices=(h,),
                    row_parallel=True,
                ),
            ]
        elif self.mla:
            m = self.mla
            if m.q_lora_rank:
                shapes.append(
                    LinearShape(
                        name="q_a_proj",
                        in_features=h,
                        out_slices=(m.q_lora_rank,),
                        row_parallel=False,
                    )
                )
                shapes.append(
                    LinearShape(
                        name="q_b_proj",
                        in_features=m.q_lora_rank,
                        out_slices=(self.q_width,),
                        row_parallel=False,
                    )
                )
            else:
                shapes.append(
                    LinearShape(
                        name="q_proj", in_features=h, out_slices=(self.q_width,), row_parallel=False
                    )
                )
            shapes.append(
                LinearShape(
                    name="kv_a_proj_with_mqa",
                    in_features=h,
                    out_slices=(m.kv_lora_rank + m.qk_rope_head_dim,),
                    row_parallel=False,
                )
            )
            shapes.append(
                LinearShape(
                    name="kv_b_proj",
                    in_features=m.kv_lora_rank,
                    out_slices=(self.num_attention_heads * (m.qk_nope_head_dim + m.v_head_dim),),
                    row_parallel=False,
                )
            )
        else:
            shapes.append(
                LinearShape(
                    name="qkv_proj",
                    in_features=h,
                    out_slices=(self.q_width, self.kv_width, self.kv_width),
                    row_parallel=False,
                )
            )
        if not a:
            shapes.append(
                LinearShape(
                    name="o_proj",
                    in_features=self.attn_out_in_width,
                    out_slices=(h,),
                    row_parallel=True,
                )
            )
        widths = []
        if not self.moe or self.moe.num_moe_layers < self.num_layers:
            widths.append(self.intermediate_size)
        if self.moe:
            widths.append(self.moe.expert_intermediate_size)
            if self.moe.shared_intermediate_size:
                widths.append(self.moe.shared_intermediate_size)
        for w in sorted(set(widths)):
            if self.gated_mlp:
                shapes.append(
                    LinearShape(
                        name=f"gate_up_proj[{w}]",
                        in_features=h,
                        out_slices=(w, w),
                        row_parallel=False,
                    )
                )
            else:
                shapes.append(
                    LinearShape(
                        name=f"fc1[{w}]", in_features=h, out_slices=(w,), row_parallel=False
                    )
                )
            shapes.append(
                LinearShape(
                    name=f"down_proj[{w}]", in_features=w, out_slices=(h,), row_parallel=True
                )
            )
        return tuple(shapes)

    # ------------------------------------------------------------------ counts
    def attention_parameters_per_layer(self) -> int:
        h = self.hidden_size
        if self.mla:
            m = self.mla
            q = (
                (h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * self.q_width)
                if m.q_lora_rank
                else h * self.q_width
            )
            kv = (
                h * (m.kv_lora_rank + m.qk_rope_head_dim)
                + m.kv_lora_rank
                + m.kv_lora_rank * self.num_attention_heads * (m.qk_nope_head_dim + m.v_head_dim)
            )
            return q + kv + self.attn_out_in_width * h
        n = h * self.q_width + 2 * h * self.kv_width + self.attn_out_in_width * h
        if self.attn_output_gate:
            n += h * self.q_width
        if self.qkv_bias:
            n += self.q_width + 2 * self.kv_width
        if self.o_bias:
            n += h
        if self.qk_norm and self.model_type == "olmo2":
            # Olmo2Attention: q_norm over num_heads*head_dim, k_norm over num_kv_heads*head_dim
            # (transformers modeling_olmo2.py), not per head.
            n += self.q_width + self.kv_width
        elif self.qk_norm:
            n += 2 * self.head_dim
        if self.attention_sinks:
            n += self.num_attention_heads
        return n

    @property
    def num_attention_layers(self) -> int:
        """Decoder layers that hold attention (and a KV cache)."""
        if self.attention_layers is not None:
            return self.attention_layers
        return self.num_layers - (self.linear_attention.num_layers if self.linear_attention else 0)

    def _grouped_attention_parameters(self) -> int:
        """Gemma 4 attention as vLLM 0.33.0 builds it (gemma4.py:409-446): KV-owning layers a
        QKVParallelLinear(h, head_dim, heads, kv_heads), which allocates the V slice even on
        attention_k_eq_v layers (the K weights are loaded into both, gemma4.py:86-105), and
        k_norm (head_dim; v_norm has no weight); KV-shared layers only q_proj; every layer
        o_proj and q_norm (head_dim)."""
        h, heads = self.hidden_size, self.num_attention_heads
        n = 0
        for g in self.attention_groups:
            per = 2 * h * heads * g.head_dim + g.head_dim
            if g.owns_kv:
                per += 2 * h * g.kv_heads * g.head_dim + g.head_dim
            n += g.layers * per
        return n

    def _per_layer_input_linear_parameters(self) -> int:
        """Gemma 4 PLE linears (vLLM 0.33.0 gemma4.py:1014-1048 per_layer_model_projection
        ColumnParallelLinear(h, layers * ple); :674-703 per layer per_layer_input_gate
        Linear(h, ple) and per_layer_projection Linear(ple, h))."""
        p = self.per_layer_input_size
        return self.num_layers * (self.hidden_size * p) + self.num_layers * 2 * self.hidden_size * p

    @cached_property
    def v4_parts(self) -> V4Parts | None:
        """DeepSeek-V4's parameters by storage format (deepseek_v4.parts), else None."""
        a, e = self.compressed_attention, self.moe
        if a is None or e is None:
            return None
        return v4_parts(
            a,
            hidden=self.hidden_size,
            heads=self.num_attention_heads,
            vocab=self.vocab_size,
            experts=e.num_experts,
            experts_per_token=e.experts_per_token,
            expert_width=e.expert_intermediate_size,
            shared_width=e.shared_intermediate_size,
        )

    def tp_replicated_bytes(self, dtype_bytes: float) -> int:
        """Weight bytes every TP rank holds whole; 0 where the model's TP split is taken as
        even (DeepSeek-V4: deepseek_v4.tp_replicated_bytes)."""
        a, e = self.compressed_attention, self.moe
        if a is None or e is None:
            return 0
        return v4_tp_replicated_bytes(
            a,
            hidden=self.hidden_size,
            vocab=self.vocab_size,
            experts=e.num_experts,
            experts_per_token=e.experts_per_token,
            dtype_bytes=dtype_bytes,
        )

    def _attention_and_linear_parameters(self) -> int:
        if self.compressed_attention:
            # every layer's attention with its compressor / indexer and hyper-connection
            # mixers (deepseek_v4.layer_parts)
            a, h = self.compressed_attention, self.hidden_size
            return sum(
                sum(layer_parts(a, h, self.num_attention_heads, r)) for r in a.compress_ratios
            )
        if self.attention_groups:
            return self._grouped_attention_parameters() + self._per_layer_input_linear_parameters()
        return (
            self.num_attention_layers * self.attention_parameters_per_layer()
            + self.linear_blocks * self.hidden_size * self.hidden_size
            + (
                self.linear_attention.num_layers
                * self.linear_attention.parameters_per_layer(self.hidden_size)
                if self.linear_attention
                else 0
            )
        )

    def _mlp_parameters(self, width: int, dim: int = 0) -> int:
        h = dim or self.hidden_size
        if self.gated_mlp:
            return 3 * h * width + (2 * width + h if self.mlp_bias else 0)
        return 2 * h * width + (width + h if self.mlp_bias else 0)

    def mlp_parameters(self) -> tuple[int, int]:
        """(parameters of all MLP blocks, of which quantizable expert/linear weights)."""
        h = self.hidden_size
        if self.mlp_widths:
            # per-layer widths (NAS, Nemotron-H); MoE layers, if any, are added below
            total = sum(self._mlp_parameters(w) for w in self.mlp_widths if w)
        else:
            dense_layers = self.num_layers - (self.moe.num_moe_layers if self.moe else 0)
            total = dense_layers * self._mlp_parameters(self.intermediate_size)
        if self.moe:
            e = self.moe
            per = (
                e.num_experts * self._mlp_parameters(e.expert_intermediate_size, e.latent_size)
                + h * e.num_experts
            )
            if e.latent_size:
                per += 2 * h * e.latent_size  # fc1_latent_proj, fc2_latent_proj
            if e.router_scale:
                per += h + e.num_experts
            if e.expert_bias:
                per += e.num_experts * (2 * e.expert_intermediate_size + h) + e.num_experts
            if e.shared_intermediate_size:
                per += self._mlp_parameters(e.shared_intermediate_size)
                if e.shared_expert_gate:
                    per += h
            total += e.num_moe_layers * per
        return total, total

    def embedding_parameters(self) -> int:
        n = self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)
        n += (self.learned_positions + self.token_type_rows) * self.hidden_size
        if self.pooler:
            n += self.hidden_size * self.hidden_size + self.hidden_size
        # Gemma 4 embed_tokens_per_layer: VocabParallelEmbedding(vocab_size_per_layer_input,
        # layers * hidden_size_per_layer_input) (vLLM 0.33.0 gemma4.py:1019-1026)
        n += self.per_layer_vocab_size * self.num_layers * self.per_layer_input_size
        return n

    @property
    def kv_layers(self) -> int:
        """Layers that keep a per-token KV cache (hybrid linear-attention layers and Gemma 4's
        KV-shared layers do not)."""
        if self.attention_groups:
            return sum(g.layers for g in self.attention_groups if g.owns_kv)
        return self.num_attention_layers

    def norm_parameters(self) -> int:
        per_norm = self.hidden_size * (2 if self.layernorm_bias else 1)
        extra = 1 if self.model_type in EMBED_NORM_TYPES else 0  # BLOOM's embedding LayerNorm
        # Gemma 4 per_layer_projection_norm: RMSNorm(hidden_size_per_layer_input) (gemma4.py:1049)
        return (
            self.norms_per_layer * self.num_layers + 1 + extra
        ) * per_norm + self.per_layer_input_size

    def parameter_count(self) -> int:
        return self._parameter_count

    @cached_property
    def _parameter_count(self) -> int:
        """Total parameters of the language model (vision tower added separately)."""
        if self.v4_parts is not None:
            return self.v4_parts.total
        mlp, _ = self.mlp_parameters()
        return (
            self.embedding_parameters()
            + self._attention_and_linear_parameters()
            + mlp
            + self.norm_parameters()
            + self.vision_parameters
        )

    def weight_bytes(self, dtype_bytes: float) -> int:
        """Bytes of weights at the model dtype; quantized checkpoints store linear weights at
        their format's size and embeddings, norms and the lm_head at the model dtype."""
        if self.v4_parts is not None and self.compressed_attention is not None:
            return v4_weight_bytes(self.v4_parts, self.compressed_attention, dtype_bytes)
        total = self.parameter_count()
        if not self.quantization:
            return int(total * dtype_bytes)
        linear = self._attention_and_linear_parameters() + self.mlp_parameters()[0]
        kept = 0
        if self.quantization.method == "mxfp4" and self.moe:
            # gpt-oss: only the expert weights are MXFP4, attention stays bf16.
            e = self.moe
            linear = (
                e.num_moe_layers * e.num_experts * self._mlp_parameters(e.expert_intermediate_size)
            )
        else:
            kept = min(linear, self.unquantized_parameters())
        rest = total - linear + kept
        q = self.quantization
        other = sum(self._part_parameters(p) * (b - q.bytes_per_param) for p, b in q.part_bytes)
        return int((linear - kept) * q.bytes_per_param + rest * dtype_bytes + other)

    def _part_parameters(self, part: str) -> int:
        """Linear parameters of one part of the text model, every layer: attention,
        linear_attention, shared_experts."""
        la, e = self.linear_attention, self.moe
        if part == "attention":
            return (
                self._grouped_attention_parameters()
                if self.attention_groups
                else self.num_attention_layers * self.attention_parameters_per_layer()
            )
        if part == "linear_attention":
            return la.num_layers * la.parameters_per_layer(self.hidden_size) if la else 0
        if part == "shared_experts" and e and e.shared_intermediate_size:
            return e.num_moe_layers * self._mlp_parameters(e.shared_intermediate_size)
        return 0

    def unquantized_parameters(self) -> int:
        return self._unquantized_parameters

    @cached_property
    def _unquantized_parameters(self) -> int:
        """Linear parameters a quantized checkpoint keeps at the model dtype (its ignore list:
        Quantization.unquantized), a part's share by the layers its patterns name."""
        q = self.quantization
        if not q or not q.unquantized:
            return 0
        layers_of = {
            "attention": self.num_attention_layers,
            "linear_attention": self.linear_attention.num_layers if self.linear_attention else 0,
            "shared_experts": self.moe.num_moe_layers if self.moe else 0,
        }
        n = 0
        for part, named in q.unquantized:
            params, of_layers = self._part_parameters(part), layers_of.get(part, 0)
            if params and of_layers:
                n += params if not named else params * min(named, of_layers) // of_layers
        return n

    def kv_bytes_per_token(self, kv_dtype_bytes: float) -> int:
        """KV cache bytes per token over the KV layers: 2·kv_heads·head_dim per layer, or one
        latent of kv_lora_rank + rope dims for MLA (vLLM's MLA cache stores the compressed
        latent). Hybrid linear-attention layers keep no per-token cache."""
        if self.compressed_attention:
            # DeepSeek-V4: compressed states and indexer keys in vLLM's fp8_ds_mla layout,
            # whatever kv_dtype_bytes says (deepseek_v4.kv_bytes_per_token)
            return math.ceil(v4_kv_bytes_per_token(self.compressed_attention))
        if self.attention_groups:
            # Gemma 4: each KV-owning layer caches K and V at its own shape (k_eq_v layers
            # still hold a V cache: vLLM's Attention gets num_kv_heads, gemma4.py:500-512)
            elements = sum(
                g.layers * 2 * g.kv_heads * g.head_dim for g in self.attention_groups if g.owns_kv
            )
            return int(elements * kv_dtype_bytes)
        if self.mla:
            per_layer = self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        else:
            per_layer = 2 * self.kv_width
        return int(self.num_attention_layers * per_layer * kv_dtype_bytes)


def text_model_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The keys ModelGeometry reads, as one flat dict: the served part of the config (Qwen2.5-
    Omni's thinker), its text_config over the top level with the sub-config class defaults a
    sparse text_config omits, the model type's defaults, DBRX's nested keys, NemotronH's
    layers_block_type as a pattern. Also what catalog.geometry_signature reads, so a signature
    holds the shapes the geometry is built from."""
    top = _omni_thinker(dict(config))
    text = top.get("text_config") if isinstance(top.get("text_config"), Mapping) else None
    c: dict[str, Any] = {**top, **text} if text else top
    if text:
        sub_type = str(text.get("model_type") or "").lower()
        c = {**TEXT_CONFIG_DEFAULTS.get(sub_type, {}), **c}
    if not c.get("model_type") and top.get("model_type"):
        c = {**c, "model_type": top["model_type"]}  # a text_config without its own
    model_type = str(c.get("model_type") or "").lower()
    c = {**MODEL_TYPE_DEFAULTS.get(model_type, {}), **c}
    if model_type == "dbrx":
        c = {**_dbrx_keys(c), **c}
    block_types = c.get("layers_block_type")
    if model_type == "nemotron_h" and isinstance(block_types, list) and block_types:
        # newer NemotronHConfig lists layers_block_type (mamba / attention / mlp / moe)
        # instead of hybrid_override_pattern; num_hidden_layers is its length
        symbols = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}
        c = {
            "num_hidden_layers": len(block_types),
            **c,
            "hybrid_override_pattern": "".join(symbols.get(str(t), "?") for t in block_types),
        }
    return c


def _omni_thinker(top: dict[str, Any]) -> dict[str, Any]:
    """Qwen2.5-Omni (model_type qwen2_5_omni, Qwen2_5OmniForConditionalGeneration): vLLM
    serves its thinker, the LLM with the vision and audio towers (vLLM's registry maps
    Qwen2_5OmniForConditionalGeneration to qwen2_5_omni_thinker.py
    Qwen2_5OmniThinkerForConditionalGeneration); the talker and token2wav (speech output) are
    not part of it. The thinker's own config is thinker_config {text_config, vision_config,
    audio_config}; the quantization, dtype and architecture are the top-level config's."""
    thinker = top.get("thinker_config")
    if str(top.get("model_type") or "").lower() != "qwen2_5_omni" or not isinstance(
        thinker, Mapping
    ):
        return top
    keep = ("architectures", "quantization_config", "torch_dtype", "tie_word_embeddings")
    return {**thinker, **{k: top[k] for k in keep if top.get(k) is not None}}


def _dbrx_keys(c: Mapping[str, Any]) -> dict[str, Any]:
    """DBRX nests attention and expert settings: transformers DbrxConfig (attribute_map n_heads,
    max_seq_len; attn_config.kv_n_heads; ffn_config.ffn_hidden_size, moe_num_experts,
    moe_top_k). vLLM dbrx.py: Wqkv/out_proj, a bias-free router Linear(d_model, experts) and
    gated experts w1/v1/w2 of ffn_hidden_size, two bias-free LayerNorms per block."""
    attn = c.get("attn_config")
    attn = attn if isinstance(attn, Mapping) else {}
    ffn = c.get("ffn_config")
    ffn = ffn if isinstance(ffn, Mapping) else {}
    keys = {
        "num_attention_heads": c.get("n_heads"),
        "max_position_embeddings": c.get("max_seq_len"),
        "num_key_value_heads": attn.get("kv_n_heads"),
        "intermediate_size": ffn.get("ffn_hidden_size"),
        "num_local_experts": ffn.get("moe_num_experts"),
        "num_experts_per_tok": ffn.get("moe_top_k"),
    }
    return {k: v for k, v in keys.items() if v is not None}


def _falcon_norms(c: Mapping[str, Any], model_type: str) -> int:
    """LayerNorms per decoder layer. Falcon's parallel-attention layers share one input_layernorm
    unless new_decoder_architecture gives attention and MLP their own (ln_attn, ln_mlp)
    (transformers modeling_falcon.py FalconDecoderLayer, num_ln_in_parallel_attn)."""
    if model_type not in FALCON_TYPES:
        return 2
    # model_type RefinedWeb is the pre-4.32 config of falcon-40b/180b, whose modelling_RW.py
    # DecoderLayer always has ln_attn and ln_mlp (RefinedWebModel, falcon-7b's, has one norm).
    if c.get("new_decoder_architecture") or model_type == "refinedweb":
        return int(c.get("num_ln_in_parallel_attn") or 2)
    return 1 if c.get("parallel_attn", True) else 2


def _learned_positions(c: Mapping[str, Any], model_type: str) -> int:
    """Rows of a learned absolute position table. OPT: max_position_embeddings + 2
    (transformers OPTLearnedPositionalEmbedding offset 2); GPT-2: n_positions rows
    (transformers modeling_gpt2.py GPT2Model.wpe = nn.Embedding(config.max_position_embeddings,
    embed_dim), GPT2Config maps max_position_embeddings to n_positions)."""
    if model_type == "opt":
        return int(c.get("max_position_embeddings") or 0) + 2
    if model_type == "gpt2":
        return int(c.get("n_positions") or c.get("max_position_embeddings") or 0)
    if model_type in ENCODER_TYPES:  # BertEmbeddings.position_embeddings
        return int(c.get("max_position_embeddings") or 0)
    return 0


def _read_nas_blocks(
    c: Mapping[str, Any], hidden: int, heads: int
) -> tuple[int, int, tuple[int, ...], int] | None:
    """Llama-Nemotron NAS (model_type nemotron-nas, DeciLMForCausalLM): block_configs gives each
    layer's attention (no_op, replace_with_linear, or n_heads_in_group query heads per KV head)
    and FFN (no_op, replace_with_linear, or ffn_mult). Width from ffn_mult as in the model's
    modeling_decilm.py / vLLM nemotron_nas.py _ffn_mult_to_intermediate_size:
    int(2 * ffn_mult * hidden / 3) rounded up to a multiple of 256. Returns (kv_heads,
    attention layers, MLP widths, linear blocks); layers with different KV head counts are
    refused rather than averaged."""
    blocks = c.get("block_configs")
    if not isinstance(blocks, list) or not blocks:
        return None
    kv: set[int] = set()
    attention_layers = linear = 0
    widths: list[int] = []
    for b in blocks:
        a, f = b.get("attention") or {}, b.get("ffn") or {}
        if a.get("replace_with_linear"):
            linear += 1
        elif not a.get("no_op"):
            attention_layers += 1
            kv.add(heads // int(a.get("n_heads_in_group") or 1))
        if f.get("replace_with_linear"):
            linear += 1
        if f.get("no_op") or f.get("replace_with_linear"):
            widths.append(0)
        else:
            w = int(2 * float(f["ffn_mult"]) * hidden / 3)
            widths.append(-(-w // 256) * 256)
    if len(kv) != 1:
        raise MissingConfigField(
            "block_configs", "layers with different KV head counts are not read"
        )
    return kv.pop(), attention_layers, tuple(widths), linear


# The config.json fields the reading below takes as counts or dimensions (at any depth: a
# text_config, vision_config or quantization_config holds them too). A present value (not
# null) must be a whole number, an int or a float without a fraction, from 0 to
# MAX_CONFIG_INT, or a flat list of them (per-layer values: Hunyuan, OpenELM); in
# POSITIVE_CONFIG_FIELDS not 0 either. Anything else is refused by name before it is read:
# read as it was, 1.5 became 1, true became 1, 0 or [] fell back to a default
# (`num_key_value_heads: 0` read as one KV head per query head), an infinity or 1e400
# overflowed deep in a term, "4096" was read as a number vLLM would not read.
CONFIG_INT_FIELDS = frozenset(
    {
        "num_hidden_layers", "n_layer", "num_layers", "n_layers", "hidden_size", "d_model",
        "n_embd", "n_embed", "num_attention_heads", "n_head", "num_heads", "n_heads",
        "vocab_size", "padded_vocab_size", "num_key_value_heads", "num_kv_heads", "n_head_kv",
        "multi_query_group_num", "head_dim", "kv_channels", "intermediate_size", "ffn_dim",
        "n_inner", "ffn_hidden_size", "ff_intermediate_size", "intermediate_size_mlp",
        "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
        "hidden_size_per_layer_input", "vocab_size_per_layer_input", "max_position_embeddings",
        "original_max_position_embeddings", "n_positions", "max_seq_len", "type_vocab_size",
        "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts",
        "num_experts_per_tok", "experts_per_token", "moe_topk", "moe_k", "top_k_experts",
        "moe_intermediate_size", "expert_intermediate_size", "shared_expert_intermediate_size",
        "moe_shared_expert_intermediate_size", "num_shared_expert", "n_shared_experts",
        "num_shared_experts", "moe_num_shared_experts", "first_k_dense_replace",
        "moe_layer_start_index", "moe_layer_interval", "decoder_sparse_step",
        "interleave_moe_layer_step", "moe_latent_size", "sliding_window", "max_window_layers",
        "sliding_window_pattern", "full_attention_interval", "global_head_dim",
        "num_global_key_value_heads", "num_kv_shared_layers", "mamba_num_heads", "mamba_head_dim",
        "n_groups", "ssm_state_size", "conv_kernel", "linear_num_key_heads",
        "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim", "num_ln_in_parallel_attn", "n_heads_in_group", "bits",
        "w_bit", "num_bits", "depth", "patch_size", "num_channels", "position_embedding_size",
        "out_hidden_size", "spatial_merge_size", "temporal_patch_size", "encoder_layers",
        "encoder_ffn_dim", "embed_dim", "num_mel_bins", "max_source_positions", "in_chans",
        "in_channels", "spatial_patch_size", "num_position_embeddings", "image_size",
        "output_dim", "moe_layer_end_index", "attn_type_list", "deepstack_visual_indexes",
    }
)  # fmt: skip
# the fields some published configs write per layer (Hunyuan's MoE sizes, MiniMax's layer
# types, Qwen3-VL's deepstack layers, DeepSeek's moe_intermediate_size in one catalog
# entry): a list there is read; anywhere else a list is refused
CONFIG_LIST_FIELDS = frozenset(
    {
        "moe_intermediate_size", "moe_topk", "num_shared_expert", "moe_layer_start_index",
        "moe_layer_end_index", "attn_type_list", "deepstack_visual_indexes",
    }
)  # fmt: skip
# may be negative: "to the last layer" (Hunyuan's moe_layer_end_index -1)
CONFIG_SIGNED_FIELDS = frozenset({"moe_layer_end_index"})
POSITIVE_CONFIG_FIELDS = frozenset(
    {
        "num_hidden_layers", "n_layer", "num_layers", "n_layers", "hidden_size", "d_model",
        "n_embd", "n_embed", "num_attention_heads", "n_head", "num_heads", "n_heads",
        "vocab_size", "padded_vocab_size", "num_key_value_heads", "num_kv_heads", "n_head_kv",
        "head_dim", "kv_channels", "intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size",
        "num_experts_per_tok", "bits", "num_bits", "patch_size", "moe_intermediate_size",
        "expert_intermediate_size", "depth", "spatial_merge_size", "temporal_patch_size",
        "out_hidden_size", "in_chans", "in_channels", "spatial_patch_size", "kv_lora_rank",
        "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "embed_dim",
        "image_size", "num_position_embeddings",
    }
)  # fmt: skip
# fractions and factors the reading multiplies by: a finite number, not negative
CONFIG_FACTOR_FIELDS = frozenset(
    {"factor", "partial_rotary_factor", "rotary_pct", "ffn_mult", "mlp_ratio"}
)
MAX_CONFIG_INT = 2**40  # far above any model's dimension or context (10M positions)
_MAX_CONFIG_NODES = 200_000


def _whole(v: Any, low: int = 0) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return low <= v <= MAX_CONFIG_INT
    return isinstance(v, float) and v.is_integer() and low <= v <= MAX_CONFIG_INT


def _why_not_whole(v: Any, key: str) -> str:
    listed = " (nor a list of them)" if key in CONFIG_LIST_FIELDS else ""
    if isinstance(v, int | float) and not isinstance(v, bool) and v < 0:
        return "negative: no model has that size"
    if isinstance(v, int | float) and not isinstance(v, bool) and v > MAX_CONFIG_INT:
        return "beyond 2^40: no model has that size"
    if isinstance(v, float) and math.isfinite(v):
        return "not a whole number"
    return "not a whole number from 0 to 2^40" + listed


def _factor(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    return 0 <= v <= MAX_CONFIG_INT and (isinstance(v, int) or math.isfinite(v))


def check_config_values(config: Mapping[str, Any]) -> None:
    """Refuse (InvalidConfigField, naming the field and its value) a config.json whose count,
    dimension or factor fields hold what no model's config holds (see CONFIG_INT_FIELDS).
    Walks the whole config without recursion."""
    stack: list[Any] = [config]
    seen = 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > _MAX_CONFIG_NODES:
            raise MissingConfigField(
                "config", f"more than {_MAX_CONFIG_NODES} objects and lists: not read"
            )
        if isinstance(node, list):
            stack.extend(x for x in node if isinstance(x, Mapping | list))
            continue
        if not isinstance(node, Mapping):
            continue
        for key, v in node.items():
            if isinstance(v, Mapping | list):
                stack.append(v)
            if v is None or key == "source":
                continue
            if key in CONFIG_INT_FIELDS:
                listed = isinstance(v, list) and key in CONFIG_LIST_FIELDS
                items = v if listed else [v]
                low = -MAX_CONFIG_INT if key in CONFIG_SIGNED_FIELDS else 0
                empty_ok = listed and key == "deepstack_visual_indexes"  # none: no deepstack
                bad = next((x for x in items if not _whole(x, low)), None)
                if not (items or empty_ok) or bad is not None:
                    raise InvalidConfigField(str(key), v, _why_not_whole(bad, key))
                if key in POSITIVE_CONFIG_FIELDS and not all(items):
                    raise InvalidConfigField(str(key), v, "must be positive")
            elif key in CONFIG_FACTOR_FIELDS and not _factor(v):
                raise InvalidConfigField(str(key), v, "not a finite, non-negative number")


def _refuse_negative(node: Any, path: str = "") -> None:
    """No size of a model is negative (nor a position table empty): a config.json saying so
    (a negative moe_intermediate_size, qk_head_dim or max_position_embeddings) describes no
    model vLLM could build, and sizing it would give negative terms that any limit "covers"."""
    if isinstance(node, BaseModel):
        for name in type(node).model_fields:
            _refuse_negative(getattr(node, name), f"{path}.{name}" if path else name)
    elif isinstance(node, tuple):
        for i, item in enumerate(node):
            _refuse_negative(item, f"{path}[{i}]")
    elif (
        isinstance(node, int)
        and not isinstance(node, bool)
        and (node < 0 or (path == "max_position_embeddings" and node == 0))
    ):
        raise ImpossibleEstimate(
            f"the model config gives {path} = {node}: negative (or zero), no model has "
            "that size; not sized"
        )


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def _widest(v: Any) -> Any:
    """Hunyuan configs give some MoE sizes per layer (lists); the widest layer's value."""
    if isinstance(v, list):
        return max((int(x) for x in v), default=None)
    return v


def _read_moe(c: Mapping[str, Any], layers: int, intermediate: int, model_type: str) -> MoE | None:
    experts = (
        c.get("num_experts")
        or c.get("num_local_experts")
        or c.get("n_routed_experts")
        or c.get("moe_num_experts")  # ERNIE 4.5 MoE (transformers Ernie4_5_MoeConfig)
    )
    if not experts or int(experts) <= 1:
        return None
    experts = int(experts)
    per_tok = int(
        c.get("num_experts_per_tok")
        or c.get("experts_per_token")
        or _widest(c.get("moe_topk"))
        or c.get("moe_k")  # ERNIE 4.5 MoE
        or c.get("top_k_experts")  # Gemma 4
        or 2
    )
    expert_inter = int(
        _widest(c.get("moe_intermediate_size"))
        or c.get("expert_intermediate_size")  # Gemma 4 (vLLM gemma4.py:643 reads either)
        or intermediate
    )
    shared = int(c.get("shared_expert_intermediate_size") or 0)
    if not shared and c.get("use_mixed_mlp_moe") and c.get("num_shared_expert"):
        # Hunyuan MoE: the shared MLP is intermediate_size * num_shared_expert[0] wide
        # (modeling_hunyuan.py HunYuanMLP(is_shared_mlp=True), Tencent-Hunyuan/Hunyuan-A13B)
        shared = int(_widest(c["num_shared_expert"])) * intermediate
    if model_type == "llama4_text":
        # Llama4TextMoe always holds one shared expert Llama4TextMLP(config) of intermediate_size.
        shared = expert_inter
    if not shared and c.get("n_shared_experts"):
        # Nemotron-H MoE gives the shared expert its own moe_shared_expert_intermediate_size
        width = c.get("moe_shared_expert_intermediate_size") or expert_inter
        shared = int(c["n_shared_experts"]) * int(width)
    if not shared and c.get("num_shared_experts"):
        # Bailing MoE (inclusionAI Ling; vLLM bailing_moe.py BailingMoE): num_shared_experts
        # experts of moe_shared_expert_intermediate_size (else moe_intermediate_size) each
        width = c.get("moe_shared_expert_intermediate_size") or expert_inter
        shared = int(c["num_shared_experts"]) * int(width)
    if not shared and c.get("moe_num_shared_experts"):
        # ERNIE 4.5 MoE (vLLM ernie45_moe.py): one shared MLP of
        # moe_intermediate_size * moe_num_shared_experts
        shared = int(c["moe_num_shared_experts"]) * expert_inter
    dense = 0
    if c.get("first_k_dense_replace"):
        dense = int(c["first_k_dense_replace"])  # DeepSeek: first k layers dense
    moe_layers = layers - dense
    if c.get("moe_layer_start_index") is not None and c.get("moe_num_experts"):
        # ERNIE 4.5 MoE: layer i is MoE when (i + 1) % moe_layer_interval == 0 and
        # moe_layer_start_index <= i <= moe_layer_end_index (vLLM ernie45_moe.py)
        start = int(_widest(c["moe_layer_start_index"]) or 0)
        end_raw = c.get("moe_layer_end_index")
        end = layers - 1 if end_raw is None or int(_widest(end_raw)) < 0 else int(_widest(end_raw))
        interval = int(c.get("moe_layer_interval") or 1)
        return MoE(
            num_experts=experts,
            experts_per_token=per_tok,
            expert_intermediate_size=expert_inter,
            shared_intermediate_size=shared,
            num_moe_layers=sum(
                1 for i in range(layers) if (i + 1) % interval == 0 and start <= i <= end
            ),
            expert_bias=False,
            shared_expert_gate=False,
        )
    mlp_only = c.get("mlp_only_layers") or []
    step = int(c.get("decoder_sparse_step") or c.get("interleave_moe_layer_step") or 1)
    # Qwen2/3-MoE: layer i is MoE when (i+1) % step == 0; Llama 4's default moe_layers
    # (range(step - 1, layers, step), transformers Llama4TextConfig) is the same set.
    if mlp_only or step > 1:
        moe_layers = sum(1 for i in range(layers) if i not in mlp_only and (i + 1) % step == 0)
    return MoE(
        num_experts=experts,
        experts_per_token=per_tok,
        expert_intermediate_size=expert_inter,
        shared_intermediate_size=shared,
        num_moe_layers=moe_layers,
        expert_bias=model_type == "gpt_oss",
        shared_expert_gate=bool(shared) and model_type in SHARED_EXPERT_GATE_TYPES,
        router_scale=model_type == "gemma4_text",
    )


# Position schemes without a rotary embedding: learned tables (OPT, GPT-2, BigCode, BERT-style
# encoders) or ALiBi (BLOOM, MPT).
NO_ROPE_TYPES = {"opt", "gpt2", "gpt_bigcode", "bloom", "mpt", "nemotron_h"} | ENCODER_TYPES


def _rope_rows(params: Mapping[str, Any], max_pos: int) -> int:
    """Rows of one rotary embedding's cos/sin cache, per scaling type (vLLM
    model_executor/layers/rotary_embedding/, 0.19.0): linear max_position × factor
    (linear_scaling_rope.py:90), dynamic NTK max_position × factor
    (dynamic_ntk_scaling_rope.py:56), yarn / deepseek_yarn original_max × factor
    (yarn_scaling_rope.py:78, deepseek_scaling_rope.py:105, built with
    original_max_position_embeddings in __init__.py get_rope); every other type max_position."""
    kind = str(params.get("rope_type") or params.get("type") or "default").lower()
    try:
        factor = float(params.get("factor") or 1.0)
    except (TypeError, ValueError):
        factor = 1.0
    if kind in ("linear", "dynamic"):
        return int(max_pos * factor)
    if kind in ("yarn", "deepseek_yarn"):
        orig = _int_or_none(params.get("original_max_position_embeddings")) or max_pos
        return int(orig * factor)
    return max_pos


def _rope_cache_elements(
    c: Mapping[str, Any],
    model_type: str,
    head_dim: int,
    mla: MLA | None,
    sliding_layers: int,
) -> int:
    """Elements of the cos/sin caches vLLM registers as device buffers when it builds the model
    (RotaryEmbedding.__init__: cache = _compute_cos_sin_cache().to(dtype), register_buffer
    "cos_sin_cache", 0.19.0:vllm/model_executor/layers/rotary_embedding/base.py:58-63; the same
    in 0.11.1 :45-47), in the model dtype (get_rope: torch.get_default_dtype(), __init__.py:37).
    get_rope caches instances by their parameters (_ROPE_DICT), so layers share one cache per
    distinct rope. Gemma 3's sliding layers use a second, unscaled rope at rope_local_base_freq
    (0.19.0:vllm/model_executor/models/gemma3.py:168-185). vLLM's startup profile logs these
    buffers inside "model weights take": gemma-3-4b-it 0.56 GiB (a 1,048,576-row linear-scaled
    cache at head_dim 256), the gap between its parameters and the logged 8.58 GiB."""
    max_pos = _int_or_none(c.get("max_position_embeddings") or c.get("n_positions"))
    if not max_pos or model_type in NO_ROPE_TYPES or c.get("alibi"):
        return 0
    partial = c.get("partial_rotary_factor") or c.get("rotary_pct") or 1.0
    try:
        partial = float(partial)
    except (TypeError, ValueError):
        partial = 1.0
    dim = mla.qk_rope_head_dim if mla else int(head_dim * min(max(partial, 0.0), 1.0))
    params = c.get("rope_parameters") or c.get("rope_scaling") or {}
    if not isinstance(params, Mapping):
        params = {}
    if model_type == "gemma4_text" and isinstance(params.get("full_attention"), Mapping):
        # Gemma 4: sliding layers a rope over head_dim; full layers a "proportional" rope whose
        # Gemma4RotaryEmbedding caches the whole global_head_dim whatever the partial factor
        # (vLLM 0.33.0 rotary_embedding/__init__.py:156-166, gemma4_rope.py:40-50)
        global_dim = int(c.get("global_head_dim") or 512)
        rows = _rope_rows(params["full_attention"], max_pos) * global_dim
        if isinstance(params.get("sliding_attention"), Mapping) and sliding_layers:
            rows += _rope_rows(params["sliding_attention"], max_pos) * head_dim
        return rows
    per_type = [v for v in params.values() if isinstance(v, Mapping)]
    if per_type:  # transformers v5: one rope_parameters entry per layer type
        return sum(_rope_rows(p, max_pos) for p in per_type) * dim
    rows = _rope_rows(params, max_pos)
    if model_type in ("gemma3", "gemma3_text") and sliding_layers > 0:
        rows += max_pos  # the sliding layers' local rope (rope_type default)
    return rows * dim


def _read_sliding(c: Mapping[str, Any], layers: int, model_type: str) -> tuple[int | None, int]:
    window = c.get("sliding_window")
    layer_types = c.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        n = sum(1 for t in layer_types if "sliding" in str(t))
        return (int(window) if window and n else None), n
    if not window:
        return None, 0
    if model_type.startswith("qwen2") or model_type.startswith("qwen3"):
        if not c.get("use_sliding_window"):
            return None, 0
        return int(window), max(0, layers - int(c.get("max_window_layers") or 0))
    pattern = c.get("sliding_window_pattern")
    if pattern:  # Gemma 3: every pattern-th layer is global
        return int(window), layers - layers // int(pattern)
    if model_type == "gemma2":
        return int(window), layers // 2  # alternating local/global
    return int(window), layers  # Mistral v0.1 style: all layers windowed


def _read_linear_attention(c: Mapping[str, Any], layers: int) -> LinearAttention | None:
    """Gated DeltaNet layers of Qwen3-Next / Qwen3.5 (configs with linear_num_value_heads), or
    MiniMax lightning-attention layers (attn_type_list entries 0; MiniMax-M2 lists none)."""
    types = c.get("attn_type_list")
    if isinstance(types, list) and types and not c.get("linear_num_value_heads"):
        n = sum(1 for t in types[:layers] if int(t) == 0)
        heads = int(c.get("num_attention_heads") or 0)
        head_dim = int(c.get("head_dim") or (int(c.get("hidden_size") or 0) // max(heads, 1)))
        if not n or not heads:
            return None
        return LinearAttention(
            kind="lightning",
            num_layers=n,
            num_key_heads=heads,
            num_value_heads=heads,
            key_head_dim=head_dim,
            value_head_dim=head_dim,
            conv_kernel=0,
        )
    if not c.get("linear_num_value_heads"):
        return None
    layer_types = c.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        n = sum(1 for t in layer_types if str(t) == "linear_attention")
    else:  # Qwen3NextConfig: layer i is full attention when (i + 1) % interval == 0
        interval = int(c.get("full_attention_interval") or 4)
        n = sum(1 for i in range(layers) if (i + 1) % interval)
    if not n:
        return None
    return LinearAttention(
        num_layers=n,
        num_key_heads=int(c.get("linear_num_key_heads") or 16),
        num_value_heads=int(c["linear_num_value_heads"]),
        key_head_dim=int(c.get("linear_key_head_dim") or 128),
        value_head_dim=int(c.get("linear_value_head_dim") or 128),
        conv_kernel=int(c.get("linear_conv_kernel_dim") or 4),
    )


def _read_quantization(q: Any) -> Quantization | None:
    if not isinstance(q, Mapping):
        return None
    method = str(q.get("quant_method") or q.get("quant_type") or "").lower()
    if not method:
        return None
    unquantized = _unquantized_parts(q)
    bits = q.get("bits") or q.get("w_bit")
    algo = str(q.get("quant_algo") or "").lower()  # ModelOpt: {"quant_algo": "NVFP4" | "FP8"}
    part_bytes: tuple[tuple[str, float], ...] = ()
    if method == "modelopt" and algo == "mixed_precision":
        mixed = _modelopt_mixed_parts(q)
        if mixed:
            base, part_bytes = mixed
            method = "nvfp4" if base == QUANT_BYTES_PER_PARAM["nvfp4"] else "fp8"
    elif method == "modelopt" and algo:
        method = "nvfp4" if "fp4" in algo else "fp8"
    if method in {"awq", "gptq"} and bits and int(bits) == 8:
        bpp = 8.16 / 8
    elif method == "compressed-tensors" and (ct := _compressed_tensors_weight_bytes(q)):
        bits, bpp = ct
    elif method in {"compressed-tensors", "bitsandbytes"} and bits:
        # a name-derived format ({"quant_method", "bits"} without config_groups): w4a16 group
        # 128 carries scales like GPTQ; 8-bit is one byte per weight plus per-channel scales
        bpp = 4.16 / 8 if int(bits) <= 4 else 1.0
    else:
        bpp = QUANT_BYTES_PER_PARAM.get(method, 1.0)
    return Quantization(
        method=method,
        bits=int(bits) if bits else None,
        bytes_per_param=bpp,
        unquantized=unquantized,
        part_bytes=tuple((p, b) for p, b in part_bytes if b != bpp),
    )


def _v4_quantization(a: CompressedAttention) -> Quantization | None:
    """DeepSeek-V4 checkpoints: FP8 block linears (attention, shared experts, MTP projections)
    beside routed experts at expert_format (deepseek_v4.read_deepseek_v4); the ignore lists of
    the NVFP4 re-releases name the parts that stay FP8, not unquantized ones, so none is read."""
    if a.expert_format is None:
        return None
    return Quantization(
        method="fp8",
        bytes_per_param=FP8_BYTES,
        part_bytes=(("routed_experts", EXPERT_BYTES[a.expert_format]),),
    )


def _modelopt_mixed_parts(
    q: Mapping[str, Any],
) -> tuple[float, tuple[tuple[str, float], ...]] | None:
    """ModelOpt MIXED_PRECISION (quant_algo) checkpoints list each module's own format in
    `quantized_layers` ({"model.layers.0.self_attn.q_proj": {"quant_algo": "FP8"}, ...
    "mlp.gate_proj": {"quant_algo": "W4A16_NVFP4"}}; e.g. nvidia/Qwen3.6-27B-NVFP4): the MLP's
    format (the bulk of the weights) is the base, attention and linear attention their own."""
    layers = q.get("quantized_layers")
    if not isinstance(layers, Mapping):
        return None
    seen: dict[str, set[float]] = {}
    for name, spec in list(layers.items())[:200_000]:
        algo = str(spec.get("quant_algo") or "").lower() if isinstance(spec, Mapping) else ""
        bpp = QUANT_BYTES_PER_PARAM["nvfp4"] if "fp4" in algo else 1.0 if "fp8" in algo else None
        text = str(name).lower()
        part = (
            "linear_attention"
            if ".linear_attn." in text
            else "attention"
            if ".self_attn." in text
            else "mlp"
            if ".mlp." in text
            else None
        )
        if bpp is not None and part is not None and not any(w in text for w in _NOT_TEXT):
            seen.setdefault(part, set()).add(bpp)
    if "mlp" not in seen:
        return None
    # a part of several formats takes its widest: never fewer bytes than stored
    widest = {part: max(b) for part, b in seen.items()}
    return widest["mlp"], tuple(sorted((p, b) for p, b in widest.items() if p != "mlp"))


# A pattern of a quantization_config ignore list that names a whole part of a decoder layer:
# the part's module name followed by nothing or only a wildcard (`model.layers.3.self_attn*`,
# `re:.*self_attn.*`, `*.mlp.shared_expert.*`); `self_attn.indexers_proj` names one small
# module, not the attention. Towers and MTP heads (vision, visual, mm_projector, mtp) are not
# the text model's and are skipped.
_UNQUANTIZED_PART = re.compile(r"(?:^|[.*:])(?P<part>linear_attn|self_attn|shared_experts?)[.*]*$")
_UNQUANTIZED_NAMES = {
    "linear_attn": "linear_attention",
    "self_attn": "attention",
    "shared_expert": "shared_experts",
    "shared_experts": "shared_experts",
}
_NOT_TEXT = ("vision", "visual", "mm_projector", "multi_modal", "mtp", "audio")


def _unquantized_parts(q: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """The parts of the text model a checkpoint leaves unquantized, read from its ignore list
    (ModelOpt and compressed-tensors `ignore`, `exclude_modules`, bitsandbytes / AWQ
    `modules_to_not_convert`): nvidia's NVFP4 checkpoints keep attention, linear attention and
    the shared experts in bf16 (e.g. nvidia/Qwen3.5-122B-A10B-NVFP4), which at 4.5 bits would be
    counted at a quarter of their bytes."""
    layers: dict[str, set[int] | None] = {}
    for key in ("ignore", "exclude_modules", "modules_to_not_convert"):
        patterns = q.get(key)
        if not isinstance(patterns, list):
            continue
        for raw in patterns[:100_000]:
            text = str(raw).lower()
            if any(w in text for w in _NOT_TEXT):
                continue
            m = _UNQUANTIZED_PART.search(text.replace("\\", ""))
            if not m:
                continue
            part = _UNQUANTIZED_NAMES[m["part"]]
            index = re.search(r"layers\.(\d+)\.", text)
            if index is None:
                layers[part] = None  # every layer
            elif layers.get(part, set()) is not None:
                layers.setdefault(part, set()).add(int(index[1]))  # type: ignore[union-attr]
    return tuple(sorted((part, len(ix) if ix is not None else 0) for part, ix in layers.items()))


def _compressed_tensors_weight_bytes(q: Mapping[str, Any]) -> tuple[int, float] | None:
    """(weight bits, bytes per weight) of a compressed-tensors checkpoint, from its largest
    config_groups weight scheme (compressed_tensors QuantizationArgs: num_bits, strategy,
    group_size, symmetric). Group strategy stores one 16-bit scale per group_size weights (and a
    packed zero point when asymmetric); tensor/channel strategies add a negligible scale row.
    w8a8 fp8/int8 -> 1.0 byte, w4a16 group 128 -> 0.516 byte (vLLM CompressedTensorsWNA16)."""
    groups = q.get("config_groups")
    if not isinstance(groups, Mapping):
        return None
    best: tuple[int, float] | None = None
    for group in groups.values():
        w = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(w, Mapping) or not w.get("num_bits"):
            continue
        nb = int(w["num_bits"])
        bpp = nb / 8
        gs = w.get("group_size")
        if str(w.get("strategy") or "").lower() == "group" and gs:
            bpp += 2 / int(gs)  # fp16/bf16 scale per group
            if w.get("symmetric") is False:
                bpp += nb / 8 / int(gs)  # packed zero point per group
        if best is None or bpp > best[1]:
            best = (nb, bpp)
    return best


def _read_gemma4(
    c: Mapping[str, Any], layers: int, kv_heads: int, head_dim: int, intermediate: int
) -> tuple[tuple[AttentionGroup, ...], tuple[int, ...]]:
    """Gemma 4 text stack (model_type gemma4_text), as vLLM 0.33.0 builds it.
    Attention shapes per layer: transformers 5.24.0 configuration_gemma4.py:208-221 gives
    full_attention layers head_dim = global_head_dim (default 512) and, when
    attention_k_eq_v, num_key_value_heads = num_global_key_value_heads (if set); sliding
    layers keep head_dim / num_key_value_heads; vLLM reads them from per_layer_config
    (gemma4.py:578-580). The last num_kv_shared_layers layers own no K/V projection and no KV
    cache: they read the cache of the last earlier layer of their type (gemma4.py:403-420,
    :471-492). MLP width per layer: intermediate_size, doubled on the KV-shared layers when
    use_double_wide_mlp (gemma4.py:596-616); MoE layers run this dense MLP beside the experts
    (gemma4.py:736-754), so it is every layer's MLP."""
    layer_types = [str(t) for t in (c.get("layer_types") or [])]
    if len(layer_types) != layers:
        # transformers' default: every 6th layer full, the last layer always full
        layer_types = [
            "sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(layers)
        ]
        layer_types[-1] = "full_attention"
    global_dim = int(c.get("global_head_dim") or 512)
    global_kv = c.get("num_global_key_value_heads")
    full_kv = int(global_kv) if c.get("attention_k_eq_v") and global_kv else kv_heads
    shared = min(int(c.get("num_kv_shared_layers") or 0), layers)
    first_shared = layers - shared
    counts: dict[tuple[int, int, bool], int] = {}
    for i, t in enumerate(layer_types):
        full = t == "full_attention"
        key = (global_dim if full else head_dim, full_kv if full else kv_heads, i < first_shared)
        counts[key] = counts.get(key, 0) + 1
    groups = tuple(
        AttentionGroup(layers=n, head_dim=d, kv_heads=kv, owns_kv=owns)
        for (d, kv, owns), n in counts.items()
    )
    double = bool(c.get("use_double_wide_mlp")) and shared > 0
    widths = tuple(intermediate * (2 if double and i >= first_shared else 1) for i in range(layers))
    return groups, widths


def _gemma4_norms(c: Mapping[str, Any], moe: MoE | None, ple_size: int) -> int:
    """Hidden-size RMSNorms per Gemma 4 decoder layer (vLLM 0.33.0 gemma4.py:618-628 four;
    MoE layers post_feedforward_layernorm_1/_2 and pre_feedforward_layernorm_2, :657-665;
    PLE post_per_layer_input_norm, :700-702)."""
    return 4 + (3 if moe else 0) + (1 if ple_size else 0)


def _gemma4_vision_parameters(v: Mapping[str, Any], text_hidden: int) -> int:
    """Gemma 4 vision tower, built by vLLM 0.33.0 with AutoModel.from_config
    (gemma4_mm.py:1101-1108) from transformers 5.24.0 modeling_gemma4.py: patch embedder
    input_proj Linear(3·patch², h) and position_embedding_table (2, position_embedding_size, h)
    (:575-584); per layer q/k/v/o (:905-908, no bias), q_norm and k_norm (head_dim; v_norm has
    no weight, :910-912), gate/up/down MLP (:693-695) and four RMSNorms (:970-973); the pooler
    holds no weights (:620-632). Then vLLM's embed_vision Gemma4MultimodalEmbedder: one
    Linear(vision hidden, text hidden), its norm without weight (gemma4_mm.py:1004-1016).
    Defaults are Gemma4VisionConfig's (configuration_gemma4.py)."""
    h = int(v.get("hidden_size") or 768)
    n = int(v.get("num_hidden_layers") or 16)
    heads = int(v.get("num_attention_heads") or 12)
    kv = int(v.get("num_key_value_heads") or heads)
    hd = int(v.get("head_dim") or 64)
    inter = int(v.get("intermediate_size") or 3072)
    patch = int(v.get("patch_size") or 16)
    positions = int(v.get("position_embedding_size") or 10 * 1024)
    embed = 3 * patch * patch * h + 2 * positions * h
    layer = 2 * h * heads * hd + 2 * h * kv * hd + 2 * hd + 3 * h * inter + 4 * h
    return embed + n * layer + h * text_hidden


def _vision_parameters(
    v: Any, model_type: str = "", text_hidden: int = 0, top: Mapping[str, Any] | None = None
) -> int:
    """Vision tower parameters: exact layer shapes for the Qwen-VL and SigLIP (Gemma 3) towers,
    otherwise a ViT estimate (per layer 4·h² attention + 2·h·inter MLP, plus the patch
    embedding)."""
    if not isinstance(v, Mapping):
        return 0
    if model_type in QWEN_VL_TOWER_TYPES:
        return _qwen_vl_vision_parameters(v, model_type)
    if model_type == "qwen2_5_omni_thinker":
        # transformers qwen2_5_omni Qwen2_5OmniVisionEncoder: the Qwen2.5-VL tower (q/k/v/proj
        # with bias, gated MLP with bias, RMSNorms, Conv3d patch embedding without bias, the
        # same patch merger); vLLM builds it as qwen2_5_vl.py Qwen2_5_VisionTransformer
        return _qwen_vl_vision_parameters(v, "qwen2_5_vl")
    if model_type == "gemma4":
        return _gemma4_vision_parameters(v, text_hidden)
    if model_type == "gemma3" or str(v.get("model_type") or "") == "siglip_vision_model":
        return _siglip_vision_parameters(v) + (
            _gemma3_projector_parameters(v, text_hidden) if model_type == "gemma3" else 0
        )
    if str(v.get("model_type") or "") == "pixtral":
        return _pixtral_vision_parameters(v) + (
            _mistral3_projector_parameters(v, text_hidden, top or {})
            if model_type == "mistral3"
            else 0
        )
    h = int(v.get("hidden_size") or 0)
    n = int(v.get("num_hidden_layers") or v.get("depth") or 0)
    inter = int(v.get("intermediate_size") or 4 * h)
    patch = int(v.get("patch_size") or 14)
    return n * (4 * h * h + 2 * h * inter) + 3 * patch * patch * h


def _pixtral_vision_parameters(v: Mapping[str, Any]) -> int:
    """Pixtral vision tower (transformers pixtral/modeling_pixtral.py, PixtralVisionModel; vLLM
    pixtral.py): patch_conv Conv2d(channels, h, patch) without bias, ln_pre RMSNorm, per layer
    attention_norm + ffn_norm (RMSNorm) and bias-free q/k/v/o and a gated MLP
    (gate/up/down_proj, silu). Rotary positions: no position table. Defaults are
    PixtralVisionConfig's (hidden 1024, 24 layers, intermediate 4096, patch 16)."""
    h = int(v.get("hidden_size") or 1024)
    n = int(v.get("num_hidden_layers") or 24)
    inter = int(v.get("intermediate_size") or 4096)
    patch = int(v.get("patch_size") or 16)
    channels = int(v.get("num_channels") or 3)
    return channels * patch * patch * h + h + n * (4 * h * h + 3 * h * inter + 2 * h)


def _mistral3_projector_parameters(
    v: Mapping[str, Any], text_hidden: int, top: Mapping[str, Any]
) -> int:
    """Mistral3MultiModalProjector (transformers mistral3/modeling_mistral3.py): an RMSNorm over
    the vision hidden size, the patch merger's merging_layer Linear(h * s², h) without bias
    (s = spatial_merge_size, 2 by default), linear_1 Linear(h, text hidden) and linear_2
    Linear(text hidden, text hidden), with bias only when multimodal_projector_bias (default
    False). E.g. Magistral-Small-2509: tower 403,305,472 + projector 35,652,608."""
    h = int(v.get("hidden_size") or 1024)
    merge = int(top.get("spatial_merge_size") or 2)
    bias = bool(top.get("multimodal_projector_bias", False))
    linears = h * text_hidden + text_hidden * text_hidden + (2 * text_hidden if bias else 0)
    return h + h * merge * merge * h + linears


def _siglip_vision_parameters(v: Mapping[str, Any]) -> int:
    """SigLIP vision tower (transformers siglip/modeling_siglip.py, SiglipVisionTransformer):
    patch embedding Conv2d(3, h, patch) with bias, a learned position table of
    (image_size / patch)² rows, per encoder layer q/k/v/out projections with bias, fc1/fc2 with
    bias and two LayerNorms (weight + bias), then post_layernorm. Defaults are
    SiglipVisionConfig's (hidden 768, 12 layers, intermediate 3072, image 224, patch 16)."""
    h = int(v.get("hidden_size") or 768)
    n = int(v.get("num_hidden_layers") or 12)
    inter = int(v.get("intermediate_size") or 3072)
    patch = int(v.get("patch_size") or 16)
    image = int(v.get("image_size") or 224)
    channels = int(v.get("num_channels") or 3)
    embeddings = channels * patch * patch * h + h + (image // patch) ** 2 * h
    layer = 4 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 2 * 2 * h
    return embeddings + n * layer + 2 * h


def _gemma3_projector_parameters(v: Mapping[str, Any], text_hidden: int) -> int:
    """Gemma3MultiModalProjector (transformers gemma3/modeling_gemma3.py):
    mm_input_projection_weight [vision hidden, text hidden] and mm_soft_emb_norm (an RMSNorm
    over the vision hidden size)."""
    h = int(v.get("hidden_size") or 768)
    return h * text_hidden + h


def _audio_parameters(a: Any, model_type: str, text_hidden: int) -> int:
    """Qwen2-Audio's Whisper-style encoder and projector, from transformers
    models/qwen2_audio/modeling_qwen2_audio.py: conv1 Conv1d(num_mel_bins, d, 3) and conv2
    Conv1d(d, d, 3) with bias, embed_positions Embedding(max_source_positions, d), per layer
    k_proj (no bias) + q/v/out_proj (bias), two LayerNorms, fc1/fc2 (bias), a final LayerNorm,
    and Qwen2AudioMultiModalProjector Linear(d, text hidden, bias). Missing keys take the
    Qwen2AudioEncoderConfig defaults."""
    if model_type.lower() == "qwen2_5_omni_thinker" and isinstance(a, Mapping):
        return _omni_audio_parameters(a)
    if model_type.lower() != "qwen2_audio" or not isinstance(a, Mapping):
        return 0
    d, encoder = _whisper_encoder_parameters(a)
    positions = int(a.get("max_source_positions") or 1500)
    return encoder + positions * d + d * text_hidden + text_hidden


def _whisper_encoder_parameters(a: Mapping[str, Any]) -> tuple[int, int]:
    """(d_model, parameters) of the Whisper-style encoder body Qwen2-Audio and Qwen2.5-Omni
    share: conv1 Conv1d(num_mel_bins, d, 3) and conv2 Conv1d(d, d, 3) with bias, per layer
    k_proj (no bias) + q/v/out_proj (bias), two LayerNorms, fc1/fc2 (bias), and a final
    LayerNorm; both configs default to d_model 1280, encoder_ffn_dim 5120, encoder_layers 32,
    num_mel_bins 128."""
    d = int(a.get("d_model") or 1280)
    ffn = int(a.get("encoder_ffn_dim") or 5120)
    layers = int(a.get("encoder_layers") or 32)
    mel = int(a.get("num_mel_bins") or 128)
    conv = mel * d * 3 + d + d * d * 3 + d
    layer = (4 * d * d + 3 * d) + 2 * d + (d * ffn + ffn) + (ffn * d + d) + 2 * d
    return d, conv + layers * layer + 2 * d


def _omni_audio_parameters(a: Mapping[str, Any]) -> int:
    """Qwen2.5-Omni's audio encoder, transformers models/qwen2_5_omni/modeling_qwen2_5_omni.py
    Qwen2_5OmniAudioEncoder: conv1 Conv1d(num_mel_bins, d, 3) and conv2 Conv1d(d, d, 3) with
    bias, a sinusoidal position table (a buffer, no parameters), audio_bos_eos_token
    Embedding(2, output_dim), encoder_layers Qwen2_5OmniAudioEncoderLayer (Whisper's layer, as
    Qwen2-Audio's: k_proj without bias, q/v/out_proj and fc1/fc2 with bias, two LayerNorms),
    ln_post LayerNorm(d) and proj Linear(d, output_dim) with bias. Missing keys take
    Qwen2_5OmniAudioEncoderConfig's defaults (d_model 1280, encoder_ffn_dim 5120,
    encoder_layers 32, num_mel_bins 128, output_dim 3584)."""
    d, encoder = _whisper_encoder_parameters(a)
    out = int(a.get("output_dim") or 3584)
    return encoder + 2 * out + d * out + out


# Qwen-VL vision towers, one formula per family, from the transformers modeling files:
# qwen2_vl/modeling_qwen2_vl.py (PatchEmbed, Qwen2VLVisionBlock, VisionMlp, PatchMerger),
# qwen2_5_vl/modeling_qwen2_5_vl.py (Qwen2_5_VLVisionBlock with a gated MLP and RMSNorm,
# Qwen2_5_VLPatchMerger), qwen3_vl/modeling_qwen3_vl.py (Qwen3VLVisionPatchEmbed with bias,
# learned pos_embed, Qwen3VLVisionMLP, merger + one deepstack merger per deepstack index);
# Qwen3.5 (qwen3_5/modeling_qwen3_5.py) reuses the Qwen3-VL tower.
QWEN_VL_TOWER_TYPES = {
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "qwen3_vl_moe",
    "qwen3_5",
    "qwen3_5_moe",
}


def _qwen_vl_vision_parameters(v: Mapping[str, Any], model_type: str) -> int:
    def num(*keys: str, default: int = 0) -> int:
        for k in keys:
            if v.get(k) is not None:
                return int(v[k])
        return default

    # Qwen2-VL configs may list only non-default vision keys (Qwen/Qwen2-VL-2B-Instruct-AWQ:
    # hidden_size, in_chans, spatial_patch_size): transformers Qwen2VLVisionConfig defaults
    # depth 32, embed_dim 1280, mlp_ratio 4 fill the rest.
    depth = num("depth", "num_hidden_layers", default=32 if model_type == "qwen2_vl" else 0)
    channels = num("in_chans", "in_channels", default=3)
    patch = num("patch_size", "spatial_patch_size", default=14)
    temporal = num("temporal_patch_size", default=2)
    merge = num("spatial_merge_size", default=2)
    if model_type == "qwen2_vl":
        h = num("embed_dim", default=1280)
        out = num("hidden_size")
        inter = int(h * float(v.get("mlp_ratio") or 4))
    else:
        h = num("hidden_size")
        out = num("out_hidden_size")
        inter = num("intermediate_size", default=4 * h)
    if not (depth and h and out):
        return 0
    attn = 4 * h * h + 4 * h  # qkv (h -> 3h) and proj (h -> h), all with bias
    if model_type == "qwen2_5_vl":
        mlp = 3 * h * inter + 2 * inter + h  # gate/up/down, with bias
        norms = 2 * h  # two RMSNorms (weight only)
        patch_embed = channels * temporal * patch * patch * h  # Conv3d, bias=False
    elif model_type == "qwen2_vl":
        mlp = 2 * h * inter + inter + h  # fc1/fc2 with bias
        norms = 4 * h  # two LayerNorms (weight + bias)
        patch_embed = channels * temporal * patch * patch * h
    else:  # qwen3_vl, qwen3_vl_moe, qwen3_5, qwen3_5_moe
        mlp = 2 * h * inter + inter + h
        norms = 4 * h
        patch_embed = channels * temporal * patch * patch * h + h  # Conv3d with bias
        patch_embed += num("num_position_embeddings") * h  # learned position table
    wide = h * merge * merge
    merger_linears = wide * wide + wide + wide * out + out
    ln_q = h if model_type == "qwen2_5_vl" else 2 * h
    total = patch_embed + depth * (attn + mlp + norms) + ln_q + merger_linears
    if model_type in {"qwen3_vl", "qwen3_vl_moe"}:
        deepstack = v.get("deepstack_visual_indexes") or []
        total += len(deepstack) * (2 * wide + merger_linears)  # LayerNorm over the merged width
    return total
