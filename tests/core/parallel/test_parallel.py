"""parallel/tp.py, cp.py, ep.py, dp.py and recompute.py against cases worked by hand on the toy cluster and
toy models (tests/toy.py; collective bandwidths as in tests/core/test_comm.py: all-gather 200 GB/s inside
an 8-GPU domain, 40 GB/s per NIC; all-to-all 100 / 25 GB/s; latency 10 / 20 us x (1 + log2 n))."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_consts, toy_dense, toy_hw, toy_mla, toy_moe, toy_sw

from perfmodel.core.parallel import cp, dp, ep, recompute, tp
from perfmodel.core.workload import build
from perfmodel.specs.layout import Layout, LayoutGrid
from perfmodel.specs.model import load_model

HW = toy_hw()
REL = 1e-12


# ---- TP (Shoeybi et al. 2019 §3; Korthikanti et al. 2022 §4.2.2) -------------------------------------


def test_sequence_parallel_pair():
    x = tp.sequence_parallel_pair("attn", 8e8, 8)
    # one all-gather of 800 MB over 8 neighbouring ranks: 7/8 * 8e8 / 2e11 + 40 us; 2 calls each way
    assert x.overlap == "tp" and (x.calls_fwd, x.calls_bwd) == (2, 2)
    assert float(x.price(HW)) == pytest.approx(3.54e-3, rel=REL)
    assert (tp.sequence_parallel_pair("head", 8e8, 8, 1, 1).calls_fwd,) == (1,)


# ---- CP (Liu et al. 2023, Ring Attention §3) ---------------------------------------------------------


def test_kv_width():
    assert cp.kv_width(toy_dense()) == 2 * 2 * 128  # GQA: K and V of 2 KV heads
    assert cp.kv_width(toy_mla()) == 8 * (96 + 64)  # MLA: decompressed per-head K (nope + rope) and V


def test_ring_exchange():
    m = toy_dense()
    # T = 8192 tokens, tp 2: K/V 8192 * 512 / 2 * 2 B = 4,194,304 B per step, CP peers 2 ranks apart (NVLink):
    # at NCCL's per-pair send/recv rate (K.NCCL_P2P_PEER_BW 8e10, below the link's 2e11): 4194304 / 8e10 + 10 us
    # = 62.4288 us; cp 4 -> 3 steps
    x = cp.ring_exchange(m, 8192.0, 2.0, 4.0)
    assert x.overlap == "cp" and (x.calls_fwd, x.calls_bwd) == (1, 2)
    assert float(x.price(HW)) == pytest.approx(3 * 62.4288e-6, rel=REL)
    # tp 8: peers 8 apart cross the NIC: 8192 * 512 / 8 * 2 = 1,048,576 B / 4e10 + 20 us; cp 2 -> one step
    assert float(cp.ring_exchange(m, 8192.0, 8.0, 2.0).price(HW)) == pytest.approx(1048576 / 4e10 + 20e-6, rel=REL)
    assert float(cp.ring_exchange(m, 8192.0, 2.0, 1.0).price(HW)) == 0.0


def test_cp_all_to_all_ulysses():
    # Jacobs et al. 2023 §3.1: q, k, v in and o out; GQA: q 8 x 128 + o 8 x 128 + k, v 2 x 2 x 128 = 2560 per token.
    # T 8192, tp 2: 8192 x 2560 / 2 x 2 B = 20,971,520 B over cp 4 (2 apart, one domain): 3/4 of it / 1e11 + 30 us
    x = cp.exchange(toy_dense(), 8192.0, 2.0, 4.0, "a2a")
    assert (x.overlap, x.calls_fwd, x.calls_bwd) == ("cp", 1, 1)
    assert float(x.price(HW)) == pytest.approx(0.75 * 20971520 / 1e11 + 30e-6, rel=REL)
    # MLA: q and k of 8 x 96, v and o of 8 x 64 = 2560 per token as well, by a different sum
    assert float(cp.exchange(toy_mla(), 8192.0, 2.0, 4.0, "a2a").price(HW)) == pytest.approx(
        0.75 * 20971520 / 1e11 + 30e-6, rel=REL
    )
    assert float(cp.exchange(toy_dense(), 8192.0, 2.0, 1.0, "a2a").price(HW)) == 0.0


def test_cp_all_gather():
    # every rank's K/V gathered: 8192 x 512 / 2 x 2 B x 4 ranks = 16,777,216 B: 3/4 of it / 2e11 + 30 us
    x = cp.exchange(toy_dense(), 8192.0, 2.0, 4.0, "allgather")
    assert float(x.price(HW)) == pytest.approx(0.75 * 16777216 / 2e11 + 30e-6, rel=REL)
    assert float(cp.exchange(toy_dense(), 8192.0, 2.0, 4.0, "p2p").price(HW)) == pytest.approx(3 * 62.4288e-6, rel=REL)


# ---- EP (MoE parallel folding, Liu et al. 2025; DeepEP dispatch) --------------------------------------


def test_dispatch_combine():
    m = toy_moe()  # 16 experts, top-2, unrestricted routing
    x = ep.dispatch_combine(m, 1e8, 16, 1)
    # EP 16 = 2 domains: NVLink 2 * 7/16 * 1e8 / 1e11 = 0.875 ms; NIC 2 (1 - 1/4) * 1/2 * 1e8 / 2.5e10 = 3 ms;
    # + 20 us (1 + 4)
    assert x.overlap == "ep" and (x.calls_fwd, x.calls_bwd) == (2, 2)
    assert float(x.price(HW)) == pytest.approx(3.1e-3, rel=REL)
    # etp 2: EP members 2 apart, 4 per domain, 4 domains: NVLink 2 * 3/16 * 1e8 / 1e11 = 0.375 ms,
    # NIC 4 (1 - 9/16) * 3/4 * 1e8 / 2.5e10 = 5.25 ms; + 100 us
    assert float(ep.dispatch_combine(m, 1e8, 16, 2).price(HW)) == pytest.approx(5.35e-3, rel=REL)


def test_dispatchers():
    m = toy_moe()
    # NCCL all-to-all of every token copy (top-2: 2e8 B) over EP 16 (2 domains): max(7/16 x 2e8 / 1e11,
    # 8/16 x 2e8 / 2.5e10) + 100 us
    assert float(ep.dispatch_combine(m, 1e8, 16, 1, "alltoall").price(HW)) == pytest.approx(4e-3 + 100e-6, rel=REL)
    # all-gather of every EP rank's tokens (16 x 1e8): 15/16 x 1.6e9 / 2e11 + NCCL's ring over 2 domains, 10 us +
    # 14 NVLink steps x 3.4 us + 1 network hop x 10 us = 67.6 us (comm.ring_latency)
    assert float(ep.dispatch_combine(m, 1e8, 16, 1, "allgather").price(HW)) == pytest.approx(7.5e-3 + 67.6e-6, rel=REL)


def test_routing_imbalance_blom_expected_max():
    """The busiest of n ranks under real routing: E[max of n standard normals] by Blom's approximation
    Phi^-1((n - 3/8) / (n + 1/4)) (Blom 1958). n = 2: Phi^-1(1.625 / 2.25 = 0.7222) = 0.5895 (the exact
    1 / sqrt(pi) = 0.5642); n = 8: Phi^-1(7.625 / 8.25 = 0.92424) = 1.4342 (exact 1.4236); one rank: 0 (no busier
    peer: Blom's fraction is 0.625 / 1.25 = 1/2, the median, 0 as well). Toy MoE, 16 experts, aux_loss balancing
    (constants.ROUTING_CV): at ep 8 a rank holds 2 experts, 1 + sigma x 1.4342 / sqrt(2)."""
    from statistics import NormalDist

    from perfmodel.core import constants as K

    q = NormalDist().inv_cdf
    assert ep._expected_max(2) == pytest.approx(q(1.625 / 2.25), rel=REL)
    assert ep._expected_max(2) == pytest.approx(0.5895, abs=1e-4)
    assert ep._expected_max(8) == pytest.approx(q(7.625 / 8.25), rel=REL)
    assert ep._expected_max(8) == pytest.approx(1.4342, abs=1e-4)
    assert ep._expected_max(64) == pytest.approx(q(63.625 / 64.25), rel=REL)
    assert ep._expected_max(1) == 0.0
    sigma = K.ROUTING_CV["aux_loss"]
    r = ep.routing_imbalance(toy_moe(), np.array([1.0, 8.0]), "aux_loss")
    assert r == pytest.approx([1.0, 1 + sigma * q(7.625 / 8.25) / np.sqrt(2)], rel=REL)


def test_expert_tp_gather():
    x = ep.expert_tp_gather(8e8, 2)
    # 1/2 * 8e8 / 2e11 + 10 us * 2; hidden by the TP switch
    assert x.overlap == "tp" and (x.calls_fwd, x.calls_bwd) == (2, 2)
    assert float(x.price(HW)) == pytest.approx(2.02e-3, rel=REL)
    # part of the MoE layer's forward, as the dispatch is: a "moe" recompute reruns its 2 forward calls
    assert x.module == "moe" == ep.dispatch_combine(load_model("mixtral-8x7b"), 1e8, 8, 1, "alltoall").module


# ---- DP / FSDP (Rajbhandari et al. 2020; Megatron-Core distributed optimizer) ------------------------
# toy MoE parameters by hand: embedding = head = 32000 * 1024 = 32,768,000; final norm 1,024;
# attention 1024 * (1024 + 2048) + 1024 * 1024 = 4,194,304, norms 2 * 1024; dense FFN 3 * 1024 * 4096 = 12,582,912;
# MoE FFN: router 16,384 + 16 experts * 3 * 1024 * 512 (25,165,824) + shared 3 * 1024 * 1024 (3,145,728) = 28,327,936.
# total = 65,536,000 + 1,024 + 4 * 4,196,352 + 12,582,912 + 3 * 28,327,936 = 179,889,152


def test_param_split():
    assert dp.param_split(toy_moe()) == (179889152 - 75497472, 3 * 25165824)
    # one MTP module (DeepSeek-V3 §2.2): 2 norms + 2h x h projection + a MoE block + final norm =
    # 2048 + 2,097,152 + (4,196,352 + 28,327,936) + 1024 = 34,624,512, of which 25,165,824 expert
    assert dp.param_split(toy_moe(mtp_layers=1)) == (179889152 + 34624512 - 4 * 25165824, 4 * 25165824)
    d = toy_dense()
    # dense: 2 * 32,768,000 + 1,024 + 4 * (2,621,440 + 2,048 + 12,582,912) = 126,362,624, no experts
    assert dp.param_split(d) == (126362624, 0.0)


def test_layer_params():
    m = toy_moe()
    assert dp.layer_params(m, "dense") == (4196352 + 12582912, 0.0)
    assert dp.layer_params(m, "moe") == (4196352 + 16384 + 3145728, 25165824)


def _workload(m):
    return build(m, LayoutGrid.of(Layout(gpus=2, gbs=2, seq=1024, pp=2)), False, 1.0, toy_consts(), toy_sw(m))


def test_rank_params_moe_pp2():
    m = toy_moe()
    w = _workload(m)  # kinds: [dense, moe]
    cnt = [np.array([[1.0, 0.0]]), np.array([[1.0, 2.0]])]  # rank 0: layers 0 (dense) and 1; rank 1: 2, 3
    d, e = dp.rank_params(m, w, cnt, np.array([[0.0, 1.0]]), np.array([[2.0]]))
    # rank 0: 16,779,264 + 7,358,464 + embedding 32,768,000; rank 1: 2 * 7,358,464 + final norm + head
    assert d[0] == pytest.approx([56905728, 14716928 + 1024 + 32768000], rel=REL)
    assert e[0] == pytest.approx([25165824, 2 * 25165824], rel=REL)


def test_rank_params_mtp_on_last_rank():
    m = toy_moe(mtp_layers=1)
    w = _workload(m)
    cnt = [np.array([[1.0, 0.0]]), np.array([[1.0, 2.0]])]
    d, e = dp.rank_params(m, w, cnt, np.array([[0.0, 1.0]]), np.array([[2.0]]))
    # the MTP module's 34,624,512 parameters land on the last rank, 25,165,824 of them experts
    assert d[0] == pytest.approx([56905728, 14716928 + 1024 + 32768000 + 34624512 - 25165824], rel=REL)
    assert e[0] == pytest.approx([25165824, 3 * 25165824], rel=REL)


def test_rank_params_tied_embeddings():
    m = toy_dense(tied_embeddings=True)  # layer 15,206,400; embedding 32,768,000
    w = _workload(m)
    cnt = [np.array([[4.0]])]
    d, _ = dp.rank_params(m, w, cnt, np.array([[0.0]]), np.array([[1.0]]))
    assert d[0] == pytest.approx([4 * 15206400 + 32768000 + 1024], rel=REL)  # one shared matrix
    cnt = [np.array([[2.0, 2.0]])]
    d, _ = dp.rank_params(m, w, cnt, np.array([[0.0, 1.0]]), np.array([[2.0]]))
    # pp > 1: the last rank keeps its own copy of the tied matrix (Megatron-Core shared embedding)
    assert d[0] == pytest.approx([2 * 15206400 + 32768000, 2 * 15206400 + 1024 + 32768000], rel=REL)


def test_grad_and_param_times():
    # dense 1e8 params, experts 2e8; fp32 grads (4 B), bf16 weights (2 B); dp*cp = 8 (tp 1: neighbours),
    # edp 2 with members ep*etp = 8 apart (different domains, one per domain: NIC 4e10)
    rs, ag = dp.grad_and_param_times(1e8, 2e8, 4.0, 2.0, 8, 2, 1, 4, 2, HW)
    # RS: 7/8 * 4e8 / 2e11 + 40 us = 1.79 ms; experts 1/2 * 8e8 / 4e10 + the ring of 2 across domains (10 us base
    # + one 10 us network hop) = 10.02 ms
    assert float(rs) == pytest.approx(1.79e-3 + 10.02e-3, rel=REL)
    # AG: 7/8 * 2e8 / 2e11 + 40 us = 0.915 ms; experts 1/2 * 4e8 / 4e10 + 20 us = 5.02 ms
    assert float(ag) == pytest.approx(0.915e-3 + 5.02e-3, rel=REL)
    # in 3 dense and 2 expert calls (buckets): 2 and 1 more latencies
    rs3, ag3 = dp.grad_and_param_times(1e8, 2e8, 4.0, 2.0, 8, 2, 1, 4, 2, HW, calls_dense=3.0, calls_exp=2.0)
    assert float(rs3 - rs) == pytest.approx(2 * 40e-6 + 20e-6, rel=1e-9) and float(ag3 - ag) == pytest.approx(
        100e-6, rel=1e-9
    )


def test_parameter_tensors_and_the_optimizer_s_launches():
    from dataclasses import replace
    from pathlib import Path

    from perfmodel.specs.counts import parameter_tensors

    # MPT-1b (llm-foundry): Wqkv, out_proj, 2 LayerNorms and the GELU MLP's up / down, each with a bias: 12 tensors
    # a block; outside: wte, wpe and the final LayerNorm's weight and bias (tied head): 4
    mpt = load_model(str(Path(__file__).resolve().parents[3] / "validation/independent/models/repos-mpt-1b-s2048.json"))
    assert parameter_tensors(mpt) == (12, 0, 4)
    # Llama 3 70B: fused QKV, o, fused gate+up, down, 2 RMSNorms: 6; separate projections (torchtitan): wq wk wv wo
    # w1 w2 w3 + 2 norms = 9; outside: embedding, final norm, untied head
    llama = load_model("llama3-70b")
    assert parameter_tensors(llama) == (6, 0, 3) and parameter_tensors(llama, True)[0] == 9
    # DeepSeek-V3's MoE layer: MLA's q_a, q_b, kv_a, kv_b, o and two norms inside it, 2 layer norms, the router and
    # its score-correction bias, 256 experts x (gate+up, down), one shared expert: 7 + 2 + 2 + 512 + 2 = 525
    assert parameter_tensors(load_model("deepseek-v3"))[1] == 525
    # launches per step: multi-tensor fixed; per parameter tensor 10 more each (Composer's loop and FSDP's clip) on
    # the rank's 24 blocks and the 4 outside; per flat parameter 10 per FSDP unit (24 blocks and the root)
    sw = toy_sw(toy_dense())
    for rule, want in (("multi_tensor", 10.0), ("per_param", 10 + 10 * (24 * 12 + 4)), ("per_flat_param", 10 + 250)):
        got = dp.optimizer_kernels(mpt, ["dense"], [np.array([24.0])], replace(sw, optimizer_launches=rule))
        assert float(np.asarray(got).ravel()[0]) == want


def test_collective_calls_follow_each_stack_s_bucketing():
    # Megatron-Core DDP with overlap_grad_reduce: buckets of max(40M, 1M x dp*cp) parameters on the first pipeline
    # rank's first chunk, one bucket per chunk elsewhere. 1e9 parameters at dp*cp 8: 40M buckets -> 25; at dp*cp 200:
    # 200M -> 5; with vp 2 the first chunk holds 5e8 (13 at 40M) + 1 for the second chunk; a later rank: vp calls
    calls = lambda p, dpc, rank, vp, rule="megatron", on=True: float(
        dp.collective_calls(p, dpc, rank, 12, vp, rule, on)
    )
    assert calls(1e9, 8, 0, 1) == 25 and calls(1e9, 200, 0, 1) == 5 and calls(1.01e9, 200, 0, 1) == 6
    assert calls(1e9, 8, 0, 2) == 13 + 1 and calls(1e9, 8, 3, 2) == 2 and calls(1e9, 8, 3, 1) == 1
    # overlap_grad_reduce off: one bucket per buffer and chunk
    assert calls(1e9, 8, 0, 2, on=False) == 2
    # FSDP units: the rank's 12 blocks and the root; DeepSpeed's 5e8-element buckets; one call
    assert calls(1e9, 8, 0, 1, "fsdp_units") == 13
    assert calls(1e9, 8, 0, 1, "deepspeed") == 2 and calls(1.01e9, 8, 0, 1, "deepspeed") == 3
    assert calls(1e9, 8, 0, 1, "one") == 1
    # a layout that shards parameters is per unit whatever the stack's rule for replicated ones
    plain, sharded = dp.calls_by_sharding(1e9, 8.0, 0, 12.0, 1.0, "megatron", True)
    assert (float(plain), float(sharded)) == (25.0, 13.0)


def test_grad_and_param_times_dense_stride_is_tp():
    # dp*cp = 2 with tp 8: the two replicas sit in different domains: 1/2 * 4e8 / 4e10 + the ring's 20 us
    rs, ag = dp.grad_and_param_times(1e8, 0.0, 4.0, 2.0, 2, 1, 8, 1, 1, HW)
    assert float(rs) == pytest.approx(5.02e-3, rel=REL) and float(ag) == pytest.approx(2.52e-3, rel=REL)


def test_shard_group():
    # hybrid sharding groups tile dp*cp: the stack's group, or the largest divisor of dp*cp below it
    assert list(dp.shard_group(np.array([32.0, 8.0, 12.0, 4.0]), 8)) == [8.0, 8.0, 4.0, 4.0]
    assert list(dp.shard_group(np.array([32.0]), None)) == [32.0]


def test_grad_and_param_times_hybrid_sharding():
    # HSDP (PyTorch FSDP paper §3.2.2): dense 1e8 params, fp32 grads, bf16 weights, dp*cp = 32, group 8, tp 1.
    # Inside the group (8 neighbours, one domain): RS 7/8 * 4e8 / 2e11 + 10 us x (1 + 3) = 1.79 ms,
    # AG 7/8 * 2e8 / 2e11 + 40 us = 0.915 ms. Across the 4 replicas (members 8 apart, one per domain, NIC
    # 4e10): all-reduce of the 1/8 shard, 5e7 B: 2 * 3/4 * 5e7 / 4e10 + 20 us x (1 + 2) = 1.935 ms
    rs, ag = dp.grad_and_param_times(1e8, 0.0, 4.0, 2.0, 32, 1, 1, 1, 1, HW, hsg=8)
    assert float(rs) == pytest.approx(1.79e-3 + 1.935e-3, rel=REL)
    assert float(ag) == pytest.approx(0.915e-3, rel=REL)
    # a group as large as dp*cp is plain FSDP: no replica all-reduce
    same = dp.grad_and_param_times(1e8, 0.0, 4.0, 2.0, 8, 1, 1, 1, 1, HW, hsg=8)
    plain = dp.grad_and_param_times(1e8, 0.0, 4.0, 2.0, 8, 1, 1, 1, 1, HW)
    assert float(same[0]) == pytest.approx(float(plain[0]), rel=REL) == pytest.approx(1.79e-3, rel=REL)
    # per pipeline rank (trailing axis): the same terms broadcast
    rs2, _ = dp.grad_and_param_times(
        np.array([[1e8, 2e8]]),
        np.zeros((1, 2)),
        4.0,
        2.0,
        np.array([[32.0]]),
        np.array([[1.0]]),
        np.array([[1.0]]),
        np.array([[1.0]]),
        np.array([[1.0]]),
        HW,
        hsg=8,
    )
    assert rs2[0, 0] == pytest.approx(3.725e-3, rel=REL)
    assert rs2[0, 1] == pytest.approx(7 / 8 * 8e8 / 2e11 + 4e-5 + 2 * 0.75 * 1e8 / 4e10 + 6e-5, rel=REL)


def test_hybrid_all_reduce_members_are_h_tp_ranks_apart():
    # HSDP replicas all-reduce the shard across groups whose members sit h x tp ranks apart (Megatron rank
    # order: tp fastest, then the shard group). Dense 1e8 params, fp32 grads, bf16 weights, dp*cp = 8, group 2.
    # tp 1: the group is 2 neighbours (NVLink): RS 1/2 * 4e8 / 2e11 + 10 us x (1 + 1) = 1.02 ms; AG 1/2 * 2e8 /
    # 2e11 + 20 us = 0.52 ms. The 4 replicas, 2 apart: 8 // 2 = 4 per domain, all in one (NVLS all-reduce,
    # 0.75 x 4e11 = 3e11): 2 * 3/4 * 2e8 B (the 1/2 shard) / 3e11 + 10 us x (1 + 2) = 1.03 ms
    rs, ag = dp.grad_and_param_times(1e8, 0.0, 4.0, 2.0, 8, 1, 1, 1, 1, HW, hsg=2)
    assert float(rs) == pytest.approx(1.02e-3 + 1.03e-3, rel=1e-9) and float(ag) == pytest.approx(0.52e-3, rel=1e-9)
    # tp 2: the group's 2 members are 2 apart (still one domain: RS and AG as above); the replicas 2 x 2 = 4
    # apart: 8 // 4 = 2 per domain, 2 domains, each ring hop over the 2 members' NICs (2 x 5e10 x 0.8 = 8e10 <
    # NVLink's 2e11): 2 * 3/4 * 2e8 / 8e10 + 20 us x (1 + 2) = 3.81 ms
    rs, ag = dp.grad_and_param_times(1e8, 0.0, 4.0, 2.0, 8, 1, 2, 1, 1, HW, hsg=2)
    assert float(rs) == pytest.approx(1.02e-3 + 3.81e-3, rel=1e-9) and float(ag) == pytest.approx(0.52e-3, rel=1e-9)
    # a 16-GPU domain, dp*cp = 16, group 4, tp 2: the group's 4 members 2 apart in one domain: RS 3/4 * 4e8 /
    # 2e11 + 10 us x (1 + 2) = 1.53 ms, AG 3/4 * 2e8 / 2e11 + 30 us = 0.78 ms; the 4 replicas 4 x 2 = 8 apart:
    # 16 // 8 = 2 per domain, 2 domains, hops over 2 NICs (8e10): 2 * 3/4 * 1e8 B (the 1/4 shard) / 8e10
    # + 20 us x (1 + 2) = 1.935 ms (a stride of 9 would leave one member per domain, hops of one NIC)
    rs, ag = dp.grad_and_param_times(1e8, 0.0, 4.0, 2.0, 16, 1, 2, 1, 1, toy_hw(domain=16), hsg=4)
    assert float(rs) == pytest.approx(1.53e-3 + 1.935e-3, rel=1e-9) and float(ag) == pytest.approx(0.78e-3, rel=1e-9)


def test_hybrid_all_reduce_per_pipeline_rank_of_several_layouts():
    # two layouts (tp 1 and tp 2, both dp*cp 8, group 2) x three pipeline ranks holding 1e8, 2e8, 1e8 dense
    # params: each layout's all-reduce shape (above) placed once and broadcast over its ranks. 2e8 params
    # double every bandwidth term: tp 1: 2.0 ms + 20 us + 2.0 ms + 30 us = 4.05 ms; tp 2: 2.02 ms + 7.5 ms
    # + 60 us = 9.58 ms
    col = lambda *v: np.array(v, dtype=float)[:, None]
    rs, ag = dp.grad_and_param_times(
        np.array([[1e8, 2e8, 1e8], [1e8, 1e8, 2e8]]),
        np.zeros((2, 3)),
        4.0,
        2.0,
        col(8, 8),
        col(1, 1),
        col(1, 2),
        col(1, 1),
        col(1, 1),
        HW,
        hsg=2,
    )
    np.testing.assert_allclose(rs, [[2.05e-3, 4.05e-3, 2.05e-3], [4.83e-3, 4.83e-3, 9.58e-3]], rtol=1e-9)
    np.testing.assert_allclose(ag, [[0.52e-3, 1.02e-3, 0.52e-3], [0.52e-3, 0.52e-3, 1.02e-3]], rtol=1e-9)


def test_grad_and_param_times_expert_stride_is_ep_etp():
    # experts only, edp 4 with members ep * etp = 2 x 1 = 2 apart: all 4 in one domain (8 // 2 = 4):
    # RS 3/4 * 2e8 / 2e11 + 10 us * (1 + 2) = 0.78 ms; AG the same bytes
    rs, ag = dp.grad_and_param_times(0.0, 1e8, 2.0, 2.0, 1, 4, 1, 2, 1, HW)
    assert float(rs) == pytest.approx(0.78e-3, rel=REL) and float(ag) == pytest.approx(0.78e-3, rel=REL)


def test_grad_and_param_times_per_layout():
    # two layouts priced in one call, each on its own group shape: dp*cp 8 with tp 1 (one domain, the 1.79 /
    # 0.915 ms of test_grad_and_param_times' dense part) and dp*cp 2 with tp 8 (two domains, 5.02 / 2.52 ms of
    # test_grad_and_param_times_dense_stride_is_tp); a dense model: no expert collective
    one = np.ones(2)
    rs, ag = dp.grad_and_param_times(
        1e8 * one, 0.0 * one, 4.0, 2.0, np.array([8, 2]), one, np.array([1, 8]), one, one, HW
    )
    assert rs == pytest.approx([1.79e-3, 5.02e-3], rel=REL) and ag == pytest.approx([0.915e-3, 2.52e-3], rel=REL)


def test_exposed_time():
    from types import SimpleNamespace

    sw = SimpleNamespace(
        dp_rs_share=0.5,
        dp_ag_share=0.25,
        fsdp_per_microbatch=True,
        fsdp_reshard=True,
        shards_grads=False,
        fsdp_pp_per_step=False,
    )
    rs, ag, stage, nmb = np.array(6.0), np.array(6.0), np.array(3.0), np.array(4.0)
    # distributed optimizer: RS (share 0.5) under 2/3 of a stage (2 s): 3 + (3 - 2) = 4;
    # AG (share 0.25) under 1/3 (1 s): 4.5 + (1.5 - 1) = 5
    assert float(dp.exposed_time(rs, ag, np.array(False), stage, nmb, sw)) == pytest.approx(9.0)
    # FSDP (FULL_SHARD, per micro-batch): 2 x 4 AG = 48 s (12 hideable), 4 RS = 24 s (12 hideable) share the
    # step's 4 x 3 = 12 s of compute: hideable 24, spill 12, split 12/24 each: 36 + 6 + 12 + 6 = 60
    assert float(dp.exposed_time(rs, ag, np.array(True), stage, nmb, sw)) == pytest.approx(60.0)
    # FSDP gathered once per step: one AG (6 s, 1.5 hideable) and one RS (6 s, 3 hideable) under 12 s: 4.5 + 3
    once = SimpleNamespace(
        dp_rs_share=0.5,
        dp_ag_share=0.25,
        fsdp_per_microbatch=False,
        fsdp_reshard=True,
        shards_grads=False,
        fsdp_pp_per_step=False,
    )
    assert float(dp.exposed_time(rs, ag, np.array(True), stage, nmb, once)) == pytest.approx(7.5)


# ---- recompute (Korthikanti et al. 2022 §5) ------------------------------------------------------------


def test_recompute_time_and_flops():
    rec = np.array([recompute.NONE, recompute.SELECTIVE, recompute.FULL])
    assert recompute.time(rec, 3.0, 0.5) == pytest.approx([0.0, 0.5, 3.0])
    # full recompute: one more forward = a third of 6N; selective: the core attention forward
    assert recompute.extra_flops_per_token(rec, 6e9, 1e8) == pytest.approx([0.0, 1e8, 2e9])


def test_per_layer_sac_share():
    """torchtitan per-layer SAC wraps a block when its running count % N == 0: floor(L / N) of L blocks. N = 3 over
    4 layers: 1 of 4; N = 2: 2 of 4; 61 layers, N = 2: 30 of 61. A stage with no layers checkpoints none (0, not
    0 / 0), and any other selective policy none."""
    sw = toy_sw(toy_dense(), HW, toy_consts(), stack_set=("selective_ac=layer", "selective_ac_every=3"))
    assert recompute.layer_share(sw, 4) == 0.25 and recompute.layer_share(sw, 0) == 0.0
    sw2 = toy_sw(toy_dense(), HW, toy_consts(), stack_set=("selective_ac=layer", "selective_ac_every=2"))
    assert recompute.layer_share(sw2, 4) == 0.5 and recompute.layer_share(sw2, 61) == 30 / 61
    assert recompute.layer_share(toy_sw(toy_dense(), HW, toy_consts()), 4) == 0.0


def test_optimizer_shard_hand_counts_with_experts():
    """Dense 8e9 and expert 6.4e10 parameters per GPU, dp*cp = 16 (cp = 2), edp = 8: FSDP or the distributed
    optimizer over dp*cp hold 8e9/16 + 6.4e10/8 = 8.5e9; over dp only 8e9/8 + 6.4e10/8 = 9e9; no sharding (torch
    DDP / the local optimizer) 8e9 + 6.4e10 = 7.2e10; hybrid sharding over 4 GPUs: 8e9/4 + 6.4e10/8 = 1e10."""
    from types import SimpleNamespace

    from perfmodel.core.parallel import dp

    sw = lambda shard, hsg=None: SimpleNamespace(optimizer_shard=shard, hybrid_shard_group=hsg)
    args = (np.array(8e9), np.array(6.4e10), np.array(16.0), np.array(8.0), np.array(2.0))
    assert float(dp.optimizer_shard(*args, np.array(True), sw("none"))) == pytest.approx(8.5e9)
    assert float(dp.optimizer_shard(*args, np.array(False), sw("dp_cp"))) == pytest.approx(8.5e9)
    assert float(dp.optimizer_shard(*args, np.array(False), sw("dp"))) == pytest.approx(9e9)
    assert float(dp.optimizer_shard(*args, np.array(False), sw("none"))) == pytest.approx(7.2e10)
    assert float(dp.optimizer_shard(*args, np.array(True), sw("dp_cp", 4))) == pytest.approx(1e10)


def test_dualpipe_params_mirror_stages():
    """dp.dualpipe_params: ranks (0, 1, pp - 1) hold their own stage and the mirror pp - 1 - r. pp 4: rank 0
    and rank 3 mirror each other (10 + 40 both); rank 1's mirror, rank 2, is not among the columns, so its own
    stage stands in (2 x 20); pp 2: ranks (0, 1, 1) mirror 0 <-> 1; pp 1: no mirror."""
    import numpy as np

    from perfmodel.core.parallel.dp import dualpipe_params

    p = np.array([[10.0, 20.0, 40.0], [10.0, 20.0, 20.0], [7.0, 7.0, 7.0]])
    rank = np.array([[0, 1, 3], [0, 1, 1], [0, 0, 0]], dtype=float)
    pp = np.array([[4.0], [2.0], [1.0]])
    assert dualpipe_params(p, rank, pp).tolist() == [[50.0, 40.0, 50.0], [30.0, 30.0, 30.0], [7.0, 7.0, 7.0]]
