"""measurements.csv handling and matrix skipping (no vLLM needed)."""
import os
import textwrap

import pytest

from calibration import results as R
from calibration.runner import RunSpec, formula_scratch_bytes, logits_formula_bytes, spec_from_dict


def test_append_and_read_roundtrip(tmp_path):
    p = str(tmp_path / "m.csv")
    R.append_row(p, {"run_id": "a", "key": "k1", "outcome": "ok", "peak_bytes": 5})
    R.append_row(p, {"run_id": "b", "key": "k2", "outcome": "error", "message": "x, y"})
    rows = R.read_rows(p)
    assert [r["run_id"] for r in rows] == ["a", "b"]
    assert rows[0]["peak_bytes"] == "5" and rows[1]["message"] == "x, y"
    with open(p) as f:
        assert f.readline().strip().split(",") == R.COLUMNS


def test_done_keys_retries_errors():
    rows = [{"key": "k1", "outcome": "ok"}, {"key": "k2", "outcome": "error"},
            {"key": "k3", "outcome": "oom"}, {"key": "k4", "outcome": "timeout"},
            {"key": "", "outcome": "ok"}]
    assert R.done_keys(rows) == {"k1", "k3", "k4"}
    assert R.done_keys(rows, retry_errors=False) == {"k1", "k2", "k3", "k4"}


def test_spec_key_and_defaults():
    s = spec_from_dict({"id": "x", "lora": True, "T": 1024, "rank": 64})
    r = s.resolved()
    assert r.prompt_tokens == 1024 and r.max_model_len == 1040
    assert s.key() == ("qwen3-0.6b|L28|loraon|r64|ml1|T1024|S1|P1x1024|len1040|bfloat16"
                       "|kv1|glibc|cap20")
    off = spec_from_dict({"lora": False, "T": 1024, "rank": 64})
    assert "loraoff|r-|ml-" in off.key()  # rank does not matter with LoRA off
    assert spec_from_dict({"lora": False, "T": 1024, "rank": 8}).key() == off.key()
    many = spec_from_dict({"lora": True, "T": 512, "S": 16, "num_prompts": 16,
                           "prompt_tokens": 16})
    assert "S16|P16x16" in many.key()
    with pytest.raises(ValueError):
        spec_from_dict({"bogus": 1})
    with pytest.raises(ValueError):
        RunSpec(allocator="jemalloc").resolved()


def test_formulas():
    s = RunSpec(lora=True, rank=256, max_num_batched_tokens=512)
    assert formula_scratch_bytes(s) == 6 * 512 * 256 * 3072  # 2.25 GiB
    assert formula_scratch_bytes(RunSpec(lora=False)) == 0
    many = RunSpec(lora=True, rank=256, max_num_batched_tokens=512, max_num_seqs=16,
                   num_prompts=16, prompt_tokens=16)
    assert formula_scratch_bytes(many) == 6 * 256 * 256 * 3072
    assert logits_formula_bytes(many) == 2 * 16 * 151936 * 256


def test_matrix_skips_measured_rows(tmp_path):
    pytest.importorskip("yaml")
    from calibration.run_matrix import load_matrix, pending
    m = tmp_path / "matrix.yaml"
    m.write_text(textwrap.dedent("""
        defaults: {preset: qwen3-0.6b, rank: 256}
        runs:
          - {id: one, lora: false, T: 512}
          - {id: two, lora: true, T: 512}
          - {id: three, lora: true, T: 1024, rank: 8}
    """))
    settings, specs = load_matrix(str(m))
    assert [s.run_id for s in specs] == ["one", "two", "three"]
    assert specs[2].rank == 8 and specs[1].rank == 256
    csv = str(tmp_path / "m.csv")
    assert [s.run_id for s in pending(specs, csv)] == ["one", "two", "three"]
    R.append_row(csv, {"run_id": "one", "key": specs[0].key(), "outcome": "ok"})
    R.append_row(csv, {"run_id": "two", "key": specs[1].key(), "outcome": "error"})
    assert [s.run_id for s in pending(specs, csv)] == ["two", "three"]
    R.append_row(csv, {"run_id": "two", "key": specs[1].key(), "outcome": "oom"})
    assert [s.run_id for s in pending(specs, csv)] == ["three"]


def test_repo_matrix_parses():
    pytest.importorskip("yaml")
    from calibration.run_matrix import load_matrix
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "calibration", "matrix.yaml")
    settings, specs = load_matrix(path)
    assert len(specs) >= 10
    assert len({s.key() for s in specs}) == len(specs)


def test_append_widens_old_header(tmp_path):
    p = str(tmp_path / "m.csv")
    with open(p, "w") as f:
        f.write("run_id,key,outcome\nold,k0,ok\n")
    R.append_row(p, {"run_id": "new", "key": "k1", "outcome": "ok", "peak_bytes": 7})
    rows = R.read_rows(p)
    assert [r["run_id"] for r in rows] == ["old", "new"]
    assert rows[0]["peak_bytes"] == "" and rows[1]["peak_bytes"] == "7"
    assert rows[0]["key"] == "k0"


def test_omp_bind_in_key_only_when_not_auto():
    a = RunSpec(lora=True, max_num_batched_tokens=512)
    b = RunSpec(lora=True, max_num_batched_tokens=512, omp_bind="0-1")
    assert "omp=" not in a.key() and b.key() == a.key() + "|omp=0-1"


def test_repeat_gets_its_own_key():
    a = RunSpec(max_num_batched_tokens=512)
    assert RunSpec(max_num_batched_tokens=512, repeat=1).key() == a.key() + "|rep1"
