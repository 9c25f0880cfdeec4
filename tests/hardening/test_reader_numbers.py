"""Numbers no deployment reaches (counts of ranks, adapters, devices; JSON infinities; DRA names)
are said and never sized into an absurd limit or a wrong device."""

from __future__ import annotations


import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.hardening.hostile_objects import (
    IMG,
    deployment,
    internal_errors,
    memory_limits,
    peak_of,
)
from tests.hostile_strategies import HOSTILE
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import read_workloads

GiB = 2**30


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e999", '"1e999"',
                                   "9" * 400 + "G", "9" * 5000])
def test_kv_transfer_numbers_never_overflow(value):
    cfg = ('{"kv_connector":"OffloadingConnector","kv_role":"kv_both",'
           '"kv_connector_extra_config":{"cpu_bytes_to_use": ' + value + "}}")
    # vLLM 0.20 reads human numbers (80G) in JSON flags
    obj = deployment({"image": "vllm/vllm-openai:v0.20.1",
                      "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", "--kv-transfer-config", cfg]})
    ws = read_workloads(obj)
    assert not internal_errors(ws)
    assert any("kv" in d.message.lower() or "JSON" in d.message for d in ws[0].diagnostics)


SANE = 10 * 2**40  # no estimate of a real deployment comes near 10 TiB per container


@pytest.mark.parametrize("flag", ["--tensor-parallel-size", "--pipeline-parallel-size",
                                  "--data-parallel-size", "--data-parallel-size-local",
                                  "--api-server-count", "--max-loras", "--max-cpu-loras",
                                  "--max-lora-rank"])
def test_absurd_counts_are_out_of_range_never_petabytes(flag):
    obj = deployment({"image": IMG, "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", flag,
                                                "1000000000000", "--enable-lora"],
                      "resources": {"limits": {"memory": "8Gi", "nvidia.com/gpu": "1"}}})
    d = review_object(obj)
    assert all(v < SANE for v in memory_limits(d)), memory_limits(d)
    assert any(flag in w and "out of range" in w for w in d.warnings), d.warnings


@HOSTILE
@given(st.sampled_from(["pipelineParallelSize", "tensorParallelSize"]),
       st.one_of(st.integers(-5, 10**13), st.sampled_from(["two", "nan", " 4 ", "1e3"]),
                 st.none(), st.lists(st.integers(), max_size=2), st.booleans()))
def test_kserve_worker_spec_of_any_size_never_gives_an_absurd_limit(key, value):
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "l", "namespace": "a"},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"},
                                             "storageUri": "hf://meta-llama/Llama-3.1-8B-Instruct",
                                             "resources": {"limits": {"memory": "40Gi"}}},
                                   "workerSpec": {"pipelineParallelSize": 2, "tensorParallelSize": 4,
                                                  key: value}}}}
    d = review_object(isvc)
    assert not any("internal error" in w for w in d.warnings)
    assert all(40 * GiB <= v < SANE for v in memory_limits(d)), memory_limits(d)


@pytest.mark.parametrize("count", ["1000000000000", 10**12, "100000"])
def test_absurd_gpu_counts_are_no_device_count(count):
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "l", "namespace": "a"},
            "spec": {"predictor": {"model": {"modelFormat": {"name": "huggingface"},
                                             "storageUri": "hf://Qwen/Qwen3-0.6B",
                                             "resources": {"limits": {"memory": "8Gi",
                                                                      "nvidia.com/gpu": count}}}}}}
    d = review_object(isvc)
    assert all(v < SANE for v in memory_limits(d))
    assert any("not a device count" in w for w in d.warnings)


# ---------------------------------------------------------------- DRA claims
@pytest.mark.parametrize("name,device", [
    ("gpu-output-cache", "cuda"),  # "tpu" inside "output" names no TPU
    ("nvidia-for-intelligence", "cuda"),  # "intel" inside "intelligence" names no Intel
    ("throughput-nvidia", "cuda"),
    ("amd-nvidia-any", "cuda"),  # two vendors: none is taken from the names (said)
    ("gaudi3-claim", "other"),
    ("amdgpu", "rocm"),
])
def test_dra_vendor_words_are_whole_words(name, device):
    c = {"image": IMG, "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
         "resources": {"claims": [{"name": "acc"}]}}
    (w,) = read_workloads(deployment(c, {"resourceClaims": [
        {"name": "acc", "resourceClaimTemplateName": name}]}))
    assert w.device == device
    if name.startswith("amd-nvidia"):
        assert any("rocm and cuda" in d.message for d in w.diagnostics)


@pytest.mark.parametrize("name", ["x" * 1_000_000, "\x00\u202e\x1b[31m", None, 12, ["x"], {"a": 1}, ""])
def test_absurd_dra_claim_names_are_no_crash(name):
    c = {"image": IMG, "command": ["vllm", "serve", "Qwen/Qwen3-0.6B"],
         "resources": {"claims": [{"name": name}]}}
    obj = deployment(c, {"resourceClaims": [{"name": name, "resourceClaimTemplateName": name}]})
    ws = peak_of(read_workloads, obj)
    assert len(ws) == 1 and not internal_errors(ws)
    assert all(len(d.message) < 2000 for d in ws[0].diagnostics)
