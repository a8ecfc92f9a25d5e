"""Facts behind NVIDIA's dense rows (validation/runs.csv) that the DENSE work read from the recipes, each
checked where it acts: the layout cell it fills and the physics it changes, against a hand-derived case."""
from __future__ import annotations

import csv

import pytest

from perfmodel.api import Layout, predict
from perfmodel.specfile import data_dir


def _rows(prefix: str) -> list[dict]:
    with (data_dir("validation") / "runs.csv").open(encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["run_id"].startswith(prefix)]


def test_dgxc_25_04_nemotron4_340b_rows_run_the_launch_scripts_vp12():
    # NVIDIA/dgxc-benchmarking nemotron/launch.sh (GSW_VERSION=25.04.01): MODEL_SIZE=340b -> TP=8 PP=8 VP=12,
    # passed as -vp 12, though the README's table prints VP=NA
    rows = _rows("dgxc250401-n4-340b-")
    assert len(rows) == 7
    assert {(r["tp"], r["pp"], r["vp"], r["micro_batch"]) for r in rows} == {("8", "8", "12", "1")}
    assert all("launch.sh" in r["notes"] for r in rows)


def test_interleaving_divides_the_nemotron4_340b_bubble_by_vp():
    # 96 layers over pp 8: 16 micro-batches (gbs 64 / dp 4 / mbs 1) >= pp, so no fill term and the
    # interleaved bubble is (t_sum - t_max) / vp (Narayanan et al. 2021 §2.2.2: the bubble shrinks by v);
    # the stage times themselves differ only by the 2 vp p2p sends per micro-batch, a few ms in ~4 s
    lay = lambda vp: Layout(gpus=256, gbs=64, seq=4096, tp=8, pp=8, vp=vp)
    one, twelve = (predict("nemotron4-340b", "h100-sxm", lay(v), precision="bf16", stack="dgxc-25.04").row(0)
                   for v in (1, 12))
    b1, b12 = one["breakdown_s"]["pipeline_bubble"], twelve["breakdown_s"]["pipeline_bubble"]
    assert b1 > 1.0
    assert b12 == pytest.approx(b1 / 12, rel=0.05)
