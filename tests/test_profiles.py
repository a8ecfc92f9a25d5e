"""Software profiles: `default` is exactly the calibrated constants (predict --profile default == predict);
unknown names fail with a suggestion; release profiles are reproducible from validation/runs.csv; the
releases command shows GPT-3 175B on 128 H100 across DGXC releases."""
from __future__ import annotations

from pathlib import Path

import pytest

from perfmodel.calibration import constants
from perfmodel.errors import InputError
from perfmodel.profiles import (fit_release, get_profile, load_profiles, release_of, release_profile_name,
                                rows_of_release)
from perfmodel.validate import read_csv, validate_rows
from cli_helpers import run_err, run_json

ROOT = Path(__file__).resolve().parent.parent
CSV = ROOT / "validation" / "runs.csv"
PRED = ["predict", "--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "64", "--tp", "8", "--pp", "4",
        "--vp", "5", "--gbs", "128", "--seq", "8192"]


def test_default_is_the_calibrated_constants():
    p = get_profile("default")
    assert p.overrides == {}
    assert p.consts is constants() and p.consts == constants()
    assert get_profile(None) is p


def test_predict_with_default_profile_equals_without(capsys):
    assert run_json(capsys, PRED) == run_json(capsys, [*PRED, "--profile", "default"])


def test_profiles_change_predictions(capsys):
    base = run_json(capsys, PRED)["tokens_per_s_per_gpu"]
    graphs = run_json(capsys, [*PRED, "--profile", "cuda-graphs"])
    assert graphs["profile"] == "cuda-graphs" and graphs["tokens_per_s_per_gpu"] > base
    assert run_json(capsys, [*PRED, "--profile", "no-overlap"])["tokens_per_s_per_gpu"] < base
    # aliases: a release's month
    dec = run_json(capsys, [*PRED, "--profile", "2025-12"])
    assert dec["profile"] == "nemo-25.11"
    assert dec["tokens_per_s_per_gpu"] != base


def test_unknown_profile_exits_2_with_suggestion(capsys):
    line = run_err(capsys, [*PRED, "--profile", "nemo-25.1"])
    assert "unknown profile" in line and "did you mean 'nemo-25.11'" in line
    with pytest.raises(InputError):
        get_profile("cuda-graph-s-x")


def test_every_profile_is_valid_and_documented():
    profs = load_profiles()
    c = constants()
    for p in profs.values():
        assert p.description and p.evidence, p.name
        c2 = p.consts
        for k, v in p.overrides.items():
            assert getattr(c2, k) == v
        if p.kind == "release":
            assert p.overrides.keys() == {"tensor_sustained"}          # one fitted constant per release
            assert release_profile_name(p.release) == p.name
            assert p.evidence["rows"] >= 4 and not p.evidence["at_bound"]
    assert c == constants()                                             # nothing mutated the calibration


def test_validate_uses_default_constants():
    rows = read_csv(CSV)[:20]
    a = validate_rows(rows, CSV.parent)
    b = validate_rows(rows, CSV.parent, get_profile("default").consts)
    assert [r.predicted for r in a.results] == [r.predicted for r in b.results]


def test_release_profile_reproducible_from_its_rows():
    """nemo-24.07 (4 rows, fast): refitting tensor_sustained on its rows gives the stored value and MAPEs."""
    p = get_profile("nemo-24.07")
    rows = rows_of_release(read_csv(CSV), p.release)
    assert {release_of(r) for r in rows} == {"NeMo 24.07"}
    fit = fit_release(rows, CSV.parent)
    stale = "stored profile no longer matches the cost model: run python3 validation/fit_profiles.py --write"
    assert fit["value"] == pytest.approx(p.overrides["tensor_sustained"], abs=2e-3), stale
    assert fit["mape_default"] == pytest.approx(p.evidence["mape_default"], abs=1e-3)
    assert fit["mape_own"] == pytest.approx(p.evidence["mape_own"], abs=2e-3)


def test_releases_gpt3_on_128_h100(capsys):
    d = run_json(capsys, ["releases", "--model", "gpt3-175b", "--hardware", "h100-sxm", "--gpus", "128",
                          "--precision", "bf16"])
    rel = [r["release"] for r in d["releases"]]
    assert rel == ["DGXC v24.11.1", "DGXC v25.04.01"]
    meas = [r["measured"] for r in d["rows"]]
    assert meas == [459.71, 492.96]
    # the source's MFU (full attention) is what our FLOPs give from the measured throughput
    for r in d["rows"]:
        assert r["measured_mfu_full"] == pytest.approx(r["source_mfu"], abs=0.003)
        assert r["predicted_own"] is not None


