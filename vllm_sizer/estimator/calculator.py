"""Assemble a MemoryReport from a model geometry and resolved engine settings.

Host total (what the pod limit must cover) = Σ "sum" terms + max("max-of-transients" terms).
On the CPU backend everything lives in host memory. On GPU backends host memory is the
processes' runtime, loading buffers, offload / swap / caches; the device side is reported
separately per GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import __version__
from . import constants as C
from .deepseek_v4 import notes as deepseek_v4_notes
from .errors import ImpossibleEstimate, InvalidSettings
from .geometry import ModelGeometry
from .gpu_device import device_side, kv_bytes_per_token_per_rank, served_geometry
from .host_processes import KvOffload, Processes, host_terms, node_ranks
from .lora import (
    calculate_lora_adapter_memory,
    calculate_lora_logits_scratch,
    calculate_lora_prefill_scratch_bytes,
    has_vocab_lora,
)
from .report import MemoryReport, Term
from .settings import Allocator, Device, EngineSettings, ResolvedSettings, resolve_settings
from .units import GiB


def _kv_offload_settings(s: EngineSettings) -> KvOffload:
    return KvOffload(
        size_gib=s.kv_offloading_size_gib,
        backend=s.kv_offloading_backend,
        connector=s.kv_host_connector or s.kv_connector,
        cpu_bytes=s.kv_connector_cpu_bytes,
        cpu_blocks=s.kv_connector_cpu_blocks,
        spec=s.kv_connector_spec,
        simple=s.simple_kv_offload,
        prefix_caching=s.enable_prefix_caching,
        lmcache_gb=s.lmcache_local_cpu_gb,
        lmcache_local_cpu=s.lmcache_local_cpu,
    )


def _process_settings(s: EngineSettings, g: ModelGeometry) -> dict[str, Any]:
    """The data-parallel load-balancing mode and rank vLLM's serve command reads
    (host_processes.process_counts): external with --data-parallel-rank or
    --data-parallel-external-lb, hybrid with --data-parallel-start-rank or
    --data-parallel-hybrid-lb (0.19.0:vllm/entrypoints/cli/serve.py:64-72)."""
    return {
        "data_parallel_size": s.data_parallel_size,
        "headless": s.headless or s.api_server_count == 0,
        "external_lb": s.data_parallel_external_lb or s.data_parallel_rank is not None,
        "hybrid_lb": s.data_parallel_hybrid_lb or s.data_parallel_start_rank is not None,
        "first_rank": (s.data_parallel_rank or 0) == 0 and (s.data_parallel_start_rank or 0) == 0,
        "moe": g.moe is not None,
    }


def _activation_bytes(g: ModelGeometry, r: ResolvedSettings, tokens: int) -> int:
    """Largest live activations of one forward pass on one worker (derived, see constants)."""
    tp = r.tensor_parallel_size
    inter = g.intermediate_size
    if g.moe:
        inter = max(
            inter if g.moe.num_moe_layers < g.num_layers else 0,
            g.moe.experts_per_token * g.moe.expert_intermediate_size,
        )
    mlp_width = (3 if g.gated_mlp else 1) * inter / tp  # gate_up output [2·inter] + activated
    per_token = 3 * g.hidden_size + g.residual_width + (g.q_width + 2 * g.kv_width) / tp + mlp_width
    sampler = C.ACTIVATION_SAMPLER_COPIES.value * 4 * r.max_num_seqs * g.vocab_size / tp
    return int(tokens * per_token * r.dtype_bytes + sampler)


@dataclass
class _Parts:
    terms: list[Term]
    notes: list[str]
    limits: tuple[int | None, int | None] = (None, None)

    def add(self, name: str, n: float, enters: str, source: str) -> int:
        # trusted values built here: skip validation (this runs on every admission review)
        self.terms.append(
            Term.model_construct(name=name, bytes=int(n), enters=enters, source=source)
        )
        return int(n)


def build_report(
    geometry: ModelGeometry, settings: EngineSettings, model: str | None = None
) -> MemoryReport:
    """The estimator's single entry point: geometry + engine settings → MemoryReport."""
    notes: list[str] = []
    r = resolve_settings(settings, geometry, notes)
    if r.enable_lora and (not r.max_lora_rank or r.max_lora_rank <= 0):
        raise InvalidSettings("max_lora_rank", "LoRA is enabled but the rank is 0 or unset")
    p = _Parts([], notes)
    local: int | None = None  # this node's ranks when the engine spans several pods
    cpu = r.device == "cpu"
    ws = r.world_size
    tokens = r.max_num_batched_tokens

    weights = geometry.weight_bytes(r.dtype_bytes)
    if geometry.quantization:
        notes.append(
            f"{geometry.quantization.method} weights at "
            f"{geometry.quantization.bytes_per_param:.3f} bytes/parameter (scales included)"
            + "".join(
                f"; {p.replace('_', ' ')} at {b:.3f}" for p, b in geometry.quantization.part_bytes
            )
        )
        if kept := geometry.unquantized_parameters():
            parts = ", ".join(p.replace("_", " ") for p, _ in geometry.quantization.unquantized)
            notes.append(
                f"{kept / 1e9:.2f}B parameters ({parts}) left unquantized by the checkpoint's "
                "ignore list: counted at the model dtype"
            )
    if geometry.compressed_attention:
        notes.extend(deepseek_v4_notes(geometry.compressed_attention))
    if geometry.vision_parameters:
        notes.append("vision tower counted from vision_config (approximate ViT formula)")
    for tower in geometry.uncounted_towers:
        notes.append(
            f"the model's {tower} is not counted (no formula for its config here): the weights "
            "are under-estimated by its size; supply a measured limit or a config without it"
        )

    if r.device == "unknown":
        notes.append(
            "device unknown: sized as an accelerator pod (host side only); on the CPU "
            "backend the KV cache and LoRA scratch also need host memory "
            "(say --device cpu, or use a -cpu image)"
        )
    elif r.device == "other":
        notes.append("other accelerator (Gaudi/TPU/Neuron): host side only, no CPU-only terms")

    act = _activation_bytes(geometry, r, tokens)
    adapter_host = adapter_dev = scratch = logits = 0
    scratch_case = None
    if r.enable_lora:
        vocab_lora = has_vocab_lora(geometry, r.version)
        adapter_host, adapter_dev = calculate_lora_adapter_memory(
            geometry,
            r.max_lora_rank,
            r.lora_dtype_bytes,
            r.max_loras,
            r.max_cpu_loras,
            r.device,
            r.tensor_parallel_size,
            vocab_lora,
        )
        if cpu:
            est = calculate_lora_prefill_scratch_bytes(
                geometry,
                r.max_lora_rank,
                tokens,
                r.lora_dtype_bytes,
                r.allocator,
                r.tensor_parallel_size,
                workers=ws,
                fully_sharded=settings.fully_sharded_loras,
            )
            scratch, scratch_case = est.bytes, est.case
            notes.extend(est.notes)
            if vocab_lora:
                logits = calculate_lora_logits_scratch(
                    geometry, r.max_lora_rank, r.lora_dtype_bytes, r.max_num_seqs
                )
            else:
                notes.append(
                    f"no lm_head LoRA for {geometry.model_type or 'this model'} in vLLM "
                    f"{r.version}: no logits gather"
                )
            notes.append(_lora_timing_note(r))

    procs: Processes | None = None
    if cpu:
        kv = r.cpu_kv_cache_bytes or 0
        need = geometry.kv_bytes_per_token(r.kv_cache_dtype_bytes) * r.max_model_len
        if kv < need:
            notes.append(
                f"KV cache {kv / GiB:.2f} GiB holds fewer than max_model_len="
                f"{r.max_model_len} tokens ({need / GiB:.2f} GiB): vLLM refuses to start"
            )
        p.add("weights", weights, "sum", f"{geometry.parameter_count():,} parameters × {r.dtype}")
        p.add("kv_cache", kv, "sum", r.reasons.get("cpu_kv_cache", ""))
        p.add(
            "activations",
            act * ws,
            "sum",
            f"one forward pass of {tokens} batched tokens per worker (derived)",
        )
        runtime = (
            C.CPU_RUNTIME_BYTES.value
            + C.CPU_RUNTIME_PER_WEIGHT_BYTE.value * weights
            + (ws - 1) * C.WORKER_PROCESS_BYTES.value
        )
        p.add("runtime_overhead", runtime, "sum", C.CPU_RUNTIME_BYTES.source)
        p.add(
            "lora_adapters",
            adapter_host,
            "sum",
            f"{r.max_loras} stacked slot(s) + {r.max_cpu_loras} cached adapter(s) at rank "
            f"{r.max_lora_rank}, all modules (upper bound)",
        )
        p.add(
            "lora_prefill_scratch",
            scratch,
            "max-of-transients",
            f"CPU bgmv gather at T={tokens}, rank {r.max_lora_rank} ({scratch_case})",
        )
        p.add(
            "lora_logits_scratch",
            logits,
            "max-of-transients",
            f"lm_head LoRA B gathered per sampled row: {r.max_num_seqs} rows × vocab × rank",
        )
        device_total, fits = None, None
    else:
        role = settings.node_position
        if role is not None:
            local, why = node_ranks(
                ws * r.engines,
                nodes=settings.mp_nodes or settings.nodes,
                # vLLM's mp executor runs world size / nnodes workers on each node, whatever
                # the pod's GPUs (0.33.0:vllm/config/parallel.py:839-840 local_world_size)
                local_ranks=None if settings.mp_nodes else settings.local_ranks,
            )
            notes.append(
                f"multi-node {role} pod: host terms for this node only ({why}); "
                "the device side is per GPU as on one node"
            )
        ht = host_terms(
            r.version,
            tp=r.tensor_parallel_size,
            pp=r.pipeline_parallel_size,
            dp=r.engines,
            api_servers=settings.api_server_count,
            weights_bytes=weights,
            num_layers=geometry.num_layers,
            cpu_offload_gb=settings.cpu_offload_gb or 0,
            swap_bytes=r.swap_space_bytes,
            kv=_kv_offload_settings(settings),
            load_format=settings.load_format,
            quantization=settings.quantization,
            compiled=r.version.at_least(0, 8, 5) and not settings.enforce_eager,
            **_process_settings(settings, geometry),
            kv_bytes_per_token_per_rank=kv_bytes_per_token_per_rank(
                geometry,
                r.kv_cache_dtype_bytes,
                r.tensor_parallel_size,
                r.pipeline_parallel_size,
            ),
            device=r.device,
            dev_shm_memory=settings.dev_shm_memory or settings.dev_shm_bytes is not None,
            dev_shm_bytes=settings.dev_shm_bytes,
            node_role=settings.node_position,
            local_ranks=local,
            ray=not settings.mp_nodes,
        )
        procs = ht.processes
        for name, n, enters, source in ht.terms:
            p.add(name, n, enters, source)
        notes.extend(ht.notes)
        runtime = sum(
            n
            for name, n, _, _ in ht.terms
            if name
            in ("runtime_overhead", "gpu_worker_processes", "compile_workers", "ray_node_processes")
        )
        p.add(
            "lora_adapters",
            adapter_host,
            "sum",
            f"host LRU cache of {r.max_cpu_loras} adapter(s) at rank {r.max_lora_rank}",
        )
        kv = 0
        device_total, fits = _device_side(geometry, r, settings, adapter_dev, p)
        act = next(t.bytes for t in p.terms if t.name == "device_activations")

    if geometry.vision_parameters:
        gb = settings.mm_processor_cache_gb
        gb = C.MM_PROCESSOR_CACHE_GIB_DEFAULT.value if gb is None else gb
        # one cache in every API-server process and every engine core
        caches = 2 if cpu or procs is None else procs.api_servers + procs.engine_cores
        p.add(
            "mm_processor_cache",
            caches * gb * GiB,
            "sum",
            f"{caches} cache(s) (API servers + engine cores): "
            + C.MM_PROCESSOR_CACHE_GIB_DEFAULT.source,
        )
    if settings.dev_shm_memory or settings.dev_shm_bytes:
        # A memory-backed /dev/shm is charged as vLLM writes it, never beyond its sizeLimit.
        mq, parts = C.dev_shm_message_queue_bytes(
            r.device,
            r.tensor_parallel_size,
            r.pipeline_parallel_size,
            # the mp executor's nodes keep the multiproc message queue (an upper bound here)
            node_ranks=None if settings.mp_nodes else local,
        )
        cap = settings.dev_shm_bytes
        shm = min(mq, cap) if cap else mq
        capped = (
            f", capped by the emptyDir sizeLimit {cap / 2**20:.0f} MiB" if cap and cap < mq else ""
        )
        if shm:
            p.add(
                "dev_shm",
                shm,
                "sum",
                f"memory-backed /dev/shm: vLLM's message queues ({parts}){capped}",
            )
            notes.append(C.DEV_SHM_NOTE)

    if r.engines > 1:
        # every local data-parallel engine is a full copy of the per-engine terms
        # (settings.local_engines cites vLLM's source); the pod's /dev/shm is shared
        # On GPU backends the host process model (host_processes.py) already counts every
        # engine's processes; only the adapters each engine caches are per engine.
        def per_engine(t: Term) -> bool:
            return t.name != "dev_shm" if cpu else t.name == "lora_adapters"

        p.terms = [
            t
            if t.enters not in ("sum", "max-of-transients") or not per_engine(t)
            else Term.model_construct(
                name=t.name,
                bytes=t.bytes * r.engines,
                enters=t.enters,
                source=f"{t.source}; × {r.engines} data-parallel engines",
            )
            for t in p.terms
        ]
        notes.append(
            f"{r.engines} data-parallel engines in this pod ({r.reasons['engines']}): "
            + (
                "each engine process holds its own weights, KV cache, activations and "
                "workers, so the host terms count once per engine"
                if cpu
                else "the host counts each engine's core and worker processes"
            )
            + (
                ""
                if cpu
                else f"; it needs {r.engines * ws} GPUs (engines × TP × PP), "
                "the device side is per GPU"
            )
        )
    negative = [t for t in p.terms if t.bytes < 0]
    if negative or geometry.parameter_count() <= 0:
        # a size field of the config (max_position_embeddings, moe_intermediate_size,
        # qk_head_dim, ...) is negative: vLLM could not build the model, and a negative term
        # would make any limit "cover" the estimate
        what = ", ".join(t.name for t in negative) or "the parameter count"
        raise ImpossibleEstimate(
            f"the model config gives a negative {what} (a size field in its config.json is "
            "negative or zero): not sized"
        )
    summed = sum(t.bytes for t in p.terms if t.enters == "sum")
    transients = max([t.bytes for t in p.terms if t.enters == "max-of-transients"] or [0])
    total = summed + transients
    if scratch and logits:
        notes.append(
            "LoRA prefill scratch and logits gather never coexist: the larger counts "
            f"({max(scratch, logits) / GiB:.2f} GiB)"
        )

    other = sum(
        t.bytes
        for t in p.terms
        if t.enters == "sum"
        and t.name
        in {
            "cpu_offload",
            "swap_space",
            "mm_processor_cache",
            "dev_shm",
            "kv_offload_buffer",
            "lmcache_cpu_buffer",
            "loading_anonymous",
        }
    )
    return MemoryReport.model_construct(
        model=model or settings.model,
        parameters=geometry.parameter_count(),
        weights_bytes=weights,
        kv_cache_bytes=kv if cpu else 0,
        activation_bytes=act * ws if cpu else act,
        lora_adapter_bytes=adapter_host + adapter_dev,
        lora_prefill_scratch_bytes=scratch,
        lora_logits_scratch_bytes=logits,
        runtime_overhead_bytes=int(runtime),
        other_host_bytes=int(other),
        total_memory_bytes=int(total),
        device_memory_bytes=device_total,
        device_fits=fits,
        device_max_model_len=p.limits[0],
        device_max_num_seqs=p.limits[1],
        lora_scratch_case=scratch_case,
        kv_cache_auto_sized=r.kv_cache_auto_sized,
        terms=p.terms,
        notes=notes,
        resolved=r,
        estimator_version=__version__,
    )


