"""Qwen2-Audio: a sparse Qwen2 text_config and a Whisper-style audio encoder."""

from vllm_sizer.estimator import ModelGeometry

# Qwen/Qwen2-Audio-7B-Instruct config.json as shipped in the model folder copied into
# sophgo/LLM-TPU models/Qwen2_Audio/python_demo/config/ (beside the checkpoint's
# model.safetensors.index.json): the text_config lists no hidden size or layer count.
QWEN2_AUDIO_7B_INSTRUCT = {
    "architectures": ["Qwen2AudioForConditionalGeneration"],
    "audio_config": {
        "model_type": "qwen2_audio_encoder",
        "num_mel_bins": 128,
        "encoder_layers": 32,
        "encoder_attention_heads": 20,
        "encoder_ffn_dim": 5120,
        "d_model": 1280,
        "activation_function": "gelu",
        "scale_embedding": False,
        "max_source_positions": 1500,
    },
    "audio_token_index": 151646,
    "ignore_index": -100,
    "model_type": "qwen2_audio",
    "text_config": {
        "bos_token_id": 151643,
        "eos_token_id": 151645,
        "intermediate_size": 11008,
        "max_position_embeddings": 8192,
        "model_type": "qwen2",
        "rope_theta": 10000,
        "rms_norm_eps": 1e-5,
        "sliding_window": 32768,
        "torch_dtype": "bfloat16",
        "use_mrope": False,
        "vocab_size": 156032,
    },
    "transformers_version": "4.38.1",
    "vocab_size": 156032,
}


def test_qwen2_audio_text_defaults_and_audio_encoder_match_the_checkpoint():
    # The same folder's model.safetensors.index.json: metadata total_size 16,794,189,824 bytes
    # of bf16 = 8,397,094,912 parameters. The text model takes Qwen2Config's defaults (hidden
    # 4096, 32 layers, 32 heads and 32 KV heads, untied); the encoder (conv stem, 1500-row
    # position table, 32 layers) and the projector add 642,215,936.
    g = ModelGeometry.from_hf_config(QWEN2_AUDIO_7B_INSTRUCT)
    assert (g.hidden_size, g.num_layers, g.num_kv_heads) == (4096, 32, 32)
    assert not g.tie_word_embeddings and g.qkv_bias
    assert g.vision_parameters == 642_215_936
    assert g.parameter_count() == 8_397_094_912
