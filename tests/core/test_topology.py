"""Collectives on the cluster graph (topology.py, comm.py): hand-derived worked cases on small clusters,
the non-blocking catalog reduces to the k x NIC ring, the vectorised path equals the scalar one, and more
bandwidth (NIC, NVLink, less oversubscription) is never slower."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cli_helpers import run_err
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfmodel.core import comm
from perfmodel.core.topology import (
    LEAF,
    NVLINK,
    SPINE,
    cluster_graph,
    group_path,
    group_paths,
    member_graph,
    members_per_domain,
)
from perfmodel.specs.hardware import apply_overrides, load_hardware

H100 = load_hardware("h100-sxm")
NIC = H100.scale_out.bandwidth  # 50 GB/s
EFF = H100.efficiency.scale_out_collective  # 0.93
LAT = H100.scale_out.latency_s  # 22 us


def two_leaves(oversub: float):
    """16 H100 in two scalable units of one node, one rail: two leaves of 8 GPUs, each with 8 x 50 GB/s down
    and 400 / oversub GB/s up to the spine."""
    return apply_overrides(
        H100, ["scale_out.rails=1", "scale_out.scalable_unit_gpus=8", f"spine_oversubscription={oversub}"]
    )


def test_two_leaf_graph_has_oversubscribed_uplinks():
    g = cluster_graph(two_leaves(2), 16)
    leaves = [n for n in g if n != "spine" and n[0] == "leaf"]
    assert sorted(leaves) == [("leaf", 0, 0), ("leaf", 1, 0)]
    for leaf in leaves:
        assert g.nodes[leaf]["gpus"] == 8
        assert g.edges[leaf, "spine"]["capacity"] == pytest.approx(8 * NIC / 2)
    assert g.edges[("gpu", 3), ("nic", 3)]["capacity"] == NIC
    assert g.edges[("gpu", 3), ("nvswitch", 0)]["capacity"] == H100.scale_up.bandwidth


def test_two_to_one_spine_halves_a_dp_ring_across_the_leaves():
    # DP group of 2, tp = 8 ranks apart: ranks 0 and 8, one per leaf. All 8 DP groups (one per TP rank) cross
    # at once: 8 x 50 GB/s of demand on 200 GB/s of uplink, so each ring hop gets 25 GB/s.
    nb = 1e9
    for r, hop in ((1, NIC), (2, NIC / 2)):
        p = group_path(two_leaves(r), 2, 8)
        assert (p.k, p.tier, p.switches) == (1, SPINE, 3)
        assert p.ring_bw == pytest.approx(hop)
        t = comm.all_gather_time(nb, 2, 8, two_leaves(r))
        assert t == pytest.approx(0.5 * nb / (hop * EFF) + LAT)  # (n-1)/n x bytes / busbw + a ring of 2: base + hop
    t1 = comm.all_gather_time(nb, 2, 8, two_leaves(1)) - LAT
    t2 = comm.all_gather_time(nb, 2, 8, two_leaves(2)) - LAT
    assert t2 == pytest.approx(2 * t1)
    # the same pair under one leaf (one unit of 16 GPUs) never touches the spine: no slowdown
    one_leaf = apply_overrides(
        H100, ["scale_out.rails=1", "scale_out.scalable_unit_gpus=16", "spine_oversubscription=2"]
    )
    p = group_path(one_leaf, 2, 8)
    assert (p.tier, p.switches, p.ring_bw) == (LEAF, 1, NIC)


def test_a_ring_crossing_each_leaf_once_keeps_its_nic_bandwidth():
    # DP group of 4, 8 ranks apart: ranks 0, 8 | 16, 24 on two leaves of 16 GPUs (2 nodes, one rail). The ring
    # leaves each leaf once and the group's share of the uplink is 2 members x 50 / 2 = 50 GB/s: the 2:1
    # spine does not slow it (the spine carries half of its all-to-all peers, though).
    hw = apply_overrides(H100, ["scale_out.rails=1", "scale_out.scalable_unit_gpus=16", "spine_oversubscription=2"])
    p = group_path(hw, 4, 8)
    assert (p.tier, p.ring_bw, p.spine_share) == (SPINE, NIC, 0.5)


def test_a_group_inside_one_nvlink_domain_never_touches_the_nic():
    p = group_path(two_leaves(2), 8, 1)
    assert (p.k, p.tier, p.ring_bw, p.spine_share) == (8, NVLINK, math.inf, 0.0)
    slow_net = apply_overrides(two_leaves(8), ["nic_gbit_s=1"])
    for fn in (comm.all_gather_time, comm.all_reduce_time, comm.all_to_all_time):
        assert fn(1e9, 8, 1, slow_net) == fn(1e9, 8, 1, H100)
    assert comm.p2p_time(1e6, 4, slow_net) == comm.p2p_time(1e6, 4, H100)
    # hand value: ring all-gather at the measured NVLink busbw, 7/8 of 1 GB and of the ramp's b_half, latency
    # 8.4 us x (1 + log2 8)
    bw, half = H100.scale_up.bandwidth * H100.efficiency.scale_up_collective, comm.half_bytes(H100)
    assert comm.all_gather_time(1e9, 8, 1, H100) == pytest.approx(
        7 / 8 * (1e9 + half) / bw + H100.scale_up.latency_s * 4
    )


def test_latency_grows_with_the_tiers_crossed():
    hw = apply_overrides(H100, ["scale_out.spine_latency_s=5e-6"])  # SU of 256 GPUs (catalog)
    su, so, sp = hw.scale_up.latency_s, LAT, LAT + 5e-6
    assert [group_path(hw, 2, s).tier for s in (1, 8, 256)] == [NVLINK, LEAF, SPINE]
    # lat x (1 + log2 2), and the NVLink ramp's 1/2 x b_half at the busbw (none across domains)
    ramp = 0.5 * comm.half_bytes(hw) / (hw.scale_up.bandwidth * hw.efficiency.scale_up_collective)
    assert comm.all_gather_time(0.0, 2, 1, hw) == pytest.approx(su * 2 + ramp)
    # across domains NCCL's ring: the base + (n - 1) network hops at the tier's latency less the base (one member
    # per domain here, comm.ring_latency)
    assert comm.all_gather_time(0.0, 2, 8, hw) == pytest.approx(so)
    assert comm.all_gather_time(0.0, 2, 256, hw) == pytest.approx(sp)
    assert comm.all_gather_time(0.0, 64, 8, hw) == pytest.approx(su + 63 * (sp - su))  # 64 DP ranks span 2 units
    assert comm.all_gather_time(0.0, 32, 8, hw) == pytest.approx(su + 31 * (so - su))  # 32 fit one unit (256 GPUs)
    np.testing.assert_allclose(comm.p2p_time(0.0, np.array([1, 8, 256]), hw), [su, so, sp])
    # the catalog (no extra spine latency) prices both network tiers alike, as the NCCL tuning model does
    assert comm.p2p_time(0.0, 256, H100) == comm.p2p_time(0.0, 8, H100) == LAT


def test_all_to_all_beyond_the_unit_is_limited_by_the_uplink_share():
    # EP 16 over two 8-GPU units (8 rails, one node each), 2:1 spine: half of each GPU's bytes go beyond its
    # unit through its 25 GB/s uplink share, the other half stay in its NVLink domain.
    hw = apply_overrides(H100, ["scale_out.scalable_unit_gpus=8", "spine_oversubscription=2"])
    p = group_path(hw, 16, 1)
    assert (p.k, p.tier, p.spine_share, p.uplink_bw) == (8, SPINE, 0.5, NIC / 2)
    nb, a2a = 1e9, hw.efficiency.scale_out_all_to_all
    local = 7 / 16 * nb / (hw.scale_up.bandwidth * hw.efficiency.scale_up_all_to_all)
    remote = max(8 / 16 * nb / (NIC * a2a), 0.5 * nb / (NIC / 2 * a2a))
    assert comm.all_to_all_time(nb, 16, 1, hw) == pytest.approx(max(local, remote) + LAT * 5)
    assert comm.all_to_all_time(nb, 16, 1, hw) > comm.all_to_all_time(nb, 16, 1, H100)


CATALOG = ["h100-sxm", "b200", "b300", "gb200-nvl72", "gb300-nvl72", "a100-sxm-80gb"]
SHAPES = [
    (s, t) for s in (2, 3, 4, 6, 8, 16, 36, 64, 72, 96, 256, 512, 1024) for t in (1, 2, 3, 8, 16, 64, 72, 256, 576)
]


@pytest.mark.parametrize("hid", CATALOG)
def test_non_blocking_catalog_ring_is_k_nics(hid):
    """On a non-blocking fabric the max flow between two domains' members is their k NICs, so the graph path
    reproduces the closed form min(NVLink, k x NIC) of comm.py before the graph (the snapshot's identity)."""
    hw = load_hardware(hid)
    for size, stride in SHAPES:
        k = int(members_per_domain(size, stride, hw.scale_up.domain_size))
        p = group_path(hw, size, stride)
        assert p.k == k
        assert p.ring_bw == (math.inf if k >= size else k * hw.scale_out.bandwidth), (size, stride)


def test_vectorised_shapes_equal_scalar_calls():
    hw = apply_overrides(load_hardware("gb200-nvl72"), ["spine_oversubscription=3"])
    rng = np.random.default_rng(3)
    size = rng.choice([1, 2, 4, 8, 16, 64, 144, 256], 500)
    stride = rng.choice([1, 2, 8, 64, 72, 576], 500)
    paths, inv = group_paths(hw, size, stride)
    assert len(paths) == len({(a, b) for a, b in zip(size, stride)})
    for i in range(0, 500, 7):
        assert paths[inv[i]] == group_path(hw, int(size[i]), int(stride[i]))
    nb = rng.uniform(1e6, 1e9, 500)
    vec = comm.all_to_all_time(nb, size, stride, hw)
    for i in range(0, 500, 11):
        assert vec[i] == comm.all_to_all_time(nb[i], int(size[i]), int(stride[i]), hw)


BASES = [
    apply_overrides(load_hardware("h100-sxm"), ["spine_oversubscription=2"]),
    apply_overrides(
        load_hardware("h100-sxm"), ["scale_out.scalable_unit_gpus=32", "scale_out.rails=4", "spine_oversubscription=4"]
    ),
    apply_overrides(load_hardware("gb200-nvl72"), ["scale_out.scalable_unit_gpus=144", "spine_oversubscription=2"]),
]
FASTER = [["nic_gbit_s=800"], ["nvlink_gbyte_s=1800"], ["spine_oversubscription=1"]]
PAIRS = [(b, apply_overrides(b, f)) for b in BASES for f in FASTER]


# derandomized (the same 120 examples every run, as the suite's other property tests): a random draw per run
# would make a rare counter-example a flake instead of a failure (all 990 size x stride x pair shapes hold)
@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    pair=st.sampled_from(PAIRS),
    size=st.sampled_from([2, 3, 4, 8, 9, 16, 32, 64, 128, 144, 512]),
    stride=st.sampled_from([1, 2, 4, 8, 16, 32, 72, 128, 144, 256]),
    nbytes=st.floats(1e3, 1e10),
)
def test_more_bandwidth_is_never_slower(pair, size, stride, nbytes):
    slow, fast = pair
    for fn in (comm.all_gather_time, comm.all_reduce_time, comm.all_to_all_time):
        assert fn(nbytes, size, stride, fast) <= fn(nbytes, size, stride, slow) * (1 + 1e-12)
    assert comm.moe_dispatch_time(nbytes / 8, 8, size, stride, fast, 256) <= comm.moe_dispatch_time(
        nbytes / 8, 8, size, stride, slow, 256
    ) * (1 + 1e-12)
    assert comm.p2p_time(nbytes, stride, fast) <= comm.p2p_time(nbytes, stride, slow) * (1 + 1e-12)


