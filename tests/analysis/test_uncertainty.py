"""Uncertainty bands (perfmodel/analysis/uncertainty.py, perfmodel/uncertainty.toml, validation/uncertainty.py).

The predictor is refitted from time to time, so the stored numbers are checked only loosely (file present,
groups, low <= 1 <= high, coverage near 80%); the coverage of a fresh fit is measured by the script."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import PREDICT, run_json

from perfmodel.analysis import uncertainty as U

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("uncertainty_script", ROOT / "validation" / "uncertainty.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fresh():
    return _script().measure()


def test_stored_file_is_sane():
    assert U.FILE.is_file(), "run python3 validation/uncertainty.py --write"
    d = U.load()
    assert "missing" not in d
    assert d["command"] == "python3 validation/uncertainty.py --write" and d["fitted"]
    groups = d["groups"]
    assert U.ALL in groups and any("/" in g for g in groups)
    for g, v in groups.items():
        assert 0 < v["low"] <= 1 <= v["high"], g
        assert v["rows"] >= (1 if g == U.ALL else d["min_rows"]), g
        assert v["log_p10"] <= v["log_p90"]
    assert 0.6 <= d["coverage"]["all"] <= 0.95
    assert d["rows"]["held_out"] + d["rows"]["calibration"] == d["rows"]["all"]
    # the unseen-stack bands (validation/uncertainty.py --fits): low / high are the cross-validated percentiles
    # with the group's jackknife spread in quadrature, each side apart
    for g, v in d.get("unseen", {}).items():
        cells = {U.unseen_cell(m, vp) for m in (False, True) for vp in (1, 2)}  # width-model cells: any rows
        assert v["rows"] >= (0 if g in cells else 1 if g == U.ALL else d["min_rows"]) and v["log_jackknife"] >= 0, g
        lo, hi = U.widened(min(v["log_p10"], 0), max(v["log_p90"], 0), -v["log_jackknife"], v["log_jackknife"])
        assert (v["low"], v["high"]) == (
            pytest.approx(math.exp(lo), abs=2e-5),
            pytest.approx(math.exp(hi), abs=2e-5),
        ), g


def test_fresh_fit_coverage_near_80_percent(fresh):
    """The honest figure: bands fitted on the calibration split only, coverage of every measured run."""
    assert 0.6 <= fresh["coverage"]["all"] <= 0.95
    assert 0.5 <= fresh["coverage"]["held_out"] <= 0.97
    assert fresh["rows"]["calibration"] > 50


def test_stored_consistent_with_fresh_loosely(fresh):
    stored = U.load()["groups"]
    assert U.ALL in fresh["groups"]
    # about the same groups have enough calibration rows (counts depend on the CSV and on which rows are
    # supported, not on the predictor's numbers); a larger change means: re-run the script with --write
    assert len(set(fresh["groups"]) ^ set(stored)) <= 2, "python3 validation/uncertainty.py --write"


@pytest.mark.parametrize("hw", ["a100-sxm-80gb", "h100-sxm", "h800-sxm", "b200", "gb200-nvl72", "gb300-nvl72", "b300"])
@pytest.mark.parametrize("model", ["llama3-8b", "deepseek-v3"])
def test_band_api(hw, model):
    low, high, group = U.band(model, hw)
    assert 0 < low <= 1 <= high < 10
    assert group in U.load()["groups"]


def test_fit_fallback_and_quantiles():
    # 12 hopper/dense rows, 3 ampere/dense rows: ampere falls back to "dense" (ampere alone has 3 < 10 rows)
    rows = [("hopper", "dense", math.log(1 + 0.01 * i)) for i in range(-6, 6)] + [("ampere", "dense", 0.5)] * 3
    g = U.fit(rows, min_rows=10)
    assert "ampere/dense" not in g and "ampere" not in g and "dense" in g and U.ALL in g
    assert U.lookup(g, "ampere", "dense").group == "dense"
    assert U.lookup(g, "blackwell", "moe").group == U.ALL
    h = g["hopper/dense"]
    assert h["low"] < 1 < h["high"] and h["rows"] == 12
    # a one-sided spread is widened to contain the prediction itself
    one = U.fit([("x", "dense", 0.2 + 0.01 * i) for i in range(20)], min_rows=10)
    assert one["x/dense"]["low"] == 1.0 and one["x/dense"]["high"] > 1.2
    cov = U.coverage(g, rows)
    assert cov["rows"] == 15 and 0 < cov["coverage"] <= 1


def test_band_directions():
    b = U.Band(0.8, 1.25, "t", 10)
    assert b.throughput(100) == (80, 125)
    assert b.inverse(100) == (80, 125)
    assert b.inverse(10)[0] == pytest.approx(8) and b.inverse(10)[1] == pytest.approx(12.5)


PRED = PREDICT[1:]  # its arguments, without the command


def test_predict_json_band(capsys):
    d = run_json(capsys, ["predict", *PRED])
    for k in ("tokens_per_s_per_gpu", "step_time_s", "mfu"):
        assert d[f"{k}_low"] <= d[k] <= d[f"{k}_high"], k
    assert d["tokens_per_s_per_gpu_high"] > d["tokens_per_s_per_gpu_low"]
    # step time is inverse to throughput: the slow end of one is the long end of the other
    assert d["step_time_s_high"] * d["tokens_per_s_per_gpu_low"] == pytest.approx(
        d["step_time_s"] * d["tokens_per_s_per_gpu"]
    )
    assert d["band"]["group"] == "hopper/dense"


def test_predict_table_shows_range(capsys):
    from perfmodel.cli import main

    assert main(["predict", *PRED]) == 0
    out = capsys.readouterr().out
    assert "80% band" in out and "–" in out


def test_search_json_band(capsys):
    d = run_json(
        capsys,
        [
            "search",
            "--model",
            "llama3-8b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "8",
            "--gbs",
            "64",
            "--seq",
            "4096",
            "--top",
            "3",
        ],
    )
    assert d["band"]["low_factor"] <= 1 <= d["band"]["high_factor"]
    for e in d["top"]:
        p = e["prediction"]
        assert e["tokens_per_s_per_gpu_low"] <= p["tokens_per_s_per_gpu"] <= e["tokens_per_s_per_gpu_high"]
        assert e["step_time_s_low"] <= p["step_time_s"] <= e["step_time_s_high"]


def test_compare_json_band(capsys):
    d = run_json(
        capsys,
        [
            "compare",
            "--model",
            "llama3-8b",
            "--hardware",
            "h100-sxm",
            "--hardware",
            "gb200-nvl72",
            "--gpus",
            "64",
            "--gbs",
            "128",
            "--seq",
            "4096",
            "--no-planner",
            "--tp",
            "1",
            "--pp",
            "1",
        ],
    )
    for s in d["systems"]:
        for k in ("usd_per_million_tokens_nominal", "usd_per_million_tokens_after_reliability"):
            assert s[f"{k}_low"] <= s[k] <= s[f"{k}_high"]
        assert s["tokens_per_s_per_gpu_low"] <= s["tokens_per_s_per_gpu"] <= s["tokens_per_s_per_gpu_high"]


def test_unidentified_constant_spans_its_bounds():
    # moe_layer_overhead_s is bounded to [0, 0.01] s (calibration.BOUNDS): uniform there, its 10th / 90th
    # percentile points are 1 and 9 ms; a fraction in [0, 1] gives 0.1 and 0.9
    (n1, lo1, hi1), (n2, lo2, hi2) = U.unidentified_points(["moe_layer_overhead_s", "ep_overlap"])
    assert (n1, n2) == ("moe_layer_overhead_s", "ep_overlap")
    assert (lo1, hi1) == pytest.approx((0.001, 0.009)) and (lo2, hi2) == pytest.approx((0.1, 0.9))


def test_parameter_spread_and_widening_by_hand():
    # two constants, two samples. Sample 0: constant A moves the prediction by ln factors -0.24 / +0.1, B by
    # -0.32 / 0: down = -hypot(0.24, 0.32) = -0.4, up = 0.1. Sample 1 depends on neither: (0, 0)
    s = U.parameter_spread([[(-0.24, 0.1), (0.0, 0.0)], [(-0.32, 0.0), (0.0, 0.0)]])
    assert s[0] == pytest.approx((-0.4, 0.1)) and s[1] == (0.0, 0.0)
    # a band [-0.3, 0.05] of ln(measured / predicted) with the prediction uncertain by [-0.4, 0.1]: a
    # prediction that could be e^-0.4 lower leaves measured / predicted lower too: -hypot(0.3, 0.4) = -0.5;
    # above: hypot(0.05, 0.1)
    lo, hi = U.widened(-0.3, 0.05, *s[0])
    assert lo == pytest.approx(-0.5) and hi == pytest.approx(math.hypot(0.05, 0.1))
    assert U.widened(-0.3, 0.05) == pytest.approx((-0.3, 0.05))
    # coverage with the spreads: ln ratio -0.45 lies outside [-0.3, 0.05] alone, inside once widened
    g = {U.ALL: {"rows": 20, "low": math.exp(-0.3), "high": math.exp(0.05)}}
    assert U.coverage(g, [("hopper", "moe", -0.45)])["covered"] == 0
    assert U.coverage(g, [("hopper", "moe", -0.45)], [s[0]])["covered"] == 1


# ---- a stack the bands were not fitted on: the row's jackknife spread and the unseen-stack band ----------


def test_jackknife_spread_by_hand():
    # three source families left out in turn; row 0's prediction moves by ln factors +0.1, -0.1, 0 across the three
    # refits: mean 0, sum of squares 0.02, jackknife variance (n-1)/n x 0.02 = 0.01333, sd 0.11547, times
    # z_0.9 = 1.28155 -> 0.14798. Row 1 does not depend on any constant that moved (shifts 0): no width from them
    s = U.jackknife_spread([[0.1, 0.0], [-0.1, 0.0], [0.0, 0.0]])
    assert s[0] == pytest.approx(1.2815516 * math.sqrt(2 / 3 * 0.02), rel=1e-6) and s[0] == pytest.approx(
        0.14798, abs=1e-5
    )
    assert s[1] == 0.0
    # a common shift of every refit is no spread (the refits agree); one refit alone gives none either
    assert U.jackknife_spread([[0.05], [0.05], [0.05]]) == [pytest.approx(0.0)]
    assert U.jackknife_spread([[0.3]]) == [0.0]


def test_jackknife_spread_never_narrower_with_more_spread():
    rng = np.random.default_rng(3)
    base = rng.normal(0, 0.05, size=(5, 40))
    a = U.jackknife_spread(base.tolist())
    for k in (1.0, 1.5, 3.0):
        b = U.jackknife_spread((k * base).tolist())
        assert all(y >= x - 1e-15 for x, y in zip(a, b))
        assert b == pytest.approx([k * x for x in a])


def test_combined_and_widened_monotone():
    # two independent causes, each side in quadrature: (-0.3, 0.4) and (-0.4, 0) -> (-0.5, 0.4)
    assert U.combined([(-0.3, 0.4)], [(-0.4, 0.0)]) == [pytest.approx((-0.5, 0.4))]
    assert U.combined([(0.0, 0.0)], [(0.0, 0.0)]) == [(0.0, 0.0)]  # no cause, no width
    # more spread never narrows the band: lo falls and hi rises as |down| and up grow
    lo0, hi0 = U.widened(-0.1, 0.08)
    prev = (lo0, hi0)
    for x in (0.01, 0.05, 0.2, 1.0):
        lo, hi = U.widened(-0.1, 0.08, -x, x)
        assert lo <= prev[0] and hi >= prev[1]
        prev = (lo, hi)
    # and so coverage of fixed samples can only rise
    g = U.fit([("hopper", "dense", 0.01 * i) for i in range(-10, 11)], min_rows=10)
    far = [("hopper", "dense", v) for v in (-0.3, -0.12, 0.0, 0.12, 0.3)]
    covs = [U.coverage(g, far, [(-x, x)] * len(far))["coverage"] for x in (0.0, 0.1, 0.3, 1.0)]
    assert covs == sorted(covs) and covs[0] == pytest.approx(1 / 5) and covs[-1] == 1.0


def test_band_of_unseen(tmp_path):
    f = tmp_path / "u.toml"
    f.write_text(
        '[groups."all"]\nrows = 20\nlog_p10 = -0.1\nlog_p90 = 0.1\nlow = 0.9\nhigh = 1.1\n'
        '[unseen."hopper/dense"]\nrows = 12\nlog_p10 = -0.2\nlog_p90 = 0.15\nlow = 0.8\nhigh = 1.2\n'
        '[unseen."all"]\nrows = 30\nlog_p10 = -0.3\nlog_p90 = 0.2\nlow = 0.7\nhigh = 1.25\n'
    )
    U.load.cache_clear()
    b = U.band_of("llama3-8b", "h100-sxm", str(f), unseen=True)
    assert (b.low, b.high, b.group, b.rows) == (0.8, 1.2, "unseen:hopper/dense", 12)
    assert U.band_of("deepseek-v3", "b200", str(f), unseen=True).group == "unseen:all"
    assert U.band_of("llama3-8b", "h100-sxm", str(f)).group == "all"  # a stack the fit saw
    g = tmp_path / "no_unseen.toml"
    g.write_text('[groups."all"]\nrows = 20\nlog_p10 = -0.1\nlog_p90 = 0.1\nlow = 0.9\nhigh = 1.1\n')
    assert U.band_of("llama3-8b", "h100-sxm", str(g), unseen=True).group == "all"  # no [unseen]: the fitted band
    U.load.cache_clear()


def test_weighted_quantiles_by_hand():
    # values 0 and 1 with weights 3 and 1: cumulative 3, 4 of W = 4, plotting positions C / (W (1 + 1/n)) = 0.5,
    # 0.667; the 0.6 quantile interpolates 0.6 of the way: 0.6. Equal weights: positions 1/3, 2/3 (k / (n+1)) -> 0.8
    assert U.weighted_quantiles([0.0, 1.0], [3.0, 1.0], [0.6]) == [pytest.approx(0.6)]
    assert U.weighted_quantiles([1.0, 0.0], [1.0, 1.0], [0.6]) == [pytest.approx(0.8)]
    x = np.random.default_rng(1).normal(size=37)
    assert U.weighted_quantiles(x, [2.0] * 37, [0.1, 0.9]) == pytest.approx(
        list(np.percentile(x, [10, 90], method="weibull"))
    )


def test_fit_units_weigh_each_source_the_same():
    # source A: 20 rows near 0, source B: 2 rows at 0.3, one group. By rows, B is 2 of 22 and the 90th percentile
    # falls between the 20th and 21st values (0.019 + 0.7 (0.3 - 0.019) = 0.216); each source weighing the same,
    # B holds half the weight and the 90th percentile is B's 0.3
    a = [("hopper", "dense", 0.001 * i) for i in range(20)]
    b = [("hopper", "dense", 0.3)] * 2
    rows = U.fit(a + b, min_rows=10)["hopper/dense"]
    eq = U.fit(a + b, min_rows=10, units=["A"] * 20 + ["B"] * 2)["hopper/dense"]
    assert rows["log_p90"] == pytest.approx(0.019 + 0.7 * (0.3 - 0.019))
    assert eq["log_p90"] == pytest.approx(0.3) and eq["rows"] == rows["rows"] == 22
    # 10th: by rows position 0.1 x 23 = 2.3 -> 0.0013; equal sources, A's k-th row sits at C / (W (1 + 1/n)) =
    # (k / 20) / (2 x 23 / 22), 0.1 at k = 4.18 -> 0.003 + 0.18 x 0.001
    assert rows["log_p10"] == pytest.approx(0.0013) and eq["log_p10"] == pytest.approx(
        0.003 + (0.1 * 2 * 23 / 22 * 20 - 4) * 0.001
    )


# ---- the unseen-stack band's width model (uncertainty.fit_scaled) and the band the commands print ---------------


def test_fit_scaled_interleaving_doubles_the_width():
    """Dense rows at |e| = 0.05 and interleaved rows at |e| = 0.101: ln(|e| + 0.001) differs by ln 2 exactly, so the
    interleaved coefficient is ln 2 (least squares on a dummy = difference of the means); no MoE row: its
    coefficient is 0 (minimum norm), the band neither wider nor narrower for MoE."""
    s = [(False, 1, x) for x in (-0.05, 0.05, -0.05, 0.05)] + [(False, 4, x) for x in (-0.101, 0.101, -0.101, 0.101)]
    m = U.fit_scaled(s, ["a", "a", "b", "b", "a", "a", "b", "b"], min_rows=4)
    assert math.exp(m["coef"][2]) == pytest.approx(2.0, rel=1e-9)
    assert m["coef"][1] == pytest.approx(0.0, abs=1e-12)
    assert math.exp(m["coef"][0]) == pytest.approx(0.051, rel=1e-9)
    dense, inter = U.scaled_band(m, False, 1), U.scaled_band(m, False, 4)
    assert inter[1] == pytest.approx(2 * dense[1]) and inter[0] == pytest.approx(2 * dense[0])
    assert U.scaled_band(m, True, 1) == pytest.approx(dense)
    assert dense[0] < 0 < dense[1]


def test_fit_scaled_feature_with_too_few_rows_gets_no_coefficient():
    """The same residuals with min_rows 5: only 4 rows are interleaved, so interleaving gets no width of its own and
    the intercept is the mean ln over all eight rows."""
    s = [(False, 1, x) for x in (-0.05, 0.05, -0.05, 0.05)] + [(False, 4, x) for x in (-0.101, 0.101, -0.101, 0.101)]
    m = U.fit_scaled(s, ["a"] * 8, min_rows=5)
    assert m["coef"][2] == 0.0
    assert m["coef"][0] == pytest.approx((math.log(0.051) + math.log(0.102)) / 2, rel=1e-9)
    assert U.scaled_band(m, False, 4) == pytest.approx(U.scaled_band(m, False, 1))


def test_fit_scaled_families_weigh_the_same():
    """Nine rows of one family at |e| + 0.001 = 0.011, one row of another at 0.101: the intercept is the mean of the
    two families' ln, not of the ten rows'."""
    m = U.fit_scaled([(False, 1, 0.01)] * 9 + [(False, 1, 0.1)], ["a"] * 9 + ["b"])
    assert m["coef"][0] == pytest.approx((math.log(0.011) + math.log(0.101)) / 2, rel=1e-9)
    assert m["rows"] == 10


def test_a_new_familys_band_carries_the_spread_of_the_families_offsets():
    """Four families, each with rows at its offset -/+ 0.01: the band of a new family is its offset's prediction
    interval (mean offset + tau sqrt(1 + 1/k) t_{k-2}, Higgins, Thompson & Spiegelhalter 2009) with the within-family
    deviation on top, so it is wider than the four offsets' own pooled 10-90% range and centred on their mean."""
    offsets = (-0.06, -0.02, 0.02, 0.06)
    z = np.array([o + d for o in offsets for d in (-0.01, 0.01)])
    units = [u for u in "abcd" for _ in range(2)]
    lo, hi = U.new_family_quantiles(z, units, U.QUANTILES)
    pooled = U.weighted_quantiles(list(z), [1.0] * len(z), U.QUANTILES)
    assert lo < pooled[0] and hi > pooled[1]
    assert (lo + hi) / 2 == pytest.approx(0.0, abs=2e-3)
    tau = float(np.std(offsets, ddof=1))
    t90 = float(U._student_t_points(2, U.T_DRAWS)[int(0.9 * U.T_DRAWS)])
    assert hi == pytest.approx(tau * math.sqrt(1 + 1 / 4) * t90, rel=0.1)  # the offset dominates the +/-0.01
    # families that agree: only the within-family spread remains
    same = np.array([d for _ in offsets for d in (-0.01, 0.01)])
    lo2, hi2 = U.new_family_quantiles(same, units, U.QUANTILES)
    assert -0.0101 <= lo2 < 0 < hi2 <= 0.0101


