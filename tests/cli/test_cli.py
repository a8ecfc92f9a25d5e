"""The CLI in-process (perfmodel.cli.main): every command works with --json, and every bad input exits 2
with one line naming the field, never a traceback."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from cli_helpers import run_err, run_json

from perfmodel.cli import main
from perfmodel.specs.specfile import data_dir

LLAMA8B = ["--model", "llama3-8b", "--hardware", "h100-sxm"]


# ---- commands that work ------------------------------------------------------------------------


def test_list(capsys):
    hw = run_json(capsys, ["list", "hardware"])
    assert {r["id"] for r in hw} >= {"h100-sxm", "gb200-nvl72"}
    assert all(r["bf16_flops"] > 0 and r["hbm_bytes"] > 0 for r in hw)
    models = run_json(capsys, ["list", "models"])
    by_id = {r["id"]: r for r in models}
    assert by_id["deepseek-v3"]["moe"] and not by_id["llama3-8b"]["moe"]
    assert by_id["deepseek-v3"]["active_params"] < by_id["deepseek-v3"]["total_params"]


def test_list_tables(capsys):
    assert main(["list", "models"]) == 0
    assert "llama3-8b" in capsys.readouterr().out


def test_show_hardware(capsys):
    d = run_json(capsys, ["show", "hardware", "h100-sxm"])
    fields = {f["field"]: f for f in d["fields"]}
    assert fields["peak_flops.bf16"]["unit"] == "FLOP/s" and fields["peak_flops.bf16"]["source"]
    assert fields["memory.hbm_bytes"]["value"] == 80e9


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("args", [["gb200-nvl72", "--set", "nvlink_domain=144"], ["h100-sxm"]])
def test_show_hardware_never_cuts_a_field_name(capsys, monkeypatch, width, args):
    """`efficiency.scale_out_collective` printed as `efficiency.scale_out_collecti…` at 80-100 columns: the
    field column now keeps every name whole (marked `* ` when overridden) and the source column wraps."""
    from perfmodel.render import console

    names = [f["field"] for f in run_json(capsys, ["show", "hardware", *args])["fields"]]
    monkeypatch.setattr(console, "_width", width)
    assert main(["show", "hardware", *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "…" not in "\n".join(lines) and max(len(line) for line in lines) <= width
    cells = {line.split("│")[1].strip().lstrip("* ") for line in lines if line.startswith("│")}
    assert set(names) <= cells, set(names) - cells
    assert "efficiency.scale_out_collective" in cells


def test_show_hardware_by_file(capsys):
    path = str(data_dir("hardware") / "b200.toml")
    assert run_json(capsys, ["show", "hardware", path])["id"] == "b200"


@pytest.mark.parametrize(
    "kind,ref,shown",
    [
        ("hardware", "h100-sxm", "(hardware/h100-sxm.toml)"),
        ("model", "llama3-8b", "(models/llama3-8b.toml)"),
        ("stack", "nemo-25.04", "(stacks/nemo-25.04.toml)"),
    ],
)
def test_show_prints_catalog_paths_relative(capsys, monkeypatch, tmp_path, kind, ref, shown):
    """The text output named each catalog file by this machine's absolute path (README examples carried
    /work/main/...): a shipped spec prints its catalog-relative path wherever the command runs; --json
    keeps the absolute path."""
    from perfmodel.render import console

    monkeypatch.setattr(console, "_width", 200)
    monkeypatch.chdir(tmp_path)
    assert main(["show", kind, ref]) == 0
    head = capsys.readouterr().out
    assert shown in head and str(data_dir("hardware").parent) not in head
    assert Path(run_json(capsys, ["show", kind, ref])["path"]).is_absolute()


def test_display_path_names_catalog_files_in_a_checkout_and_a_wheel(monkeypatch, tmp_path):
    """A shipped file prints by its catalog place, also where the catalog is perfmodel/_data/ (an installed
    wheel: site-packages/perfmodel/_data/hardware/x.toml is hardware/x.toml, not perfmodel/_data/...); a
    file of the checkout outside the catalog folders, or outside the working directory, keeps its path."""
    from perfmodel.specs import specfile

    repo = data_dir("hardware").parent
    monkeypatch.chdir(tmp_path)
    assert specfile.display_path(repo / "hardware" / "h100-sxm.toml") == "hardware/h100-sxm.toml"
    outside = repo / "tests" / "cli" / "test_cli.py"
    assert specfile.display_path(outside) == str(outside)
    assert specfile.display_path("") == ""
    (tmp_path / "mine.toml").write_text("")
    assert specfile.display_path(tmp_path / "mine.toml") == "mine.toml"
    site = tmp_path / "site-packages"
    (site / "perfmodel" / "_data" / "hardware").mkdir(parents=True)
    f = site / "perfmodel" / "_data" / "hardware" / "x.toml"
    f.write_text("")
    monkeypatch.setattr(specfile, "PACKAGE_DIR", site / "perfmodel")
    monkeypatch.chdir(repo)
    assert specfile.display_path(f) == "hardware/x.toml"


def test_show_model(capsys):
    d = run_json(capsys, ["show", "model", "deepseek-v3", "--seq", "4096"])
    p = d["params"]
    assert abs(p["total_gap"]) <= p["total_tolerance"]
    f = d["flops_per_token"]
    assert f["full"] > f["causal"] > f["causal_without_mtp"]
    assert any(x["field"] == "moe.num_experts" and x["source"] for x in d["fields"])
    assert main(["show", "model", "llama3-8b"]) == 0
    assert "8,030,261,248" in capsys.readouterr().out


def test_explain_flops(capsys):
    d = run_json(capsys, ["explain", "flops", "llama3-70b", "--seq", "8192"])
    assert "S_eff" in d["general_formula"] and "S" in d["model_expression"]
    assert d["flops_per_token"] == pytest.approx(4.49e11, rel=0.02)
    full = run_json(capsys, ["explain", "flops", "llama3-70b", "--seq", "8192", "--attention", "full"])
    assert full["flops_per_token"] > d["flops_per_token"]
    assert main(["explain", "flops", "llama4-scout"]) == 0
    assert "FLOPs per token" in capsys.readouterr().out


PREDICT_OK = [*LLAMA8B, "--gpus", "8", "--tp", "2", "--gbs", "32", "--seq", "4096"]


def test_predict_json(capsys):
    d = run_json(capsys, ["predict", *PREDICT_OK])
    for k in ("step_time_s", "tokens_per_s_per_gpu", "mfu", "hfu", "memory_bytes_per_gpu", "fits", "breakdown_s"):
        assert k in d
    assert d["fits"] and d["step_time_s"] > 0 and 0 < d["mfu"] <= 1 and d["hfu"] >= d["mfu"] * (1 - 1e-9)
    # tokens/s/GPU and step time describe the same step
    assert d["tokens_per_s_per_gpu"] * d["step_time_s"] * 8 == pytest.approx(32 * 4096, rel=1e-6)
    assert d["memory_bytes_per_gpu"] == pytest.approx(sum(d["memory_parts_bytes"].values()), rel=1e-9)
    assert d["mfu_full"] > d["mfu"]


def test_predict_table(capsys):
    assert main(["predict", *PREDICT_OK, "--recompute", "full"]) == 0
    out = capsys.readouterr().out
    assert "MFU (causal attention)" in out and "Step time breakdown" in out and "fits" in out


def test_predict_ignore_memory(capsys):
    d = run_json(
        capsys,
        [
            "predict",
            "--model",
            "llama3-70b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "8",
            "--gbs",
            "8",
            "--seq",
            "8192",
            "--ignore-memory",
        ],
    )
    assert d["fits"] is False and d["memory_over_bytes"] > 0


def test_validate_json(capsys):
    d = run_json(capsys, ["validate", str(data_dir("validation") / "runs.csv"), "--by", "model"])
    assert d["rows"] >= d["predicted"] > 0
    assert d["predicted"] == len(d["per_row"])
    assert d["rows"] == d["predicted"] + len(d["unsupported"])
    assert d["mape"] >= 0 and d["median_ape"] <= d["p90_ape"]
    assert d["calibration"]["rows"] + d["held_out"]["rows"] == d["predicted"]
    assert set(d["by"]["model"]) == {r["model"] for r in d["per_row"]}


def test_validate_without_file_uses_shipped_sets(capsys):
    # `perfmodel validate` with no FILE checks every set shipped with the package (runs.csv and
    # validation/independent/*.csv), with a per-set table naming each
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    assert "rows given" in out and "By measured set" in out
    for name in (
        "runs.csv",
        "llm-foundry.csv",
        "maxtext-a3.csv",
        "zero-bubble.csv",
        "fp8-lm.csv",
        "simumax-b200-dense.csv",
    ):
        assert name in out


def test_validate_table(capsys, tmp_path):
    src = data_dir("validation") / "runs.csv"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    small = tmp_path / "small.csv"
    small.write_text("".join(lines[:21]), encoding="utf-8")
    assert main(["validate", str(small), "--by", "split"]) == 0
    out = capsys.readouterr().out
    assert "20 rows given" in out and "MAPE" in out and "Worst rows" in out


# ---- bad inputs: exit 2, one line, names the field --------------------------------------------


def test_unknown_model_did_you_mean(capsys):
    msg = run_err(
        capsys,
        ["predict", "--model", "lama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--gbs", "8", "--seq", "4096"],
    )
    assert "lama3-8b" in msg and "did you mean 'llama3-8b'" in msg
    msg = run_err(capsys, ["show", "hardware", "h100-sxn"])
    assert "did you mean 'h100-sxm'" in msg


def _model_toml(tmp_path: Path, edit) -> str:
    text = (data_dir("models") / "llama3-8b.toml").read_text(encoding="utf-8")
    p = tmp_path / "m.toml"
    p.write_text(edit(text), encoding="utf-8")
    return str(p)


def test_malformed_toml(capsys, tmp_path):
    path = _model_toml(tmp_path, lambda t: t + "\nbroken = [1, 2\n")
    msg = run_err(capsys, ["show", "model", path])
    assert "m.toml" in msg and "TOML" in msg


def test_misspelled_field(capsys, tmp_path):
    path = _model_toml(tmp_path, lambda t: t.replace("tied_embeddings =", "tied_embedings ="))
    msg = run_err(capsys, ["show", "model", path])
    assert "tied_embedings" in msg and "did you mean 'tied_embeddings'" in msg


def test_negative_field(capsys, tmp_path):
    path = _model_toml(
        tmp_path, lambda t: t.replace('value = 4096, source = "LSKU dim"', 'value = -4096, source = "LSKU dim"')
    )
    msg = run_err(
        capsys, ["predict", "--model", path, "--hardware", "h100-sxm", "--gpus", "8", "--gbs", "8", "--seq", "4096"]
    )
    assert "hidden_size" in msg


def test_missing_field(capsys, tmp_path):
    path = _model_toml(tmp_path, lambda t: "\n".join(l for l in t.splitlines() if not l.startswith("vocab_size")))
    msg = run_err(capsys, ["show", "model", path])
    assert "vocab_size" in msg and "missing" in msg


@pytest.mark.parametrize(
    "model,args,field",
    [
        ("llama3-8b", ["--gpus", "24", "--tp", "3", "--gbs", "24"], "tp"),  # 32 heads
        ("llama3-8b", ["--gpus", "8", "--gbs", "12"], "gbs"),  # dp 8
        ("llama3-8b", ["--gpus", "12", "--tp", "8", "--gbs", "12"], "gpus"),
        ("mixtral-8x7b", ["--gpus", "24", "--ep", "3", "--gbs", "24"], "ep"),  # 8 experts
    ],
)
def test_illegal_layouts(capsys, model, args, field):
    msg = run_err(capsys, ["predict", "--model", model, "--hardware", "h100-sxm", "--seq", "4096", *args])
    assert f"layout: {field}:" in msg


@pytest.mark.parametrize("hw,prec", [("a100-sxm-80gb", "fp8"), ("h100-sxm", "nvfp4")])
def test_precision_not_on_gpu(capsys, hw, prec):
    msg = run_err(
        capsys,
        [
            "predict",
            "--model",
            "llama3-8b",
            "--hardware",
            hw,
            "--gpus",
            "8",
            "--gbs",
            "8",
            "--seq",
            "4096",
            "--precision",
            prec,
        ],
    )
    assert "precision" in msg and prec in msg and hw in msg


def test_layout_does_not_fit(capsys):
    msg = run_err(
        capsys,
        ["predict", "--model", "llama3-70b", "--hardware", "h100-sxm", "--gpus", "8", "--gbs", "8", "--seq", "8192"],
    )
    assert "memory" in msg and "over the 85.0 GB usable" in msg and "--ignore-memory" in msg


def test_validate_empty_file(capsys, tmp_path):
    p = tmp_path / "empty.csv"
    p.write_text("", encoding="utf-8")
    assert "empty" in run_err(capsys, ["validate", str(p)])
    header_only = tmp_path / "header.csv"
    header_only.write_text("model,hardware,gpus,precision,seq_len,global_batch,tokens_per_s_per_gpu\n")
    assert "no data rows" in run_err(capsys, ["validate", str(header_only)])


def test_validate_missing_column(capsys, tmp_path):
    p = tmp_path / "bad.csv"
    with p.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "hardware", "gpus", "precision", "seq_len", "global_batch"])
        w.writerow(["llama3-8b", "h100-sxm", "8", "bf16", "4096", "8"])
    msg = run_err(capsys, ["validate", str(p)])
    assert "tokens_per_s_per_gpu" in msg and "missing" in msg


def test_validate_missing_file(capsys, tmp_path):
    assert "not found" in run_err(capsys, ["validate", str(tmp_path / "nope.csv")])


def test_sources_with_brackets_print_verbatim(capsys, tmp_path):
    path = _model_toml(tmp_path, lambda t: t.replace('source = "LSKU dim"', 'source = "[/b] Table [1]"'))
    assert main(["show", "model", path]) == 0
    assert "[/b] Table [1]" in capsys.readouterr().out


def test_closed_pipe_is_not_an_error():
    """`perfmodel validate --json | head -1`: the reader stops early; exit 0, nothing on stderr."""
    import subprocess
    import sys

    for args in (["validate", "--json"], ["validate"]):
        p = subprocess.Popen([sys.executable, "-m", "perfmodel", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.stdout is not None and p.stderr is not None
        p.stdout.read(16)
        p.stdout.close()
        assert p.wait(timeout=60) == 0
        assert b"Traceback" not in p.stderr.read()
