"""Flags and variables that change a GPU pod's host memory, read from command lines into
EngineSettings and into the host terms (estimator/host_processes.py; the vLLM and LMCache source
lines are in docs/research/gpu-memory.md §4):
--api-server-count, --headless, --load-format, --kv-offloading-size / --kv-offloading-backend,
--kv-transfer-config (JSON, dotted keys, MultiConnector, kv_connector_extra_config sizes),
LMCACHE_MAX_LOCAL_CPU_SIZE, LMCACHE_LOCAL_CPU, LMCACHE_CONFIG_FILE, VLLM_USE_SIMPLE_KV_OFFLOAD.
Published command lines come from tests/data/published (index.yaml gives their sources) or are
quoted with their repo@commit:path."""

from __future__ import annotations

import json

import pytest

from tests.published import corpus
from vllm_sizer.estimator import EngineSettings, ModelGeometry, build_report, model_config
from vllm_sizer.estimator.host_processes import process_counts
from vllm_sizer.estimator.units import GiB
from vllm_sizer.estimator.versions import VllmVersion
from vllm_sizer.workloads.reader import read_workloads
from vllm_sizer.workloads.vllm_args import env_settings, parse_vllm_args

LLAMA = ModelGeometry.from_hf_config(model_config("meta-llama/Llama-3.1-8B-Instruct"))
QWEN32 = ModelGeometry.from_hf_config(model_config("Qwen/Qwen3-32B"))
MIXTRAL = ModelGeometry.from_hf_config(model_config("mistralai/Mixtral-8x7B-Instruct-v0.1"))


def pod(container: dict, volumes: list | None = None) -> dict:
    spec: dict = {"containers": [{"name": "vllm", **container}]}
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
            "spec": spec}


def read(image: str, *argv: str, env: dict | None = None, **container):
    c = {"image": image, "command": ["vllm", "serve", *argv], **container}
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return read_workloads(pod(c))[0]


def terms(settings: EngineSettings, g: ModelGeometry = LLAMA) -> dict[str, int]:
    rep = build_report(g, settings)
    return {t.name: t.bytes for t in rep.terms if t.enters != "not-counted"}


def notes(settings: EngineSettings, g: ModelGeometry = LLAMA) -> str:
    return " | ".join(build_report(g, settings).notes)


def published(file: str) -> list:
    docs = corpus.documents(file)
    cluster = corpus.build_context(docs)
    out = []
    for d in docs:
        if d.get("kind") in corpus.CONTEXT_KINDS:
            continue
        out += read_workloads(d, cluster.read_context((d.get("metadata") or {}).get("namespace")))
    return out


# ------------------------------------------------------------------ published manifests
def test_production_stack_lmcache_cpu_offloading():
    """vllm-project/production-stack tutorials/assets/values-05-cpu-offloading.yaml (helm
    render): --kv-transfer-config '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}',
    LMCACHE_LOCAL_CPU=True, LMCACHE_MAX_LOCAL_CPU_SIZE=20."""
    (w,) = published("production-stack/helm-05-cpu-offloading.yaml")
    s = w.settings
    assert s.kv_connector == "LMCacheConnectorV1"
    assert s.lmcache_local_cpu_gb == 20.0 and s.lmcache_local_cpu is True
    t = terms(s)
    assert t["lmcache_cpu_buffer"] == 20 * GiB  # one worker (TP 1), exact size
    without = terms(s.model_copy(update={"kv_connector": None}))
    assert "lmcache_cpu_buffer" not in without
    assert sum(t.values()) - sum(without.values()) == 20 * GiB


@pytest.mark.parametrize("file", ["llm-d/modelservice-output-pd.yaml",
                                  "kserve/llmisvc-pd-qwen2-7b-gpu.yaml",
                                  "aibrix/quickstart-pd-stormservice.yaml"])
