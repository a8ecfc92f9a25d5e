"""The planner's streaming selection (search._top, search._undominated): the running top K and Pareto
front equal those of one pass over every scored layout, whatever the chunking."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from perfmodel.analysis import search as S
from perfmodel.api import load_hardware, load_model
from perfmodel.core.predict import Options, predict_grid
from perfmodel.specs.layout import LayoutGrid

OPTS = Options("bf16")


def test_top_breaks_ties_by_position():
    v = np.array([5.0, 3.0, 5.0, 5.0, 1.0, 7.0])
    assert S._top(v, 1).tolist() == [5]
    assert S._top(v, 2).tolist() == [5, 0]  # three 5s tie for second place: the earliest wins
    assert S._top(v, 3).tolist() == [5, 0, 2]
    assert S._top(v, 10).tolist() == [5, 0, 2, 3, 1, 4]


def test_undominated_against_a_hand_front():
    # front by throughput descending, headroom ascending: (10, 1), (8, 3), (5, 6)
    ft, fh = np.array([10.0, 8.0, 5.0]), np.array([1.0, 3.0, 6.0])
    cases = [
        ((11, 0), True),  # faster than every front point
        ((10, 1), False),  # equal to a front point
        ((10, 2), True),  # as fast as (10, 1), more headroom
        ((8, 2), False),  # dominated by (8, 3)
        ((9, 2), True),  # (10, 1) has less headroom, (8, 3) is slower
        ((8, 3), False),  # equal
        ((4, 6), False),  # dominated by (5, 6)
        ((4, 7), True),  # more headroom than any front point
        ((6, 4), True),
    ]  # (8, 3) has less headroom, (5, 6) is slower
    t, h = (np.array([c[0][i] for c in cases], dtype=float) for i in (0, 1))
    assert S._undominated(ft, fh, t, h).tolist() == [c[1] for c in cases]
    assert S._undominated(np.zeros(0), np.zeros(0), t, h).all()


def _one_pass(m, hw, gpus, gbs, seq, objective, top_k):
    """Reference: every legal layout scored at once, sorted (stable: enumeration order breaks ties)."""
    s = S.space(m, gpus, gbs, seq)
    grid = LayoutGrid.concat(list(S.chunks(s, S.structural(m, s), size=1 << 30)))
    grid = grid.take(~S._fsdp_duplicate(grid))
    p = predict_grid(m, hw, grid, OPTS)
    idx = np.flatnonzero(p.fits)
    thr = p.tokens_per_s_per_gpu[idx]
    val = thr * S.objective_scale(hw, objective)
    top = idx[np.argsort(-val, kind="stable")[:top_k]]
    front = idx[S._pareto_idx(thr, (p.hbm_bytes - p.memory_bytes_per_gpu)[idx])]
    return grid.take(top), grid.take(front)


def _same(a: LayoutGrid, b: LayoutGrid) -> bool:
    return all(np.array_equal(getattr(a, f.name), getattr(b, f.name)) for f in fields(LayoutGrid))


@pytest.mark.parametrize("chunk", [700, S.SCORE_CHUNK])
@pytest.mark.parametrize(
    "job",
    [
        ("mixtral-8x7b", "h100-sxm", 16, 256, 4096, "throughput", 10),
        ("llama3-70b", "h100-sxm", 64, 128, 8192, "cost", 3000),
        ("gpt-oss-120b", "b200", 64, 256, 4096, "energy", 1),
    ],
)
def test_streamed_selection_equals_one_pass(job, chunk, monkeypatch):
    mid, hid, gpus, gbs, seq, objective, top_k = job
    m, hw = load_model(mid), load_hardware(hid)
    monkeypatch.setattr(S, "SCORE_CHUNK", chunk)  # many chunks: the merge across chunks is exercised
    r = S.search(m, hw, gpus, gbs, seq, OPTS, objective, top_k)
    top, front = _one_pass(m, hw, gpus, gbs, seq, objective, top_k)
    assert r.top is not None and r.pareto is not None
    assert r.top.layouts.n == min(top_k, r.fits) and _same(r.top.layouts, top)
    assert _same(r.pareto.layouts, front)
