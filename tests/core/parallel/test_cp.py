"""parallel/cp.py's PyTorch context_parallel all-gather rotation (torchtitan cp_comm_type torch_allgather:
torch_allgather's records and torch_allgather_exposed) against cases worked by hand on the toy cluster and the
toy dense model (tests/toy.py), from the mechanism cp.torch_allgather's docstring gives: one all-gather of the
local [K, V] per layer in forward and again in backward (the gathered buffer: cp x the local K/V), waited for
before the second of cp blockwise attention steps, so it hides under the first (1 / cp of the layer's
attention); the fp32 dK / dV accumulators (2 x the local bf16 K/V bytes) passed one hop per step, cp times in
backward, each hop under the next step's backward but the last one after the loop:
    forward  max(0, t_ag - a_f / cp);  backward  max(0, t_ag - a_b / cp) + (cp - 1) x max(0, t_hop - a_b / cp)
    + t_hop; raw: t_ag forward, t_ag + cp x t_hop backward.

Toy prices (as tests/core/parallel/test_parallel.py works them): toy dense K/V width 2 x 2 KV heads x 128 = 512
per token; T = 8192 tokens, tp 2: this rank's K/V 8192 x 512 / 2 x 2 B = 4,194,304 B. CP ranks are tp = 2 apart,
cp 4 of them inside one NVLink domain: the all-gather of 4 x 4,194,304 = 16,777,216 B costs 3/4 x 16777216 /
(4e11 x 0.5) + 10 us x (1 + log2 4) = 62.91456 + 30 = 92.91456 us; a hop of 2 x 4,194,304 = 8,388,608 B to the
neighbour 2 ranks away at NCCL's per-pair send/recv rate 8e10 B/s: 104.8576 + 10 = 114.8576 us."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_dense, toy_hw

from perfmodel.core.ops import Layer
from perfmodel.core.parallel import cp

HW = toy_hw()
REL = 1e-9
US = 1e-6
KV = 8192 * 512 / 2 * 2  # 4,194,304 B
T_AG, T_HOP = 92.91456 * US, 114.8576 * US
CP = np.array([1.0, 4.0])


def _layer(comms) -> Layer:
    return Layer("dense", 1, (), (), (), tuple(comms), (), ())


def test_torch_allgather_records():
    """Three records: the K/V all-gather forward (1, 0) and backward (0, 1) of cp x the local K/V, the fp32 dK/dV
    hop of 2 x the local K/V, cp calls in backward; at cp = 1 there is no CP group: every record costs 0."""
    ag_f, ag_b, hop = cp.exchange(toy_dense(), 8192.0, 2.0, CP, "torch_allgather")
    assert (ag_f.calls_fwd, ag_f.calls_bwd, ag_b.calls_fwd, ag_b.calls_bwd) == (1, 0, 0, 1)
    assert (ag_f.mechanism, ag_b.mechanism, hop.mechanism) == ("cp_ag", "cp_ag", "cp_dkv")
    assert hop.calls_fwd == 0 and np.array_equal(hop.calls_bwd, CP)
    for x in (ag_f, ag_b):
        assert np.array_equal(x.nbytes, [KV, 4 * KV]) and x.kind == "all_gather" and x.overlap == "mechanism"
        assert np.allclose(x.price(HW), [0.0, T_AG], rtol=REL, atol=0)
    assert float(hop.nbytes) == 2 * KV == 8388608 and hop.kind == "p2p"
    p = hop.price(HW)  # a hop of a 2-rank pair would cost 114.8576 us even at cp = 1: it is inactive there
    assert p[0] == 0.0 and p[1] == pytest.approx(T_HOP, rel=REL)


def test_torch_allgather_exposed_worked_case():
    """Attention 200 us forward, 240 us backward per layer; cp 4: steps of 50 / 60 us.
    forward: 92.91456 - 50 = 42.91456 us exposed of 92.91456 raw;
    backward: (92.91456 - 60) + 3 x (114.8576 - 60) + 114.8576 = 32.91456 + 164.5728 + 114.8576 = 312.34496 us
    exposed of 92.91456 + 4 x 114.8576 = 552.34496 us raw. cp 1: 0."""
    recs = cp.torch_allgather(toy_dense(), 8192.0, 2.0, CP)
    f, b, rf, rb = cp.torch_allgather_exposed(_layer(recs), 200 * US, 240 * US, CP, HW)
    assert np.allclose(f, [0.0, 42.91456 * US], rtol=REL, atol=0) and f[0] == 0.0
    assert np.allclose(rf, [0.0, 92.91456 * US], rtol=REL, atol=0) and rf[0] == 0.0
    assert np.allclose(b, [0.0, 312.34496 * US], rtol=REL, atol=0) and b[0] == 0.0
    assert np.allclose(rb, [0.0, 552.34496 * US], rtol=REL, atol=0) and rb[0] == 0.0
    # attention long enough to hide every all-gather and hop (steps of 150 us): only the last hop shows
    f, b, rf, rb = cp.torch_allgather_exposed(_layer(recs), 600 * US, 600 * US, CP, HW)
    assert float(f[1]) == 0.0 and float(b[1]) == pytest.approx(T_HOP, rel=REL)
    # records of two exchanges in one layer, in either order: each term adds
    two = _layer([*recs, *reversed(recs)])
    out = cp.torch_allgather_exposed(two, 200 * US, 240 * US, CP, HW)
    want = (42.91456, 312.34496, 92.91456, 552.34496)
    for got, w in zip(out, want, strict=True):
        assert np.allclose(got, [0.0, 2 * w * US], rtol=REL, atol=0)
