"""Pipeline parallelism: layer splits, stage signatures, schedules and in-flight activations, each against a
case worked by hand from Narayanan et al. 2021 §2.2 and Megatron-Core's split rules (parallel/pp.py)."""

from __future__ import annotations

import numpy as np
import pytest

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
