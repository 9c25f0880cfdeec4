"""A word of a vLLM command line that is still an unknown shell expansion
(`vllm serve /mnt/models ... $VLLM_ADDITIONAL_ARGS`, KServe's e2e-gpt-oss
LLMInferenceServiceConfig rendered with its kustomization) is the shell's business: other
words when the container runs, none when the variable is unset. It is said once (the expansion),
never as vLLM's 'unexpected positional argument' error (vLLM would exit on a real one)."""

from __future__ import annotations

from vllm_sizer.workloads import read_workloads


def _deploy(script: str, env: list[dict] | None = None) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [{
            "name": "vllm", "image": "vllm/vllm-openai:v0.10.0",
            "command": ["/bin/sh", "-c"], "args": [script], "env": env or [],
            "resources": {"limits": {"memory": "32Gi", "nvidia.com/gpu": "1"}},
        }]}}},
    }


def test_unknown_expansion_word_is_not_a_positional_error():
    [w] = read_workloads(_deploy(
        "vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000 --max-model-len 4096 "
        "$VLLM_ADDITIONAL_ARGS"))
    assert w.model == "Qwen/Qwen2.5-7B-Instruct"
    assert w.settings is not None and w.settings.max_model_len == 4096
    errors = [d for d in w.diagnostics if d.severity == "error"]
    assert errors == [], errors
    said = [d for d in w.diagnostics if "VLLM_ADDITIONAL_ARGS" in (d.flag or "") + (d.raw or "")
            + d.message]
    assert any(d.severity == "warning" for d in said)  # the expansion, said once as unknown


def test_a_literal_extra_positional_is_still_vllms_error():
    [w] = read_workloads(_deploy("vllm serve Qwen/Qwen2.5-7B-Instruct extra --port 8000"))
    assert any(d.severity == "error" and d.raw == "extra" for d in w.diagnostics)


def test_a_known_expansion_is_read():
    [w] = read_workloads(_deploy(
        "vllm serve Qwen/Qwen2.5-7B-Instruct $VLLM_ADDITIONAL_ARGS",
        [{"name": "VLLM_ADDITIONAL_ARGS", "value": "--max-model-len 2048"}]))
    assert w.settings is not None and w.settings.max_model_len == 2048
