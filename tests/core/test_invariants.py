"""Properties the predictor must hold for every legal layout (issue 7, robustness).

Strategies draw random LEGAL layouts (filtered with perfmodel.specs.layout.legality) for a few catalog models on
h100-sxm and gb200-nvl72. No predicted value is asserted, only relations between predictions:
faster hardware (peak FLOP/s, HBM bandwidth, NVLink bandwidth, NIC bandwidth) never slows a step, MFU <= 1
and HFU >= MFU, step >= model FLOPs at peak, memory grows with the micro-batch and never grows with more
sharding (FSDP, or doubling dp, tp, pp, cp or ep), tokens/s x step = gbs x seq / GPUs, identical input gives
bit-identical output, vectorised == one-by-one, everything finite.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from perfmodel.core.predict import Options, Prediction, predict_grid
from perfmodel.specs.hardware import HardwareSpec, load_hardware
from perfmodel.specs.layout import Layout, LayoutGrid, legality
from perfmodel.specs.model import ModelSpec, load_model

MODELS = ("llama3-8b", "llama3-70b", "mixtral-8x7b", "deepseek-v3")
HARDWARE = ("h100-sxm", "gb200-nvl72")
PRECISIONS = ("bf16", "fp8")
REL = 1e-9

# PERFMODEL_INVARIANT_EXAMPLES=2000 pytest tests/core/test_invariants.py explores more (and randomly); the default
# run is small and derandomized so the suite stays quick and reproducible.
_EXAMPLES = os.environ.get("PERFMODEL_INVARIANT_EXAMPLES")
SETTINGS = settings(
    max_examples=int(_EXAMPLES or 50),
    deadline=None,
    derandomize=_EXAMPLES is None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)


def _legal(m: ModelSpec, lay: Layout) -> bool:
    a = m.attention
    bad = legality(LayoutGrid.of(lay), m.num_layers, a.num_heads, a.num_kv_heads, m.moe.num_experts if m.moe else None)
    return not any(bool(v[0]) for v in bad.values())


@st.composite
def cases(draw, mbs_max: int = 4):
    """(model, hardware, precision, legal layout). gbs is a multiple of dp * mbs_max so the layout stays
    legal when mbs is raised to mbs_max (memory-monotonicity test)."""
    m = load_model(draw(st.sampled_from(MODELS)))
    hw = load_hardware(draw(st.sampled_from(HARDWARE)))
    prec = draw(st.sampled_from(PRECISIONS))
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.sampled_from([1, 2, 4, 8]))
    cp = draw(st.sampled_from([1, 1, 2]))
    dp = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
    vp = draw(st.sampled_from([1, 1, 2])) if pp > 1 else 1
    gpus = tp * pp * cp * dp
    if m.moe:
        ep = draw(st.sampled_from([e for e in (1, 2, 4, 8, 16, 32, 64) if (tp * cp * dp) % e == 0]))
        etp = draw(st.sampled_from([t for t in (1, 2) if (tp * cp * dp) % (ep * t) == 0]))
    else:
        ep = etp = 1
    mbs = draw(st.sampled_from([1, 2, 4][: [1, 2, 4].index(mbs_max) + 1]))
    gbs = dp * mbs_max * draw(st.integers(1, 16))
    seq = draw(st.sampled_from([1024, 2048, 4096, 8192]))
    lay = Layout(
        gpus=gpus,
        gbs=gbs,
        seq=seq,
        tp=tp,
        pp=pp,
        vp=vp,
        cp=cp,
        ep=ep,
        etp=etp,
        mbs=mbs,
        fsdp=draw(st.booleans()),
        recompute=draw(st.sampled_from(["none", "selective", "full"])),
    )
    assume(_legal(m, lay))
    return m, hw, prec, lay


def _pred(m: ModelSpec, hw: HardwareSpec, prec: str, lay: Layout | LayoutGrid, routing: str = "real") -> Prediction:
    grid = lay if isinstance(lay, LayoutGrid) else LayoutGrid.of(lay)
    return predict_grid(m, hw, grid, Options(prec, routing=routing))  # type: ignore[arg-type]


def _scaled(hw: HardwareSpec, section: str, updates: dict[str, float]) -> HardwareSpec:
    sec = getattr(hw, section)
    new = {k: (getattr(sec, k) * f if getattr(sec, k) is not None else None) for k, f in updates.items()}
    return hw.model_copy(update={section: sec.model_copy(update=new)})


def _all_arrays(p: Prediction) -> dict[str, np.ndarray]:
    out = {
        "step_time_s": p.step_time_s,
        "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu,
        "mfu": p.mfu,
        "hfu": p.hfu,
        "memory_bytes_per_gpu": p.memory_bytes_per_gpu,
        "model_flops_per_token": p.model_flops_per_token,
    }
    out.update({f"memory_parts.{k}": v for k, v in p.memory_parts.items()})
    out.update({f"breakdown_s.{k}": v for k, v in p.breakdown_s.items()})
    return {k: np.broadcast_to(np.asarray(v, dtype=float), p.step_time_s.shape) for k, v in out.items()}


# ---- faster hardware never makes a step slower -------------------------------------------------------

FASTER = {
    "peak_flops": ("peak_flops", {"bf16": 1, "fp16": 1, "fp8": 1, "mxfp8": 1, "nvfp4": 1}),
    "hbm_bandwidth": ("memory", {"hbm_bandwidth": 1}),
    "nvlink": ("scale_up", {"bandwidth": 1}),
    "nic": ("scale_out", {"bandwidth": 1}),
}


@pytest.mark.parametrize("what", list(FASTER))
@SETTINGS
@given(case=cases(), factor=st.sampled_from([1.01, 1.5, 2.0, 10.0]))
def test_faster_hardware_is_never_slower(what, case, factor):
    m, hw, prec, lay = case
    section, keys = FASTER[what]
    fast = _scaled(hw, section, {k: factor for k in keys})
    base = _pred(m, hw, prec, lay).step_time_s[0]
    quick = _pred(m, fast, prec, lay).step_time_s[0]
    assert quick <= base * (1 + REL), (what, factor, lay, base, quick)


# ---- utilisation and compute bounds -------------------------------------------------------------------


@SETTINGS
@given(case=cases())
def test_mfu_hfu_and_compute_bound(case):
    m, hw, prec, lay = case
    p = _pred(m, hw, prec, lay)
    mfu, hfu, step = float(p.mfu[0]), float(p.hfu[0]), float(p.step_time_s[0])
    assert 0 < mfu <= 1
    assert hfu >= mfu * (1 - REL)
    # a step can't beat the model FLOPs at the tensor-core peak on every GPU
    model_flops = float(p.model_flops_per_token[0]) * lay.gbs * lay.seq
    assert step >= model_flops / (lay.gpus * hw.peak(prec)) * (1 - REL)


@SETTINGS
@given(case=cases())
def test_tokens_times_step_is_tokens_per_gpu(case):
    m, hw, prec, lay = case
    p = _pred(m, hw, prec, lay)
    got = float(p.tokens_per_s_per_gpu[0]) * float(p.step_time_s[0])
    assert got == pytest.approx(lay.gbs * lay.seq / lay.gpus, rel=REL)


# ---- memory -------------------------------------------------------------------------------------------


@SETTINGS
@given(case=cases(mbs_max=4))
def test_memory_grows_with_micro_batch(case):
    m, hw, prec, lay = case
    grid = LayoutGrid.from_layouts([replace(lay, mbs=b) for b in (1, 2, 4)])
    mem = _pred(m, hw, prec, grid).memory_bytes_per_gpu
    assert mem[0] <= mem[1] * (1 + REL) and mem[1] <= mem[2] * (1 + REL), (lay, mem)


@SETTINGS
@given(case=cases())
def test_fsdp_never_needs_more_memory(case):
    m, hw, prec, lay = case
    grid = LayoutGrid.from_layouts([replace(lay, fsdp=False), replace(lay, fsdp=True)])
    mem = _pred(m, hw, prec, grid).memory_bytes_per_gpu
    assert mem[1] <= mem[0] * (1 + REL), (lay, mem)


SHARD = {  # doubling one axis on twice the GPUs (same micro-batches per replica): more sharding, same work
    "dp": lambda L: replace(L, gpus=2 * L.gpus, gbs=2 * L.gbs),
    "tp": lambda L: replace(L, gpus=2 * L.gpus, tp=2 * L.tp),
    "pp": lambda L: replace(L, gpus=2 * L.gpus, pp=2 * L.pp),
    "cp": lambda L: replace(L, gpus=2 * L.gpus, cp=2 * L.cp),
    "ep": lambda L: replace(L, ep=2 * L.ep),
}


@pytest.mark.parametrize("axis", list(SHARD))
@SETTINGS
@given(case=cases())
def test_more_sharding_never_needs_more_memory(axis, case):
    """Memory per GPU falls (or stays) when weights, optimizer state or activations are split more ways.
    pp only without interleaving: Megatron's interleaved schedule keeps (1 + (pp-1)/(pp vp)) of a layer stack of
    activations in flight on the first rank (Korthikanti et al. 2022 §4.2.3), which grows with pp. ep under
    force-balanced routing: under real routing the busiest rank receives more tokens as it holds fewer experts
    (parallel/ep.py routing_imbalance), so its routed activations can outgrow the expert weights it sheds."""
    m, hw, prec, lay = case
    if axis == "pp":
        lay = replace(lay, vp=1)
    more = SHARD[axis](lay)
    assume(_legal(m, more))
    routing = "balanced" if axis == "ep" else "real"
    mem = _pred(m, hw, prec, LayoutGrid.from_layouts([lay, more]), routing).memory_bytes_per_gpu
    assert mem[1] <= mem[0] * (1 + REL), (axis, lay, mem)


# ---- determinism, vectorised == one-by-one, finiteness ------------------------------------------------


@SETTINGS
@given(case=cases())
def test_identical_input_identical_output(case):
    m, hw, prec, lay = case
    a, b = _all_arrays(_pred(m, hw, prec, lay)), _all_arrays(_pred(m, hw, prec, lay))
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k


@settings(
    max_examples=10,
    deadline=None,
    derandomize="INV_EXAMPLES" not in __import__("os").environ,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(model=st.sampled_from(MODELS), hw_id=st.sampled_from(HARDWARE), prec=st.sampled_from(PRECISIONS), data=st.data())
def test_vectorised_equals_one_by_one(model, hw_id, prec, data):
    m, hw = load_model(model), load_hardware(hw_id)
    layouts: list[Layout] = []
    for _ in range(data.draw(st.integers(2, 12))):
        # cases() draws its own model/hardware; keep only its layout when it is legal for `model`
        _, _, _, lay = data.draw(cases())
        if _legal(m, lay):
            layouts.append(lay)
    assume(len(layouts) >= 2)
    many = _all_arrays(_pred(m, hw, prec, LayoutGrid.from_layouts(layouts)))
    for i, lay in enumerate(layouts):
        one = _all_arrays(_pred(m, hw, prec, LayoutGrid.of(lay)))
        for k in many:
            assert many[k][i] == one[k][0], (k, lay, many[k][i], one[k][0])


@SETTINGS
@given(case=cases())
def test_everything_finite(case):
    m, hw, prec, lay = case
    p = _pred(m, hw, prec, lay)
    for k, v in _all_arrays(p).items():
        assert np.all(np.isfinite(v)), (k, lay, v)
    assert all(v >= 0 for v in _all_arrays(p)["breakdown_s.gemm"])
    assert np.isfinite(p.hbm_bytes)


def test_faster_flops_regression_deepseek_fp8():
    """Found by test_faster_hardware_is_never_slower with PERFMODEL_INVARIANT_EXAMPLES=1000."""
    m, hw = load_model("deepseek-v3"), load_hardware("h100-sxm")
    lay = Layout(gpus=128, gbs=64, seq=2048, tp=1, pp=4, cp=2, ep=16, etp=2)
    assert _legal(m, lay)
    fast = _scaled(hw, "peak_flops", {k: 2.0 for k in FASTER["peak_flops"][1]})
    assert _pred(m, fast, "fp8", lay).step_time_s[0] <= _pred(m, hw, "fp8", lay).step_time_s[0] * (1 + REL)
