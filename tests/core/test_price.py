"""price.py: pricing op records, against cases worked by hand on the toy GPU (tests/toy.py). With k_half and
mn_half 0 the GEMM efficiency is shape-independent: 0.8 sustained x 0.5 (BF16) or 0.4 (FP8), so a GEMM's
time is max(2MNK / (peak eff), bytes / 0.8 TB/s) + 10 us and the three training shapes differ only in bytes."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_consts, toy_dense, toy_hw, toy_sw

from perfmodel.core import price
from perfmodel.core.ops import AttentionCore, Collective, Fixed, Gemm, Layer, Stream

HW, C = toy_hw(gemm_k_half=0.0, gemm_mn_half=0.0), toy_consts()
REL = 1e-12
# M = 100, N = 8000, K = 1000: 1.6e9 FLOPs (2.5 us at FP8's 6.4e14, 4 us at BF16's 4e14): HBM-bound in every shape
G = Gemm("expert up", np.array(100.0), np.array(8000.0), np.array(1000.0), 4.0)


def test_grouped_gemm_one_fixed_cost():
    # FP8 bytes: fprop (100*1000 + 1000*8000) * 1 + 100*8000 * 2 = 9.7e6 -> 12.125 us
    #            dgrad [100, 1000, 8000]: (100*8000 + 8000*1000) + 100*1000*2 = 9.0e6 -> 11.25 us
    #            wgrad [8000, 1000, 100]: (8000*100 + 100*1000) + 8000*1000*2 = 16.9e6 -> 21.125 us
    # 4 experts in one grouped kernel: 4 x the work, one fixed cost per kernel (one fwd, two bwd)
    f, b = price.gemm_fwd_bwd(G, HW, "fp8", C)
    assert float(f) == pytest.approx(4 * 12.125e-6 + 10e-6, rel=REL)
    assert float(b) == pytest.approx(4 * (11.25e-6 + 21.125e-6) + 20e-6, rel=REL)


def test_ungrouped_gemms_one_kernel_each():
    # without grouped GEMM the 4 experts run as 4 kernels: 4 fixed costs per pass (fwd; dgrad and wgrad)
    g = Gemm("expert up", np.array(100.0), np.array(8000.0), np.array(1000.0), 4.0, grouped=False)
    f, b = price.gemm_fwd_bwd(g, HW, "fp8", C)
    assert float(f) == pytest.approx(4 * (12.125e-6 + 10e-6), rel=REL)
    assert float(b) == pytest.approx(4 * (11.25e-6 + 21.125e-6 + 20e-6), rel=REL)


def test_bf16_record_ignores_the_recipe_precision():
    # router / LM head stay BF16 under an FP8 recipe: every shape 17.8e6 bytes -> 22.25 us
    g = Gemm("router", np.array(100.0), np.array(8000.0), np.array(1000.0), 1.0, False)
    f, b = price.gemm_fwd_bwd(g, HW, "fp8", C)
    assert float(f) == pytest.approx(22.25e-6 + 10e-6, rel=REL)
    assert float(b) == pytest.approx(2 * 22.25e-6 + 20e-6, rel=REL)
    f2, b2 = price.gemms_fwd_bwd([g, G], HW, "fp8", C)
    assert float(f2) == pytest.approx(32.25e-6 + 58.5e-6, rel=REL)
    assert float(b2) == pytest.approx(64.5e-6 + 149.5e-6, rel=REL)


def test_attention_cores_weighted_by_share():
    # 3e9 FLOPs at 3,000 keys: 20 us fwd, 41.25 us bwd; at 1,000 keys: 25 us, 56.875 us (test_compute.py)
    cores = (
        AttentionCore("global", np.array(3e9), np.array(3000.0), 0.75),
        AttentionCore("sliding", np.array(3e9), np.array(1000.0), 0.25),
    )
    f, b = price.attention_fwd_bwd(cores, HW, C)
    assert float(f) == pytest.approx(0.75 * 20e-6 + 0.25 * 25e-6, rel=REL)
    assert float(b) == pytest.approx(0.75 * 41.25e-6 + 0.25 * 56.875e-6, rel=REL)


def test_streams():
    s = (Stream("a", 4e8, 8e8, 1, 2), Stream("b", 4e8, 0.0, 3, 0))
    f, b = price.streams_fwd_bwd(s, HW, C)
    # forward 8e8 B / 0.8e12 = 1 ms + 4 kernels; backward 8e8 B = 1 ms + 2 kernels
    assert float(f) == pytest.approx(1.04e-3, rel=REL) and float(b) == pytest.approx(1.02e-3, rel=REL)


def _timed(name: str, overlap: str, seconds: float, calls_fwd: float, calls_bwd: float, module: str = "") -> Collective:
    """A collective of known price on the toy GPU: `seconds` / 10 us steps of an empty send/recv inside the
    NVLink domain (comm.p2p_time: 0 B over the link + the domain's 10 us latency each)."""
    return Collective(name, overlap, "p2p", 0.0, 2, 1, calls_fwd, calls_bwd, module, steps=seconds / 1e-5)


def test_collective_records_price_by_kind():
    # an empty send/recv costs the NVLink latency (toy GPU: 10 us) per step; inactive (cp = 1) costs nothing
    assert float(_timed("a", "tp", 1e-3, 1, 1).price(HW)) == pytest.approx(1e-3, rel=REL)
    off = Collective("r", "cp", "p2p", 0.0, 2, 1, 1, 2, steps=3.0, active=np.array(False))
    assert float(off.price(HW)) == 0.0
    with pytest.raises(ValueError, match="unknown collective kind"):
        Collective("z", "tp", "broadcast", 1.0, 2, 1, 1, 1).price(HW)


def _comms():
    return (_timed("a", "tp", 1e-3, 2, 2), _timed("b", "tp", 2e-3, 1, 3), _timed("c", "ep", 5e-4, 2, 0))


def test_comm_raw_per_class():
    out = price.comm_raw(_comms(), HW)
    # tp: forward 2 x 1 ms + 1 x 2 ms, backward 2 x 1 ms + 3 x 2 ms; ep: 2 x 0.5 ms forward
    assert out["tp"] == pytest.approx((4e-3, 8e-3)) and out["ep"] == pytest.approx((1e-3, 0.0))


def test_selective_recompute_of_modules():
    from types import SimpleNamespace

    sw = SimpleNamespace(recompute_modules=("core_attn", "mlp"), attn_fwd_factor=1.0, attn_bwd_factor=1.0)
    mlp = Gemm("expert up", np.array(100.0), np.array(8000.0), np.array(1000.0), 4.0, module="mlp")
    other = Gemm("qkv", np.array(100.0), np.array(8000.0), np.array(1000.0), 1.0, False, module="qkv")
    layer = Layer(
        "dense",
        1,
        (mlp, other),
        (AttentionCore("global", np.array(3e9), np.array(3000.0)),),
        (Stream("act", 8e8, 8e8, 0, 0, "mlp"), Stream("norms", 4e8, 4e8, 0, 0, "layernorm")),
        (_timed("x", "tp", 1e-3, 2, 2, "mlp"), _timed("y", "tp", 5e-3, 2, 2)),
        (),
        (),
    )
    t = price.price_layer(layer, HW, "fp8", C, sw)
    # recomputed forward: the mlp GEMM (58.5 us), the attention core (20 us), the mlp stream (1 ms), the mlp
    # collective's 2 forward calls (2 ms); FLOPs: 2 x 100 x 8000 x 1000 x 4 + 3e9
    assert float(t.selective_f) == pytest.approx(58.5e-6 + 20e-6 + 1e-3 + 2e-3, rel=REL)
    assert float(t.selective_flops) == pytest.approx(6.4e9 + 3e9, rel=REL)


def test_selective_recompute_reruns_the_fixed_costs_of_its_modules():
    # a host sync of the recomputed module (1 ms forward, the MoE routing sync of a "moe" recompute, gpt-oss's
    # eager clamp launches under moe_act) runs again in backward; one of another module (2 ms) does not; the
    # GEMM stream carries both either way (3 ms forward)
    from types import SimpleNamespace

    sw = SimpleNamespace(recompute_modules=("moe_act",), attn_fwd_factor=1.0, attn_bwd_factor=1.0)
    layer = Layer(
        "moe", 1, (), (), (), (), (Fixed("clamp", 1e-3, 4e-3, "moe_act"), Fixed("sync", 2e-3, 2e-3, "moe")), ()
    )
    t = price.price_layer(layer, HW, "bf16", C, sw)
    assert float(t.selective_f) == pytest.approx(1e-3, rel=REL)
    assert float(t.gemm_f) == pytest.approx(3e-3, rel=REL) and float(t.gemm_b) == pytest.approx(6e-3, rel=REL)
    # "moe" covers moe_act (recompute.dropped): both rerun
    t = price.price_layer(
        layer, HW, "bf16", C, SimpleNamespace(recompute_modules=("moe",), attn_fwd_factor=1.0, attn_bwd_factor=1.0)
    )
    assert float(t.selective_f) == pytest.approx(3e-3, rel=REL)


def test_price_layer():
    layer = Layer(
        "dense",
        1,
        (G,),
        (AttentionCore("global", np.array(3e9), np.array(3000.0)),),
        (Stream("a", 8e8, 8e8, 0, 0),),
        _comms(),
        (Fixed("sync", 1e-3, 2e-3),),
        (),
    )
    t = price.price_layer(layer, HW, "fp8", C, toy_sw(toy_dense(), HW, C))
    # GEMM stream: the grouped GEMM (58.5 us fwd, 149.5 us bwd) plus the host sync (1 ms, 2 ms)
    assert float(t.gemm_f) == pytest.approx(58.5e-6 + 1e-3, rel=REL)
    assert float(t.gemm_b) == pytest.approx(149.5e-6 + 2e-3, rel=REL)
    assert float(t.compute_f) == pytest.approx(58.5e-6 + 1e-3 + 20e-6 + 1e-3, rel=REL)
    assert float(t.compute_b) == pytest.approx(149.5e-6 + 2e-3 + 41.25e-6 + 1e-3, rel=REL)
    assert t.comm["tp"] == pytest.approx((4e-3, 8e-3))


def test_attention_head_dim_factor_divides_the_kernel_time():
    # a core at head_dim 64 under cuDNN: forward at 0.701, backward at 0.836 of the head_dim-128 rate
    # (FA3 paper Fig. 5-6: 363 vs 518, 417 vs 499 TFLOP/s); the 10 us fixed cost per kernel is unchanged.
    # 3e9 FLOPs at 3,000 keys: 20 us fwd (10 us of it fixed), 41.25 us bwd (10 us fixed)
    core = AttentionCore("global", np.array(3e9), np.array(3000.0), 1.0, dim_factor_fwd=0.701, dim_factor_bwd=0.836)
    f, b = price.attention_fwd_bwd((core,), HW, C)
    assert float(f) == pytest.approx(10e-6 / 0.701 + 10e-6, rel=REL)
    assert float(b) == pytest.approx(31.25e-6 / 0.836 + 10e-6, rel=REL)
    # ... on top of the stack's kernel factor (FA2 on Hopper: 1/1.75 forward)
    f2, _ = price.attention_fwd_bwd((core,), HW, C, 1 / 1.75, 1.0)
    assert float(f2) == pytest.approx(10e-6 * 1.75 / 0.701 + 10e-6, rel=REL)


def test_selective_recompute_sums_every_recomputed_gemm():
    # two GEMM records of the recomputed mlp module (fc1 and fc2 of the same shape as G: 58.5 us forward at FP8,
    # 1.6e9 FLOPs x 4 groups each) and one of another module: the recomputed forward is the sum of both mlp
    # GEMMs, 117 us and 12.8e9 FLOPs, whatever their order among the layer's records
    from types import SimpleNamespace

    sw = SimpleNamespace(recompute_modules=("mlp",), attn_fwd_factor=1.0, attn_bwd_factor=1.0)
    fc1, fc2 = (Gemm(n, np.array(100.0), np.array(8000.0), np.array(1000.0), 4.0, module="mlp") for n in ("fc1", "fc2"))
    qkv = Gemm("qkv", np.array(100.0), np.array(8000.0), np.array(1000.0), 1.0, False, module="qkv")
    for order in ((fc1, qkv, fc2), (qkv, fc2, fc1)):
        layer = Layer("dense", 1, order, (AttentionCore("global", np.array(3e9), np.array(3000.0)),), (), (), (), ())
        t = price.price_layer(layer, HW, "fp8", C, sw)
        assert float(t.selective_f) == pytest.approx(2 * 58.5e-6, rel=REL)
        assert float(t.selective_flops) == pytest.approx(2 * 6.4e9, rel=REL)


def test_offloading_every_layer_is_refused():
    # Megatron-Core TransformerConfig.__post_init__: cpu_offloading_num_layers must lie in 0 .. num_layers - 1
    # ("CPU offloading can be done only for layers less than num_layers"): the toy model's 4 layers offload at
    # most 3; 4 is a configuration Megatron refuses, so no price for it
    from perfmodel.core.predict import Options, predict_grid
    from perfmodel.errors import InputError
    from perfmodel.specs.layout import Layout, LayoutGrid

    hw = HW.model_copy(update={"memory": HW.memory.model_copy(update={"host_bandwidth": 1e11})})
    lay = LayoutGrid.of(Layout(gpus=1, gbs=2, seq=2048))
    ok = predict_grid(toy_dense(), hw, lay, Options(consts=C, stack_set=("cpu_offload_layers=3",)))
    assert np.all(np.isfinite(ok.step_time_s))
    with pytest.raises(InputError, match="cpu_offload_layers: 4 of the model's 4 layers"):
        predict_grid(toy_dense(), hw, lay, Options(consts=C, stack_set=("cpu_offload_layers=4",)))
