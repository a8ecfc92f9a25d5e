"""overlap.py, the one overlap model, against cases worked by hand.

exposed = (1 - share) t + max(0, share t - window); classes sharing one compute window:
exposed_k = (1 - share_k) t_k + spill * share_k t_k / sum_j share_j t_j, spill = max(0, sum_j share_j t_j - compute)
(Wang et al. 2023 for TP overlap with dependent compute; Megatron-Core A2A overlap for EP)."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.core.overlap import exposed, exposed_shared


def test_exposed_window_too_short():
    # 10 s of communication, half hideable, 3 s of compute: 5 s exposed outright + (5 - 3) s spill = 7 s
    assert float(exposed(10.0, 3.0, 0.5)) == pytest.approx(7.0)


def test_exposed_window_long_enough():
    # window 6 s >= hideable 5 s: only the unhideable half is exposed
    assert float(exposed(10.0, 6.0, 0.5)) == pytest.approx(5.0)
    assert float(exposed(10.0, 6.0, 0.0)) == pytest.approx(10.0)


def test_shared_budget_split():
    # tp 4 s at share 0.5 and ep 8 s at share 0.75 share 5 s of compute: hideable 2 + 6 = 8 s, spill 3 s,
    # split by hideable share: tp 0.5*4 + 3 * 2/8 = 2.75 s, ep 0.25*8 + 3 * 6/8 = 4.25 s
    out = exposed_shared({"tp": np.array(4.0), "ep": np.array(8.0)}, {"tp": 0.5, "ep": 0.75}, np.array(5.0))
    assert float(out["tp"]) == pytest.approx(2.75) and float(out["ep"]) == pytest.approx(4.25)
    # the sum equals a single class hiding 8 s under 5 s: 4 exposed + 3 spill
    assert float(out["tp"] + out["ep"]) == pytest.approx(7.0)


def test_shared_budget_no_spill():
    # 10 s of compute hides all 8 hideable seconds: tp 2 s, ep 2 s
    out = exposed_shared({"tp": np.array(4.0), "ep": np.array(8.0)}, {"tp": 0.5, "ep": 0.75}, np.array(10.0))
    assert float(out["tp"]) == pytest.approx(2.0) and float(out["ep"]) == pytest.approx(2.0)


def test_shared_budget_nothing_hideable():
    # share 0: all exposed, no division by the zero hideable total
    out = exposed_shared({"tp": np.array([4.0, 0.0])}, {"tp": 0.0}, np.array([1.0, 1.0]))
    assert out["tp"] == pytest.approx([4.0, 0.0])