def test_nixl_prefill_decode_reads_the_connector_and_adds_no_host_buffer(file):
    """llm-d's modelservice P/D output, KServe's P/D sample (`--kv_transfer_config '{...}'` in
    VLLM_ADDITIONAL_ARGS, which KServe's template evals) and AIBrix's StormService run
    NixlConnector: KV moves GPU to GPU, no host buffer."""
    ws = [w for w in published(file) if w.settings is not None]
    assert ws
    for w in ws:
        assert w.settings.kv_connector == "NixlConnector"
        assert not {"kv_offload_buffer", "lmcache_cpu_buffer"} & set(terms(w.settings))


def test_kubeai_load_format_bitsandbytes():
    """kubeai phi-4-bnb-4bit-l4: `--load_format=bitsandbytes`."""
    (w,) = published("kubeai/phi-4-bnb-4bit-l4.yaml")
    assert w.settings.load_format == "bitsandbytes"


# llm-d/llm-d guides/tiered-prefix-cache/cpu/modelserver/gpu/vllm: the base patch
# (@04d57ad23358ce628af0736a34a497545f937f4a base/patch-vllm.yaml: vllm/vllm-openai:v0.19.1,
# `vllm serve`, limit 400Gi, a memory-backed /dev/shm) and the connector patches
# (@34272a6415a3535960d205ff22d7dbac7e8c3e36 offloading-connector/base/patch-vllm.yaml and
# lmcache-connector/base/patch-vllm.yaml: image llm-d-cuda:v0.5.1, limit 500Gi,
# LMCACHE_MAX_LOCAL_CPU_SIZE 200.0). The two stored versions come from different commits.
OFFLOADING_ARGS = [
    "Qwen/Qwen3-32B", "--tensor-parallel-size=2", "--kv-transfer-config",
    '{"kv_connector":"OffloadingConnector","kv_role":"kv_both",'
    '"kv_connector_extra_config":{"cpu_bytes_to_use":214748364800}}',
    "--shutdown-timeout=30",
]
LMCACHE_ARGS = [
    "Qwen/Qwen3-32B", "--tensor-parallel-size=2", "--kv-transfer-config",
    '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}', "--max-num-seq", "1024",
    "--gpu-memory-utilization", "0.8", "--shutdown-timeout=30",
]
SHM = [{"name": "shm", "emptyDir": {"medium": "Memory"}}]
MOUNT = {"volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}


def _llmd(image: str, args: list[str], limit: str, env: dict | None = None):
    c = {"image": image, "command": ["vllm", "serve"], "args": args, **MOUNT,
         "resources": {"limits": {"memory": limit, "nvidia.com/gpu": 2}}}
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return read_workloads(pod(c, SHM))[0]


def test_llmd_tiered_prefix_cache_offloading_connector():
    w = _llmd("vllm/vllm-openai:v0.19.1", OFFLOADING_ARGS, "400Gi")
    s = w.settings
    assert (s.kv_connector, s.kv_connector_cpu_bytes) == ("OffloadingConnector", 200 * GiB)
    t = terms(s, QWEN32)
    # 100 GiB per rank over 64 KV tensors: 1.5625 GiB each, 2 GiB pinned
    assert t["kv_offload_buffer"] == 2 * 64 * 2 * GiB
    assert build_report(QWEN32, s).total_memory_bytes <= 400 * GiB  # the published limit


def test_llmd_tiered_prefix_cache_lmcache_connector_fits_its_published_limit():
    """200 GiB per worker, TP 2, limit 500Gi: LMCache pins its buffer at the exact size (a
    power-of-two rounding would need 512 GiB for the buffers alone)."""
    w = _llmd("ghcr.io/llm-d/llm-d-cuda:v0.5.1", LMCACHE_ARGS, "500Gi",
              env={"LMCACHE_MAX_LOCAL_CPU_SIZE": "200.0", "PYTHONHASHSEED": "123"})
    s = w.settings
    assert (s.kv_connector, s.lmcache_local_cpu_gb) == ("LMCacheConnectorV1", 200.0)
    t = terms(s, QWEN32)
    assert t["lmcache_cpu_buffer"] == 2 * 200 * GiB
    assert 400 * GiB < build_report(QWEN32, s).total_memory_bytes <= 500 * GiB


# ------------------------------------------------------------------ one test per flag
def test_api_server_count_flag_and_its_versions():
    w = read("vllm/vllm-openai:v0.19.0", "m", "--api-server-count", "4")
    assert w.settings.api_server_count == 4
    assert read("vllm/vllm-openai:v0.19.0", "m", "-asc", "2").settings.api_server_count == 2
    one = terms(EngineSettings(device="cuda", vllm_version="0.19.0"))
    four = terms(w.settings.model_copy(update={"model": None}))
    # 3 more API servers and the launcher that starts them, 1 GiB each (assumed)
    assert four["runtime_overhead"] - one["runtime_overhead"] == 4 * GiB
    old = read("vllm/vllm-openai:v0.9.0", "m", "--api-server-count", "4")
    assert any("--api-server-count" in str(d) and d.severity == "error" for d in old.diagnostics)


def test_headless_and_api_server_count_zero_have_no_api_server():
    w = read("vllm/vllm-openai:v0.19.0", "m", "--headless", "-dp", "2")
    assert w.settings.headless
    p = process_counts(VllmVersion.parse("0.19.0"), data_parallel=2, local_engines=2,
                       api_servers=None, headless=True)
    assert (p.api_servers, p.launcher, p.engine_cores) == (0, True, 2)
    zero = read("vllm/vllm-openai:v0.19.0", "m", "--api-server-count", "0")
    assert zero.settings.api_server_count == 0


def test_api_server_module_runs_one_api_server():
    c = {"image": "vllm/vllm-openai:v0.19.0",
         "command": ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m",
                     "--api-server-count", "4"]}
    w = read_workloads(pod(c))[0]
    assert w.settings.api_server_count == 1
    assert any("api_server module runs one API server" in str(d) for d in w.diagnostics)


