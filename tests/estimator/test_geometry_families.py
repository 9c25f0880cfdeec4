"""Geometry of model families whose layer layout differs from the Llama/Qwen default; each test
reads a catalog config and checks the shape (or count) that a naive reading gets wrong."""

import pytest

from vllm_sizer.estimator import ModelGeometry, lookup_model


def _geo(model_id: str) -> ModelGeometry:
    return ModelGeometry.from_hf_config(lookup_model(model_id)["config"])


def test_llama4_interleaved_moe_with_shared_expert_and_dense_mlp_width():
    # Maverick: interleave_moe_layer_step 2 -> MoE in layers 1, 3, ..., 47 (24 of 48); dense layers
    # use intermediate_size_mlp (16384); each MoE layer adds one shared expert of intermediate_size.
    mav = _geo("meta-llama/Llama-4-Maverick-17B-128E-Instruct")
    assert mav.moe.num_moe_layers == 24
    assert mav.intermediate_size == 16384
    assert mav.moe.expert_intermediate_size == 8192 and mav.moe.shared_intermediate_size == 8192
    # model card: 400B total parameters
    assert mav.parameter_count() == pytest.approx(400e9, rel=0.02)
    scout = _geo("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert scout.moe.num_moe_layers == 48 and scout.moe.shared_intermediate_size == 8192
    assert scout.parameter_count() == pytest.approx(109e9, rel=0.02)  # model card: 109B total


def test_olmo2_qk_norm_spans_all_heads():
    # OLMo 2's q_norm/k_norm weights are num_heads*head_dim and num_kv_heads*head_dim wide; the
    # count then equals the checkpoint's safetensors total (54864793600 bytes fp32 / 4).
    g = _geo("allenai/OLMo-2-1124-13B")
    assert g.parameter_count() == 54864793600 // 4


def test_falcon_refinedweb_config_reads_as_falcon():
    # The RefinedWebModel config of falcon-7b: multi-query attention (1 KV head), a non-gated
    # GELU MLP and one shared LayerNorm per parallel-attention layer.
    g = _geo("tiiuae/falcon-7b")
    assert g.num_kv_heads == 1 and not g.gated_mlp and g.norms_per_layer == 1
    assert g.parameter_count() == pytest.approx(7e9, rel=0.02)  # model card: 7B
    assert g.kv_bytes_per_token(2) == 32 * 2 * 64 * 2


def test_phi3_vision_counts_its_clip_image_tower():
    # The config only names the CLIP checkpoint (img_processor); the tower is CLIP ViT-L/14-336.
    g = _geo("microsoft/Phi-3.5-vision-instruct")
    assert g.vision_parameters > 250_000_000
    assert g.parameter_count() == pytest.approx(4.2e9, rel=0.02)  # model card: 4.2B


def test_phi3_small_reads_ff_intermediate_size_and_biased_linears():
    # Phi-3-small names its MLP width ff_intermediate_size (14336); every linear has a bias and the
    # norms are LayerNorms (modeling_phi3_small.py). Shapes: embed 100352*4096 (tied), per layer
    # qkv 4096*6144+6144, dense 4096*4096+4096, up 4096*28672+28672, down 14336*4096+4096,
    # two LayerNorms 2*(2*4096); plus the final LayerNorm: 7,392,272,384 (Hub: 7.39B).
    g = _geo("microsoft/Phi-3-small-8k-instruct")
    assert g.intermediate_size == 14336 and g.num_kv_heads == 8
    assert g.parameter_count() == 7_392_272_384


def test_nemotron_nas_reads_block_configs():
    # Llama-3.3-Nemotron-Super-49B (DeciLM): 80 block_configs, 31 attention no-ops (no attention,
    # no KV cache), 49 attention layers with 64 / 8 = 8 KV heads, per-layer FFN widths from
    # ffn_mult (int(2 * mult * 8192 / 3) rounded up to 256: 5.25 -> 28672, 2.625 -> 14336).
    g = _geo("nvidia/Llama-3_3-Nemotron-Super-49B-v1")
    assert g.num_attention_layers == 49 and g.num_kv_heads == 8 and g.num_layers == 80
    assert g.intermediate_size == 28672 and len(g.mlp_widths) == 80
    assert g.kv_bytes_per_token(2) == 49 * 2 * 8 * 128 * 2
    assert g.parameter_count() == pytest.approx(49.9e9, rel=0.005)  # Hub: 49.9B


def test_molmo_halves_its_ff_proj_width_and_counts_a_clip_tower():
    # Molmo-7B-D: intermediate_size 37888 is ff_proj's output (both SwiGLU halves); the MLP
    # width is 18944 (vLLM molmo.py MolmoMLP: config.intermediate_size // 2); q/k/v carry a bias
    # (qkv_bias); the image tower is CLIP ViT-L/14-336 with 23 layers. Hub: 8.02B parameters.
    g = _geo("allenai/Molmo-7B-D-0924")
    assert g.intermediate_size == 18944 and g.qkv_bias and not g.o_bias
    assert g.vision_parameters > 250_000_000
    assert g.parameter_count() == pytest.approx(8.02e9, rel=0.02)


def test_dbrx_reads_nested_attention_and_expert_settings():
    # DBRX keeps kv heads in attn_config and the experts in ffn_config: 16 experts of width
    # 10752, 4 per token, 8 KV heads of 48; databricks/dbrx README: 132B total parameters.
    g = _geo("databricks/dbrx-instruct")
    assert g.num_attention_heads == 48 and g.num_kv_heads == 8 and g.head_dim == 128
    assert g.moe.num_experts == 16 and g.moe.experts_per_token == 4
    assert g.moe.expert_intermediate_size == 10752 and g.max_position_embeddings == 32768
    assert g.parameter_count() == pytest.approx(132e9, rel=0.02)


def test_mistral3_text_config_is_untied_by_default():
    # Magistral-Small-2509's text_config has no tie_word_embeddings: MistralConfig's default
    # (False) applies, so the 131072 x 5120 lm_head is counted; hub safetensors total 24.01B.
    g = _geo("mistralai/Magistral-Small-2509")
    assert not g.tie_word_embeddings and g.vision_parameters > 0
    assert g.parameter_count() == pytest.approx(24011361280, rel=0.02)
