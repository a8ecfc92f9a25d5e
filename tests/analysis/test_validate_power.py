"""validate scores measured node power or energy (issue 28) like memory: per row and in the summary."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_helpers import run_json

from perfmodel.analysis.validate import validate_file
from perfmodel.cli import main
from perfmodel.economics import power as pw
from perfmodel.specs.hardware import load_hardware

BASE = dict(
    model="llama3-8b",
    hardware="h100-sxm",
    gpus="16",
    precision="bf16",
    seq_len="8192",
    global_batch="32",
    tp="2",
    recompute="none",
    tokens_per_s_per_gpu="9000",
)


def _csv(path: Path, rows: list[dict]) -> str:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return str(path)


def test_power_and_energy_columns_scored(tmp_path):
    """Row a measures 7,500 W per node; row b the same as energy: 7,500 W x 2 nodes x 100 s = 1.5e6 J; row c
    nothing (not in the power summary). Predicted: 8 x (GPU mean + host + cooling) / efficiency over the row's
    own predicted step, the same number for all three."""
    f = _csv(
        tmp_path / "p.csv",
        [
            {**BASE, "run_id": "a", "avg_node_power_w": "7500"},
            {**BASE, "run_id": "b", "energy_j": "1.5e6", "duration_s": "100"},
            {**BASE, "run_id": "c"},
        ],
    )
    rep = validate_file(f)
    by = {r.run_id: r for r in rep.results}
    assert by["a"].power_measured == pytest.approx(7500) and by["b"].power_measured == pytest.approx(7500)
    assert by["c"].power_measured is None and by["c"].power_error is None
    hw = load_hardware("h100-sxm")
    lv = pw.levels(hw)
    want = 8 * lv.node_w(pw.step_power(lv, by["a"].breakdown).gpu_avg_w)
    assert by["a"].power_predicted == pytest.approx(want) == by["b"].power_predicted
    assert by["a"].power_error == pytest.approx(want / 7500 - 1)
    st = rep.power_stats()
    assert st["rows"] == 2 and st["mape"] == pytest.approx(abs(want / 7500 - 1))


def test_cluster_scope_adds_the_network(tmp_path):
    f = _csv(
        tmp_path / "s.csv",
        [
            {**BASE, "run_id": "n", "avg_node_power_w": "7500"},
            {**BASE, "run_id": "k", "avg_node_power_w": "7500", "energy_scope": "cluster"},
        ],
    )
    by = {r.run_id: r for r in validate_file(f).results}
    assert by["k"].power_predicted == pytest.approx(by["n"].power_predicted + 8 * 100)  # 100 W per GPU


def test_validate_json_power_summary_and_bad_cells(capsys, tmp_path):
    f = _csv(
        tmp_path / "j.csv",
        [
            {**BASE, "run_id": "a", "avg_node_power_w": "7500"},
            {**BASE, "run_id": "e", "energy_j": "1.5e6"},  # no duration_s
            {**BASE, "run_id": "u", "avg_node_power_w": "7.5"},  # kW typed as W
            {**BASE, "run_id": "s", "avg_node_power_w": "7500", "energy_scope": "rack"},
        ],
    )
    d = run_json(capsys, ["validate", f])
    assert d["power"]["rows"] == 1 and d["power"]["mape"] is not None
    assert d["memory"]["rows"] == 0
    reasons = {u["run_id"]: u["reason"] for u in d["unsupported"]}
    assert reasons["e"].startswith("energy_j: needs duration_s")
    assert reasons["u"].startswith("avg_node_power_w:") and "unit slip" in reasons["u"]
    assert reasons["s"].startswith("energy_scope:")
    row = next(r for r in d["per_row"] if r["run_id"] == "a")
    assert row["power_measured"] == 7500 and row["power_predicted"] > 0
    assert main(["validate", f]) == 0
    assert "node power (drawn model) vs measured: 1 rows" in " ".join(capsys.readouterr().out.split())


def test_shipped_sets_report_power_key(capsys):
    """validate over a shipped set without power columns: the power summary says 0 rows, never an error."""
    root = Path(__file__).resolve().parents[2] / "validation" / "independent" / "zero-bubble.csv"
    rc = main(["validate", str(root), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["power"] == {"rows": 0, "mape": None, "bias": None}