@pytest.mark.parametrize(
    "item, field",
    [
        ("spine_oversubscription=0.5", "spine_oversubscription"),
        ("scale_out.scalable_unit_gpus=100", "scalable_unit_gpus"),
        ("scale_out.rails=16", "rails"),
    ],
)
def test_bad_network_fields_are_one_line_errors(capsys, item, field):
    line = run_err(
        capsys,
        [
            "predict",
            "--model",
            "llama3-70b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "64",
            "--tp",
            "8",
            "--gbs",
            "64",
            "--seq",
            "8192",
            "--set",
            item,
        ],
    )
    assert field in line


def test_the_worst_placed_group_straddles_a_unit_boundary():
    # GB200: 576-GPU units (8 racks) are not a multiple of a 256-rank EP group, so some groups straddle two
    # units. A group is 3 full racks and 40 members of a 4th (placed rack-aligned, 72 per rack); the worst one
    # (starting at rank 1512, a rack boundary) has its 40 last members in the next unit: they reach
    # (256 - 40) / 256 of their peers through the spine, and the all-to-all waits for them. (The ring's padding
    # of the 4th rack to 72 is not members: counting it gave 72 there, (256 - 72) / 256.)
    gb = load_hardware("gb200-nvl72")
    over = apply_overrides(gb, ["spine_oversubscription=2"])
    p = group_path(over, 256, 1)
    assert (p.k, p.tier, p.spine_share) == (72, SPINE, (256 - 40) / 256)
    assert group_path(over, 128, 1).spine_share == (128 - 56) / 128  # one rack and 56 of the next
    nb = 1e9
    assert comm.all_to_all_time(nb, 256, 1, over) > comm.all_to_all_time(nb, 256, 1, gb)
    # non-blocking: the members of the partial rack wait longest, 216 of 256 peers beyond their rack (over
    # the NICs), the rest at full rack members' 71 / 256 over NVLink bounding the in-domain part
    assert comm.all_to_all_time(nb, 256, 1, gb) == pytest.approx(
        max(
            71 / 256 * nb / (gb.scale_up.bandwidth * gb.efficiency.scale_up_all_to_all),
            216 / 256 * nb / (gb.scale_out.bandwidth * gb.efficiency.scale_out_all_to_all),
        )
        + gb.scale_out.latency_s * 9
    )
    # pipeline neighbours 256 ranks apart: the pair starting at rank 512 crosses into the next unit
    assert group_path(over, 2, 256).tier == SPINE
    assert comm.p2p_time(1e6, 256, over) > comm.p2p_time(1e6, 256, gb)