def _lora_timing_note(r: ResolvedSettings) -> str:
    """When the CPU LoRA scratch first appears (docs/research/vllm-defaults.md §7)."""
    v = r.version
    if v.at_least(0, 27):
        return (
            "vLLM ≥ 0.27 skips CPU warmup when LoRA forces compilation mode NONE: the scratch "
            "arrives at the first long LoRA request"
        )
    if v.at_least(0, 20):
        return (
            "vLLM 0.20-0.26 warm up with a profile run of max_num_batched_tokens with LoRA "
            "inactive: the scratch arrives at the first long LoRA request"
        )
    if v.at_least(0, 12):
        return (
            "vLLM 0.12-0.19 warm up on a few tokens without LoRA: the scratch arrives at the "
            "first long LoRA request"
        )
    if v.at_least(0, 10):
        return (
            "vLLM 0.10-0.11 warm up with dummy LoRAs on max(16, max_num_seqs) tokens: the "
            "full scratch comes with the first long request"
        )
    return "the scratch arrives with the first LoRA prefill of max_num_batched_tokens tokens"


def _device_side(
    g: ModelGeometry, r: ResolvedSettings, settings: EngineSettings, adapter_dev: int, p: _Parts
) -> tuple[int, bool | None]:
    """Per-GPU memory of the worst rank as vLLM's profiler accounts it (gpu_device.py)."""
    tp, pp = r.tensor_parallel_size, r.pipeline_parallel_size
    sg = served_geometry(g, settings.quantization)
    lora = int(adapter_dev / tp) if adapter_dev else 0
    d = device_side(
        sg,
        r.version,
        dtype_bytes=r.dtype_bytes,
        kv_dtype_bytes=r.kv_cache_dtype_bytes,
        tokens=r.max_num_batched_tokens,
        max_num_seqs=r.max_num_seqs,
        max_model_len=r.max_model_len,
        tp=tp,
        pp=pp,
        util=r.gpu_memory_utilization,
        gpu_memory_bytes=settings.gpu_memory_bytes,
        enforce_eager=settings.enforce_eager,
        cpu_offload_bytes=(settings.cpu_offload_gb or 0) * 1e9,
        lora_bytes=lora,
        kv_cache_memory_bytes=settings.kv_cache_memory_bytes,
    )
    p.notes.extend(d.notes)
    p.add(
        "device_weights",
        d.weights,
        "device",
        "weights / TP (PP: the largest stage) − cpu_offload_gb, as served"
        + (f" (--quantization {settings.quantization})" if sg is not g else ""),
    )
    p.add(
        "device_lora_buffers",
        lora,
        "device",
        "stacked adapter slots (max_loras), allocated with the weights (vLLM logs them as weights)",
    )
    p.add(
        "device_activations",
        d.activation,
        "device",
        f"profile run: forward of {r.max_num_batched_tokens} tokens, then the sampler over "
        f"{min(r.max_num_seqs, r.max_num_batched_tokens)} rows × vocab "
        f"({'Triton' if r.version.at_least(0, 17) else 'sort'} top-k/top-p; not split by TP)",
    )
    p.add("device_non_torch", d.non_torch, "device", d.non_torch_source)
    p.add(
        "device_cuda_graphs",
        d.graphs,
        "device",
        (C.GPU_GRAPH_MOE.source if sg.moe else C.GPU_GRAPH_DENSE_BASE.source)
        + (
            "; subtracted from the KV cache (vLLM ≥ 0.20, assumed)"
            if r.version.at_least(0, 20)
            else "; captured after the KV cache, outside the budget"
        ),
    )
    p.add(
        "device_cuda_context",
        d.context,
        "device",
        "outside gpu_memory_utilization: "
        + (C.GPU_CONTEXT_TP1 if tp * pp == 1 else C.GPU_CONTEXT_TPN).source,
    )
    if d.budget is not None:
        p.add(
            "device_kv_cache",
            max(d.kv or 0, 0),
            "device",
            f"gpu_memory_utilization {r.gpu_memory_utilization} × GPU memory − the rest",
        )
        if d.fits is False:
            p.notes.append(
                f"GPU does not fit: KV cache {max(d.kv or 0, 0) / GiB:.2f} GiB < "
                f"{d.one_seq_kv / GiB:.2f} GiB for one max_model_len="
                f"{r.max_model_len} sequence (budget {d.budget / GiB:.1f} GiB)"
            )
        p.limits = (d.max_model_len_fit, d.max_num_seqs_fit)
        fits = False if (d.fits is False or not d.starts) else d.fits
        return int(d.budget + d.context + (d.graphs if not r.version.at_least(0, 20) else 0)), fits
    p.notes.append(
        "GPU memory size unknown: device-side fit check skipped (KV cache fills "
        f"{r.gpu_memory_utilization:g} of each GPU)"
    )
    p.add("device_kv_cache_min", d.one_seq_kv, "device", "KV for one max_model_len sequence")
    return int(
        d.weights + lora + d.activation + d.non_torch + d.graphs + d.context + d.one_seq_kv
    ), None


