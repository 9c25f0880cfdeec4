"""YAML a reader parses (serveConfigV2, KAITO's inference_config.yaml, annotations, check input)
is bounded on the parser's events before anything is composed, and a shape the platform
cannot read is said."""

from __future__ import annotations

import pytest

from tests.hardening.hostile_objects import peak_of
from vllm_sizer.workloads import ReadContext, read_workloads


# ---------------------------------------------------------------- YAML a reader parses
def _serve_config(apps):
    return {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "r"},
            "spec": {"serveConfigV2": apps, "rayClusterConfig": {"workerGroupSpecs": [
                {"template": {"spec": {"containers": [{"name": "llm", "image": "rayproject/ray:2.9.0"}]}}}]}}}


@pytest.mark.parametrize("text", [
    "applications:\n" + "- {name: a, import_path: vllm}\n" * 100_000,  # 3 MB, 500,000 nodes
    "applications:\n- name: a\n  import_path: ray.serve.llm:x\n  args:\n    llm_configs:\n"
    + "    - {model_loading_config: {model_id: m, model_source: Qwen/Qwen3-8B}}\n" * 8000,
])
def test_serve_config_nodes_are_counted_before_anything_is_composed(text):
    """A serveConfigV2 past the node bound was composed whole before the bound refused it
    (5 MB, 600,000 nodes: 27 s); the parser's events are counted first, and composing 100,000
    nodes inside the old bound took 4.6 s, so the bound is 20,000 (a real config: < 1,000)."""
    (w,) = peak_of(read_workloads, _serve_config(text))
    assert w.settings is None and any("nodes" in d.message for d in w.diagnostics)


def test_kaito_config_keys_are_bounded():
    ws = {"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace", "metadata": {"name": "w"},
          "inference": {"preset": {"name": "phi-4"}, "config": "c"}}
    text = "vllm:\n" + "".join(f"  k{i}: {i}\n" for i in range(30_000))
    (w,) = peak_of(read_workloads, ws, ReadContext(config_maps={"c": {"inference_config.yaml": text}}))
    assert any("nodes" in d.message for d in w.diagnostics)


def test_bounded_yaml_still_yields_the_documents_before_a_bad_one():
    from vllm_sizer.workloads import limits

    got = []
    with pytest.raises(limits.LimitExceeded, match="nodes"):
        for doc in limits.load_all_yaml("a: 1\n---\nb: 2\n---\n" + "- x\n" * 50, max_nodes=20):
            got.append(doc)
    assert got == [{"a": 1}, {"b": 2}]

# ---------------------------------------------------------------- KAITO config shapes
@pytest.mark.parametrize("text,where", [
    ("vllm: [1, 2]\n", "vllm: section is a list"),
    ("vllm: fast\n", "vllm: section is a str"),
    ("- vllm\n", "the file is a list"),
])
def test_a_kaito_config_that_is_no_mapping_is_said(text, where):
    """KAITO's server reads the file and its `vllm:` as mappings (and fails on anything else);
    before, such a config was dropped without a word and KAITO's defaults sized."""
    ws = {"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace", "metadata": {"name": "w"},
          "inference": {"preset": {"name": "phi-4"}, "config": "c"}}
    (w,) = read_workloads(ws, ReadContext(config_maps={"c": {"inference_config.yaml": text}}))
    assert any(where in d.message and "unknown" in d.message for d in w.diagnostics)


@pytest.mark.parametrize("kwargs", [[1, 2], "tensor_parallel_size=2", 4])
def test_ray_engine_kwargs_that_are_no_mapping_are_said(kwargs):
    """Ray's LLMConfig takes engine_kwargs as a mapping; before, anything else was dropped
    without a word and vLLM's defaults sized."""
    import yaml

    text = yaml.safe_dump({"applications": [{
        "name": "llm", "import_path": "ray.serve.llm:build_openai_app",
        "args": {"llm_configs": [{"model_loading_config": {"model_id": "q",
                                                           "model_source": "Qwen/Qwen3-8B"},
                                  "engine_kwargs": kwargs}]}}]})
    (w,) = read_workloads(_serve_config(text))
    assert any(d.severity == "error" and "not a mapping" in d.message for d in w.diagnostics)
