"""Megatron-LM forks of 2023-24 (FP8-LM, Zero Bubble): facts of their launchers acting through physics."""

from __future__ import annotations

import numpy as np
import pytest
from toy import named_stream, toy_consts, toy_dense, toy_hw, toy_sw

from perfmodel.api import Layout
from perfmodel.core.predict import Options, predict_grid
from perfmodel.core.workload import build
from perfmodel.specs.layout import LayoutGrid
from perfmodel.specs.stack import load_stack

FP32 = ("main_grad_precision=fp32",)
UNFUSED = ("grad_accumulation_fusion=false",) + FP32


def test_unfused_grad_accumulation_reads_and_writes_main_grad_once_per_weight_per_micro_batch():
    m, c, hw = toy_dense(), toy_consts(), toy_hw()
    grid = LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2))
    # toy layer at tp 2, weight elements per GPU: qkv (1024 + 2*2*128)/2 x 1024, out 1024 x 512,
    # up/gate 2*4096/2 x 1024, down 1024 x 2048; lm head 32000/2 x 1024
    elems = 768 * 1024 + 1024 * 512 + 4096 * 1024 + 1024 * 2048
    assert elems == 7_602_176
    w = build(m, grid, False, 1.0, c, toy_sw(m, hw, c, stack_set=UNFUSED))
    acc = named_stream(w.layers[0].streams, "wgrad accumulate into main_grad")
    # fp32 main_grad: read 4 + bf16 gradient read 2 + main_grad write 4 = 10 B per element; 4 weight tensors
    assert float(np.ravel(acc.bytes_bwd)[0]) == 10 * elems
    assert (acc.bytes_fwd, acc.kernels_fwd, acc.kernels_bwd) == (0.0, 0.0, 4.0)
    head = named_stream(w.head.streams, "lm head wgrad accumulate")
    assert float(np.ravel(head.bytes_bwd)[0]) == 10 * 16_000 * 1024 and head.kernels_bwd == 1.0
    # bf16 main_grad: 2 + 2 + 2 B
    w16 = build(
        m,
        grid,
        False,
        1.0,
        c,
        toy_sw(m, hw, c, stack_set=("grad_accumulation_fusion=false", "main_grad_precision=bf16")),
    )
    assert (
        float(np.ravel(named_stream(w16.layers[0].streams, "wgrad accumulate into main_grad").bytes_bwd)[0])
        == 6 * elems
    )
    # fused (Megatron's default): the wgrad GEMM accumulates in its epilogue, no pass
    fused = named_stream(
        build(m, grid, False, 1.0, c, toy_sw(m, hw, c, stack_set=FP32)).layers[0].streams,
        "wgrad accumulate into main_grad",
    )
    assert (fused.bytes_bwd, fused.kernels_bwd) == (0.0, 0.0)


def test_unfused_grad_accumulation_costs_its_hbm_time_every_micro_batch():
    m, c, hw = toy_dense(), toy_consts(), toy_hw()
    grid = LayoutGrid.of(Layout(gpus=8, gbs=32, seq=2048, tp=2))  # dp 4, 8 micro-batches of 1
    on = predict_grid(m, hw, grid, Options(consts=c, stack_set=FP32))
    off = predict_grid(m, hw, grid, Options(consts=c, stack_set=UNFUSED))
    # per micro-batch and layer: 10 B x 7,602,176 at 1 TB/s x 0.8 plus 4 kernels of 10 us; 4 layers, 8 micro-batches
    per_layer = 10 * 7_602_176 / 0.8e12 + 4 * 1e-5
    d = off.breakdown_s["memory_bound"][0] - on.breakdown_s["memory_bound"][0]
    assert d == pytest.approx(8 * 4 * per_layer, rel=1e-12)
    head = 10 * 16_000 * 1024 / 0.8e12 + 1e-5
    dh = off.breakdown_s["embedding_head_mtp"][0] - on.breakdown_s["embedding_head_mtp"][0]
    assert dh == pytest.approx(8 * head, rel=1e-12)
    assert off.step_time_s[0] - on.step_time_s[0] == pytest.approx(d + dh, rel=1e-9)
    # the real bf16 gradient reaches autograd: no cached dummy wgrad
    assert toy_sw(m, hw, c, stack_set=FP32).dummy_wgrad and not toy_sw(m, hw, c, stack_set=UNFUSED).dummy_wgrad


def test_fork_presets_state_their_launchers_gradient_accumulation():
    fp8lm, zb, core = (load_stack(s) for s in ("fp8-lm-2023", "zero-bubble-2024", "megatron-core"))
    assert fp8lm.value("grad_accumulation_fusion") is False
    assert "--no-gradient-accumulation-fusion" in fp8lm.sources["grad_accumulation_fusion"]
    assert zb.value("grad_accumulation_fusion") is True and core.value("grad_accumulation_fusion") is True
    # a release that does not publish it takes Megatron's default, recorded as unstated
    assert load_stack("megatron-lm-2021").origin["grad_accumulation_fusion"] == "unstated:megatron-core"


def _pp_exposed_share(vp: int, *stack_set: str) -> float:
    m, c, hw = toy_dense(), toy_consts(), toy_hw()  # toy pp_overlap 0.5
    grid = LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2, pp=2, vp=vp))
    p = predict_grid(m, hw, grid, Options(consts=c, stack_set=stack_set))
    return float(p.breakdown_s["pp_comm"][0] / p.comm_raw_s["pp_comm"][0])


def test_pipeline_send_recv_hides_only_where_the_schedule_lets_it():
    # Megatron-Core's 1F1B waits on every send/recv before the next compute: all exposed
    assert _pp_exposed_share(1) == pytest.approx(1.0, rel=1e-12)
    assert _pp_exposed_share(1, "pp_p2p_overlap=true") == pytest.approx(1.0, rel=1e-12)
    # interleaved with overlap_p2p_comm: pp_overlap (0.5) of it under the chunk's compute; without: all
    assert _pp_exposed_share(2) == pytest.approx(0.5, rel=1e-12)
    assert _pp_exposed_share(2, "pp_p2p_overlap=false") == pytest.approx(1.0, rel=1e-12)
    # the zero-bubble schedule places its send/recv beside other micro-batches' compute, at vp = 1 too
    assert _pp_exposed_share(1, "pipeline_schedule=zero_bubble") == pytest.approx(0.5, rel=1e-12)
    assert load_stack("zero-bubble-2024").value("pp_p2p_overlap") is True
