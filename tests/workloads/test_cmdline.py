"""vLLM command lines read as each vLLM version's parser reads them (data/vllm_flags.json),
all invocations of a script, CPU evidence from VLLM_CPU_*, data-parallel engines, vendor
images."""

from __future__ import annotations

import argparse
import random

import pytest

from vllm_sizer.estimator import ModelGeometry, build_report
from vllm_sizer.estimator.catalog import lookup
from vllm_sizer.estimator.versions import VllmVersion
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import images
from vllm_sizer.workloads import vllm_flags as vf
from vllm_sizer.workloads.reader import read_workloads
from vllm_sizer.workloads.vllm_args import parse_vllm_args


def pod(container: dict, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
            "spec": {"containers": [{"name": "vllm", **container}], **spec}}


def msgs(w, severity):
    return [str(d) for d in w.diagnostics if d.severity == severity]


def read(image, *argv, **container):
    return read_workloads(pod({"image": image, "command": ["vllm", "serve", *argv],
                               **container}))[0]


# ------------------------------------------------------------------ the option lists
def test_every_listed_version_has_the_flags_we_read():
    versions = vf.known_versions()
    for must in ("0.6.6", "0.7.3", "0.8.5", "0.9.2", "0.10.2", "0.11.0", "0.12.0", "0.14.0",
                 "0.33.0"):
        assert must in versions
    for v in versions:
        t = vf.table_for(v)
        assert t.allow_abbrev
        assert t.options["--max-model-len"][1] == "v"
        assert t.options["--enable-lora"][1] == "t"
        assert t.count > 100
    # nearest lower known list; unknown → latest
    assert vf.table_for(VllmVersion.parse("0.9.1")).version == "0.9.0"
    assert vf.table_for(None).version == vf.latest_version()
    assert vf.table_for(VllmVersion.parse("9.0.0")).version == vf.latest_version()


class _Raising(argparse.ArgumentParser):
    def error(self, message):
        raise argparse.ArgumentError(None, message)


def _argparse_parser(table: vf.OptionTable) -> argparse.ArgumentParser:
    p = _Raising(add_help=False, allow_abbrev=True, exit_on_error=False)
    for opt, (dest, kind) in table.options.items():
        nargs = {"v": None, "?": "?", "+": "+", "*": "*"}.get(kind, 0)
        if nargs == 0:
            p.add_argument(opt, dest=opt, action="store_true")
        else:
            p.add_argument(opt, dest=opt, nargs=nargs)
    return p


