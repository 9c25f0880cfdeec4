"""The webhook reads an InferenceService with the ServingRuntime the cluster will use."""

from __future__ import annotations

import asyncio
import json

from vllm_sizer.operator.cluster_listings import ClusterServingRuntimes
from vllm_sizer.operator.settings import OperatorSettings
from vllm_sizer.operator.webhook.admission import MUTATE, Admission

from .conftest import decode_patch, review

RUNTIME = {
    "apiVersion": "serving.kserve.io/v1alpha1", "kind": "ServingRuntime",
    "metadata": {"name": "vllm-cpu-lora", "namespace": "llm"},
    "spec": {"supportedModelFormats": [{"name": "vLLM", "autoSelect": False}],
             "containers": [{"name": "kserve-container",
                             "image": "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.11.0",
                             "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
                             "args": ["--model=/mnt/models", "--enable-lora", "--max-lora-rank=256",
                                      "--max-num-batched-tokens=2394", "--max-num-seqs=1",
                                      "--max-model-len=4096"],
                             "env": [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "4"}],
                             "resources": {"limits": {"memory": "8Gi"}}}]}}
ISVC = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "qwen", "namespace": "llm"},
        "spec": {"predictor": {"model": {"modelFormat": {"name": "vLLM"}, "runtime": "vllm-cpu-lora",
                                         "storageUri": "hf://Qwen/Qwen3-0.6B"}}}}


class FixedRuntimes(ClusterServingRuntimes):
    def __init__(self, listed):
        super().__init__(lambda: None, OperatorSettings())
        self.listed = listed

    def _list_sync(self, timeout):
        return self.listed


def limit_after(admission: Admission) -> str | None:
    status, out, _ = asyncio.run(admission.handle(MUTATE, json.dumps(review(ISVC)).encode()))
    ops = decode_patch(json.loads(out)["response"]) or []
    return next((op["value"] for op in ops if op["path"].endswith("/resources/limits/memory")), None)


def test_runtime_args_from_the_cluster_size_the_isvc():
    runtimes = FixedRuntimes(([RUNTIME], []))
    asyncio.run(runtimes.refresh())
    assert set(runtimes.serving_runtimes) == {"llm"}  # by namespace, then name
    assert set(runtimes.serving_runtimes["llm"]) == {"vllm-cpu-lora"}
    with_runtime = limit_after(Admission(OperatorSettings(), runtimes=runtimes))
    without = limit_after(Admission(OperatorSettings()))
    # the runtime's LoRA flags (rank 256 at 2394 tokens) need a far larger limit
    from vllm_sizer.workloads.quantity import parse_quantity
    assert with_runtime is not None and parse_quantity(with_runtime) > 20 * 1024**3
    assert without is None or parse_quantity(without) < parse_quantity(with_runtime)


def test_refresh_updates_in_place_and_keeps_view_on_failure():
    runtimes = FixedRuntimes(([RUNTIME], []))
    view = runtimes.serving_runtimes
    asyncio.run(runtimes.refresh())
    assert view is runtimes.serving_runtimes and "vllm-cpu-lora" in view["llm"]
    runtimes.listed = RuntimeError("API down")

    def boom(timeout):
        raise RuntimeError("API down")
    runtimes._list_sync = boom
    asyncio.run(runtimes.refresh())
    assert "vllm-cpu-lora" in view["llm"]  # previous view kept
