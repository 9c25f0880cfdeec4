"""Lineage entries that state their checkpoint's weight format (names.WeightFormat): the
estimator counts the weights in that format, checked against the published safetensors total
the statement quotes (KAITO's model catalog, generated from the Hub:
kaito-project/kaito@056b8280b1a8 presets/workspace/models/model_catalog.yaml modelFileSize)."""

import re

import pytest

from vllm_sizer.estimator import ModelGeometry, catalog, model_config
from vllm_sizer.estimator.geometry import _read_quantization
from vllm_sizer.estimator.names import LINEAGE, lineage_format, resolve_model

GIB = 2**30
FORMATS = {k: v for k, v in LINEAGE.items() if lineage_format(v)}


def test_stated_formats_are_read_by_the_geometry():
    assert {"Ministral-3-3B-Instruct-2512", "Ministral-3-8B-Instruct-2512",
            "Kimi-K2-Thinking"} <= set(FORMATS)
    for entry in FORMATS.values():
        fmt = lineage_format(entry)
        assert fmt.source
        assert fmt.quantization_config is None or _read_quantization(fmt.quantization_config)


@pytest.mark.parametrize("key", sorted(k for k, v in FORMATS.items()
                                       if re.search(r"[\d.]+Gi\b", lineage_format(v).source)))
def test_weights_in_the_stated_format_match_the_published_total(key):
    """Ministral 3 3B: 4.32 GiB derived / 4.35Gi published = 0.993; 8B: 9.705 / 9.70 = 1.0005
    (FP8 linear weights; embeddings, norms, lm_head and the Pixtral tower bf16). At the bf16
    config's own format they would be 1.6x and 1.7x the published total."""
    entry = LINEAGE[key]
    published = float(re.search(r"([\d.]+)Gi\b", lineage_format(entry).source)[1])
    r = resolve_model(f"someone/{key}")
    assert r.rule == "lineage" and r.model_id == entry[0]
    g = ModelGeometry.from_hf_config(r.config)
    assert g.quantization is not None
    assert g.weight_bytes(2) / GIB == pytest.approx(published, rel=0.02)
    own = ModelGeometry.from_hf_config(model_config(entry[0])).weight_bytes(2) / GIB
    assert own > 1.5 * published


def test_kimi_k2_thinking_counts_int4_experts_not_the_targets_fp8():
    """Kimi-K2-Thinking's config (compressed-tensors int4, group 32, attention, shared experts
    and lm_head kept bf16): 552.6 GiB = 593.4 GB, against ~600GB in ktransformers' guide and
    KAITO's Kimi-K2.5 row, 554.32Gi (the same text model with its int4 experts, plus a vision
    tower): 0.997. Kimi-K2-Instruct's own FP8 format would count 958 GiB."""
    r = resolve_model("moonshotai/Kimi-K2-Thinking")
    g = ModelGeometry.from_hf_config(r.config)
    q = g.quantization
    assert (q.method, q.bits, q.bytes_per_param) == ("compressed-tensors", 4, 4 / 8 + 2 / 32)
    assert dict(q.unquantized) == {"attention": 0, "shared_experts": 0}
    assert g.weight_bytes(2) / GIB == pytest.approx(554.32, rel=0.01)
    assert g.weight_bytes(2) / 1e9 == pytest.approx(600, rel=0.03)
    target = ModelGeometry.from_hf_config(model_config("moonshotai/Kimi-K2-Instruct"))
    assert target.quantization.method == "fp8" and target.weight_bytes(2) > 1.7 * g.weight_bytes(2)
    assert "compressed-tensors 4-bit" in r.note


def test_a_stated_format_belongs_to_the_variant_its_key_names():
    """Ministral-3-8B-Base-2512 shares the Instruct's shapes but is not its FP8 checkpoint: it
    keeps the target's own (bf16) format, and says so."""
    r = resolve_model("mistralai/Ministral-3-8B-Base-2512")
    assert r.rule == "lineage" and r.model_id == "mistralai/Ministral-3-8B-Instruct-2512-BF16"
    assert ModelGeometry.from_hf_config(r.config).quantization is None
    assert "own format" in r.note