@pytest.mark.parametrize("version", ["0.6.6", "0.10.2", "0.24.0", "0.33.0"])
def test_matching_is_argparse_itself(version):
    """Our prefix matching gives what CPython's argparse gives on the same option list."""
    table = vf.table_for(version)
    parser = _argparse_parser(table)
    rng = random.Random(version)
    longs = [o for o in table.options if o.startswith("--")]
    for opt in rng.sample(longs, 60):
        for cut in (len(opt) - 1, max(4, len(opt) // 2), 6):
            prefix = opt[:cut]
            m = vf.match(table, prefix)
            try:
                ns, extra = parser.parse_known_args([prefix] + (["1"] if table.options[opt][1]
                                                              not in vf.VALUELESS else []))
            except argparse.ArgumentError as exc:
                assert "ambiguous" in str(exc) and m.option is None and m.ambiguous, prefix
                continue
            chosen = [k for k, v in vars(ns).items() if v not in (None, False)]
            if m.option is None:
                assert not chosen, prefix
            else:
                assert chosen == [m.option], prefix


# ------------------------------------------------------------------ abbreviations
@pytest.mark.parametrize("image", ["vllm/vllm-openai:v0.8.5", "vllm/vllm-openai:v0.11.0",
                                   "vllm/vllm-openai:latest", "ghcr.io/acme/runtime:1"])
def test_unique_prefix_selects_the_flag(image):
    w = read(image, "Qwen/Qwen3-0.6B", "--max-num-seq", "1024", "--max-num-batched-token",
             "16000", "--gpu-memory-util", "0.5", "--enable-lora", "--max-lora-r", "256")
    s = w.settings
    assert (s.max_num_seqs, s.max_num_batched_tokens, s.gpu_memory_utilization,
            s.max_lora_rank) == (1024, 16000, 0.5, 256)
    assert not msgs(w, "error")
    assert sum("abbreviation" in m for m in msgs(w, "info")) == 4


def test_ambiguous_prefix_is_a_startup_error():
    w = read("vllm/vllm-openai:v0.11.0", "Qwen/Qwen3-0.6B", "--max-num", "64")
    errs = msgs(w, "error")
    assert any("ambiguous option: --max-num" in m and "will not start" in m for m in errs)
    assert w.settings.max_num_seqs is None  # nothing read from it
    assert w.model == "Qwen/Qwen3-0.6B"  # its value was not taken as the model


def test_underscore_prefix_and_equals_form():
    w = read("vllm/vllm-openai:v0.11.0", "Qwen/Qwen3-0.6B", "--max_num_seq=12")
    assert w.settings.max_num_seqs == 12


# ------------------------------------------------------------------ booleans
@pytest.mark.parametrize("version", ["0.9.2", "0.14.0", "0.33.0"])
def test_no_valueless_flag_eats_the_positional_model(version):
    table = vf.table_for(version)
    flags = [o for o, (_d, k) in table.options.items() if k in ("t", "f") and o.startswith("--")]
    assert len(flags) > 20
    for flag in flags:
        parsed = parse_vllm_args([flag, "meta-llama/Llama-3.1-8B-Instruct"],
                                 version=VllmVersion.parse(version), strict=True)
        assert parsed.model == "meta-llama/Llama-3.1-8B-Instruct", flag
        assert not [d for d in parsed.diagnostics if d.severity == "error"], flag


def test_unknown_flag_before_the_model_does_not_take_it():
    # argparse gives an unknown option no value: the next word is the positional model
    w = read("vllm/vllm-openai:v0.11.0", "--enable-shiny-feature", "meta-llama/Llama-3.1-8B-Instruct",
             "--max-num-seqs", "8")
    assert w.model == "meta-llama/Llama-3.1-8B-Instruct" and w.settings.max_num_seqs == 8
    assert any("--enable-shiny-feature" in m for m in msgs(w, "error"))


def test_enable_prompt_embeds_before_the_model():
    w = read("vllm/vllm-openai:v0.11.0", "--enable-prompt-embeds", "meta-llama/Llama-3.1-8B-Instruct")
    assert w.model == "meta-llama/Llama-3.1-8B-Instruct"


def test_unknown_flag_is_a_startup_error_with_or_without_version():
    w = read("vllm/vllm-openai:v0.11.0", "Qwen/Qwen3-0.6B", "--max-num-seqz", "4")
    assert any("unrecognized argument --max-num-seqz" in m and "will not start" in m
               for m in msgs(w, "error"))
    # no version: every known version rejects it, so the error does not need the version
    w = read("ghcr.io/acme/runtime:1", "Qwen/Qwen3-0.6B", "--max-num-seqz", "4")
    assert any("every known vLLM version" in m for m in msgs(w, "error"))


def test_flag_removed_in_newer_versions_warns_without_a_version():
    # --device: an option of 0.6-0.9 only; with an unknown version it is still read
    w = read("ghcr.io/acme/runtime:1", "Qwen/Qwen3-0.6B", "--device", "cpu")
    assert w.device == "cpu"
    warn = [m for m in msgs(w, "warning") if m.startswith("--device")]
    assert warn and "0.6.0-0.9.2" in warn[0] and "0.31.0-0.33.0" in warn[0]
    # vLLM's own `latest` image is the newest release: it rejects --device (ambiguous)
    w = read("vllm/vllm-openai:latest", "Qwen/Qwen3-0.6B", "--device", "cpu")
    assert any("ambiguous option: --device" in m and "will not start" in m
               for m in msgs(w, "error"))


def test_value_on_a_flag_depends_on_the_version():
    # --enable-chunked-prefill took an optional value in 0.6.6, none in 0.10.2
    assert vf.table_for("0.6.6").options["--enable-chunked-prefill"][1] == "?"
    w = read("vllm/vllm-openai:v0.6.6", "Qwen/Qwen3-0.6B", "--enable-chunked-prefill", "false")
    assert w.settings.enable_chunked_prefill is False and not msgs(w, "error")


# ------------------------------------------------------------------ several invocations
SCRIPT = """
if [ "$SIZE" = big ]; then
  exec vllm serve Qwen/Qwen3-8B --max-model-len 8192 --port 8000
else
  exec vllm serve Qwen/Qwen3-0.6B --max-model-len 4096 --port 8000
fi
"""


def test_script_branches_are_all_read():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0-cpu",
                            "command": ["/bin/sh", "-c", SCRIPT]}))[0]
    models = [w.model] + [a.model for a in w.alternatives]
    assert models == ["Qwen/Qwen3-8B", "Qwen/Qwen3-0.6B"]
    assert all(a.container_path == w.container_path for a in w.alternatives)