def test_member_graph_is_the_cluster_graph_induced_on_the_members():
    hw = apply_overrides(H100, ["scale_out.scalable_unit_gpus=32", "scale_out.rails=4", "spine_oversubscription=2"])
    ranks = (0, 1, 2, 3, 8, 9, 10, 11, 33, 34, 35, 36)
    sub = member_graph(hw, ranks, 32)
    full = cluster_graph(hw, 64)
    assert set(sub.nodes) <= set(full.nodes)
    assert {(frozenset(e), d["capacity"], d["tier"]) for *e, d in sub.edges(data=True)} == {
        (frozenset(e), d["capacity"], d["tier"]) for *e, d in full.subgraph(sub.nodes).edges(data=True)
    }
    assert all(sub.nodes[n].get("gpus") == full.nodes[n].get("gpus") for n in sub)
    # 4 rails: GPUs 0-3 of each node on leaves 0-3, GPUs 4-7 on the same four; 32-GPU units
    assert full.nodes[("leaf", 1, 2)]["gpus"] == 8 and full.edges[("leaf", 1, 2), "spine"]["capacity"] == 8 * NIC / 2


def _groups_worst(ranks, size, stride, D, U, blocks):
    """Brute force: every group of the shape in the first `blocks` blocks of span size x stride (the `stride`
    interleaved groups of a block where stride >= D; the block start rounded down to a domain boundary where
    the group has several members per domain), the earliest of those with the fewest members in one unit."""
    span = size * stride
    best = (0, -1.0)
    for b in range(blocks):
        for o in range(b * span, b * span + stride) if stride >= D else [b * span // D * D]:
            parts = np.unique((ranks + o) // U, return_counts=True)[1]
            share = (size - parts.min()) / size
            if share > best[1]:
                best = (o, share)
    return best


def test_worst_offset_tries_every_group_of_a_small_shape():
    # up to 8 interleaved groups and up to MAX_OFFSETS blocks: for strides <= 8 and periods <= 64 blocks the
    # search is exhaustive, so it finds the earliest worst-placed group (domains of 1-8 GPUs, units of up to
    # 40; shapes whose members fill whole domains)
    from perfmodel.core.topology import MAX_OFFSETS, _worst_offset

    n = 0
    for D in (1, 2, 4, 8):
        for U in range(D, 41, D):
            for size in range(2, 9):
                for stride in range(1, 9):
                    k = int(members_per_domain(size, stride, D))
                    period = U // math.gcd(size * stride, U)
                    if k >= size or size % k or period > MAX_OFFSETS:
                        continue
                    ranks = np.array(
                        [i * stride if stride >= D else (i // k) * D + (i % k) * stride for i in range(size)],
                        dtype=np.int64,
                    )
                    assert _worst_offset(ranks, size, stride, D, U) == _groups_worst(
                        ranks, size, stride, D, U, period
                    ), (D, U, size, stride)
                    n += 1
    assert n > 300


def test_the_worst_group_can_leave_one_member_alone_in_its_unit():
    # 23 members 8 ranks apart (one per H100 node) in 32-GPU units (4 nodes): blocks of 184 ranks, 4 blocks per
    # period. The group at rank 0 has 3 members (160, 168, 176) in unit 5: 20/23 of their peers are beyond it;
    # the group at 184 has rank 184 alone in unit 5 (160-191): 22/23, the worst
    hw = apply_overrides(H100, ["scale_out.scalable_unit_gpus=32"])
    assert group_path(hw, 23, 8).spine_share == pytest.approx(22 / 23, rel=1e-12)


def test_worst_offset_search_is_bounded():
    # the search costs at most MAX_OFFSETS = 64 block starts: 3 consecutive ranks in 193-rank units have a
    # period of 193 blocks, and the first group to straddle a unit boundary (ranks 192-194, block 64, the 65th)
    # lies just beyond the bound, so it is not seen: the documented approximation (the worst share over the
    # whole period is 2/3)
    from perfmodel.core.topology import _worst_offset

    ranks = np.arange(3, dtype=np.int64)
    assert _worst_offset(ranks, 3, 1, 1, 193) == _groups_worst(ranks, 3, 1, 1, 193, 64) == (0, 0.0)
    assert _groups_worst(ranks, 3, 1, 1, 193, 193) == (192, 2 / 3)


def test_spine_share_counts_the_real_members_not_the_padding():
    """10 members 8 ranks apart on GB200 NVL72 (72-GPU domains, 576-GPU scalable units): 9 fit a domain, the
    worst-placed group's 10th member sits alone in the next unit, so 9 of its 10 peers are beyond the spine
    (0.9); the last domain's padding to 9 members (a full ring) must not enter the share. 12 members 8
    apart tile a unit exactly (96-rank blocks, 6 per 576): none straddles, 0. A share is never negative."""
    from perfmodel.core.topology import group_path
    from perfmodel.specs.hardware import load_hardware

    hw = load_hardware("gb200-nvl72")
    assert group_path(hw, 10, 8).spine_share == pytest.approx(0.9)
    assert group_path(hw, 12, 8).spine_share == 0.0
    for size in range(2, 40):
        assert 0.0 <= group_path(hw, size, 8).spine_share <= 1.0


def test_groups_leaving_the_nvlink_domain():
    """leaves_domain: a group leaves its scale-up domain when fewer of its members fit in one domain than it has:
    8 consecutive ranks fill an 8-GPU HGX domain exactly (inside), 16 span two; 4 members 2 apart fit (span 8),
    8 members 2 apart do not. domain_exits on a layout: TP (stride 1), TP x CP (consecutive tp*cp ranks), EP
    (ep members etp apart)."""
    from toy import toy_hw

    from perfmodel.core.topology import domain_exits, leaves_domain

    assert [bool(leaves_domain(s, st, 8)) for s, st in ((8, 1), (16, 1), (4, 2), (8, 2), (1, 16))] == [
        False,
        True,
        False,
        True,
        False,
    ]
    hw = toy_hw()
    D = hw.scale_up.domain_size
    ex = domain_exits(hw, tp=D // 2, cp=2, ep=D, etp=1)
    assert (bool(ex["tp"]), bool(ex["tp_cp"]), bool(ex["ep"])) == (False, False, False)
    ex = domain_exits(hw, tp=D // 2, cp=4, ep=D, etp=2)
    assert (bool(ex["tp"]), bool(ex["tp_cp"]), bool(ex["ep"])) == (False, True, True)
