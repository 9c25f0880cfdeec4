import json
import subprocess
import sys


from vllm_sizer.cli.main import main
from vllm_sizer.estimator.units import GiB

ANCHOR = ["--", "vllm", "serve", "Qwen/Qwen3-0.6B", "--device", "cpu", "--enable-lora",
          "--max-lora-rank", "256", "--max-num-batched-tokens", "2394", "--max-num-seqs", "1",
          "--max-model-len", "4096"]


def run_json(capsys, *args):
    rc = main(["estimate", "-o", "json", *args])
    out = capsys.readouterr()
    return rc, (json.loads(out.out) if rc == 0 else None), out.err


def test_json_contract(capsys):
    rc, report, _ = run_json(capsys, *ANCHOR)
    assert rc == 0
    for key in ("weights_bytes", "kv_cache_bytes", "activation_bytes", "lora_adapter_bytes",
                "lora_prefill_scratch_bytes", "lora_logits_scratch_bytes",
                "runtime_overhead_bytes", "total_memory_bytes"):
        assert isinstance(report[key], int), key
    assert isinstance(report["notes"], list) and all(isinstance(n, str) for n in report["notes"])
    assert report["resolved"]["max_num_batched_tokens"] == 2394
    assert report["resolved"]["device"] == "cpu"
    assert report["lora_prefill_scratch_bytes"] > 15 * GiB


def test_text_output_has_breakdown_and_total(capsys):
    assert main(["estimate", *ANCHOR]) == 0
    out = capsys.readouterr().out
    assert "lora_prefill_scratch" in out and "TOTAL (host memory)" in out


def test_env_and_version_options(capsys):
    rc, report, _ = run_json(capsys, "--env", "VLLM_CPU_KVCACHE_SPACE=8", "--vllm-version", "0.11.0",
                             *ANCHOR)
    assert report["kv_cache_bytes"] == 8 * GiB
    assert report["resolved"]["version"]["minor"] == 11
    assert not any("version unknown" in n for n in report["notes"])


def test_device_option_and_gpu_memory(capsys):
    args = ["--", "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192"]
    rc, report, _ = run_json(capsys, "--device", "cuda", "--gpu-memory", "24", *args)
    assert report["device_memory_bytes"] is not None and report["device_fits"] is True
    rc, report, _ = run_json(capsys, "--device", "cuda", *args)
    assert report["device_fits"] is None
    assert any("fit check skipped" in n for n in report["notes"])


def test_api_server_form_and_underscore_and_suffix_flags(capsys):
    rc, report, _ = run_json(capsys, "--", "python3", "-m", "vllm.entrypoints.openai.api_server",
                             "--model", "Qwen/Qwen3-0.6B", "--device=cpu",
                             "--max_num_batched_tokens=4k", "--max-model-len", "4K")
    assert rc == 0
    assert report["resolved"]["max_num_batched_tokens"] == 4000
    assert report["resolved"]["max_model_len"] == 4096


def test_unknown_model_exits_2_with_hint(capsys):
    rc, _, err = run_json(capsys, "--", "vllm", "serve", "acme/secret-7b", "--device", "cpu")
    assert rc == 2 and "--model-config" in err


def test_model_config_file(capsys, tmp_path, qwen3_config):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(qwen3_config))
    rc, report, _ = run_json(capsys, "--model-config", str(cfg), "--", "vllm", "serve",
                             "/models/acme", "--device", "cpu", "--max-model-len", "2048")
    assert rc == 0 and report["parameters"] == 596049920


def test_bad_value_is_vllms_own_error_not_a_crash_nor_an_estimate(capsys):
    # vLLM's parser exits on both values (argparse status 2): no estimate of a server that
    # never starts, as check and the webhook say
    rc = main(["estimate", "-o", "json", "--vllm-version", "0.33.0", "--", "vllm", "serve",
               "Qwen/Qwen3-0.6B", "--device", "cpu", "--max-num-batched-tokens", "abc",
               "--max-model-len", "1e30"])
    out = capsys.readouterr()
    assert rc == 2 and not out.out
    assert "argument --max-num-batched-tokens: invalid human_readable_int value: 'abc'" in out.err
    assert "argument --max-model-len: invalid human_readable_int_or_auto value: '1e30'" in out.err


def test_installed_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "vllm_sizer.cli.main", "estimate", "-o", "json",
                          *ANCHOR], capture_output=True, text=True)
    assert out.returncode == 0 and json.loads(out.stdout)["total_memory_bytes"] > 20 * GiB
