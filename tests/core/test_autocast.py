"""fp32 parameters under torch.autocast (stack param_dtype = fp32_autocast, the Hugging Face Trainer's bf16=True on a
model loaded in float32): the per-op weight casts (workload._autocast_casts) and the bytes held (memory.py)."""

from __future__ import annotations

import numpy as np
import pytest
from toy import named_stream, toy_consts, toy_dense, toy_hw, toy_sw

from perfmodel.api import Layout
from perfmodel.core.predict import Options, predict_grid
from perfmodel.core.workload import build
from perfmodel.errors import InputError
from perfmodel.specs.layout import LayoutGrid

# torch DDP as the Trainer runs it: every rank holds and steps the whole optimizer
PLAIN = ("main_grad_precision=fp32", "fsdp=none", "optimizer_shard=none")
AUTOCAST = ("param_dtype=fp32_autocast",) + PLAIN
# toy layer at tp 2, weight elements per GPU (as tests/core/test_forks.py): qkv, out, up/gate, down
ELEMS = 768 * 1024 + 1024 * 512 + 4096 * 1024 + 1024 * 2048


def test_each_weight_is_cast_once_each_way_per_micro_batch():
    m, c, hw = toy_dense(), toy_consts(), toy_hw()
    grid = LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2))
    w = build(m, grid, False, 1.0, c, toy_sw(m, hw, c, stack_set=AUTOCAST))
    cast = named_stream(w.layers[0].streams, "autocast weight casts (fp32 -> bf16)")
    # forward: read the fp32 weight (4 B), write its bf16 copy (2 B); backward: read the bf16 gradient, write fp32
    assert float(np.ravel(cast.bytes_fwd)[0]) == 6 * ELEMS and float(np.ravel(cast.bytes_bwd)[0]) == 6 * ELEMS
    assert (cast.kernels_fwd, cast.kernels_bwd) == (4.0, 4.0)  # one per weight tensor
    head = named_stream(w.head.streams, "lm head autocast cast")
    assert float(np.ravel(head.bytes_fwd)[0]) == 6 * 16_000 * 1024 and head.kernels_fwd == 1.0
    # parameters in the GEMMs' dtype: no cast
    plain = build(m, grid, False, 1.0, c, toy_sw(m, hw, c, stack_set=PLAIN))
    off = named_stream(plain.layers[0].streams, "autocast weight casts (fp32 -> bf16)")
    assert (off.bytes_fwd, off.bytes_bwd, off.kernels_fwd, off.kernels_bwd) == (0.0, 0.0, 0, 0)


def test_the_casts_cost_their_hbm_time_and_the_fp32_parameter_replaces_the_master_copy():
    m, c, hw = toy_dense(), toy_consts(), toy_hw()
    grid = LayoutGrid.of(Layout(gpus=8, gbs=32, seq=2048, tp=2))  # dp 4, 8 micro-batches of 1
    on = predict_grid(m, hw, grid, Options(consts=c, stack_set=AUTOCAST))
    off = predict_grid(m, hw, grid, Options(consts=c, stack_set=PLAIN))
    # per micro-batch and layer: 12 B x ELEMS at 1 TB/s x 0.8 plus 8 kernels of 10 us; 4 layers, 8 micro-batches
    per_layer = 12 * ELEMS / 0.8e12 + 8 * 1e-5
    d = on.breakdown_s["memory_bound"][0] - off.breakdown_s["memory_bound"][0]
    assert d == pytest.approx(8 * 4 * per_layer, rel=1e-12)
    # the bytes per parameter: 2 (bf16 weight) + 4 (fp32 main grad) + 12 (fp32 master + moments) against 4 (fp32
    # parameter) + 2 (its bf16 copy saved for backward) + 4 (fp32 .grad) + 8 (moments): the same total, held apart
    p_on, p_off = on.memory_parts, off.memory_parts
    params = float(p_off["weights"][0]) / 2.0
    assert float(p_on["weights"][0]) == pytest.approx(6.0 * params)
    assert float(p_on["optimizer"][0]) == pytest.approx(float(p_off["optimizer"][0]) * 8.0 / 12.0)
    assert float(p_on["gradients"][0]) == float(p_off["gradients"][0])
    held = lambda p: sum(float(p[k][0]) for k in ("weights", "gradients", "optimizer"))
    assert held(p_on) == pytest.approx(held(p_off))


@pytest.mark.parametrize("fsdp", ["fsdp1", "fsdp2", "zero1", "bf16_optimizer"])
def test_a_sharding_wrapper_with_fp32_autocast_is_one_clear_error(fsdp):
    m, c, hw = toy_dense(), toy_consts(), toy_hw()
    with pytest.raises(InputError) as e:
        toy_sw(m, hw, c, stack_set=("param_dtype=fp32_autocast", f"fsdp={fsdp}"))
    assert e.value.field == "param_dtype" and f"fsdp = {fsdp}" in str(e.value)
