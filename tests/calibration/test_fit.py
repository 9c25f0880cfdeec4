"""calibration/fit.py on fixed rows: the estimator's factors, the linear alternative, the
validation split, the lm_head section and the report. matplotlib optional (plot skipped)."""
import pytest

pytest.importorskip("numpy")  # calibration.factory, via the runtime overhead

from calibration import export as E
from calibration import fit as F
from tests.calibration.calib_rows import MIB, mech_bytes, row, slot_bytes

PUBLISHED = E.load_published()
S256 = 2 * slot_bytes(256) // MIB  # 616 MiB: what the estimator subtracts at rank 256
S64 = 2 * slot_bytes(64) // MIB  # 154 MiB


def mech_mib(T, R):
    return mech_bytes(T, R) // MIB


ROWS = [
    row("off512", False, 512, 5000), row("off1024", False, 1024, 5000),
    # training, glibc: factor 1.0 at T=512, 1.25 at T=1024
    row("on512", True, 512, 5000 + S256 + mech_mib(512, 256)),
    row("on1024", True, 1024, 5000 + S256 + 1.25 * mech_mib(1024, 256)),
    # validation: rank 64 at factor 1.25
    row("on1024-r64", True, 1024, 5000 + S64 + 1.25 * mech_mib(1024, 64), rank=64),
    # tcmalloc training: one row, factor 1.5
    row("tc-off", False, 1024, 5200, allocator="tcmalloc"),
    row("tc-on", True, 1024, 5200 + S256 + 1.5 * mech_mib(1024, 256), allocator="tcmalloc"),
    # lm_head experiment: 16 one-token prompts
    row("s16-off", False, 512, 5800, S=16, prompts=16, prompt_tokens=1, request_inc_mib=0),
    row("s16-on", True, 512, 7400, S=16, prompts=16, prompt_tokens=1, request_inc_mib=1200),
]


@pytest.fixture(scope="module")
def fitted():
    return F.fit(ROWS, PUBLISHED)


def test_least_squares_and_solve3_on_exact_data():
    lin = F.least_squares([1, 2, 3], [5, 7, 9])
    assert (lin.a, lin.b, lin.r2) == pytest.approx((2, 3, 1))
    one = F.least_squares([4, 4], [6, 6])
    assert (one.a, one.b) == pytest.approx((1.5, 0))
    xs = [(1, 2, 1), (2, 1, 1), (3, 5, 1), (4, 3, 1)]
    ys = [0.5 * a + 2 * b + 7 for a, b, _ in xs]
    assert F.solve3(xs, ys) == pytest.approx((0.5, 2, 7))
    assert F.solve3([(1, 2, 1), (2, 4, 1), (3, 6, 1)], [1, 2, 3]) is None  # collinear


def test_roles_follow_rank_layers_geometry(fitted):
    roles = {x.row["run_id"]: x.role for x in fitted.results if x.role != "published"}
    assert roles == {"on512": "training", "on1024": "training", "tc-on": "training",
                     "on1024-r64": "validation"}
    assert sum(x.role == "published" for x in fitted.results) == 2
    assert all(x.row.get("run_id") != "s16-on" for x in fitted.results)


def test_max_loras_above_one_is_held_back():
    r = {"max_lora_rank": 256, "max_loras": 4,
         "geometry": {"num_layers": 28, "hidden_size": 1024, "intermediate_size": 3072}}
    assert not F.is_training(r) and F.validation_reason(r) == "max_loras 4"
    assert F.is_training(dict(r, max_loras=1))


def test_factors_and_linear_fit_per_family(fitted):
    g = fitted.factors["glibc"]
    assert [(t, round(fa, 6)) for t, fa, _ in g] == [(512, 1.0), (1024, 1.25)]
    assert [(t, round(fa, 6)) for t, fa, _ in fitted.factors["tcmalloc"]] == [(1024, 1.5)]
    lin = fitted.linear["glibc"]
    # through (2304, 2304) and (4608, 5760) MiB
    assert lin.a == pytest.approx(1.5) and lin.b / MIB == pytest.approx(-1152)
    assert fitted.linear["tcmalloc"].a == pytest.approx(1.5)
    assert fitted.linear["tcmalloc"].b == 0


def test_estimates_from_training_rows_only(fitted):
    x = {r.row["run_id"]: r for r in fitted.results if r.role != "published"}
    for rid in ("on512", "on1024", "tc-on"):
        assert x[rid].est_train == pytest.approx(x[rid].measured, rel=1e-6)
        assert x[rid].est_case == "interpolated"
    v = x["on1024-r64"]
    # the rank-256 factor at T=1024 times the rank-64 mechanism: the row's own measurement
    assert v.measured / MIB == pytest.approx(1.25 * mech_mib(1024, 64))
    assert v.est_train == pytest.approx(1.25 * mech_bytes(1024, 64), rel=1e-6)
    assert v.param == pytest.approx(1.5 * mech_bytes(1024, 64) - 1152 * MIB)
    assert all(r.est_all >= r.measured for r in fitted.results)


def test_logits_experiment_section(fitted):
    (d,) = fitted.logits
    assert d["run_id"] == "s16-on" and d["S"] == 16 and d["tokens"] == 16
    assert d["formula"] == 2 * 16 * 151936 * 256
    assert d["increment"] == 1200 * MIB and d["increment_diff"] == 1200 * MIB
    assert d["difference"] == (7400 - 5800) * MIB


def test_seed_points_cover_before_and_after(fitted):
    before = [d for d in fitted.seed_points if d["data"].startswith("published rows, runtime 2")
              and d["T"] == 2394 and d["allocator"] == "unknown"]
    (b,) = before
    assert b["diff_gib"] == pytest.approx(16.77, rel=0.01) and 1 <= b["ratio"] <= 1.15


def test_report_renders_every_section(fitted):
    text = F.render_report(fitted, png_written=False)
    for heading in ("## Method", "## Machine and versions", "## Measured rows",
                    "## Fit (training rows)", "### Training rows",
                    "### Validation rows (held back from the fit)",
                    "### Published seed rows alongside", "## lm_head logits experiment",
                    "## Runtime overhead", "## Effect on the estimator"):
        assert heading in text
    assert "on1024-r64 (rank 64)" in text
    assert "scratch = 1.5000 · mechanism - 1,152 MiB" in text


def test_plot_writes_a_png(fitted, tmp_path):
    pytest.importorskip("matplotlib")
    p = tmp_path / "p.png"
    assert F.plot(fitted, str(p))
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
