"""Pipeline parallelism: layer splits, stage signatures, schedules and in-flight activations, each against a
case worked by hand from Narayanan et al. 2021 §2.2 and Megatron-Core's split rules (parallel/pp.py)."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_hw

from perfmodel.api import Layout, predict
from perfmodel.core.parallel import pp
from perfmodel.specs.layout import LayoutGrid, legality
from perfmodel.specs.model import load_model


def test_even_split():
    assert pp.chunk_layers(80, 4, 5) == [4] * 20


def test_embedding_and_loss_take_a_slot_each():
    # Llama 3.1 405B: 126 layers on pp8 vp8 = 64 chunks of 2 slots; first chunk embedding + 1, last 1 + loss
    sizes = pp.chunk_layers(126, 8, 8)
    assert sizes[0] == 1 and sizes[-1] == 1 and set(sizes[1:-1]) == {2} and sum(sizes) == 126


def test_loss_takes_a_slot():
    assert pp.chunk_layers(63, 4, 4) == [4] * 15 + [3]


def test_uneven_split_fills_middle_chunks_first():
    # DeepSeek-V3, 61 layers on pp16: 3 each, the 13 left over to chunks 1..13
    sizes = pp.chunk_layers(61, 16, 1)
    assert sizes == [3] + [4] * 13 + [3, 3]


def test_mtp_and_loss_take_layer_slots():
    # DeepSeek-V3, 61 layers + 1 MTP: embedding, MTP and loss take a slot each, 64 slots.
    # pp16: 4 a chunk; NeMo 2.0 pretrain_deepseek_v3.py first = 64 // 16 - 1 = 3, last = 64 // 16 - 2 = 2
    assert pp.chunk_layers(61, 16, 1, mtp=1) == [3] + [4] * 14 + [2]
    # pp4: first 15, last 14 (the same script: 64 // 4 - 1, 64 // 4 - 2)
    assert pp.chunk_layers(61, 4, 1, mtp=1) == [15, 16, 16, 14]
    # pp8 vp4 = 32 chunks of 2 slots: Megatron-Bridge's H100 layout "Et|(tt|)*30mL" (last chunk: MTP + loss only)
    assert pp.chunk_layers(61, 8, 4, mtp=1) == [1] + [2] * 30 + [0]
    # pp3 does not divide 64: the general rule (floor 20, the remainder 1 to the middle chunk)
    assert pp.chunk_layers(61, 3, 1, mtp=1) == pp.chunk_layers(61, 3, 1) == [20, 21, 20]
    # without MTP nothing changes
    assert pp.chunk_layers(61, 16, 1, mtp=0) == [3] + [4] * 13 + [3, 3]
    m = load_model("deepseek-v3")
    kinds = tuple(0 if not m.is_moe_layer(i) else 1 for i in range(m.num_layers))
    counts = pp.rank_table(kinds, 2, 16, 1, m.mtp_layers)
    assert counts[0] == (3, 0) and counts[1] == (0, 4) and counts[14] == (0, 4) and counts[15] == (0, 2)


def test_bridge_map_layout_of_deepseek_v3():
    # Megatron-Bridge recipes/deepseek/deepseek_v3.py layout map, 61 layers + 1 MTP (s = 64 / C slots):
    # [embedding + s decoders], (C - 2) x [s], [s - 3 decoders + mtp + loss]
    assert pp.chunk_layers(61, 16, 1, 1, "bridge_map") == [4] + [4] * 14 + [1]  # (16, 1): 4 | 4 x 14 | 1
    assert pp.chunk_layers(61, 4, 4, 1, "bridge_map") == [4] * 15 + [1]  # (4, 4), GB300 'Et*4|(t*4|)*14tmL'
    assert pp.chunk_layers(61, 8, 1, 1, "bridge_map") == [8] * 7 + [5]  # (8, 1): 8 | 8 x 6 | 5
    assert pp.chunk_layers(61, 4, 1, 1, "bridge_map") == [16, 16, 16, 13]  # (4, 1)
    for p, v in ((16, 1), (4, 4), (8, 1), (4, 1)):
        assert sum(pp.chunk_layers(61, p, v, 1, "bridge_map")) == 61
    # s = 2 leaves no room (H100 pp8 vp4): the presets' own 'Et|(tt|)*30mL', the slot rule
    assert pp.chunk_layers(61, 8, 4, 1, "bridge_map") == pp.chunk_layers(61, 8, 4, 1) == [1] + [2] * 30 + [0]
    # without MTP the maps keep their counts (Kimi-K2's map; DeepSeek-V3's with mtp_num_layers unset): the loss
    # beside one decoder layer, where Megatron-Core's own split would give 3 | 4 x 13 | 3 | 3
    assert pp.chunk_layers(61, 16, 1, 0, "bridge_map") == [4] * 15 + [1]
    assert pp.chunk_layers(61, 2, 8, 0, "bridge_map") == [4] * 15 + [1]  # Kimi-K2 (2, 8)
    assert pp.chunk_layers(61, 16, 1, 0) == [3] + [4] * 13 + [3, 3]
    # a (pp, vp) the maps do not list (pp2 vp4, pp3) or a layer count 64 / C does not fit: the map has no say
    assert pp.chunk_layers(61, 2, 4, 0, "bridge_map") == pp.chunk_layers(61, 2, 4, 0)
    assert pp.chunk_layers(61, 3, 1, 1, "bridge_map") == [20, 21, 20]
    assert pp.chunk_layers(80, 4, 1, 0, "bridge_map") == [20] * 4
    # on DeepSeek-V3's kinds the first rank holds the 3 dense layers and one MoE layer, the last one MoE layer
    m = load_model("deepseek-v3")
    kinds = tuple(0 if not m.is_moe_layer(i) else 1 for i in range(m.num_layers))
    counts = pp.rank_table(kinds, 2, 16, 1, m.mtp_layers, "bridge_map")
    assert counts[0] == (3, 1) and counts[1] == (0, 4) and counts[15] == (0, 1)


def test_pipeline_layout_reaches_the_prediction():
    # the same DeepSeek-V3 pp16 layout priced under the two layouts: the Bridge map moves one MoE layer from the
    # last rank (which also holds the LM head and the MTP module) to the first (embedding + 3 dense layers), so the
    # slowest rank is lighter and the step shorter; the stack feature selects it
    from perfmodel.api import predict
    from perfmodel.specs.layout import Layout

    L = Layout(gpus=256, gbs=4096, seq=4096, pp=16, ep=8, mbs=1, recompute="selective")
    a = predict(
        "deepseek-v3", "b200", L, precision="mxfp8", stack="nemo-26.04", stack_set=("pipeline_layout=module_slots",)
    )
    b = predict("deepseek-v3", "b200", L, precision="mxfp8", stack="nemo-26.04")
    assert b.breakdown_s["stage_imbalance"][0] < a.breakdown_s["stage_imbalance"][0]
    assert b.step_time_s[0] < a.step_time_s[0]


def test_deepseek_dense_layers_land_on_the_first_rank():
    m = load_model("deepseek-v3")
    kinds = tuple(0 if not m.is_moe_layer(i) else 1 for i in range(m.num_layers))
    counts = pp.rank_table(kinds, 2, 16, 1)
    assert counts[0] == (3, 0)  # the 3 dense first layers, nothing else
    assert counts[1] == (0, 4) and counts[15] == (0, 3)
    sig = pp.signatures(kinds, 2, 16, 1)
    assert sum(n for *_, n in sig) == 16
    assert {(c, e, h) for c, e, h, _ in sig} == {
        ((3, 0), True, False),
        ((0, 4), False, False),
        ((0, 3), False, False),
        ((0, 3), False, True),
    }


@pytest.mark.parametrize(
    "p,v,m,total",
    [
        (4, 1, 8, 11.0),  # 1F1B: (m + pp - 1) t
        (4, 2, 8, 9.5),  # interleaved: m t + (pp - 1) t / vp
        (4, 2, 1, 4.0),  # m < pp: pp t + (m - 1) t / vp -- interleaving buys nothing
        (4, 4, 2, 4.25),  # m < pp: 4 + 1/4
        (1, 1, 8, 8.0),  # no pipeline
    ],
)
def test_schedule_equal_stages(p, v, m, total):
    t = 1.0
    got, bubble = pp.schedule_time(
        np.array(t), np.array(p * t), np.array(float(p)), np.array(float(v)), np.array(float(m))
    )
    assert float(got) == pytest.approx(total) and float(bubble) == pytest.approx(total - m * t)


def test_schedule_unequal_stages_1f1b():
    # stage times 1, 2, 1 and 4 micro-batches: (m - 1) max + sum = 3 * 2 + 4
    got, _ = pp.schedule_time(np.array(2.0), np.array(4.0), np.array(3.0), np.array(1.0), np.array(4.0))
    assert float(got) == pytest.approx(10.0)


def test_in_flight_per_rank():
    p, v, m = np.array(4.0), np.array(1.0), np.array(16.0)
    assert [float(pp.in_flight(p, v, m, r)) for r in range(4)] == [4, 3, 2, 1]
    # interleaved first rank: pp (1 + (pp-1)/(pp vp)) = 4 * (1 + 3/8) (Korthikanti et al. 2022 §4.2.3)
    assert float(pp.in_flight(p, np.array(2.0), m, 0)) == pytest.approx(5.5)
    # last rank interleaved: (vp-1) pp + 1 chunks of 1/vp: (4 + 1) / 2
    assert float(pp.in_flight(p, np.array(2.0), m, 3)) == pytest.approx(2.5)
    # never more than the micro-batches there are
    assert float(pp.in_flight(p, v, np.array(2.0), 0)) == 2


def test_interleaving_needs_microbatches_multiple_of_pp():
    g = LayoutGrid.from_layouts(
        [
            Layout(gpus=16, gbs=3, seq=4096, tp=8, pp=2, vp=2),
            Layout(gpus=16, gbs=4, seq=4096, tp=8, pp=2, vp=2),
            Layout(gpus=16, gbs=3, seq=4096, tp=8, pp=2, vp=1),
        ]
    )
    bad = legality(g, 80, 64, 8, None)["interleave"]
    assert bad.tolist() == [True, False, False]


def test_fewer_microbatches_than_stages_is_not_bubble_free():
    """One micro-batch through 2 interleaved ranks: a full pipeline traversal, about half the step idle."""
    lay = Layout(gpus=16, gbs=2, seq=8192, tp=8, pp=2, vp=1, mbs=2)
    b = predict("llama3-70b", "h100-sxm", lay).row(0)
    assert b["breakdown_s"]["pipeline_bubble"] / b["step_time_s"] > 0.4


def test_last_stage_carries_the_head():
    """pp=2: the last rank holds the LM head, loss and MTP; its stage is the slower one and the step's
    stage_imbalance is positive (the even average would hide it)."""
    p = predict(
        "deepseek-v3",
        "gb200-nvl72",
        Layout(gpus=256, gbs=1024, seq=4096, pp=2, ep=64),
    ).row(0)
    assert p["breakdown_s"]["stage_imbalance"] > 0
    step = sum(p["breakdown_s"].values())
    assert step == pytest.approx(p["step_time_s"], rel=1e-12)


def test_gpipe_holds_every_microbatch():
    # GPipe runs all forwards before any backward: every rank stashes the activations of all m micro-batches
    # (Huang et al. 2019 §2.3; Narayanan et al. 2021 §2.2.1: 1F1B limits them to the pipeline depth "instead of
    # the number of microbatches in a batch"); pp 4, m 8: 8 on every rank, where 1F1B holds 4, 3, 2, 1
    p, v, m = np.array(4.0), np.array(1.0), np.array(8.0)
    assert [float(pp.in_flight(p, v, m, r, "gpipe")) for r in range(4)] == [8, 8, 8, 8]
    assert [float(pp.in_flight(p, v, m, r, "1f1b")) for r in range(4)] == [4, 3, 2, 1]
    # ... and through memory.py: toy dense, 8 GPUs at tp 2, pp 2, 8 micro-batches of 1 sequence: rank 0 holds
    # 8 x its 2 layers' 38,830,080 B instead of 2 x
    from toy import toy_consts, toy_dense, toy_hw

    from perfmodel.core.predict import Options, predict_grid
    from perfmodel.specs.layout import Layout, LayoutGrid

    lay = LayoutGrid.of(Layout(gpus=8, gbs=16, seq=2048, tp=2, pp=2))
    act = {
        s: float(
            predict_grid(
                toy_dense(), toy_hw(), lay, Options(consts=toy_consts(), stack_set=(f"pipeline_schedule={s}",))
            ).memory_stages["first"][0]
        )
        for s in ("1f1b", "gpipe")
    }
    assert act["gpipe"] - act["1f1b"] == pytest.approx((8 - 2) * 2 * 38830080, rel=1e-12)


def test_bridge_map_never_leaves_a_chunk_without_layers():
    """The Bridge map applies only while its last chunk keeps a decoder layer (s - 3 >= 1, s > 3): a 45-layer
    model on 16 chunks (s = 48 / 16 = 3) would get [3] x 15 + [0], so it takes Megatron-Core's split instead."""
    assert pp.chunk_layers(45, 16, 1, 0, "bridge_map") == pp.chunk_layers(45, 16, 1, 0)
    assert min(pp.chunk_layers(45, 16, 1, 0, "bridge_map")) > 0
    assert pp.chunk_layers(61, 16, 1, 0, "bridge_map") == [4] * 15 + [1]  # s = 4: the map


# parallel/pp.py beyond the splits and schedules above: the interleaving legality rule, the pipeline send/recv
# cost and the ranks whose memory is compared, against cases worked by hand (toy cluster, tests/toy.py).
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
    # 300 GB/s x 0.76 = 228 GB/s is above NCCL's per-pair send/recv rate, so 25165824 / 80e9 = 314.6 us, plus the
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
