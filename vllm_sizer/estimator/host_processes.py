"""Host memory of a GPU pod, process by process (docs/research/gpu-memory.md §4).

Topology (vLLM V1, 0.8.5+), `process_counts`: API-server processes (--api-server-count; none
with --headless), a launcher process that starts them when there are several (or none), one
engine-core process per local data-parallel engine, a DP coordinator process on the first
node when data_parallel_size > 1 (0.9.2+), and with tp·pp > 1 one worker process per rank
(MultiprocExecutor); with tp·pp = 1 the worker runs inside the engine core (UniProcExecutor).
V0 (< 0.8.5): one API/engine process pair and tp·pp − 1 extra worker processes.

Multi-node (`node_ranks`): an engine spread over several pods with the Ray executor (vLLM's
multi-node-serving.sh, a LeaderWorkerSet) has one GPU worker actor per rank on the node that
holds that rank's GPU (RayDistributedExecutor places one worker per GPU bundle: 0.19.0:
vllm/v1/executor/ray_executor.py, _init_workers_ray). The leader pod runs the API server, the
engine core, the Ray head and its own GPUs' ranks; a worker pod runs Ray's node processes and
its GPUs' ranks only: no API server, no engine core.

Pinned host buffers that go through PyTorch's CachingHostAllocator are rounded up to the next
power of two per block; buffers pinned with cudaHostRegister (or LMCache's own allocator) are
not. The page cache of mmap'ed safetensors fills the limit but is reclaimed before an OOM
kill: it is reported, not counted.
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


def default_api_servers(
    version: VllmVersion,
    data_parallel: int,
    *,
    local_engines: int | None = None,
    external_lb: bool = False,
    hybrid_lb: bool = False,
) -> int:
    """--api-server-count unset. Up to 0.14 the flag's default, 1 (0.11.1:
    vllm/entrypoints/openai/cli_args.py:264-270, 0.14.0: the same default). From 0.15 it
    follows the load-balancing mode (0.15.0:vllm/entrypoints/cli/serve.py:63-101,
    0.19.0 same file :64-104): external (--data-parallel-rank / --data-parallel-external-lb)
    1; hybrid (--data-parallel-start-rank / --data-parallel-hybrid-lb)
    data_parallel_size_local or 1; otherwise data_parallel_size."""
    if not version.at_least(0, 15):
        return 1
    if external_lb:
        return 1
    if hybrid_lb:
        return local_engines or 1
    return data_parallel


def node_ranks(ranks: int, *, nodes: int | None, local_ranks: int | None) -> tuple[int, str]:
    """The ranks (GPU worker processes) of one node of a multi-node engine of `ranks` ranks
    (tp·pp × local engines): the pod's GPUs when it says, else an even share over the nodes."""
    if local_ranks == 0:
        return 0, f"none of the engine's {ranks} rank(s) on this pod (no GPU: all on other pods)"
    if local_ranks:
        n = min(local_ranks, ranks)
        return n, f"{n} of the engine's {ranks} rank(s) on this pod (its GPUs)"
    if nodes and nodes > 1:
        n = max(1, math.ceil(ranks / nodes))
        return n, f"{n} of the engine's {ranks} rank(s) on this pod ({ranks} over {nodes} nodes)"
    return ranks, f"all {ranks} rank(s) of the engine (node count and GPUs unknown)"


@dataclass(frozen=True)
class Processes:
    api_servers: int
    launcher: bool  # a parent process that only starts the others (several API servers, or none)
    engine_cores: int
    coordinator: bool
    why: str


