"""Catalog entries added for model ids that published vLLM manifests serve
(scripts/manifest_model_ids.py): each resolves as the manifests spell it, and its geometry is
checked against a published size where one exists (KAITO's model catalog, generated from the
Hub: kaito-project/kaito@056b8280b1a8 presets/workspace/models/model_catalog.yaml, lists each
model's safetensors total as modelFileSize)."""

import pytest

from vllm_sizer.estimator import ModelGeometry, model_config
from vllm_sizer.estimator.names import resolve_model

GIB = 2**30


@pytest.mark.parametrize("name, model_id, rule, quant", [
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
     "exact", None),
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
     "quantization", "fp8"),
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4",
     "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", "quantization", "nvfp4"),
    ("google/gemma-4-31B-it", "nvidia/Gemma-4-31B-IT-NVFP4", "variant", None),
    ("google/gemma-4-E2B-it", "google/gemma-4-E2B-it", "exact", None),
    ("google/gemma-4-E4B-it", "google/gemma-4-E4B-it", "exact", None),
    ("google/embeddinggemma-300m", "google/embeddinggemma-300m", "exact", None),
    ("BAAI/bge-base-zh-v1.5", "BAAI/bge-base-zh-v1.5", "exact", None),
])
def test_manifest_spellings_resolve(name, model_id, rule, quant):
    r = resolve_model(name)
    assert (r.model_id, r.rule) == (model_id, rule)
    got = (r.config.get("quantization_config") or {}).get("quant_method")
    assert got == quant


@pytest.mark.parametrize("name, kaito_gib, low, high", [
    # bf16 checkpoints: the derived weights against the safetensors total. The Nemotron-3 Super
    # checkpoint also holds its MTP layers (mtp_hybrid_override_pattern "*E"), which vLLM does
    # not load by default: the derived weights are the smaller.
    ("google/gemma-4-31B-it", 58.25, 0.995, 1.01),
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", 230.25, 0.96, 1.0),
])
def test_derived_weights_against_the_published_safetensors_size(name, kaito_gib, low, high):
    g = ModelGeometry.from_hf_config(resolve_model(name).config)
    assert low <= g.weight_bytes(2) / GIB / kaito_gib <= high


@pytest.mark.parametrize("name, layers, kaito_gib", [
    ("google/gemma-4-E2B-it", 35, 9.54),
    ("google/gemma-4-E4B-it", 42, 14.89),
])
def test_gemma_4_e_models_say_their_audio_tower_is_not_counted(name, layers, kaito_gib):
    """The E models' safetensors (KAITO's totals) hold a gemma4_audio encoder that no formula
    counts: the counted parts come to 93-96 % of the total, and the report says so rather than
    dropping it silently."""
    g = ModelGeometry.from_hf_config(model_config(name))
    assert g.uncounted_towers == ("audio encoder",)
    assert g.num_layers == layers and g.vision_parameters > 0
    assert 0.93 < g.weight_bytes(2) / GIB / kaito_gib < 0.96


def test_gemma_4_31b_nvfp4_keeps_its_own_weight_format():
    g = ModelGeometry.from_hf_config(model_config("nvidia/Gemma-4-31B-IT-NVFP4"))
    assert g.quantization is not None and g.weight_bytes(2) < 0.6 * g.parameter_count() * 2


def test_pixtral_tower_and_mistral3_projector_give_the_published_count():
    """Pixtral's tower has a gated MLP and no position table, and Mistral3's projector a patch
    merger and two linears (transformers pixtral / mistral3 modeling): with them Magistral Small
    2509's count is its Hub safetensors total exactly (the generic ViT estimate was 136M low)."""
    from vllm_sizer.estimator import ModelGeometry, model_config

    g = ModelGeometry.from_hf_config(model_config("mistralai/Magistral-Small-2509"))
    assert g.parameter_count() == 24_011_361_280
    assert g.vision_parameters == 403_305_472 + 35_652_608


def test_embeddinggemma_is_a_small_bidirectional_gemma3_text_stack():
    """EmbeddingGemma's config is gemma3_text (24 layers, 768 wide, 1 KV head of 256, a 262144
    vocabulary): about 0.3B parameters, most of them the embedding table."""
    c = model_config("google/embeddinggemma-300m")
    assert c["use_bidirectional_attention"] is True
    g = ModelGeometry.from_hf_config(c)
    assert g.num_layers == 24 and 0.29e9 < g.parameter_count() < 0.31e9
    assert c["vocab_size"] * c["hidden_size"] > 0.6 * g.parameter_count()
