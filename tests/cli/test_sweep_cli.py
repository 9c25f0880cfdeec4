"""estimate --sweep: the sizing curve as a table, JSON and a picture."""

import json

import pytest

from vllm_sizer.cli.main import main
from vllm_sizer.cli.sweep import parse_sweep
from vllm_sizer.estimator.units import GiB

CMD = ["--", "vllm", "serve", "Qwen/Qwen3-0.6B", "--enable-lora", "--max-lora-rank", "256",
       "--max-num-seqs", "1", "--max-model-len", "8192"]
CPU = ["--device", "cpu", "--env", "VLLM_CPU_KVCACHE_SPACE=4"]


def sweep_json(capsys, *args):
    rc = main(["estimate", "-o", "json", *CPU, *args, *CMD])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def test_doubling_values_include_the_end_and_totals_grow(capsys):
    data = sweep_json(capsys, "--sweep", "max-num-batched-tokens=512:6000")
    values = [p["value"] for p in data["points"]]
    assert values == [512, 1024, 2048, 4096, 6000]
    totals = [p["total_memory_bytes"] for p in data["points"]]
    assert totals == sorted(totals) and totals[-1] > 2 * totals[0]
    for p in data["points"]:  # the counted terms add up to the total
        assert sum(p["counted_bytes"].values()) == pytest.approx(p["total_memory_bytes"], abs=16)


def test_largest_fitting_value_is_exact_for_batched_tokens(capsys):
    data = sweep_json(capsys, "--sweep", "max-num-batched-tokens=256:4096:256", "--limit", "20Gi")
    best = data["largest_fitting"]
    assert data["limit_bytes"] == 20 * GiB and 256 < best < 4096
    at = sweep_json(capsys, "--sweep", f"max-num-batched-tokens={best}:{best + 1}:1")
    assert at["points"][0]["total_memory_bytes"] <= 20 * GiB < at["points"][1]["total_memory_bytes"]


def test_lora_rank_sweep_uses_the_ranks_vllm_allows(capsys):
    data = sweep_json(capsys, "--sweep", "max-lora-rank=8:300", "--limit", "16Gi")
    assert [p["value"] for p in data["points"]] == [8, 16, 32, 64, 128, 256]
    fits = [p["value"] for p in data["points"] if p["total_memory_bytes"] <= 16 * GiB]
    assert data["largest_fitting"] == (max(fits) if fits else None)


def test_text_table_marks_points_over_the_limit(capsys):
    assert main(["estimate", *CPU, "--sweep", "max-num-batched-tokens=512:8192",
                 "--limit", "24Gi", *CMD]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.strip().split(" ")[0].isdigit()]
    assert len(rows) == 5 and rows[0].rstrip().endswith("*") is False and rows[-1].endswith("*")
    assert "largest max-num-batched-tokens that fits" in out


@pytest.mark.parametrize("bad", ["max-num-batched-tokens=8192:512", "dtype=1:2",
                                 "max-num-seqs=a:b", "max-num-seqs=1:100000:1", "max-num-seqs"])
def test_bad_sweeps_are_clear_errors(capsys, bad):
    assert main(["estimate", *CPU, "--sweep", bad, *CMD]) == 2
    assert "--sweep" in capsys.readouterr().err
    with pytest.raises(ValueError):
        parse_sweep(bad)


def test_limit_without_sweep_is_an_error(capsys):
    assert main(["estimate", *CPU, "--limit", "8Gi", *CMD]) == 2
    assert "--sweep" in capsys.readouterr().err


@pytest.mark.parametrize("suffix, magic", [("png", b"\x89PNG"), ("svg", b"<?xml")])
def test_plot_writes_the_picture(tmp_path, capsys, suffix, magic):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"curve.{suffix}"
    assert main(["estimate", *CPU, "--sweep", "max-num-batched-tokens=512:4096", "--limit",
                 "16Gi", "--plot", str(out), *CMD]) == 0
    assert out.read_bytes()[:len(magic)] == magic and out.stat().st_size > 5000
