"""Name resolution over catalog entries whose geometry signature holds a per-layer list."""

from vllm_sizer.estimator.names import resolve_model


def test_variant_of_a_model_with_list_valued_moe_sizes_resolves():
    # tencent/Hunyuan-A13B-Instruct lists moe_intermediate_size per layer; resolving a suffixed
    # name compares signatures and must not raise (resolve_model never raises).
    r = resolve_model("tencent/Hunyuan-A13B-Instruct-FP8")
    assert r.model_id == "tencent/Hunyuan-A13B-Instruct" and r.rule == "quantization"
