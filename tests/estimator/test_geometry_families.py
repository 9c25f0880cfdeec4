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


def test_falcon_old_decoder_ignores_num_kv_heads():
    # falcon-7b-instruct's FalconConfig carries num_kv_heads 71 with multi_query true and
    # new_decoder_architecture false: FalconAttention then keeps one KV head, so the shapes are
    # falcon-7b's (model card: 7B), not a 71-KV-head fused QKV.
    g = _geo("tiiuae/falcon-7b-instruct")
    assert g.num_kv_heads == 1
    assert g.parameter_count() == _geo("tiiuae/falcon-7b").parameter_count()
    assert g.parameter_count() == pytest.approx(7e9, rel=0.02)


def test_falcon_refinedweb_40b_has_two_layernorms_per_layer():
    # falcon-40b's pre-4.32 config (model_type RefinedWeb, no new_decoder_architecture key) is the
    # new decoder: modelling_RW.py gives each layer ln_attn and ln_mlp, as falcon-40b-instruct's
    # FalconConfig (new_decoder_architecture true) says; both read to the same count.
    g = _geo("tiiuae/falcon-40b")
    assert g.norms_per_layer == 2 and g.num_kv_heads == 8
    assert g.parameter_count() == _geo("tiiuae/falcon-40b-instruct").parameter_count()


def test_phi3_vision_counts_its_clip_image_tower():
    # The config only names the CLIP checkpoint (img_processor); the tower is CLIP ViT-L/14-336.
    g = _geo("microsoft/Phi-3.5-vision-instruct")
    assert g.vision_parameters > 250_000_000
    assert g.parameter_count() == pytest.approx(4.2e9, rel=0.02)  # model card: 4.2B
