import pytest

from vllm_sizer.estimator import EngineSettings, ModelGeometry, build_report, resolve_settings
from vllm_sizer.estimator.units import GiB
from tests.conftest import QWEN3_0_6B

GEO = ModelGeometry.from_hf_config(QWEN3_0_6B)


def resolved(**kw):
    notes = []
    r = resolve_settings(EngineSettings(**kw), GEO, notes)
    return r, notes


@pytest.mark.parametrize("tp, pp, tokens, seqs", [(1, 1, 2048, 128), (2, 1, 4096, 256), (2, 2, 8192, 512)])
def test_cpu_api_server_defaults_scale_with_world_size(tp, pp, tokens, seqs):
    r, _ = resolved(device="cpu", vllm_version="0.11.0", tensor_parallel_size=tp,
                    pipeline_parallel_size=pp)
    assert (r.max_num_batched_tokens, r.max_num_seqs) == (tokens, seqs)


@pytest.mark.parametrize("gib, product, version, tokens, seqs", [
    (24, None, "0.11.0", 2048, 256),
    (80, "NVIDIA-H100-80GB-HBM3", "0.11.0", 8192, 1024),
    (80, "NVIDIA-A100-SXM4-80GB", "0.11.0", 2048, 256),
    (192, None, "0.28.0", 16384, 1024),
    (192, None, "0.27.0", 8192, 1024),
])
def test_gpu_defaults_by_memory(gib, product, version, tokens, seqs):
    r, _ = resolved(device="cuda", vllm_version=version, gpu_memory_bytes=gib * GiB,
                    gpu_product=product)
    assert (r.max_num_batched_tokens, r.max_num_seqs) == (tokens, seqs)


def test_llm_class_defaults_differ_from_api_server():
    r, _ = resolved(device="cpu", vllm_version="0.11.0", usage_context="llm_class")
    assert (r.max_num_batched_tokens, r.max_num_seqs) == (4096, 256)


def test_012_clamps_unset_tokens_to_seqs_times_len():
    r, _ = resolved(device="cpu", vllm_version="0.12.0", max_model_len=512, max_num_seqs=2)
    assert r.max_num_batched_tokens == 1024
    r11, _ = resolved(device="cpu", vllm_version="0.11.0", max_model_len=512, max_num_seqs=2)
    assert r11.max_num_batched_tokens == 2048


def test_chunked_prefill_off_raises_tokens_to_max_model_len_from_012():
    r, _ = resolved(device="cuda", vllm_version="0.12.0", max_model_len=8192,
                    enable_chunked_prefill=False)
    assert r.max_num_batched_tokens == 8192 and not r.chunked_prefill
    r11, notes = resolved(device="cuda", vllm_version="0.11.0", max_model_len=8192,
                          enable_chunked_prefill=False)
    assert r11.chunked_prefill and r11.max_num_batched_tokens == 2048
    assert any("no effect" in n for n in notes)


def test_v0_default_is_max_of_len_and_2048():
    r, _ = resolved(device="cuda", vllm_version="0.6.6", max_model_len=8192)
    assert r.max_num_batched_tokens == 8192 and r.max_num_seqs == 256


def test_throughput_mode_doubles_unset_defaults_from_017():
    r, _ = resolved(device="cpu", vllm_version="0.17.0", performance_mode="throughput")
    assert (r.max_num_batched_tokens, r.max_num_seqs) == (4096, 256)
    r, _ = resolved(device="cpu", vllm_version="0.16.0", performance_mode="throughput")
    assert r.max_num_batched_tokens == 2048
    r, _ = resolved(device="cpu", vllm_version="0.17.0", performance_mode="throughput",
                    max_num_batched_tokens=1000)
    assert (r.max_num_batched_tokens, r.max_num_seqs) == (1000, 256)


def test_unset_seqs_clamped_to_token_budget_from_0102():
    r, _ = resolved(device="cpu", vllm_version="0.10.2", max_num_batched_tokens=64)
    assert r.max_num_seqs == 64
    r, _ = resolved(device="cpu", vllm_version="0.10.2", max_num_batched_tokens=64, max_num_seqs=100)
    assert r.max_num_seqs == 100


def test_old_cpu_versions():
    r, _ = resolved(device="cpu", vllm_version="0.8.5", max_model_len=8192)  # V0 on CPU
    assert (r.max_num_batched_tokens, r.max_num_seqs, r.chunked_prefill) == (8192, 256, False)
    r, _ = resolved(device="cpu", vllm_version="0.9.2", node_memory_bytes=128 * GiB)
    assert (r.max_num_batched_tokens, r.max_num_seqs) == (8192, 1024)  # host RAM as device memory
    r, _ = resolved(device="cpu", vllm_version="0.10.0")
    assert (r.max_num_batched_tokens, r.max_num_seqs) == (2048, 256)


def test_swap_space_only_for_v0_gpu():
    assert resolved(device="cuda", vllm_version="0.6.6")[0].swap_space_bytes == 4 * GiB
    assert resolved(device="cuda", vllm_version="0.11.0")[0].swap_space_bytes == 0
    assert resolved(device="cuda", vllm_version="0.6.6", swap_space_gib=1,
                    tensor_parallel_size=2)[0].swap_space_bytes == 2 * GiB


