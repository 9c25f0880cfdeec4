"""Containers that start no model server (help, a load balancer or client image taking --model)
are never sized or patched."""

from __future__ import annotations


import pytest

from tests.hardening.hostile_objects import (
    IMG,
    deployment,
)
from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads import read_workloads

GiB = 2**30


# ---------------------------------------------------------------- not a server
@pytest.mark.parametrize("command", [
    ["sleep", "infinity"], ["/bin/sh", "-c", "sleep infinity"],
    ["sh", "-c", "while true; do sleep 30; done"], ["tail", "-f", "/dev/null"],
    ["sh", "-c", "trap : TERM INT; sleep infinity & wait"],
    ["sh", "-c", "echo vllm serve Qwen/Qwen3-0.6B; sleep inf"],
    ["sh", "-c", "sleep inf # vllm serve Qwen/Qwen3-0.6B"],
    ["vllm", "serve", "--help"], ["vllm", "serve", "Qwen/Qwen3-0.6B", "--help=all"],
    ["python3", "-m", "vllm.entrypoints.openai.api_server", "-h"],
])
@pytest.mark.parametrize("mode", ["mutate", "enforce"])
def test_a_pod_named_vllm_that_starts_no_server_is_never_patched(command, mode):
    from vllm_sizer.policy.settings import PolicySettings

    obj = deployment({"image": IMG, "command": command, "resources": {"limits": {"memory": "64Mi"}}},
                     name="vllm-server")
    obj["spec"]["template"]["spec"]["containers"][0]["name"] = "vllm"
    d = review_object(obj, None, PolicySettings(mode=mode))
    assert d.patch == [] and d.verdict == "allow" and read_workloads(obj) == []


def test_help_before_the_real_server_leaves_the_server():
    (w,) = read_workloads(deployment({"image": IMG, "command": [
        "sh", "-c", "vllm serve --help; exec vllm serve Qwen/Qwen3-8B --max-model-len 4096"]}))
    assert w.settings.max_model_len == 4096


@pytest.mark.parametrize("image,args", [
    ("ghcr.io/acme/vllm-lb:1", ["--model", "Qwen/Qwen3-0.6B", "--port", "8000"]),
    ("ghcr.io/acme/vllm-ui:1", ["Qwen/Qwen3-0.6B", "--port", "3000"]),
    ("ghcr.io/acme/vllm-frontend:1", ["--model", "Qwen/Qwen3-0.6B"]),
    ("ghcr.io/acme/vllm-client:1", ["--model", "Qwen/Qwen3-0.6B", "--host", "vllm"]),
    ("ghcr.io/acme/vllm-loadtest:1", ["--model", "Qwen/Qwen3-0.6B", "--max-num-seqs", "64"]),
    ("ghcr.io/acme/VLLM-Router:1", ["--model", "Qwen/Qwen3-0.6B"]),
])
def test_an_image_named_like_vllm_whose_args_a_router_takes_too_is_untouched(image, args):
    obj = deployment({"image": image, "args": args, "resources": {"limits": {"memory": "64Mi"}}})
    assert read_workloads(obj) == [] and review_object(obj).patch == []
