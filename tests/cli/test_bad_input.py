"""Bad input (issue 7), the test table: every CLI case exits 2 with ONE stderr line that starts with "error:"
and names the field, never a traceback; the Python API raises InputError naming the argument. CSV rows that
can't be read are reported as unsupported (row and column named) while the other rows are still predicted.

Cases: unknown ids; spec TOML fields missing, misspelled (did-you-mean), negative, zero, NaN, inf, absurd,
wrong type; files empty, not TOML/JSON/UTF-8, too deep, huge; layouts (GPU count, tp vs heads, pp vs
layers, ep vs experts, gbs vs dp x mbs, precision the GPU lacks, memory with by-how-much, the single
changes that fit and --ignore-memory); CSV (missing column, bad cells, empty, header only, large);
cost and reliability --set overrides on tco/cost/compare/size; Hugging Face config.json fields; the API.
Issue 15 (answers at the edges): layouts that cannot run never priced (compare, cost, sensitivity, sweeps,
scaling and its baseline); impossible measurements (implied MFU > 100%, no recompute mode fits), duplicate
run ids, zero coverage, step_time_s; hot spares charged and --spares; one JSON vocabulary and JSON errors;
units in alias names and headers, ids never cut; conflicting --fix/--max/--set, etp on dense models, seq
beyond the context; ranked causes of slow runs; raw vs exposed communication; the report's input checks,
atomic write and did-you-mean."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from cli_helpers import run_err, run_json

from perfmodel.cli import main
from perfmodel.specs.specfile import data_dir

REQ = ["model", "hardware", "gpus", "precision", "seq_len", "global_batch", "tokens_per_s_per_gpu"]
GOOD_ROW = {
    "run_id": "good",
    "model": "llama3-8b",
    "hardware": "h100-sxm",
    "gpus": "8",
    "precision": "bf16",
    "seq_len": "4096",
    "global_batch": "32",
    "tokens_per_s_per_gpu": "9000",
    "tp": "1",
}
SHAPE = ["--gpus", "8", "--gbs", "8", "--seq", "4096"]


def predict(model: str = "llama3-8b", hardware: str = "h100-sxm", shape: list[str] = SHAPE, *extra: str) -> list[str]:
    return ["predict", "--model", model, "--hardware", hardware, *shape, *extra]


def spec(tmp_path: Path, kind: str, name: str, edit, filename: str = "spec.toml") -> str:
    """A catalog spec (kind = models | hardware) rewritten by `edit` into tmp_path/filename."""
    text = (data_dir(kind) / f"{name}.toml").read_text(encoding="utf-8")
    new = edit(text)
    assert new != text or not text, "edit did not change the spec"
    p = tmp_path / filename
    p.write_text(new, encoding="utf-8")
    return str(p)


def sub(pattern: str, repl: str):
    """Edit: replace the first regex match (must match)."""

    def edit(text: str) -> str:
        new, n = re.subn(pattern, repl, text, count=1, flags=re.M)
        assert n == 1, pattern
        return new

    return edit


def drop_line(prefix: str):
    return lambda text: "\n".join(l for l in text.splitlines() if not l.startswith(prefix))


def write_csv(path: Path, rows: list[dict], columns: list[str] | None = None) -> str:
    cols = columns or list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return str(path)


# ---- unknown ids --------------------------------------------------------------------------------------


def test_unknown_model_suggests_close_match(capsys):
    msg = run_err(capsys, predict(model="llama3-8"))
    assert "llama3-8" in msg and "did you mean 'llama3-8b'" in msg


def test_unknown_hardware(capsys):
    msg = run_err(capsys, predict(hardware="h100-pcie-9000"))
    assert "hardware" in msg and "h100-pcie-9000" in msg and "h100-sxm" in msg  # lists the known ids


def test_unusable_file_name(capsys):
    msg = run_err(capsys, predict(model="x" * 5000))  # longer than any file name may be
    assert "file name" in msg and len(msg) < 400


@pytest.mark.parametrize(
    "args,needle",
    [
        (["nosuch"], "No such command"),
        (["predict", "--model", "llama3-8b"], "Missing option"),
        (predict("llama3-8b", "h100-sxm", ["--gpus", "eight", "--gbs", "8", "--seq", "4096"]), "--gpus"),
        (predict("llama3-8b", "h100-sxm", ["--gpu", "8", "--gbs", "8", "--seq", "4096"]), "--gpus"),
        (predict("llama3-8b", "h100-sxm", SHAPE, "--precision", "fp9"), "--precision"),
        (["tco", "--hardware", "h100-sxm", "--buyer", "nobody"], "--buyer"),
        (["show", "model", "llama3-8b", "--seq", "0"], "--seq"),
    ],
)
def test_bad_flag_is_one_line(capsys, args, needle):
    """click's usage errors (unknown command or flag, a flag's type or choice) are one line too."""
    assert needle in run_err(capsys, args)


# ---- spec files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind,name,edit,field,hint",
    [
        ("models", "llama3-8b", sub(r"^tied_embeddings =", "tied_embedings ="), "tied_embedings", "tied_embeddings"),
        ("hardware", "h100-sxm", sub(r"^hbm_bandwidth =", "hbm_bandwith ="), "hbm_bandwith", "hbm_bandwidth"),
        ("hardware", "h100-sxm", sub(r"^\[scale_up\]", "[scale_upp]"), "scale_upp", "scale_up"),
    ],
)
def test_misspelled_field_suggests(capsys, tmp_path, kind, name, edit, field, hint):
    path = spec(tmp_path, kind, name, edit)
    flag = "--model" if kind == "models" else "--hardware"
    args = predict(**{"model" if kind == "models" else "hardware": path})
    assert flag in args
    msg = run_err(capsys, args)
    assert field in msg and f"did you mean '{hint}'" in msg


MODEL_VALUE = r"^hidden_size = \{ value = 4096"
HW_HBM = r"^hbm_bytes = \{ value = 80e9"


@pytest.mark.parametrize(
    "kind,name,edit,field",
    [
        ("models", "llama3-8b", sub(MODEL_VALUE, "hidden_size = { value = -4096"), "hidden_size"),
        ("models", "llama3-8b", sub(MODEL_VALUE, "hidden_size = { value = 0"), "hidden_size"),
        ("models", "llama3-8b", sub(MODEL_VALUE, "hidden_size = { value = nan"), "hidden_size"),
        ("models", "llama3-8b", sub(MODEL_VALUE, "hidden_size = { value = 4096.5"), "hidden_size"),
        ("models", "llama3-8b", sub(MODEL_VALUE, 'hidden_size = { value = "big"'), "hidden_size"),
        ("models", "llama3-8b", sub(r"^num_layers = \{ value = 32", "num_layers = { value = 1e30"), "num_layers"),
        ("models", "llama3-8b", sub(r"^num_layers = \{ value = 32", "num_layers = { value = " + "9" * 5000), ""),
        ("models", "llama3-8b", sub(r"^num_kv_heads = \{ value = 8", "num_kv_heads = { value = 7"), "attention"),
        ("hardware", "h100-sxm", sub(HW_HBM, "hbm_bytes = { value = -80e9"), "memory.hbm_bytes"),
        ("hardware", "h100-sxm", sub(HW_HBM, "hbm_bytes = { value = 0"), "memory.hbm_bytes"),
        ("hardware", "h100-sxm", sub(HW_HBM, "hbm_bytes = { value = nan"), "memory.hbm_bytes"),
        ("hardware", "h100-sxm", sub(HW_HBM, "hbm_bytes = { value = inf"), "memory.hbm_bytes"),
        ("hardware", "h100-sxm", sub(r"^bf16 = \{ value = 989.4e12", "bf16 = { value = -1"), "peak_flops.bf16"),
        (
            "hardware",
            "h100-sxm",
            sub(r"^domain_size = \{ value = 8", "domain_size = { value = 0"),
            "scale_up.domain_size",
        ),
        (
            "hardware",
            "h100-sxm",
            sub(r"^gemm_bf16 = \{ value = 0.803", "gemm_bf16 = { value = 1.5"),
            "efficiency.gemm_bf16",
        ),
    ],
)
def test_bad_field_value(capsys, tmp_path, kind, name, edit, field):
    path = spec(tmp_path, kind, name, edit)
    msg = run_err(capsys, predict(**{"model" if kind == "models" else "hardware": path}))
    assert "spec.toml" in msg and field in msg and len(msg) < 600


def test_absurd_hbm_bytes_rejected(capsys, tmp_path):
    path = spec(tmp_path, "hardware", "h100-sxm", sub(HW_HBM, "hbm_bytes = { value = 1e30"))
    assert "memory.hbm_bytes" in run_err(capsys, predict(hardware=path))


def test_absurdly_slow_hardware_rejected(capsys, tmp_path):
    path = spec(
        tmp_path,
        "hardware",
        "h100-sxm",
        sub(r"^hbm_bandwidth = \{ value = 3.35e12", "hbm_bandwidth = { value = 1e-300"),
    )
    assert "memory.hbm_bandwidth" in run_err(capsys, predict(hardware=path))


@pytest.mark.parametrize(
    "kind,name,prefix,field",
    [
        ("models", "llama3-8b", "vocab_size", "vocab_size"),
        ("hardware", "h100-sxm", "hbm_bytes", "memory.hbm_bytes"),
    ],
)
def test_missing_required_field(capsys, tmp_path, kind, name, prefix, field):
    path = spec(tmp_path, kind, name, drop_line(prefix))
    msg = run_err(capsys, predict(**{"model" if kind == "models" else "hardware": path}))
    assert field in msg and "missing" in msg


@pytest.mark.parametrize(
    "filename,content,words",
    [
        ("empty.toml", "", ["empty"]),
        ("blank.toml", "  \n\n", ["empty"]),
        ("prose.toml", "this is not a spec file, just words\n", ["TOML"]),
        ("binary.toml", "\x00\x01\x02]]]", ["TOML"]),
        ("broken.json", "{not json", ["JSON"]),
        ("list.json", "[1, 2, 3]", ["top level"]),
        ("deep.toml", "a = " + "[" * 3000 + "]" * 3000, ["TOML"]),
        ("deep.json", "[" * 100000 + "]" * 100000, ["JSON"]),
    ],
)
def test_not_a_spec_file(capsys, tmp_path, filename, content, words):
    p = tmp_path / filename
    p.write_text(content, encoding="utf-8")
    for args in (predict(model=str(p)), predict(hardware=str(p))):
        msg = run_err(capsys, args)
        assert filename in msg and all(w in msg for w in words), msg


def test_not_utf8_spec(capsys, tmp_path):
    p = tmp_path / "latin1.toml"
    p.write_bytes(b'name = "caf\xe9"\n')
    msg = run_err(capsys, predict(model=str(p)))
    assert "latin1.toml" in msg and "UTF-8" in msg


def test_missing_spec_file(capsys, tmp_path):
    assert "not found" in run_err(capsys, predict(model=str(tmp_path / "nope.toml")))


# ---- layouts ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model,shape,field",
    [
        ("llama3-8b", ["--gpus", "12", "--tp", "8", "--gbs", "12", "--seq", "4096"], "gpus"),
        ("llama3-8b", ["--gpus", "8", "--tp", "16", "--gbs", "8", "--seq", "4096"], "gpus"),  # tp*pp*cp > gpus
        ("llama3-8b", ["--gpus", "24", "--tp", "3", "--gbs", "24", "--seq", "4096"], "tp"),  # 32 heads
        ("llama3-8b", ["--gpus", "64", "--pp", "64", "--gbs", "64", "--seq", "4096"], "pp"),  # 32 layers
        ("mixtral-8x7b", ["--gpus", "24", "--ep", "3", "--gbs", "24", "--seq", "4096"], "ep"),  # 8 experts
        ("llama3-8b", ["--gpus", "8", "--ep", "2", "--gbs", "8", "--seq", "4096"], "ep"),  # dense model
        ("llama3-8b", ["--gpus", "8", "--gbs", "12", "--seq", "4096"], "gbs"),  # dp 8
        ("llama3-8b", ["--gpus", "8", "--mbs", "2", "--gbs", "8", "--seq", "4096"], "gbs"),  # dp*mbs 16
        ("llama3-8b", ["--gpus", "0", "--gbs", "8", "--seq", "4096"], "gpus"),
        ("llama3-8b", ["--gpus", "-8", "--gbs", "8", "--seq", "4096"], "gpus"),
        ("llama3-8b", ["--gpus", "8", "--tp", "0", "--gbs", "8", "--seq", "4096"], "tp"),
        ("llama3-8b", ["--gpus", "8", "--gbs", "8", "--seq", str(10**20)], "seq"),  # past int64
        ("llama3-8b", ["--gpus", str(2**62), "--gbs", str(2**62), "--seq", "4096"], "gpus"),
    ],
)
def test_illegal_layout(capsys, model, shape, field):
    msg = run_err(capsys, predict(model, "h100-sxm", shape))
    assert f"layout: {field}:" in msg


@pytest.mark.parametrize("hw,prec", [("a100-sxm-80gb", "fp8"), ("h100-sxm", "nvfp4")])
def test_precision_not_on_gpu(capsys, hw, prec):
    msg = run_err(capsys, predict("llama3-8b", hw, SHAPE, "--precision", prec))
    assert "precision" in msg and prec in msg and hw in msg


def test_layout_that_does_not_fit_says_by_how_much(capsys):
    rc = main(predict("llama3-70b", "h100-sxm", ["--gpus", "8", "--gbs", "8", "--seq", "8192"]))
    out = capsys.readouterr()
    assert rc != 0 and "Traceback" not in out.err
    line = out.err.strip()
    assert line.startswith("error:") and "\n" not in line and "memory" in line
    over = re.search(r"([\d.]+) GB over", line)
    assert over and float(over.group(1)) > 0, line


# ---- CSV (validate) -----------------------------------------------------------------------------------


def test_csv_missing_column(capsys, tmp_path):
    path = write_csv(tmp_path / "runs.csv", [GOOD_ROW], [c for c in REQ if c != "seq_len"])
    msg = run_err(capsys, ["validate", path])
    assert "seq_len" in msg and "missing" in msg


@pytest.mark.parametrize("content", ["", "\n"])
def test_csv_empty(capsys, tmp_path, content):
    p = tmp_path / "runs.csv"
    p.write_text(content, encoding="utf-8")
    msg = run_err(capsys, ["validate", str(p)])
    assert "runs.csv" in msg and ("empty" in msg or "missing" in msg or "no data" in msg)


def test_csv_header_only(capsys, tmp_path):
    path = write_csv(tmp_path / "runs.csv", [], REQ)
    assert "no data rows" in run_err(capsys, ["validate", path])


def test_csv_not_utf8(capsys, tmp_path):
    p = tmp_path / "runs.csv"
    p.write_bytes(",".join(REQ).encode() + b"\nllama3-8b,h100-sxm,8,bf16,4096,32,9\xff\n")
    msg = run_err(capsys, ["validate", str(p)])
    assert "runs.csv" in msg and "UTF-8" in msg


def test_csv_oversized_field(capsys, tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text(",".join(REQ) + "\n" + "x" * 200_000 + ",h100-sxm,8,bf16,4096,32,9000\n", encoding="utf-8")
    msg = run_err(capsys, ["validate", str(p)])
    assert "runs.csv" in msg and "CSV" in msg


@pytest.mark.parametrize(
    "column,value",
    [
        ("gpus", "eight"),
        ("gpus", "8.5"),
        ("gpus", "nan"),
        ("gpus", "1e400"),
        ("gpus", "-8"),
        ("seq_len", "99999999999999999999"),
        ("global_batch", "1e19"),
        ("tp", "x"),
        ("tokens_per_s_per_gpu", "fast"),
        ("tokens_per_s_per_gpu", "-1"),
        ("tokens_per_s_per_gpu", "inf"),
        ("precision", "fp9"),
        ("fsdp", "yes"),
        ("recompute", "sometimes"),
        ("model", "x" * 3000),
        ("model", "no/such/spec.toml"),
        ("hardware", "h100-sxn"),
    ],
)
def test_csv_bad_cell_is_unsupported_and_others_go_on(capsys, tmp_path, column, value):
    bad = {**GOOD_ROW, "run_id": "bad", column: value}
    cols = list(dict.fromkeys([*GOOD_ROW, "fsdp", "recompute"]))
    path = write_csv(tmp_path / "runs.csv", [{**GOOD_ROW, "run_id": "first"}, bad, GOOD_ROW], cols)
    d = run_json(capsys, ["validate", path])
    assert d["rows"] == 3 and d["predicted"] == 2
    assert {r["run_id"] for r in d["per_row"]} == {"first", "good"}
    [u] = d["unsupported"]
    assert u["run_id"] == "bad" and u["row"] == 3  # file line (header is line 1)
    name = {"model": "", "hardware": "hardware"}.get(column, column)  # a bad model path names the file
    assert name in u["reason"], u
    assert len(u["reason"]) < 800


@pytest.mark.parametrize("column,value", [("ep", "0"), ("tp", "0"), ("cp", "0"), ("pp", "-2"), ("etp", "0")])
def test_csv_moe_row_with_zero_parallel_size(capsys, tmp_path, column, value):
    """Regression (fuzz_csv): a MoE row with ep=0 or tp=0 raised ZeroDivisionError out of validate."""
    moe = {**GOOD_ROW, "model": "mixtral-8x7b", "ep": "8", "etp": "1", "run_id": "bad", column: value}
    path = write_csv(tmp_path / "runs.csv", [moe, GOOD_ROW])
    d = run_json(capsys, ["validate", path])
    assert d["predicted"] == 1 and [u["run_id"] for u in d["unsupported"]] == ["bad"]
    assert column in d["unsupported"][0]["reason"]


def test_csv_bom_and_spaced_header(capsys, tmp_path):
    p = tmp_path / "runs.csv"
    text = ", ".join(REQ) + "\n" + ",".join(GOOD_ROW[c] for c in REQ) + "\n"
    p.write_text("\ufeff" + text, encoding="utf-8")
    d = run_json(capsys, ["validate", str(p)])
    assert d["predicted"] == 1, d["unsupported"]


@pytest.mark.parametrize("ref", ["specs/my-model.toml", "my-model.toml", "./specs/my-model.toml"])
def test_csv_model_cell_is_path_relative_to_csv(capsys, tmp_path, monkeypatch, ref):
    (tmp_path / "specs").mkdir()
    src = (data_dir("models") / "llama3-8b.toml").read_text(encoding="utf-8")
    (tmp_path / "specs" / "my-model.toml").write_text(src.replace('id = "llama3-8b"', 'id = "my-model"'))
    (tmp_path / "my-model.toml").write_text(src.replace('id = "llama3-8b"', 'id = "my-model"'))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative to the CSV, not to the working directory
    path = write_csv(tmp_path / "runs.csv", [{**GOOD_ROW, "model": ref}])
    d = run_json(capsys, ["validate", path])
    assert d["predicted"] == 1, d["unsupported"]
    assert d["per_row"][0]["model"] == "my-model"


# ---- memory: by how much, what would fit, --ignore-memory ----------------------------------------------

NO_FIT = [
    "--gpus",
    "64",
    "--tp",
    "4",
    "--pp",
    "2",
    "--vp",
    "5",
    "--cp",
    "2",
    "--mbs",
    "2",
    "--gbs",
    "128",
    "--seq",
    "8192",
]


def test_layout_that_does_not_fit_names_single_changes_that_fit(capsys):
    line = run_err(capsys, predict("llama3-70b", "h100-sxm", NO_FIT))
    assert re.search(r"needs [\d.]+ GB per GPU, [\d.]+ GB over the 85.0 GB usable on h100-sxm", line), line
    fixes = re.search(r"single changes that fit: (.*?) \(or --ignore-memory\)", line)
    assert fixes, line
    for fix in fixes.group(1).split(", "):  # each suggestion really fits
        flags = fix.split()
        base = [a for i, a in enumerate(NO_FIT) if not (flags[0] == a or (i and NO_FIT[i - 1] == flags[0]))]
        d = run_json(capsys, predict("llama3-70b", "h100-sxm", base, *flags))
        assert d["fits"], fix
    d = run_json(capsys, predict("llama3-70b", "h100-sxm", NO_FIT, "--ignore-memory"))
    assert d["fits"] is False and d["memory_over_bytes"] > 0 and d["tokens_per_s_per_gpu"] > 0


# ---- huge files -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["model", "hardware"])
def test_huge_spec_file_is_refused_without_reading_it(capsys, tmp_path, flag):
    p = tmp_path / "huge.toml"
    with p.open("wb") as fh:  # sparse: 64 MiB on disk costs nothing
        fh.truncate(64 * 2**20)
    msg = run_err(capsys, predict(**{flag: str(p)}))
    assert "huge.toml" in msg and "MiB" in msg


def test_large_csv_streams_and_reports_each_bad_row(capsys, tmp_path):
    """A few thousand rows with a bad cell every 997th row: every bad row reported (row and column), the rest
    predicted. (100,000 rows with a memory bound: tests/analysis/test_scale.py, opt-in.)"""
    n = 3000
    rows = [{**GOOD_ROW, "run_id": f"r{i}", **({"gpus": "many"} if i % 997 == 5 else {})} for i in range(n)]
    d = run_json(capsys, ["validate", write_csv(tmp_path / "big.csv", rows)])
    bad = [i for i in range(n) if i % 997 == 5]
    assert d["rows"] == n and d["predicted"] == n - len(bad)
    assert [u["row"] for u in d["unsupported"]] == [i + 2 for i in bad]
    assert all("gpus" in u["reason"] for u in d["unsupported"])


# ---- cost and reliability overrides (--set on the economics commands) ---------------------------------

ECON = {
    "tco": ["tco", "--hardware", "h100-sxm"],
    "cost": [
        "cost",
        "--model",
        "llama3-8b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "16",
        "--tokens",
        "1e12",
        "--tokens-per-s-per-gpu",
        "9000",
    ],
    "compare": [
        "compare",
        "--model",
        "llama3-8b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "8",
        "--gbs",
        "8",
        "--seq",
        "4096",
        "--no-planner",
    ],
    "size": ["size", "--model", "llama3-8b", "--tokens", "1e12", "--gpus", "8", "--hardware", "h100-sxm"],
}


@pytest.mark.parametrize("cmd", list(ECON))
@pytest.mark.parametrize(
    "item,needle",
    [
        ("electricty_usd_per_kwh=0.1", "did you mean 'electricity_usd_per_kwh'"),  # misspelled
        ("nic_gbs=800", "did you mean 'nic_gbit_s'"),  # misspelled hardware field
        ("pue", "KEY=VALUE"),
        ("pue=cheap", "number"),
        ("pue=nan", "finite"),
        ("electricity_usd_per_kwh=-0.1", "electricity_usd_per_kwh"),  # negative
        ("depreciation_years=0", "depreciation_years"),  # zero
        ("allin_capex_usd_per_gpu=1e300", "allin_capex_usd_per_gpu"),  # absurd
        ("hbm_gb=0", "hbm_gb: must be at least 0.1 (GB per GPU; got 0)"),  # what-if hardware, zero, in its unit
    ],
)
def test_bad_cost_override(capsys, cmd, item, needle):
    assert needle in run_err(capsys, [*ECON[cmd], "--set", item])


@pytest.mark.parametrize(
    "item,field",
    [
        ("restart_s=1e300", "restart_s"),
        ("spare_units=1e300", "spare_units"),
        ("mtbi_gpu_days=1e-9", "goodput"),
        ("unit_event_fraction=2", "unit_event_fraction"),
    ],
)
def test_absurd_reliability_override(capsys, item, field):
    """Absurd reliability values: one line naming the field, never an infinite or null cost."""
    assert field in run_err(capsys, [*ECON["cost"], "--set", item])


# ---- the Python API -----------------------------------------------------------------------------------


def _api_cases():
    from perfmodel.api import Layout

    ok = Layout(gpus=8, gbs=8, seq=4096)
    return [
        ({"model": "llama3-8"}, "did you mean 'llama3-8b'"),
        ({"hardware": "h100-sxn"}, "did you mean 'h100-sxm'"),
        ({"model": 5}, "model"),
        ({"hardware": None}, "hardware"),
        ({"layout": {"gpus": 8}}, "Layout"),
        ({"layout": Layout(gpus=8, gbs=8, seq=4096, tp="2")}, "tp"),  # type: ignore[arg-type]
        ({"layout": Layout(gpus=8, gbs=8, seq=4096, mbs=float("nan"))}, "mbs"),  # type: ignore[arg-type]
        ({"layout": Layout(gpus=8, gbs=8, seq=4096, fsdp="yes")}, "fsdp"),  # type: ignore[arg-type]
        ({"layout": Layout(gpus=8, gbs=8, seq=4096, recompute="some")}, "recompute"),  # type: ignore[arg-type]
        ({"layout": Layout(gpus=12, gbs=12, seq=4096, tp=8)}, "gpus"),
        ({"layout": Layout(gpus=8, gbs=12, seq=4096)}, "gbs"),
        ({"precision": "fp9"}, "did you mean 'fp8'"),
        ({"hardware": "a100-sxm-80gb", "precision": "fp8"}, "fp8"),
        ({"precision": "nvfp4"}, "nvfp4"),
        ({"attention": "half"}, "attention"),
        ({"routing": "fair"}, "routing"),
        ({"consts": "calibrated"}, "consts"),
    ], ok


@pytest.mark.parametrize("i", range(17))
def test_python_api_bad_arguments_raise_input_error(i):
    from perfmodel.api import predict
    from perfmodel.errors import InputError

    cases, ok = _api_cases()
    bad, needle = cases[i]
    args = {"model": "llama3-8b", "hardware": "h100-sxm", "layout": ok, **bad}
    with pytest.raises(InputError) as exc:
        predict(**args)
    assert needle in str(exc.value), str(exc.value)


def test_python_api_predict_many_checks_its_arguments():
    from perfmodel.api import Layout, LayoutGrid, predict_many
    from perfmodel.errors import InputError

    grid = LayoutGrid.of(Layout(gpus=8, gbs=8, seq=4096))
    with pytest.raises(InputError, match="LayoutGrid"):
        predict_many("llama3-8b", "h100-sxm", [grid])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="routing"):
        predict_many("llama3-8b", "h100-sxm", grid, routing="fair")


# ---- Hugging Face config.json through the CLI -----------------------------------------------------------

HF = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
}


@pytest.mark.parametrize(
    "edit,needle",
    [
        ({"hidden_size": None, "hidden_sise": 4096}, "the file has 'hidden_sise'"),  # misspelled
        ({"num_hidden_layers": None}, "num_hidden_layers: required field is missing"),
        ({"hidden_size": -4096}, "hidden_size"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"intermediate_size": 1e30}, "intermediate_size"),
        ({"num_attention_heads": "many"}, "num_attention_heads"),
        ({"num_key_value_heads": 7}, "num_key_value_heads"),
        ({"model_type": "lama"}, "did you mean 'llama'"),
    ],
)
def test_hf_config_bad_fields_on_the_cli(capsys, tmp_path, edit, needle):
    doc = {k: v for k, v in {**HF, **edit}.items() if v is not None}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    msg = run_err(capsys, predict(model=str(p)))
    assert "config.json" in msg and needle in msg, msg


# ---- issue 15.1: a layout that cannot run never gets throughput, cost or energy ------------------------


def test_compare_never_prices_a_layout_that_cannot_run(capsys):
    """DeepSeek-V3 on 8 GPUs (one HGX server of either) fits on neither system (~3.9 TB per GPU): an error, not
    $/token and perf/TCO."""
    msg = run_err(
        capsys,
        [
            "compare",
            "--model",
            "deepseek-v3",
            "--hardware",
            "h100-sxm",
            "--hardware",
            "h200-sxm",
            "--gpus",
            "8",
            "--gbs",
            "64",
            "--seq",
            "4096",
        ],
    )
    assert "no system can run" in msg and "h100-sxm" in msg and "h200-sxm" in msg and "GB over" in msg


def test_compare_lists_the_unrunnable_system_without_numbers(capsys):
    """llama3-8b tp1 at seq 16384 (116.5 GB: the default stack's TE cross-entropy keeps bf16 logits, so seq 8192
    now fits in 77.8 GB) fits the 186 GB GB200 but not the 80 GB H100: H100 is listed as unable to run,
    with no throughput or cost keys; the perf-per-TCO baseline is the first system that runs."""
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
            "16384",
            "--no-planner",
        ],
    )
    h, g = d["systems"]
    assert h["runnable"] is False and "GB over" in h["reason"]
    assert not {"tokens_per_s_per_gpu", "usd_per_million_tokens", "joules_per_token"} & set(h)
    assert g["runnable"] is True and g["perf_per_tco_vs_first_nominal"] == pytest.approx(1.0)


def test_cost_refuses_a_layout_that_does_not_fit(capsys):
    msg = run_err(
        capsys,
        [
            "cost",
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
            "--tokens",
            "1e12",
        ],
    )
    assert "layout: memory: needs" in msg and "--ignore-memory" not in msg


def test_sensitivity_refuses_a_layout_that_does_not_fit(capsys):
    """131.7 GB of 80 GB: refused on the first line, not analysed with a note at the end."""
    msg = run_err(
        capsys,
        [
            "sensitivity",
            "--model",
            "llama3-70b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "8",
            "--tp",
            "8",
            "--gbs",
            "8",
            "--seq",
            "8192",
            "--set",
            "hbm_gb=40",
        ],
    )
    assert "layout: memory: needs" in msg


def test_sensitivity_sweep_cells_that_do_not_fit_have_no_throughput(capsys):
    args = "sensitivity --model llama3-70b --hardware h100-sxm --gpus 8 --tp 8 --gbs 8 --seq 8192 --sweep".split()
    d = run_json(capsys, [*args, "hbm_gb=40,80,200"])
    by = {float(c["set"]["hbm_gb"]): c for c in d["cells"]}
    assert by[40]["fits"] is False and by[40]["tokens_per_s_per_gpu"] is None
    assert by[200]["fits"] is True and by[200]["tokens_per_s_per_gpu"] > 0
    assert "fits in HBM on no variant" in run_err(capsys, [*args, "hbm_gb=40,50"])


def test_scaling_sizes_that_do_not_fit_are_not_priced_nor_the_baseline(capsys):
    """Strong scaling with FSDP: memory per GPU falls as dp grows, so the small sizes do not fit. They carry
    the reason and no numbers; the 100% baseline is the first size that runs."""
    args = [
        "scaling",
        "--model",
        "llama3-70b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "16,32,64,128",
        "--gbs",
        "64",
        "--seq",
        "8192",
        "--tp",
        "8",
        "--fsdp",
        "--mode",
        "strong",
        "--no-measured",
    ]
    d = run_json(capsys, args)
    pts = d["points"]
    bad = [p for p in pts if not p["ok"]]
    good = [p for p in pts if p["ok"]]
    assert bad and good and all("does not fit" in p["reason"] for p in bad)
    assert all(p["tokens_per_s_per_gpu"] is None and p["usd_per_million_tokens_nominal"] is None for p in bad)
    assert good[0]["scaling_efficiency"] == pytest.approx(1.0)
    msg = run_err(
        capsys,
        [
            "scaling",
            "--model",
            "llama3-70b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "8,16",
            "--gbs",
            "8",
            "--seq",
            "8192",
            "--mode",
            "strong",
            "--no-measured",
        ],
    )
    assert "no size can run" in msg


# ---- issue 15.2 / 15.7: impossible measurements, duplicates, zero coverage, step_time_s ----------------

ROW70 = {
    "run_id": "l70",
    "model": "llama3-70b",
    "hardware": "h100-sxm",
    "gpus": "64",
    "precision": "bf16",
    "seq_len": "8192",
    "global_batch": "128",
    "tp": "8",
    "pp": "4",
    "vp": "5",
    "tokens_per_s_per_gpu": "1000",
}


def test_csv_impossible_throughput_is_unsupported_not_scored(capsys, tmp_path):
    """1,000,000 tok/s/GPU for Llama 3 70B on H100 implies ~45,000% MFU (a cluster total typed as per-GPU):
    unsupported with the reason, out of the statistics. The limit is the dense peak: 989.4 TFLOP/s over
    Llama 3 70B's FLOPs per token at seq 8192 allows ~2,200 tok/s/GPU, so 2,000 is scored and 3,000 is not."""
    rows = [
        ROW70,
        {**ROW70, "run_id": "cluster", "tokens_per_s_per_gpu": "1000000"},
        {**ROW70, "run_id": "near", "tokens_per_s_per_gpu": "2000"},
        {**ROW70, "run_id": "over", "tokens_per_s_per_gpu": "3000"},
    ]
    d = run_json(capsys, ["validate", write_csv(tmp_path / "runs.csv", rows)])
    assert {r["run_id"] for r in d["per_row"]} == {"l70", "near"}
    why = {u["run_id"]: u["reason"] for u in d["unsupported"]}
    assert set(why) == {"cluster", "over"} and "MFU" in why["cluster"] and "100%" in why["cluster"]
    assert "tokens_per_s_per_gpu" in why["cluster"]


