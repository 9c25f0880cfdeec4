"""The package data is what calibration/export.py generates, and the estimator reads it:
the committed vllm_sizer/estimator/data/lora_scratch_calibration.json is current
(python -m calibration.export --check) and CPU_RUNTIME_BYTES comes from it."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("numpy")  # calibration.factory (checkpoint shapes for the runtime overhead)

from calibration import export as E

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUBLISHED = E.load_published()


def test_check_passes_on_the_committed_files():
    proc = subprocess.run([sys.executable, "-m", "calibration.export", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_package_json_is_what_the_estimator_loads():
    from vllm_sizer.estimator import constants as C
    from vllm_sizer.estimator.lora import load_calibration
    with open(E.OUT_PATH) as f:
        doc = json.load(f)
    assert doc["generated_by"] == E.GENERATED_BY
    assert [r.id for r in load_calibration()] == [r["id"] for r in doc["rows"]]
    ro = doc["cpu_runtime_overhead"]
    assert C.CPU_RUNTIME_BYTES.value == ro["bytes"] and C.CPU_RUNTIME_BYTES.kind == "measured"
    assert C.CPU_RUNTIME_BYTES.source == ro["source"]
    seeds = [r for r in doc["rows"] if r["id"].startswith("seed-")]
    assert seeds == PUBLISHED["rows"]