def test_the_largest_invocation_is_sized():
    script = SCRIPT.replace("Qwen/Qwen3-8B", "TMP").replace("Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B") \
        .replace("TMP", "Qwen/Qwen3-0.6B")  # the small model first
    obj = pod({"image": "vllm/vllm-openai:v0.11.0-cpu", "command": ["/bin/sh", "-c", script],
               "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "4"}]})
    result = review_object(obj)
    d = result.containers[0]
    big = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0-cpu",
                              "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "4"}],
                              "command": ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len",
                                          "4096", "--port", "8000"]}))[0]
    expected = build_report(ModelGeometry.from_hf_config(big.model_config), big.settings)
    assert d.report is not None
    assert d.report.total_memory_bytes == expected.total_memory_bytes
    note = [m for m in result.warnings if "2 vLLM invocations" in m]
    assert note and "Qwen/Qwen3-8B" in note[0] and "alternatives: Qwen/Qwen3-0.6B" in note[0]


# ------------------------------------------------------------------ device from VLLM_CPU_*
@pytest.mark.parametrize("name,value", [("VLLM_CPU_KVCACHE_SPACE", "8"),
                                        ("VLLM_CPU_OMP_THREADS_BIND", "0-15")])
def test_vllm_cpu_env_without_accelerator_is_a_cpu_pod(name, value):
    w = read("vllm/vllm-openai:v0.11.0", "Qwen/Qwen3-0.6B", env=[{"name": name, "value": value}])
    assert w.device == "cpu" and w.settings.device == "cpu"
    assert any(name in m and "CPU" in m for m in msgs(w, "info"))


def test_vllm_cpu_env_with_a_gpu_stays_cuda():
    w = read("vllm/vllm-openai:v0.11.0", "Qwen/Qwen3-0.6B",
             env=[{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "8"}],
             resources={"limits": {"nvidia.com/gpu": 1}})
    assert w.device == "cuda"


def test_vllm_cpu_env_from_the_script():
    w = read_workloads(pod({"image": "vllm/vllm-openai:v0.11.0", "command": [
        "bash", "-c", "export VLLM_CPU_OMP_THREADS_BIND=all; vllm serve Qwen/Qwen3-0.6B"]}))[0]
    assert w.device == "cpu"


# ------------------------------------------------------------------ data parallelism
def _total(*argv, image="vllm/vllm-openai:v0.11.0-cpu"):
    w = read(image, "Qwen/Qwen3-0.6B", "--max-model-len", "4096", *argv,
             env=[{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "2"}])
    report = build_report(ModelGeometry.from_hf_config(w.model_config), w.settings)
    return w, report


@pytest.mark.parametrize("argv,engines", [
    ((), 1), (("-dp", "2"), 2), (("--data-parallel-size", "4"), 4),
    (("--data-parallel-size", "4", "--data-parallel-size-local", "2"), 2),
    (("-dp", "4", "--data-parallel-rank", "1"), 1),
    (("--data-parallel-size", "3", "-dpl", "3"), 3),
])
def test_local_data_parallel_engines_are_counted(argv, engines):
    _, one = _total()
    w, report = _total(*argv)
    assert report.resolved.engines == engines
    dev_shm = sum(t.bytes for t in one.terms if t.name == "dev_shm")
    assert report.total_memory_bytes == (one.total_memory_bytes - dev_shm) * engines + dev_shm
    if engines > 1:
        assert any("data-parallel engines" in n for n in report.notes)