def process_counts(
    version: VllmVersion,
    *,
    data_parallel: int,
    local_engines: int,
    api_servers: int | None,
    headless: bool = False,
    external_lb: bool = False,
    hybrid_lb: bool = False,
    first_rank: bool = True,
    moe: bool = False,
) -> Processes:
    """The front-end / engine processes of one pod (not the GPU workers).
    - --headless, or --api-server-count 0: no API server; the main process starts the engines
      and waits (run_headless, 0.19.0:vllm/entrypoints/cli/serve.py:53-62, :115-116).
    - several API servers: run_multi_api_server starts them as child processes from a launcher
      that stays (0.19.0: same file :117-118, :238-325, APIServerProcessManager).
    - one API server: it runs in the main process (same file :119-122).
    - DP coordinator: a separate process when data_parallel_size > 1 on the rank-0 node:
      0.9.2-0.13 always (0.9.2:vllm/v1/engine/utils.py:354, 0.11.1 the same :813); from 0.14
      only for MoE models or without external load balancing (needs_dp_coordinator,
      0.19.0:vllm/config/vllm.py:456-476, used at vllm/v1/engine/utils.py:897-899).
    V0 (< 0.8.5): one API server, the engine in the same process."""
    if not version.at_least(0, 8, 5):
        return Processes(1, False, 1, False, "V0: API server and engine in one process pair")
    if headless:
        apis, why = 0, "--headless: no API server"
    elif api_servers is not None:
        apis, why = api_servers, f"--api-server-count {api_servers}"
    else:
        apis = default_api_servers(
            version,
            data_parallel,
            local_engines=local_engines,
            external_lb=external_lb,
            hybrid_lb=hybrid_lb,
        )
        why = f"{apis} API server(s): vLLM {version}'s default" + (
            " (data_parallel_size)" if version.at_least(0, 15) and apis > 1 else ""
        )
    coordinator = (
        version.at_least(0, 9, 2)
        and data_parallel > 1
        and first_rank
        and (not version.at_least(0, 14) or moe or not external_lb)
    )
    return Processes(apis, apis != 1, local_engines, coordinator, why)


@dataclass
class HostTerms:
    terms: list[tuple[str, int, str, str]] = field(
        default_factory=list
    )  # name, bytes, enters, source
    notes: list[str] = field(default_factory=list)
    processes: Processes | None = None

    def add(self, name: str, n: float, enters: str, source: str) -> None:
        self.terms.append((name, int(n), enters, source))