def test_csv_run_that_fits_with_no_recompute_mode_is_predicted_and_the_contradiction_reported(capsys, tmp_path):
    """DeepSeek-V3 on 8 H100 fits with no recompute mode in perfmodel's memory model, but a measured run is data:
    it is predicted on its stated layout (full recompute inferred) and the memory disagreement is its own
    finding, in the row and in the summary's memory_contradictions (issue 26)."""
    row = {
        "run_id": "dsv3",
        "model": "deepseek-v3",
        "hardware": "h100-sxm",
        "gpus": "8",
        "precision": "bf16",
        "seq_len": "4096",
        "global_batch": "64",
        "ep": "8",
        "tokens_per_s_per_gpu": "100",
    }
    d = run_json(capsys, ["validate", write_csv(tmp_path / "runs.csv", [row, GOOD_ROW])])
    assert [r["run_id"] for r in d["per_row"]] == ["dsv3", "good"] and not d["unsupported"]
    dsv3 = d["per_row"][0]
    assert dsv3["predicted"] > 0 and "any recompute mode" in dsv3["memory_contradiction"]
    assert "must shard, offload or recompute" in dsv3["memory_contradiction"]
    assert d["memory_contradictions"] == [{"run_id": "dsv3", "reason": dsv3["memory_contradiction"]}]
    assert d["per_row"][1]["memory_contradiction"] is None
    # stated recompute: the same rule (full recompute does not fit either)
    d = run_json(capsys, ["validate", write_csv(tmp_path / "r2.csv", [{**row, "recompute": "selective"}, GOOD_ROW])])
    assert [c["run_id"] for c in d["memory_contradictions"]] == ["dsv3"] and not d["unsupported"]


