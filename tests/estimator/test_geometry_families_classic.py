"""Geometry of classic families (GPT-2, ...) read from catalog configs: each test checks a
count or shape that a reading without the family's layout gets wrong."""

from vllm_sizer.estimator import ModelGeometry, lookup_model


def _geo(model_id: str) -> ModelGeometry:
    return ModelGeometry.from_hf_config(lookup_model(model_id)["config"])


def test_gpt2_counts_its_learned_position_table():
    # GPT2Model.wpe holds n_positions (1024) rows of n_embd; with the tied wte, Conv1D biases and
    # LayerNorm biases the count equals the exact checkpoint count keras-hub publishes
    # (gpt2_base_en 124439808, gpt2_medium_en 354823168).
    g = _geo("gpt2")
    assert g.learned_positions == 1024
    assert g.parameter_count() == 124439808
    assert _geo("openai-community/gpt2-medium").parameter_count() == 354823168
