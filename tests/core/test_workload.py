"""workload.py: the op records of toy models (tests/toy.py) under TP + SP, CP, EP / ETP folding and MLA, each
field worked by hand from Megatron-Core's shapes (Shoeybi et al. 2019 §3; Korthikanti et al. 2022 §4.1-4.2;
MoE parallel folding, Liu et al. 2025) and the constants' sources (perfmodel/core/constants.py)."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_consts, toy_dense, toy_hw, toy_mla, toy_moe, toy_sw

from perfmodel.core.software import resolve as _resolve
from perfmodel.core.workload import act_bytes_per_width, build, layer_kind_index, mean_keys_value, rope_dims
from perfmodel.specs.layout import Layout, LayoutGrid

HW, C = toy_hw(), toy_consts()
REL = 1e-12


def _build(m, low=False, imb=1.25, **lay):
    kw = dict(gpus=8, gbs=8, seq=2048, tp=2)
    kw.update(lay)
    return build(m, LayoutGrid.of(Layout(**kw)), low, imb, C, toy_sw(m, HW, C))


def _shapes(layer):
    return {
        g.name: (
            float(g.M[0] if np.ndim(g.M) else g.M),
            float(g.N[0]),
            float(g.K[0]),
            float(np.asarray(g.count).ravel()[0]),
            g.low_precision,
        )
        for g in layer.gemms
    }


def _streams(layer):
    return {
        s.name: (
            float(np.asarray(s.bytes_fwd).ravel()[0]),
            float(np.asarray(s.bytes_bwd).ravel()[0]),
            s.kernels_fwd,
            s.kernels_bwd,
        )
        for s in layer.streams
    }


def _saved(layer):
    return [(s.name, float(np.asarray(s.nbytes).ravel()[0]), s.module) for s in layer.saved]


def _price(layer, name):
    (x,) = [x for x in layer.comms if x.name.startswith(name) and x.overlap != "tp_async"]
    return float(np.asarray(x.price(HW)).ravel()[0]), x.calls_fwd, x.calls_bwd, x.overlap


def _async(layer, name):
    """The block's asynchronous backward TP record (parallel/tp.block_pair): (price, calls, window)."""
    (x,) = [x for x in layer.comms if x.name.startswith(name) and x.overlap == "tp_async"]
    return float(np.asarray(x.price(HW)).ravel()[0]), (x.calls_fwd, x.calls_bwd), x.window


# toy dense at tp 2, seq 2048, mbs 1: T = 2048 GEMM rows, Ts = T / tp = 1024 sequence-parallel rows;
# h 1024, 8 query heads and 2 KV heads of 128 (q 1024, kv 512), SwiGLU 4096


def test_dense_gemm_shapes_tp_sp():
    (layer,) = _build(toy_dense()).layers
    assert _shapes(layer) == {
        "qkv proj": (2048, (1024 + 512) / 2, 1024, 1, True),  # column-parallel: N / tp
        "out proj": (2048, 1024, 1024 / 2, 1, True),  # row-parallel: K / tp
        "mlp up/gate": (2048, 2 * 4096 / 2, 1024, 1, True),
        "mlp down": (2048, 1024, 4096 / 2, 1, True),
    }


def test_dense_attention_core():
    (layer,) = _build(toy_dense()).layers
    (a,) = layer.attention
    # causal: (S + 1) / 2 = 1024.5 keys per query; 2 * heads/tp * (d_qk + d_v) = 2 * 4 * 256 FLOPs per query-key
    assert float(a.mean_keys[0]) == 1024.5 and a.share == 1.0
    assert float(a.flops_fwd[0]) == pytest.approx(2048 * 2048 * 1024.5, rel=REL)
    # cp 2: each rank does half the queries: 2048 * 2048 * 1024.5 / 2
    (a2,) = _build(toy_dense(), cp=2).layers[0].attention
    assert float(a2.flops_fwd[0]) == pytest.approx(2048 * 2048 * 1024.5 / 2, rel=REL)


def test_dense_streams():
    (layer,) = _build(toy_dense()).layers
    assert _streams(layer) == {
        "norms": (2 * 4 * 1024 * 1024, 2 * 2 * 4 * 1024 * 1024, 0.0, 0.0),  # 2 norms x 4 B x h x Ts, bwd 2x
        "residual adds": (12 * 1024 * 1024, 2 * 12 * 1024 * 1024, 0.0, 0.0),  # 12 B x h x Ts
        "rope": (4 * 10 * 128 / 2 * 2048, 2 * 4 * 10 * 128 / 2 * 2048, 0.0, 0.0),  # (8 + 2) heads x 128 / tp
        "activation": (6 * 4096 / 2 * 2048, 2 * 6 * 4096 / 2 * 2048, 0.0, 0.0),  # SwiGLU 6 B per unit of width
        "fp8 casts": (0.0, 0.0, 0.0, 0.0),
        "wgrad accumulate into main_grad": (0.0, 0.0, 0.0, 0.0),  # fused into the wgrad GEMMs (test_forks.py)
        "autocast weight casts (fp32 -> bf16)": (0.0, 0.0, 0.0, 0.0),  # bf16 parameters (test_autocast.py)
        "elementwise launches": (0.0, 0.0, 12, 20),
    }


