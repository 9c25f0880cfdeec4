"""Reader classes found by growing the published-manifests corpus (tests/data/published/):
each test is the smallest shape of a class, with the corpus file that showed it."""

from __future__ import annotations

from vllm_sizer.workloads.reader import read_workloads


def _deployment(container: dict, name: str = "vllm-openai") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


# ---- args only, with the author's fill-ins left in -----------------------------------------
# community/felipemoz-vllm-on-azure-deployment.yaml: image ${VLLM_IMAGE}, args --model
# ${VLLM_MODEL} --tensor-parallel-size ${VLLM_GPU_COUNT} ...: the placeholders are values
# the deploy script fills in, not errors of the command line.


def test_args_only_with_placeholder_values_is_read_as_vllm():
    c = {
        "name": "vllm",
        "image": "${VLLM_IMAGE}",
        "args": ["--model", "${VLLM_MODEL}", "--tensor-parallel-size", "${VLLM_GPU_COUNT}",
                 "--max-model-len", "${VLLM_MAX_MODEL_LEN}", "--enable-chunked-prefill",
                 "--gpu-memory-utilization", "0.95", "--dtype", "auto"],
        "resources": {"limits": {"memory": "800Gi", "nvidia.com/gpu": "${VLLM_GPU_COUNT}"}},
    }
    (w,) = read_workloads(_deployment(c, "vllm"))
    assert w.settings is not None
    assert w.settings.gpu_memory_utilization == 0.95
    assert w.settings.enable_chunked_prefill is True
    assert w.settings.tensor_parallel_size == 1  # unknown: vLLM's default, said
    assert w.limit_bytes == 800 * 2**30
    assert any("VLLM_GPU_COUNT" in str(d) for d in w.diagnostics)
    # nvidia.com/gpu with a placeholder count still asks for NVIDIA GPUs; how many is unknown
    assert w.device == "cuda"
    assert w.gpu_count is None


# ai-on-gke/model-eval-deployment-a100.yaml: image V_IMAGE_URL (a sed placeholder for
# vllm/vllm-openai), args --model=$(MODEL) --tensor-parallel-size=2, in a Deployment named
# vllm-openai-a100.


def test_placeholder_image_in_a_vllm_named_workload_with_vllm_args():
    c = {
        "name": "inference-server",
        "image": "V_IMAGE_URL",
        "args": ["--model=$(MODEL)", "--tensor-parallel-size=2"],
        "env": [{"name": "MODEL", "value": "V_MODEL_PATH"}],
        "resources": {"limits": {"memory": "25Gi", "nvidia.com/gpu": "2"}},
    }
    (w,) = read_workloads(_deployment(c, "vllm-openai-a100"))
    assert w.settings is not None
    assert w.settings.tensor_parallel_size == 2
    assert w.limit_bytes == 25 * 2**30
    assert any("placeholder" in d.message for d in w.diagnostics)


def test_placeholder_image_without_a_vllm_name_or_with_other_flags_is_not_read():
    # nothing says vLLM: a placeholder image with a --model flag may be any server
    c = {"name": "server", "image": "<CONTAINER_IMAGE>", "args": ["--model", "x/y", "--port", "8000"]}
    assert read_workloads(_deployment(c, "chat")) == []
    # the name says vLLM, but a router's flags are not vLLM's
    c = {"name": "vllm-router", "image": "$ROUTER_IMAGE",
         "args": ["--model", "x/y", "--routing-logic", "roundrobin"]}
    assert read_workloads(_deployment(c, "vllm-stack")) == []
    # a router container named like the stack, whose args would parse
    c = {"name": "vllm-router", "image": "${IMAGE}", "args": ["--model", "x/y"]}
    assert read_workloads(_deployment(c, "vllm-stack")) == []
