"""The GPU terms against published vLLM measurements (vllm_sizer/estimator/data/gpu_evidence.json).

Every test runs on the fit rows and, separately, on the validation rows (never used to fit).
"""

from __future__ import annotations

import pytest

from vllm_sizer.estimator import EngineSettings, build_report, model_config
from vllm_sizer.estimator import gpu_device as D
from vllm_sizer.estimator import gpu_evidence as E
from vllm_sizer.estimator.geometry import ModelGeometry
from vllm_sizer.estimator.host_processes import next_pow2, pinned_bytes
from vllm_sizer.estimator.inverse import gpu_limits_within
from vllm_sizer.estimator.units import DTYPE_BYTES, GiB
from vllm_sizer.estimator.versions import VllmVersion

SPLITS = ("fit", "validation")
# Rows whose logged weights the geometry does not reach, each with the reason (none since the
# rotary cos/sin caches are counted: gemma-3-4b-it was 6.8 % under without them).
KNOWN_WEIGHT_GAPS: dict[str, str] = {}
# Rows whose activation peak the mechanism does not reach, each with the reason (kept visible:
# the test below fails if this list and the data disagree).
KNOWN_ACTIVATION_GAPS: dict[str, str] = {}


def _rows(split: str, need_model: bool = True) -> list[dict]:
    return [r for r in E.device_rows(split) if r["catalog_model"] or not need_model]


def _terms(r: dict) -> dict[str, float]:
    g = D.served_geometry(E.row_geometry(r), r.get("runtime_quantization"))
    v = VllmVersion.parse(r["vllm_version"])
    b = DTYPE_BYTES[r["dtype"]]
    rank = r.get("logged_rank", "first")
    return {
        "weights": D.weights_per_rank(g, b, r["tp"], r["pp"], rank) / GiB,
        "activation": D.activation_peak(g, v, b, r["max_num_batched_tokens"], r["max_num_seqs"],
                                        r["tp"], r["pp"], rank) / GiB,
        "non_torch": D.non_torch_bytes(v, r["tp"])[0] / GiB,
    }


def test_row_counts_and_sources():
    dev, host = E.device_rows(), E.host_rows()
    assert len(dev) >= 30 and len(host) >= 10
    for split in SPLITS:
        assert sum(r["split"] == split for r in dev) >= 10
    assert 0.25 <= sum(r["split"] == "validation" for r in dev) / len(dev) <= 0.4
    for r in dev + host:
        assert r["source"]["repo"] and r["source"]["quote"] and r["split"] in SPLITS, r["id"]
        assert r["source"].get("commit") or r["source"].get("ref"), r["id"]


def test_fitted_block_is_a_fresh_fit_of_fit_rows_only():
    stored = E.load()["fitted"]
    assert E.fit_constants() == stored
    # changing a validation row changes nothing
    rows = [dict(r) for r in E.device_rows()]
    for r in rows:
        if r["split"] == "validation":
            r["measured"] = dict(r["measured"], activation_gib=99.0, non_torch_gib=99.0)
    assert E.fit_constants(rows) == stored


@pytest.mark.parametrize("split", SPLITS)
def test_profile_identity_of_the_data(split):
    """weights + non-torch + activation + KV = total × utilization, as vLLM logs it."""
    checked = 0
    for r in E.device_rows(split):
        m = r["measured"]
        if m.get("kv_gib") is None or r["pp"] > 1:
            continue  # with PP the logged KV is the minimum over ranks, the rest rank 0's
        lhs = m["weights_gib"] + m["non_torch_gib"] + m["activation_gib"] + m["kv_gib"]
        assert lhs == pytest.approx(r["gpu_total_gib"] * r["gpu_memory_utilization"], abs=0.06), r["id"]
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("split", SPLITS)
def test_weights_within_5_percent(split):
    ratios = []
    for r in _rows(split):
        est = _terms(r)["weights"]
        ratios.append(est / r["measured"]["weights_gib"])
        if r["id"] in KNOWN_WEIGHT_GAPS:
            assert abs(ratios[-1] - 1) > 0.05  # still a gap: when it closes, drop it
            continue
        assert abs(ratios[-1] - 1) <= 0.05, (r["id"], est, r["measured"]["weights_gib"])
    assert ratios


@pytest.mark.parametrize("split", SPLITS)
def test_activation_between_1_and_1_6x(split):
    seen_gaps = set()
    for r in _rows(split):
        ratio = _terms(r)["activation"] / r["measured"]["activation_gib"]
        if r["id"] in KNOWN_ACTIVATION_GAPS:
            seen_gaps.add(r["id"])
            assert ratio < 1.0  # still a gap: when it closes, drop it from the list
            continue
        assert 1.0 - 1e-6 <= ratio <= 1.6, (r["id"], ratio)
    assert seen_gaps == {i for i in KNOWN_ACTIVATION_GAPS
                         if any(x["id"] == i and x["split"] == split for x in E.device_rows())}