def test_yarn_rope_runs_megatron_cores_unfused_path():
    # YaRN's concentration factor (0.1 ln 32 + 1 at gpt-oss's factor 32) sends Megatron-Core's q / k RoPE down its
    # unfused path (rope_utils.apply_rotary_pos_emb -> _apply_rotary_pos_emb_bshd): per rotated element 24 B
    # forward (t * cos, -x2, cat, * sin, the sum, the cat with the empty t_pass), 20 B backward (grad * sin, -grad,
    # chunk's cat, grad * cos, the sum of t's two gradients); launches 2 x 12 - 2 forward (q and k, each with 6
    # small cos / sin kernels) and 2 x 5 - 2 backward beyond the fused kernels in LAYER_KERNELS_*. Toy at tp 2:
    # (8 + 2) heads x 128 / 2 rotated elements per token, 2048 tokens
    (layer,) = _build(toy_dense(rope_scaling="yarn")).layers
    st = _streams(layer)
    n = 10 * 128 / 2 * 2048
    assert "rope" not in st and st["rope (unfused, YaRN mscale)"] == (24 * n, 20 * n, 22, 8)
    assert st["elementwise launches"] == (0.0, 0.0, 12, 20)  # the fused-path kernel counts are unchanged
    # outside Megatron-Core (torchtitan's own RoPE) and for MLA (Megatron-Core's MLA RoPE path): the plain record
    m = toy_dense(rope_scaling="yarn")
    sw = _resolve("torchtitan-2025", (), m.id, m.is_moe, HW, "bf16", C)
    tt = build(m, LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2)), False, 1.25, C, sw)
    assert "rope" in _streams(tt.layers[0]) and "rope (unfused, YaRN mscale)" not in _streams(tt.layers[0])
    mla = _streams(_build(toy_mla(rope_scaling="yarn")).layers[0])
    assert mla["rope"] == _streams(_build(toy_mla()).layers[0])["rope"]


def test_fp8_cast_bytes():
    (layer,) = _build(toy_dense(), low=True).layers
    # 4 B per GEMM input element (cast + transpose) + 2 B amax read (current scaling, the default stack):
    # forward sum of M*K = 2048 * (1024 + 512 + 1024 + 2048); backward the output gradients, sum of M*N =
    # 2048 * (768 + 1024 + 4096 + 1024)
    st = _streams(layer)
    assert st["fp8 casts"] == (6 * 2048 * 4608, 6 * 2048 * 6912, 0.0, 0.0)
    # the other streams as in BF16
    assert {k: v for k, v in st.items() if k != "fp8 casts"} == {
        k: v for k, v in _streams(_build(toy_dense()).layers[0]).items() if k != "fp8 casts"
    }


def test_dense_collectives():
    (layer,) = _build(toy_dense()).layers
    # SP pair of the block's activation T x h x 2 B = 4,194,304 B over tp 2: 1/2 * 4194304 / 2e11 + 20 us
    # (the default stack, Megatron-Core: sequence parallelism, tp_bwd_async): 2 synchronous calls forward, 1 in
    # backward (the output gradient's all-gather), and the input re-gather + dgrad reduce-scatter (2 calls) under
    # the column-parallel GEMM's backward
    one = 4194304 / 2 / 2e11 + 20e-6
    assert (
        _price(layer, "attention TP all-gather + reduce-scatter")[:3] == pytest.approx((one, 2, 1), rel=REL)
        and _price(layer, "attention TP all-gather + reduce-scatter")[3] == "tp"
    )
    assert (
        _price(layer, "MLP TP all-gather + reduce-scatter")[:3] == pytest.approx((one, 2, 1), rel=REL)
        and _price(layer, "MLP TP all-gather + reduce-scatter")[3] == "tp"
    )
    assert _async(layer, "attention TP") == (pytest.approx(one, rel=REL), (0, 2), ("qkv proj",))
    assert _async(layer, "MLP TP") == (pytest.approx(one, rel=REL), (0, 2), ("mlp up/gate",))
    # synchronous backward (tp_bwd_async = false): the pair's 2 + 2 calls, no asynchronous record
    (sync,) = _build_sw(toy_dense(), ("tp_bwd_async=false",)).layers
    assert _price(sync, "MLP TP all-gather + reduce-scatter")[1:3] == (2, 2)
    assert not [x for x in sync.comms if x.overlap == "tp_async"]
    # plain TP (no sequence parallelism): the dgrad all-reduce runs wholly under wgrad (0 synchronous calls)
    (plain,) = _build_sw(toy_dense(), ("sequence_parallel=false",)).layers
    assert _price(plain, "MLP TP all-gather + reduce-scatter")[1:3] == (2, 0)
    assert _async(plain, "MLP TP")[1] == (0, 2)
    assert _price(layer, "CP ring K/V exchange")[0] == 0.0
    # cp 2: T = 1024 rows; K/V 1024 x 512 / 2 x 2 B = 524,288 B to the CP peer 2 ranks away, at NCCL's per-pair
    # send/recv rate (K.NCCL_P2P_PEER_BW 8e10, below the link's 2e11): / 8e10 + 10 us
    (l2,) = _build(toy_dense(), cp=2).layers
    assert _price(l2, "CP ring K/V exchange")[0] == pytest.approx(524288 / 8e10 + 10e-6, rel=REL)


def test_dense_saved_bytes():
    (layer,) = _build(toy_dense()).layers
    sbh = 2 * 1024 * 1024  # one bf16 tensor of Ts x h
    assert _saved(layer) == [
        ("attention norm input", sbh, "input"),
        ("qkv input", sbh, "layernorm"),
        ("q, k, v", 2 * (1024 + 512) / 2 * 2048, "qkv"),
        ("attention output", 2 * 1024 / 2 * 2048, "core_attn"),
        ("softmax log-sum-exp", 4 * 8 / 2 * 2048, "core_attn"),
        ("MLP norm input", sbh, "residual"),
        ("fc1 input", sbh, "layernorm"),
        ("activation input", 2 * 2 * 4096 / 2 * 2048, "mlp"),
        ("activation output", 2 * 4096 / 2 * 2048, "mlp"),
    ]


