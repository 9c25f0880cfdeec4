"""Name resolution (estimator.names): every rule, its note, and refusals instead of guesses.

Names use organisations that no catalog entry has (acme-mirror, someone), so the rules stay
exercised as the catalog grows."""

import pytest

from vllm_sizer.estimator import ModelGeometry, catalog, model_config
from vllm_sizer.estimator.names import LINEAGE, resolve_model


def sig(model_id):
    return catalog.geometry_signature(catalog.entry(model_id)["config"])


@pytest.mark.parametrize("spelling", ["Qwen/Qwen3-8B", "qwen/qwen3-8b", "hf://Qwen/Qwen3-8B",
                                      "Qwen/Qwen3-8B@main", "hf://Qwen/Qwen3-8B@v1/",
                                      "https://huggingface.co/Qwen/Qwen3-8B",
                                      "https://huggingface.co/Qwen/Qwen3-8B/tree/main"])
def test_exact_spellings_resolve_without_a_note(spelling):
    r = resolve_model(spelling)
    assert r.rule == "exact" and r.model_id == "Qwen/Qwen3-8B" and r.note is None


def test_a_path_ending_in_org_name_is_a_path_with_a_note():
    r = resolve_model("/mnt/models/Qwen/Qwen3-8B")
    assert r.rule == "path" and r.model_id == "Qwen/Qwen3-8B" and "path" in r.note
    r = resolve_model("s3://bucket/llm/Qwen/Qwen3-8B")
    assert r.model_id == "Qwen/Qwen3-8B"


def test_another_org_and_a_directory_name():
    r = resolve_model("acme-mirror/Qwen3-8B")
    assert r.rule == "org" and r.model_id == "Qwen/Qwen3-8B"
    assert "assumed from the name 'acme-mirror/Qwen3-8B'" in r.note
    r = resolve_model("/data/Qwen3-8B")
    assert r.model_id == "Qwen/Qwen3-8B" and "last part" in r.note


@pytest.mark.parametrize("suffix, method, bits", [
    ("AWQ", "awq", 4), ("GPTQ-Int4", "gptq", 4), ("GPTQ-Int8", "gptq", 8),
    ("FP8-dynamic", "fp8", None), ("FP8", "fp8", None), ("w8a8", "compressed-tensors", 8),
    ("quantized.w4a16", "compressed-tensors", 4), ("bnb-4bit", "bitsandbytes", 4),
    ("NVFP4", "nvfp4", 4), ("AWQ-INT4", "awq", 4)])
def test_quantization_suffix_changes_weight_bytes_never_the_shape(suffix, method, bits):
    r = resolve_model(f"acme-mirror/Qwen3-8B-{suffix}")
    assert r.config is not None and r.note and suffix.lower() in r.note.lower()
    assert catalog.geometry_signature(r.config) == sig("Qwen/Qwen3-8B")
    q = ModelGeometry.from_hf_config(r.config).quantization
    assert q is not None and q.method == method and (bits is None or q.bits == bits)
    full = ModelGeometry.from_hf_config(catalog.entry("Qwen/Qwen3-8B")["config"])
    quant = ModelGeometry.from_hf_config(r.config)
    assert quant.parameter_count() == full.parameter_count()
    assert quant.weight_bytes(2) < full.weight_bytes(2)


def test_variants_and_the_meta_prefix_pick_the_closest_entry():
    r = resolve_model("someone/Meta-Llama-3.1-8B-Instruct")
    assert r.rule in ("org", "variant") and r.model_id == "meta-llama/Llama-3.1-8B-Instruct"
    r = resolve_model("meta-llama/meta-llama-3.1-8b-instruct")
    assert r.model_id == "meta-llama/Llama-3.1-8B-Instruct" and r.note
    r = resolve_model("someone/Meta-Llama-3.1-8B-Instruct-FP8-dynamic")
    assert r.model_id == "meta-llama/Llama-3.1-8B-Instruct"
    assert ModelGeometry.from_hf_config(r.config).quantization.method == "fp8"


