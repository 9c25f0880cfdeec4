"""Engine settings: the vLLM engine arguments and environment that change memory.

`EngineSettings` holds what the user wrote (None = not set, so vLLM's default applies).
`resolve_settings` turns it into `ResolvedSettings`, applying vLLM's defaults for the given
version and device, and records for every value where it came from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from . import defaults
from .constants import PINNED_CPU_KV_GIB_DEFAULT
from .errors import InvalidSettings
from .geometry import ModelGeometry
from .units import DTYPE_BYTES, GiB
from .versions import VllmVersion

Device = Literal["cpu", "cuda", "rocm", "other", "unknown"]
Allocator = Literal["glibc", "tcmalloc", "unknown"]
UsageContext = Literal["api_server", "llm_class"]

# Allowed --max-lora-rank values (vLLM LoRAConfig.max_lora_rank: possible_max_ranks).
ALLOWED_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


class EngineSettings(BaseModel):
    """What a vLLM command line / environment sets. None means "left at vLLM's default"."""

    model: str | None = None
    vllm_version: str | None = None
    device: Device = "unknown"
    usage_context: UsageContext = "api_server"
    dtype: str = "auto"
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enable_chunked_prefill: bool | None = None
    performance_mode: str | None = None
    enable_lora: bool = False
    max_lora_rank: int | None = None
    max_loras: int | None = None
    max_cpu_loras: int | None = None
    lora_dtype: str = "auto"
    fully_sharded_loras: bool = False
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    # --data-parallel-size-local (engines on this node) and --data-parallel-rank (an external
    # load balancer's single rank); see local_engines
    data_parallel_size_local: int | None = None
    data_parallel_rank: int | None = None
    gpu_memory_utilization: float | None = None
    cpu_offload_gb: float = 0.0
    swap_space_gib: float | None = None
    kv_cache_memory_bytes: int | None = None
    enforce_eager: bool = False
    mm_processor_cache_gb: float | None = None
    api_server_count: int | None = None  # --api-server-count (0: no API server, as --headless)
    headless: bool = False  # --headless: engine processes only
    # data-parallel load balancing: --data-parallel-start-rank / --data-parallel-hybrid-lb
    # (hybrid), --data-parallel-rank / --data-parallel-external-lb (external)
    data_parallel_start_rank: int | None = None
    data_parallel_hybrid_lb: bool = False
    data_parallel_external_lb: bool = False
    enable_prefix_caching: bool | None = None
    load_format: str | None = None
    kv_offloading_size_gib: float | None = None  # --kv-offloading-size (GiB, all ranks)
    kv_offloading_backend: str | None = None  # --kv-offloading-backend native | lmcache
    kv_connector: str | None = None  # kv_transfer_config.kv_connector
    # the connector inside a MultiConnector whose host buffers are counted (its sizes are the
    # kv_connector_* fields); None: kv_connector itself
    kv_host_connector: str | None = None
    kv_connector_cpu_bytes: int | None = None  # kv_connector_extra_config.cpu_bytes_to_use
    kv_connector_cpu_blocks: int | None = None  # kv_connector_extra_config.num_cpu_blocks
    kv_connector_spec: str | None = None  # kv_connector_extra_config.spec_name
    simple_kv_offload: bool = False  # VLLM_USE_SIMPLE_KV_OFFLOAD=1
    lmcache_local_cpu_gb: float | None = None  # LMCACHE_MAX_LOCAL_CPU_SIZE (GiB per worker)
    lmcache_local_cpu: bool | None = None  # LMCACHE_LOCAL_CPU / lmcache.local_cpu
    cpu_kvcache_space_gib: float | None = Field(
        default=None, description="VLLM_CPU_KVCACHE_SPACE (GiB)"
    )
    # One node of a multi-node engine (Ray executor over several pods, e.g. a LeaderWorkerSet):
    # "leader" runs the API server, the engine core and the Ray head beside its own ranks;
    # "worker" only Ray's node processes and its ranks' GPU worker actors; "replica" a Ray
    # worker pod that may hold the engine's front processes (Ray Serve LLM's replica actor and
    # its engine core share the placement group's first bundle with a GPU worker) beside its
    # ranks and Ray's node processes, but not the Ray head. None: one node.
    node_role: Literal["leader", "worker", "replica"] | None = None

    @property
    def mp_nodes(self) -> int | None:
        """The nodes of an engine launched with vLLM's own multi-node mp executor (--nnodes
        > 1: no Ray), else None."""
        return self.nnodes if self.nnodes is not None and self.nnodes > 1 else None

    @property
    def node_position(self) -> Literal["leader", "worker", "replica"] | None:
        """This pod's role in a multi-node engine: the reader's (a platform's layout), else
        vLLM's --node-rank under --nnodes (rank 0, or an unknown rank, the leader: the larger)."""
        if self.node_role is not None:
            return self.node_role
        if self.mp_nodes:
            return "worker" if (self.node_rank or 0) > 0 else "leader"
        return None

    nodes: int | None = None  # nodes of the engine (the LWS size), when known
    # vLLM's own multi-node launch without Ray (--nnodes / --node-rank, the mp executor:
    # 0.33.0:vllm/config/parallel.py:323-326; engine/arg_utils.py:2399-2421 local world size
    # = world size / nnodes; entrypoints/cli/serve.py:218-231 a headless node rank > 0 runs
    # only its local workers' executor)
    nnodes: int | None = None
    node_rank: int | None = None
    # GPUs (ranks) of this pod; default tp·pp / nodes. 0: a head that runs the engine's front
    # processes and the Ray head with no GPU (its ranks all on worker pods)
    local_ranks: int | None = None
    # Facts about where it runs (from the pod spec / node), not vLLM flags.
    gpu_memory_bytes: int | None = None
    gpu_product: str | None = None
    node_memory_bytes: int | None = None
    memory_limit_bytes: int | None = None
    allocator: Allocator = "unknown"
    # /dev/shm: a memory-backed emptyDir is mounted there (dev_shm_memory) with this sizeLimit
    # (dev_shm_bytes; None: no sizeLimit). A sizeLimit alone implies a memory-backed one.
    dev_shm_memory: bool = False
    dev_shm_bytes: int | None = None

    @field_validator(
        "max_model_len",
        "max_num_seqs",
        "max_num_batched_tokens",
        "max_loras",
        "max_cpu_loras",
        "kv_cache_memory_bytes",
    )
    @classmethod
    def _positive(cls, v: int | None, info: ValidationInfo) -> int | None:
        if v is not None and v <= 0:
            raise ValueError(f"{info.field_name} must be a positive integer, got {v}")
        return v

    @field_validator("data_parallel_size_local")
    @classmethod
    def _local(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"data_parallel_size_local must be ≥ 1, got {v}")
        return v

    @field_validator("nodes", "nnodes")
    @classmethod
    def _node(cls, v: int | None, info: ValidationInfo) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"{info.field_name} must be ≥ 1, got {v}")
        return v

    @field_validator("local_ranks")
    @classmethod
    def _local_ranks(cls, v: int | None) -> int | None:
        if v is not None and v < 0:
            raise ValueError(f"local_ranks must be ≥ 0, got {v}")
        return v

    @field_validator("data_parallel_rank", "node_rank")
    @classmethod
    def _rank(cls, v: int | None, info: ValidationInfo) -> int | None:
        if v is not None and v < 0:
            raise ValueError(f"{info.field_name} must be ≥ 0, got {v}")
        return v

    @field_validator("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
    @classmethod
    def _parallel(cls, v: int, info: ValidationInfo) -> int:
        if v < 1:
            raise ValueError(f"{info.field_name} must be ≥ 1, got {v}")
        return v

    @field_validator("gpu_memory_utilization")
    @classmethod
    def _util(cls, v: float | None) -> float | None:
        if v is not None and not 0 < v <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {v}")
        return v


class ResolvedSettings(BaseModel):
    """Every value the estimate used, with the reason it has that value."""

    version: VllmVersion
    device: Device
    dtype: str
    dtype_bytes: float
    kv_cache_dtype_bytes: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool
    enable_lora: bool
    max_lora_rank: int
    max_loras: int
    max_cpu_loras: int
    lora_dtype_bytes: float
    tensor_parallel_size: int
    pipeline_parallel_size: int
    gpu_memory_utilization: float
    cpu_kv_cache_bytes: int | None
    kv_cache_auto_sized: bool  # vLLM sizes the CPU KV cache from memory: pinning it is advised
    swap_space_bytes: int
    allocator: Allocator
    reasons: dict[str, str]
    # vLLM engines this pod runs (local data-parallel ranks), each with its own weights, KV
    # cache and workers: see local_engines()
    engines: int = 1

    @property
    def world_size(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size


def _dtype_name(
    settings: EngineSettings, geometry: ModelGeometry, device: Device, reasons: dict[str, str]
) -> str:
    d = (settings.dtype or "auto").lower()
    if d != "auto":
        if d == "float":
            d = "float32"
        if d not in DTYPE_BYTES:
            raise InvalidSettings("dtype", f"unknown dtype '{settings.dtype}'")
        reasons["dtype"] = "set"
        return d
    config_dtype = (geometry.torch_dtype or "").lower().replace("torch.", "")
    if config_dtype in ("", "float32", "float"):
        # ModelConfig dtype "auto": a float32 (or unspecified) checkpoint is served in bfloat16
        # from 0.9.2 (0.33.0:config/model.py:2441-2445), float16 before.
        chosen = (
            "bfloat16" if VllmVersion.parse(settings.vllm_version).at_least(0, 9, 2) else "float16"
        )
        reasons["dtype"] = f"auto: config torch_dtype '{config_dtype or 'unset'}' → {chosen}"
        return chosen
    if config_dtype not in DTYPE_BYTES:
        raise InvalidSettings(
            "dtype", f"model config torch_dtype '{config_dtype}' is not a known dtype"
        )
    reasons["dtype"] = f"auto: config torch_dtype {config_dtype}"
    return config_dtype


def resolve_settings(
    settings: EngineSettings, geometry: ModelGeometry, notes: list[str] | None = None
) -> ResolvedSettings:
    """Apply vLLM's defaults (per version and device) to what the user set."""
    notes = notes if notes is not None else []
    reasons: dict[str, str] = {}
    version = VllmVersion.parse(settings.vllm_version)
    if settings.vllm_version is None or version.source == "assumed latest":
        notes.append(f"vLLM version unknown: defaults of the latest known release ({version}) used")
        reasons["version"] = "assumed latest"
    else:
        reasons["version"] = "given"
    device = settings.device
    ws = settings.tensor_parallel_size * settings.pipeline_parallel_size

    dtype = _dtype_name(settings, geometry, device, reasons)
    dtype_b = DTYPE_BYTES[dtype]
    kv_dtype = (settings.kv_cache_dtype or "auto").lower()
    kv_b = dtype_b if kv_dtype == "auto" else DTYPE_BYTES.get(kv_dtype)
    if kv_b is None:
        raise InvalidSettings(
            "kv_cache_dtype", f"unknown kv cache dtype '{settings.kv_cache_dtype}'"
        )
    lora_dtype = (settings.lora_dtype or "auto").lower()
    lora_b = dtype_b if lora_dtype == "auto" else DTYPE_BYTES.get(lora_dtype)
    if lora_b is None:
        raise InvalidSettings("lora_dtype", f"unknown lora dtype '{settings.lora_dtype}'")

    # max_model_len: from the model config unless set.
    derived_len = defaults.derived_max_model_len(geometry)
    if settings.max_model_len is not None:
        max_len = settings.max_model_len
        reasons["max_model_len"] = "set"
    elif derived_len is not None:
        max_len = derived_len
        reasons["max_model_len"] = (
            "default: derived from the model config (max_position_embeddings, rope scaling)"
        )
    else:
        raise InvalidSettings(
            "max_model_len",
            "not set and the model config has no max_position_embeddings: pass --max-model-len",
        )

    batching = defaults.batching_defaults(
        version=version,
        device=device,
        world_size=ws,
        usage=settings.usage_context,
        gpu_memory_bytes=settings.gpu_memory_bytes,
        gpu_product=settings.gpu_product,
        max_model_len=max_len,
        max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        enable_chunked_prefill=settings.enable_chunked_prefill,
        performance_mode=settings.performance_mode,
        notes=notes,
        node_memory_bytes=settings.node_memory_bytes,
    )
    reasons.update(batching.reasons)

    # LoRA: an absent --max-lora-rank is vLLM's default (16) on the command-line path.
    rank = settings.max_lora_rank if settings.max_lora_rank is not None else defaults.MAX_LORA_RANK
    reasons["max_lora_rank"] = (
        "set"
        if settings.max_lora_rank is not None
        else f"default {defaults.MAX_LORA_RANK} (vLLM LoRAConfig.max_lora_rank)"
    )
    if settings.enable_lora and rank not in ALLOWED_LORA_RANKS:
        notes.append(
            f"max_lora_rank {rank} is not one of vLLM's allowed ranks "
            f"{ALLOWED_LORA_RANKS}: vLLM refuses to start"
        )
    max_loras = settings.max_loras or defaults.MAX_LORAS
    max_cpu_loras = settings.max_cpu_loras or max_loras
    if settings.max_cpu_loras is not None and settings.max_cpu_loras < max_loras:
        notes.append("max_cpu_loras < max_loras: vLLM refuses to start")

    util = settings.gpu_memory_utilization or defaults.gpu_memory_utilization(version)
    reasons["gpu_memory_utilization"] = (
        "set" if settings.gpu_memory_utilization else f"default {util} for vLLM {version}"
    )

    cpu_kv, auto_sized = _cpu_kv_cache(settings, version, device, util, reasons, notes)
    swap = _swap_space(settings, version, device, reasons)
    engines, reasons["engines"] = local_engines(settings)

    return ResolvedSettings.model_construct(
        version=version,
        device=device,
        dtype=dtype,
        dtype_bytes=dtype_b,
        kv_cache_dtype_bytes=kv_b,
        max_model_len=max_len,
        max_num_seqs=batching.max_num_seqs,
        max_num_batched_tokens=batching.max_num_batched_tokens,
        chunked_prefill=batching.chunked_prefill,
        enable_lora=settings.enable_lora,
        max_lora_rank=rank,
        max_loras=max_loras,
        max_cpu_loras=max_cpu_loras,
        lora_dtype_bytes=lora_b,
        tensor_parallel_size=settings.tensor_parallel_size,
        pipeline_parallel_size=settings.pipeline_parallel_size,
        gpu_memory_utilization=util,
        cpu_kv_cache_bytes=cpu_kv,
        kv_cache_auto_sized=auto_sized,
        swap_space_bytes=swap,
        allocator=settings.allocator,
        reasons=reasons,
        engines=engines,
    )


def local_engines(settings: EngineSettings) -> tuple[int, str]:
    """How many vLLM engines one server (one pod) runs.

    vllm-project/vllm@v0.33.0:vllm/engine/arg_utils.py (EngineArgs.create_engine_config,
    lines 2476-2535 of the wheel's source): with --data-parallel-rank (external load balancing)
    data_parallel_size_local must be 1 (line 2483); else an explicit --data-parallel-size-local
    is used (line 2487); else "local DP size defaults to global DP size if not set" (line 2535).
    vllm/v1/engine/utils.py:280 (CoreEngineProcManager.__init__) starts one EngineCore process
    per local engine (`for index in range(local_engine_count)`, local_engine_count =
    data_parallel_size_local at line 545), each with its own executor, workers, weights and KV
    cache."""
    if settings.data_parallel_rank is not None:
        return 1, "--data-parallel-rank given (external load balancing): one engine per server"
    if settings.data_parallel_size_local is not None:
        return settings.data_parallel_size_local, "--data-parallel-size-local"
    if settings.data_parallel_size > 1:
        return settings.data_parallel_size, (
            "--data-parallel-size: every rank on this node "
            "(vLLM's default for data_parallel_size_local)"
        )
    return 1, "no data parallelism"


def _cpu_kv_cache(
    settings: EngineSettings,
    version: VllmVersion,
    device: Device,
    util: float,
    reasons: dict[str, str],
    notes: list[str],
) -> tuple[int | None, bool]:
    """The CPU backend's KV cache in host memory (None on other devices)."""
    if device != "cpu":
        return None, False
    env = settings.cpu_kvcache_space_gib
    if env is not None:
        gib = int(env)  # vLLM reads it with int(): whole GiB
        if gib == 0 and not version.at_least(0, 10, 1):
            reasons["cpu_kv_cache"] = (
                "VLLM_CPU_KVCACHE_SPACE=0 means the 4 GiB default (vLLM ≤ 0.9.2)"
            )
            return 4 * GiB, False
        if gib == 0:
            notes.append(
                "VLLM_CPU_KVCACHE_SPACE=0 gives no KV cache from vLLM 0.10.1: vLLM refuses to start"
            )
        reasons["cpu_kv_cache"] = f"VLLM_CPU_KVCACHE_SPACE={gib} (GiB)"
        return gib * GiB, False
    if settings.kv_cache_memory_bytes is not None and version.at_least(0, 20):
        # ignored on CPU in 0.10.2-0.19 (cpu_worker.py); honoured from 0.20, the env wins.
        reasons["cpu_kv_cache"] = "--kv-cache-memory-bytes"
        return settings.kv_cache_memory_bytes, False
    pinned = int(PINNED_CPU_KV_GIB_DEFAULT.value * GiB)
    if not version.at_least(0, 13):
        reasons["cpu_kv_cache"] = (
            f"default 4 GiB (VLLM_CPU_KVCACHE_SPACE unset, vLLM {version} ≤ 0.12)"
        )
        return 4 * GiB, False
    if not version.at_least(0, 20):
        if settings.node_memory_bytes:
            kv = settings.node_memory_bytes // 2
            reasons["cpu_kv_cache"] = "default: half the NUMA node's memory (vLLM 0.13-0.19)"
            notes.append(
                "VLLM_CPU_KVCACHE_SPACE unset: vLLM 0.13-0.19 takes half the node's "
                "memory for the KV cache; pin it with VLLM_CPU_KVCACHE_SPACE"
            )
            return kv, True
        reasons["cpu_kv_cache"] = (
            f"assumed {PINNED_CPU_KV_GIB_DEFAULT.value:g} GiB: vLLM 0.13-0.19 takes half the node's memory"
        )
        notes.append(
            "VLLM_CPU_KVCACHE_SPACE unset: vLLM 0.13-0.19 takes half the NUMA node's "
            f"memory, node size unknown; estimate assumes {PINNED_CPU_KV_GIB_DEFAULT.value:g} GiB "
            "as if pinned (set VLLM_CPU_KVCACHE_SPACE)"
        )
        return pinned, True
    reasons["cpu_kv_cache"] = (
        f"assumed {PINNED_CPU_KV_GIB_DEFAULT.value:g} GiB: vLLM ≥ 0.20 sizes it as "
        f"ceil(memory × {util}) − RSS after warmup"
    )
    notes.append(
        f"VLLM_CPU_KVCACHE_SPACE unset: vLLM {version} fills {util:g} of the "
        + ("pod limit" if version.at_least(0, 24) else "node memory")
        + " with KV cache after warmup, so a LoRA prefill that comes later cannot fit; "
        f"estimate assumes {PINNED_CPU_KV_GIB_DEFAULT.value:g} GiB as if pinned "
        "(set VLLM_CPU_KVCACHE_SPACE)"
    )
    return pinned, True


def _swap_space(
    settings: EngineSettings, version: VllmVersion, device: Device, reasons: dict[str, str]
) -> int:
    """CPU swap space for preempted sequences: allocated by the V0 GPU engine only (< 0.8.5);
    the V1 engine never reads it and the flag is gone from 0.18."""
    if version.at_least(0, 18):
        reasons["swap_space"] = "no --swap-space in vLLM ≥ 0.18"
        return 0
    if version.at_least(0, 8, 5) or device == "cpu":
        reasons["swap_space"] = "not allocated (V1 engine / CPU backend)"
        return 0
    gib = (
        settings.swap_space_gib if settings.swap_space_gib is not None else defaults.SWAP_SPACE_GIB
    )
    reasons["swap_space"] = (
        "set"
        if settings.swap_space_gib is not None
        else f"default {defaults.SWAP_SPACE_GIB} GiB per GPU (V0 engine)"
    )
    return int(gib * GiB) * settings.tensor_parallel_size