def test_cpu_kv_env_zero_and_flag_precedence():
    r, notes = resolved(device="cpu", vllm_version="0.11.0", cpu_kvcache_space_gib=0)
    assert r.cpu_kv_cache_bytes == 0 and any("refuses to start" in n for n in notes)
    assert resolved(device="cpu", vllm_version="0.9.2", cpu_kvcache_space_gib=0)[0].cpu_kv_cache_bytes == 4 * GiB
    r, _ = resolved(device="cpu", vllm_version="0.20.0", kv_cache_memory_bytes=3 * GiB)
    assert r.cpu_kv_cache_bytes == 3 * GiB and not r.kv_cache_auto_sized
    r, _ = resolved(device="cpu", vllm_version="0.20.0", kv_cache_memory_bytes=3 * GiB,
                    cpu_kvcache_space_gib=5)
    assert r.cpu_kv_cache_bytes == 5 * GiB  # the env overrides the flag from 0.20
    r, _ = resolved(device="cpu", vllm_version="0.15.0", kv_cache_memory_bytes=3 * GiB)
    assert r.kv_cache_auto_sized  # ignored on CPU in 0.10.2-0.19


def test_set_values_win_and_reasons_say_so():
    r, _ = resolved(device="cpu", vllm_version="0.11.0", max_num_batched_tokens=777, max_num_seqs=3)
    assert r.max_num_batched_tokens == 777 and r.reasons["max_num_batched_tokens"] == "set"


@pytest.mark.parametrize("version, env, node, kv_gib, auto", [
    ("0.11.0", None, None, 4, False),
    ("0.11.0", 8, None, 8, False),
    ("0.15.0", None, 64 * GiB, 32, True),
    ("0.15.0", None, None, 4, True),
    ("0.21.0", None, None, 4, True),
    ("0.26.0", 2, None, 2, False),
    ("0.26.0", 2.7, None, 2, False),  # vLLM reads whole GiB with int()
])
def test_cpu_kv_cache_by_version(version, env, node, kv_gib, auto):
    r, notes = resolved(device="cpu", vllm_version=version, cpu_kvcache_space_gib=env,
                        node_memory_bytes=node)
    assert r.cpu_kv_cache_bytes == kv_gib * GiB
    assert r.kv_cache_auto_sized is auto
    assert any("VLLM_CPU_KVCACHE_SPACE unset" in n for n in notes) is auto


def test_kv_auto_sized_note_names_pod_limit_from_024():
    _, notes = resolved(device="cpu", vllm_version="0.24.0")
    assert any("pod limit" in n for n in notes)
    _, notes = resolved(device="cpu", vllm_version="0.23.0")
    assert any("node memory" in n for n in notes)


def test_gpu_memory_utilization_default_by_version():
    assert resolved(device="cuda", vllm_version="0.11.0")[0].gpu_memory_utilization == 0.9
    assert resolved(device="cuda", vllm_version="0.20.0")[0].gpu_memory_utilization == 0.92


def test_unknown_version_is_latest_with_note():
    r, notes = resolved(device="cpu")
    assert str(r.version) == "0.33.0"
    assert any("version unknown" in n for n in notes)


def test_lora_rank_defaults_to_16_on_settings_path():
    r, _ = resolved(device="cpu", vllm_version="0.11.0", enable_lora=True)
    assert r.max_lora_rank == 16 and r.max_loras == 1 and r.max_cpu_loras == 1


def test_disallowed_rank_is_noted():
    _, notes = resolved(device="cpu", vllm_version="0.11.0", enable_lora=True, max_lora_rank=100)
    assert any("allowed ranks" in n for n in notes)


def test_device_unknown_note_and_no_cpu_terms():
    r = build_report(GEO, EngineSettings(vllm_version="0.11.0", enable_lora=True, max_lora_rank=256))
    assert r.lora_prefill_scratch_bytes == 0 and r.kv_cache_bytes == 0
    assert any("device unknown" in n for n in r.notes)


def test_gpu_fit_check_with_and_without_gpu_memory():
    big = dict(QWEN3_0_6B, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
               num_attention_heads=64, head_dim=128, max_position_embeddings=8192)
    g = ModelGeometry.from_hf_config(big)
    r = build_report(g, EngineSettings(device="cuda", vllm_version="0.11.0", gpu_memory_bytes=24 * GiB))
    assert r.device_fits is False and any("GPU does not fit" in n for n in r.notes)
    r = build_report(g, EngineSettings(device="cuda", vllm_version="0.11.0",
                                       gpu_memory_bytes=80 * GiB, tensor_parallel_size=4))
    assert r.device_fits is True
    r = build_report(g, EngineSettings(device="cuda", vllm_version="0.11.0"))
    assert r.device_fits is None and any("fit check skipped" in n for n in r.notes)


def test_kv_too_small_for_max_model_len_is_noted():
    r = build_report(GEO, EngineSettings(device="cpu", vllm_version="0.11.0"))
    assert r.resolved.max_model_len == 40960
    assert any("vLLM refuses to start" in n for n in r.notes)


def test_dtype_auto_and_explicit_float32():
    g32 = ModelGeometry.from_hf_config(dict(QWEN3_0_6B, torch_dtype="float32"))
    auto = build_report(g32, EngineSettings(device="cpu", vllm_version="0.11.0", max_model_len=4096))
    assert auto.resolved.dtype == "bfloat16"  # float32 checkpoints are served in bf16 (≥ 0.9.2)
    assert build_report(g32, EngineSettings(device="cpu", vllm_version="0.6.6",
                                            max_model_len=4096)).resolved.dtype == "float16"
    f32 = build_report(GEO, EngineSettings(device="cpu", vllm_version="0.11.0", max_model_len=4096,
                                           dtype="float32"))
    assert f32.weights_bytes == 2 * auto.weights_bytes