def test_head_records():
    hd = _build(toy_dense()).head
    (g,) = hd.gemms
    assert (float(g.M[0]), float(g.N[0]), float(g.K[0]), g.low_precision) == (2048, 32000 / 2, 1024, False)
    s, acc, cast = hd.streams
    assert (acc.name, acc.bytes_bwd, acc.kernels_bwd) == ("lm head wgrad accumulate", 0.0, 0.0)  # fused by default
    assert (cast.name, cast.bytes_fwd, cast.kernels_fwd) == ("lm head autocast cast", 0.0, 0)  # bf16 parameters
    # fp32 logits 3 x 4 B per vocab entry of the TP shard, final norm 2 x 4 B per hidden unit; 6 kernels
    assert float(s.bytes_fwd[0]) == pytest.approx(12 * 2048 * 16000 + 8 * 1024 * 2048, rel=REL) and s.kernels_fwd == 6
    (x,) = hd.comms
    assert (x.calls_fwd, x.calls_bwd) == (1, 1)
    assert float(np.asarray(x.price(HW)).ravel()[0]) == pytest.approx(4194304 / 2 / 2e11 + 20e-6, rel=REL)
    # embedding: write a bf16 row forward, read + write its gradient: 8 B x h x Ts; 2 kernels
    assert float(hd.embedding.bytes_fwd[0]) == 8 * 1024 * 1024 and hd.embedding.kernels_fwd == 2
    assert hd.mtp_gemm is None and hd.mtp_layers == 0
    mtp = _build(toy_moe(mtp_layers=1)).head
    # MTP projection [h, 2h] -> h on T rows (DeepSeek-V3 §2.2)
    assert (float(mtp.mtp_gemm.M[0]), float(mtp.mtp_gemm.N[0]), float(mtp.mtp_gemm.K[0])) == (2048, 1024, 2048)


# toy MoE at tp 2, ep 4, etp 1, imbalance 1.25: 16 experts of 512, top-2, one shared expert of 1024.
# Rows per expert: T * top_k * ep * etp / (tp * E) * imbalance = 2048 * 2 * 4 / 32 * 1.25 = 640;
# token copies per GPU: Ts * top_k * imbalance = 1024 * 2 * 1.25 = 2560


def test_moe_gemm_shapes_ep():
    w = _build(toy_moe(), ep=4)
    assert [l.kind for l in w.layers] == ["dense", "moe"]
    s = _shapes(w.layers[1])
    assert s["expert up/gate"] == (640, 2 * 512, 1024, 16 / 4, True)
    assert s["expert down"] == (640, 1024, 512, 4, True)
    assert s["router"] == (1024, 16, 1024, 1, False)  # on the SP shard, BF16
    assert s["shared expert up/gate"] == (2048, 2 * 1024 / 2, 1024, 1, True)
    assert s["shared expert down"] == (2048, 1024, 1024 / 2, 1, True)
    assert s["qkv proj"] == (2048, (1024 + 2048) / 2, 1024, 1, True)  # MHA: kv = 2 * 8 * 128


def test_moe_gemm_shapes_etp_folding():
    # ep 2 x etp 2: rows 2048 * 2 * 2 * 2 / 32 * 1.25 = 640; 8 local experts, each split 2 ways
    s = _shapes(_build(toy_moe(), ep=2, etp=2).layers[1])
    assert s["expert up/gate"] == (640, 2 * 512 / 2, 1024, 8, True)
    assert s["expert down"] == (640, 1024, 512 / 2, 8, True)


def test_moe_streams():
    st = _streams(_build(toy_moe(), ep=4).layers[1])
    assert st["token permute / unpermute"] == (20 * 1024 * 2560, 2 * 20 * 1024 * 2560, 0.0, 0.0)
    assert st["expert activation"] == (6 * 512 * 2560, 2 * 6 * 512 * 2560, 0.0, 0.0)
    assert st["shared expert activation"] == (6 * 1024 / 2 * 2048, 2 * 6 * 1024 / 2 * 2048, 0.0, 0.0)
    assert st["rope"] == (4 * 16 * 128 / 2 * 2048, 2 * 4 * 16 * 128 / 2 * 2048, 0.0, 0.0)
    # FP8 (6 B per element, test_fp8_cast_bytes): the grouped GEMMs cast count x M x K elements: 4 x 640 x (1024 + 512)
    low = _streams(_build(toy_moe(), low=True, ep=4).layers[1])["fp8 casts"]
    fwd = 2048 * (1024 + 512) + 4 * 640 * (1024 + 512) + 2048 * (1024 + 512)
    bwd = 2048 * (1536 + 1024) + 4 * 640 * (1024 + 1024) + 2048 * (1024 + 1024)
    assert low[:2] == (6 * fwd, 6 * bwd)


def test_moe_collectives():
    layer = _build(toy_moe(), ep=4).layers[1]
    # dispatch: Ts * imbalance * h * 2 B = 2,621,440 B per token set; EP 4 inside one domain:
    # 2 * 3/4 * 2621440 / 1e11 + 10 us * (1 + 2)
    assert (
        _price(layer, "EP dispatch + combine")[:3] == pytest.approx((2 * 0.75 * 2621440 / 1e11 + 30e-6, 2, 2), rel=REL)
        and _price(layer, "EP dispatch + combine")[3] == "ep"
    )
    assert _price(layer, "shared expert TP all-gather + reduce-scatter")[0] == pytest.approx(
        4194304 / 2 / 2e11 + 20e-6, rel=REL
    )
    assert _async(layer, "shared expert TP")[1:] == ((0, 2), ("shared expert up/gate",))
    assert _price(layer, "expert TP all-gather + reduce-scatter")[0] == 0.0  # etp 1
    (f,) = layer.fixed
    assert (f.seconds_fwd, f.seconds_bwd) == (1e-3, 1e-3)
    # etp 2: the routed tokens gathered over etp: 2560 * 2 * 1024 * 2 B over 2 GPUs: 1/2 * 10485760 / 2e11 + 20 us
    l2 = _build(toy_moe(), ep=2, etp=2).layers[1]
    assert _price(l2, "expert TP all-gather + reduce-scatter")[0] == pytest.approx(10485760 / 2 / 2e11 + 20e-6, rel=REL)
    # ... and the EP 2 members are etp = 2 ranks apart: 2 * 1/2 * 2621440 / 1e11 + 10 us * 2
    assert _price(l2, "EP dispatch + combine")[0] == pytest.approx(2621440 / 1e11 + 20e-6, rel=REL)


def _build_sw(m, stack_set=(), **lay):
    kw = dict(gpus=8, gbs=8, seq=2048, tp=2)
    kw.update(lay)
    return build(m, LayoutGrid.of(Layout(**kw)), False, 1.25, C, toy_sw(m, HW, C, stack_set=tuple(stack_set)))