def test_gpu_data_parallel_counts_host_terms_per_engine():
    kw = dict(resources={"limits": {"nvidia.com/gpu": 2}})
    w1 = read("vllm/vllm-openai:v0.11.0", "Qwen/Qwen3-0.6B", **kw)
    w2 = read("vllm/vllm-openai:v0.11.0", "Qwen/Qwen3-0.6B", "-dp", "2", **kw)
    g = ModelGeometry.from_hf_config(lookup("Qwen/Qwen3-0.6B")["config"])
    r1, r2 = build_report(g, w1.settings), build_report(g, w2.settings)
    w1b, w2b = (next(t.bytes for t in r.terms if t.name == "gpu_worker_processes")
                for r in (r1, r2))
    assert w2b == 2 * w1b  # one worker process per engine (TP 1)
    assert r1.total_memory_bytes < r2.total_memory_bytes < 2.5 * r1.total_memory_bytes
    assert r2.device_memory_bytes == r1.device_memory_bytes  # per GPU
    assert any("2 GPUs" in n for n in r2.notes)


# ------------------------------------------------------------------ vendor images
@pytest.mark.parametrize("image,device,positional", [
    ("ghcr.io/llm-d/llm-d:v0.4.0", "cuda", False),
    ("ghcr.io/llm-d/llm-d-cuda:v0.5.0", "cuda", False),
    ("quay.io/modh/vllm:rhoai-2.22-cuda", "unknown", False),
    ("registry.redhat.io/rhaiis/vllm-cuda-rhel9:3.2.1", "cuda", False),
    ("opea/vllm-gaudi:1.3", "other", False),
    ("opea/vllm:1.3", "cpu", True),
    ("intel/vllm:0.10.2-xpu", "other", True),
    ("lmcache/vllm-openai:v0.3.9", "cuda", True),
])
def test_vendor_entrypoints(image, device, positional):
    args = (["Qwen/Qwen3-0.6B"] if positional else ["--model", "Qwen/Qwen3-0.6B"]) + \
        ["--max-model-len", "4096"]
    w = read_workloads(pod({"image": image, "args": args}))[0]
    assert w.model == "Qwen/Qwen3-0.6B" and w.settings is not None, msgs(w, "warning")
    assert w.device == device
    assert w.vllm_version is None  # the vendor's tag is not a vLLM version
    row = images.vendor_image(image)
    assert row is not None and "@" in row.source or "assumed" in row.source or "docs" in row.source
    assert any("ENTRYPOINT" in m for m in msgs(w, "info"))


def test_image_without_a_vllm_entrypoint_is_not_sized():
    w = read_workloads(pod({"image": "rocm/vllm:rocm6.4.1_vllm_0.10.1",
                            "args": ["--model", "Qwen/Qwen3-0.6B"]}))[0]
    assert w.settings is None
    assert any("no ENTRYPOINT that runs vLLM" in m for m in msgs(w, "warning"))
    # with its command it is read, and the build's device is used
    w = read("rocm/vllm:latest", "Qwen/Qwen3-0.6B")
    assert w.device == "rocm" and w.settings is not None


def test_every_vendor_row_has_a_source():
    for row in images.VENDOR_IMAGES:
        assert row.source and ("@" in row.source or "docs" in row.source)
        assert row.device in (None, "cpu", "cuda", "rocm", "other")


def test_an_empty_value_of_an_optional_setting_is_vllms_default_not_an_error():
    # vLLM reads "" and "None" of an Optional config field as None (optional_type): llm-d's
    # `--kv-cache-memory-bytes=${KV_CACHE_MEMORY_BYTES-}` with the variable unset starts fine
    for raw in ("", "None"):
        parsed = parse_vllm_args([f"--kv-cache-memory-bytes={raw}", "--kv-offloading-size", raw,
                                  "Qwen/Qwen3-0.6B"])
        assert "kv_cache_memory_bytes" not in parsed.values
        assert "kv_offloading_size_gib" not in parsed.values
        assert not [d for d in parsed.diagnostics if d.severity != "info"], parsed.diagnostics
    # a non-optional setting still rejects it
    parsed = parse_vllm_args(["--max-num-seqs=", "Qwen/Qwen3-0.6B"])
    assert [d for d in parsed.diagnostics if d.severity == "error"]


def test_a_value_left_as_an_unknown_expansion_is_said_once_not_as_a_bad_number():
    parsed = parse_vllm_args(["--data-parallel-start-rank", "$START_RANK",
                              "--max-model-len", "${MAX_LEN}", "Qwen/Qwen3-0.6B"])
    assert not [d for d in parsed.diagnostics if d.severity == "error"], parsed.diagnostics
    assert "max_model_len" not in parsed.values