def test_load_format_flag():
    w = read("vllm/vllm-openai:v0.11.0", "m", "--load-format", "gguf")
    assert w.settings.load_format == "gguf"
    s = w.settings.model_copy(update={"model": None})
    assert terms(s)["loading_anonymous"] == build_report(LLAMA, s).weights_bytes
    dummy = build_report(LLAMA, s.model_copy(update={"load_format": "dummy"}))
    assert next(t.bytes for t in dummy.terms if t.name == "page_cache") == 0


@pytest.mark.parametrize("version,backend,expect", [
    # 0.11.1-0.13: nothing without a backend; native fails at startup (num_cpu_blocks 0)
    ("0.11.1", None, "no-offload"),
    ("0.13.0", "native", "fails"),
    ("0.13.0", "lmcache", ("lmcache_cpu_buffer", 2 * 40 * GiB)),
    # 0.14-0.26: per rank 40 GiB over 32 pinned tensors of 1.25 GiB → 2 GiB each
    ("0.19.0", None, ("kv_offload_buffer", 2 * 32 * 2 * GiB)),
    ("0.19.0", "lmcache", ("lmcache_cpu_buffer", 2 * 40 * GiB)),
    # 0.23+: lmcache backend → LMCacheMPConnector, a separate server process
    ("0.23.0", "lmcache", "mp"),
    # 0.27+: one /dev/shm region per engine, exact size
    ("0.27.0", None, ("kv_offload_buffer", 80 * GiB)),
])
def test_kv_offloading_size_and_backend_per_version(version, backend, expect):
    argv = ["m", "-tp", "2", "--kv-offloading-size", "80"]
    if backend:
        argv += ["--kv-offloading-backend", backend]
    w = read(f"vllm/vllm-openai:v{version}", *argv)
    assert w.settings.kv_offloading_size_gib == 80.0
    assert w.settings.kv_offloading_backend == backend
    s = w.settings.model_copy(update={"model": None})
    t, n = terms(s), notes(s)
    if expect == "no-offload":
        assert "kv_offload_buffer" not in t and "need both" in n
    elif expect == "fails":
        assert "kv_offload_buffer" not in t and "does not start" in n
    elif expect == "mp":
        assert not {"kv_offload_buffer", "lmcache_cpu_buffer"} & set(t)
        assert "LMCacheMPConnector" in n
    else:
        name, want = expect
        assert t[name] == want, (name, t.get(name) / GiB)


