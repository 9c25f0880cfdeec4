"""An enforce-mode denial always names something to act on: when no --max-num-batched-tokens
fits the limit (the base alone is over it), the levers that do fit (KV space, LoRA rank,
max_loras, max_model_len), each with its value, from the same inverse (estimator/inverse.py)."""

from __future__ import annotations

import re

import pytest

from vllm_sizer.estimator import build_report
from vllm_sizer.estimator.catalog import cached_geometry, model_config
from vllm_sizer.estimator.inverse import levers_within
from vllm_sizer.policy.review import review_object
from vllm_sizer.policy.settings import PolicySettings
from vllm_sizer.workloads.quantity import parse_quantity


def deployment(args, limit, env=None):
    c = {"name": "vllm", "image": "vllm/vllm-openai-cpu:v0.11.0",
         "command": ["vllm", "serve", "Qwen/Qwen3-0.6B", *args],
         "env": env if env is not None else [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "16"}],
         "resources": {"limits": {"memory": limit}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "a"},
            "spec": {"template": {"spec": {"containers": [c]}}}}


LORA = ["--enable-lora", "--max-lora-rank", "16", "--max-loras", "4",
        "--max-num-batched-tokens", "2048", "--max-model-len", "8192"]
MANY_ADAPTERS = ["--enable-lora", "--max-lora-rank", "256", "--max-loras", "64",
                 "--max-cpu-loras", "64", "--max-num-batched-tokens", "2048", "--max-model-len", "8192"]
KV2 = [{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "2"}]


@pytest.mark.parametrize("args,limit,env,lever", [
    (LORA, "12Gi", None, "env VLLM_CPU_KVCACHE_SPACE"),  # a 16 GiB KV cache alone is over
    (LORA, "10Gi", None, "env VLLM_CPU_KVCACHE_SPACE"),
    (MANY_ADAPTERS, "12Gi", KV2, "--max-lora-rank"),  # 64 rank-256 adapters' storage is over
])
def test_denial_names_levers_that_fit_when_no_token_count_does(args, limit, env, lever):
    obj = deployment(args, limit, env)
    d = review_object(obj, None, PolicySettings(mode="enforce"))
    c = d.containers[0]
    assert c.verdict == "deny" and c.fitting_tokens is None
    assert c.levers, c.message
    assert "no --max-num-batched-tokens fits" in c.message
    # every named lever, applied alone, really fits the limit (and is what the message says)
    geometry = cached_geometry(model_config("Qwen/Qwen3-0.6B"))
    settings = c.workload.settings
    field = {"env VLLM_CPU_KVCACHE_SPACE": "cpu_kvcache_space_gib", "--max-lora-rank": "max_lora_rank",
             "--max-loras": "max_loras", "--max-model-len": "max_model_len"}
    for what, value in c.levers:
        assert value in c.message and what.replace("env ", "") in c.message
        report = build_report(geometry, settings.model_copy(update={field[what]: int(value)}))
        assert report.total_memory_bytes <= parse_quantity(limit), (what, value)
        assert not any("refuses to start" in n for n in report.notes)
    assert any(what == lever for what, _ in c.levers)


def test_a_denial_says_when_no_single_lever_fits():
    big = ["--enable-lora", "--max-lora-rank", "256", "--max-num-batched-tokens", "8192",
           "--max-model-len", "8192"]
    c = review_object(deployment(big, "20Gi"), None, PolicySettings(mode="enforce")).containers[0]
    assert c.verdict == "deny" and c.levers == []
    assert "alone fits 20.0Gi" in c.message and "at least" in c.message


def test_levers_are_the_largest_that_fit():
    geometry = cached_geometry(model_config("Qwen/Qwen3-0.6B"))
    ws = review_object(deployment(LORA, "10Gi"), None, PolicySettings(mode="enforce")).containers
    settings = ws[0].workload.settings
    limit = 10 * 1024**3
    levers = dict(levers_within(geometry, settings, limit))
    kv = int(levers["env VLLM_CPU_KVCACHE_SPACE"])
    over = build_report(geometry, settings.model_copy(update={"cpu_kvcache_space_gib": kv + 1}))
    assert over.total_memory_bytes > limit


def test_a_denial_with_a_fitting_token_count_still_names_it():
    d = review_object(deployment(LORA, "14Gi", env=[{"name": "VLLM_CPU_KVCACHE_SPACE", "value": "4"}]),
                      None, PolicySettings(mode="enforce"))
    c = d.containers[0]
    if c.fitting_tokens:
        assert re.search(r"--max-num-batched-tokens \d+ to fit", c.message)