def test_lineage_table_targets_exist_or_are_skipped():
    for name, (target, source, *_fmt) in LINEAGE.items():
        assert source
        r = resolve_model(f"someone/{name}")
        if catalog.exact_id(target):
            assert r.config is not None
            assert catalog.geometry_signature(r.config) == sig(catalog.exact_id(target))


def test_a_fine_tune_that_contains_its_base_name():
    r = resolve_model("someone/Hermes-3-Llama-3.1-8B")
    assert r.rule == "contained" and sig(r.model_id) == sig("meta-llama/Llama-3.1-8B")
    assert "contains" in r.note


def test_gguf_is_refused_with_a_reason():
    r = resolve_model("someone/Qwen3-8B-GGUF")
    assert r.config is None and r.rule == "gguf" and "GGUF" in r.refusal
    assert resolve_model("/models/qwen3-8b-q4_k_m.gguf").config is None


@pytest.mark.parametrize("name", ["foo/bar", "Qwen/Qwen3", "someone/Llama-Sentinel-3-8B",
                                  "someone/my-llama", "", "x" * 2000, "acme/8B"])
def test_names_that_match_nothing_are_not_guessed(name):
    r = resolve_model(name)
    assert r.config is None and r.model_id is None


def test_different_shapes_under_one_name_are_ambiguous_not_guessed(monkeypatch):
    rows = catalog.index_entries()
    a = next(r for r in rows if r["id"] == "Qwen/Qwen3-8B")
    b = next(r for r in rows if r["id"] == "Qwen/Qwen3-14B")
    from vllm_sizer.estimator import names
    tables = ({"twin-8b": [a["id"], b["id"]]}, {})
    monkeypatch.setattr(names, "_name_tables", lambda: tables)
    names._resolve.cache_clear()
    try:
        r = resolve_model("someone/twin-8b")
        assert r.config is None and r.rule == "ambiguous"
        assert set(r.candidates) == {"Qwen/Qwen3-8B", "Qwen/Qwen3-14B"}
    finally:
        names._resolve.cache_clear()


def test_a_name_without_a_quantization_suffix_is_not_sized_as_its_quantized_sibling():
    """The only catalog entry of Yi-1.5-34B-Chat's shapes is a GPTQ repo: the plain name shares
    its shapes, not its weight format (sized unquantized, and the note says so); the GPTQ name
    keeps the quantization."""
    plain = resolve_model("01-ai/Yi-1.5-34B-Chat")
    assert plain.model_id == "modelscope/Yi-1.5-34B-Chat-GPTQ"
    assert "quantization_config" not in plain.config
    assert "unquantized weights" in plain.note
    quantized = resolve_model("acme/Yi-1.5-34B-Chat-GPTQ")
    assert quantized.config.get("quantization_config")


def test_the_meta_rename_note_only_for_meta_names():
    assert "Meta- prefix" in resolve_model("meta-llama/Meta-Llama-3.1-8B-Instruct").note
    note = resolve_model("nvidia/Llama-3_3-Nemotron-Super-49B-v1-FP8").note
    assert note and "Meta- prefix" not in note


@pytest.mark.parametrize("name", [n for n in LINEAGE if "coder" in n])
def test_a_lineage_that_states_the_shapes_matches_its_target(name):
    """Where the lineage's source states the model card's figures (parameters, layers, Q / KV
    heads, tied embeddings), the target geometry has exactly those: the rule is checked, not
    trusted."""
    import re

    target, source, *_fmt = LINEAGE[name]
    m = re.search(r"([\d.]+)B, (\d+) layers, (\d+) Q / (\d+) KV heads", source)
    assert m, source
    billions, layers, q, kv = float(m[1]), int(m[2]), int(m[3]), int(m[4])
    g = ModelGeometry.from_hf_config(model_config(target))
    assert (g.num_layers, g.num_attention_heads, g.num_kv_heads) == (layers, q, kv)
    assert g.tie_word_embeddings == source.endswith("tied")
    assert abs(g.parameter_count() / 1e9 - billions) / billions < 0.02
    r = resolve_model(f"Qwen/{name.replace('qwen2.5-coder', 'Qwen2.5-Coder').upper()}-Instruct")
    assert r.rule == "lineage" and r.model_id == target and "Qwen2.5-Coder card" in r.note


