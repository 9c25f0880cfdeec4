import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vllm_sizer.estimator import ModelGeometry, catalog_ids, lookup_model

ROOT = Path(__file__).parents[2]
ENTRIES = [json.loads(p.read_text())
           for p in sorted((ROOT / "vllm_sizer/estimator/catalog").glob("*.json"))]
PUBLISHED = [e for e in ENTRIES if e.get("published_parameters")]


def test_catalog_keeps_its_models_each_with_a_public_source():
    ids = catalog_ids()
    # The catalog's floor today (every entry needs a public config.json copy); a lost entry
    # fails here
    assert len(ids) >= 300
    assert len(ids) == len(ENTRIES)  # the index lists every file
    for entry in ENTRIES:
        src = entry["source"]
        assert src["repo"] and src["path"] and re.fullmatch(r"[0-9a-f]{40}", src["commit"])
        assert lookup_model(entry["id"])["config"] == entry["config"]
        ModelGeometry.from_hf_config(entry["config"])  # every entry reads


@pytest.mark.parametrize("entry", PUBLISHED, ids=[e["id"] for e in PUBLISHED])
def test_parameter_count_matches_published(entry):
    pub = entry["published_parameters"]
    g = ModelGeometry.from_hf_config(entry["config"])
    assert g.parameter_count() == pytest.approx(pub["count"], rel=pub.get("tolerance", 0.02))
    assert pub["source"]


def test_many_published_counts():
    assert len(PUBLISHED) >= 25


def test_index_and_models_doc_are_generated_from_the_entries():
    out = subprocess.run([sys.executable, str(ROOT / "scripts/build_catalog.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("spelling", ["Qwen/Qwen3-0.6B", "qwen/qwen3-0.6b", "hf://Qwen/Qwen3-0.6B",
                                      "/models/Qwen/Qwen3-0.6B"])
def test_lookup_is_case_insensitive_and_path_tolerant(spelling):
    assert lookup_model(spelling)["id"] == "Qwen/Qwen3-0.6B"


def test_moe_mla_and_multimodal_geometry():
    v3 = ModelGeometry.from_hf_config(lookup_model("deepseek-ai/DeepSeek-V3")["config"])
    assert v3.mla and v3.moe and v3.moe.num_moe_layers == 58 and v3.quantization.method == "fp8"
    assert v3.kv_bytes_per_token(2) == 61 * (512 + 64) * 2
    gemma = ModelGeometry.from_hf_config(lookup_model("google/gemma-3-4b-it")["config"])
    assert gemma.num_layers == 34 and gemma.head_dim == 256 and gemma.vision_parameters > 0
    assert gemma.sliding_window_layers > 0
    oss = ModelGeometry.from_hf_config(lookup_model("openai/gpt-oss-20b")["config"])
    assert oss.quantization.method == "mxfp4"
    assert oss.weight_bytes(2) < 0.35 * oss.parameter_count() * 2


def test_estimator_import_is_lean():
    heavy = ["kopf", "kubernetes", "aiohttp", "pandas", "numpy", "torch", "matplotlib", "yaml"]
    code = ("import sys, vllm_sizer.estimator as e; "
            "e.build_report; print(','.join(m for m in %r if m in sys.modules))" % heavy)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
