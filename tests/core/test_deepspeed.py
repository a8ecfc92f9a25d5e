"""DeepSpeed's data-parallel engines as the cost model prices them (issue 26 item 2): BF16_Optimizer's unsharded fp32
gradient buffer beside the bf16 gradients, its whole-gradient all-reduce, and ZeRO-2's per-micro-batch reduction."""

from __future__ import annotations

import pytest

from perfmodel.core.predict import Options, predict_grid
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.layout import Layout, LayoutGrid
from perfmodel.specs.model import load_model

MODEL, HW = load_model("gpt3-175b"), load_hardware("a100-sxm-80gb")
LAY = Layout(gpus=384, gbs=1536, seq=2048, tp=4, pp=12, mbs=2, recompute="full")  # dp 8, 96 micro-batches
NO_OVERLAP = ("dp_grad_reduce_overlap=false", "dp_param_gather_overlap=false")


def _predict(*sets: str, lay: Layout = LAY):
    opts = Options("bf16", stack="megatron-lm-2021", stack_set=NO_OVERLAP + sets)
    return predict_grid(MODEL, HW, LayoutGrid.of(lay), opts)


ZERO1 = ("fsdp=zero1", "optimizer_shard=dp", "main_grad_precision=fp32", "grad_reduce_precision=bf16")
BF16_OPT = ("fsdp=bf16_optimizer", "optimizer_shard=dp", "main_grad_precision=fp32", "grad_reduce_precision=bf16")


def test_bf16_optimizer_holds_bf16_gradients_beside_the_fp32_buffer():
    """bf16_optimizer.py: fp32_groups_gradients_flat (4 B, unsharded) + autograd's bf16 .grad (2 B) per parameter;
    master weights and Adam moments sharded over dp as with ZeRO-1."""
    z1, bf = _predict(*ZERO1).memory_parts, _predict(*BF16_OPT).memory_parts
    assert bf["gradients"][0] == pytest.approx(z1["gradients"][0] * 6 / 4, rel=1e-12)
    assert bf["optimizer"][0] == pytest.approx(z1["optimizer"][0], rel=1e-12)
    assert bf["weights"][0] == pytest.approx(z1["weights"][0], rel=1e-12)


def test_bf16_optimizer_all_reduces_the_whole_gradient():
    """pipe/engine.py _bf16_reduce_grads: buffered_allreduce_fallback over the fp32 buffer (a reduce-scatter and an
    all-gather of its bytes), then the bf16 partitions all-gathered: one more gradient-sized pass than ZeRO-1."""
    z1, bf = _predict(*ZERO1).comm_raw_s["dp_comm"][0], _predict(*BF16_OPT).comm_raw_s["dp_comm"][0]
    ag = _predict(*ZERO1, "grad_reduce_precision=bf16").comm_raw_s["dp_comm"][0] / 2  # bf16 RS = bf16 AG here
    assert bf == pytest.approx(z1 + ag, rel=1e-9)
    assert _predict(*BF16_OPT).step_time_s[0] > _predict(*ZERO1).step_time_s[0]


def test_zero2_reduces_every_micro_batch():
    """ZeRO-2 keeps only its gradient partition, so each micro-batch's gradients are reduced as its backward runs
    (stage_1_and_2.py: partition_gradients); ZeRO-1 reduces once at the accumulation boundary."""
    z1 = _predict(*ZERO1).comm_raw_s["dp_comm"][0]
    z2 = _predict("fsdp=zero2", "optimizer_shard=dp", "main_grad_precision=fp32", "grad_reduce_precision=bf16")
    rs_plus_ag, nmb = z1, LAY.gbs / (LAY.dp * LAY.mbs)
    rs = rs_plus_ag / 2  # bf16 reduce-scatter and bf16 all-gather of the same parameters
    assert z2.comm_raw_s["dp_comm"][0] == pytest.approx(nmb * rs + rs, rel=1e-9)
    assert z2.memory_parts["gradients"][0] == pytest.approx(_predict(*ZERO1).memory_parts["gradients"][0] / 8, rel=1e-9)
