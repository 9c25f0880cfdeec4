"""Parts a quantized checkpoint leaves at the model dtype (its quantization_config ignore list)
are counted at that dtype: nvidia's NVFP4 checkpoints keep attention, linear attention and the
shared experts in bf16, which at 4.5 bits per weight would be a quarter of their bytes."""

import copy

import pytest

from vllm_sizer.estimator import ModelGeometry, model_config
from vllm_sizer.estimator.geometry import _unquantized_parts


def _geometry(model_id: str, drop_ignore: bool = False) -> ModelGeometry:
    c = copy.deepcopy(model_config(model_id))
    if drop_ignore:
        for holder in (c, c.get("text_config") or {}):
            q = holder.get("quantization_config")
            if isinstance(q, dict):
                q.pop("ignore", None)
    return ModelGeometry.from_hf_config(c)


def test_nvfp4_attention_linear_attention_and_shared_experts_stay_bf16():
    g = _geometry("nvidia/Qwen3.5-122B-A10B-NVFP4")
    assert dict(g.quantization.unquantized) == {
        "attention": 12, "linear_attention": 36, "shared_experts": 48}
    bare = _geometry("nvidia/Qwen3.5-122B-A10B-NVFP4", drop_ignore=True)
    kept = g.unquantized_parameters()
    assert kept > 4e9  # 12 full-attention + 36 linear-attention layers + 48 shared experts
    # the kept parameters move from 4.5 bits to 2 bytes, nothing else changes
    expected = kept * (2 - g.quantization.bytes_per_param)
    assert abs((g.weight_bytes(2) - bare.weight_bytes(2)) - expected) < 2


@pytest.mark.parametrize("pattern,part", [
    ("model.layers.3.self_attn*", ("attention", 1)),
    ("re:.*self_attn.*", ("attention", 0)),
    ("*.mlp.shared_expert.*", ("shared_experts", 0)),
    ("model.language_model.layers.0.linear_attn*", ("linear_attention", 1)),
])
def test_a_pattern_that_names_a_whole_part(pattern, part):
    assert _unquantized_parts({"ignore": [pattern]}) == (part,)


@pytest.mark.parametrize("pattern", [
    "model.layers.3.self_attn.indexers_proj",  # one small module, not the attention
    "model.layers.3.mlp.shared_expert_gate",
    "model.visual.blocks.0.attn.proj", "vision_tower*", "mtp.layers.0.self_attn*", "lm_head",
])
def test_modules_and_other_towers_are_not_a_text_part(pattern):
    assert _unquantized_parts({"ignore": [pattern]}) == ()


def test_gpt_oss_keeps_its_own_rule():
    """gpt-oss's MXFP4 covers the experts only; its ignore list (self_attn) must not take the
    attention out of the experts a second time."""
    g = _geometry("openai/gpt-oss-20b")
    bare = _geometry("openai/gpt-oss-20b", drop_ignore=True)
    assert g.weight_bytes(2) == bare.weight_bytes(2)


def test_the_report_says_what_stays_unquantized():
    from vllm_sizer.estimator import EngineSettings, build_report

    g = _geometry("nvidia/Qwen3.5-122B-A10B-NVFP4")
    r = build_report(g, EngineSettings(device="cuda", gpu_memory_bytes=80 * 1024**3,
                                       tensor_parallel_size=4))
    assert any("left unquantized" in n and "linear attention" in n for n in r.notes)


def test_modelopt_mixed_precision_counts_each_part_at_its_own_format():
    """nvidia/Qwen3.6-27B-NVFP4: quantized_layers give FP8 attention and linear attention
    beside W4A16_NVFP4 MLPs; the MLPs at 4.5 bits, the attention at one byte (it was read as
    FP8 everywhere: the MLPs at twice their bytes)."""
    g = _geometry("nvidia/Qwen3.6-27B-NVFP4")
    q = g.quantization
    assert (q.method, q.bytes_per_param) == ("nvfp4", 4.5 / 8)
    assert dict(q.part_bytes) == {"attention": 1.0, "linear_attention": 1.0}
    attn = g._part_parameters("attention") + g._part_parameters("linear_attention")
    linear = g._attention_and_linear_parameters() + g.mlp_parameters()[0]
    rest = g.parameter_count() - linear
    expected = (linear - attn) * 4.5 / 8 + attn * 1.0 + rest * 2
    assert abs(g.weight_bytes(2) - expected) < 2
    plain = _geometry("Qwen/Qwen3.5-27B")  # same shapes, unquantized
    assert g.parameter_count() == plain.parameter_count()
    assert 0.35 < g.weight_bytes(2) / plain.weight_bytes(2) < 0.5
