"""Host memory of a GPU pod, process by process (docs/research/gpu-memory.md §Host).

Topology (vLLM V1, 0.8.5+): api_server_count API-server processes, one engine-core process
per data-parallel rank, and with tp·pp > 1 one worker process per rank (MultiprocExecutor);
with tp·pp = 1 the worker runs inside the engine core (UniProcExecutor). V0 (< 0.8.5): one
API/engine process pair and tp·pp − 1 extra worker processes.

Pinned host buffers go through PyTorch's CachingHostAllocator, which rounds every block up to
the next power of two. The page cache of mmap'ed safetensors fills the limit but is reclaimed
before an OOM kill: it is reported, not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import constants as C
from .units import GiB
from .versions import VllmVersion


def next_pow2(n: float) -> int:
    n = math.ceil(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def pinned_bytes(total: float, tensors: int | None) -> int:
    """Host memory of `total` bytes pinned as `tensors` equal torch tensors: each block is
    rounded up to a power of two. Unknown split: the allocator's bound (< 2x)."""
    if total <= 0:
        return 0
    if not tensors:
        return int(total * C.PINNED_ROUNDING_BOUND.value)
    return int(tensors * next_pow2(total / tensors))


def default_api_servers(version: VllmVersion, data_parallel: int) -> int:
    """--api-server-count unset: data_parallel_size with the internal load balancer
    (0.19.0:vllm/entrypoints/cli/serve.py:83-97); 1 in 0.11 (0.11.0:entrypoints/cli/serve.py)."""
    return data_parallel if version.at_least(0, 19) else 1


@dataclass
class HostTerms:
    terms: list[tuple[str, int, str, str]] = field(
        default_factory=list
    )  # name, bytes, enters, source
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, n: float, enters: str, source: str) -> None:
        self.terms.append((name, int(n), enters, source))


