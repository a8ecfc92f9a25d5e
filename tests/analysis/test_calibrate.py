"""`perfmodel calibrate` and `--calibration FILE` (issues 13, 23): fit on every one of a user's rows, each row
scored out of sample by cross-validation, the file it writes, predictions from it, bad input; the LOSO folds."""

from __future__ import annotations

import csv
import importlib.util
import shutil
import zlib
from pathlib import Path

import pytest
from cli_helpers import PREDICT, run_err, run_json

from perfmodel import api
from perfmodel.analysis import fit as F
from perfmodel.analysis import uncertainty as U
from perfmodel.analysis.validate import shipped_sets
from perfmodel.cli import main
from perfmodel.core import calibration as C
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import load_model

ROOT = Path(__file__).resolve().parents[2]
LAY = Layout(gpus=64, gbs=128, seq=8192, tp=8, pp=4, vp=5)


def _rows(pred) -> list[dict]:
    with (ROOT / "validation" / "runs.csv").open(newline="") as fh:
        return [r for r in csv.DictReader(fh) if pred(r)]


def _write(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _is_cal(r: dict) -> bool:  # crc32(run_id) % 4 == 0, written out here rather than imported
    return zlib.crc32(r["run_id"].encode()) % 4 == 0


def _dense_h100(scale: float = 1.0) -> list[dict]:
    """H100 dense rows of runs.csv, measured throughput scaled by `scale` (a slower 'cluster')."""
    rows = _rows(lambda r: r["hardware"] == "h100-sxm" and not load_model(r["model"]).is_moe)
    return [{**r, "tokens_per_s_per_gpu": f"{float(r['tokens_per_s_per_gpu']) * scale:.6g}"} for r in rows]


@pytest.fixture(scope="module")
def slow_fit(tmp_path_factory):
    """Rows measured at 0.7x of NVIDIA's (every third H100 dense row): calibrate them (1 round, 3 folds) once for
    the tests below."""
    d = tmp_path_factory.mktemp("cal")
    rows = _dense_h100(0.7)[::3]
    csv_path = _write(d / "mine.csv", rows)
    out = d / "mine.toml"
    import contextlib
    import json as _json
    from io import StringIO

    buf = StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(
            ["calibrate", str(csv_path), "--out", str(out), "--rounds", "1", "--passes", "1", "--folds", "3", "--json"]
        )
    assert rc == 0
    return rows, csv_path, out, _json.loads(buf.getvalue())


def test_file_written_with_provenance_fitted_on_every_row(slow_fit):
    rows, csv_path, out, res = slow_fit
    t = C.load_table(str(out))
    prov = t["provenance"]
    # a user's rows have no held-out split: every predicted row is fitted on, and every one is cross-validated
    assert prov["rows"] == [len(rows)] and prov["fit_rows"] == res["calibration"]["fitted"]["rows"] == len(rows)
    assert res["cross_validated"]["fitted"]["rows"] == len(rows) and prov["cross_validation"].startswith("3-fold")
    assert prov["inputs"] == [str(csv_path.resolve())] and len(prov["inputs_sha256"][0]) == 64
    for n in C.fitted_names():  # same shape as calibration.toml: every table, every key
        assert set(t[n]) == set(C.shipped_table()[n])
        assert t[n]["value"] == res["constants"][n]["fitted"]
    for n in C.names():
        if n not in C.fitted_names():
            assert t[n]["value"] == C.shipped_table()[n]["value"]


def test_fit_follows_the_slower_cluster(slow_fit):
    """Measured 30% below NVIDIA's runs: the fit lowers the objective and the predictions with the file drop."""
    _, _, out, res = slow_fit
    assert res["provenance"]["objective_fitted"] < res["provenance"]["objective_start"]
    assert res["cross_validated"]["fitted"]["mape"] < res["cross_validated"]["start"]["mape"]
    default = api.predict("llama3-70b", "h100-sxm", LAY).tokens_per_s_per_gpu[0]
    mine = api.predict("llama3-70b", "h100-sxm", LAY, consts=C.load_constants(out)).tokens_per_s_per_gpu[0]
    assert mine < 0.95 * default


def test_calibration_flag_changes_predictions_exactly_and_only_for_that_command(slow_fit, capsys):
    _, _, out, _ = slow_fit
    with_file = run_json(capsys, [*PREDICT, "--calibration", str(out)])
    assert with_file["calibration"] == str(out.resolve())
    assert (
        with_file["tokens_per_s_per_gpu"]
        == api.predict("llama3-70b", "h100-sxm", LAY, consts=C.load_constants(out)).tokens_per_s_per_gpu[0]
    )
    assert C.active_file() == C.shipped_file()  # restored after the command
    plain = run_json(capsys, PREDICT)
    assert plain["tokens_per_s_per_gpu"] == api.predict("llama3-70b", "h100-sxm", LAY).tokens_per_s_per_gpu[0]
    assert plain["tokens_per_s_per_gpu"] != with_file["tokens_per_s_per_gpu"]


def test_text_output_names_the_calibration_file_by_its_path_from_here(slow_fit, capsys, monkeypatch):
    """The text header printed the file's absolute path (README examples carried this machine's paths): below
    the working directory it is printed relative to it; --json keeps the absolute path (test above)."""
    from perfmodel.render import console

    _, _, out, _ = slow_fit
    monkeypatch.setattr(console, "_width", 200)
    monkeypatch.chdir(out.parent)
    assert main([*PREDICT, "--calibration", out.name]) == 0
    text = capsys.readouterr().out
    assert f"calibration {out.name} (perfmodel calibrate)" in text and str(out.parent) not in text


def test_the_file_carries_its_own_bands_and_predictions_use_them(slow_fit, capsys):
    """Bands fitted on the cross-validated residuals: the "all" group counts every row predicted out of sample;
    predict with the file reports that band and its file, without it the shipped one."""
    _, _, out, res = slow_fit
    bands = C.load_table(str(out))["bands"]
    assert bands["all"]["rows"] == res["cross_validated"]["fitted"]["rows"] == bands["hopper/dense"]["rows"]
    mine = run_json(capsys, [*PREDICT, "--calibration", str(out)])
    assert mine["band"]["source"] == out.name and mine["band"]["group"] == "hopper/dense"
    assert mine["band"]["low_factor"] == bands["hopper/dense"]["low"]
    assert mine["tokens_per_s_per_gpu_high"] == pytest.approx(
        mine["tokens_per_s_per_gpu"] * bands["hopper/dense"]["high"]
    )
    assert run_json(capsys, PREDICT)["band"]["source"] == "perfmodel/uncertainty.toml"
    cov = res["cross_validated_band_coverage"]
    assert cov["rows"] == res["cross_validated"]["fitted"]["rows"] and 0 <= cov["covered"] <= cov["rows"]


def test_validate_with_the_file_reproduces_the_in_sample_figure(slow_fit, capsys):
    _, csv_path, out, res = slow_fit
    v = run_json(capsys, ["validate", str(csv_path), "--calibration", str(out)])
    assert v["mape"] == pytest.approx(res["calibration"]["fitted"]["mape"], rel=1e-12)


def test_a_row_never_reaches_its_own_cross_validated_prediction(tmp_path):
    """By construction: a row's measurement replaced by a wrong one (x1.8, still below 100% MFU) leaves its
    cross-validated prediction unchanged to the last bit (its fold's constants are fitted without it, from the
    same start), while the whole fit, which does see it, may move."""
    rows = [r for r in _dense_h100()][:24]
    junk = [dict(r) for r in rows]
    junk[5]["tokens_per_s_per_gpu"] = str(float(rows[5]["tokens_per_s_per_gpu"]) * 1.8)
    a, b = (F.read_set(_write(tmp_path / f"{n}.csv", x)) for n, x in (("a", rows), ("b", junk)))
    cva, _ = F.cross_validate([a], C.constants(), C.fitted_names(), 3, rounds=1, passes=1)
    cvb, _ = F.cross_validate([b], C.constants(), C.fitted_names(), 3, rounds=1, passes=1)
    pa = {r.run_id: r.predicted for r in cva.results}
    pb = {r.run_id: r.predicted for r in cvb.results}
    assert pa[rows[5]["run_id"]] == pb[rows[5]["run_id"]]
    assert {r.run_id: r.measured for r in cvb.results}[rows[5]["run_id"]] != {
        r.run_id: r.measured for r in cva.results
    }[rows[5]["run_id"]]
    # the folds cover every row once: fold j holds rows j, j + 3, ...
    tr, te = F.fold_sets([a], 3, 1)
    assert [r["run_id"] for r in te[0].rows] == [r["run_id"] for r in rows[1::3]]
    assert len(tr[0].rows) + len(te[0].rows) == len(rows)


def test_dense_rows_do_not_identify_moe_constants(slow_fit):
    """No MoE layer in the rows: the MoE constants cannot change a prediction, so they keep their start value
    and explain nothing."""
    _, _, _, res = slow_fit
    for n in ("moe_layer_overhead_s",):  # ep_overlap is not fitted (calibration.toml)
        assert n in res["provenance"]["not_identified"]
        assert res["constants"][n]["fitted"] == res["constants"][n]["start"] and res["constants"][n]["explains"] == 0


def test_bad_input(tmp_path, capsys, slow_fit):
    _, csv_path, out, _ = slow_fit
    assert "file not found" in run_err(capsys, ["calibrate", str(tmp_path / "none.csv")])
    n = len(C.fitted_names())  # every fitted constant (calibration.toml fit = true) needs one row more than them
    few = _write(tmp_path / "few.csv", _dense_h100()[:n])
    assert f"{n} predictable row(s); fitting {n} constants needs at least {n + 1}" in run_err(
        capsys, ["calibrate", str(few), "--out", str(tmp_path / "x.toml")]
    )
    assert "shipped calibration" in run_err(capsys, ["calibrate", str(csv_path), "--out", str(C.shipped_file())])
    text = out.read_text()
    bad = tmp_path / "bad.toml"
    for edit, says in (
        (
            lambda s: s.replace("[tensor_sustained]\nvalue = ", "[tensor_sustained]\nvalue = 1.7 #"),
            "tensor_sustained.value: outside its bounds [0.3, 1]",
        ),
        (
            lambda s: s.replace("[ep_overlap]\nvalue = ", "[ep_overlap]\nvalue = -0.1 #"),
            "ep_overlap.value: outside its bounds [0, 1]",
        ),
        (
            lambda s: s.replace("[kernel_fixed_s]\nvalue = ", '[kernel_fixed_s]\nvalue = "big" #'),
            "kernel_fixed_s.value: must be a finite number",
        ),
        (  # a file of an older perfmodel: a retired constant names where the quantity lives now
            lambda s: s + "\n[gemm_k_half]\nvalue = 241.3\n",
            "gemm_k_half: no longer a constant: the GEMM efficiency shape is measured per GPU generation",
        ),
        (  # a file fitted before session 20: its 40 ms a step is not a rank's mean, so it is refused, not reread
            lambda s: s.replace("[step_host_s]", "[step_overhead_s]"),
            "step_overhead_s: no longer a constant: the per-step overhead is the wait for the slowest rank",
        ),
        (lambda s: s.replace("[reserved_bytes]\nvalue", "[reserved_bytes]\nworth"), "reserved_bytes: missing"),
        (lambda s: s + "\n[[[", "not valid TOML"),
        (lambda s: s.replace('[bands."all"]', '[bands."most"]'), 'bands: needs an "all" group'),
        (lambda s: s.replace('[bands."all"]\nrows = ', '[bands."all"]\nrows = 1.5 #'), "bands.all: needs rows"),
    ):
        bad.write_text(edit(text))
        C.forget()
        assert says in run_err(capsys, [*PREDICT, "--calibration", str(bad)])
    assert "calibration file not found" in run_err(
        capsys, ["validate", str(csv_path), "--calibration", str(tmp_path / "no.toml")]
    )
    assert C.active_file() == C.shipped_file()


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "validation" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_calibrate_script_write_declares_its_rows(tmp_path):
    cal = _script("calibrate")
    f = tmp_path / "calibration.toml"
    shutil.copy(C.shipped_file(), f)
    sets = [F.read_set(p) for p in shipped_sets()]
    parts = F.calibration_part(sets)
    start = C.constants()
    fake = F.Fit(start, start.with_(tensor_sustained=0.8), tuple(C.fitted_names()), 0.2, 0.1, 1, 0)
    cal.write(fake.consts, cal.header(sets, parts, fake, "current"), f)
    t = C.load_table(str(f))
    assert (
        t["tensor_sustained"]["value"] == 0.8 and t["tp_overlap"]["value"] == C.shipped_table()["tp_overlap"]["value"]
    )
    head = " ".join(ln[2:] for ln in f.read_text().splitlines() if ln.startswith("#"))
    for s, p in zip(sets, parts):
        assert f"({len(p.rows)} of {len(s.rows)} rows)" in head
    assert "independent/llm-foundry.csv" in head


def test_loso_families_leave_their_rows_out():
    loso = _script("loso")
    sets = [F.read_set(p) for p in shipped_sets()]
    fams = loso.families(sets, nvidia_by_source=False)
    assert sorted(fams) == ["fp8-lm", "llm-foundry", "maxtext-a3", "nvidia", "simumax-b200", "zero-bubble"]
    by_src = loso.families(sets, nvidia_by_source=True)
    assert sum(len(s.rows) for n, v in by_src.items() if n.startswith("nvidia: ") for s in v) == len(
        fams["nvidia"][0].rows
    )
    for name, mine in fams.items():
        train = F.calibration_part([s for n, v in fams.items() if n != name for s in v])
        left = {r["run_id"] for s in mine for r in s.rows}
        assert not left & {r["run_id"] for s in train for r in s.rows}


def test_restarted_search_never_ends_worse_than_one_pass(tmp_path):
    """perfmodel.analysis.fit.search restarts coordinate_search from its own result: its objective is at most one
    pass's, it starts from the same objective, and it counts every evaluation of every pass."""
    rows = [r for r in _dense_h100(0.6) if _is_cal(r)][:12]
    sets = [F.read_set(_write(tmp_path / "r.csv", rows))]
    start = C.priors()
    one = F.coordinate_search(sets, start, C.fitted_names(), rounds=1)
    many = F.search(sets, start, C.fitted_names(), rounds=1, max_passes=3)
    assert many.start_objective == one.start_objective and many.objective <= one.objective
    assert (many.passes == 1) == (many.evaluations == one.evaluations)


def test_small_sets_are_cross_validated_leave_one_out(tmp_path):
    # fewer rows than folds: one fold per row, each fold holding exactly its row
    assert F.cv_folds(5, 40) == 5 and F.cv_folds(20, 12) == 12 and F.cv_folds(5, 1) == 2
    rows = _dense_h100()[:12]
    s = F.read_set(_write(tmp_path / "c.csv", rows))
    for j in range(12):
        train, test = F.fold_sets([s], 12, j)
        assert [r["run_id"] for r in test[0].rows] == [rows[j]["run_id"]] and len(train[0].rows) == 11


def test_loso_refits_without_two_families_see_neither():
    """Inside S's fold the unseen-stack band uses, per other family T, the refit without S and T: its rows are the
    calibration rows of the four others, nothing of S or T."""
    loso = _script("loso")
    sets = [F.read_set(p) for p in shipped_sets()]
    fams = loso.families(sets, nvidia_by_source=False)
    order = list(fams)
    assert (
        loso.pair_key("zero-bubble", "nvidia", order)
        == loso.pair_key("nvidia", "zero-bubble", order)
        == "nvidia|zero-bubble"
    )
    ids = {n: {r["run_id"] for s in v for r in s.rows} for n, v in fams.items()}
    for a, b in (("nvidia", "fp8-lm"), ("llm-foundry", "zero-bubble")):
        seen = {r["run_id"] for s in loso.without_two(fams, a, b) for r in s.rows}
        assert not seen & (ids[a] | ids[b])
        rest = {
            r["run_id"] for n, v in fams.items() if n not in (a, b) for s in v for r in s.rows if F.is_calibration(r)
        }
        assert seen == rest and len(seen) > 0


def test_unseen_band_with_unchanged_refits_is_the_fitted_band():
    """The cross-validated residuals are the fitted ones when no refit moves a constant: with every 'refit without T'
    equal to one set of constants, the unseen-stack bands equal the bands fitted on the same calibration rows."""
    loso = _script("loso")
    sets = [F.read_set(p) for p in shipped_sets()]
    gen = F.generations(sets)
    fams = {
        n: v
        for n, v in loso.families(sets, nvidia_by_source=False).items()
        if n in ("fp8-lm", "maxtext-a3", "zero-bubble")
    }
    same = F.Fit(C.constants(), C.constants(), (), 0.0, 0.0, 0, 0)
    cv = loso.unseen_bands(fams, {n: same for n in fams}, gen)
    rep = F.evaluate(F.calibration_part([s for v in fams.values() for s in v]), None)
    name = {s.name: n for n, v in fams.items() for s in v}
    units = [name[r.dataset] for r in rep.results]  # each family weighs the same (loso.EQUAL_SOURCES)
    assert cv == U.fit(F.band_samples(rep, gen), units=units if loso.EQUAL_SOURCES else None)
    assert cv["all"]["rows"] == len(rep.results) > 0