# ---------------------------------------------------------------------------- seed-compatible API


@dataclass
class LoraConfig:
    """The seed library's LoRA switch: enabled, max_loras, max_lora_rank (no default: a direct
    library call must say the rank)."""

    enabled: bool = False
    max_loras: int = 1
    max_lora_rank: int | None = None
    max_cpu_loras: int | None = None
    lora_dtype: str = "auto"


def _geometry(config: Mapping[str, Any] | ModelGeometry) -> ModelGeometry:
    return config if isinstance(config, ModelGeometry) else ModelGeometry.from_hf_config(config)


def _lora_rank(lora_config: Any) -> int:
    rank = getattr(lora_config, "max_lora_rank", None)
    if not rank or int(rank) <= 0:
        raise InvalidSettings(
            "max_lora_rank",
            "LoRA is enabled but max_lora_rank is "
            f"{rank!r}: pass the rank the server runs with (--max-lora-rank)",
        )
    return int(rank)


class ModelMemoryCalculator:
    """The names people know from the first vllm-sizer library, on top of build_report."""

    def calculate_memory(
        self,
        config: Mapping[str, Any] | ModelGeometry,
        *,
        batch_size: int = 1,
        seq_length: int = 2048,
        precision: str = "auto",
        lora_config: Any = None,
        max_num_batched_tokens: int | None = None,
        tensor_parallel: int = 1,
        device: Device = "cpu",
        vllm_version: str | None = None,
        cpu_kvcache_space_gib: float | None = None,
        allocator: Allocator = "unknown",
        model: str | None = None,
    ) -> MemoryReport:
        """seq_length is max_model_len; max_num_batched_tokens None means seq_length (the
        seed's unchunked reading: one sequence prefilled in one step)."""
        lora_on = bool(getattr(lora_config, "enabled", False))
        settings = EngineSettings(
            model=model,
            vllm_version=vllm_version,
            device=device,
            dtype=precision,
            max_model_len=seq_length,
            max_num_seqs=batch_size,
            max_num_batched_tokens=max_num_batched_tokens or seq_length,
            enable_lora=lora_on,
            max_lora_rank=_lora_rank(lora_config) if lora_on else None,
            max_loras=getattr(lora_config, "max_loras", None) if lora_on else None,
            max_cpu_loras=getattr(lora_config, "max_cpu_loras", None) if lora_on else None,
            lora_dtype=getattr(lora_config, "lora_dtype", "auto") if lora_on else "auto",
            tensor_parallel_size=tensor_parallel,
            cpu_kvcache_space_gib=cpu_kvcache_space_gib,
            allocator=allocator,
        )
        return build_report(_geometry(config), settings, model)

    def calculate_lora_adapter_memory(
        self,
        config: Mapping[str, Any] | ModelGeometry,
        lora_config: Any,
        tensor_parallel: int = 1,
        device: str = "cpu",
        dtype_bytes: float = 2,
    ) -> int:
        """Adapter storage in bytes (host + device)."""
        g = _geometry(config)
        max_loras = int(getattr(lora_config, "max_loras", 1) or 1)
        cpu_loras = int(getattr(lora_config, "max_cpu_loras", None) or max_loras)
        host, dev = calculate_lora_adapter_memory(
            g, _lora_rank(lora_config), dtype_bytes, max_loras, cpu_loras, device, tensor_parallel
        )
        return host + dev

    def calculate_lora_prefill_scratch(
        self,
        config: Mapping[str, Any] | ModelGeometry,
        lora_config: Any,
        batched_tokens: int,
        tensor_parallel: int = 1,
        target_device: str | None = None,
        dtype_bytes: float = 2,
        allocator: str = "unknown",
    ) -> tuple[int, list[str]]:
        """(bytes, notes) of the CPU LoRA prefill scratch; 0 on CUDA (fixed Triton buffers)."""
        g = _geometry(config)
        rank = _lora_rank(lora_config)
        if batched_tokens is None or int(batched_tokens) <= 0:
            raise InvalidSettings(
                "max_num_batched_tokens", f"must be a positive token count, got {batched_tokens!r}"
            )
        if target_device not in (None, "cpu"):
            return 0, [f"{target_device}: no per-token LoRA gather (fixed kernel buffers)"]
        est = calculate_lora_prefill_scratch_bytes(
            g, rank, int(batched_tokens), dtype_bytes, allocator, tensor_parallel, tensor_parallel
        )
        return est.bytes, list(est.notes)


def calculate_memory(config: Mapping[str, Any] | ModelGeometry, **kwargs: Any) -> MemoryReport:
    """Module-level form of ModelMemoryCalculator().calculate_memory."""
    return ModelMemoryCalculator().calculate_memory(config, **kwargs)