def test_moe_expert_bias_loop():
    # biased experts under TEGroupedMLP (Megatron-Core _apply_bias): at tp 2, ep 4 the fc2 output on this
    # GPU is 2560 token copies x h 1024; 12 B per element forward and 12 B backward (bf16 b*p, add, cat;
    # grad*p + sum, grad*b + sum); 4 local experts -> 2 * 4 + 1 = 9 kernels forward, 4 * 4 = 16 backward,
    # at the eager per-kernel time (toy kernel_fixed_s 10 us: the default stack graphs no full iteration)
    m = toy_moe(
        moe=dict(
            num_experts=16,
            top_k=2,
            expert_intermediate_size=512,
            shared_experts=1,
            shared_intermediate_size=1024,
            first_dense_layers=1,
            expert_bias=True,
        )
    )
    layer = _build(m, ep=4).layers[1]
    assert _streams(layer)["expert bias (per-expert loop)"] == (12 * 2560 * 1024, 12 * 2560 * 1024, 0.0, 0.0)
    sync, launches = layer.fixed
    assert (sync.seconds_fwd, sync.seconds_bwd) == (1e-3, 1e-3)
    assert (float(np.ravel(launches.seconds_fwd)[0]), float(np.ravel(launches.seconds_bwd)[0])) == pytest.approx(
        (9e-5, 16e-5), rel=REL
    )
    # ep 2 x etp 2: 8 local experts; the fc2 output is 2560 x etp 2 rows of partial sums, full h wide
    l2 = _build(m, ep=2, etp=2).layers[1]
    assert _streams(l2)["expert bias (per-expert loop)"][:2] == (12 * 5120 * 1024, 12 * 5120 * 1024)
    assert float(np.ravel(l2.fixed[1].seconds_bwd)[0]) == pytest.approx(32e-5, rel=REL)
    # a whole-iteration CUDA graph captures the loop: 4 us per kernel (calibration graphed_kernel_s)
    g = _build_sw(m, ("cuda_graphs=full_iteration",), ep=4).layers[1]
    assert float(np.ravel(g.fixed[1].seconds_fwd)[0]) == pytest.approx(9 * 4e-6, rel=REL)
    # ... and has no host sync for the token counts (static expert buffers): the routing sync is 0
    assert (g.fixed[0].seconds_fwd, g.fixed[0].seconds_bwd) == (0.0, 0.0)
    assert _build_sw(m, ("cuda_graphs=per_layer",), ep=4).layers[1].fixed[0].seconds_fwd == 1e-3
    # the fused CuTe-DSL grouped MLP and unbiased experts have no such loop
    assert "expert bias (per-expert loop)" not in _streams(_build_sw(m, ("grouped_gemm=cutedsl",), ep=4).layers[1])
    assert len(_build_sw(m, ("grouped_gemm=cutedsl",), ep=4).layers[1].fixed) == 1
    assert "expert bias (per-expert loop)" not in _streams(_build(toy_moe(), ep=4).layers[1])
    # ... but it serves SwiGLU experts only: a clamped-SwiGLU (quick-GeGLU) model keeps the TEGroupedMLP loop
    mc = toy_moe(
        moe=dict(
            num_experts=16,
            top_k=2,
            expert_intermediate_size=512,
            shared_experts=1,
            shared_intermediate_size=1024,
            first_dense_layers=1,
            expert_bias=True,
        ),
        ffn=dict(activation="clamped_swiglu", intermediate_size=4096),
    )
    assert _streams(_build_sw(mc, ("grouped_gemm=cutedsl",), ep=4).layers[1])["expert bias (per-expert loop)"][:2] == (
        12 * 2560 * 1024,
        12 * 2560 * 1024,
    )


def test_moe_clamped_swiglu_eager_clamp():
    # gpt-oss's clamped SwiGLU under Megatron-Core (fused_bias_geglu.weighted_bias_quick_geglu_impl): chunk, two
    # clamps and a cat run eagerly before the fused activation. At tp 2, ep 4: 2560 token copies on this GPU,
    # expert width 512 -> forward 16 B x 2560 x 512 (clamps read 2 + write 2 per half element, cat reads 4 and
    # writes 4 per unit of width), backward 30 B (clamp_backward 8 + 14, split_backward cat 8); launches
    # 4 forward (2 clamps, cat, the offset's host-to-device copy) and 7 backward at the eager 10 us
    mc = toy_moe(
        moe=dict(
            num_experts=16,
            top_k=2,
            expert_intermediate_size=512,
            shared_experts=0,
            first_dense_layers=1,
            expert_bias=False,
        ),
        ffn=dict(activation="clamped_swiglu", intermediate_size=4096),
    )
    layer = _build(mc, ep=4).layers[1]
    assert _streams(layer)["clamp before the activation (eager)"] == (16 * 2560 * 512, 30 * 2560 * 512, 0.0, 0.0)
    (st,) = [s for s in layer.streams if s.name.startswith("clamp")]
    assert st.module == "moe_act"  # a moe_act recompute reruns the clamps with the activation
    (fx,) = [x for x in layer.fixed if x.name == "clamp launches"]
    assert (float(np.ravel(fx.seconds_fwd)[0]), float(np.ravel(fx.seconds_bwd)[0])) == pytest.approx(
        (4e-5, 7e-5), rel=REL
    )
    assert fx.module == "moe_act"  # ... launches included
    assert {x.name: x.module for x in layer.fixed}["MoE routing sync"] == "moe"
    # the fused activation keeps the clamped copy (2 x 512 wide, bf16) beside the fc1 output the clamps keep
    assert ("clamped expert activation input", 2 * 2560 * 2 * 512, "moe_act") in _saved(layer)
    # plain SwiGLU experts have no clamp; nor does a stack outside Megatron-Core (its own expert code), even
    # on the same grouped-GEMM kernel
    assert "clamp before the activation (eager)" not in _streams(_build(toy_moe(), ep=4).layers[1])
    tt = build(
        mc,
        LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2, ep=4)),
        False,
        1.25,
        C,
        _resolve("torchtitan-2025", ("grouped_gemm=te",), mc.id, mc.is_moe, HW, "bf16", C),
    )
    assert "clamp before the activation (eager)" not in _streams(tt.layers[1])


