"""Hybrid linear-attention stacks (Qwen3-Next, Qwen3.5): Gated DeltaNet layers, gated full
attention and a per-token KV cache only on the full-attention layers."""

from vllm_sizer.estimator import ModelGeometry

# Qwen/Qwen3.5-35B-A3B config.json, the keys geometry reads, as copied in
# ai-dynamo/aiconfigurator@0b077da5e017cb8ceac1ad14e91eb6e26c40207a
# aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3.5-35B-A3B_config.json
# (alibaba/InferSim hf_configs/qwen3.5-35B-A3B_config.json holds the same).
QWEN3_5_35B_A3B = {
    "architectures": ["Qwen3_5MoeForConditionalGeneration"],
    "model_type": "qwen3_5_moe",
    "text_config": {
        "attention_bias": False,
        "attn_output_gate": True,
        "full_attention_interval": 4,
        "head_dim": 256,
        "hidden_size": 2048,
        "layer_types": [
            "linear_attention",
            "linear_attention",
            "linear_attention",
            "full_attention",
        ]
        * 10,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_value_head_dim": 128,
        "max_position_embeddings": 262144,
        "mlp_only_layers": [],
        "model_type": "qwen3_5_moe_text",
        "moe_intermediate_size": 512,
        "num_attention_heads": 16,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 40,
        "num_key_value_heads": 2,
        "shared_expert_intermediate_size": 512,
        "vocab_size": 248320,
    },
    "tie_word_embeddings": False,
    "vision_config": {
        "deepstack_visual_indexes": [],
        "depth": 27,
        "hidden_size": 1152,
        "in_channels": 3,
        "intermediate_size": 4304,
        "model_type": "qwen3_5_moe",
        "num_heads": 16,
        "num_position_embeddings": 2304,
        "out_hidden_size": 2048,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    },
}


def test_qwen3_5_moe_counts_gated_deltanet_layers_and_the_vision_tower():
    # keras-hub preset 'qwen3_5_moe_35b_a3b' params = 35,107,181,936 (text 34,660,610,688, the
    # same as 'qwen_agent_world_35b_a3b' without a tower, + a 27-block Qwen3-VL-style tower).
    # Counting every layer as plain attention gives 21.16B.
    g = ModelGeometry.from_hf_config(QWEN3_5_35B_A3B)
    assert g.linear_attention and g.linear_attention.num_layers == 30
    assert g.attn_output_gate and g.qk_norm and g.moe and g.moe.shared_expert_gate
    assert g.parameter_count() == 35_107_181_936
    assert g.parameter_count() - g.vision_parameters == 34_660_610_688


def test_hybrid_kv_cache_counts_only_full_attention_layers():
    g = ModelGeometry.from_hf_config(QWEN3_5_35B_A3B)
    assert g.kv_layers == 10
    assert g.kv_bytes_per_token(2) == 10 * 2 * 2 * 256 * 2


def test_qwen3_next_layers_follow_full_attention_interval():
    # Qwen3NextConfig without layer_types: layer i is full attention when (i + 1) % 4 == 0; its
    # attention always carries the output gate (no attn_output_gate key in the config).
    text = dict(QWEN3_5_35B_A3B["text_config"])
    del text["layer_types"], text["attn_output_gate"]
    cfg = {**text, "model_type": "qwen3_next", "num_hidden_layers": 48}
    g = ModelGeometry.from_hf_config(cfg)
    assert g.linear_attention and g.linear_attention.num_layers == 36
    assert g.kv_layers == 12 and g.attn_output_gate


def test_plain_models_have_no_linear_attention():
    cfg = {
        "model_type": "qwen3",
        "hidden_size": 1024,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "intermediate_size": 3072,
    }
    g = ModelGeometry.from_hf_config(cfg)
    assert g.linear_attention is None and not g.attn_output_gate and g.kv_layers == 28


# MiniMaxAI/MiniMax-M1 config.json, the keys geometry reads (the official release repository
# MiniMax-AI/MiniMax-M1@4917af1b9b77cdf6fafa78f31779fdb20cc18e79 config.json): attn_type_list 0 = lightning attention,
# 1 = softmax attention (modeling_minimax_m1.py MiniMaxM1Model).
MINIMAX_M1 = {
    "architectures": ["MiniMaxM1ForCausalLM"],
    "model_type": "minimax_m1",
    "attn_type_list": ([0] * 7 + [1]) * 10,
    "head_dim": 128,
    "hidden_size": 6144,
    "intermediate_size": 9216,
    "num_attention_heads": 64,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 80,
    "num_key_value_heads": 8,
    "num_local_experts": 32,
    "shared_intermediate_size": 0,
    "tie_word_embeddings": False,
    "vocab_size": 200064,
}


def test_minimax_lightning_layers_carry_output_gate_and_full_width_qkv():
    # README: "a total of 456 billion parameters"; 70 lightning layers hold qkv_proj(6144,
    # 3*8192), output_gate(6144, 8192), out_proj(8192, 6144) and RMSNorm(8192) - counting them as
    # 8-KV-head softmax attention gives 446.4B. Only the 10 softmax layers keep a KV cache.
    g = ModelGeometry.from_hf_config(MINIMAX_M1)
    la = g.linear_attention
    assert la and la.kind == "lightning" and la.num_layers == 70 and g.kv_layers == 10
    assert la.parameters_per_layer(6144) == 4 * 6144 * 8192 + 8192 * 6144 + 8192
    assert abs(g.parameter_count() / 456e9 - 1) < 0.001
    assert g.kv_bytes_per_token(2) == 10 * 2 * 8 * 128 * 2
