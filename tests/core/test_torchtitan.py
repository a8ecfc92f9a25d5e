"""torchtitan as its code runs (issue 26 item 1): op-level and per-layer selective AC, AsyncTP's collective matmuls,
FSDP2 gathered once per step under PP only, PyTorch CP's all-gather rotation, SDPA backend per GPU, the presets."""

import numpy as np
import pytest

from perfmodel.core import workload
from perfmodel.core.calibration import constants
from perfmodel.core.parallel import recompute
from perfmodel.core.predict import Options, predict_grid, software_of
from perfmodel.errors import InputError
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.layout import Layout, LayoutGrid
from perfmodel.specs.model import load_model
from perfmodel.specs.stack import infer_stack, load_stack

L8 = load_model("llama3-8b")
GT = load_hardware("h100-grand-teton")


def _p(lay, stack="torchtitan-2025", sets=(), prec="bf16", m=L8, hw=GT):
    return predict_grid(m, hw, LayoutGrid.of(lay), Options(prec, stack=stack, stack_set=tuple(sets)))


def _lay(**kw):
    base = dict(gpus=8, gbs=16, seq=8192, tp=1, mbs=2, fsdp=True, recompute="none")
    return Layout(**{**base, **kw})


def test_op_sac_save_list_every_second_mm():
    """torchtitan's _save_list policy over a Llama block's matmuls in execution order wq wk wv wo w1 w3 w2: the
    odd-numbered ones are saved (wq, wv, w1, w2), the even ones (wk, wo, w3) re-run; SDPA is saved, never re-run."""
    sw = software_of(L8, GT, Options("bf16", stack="torchtitan-2025"))
    ws = workload.build(L8, LayoutGrid.of(_lay(tp=2)), False, 1.0, constants(), sw)
    layer = ws.layers[0]
    names = [g.name for g in layer.gemms]
    assert names == ["q proj", "k proj", "v proj", "out proj", "mlp gate", "mlp up", "mlp down"]
    redo = [g.name for g in layer.gemms if g.module == "op_sac"]
    assert redo == ["k proj", "out proj", "mlp up"]
    assert all(a.module == "core_attn" for a in layer.attention)
    # the TP input all-gather re-runs (not in the save list), the reduce-scatter's output is kept
    ag = [x for x in layer.comms if x.calls_fwd and "TP: input all-gather" in x.name]
    rs = [x for x in layer.comms if x.calls_fwd and "reduce-scatter" in x.name]
    assert ag and all(x.module == "op_sac" for x in ag) and all(x.module != "op_sac" for x in rs)


def test_op_sac_time_hfu_and_memory_from_the_same_records():
    """Every torchtitan selective row is predicted; op-level SAC re-runs less than full AC (no attention, three
    of seven matmuls), keeps less than no AC and more than full AC; HFU counts exactly the re-run matmuls."""
    none, sel, full = (_p(_lay(recompute=r)) for r in ("none", "selective", "full"))
    assert 0 < sel.breakdown_s["recompute"][0] < full.breakdown_s["recompute"][0]
    act = [p.memory_parts["activations"][0] for p in (none, sel, full)]
    assert act[2] < act[1] < act[0]
    sw = software_of(L8, GT, Options("bf16", stack="torchtitan-2025"))
    ws = workload.build(L8, LayoutGrid.of(_lay()), False, 1.0, constants(), sw)
    redo = sum(float(np.ravel(g.flops_fwd)[0]) for g in ws.layers[0].gemms if g.module == "op_sac")
    extra = (sel.hfu[0] - sel.mfu[0]) * sel.step_time_s[0] * 8 * GT.peak("bf16") / (16 * 8192)
    assert extra == pytest.approx(L8.num_layers * redo / float(ws.T[0]), rel=1e-9)


