"""Hunyuan MoE: per-layer lists for expert width, top-k and shared experts."""

from vllm_sizer.estimator import ModelGeometry

# tencent/Hunyuan-A13B-Instruct config.json, the keys geometry reads (the official release repo
# Tencent-Hunyuan/Hunyuan-A13B@2798f3c8b6a69e0ce93950b0d2417203cf950fa0 models/config.json).
HUNYUAN_A13B = {
    "architectures": ["HunYuanMoEV1ForCausalLM"],
    "model_type": "hunyuan",
    "hidden_size": 4096,
    "intermediate_size": 3072,
    "moe_intermediate_size": [3072] * 32,
    "moe_topk": [8] * 32,
    "num_experts": 64,
    "num_shared_expert": [1] * 32,
    "use_mixed_mlp_moe": True,
    "use_qk_norm": True,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "tie_word_embeddings": True,
    "vocab_size": 128167,
}


def test_hunyuan_moe_reads_per_layer_lists_and_the_shared_mlp():
    # modeling_hunyuan.py (same repo): 64 experts HunYuanMLP(3072) + shared_mlp of
    # intermediate_size * num_shared_expert[0], router wg Linear(4096, 64), q/k RMSNorm(head_dim).
    g = ModelGeometry.from_hf_config(HUNYUAN_A13B)
    assert g.moe and g.moe.num_experts == 64 and g.moe.experts_per_token == 8
    assert g.moe.expert_intermediate_size == 3072 and g.moe.shared_intermediate_size == 3072
    assert g.qk_norm
    h = 4096
    attn = h * h + 2 * h * 1024 + h * h + 2 * 128
    moe = 64 * 3 * h * 3072 + h * 64 + 3 * h * 3072
    assert g.parameter_count() == 128167 * h + 32 * (attn + moe + 2 * h) + h
    # README: "a total of 80 billion parameters with 13 billion active parameters"
    assert abs(g.parameter_count() / 80e9 - 1) < 0.01