@pytest.mark.parametrize("split", SPLITS)
def test_non_torch_never_under(split):
    rows = _rows(split, need_model=False)
    assert rows
    for r in rows:
        est = D.non_torch_bytes(VllmVersion.parse(r["vllm_version"]), r["tp"])[0] / GiB
        assert est >= r["measured"]["non_torch_gib"] - 1e-9, (r["id"], est)


def test_activation_does_not_shrink_with_tp_or_grow_with_max_model_len():
    g = ModelGeometry.from_hf_config(model_config("meta-llama/Llama-3.1-8B-Instruct"))
    v = VllmVersion.parse("0.19.0")
    a = [D.activation_peak(g, v, 2, 8192, 1024, tp, 1) for tp in (1, 2, 4)]
    assert a[0] == a[1] == a[2]  # sampler-dominated: the vocab is gathered on every rank
    assert D.activation_peak(g, v, 2, 8192, 256, 1, 1) < a[0]  # fewer sampled rows, less
    assert D.activation_peak(g, VllmVersion.parse("0.16.0"), 2, 8192, 1024, 1, 1) > 2 * a[0]


@pytest.mark.parametrize("split", SPLITS)
def test_estimator_reproduces_the_profile_identity(split):
    """The report's own device terms satisfy vLLM's identity, and its KV cache is within
    the KV cache is what is left of the budget."""
    checked = 0
    for r in _rows(split):
        if r["measured"].get("kv_gib") is None or r["pp"] != 1:
            continue
        g = E.row_geometry(r)
        s = EngineSettings(device="cuda", vllm_version=r["vllm_version"], dtype=r["dtype"],
                           max_model_len=r["max_model_len"], max_num_seqs=r["max_num_seqs"],
                           max_num_batched_tokens=r["max_num_batched_tokens"],
                           tensor_parallel_size=r["tp"], quantization=r.get("runtime_quantization"),
                           gpu_memory_utilization=r["gpu_memory_utilization"],
                           kv_cache_dtype="auto" if r["kv_cache_dtype"] == "auto" else "fp8",
                           gpu_memory_bytes=int(r["gpu_total_gib"] * GiB))
        rep = build_report(g, s)
        t = {x.name: x.bytes for x in rep.terms}
        lhs = (t["device_weights"] + t["device_lora_buffers"] + t["device_non_torch"]
               + t["device_activations"] + t["device_kv_cache"])
        inside = t["device_cuda_graphs"] if VllmVersion.parse(r["vllm_version"]).at_least(0, 20) else 0
        assert lhs + inside == pytest.approx(r["gpu_total_gib"] * GiB * r["gpu_memory_utilization"],
                                             abs=2)
        checked += 1
    assert checked >= 5


def test_gpu_limits_inverse():
    g = ModelGeometry.from_hf_config(model_config("meta-llama/Llama-3.1-8B-Instruct"))
    s = EngineSettings(device="cuda", vllm_version="0.11.0", gpu_memory_bytes=int(22 * GiB),
                       max_model_len=131072)
    rep = build_report(g, s)
    assert rep.device_fits is False  # 16 GiB of KV needed, ~4 GiB left even at the lower bound
    assert any(n.startswith("GPU does not fit") for n in rep.notes)
    lim = gpu_limits_within(g, s)
    assert lim["max_model_len"] is not None and 1000 < lim["max_model_len"] < 131072
    per_tok = D.kv_bytes_per_token_per_rank(g, 2, 1, 1)
    ok = build_report(g, s.model_copy(update={"max_model_len": lim["max_model_len"]}))
    assert ok.device_fits is True and not any(n.startswith("GPU may not fit") for n in ok.notes)
    bad = build_report(g, s.model_copy(update={"max_model_len": lim["max_model_len"] + 32}))
    assert bad.device_fits is not True
    kv = next(x.bytes for x in ok.terms if x.name == "device_kv_cache")
    assert kv >= per_tok * lim["max_model_len"] > kv - 32 * per_tok
    hint = [n for n in rep.notes if n.startswith("fits with --max-model-len")]
    assert hint and int(hint[0].split()[3].rstrip(",")) == lim["max_model_len"]
    at = gpu_limits_within(g, s.model_copy(update={"max_model_len": 32768}))
    assert at["max_num_seqs"] is not None and at["max_num_seqs"] >= 1
    assert build_report(g, s.model_copy(update={"max_model_len": 32768,
                                                "max_num_seqs": at["max_num_seqs"]})).device_fits