# Fine-tunes that published vLLM manifests serve (scripts/manifest_model_ids.py), resolved by
# the lineage their model card or maker states.
@pytest.mark.parametrize("name, target", [
    ("Intel/neural-chat-7b-v3-3", "mistralai/Mistral-7B-v0.1"),
    ("Intel/neural-chat-7b-v3-1", "mistralai/Mistral-7B-v0.1"),
    ("haoranxu/ALMA-13B", "meta-llama/Llama-2-13b-hf"),
    ("meta-llama/Meta-Llama-Guard-2-8B", "meta-llama/Meta-Llama-3-8B-Instruct"),
    ("meta-llama/Llama-Guard-3-8B", "meta-llama/Llama-3.1-8B"),
    ("allenai/Llama-3.1-Tulu-3-8B", "meta-llama/Llama-3.1-8B"),
    ("arcee-ai/Llama-3.1-SuperNova-Lite", "meta-llama/Llama-3.1-8B-Instruct"),
    ("google/gemma-1.1-7b-it", "google/gemma-7b-it"),
    ("google/gemma-1.1-2b-it", "google/gemma-2b-it"),
    ("bigscience/bloom-560m", "bigscience/bloomz-560m"),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3"),
    ("moonshotai/Kimi-K2.6", "moonshotai/Kimi-K2.5"),
    ("moonshotai/Kimi-K2.7-Code", "moonshotai/Kimi-K2.5"),
    ("Qwen/Qwen3.8-27B", "Qwen/Qwen3.5-27B"),
    ("nvidia/Nemotron-Cascade-2-30B-A3B", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "Qwen/Qwen2.5-7B"),
    ("microsoft/DialoGPT-medium", "openai-community/gpt2-medium"),
    ("deepseek-ai/DeepSeek-V3.1", "deepseek-ai/DeepSeek-V3"),
    ("google/medgemma-4b-it", "google/gemma-3-4b-it"),
    ("deepseek-ai/DeepSeek-V3.2-Speciale", "deepseek-ai/DeepSeek-V3.2"),
    ("mistralai/Mistral-Small-3.1-24B-Instruct-2503", "mistralai/Magistral-Small-2509"),
    ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistralai/Magistral-Small-2509"),
    ("mistralai/Ministral-3-3B-Instruct-2512", "mistralai/Ministral-3-3B-Instruct-2512-BF16"),
    ("mistralai/Ministral-3-8B-Instruct-2512", "mistralai/Ministral-3-8B-Instruct-2512-BF16"),
    ("moonshotai/Kimi-K2-Thinking", "moonshotai/Kimi-K2-Instruct"),
    ("llava-hf/llava-v1.6-mistral-7b-hf", "mistralai/Mistral-7B-Instruct-v0.2"),
    ("Xkev/Llama-3.2V-11B-cot", "meta-llama/Llama-3.2-11B-Vision-Instruct"),
    ("deepseek-ai/DeepSeek-R1-Zero", "deepseek-ai/DeepSeek-R1"),
    ("TinyLlama/TinyLlama-1.1B-Chat-v0.3", "TinyLlama/TinyLlama-1.1B-Chat-v0.4"),
    ("hf://TinyLlama/TinyLlama-1.1B-Chat-v0.3", "TinyLlama/TinyLlama-1.1B-Chat-v0.4"),
    ("lmsys/vicuna-13b-v1.5", "meta-llama/Llama-2-13b-hf"),
    ("meta-llama/Llama-Guard-3-11B-Vision", "meta-llama/Llama-3.2-11B-Vision-Instruct"),
    ("Skywork/Skywork-OR1-7B-Preview", "Qwen/Qwen2.5-7B"),
])
def test_manifest_fine_tunes_resolve_by_their_stated_lineage(name, target):
    r = resolve_model(name)
    assert r.rule == "lineage" and r.model_id == target and r.note


def test_qwen2_5_math_has_the_shapes_of_the_qwen2_5_it_is_initialised_from():
    """The distill-qwen-7b lineage goes through Qwen2.5-Math-7B to Qwen2.5-7B: the catalog's
    Qwen2.5-Math-1.5B has exactly Qwen2.5-1.5B's shapes."""
    assert sig("Qwen/Qwen2.5-Math-1.5B") == sig("Qwen/Qwen2.5-1.5B")


