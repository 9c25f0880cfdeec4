"""Qwen2.5-Omni: vLLM serves the thinker (text model + Qwen2.5-VL vision tower + Whisper-style
audio encoder) nested under thinker_config; the talker and token2wav are not sized."""

from vllm_sizer.estimator import ModelGeometry, lookup_model


def _omni() -> ModelGeometry:
    return ModelGeometry.from_hf_config(lookup_model("Qwen/Qwen2.5-Omni-7B-AWQ")["config"])


def test_the_thinker_text_model_is_read_from_thinker_config():
    g = _omni()
    assert (g.num_layers, g.hidden_size, g.num_attention_heads, g.num_kv_heads) == (28, 3584, 28, 4)
    assert g.vocab_size == 152064 and not g.tie_word_embeddings
    assert g.qkv_bias  # Qwen2-style attention: q/k/v with bias
    assert g.architecture == "Qwen2_5OmniForConditionalGeneration"
    assert g.quantization is not None and g.quantization.method == "awq"  # the top-level config's
    # the same text shapes as Qwen2.5-7B(-Instruct): its count without the towers
    qwen25 = ModelGeometry.from_hf_config(lookup_model("Qwen/Qwen2.5-7B-Instruct")["config"])
    assert g.parameter_count() - g.vision_parameters == qwen25.parameter_count()


def test_the_vision_tower_is_qwen25_vl_and_the_audio_encoder_whisper_style():
    g = _omni()
    vl = ModelGeometry.from_hf_config(lookup_model("Qwen/Qwen2.5-VL-7B-Instruct")["config"])
    vision = vl.vision_parameters  # same vision_config values (depth 32, 1280, 3420, out 3584)
    # Qwen2_5OmniAudioEncoder, d 1280, ffn 5120, 32 layers, 128 mel bins, output 3584:
    d, ffn, out = 1280, 5120, 3584
    conv = 128 * d * 3 + d + d * d * 3 + d
    layer = 4 * d * d + 3 * d + 2 * d + d * ffn + ffn + ffn * d + d + 2 * d
    audio = conv + 2 * out + 32 * layer + 2 * d + d * out + out
    assert g.vision_parameters == vision + audio
