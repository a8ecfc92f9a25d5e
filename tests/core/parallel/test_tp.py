"""parallel/tp.py's AsyncTP exposure (async_tp_exposed: PyTorch micro-pipeline TP, torchtitan's AsyncTP) against
cases worked by hand on the toy GPU (tests/toy.py), from the mechanism its docstring gives: the collective split
into tp - 1 shard copies c = t / (tp - 1), the window's GEMMs into tp partial GEMMs of M / tp rows g; exposed =
(tp - 1) x max(0, c - g) + max(0, tp x g - G) (G: the unsplit GEMMs), + for a matmul-reduce-scatter the sum of
the tp partial outputs (read the gathered-size buffer, write one shard: one memory-bound kernel).

Toy numbers used throughout (as tests/core/test_compute.py and tests/core/parallel/test_parallel.py work them):
- GEMM [M, N, K] in BF16: 2MNK / (1e15 x 0.5 x 0.8 x K/(K + 1000) x M/(M + 100) x N/(N + 100)), at least the
  memory side ((MK + KN) x 2 B + MN x 2 B) / (1e12 x 0.8), + 10 us per kernel:
    [3600, 900, 4000]: 2.592e10 / (1e15 x 0.4 x 0.8 x 36/37 x 0.9) = 92.5 us (memory 42.48e6 B / 8e11 = 53.1 us)
                       -> 102.5 us
    [ 900, 900, 4000]: 6.48e9 / (1e15 x 0.4 x 0.8 x 0.9 x 0.9) = 25 us (memory 16.02e6 / 8e11 = 20.025 us) -> 35 us
    [3600, 400, 4000]: 1.152e10 / (1e15 x 0.4 x 0.8 x 36/37 x 0.8) = 46.25 us (memory 43.6 us) -> 56.25 us
    [ 900, 400, 4000]: math 2.88e9 / (1e15 x 0.4 x 0.8 x 0.9 x 0.8) = 12.5 us < memory 11.12e6 / 8e11 = 13.9 us
                       -> 23.9 us
- all-gather / reduce-scatter of B bytes over 4 neighbouring ranks (one NVLink domain): 3/4 x B / (4e11 x 0.5)
  + 10 us x (1 + log2 4): 8e7 B -> 300 + 30 = 330 us; 1.6e7 B -> 60 + 30 = 90 us; over 1 rank: 0.
- memory pass of B bytes: B / (1e12 x 0.8) + 10 us (one kernel)."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_consts, toy_hw

from perfmodel.core.ops import Collective, Gemm, Layer
from perfmodel.core.parallel import tp

HW = toy_hw()
C = toy_consts()
REL = 1e-9
US = 1e-6


def _layer(gemms, comms) -> Layer:
    return Layer("dense", 1, tuple(gemms), (), (), tuple(comms), (), ())


def _rec(name, mech, nbytes, size, fwd, window) -> Collective:
    """One AsyncTP record as split_pair builds it (overlap "mechanism"), one call forward or backward."""
    f, b = (1, 0) if fwd else (0, 1)
    return Collective(name, "mechanism", "all_gather", nbytes, size, 1, f, b, window=window, mechanism=mech)


def test_async_tp_forward_exposed_and_hidden():
    """tp = 4, forward. Input all-gather-matmul of 8e7 B under the column GEMMs "q" [3600, 900, 4000] and
    2 x "kv" [3600, 400, 4000] (count 2): t = 330 us, a shard copy 330 / 3 = 110 us; the partial GEMMs (M / 4 =
    900 rows) g = 35 + 2 x 23.9 = 82.8 us, the unsplit ones G = 102.5 + 2 x 56.25 = 215 us:
        exposed = 3 x (110 - 82.8) + (4 x 82.8 - 215) = 81.6 + 116.2 = 197.8 us (the copies outlast the partials).
    Output matmul-reduce-scatter of 1.6e7 B under the row GEMM "o" [3600, 900, 4000]: t = 90 us, copies of 30 us
    hide under partials of 35 us; the partials' loss 4 x 35 - 102.5 = 37.5 us; the sum of the 4 partial outputs
    reads 1.6e7 and writes 1.6e7 / 4 B: 2e7 / 8e11 + 10 us = 35 us: 72.5 us.
    Forward 197.8 + 72.5 = 270.3 us, raw 330 + 90 = 420 us; op-level SAC re-runs the all-gather: 197.8 us."""
    gemms = [Gemm("q", 3600, 900, 4000), Gemm("kv", 3600, 400, 4000, count=2), Gemm("o", 3600, 900, 4000)]
    block = [_rec("AG", "ag", 8e7, 4, True, ("q", "kv")), _rec("RS", "rs", 1.6e7, 4, True, ("o",))]
    f, b, rf, rb, sel = (float(v) for v in tp.async_tp_exposed(_layer(gemms, block), HW, "bf16", C, 4, True))
    assert f == pytest.approx(270.3 * US, rel=REL)
    assert rf == pytest.approx(420 * US, rel=REL)
    assert sel == pytest.approx(197.8 * US, rel=REL)
    assert b == rb == 0.0
    # without op-level SAC nothing is re-run
    assert float(tp.async_tp_exposed(_layer(gemms, block), HW, "bf16", C, 4, False)[4]) == 0.0
    # a layer holds two TP blocks (attention and MLP), each with its records: every term adds, in any order
    two = _layer(gemms, [*block, *reversed(block)])
    f2, b2, rf2, rb2, sel2 = (float(v) for v in tp.async_tp_exposed(two, HW, "bf16", C, 4, True))
    assert (f2, rf2, sel2) == pytest.approx((2 * 270.3 * US, 2 * 420 * US, 2 * 197.8 * US), rel=REL)
    assert b2 == rb2 == 0.0


def test_async_tp_backward_and_tp_one():
    """Backward windows are the GEMMs' dgrad [M, K, N]: "c" = Gemm [M 3600, N 4000, K 900] has dgrad
    [3600, 900, 4000]: G = 102.5 us, partials of 900 rows g = 35 us. tp = 4:
        output-gradient all-gather-matmul, 8e7 B (330 us, copies of 110 us): 3 x (110 - 35) + (4 x 35 - 102.5)
        = 225 + 37.5 = 262.5 us;
        input-gradient matmul-reduce-scatter, 1.6e7 B (90 us, copies of 30 us hidden): 37.5 + the sum
        (1.6e7 x (1 + 1/4) / 8e11 + 10 us = 35 us) = 72.5 us;
    backward 335 us, raw 420 us, nothing forward. tp = 1: no AsyncTP at all, 0 everywhere (the reduction's
    memory pass, 1.6e7 x 2 / 8e11 + 10 us, would be 50 us; an all-gather over one rank costs 0)."""
    t = np.array([1.0, 4.0])
    gemms = [Gemm("c", 3600, 4000, 900)]
    recs = [_rec("AG", "ag", 8e7, t, False, ("c",)), _rec("RS", "rs", 1.6e7, t, False, ("c",))]
    f, b, rf, rb, sel = tp.async_tp_exposed(_layer(gemms, recs), HW, "bf16", C, t, True)
    assert np.allclose(b, [0.0, 335 * US], rtol=REL, atol=0) and b[0] == 0.0
    assert np.allclose(rb, [0.0, 420 * US], rtol=REL, atol=0) and rb[0] == 0.0
    assert np.all(np.asarray(f) == 0.0) and np.all(np.asarray(rf) == 0.0) and np.all(np.asarray(sel) == 0.0)