def test_moe_saved_bytes():
    sv = _saved(_build(toy_moe(), ep=4).layers[1])
    sbh = 2 * 1024 * 1024
    assert sv[2:4] == [
        ("q, k, v", 2 * (1024 + 2048) / 2 * 2048, "qkv"),
        ("attention output", 2 * 1024 / 2 * 2048, "core_attn"),
    ]
    assert sv[5:] == [
        ("MoE norm input", sbh, "residual"),
        ("router input", sbh, "layernorm"),
        ("permuted tokens", 2 * 2560 * 1024, "moe"),
        ("expert activation input", 2 * 2560 * 2 * 512, "moe"),
        ("expert activation output", 2 * 2560 * 512, "moe_act"),
        ("router logits", 4 * 1024 * 16, "moe"),
        ("shared expert activation input", 2 * 2 * 1024 / 2 * 2048, "shared_experts"),
        ("shared expert activation output", 2 * 1024 / 2 * 2048, "shared_experts"),
    ]


def test_layer_kind_index():
    m = toy_moe()
    assert layer_kind_index(m, _build(m, ep=4)) == [0, 1, 1, 1]


# toy MLA at tp 2: 8 heads, q rank 256, kv rank 128, nope 64 + rope 32 = qk 96, v 64


def test_mla_shapes():
    layer = _build(toy_mla()).layers[0]
    s = _shapes(layer)
    assert s["q down"] == (2048, 256, 1024, 1, True)  # duplicated on every TP rank
    assert s["q up"] == (2048, 8 * 96 / 2, 256, 1, True)
    assert s["kv down"] == (2048, 128 + 32, 1024, 1, True)
    assert s["kv up"] == (2048, 8 * (64 + 64) / 2, 128, 1, True)
    assert s["out proj"] == (2048, 1024, 8 * 64 / 2, 1, True)
    (a,) = layer.attention
    assert float(a.flops_fwd[0]) == pytest.approx(2 * 8 / 2 * (96 + 64) * 2048 * 1024.5, rel=REL)
    assert _streams(layer)["rope"][0] == 4 * (8 + 1) * 32 / 2 * 2048  # q heads + the shared k_rope
    sv = _saved(layer)
    assert sv[2:4] == [
        ("q, k, v", 2 * (8 * 96 + 8 * 160) / 2 * 2048, "mla_up_proj"),
        ("attention output", 2 * 8 * 64 / 2 * 2048, "core_attn"),
    ]
    assert sv[5] == ("MLA latents", 2 * (256 + 128 + 32) * 2048, "latents")
    s0 = _shapes(
        _build(
            toy_mla(
                attention=dict(
                    kind="mla",
                    num_heads=8,
                    num_kv_heads=8,
                    head_dim=128,
                    kv_lora_rank=128,
                    qk_nope_head_dim=64,
                    qk_rope_head_dim=32,
                    v_head_dim=64,
                )
            )
        ).layers[0]
    )
    assert s0["q proj"] == (2048, 8 * 96 / 2, 1024, 1, True) and "q down" not in s0
    # MLA gathers the sequence-sharded input itself before its duplicated down-projections: the attention TP
    # pair (T x h x 2 B = 4,194,304 B over tp 2) keeps both backward calls synchronous, no asynchronous record
    assert _price(layer, "attention TP all-gather + reduce-scatter")[:3] == pytest.approx(
        (4194304 / 2 / 2e11 + 20e-6, 2, 2), rel=REL
    )
    assert not [x for x in layer.comms if x.name.startswith("attention TP") and x.overlap == "tp_async"]


def test_windowed_attention_cores():
    # window 512 on every other layer (layers 0 and 2 of 4): sliding keys per query at S = 2048:
    # (W (W + 1) / 2 + (S - W) W) / S = (131,328 + 786,432) / 2048 = 448.125
    m = toy_dense(attention=dict(kind="gqa", num_heads=8, num_kv_heads=2, head_dim=128, window=512, global_every=2))
    glob, slide = _build(m).layers[0].attention
    assert (float(glob.mean_keys[0]), glob.share) == (1024.5, 0.5)
    assert float(slide.mean_keys[0]) == pytest.approx(448.125, rel=REL) and slide.share == 0.5
    assert float(slide.flops_fwd[0]) == pytest.approx(2048 * 2048 * 448.125, rel=REL)


def test_helpers():
    assert float(mean_keys_value("global", 0, np.array([2048.0]))[0]) == 1024.5
    assert rope_dims(toy_dense()) == (8 + 2) * 128 and rope_dims(toy_dense(position_embedding="learned")) == 0.0
    assert act_bytes_per_width(toy_dense()) == 6.0
    assert act_bytes_per_width(toy_dense(ffn=dict(activation="gelu", intermediate_size=4096))) == 4.0


def _build_sw(m, stack_set, **lay):
    kw = dict(gpus=8, gbs=8, seq=2048, tp=2)
    kw.update(lay)
    return build(m, LayoutGrid.of(Layout(**kw)), False, 1.25, C, toy_sw(m, HW, C, stack_set=stack_set))


def test_eager_streams():
    # fusions = none: eager PyTorch kernels (constants.py: RMSNorm in fp32, 36 B forward and 72 B backward per hidden
    # unit; SwiGLU 10 B per unit of width; RoPE in fp32, 20 B each way; 20 more kernels forward, 26 backward)
    st = _streams(_build_sw(toy_dense(), ("fusions=none",)).layers[0])
    assert st["norms"] == (2 * 36 * 1024 * 1024, 2 * 72 * 1024 * 1024, 0.0, 0.0)
    assert st["rope"] == (20 * 10 * 128 / 2 * 2048, 20 * 10 * 128 / 2 * 2048, 0.0, 0.0)
    assert st["activation"] == (10 * 4096 / 2 * 2048, 2 * 10 * 4096 / 2 * 2048, 0.0, 0.0)
    assert st["residual adds"] == (12 * 1024 * 1024, 2 * 12 * 1024 * 1024, 0.0, 0.0)
    assert st["elementwise launches"] == (0.0, 0.0, 12 + 20, 20 + 26)


