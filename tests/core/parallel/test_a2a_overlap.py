"""Megatron-Core's EP all-to-all overlap (overlap_moe_expert_parallel_comm) is the combined 1F1B schedule:
a pass with no partner micro-batch runs its dispatch and combine exposed (parallel/ep.py
a2a_solo_microbatches). Hand-derived cases."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.api import load_hardware, load_model
from perfmodel.core.parallel.ep import a2a_solo_microbatches
from perfmodel.core.predict import Options, predict_grid
from perfmodel.specs.layout import Layout, LayoutGrid


def test_solo_microbatches_hand_cases():
    # pp = 1: the first forward and the last backward, one micro-batch's worth, whatever nmb
    assert a2a_solo_microbatches(1, 1, 5, False) == pytest.approx(1.0)
    assert a2a_solo_microbatches(1, 1, 1, False) == pytest.approx(1.0)
    # pp 4 vp 2 nmb 8: W_r = 2 (3 - r) + 1 * 4 + 1 = 11, 9, 7, 5 (all under nmb vp = 16); mean 8, over vp 2 -> 4
    assert a2a_solo_microbatches(4, 2, 8, False) == pytest.approx(4.0)
    # nmb 4: W_r capped at nmb vp = 8 -> 8, 8, 7, 5; mean 7 -> 3.5
    assert a2a_solo_microbatches(4, 2, 4, False) == pytest.approx(3.5)
    # pp > 1 without interleaving, or full recompute: Megatron-Core refuses the overlap, every micro-batch exposed
    assert a2a_solo_microbatches(4, 1, 8, False) == pytest.approx(8.0)
    assert a2a_solo_microbatches(1, 1, 5, True) == pytest.approx(5.0)
    # vectorised over layouts
    np.testing.assert_allclose(
        a2a_solo_microbatches(
            np.array([1, 4, 4]), np.array([1, 2, 1]), np.array([5, 8, 8]), np.array([False, False, False])
        ),
        [1.0, 4.0, 8.0],
    )


def _ep(stack_set: tuple[str, ...], pp: int = 1, vp: int = 1) -> tuple[float, float]:
    """(exposed EP seconds per step, micro-batches) of gpt-oss-120b on 64 GB200 at EP 64 (the NeMo 26.04 rows)."""
    m, hw = load_model("gpt-oss-120b"), load_hardware("gb200-nvl72")
    lay = Layout(gpus=64, gbs=1280, seq=4096, pp=pp, vp=vp, ep=64 // pp, mbs=4, recompute="none")
    p = predict_grid(
        m, hw, LayoutGrid.of(lay), Options("bf16", routing="balanced", stack="nemo-26.04", stack_set=stack_set)
    )
    return float(p.breakdown_s["ep_comm"][0]), 1280 / (lay.dp * 4)


def test_pp1_exposes_one_microbatch_of_the_overlapped_share():
    # steady state exposes (1 - s) of each micro-batch's all-to-all a (its compute is far longer: no spill);
    # the lone first forward and last backward expose the rest of one micro-batch: nmb (1 - s) a + s a
    on, nmb = _ep(("moe_a2a_overlap=true",))
    off, _ = _ep(("moe_a2a_overlap=false",))
    s = Options().consts.ep_overlap
    assert nmb == 5
    assert off > 0
    assert on == pytest.approx(off * ((1 - s) + s / nmb), rel=1e-9)


def test_pp_without_interleaving_gets_no_overlap():
    on, _ = _ep(("moe_a2a_overlap=true",), pp=2)
    off, _ = _ep(("moe_a2a_overlap=false",), pp=2)
    assert on == pytest.approx(off, rel=1e-9)


def test_closed_form_equals_the_per_rank_sum():
    # the closed form against the per-rank definition: mean_r min(nmb vp, 2 (pp - r - 1) + (vp - 1) pp + 1) / vp
    for pp in (2, 3, 4, 8, 16):
        for vp in (2, 3, 4, 8):
            for nmb in (1, 2, 3, 5, 8, 16, 33, 128):
                w = [min(nmb * vp, 2 * (pp - r - 1) + (vp - 1) * pp + 1) for r in range(pp)]
                assert a2a_solo_microbatches(pp, vp, nmb, False) == pytest.approx(min(sum(w) / pp / vp, nmb))


def test_unpartnered_pass_exposes_one_micro_batch_of_all_to_all_at_pp1():
    """Mixtral 8x7B, tp 2 ep 8 on 64 H100, pp 1: with the overlap on, the exposed EP time over m micro-batches
    is (m - 1) e_on + e_off (one micro-batch's first forward and last backward run alone), e_off = the per-
    micro-batch exposure with the overlap off (that step's EP time / m); and the overlap changes the step by
    exactly its EP exposure (m = 2 and 4: gbs 64 and 128 over dp 32)."""
    from perfmodel.core.predict import Options, predict_grid
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.layout import Layout, LayoutGrid
    from perfmodel.specs.model import load_model

    m, hw = load_model("mixtral-8x7b"), load_hardware("h100-sxm")

    def run(gbs, on):
        o = Options("bf16", stack="megatron-core", stack_set=(f"moe_a2a_overlap={'true' if on else 'false'}",))
        p = predict_grid(m, hw, LayoutGrid.of(Layout(gpus=64, gbs=gbs, seq=4096, tp=2, ep=8)), o)
        return float(p.breakdown_s["ep_comm"][0]), float(p.step_time_s[0])

    (on2, s_on2), (on4, s_on4), (off2, s_off2), (off4, s_off4) = (
        run(64, True),
        run(128, True),
        run(64, False),
        run(128, False),
    )
    e_off = off4 / 4
    assert off2 == pytest.approx(2 * e_off, rel=1e-12) and e_off > 0
    e_on = (on4 - on2) / 2
    assert on2 == pytest.approx(e_on + e_off, rel=1e-9) and on4 == pytest.approx(3 * e_on + e_off, rel=1e-9)
    assert s_off2 - s_on2 == pytest.approx(off2 - on2, rel=1e-9)
    assert s_off4 - s_on4 == pytest.approx(off4 - on4, rel=1e-9)


def _toy_moe_tp_ep(nvlink_bw: float, overlap: bool):
    """The toy MoE (tests/toy.py, its 4 layers all MoE) at tp 2, ep 2 on 4 GPUs (dp 2, gbs 4: m = 2 micro-batches
    at pp 1), Megatron-Core with userbuffers TP overlap at tp_overlap = 1 (all of it overlappable), the all-to-all
    dispatcher and the combined-1F1B EP overlap on or off; NVLink (TP and EP groups) at `nvlink_bw` B/s. Every
    backward TP collective in the one budget (tp_bwd_async = false: none runs under its own GEMM apart)."""
    from toy import toy_consts, toy_hw, toy_moe

    hw = toy_hw()
    hw = hw.model_copy(update={"scale_up": hw.scale_up.model_copy(update={"bandwidth": nvlink_bw})})
    m = toy_moe(
        moe=dict(num_experts=16, top_k=2, expert_intermediate_size=512, shared_experts=1, shared_intermediate_size=1024)
    )
    o = Options(
        "bf16",
        consts=toy_consts(tp_overlap=1.0),
        routing="balanced",
        stack="megatron-core",
        stack_set=(
            "tp_overlap=userbuffers",
            "tp_bwd_async=false",
            "moe_dispatcher=alltoall",
            f"moe_a2a_overlap={'true' if overlap else 'false'}",
        ),
    )
    p = predict_grid(m, hw, LayoutGrid.of(Layout(gpus=4, gbs=4, seq=2048, tp=2, ep=2)), o)
    b = {k: float(v[0]) for k, v in p.breakdown_s.items()}
    layers = sum(b[k] for k in ("gemm", "attention", "memory_bound", "tp_comm", "cp_comm", "ep_comm"))
    raw = float(p.comm_raw_s["tp_comm"][0] + p.comm_raw_s["ep_comm"][0])
    return float(p.step_time_s[0]), layers, raw, b["tp_comm"]


def test_unpartnered_pass_budget_when_tp_communication_outlasts_compute():
    """One budget per layer (overlap.py): TP and EP seconds t_tp, t_ep with shares s_tp = 1, s_ep, under compute
    C, expose t_tp (1 - 1) + t_ep (1 - s_ep) + max(0, t_tp + s_ep t_ep - C). A pass with no partner runs its
    all-to-all outside the overlap (s_ep -> 0: t_ep + max(0, t_tp - C)), in the same budget C = the layer's
    forward + backward compute; its extra exposure (predict.price_kind's solo) is
        solo = s_ep t_ep + max(0, t_tp - C) - max(0, t_tp + s_ep t_ep - C).
    (a) t_tp > C (NVLink at 4 GB/s): the overlapped pass already exposes t_tp + t_ep - C, the lone pass the same:
        solo = s_ep t_ep + (t_tp - C) - (t_tp + s_ep t_ep - C) = 0. Switching the EP overlap on changes no step
        time, and every layer takes exactly its communication time C + (t_tp + t_ep - C), on or off.
    (b) t_tp < C < t_tp + s_ep t_ep (12 GB/s): on, every pass exposes t_tp + t_ep - C, the lone pass C - t_tp
        more (solo); off, every pass exposes t_ep. Per step at pp 1 (one of the m micro-batches unpartnered),
        over L = 4 layers: off - on = m L t_ep - (m L (t_tp + t_ep - C) + L (C - t_tp)) = (m - 1) L (C - t_tp),
        and the off run's layers take m L (C + t_ep), its raw communication m L (t_tp + t_ep), so
        off - on = (m - 1) / m x (layers_off - raw)."""
    on, lay_on, raw_on, tp_on = _toy_moe_tp_ep(4e9, True)
    off, lay_off, raw_off, tp_off = _toy_moe_tp_ep(4e9, False)
    assert tp_off > 0  # (a)'s regime: TP alone spills over C (s_tp = 1)
    assert on == pytest.approx(off, rel=1e-9)
    assert lay_on == pytest.approx(raw_on, rel=1e-9) and lay_off == pytest.approx(raw_off, rel=1e-9)
    on, lay_on, raw_on, tp_on = _toy_moe_tp_ep(1.2e10, True)
    off, lay_off, raw_off, tp_off = _toy_moe_tp_ep(1.2e10, False)
    assert tp_off == 0.0 and tp_on > 0  # (b)'s regime: t_tp < C < t_tp + s_ep t_ep
    m = 2
    assert off - on == pytest.approx((m - 1) / m * (lay_off - raw_off), rel=1e-9) and off > on
