"""MiniCPM3: DeepSeek-style latent attention whose value head width is not in config.json."""

from vllm_sizer.estimator import ModelGeometry

# openbmb/MiniCPM3-4B config.json, the keys geometry reads (sgl-project/ome@8de82852e3bda5a892cac7fa5f76284189b405eb
# pkg/hfutil/modelconfig/testdata/minicpm3_4b.json; rope_scaling factors left out).
MINICPM3_4B = {
    "architectures": ["MiniCPM3ForCausalLM"],
    "model_type": "minicpm3",
    "hidden_size": 2560,
    "num_hidden_layers": 62,
    "intermediate_size": 6400,
    "max_position_embeddings": 32768,
    "num_attention_heads": 40,
    "num_key_value_heads": 40,
    "qk_nope_head_dim": 64,
    "qk_rope_head_dim": 32,
    "q_lora_rank": 768,
    "kv_lora_rank": 256,
    "vocab_size": 73448,
}


def test_minicpm3_value_heads_are_hidden_over_heads():
    # modeling_minicpm.py (MiniCPM3-4B remote code, as copied in sophgo/LLM-TPU
    # models/MiniCPM3/compile/files/MiniCPM3-4B/modeling_minicpm.py): v_head_dim =
    # hidden_size // num_attention_heads = 64, so kv_b_proj is Linear(256, 40 * (64 + 64)) and
    # o_proj Linear(40 * 64, 2560). DeepSeek's default of 128 would add 0.45B parameters.
    g = ModelGeometry.from_hf_config(MINICPM3_4B)
    assert g.mla and g.mla.v_head_dim == 64
    per_layer_attn = (
        2560 * 768
        + 768
        + 768 * 40 * 96  # q_a_proj, q_a_layernorm, q_b_proj
        + 2560 * (256 + 32)
        + 256  # kv_a_proj_with_mqa, kv_a_layernorm
        + 256 * 40 * (64 + 64)  # kv_b_proj
        + 40 * 64 * 2560  # o_proj
    )
    assert g.attention_parameters_per_layer() == per_layer_attn
    # tied embeddings (no tie_word_embeddings key): 73448 * 2560 once
    expected = 73448 * 2560 + 62 * (per_layer_attn + 3 * 2560 * 6400 + 2 * 2560) + 2560
    assert g.parameter_count() == expected == 4_073_875_968


def test_mla_models_with_v_head_dim_keep_it():
    cfg = {**MINICPM3_4B, "model_type": "deepseek_v2", "v_head_dim": 128}
    assert ModelGeometry.from_hf_config(cfg).mla.v_head_dim == 128