def test_csv_duplicate_run_id_is_an_input_error(capsys, tmp_path):
    msg = run_err(capsys, ["validate", write_csv(tmp_path / "runs.csv", [GOOD_ROW, {**GOOD_ROW, "gpus": "16"}])])
    assert "run_id" in msg and "good" in msg and "lines 2 and 3" in msg


def test_csv_with_no_row_predicted_exits_2(capsys, tmp_path):
    path = write_csv(tmp_path / "runs.csv", [{**GOOD_ROW, "gpus": "eight"}, {**GOOD_ROW, "run_id": "b", "tp": "x"}])
    rc = main(["validate", path])
    out = capsys.readouterr()
    assert rc == 2 and "Unsupported rows" in out.out
    assert out.err.startswith("error: ") and "0% coverage" in out.err and "gpus" in out.err


def test_csv_step_time_without_tokens_per_s(capsys, tmp_path):
    """step_time_s converts: tokens/s/GPU = global_batch x seq_len / (step x gpus) = 32 x 4096 / (1.8204 x 8)."""
    row = {k: v for k, v in GOOD_ROW.items() if k != "tokens_per_s_per_gpu"}
    d = run_json(capsys, ["validate", write_csv(tmp_path / "runs.csv", [{**row, "step_time_s": "1.8204"}])])
    assert d["predicted"] == 1
    assert d["per_row"][0]["measured"] == pytest.approx(32 * 4096 / (1.8204 * 8))
    # neither column: the file is refused naming both
    msg = run_err(capsys, ["validate", write_csv(tmp_path / "r2.csv", [row])])
    assert "tokens_per_s_per_gpu or step_time_s" in msg and "missing" in msg