@dataclass(frozen=True)
class KvOffload:
    """What the command line and environment say about CPU KV offloading (EngineSettings)."""

    size_gib: float | None = None  # --kv-offloading-size
    backend: str | None = None  # --kv-offloading-backend
    connector: str | None = None  # kv_transfer_config.kv_connector
    cpu_bytes: float | None = None  # kv_connector_extra_config.cpu_bytes_to_use
    cpu_blocks: int | None = None  # kv_connector_extra_config.num_cpu_blocks (≤ 0.13)
    spec: str | None = None  # kv_connector_extra_config.spec_name
    simple: bool = False  # VLLM_USE_SIMPLE_KV_OFFLOAD
    prefix_caching: bool | None = None  # --enable-prefix-caching / --no-enable-prefix-caching
    lmcache_gb: float | None = None  # LMCACHE_MAX_LOCAL_CPU_SIZE / lmcache.max_local_cpu_size
    lmcache_local_cpu: bool | None = None  # LMCACHE_LOCAL_CPU / lmcache.local_cpu


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
    kv: KvOffload | None = None,
    load_format: str | None,
    quantization: str | None,
    compiled: bool,
    data_parallel_size: int | None = None,
    headless: bool = False,
    external_lb: bool = False,
    hybrid_lb: bool = False,
    first_rank: bool = True,
    moe: bool = False,
    kv_bytes_per_token_per_rank: float = 0.0,
    device: str = "cuda",
    dev_shm_memory: bool = False,
    dev_shm_bytes: int | None = None,
    node_role: str | None = None,
    local_ranks: int | None = None,
    ray: bool = True,
) -> HostTerms:
    """`dp`: the engines this pod runs (settings.local_engines); `data_parallel_size`: the
    global --data-parallel-size (defaults to `dp`). `node_role` "leader" / "worker": one node
    of a multi-node engine holding `local_ranks` of its ranks (node_ranks)."""
    h = HostTerms()
    ws = tp * pp
    workers = ws * dp
    if node_role is not None and local_ranks is not None:
        workers = min(local_ranks, workers)
    if node_role == "worker" and not ray:
        _mp_worker_node(h, workers, ws * dp)
    elif node_role == "worker":
        _ray_worker_node(h, workers, ws * dp)
    else:
        _front_processes(
            h,
            version,
            dp=dp,
            api_servers=api_servers,
            data_parallel_size=data_parallel_size,
            headless=headless,
            external_lb=external_lb,
            hybrid_lb=hybrid_lb,
            first_rank=first_rank,
            moe=moe,
        )
        if node_role == "leader" and not ray:
            h.notes.append(
                f"multi-node leader (vLLM's mp executor, --nnodes: no Ray): the API server and "
                f"engine core run here with {workers} of the engine's {ws * dp} GPU worker(s)"
            )
        elif node_role == "leader":
            ray_bytes = C.RAY_NODE_PROCESSES_BYTES.value + C.RAY_HEAD_EXTRA_BYTES.value
            h.add(
                "ray_node_processes",
                ray_bytes,
                "sum",
                f"Ray head of a multi-node engine ({workers} of its {ws * dp} rank(s) here): "
                f"node processes {C.RAY_NODE_PROCESSES_BYTES.value / GiB:g} GiB "
                f"({C.RAY_NODE_PROCESSES_BYTES.source}) + GCS and dashboard "
                f"{C.RAY_HEAD_EXTRA_BYTES.value / GiB:g} GiB assumed "
                f"({C.RAY_HEAD_EXTRA_BYTES.source})",
            )
            h.notes.append(
                f"multi-node leader: the API server, engine core and Ray head run here with "
                f"{workers} of the engine's {ws * dp} GPU worker(s); the Ray head's GCS and "
                f"dashboard are an assumed {C.RAY_HEAD_EXTRA_BYTES.value / GiB:g} GiB "
                "(not measured)"
            )
        elif node_role == "replica":
            h.add(
                "ray_node_processes",
                C.RAY_NODE_PROCESSES_BYTES.value,
                "sum",
                f"Ray worker pod that may hold the engine's replica ({workers} of its "
                f"{ws * dp} rank(s) here): Ray's node processes, "
                f"{C.RAY_NODE_PROCESSES_BYTES.source}",
            )
            h.notes.append(
                f"Ray worker pod: the engine's front processes (its replica actor and engine "
                f"core may be placed on any pod of the group), {workers} of its {ws * dp} GPU "
                "worker(s) and Ray's node processes (the Ray head runs elsewhere)"
            )
    _worker_terms(
        h,
        version,
        workers=workers,
        tp=tp,
        pp=pp,
        dp=dp,
        weights_bytes=weights_bytes,
        num_layers=num_layers,
        cpu_offload_gb=cpu_offload_gb,
        swap_bytes=swap_bytes,
        kv=kv,
        load_format=load_format,
        quantization=quantization,
        compiled=compiled,
        kv_bytes_per_token_per_rank=kv_bytes_per_token_per_rank,
        device=device,
        dev_shm_memory=dev_shm_memory,
        dev_shm_bytes=dev_shm_bytes,
    )
    return h


def _mp_worker_node(h: HostTerms, workers: int, ranks: int) -> None:
    """A node rank > 0 of vLLM's own multi-node launch (--nnodes, --headless): one process that
    holds the multiproc executor of its local GPU workers, no API server or engine core, no
    Ray (0.33.0:vllm/entrypoints/cli/serve.py:218-231 run_headless: MultiprocExecutor with
    monitor_workers=False)."""
    h.processes = Processes(0, False, 0, False, "mp multi-node worker: its executor only")
    h.add(
        "runtime_overhead",
        C.EXTRA_PROCESS_BYTES.value,
        "sum",
        f"the headless executor process of a multi-node worker ({workers} of the engine's "
        f"{ranks} rank(s) here): {C.EXTRA_PROCESS_BYTES.source}",
    )
    h.notes.append(
        f"multi-node worker (vLLM's mp executor, --nnodes): its executor process and {workers} "
        f"GPU worker(s) of the engine's {ranks} (the API server and engine core run on node 0)"
    )


