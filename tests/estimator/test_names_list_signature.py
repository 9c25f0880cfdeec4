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