def test_validate_help_lists_the_columns(capsys):
    from perfmodel.analysis.validate import COLUMNS

    assert main(["validate", "--help"]) == 0
    out = capsys.readouterr().out
    for name, unit, default, _ in COLUMNS:
        assert f"{name} [{unit}] default {default}" in " ".join(out.split())


@pytest.mark.parametrize("tps,ok", [("1e9", False), ("3000", False), ("2000", True)])
def test_cost_measured_throughput_plausibility(capsys, tps, ok):
    """The validate rule on a typed throughput: Llama 3 70B at seq 8192 on H100 allows ~2,200 tok/s/GPU in BF16
    (--precision bf16 given); 1e9 used to print '$ whole run 0'."""
    args = [
        "cost",
        "--model",
        "llama3-70b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "64",
        "--seq",
        "8192",
        "--precision",
        "bf16",
        "--tokens",
        "1e12",
        "--tokens-per-s-per-gpu",
        tps,
    ]
    if ok:
        assert run_json(capsys, args)["tokens_per_s_per_gpu"] == float(tps)
    else:
        msg = run_err(capsys, args)
        assert "--tokens-per-s-per-gpu" in msg and "MFU" in msg


# ---- issue 15.3: hot spares charged by default, one flag everywhere ------------------------------------

SPARE_CMDS = {
    "cost": [
        "cost",
        "--model",
        "llama3-70b",
        "--hardware",
        "gb200-nvl72",
        "--gpus",
        "128",
        "--tokens",
        "1e12",
        "--tokens-per-s-per-gpu",
        "1500",
    ],
    "compare": [
        "compare",
        "--model",
        "llama3-8b",
        "--hardware",
        "gb200-nvl72",
        "--gpus",
        "128",
        "--gbs",
        "128",
        "--seq",
        "4096",
        "--no-planner",
    ],
    "size": ["size", "--model", "llama3-8b", "--tokens", "1e12", "--gpus", "128", "--hardware", "gb200-nvl72"],
    "scaling": [
        "scaling",
        "--model",
        "llama3-8b",
        "--hardware",
        "gb200-nvl72",
        "--gpus",
        "128,256",
        "--gbs",
        "128",
        "--seq",
        "4096",
        "--no-measured",
    ],
}


