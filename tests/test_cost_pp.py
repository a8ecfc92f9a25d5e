"""parallel/pp.py beyond tests/test_pp.py: the interleaving legality rule, the pipeline send/recv cost and the
ranks whose memory is compared, against cases worked by hand (toy cluster, tests/toy.py)."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_hw

from perfmodel.core.parallel import pp


def test_legal_interleaving():
    # Megatron-Core: interleaving needs the micro-batch count to be a multiple of pp; 1F1B (vp 1) and pp 1 never do
    got = pp.legal_interleaving(np.array([2, 2, 2, 1, 4]), np.array([2, 2, 1, 2, 2]), np.array([3, 4, 3, 3, 6]))
    assert got.tolist() == [False, True, True, True, False]


def test_boundary_p2p_time():
    hw = toy_hw()
    # Ts = 1024 rows x h 1024 x 2 B = 2,097,152 B; neighbours tp*cp*dp = 2*1*2 = 4 apart share NVLink (200 GB/s busbw):
    # one send at NCCL's per-pair send/recv rate (K.NCCL_P2P_PEER_BW 8e10, below the link's 2e11): 2097152 / 8e10 + 10 us;
    # 2 vp sends per micro-batch (activation forward, gradient backward)
    one = 2097152 / 8e10 + 10e-6
    assert float(pp.boundary_p2p_time(1024.0, 1024, 2.0, 1.0, 2.0, 2.0, 1.0, hw)) == pytest.approx(2 * one, rel=1e-12)
    assert float(pp.boundary_p2p_time(1024.0, 1024, 2.0, 1.0, 2.0, 2.0, 3.0, hw)) == pytest.approx(6 * one, rel=1e-12)
    assert float(pp.boundary_p2p_time(1024.0, 1024, 2.0, 1.0, 2.0, 1.0, 1.0, hw)) == 0.0  # no pipeline
    # tp 2 x cp 2 x dp 2 = 8 apart: the next domain, over the NIC (40 GB/s)
    assert float(pp.boundary_p2p_time(1024.0, 1024, 2.0, 2.0, 2.0, 2.0, 1.0, hw)) == pytest.approx(
        2 * (2097152 / 4e10 + 20e-6), rel=1e-12
    )


def test_p2p_neighbours_just_inside_a_domain():
    # neighbours 2 x 1 x 5 = 10 ranks apart, pp 2: 20 GPUs. A 20-GPU domain holds every pipeline: NVLink at the
    # per-pair rate
    inside = 2 * (2097152 / 8e10 + 10e-6)
    assert float(pp.boundary_p2p_time(1024.0, 1024, 2.0, 1.0, 5.0, 2.0, 1.0, toy_hw(domain=20))) == pytest.approx(
        inside, rel=1e-12
    )
    # an 11-GPU domain: GPU 0's pipeline (GPUs 0, 10) shares it, but dp rank 1's (GPUs 1, 11) crosses its edge, and
    # the step waits for the slowest pipeline rank: the boundary over the NIC (4e10) + 20 us
    edge = 2 * (2097152 / 4e10 + 20e-6)
    assert float(pp.boundary_p2p_time(1024.0, 1024, 2.0, 1.0, 5.0, 2.0, 1.0, toy_hw(domain=11))) == pytest.approx(
        edge, rel=1e-12
    )


def test_p2p_pipeline_spanning_domains():
    # tp 2 x dp 2 = 4 apart, pp 4: 16 GPUs over two 8-GPU domains; ranks 1 and 2 (GPUs 4 and 8, ...) sit on either
    # side of the edge, so the slowest rank's boundary is the NIC's: 2 x (2097152 / 4e10 + 20 us). pp 2 on the same
    # stride fits one domain (8 GPUs): NVLink
    hw = toy_hw()
    assert float(pp.boundary_p2p_time(1024.0, 1024, 2.0, 1.0, 2.0, 4.0, 1.0, hw)) == pytest.approx(
        2 * (2097152 / 4e10 + 20e-6), rel=1e-12
    )
    assert float(pp.boundary_p2p_time(1024.0, 1024, 2.0, 1.0, 2.0, 2.0, 1.0, hw)) == pytest.approx(
        2 * (2097152 / 8e10 + 10e-6), rel=1e-12
    )


def test_ranks_for_memory():
    # the lowest rank of each distinct (layers, first, last) signature, padded with the last rank:
    # 8 equal layers: pp 2 -> ranks 0, 1 (+1); pp 4 -> 0 (first), 1 (ranks 1 and 2 alike), 3 (last); pp 1 -> 0
    kinds = (0,) * 8
    cnt, rank = pp.ranks_for_memory(kinds, 1, np.array([2, 4, 1]), np.array([1, 1, 1]))
    assert rank.tolist() == [[0, 1, 1], [0, 1, 3], [0, 0, 0]]
    assert cnt[0].tolist() == [[4, 4, 4], [2, 2, 2], [8, 8, 8]]


def test_memory_ranks_every_distinct_rank():
    # 3 dense layers, then 13 MoE layers (16 in all), pp 8, 2 layers per rank: rank 0 holds 2 dense, rank 1
    # 1 dense + 1 MoE, ranks 2..6 two MoE each, rank 7 two MoE and the head. The first three ranks were all the
    # old rule looked at; rank 2 (two MoE layers, more expert weights than rank 1) is a signature of its own
    kinds = (0, 0, 0) + (1,) * 13
    assert pp.memory_ranks(kinds, 2, 8, 1) == (0, 1, 2, 7)
    cnt, rank = pp.ranks_for_memory(kinds, 2, np.array([8, 2]), np.array([1, 1]))
    assert rank.tolist() == [[0, 1, 2, 7], [0, 1, 1, 1]]
    assert cnt[0].tolist() == [[2, 1, 0, 0], [3, 0, 0, 0]] and cnt[1].tolist() == [[0, 1, 2, 2], [5, 8, 8, 8]]
    # an uneven split (10 layers on pp 4: 2 + 3 + 3 + 2, the middle ranks first): ranks 1 and 2 alike
    assert pp.memory_ranks((0,) * 10, 1, 4, 1) == (0, 1, 3)
    # DualPipe: a rank holds its mirror stage too, so the mirror's layers join the signature and the mirrors
    # of the candidates are kept: pp 8 -> ranks 0, 1, 2 and their mirrors 7, 6, 5
    assert pp.memory_ranks(kinds, 2, 8, 1, schedule="dualpipe") == (0, 1, 2, 5, 6, 7)
    # five dense layers, then three MoE, pp 8: ranks 1-4 hold one dense layer each, but ranks 3 and 4 mirror
    # each other (dense + dense) while ranks 1 and 2 mirror MoE ranks 6 and 5 (dense + MoE): with the mirror in
    # the signature ranks 3 and 4 are candidates of their own, not merged into rank 1
    assert pp.memory_ranks((0,) * 5 + (1,) * 3, 2, 8, 1, schedule="dualpipe") == tuple(range(8))


def test_other_schedules_bubble():
    # stage times max 3 s, sum 10 s over pp 4, vp 1, 8 micro-batches: 1F1B bubble (10 - 3) = 7 s beyond 8 x 3
    t = lambda sched, p=4: [
        float(x)
        for x in pp.schedule_time(
            np.array(3.0), np.array(10.0), np.array(float(p)), np.array(1.0), np.array(8.0), sched
        )
    ]
    assert t("1f1b") == pytest.approx([24 + 7, 7])
    # ZB-H1: a third of 1F1B's (Qi et al. 2024 §3)
    assert t("zero_bubble") == pytest.approx([24 + 7 / 3, 7 / 3])
    # DualPipe: (p/2 - 1)/(p - 1) of ZB-H1's: pp 4 -> 1/3 of 7/3; pp 8 -> 3/7 of 7/3 = 1; pp 2 -> none
    assert t("dualpipe") == pytest.approx([24 + 7 / 9, 7 / 9])
    assert t("dualpipe", 8) == pytest.approx([25, 1])
    assert t("dualpipe", 2) == pytest.approx([24, 0])


def test_signature_arrays_per_layout():
    # 3 dense layers then 5 MoE layers on pp 2 (Megatron-Core's interleaving: chunk j of rank r is model chunk
    # j * pp + r). vp 1: chunks of 4 layers, rank 0 holds layers 0-3 (3 dense, 1 MoE, the embedding), rank 1
    # layers 4-7 (4 MoE, the head). vp 2: chunks of 2, rank 0 holds chunks 0 and 2 (layers 0, 1, 4, 5: 2 dense,
    # 2 MoE), rank 1 chunks 1 and 3 (layers 2, 3, 6, 7: 1 dense, 3 MoE). Both layouts in one call
    kinds = (0, 0, 0, 1, 1, 1, 1, 1)
    cnt, emb, head, mult = pp.signature_arrays(kinds, 2, np.array([2, 2]), np.array([1, 2]))
    assert cnt[0].tolist() == [[3, 0], [2, 1]] and cnt[1].tolist() == [[1, 4], [2, 3]]
    assert emb.tolist() == [[1, 0], [1, 0]] and head.tolist() == [[0, 1], [0, 1]] and mult.tolist() == [[1, 1], [1, 1]]


def test_pairs_decodes_every_distinct_pp_vp_and_its_inverse():
    """The distinct (pp, vp) pairs in order and each layout's index into them, on both key paths: small keys
    (a lookup table, radix = max vp + 1) and large ones (pp * 2^32 + vp)."""
    from perfmodel.core.parallel.pp import _pairs

    pairs, inv = _pairs(np.array([2, 2, 4, 2, 1]), np.array([1, 3, 3, 3, 1]))
    assert pairs == [(1, 1), (2, 1), (2, 3), (4, 3)] and inv.tolist() == [1, 2, 3, 2, 0]
    pairs, inv = _pairs(np.array([16, 16, 32]), np.array([12, 1, 12]))  # pp, vp of two digits
    assert pairs == [(16, 1), (16, 12), (32, 12)] and inv.tolist() == [1, 0, 2]
    big = 1 << 21
    pairs, inv = _pairs(np.array([big, big, 2 * big, big]), np.array([1, 3, 3, 3]))
    assert pairs == [(big, 1), (big, 3), (2 * big, 3)] and inv.tolist() == [0, 1, 2, 1]


def test_gpipe_holds_every_micro_batch_on_every_rank():
    # GPipe runs all forwards before any backward (Huang et al. 2019 §2.3): nmb in flight on every rank,
    # against 1F1B's pp - rank (4, 3, 2, 1 for pp 4, capped at nmb)
    from perfmodel.core.parallel.pp import in_flight

    rank = np.array([0.0, 1.0, 2.0, 3.0])
    assert in_flight(4.0, 1.0, 8.0, rank, "gpipe").tolist() == [8.0, 8.0, 8.0, 8.0]
    assert in_flight(4.0, 1.0, 8.0, rank, "1f1b").tolist() == [4.0, 3.0, 2.0, 1.0]


def test_mtp_slot_rule_needs_more_slots_than_mtp_layers():
    # DeepSeek-V3 (61 layers, 1 MTP) over 64 chunks (pp 16 vp 4): 61 + 2 + 1 = 64 slots of 1, one per chunk; the
    # slot rule would leave the last chunk 1 - 1 - 1 = -1 layers, so the plain split applies: every chunk
    # non-negative, 61 in all
    from perfmodel.core.parallel.pp import chunk_layers

    c = chunk_layers(61, 16, 4, 1)
    assert min(c) >= 0 and sum(c) == 61 and len(c) == 64


def test_p2p_worked_case_zero_bubble_interleaved_row():
    # zbpp2024-gpt6p2b-a100-8-bf16-1f1bi-m64 (Qi et al. 2024 Table 3-4: GPT 6.2B, hidden 4096, mbs 3, seq 1024,
    # tp 1, pp 8 on one 8-GPU A100 node, vp 4 = one layer per chunk). One boundary send: 3 x 1024 x 4096 x 2 B =
    # 25,165,824 B between neighbours 1 rank apart (inside the NVLink domain). The link's collective rate
    # 300 GB/s x 0.82 = 246 GB/s is above NCCL's per-pair send/recv rate, so 25165824 / 80e9 = 314.6 us, plus the
    # NVLink latency 8.4 us: 323.0 us per chunk boundary each way, 2 vp = 8 of them per micro-batch = 2.584 ms
    from perfmodel.api import load_hardware

    hw = load_hardware("a100-sxm-80gb")
    one = 25165824 / 80e9 + 8.4e-6
    got = float(pp.boundary_p2p_time(3 * 1024.0, 4096, 1.0, 1.0, 1.0, 8.0, 4.0, hw))
    assert got == pytest.approx(8 * one, rel=1e-12)
    assert 8 * one == pytest.approx(2.5838e-3, rel=1e-4)
    # the same boundary on plain 1F1B (vp 1): 2 sends per micro-batch
    assert float(pp.boundary_p2p_time(3 * 1024.0, 4096, 1.0, 1.0, 1.0, 8.0, 1.0, hw)) == pytest.approx(
        2 * one, rel=1e-12
    )