def test_a_quantization_suffix_wins_over_the_stated_format():
    r = resolve_model("someone/Kimi-K2-Thinking-NVFP4")
    assert r.model_id == "moonshotai/Kimi-K2-Instruct"
    assert ModelGeometry.from_hf_config(r.config).quantization.method == "nvfp4"
    assert "name's suffix" in r.note


@pytest.mark.parametrize("key", sorted(k for k, v in LINEAGE.items()
                                       if re.search(r"hidden \d+, \d+ layers", v[1])))
def test_lineage_sources_that_state_shapes_match_the_target(key):
    """Where a lineage quotes KAITO's Hub-generated row (hidden, layers, Q / KV heads), the
    target's geometry has exactly those."""
    target, source = LINEAGE[key][:2]
    m = re.search(r"hidden (\d+), (\d+) layers, (\d+) / (\d+) heads", source)
    g = ModelGeometry.from_hf_config(catalog.entry(catalog.exact_id(target))["config"])
    hidden, layers, q, kv = map(int, m.groups())
    assert (g.hidden_size, g.num_layers, g.num_attention_heads) == (hidden, layers, q)
    assert g.num_kv_heads == kv or (g.mla and kv == q)  # MLA (Kimi): KAITO lists kv = q heads


def test_llava_next_mistral_is_mistral_7b_instruct_v0_2_with_llava_1_5s_clip_tower():
    """llava-hf/llava-v1.6-mistral-7b-hf: transformers' conversion script builds its config from
    Mistral-7B-Instruct-v0.2's text config and LlavaNextConfig's default CLIP ViT-L/14-336 tower
    (llava-1.5-7b-hf's vision_config): the text weights are the base's, the tower is counted."""
    r = resolve_model("llava-hf/llava-v1.6-mistral-7b-hf")
    assert r.rule == "lineage" and r.model_id == "mistralai/Mistral-7B-Instruct-v0.2"
    g = ModelGeometry.from_hf_config(r.config)
    text = ModelGeometry.from_hf_config(model_config("mistralai/Mistral-7B-Instruct-v0.2"))
    llava = ModelGeometry.from_hf_config(model_config("llava-hf/llava-1.5-7b-hf"))
    assert g.vision_parameters == llava.vision_parameters > 0
    assert g.parameter_count() == text.parameter_count() + llava.vision_parameters
    assert "vision tower" in r.note and "projector" in r.note
    assert text.vision_parameters == 0  # the target itself stays text-only


@pytest.mark.parametrize("name, target", [
    ("llava-hf/llava-v1.6-vicuna-7b-hf", "lmsys/vicuna-7b-v1.5"),
    ("llava-hf/llava-v1.6-vicuna-13b-hf", "meta-llama/Llama-2-13b-hf"),
])
def test_llava_next_vicuna_is_its_base_llm_with_the_clip_tower(name, target):
    """Vicuna v1.5 is a Llama 2 fine-tune: the catalog's vicuna-7b-v1.5 has Llama-2-7b's shapes,
    which is what lets the 13B one stand on Llama-2-13b-hf."""
    from vllm_sizer.estimator import catalog as cat

    def sig(i):
        return cat.geometry_signature(cat.entry(i)["config"])

    assert sig("lmsys/vicuna-7b-v1.5")[1:6] == sig("meta-llama/Llama-2-7b-hf")[1:6]
    r = resolve_model(name)
    assert r.rule == "lineage" and r.model_id == target
    g = ModelGeometry.from_hf_config(r.config)
    llava = ModelGeometry.from_hf_config(model_config("llava-hf/llava-1.5-7b-hf"))
    assert g.vision_parameters == llava.vision_parameters