def test_uncertain_device_fit_is_not_a_denial():
    """Between the lower bound and the upper estimate the verdict is None with a note: enforce
    mode denies only what surely does not fit."""
    g = ModelGeometry.from_hf_config(model_config("meta-llama/Llama-3.1-8B-Instruct"))
    s = EngineSettings(device="cuda", vllm_version="0.8.5", gpu_memory_bytes=int(22.07 * GiB),
                       max_model_len=32768)
    rep = build_report(g, s)
    assert rep.device_fits is None
    assert any(n.startswith("GPU may not fit") for n in rep.notes)
    assert rep.device_max_model_len and rep.device_max_model_len < 32768


# ------------------------------------------------------------------------------------- host

def _host_report(row: dict):
    g = ModelGeometry.from_hf_config(model_config(row["model"]))
    kw = dict(row["settings"])
    return build_report(g, EngineSettings(
        device="cuda", vllm_version=row["vllm_version"], tensor_parallel_size=row["tp"],
        gpu_memory_bytes=int(row["gpu_memory_gib"] * GiB), **kw))


@pytest.mark.parametrize("split", SPLITS)
def test_host_never_above_a_working_published_limit(split):
    rows = [r for r in E.host_rows(split) if r["kind"] == "working_limit"]
    assert rows
    for r in rows:
        rep = _host_report(r)
        assert rep.total_memory_bytes <= r["limit_gib"] * GiB, (r["id"], rep.total_gib)
        assert any(t.name == "page_cache" and t.enters == "not-counted" for t in rep.terms)


@pytest.mark.parametrize("split", SPLITS)
def test_host_never_below_a_measured_floor(split):
    g = ModelGeometry.from_hf_config(model_config("meta-llama/Llama-3.1-8B-Instruct"))
    rows = [r for r in E.host_rows(split) if r["kind"] in ("pod_rss_floor", "worker_rss_floor",
                                                           "pinned_alloc", "offload_ratio")]
    assert rows
    for r in rows:
        if r["kind"] == "pod_rss_floor":
            rep = build_report(g, EngineSettings(device="cuda", vllm_version=r["vllm_version"]))
            assert rep.total_memory_bytes >= r["rss_gb"] * 1e9, r["id"]
        elif r["kind"] == "worker_rss_floor":
            rep = build_report(g, EngineSettings(device="cuda", vllm_version="0.19.0",
                                                 tensor_parallel_size=r["tp"],
                                                 kv_offloading_size_gib=r["kv_offloading_size_gib"]))
            t = {x.name: x.bytes for x in rep.terms}
            per_worker = (t["gpu_worker_processes"] + t["kv_offload_buffer"]) / r["tp"]
            assert per_worker >= r["worker_rss_gb"] * 1e9, (r["id"], per_worker / 1e9)
        elif r["kind"] == "pinned_alloc":
            for req, got in r["pairs_gib"]:
                assert pinned_bytes(req * GiB, r["tensors"]) >= got * GiB * 0.995, (r["id"], req)
                assert pinned_bytes(req * GiB, None) >= got * GiB * 0.995
        else:
            rep = build_report(g, EngineSettings(device="cuda", vllm_version="0.19.0",
                                                 cpu_offload_gb=10))
            t = {x.name: x.bytes for x in rep.terms}
            assert t["cpu_offload"] >= r["ratio"] * 10e9, r["id"]


def test_page_cache_not_counted_but_anonymous_loading_is():
    g = ModelGeometry.from_hf_config(model_config("meta-llama/Llama-3.1-8B-Instruct"))
    base = build_report(g, EngineSettings(device="cuda", vllm_version="0.11.0"))
    gguf = build_report(g, EngineSettings(device="cuda", vllm_version="0.11.0", load_format="gguf"))
    assert gguf.total_memory_bytes - base.total_memory_bytes == base.weights_bytes
    assert next_pow2(40 * GiB) == 64 * GiB and next_pow2(32 * GiB) == 32 * GiB


def test_host_topology_grows_with_tp_and_api_servers():
    g = ModelGeometry.from_hf_config(model_config("meta-llama/Llama-3.1-8B-Instruct"))
    one = build_report(g, EngineSettings(device="cuda", vllm_version="0.11.0")).total_memory_bytes
    four = build_report(g, EngineSettings(device="cuda", vllm_version="0.11.0",
                                          tensor_parallel_size=4)).total_memory_bytes
    apis = build_report(g, EngineSettings(device="cuda", vllm_version="0.11.0",
                                          api_server_count=3)).total_memory_bytes
    # three API servers are child processes of a launcher (run_multi_api_server): 3 more
    assert four - one == 3 * 3 * GiB and apis - one == 3 * GiB


