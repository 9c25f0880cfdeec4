"""Gemma 4 (model_type gemma4 / gemma4_text): per-layer attention shapes, the MoE block beside
the dense MLP, per-layer embeddings (PLE), KV-shared layers and the vision tower, against the
layer shapes of vLLM 0.33.0 vllm/model_executor/models/gemma4.py and gemma4_mm.py (cited in
vllm_sizer/estimator/geometry.py)."""

from vllm_sizer.estimator import ModelGeometry
from vllm_sizer.estimator.gpu_device import kv_bytes_per_token_per_rank

# Small synthetic stacks with the keys of the published Gemma 4 config.json files (the 26B-A4B
# catalog entry is the real one); numbers chosen so every term is visible.
H, HEADS, KV, HD, GKV, GHD, INTER, VOCAB = 64, 4, 2, 16, 1, 32, 96, 1000
TYPES = (
    ["sliding_attention"] * 2 + ["full_attention"] + ["sliding_attention"] * 2 + ["full_attention"]
)


def _text(**extra):
    return {
        "model_type": "gemma4_text",
        "hidden_size": H,
        "num_hidden_layers": 6,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV,
        "head_dim": HD,
        "global_head_dim": GHD,
        "num_global_key_value_heads": GKV,
        "attention_k_eq_v": True,
        "intermediate_size": INTER,
        "vocab_size": VOCAB,
        "layer_types": TYPES,
        "sliding_window": 8,
        "hidden_size_per_layer_input": 0,
        "num_kv_shared_layers": 0,
        "max_position_embeddings": 128,
        "rope_parameters": {
            "full_attention": {"partial_rotary_factor": 0.25, "rope_type": "proportional"},
            "sliding_attention": {"rope_type": "default"},
        },
        "tie_word_embeddings": True,
        **extra,
    }


def _attn(hd, kv, owns=True):
    q_o = 2 * H * HEADS * hd + hd  # q_proj, o_proj, q_norm
    return q_o + (2 * H * kv * hd + hd if owns else 0)  # qkv_proj K and V slices, k_norm


def test_dense_stack_per_layer_shapes_and_kv():
    g = ModelGeometry.from_hf_config({"model_type": "gemma4", "text_config": _text()})
    attn = 4 * _attn(HD, KV) + 2 * _attn(GHD, GKV)
    mlp = 6 * 3 * H * INTER
    norms = (4 * 6 + 1) * H
    assert g.parameter_count() == VOCAB * H + attn + mlp + norms
    # K and V per KV-owning layer at its own shape (k_eq_v layers keep a V cache in vLLM)
    assert g.kv_bytes_per_token(2) == 2 * (4 * 2 * KV * HD + 2 * 2 * GKV * GHD)
    assert kv_bytes_per_token_per_rank(g, 2, 1, 1) == g.kv_bytes_per_token(2)
    # TP 2: KV heads split, the single global KV head replicated
    assert kv_bytes_per_token_per_rank(g, 2, 2, 1) == 2 * (4 * 2 * 1 * HD + 2 * 2 * 1 * GHD)
    # proportional rope caches the whole global head dim, the sliding rope head_dim
    assert g.rope_cache_elements == 128 * GHD + 128 * HD


def test_moe_block_beside_dense_mlp():
    g = ModelGeometry.from_hf_config(
        _text(num_experts=8, top_k_experts=2, moe_intermediate_size=24, enable_moe_block=True)
    )
    dense = ModelGeometry.from_hf_config(_text())
    assert g.moe and g.moe.experts_per_token == 2
    experts = 8 * 3 * H * 24 + H * 8 + H + 8  # experts, router proj, scale, per_expert_scale
    assert g.parameter_count() - dense.parameter_count() == 6 * (experts + 3 * H)  # 3 norms


def test_per_layer_embeddings_kv_sharing_double_wide():
    ple, shared = 8, 2
    c = _text(
        hidden_size_per_layer_input=ple,
        vocab_size_per_layer_input=500,
        num_kv_shared_layers=shared,
        use_double_wide_mlp=True,
    )
    g = ModelGeometry.from_hf_config(c)
    # layers 4 (sliding) and 5 (full) reuse earlier layers' KV: q_proj/o_proj only
    attn = 3 * _attn(HD, KV) + _attn(GHD, GKV) + _attn(HD, KV, False) + _attn(GHD, GKV, False)
    mlp = 4 * 3 * H * INTER + 2 * 3 * H * 2 * INTER
    ple_params = 500 * 6 * ple + H * 6 * ple + 6 * 2 * H * ple + ple
    norms = (5 * 6 + 1) * H
    assert g.parameter_count() == VOCAB * H + attn + mlp + ple_params + norms
    assert g.kv_layers == 4
    assert g.kv_bytes_per_token(1) == 3 * 2 * KV * HD + 2 * GKV * GHD


def test_vision_tower_and_embedder():
    v = {
        "model_type": "gemma4_vision",
        "hidden_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "head_dim": 12,
        "intermediate_size": 80,
        "patch_size": 4,
        "position_embedding_size": 32,
    }
    g = ModelGeometry.from_hf_config(
        {"model_type": "gemma4", "text_config": _text(), "vision_config": v}
    )
    layer = 4 * 48 * 48 + 2 * 12 + 3 * 48 * 80 + 4 * 48
    assert g.vision_parameters == 3 * 16 * 48 + 2 * 32 * 48 + 2 * layer + 48 * H


def test_activation_and_lora_widths_take_the_widest_attention_layer():
    """Full-attention layers run 512-wide heads: the dummy forward's qkv output and the LoRA
    q/o projections are as wide as theirs, not the sliding layers' 256."""
    from vllm_sizer.estimator import ModelGeometry, model_config

    g = ModelGeometry.from_hf_config(model_config("google/gemma-4-26B-A4B"))
    widest = max(a.head_dim for a in g.attention_groups)
    assert widest > g.head_dim
    assert g.q_width == g.num_attention_heads * widest == g.attn_out_in_width
    assert g.kv_width == max(a.kv_heads * a.head_dim for a in g.attention_groups)