def test_no_sequence_parallel():
    # sequence_parallel = false: norms and residual adds on every TP rank's full T = 2048 rows
    layer = _build_sw(toy_dense(), ("sequence_parallel=false",)).layers[0]
    st = _streams(layer)
    assert st["norms"][0] == 2 * 4 * 1024 * 2048 and st["residual adds"][0] == 12 * 1024 * 2048
    assert _saved(layer)[0] == ("attention norm input", 2 * 1024 * 2048, "input")


def test_unfused_attention():
    # attention_kernel = unfused: per head of the TP shard (8 / 2 = 4, mbs 1) QK^T [s, s, d_qk] and PV [s, d_v, s]
    # as batched BF16 GEMMs; the s x s scores through HBM between them 9 B forward (softmax 2 + 2, dropout 2 + 2 + 1-byte
    # mask), 11 B backward (dropout backward 2 + 1 + 2, softmax backward 2 + 2 + 2; 2 kernels each); 5 B saved
    layer = _build_sw(toy_dense(), ("attention_kernel=unfused",)).layers[0]
    assert layer.attention == ()
    s = _shapes(layer)
    assert s["QK^T (unfused)"] == (2048, 2048, 128, 4, False) and s["PV (unfused)"] == (2048, 128, 2048, 4, False)
    assert _streams(layer)["attention scores (unfused)"] == (9 * 4 * 2048 * 2048, 11 * 4 * 2048 * 2048, 2, 2)
    assert _saved(layer)[5] == ("attention scores (unfused)", 5 * 4 * 2048 * 2048, "core_attn")


def test_cuda_graph_kernel_cost():
    # CUDA graphs lower the fixed cost per kernel to min(kernel_fixed_s 10 us, graphed_kernel_s 4 us):
    # per_layer inside the layers only, full_iteration also in the head, embedding and optimizer
    m = toy_dense()
    sw = toy_sw(m, HW, C, stack_set=("cuda_graphs=per_layer",))
    assert (sw.layer_kernel_s, sw.other_kernel_s) == (4e-6, 1e-5)
    sw = toy_sw(m, HW, C, stack_set=("cuda_graphs=full_iteration",))
    assert (sw.layer_kernel_s, sw.other_kernel_s) == (4e-6, 4e-6)
    sw = toy_sw(m, HW, C, stack_set=("cuda_graphs=none",))
    assert (sw.layer_kernel_s, sw.other_kernel_s) == (1e-5, 1e-5)


def test_attention_head_dim_factor():
    from perfmodel.core.software import head_dim_factor

    # FA3 paper (Shah et al. 2024) Fig. 5-6, H100 BF16, 4k: head_dim 64 over 128, forward (causal) / backward
    assert head_dim_factor("cudnn", 64) == (0.701, 0.836)
    assert head_dim_factor("fa3", 64) == (0.725, 0.836)
    assert head_dim_factor("fa2", 64) == (0.890, 0.900)
    # 128 and above: 1; below 64: held at 64 (no measurement); unfused (GEMMs) and Triton: no factor
    for k in ("cudnn", "fa3", "fa2", "fa4"):
        assert head_dim_factor(k, 128) == head_dim_factor(k, 192) == (1.0, 1.0)
        assert head_dim_factor(k, 32) == head_dim_factor(k, 64)
    assert head_dim_factor("unfused", 64) == head_dim_factor("triton", 64) == (1.0, 1.0)
    # 96 is halfway in log2 between 64 and 128: 0.701 + log2(1.5) * 0.299
    f, b = head_dim_factor("cudnn", 96)
    assert f == pytest.approx(0.701 + np.log2(1.5) * 0.299, rel=REL)
    assert b == pytest.approx(0.836 + np.log2(1.5) * 0.164, rel=REL)
    # the record carries the factor of the model's query/key head dimension under the stack's kernel
    (a,) = _build(toy_dense(attention=dict(kind="gqa", num_heads=16, num_kv_heads=2, head_dim=64))).layers[0].attention
    assert toy_sw(toy_dense(), HW, C).attention == "cudnn"  # the default stack's kernel
    assert (a.dim_factor_fwd, a.dim_factor_bwd) == (0.701, 0.836)
    (a,) = _build(toy_dense()).layers[0].attention
    assert (a.dim_factor_fwd, a.dim_factor_bwd) == (1.0, 1.0)


def test_declared_gemm_axes_hold():
    """A GEMM that declares its axes (Gemm.axes: the planner prices it once per distinct combination of them)
    has the same M, N, K and count on every layout that agrees on those axes: here 6 layouts that differ only
    in ep and etp (toy MoE, unfused attention too); the expert GEMMs, which declare none, do change."""
    from perfmodel.core.workload import DENSE_AXES

    lays = [
        Layout(gpus=16, gbs=16, seq=2048, tp=2, ep=e, etp=x)
        for e, x in ((1, 1), (2, 1), (4, 1), (8, 1), (2, 2), (4, 2))
    ]
    grid = LayoutGrid.from_layouts(lays)
    for stack_set in ((), ("attention_kernel=unfused",)):
        m = toy_moe()
        w = build(m, grid, False, 1.25, C, toy_sw(m, HW, C, stack_set=stack_set))
        declared = [g for layer in w.layers for g in layer.gemms if g.axes is not None]
        assert {g.name for g in declared} >= {"qkv proj", "out proj", "router", "shared expert up/gate", "mlp down"}
        assert all(g.axes == DENSE_AXES for g in declared)
        for g in declared:
            for x in (g.M, g.N, g.K, g.count):
                v = np.broadcast_to(np.asarray(x, dtype=float), (grid.n,))
                assert np.all(v == v[0]), g.name
        moe = w.layers[-1]
        (up,) = [g for g in moe.gemms if g.name == "expert up/gate"]
        assert up.axes is None and len(set(np.asarray(up.count).tolist())) > 1  # E / ep local experts


