"""Stacks on the command line: --stack and --stack-set reach every predicting command and are named in its
output; `releases` predicts each release's rows with that release's own preset, and its like-for-like pairs are
identical configurations. (The deprecated --profile alias and `profiles` command were removed in issue 24.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import PREDICT, run_err, run_json

from perfmodel import api
from perfmodel.analysis.releases import config_key
from perfmodel.analysis.validate import read_csv, validate_rows
from perfmodel.cli import main
from perfmodel.specs.stack import load_stack

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "validation" / "runs.csv"
PRED = PREDICT
LAY = api.Layout(gpus=64, gbs=128, seq=8192, tp=8, pp=4, vp=5)


def _tps(**kw) -> float:
    return float(api.predict("llama3-70b", "h100-sxm", LAY, **kw).tokens_per_s_per_gpu[0])


def test_predict_names_the_stack_and_equals_api_predict(capsys):
    d = run_json(capsys, PRED)
    assert (d["stack"], d["stack_set"]) == ("default", []) and d["stack_name"] == load_stack("default").name
    assert d["tokens_per_s_per_gpu"] == _tps()
    d = run_json(
        capsys,
        [*PRED, "--stack", "nemo-24.07", "--stack-set", "cuda_graphs=per_layer", "--stack-set", "tp_overlap=none"],
    )
    assert (d["stack"], d["stack_set"]) == ("nemo-24.07", ["cuda_graphs=per_layer", "tp_overlap=none"])
    assert d["tokens_per_s_per_gpu"] == _tps(stack="nemo-24.07", stack_set=("cuda_graphs=per_layer", "tp_overlap=none"))


def test_predict_header_states_stack_and_overrides(capsys):
    assert main([*PRED, "--stack", "nemo-25.11", "--stack-set", "tp_overlap=none"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"stack nemo-25.11 ({load_stack('nemo-25.11').name}) + --stack-set tp_overlap=none" in out


def test_stack_file_and_bad_stack_inputs(capsys, tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text(
        'name = "mine"\nfamily = "megatron-core"\nbase = "nemo-25.11"\nbase_source = "test"\n'
        '[features]\ncuda_graphs = { value = "none", source = "my run" }\n'
    )
    d = run_json(capsys, [*PRED, "--stack", str(f)])
    assert d["stack"] == "mine" and d["tokens_per_s_per_gpu"] == _tps(
        stack="nemo-25.11", stack_set=("cuda_graphs=none",)
    )
    assert "--stack: nemo-25.1: unknown stacks id (did you mean 'nemo-25.11'?)" in run_err(
        capsys, [*PRED, "--stack", "nemo-25.1"]
    )
    assert "--stack-set: cuda_graph: unknown stack feature (did you mean 'cuda_graphs'?)" in run_err(
        capsys, [*PRED, "--stack-set", "cuda_graph=none"]
    )
    assert "--stack-set: tp_overlap: must be one of" in run_err(capsys, [*PRED, "--stack-set", "tp_overlap=sometimes"])
    assert "--stack-set: tp_overlap: expects FEATURE=VALUE" in run_err(capsys, [*PRED, "--stack-set", "tp_overlap"])
    assert "No such option '--profile'" in run_err(capsys, [*PRED, "--profile", "nemo-25.11"])


NO_OVERLAP = (
    "tp_overlap=none",
    "dp_grad_reduce_overlap=false",
    "dp_param_gather_overlap=false",
    "moe_a2a_overlap=false",
)


@pytest.mark.parametrize(
    "args,key",
    [
        (
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
                "1",
            ],
            lambda d: d["top"][0]["prediction"]["tokens_per_s_per_gpu"],
        ),
        (
            [
                "scaling",
                "--model",
                "llama3-8b",
                "--hardware",
                "h100-sxm",
                "--gpus",
                "8,16",
                "--gbs",
                "64",
                "--seq",
                "4096",
                "--no-measured",
            ],
            lambda d: d["points"][0]["tokens_per_s_per_gpu"],
        ),
        (
            ["size", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "64", "--tokens", "1e12"],
            lambda d: d[0]["tokens_per_s_per_gpu"],
        ),
        (
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
            ],
            lambda d: d["systems"][0]["tokens_per_s_per_gpu"],
        ),
        (
            [
                "sensitivity",
                "--model",
                "llama3-8b",
                "--hardware",
                "h100-sxm",
                "--gpus",
                "8",
                "--tp",
                "2",
                "--gbs",
                "64",
                "--seq",
                "4096",
            ],
            lambda d: d["base"]["tokens_per_s_per_gpu"],
        ),
        (
            [
                "cost",
                "--model",
                "llama3-8b",
                "--hardware",
                "h100-sxm",
                "--gpus",
                "8",
                "--tp",
                "2",
                "--gbs",
                "64",
                "--seq",
                "4096",
                "--tokens",
                "1e12",
            ],
            lambda d: d["tokens_per_s_per_gpu"],
        ),
    ],
)
def test_stack_on_every_planning_command(capsys, args, key):
    """--stack / --stack-set reach the prediction wherever a layout is predicted and are named in --json;
    overlap off is slower; a bad feature is one error line."""
    base = run_json(capsys, args)
    assert key(run_json(capsys, [*args, "--stack", "default"])) == key(base)
    off = run_json(capsys, [*args, *[x for s in NO_OVERLAP for x in ("--stack-set", s)]])
    named = off[0] if isinstance(off, list) else off
    assert named["stack"] == "default" and named["stack_set"] == list(NO_OVERLAP)
    assert key(off) < key(base)
    fa2 = run_json(capsys, [*args, "--stack", "nemo-25.11", "--stack-set", "attention_kernel=fa2"])  # FA2 on Hopper
    assert (fa2[0] if isinstance(fa2, list) else fa2)["stack"] == "nemo-25.11" and key(fa2) < key(base)
    run_err(capsys, [*args, "--stack-set", "nope=1"])


def test_releases_predict_each_row_with_its_own_stack(capsys):
    """GPT-3 175B on 128 H100 BF16: each DGXC release's rows predicted exactly as validate predicts them
    (its own preset), and the like-for-like pair is two rows of one configuration."""
    d = run_json(
        capsys, ["releases", "--model", "gpt3-175b", "--hardware", "h100-sxm", "--gpus", "128", "--precision", "bf16"]
    )
    assert [r["release"] for r in d["releases"]] == ["DGXC v24.11.1", "DGXC v25.04.01"]
    rows = {r["run_id"]: r for r in read_csv(CSV)}
    for r in d["rows"]:
        v = validate_rows([rows[r["run_id"]]], CSV.parent).results[0]
        assert (r["stack"], r["predicted"]) == (v.stack, v.predicted)
        assert r["measured_mfu_full"] == pytest.approx(r["source_mfu"], abs=0.003)
    assert {r["stack"] for r in d["rows"]} == {"nemo-megatron-24.05", "dgxc-25.04"}
    for rel in d["releases"]:
        for a, b in rel["like_for_like_run_ids"]:
            assert config_key(rows[a]) == config_key(rows[b]) and rows[a]["software"] != rows[b]["software"]


def test_releases_like_for_like_pairs_are_identical_configurations(capsys):
    d = run_json(capsys, ["releases", "--series", "nemo"])
    rows = {r["run_id"]: r for r in read_csv(CSV)}
    pairs = [p for rel in d["releases"] for p in rel["like_for_like_run_ids"]]
    assert pairs and sum(r["like_for_like_pairs"] for r in d["releases"]) == len(pairs)
    for a, b in pairs:
        assert config_key(rows[a]) == config_key(rows[b])
        assert rows[a]["framework"] == rows[b]["framework"] and rows[a]["software"] != rows[b]["software"]
    for rel in d["releases"]:
        mine = [r for r in d["rows"] if r["release"] == rel["release"]]
        assert len(mine) == rel["rows"] and rel["stacks"] == sorted({r["stack"] for r in mine})


def test_validate_has_no_profile_switch(capsys):
    """The accuracy figure uses each row's own stack: validate takes no --stack."""
    assert main(["validate", str(CSV), "--stack", "nemo-25.11"]) == 2
    assert "--stack" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
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
            "1",
        ],
        ["compare", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--gbs", "64", "--seq", "4096"],
    ],
)
def test_search_and_compare_headers_state_the_stack(capsys, monkeypatch, args):
    from perfmodel import render

    monkeypatch.setattr(render.console, "width", 300)
    assert main([*args, "--stack", "nemo-25.09", "--stack-set", "cuda_graphs=none"]) == 0
    out = capsys.readouterr().out
    assert f"stack nemo-25.09 ({load_stack('nemo-25.09').name}) + --stack-set cuda_graphs=none" in out
