"""The step tail's formulas are written once, as elementwise functions that run on numpy arrays (predict_grid
for a grid of layouts, score.py's numpy tail for a planner product) and, compiled by core/kernel.py with numba,
on the scalars of one layout (the planner's compiled loop). They use only arithmetic, comparisons,
np.maximum / np.minimum and `select` below, which all three callers evaluate in the same order of operations
(IEEE, no fast-math), so the three agree bit for bit (tests/core/test_score.py). kernel.py registers every such
function (TAIL_FUNCTIONS of each module) with numba when it loads; nothing here imports numba."""

from __future__ import annotations

import numpy as np


def select(cond, a, b):
    """`a` where `cond`, else `b` (np.where; in the compiled loop, on scalars, `a if cond else b`)."""
    return np.where(cond, a, b)