def test_bloom_560m_card_count_is_the_bloomz_560m_geometry():
    g = ModelGeometry.from_hf_config(model_config("bigscience/bloomz-560m"))
    assert g.parameter_count() == 559_214_592  # bloom-560m model card


@pytest.mark.parametrize("target, kaito_gib", [
    ("moonshotai/Kimi-K2.5", 554.32),  # Kimi-K2.6 and Kimi-K2.7-Code rows
    ("deepseek-ai/DeepSeek-V3", 641.30),  # DeepSeek-V3-0324 row
    ("Qwen/Qwen3.5-27B", 51.75),  # Qwen3.8-27B row
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 58.82),  # Nemotron-Cascade-2-30B-A3B row
])
def test_kaito_catalog_sizes_match_the_lineage_targets_weight_bytes(target, kaito_gib):
    """KAITO's catalog row (the safetensors' total, generated from the Hub) against the target's
    weight bytes at its own format: within 3 %, the MTP layers the checkpoints also hold
    (DeepSeek-V3: 1 layer of 61; Qwen3.5) and vLLM does not load by default aside."""
    g = ModelGeometry.from_hf_config(model_config(target))
    assert g.weight_bytes(2) / 2**30 == pytest.approx(kaito_gib, rel=0.03)


def test_dialogpt_medium_has_gpt2_medium_shapes():
    c = model_config("openai-community/gpt2-medium")  # DialoGPT configs/345M/config.json
    assert (c["n_embd"], c["n_layer"], c["n_head"], c["vocab_size"]) == (1024, 24, 16, 50257)


def test_no_two_lineage_keys_share_a_canonical_name():
    """Keys are compared as canonical tokens (variant words dropped): two keys that collapse to
    one name would silently shadow each other."""
    from vllm_sizer.estimator import names

    canon = ["-".join(names._canonical(names._tokens(k))) for k in LINEAGE]
    assert len(canon) == len(set(canon))


@pytest.mark.parametrize("name, model_id", [
    ("nvidia/Llama-3.3-Nemotron-Super-49B-v1", "nvidia/Llama-3_3-Nemotron-Super-49B-v1"),
    ("nvidia/Llama-3.1-Nemotron-Ultra-253B-v1", "nvidia/Llama-3_1-Nemotron-Ultra-253B-v1"),
])
def test_a_version_dot_written_as_an_underscore_is_the_same_name(name, model_id):
    """OME's ClusterBaseModel writes hf://nvidia/Llama-3.3-Nemotron-Super-49B-v1; the Hub repo
    (and the catalog) spell the version 3_3."""
    r = resolve_model(name)
    assert r.model_id == model_id and "underscore" in r.note


def test_only_an_underscore_between_digits_is_read_as_a_dot():
    from vllm_sizer.estimator import names

    assert names._tokens("Llama-3_3-Nemotron") == ["llama", "3.3", "nemotron"]
    assert names._tokens("my_model_v1") == ["my", "model", "v1"]


def test_medgemma_4b_card_count_is_the_gemma_3_4b_geometry():
    g = ModelGeometry.from_hf_config(model_config("google/gemma-3-4b-it"))
    assert abs(g.parameter_count() / 1e9 - 4.3) < 0.05  # MedGemma 4B card: 4.3B


def test_tinyllama_chat_checkpoints_share_one_architecture():
    """The v0.3 lineage rests on TinyLlama's chat models being fine-tunes of one pretraining
    run: the catalog's v0.4 and v1.0 configs differ in nothing but v0.4's 3 ChatML tokens."""
    a = model_config("TinyLlama/TinyLlama-1.1B-Chat-v0.4")
    b = model_config("TinyLlama/TinyLlama-1.1B-Chat-v1.0")
    keys = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
            "num_key_value_heads")
    assert [a[k] for k in keys] == [b[k] for k in keys] == [22, 2048, 5632, 32, 4]
    assert a["vocab_size"] - b["vocab_size"] == 3