def _after_reliability_usd_per_mtok(cmd: str, d) -> float:
    if cmd == "compare":
        d = d["systems"][0]
    if cmd == "size":
        d = d[0]
    if cmd == "scaling":
        return d["points"][0]["usd_per_million_tokens_after_reliability"]
    return d["usd_per_million_tokens_after_reliability"]


@pytest.mark.parametrize("cmd", list(SPARE_CMDS))
def test_hot_spares_charged_by_default_and_one_flag_excludes_them(capsys, cmd):
    """NVL72 trains on 64 of 72 GPUs per rack: charging the 8 installed hot spares multiplies $/token by 72/64
    (+12.5%) on every economics command; --spares excluded is the same flag everywhere."""
    charged = run_json(capsys, SPARE_CMDS[cmd])
    excluded = run_json(capsys, [*SPARE_CMDS[cmd], "--spares", "excluded"])
    ratio = _after_reliability_usd_per_mtok(cmd, charged) / _after_reliability_usd_per_mtok(cmd, excluded)
    assert ratio == pytest.approx(72 / 64)


def test_spare_policy_is_stated_and_the_old_key_points_to_the_flag(capsys):
    assert main(SPARE_CMDS["cost"]) == 0
    assert "hot spares charged: 8 of 72 GPUs per rack" in " ".join(capsys.readouterr().out.split())
    assert "--spares" in run_err(capsys, [*SPARE_CMDS["cost"], "--set", "count_hot_spares=1"])


