"""DeepSeek-V4 (model_type deepseek_v4): compressed / sparse attention, the grouped output
projection, hyper-connections, hash-routed MoE layers and the mixed FP8 / FP4 checkpoint, against
the layer shapes of vLLM 0.33.0 (vllm/models/deepseek_v4/, cited in
vllm_sizer/estimator/deepseek_v4.py) and the published sizes of the checkpoints."""

import pytest

from vllm_sizer.estimator import ModelGeometry, lookup_model
from vllm_sizer.estimator.deepseek_v4 import kv_bytes_per_token, mtp_parts, weight_bytes
from vllm_sizer.estimator.errors import MissingConfigField
from vllm_sizer.estimator.gpu_device import (
    kv_bytes_per_token_per_rank,
    rope_cache_bytes,
    weights_per_rank,
)
from vllm_sizer.estimator.names import resolve_model

GiB = 2**30


def _geo(model_id):
    return ModelGeometry.from_hf_config(lookup_model(model_id)["config"])


def _with_mtp(g):
    e, a = g.moe, g.compressed_attention
    mtp = mtp_parts(
        a,
        hidden=g.hidden_size,
        heads=g.num_attention_heads,
        experts=e.num_experts,
        expert_width=e.expert_intermediate_size,
        shared_width=e.shared_intermediate_size,
    )
    return mtp, g.weight_bytes(2) + weight_bytes(mtp, a, 2)


# A small synthetic stack with the keys of the published config.json files: one layer of each
# kind (0 sliding only, 4 CSA, 128 HCA), one hash-routed MoE layer, plus the MTP entry.
H, HEADS, D, QL, G, OL, IH, ID, E, K, I, V, HC = 64, 4, 32, 16, 2, 8, 2, 8, 4, 2, 24, 100, 2
TINY = {
    "architectures": ["DeepseekV4ForCausalLM"],
    "model_type": "deepseek_v4",
    "hidden_size": H,
    "num_hidden_layers": 3,
    "num_attention_heads": HEADS,
    "num_key_value_heads": 1,
    "head_dim": D,
    "qk_rope_head_dim": 8,
    "q_lora_rank": QL,
    "o_groups": G,
    "o_lora_rank": OL,
    "index_n_heads": IH,
    "index_head_dim": ID,
    "n_routed_experts": E,
    "num_experts_per_tok": K,
    "n_shared_experts": 1,
    "moe_intermediate_size": I,
    "vocab_size": V,
    "hc_mult": HC,
    "num_hash_layers": 1,
    "num_nextn_predict_layers": 1,
    "sliding_window": 16,
    "compress_ratios": [0, 4, 128, 0],
    "max_position_embeddings": 1024,
    "tie_word_embeddings": False,
    "expert_dtype": "fp4",
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
}


def test_tiny_stack_every_term_by_hand():
    g = ModelGeometry.from_hf_config(TINY)
    a = g.compressed_attention
    assert a.compress_ratios == (0, 4, 128)  # the MTP entry dropped (attention.py:237-244)
    assert g.mla is None and g.moe.num_moe_layers == 3
    # attention.py:250-288: sink, fused_wqa_wkv, wq_b, grouped wo_a, wo_b, q_norm, kv_norm
    attn = HEADS + H * (QL + D) + QL * HEADS * D + HEADS * D * OL + G * OL * H + QL + D
    mix = (2 + HC) * HC  # nvidia/model.py:621-664 hyper-connection mixers, both sublayers
    hc = 2 * (mix * HC * H + mix + 3)

    def compressor(d, ratio):  # compressor.py:261-280: ape, fused_wkv_wgate, norm
        coff = 2 if ratio == 4 else 1
        return ratio * coff * d + H * 2 * coff * d + d

    indexer = QL * IH * ID + H * IH + compressor(ID, 4)  # attention.py:990-1003, :1037-1046
    per_layer_attn = 3 * (attn + hc) + compressor(D, 4) + indexer + compressor(D, 128)
    moe = 3 * (H * E + 3 * H * I + E * 3 * H * I + 2 * H)  # gate, shared, experts, 2 norms
    routing = V * K + 2 * E  # hash layer tid2eid (nvidia/model.py:286-301), others' bias
    model = 2 * V * H + H + HC * HC * H + HC + 1  # embed, lm_head, norm, hc_head (:883-900)
    assert g.parameter_count() == per_layer_attn + moe + routing + model
    p = g.v4_parts
    assert p.experts == 3 * E * 3 * H * I and p.int32 == V * K
    # experts MXFP4 (4.25 bits), FP8-block linears 1 byte, the rest bf16 / fp32 / int32
    assert g.weight_bytes(2) == int(
        p.fp8 + p.experts * 4.25 / 8 + 2 * p.bf16 + 4 * (p.fp32 + p.int32)
    )


