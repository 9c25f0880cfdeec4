"""Name resolution over catalog entries whose geometry signature holds a per-layer list."""

from vllm_sizer.estimator.names import resolve_model


def test_variant_of_a_model_with_list_valued_moe_sizes_resolves():
    # tencent/Hunyuan-A13B-Instruct lists moe_intermediate_size per layer; resolving a suffixed
    # name compares signatures and must not raise (resolve_model never raises).
    r = resolve_model("tencent/Hunyuan-A13B-Instruct-FP8")
    assert r.model_id == "tencent/Hunyuan-A13B-Instruct" and r.rule == "quantization"


def test_chatglm_configs_naming_layers_differently_share_a_signature():
    # THUDM/glm-4-9b's config lists num_layers and padded_vocab_size only, glm-4-9b-chat's
    # also num_hidden_layers and vocab_size: one geometry, so a -chat-hf / -chat-1m name
    # resolves instead of being refused as ambiguous.
    r = resolve_model("zai-org/glm-4-9b-chat-hf")
    assert r.refusal is None and r.model_id in {"THUDM/glm-4-9b", "THUDM/glm-4-9b-chat"}


def test_gpt2_family_sizes_do_not_share_a_signature():
    """GPT-2 configs name their shapes n_embd / n_layer / n_head (BLOOM n_embed, MPT d_model /
    n_layers / n_heads): the signature reads the same spellings as the geometry, so gpt2,
    gpt2-medium and gpt2-large are three shapes, never one a name rule could pick from."""
    from vllm_sizer.estimator import catalog

    sigs = {
        i: tuple(catalog.geometry_signature(catalog.entry(i)["config"]))
        for i in ("openai-community/gpt2", "openai-community/gpt2-medium",
                  "openai-community/gpt2-large", "openai-community/gpt2-xl")
    }
    assert len(set(sigs.values())) == 4, sigs


def test_every_catalog_signature_names_the_geometry_it_stands_for():
    """Whatever a config calls them, the signature's hidden size, layers and query heads are the
    ones ModelGeometry reads (a None there would make unlike models look alike)."""
    from vllm_sizer.estimator import ModelGeometry, catalog

    keys = catalog.SIGNATURE_KEYS
    for i in catalog.catalog_ids():
        config = catalog.entry(i)["config"]
        s = dict(zip(keys, catalog.geometry_signature(config), strict=True))
        g = ModelGeometry.from_hf_config(config)
        assert (s["hidden_size"], s["num_hidden_layers"], s["num_attention_heads"]) == (
            g.hidden_size, g.num_layers, g.num_attention_heads
        ), i