# ---- issue 15.4: one JSON vocabulary; errors as JSON with --json --------------------------------------


def test_json_vocabulary_names_nominal_and_after_reliability_apart(capsys):
    """cost, compare, size, scaling and the report's compare rows: every run-cost quantity that has both
    meanings carries _nominal or _after_reliability, never a bare name that means one thing here and the
    other there."""
    from perfmodel.economics.tco import RunCost

    bare = {f for f in RunCost.__dataclass_fields__}
    cost = run_json(capsys, SPARE_CMDS["cost"])
    cmp = run_json(capsys, SPARE_CMDS["compare"])["systems"][0]
    size = run_json(capsys, SPARE_CMDS["size"])[0]
    pt = run_json(capsys, SPARE_CMDS["scaling"])["points"][0]
    for d in (cost, cmp, size):
        assert not bare & set(d), bare & set(d)
        for k in ("usd_per_million_tokens", "usd_total", "joules_per_token", "mwh"):
            assert d[f"{k}_nominal"] < d[f"{k}_after_reliability"]
    assert size["wall_days_nominal"] < size["wall_days_after_reliability"]
    assert not bare & set(pt) and pt["usd_per_million_tokens_nominal"] < pt["usd_per_million_tokens_after_reliability"]


@pytest.mark.parametrize(
    "args,field",
    [
        (predict(model="llama3-8"), "llama3-8"),
        (predict("llama3-8b", "h100-sxm", ["--gpus", "8", "--gbs", "12", "--seq", "4096"]), "gbs"),
        (predict("llama3-8b", "h100-sxm", ["--gpus", "eight", "--gbs", "8", "--seq", "4096"]), None),
    ],
)
def test_json_errors_are_a_json_object_on_stdout_too(capsys, args, field):
    rc = main([*args, "--json"])
    out = capsys.readouterr()
    assert rc == 2 and out.err.startswith("error: ") and len(out.err.strip().splitlines()) == 1
    d = json.loads(out.out)
    assert d["exit_status"] == 2 and d["error"]["message"] in out.err
    if field is not None:
        assert d["error"]["field"] == field