def _bands_file(tmp_path, stacks: str | None) -> Path:
    f = tmp_path / "u.toml"
    f.write_text(
        (f"stacks = {stacks}\n" if stacks else "")
        + '[groups."all"]\nrows = 40\nlog_p10 = -0.1\nlog_p90 = 0.1\nlow = 0.9\nhigh = 1.1\n'
        '[unseen."dense"]\nrows = 50\nlog_p10 = -0.05\nlog_p90 = 0.06\nlow = 0.94\nhigh = 1.07\n'
        '[unseen."dense/interleaved"]\nrows = 20\nlog_p10 = -0.1\nlog_p90 = 0.1\nlow = 0.88\nhigh = 1.13\n'
    )
    return f


def test_band_of_unseen_cells_by_interleaving(tmp_path):
    f = str(_bands_file(tmp_path, None))
    assert U.band_of("llama3-8b", "h100-sxm", f, unseen=True).group == "unseen:dense"
    b = U.band_of("llama3-8b", "h100-sxm", f, unseen=True, vp=4)
    assert (b.low, b.high, b.group, b.rows, b.unseen) == (0.88, 1.13, "unseen:dense/interleaved", 20, True)
    assert not U.band_of("llama3-8b", "h100-sxm", f).unseen


def test_stack_seen_follows_the_base_chain(tmp_path):
    """nemo-25.11's base is nemo-25.09 (stacks/nemo-25.11.toml): seen when nemo-25.09's rows fitted the bands;
    torchtitan-2025 is not; a copy of a catalog preset as the user's own file is not; no `stacks`: unknown."""
    f = str(_bands_file(tmp_path, '["nemo-25.09"]'))
    assert U.stack_seen("nemo-25.09", f) is True and U.stack_seen("nemo-25.11", f) is True
    assert U.stack_seen("torchtitan-2025", f) is False
    mine = tmp_path / "mine.toml"
    mine.write_text((ROOT / "stacks" / "nemo-25.09.toml").read_text())
    assert U.stack_seen(str(mine), f) is False
    (tmp_path / "old").mkdir()
    assert U.stack_seen("torchtitan-2025", str(_bands_file(tmp_path / "old", None))) is None


