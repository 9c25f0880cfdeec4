"""Nemotron-H hybrids (model_type nemotron_h): Mamba-2, attention, MLP and MoE layers from
hybrid_override_pattern, one mixer and one RMSNorm per layer."""

from vllm_sizer.estimator import ModelGeometry

# nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json (shape keys), as kept in
# kaito-project/kaito presets/workspace/inference/vllm/tests/nemotron-3-nano-30b-a3b-config.json
NANO_30B = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "chunk_size": 128,
    "conv_kernel": 4,
    "head_dim": 128,
    "hidden_size": 2688,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "intermediate_size": 1856,
    "mamba_head_dim": 64,
    "mamba_num_heads": 64,
    "max_position_embeddings": 262144,
    "mlp_hidden_act": "relu2",
    "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712,
    "n_groups": 8,
    "n_routed_experts": 128,
    "n_shared_experts": 1,
    "num_attention_heads": 32,
    "num_experts_per_tok": 6,
    "num_hidden_layers": 52,
    "num_key_value_heads": 2,
    "ssm_state_size": 128,
    "tie_word_embeddings": False,
    "use_conv_bias": True,
    "vocab_size": 131072,
}


def test_nemotron_h_layers_come_from_the_pattern():
    g = ModelGeometry.from_hf_config(NANO_30B)
    assert g.num_attention_layers == 6  # the six '*' layers hold the KV cache
    assert g.linear_attention is not None and g.linear_attention.num_layers == 23
    assert g.moe is not None and g.moe.num_moe_layers == 23
    assert g.moe.shared_intermediate_size == 3712
    assert not g.gated_mlp and g.norms_per_layer == 1
    assert g.kv_bytes_per_token(2) == 6 * 2 * 2 * 128 * 2


def test_nemotron_h_parameter_count_matches_the_checkpoint():
    # 31.58B: kaito's model catalog lists 58.82 GiB of bf16 weights for the checkpoint
    g = ModelGeometry.from_hf_config(NANO_30B)
    assert abs(g.parameter_count() - 31_577_940_288) / 31_577_940_288 < 0.001


def test_nemotron_h_dense_pattern_counts_mlp_layers():
    dense = {
        **NANO_30B,
        "hybrid_override_pattern": "M-M*-M",
        "num_hidden_layers": 6,
        "intermediate_size": 8192,
    }
    for key in ("n_routed_experts", "n_shared_experts", "moe_intermediate_size"):
        dense.pop(key)
    g = ModelGeometry.from_hf_config(dense)
    assert g.moe is None and g.num_attention_layers == 1
    assert g.linear_attention is not None and g.linear_attention.num_layers == 3
    assert g.mlp_parameters()[0] == 2 * (2 * 2688 * 8192)


# nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16 (shape keys; ai-dynamo/aiconfigurator
# model_configs): layers_block_type instead of hybrid_override_pattern and no
# num_hidden_layers; latent MoE (moe_latent_size 2048).


def _ultra_blocks() -> list[str]:
    # 108 layers: 48 mamba, 48 moe, 12 attention (the counts of the published config)
    unit = ["mamba", "moe", "mamba", "moe", "mamba", "moe", "mamba", "moe", "attention"]
    return unit * 12


ULTRA = {
    "architectures": ["NemotronHForCausalLM"],
    "model_type": "nemotron_h",
    "conv_kernel": 4,
    "head_dim": 128,
    "hidden_size": 8192,
    "intermediate_size": 5120,
    "layers_block_type": _ultra_blocks(),
    "mamba_head_dim": 64,
    "mamba_num_heads": 256,
    "max_position_embeddings": 262144,
    "moe_intermediate_size": 5120,
    "moe_latent_size": 2048,
    "moe_shared_expert_intermediate_size": 10240,
    "n_groups": 8,
    "n_routed_experts": 512,
    "n_shared_experts": 1,
    "num_attention_heads": 64,
    "num_experts_per_tok": 22,
    "num_key_value_heads": 2,
    "ssm_state_size": 128,
    "tie_word_embeddings": False,
    "use_conv_bias": True,
    "vocab_size": 131072,
}


def test_nemotron_h_layers_block_type_and_latent_moe():
    g = ModelGeometry.from_hf_config(ULTRA)
    assert g.num_layers == 108 and g.num_attention_layers == 12
    assert g.moe is not None and g.moe.num_moe_layers == 48 and g.moe.latent_size == 2048
    # routed experts run at the latent width: 512 x 2 x 2048 x 5120 per MoE layer
    assert abs(g.parameter_count() - 549.3e9) / 549.3e9 < 0.001  # card: 550B total
