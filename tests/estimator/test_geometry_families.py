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
