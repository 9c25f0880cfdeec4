"""A vLLM invocation is an executed command, not a mention; an image name is evidence only with
a vLLM command or a known ENTRYPOINT. Containers that only mention `vllm serve` are untouched."""

from __future__ import annotations

import pytest

from vllm_sizer.policy.review import review_object
from vllm_sizer.workloads.reader import read_workloads


def deployment(container):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "namespace": "a"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", **container}]}}}}


MENTIONS = [
    ["docker", "run", "--rm", "vllm/vllm-openai:v0.11.0", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["kubectl", "exec", "pod-0", "--", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["ssh", "gpu-host", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["ssh", "gpu-host", "python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "x"],
    ["kubectl", "exec", "pod-0", "--", "sh", "-c", "vllm serve Qwen/Qwen3-0.6B"],
    ["docker", "run", "img", "bash", "-c", "vllm serve Qwen/Qwen3-0.6B"],
    ["sh", "-c", "docker run img vllm serve Qwen/Qwen3-0.6B"],
    ["sh", "-c", "ssh h 'vllm serve Qwen/Qwen3-0.6B' && kubectl logs x"],
    ["grep", "vllm serve", "/var/log/x"],
    ["python3", "deploy.py", "vllm", "serve"],
    ["python3", "-c", "import os; os.system('vllm serve x')"],
]


@pytest.mark.parametrize("argv", MENTIONS)
def test_mentions_are_not_vllm_containers(argv):
    obj = deployment({"image": "bitnami/kubectl:1.30", "command": argv,
                      "resources": {"limits": {"memory": "64Mi"}}})
    assert read_workloads(obj) == []
    assert review_object(obj).patch == []


@pytest.mark.parametrize("image,args", [
    ("ghcr.io/acme/vllm-sizer:0.1.0", ["run", "--role=webhook"]),
    ("ghcr.io/acme/vllm-sizer:0.1.0", ["--role=webhook", "--dev"]),
    ("registry.local/vllm-router:1", ["--port", "8000"]),
    ("acme/vllm-proxy:latest", ["--model", "Qwen/Qwen3-0.6B"]),
])
def test_an_image_name_alone_is_no_evidence(image, args):
    obj = deployment({"image": image, "args": args})
    assert read_workloads(obj) == []
    assert review_object(obj).patch == []


def test_vllm_sizer_s_own_deployment_is_untouched():
    obj = deployment({"image": "REGISTRY/vllm-sizer:0.1.0",
                      "command": ["vllm-sizer", "run", "--role", "webhook"]})
    assert read_workloads(obj) == [] and review_object(obj).patch == []


@pytest.mark.parametrize("argv", [
    ["vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["/usr/local/bin/vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["env", "-u", "X", "A=1", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["exec", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["tini", "-g", "--", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["dumb-init", "--", "python3", "-m", "vllm.entrypoints.openai.api_server", "--model",
     "Qwen/Qwen3-0.6B"],
    ["python3", "-u", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen3-0.6B"],
    ["python3.12", "-m", "vllm.entrypoints.cli.main", "serve", "Qwen/Qwen3-0.6B"],
    ["uv", "run", "--with", "vllm", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["uvx", "--from", "vllm", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["conda", "run", "-n", "serve", "--no-capture-output", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["numactl", "--cpunodebind=0", "-m", "0", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["taskset", "-c", "0-7", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["timeout", "-s", "INT", "3600", "nice", "-n", "5", "vllm", "serve", "Qwen/Qwen3-0.6B"],
    ["/usr/bin/env", "bash", "-c", "exec vllm serve Qwen/Qwen3-0.6B"],
    ["tini", "--", "sh", "-c", "nohup vllm serve Qwen/Qwen3-0.6B"],
])
def test_executed_invocations_through_wrappers_are_vllm(argv):
    from vllm_sizer.workloads.execution import executed, executes_vllm

    assert executes_vllm(argv) or executed(argv)[0] in ("bash", "sh")
    ws = read_workloads(deployment({"image": "vllm/vllm-openai:v0.11.0", "command": argv}))
    assert len(ws) == 1 and ws[0].settings is not None, [str(d) for d in ws[0].diagnostics]
    assert ws[0].model == "Qwen/Qwen3-0.6B"