def host_terms(
    version: VllmVersion,
    *,
    tp: int,
    pp: int,
    dp: int,
    api_servers: int | None,
    weights_bytes: int,
    num_layers: int,
    cpu_offload_gb: float,
    swap_bytes: int,
    kv_offloading_gib: float | None,
    kv_connector: str | None,
    kv_cpu_bytes: float | None = None,
    kv_offloading_backend: str | None = None,
    simple_offload: bool = False,
    lmcache_local_cpu_gb: float | None,
    load_format: str | None,
    quantization: str | None,
    compiled: bool,
) -> HostTerms:
    h = HostTerms()
    ws = tp * pp
    workers = ws * dp
    v1 = version.at_least(0, 8, 5)
    apis = api_servers if api_servers is not None else default_api_servers(version, dp)
    # Front-end + engine-core (+ in-process worker) without CUDA: measured on the CPU backend.
    base = C.CPU_RUNTIME_BYTES.value
    extra = max(apis - 1, 0) + (max(dp - 1, 0) if v1 else 0)
    h.add(
        "runtime_overhead",
        base + extra * C.EXTRA_PROCESS_BYTES.value,
        "sum",
        f"API server ×{apis} + engine core ×{dp if v1 else 1}: {C.CPU_RUNTIME_BYTES.source}"
        + (
            f"; {extra} extra process(es) assumed {C.EXTRA_PROCESS_BYTES.value / GiB:g} GiB each"
            if extra
            else ""
        ),
    )
    if extra:
        h.notes.append(
            f"{extra} extra API-server / engine-core process(es) at an assumed "
            f"{C.EXTRA_PROCESS_BYTES.value / GiB:g} GiB each (not measured)"
        )
    h.add(
        "gpu_worker_processes",
        workers * C.GPU_WORKER_PROCESS_BYTES.value,
        "sum",
        f"{workers} GPU worker(s) × {C.GPU_WORKER_PROCESS_BYTES.value / GiB:g} GiB: "
        + C.GPU_WORKER_PROCESS_BYTES.source,
    )
    if compiled:
        h.add(
            "compile_workers", C.COMPILE_WORKERS_BYTES.value, "sum", C.COMPILE_WORKERS_BYTES.source
        )
        h.notes.append(
            "torch.compile worker pool on the host is an assumption "
            f"({C.COMPILE_WORKERS_BYTES.value / GiB:g} GiB, not measured)"
        )
    if cpu_offload_gb:
        req = cpu_offload_gb * 1e9
        h.add(
            "cpu_offload",
            workers * pinned_bytes(req, None),
            "sum",
            f"--cpu-offload-gb {cpu_offload_gb:g} GB per GPU pinned parameter by parameter: "
            f"≤ {C.PINNED_ROUNDING_BOUND.value:g}x ({C.PINNED_ROUNDING_BOUND.source})",
        )
    if swap_bytes:
        per_gpu = swap_bytes / max(tp, 1)
        h.add(
            "swap_space",
            tp * pinned_bytes(per_gpu, max(num_layers // pp, 1)),
            "sum",
            "V0 CPU swap cache: one pinned tensor per layer per GPU, power-of-two rounded",
        )
    conn = (kv_connector or "").lower()
    backend = (kv_offloading_backend or "native").lower()
    lmcache_gb = lmcache_local_cpu_gb
    if kv_offloading_gib and backend == "lmcache":
        # --kv-offloading-backend lmcache: max_local_cpu_size = size / (tp·pp) per rank
        # (0.19.0:vllm/config/vllm.py:668-674)
        conn, lmcache_gb = "lmcacheconnectorv1", kv_offloading_gib / ws
    elif kv_offloading_gib:
        # native: cpu_bytes_to_use = size GiB over all ranks (0.19.0:vllm/config/vllm.py:659-666),
        # one torch.zeros(pin_memory=True) per KV cache tensor per rank
        # (0.19.0:vllm/v1/kv_offload/worker/cpu_gpu.py:261-280)
        kv_cpu_bytes = kv_offloading_gib * GiB
        conn = conn or ("simplecpuoffloadconnector" if simple_offload else "offloadingconnector")
    if kv_cpu_bytes and "lmcache" not in conn:
        per_rank = kv_cpu_bytes / ws
        exact = "simple" in conn
        n = max(num_layers // pp, 1)
        if not exact:
            h.notes.append(
                "KV offload buffer: one pinned tensor per KV cache layer assumed "
                "(hybrid models with fewer KV tensors round differently)"
            )
        h.add(
            "kv_offload_buffer",
            workers * (per_rank if exact else pinned_bytes(per_rank, n)),
            "sum",
            f"CPU KV offload {kv_cpu_bytes / GiB:.1f} GiB over {ws} rank(s)"
            + (
                ": cudaHostRegister, exact size"
                if exact
                else f", {n} pinned tensor(s) per rank (one per KV cache layer assumed), each "
                "rounded up to a power of two by PyTorch's CachingHostAllocator"
            ),
        )
    if "lmcache" in conn:
        gb = lmcache_gb if lmcache_gb is not None else C.LMCACHE_LOCAL_CPU_GB_DEFAULT.value
        h.add(
            "lmcache_cpu_buffer",
            workers * next_pow2(gb * GiB),
            "sum",
            f"LMCache local CPU backend {gb:g} GB per worker, one pinned buffer "
            "(power-of-two rounding assumed)",
        )
        if lmcache_gb is None:
            h.notes.append(
                f"LMCache local CPU size not given: {C.LMCACHE_LOCAL_CPU_GB_DEFAULT.source}"
            )
    elif conn and "offload" in conn and not kv_cpu_bytes:
        h.notes.append(f"{kv_connector}: CPU buffer size not given (cpu_bytes_to_use), not counted")
    fmt = (load_format or "").lower()
    anon = fmt == "gguf" or fmt == "bitsandbytes" or (quantization or "").lower() == "bitsandbytes"
    if anon:
        h.notes.append(
            "GGUF / bitsandbytes loading: the whole checkpoint assumed resident in "
            "anonymous host memory while loading"
        )
        h.add(
            "loading_anonymous",
            weights_bytes,
            "sum",
            f"{fmt or 'bitsandbytes'} loading reads the checkpoint into anonymous memory "
            "(counts toward the limit; whole checkpoint assumed)",
        )
    h.add(
        "page_cache",
        weights_bytes,
        "not-counted",
        "mmap'ed safetensors in the page cache: fills the limit while loading but is reclaimed "
        "before an OOM kill (a 32G pod at 4 GB RSS + 28 GB cache, vllm-project/vllm#3035)",
    )
    return h