# ---- issue 15.5 / 15.12: units in names and headers; ids never cut ----------------------------------------


@pytest.mark.parametrize(
    "old,new",
    [
        ("nic_gbps", "nic_gbit_s"),
        ("nvlink_gbps", "nvlink_gbyte_s"),
        ("nvlink_bw", "nvlink_gbyte_s"),
        ("hbm_tbps", "hbm_tbyte_s"),
    ],
)
@pytest.mark.parametrize("cmd", ["predict", "cost"])
def test_ambiguous_bandwidth_aliases_are_refused_with_the_new_name(capsys, old, new, cmd):
    args = predict() if cmd == "predict" else ECON["cost"]
    msg = run_err(capsys, [*args, "--set", f"{old}=800"])
    assert f"renamed to {new}" in msg


def test_nic_alias_is_gbit_per_s_and_nvlink_alias_gbyte_per_s():
    from perfmodel.specs.hardware import apply_overrides, load_hardware

    hw = apply_overrides(load_hardware("h100-sxm"), ["nic_gbit_s=800", "nvlink_gbyte_s=900"])
    assert hw.scale_out.bandwidth == 100e9 and hw.scale_up.bandwidth == 900e9  # 800 Gbit/s = 100 GB/s


@pytest.mark.parametrize("kind", ["hardware", "models"])
def test_list_never_cuts_ids_at_80_columns(capsys, monkeypatch, kind):
    from perfmodel import render
    from perfmodel.specs.specfile import catalog_ids

    monkeypatch.setattr(render.console, "width", 80)
    assert main(["list", kind]) == 0
    out = capsys.readouterr().out
    assert all(len(l) <= 80 for l in out.splitlines())
    ids = {l.split()[0] for l in out.splitlines() if l.strip()}
    assert set(catalog_ids(kind)) <= ids
    if kind == "hardware":
        assert "NIC Gbit/s" in out and "HBM GB" in out


def test_search_prints_memory_in_gb_as_predict_does(capsys, monkeypatch):
    """One memory unit (GB = 1e9 bytes) in every table: predict's 'memory per GPU' and search's 'mem GB' agree."""
    from perfmodel import render

    monkeypatch.setattr(render.console, "width", 200)
    args = [
        "search",
        "--model",
        "llama3-8b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "8",
        "--gbs",
        "8",
        "--seq",
        "4096",
        "--top",
        "1",
    ]
    d = run_json(capsys, args)
    mem = d["top"][0]["prediction"]["memory_bytes_per_gpu"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "mem GB" in out and "GiB" not in out and f"{mem / 1e9:.1f}" in out


# ---- issue 15.6: conflicts are errors ------------------------------------------------------------------

SEARCH70 = [
    "search",
    "--model",
    "llama3-70b",
    "--hardware",
    "h100-sxm",
    "--gpus",
    "64",
    "--gbs",
    "128",
    "--seq",
    "8192",
]


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--fix", "tp=3"], "tp=3: no layout can take it: tp must divide the 64 GPUs and the 64 attention heads"),
        (["--fix", "pp=3"], "pp must divide the 64 GPUs"),
        (["--fix", "ep=2"], "dense: ep must be 1"),
        (["--fix", "etp=2"], "dense: etp must be 1"),
        (["--fix", "dp=3"], "dp must divide the 64 GPUs"),
        (["--fix", "mbs=3"], "mbs must divide the global batch 128"),
        (["--fix", "tp=8", "--max", "tp=4"], "conflicts with --max tp=4"),
        (["--fix", "tp=8", "--fix", "tp=4"], "given twice with different values (8 and 4)"),
        (["--max", "pp=8", "--max", "pp=4"], "given twice"),
    ],
)
def test_search_constraints_that_no_layout_can_take_are_errors(capsys, extra, needle):
    assert needle in run_err(capsys, [*SEARCH70, *extra])


def test_search_with_nothing_that_fits_exits_2(capsys):
    msg = run_err(
        capsys,
        [
            "search",
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
            "--fix",
            "pp=1",
            "--fix",
            "recompute=none",
        ],
    )
    assert "legal layouts fits in HBM" in msg


@pytest.mark.parametrize(
    "args,needle",
    [
        (
            predict("llama3-8b", "h100-sxm", SHAPE, "--set", "hbm_gb=100", "--set", "memory.hbm_bytes=1e11"),
            "sets memory.hbm_bytes twice",
        ),
        (predict("llama3-8b", "h100-sxm", SHAPE, "--set", "nvlink_domain=16", "--set", "nvlink_domain=16"), "twice"),
        (["tco", "--hardware", "h100-sxm", "--set", "pue=1.2", "--set", "pue=1.3"], "given twice (1.2 and 1.3)"),
    ],
)
def test_repeated_set_is_an_error(capsys, args, needle):
    assert needle in run_err(capsys, args)


def test_etp_on_a_dense_model_errors_like_ep(capsys):
    assert "layout: etp: etp must be 1 for a dense model" in run_err(capsys, predict(shape=SHAPE) + ["--etp", "2"])


