"""Family-specific layer shapes of geometry.py, checked against exact published counts."""

import pytest

from vllm_sizer.estimator import ModelGeometry, lookup_model


def _count(model_id: str) -> int:
    return ModelGeometry.from_hf_config(lookup_model(model_id)["config"]).parameter_count()


def test_qwen2_moe_counts_the_shared_expert_gate():
    # keras-hub 'qwen1.5_moe_2.7b_en' params = 14,315,784,192; without the 24 x Linear(2048, 1)
    # shared-expert gates the count falls 49,152 short.
    assert _count("Qwen/Qwen1.5-MoE-A2.7B-Chat") == 14_315_784_192
    g = ModelGeometry.from_hf_config(lookup_model("Qwen/Qwen1.5-MoE-A2.7B-Chat")["config"])
    assert g.moe and g.moe.shared_expert_gate and g.moe.shared_intermediate_size == 5632


def test_models_without_shared_expert_gate_are_unchanged():
    g = ModelGeometry.from_hf_config(lookup_model("deepseek-ai/DeepSeek-V3")["config"])
    assert g.moe and not g.moe.shared_expert_gate


def test_qwen2_5_vl_vision_tower_uses_its_gated_mlp_and_merger():
    # Hub parameter count of Qwen/Qwen2.5-VL-7B-Instruct: 8.29B (text 7.62B + a 0.68B tower whose
    # blocks carry a gated gate/up/down MLP and whose merger is Linear(4*1280, 4*1280) ->
    # Linear(4*1280, 3584)); the generic two-matrix ViT estimate lands at 8.11B.
    g = ModelGeometry.from_hf_config(lookup_model("Qwen/Qwen2.5-VL-7B-Instruct")["config"])
    assert g.parameter_count() == pytest.approx(8.29e9, rel=0.002)
    assert g.vision_parameters == pytest.approx(676.55e6, rel=1e-4)


def test_qwen3_vl_tower_counts_position_table_and_deepstack_mergers():
    # Hub parameter count of Qwen/Qwen3-VL-8B-Instruct: 8.77B (Qwen3-8B text 8.19B + tower with a
    # 2304-row position table, 27 blocks and 1 + 3 deepstack patch mergers).
    g = ModelGeometry.from_hf_config(lookup_model("Qwen/Qwen3-VL-8B-Instruct")["config"])
    assert g.qk_norm
    assert g.parameter_count() == pytest.approx(8.77e9, rel=0.002)


# The ChatGLM-6B-family config.json pasted in mlc-ai/mlc-llm@79d603f085f50500e9509fa01785ffa7ecfaaa93
# python/mlc_llm/model/model_preset.py MODEL_PRESETS["chatglm"] (28 layers, padded vocab 65024).
CHATGLM_6B = {
    "architectures": ["ChatGLMModel"], "model_type": "chatglm", "add_bias_linear": False,
    "add_qkv_bias": True, "apply_query_key_layer_scaling": True,
    "apply_residual_connection_post_layernorm": False, "attention_dropout": 0.0,
    "attention_softmax_in_fp32": True, "bias_dropout_fusion": True, "ffn_hidden_size": 13696,
    "fp32_residual_connection": False, "hidden_dropout": 0.0, "hidden_size": 4096,
    "kv_channels": 128, "layernorm_epsilon": 1e-05, "multi_query_attention": True,
    "multi_query_group_num": 2, "num_attention_heads": 32, "num_layers": 28,
    "original_rope": True, "padded_vocab_size": 65024, "post_layer_norm": True, "rmsnorm": True,
    "seq_length": 8192, "use_cache": True, "torch_dtype": "float16",
    "transformers_version": "4.30.2", "tie_word_embeddings": False, "eos_token_id": 2,
    "pad_token_id": 0,
}


def test_chatglm_layout_reads_groups_ffn_and_padded_vocab():
    # modeling_chatglm.py: SelfAttention.query_key_value = Linear(hidden, hidden + 2*groups*kv_channels,
    # bias=add_qkv_bias); MLP dense_h_to_4h = Linear(hidden, 2*ffn_hidden_size); Embedding(padded_vocab).
    g = ModelGeometry.from_hf_config(CHATGLM_6B)
    assert (g.num_kv_heads, g.head_dim, g.intermediate_size, g.vocab_size) == (2, 128, 13696, 65024)
    assert g.qkv_bias and not g.o_bias and not g.mlp_bias
    assert g.kv_bytes_per_token(2) == 28 * 2 * 2 * 128 * 2
    # Hub parameter count of THUDM/chatglm3-6b (same shapes as chatglm2-6b): 6.24B.
    assert g.parameter_count() == pytest.approx(6.24e9, rel=0.002)


def test_glm4_moe_bias_is_qkv_only_and_qk_norm_follows_use_qk_norm():
    g = ModelGeometry.from_hf_config(lookup_model("zai-org/GLM-4.5")["config"])
    assert g.qkv_bias and not g.o_bias and g.qk_norm
    assert (g.num_kv_heads, g.head_dim) == (8, 128)


def _with_quant(weights: dict) -> dict:
    cfg = dict(lookup_model("Qwen/Qwen2.5-7B")["config"])
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "pack-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
        "ignore": ["lm_head"],
    }
    return cfg


def test_compressed_tensors_w4a16_is_half_a_byte_plus_group_scales():
    # The weight scheme of a w4a16 (GPTQ-style, group 128, symmetric) compressed-tensors checkpoint.
    g = ModelGeometry.from_hf_config(_with_quant(
        {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}))
    assert g.quantization.bits == 4
    assert g.quantization.bytes_per_param == pytest.approx(0.5 + 2 / 128)
    assert g.weight_bytes(2) < 0.45 * g.parameter_count() * 2


def test_compressed_tensors_w8a8_stays_one_byte():
    g = ModelGeometry.from_hf_config(_with_quant(
        {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel"}))
    assert g.quantization.bits == 8 and g.quantization.bytes_per_param == pytest.approx(1.0)