def test_a_value_on_a_valueless_flag_is_an_error_only_where_every_possible_version_exits():
    # kubeai llama-3.1-405b mi300x: `--enable-chunked-prefill=false` with an image whose tag
    # names no vLLM version: 0.6's StoreBoolean took the value, the BooleanOptionalAction of
    # later versions exits; said as an error (the pod will not start) only when the version
    # is known to exit
    args = ["Qwen/Qwen3-0.6B", "--enable-chunked-prefill=false"]
    unknown = parse_vllm_args(args, strict=True)
    (d,) = unknown.diagnostics
    assert d.severity == "warning" and "0.6.0" in d.message and "take the value" in d.message
    assert unknown.values["enable_chunked_prefill"] is False
    known = parse_vllm_args(args, version=VllmVersion.parse("0.12.0"), strict=True)
    assert [x.severity for x in known.diagnostics] == ["error"]
    assert not parse_vllm_args(args, version=VllmVersion.parse("0.6.0"), strict=True).diagnostics

# ------------------------------------------------------------------ api_server.py run as a script
OPEA_ROCM_ARGS = ["--swap-space", "16", "--disable-log-requests", "--dtype", "float16",
                  "--num-scheduler-steps", "1", "--distributed-executor-backend", "mp",
                  "--model", "meta-llama/Meta-Llama-3-8B-Instruct", "--host", "0.0.0.0",
                  "--port", "2080", "--download-dir", "/data"]


def test_a_vendor_images_copy_of_the_api_server_runs_as_a_script():
    """opea/vllm-rocm copies vLLM's api_server.py to /workspace/api_server.py and runs it as a
    script (GenAIComps Dockerfile.amd_gpu); OPEA's charts write that command: it is vLLM's
    OpenAI server, read like `python3 -m vllm.entrypoints.openai.api_server`."""
    c = {"image": "opea/vllm-rocm:latest", "command": ["python3", "/workspace/api_server.py"],
         "args": OPEA_ROCM_ARGS, "resources": {"limits": {"amd.com/gpu": "1"}}}
    w = read_workloads(pod(c))[0]
    assert w.settings is not None, msgs(w, "warning")
    assert w.model == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert w.settings.swap_space_gib == 16 and str(w.settings.dtype) == "float16"
    assert w.device == "rocm"
    assert any("api_server.py" in m for m in msgs(w, "info"))
    # args only: the image's ENTRYPOINT is that script
    w = read_workloads(pod({**c, "command": None}))[0]
    assert w.settings is not None and w.model == "meta-llama/Meta-Llama-3-8B-Instruct"


def test_the_api_server_file_of_an_installed_vllm_runs_as_a_script():
    """`python3 .../vllm/entrypoints/openai/api_server.py` runs the module's file: any image."""
    w = read_workloads(pod({"image": "example.org/llm:1", "command": [
        "python3", "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py",
        "--model", "Qwen/Qwen3-0.6B", "--max-model-len", "4096"]}))[0]
    assert w.settings is not None and w.model == "Qwen/Qwen3-0.6B"
    assert w.settings.max_model_len == 4096


def test_a_script_named_api_server_elsewhere_is_not_vllm():
    """Another project's api_server.py (not at the path a known image copies vLLM's to, not in a
    vllm/entrypoints directory) is no vLLM server."""
    for image in ("example.org/chat:1", "opea/vllm-rocm:latest"):
        ws = read_workloads(pod({"image": image, "command": [
            "python3", "/app/api_server.py", "--model", "Qwen/Qwen3-0.6B"]}))
        assert all(w.settings is None for w in ws)


def test_api_server_script_keeps_python_options_and_wrappers():
    from vllm_sizer.workloads.execution import as_api_server_module

    argv = ["env", "A=1", "python3", "-u", "-W", "ignore", "/workspace/api_server.py", "--model", "m"]
    assert as_api_server_module(argv, "/workspace/api_server.py") == [
        "env", "A=1", "python3", "-u", "-W", "ignore", "-m", "vllm.entrypoints.openai.api_server",
        "--model", "m"]
    assert as_api_server_module(argv) is None  # no copy known: an unknown script
    assert as_api_server_module(["python3", "-c", "x", "/workspace/api_server.py"],
                                "/workspace/api_server.py") is None