def test_per_layer_sac_every_nth_block():
    """selective_ac_option = N: floor(L / N) of L blocks fully checkpointed: recompute seconds that share of full
    AC's, activations that share of full AC's kept plus the rest of no AC's (one full layer live in both)."""
    for n in (2, 3):
        sets = ("selective_ac=layer", f"selective_ac_every={n}")
        sel, full, none = (_p(_lay(recompute=r), sets=sets) for r in ("selective", "full", "none"))
        share = (L8.num_layers // n) / L8.num_layers
        assert recompute.layer_share(software_of(L8, GT, Options(stack="torchtitan-2025", stack_set=sets)), 32) == share
        assert sel.breakdown_s["recompute"][0] == pytest.approx(share * full.breakdown_s["recompute"][0], rel=1e-9)
        assert none.memory_parts["activations"][0] > sel.memory_parts["activations"][0]
        assert sel.memory_parts["activations"][0] > full.memory_parts["activations"][0]


def test_async_tp_is_its_own_mechanism():
    """AsyncTP hides the TP collectives under the decomposed GEMMs (copy engines, tp - 1 shards); vanilla TP
    exposes them; AsyncTP without torch.compile is refused as torchtitan refuses it."""
    lay = _lay(gpus=64, gbs=96, mbs=12, tp=8, recompute="selective")
    van = _p(lay, stack="torchtitan-2025-compile")
    asy = _p(lay, stack="torchtitan-2025-asynctp")
    assert 0 < asy.breakdown_s["tp_comm"][0] < van.breakdown_s["tp_comm"][0]
    assert asy.comm_raw_s["tp_comm"][0] == pytest.approx(van.comm_raw_s["tp_comm"][0], rel=1e-9)
    assert van.breakdown_s["tp_comm"][0] == pytest.approx(van.comm_raw_s["tp_comm"][0], rel=1e-9)  # no overlap
    with pytest.raises(InputError) as e:
        _p(lay, sets=("tp_overlap=async_tp",))
    assert e.value.field == "tp_overlap" and "torch.compile" in e.value.reason


def test_async_tp_exposure_follows_the_chunks():
    """A collective whose shard copies are shorter than the partial GEMMs is hidden but for the decomposition's own
    cost; on a slow link the copies outlast them and (tp - 1) x (copy - chunk) shows."""
    from perfmodel.specs.hardware import apply_overrides

    lay = _lay(gpus=64, gbs=96, mbs=12, tp=8)
    fast = _p(lay, stack="torchtitan-2025-asynctp").breakdown_s["tp_comm"][0]
    slow_hw = apply_overrides(GT, ["nvlink_gbyte_s=45"])
    slow = _p(lay, stack="torchtitan-2025-asynctp", hw=slow_hw)
    assert slow.breakdown_s["tp_comm"][0] > 5 * fast
    assert slow.breakdown_s["tp_comm"][0] < slow.comm_raw_s["tp_comm"][0]


def test_fsdp_gathers_once_per_step_only_under_pp():
    """reshard_after_forward = not pp_enabled: at pp = 1 the FSDP traffic grows with the micro-batches (two gathers
    and a reduce-scatter each), at pp > 1 one gather and one reduce-scatter per step whatever their number."""
    m = load_model("llama3-70b")
    raw = lambda **kw: _p(_lay(gpus=64, seq=4096, tp=8, mbs=1, **kw), m=m).comm_raw_s["dp_comm"][0]
    assert raw(gbs=32, pp=2) == pytest.approx(raw(gbs=64, pp=2), rel=1e-9)
    assert raw(gbs=16) == pytest.approx(2 * raw(gbs=8), rel=1e-9)
    mem = lambda pp: _p(_lay(gpus=64, gbs=64, seq=4096, tp=8, mbs=1, pp=pp), m=m).memory_parts["weights"][0]
    per_gpu = load_model("llama3-70b")
    assert mem(2) > 3.5 * mem(1)  # kept gathered for the step under PP (half the layers per rank, unsharded over dp 4)
    assert per_gpu.num_layers == 80


def test_cp_all_gather_rotation():
    """PyTorch CP's allgather rotation: nothing at cp = 1; at cp > 1 the last dK/dV hop stays exposed even
    where attention is long enough to hide the rest."""
    zero = _p(_lay(seq=32768, gbs=8, mbs=1, recompute="full"), prec="fp8")
    assert zero.breakdown_s["cp_comm"][0] == 0.0 and zero.comm_raw_s["cp_comm"][0] == 0.0
    p = _p(_lay(seq=65536, gbs=4, mbs=1, cp=2, recompute="full"), prec="fp8")
    assert 0 < p.breakdown_s["cp_comm"][0] < p.comm_raw_s["cp_comm"][0]


def test_sdpa_backend_per_gpu_and_preset_citations():
    """cuDNN first on SM >= 10.0 (torchtitan 3b85aa31f), FlashAttention-2 elsewhere; the compile preset is compile
    only and cites the 405B toml where [compile] enable=true; AsyncTP is its own preset."""
    c = constants()
    on = lambda hid: software_of(L8, load_hardware(hid), Options(stack="torchtitan-2025")).attention
    assert (on("h100-grand-teton"), on("a100-sxm-80gb"), on("b200"), on("gb200-nvl72")) == (
        "fa2",
        "fa2",
        "cudnn",
        "cudnn",
    )
    comp, asy = load_stack("torchtitan-2025-compile"), load_stack("torchtitan-2025-asynctp")
    assert comp.value("tp_overlap") == "none" and comp.value("fusions") == "torch_compile"
    assert "llama3_405b.toml [compile] enable=true" in comp.sources["fusions"]
    assert "llama3_70b.toml at 038d5fd1: [compile] enable=true" not in comp.sources["fusions"]
    assert (
        asy.value("tp_overlap") == "async_tp"
        and "llama3_405b.toml enable_async_tensor_parallel = true" in (asy.sources["tp_overlap"])
    )
    assert c is not None


def test_words_of_a_torchtitan_run():
    """A run's own words: compile alone is compile; AsyncTP implies compile; float8 rowwise and per-layer SAC."""
    assert infer_stack("other", "TorchTitan FSDP2, torch.compile").sets == ("fusions=torch_compile",)
    assert set(infer_stack("other", "torchtitan 9dec370, AsyncTP").sets) == {
        "fusions=torch_compile",
        "tp_overlap=async_tp",
    }
    assert "fp8_recipe=rowwise" in infer_stack("other", "torchtitan float8 rowwise").sets
    assert "selective_ac=layer" in infer_stack("other", "torchtitan selective layer AC").sets


def test_grand_teton_rows_fit():
    """torchtitan's published 8B op-SAC run on 8 Grand Teton H100s (82.4 GiB reserved) fits the 96 GB part."""
    p = _p(_lay(recompute="selective"))
    assert p.fits[0] and np.isfinite(p.step_time_s[0])


def test_torchao_float8_recipes_cost_their_casts():
    """torchao's linear keeps the bf16 input (re-cast in backward), so float8 saves no activation memory; rowwise
    casts the output gradient along both axes and rescales the gradient GEMMs' fp32 output, so on an H100 at 8B it
    runs slower than tensorwise (torchao's own pretraining table: +10% vs +25% over bf16); on a B200 below MXFP8,
    whose amax is found inside its block cast."""
    lay = _lay(gpus=8, gbs=8, mbs=1, recompute="selective")
    h100 = load_hardware("h100-sxm")
    bf, tw = _p(lay, stack="torchtitan-2025-compile", hw=h100), _p(lay, "torchtitan-2025-compile", prec="fp8", hw=h100)
    rw = _p(lay, "torchtitan-2025-compile", ("fp8_recipe=rowwise",), prec="fp8", hw=h100)
    assert tw.memory_parts["activations"][0] == pytest.approx(bf.memory_parts["activations"][0], rel=1e-12)
    assert bf.tokens_per_s_per_gpu[0] < rw.tokens_per_s_per_gpu[0] < tw.tokens_per_s_per_gpu[0]
    b200 = load_hardware("b200")
    mx = _p(lay, "torchtitan-2025-compile", ("fp8_recipe=mxfp8",), prec="mxfp8", hw=b200)
    rw2 = _p(lay, "torchtitan-2025-compile", ("fp8_recipe=rowwise",), prec="fp8", hw=b200)
    assert rw2.tokens_per_s_per_gpu[0] < mx.tokens_per_s_per_gpu[0]
