"""Stack features acting through physics (perfmodel/core/software.py, workload.py): hand-derived cases."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.api import Layout
from perfmodel.core.calibration import constants
from perfmodel.core.predict import Options, predict_grid
from perfmodel.core.software import resolve
from perfmodel.core.workload import build
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.layout import LayoutGrid
from perfmodel.specs.model import load_model

H100 = load_hardware("h100-sxm")


def _stream(model_id: str, fusions: str, name: str, bwd: bool = False) -> float:
    m = load_model(model_id)
    sw = resolve("torchtitan-2025", (f"fusions={fusions}",), m.id, m.is_moe, H100, "bf16", constants())
    w = build(m, LayoutGrid.of(Layout(gpus=8, gbs=8, seq=4096, tp=1)), False, 1.0, constants(), sw)
    (st,) = [s for s in w.layers[0].streams if s.name == name]
    return float(np.asarray(st.bytes_bwd if bwd else st.bytes_fwd).reshape(-1)[0])


def test_eager_rmsnorm_computes_in_fp32():
    """Llama 3 8B, 4,096 tokens, 2 RMSNorms of h = 4,096 per layer. Eager (torchtitan's RMSNorm at 9dec370ad, torch's
    composite rms_norm): cast up 2+4, pow 4+4, mean 4, x rsqrt 4+4, cast down 4+2, times the weight 2+2 = 36 B per
    element forward, the autograd of the same 72 B backward; the fused kernel 4 B forward, 8 B backward."""
    tokens, h = 4096, 4096
    assert _stream("llama3-8b", "none", "norms") == pytest.approx(2 * 36 * h * tokens)
    assert _stream("llama3-8b", "none", "norms", bwd=True) == pytest.approx(2 * 72 * h * tokens)
    assert _stream("llama3-8b", "torch_compile", "norms") == pytest.approx(2 * 4 * h * tokens)
    assert _stream("llama3-8b", "torch_compile", "norms", bwd=True) == pytest.approx(2 * 8 * h * tokens)


def _saved(model_id: str, fusions: str) -> dict[str, float]:
    m = load_model(model_id)
    sw = resolve("torchtitan-2025", (f"fusions={fusions}",), m.id, m.is_moe, H100, "bf16", constants())
    w = build(m, LayoutGrid.of(Layout(gpus=8, gbs=8, seq=4096, tp=1)), False, 1.0, constants(), sw)
    return {s.name: float(np.asarray(s.nbytes).reshape(-1)[0]) for s in w.layers[0].saved}


def test_eager_rmsnorm_keeps_its_fp32_copy_for_backward():
    """autograd of the eager RMSNorm (derivatives.yaml): pow and x * rsqrt save the fp32 copy x.float() (4 B), the
    multiplication by the weight saves the normalised bf16 output (2 B), no op saves the bf16 input: 6 B per element
    per norm where a fused norm keeps its 2 B input, so 4 B more for each of the two norms, and those 4 B belong to
    the norm (module layernorm: recomputed with it); a LayerNorm (native kernel) keeps no more eager than fused."""
    tokens, h = 4096, 4096
    eager, fused = _saved("llama3-8b", "none"), _saved("llama3-8b", "torch_compile")
    assert sum(eager.values()) - sum(fused.values()) == pytest.approx(2 * 4 * h * tokens)
    assert eager["attention norm fp32 copy and normalised output (eager)"] == pytest.approx(4 * h * tokens)
    assert "MLP norm fp32 copy and normalised output (eager)" not in fused
    assert sum(_saved("gpt3-175b", "none").values()) == sum(_saved("gpt3-175b", "torch_compile").values())


def test_eager_rope_is_a_complex_product_in_fp32():
    """RoPE on q and k, (32 + 8) heads x 128 = 5,120 rotated dims per token: eager (torchtitan apply_rotary_emb)
    cast up 2+4, complex product 4+4, cast down 4+2 = 20 B per element each way; fused 4 B forward, 8 B back."""
    tokens, dims = 4096, (32 + 8) * 128
    assert _stream("llama3-8b", "none", "rope") == pytest.approx(20 * dims * tokens)
    assert _stream("llama3-8b", "none", "rope", bwd=True) == pytest.approx(20 * dims * tokens)
    assert _stream("llama3-8b", "torch_compile", "rope", bwd=True) == pytest.approx(8 * dims * tokens)


def test_eager_swiglu_and_native_gelu():
    """SwiGLU in eager: silu (read 2, write 2) then mul (read 2 + 2, write 2) = 10 B per unit of width (6 fused);
    GELU (a native kernel) costs the same eager or fused."""
    f, tokens = 14336, 4096
    assert _stream("llama3-8b", "none", "activation") == pytest.approx(10 * f * tokens)
    assert _stream("llama3-8b", "te_fused", "activation") == pytest.approx(6 * f * tokens)
    assert _stream("gpt3-175b", "none", "activation") == _stream("gpt3-175b", "te_fused", "activation")


def test_compiled_never_slower_than_eager():
    m = load_model("llama3-8b")
    g = LayoutGrid.from_layouts([Layout(gpus=8, gbs=32, seq=s, tp=t, fsdp=True) for s in (2048, 8192) for t in (1, 2)])
    eager = predict_grid(m, H100, g, Options(stack="torchtitan-2025"))
    comp = predict_grid(m, H100, g, Options(stack="torchtitan-2025-compile"))
    assert np.all(comp.step_time_s <= eager.step_time_s)
    assert np.any(comp.step_time_s < eager.step_time_s)


def test_power_cap_below_tdp_lowers_the_tensor_clock():
    # a cap of 350 W on a 700 W H100: clock factor (350/700)^(1/3) = 0.7937 (f ~ P^(1/3)); the kernels run on
    # tensor peaks scaled by it (hardware.at_clock: GEMM and attention slower, HBM and network unchanged),
    # MFU still counts the nominal peak. At or above the TDP the cap changes nothing (factor 1)
    from perfmodel.core.calibration import constants
    from perfmodel.core.predict import Options, predict_grid
    from perfmodel.core.software import resolve
    from perfmodel.specs.hardware import apply_overrides, load_hardware
    from perfmodel.specs.layout import Layout, LayoutGrid
    from perfmodel.specs.model import load_model

    h100, c = load_hardware("h100-sxm"), constants()
    cap = lambda w: apply_overrides(h100, [f"power_limit_w={w}"])  # the site's cap: hardware power.power_limit_w
    sw = resolve("megatron-core", (), "llama3-8b", False, cap(350), "bf16", c)
    assert sw.power_factor == pytest.approx(0.5 ** (1 / 3))
    slow = h100.at_clock(sw.power_factor)
    assert slow.peak("bf16") == pytest.approx(h100.peak("bf16") * 0.5 ** (1 / 3))
    assert slow.memory.hbm_bandwidth == h100.memory.hbm_bandwidth and h100.at_clock(1.0) is h100
    for w in ("700", "1000"):
        assert resolve("megatron-core", (), "llama3-8b", False, cap(w), "bf16", c).power_factor == 1.0
    m, lay = load_model("llama3-8b"), LayoutGrid.of(Layout(gpus=8, gbs=64, seq=4096, tp=1))
    full = predict_grid(m, h100, lay, Options(stack="megatron-core"))
    capped = predict_grid(m, cap(350), lay, Options(stack="megatron-core"))
    assert capped.breakdown_s["gemm"][0] > full.breakdown_s["gemm"][0]
    assert capped.breakdown_s["attention"][0] > full.breakdown_s["attention"][0]
    assert capped.step_time_s[0] > full.step_time_s[0] and capped.mfu[0] < full.mfu[0]


def test_grand_teton_power_cap_is_the_sites():
    """Meta's Grand Teton H100 runs at its site's 500 W default limit (torchtitan's benchmark text): the hardware
    spec carries it, the tensor clock follows (500 / 700)^(1/3) = 0.894, inside Meta's 'between NVL (835) and SXM
    (989)' bracket; whatever the stack, the same cap."""
    from perfmodel.core.calibration import constants
    from perfmodel.core.software import resolve
    from perfmodel.specs.hardware import load_hardware

    gt, c = load_hardware("h100-grand-teton"), constants()
    assert gt.power.power_limit_w == 500 and gt.power.gpu_tdp_w == 700
    for stack in ("torchtitan-2025", "megatron-core"):
        f = resolve(stack, (), "llama3-8b", False, gt, "bf16", c).power_factor
        assert f == pytest.approx((500 / 700) ** (1 / 3))
        assert 835e12 < gt.peak("bf16") * f < 989.4e12
    assert resolve("torchtitan-2025", (), "llama3-8b", False, load_hardware("h100-sxm"), "bf16", c).power_factor == 1.0
