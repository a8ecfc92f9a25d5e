"""predict.py end to end on the toy dense model (tests/toy.py), every breakdown term computed by hand.

The toy GPU here has 100 TB/s HBM and shape-independent GEMM efficiency (k_half = mn_half = 0: 0.8 x 0.5 of
1 PFLOP/s = 4e14 FLOP/s), so every GEMM is compute-bound and a layer's GEMMs cost 6 T n_mm / 4e14 plus 12
kernel launches (4 GEMMs x fprop, dgrad, wgrad) of 10 us. Per layer, tp = t, T = 2048 rows:
  n_mm = attention 1024 x (1024 + 512) + 1024 x 1024 = 2,621,440 + SwiGLU 3 x 1024 x 4096 = 12,582,912 -> 15,204,352
  attention: 2 x 8 heads x 256 / t FLOPs per query-key x 2048 queries x 1024.5 keys; size 0.8 x 1024.5 / 2024.5;
             forward at 0.5 x 1e15 x size, backward 2.5x the FLOPs at 0.4 x 1e15 x size, + 10 us each
  streams:   norms 2 x 4 h Ts + residual 12 h Ts + RoPE 4 x 1280 / t T + SwiGLU 6 x 4096 / t T = 102,760,448 / t B
             forward, twice that backward, at 0.8 x 1e14 B/s; 12 + 20 kernel launches
Step = (m + pp - 1) stage times (1F1B) + exposed DP + optimizer + 10 ms (Narayanan et al. 2021 §2.2)."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_consts, toy_dense, toy_hw

from perfmodel.api import predict, predict_many
from perfmodel.core.calibration import constants
from perfmodel.core.compute import gemm_time
from perfmodel.core.predict import BREAKDOWN, Options, harmonic, predict_grid, step_overhead
from perfmodel.core.workload import attention_gemms, mlp_gemms
from perfmodel.specs.counts import param_counts
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.layout import Layout, LayoutGrid
from perfmodel.specs.model import load_model

HW = toy_hw(gemm_k_half=0.0, gemm_mn_half=0.0)
HW = HW.model_copy(update={"memory": HW.memory.model_copy(update={"hbm_bandwidth": 1e14})})
C = toy_consts()
REL = 1e-9
NMM, LAYER_PARAMS, EMB, V = 15204352, 15206400, 32768000, 32000
SIZE = 0.8 * 1024.5 / 2024.5


def gemm(t):  # forward, backward of one layer's 4 GEMMs
    f = 2 * 2048 * NMM / t / 4e14
    return f + 4e-5, 2 * f + 8e-5


def attn(t):
    F = 2 * 8 * 256 / t * 2048 * 1024.5
    return F / (0.5e15 * SIZE) + 1e-5, 2.5 * F / (0.4e15 * SIZE) + 1e-5


def mem(t):
    b = 102760448 / t
    return b / 8e13 + 12e-5, 2 * b / 8e13 + 20e-5


def head(t):  # LM head GEMM (BF16) fwd + bwd, logits + loss stream, its TP gather pair (1 + 1 calls)
    sp = 0.0 if t == 1 else 2 * ((t - 1) / t * 2048 * 1024 * 2 / 2e11 + 10e-6 * (1 + np.log2(t)))
    return 6 * 2048 * V * 1024 / t / 4e14 + 3e-5 + (12 * 2048 * V / t + 8 * 1024 * 2048) / 8e13 + 6e-5 + sp


def embed(t):
    return 8 * 1024 * 2048 / t / 8e13 + 2e-5


# the worked cases below take every backward TP collective as synchronous (stack tp_bwd_async = false, as
# Megatron-LM 2021 and torchtitan run it); test_async_backward_tp_hides_under_the_column_gemms works the
# asynchronous split of Megatron-Core and Transformer Engine (parallel/tp.py) by hand
SYNC = ("tp_bwd_async=false",)


def _predict(opts=None, **kw):
    lay = dict(gpus=1, gbs=2, seq=2048)
    lay.update(kw)
    return predict_grid(toy_dense(), HW, LayoutGrid.of(Layout(**lay)), opts or Options(consts=C, stack_set=SYNC))


def test_single_gpu_step_by_hand():
    p = _predict()
    b = {k: float(v[0]) for k, v in p.breakdown_s.items()}
    m = 2  # micro-batches: 2 sequences, mbs 1, dp 1
    assert b["gemm"] == pytest.approx(m * 4 * sum(gemm(1)), rel=REL)
    assert b["attention"] == pytest.approx(m * 4 * sum(attn(1)), rel=REL)
    assert b["memory_bound"] == pytest.approx(m * 4 * sum(mem(1)), rel=REL)
    assert b["embedding_head_mtp"] == pytest.approx(m * (embed(1) + head(1)), rel=REL)
    # optimizer over all 126,362,624 parameters (no sharding at dp 1): (24 + 2) B of Adam step per parameter
    # of the shard + 4 x 2 B of grad zero / norm / clip per parameter, 10 launches
    opt = 34 * (4 * LAYER_PARAMS + 2 * EMB + 1024) / 8e13 + 10 * 1e-5
    assert b["optimizer"] == pytest.approx(opt, rel=REL)
    for k in ("recompute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "stage_imbalance", "pipeline_bubble", "dp_comm"):
        assert b[k] == 0.0, k
    assert b["step_overhead"] == 0.01
    stage = 4 * (sum(gemm(1)) + sum(attn(1)) + sum(mem(1))) + embed(1) + head(1)
    step = m * stage + opt + 0.01
    assert float(p.step_time_s[0]) == pytest.approx(step, rel=REL)
    assert list(b) == list(BREAKDOWN)
    # MFU: 6 x (4 x 15,204,352 + head 32,768,000) + 3 x 4 layers x 2 x 8 x 256 x 1024.5 FLOPs per token
    fpt = 6 * (4 * NMM + V * 1024) + 3 * 4 * 2 * 8 * 256 * 1024.5
    assert float(p.model_flops_per_token[0]) == pytest.approx(fpt, rel=REL)
    assert float(p.mfu[0]) == pytest.approx(fpt * 4096 / (step * 1e15), rel=REL)
    assert float(p.hfu[0]) == pytest.approx(float(p.mfu[0]), rel=REL)
    assert float(p.tokens_per_s_per_gpu[0]) == pytest.approx(4096 / step, rel=REL)


def test_step_overhead_waits_for_the_slowest_rank():
    # the step pays the expected maximum of N ranks' exponential host work of mean 0.01 s: 0.01 x H_N
    assert float(harmonic(1)) == 1.0
    assert float(harmonic(4)) == pytest.approx(1 + 1 / 2 + 1 / 3 + 1 / 4, rel=1e-12)
    exact = lambda n: float(np.sum(1.0 / np.arange(1, n + 1)))
    for n in (64, 65, 100, 4096, 12288):  # the exact table and the series meet without a step
        assert float(harmonic(n)) == pytest.approx(exact(n), rel=1e-9), n
    assert np.all(np.diff(harmonic(np.arange(1, 200))) > 0)
    p = _predict(gpus=4, gbs=8)  # dp 4, 2 micro-batches each
    assert float(p.breakdown_s["step_overhead"][0]) == pytest.approx(0.01 * (25 / 12), rel=1e-12)
    assert float(step_overhead(0.01, 1)) == 0.01
    # doubling the job adds ~ln 2 of the mean: 4,096 -> 8,192 GPUs
    gain = float(step_overhead(0.01, 8192) - step_overhead(0.01, 4096))
    assert gain == pytest.approx(0.01 * np.log(2), rel=1e-3)


def test_recompute_by_hand():
    # full: each layer's forward again in backward (4 layers, 2 micro-batches); HFU counts a third more FLOPs
    full = _predict(recompute="full")
    fwd = gemm(1)[0] + attn(1)[0] + mem(1)[0]
    assert float(full.breakdown_s["recompute"][0]) == pytest.approx(2 * 4 * fwd, rel=REL)
    assert float(full.hfu[0]) == pytest.approx(float(full.mfu[0]) * 4 / 3, rel=REL)
    # selective of Megatron-Core's core_attn module: the core attention forward again; HFU adds its forward FLOPs
    # 4 x 2 x 8 x 256 x 1024.5
    sel = _predict(Options(consts=C, stack_set=("recompute_modules=core_attn",)), recompute="selective")
    assert float(sel.breakdown_s["recompute"][0]) == pytest.approx(2 * 4 * attn(1)[0], rel=REL)
    fpt = float(sel.model_flops_per_token[0])
    assert float(sel.hfu[0]) == pytest.approx(float(sel.mfu[0]) * (fpt + 4 * 2 * 8 * 256 * 1024.5) / fpt, rel=REL)
    # the recomputed forward runs on the stage's critical path: step = m x (stage + 4 layers' forward) + optimizer
    # + overhead, and the breakdown still adds up to the step
    stage = 4 * (sum(gemm(1)) + sum(attn(1)) + sum(mem(1))) + embed(1) + head(1)
    opt = 34 * (4 * LAYER_PARAMS + 2 * EMB + 1024) / 8e13 + 10 * 1e-5
    step = 2 * (stage + 4 * fwd) + opt + 0.01
    assert float(full.step_time_s[0]) == pytest.approx(step, rel=REL)
    assert sum(float(v[0]) for v in full.breakdown_s.values()) == pytest.approx(step, rel=REL)


def test_context_parallel_ring_by_hand():
    # cp 2 on 2 GPUs (dp 1, 2 micro-batches): each rank holds T = 2048 / 2 = 1,024 tokens and its ring sends its
    # K/V once per step, cp - 1 = 1 step (Liu et al. 2023, Ring Attention §3): 1,024 x 2 x 2 KV heads x 128 x 2 B
    # = 1,048,576 B over NVLink at NCCL's per-pair 80 GB/s (below 0.5 x 400 GB/s) + 10 us; forward once, backward twice (K/V and their
    # gradients). 4 layers x 2 micro-batches; cp_overlap 0.25 of it hides under the layer's compute
    one = 1024 * 512 * 2 / 8e10 + 10e-6  # NCCL's per-pair send/recv rate (K.NCCL_P2P_PEER_BW)
    p = _predict(gpus=2, gbs=2, cp=2)
    raw = float(p.comm_raw_s["cp_comm"][0])
    assert raw == pytest.approx(2 * 4 * (1 + 2) * one, rel=REL)
    assert float(p.breakdown_s["cp_comm"][0]) == pytest.approx(0.75 * raw, rel=REL)


# tp 2, pp 2, dp 2 on 8 GPUs, 8 sequences: 4 micro-batches; ranks hold 2 layers, rank 0 the embedding,
# rank 1 the head. Communication (toy cluster, tests/core/test_comm.py):
TP_PAIR = 2048 * 1024 * 2 / 2 / 2e11 + 20e-6  # one SP all-gather over tp 2: 30.48576 us
TP_LAYER = 2 * (2 + 2) * TP_PAIR  # attention + MLP pairs, 2 calls forward, 2 backward
P2P = 2 * (1024 * 1024 * 2 / 8e10 + 10e-6)  # activation forward, gradient backward; peers 4 apart, at
# NCCL's per-pair send/recv rate (K.NCCL_P2P_PEER_BW 8e10, below the toy link's 2e11)
EMPTY_EXPERT = 0.0  # a dense model runs no expert collective and pays no latency for one (parallel/dp.py)
PARAMS = (2 * LAYER_PARAMS + EMB) / 2, (2 * LAYER_PARAMS + 1024 + EMB) / 2  # per GPU, ranks 0 and 1


def _ranks(t=2, tp_share=0.5, pp_share=0.5):
    layer = sum(gemm(t)) + sum(attn(t)) + sum(mem(t))
    tp_exposed = (1 - tp_share) * TP_LAYER  # hideable half of 244 us fits under the ~0.6 ms of compute
    base = 2 * (layer + tp_exposed)
    r0 = base + embed(t)
    r1 = base + head(t)
    return r0 + (1 - pp_share) * P2P, r1 + (1 - pp_share) * P2P


def test_pipeline_and_communication_by_hand():
    p = _predict(gpus=8, gbs=8, tp=2, pp=2)
    b = {k: float(v[0]) for k, v in p.breakdown_s.items()}
    raw = {k: float(v[0]) for k, v in p.comm_raw_s.items()}
    # non-interleaved 1F1B waits on every send/recv (Megatron-Core p2p_communication._communicate,
    # wait_on_reqs=True): the p2p is all exposed whatever pp_overlap says (test_interleaved_bubble hides half)
    r0, r1 = _ranks(pp_share=0.0)
    m = 4
    assert b["tp_comm"] == pytest.approx(m * 2 * 0.5 * TP_LAYER, rel=REL)
    assert raw["tp_comm"] == pytest.approx(m * 2 * TP_LAYER, rel=REL)
    assert b["pp_comm"] == pytest.approx(m * P2P, rel=REL) and raw["pp_comm"] == pytest.approx(m * P2P, rel=REL)
    assert b["embedding_head_mtp"] == pytest.approx(m * (embed(2) + head(2)) / 2, rel=REL)
    # 1F1B with unequal stages: (m - 1) max + sum; the bubble is the rest beyond m x max
    assert b["pipeline_bubble"] == pytest.approx(min(r0, r1), rel=REL)
    assert b["stage_imbalance"] == pytest.approx(m * (max(r0, r1) - (r0 + r1) / 2), rel=REL)
    # distributed optimizer on the rank with more parameters (rank 1): reduce-scatter of bf16 grads and
    # all-gather of bf16 weights over dp 2 (stride tp 2, one domain): 1/2 x 2 B x params / 2e11 + 20 us each,
    # half hideable, windows (2/3 and 1/3 of the stage time) long enough. A dense model has no expert
    # collective (it used to pay 30 us of latency for an empty one: found by this test, fixed in dp.py)
    rs = PARAMS[1] * 2 / 2 / 2e11 + 20e-6 + EMPTY_EXPERT
    assert b["dp_comm"] == pytest.approx(0.5 * (rs + rs), rel=REL) and raw["dp_comm"] == pytest.approx(2 * rs, rel=REL)
    opt = (26 * PARAMS[1] / 2 + 8 * PARAMS[1]) / 8e13 + 1e-4
    assert b["optimizer"] == pytest.approx(opt, rel=REL)
    # the step's end waits for the slowest of 8 ranks' host work: 0.01 x H_8 (predict.step_overhead)
    wait = 0.01 * (1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6 + 1 / 7 + 1 / 8)
    assert b["step_overhead"] == pytest.approx(wait, rel=1e-12)
    step = (m - 1) * max(r0, r1) + r0 + r1 + 0.5 * 2 * rs + opt + wait
    assert float(p.step_time_s[0]) == pytest.approx(step, rel=REL)
    assert sum(b.values()) == pytest.approx(step, rel=REL)


def test_fsdp_gathers_every_microbatch():
    p = _predict(gpus=8, gbs=8, tp=2, pp=2, fsdp=True)
    # one collective per FSDP unit (dp.collective_calls): rank 1's 2 layers and its root, 3 latencies of 20 us
    rs = PARAMS[1] * 2 / 2 / 2e11 + 3 * 20e-6 + EMPTY_EXPERT
    # per micro-batch 2 gathers + 1 scatter, half hideable under the stage time: 4 x 0.5 x 3 rs
    assert float(p.breakdown_s["dp_comm"][0]) == pytest.approx(4 * 0.5 * 3 * rs, rel=REL)
    assert float(p.comm_raw_s["dp_comm"][0]) == pytest.approx(4 * 3 * rs, rel=REL)


def test_full_recompute_includes_exposed_tp_forward():
    # recomputing a layer's forward repeats its forward TP gathers: 2 pairs x 2 calls, half exposed
    p = _predict(gpus=8, gbs=8, tp=2, pp=2, recompute="full")
    fwd = gemm(2)[0] + attn(2)[0] + mem(2)[0] + 0.5 * 4 * TP_PAIR
    assert float(p.breakdown_s["recompute"][0]) == pytest.approx(4 * 2 * fwd, rel=REL)


def test_overlap_switches():
    # no TP or PP overlap: all of it exposed
    opts = Options(consts=C.with_(tp_overlap=0.0, pp_overlap=0.0), stack_set=SYNC)
    p = _predict(opts, gpus=8, gbs=8, tp=2, pp=2)
    assert float(p.breakdown_s["tp_comm"][0]) == pytest.approx(4 * 2 * TP_LAYER, rel=REL)
    assert float(p.breakdown_s["pp_comm"][0]) == pytest.approx(4 * P2P, rel=REL)
    r0, r1 = _ranks(tp_share=0.0, pp_share=0.0)
    assert float(p.breakdown_s["pipeline_bubble"][0]) == pytest.approx(min(r0, r1), rel=REL)


def test_interleaved_bubble():
    # vp 2: chunks of 1 layer; m = 4 a multiple of pp. Bubble (sum - max) / vp (Narayanan Eq. 2); p2p per
    # micro-batch doubles (one send per chunk boundary each way)
    p = _predict(gpus=8, gbs=8, tp=2, pp=2, vp=2)
    r0, r1 = _ranks()
    r0, r1 = r0 + 0.5 * P2P, r1 + 0.5 * P2P
    assert float(p.breakdown_s["pipeline_bubble"][0]) == pytest.approx(min(r0, r1) / 2, rel=REL)
    assert float(p.comm_raw_s["pp_comm"][0]) == pytest.approx(4 * 2 * P2P, rel=REL)


def test_take():
    p = predict_grid(
        toy_dense(),
        HW,
        LayoutGrid.from_layouts([Layout(gpus=1, gbs=2, seq=2048), Layout(gpus=8, gbs=8, seq=2048, tp=2, pp=2)]),
        Options(consts=C),
    )
    one = p.take(np.array([1]))
    assert float(one.step_time_s[0]) == float(p.step_time_s[1])
    assert float(one.breakdown_s["pp_comm"][0]) == float(p.breakdown_s["pp_comm"][1])


def test_shared_overlap_budget_spills():
    # NVLink at 40 GB/s (busbw 20 GB/s) and all TP communication hideable: one SP gather over tp 2 takes
    # 4194304 / 2 / 2e10 + 20 us; a layer's 8 of them outlast its compute, and only the excess is exposed
    slow = HW.model_copy(update={"scale_up": HW.scale_up.model_copy(update={"bandwidth": 4e10})})
    opts = Options(consts=C.with_(tp_overlap=1.0), stack_set=SYNC)
    p = predict_grid(toy_dense(), slow, LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2, pp=2)), opts)
    raw = 8 * (4194304 / 2 / 2e10 + 20e-6)
    compute = sum(gemm(2)) + sum(attn(2)) + sum(mem(2))
    assert raw > compute
    assert float(p.breakdown_s["tp_comm"][0]) == pytest.approx(4 * 2 * (raw - compute), rel=REL)


def test_async_backward_tp_hides_under_the_column_gemms():
    """Megatron-Core / TE backward (tp_bwd_async, sequence parallelism): per block the output gradient's
    all-gather stays synchronous (hidden by the stack's tp_overlap share like the forward pair), and the input
    re-gather + dgrad reduce-scatter (2 calls) run under the column-parallel GEMM's dgrad + wgrad, exposed
    only beyond them: max(0, 2 TP_PAIR - its backward). Toy tp 2 (T = 2048, h 1024):
      attention: QKV N = (1024 + 512) / 2 = 768, K 1024: backward 2 x 2 x 2048 x 768 x 1024 / 4e14 + 2 x 10 us
                 = 36.08 us < 2 TP_PAIR = 60.97 us: 24.89 us exposed
      MLP: up/gate N = 2 x 4096 / 2 = 4096: backward 2 x 2 x 2048 x 4096 x 1024 / 4e14 + 20 us = 105.9 us:
           all hidden
    So per layer and micro-batch: 0.5 x (2 x 2 + 2 x 1) TP_PAIR + 24.89 us, 4 micro-batches x 2 layers per
    rank; raw: 2 blocks x (2 + 1 + 2) calls = 10 TP_PAIR per layer (the synchronous split's 8, plus the
    input all-gather wgrad needs: Megatron saves the sequence-sharded input and gathers it again)."""
    p = _predict(Options(consts=C), gpus=8, gbs=8, tp=2, pp=2)
    qkv_b = 2 * 2 * 2048 * 768 * 1024 / 4e14 + 2e-5
    up_b = 2 * 2 * 2048 * 4096 * 1024 / 4e14 + 2e-5
    assert qkv_b < 2 * TP_PAIR < up_b
    per_layer = 0.5 * (2 * 2 + 2 * 1) * TP_PAIR + (2 * TP_PAIR - qkv_b)
    assert float(p.breakdown_s["tp_comm"][0]) == pytest.approx(4 * 2 * per_layer, rel=REL)
    assert float(p.comm_raw_s["tp_comm"][0]) == pytest.approx(4 * 2 * 10 * TP_PAIR, rel=REL)
    # the synchronous split exposes more: 0.5 x 8 TP_PAIR per layer
    sync = _predict(gpus=8, gbs=8, tp=2, pp=2)
    assert float(sync.breakdown_s["tp_comm"][0]) == pytest.approx(4 * 2 * 0.5 * TP_LAYER, rel=REL)
    assert float(p.step_time_s[0]) < float(sync.step_time_s[0])


def _moe(**kw):
    from toy import toy_moe

    moe = dict(num_experts=16, top_k=2, expert_intermediate_size=512, shared_experts=1, shared_intermediate_size=1024)
    return toy_moe(moe=moe, **kw)  # as toy_moe, all 4 layers MoE


def test_mtp_head_by_relation():
    # DeepSeek-V3 §2.2: an MTP module runs one more layer of the last kind, its 2h -> h projection
    # (6 T h 2h FLOPs fwd + bwd at 4e14 + 3 launches) and the head again, on the last stage
    lay = LayoutGrid.of(Layout(gpus=1, gbs=2, seq=2048))
    base = predict_grid(_moe(), HW, lay, Options(consts=C, routing="balanced"))
    mtp = predict_grid(_moe(mtp_layers=1), HW, lay, Options(consts=C, routing="balanced"))
    b = {k: float(v[0]) for k, v in base.breakdown_s.items()}
    layer = sum(b[k] for k in ("gemm", "attention", "memory_bound", "tp_comm", "cp_comm", "ep_comm")) / (2 * 4)
    head0 = b["embedding_head_mtp"] / 2 - embed(1)
    proj = 6 * 2048 * 1024 * 2048 / 4e14 + 3e-5
    expect = 2 * (embed(1) + head0 + layer + proj + head0)
    assert float(mtp.breakdown_s["embedding_head_mtp"][0]) == pytest.approx(expect, rel=REL)


def test_optimizer_counts_expert_parameters():
    # toy MoE with 4 MoE layers on one GPU: 65,536,000 + 1,024 + 4 x (4,196,352 + 28,327,936) = 195,634,176
    # parameters, 100,663,296 of them experts; no sharding: 34 B each (26 B Adam step + 8 B grad zero/norm/clip)
    p = predict_grid(_moe(), HW, LayoutGrid.of(Layout(gpus=1, gbs=2, seq=2048)), Options(consts=C))
    assert float(p.breakdown_s["optimizer"][0]) == pytest.approx(34 * 195634176 / 8e13 + 1e-4, rel=REL)
    # ep 2 on 2 GPUs (edp 1): experts / 2 per GPU, dense (94,970,880) replicated over dp 2 and sharded by the
    # distributed optimizer: Adam on 94,970,880 / 2 + 50,331,648, grad passes over 94,970,880 + 50,331,648
    p = predict_grid(_moe(), HW, LayoutGrid.of(Layout(gpus=2, gbs=2, seq=2048, ep=2)), Options(consts=C))
    d, e = 195634176 - 100663296, 100663296 / 2
    assert float(p.breakdown_s["optimizer"][0]) == pytest.approx(
        (26 * (d / 2 + e) + 8 * (d + e)) / 8e13 + 1e-4, rel=REL
    )


def test_memory_single_gpu_and_the_fits_boundary():
    # 126,362,624 parameters x (2 + 2 + 12) B; 4 layers x 77,660,160 B saved (tp 1) + the embedding output
    # 2 x 1024 x 2048; the bf16 logits of TE's fused cross-entropy (the default stack's) 2 x 2048 x 32000; 1 GB
    # reserved; bf16 dummy wgrads (TE
    # get_dummy_wgrad) of the layer's 4 weight shapes, qkv 1536 x 1024, proj 1024 x 1024, fc1 8192 x 1024,
    # fc2 1024 x 4096, and the head 32000 x 1024
    dummies = 2 * (1536 * 1024 + 1024 * 1024 + 8192 * 1024 + 1024 * 4096 + 32000 * 1024)
    need = 16 * 126362624 + 4 * 77660160 + 4194304 + 131072000 + 1e9 + dummies
    p = _predict()
    assert float(p.memory_bytes_per_gpu[0]) == pytest.approx(need, rel=REL)
    exact = HW.model_copy(update={"memory": HW.memory.model_copy(update={"hbm_bytes": need})})
    lay = LayoutGrid.of(Layout(gpus=1, gbs=2, seq=2048))
    assert bool(predict_grid(toy_dense(), exact, lay, Options(consts=C)).fits[0])  # exactly full fits
    short = HW.model_copy(update={"memory": HW.memory.model_copy(update={"hbm_bytes": need - 1})})
    assert not bool(predict_grid(toy_dense(), short, lay, Options(consts=C)).fits[0])


def test_dp_and_optimizer_from_the_rank_that_finishes_last():
    # The step's DP and optimizer times are those of the rank whose dp + optimizer is largest. Toy MoE with a
    # 5120-wide dense FFN on 32 GPUs, tp 2, pp 2, dp 8, ep 8 (edp 2). Per GPU:
    #   rank 0: layer 0 (dense: 4,196,352 + 3 x 1024 x 5120 = 19,924,992) + layer 1 (MoE: 7,358,464 dense,
    #           25,165,824 experts) + embedding 32,768,000: dense 60,051,456 / 2, experts 25,165,824 / 8
    #   rank 1: 2 MoE layers + final norm + head: dense 47,485,952 / 2, experts 50,331,648 / 8
    d, e = (60051456 / 2, 47485952 / 2), (25165824 / 8, 50331648 / 8)
    # DP (bf16 grads and weights, RS + AG, half hideable): dense over dp 8, 2 apart (4 per domain, 2 domains:
    # min(2e11, 4 x 4e10) = 1.6e11, NCCL's ring latency 10 + 6 x 3.4 + 10 us); experts over edp 2, 8 apart (one per
    # domain: 4e10, ring 10 + 10 us); one bucket each (Megatron's 40M-parameter bucket holds every buffer here)
    one = [7 / 8 * 2 * d[r] / 1.6e11 + 40.4e-6 + 1 / 2 * 2 * e[r] / 4e10 + 20e-6 for r in (0, 1)]
    dp = [0.5 * 2 * x for x in one]  # rank 1 communicates more ...
    # optimizer bytes: 26 B per parameter of the shard (dense / 8, experts / 2) + 8 B per parameter held
    opt_bytes = [26 * (d[r] / 8 + e[r] / 2) + 8 * (d[r] + e[r]) for r in (0, 1)]  # ... rank 0 streams more
    assert dp[1] > dp[0] and opt_bytes[0] > opt_bytes[1]
    from toy import toy_moe

    m = toy_moe(ffn=dict(activation="swiglu", intermediate_size=5120))
    lay = LayoutGrid.of(Layout(gpus=32, gbs=16, seq=2048, tp=2, pp=2, ep=8))
    for hbm, r in ((6e11, 1), (5.5e11, 0)):  # the two sides of the tie near 5.8e11 B/s
        hw = toy_hw().model_copy(update={"memory": toy_hw().memory.model_copy(update={"hbm_bandwidth": hbm})})
        opt = [b / (0.8 * hbm) + 1e-4 for b in opt_bytes]
        # a near tie (within 6%): a 10% error in either term would pick the other rank
        assert (dp[r] + opt[r] > dp[1 - r] + opt[1 - r]) and abs((dp[1] - dp[0]) / (opt[0] - opt[1]) - 1) < 0.06
        p = predict_grid(m, hw, lay, Options(consts=toy_consts()))
        assert float(p.breakdown_s["dp_comm"][0]) == pytest.approx(dp[r], rel=REL)
        assert float(p.breakdown_s["optimizer"][0]) == pytest.approx(opt[r], rel=REL)


def test_hybrid_sharding_optimizer_steps_its_group_shard():
    # HSDP (FSDP2 over groups of 4, replicated across the 4 groups) on 16 GPUs, tp 1: every GPU holds and
    # updates 1/4 of the toy dense model's 126,362,624 parameters, as plain FSDP over 4 GPUs does (memory.py
    # keeps 12 B x P / 4 of Adam state): the Adam step streams 26 B per parameter of that shard (24 B state +
    # 2 B bf16 gradient), the grad zero / norm / clip passes 8 B per parameter held; 10 launches of 10 us
    P = 126362624
    want = (26 * P / 4 + 8 * P) / 8e13 + 1e-4
    fsdp = ("fsdp=fsdp2", "fsdp_gather=per_microbatch")
    hsdp = predict_grid(
        toy_dense(),
        HW,
        LayoutGrid.of(Layout(gpus=16, gbs=16, seq=2048, fsdp=True)),
        Options(consts=C, stack_set=fsdp + ("hybrid_shard_group=4",)),
    )
    assert float(hsdp.memory_parts["optimizer"][0]) == pytest.approx(12 * P / 4, rel=REL)
    assert float(hsdp.breakdown_s["optimizer"][0]) == pytest.approx(want, rel=REL)
    plain = predict_grid(
        toy_dense(), HW, LayoutGrid.of(Layout(gpus=4, gbs=4, seq=2048, fsdp=True)), Options(consts=C, stack_set=fsdp)
    )
    assert float(plain.breakdown_s["optimizer"][0]) == pytest.approx(want, rel=REL)


def test_optimizer_steps_the_state_each_gpu_holds():
    # Without the distributed optimizer (optimizer_shard = none: Megatron's local optimizer, torch DDP) every
    # data-parallel rank runs Adam over all its 126,362,624 parameters (memory.py keeps 12 B x P of state on
    # each): 2 GPUs, dp 2, 26 B + 8 B per parameter, not 26 B x P / 2 + 8 B x P
    P = 126362624
    lay = LayoutGrid.of(Layout(gpus=2, gbs=2, seq=2048))
    p = predict_grid(toy_dense(), HW, lay, Options(consts=C, stack_set=("optimizer_shard=none",)))
    assert float(p.memory_parts["optimizer"][0]) == pytest.approx(12 * P, rel=REL)
    assert float(p.breakdown_s["optimizer"][0]) == pytest.approx(34 * P / 8e13 + 1e-4, rel=REL)
    # sharded over dp only (not cp): cp 2, dp 1 holds and steps the whole state too
    p = predict_grid(
        toy_dense(),
        HW,
        LayoutGrid.of(Layout(gpus=2, gbs=2, seq=2048, cp=2)),
        Options(consts=C, stack_set=("optimizer_shard=dp",)),
    )
    assert float(p.memory_parts["optimizer"][0]) == pytest.approx(12 * P, rel=REL)
    assert float(p.breakdown_s["optimizer"][0]) == pytest.approx(34 * P / 8e13 + 1e-4, rel=REL)
    # the distributed optimizer over dp x cp = 2: half of it each
    p = predict_grid(toy_dense(), HW, lay, Options(consts=C))
    assert float(p.breakdown_s["optimizer"][0]) == pytest.approx((26 * P / 2 + 8 * P) / 8e13 + 1e-4, rel=REL)


@pytest.mark.parametrize("rec", ["selective", "full"])
def test_activation_offloading_only_without_recompute(rec):
    # Megatron-Core refuses activation CPU offloading together with recompute (TransformerConfig: 'CPU
    # offloading does not work when activation recomputation is enabled'), as it refuses it at pp > 1: such a
    # layout runs the stack without offloading, so it is priced so, in time and in memory
    hw = HW.model_copy(update={"memory": HW.memory.model_copy(update={"host_bandwidth": 1e9})})
    lay = LayoutGrid.of(Layout(gpus=1, gbs=2, seq=2048, recompute=rec))
    sets = ("recompute_modules=core_attn",)
    off = predict_grid(toy_dense(), hw, lay, Options(consts=C, stack_set=sets + ("cpu_offload_layers=2",)))
    plain = predict_grid(toy_dense(), hw, lay, Options(consts=C, stack_set=sets))
    assert float(off.step_time_s[0]) == float(plain.step_time_s[0])
    assert float(off.memory_bytes_per_gpu[0]) == float(plain.memory_bytes_per_gpu[0])
    # without recompute the 1 GB/s host link is exposed and 2 of the 4 layers' activations (less the one in
    # transit) leave HBM
    lay = LayoutGrid.of(Layout(gpus=1, gbs=2, seq=2048))
    off = predict_grid(toy_dense(), hw, lay, Options(consts=C, stack_set=sets + ("cpu_offload_layers=2",)))
    plain = predict_grid(toy_dense(), hw, lay, Options(consts=C, stack_set=sets))
    assert off.step_time_s[0] > plain.step_time_s[0]
    assert float(plain.memory_parts["activations"][0] - off.memory_parts["activations"][0]) == pytest.approx(
        4 * 77660160 / 4, rel=REL
    )


def test_dualpipe_holds_two_stages_and_pp_plus_one_microbatches():
    """DualPipe (DeepSeek-V3 report §3.2.1, Table 2: parameters 2x, activations PP + 1): toy dense, pp 2 on 2
    GPUs, 8 micro-batches. Each rank runs its own stage one way and its mirror the other way, so both hold
    the 4 layers, the embedding, the final norm and the head copy: 4 x 15,206,400 + 2 x 32,768,000 + 1,024
    parameters, in bf16 weights and gradients (2 + 2 B) and 12 B of Adam state; 1F1B's rank 1 holds half
    the layers, the norm and the head. Activations: pp + 1 = 3 micro-batches of a 2-layer stage (77,660,160 B
    a layer), where 1F1B's last rank holds 1."""
    dual = _predict(Options(consts=C, stack_set=SYNC + ("pipeline_schedule=dualpipe",)), gpus=2, gbs=8, pp=2)
    one = _predict(gpus=2, gbs=8, pp=2)
    both = 4 * LAYER_PARAMS + 2 * EMB + 1024
    assert float(dual.memory_parts["weights"][0]) == pytest.approx(2 * both, rel=REL)
    assert float(dual.memory_parts["gradients"][0]) == pytest.approx(2 * both, rel=REL)
    assert float(dual.memory_parts["optimizer"][0]) == pytest.approx(12 * both, rel=REL)
    assert float(one.memory_parts["weights"][0]) == pytest.approx(2 * (2 * LAYER_PARAMS + 1024 + EMB), rel=REL)
    # the fullest rank is the last (its logits): 3 x 2 layers x 77,660,160 B under DualPipe, 1 x under 1F1B
    assert float(dual.memory_parts["activations"][0]) == pytest.approx(3 * 2 * 77660160, rel=REL)
    assert float(one.memory_parts["activations"][0]) == pytest.approx(1 * 2 * 77660160, rel=REL)


# Properties of the cost model checked against hand-derived cases and published observations.
def test_gpt3_tp4_beats_tp8_on_h100():
    """cost_report.md: GPT-3 175B on 128 H100, TP=4 beats TP=8 (GEMM K 3,072 vs 1,536 after the split)."""
    kw = dict(gpus=128, gbs=256, seq=2048, pp=8, vp=4, mbs=1)
    tp4 = predict("gpt3-175b", "h100-sxm", Layout(tp=4, **kw)).row(0)
    tp8 = predict("gpt3-175b", "h100-sxm", Layout(tp=8, **kw)).row(0)
    assert tp4["tokens_per_s_per_gpu"] > tp8["tokens_per_s_per_gpu"]
    assert tp4["breakdown_s"]["gemm"] < tp8["breakdown_s"]["gemm"]  # shorter K is less efficient


def test_gemm_time_hand_case():
    """Roofline by hand: 2MNK / (peak * eff_best * sustained * size factors) + fixed cost."""
    from perfmodel.specs.kernels import tables

    hw, c = load_hardware("h100-sxm"), constants()
    M = N = K = 8192
    shape = tables("hopper").gemm  # the shape fitted to Hopper's measured GEMM sweep (hardware/kernels/)
    kh, mh = shape.k_half.value, shape.mn_half.value
    eff = hw.efficiency.gemm_bf16 * c.tensor_sustained * K / (K + kh) * M / (M + mh) * N / (N + mh)
    expect = 2 * M * N * K / (hw.peak_flops.bf16 * eff) + c.kernel_fixed_s
    assert float(gemm_time(M, N, K, hw, "bf16", c)) == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("mid", ["llama3-70b", "deepseek-v3", "mixtral-8x7b", "gpt3-175b", "llama4-maverick"])
def test_workload_gemms_match_matmul_params(mid):
    """The GEMM shapes of one layer at tp=1 reproduce the counted matmul parameters (n_mm) of that layer."""
    m = load_model(mid)
    T, one = np.array([1.0]), np.array([1.0])
    attn = sum(float(g.N[0] * g.K[0] * g.count) for g in attention_gemms(m, T, one))
    from perfmodel.specs.counts import attention_params

    assert attn == attention_params(m)[1]
    if m.num_dense_ffn_layers:
        mlp = sum(float(g.N[0] * g.K[0]) for g in mlp_gemms(m, T, m.ffn.intermediate_size, one))
        assert mlp == m.ffn.matrices * m.hidden_size * m.ffn.intermediate_size


def test_vectorised_equals_single():
    m = "llama3-8b"
    lays = [
        Layout(gpus=16, gbs=64, seq=8192, tp=t, pp=p, cp=c, mbs=1)
        for t, p, c in ((1, 1, 2), (2, 2, 1), (4, 1, 1), (1, 2, 1))
    ]
    many = predict_many(m, "h100-sxm", LayoutGrid.from_layouts(lays))
    for i, lay in enumerate(lays):
        one = predict(m, "h100-sxm", lay)
        assert one.step_time_s[0] == many.step_time_s[i]
        assert one.memory_bytes_per_gpu[0] == many.memory_bytes_per_gpu[i]


def test_throughput_identity_and_bounds():
    lay = Layout(gpus=64, gbs=128, seq=8192, tp=8, pp=4, vp=5)
    p = predict("llama3-70b", "h100-sxm", lay)
    r = p.row(0)
    assert r["tokens_per_s_per_gpu"] * r["step_time_s"] == pytest.approx(128 * 8192 / 64)
    assert 0 < r["mfu"] <= r["hfu"] <= 1
    assert all(np.isfinite(v) and v >= 0 for v in r["breakdown_s"].values())
    assert sum(r["breakdown_s"].values()) == pytest.approx(r["step_time_s"], rel=1e-9)


def test_full_recompute_costs_time_and_saves_memory():
    base = dict(gpus=64, gbs=128, seq=8192, tp=8, pp=4, vp=5)
    none = predict("llama3-70b", "h100-sxm", Layout(**base)).row(0)
    full = predict("llama3-70b", "h100-sxm", Layout(recompute="full", **base)).row(0)
    assert full["step_time_s"] > none["step_time_s"]
    assert full["memory_parts_bytes"]["activations"] < none["memory_parts_bytes"]["activations"]
    assert full["hfu"] > full["mfu"]


def test_moe_all_to_all_cheaper_inside_nvl72():
    """cost_report.md: a 64-GPU all-to-all is far faster inside one NVL72 than across 64 H100s."""
    from perfmodel.core import comm

    h100, gb200 = load_hardware("h100-sxm"), load_hardware("gb200-nvl72")
    nbytes = 1e9
    assert comm.all_to_all_time(nbytes, 64, 1, gb200) * 5 < comm.all_to_all_time(nbytes, 64, 1, h100)


def test_param_counts_feed_memory():
    m = load_model("llama3-8b")
    assert param_counts(m).total == 8_030_261_248


def test_factorised_grid_equals_one_layout_at_a_time():
    """The layer kinds are priced once per distinct (tp, cp, ep, etp, mbs, seq) and gathered to layouts
    (#14): every layout of a sampled grid, with repeated and unique combinations, MoE with MTP and dense
    first layers, gets what it gets alone, to 1e-12."""
    from perfmodel.specs.layout import legality
    from perfmodel.specs.model import load_model

    m = load_model("deepseek-v3")
    rng = np.random.default_rng(3)
    n = 400
    pick = lambda v: rng.choice(np.array(v, dtype=np.int64), n)
    g = LayoutGrid(
        gpus=np.full(n, 1024),
        gbs=np.full(n, 4096),
        seq=pick([2048, 4096]),
        tp=pick([1, 2, 4, 8]),
        pp=pick([1, 2, 4, 8, 16]),
        vp=pick([1, 2]),
        cp=pick([1, 2]),
        ep=pick([8, 16, 32, 64]),
        etp=pick([1, 2]),
        mbs=pick([1, 2]),
        fsdp=rng.random(n) < 0.2,
        recompute=pick([0, 1, 2]),
    )
    a = m.attention
    ok = ~np.any(np.stack(list(legality(g, m.num_layers, a.num_heads, a.num_kv_heads, m.moe.num_experts).values())), 0)
    g = g.take(np.flatnonzero(ok)[:120])
    assert g.n >= 60
    many = predict_many(m, "gb200-nvl72", g)
    for i in range(g.n):
        one = predict_many(m, "gb200-nvl72", g.take(np.array([i])))
        assert one.step_time_s[0] == pytest.approx(many.step_time_s[i], rel=1e-12)
        assert one.memory_bytes_per_gpu[0] == pytest.approx(many.memory_bytes_per_gpu[i], rel=1e-12)


# ---- price_kind: the collectives priced by their own mechanism, per-layer SAC ---------------------------------


def _kind(stack, sets=(), m=None, **lay):
    """(KindPrice, price.price_layer's LayerTime, workload, layer, stack) of the toy dense layer under a preset."""
    from perfmodel.core import price
    from perfmodel.core.predict import price_kind
    from perfmodel.core.software import resolve
    from perfmodel.core.workload import build

    m = m or toy_dense()
    sw = resolve(stack, tuple(sets), m.id, False, HW, "bf16", C)
    ws = build(m, LayoutGrid.of(Layout(**{**dict(gpus=8, gbs=8, seq=2048), **lay})), False, 1.0, C, sw)
    (layer,) = ws.layers
    return price_kind(layer, ws, HW, "bf16", C, sw), price.price_layer(layer, HW, "bf16", C, sw), ws, layer, sw


def test_async_tp_seconds_enter_exposed_raw_recompute_and_selective():
    """PyTorch AsyncTP (torchtitan-2025-asynctp, op-level SAC) at tp 2: every TP collective is a split-pair record
    priced by its own mechanism (parallel/tp.async_tp_exposed: exposed fwd, bwd, raw fwd, raw bwd, the forward of
    the all-gathers op-level SAC re-runs), none by the shared overlap budget. So the layer's exposed TP seconds are
    the mechanism's forward + backward, its raw TP seconds the raw forward + backward; full recompute re-runs the
    forward's exposed part (the forward compute + the forward exposure) and selective recompute, besides the
    re-run ops' compute, the re-run all-gathers' exposure."""
    from perfmodel.core.parallel import tp as tp_par

    kp, t, ws, layer, sw = _kind("torchtitan-2025-asynctp", tp=2)
    assert sw.async_tp and sw.selective_ac == "op" and set(t.comm) == {"mechanism"}
    f, b, rf, rb, sel = (float(np.ravel(x)[0]) for x in tp_par.async_tp_exposed(layer, HW, "bf16", C, ws.tp, True))
    assert min(f, b, rf, rb, sel) > 0
    assert float(kp.parts["tp_comm"][0]) == pytest.approx(f + b, rel=REL)
    assert float(kp.raw["tp_comm"][0]) == pytest.approx(rf + rb, rel=REL)
    assert float(kp.fwd[0]) == pytest.approx(float(t.compute_f[0]) + f, rel=REL)
    assert float(kp.selective_f[0]) == pytest.approx(float(t.selective_f[0]) + sel, rel=REL)
    assert float(kp.parts["cp_comm"][0]) == float(kp.raw["cp_comm"][0]) == 0.0  # cp 1: no rotation


def test_cp_allgather_seconds_enter_exposed_raw_and_recompute():
    """PyTorch CP's all-gather rotation (torchtitan-2025, cp_comm torch_allgather) at cp 2, tp 1: the K/V
    all-gathers and the dK/dV hops are priced by their own mechanism (parallel/cp.torch_allgather_exposed: exposed
    fwd, bwd, raw fwd, raw bwd), outside the shared budget: the layer's exposed CP seconds are its forward +
    backward, the raw ones its raw forward + backward, and full recompute re-runs the forward all-gather's exposed
    part with the forward compute (tp 1: no TP seconds)."""
    from perfmodel.core.parallel import cp as cp_par

    kp, t, ws, layer, sw = _kind("torchtitan-2025", cp=2)
    assert sw.cp_comm == "torch_allgather"
    f, b, rf, rb = (float(np.ravel(x)[0]) for x in cp_par.torch_allgather_exposed(layer, t.attn_f, t.attn_b, ws.cp, HW))
    assert min(f, b, rf, rb) > 0
    assert float(kp.parts["cp_comm"][0]) == pytest.approx(f + b, rel=REL)
    assert float(kp.raw["cp_comm"][0]) == pytest.approx(rf + rb, rel=REL)
    assert float(kp.fwd[0]) == pytest.approx(float(t.compute_f[0]) + f, rel=REL)
    assert float(kp.parts["tp_comm"][0]) == 0.0


def test_per_layer_sac_recomputes_a_share_of_the_forward_flops():
    """torchtitan per-layer SAC (selective_ac = layer, every 2nd block): floor(4 / 2) = 2 of the toy's 4 layers are
    fully checkpointed, share 1/2, so selective recompute re-runs half of each layer's forward: seconds 1/2 x the
    forward full recompute re-runs, FLOPs 1/2 x (GEMMs + attention). Toy dense at tp 2 (separate projections:
    the same FLOPs as fused), T = 2048: GEMM FLOPs 2 T n_mm / tp = 2 x 2048 x 15,204,352 / 2; attention
    2 x 8 heads / 2 x 256 x 2048 queries x 1024.5 keys (causal) = 2048 x 2048 x 1024.5, share 1 (no windows)."""
    kp, t, ws, layer, sw = _kind("torchtitan-2025", ("selective_ac=layer",), tp=2)
    gemm_flops = 2 * 2048 * NMM / 2
    attn_flops = 2 * 8 / 2 * 256 * 2048 * 1024.5
    assert float(np.ravel(kp.selective_flops)[0]) == pytest.approx(0.5 * (gemm_flops + attn_flops), rel=REL)
    assert float(kp.selective_f[0]) == pytest.approx(0.5 * float(kp.fwd[0]), rel=REL)
    # a window of 512 on every other layer: each attention core counts at its share of the layers, 1/2 at
    # 1024.5 keys per query and 1/2 at (512 x 513 / 2 + 1536 x 512) / 2048 = 448.125 (test_workload.py)
    att = dict(kind="gqa", num_heads=8, num_kv_heads=2, head_dim=128, window=512, global_every=2)
    kw, *_ = _kind("torchtitan-2025", ("selective_ac=layer",), m=toy_dense(attention=att), tp=2)
    win_flops = 2048 * 2048 * (0.5 * 1024.5 + 0.5 * 448.125)
    assert float(np.ravel(kw.selective_flops)[0]) == pytest.approx(0.5 * (gemm_flops + win_flops), rel=REL)