def test_seq_above_the_maximum_context_warns_and_goes_on(capsys):
    """Rule: above max_position_embeddings a warning on stderr (after the output), exit 0; long-context
    training is real (RoPE extension), so it is not an error. An error elsewhere stays the one line."""
    rc = main(
        predict(
            "llama3-8b",
            "h100-sxm",
            ["--gpus", "8", "--gbs", "8", "--seq", "65536", "--tp", "8"],
            "--recompute",
            "full",
            "--json",
        )
    )
    out = capsys.readouterr()
    assert rc == 0 and json.loads(out.out)["tokens_per_s_per_gpu"] > 0
    assert out.err.startswith("warning: seq 65,536 is 8x llama3-8b's maximum context (8,192 tokens")
    assert main(predict("llama3-8b", "h100-sxm", ["--gpus", "8", "--gbs", "8", "--seq", "4096"])) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("hw,used", [("h100-sxm", 104), ("gb200-nvl72", 128)])
def test_size_header_says_the_gpus_its_table_uses(capsys, hw, used):
    assert main(["size", "--model", "llama3-8b", "--tokens", "1e12", "--gpus", "100", "--hardware", hw]) == 0
    head = " ".join(capsys.readouterr().out.split())
    assert f"on 100 GPUs (rounded up to whole units: {hw} {used})" in head


# ---- issue 15.8: a slow run gets ranked explanations ------------------------------------------------------


def test_slow_row_gets_ranked_causes_each_with_its_prediction(capsys, tmp_path):
    """Llama 3 70B measured at 600 tok/s/GPU against ~1,015 predicted, recompute and micro-batch unpublished:
    the heavier recompute modes, overlap off (the row's stack with every overlap switch off), the early-2024
    stack (preset nemo-megatron-24.05) and larger micro-batches (fewer micro-batches, a larger bubble) are each
    predicted, ranked by how close they come to the measurement, and each prediction is the one perfmodel gives that variant directly."""
    from perfmodel import api
    from perfmodel.analysis.validate import NO_OVERLAP

    d = run_json(capsys, ["validate", write_csv(tmp_path / "runs.csv", [{**ROW70, "tokens_per_s_per_gpu": "600"}])])
    [r] = d["per_row"]
    causes = r["causes"]
    texts = [c["cause"] for c in causes]
    assert any(t.startswith("recompute=full") for t in texts) and any(
        t.startswith("recompute=selective") for t in texts
    )
    assert any(t.startswith("communication overlap off") for t in texts)
    assert any("nemo-megatron-24.05" in t for t in texts)
    assert any(t.startswith("micro-batch 2") for t in texts)
    assert [abs(c["closeness"]) for c in causes] == sorted(abs(c["closeness"]) for c in causes)
    for c in causes:
        assert c["closeness"] == pytest.approx((c["predicted"] - 600) / 600)
    lay = api.Layout(gpus=64, gbs=128, seq=8192, tp=8, pp=4, vp=5)
    full = api.predict("llama3-70b", "h100-sxm", api.Layout(**{**lay.__dict__, "recompute": "full"}))
    assert next(c for c in causes if c["cause"].startswith("recompute=full"))["predicted"] == pytest.approx(
        float(full.tokens_per_s_per_gpu[0])
    )
    old = api.predict("llama3-70b", "h100-sxm", lay, stack="nemo-megatron-24.05")
    assert next(c for c in causes if "nemo-megatron-24.05" in c["cause"])["predicted"] == pytest.approx(
        float(old.tokens_per_s_per_gpu[0])
    )
    off = api.predict("llama3-70b", "h100-sxm", lay, stack_set=NO_OVERLAP)  # the row's stack: default
    assert next(c for c in causes if c["cause"].startswith("communication overlap off"))["predicted"] == pytest.approx(
        float(off.tokens_per_s_per_gpu[0])
    )
    assert float(off.tokens_per_s_per_gpu[0]) < float(
        api.predict("llama3-70b", "h100-sxm", lay).tokens_per_s_per_gpu[0]
    )
    assert "closest explanations: " + causes[0]["cause"] in r["verdict"]


# ---- issue 15.9: raw communication beside exposed, where the prediction carries it ---------------------------


def test_breakdown_shows_raw_communication_beside_exposed_and_the_overlap_that_hides_it(capsys, monkeypatch):
    """A breakdown with `ep_comm_raw` (before overlap) shows it beside the exposed ep_comm and names the stack
    switch (moe_a2a_overlap) with the share it grants; one without raw keys shows the exposed times alone. Raw
    keys never become a term of their own."""
    from perfmodel import render
    from perfmodel.core.calibration import constants
    from perfmodel.core.software import resolve
    from perfmodel.render.predict import print_breakdown
    from perfmodel.specs.hardware import load_hardware

    monkeypatch.setattr(render.console, "width", 200)
    sw = resolve("default", (), "deepseek-v3", True, load_hardware("gb200-nvl72"), "bf16", constants())
    b = {"gemm": 1.0, "ep_comm": 0.0, "ep_comm_raw": 0.4, "tp_comm": 0.1, "tp_comm_raw": 0.5}
    print_breakdown(b, 1.2, sw)
    out = capsys.readouterr().out
    ep = next(l for l in out.splitlines() if l.strip().startswith("│ ep_comm"))
    assert "0.4000" in ep and f"moe_a2a_overlap x{sw.ep_share:.2f}" in ep
    assert "raw s" in out and "ep_comm_raw" not in out
    print_breakdown({"gemm": 1.0, "tp_comm": 0.1}, 1.1)
    out = capsys.readouterr().out
    assert "raw s" not in out and "exposed time" in out


# ---- issue 15.10 / 15.11: the report checks every input first and writes atomically; did-you-mean ---------------


def test_report_bad_compare_id_fails_before_any_work_and_writes_nothing(capsys, tmp_path, monkeypatch):
    import perfmodel.report as R

    called = []
    monkeypatch.setattr(R, "search", lambda *a, **k: called.append(1))  # the planner must not run
    out = tmp_path / "rep"
    msg = run_err(capsys, ["report", "--out", str(out), "--compare", "h100-sxm,gb200"])
    assert "gb200" in msg and "did you mean 'gb200-nvl72'" in msg
    assert not called and not out.exists() and list(tmp_path.iterdir()) == []


def test_report_failing_midway_leaves_no_half_written_folder(tmp_path, monkeypatch):
    import perfmodel.report as R
    from perfmodel.errors import InputError

    def boom(*a, **k):
        raise InputError("validation", "", "simulated failure after the planner, roofline and scaling")

    monkeypatch.setattr("perfmodel.analysis.validate.validate_file", boom)
    out = tmp_path / "rep"
    with pytest.raises(InputError, match="simulated"):
        R.build(R.ReportConfig(scaling_max_gpus=64, compare=("h100-sxm",)), out)
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nor its temporary folder


@pytest.mark.parametrize(
    "typed,meant,kind",
    [
        ("gb200", "gb200-nvl72", "hardware"),
        ("h100", "h100-sxm", "hardware"),
        ("b20", "b200", "hardware"),
        ("llama3-8", "llama3-8b", "model"),
    ],
)
def test_did_you_mean_prefers_the_id_the_short_form_starts(capsys, typed, meant, kind):
    args = predict(**{kind: typed})
    assert f"did you mean '{meant}'" in run_err(capsys, args)