def _ray_worker_node(h: HostTerms, workers: int, ranks: int) -> None:
    """A worker pod of a multi-node engine: Ray's node processes, no API server or engine core
    (the GPU worker actors are counted with the per-rank terms)."""
    h.processes = Processes(0, False, 0, False, "multi-node worker: Ray's processes only")
    h.add(
        "ray_node_processes",
        C.RAY_NODE_PROCESSES_BYTES.value,
        "sum",
        f"multi-node worker ({workers} of the engine's {ranks} rank(s) here): no API server or "
        f"engine core, Ray's node processes: {C.RAY_NODE_PROCESSES_BYTES.source}",
    )
    h.notes.append(
        f"multi-node worker: Ray's node processes and {workers} GPU worker actor(s) of the "
        f"engine's {ranks} (the API server and engine core run on the leader)"
    )


def _front_processes(
    h: HostTerms,
    version: VllmVersion,
    *,
    dp: int,
    api_servers: int | None,
    data_parallel_size: int | None,
    headless: bool,
    external_lb: bool,
    hybrid_lb: bool,
    first_rank: bool,
    moe: bool,
) -> None:
    """The API server(s), launcher, engine core(s) and DP coordinator of the pod."""
    procs = process_counts(
        version,
        data_parallel=data_parallel_size or dp,
        local_engines=dp,
        api_servers=api_servers,
        headless=headless,
        external_lb=external_lb,
        hybrid_lb=hybrid_lb,
        first_rank=first_rank,
        moe=moe,
    )
    h.processes = procs
    # Front-end + engine-core (+ in-process worker) without CUDA: measured on the CPU backend,
    # one API-server process and one engine core. Every other process is an extra one.
    base = C.CPU_RUNTIME_BYTES.value
    front = procs.api_servers + (1 if procs.launcher else 0)
    extra = max(front - 1, 0) + max(procs.engine_cores - 1, 0) + (1 if procs.coordinator else 0)
    parts = [
        f"API server ×{procs.api_servers}" + (" + launcher" if procs.launcher else ""),
        f"engine core ×{procs.engine_cores}",
    ] + (["DP coordinator"] if procs.coordinator else [])
    h.add(
        "runtime_overhead",
        base + extra * C.EXTRA_PROCESS_BYTES.value,
        "sum",
        f"{' + '.join(parts)} ({procs.why}): {C.CPU_RUNTIME_BYTES.source}"
        + (
            f"; {extra} extra process(es) assumed {C.EXTRA_PROCESS_BYTES.value / GiB:g} GiB each"
            if extra
            else ""
        ),
    )
    if extra:
        h.notes.append(
            f"{extra} extra front-end / engine-core / coordinator process(es) "
            f"({' + '.join(parts)}) at an assumed "
            f"{C.EXTRA_PROCESS_BYTES.value / GiB:g} GiB each (not measured)"
        )


