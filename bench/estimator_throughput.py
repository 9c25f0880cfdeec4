"""Estimator throughput: MemoryReports per second on one core for a mix of models and settings.

Run: taskset -c 0 .venv/bin/python bench/estimator_throughput.py [--seconds 5]
The baseline measured in the same run is resolve_settings alone (defaults, no report), so the
ratio says what building the report costs on top of reading the settings.
"""

from __future__ import annotations

import argparse
import itertools
import time

from vllm_sizer.estimator import (
    EngineSettings,
    ModelGeometry,
    build_report,
    model_config,
    resolve_settings,
)

MODELS = [
    "Qwen/Qwen3-0.6B",
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen3-30B-A3B",
    "deepseek-ai/DeepSeek-V3",
    "google/gemma-3-27b-it",
    "openai/gpt-oss-20b",
]
SETTINGS = [
    EngineSettings(
        device="cpu",
        vllm_version="0.11.0",
        enable_lora=True,
        max_lora_rank=256,
        max_num_batched_tokens=2394,
        max_num_seqs=1,
        max_model_len=8192,
    ),
    EngineSettings(device="cpu", vllm_version="0.26.0", enable_lora=True, max_lora_rank=64),
    EngineSettings(
        device="cuda",
        vllm_version="0.33.0",
        gpu_memory_bytes=80 * 1024**3,
        tensor_parallel_size=4,
        max_model_len=32768,
    ),
    EngineSettings(device="unknown", max_model_len=4096),
]


def run(fn, cases, seconds: float) -> float:
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    for geo, s in itertools.cycle(cases):
        fn(geo, s)
        n += 1
        if n % 256 == 0 and time.perf_counter() > deadline:
            break
    return n / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    geos = [ModelGeometry.from_hf_config(model_config(m)) for m in MODELS]
    cases = [(g, s) for g in geos for s in SETTINGS]
    base = run(lambda g, s: resolve_settings(s, g), cases, args.seconds)
    full = run(lambda g, s: build_report(g, s), cases, args.seconds)
    parse = run(
        lambda g, s: ModelGeometry.from_hf_config(model_config(MODELS[0])), cases, args.seconds
    )
    print(f"cases: {len(cases)} (models × settings)")
    print(f"resolve_settings only (baseline): {base:,.0f}/s")
    print(f"build_report (full estimate):     {full:,.0f}/s  ({full / base:.2f}x baseline)")
    print(f"geometry from config.json:        {parse:,.0f}/s")


if __name__ == "__main__":
    main()