def test_predict_prints_the_unseen_band_for_an_unseen_stack(tmp_path, monkeypatch, capsys):
    f = _bands_file(tmp_path, '["nemo-25.09"]')
    monkeypatch.setattr(U, "FILE", f)
    args = [
        "predict",
        "--model",
        "llama3-8b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "8",
        "--tp",
        "1",
        "--pp",
        "2",
        "--vp",
        "2",
        "--gbs",
        "64",
        "--seq",
        "4096",
    ]
    seen = run_json(capsys, args + ["--stack", "nemo-25.11"])
    assert seen["band"]["group"] == "all" and seen["band"]["unseen_stack"] is False
    new = run_json(capsys, args + ["--stack", "torchtitan-2025"])
    assert new["band"]["group"] == "unseen:dense/interleaved" and new["band"]["unseen_stack"] is True
    t = new["tokens_per_s_per_gpu"]
    assert (new["tokens_per_s_per_gpu_low"], new["tokens_per_s_per_gpu_high"]) == (
        pytest.approx(0.88 * t),
        pytest.approx(1.13 * t),
    )


def test_search_bands_follow_each_layouts_interleaving(tmp_path, monkeypatch, capsys):
    """On a stack no row of which fitted the bands, every top layout carries the unseen-stack cell of its own vp."""
    monkeypatch.setattr(U, "FILE", _bands_file(tmp_path, '["nemo-25.09"]'))
    args = [
        "search",
        "--model",
        "llama3-8b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "16",
        "--gbs",
        "64",
        "--seq",
        "4096",
        "--stack",
        "torchtitan-2025",
        "--top",
        "8",
    ]
    top = []
    for extra in ([], ["--fix", "pp=2"]):  # the best layouts: not interleaved; at pp 2: interleaved
        d = run_json(capsys, args + extra)
        assert d["band"] == d["top"][0]["band"]
        top += d["top"]
    assert {e["band"]["group"] for e in top} == {"unseen:dense", "unseen:dense/interleaved"}
    for e in top:
        assert e["band"]["group"] == ("unseen:dense/interleaved" if e["layout"]["vp"] > 1 else "unseen:dense")