def test_tiny_stack_kv_cache_by_hand():
    g = ModelGeometry.from_hf_config(TINY)
    # fp8_ds_mla: 584 B per compressed state (attention.py:880-882), 256-token pages
    # (sparse_mla.py:60-61) rounded up to 576 B (attention.py:874, kv_cache_interface.py:719-725)
    c4 = -(-64 * 584 // 576) * 576  # 37440
    c128 = -(-2 * 584 // 576) * 576  # 1728
    # indexer K cache: ID fp8 bytes + one fp32 scale per 128 (attention.py:1022-1029), 4 tokens
    # per state (attention.py:912-925)
    index = -(-64 * (ID + 4 * (ID // 128)) // 576) * 576
    assert kv_bytes_per_token(g.compressed_attention) == (c4 + index + c128) / 256
    # the sliding-only layer keeps no per-token cache; the kv dtype does not change the layout
    assert g.kv_bytes_per_token(2) == g.kv_bytes_per_token(1)


def test_pro_kv_bytes_per_token_from_the_code():
    g = _geo("deepseek-ai/DeepSeek-V4-Pro")
    a = g.compressed_attention
    assert (a.csa_layers, a.hca_layers, len(a.compress_ratios)) == (30, 31, 61)
    # CSA: 64 states x 584 B -> 37440 B page + indexer 64 x 132 B -> 8640 B page; HCA: 2 x 584 B
    # -> 1728 B page; per 256-token block
    per_token = (30 * (37440 + 8640) + 31 * 1728) / 256
    assert per_token == 5609.25
    assert kv_bytes_per_token(a) == per_token and g.kv_bytes_per_token(1) == 5610
    # every cache spec has max_tp_shards=1 (attention.py:868-884): not split by TP; PP splits
    assert kv_bytes_per_token_per_rank(g, 1, 8, 1) == 5610
    assert kv_bytes_per_token_per_rank(g, 1, 1, 2) == pytest.approx(5610 * 31 / 61)


def test_flash_kv_bytes_per_token_from_the_code():
    a = _geo("deepseek-ai/DeepSeek-V4-Flash").compressed_attention
    assert (a.csa_layers, a.hca_layers) == (21, 20)
    assert kv_bytes_per_token(a) == (21 * (37440 + 8640) + 20 * 1728) / 256 == 3915.0


@pytest.mark.parametrize(
    "model_id, published, derived",
    [
        ("deepseek-ai/DeepSeek-V4-Pro", 1.6e12, 1_572_999_528_803),
        ("deepseek-ai/DeepSeek-V4-Flash", 284e9, 284_334_567_511),
    ],
)
def test_parameter_count_against_the_model_cards(model_id, published, derived):
    g = _geo(model_id)
    assert g.parameter_count() == derived
    # model cards: Pro 1.6T (rounded to 0.1T: 0.983), Flash 284B (1.0012); both without MTP
    # (Flash's count with its MTP layer would be 290.9B, 1.024x)
    assert g.parameter_count() / published == pytest.approx(1, abs=0.02)


@pytest.mark.parametrize(
    "model_id, published_gib",
    [
        # KAITO's model catalog (kaito-project/kaito@056b8280b1a8 presets/workspace/models/
        # model_catalog.yaml): DeepSeek-V4-Pro modelFileSize 805.34Gi
        ("deepseek-ai/DeepSeek-V4-Pro", 805.34),
        # KAITO's DeepSeek-V4 onboarding proposal (docs/proposals/20260722-deepseek-v4-
        # onboarding.md): DeepSeek-V4-Flash "~148.66 GiB of weights"
        ("deepseek-ai/DeepSeek-V4-Flash", 148.66),
    ],
)
def test_weight_bytes_against_the_checkpoint_size(model_id, published_gib):
    g = _geo(model_id)
    mtp, checkpoint = _with_mtp(g)
    # the checkpoint holds the MTP layer vLLM serves only as a draft: 805.31 / 805.34 GiB,
    # 148.64 / 148.66 GiB
    assert checkpoint / GiB / published_gib == pytest.approx(1, abs=0.001)
    assert g.weight_bytes(2) < checkpoint and mtp.total > 0


def test_nvfp4_checkpoints_store_nvfp4_experts_and_fp8_linears():
    pro, nv = _geo("deepseek-ai/DeepSeek-V4-Pro"), _geo("nvidia/DeepSeek-V4-Pro-NVFP4")
    assert nv.parameter_count() == pro.parameter_count()
    assert nv.compressed_attention.expert_format == "nvfp4"
    assert pro.compressed_attention.expert_format == "mxfp4"
    # only the experts differ: 4.5 bits (NVFP4, group 16) against 4.25 (MXFP4, group 32)
    experts = pro.v4_parts.experts
    assert nv.weight_bytes(2) - pro.weight_bytes(2) == pytest.approx(experts * 0.25 / 8, abs=2)
    # the ignore list names the parts kept off NVFP4 (FP8 here), not unquantized ones
    assert nv.unquantized_parameters() == 0
    assert nv.quantization.part_bytes == (("routed_experts", 4.5 / 8),)


def test_rope_caches_are_fp32_and_tp_replicated_weights_counted_whole():
    g = _geo("deepseek-ai/DeepSeek-V4-Pro")
    # two caches (sliding: factor 1 over 1048576 rows; compressed: 65536 x 16 rows), 64 wide,
    # fp32 (common/rope.py:20-46, deepseek_scaling_rope.py:234-251)
    assert rope_cache_bytes(g, 2) == 2 * 1_048_576 * 64 * 4
    rep = g.tp_replicated_bytes(2)
    assert 3.0 * GiB < rep < 3.6 * GiB
    w = g.weight_bytes(2)
    assert weights_per_rank(g, 2, 8, 1) == int(w / 8 + rep * 7 / 8 + rope_cache_bytes(g, 2))


def test_activation_widths():
    g = _geo("deepseek-ai/DeepSeek-V4-Pro")
    assert g.residual_width == 4 * 7168  # hc_mult streams (nvidia/model.py:937-945)
    assert g.q_width == 128 * 512 and g.kv_width == 512
    names = [s.name for s in g.lora_linear_shapes()]
    assert names[:4] == ["fused_wqa_wkv", "wq_b", "wo_a", "wo_b"] and "o_proj" not in names


def test_unsupported_weight_format_is_refused():
    with pytest.raises(MissingConfigField):
        ModelGeometry.from_hf_config({**TINY, "quantization_config": {"quant_method": "awq"}})


@pytest.mark.parametrize(
    "name, target, experts, rule",
    [
        ("deepseek-ai/DeepSeek-V4-Pro", "deepseek-ai/DeepSeek-V4-Pro", "mxfp4", "exact"),
        ("deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Flash", "mxfp4", "exact"),
        ("nvidia/DeepSeek-V4-Pro-NVFP4", "nvidia/DeepSeek-V4-Pro-NVFP4", "nvfp4", "exact"),
        ("nvidia/DeepSeek-V4-Flash-NVFP4", "nvidia/DeepSeek-V4-Flash-NVFP4", "nvfp4", "exact"),
        # aiconfigurator's DEEPSEEK_V4_HF_MODELS: FP8 re-releases, FP8-block experts
        ("sgl-project/DeepSeek-V4-Flash-FP8", "deepseek-ai/DeepSeek-V4-Flash", "fp8", None),
        ("sgl-project/DeepSeek-V4-Pro-FP8", "deepseek-ai/DeepSeek-V4-Pro", "fp8", None),
        # vLLM's quant_config.py: DeepSeek-V4-Flash-Base is an expert_dtype fp8 checkpoint
        ("deepseek-ai/DeepSeek-V4-Flash-Base", "deepseek-ai/DeepSeek-V4-Flash", "fp8", None),
        ("/models/deepseek-ai/DeepSeek-V4-Pro", "deepseek-ai/DeepSeek-V4-Pro", "mxfp4", None),
    ],
)
def test_names_resolve(name, target, experts, rule):
    r = resolve_model(name)
    assert r.model_id == target
    assert rule is None or r.rule == rule
    g = ModelGeometry.from_hf_config(r.config)
    assert g.compressed_attention.expert_format == experts
    assert g.quantization.method == "fp8"  # FP8-block linears under every rule
    if rule is None:
        assert r.note


def test_fp8_release_weighs_fp8_experts():
    fp8 = ModelGeometry.from_hf_config(resolve_model("sgl-project/DeepSeek-V4-Flash-FP8").config)
    flash = _geo("deepseek-ai/DeepSeek-V4-Flash")
    experts = flash.v4_parts.experts
    assert fp8.weight_bytes(2) - flash.weight_bytes(2) == pytest.approx(
        experts * (1 - 4.25 / 8), abs=2
    )


def test_other_format_suffix_is_refused_not_guessed():
    r = resolve_model("someone/DeepSeek-V4-Flash-AWQ")
    assert r.config is None and "not modelled" in r.refusal