def test_gemm_priced_on_declared_axes_equals_every_row():
    """cost._gemm_on prices a declared GEMM on one row per combination and gathers back: bit-identical to
    pricing every row (and a GEMM without declared axes is priced on every row)."""
    from perfmodel.core.ops import Gemm
    from perfmodel.core.price import _gemm_on, gemm_fwd_bwd

    M = np.array([2048.0, 1024, 2048, 1024, 2048])
    g = Gemm("qkv proj", M, 1536.0 + 0 * M, 1024.0 + 0 * M, axes=("tp",))
    first, inv = np.array([0, 1]), np.array([0, 1, 0, 1, 0])
    for rec in (g, Gemm("expert", M, 512.0, 1024.0, 4.0)):
        got = _gemm_on(rec, HW, "bf16", C, lambda axes: (first, inv))
        want = gemm_fwd_bwd(rec, HW, "bf16", C)
        assert all(np.array_equal(a, b) for a, b in zip(got, want))


# ---- stack-shaped records: separate projections, attention occupancy, split TP, torchao float8, op-level SAC ----


def test_separate_projections_shapes():
    """projections = separate (torchtitan Attention.forward: wq, wk, wv; FeedForward.forward: w2(silu(w1 x) * w3 x)):
    the same Megatron-Core shapes as the fused GEMMs, one GEMM per weight. Toy dense at tp 2, T = 2048 rows, h 1024:
    wq N = 8 heads x 128 / tp = 512, wk and wv N = 2 KV heads x 128 / tp = 128 each (the fused 768 split 512 + 128 +
    128), all K = h; wo K = 1024 / tp = 512; w1 and w3 N = 4096 / tp = 2048 each (the fused up/gate 4096 split in
    two), K = h; w2 K = 4096 / tp = 2048, N = h. Column-parallel GEMMs N / tp, row-parallel K / tp (Shoeybi et al.
    2019 §3)."""
    layer = _build_sw(toy_dense(), ("projections=separate",)).layers[0]
    s = {k: v[:3] for k, v in _shapes(layer).items()}
    assert s == {
        "q proj": (2048, 512, 1024),
        "k proj": (2048, 128, 1024),
        "v proj": (2048, 128, 1024),
        "out proj": (2048, 1024, 512),
        "mlp gate": (2048, 2048, 1024),
        "mlp up": (2048, 2048, 1024),
        "mlp down": (2048, 1024, 2048),
    }
    assert [g.name for g in layer.gemms][:4] == ["q proj", "k proj", "v proj", "out proj"]  # execution order
    # at tp 4 every column-parallel N and row-parallel K halves again; h stays
    s4 = {k: v[:3] for k, v in _shapes(_build_sw(toy_dense(), ("projections=separate",), tp=4).layers[0]).items()}
    assert s4["q proj"] == (2048, 256, 1024) and s4["k proj"] == s4["v proj"] == (2048, 64, 1024)
    assert s4["out proj"] == (2048, 1024, 256) and s4["mlp gate"] == s4["mlp up"] == (2048, 1024, 1024)
    assert s4["mlp down"] == (2048, 1024, 1024)


def test_attention_occupancy_work_items():
    """The flash-attention call's independent work items (kernels.work_items): one thread block per q tile of
    constants.ATTENTION_TILE_ROWS = 128 query rows (FlashAttention-2 §3.3) per local head per sequence of the
    micro-batch: mbs x heads / tp x ceil(seq / cp / 128). Toy dense (8 heads)."""

    def items(**lay):
        (a,) = _build(toy_dense(), **lay).layers[0].attention
        return float(np.ravel(a.items)[0])

    assert items() == 1 * (8 / 2) * 16  # mbs 1, tp 2, 2048 rows / 128 = 16 tiles
    # 2064 rows = 16 x 128 + 16: a 17th, partial tile (a tile of 129 rows or more would hold them in 16)
    assert items(seq=2064) == 4 * 17
    # 3000 local rows: 23.4 tiles -> 24 (a partial tile is a whole thread block); mbs 2 sequences
    assert items(seq=3000, mbs=2) == 2 * 4 * 24
    # cp 2: each rank holds 1500 rows of each sequence -> ceil(11.7) = 12 tiles; tp 4: 2 local heads
    assert items(seq=3000, mbs=2, cp=2, gpus=16, tp=4) == 2 * 2 * 12


def test_split_tp_records_move_the_block_activation():
    """sw.split_tp (op-level SAC here): each block's TP collectives as four records (parallel/tp.split_pair), every
    one over the block's gathered activation T x h x 2 B = 2048 x 1024 x 2 = 4,194,304 B; under torchao's float8
    tensorwise TP styles (fp8_linear = torchao, current scaling, FP8 GEMMs) the forward input all-gather moves the
    float8 input, T x h x 1 B, and nothing else changes."""
    ab = 2048 * 1024 * 2

    def nbytes(layer):
        return {x.name: float(np.ravel(x.nbytes)[0]) for x in layer.comms if " TP: " in x.name}

    names = [
        f"{blk} TP: {r}"
        for blk in ("attention", "MLP")
        for r in (
            "input all-gather",
            "input-gradient reduce-scatter",
            "output reduce-scatter",
            "output-gradient all-gather",
        )
    ]
    got = nbytes(_build_sw(toy_dense(), ("selective_ac=op",)).layers[0])
    assert got == {n: ab for n in names}
    ao = ("selective_ac=op", "fp8_linear=torchao")
    m = toy_dense()
    f8 = build(m, LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2)), True, 1.25, C, toy_sw(m, HW, C, stack_set=ao))
    assert nbytes(f8.layers[0]) == {n: (ab / 2 if n.endswith("TP: input all-gather") else ab) for n in names}


def _fp8_stream(sets):
    m = toy_dense()
    w = build(m, LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2)), True, 1.25, C, toy_sw(m, HW, C, stack_set=sets))
    return _streams(w.layers[0])["fp8 casts"][:2]


