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