def _worker_terms(
    h: HostTerms,
    version: VllmVersion,
    *,
    workers: int,
    tp: int,
    pp: int,
    dp: int,
    weights_bytes: int,
    num_layers: int,
    cpu_offload_gb: float,
    swap_bytes: int,
    kv: KvOffload | None,
    load_format: str | None,
    quantization: str | None,
    compiled: bool,
    kv_bytes_per_token_per_rank: float,
    device: str,
    dev_shm_memory: bool,
    dev_shm_bytes: int | None,
) -> None:
    """The per-rank host terms of the `workers` GPU worker processes on this pod, and loading."""
    ws = tp * pp
    h.add(
        "gpu_worker_processes",
        workers * C.GPU_WORKER_PROCESS_BYTES.value,
        "sum",
        f"{workers} GPU worker(s) × {C.GPU_WORKER_PROCESS_BYTES.value / GiB:g} GiB: "
        + C.GPU_WORKER_PROCESS_BYTES.source,
    )
    if compiled and workers:  # Inductor's compile pool is started by the GPU workers
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
    if swap_bytes and workers:
        per_gpu = swap_bytes / max(tp, 1)
        # one node of a multi-node engine holds its own ranks' caches only (min: as before on
        # one node, where workers ≥ tp)
        ranks = min(workers, tp)
        h.add(
            "swap_space",
            ranks * pinned_bytes(per_gpu, max(num_layers // pp, 1)),
            "sum",
            "V0 CPU swap cache: one pinned tensor per layer per GPU, power-of-two rounded"
            + (f" ({ranks} of the engine's {tp} on this pod)" if ranks < tp else ""),
        )
    _kv_offload(
        h,
        version,
        kv or KvOffload(),
        ws=ws,
        engines=dp,
        ranks=workers,
        layers=max(num_layers // pp, 1),
        kv_bytes_per_token_per_rank=kv_bytes_per_token_per_rank,
        device=device,
        dev_shm_memory=dev_shm_memory,
        dev_shm_bytes=dev_shm_bytes,
    )
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
        0 if fmt == "dummy" else weights_bytes,
        "not-counted",
        "mmap'ed safetensors in the page cache: fills the limit while loading but is reclaimed "
        "before an OOM kill (a 32G pod at 4 GB RSS + 28 GB cache, vllm-project/vllm#3035)"
        + ("; --load-format dummy reads no checkpoint" if fmt == "dummy" else ""),
    )


def _kv_offload(
    h: HostTerms,
    version: VllmVersion,
    kv: KvOffload,
    *,
    ws: int,
    engines: int,
    ranks: int,
    layers: int,
    kv_bytes_per_token_per_rank: float,
    device: str,
    dev_shm_memory: bool,
    dev_shm_bytes: int | None,
) -> None:
    """CPU KV offloading: the connector vLLM ends up with and the host buffer it allocates
    (docs/research/gpu-memory.md §4 has the source lines per version)."""
    conn = kv.connector or ""
    cpu_bytes = kv.cpu_bytes
    cpu_blocks = kv.cpu_blocks
    spec = kv.spec
    lmcache_gb = kv.lmcache_gb
    workers = ranks  # this pod's ranks (ws · engines on one node)
    share = ranks / (ws * engines)  # of a buffer split over all ranks of the engines
    backend = (kv.backend or "").lower()
    if kv.size_gib:
        if not version.at_least(0, 14):
            # 0.11.1-0.13: offloading only with --kv-offloading-backend set
            # (0.11.1:vllm/config/cache.py:146 default None; vllm/config/vllm.py:306-307)
            if not backend:
                h.notes.append(
                    f"--kv-offloading-size without --kv-offloading-backend: vLLM {version} "
                    "enables no KV offloading (0.11-0.13 need both)"
                )
            elif backend == "native":
                # OffloadingConnector with num_cpu_blocks 0 (0.13.0:vllm/config/vllm.py:494-500),
                # which CPUOffloadingSpec rejects (0.13.0:vllm/v1/kv_offload/cpu.py:24-28)
                h.notes.append(
                    f"--kv-offloading-backend native in vLLM {version} sets num_cpu_blocks 0, "
                    "which the CPU offloading spec rejects at startup (vLLM 0.11.1-0.13): the "
                    "server does not start; use vLLM ≥ 0.14 or --kv-transfer-config with "
                    "num_cpu_blocks"
                )
            else:
                conn, lmcache_gb = "LMCacheConnectorV1", kv.size_gib / ws
        elif backend == "lmcache":
            if version.at_least(0, 23):
                # 0.23+: LMCacheMPConnector, the size is not propagated: the KV store lives in a
                # separate LMCache server process (0.23.0:vllm/config/vllm.py:793-799)
                conn = "LMCacheMPConnector"
            else:
                # max_local_cpu_size = size / (tp·pp) per rank (0.19.0:vllm/config/vllm.py:668-674)
                conn, lmcache_gb = "LMCacheConnectorV1", kv.size_gib / ws
        else:
            # native: cpu_bytes_to_use = size GiB over all ranks (0.14.0:vllm/config/vllm.py:518,
            # 0.19.0 :659-666); VLLM_USE_SIMPLE_KV_OFFLOAD picks SimpleCPUOffloadConnector
            # from 0.19 (0.19.0:vllm/config/vllm.py:660-663)
            simple = kv.simple and version.at_least(0, 19)
            conn = "SimpleCPUOffloadConnector" if simple else "OffloadingConnector"
            cpu_bytes, cpu_blocks, spec = kv.size_gib * GiB, None, None
    low = conn.lower()
    if low == "lmcachempconnector":
        h.notes.append(
            "LMCacheMPConnector: the KV cache store is a separate LMCache server process "
            "(not this container's memory unless it runs here): not counted"
        )
        return
    if "lmcache" in low:
        _lmcache(h, kv, lmcache_gb, workers)
        return
    if low == "simplecpuoffloadconnector":
        if kv.prefix_caching is False:
            # disabled without prefix caching
            # (0.19.0:vllm/distributed/kv_transfer/kv_connector/v1/simple_cpu_offload_connector.py:80-85)
            h.notes.append(
                "SimpleCPUOffloadConnector is disabled with prefix caching off: no CPU buffer"
            )
            return
        total = cpu_bytes if cpu_bytes else C.SIMPLE_OFFLOAD_DEFAULT_BYTES.value
        h.add(
            "kv_offload_buffer",
            engines * total * share,
            "sum",
            f"SimpleCPUOffloadConnector {total / GiB:.1f} GiB over {ws} rank(s) "
            + (f"({workers} here) " if share < 1 else "")
            + ("" if cpu_bytes else f"({C.SIMPLE_OFFLOAD_DEFAULT_BYTES.source}) ")
            + "pinned with cudaHostRegister at the exact size "
            "(0.19.0:vllm/v1/simple_kv_offload/cuda_mem_ops.py:17-25)",
        )
        return
    if low != "offloadingconnector":
        return
    if spec and spec not in ("CPUOffloadingSpec", "TieringOffloadingSpec"):
        h.notes.append(
            f"OffloadingConnector with spec_name {spec}: its buffers are not modelled, not counted"
        )
        return
    if not version.at_least(0, 14):
        # 0.11-0.13: num_cpu_blocks offloaded blocks of `block_size` tokens per rank, one
        # pinned torch.zeros per KV cache tensor (0.13.0:vllm/v1/kv_offload/cpu.py:24-29,
        # worker/cpu_gpu.py: cpu_shape[num_blocks] = num_cpu_blocks × block_size_factor)
        if not cpu_blocks:
            h.notes.append(
                f"OffloadingConnector without num_cpu_blocks: vLLM {version}'s CPU offloading "
                "spec refuses to start (0.13.0:vllm/v1/kv_offload/cpu.py:24-28)"
            )
            return
        per_rank = cpu_blocks * C.GPU_BLOCK_SIZE_TOKENS.value * kv_bytes_per_token_per_rank
        h.notes.append(
            f"OffloadingConnector num_cpu_blocks {cpu_blocks}: blocks of "
            f"{C.GPU_BLOCK_SIZE_TOKENS.value:g} tokens assumed ({C.GPU_BLOCK_SIZE_TOKENS.source})"
        )
        h.add(
            "kv_offload_buffer",
            workers * pinned_bytes(per_rank, layers),
            "sum",
            f"CPU KV offload {cpu_blocks} blocks per rank = {per_rank / GiB:.1f} GiB, "
            f"{layers} pinned tensor(s) per rank, each rounded up to a power of two by "
            "PyTorch's CachingHostAllocator",
        )
        return
    if not cpu_bytes:
        h.notes.append(
            f"{conn}: no cpu_bytes_to_use in kv_connector_extra_config: vLLM {version}'s CPU "
            "offloading spec refuses to start (0.19.0:vllm/v1/kv_offload/cpu/spec.py:21-25)"
        )
        return
    shared = spec == "TieringOffloadingSpec" or (
        version.at_least(0, 27) and not (device == "rocm" and version.at_least(0, 30))
    )
    if shared:
        # one /dev/shm region per engine, shared by its ranks, registered with
        # cudaHostRegister: exact size (0.27.0:vllm/v1/kv_offload/cpu/spec.py:144-172,
        # shared_offload_region.py:53-54, gpu_worker.py:136; 0.33.0 cpu/spec.py:176-204)
        h.add(
            "kv_offload_buffer",
            engines * cpu_bytes,
            "sum",
            f"CPU KV offload {cpu_bytes / GiB:.1f} GiB per engine: one /dev/shm mmap region shared "
            "by its ranks, pinned with cudaHostRegister at the exact size",
        )
        if not dev_shm_memory:
            h.notes.append(
                f"vLLM {version} keeps the KV offload buffer ({cpu_bytes / GiB:.1f} GiB) in "
                "/dev/shm (vllm_offload_<engine>.mmap): the pod needs a memory-backed /dev/shm "
                "emptyDir that large (the container runtime's default /dev/shm is 64 MiB)"
            )
        elif dev_shm_bytes is not None and dev_shm_bytes < cpu_bytes:
            h.notes.append(
                f"the /dev/shm emptyDir sizeLimit ({dev_shm_bytes / GiB:.1f} GiB) is smaller than "
                f"the KV offload region vLLM {version} puts there ({cpu_bytes / GiB:.1f} GiB)"
            )
        return
    # 0.14-0.26: each rank allocates one torch.zeros(pin_memory=True) per KV cache tensor
    # (0.19.0:vllm/v1/kv_offload/worker/cpu_gpu.py:261-280; 0.26.0 cpu/gpu_worker.py:494-501)
    per_rank = cpu_bytes / ws
    h.notes.append(
        "KV offload buffer: one pinned tensor per KV cache layer assumed "
        "(hybrid models with fewer KV tensors round differently)"
    )
    h.add(
        "kv_offload_buffer",
        workers * pinned_bytes(per_rank, layers),
        "sum",
        f"CPU KV offload {cpu_bytes / GiB:.1f} GiB over {ws} rank(s), {layers} pinned tensor(s) "
        "per rank (one per KV cache layer assumed), each rounded up to a power of two by "
        "PyTorch's CachingHostAllocator",
    )


def _lmcache(h: HostTerms, kv: KvOffload, gb: float | None, workers: int) -> None:
    """LMCache's local CPU buffer, per worker: max_local_cpu_size GiB (default 5.0), allocated
    whether local_cpu is on or not when PD mode is off (lmcache 0.5.6
    v1/storage_backend/__init__.py:173-190; 0.3.1 v1/cache_engine.py:645-656). Pinned at the
    exact size by LMCache's own allocator from 0.3.3 (cudaHostRegister; 0.3.4+ lmc_ops
    alloc_pinned_ptr, 0.5.6 v1/memory_management.py:573-620); LMCache ≤ 0.3.2 used
    torch.empty(pin_memory=True), which PyTorch rounds up to a power of two."""
    size = gb if gb is not None else C.LMCACHE_LOCAL_CPU_GB_DEFAULT.value
    per_worker = size * GiB
    h.add(
        "lmcache_cpu_buffer",
        workers * per_worker * C.LMCACHE_PINNED_EXACT.value,
        "sum",
        f"LMCache local CPU buffer {size:g} GiB per worker × {workers}, pinned at the exact "
        "size (LMCache ≥ 0.3.3 assumed)",
    )
    if gb is None:
        h.notes.append(f"LMCache local CPU size not given: {C.LMCACHE_LOCAL_CPU_GB_DEFAULT.source}")
    if next_pow2(per_worker) != int(per_worker):
        h.notes.append(
            f"LMCache's version is unknown: ≥ 0.3.3 assumed, which pins {size:g} GiB per worker "
            f"(counted); LMCache ≤ 0.3.2 pinned through PyTorch, which rounds it up to "
            f"{next_pow2(per_worker) / GiB:g} GiB"
        )
    if kv.lmcache_local_cpu is False:
        h.notes.append(
            "LMCACHE_LOCAL_CPU false does not remove LMCache's CPU buffer: it is allocated "
            "with max_local_cpu_size unless PD mode is on"
        )
