"""ERNIE 4.5 MoE and Bailing MoE (inclusionAI Ling) expert layouts."""

from vllm_sizer.estimator import ModelGeometry

# baidu/ERNIE-4.5-21B-A3B-Thinking config.json (shape keys); the hub's safetensors total is
# 21,825,437,888 parameters.
ERNIE_21B = {
    "architectures": ["Ernie4_5_MoeForCausalLM"],
    "model_type": "ernie4_5_moe",
    "hidden_size": 2560,
    "intermediate_size": 12288,
    "max_position_embeddings": 131072,
    "moe_intermediate_size": 1536,
    "moe_k": 6,
    "moe_layer_interval": 1,
    "moe_layer_start_index": 1,
    "moe_num_experts": 64,
    "moe_num_shared_experts": 2,
    "num_attention_heads": 20,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "tie_word_embeddings": True,
    "use_bias": False,
    "vocab_size": 103424,
}


def test_ernie45_moe_reads_its_experts_shared_mlp_and_dense_first_layer():
    g = ModelGeometry.from_hf_config(ERNIE_21B)
    assert g.moe is not None
    assert g.moe.num_experts == 64 and g.moe.experts_per_token == 6
    assert g.moe.shared_intermediate_size == 2 * 1536
    assert g.moe.num_moe_layers == 27  # layer 0 is dense (moe_layer_start_index 1)
    assert abs(g.parameter_count() - 21_825_437_888) / 21_825_437_888 < 0.001


def test_ernie45_moe_layer_interval_and_end_index():
    g = ModelGeometry.from_hf_config(
        {**ERNIE_21B, "moe_layer_interval": 2, "moe_layer_end_index": 19}
    )
    # (i + 1) % 2 == 0 and 1 <= i <= 19: i = 1, 3, ..., 19
    assert g.moe is not None and g.moe.num_moe_layers == 10


# inclusionAI/Ling-flash-2.0 config.json (shape keys); hub safetensors total 102,889,705,216.
LING_FLASH = {
    "architectures": ["BailingMoeV2ForCausalLM"],
    "model_type": "bailing_moe",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "intermediate_size": 9216,
    "first_k_dense_replace": 1,
    "moe_intermediate_size": 1024,
    "num_experts_per_tok": 8,
    "num_attention_heads": 32,
    "num_experts": 256,
    "num_key_value_heads": 4,
    "tie_word_embeddings": False,
    "head_dim": 128,
    "num_shared_experts": 1,
    "use_qk_norm": True,
    "vocab_size": 157184,
    "max_position_embeddings": 32768,
    "moe_shared_expert_intermediate_size": 1024,
}


def test_bailing_moe_counts_its_shared_expert():
    g = ModelGeometry.from_hf_config(LING_FLASH)
    assert g.moe is not None and g.moe.shared_intermediate_size == 1024
    assert abs(g.parameter_count() - 102_889_705_216) / 102_889_705_216 < 0.001
