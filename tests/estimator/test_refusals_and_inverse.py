import pytest

from vllm_sizer.estimator import (EngineSettings, InvalidSettings, LoraConfig, MissingConfigField,
                                  ModelGeometry, ModelMemoryCalculator, build_report,
                                  calculate_memory, max_batched_tokens_within, max_lora_rank_within)
from vllm_sizer.estimator.units import GiB
from tests.conftest import QWEN3_0_6B

GEO = ModelGeometry.from_hf_config(QWEN3_0_6B)


def test_config_without_layer_count_is_refused_by_name():
    cfg = dict(QWEN3_0_6B)
    del cfg["num_hidden_layers"]
    with pytest.raises(MissingConfigField, match="num_hidden_layers") as exc:
        ModelGeometry.from_hf_config(cfg)
    assert exc.value.field == "num_hidden_layers"


@pytest.mark.parametrize("rank", [None, 0])
def test_lora_enabled_without_rank_is_refused_by_name(rank):
    calc = ModelMemoryCalculator()
    lora = LoraConfig(enabled=True, max_lora_rank=rank)
    with pytest.raises(InvalidSettings, match="max_lora_rank"):
        calc.calculate_memory(QWEN3_0_6B, seq_length=2048, lora_config=lora)
    with pytest.raises(InvalidSettings, match="max_lora_rank"):
        calc.calculate_lora_prefill_scratch(QWEN3_0_6B, lora, 2048)


def test_seed_api_none_batched_tokens_means_seq_length():
    lora = LoraConfig(enabled=True, max_lora_rank=256)
    unchunked = calculate_memory(QWEN3_0_6B, seq_length=4273, lora_config=lora, vllm_version="0.11.0")
    explicit = calculate_memory(QWEN3_0_6B, seq_length=8192, max_num_batched_tokens=4273,
                                lora_config=lora, vllm_version="0.11.0")
    assert unchunked.resolved.max_num_batched_tokens == 4273
    assert unchunked.lora_prefill_scratch_bytes == explicit.lora_prefill_scratch_bytes


def test_seed_api_scratch_returns_bytes_and_notes():
    b, notes = ModelMemoryCalculator().calculate_lora_prefill_scratch(
        QWEN3_0_6B, LoraConfig(enabled=True, max_lora_rank=256), 2394)
    assert b / GiB == pytest.approx(16.77 - 2 * 0.301, abs=0.02)  # net of two adapter slots (308 MiB each)
    assert notes
    assert ModelMemoryCalculator().calculate_lora_prefill_scratch(
        QWEN3_0_6B, LoraConfig(enabled=True, max_lora_rank=256), 2394, target_device="cuda")[0] == 0


def test_settings_reject_nonsense():
    with pytest.raises(ValueError):
        EngineSettings(max_num_batched_tokens=0)
    with pytest.raises(ValueError):
        EngineSettings(gpu_memory_utilization=1.5)
    with pytest.raises(ValueError):
        EngineSettings(tensor_parallel_size=0)


def settings(**kw):
    base = dict(device="cpu", vllm_version="0.11.0", enable_lora=True, max_lora_rank=256,
                max_num_seqs=1, max_model_len=8192, cpu_kvcache_space_gib=4)
    base.update(kw)
    return EngineSettings(**base)


@pytest.mark.parametrize("limit_gib", [12, 16, 24, 32])
def test_inverse_tokens_fit_and_next_does_not(limit_gib):
    s = settings()
    t = max_batched_tokens_within(GEO, s, limit_gib * GiB)
    assert t is not None
    assert build_report(GEO, s.model_copy(update={"max_num_batched_tokens": t})).total_memory_bytes <= limit_gib * GiB
    assert build_report(GEO, s.model_copy(update={"max_num_batched_tokens": t + 1})).total_memory_bytes > limit_gib * GiB


def test_inverse_none_when_nothing_fits():
    assert max_batched_tokens_within(GEO, settings(), 2 * GiB) is None


def test_inverse_rank():
    s = settings(max_num_batched_tokens=2394)
    rank = max_lora_rank_within(GEO, s, 16 * GiB)
    assert rank is not None and rank < 256
    assert build_report(GEO, s.model_copy(update={"max_lora_rank": rank})).total_memory_bytes <= 16 * GiB
    bigger = [r for r in (8, 16, 32, 64, 128, 256) if r > rank][0]
    assert build_report(GEO, s.model_copy(update={"max_lora_rank": bigger})).total_memory_bytes > 16 * GiB


def test_batched_tokens_below_max_num_seqs_is_refused_and_never_suggested():
    # vLLM's scheduler config: max_num_batched_tokens < max_num_seqs raises at start-up in every
    # version (0.6.6:config.py:1476, 0.33.0:config/scheduler.py:331)
    r = build_report(GEO, settings(max_num_seqs=256, max_num_batched_tokens=128))
    assert any("max_num_batched_tokens 128 < max_num_seqs 256: vLLM refuses to start" in n
               for n in r.notes)
    assert not any("max_num_seqs" in n and "refuses" in n
                   for n in build_report(GEO, settings(max_num_seqs=128,
                                                       max_num_batched_tokens=128)).notes)
    # an unset max_num_seqs is clamped to max_num_batched_tokens from 0.10.2 (arg_utils.py:1742)
    assert not any("refuses" in n for n in build_report(
        GEO, settings(max_num_seqs=None, max_num_batched_tokens=64)).notes)
    # the inverse never answers a T vLLM refuses: find a limit whose largest fitting T is < 256
    s = settings(max_num_seqs=256)
    limit = build_report(GEO, settings(max_num_batched_tokens=200)).total_memory_bytes
    assert max_batched_tokens_within(GEO, settings(max_num_seqs=1), limit) == 200
    assert max_batched_tokens_within(GEO, s, limit) is None
