"""Qwen2-VL configs that list only non-default vision keys."""

from vllm_sizer.estimator import ModelGeometry

TEXT_2B = {
    "architectures": ["Qwen2VLForConditionalGeneration"],
    "model_type": "qwen2_vl",
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "num_attention_heads": 12,
    "num_hidden_layers": 28,
    "num_key_value_heads": 2,
    "tie_word_embeddings": True,
    "vocab_size": 151936,
}


def test_sparse_qwen2_vl_vision_config_takes_the_class_defaults():
    # Qwen/Qwen2-VL-2B-Instruct-AWQ's vision_config (its model folder as copied in
    # sophgo/LLM-TPU models/Qwen2_VL/config/config.json) lists hidden_size, in_chans,
    # model_type and spatial_patch_size only; Qwen2VLVisionConfig's defaults (depth 32,
    # embed_dim 1280, mlp_ratio 4) make it the tower of Qwen2-VL-2B-Instruct, whose config
    # spells them out.
    sparse = {
        **TEXT_2B,
        "vision_config": {
            "hidden_size": 1536,
            "in_chans": 3,
            "model_type": "qwen2_vl",
            "spatial_patch_size": 14,
        },
    }
    full = {
        **TEXT_2B,
        "vision_config": {
            "depth": 32,
            "embed_dim": 1280,
            "mlp_ratio": 4,
            "num_heads": 16,
            "in_chans": 3,
            "hidden_size": 1536,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "spatial_patch_size": 14,
            "temporal_patch_size": 2,
        },
    }
    tower = ModelGeometry.from_hf_config(full).vision_parameters
    assert tower == 665_271_296
    assert ModelGeometry.from_hf_config(sparse).vision_parameters == tower