def test_kv_offloading_flags_not_in_older_parsers():
    w = read("vllm/vllm-openai:v0.11.0", "m", "--kv-offloading-size", "10")
    assert any(d.severity == "error" and "--kv-offloading-size" in str(d) for d in w.diagnostics)
    bad = read("vllm/vllm-openai:v0.19.0", "m", "--kv-offloading-backend", "disk")
    assert bad.settings.kv_offloading_backend is None
    assert any("invalid choice" in str(d) for d in bad.diagnostics)
    units = read("vllm/vllm-openai:v0.23.0", "m", "--kv-offloading-size", "16GB")
    assert units.settings.kv_offloading_size_gib is None  # argparse float: vLLM exits


def test_dev_shm_needed_for_the_offload_region_from_0_27():
    s = read("vllm/vllm-openai:v0.27.0", "m", "--kv-offloading-size", "8").settings
    assert "/dev/shm" in notes(s.model_copy(update={"model": None}))
    mounted = s.model_copy(update={"model": None, "dev_shm_memory": True})
    assert "memory-backed /dev/shm" not in notes(mounted)


def test_kv_transfer_config_forms():
    v19 = VllmVersion.parse("0.19.0")
    p = parse_vllm_args(["m", "--kv-transfer-config",
                         json.dumps({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                                     "kv_connector_extra_config": {"cpu_bytes_to_use": 10**10}})],
                        version=v19, strict=True)
    assert p.values["kv_connector_cpu_bytes"] == 10**10
    # dotted keys: vLLM builds the JSON from them (and it replaces a JSON value given earlier)
    p = parse_vllm_args(["m", "--kv-transfer-config", '{"kv_connector":"NixlConnector"}',
                         "--kv-transfer-config.kv_connector", "OffloadingConnector",
                         "--kv-transfer-config.kv_connector_extra_config.cpu_bytes_to_use",
                         "1000"], version=v19, strict=True)
    assert (p.values["kv_connector"], p.values["kv_connector_cpu_bytes"]) == (
        "OffloadingConnector", 1000)
    # MultiConnector: read as vLLM reads it, sized by the offloading connector inside it
    multi = {"kv_connector": "MultiConnector", "kv_connector_extra_config": {"connectors": [
        {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
        {"kv_connector": "OffloadingConnector", "kv_connector_extra_config": {
            "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 94489280512}}]}}
    p = parse_vllm_args(["m", "--kv-transfer-config", json.dumps(multi)], version=v19,
                        strict=True)
    assert p.values["kv_connector"] == "MultiConnector"
    assert p.values["kv_host_connector"] == "OffloadingConnector"
    assert p.values["kv_connector_spec"] == "TieringOffloadingSpec"
    assert p.values["kv_connector_cpu_bytes"] == 94489280512
    # human-readable numbers inside the JSON: vLLM 0.20+ only
    raw = '{"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"cpu_bytes_to_use":80G}}'
    new = parse_vllm_args(["m", "--kv-transfer-config", raw],
                          version=VllmVersion.parse("0.20.0"), strict=True)
    assert new.values["kv_connector_cpu_bytes"] == 80 * GiB
    old = parse_vllm_args(["m", "--kv-transfer-config", raw], version=v19, strict=True)
    assert "kv_connector" not in old.values
    assert any(d.severity == "error" for d in old.diagnostics)
    # LMCache's own keys in the extra config win over its variables
    lm = {"kv_connector": "LMCacheConnectorV1", "kv_connector_extra_config": {
        "lmcache.max_local_cpu_size": 12, "lmcache.local_cpu": False}}
    w = read("vllm/vllm-openai:v0.19.0", "m", "--kv-transfer-config", json.dumps(lm),
             env={"LMCACHE_MAX_LOCAL_CPU_SIZE": "20"})
    assert (w.settings.lmcache_local_cpu_gb, w.settings.lmcache_local_cpu) == (12.0, False)
    n = notes(w.settings.model_copy(update={"model": None}))
    assert "does not remove LMCache's CPU buffer" in n


def test_offloading_connector_num_cpu_blocks_up_to_0_13():
    """llm-d's benchmark of native offloading (0.11-era): `{"kv_connector":
    "OffloadingConnector", "kv_connector_extra_config": {"num_cpu_blocks": 10000}}`."""
    cfg = ('{"kv_connector":"OffloadingConnector","kv_role":"kv_both",'
           '"kv_connector_extra_config":{"num_cpu_blocks":10000}}')
    w = read("vllm/vllm-openai:v0.11.0", "m", "-tp", "2", "--kv-transfer-config", cfg)
    s = w.settings.model_copy(update={"model": None})
    assert s.kv_connector_cpu_blocks == 10000
    # 10000 blocks × 16 tokens × 64 KiB per token per rank (32 layers × 4 KV heads × 128 × 2 × 2 B)
    per_rank = 10000 * 16 * 32 * 4 * 128 * 2 * 2
    assert terms(s)["kv_offload_buffer"] == 2 * 32 * 2 ** (per_rank // 32 - 1).bit_length()
    later = s.model_copy(update={"vllm_version": "0.19.0"})
    assert "kv_offload_buffer" not in terms(later) and "cpu_bytes_to_use" in notes(later)


def test_simple_kv_offload_variable():
    w = read("vllm/vllm-openai:v0.19.0", "m", "-tp", "2", "--kv-offloading-size", "80",
             env={"VLLM_USE_SIMPLE_KV_OFFLOAD": "1"})
    assert w.settings.simple_kv_offload is True
    s = w.settings.model_copy(update={"model": None})
    assert terms(s)["kv_offload_buffer"] == 80 * GiB  # cudaHostRegister: exact
    off = s.model_copy(update={"enable_prefix_caching": False})
    assert "kv_offload_buffer" not in terms(off)
    old = s.model_copy(update={"vllm_version": "0.18.0"})  # no simple connector before 0.19
    assert terms(old)["kv_offload_buffer"] == 2 * 32 * 2 * GiB
    _, diags = env_settings({"VLLM_USE_SIMPLE_KV_OFFLOAD": "yes"})
    assert diags and diags[0].severity == "error"


def test_lmcache_variables():
    values, diags = env_settings({"LMCACHE_MAX_LOCAL_CPU_SIZE": "20", "LMCACHE_LOCAL_CPU": "True",
                                  "LMCACHE_CONFIG_FILE": "/etc/lmcache/config.yaml"})
    assert values == {"lmcache_local_cpu_gb": 20.0, "lmcache_local_cpu": True}
    assert any(d.flag == "LMCACHE_CONFIG_FILE" for d in diags)
    s = EngineSettings(device="cuda", vllm_version="0.19.0", kv_connector="LMCacheConnectorV1")
    assert terms(s)["lmcache_cpu_buffer"] == 5 * GiB  # LMCache's default
    assert "not given" in notes(s)


# ------------------------------------------------------------------ the process model
@pytest.mark.parametrize("version,kw,want", [
    # (API servers, launcher, engine cores, coordinator)
    ("0.11.0", dict(data_parallel=2, local_engines=2), (1, False, 2, True)),
    ("0.19.0", dict(data_parallel=2, local_engines=2), (2, True, 2, True)),
    ("0.14.0", dict(data_parallel=4, local_engines=4), (1, False, 4, True)),
    ("0.15.0", dict(data_parallel=4, local_engines=4), (4, True, 4, True)),
    # external LB, rank 1: one engine, one API server, the coordinator is on rank 0
    ("0.19.0", dict(data_parallel=4, local_engines=1, external_lb=True, first_rank=False),
     (1, False, 1, False)),
    # external LB rank 0: dense models need no coordinator from 0.14, MoE models do
    ("0.19.0", dict(data_parallel=4, local_engines=1, external_lb=True), (1, False, 1, False)),
    ("0.19.0", dict(data_parallel=4, local_engines=1, external_lb=True, moe=True),
     (1, False, 1, True)),
    ("0.11.1", dict(data_parallel=4, local_engines=1, external_lb=True), (1, False, 1, True)),
    # hybrid LB: the node's local engines
    ("0.19.0", dict(data_parallel=4, local_engines=2, hybrid_lb=True), (2, True, 2, True)),
    ("0.8.5", dict(data_parallel=2, local_engines=2), (1, False, 2, False)),
])
def test_process_counts(version, kw, want):
    p = process_counts(VllmVersion.parse(version), api_servers=None, **kw)
    assert (p.api_servers, p.launcher, p.engine_cores, p.coordinator) == want


def test_data_parallel_api_servers_in_the_host_terms_and_mm_caches():
    """-dp 2 at 0.19: 2 API servers (+ launcher), 2 engine cores, the coordinator: 4 processes
    beyond the measured pair; the multimodal cache sits in each API server and engine core."""
    base = EngineSettings(device="cuda", vllm_version="0.19.0")
    dp = base.model_copy(update={"data_parallel_size": 2})
    assert terms(dp)["runtime_overhead"] - terms(base)["runtime_overhead"] == 4 * GiB
    g = ModelGeometry.from_hf_config(model_config("google/gemma-3-4b-it"))
    assert terms(dp, g)["mm_processor_cache"] == 4 * 4 * GiB
    assert terms(dp.model_copy(update={"api_server_count": 1}), g)["mm_processor_cache"] == 3 * 4 * GiB
    w = read("vllm/vllm-openai:v0.19.0", "m", "-dp", "4", "--data-parallel-rank", "1")
    p = terms(w.settings.model_copy(update={"model": None}))
    assert p["runtime_overhead"] == terms(base)["runtime_overhead"]  # rank 1: its own pair only
    hybrid = read("vllm/vllm-openai:v0.19.0", "m", "-dp", "4", "--data-parallel-size-local", "2",
                  "--data-parallel-start-rank", "2").settings
    assert hybrid.data_parallel_start_rank == 2
    # 2 API servers + launcher + 2 engines, no coordinator (not the first node)
    assert terms(hybrid.model_copy(update={"model": None}))["runtime_overhead"] == (
        terms(base)["runtime_overhead"] + 3 * GiB)
    moe = terms(EngineSettings(device="cuda", vllm_version="0.19.0", data_parallel_size=2,
                               data_parallel_external_lb=True, data_parallel_size_local=1),
                MIXTRAL)
    assert moe["runtime_overhead"] == terms(base, MIXTRAL)["runtime_overhead"] + GiB


def test_a_multiconnector_is_read_as_written_and_sized_by_its_offloading_connector():
    """KServe's Nemotron P/D sample wraps NixlConnector and an OffloadingConnector of 200 GiB
    in a MultiConnector: kv_connector stays MultiConnector (as vLLM reads it) and the host
    buffer is the inner connector's, as if it were given alone."""
    multi = json.dumps({"kv_connector": "MultiConnector", "kv_role": "kv_both",
                        "kv_connector_extra_config": {"connectors": [
                            {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"},
                            {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                             "kv_connector_extra_config": {"cpu_bytes_to_use": 200 * GiB}}]}})
    alone = json.dumps({"kv_connector": "OffloadingConnector",
                        "kv_connector_extra_config": {"cpu_bytes_to_use": 200 * GiB}})
    w = _llmd("vllm/vllm-openai:v0.19.1", ["Qwen/Qwen3-32B", "-tp", "2",
                                           "--kv-transfer-config", multi], "400Gi")
    w_alone = _llmd("vllm/vllm-openai:v0.19.1", ["Qwen/Qwen3-32B", "-tp", "2",
                                                 "--kv-transfer-config", alone], "400Gi")
    assert w.settings.kv_connector == "MultiConnector"
    assert w.settings.kv_host_connector == "OffloadingConnector"
    assert terms(w.settings, QWEN32)["kv_offload_buffer"] == terms(
        w_alone.settings, QWEN32)["kv_offload_buffer"] > 0
