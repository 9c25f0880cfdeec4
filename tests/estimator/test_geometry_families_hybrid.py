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
