"""Activation memory of the pipeline schedules against hand-derived in-flight micro-batch counts."""

from __future__ import annotations

import pytest

from perfmodel.api import predict
from perfmodel.specs.layout import Layout


def _activations(pp: int, vp: int) -> float:
    # Llama 3 70B: 80 layers; pp=4 and pp=4/vp=2 both hold 20 layers per rank; 64 micro-batches
    lay = Layout(gpus=32, gbs=512, seq=4096, tp=8, pp=pp, vp=vp, mbs=1)
    p = predict("llama3-70b", "h100-sxm", lay)
    # minus the one embedding-output tensor the first rank also keeps
    return p.memory_parts["activations"][0] - 2 * 8192 * 4096 / 8


def test_1f1b_first_rank_holds_pp_microbatches():
    # non-interleaved 1F1B: pp micro-batches in flight on the first rank (Narayanan et al. 2021 §2.2.1)
    one = _activations(pp=1, vp=1)  # pp=1: one micro-batch of all 80 layers
    four = _activations(pp=4, vp=1)  # 4 in flight x 20 layers = 80 layer-micro-batches
    assert four == pytest.approx(one, rel=1e-12)


def test_interleaved_adds_korthikanti_factor():
    # interleaved with vp=2: pp (1 + (pp-1)/(pp vp)) = 4 x 1.375 = 5.5 micro-batches of 20 layers
    assert _activations(pp=4, vp=2) == pytest.approx(_activations(pp=4, vp=1) * 1.375, rel=1e-12)


def test_activations_per_layer_match_korthikanti_table2():
    """Korthikanti et al. 2022 §4.1/Table 2: one GPT layer saves 34 sbh + 5 a s^2 b bytes (no parallelism);
    with tensor + sequence parallelism everything divides by t. Flash attention drops the two s^2 terms
    (softmax output, dropout mask) and keeps an fp32 log-sum-exp per head and query (4 a s b); training
    without dropout drops the two 1-byte dropout masks (sbh each): 32 sbh / t + 4 a s b / t."""
    import numpy as np

    from perfmodel.core.calibration import constants
    from perfmodel.core.memory import layer_activation_bytes
    from perfmodel.core.workload import build
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.layout import LayoutGrid
    from perfmodel.specs.model import load_model

    m = load_model("gpt3-175b")
    s, b, t = 2048, 1, 8
    h, a = m.hidden_size, m.attention.num_heads
    grid = LayoutGrid.of(Layout(gpus=8, gbs=8, seq=s, tp=t, mbs=b))
    from perfmodel.core.software import resolve

    sw = resolve(
        "megatron-lm-2022", ("attention_kernel=fa2",), m.id, False, load_hardware("a100-sxm-80gb"), "bf16", constants()
    )
    assert sw.sequence_parallel
    (layer,) = build(m, grid, False, 1.0, constants(), sw).layers
    kept, full = layer_activation_bytes(layer, np.array(0))
    assert float(full[0]) == pytest.approx(32 * s * b * h / t + 4 * a * s * b / t, rel=1e-12)
    assert float(kept[0]) == float(full[0])