def test_torchao_float8_casts():
    """torchao's float8 linear (fp8_linear = torchao) on the toy dense layer at tp 2 (GEMMs [M, N, K]: qkv [2048, 768,
    1024], out [2048, 1024, 512], up/gate [2048, 4096, 1024], down [2048, 1024, 2048]):
      sum M K = 2048 x 4608 = 9,437,184 (GEMM inputs), sum M N = 2048 x 6912 = 14,155,776 (output gradients),
      sum N K = 768 x 1024 + 1024 x 512 + 4096 x 1024 + 1024 x 2048 = 7,602,176 (weights).
    fp8_cast_bytes 4 B per element (toy constants), + 2 B amax read under current (tensorwise) scaling.
    - current: forward casts the inputs (6 x sum M K); backward the output gradients (6 x sum M N) and, the bf16
      input being what torchao saves, the input again for wgrad (6 x sum M K).
    - mxfp8: no separate amax pass (4 B); backward adds the output gradient cast along its second axis (4 x sum M N).
    - rowwise: as mxfp8, plus the gradient GEMMs' fp32 output rescaled, 8 B per dgrad [M, K] and wgrad [N, K]
      element (2 B more written + 4 B read + 2 B written): 8 x (sum M K + sum N K)."""
    mk, mn, nk = 2048 * 4608, 2048 * 6912, 7602176
    assert _fp8_stream(("fp8_linear=torchao",)) == (6 * mk, 6 * mn + 6 * mk)
    assert _fp8_stream(("fp8_linear=torchao", "fp8_recipe=mxfp8")) == (4 * mk, 4 * mn + 4 * mk + 4 * mn)
    rw = _fp8_stream(("fp8_linear=torchao", "fp8_recipe=rowwise"))
    assert rw == (4 * mk, 4 * mn + 4 * mk + 4 * mn + 8 * (mk + nk))
    # Transformer Engine's linear (the default) casts each input once and saves the quantised copy: no extra
    assert _fp8_stream(()) == (6 * mk, 6 * mn)


def test_op_sac_records():
    """torchtitan's op-level SAC on the toy dense layer at tp 2 (fused projections: mm 1 qkv, 2 out, 3 up/gate, 4 down;
    the odd ones saved): saved for backward are the block input, the SDPA outputs (attention output, log-sum-exp:
    core_attn), the saved mms' outputs 2 B x M x N (qkv 2048 x 768, up/gate 2048 x 4096) and each block's output
    reduce-scatter output, the gathered 4,194,304 B over tp = 2,097,152 B; every other saved tensor is recomputed
    (module op_sac). At tp 1 the reduce-scatter moves nothing and its output is the row-parallel GEMM's own: 0 B."""
    layer = _build_sw(toy_dense(), ("selective_ac=op",)).layers[0]
    assert [(g.name, g.module) for g in layer.gemms] == [
        ("qkv proj", ""),
        ("out proj", "op_sac"),
        ("mlp up/gate", ""),
        ("mlp down", "op_sac"),
    ]
    base = _saved(_build(toy_dense()).layers[0])
    keep = {"input", "core_attn"}
    want = [(n, b, mod if mod in keep else "op_sac") for n, b, mod in base] + [
        ("qkv proj output (op-SAC saved mm)", 2 * 2048 * 768, "sac_saved"),
        ("mlp up/gate output (op-SAC saved mm)", 2 * 2048 * 4096, "sac_saved"),
        ("attention TP: output reduce-scatter (op-SAC saved)", 2048 * 1024 * 2 / 2, "sac_saved"),
        ("MLP TP: output reduce-scatter (op-SAC saved)", 2048 * 1024 * 2 / 2, "sac_saved"),
    ]
    assert _saved(layer) == want
    one = _saved(_build_sw(toy_dense(), ("selective_ac=op",), tp=1).layers[0])
    assert [(n, b) for n, b, _ in one if "reduce-scatter" in n] == [
        ("attention TP: output reduce-scatter (op-SAC saved)", 0.0),
        ("MLP TP: output reduce-scatter (op-SAC saved)", 0.0),
    ]
    assert [(n, b) for n, b, _ in one if "saved mm" in n] == [
        ("qkv proj output (op-SAC saved mm)", 2 * 2048 * 1536),  # tp 1: the whole 1024 + 512 columns
        ("mlp up/gate output (op-SAC saved mm)", 2 * 2048 * 8192),
    ]


def test_te_unfused_attention_scores_mask_and_saved_bytes():
    # Transformer Engine's UnfusedDotProductAttention at dropout 0 (constants.TE_UNFUSED_*): between the two
    # batched GEMMs 5 B forward (softmax reads the scores and the explicit mask, writes the probabilities) and
    # 6 B backward per score element, the probabilities (2 B) saved; the causal mask built every call, 81 B per
    # (query, key) position shared by the heads, in 11 kernels. Megatron's path with dropout keeps 9 / 11 / 5 B and
    # builds no mask. Toy MLA at tp 2: 8 / 2 heads x mbs 1, s = 2048, all layers global.
    s2 = 2048.0 * 2048.0
    te = _build_sw(toy_mla(), ("attention_kernel=te_unfused",)).layers[0]
    mg = _build_sw(toy_mla(), ("attention_kernel=unfused",)).layers[0]
    st, sm = _streams(te), _streams(mg)
    assert st["attention scores (unfused)"] == (5 * 4 * s2, 6 * 4 * s2, 2, 2)
    assert sm["attention scores (unfused)"] == (9 * 4 * s2, 11 * 4 * s2, 2, 2)
    assert st["causal mask build (unfused)"] == (81 * s2, 0.0, 11, 0.0)
    assert "causal mask build (unfused)" not in sm
    assert [x for x in _saved(te) if x[0] == "attention scores (unfused)"] == [
        ("attention scores (unfused)", 2 * 4 * s2, "core_attn")
    ]
    assert [x for x in _saved(mg) if x[0] == "attention scores (unfused)"] == [
        ("attention scores (unfused)", 5 * 4 * s2, "core_attn")
    ]
    # the same QK^T / PV GEMMs either way
    assert _shapes(te)["QK^T (unfused)"] == _shapes(mg)["QK^T (unfused)"]
