import pytest

from vllm_sizer.estimator import (EngineSettings, ModelGeometry, build_report,
                                  mechanism_bytes_per_token)
from vllm_sizer.estimator.units import GiB, MiB
from tests.conftest import QWEN3_0_6B

GEO = ModelGeometry.from_hf_config(QWEN3_0_6B)


def cpu(**kw):
    base = dict(model="Qwen/Qwen3-0.6B", device="cpu", vllm_version="0.11.0", enable_lora=True,
                max_lora_rank=256, max_num_seqs=1)
    base.update(kw)
    return build_report(GEO, EngineSettings(**base))


def test_mechanism_is_4_5_mib_per_token_at_qwen3_rank_256():
    assert mechanism_bytes_per_token(GEO, 256, 2) == pytest.approx(4.5 * MiB)


def test_charged_for_batched_tokens_not_context():
    long_ctx = cpu(max_model_len=8192, max_num_batched_tokens=2048)
    short_ctx = cpu(max_model_len=2048, max_num_batched_tokens=2048)
    assert long_ctx.lora_prefill_scratch_bytes == short_ctx.lora_prefill_scratch_bytes
    assert long_ctx.resolved.max_num_batched_tokens == 2048
    bigger_batch = cpu(max_model_len=8192, max_num_batched_tokens=8192)
    assert bigger_batch.lora_prefill_scratch_bytes > 3 * long_ctx.lora_prefill_scratch_bytes


@pytest.mark.parametrize("rank", [8, 16, 64, 128])
def test_rank_scales_linearly_and_is_flagged(rank):
    full = cpu(max_num_batched_tokens=2394, max_model_len=4096)
    part = cpu(max_num_batched_tokens=2394, max_model_len=4096, max_lora_rank=rank)
    assert part.lora_prefill_scratch_bytes == pytest.approx(
        full.lora_prefill_scratch_bytes * rank / 256, rel=0.02)
    assert any(f"rank {rank}: scaled from the fitted ranks [256] linearly in rank" in n
               for n in part.notes)


def test_tensor_parallel_shards_per_worker_and_sums_workers():
    one = cpu(max_num_batched_tokens=2394, max_model_len=4096)
    two = cpu(max_num_batched_tokens=2394, max_model_len=4096, tensor_parallel_size=2)
    # per worker the widest shrink halves (down_proj is row parallel: 3072/2 = 1536 > hidden),
    # and two workers prefill together: the pod total is the same as TP=1 for this geometry.
    per_worker = mechanism_bytes_per_token(GEO, 256, 2, tensor_parallel=2)
    assert per_worker == pytest.approx(6 * 256 * 1536)
    assert two.lora_prefill_scratch_bytes == pytest.approx(one.lora_prefill_scratch_bytes, rel=0.01)
    assert any("tensor parallel 2" in n for n in two.notes)
    assert any("2 worker processes" in n for n in two.notes)


def test_wider_model_scales_by_widest_projection_and_says_so():
    wide = dict(QWEN3_0_6B, hidden_size=2048, intermediate_size=6144)
    g = ModelGeometry.from_hf_config(wide)
    s = EngineSettings(device="cpu", vllm_version="0.11.0", enable_lora=True, max_lora_rank=256,
                       max_num_seqs=1, max_num_batched_tokens=2394, max_model_len=4096)
    r = build_report(g, s)
    assert r.lora_prefill_scratch_bytes == pytest.approx(2 * cpu(
        max_num_batched_tokens=2394, max_model_len=4096).lora_prefill_scratch_bytes, rel=0.01)
    assert any("widest LoRA projection 6144: scaled from the fitted widest LoRA projections "
               "[3072] linearly in width" in n for n in r.notes)


def test_logits_gather_scales_with_max_num_seqs_and_counts_as_max_not_sum():
    r = cpu(max_num_batched_tokens=512, max_model_len=4096, max_num_seqs=128, vllm_version="0.16.0")
    assert r.lora_logits_scratch_bytes == 2 * 128 * 151936 * 256
    assert r.lora_logits_scratch_bytes / GiB == pytest.approx(9.27, abs=0.01)
    transients = max(r.lora_logits_scratch_bytes, r.lora_prefill_scratch_bytes)
    summed = sum(t.bytes for t in r.terms if t.enters == "sum")
    assert r.total_memory_bytes == summed + transients


def test_cuda_has_no_cpu_lora_terms():
    r = build_report(GEO, EngineSettings(device="cuda", vllm_version="0.11.0", enable_lora=True,
                                         max_lora_rank=256, max_num_batched_tokens=8192,
                                         max_model_len=8192))
    assert r.lora_prefill_scratch_bytes == 0 and r.lora_logits_scratch_bytes == 0
    assert r.lora_adapter_bytes > 0
    assert r.device_memory_bytes is not None


def test_lm_head_lora_depends_on_model_and_version():
    old = cpu(max_num_batched_tokens=512, max_model_len=4096, vllm_version="0.15.0")
    new = cpu(max_num_batched_tokens=512, max_model_len=4096, vllm_version="0.16.0")
    assert old.lora_logits_scratch_bytes == 0 and any("no lm_head LoRA" in n for n in old.notes)
    assert new.lora_logits_scratch_bytes == 2 * 151936 * 256
    assert new.lora_adapter_bytes > old.lora_adapter_bytes
    llama = ModelGeometry.from_hf_config(dict(QWEN3_0_6B, model_type="llama"))
    r = build_report(llama, EngineSettings(device="cpu", vllm_version="0.11.0", enable_lora=True,
                                           max_lora_rank=64, max_num_seqs=4, max_model_len=4096))
    assert r.lora_logits_scratch_bytes == 2 * 4 * 151936 * 64
