"""A tower the config declares and no formula counts is said in the report, never dropped
silently (the estimate would be low by its weights)."""

import copy

from vllm_sizer.estimator import EngineSettings, ModelGeometry, build_report, model_config


def _with_audio(config: dict) -> dict:
    c = copy.deepcopy(config)
    c["audio_config"] = {"model_type": "some_new_audio_encoder", "hidden_size": 1024}
    return c


def test_an_unknown_audio_encoder_is_said_in_the_notes():
    base = model_config("google/gemma-4-26B-A4B")
    assert base.get("audio_config") is None  # the catalog's own config declares none
    plain = ModelGeometry.from_hf_config(base)
    audio = ModelGeometry.from_hf_config(_with_audio(base))
    assert plain.uncounted_towers == () and audio.uncounted_towers == ("audio encoder",)
    settings = EngineSettings(device="cuda", gpu_memory_bytes=80 * 1024**3)
    assert not any("not counted" in n for n in build_report(plain, settings).notes)
    assert any("audio encoder is not counted" in n for n in build_report(audio, settings).notes)


def test_a_counted_audio_encoder_is_not_said():
    g = ModelGeometry.from_hf_config(model_config("Qwen/Qwen2.5-Omni-7B-AWQ"))
    assert g.uncounted_towers == ()