def test_profiles_command_lists_default(capsys):
    d = run_json(capsys, ["profiles"])
    names = [p["name"] for p in d["profiles"]]
    assert names[0] == "default" and d["profiles"][0]["overrides"] == {}
    assert "nemo-25.11" in names and "cuda-graphs" in names


def test_jan_2024_profile_reproduces_the_report_figure(capsys):
    """dgxc-2024-01: GPT-3 175B on 128 H100, BF16, predicts the report's 34% MFU (full attention)."""
    d = run_json(capsys, ["predict", "--model", "gpt3-175b", "--hardware", "h100-sxm", "--gpus", "128", "--tp", "4",
                          "--pp", "8", "--vp", "12", "--gbs", "256", "--seq", "2048", "--attention", "full",
                          "--profile", "jan-2024"])
    assert d["mfu"] == pytest.approx(0.34, abs=0.003), "run python3 validation/fit_profiles.py --write"


@pytest.mark.parametrize("args,key", [
    (["search", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--gbs", "64", "--seq", "4096",
      "--top", "1"], lambda d: d["top"][0]["prediction"]["tokens_per_s_per_gpu"]),
    (["scaling", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8,16", "--gbs", "64", "--seq", "4096",
      "--no-measured"], lambda d: d["points"][0]["tokens_per_s_per_gpu"]),
    (["size", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "64", "--tokens", "1e12"],
     lambda d: d[0]["tokens_per_s_per_gpu"]),
    (["compare", "--model", "llama3-8b", "--hardware", "h100-sxm", "--hardware", "gb200-nvl72", "--gpus", "64",
      "--gbs", "128", "--seq", "4096"], lambda d: d["systems"][0]["tokens_per_s_per_gpu"]),
])
def test_profile_on_every_planning_command(capsys, args, key):
    """--profile works wherever a layout is predicted: default changes nothing, a profile changes the
    prediction and is named in the output ("what if the Dec 2025 stack ran this")."""
    base = run_json(capsys, args)
    assert key(run_json(capsys, [*args, "--profile", "default"])) == key(base)
    dec = run_json(capsys, [*args, "--profile", "2025-12"])
    assert key(dec) != key(base)
    named = dec[0]["profile"] if isinstance(dec, list) else dec["profile"]
    assert named == "nemo-25.11"
    assert run_json(capsys, [*args, "--profile", "cuda-graphs"]) and key(run_json(capsys, [*args, "--profile", "no-overlap"])) < key(base)
    run_err(capsys, [*args, "--profile", "nope"])


def test_releases_tell_the_gpt3_story(capsys):
    """GPT-3 175B on 128 H100, BF16: the report's Jan 2024 figure (no row, profile dgxc-2024-01) sits with the
    measured releases, oldest first, and the story line gives 34% -> 50% -> 54%."""
    from perfmodel.cli import main
    args = ["releases", "--model", "gpt3-175b", "--hardware", "h100-sxm", "--gpus", "128", "--precision", "bf16"]
    d = run_json(capsys, args)
    (pt,) = d["report_points"]
    assert pt["profile"] == "dgxc-2024-01" and pt["measured_mfu_full"] == 0.34
    assert pt["mfu_full_own"] == pytest.approx(0.34, abs=0.003)
    assert pt["mfu_full_default"] > 0.45
    assert main(args) == 0
    out = capsys.readouterr().out
    rows = out[out.index("Rows ("):]
    assert rows.index("report, Jan 2024") < rows.index("DGXC v24.11.1") < rows.index("DGXC v25.04.01")
    assert "34.0% (report, Jan 2024) -> 50.0% (DGXC v24.11.1) -> 53.6% (DGXC v25.04.01)" in " ".join(out.split())
    # other filters: no report figure
    assert run_json(capsys, ["releases", "--model", "llama3-70b"])["report_points"] == []


def test_validate_has_no_profile_switch(capsys):
    """The accuracy figure is always the calibrated model: validate takes no --profile."""
    from perfmodel.cli import main
    assert main(["validate", str(CSV), "--profile", "cuda-graphs"]) == 2
    assert "--profile" in capsys.readouterr().err