def test_kv_offload_backends():
    g = ModelGeometry.from_hf_config(model_config("meta-llama/Llama-3.1-8B-Instruct"))

    def terms(**kw):
        rep = build_report(g, EngineSettings(device="cuda", vllm_version="0.19.0",
                                             tensor_parallel_size=2, **kw))
        return {t.name: t.bytes for t in rep.terms}

    native = terms(kv_offloading_size_gib=80)  # 40 GiB per rank, 32 layers of 1.25 GiB → 2 GiB
    assert native["kv_offload_buffer"] == 2 * 32 * 2 * GiB
    simple = terms(kv_offloading_size_gib=80, simple_kv_offload=True)
    assert simple["kv_offload_buffer"] == 80 * GiB
    lm = terms(kv_offloading_size_gib=80, kv_offloading_backend="lmcache")
    # LMCache ≥ 0.3.3 pins its buffer at the exact size: 40 GiB per worker
    assert "kv_offload_buffer" not in lm and lm["lmcache_cpu_buffer"] == 2 * 40 * GiB
    conn = terms(kv_connector="OffloadingConnector", kv_connector_cpu_bytes=64 * GiB)
    assert conn["kv_offload_buffer"] == 2 * 32 * GiB
    unsized = build_report(g, EngineSettings(device="cuda", vllm_version="0.19.0",
                                             kv_connector="OffloadingConnector"))
    assert any("cpu_bytes_to_use" in n for n in unsized.notes)


@pytest.mark.parametrize("split", SPLITS)
def test_cuda_graph_pool_never_under(split):
    """Graph pools logged from vLLM 0.12 on (earlier rows log the change during capture)."""
    checked = 0
    for r in _rows(split):
        c = r["measured"].get("cuda_graph_gib")
        if not c or c <= 0 or not VllmVersion.parse(r["vllm_version"]).at_least(0, 12):
            continue
        est = D.graph_pool_bytes(E.row_geometry(r), r["pp"]) / GiB
        assert c <= est <= 2.5 * c, (r["id"], est, c)
        checked += 1
    assert checked >= 5


def test_rope_cos_sin_caches_are_device_weights():
    """vLLM registers each distinct rope's cos/sin cache as a device buffer in the model dtype
    and logs it inside "model weights take" (geometry._rope_cache_elements cites the source).
    Gemma 3: a linear-scaled global rope (131072 x 8 rows) and the sliding layers' local rope
    (131072 rows), head_dim 256: 0.5625 GiB in bf16, the 6.8 % the 4B row used to be under."""
    g = ModelGeometry.from_hf_config(model_config("google/gemma-3-4b-it"))
    assert g.rope_cache_elements == (131072 * 8 + 131072) * 256
    assert D.rope_cache_bytes(g, 2) == int(0.5625 * GiB)
    row = next(r for r in E.device_rows() if r["id"].startswith("llmd-0.19.0:google/gemma-3-4b"))
    ratio = _terms(row)["weights"] / row["measured"]["weights_gib"]
    assert 0.99 <= ratio <= 1.01
    without = (D.weights_per_rank(g, 2, 1, 1) - D.rope_cache_bytes(g, 2)) / GiB
    assert without / row["measured"]["weights_gib"] < 0.95  # the gap the caches close
    # not split by TP; no rotary cache for learned positions
    assert D.weights_per_rank(g, 2, 2, 1) - g.weight_bytes(2) / 2 == pytest.approx(
        D.rope_cache_bytes(g, 2), abs=2
    )
    assert ModelGeometry.from_hf_config(model_config("facebook/opt-125m")).rope_cache_elements == 0
    llama = ModelGeometry.from_hf_config(model_config("meta-llama/Llama-3.1-8B-Instruct"))
    assert llama.rope_cache_elements == 131072 * 128  # llama3 rope: max_position rows


def test_siglip_tower_of_gemma3_is_exact():
    """SigLIP (transformers modeling_siglip.py) + Gemma3MultiModalProjector: gemma-3-4b-it has
    4,300,079,472 parameters, keras-hub's 4,299,915,632 + 64 x 2560 (its vocab is 262144, the
    Hub config's 262208); the generic ViT formula was 8 M short."""
    g = ModelGeometry.from_hf_config(model_config("google/gemma-3-4b-it"))
    h, inter, n = 1152, 4304, 27
    tower = (3 * 14 * 14 * h + h + 64 * 64 * h
             + n * (4 * (h * h + h) + 2 * h * inter + inter + h + 4 * h) + 2 * h)
    assert g.vision_parameters == tower + h * 2560 + h
    assert g.parameter_count() == 4_299_915_632 + 64 * 2560
