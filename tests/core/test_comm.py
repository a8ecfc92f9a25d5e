"""comm.py and topology.py against cases worked by hand on the toy cluster (tests/toy.py): NVLink domains of 8
GPUs at 400 GB/s (all-gather / reduce-scatter busbw 0.5 -> 200 GB/s, NVLS all-reduce 0.75 -> 300 GB/s,
all-to-all 0.25 -> 100 GB/s), NIC 50 GB/s (collective 0.8 -> 40 GB/s, all-to-all 0.5 -> 25 GB/s); latency
10 us inside a domain, 20 us across, times 1 + log2(n); an all-gather / reduce-scatter across domains is NCCL's
ring (comm.ring_latency): 10 us + (n - D) x 3.4 us NVLink steps + (D - 1) x 10 us network hops, D domains.

Bus-bandwidth convention (nccl-tests PERFORMANCE.md): all-gather / reduce-scatter move (n-1)/n of the buffer,
all-reduce 2(n-1)/n. A group spanning domains runs at min(NVLink busbw, k x NIC busbw), k its members per
domain (NCCL ring, one channel per rail)."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_hw

from perfmodel.core import comm
from perfmodel.core.topology import LEAF, NVLINK, SPINE, cluster_graph, group_path, members_per_domain

HW = toy_hw()
REL = 1e-12


def ring(n, d, hop=10e-6, base=10e-6):
    """NCCL's ring all-gather latency over n GPUs in d domains (tuning.cc Ring / Simple): base + (n - d) NVLink steps
    of 3.4 us + (d - 1) network hops."""
    return base + (n - d) * 3.4e-6 + (d - 1) * hop


def test_ring_latency_is_linear_in_the_gpus_where_a_tree_is_logarithmic():
    # 2 domains: 10 + 14 x 3.4 + 10 = 67.6 us; 8 domains of 8 (64 GPUs): 10 + 56 x 3.4 + 7 x 10 = 270.4 us; inside
    # one domain the log form (8 GPUs: 10 x 4 = 40 us)
    assert float(comm.all_gather_time(0.0, 16, 1, HW)) == pytest.approx(67.6e-6, rel=REL)
    assert float(comm.all_gather_time(0.0, 64, 1, HW)) == pytest.approx(270.4e-6, rel=REL)
    assert float(comm.all_gather_time(0.0, 8, 1, HW)) == pytest.approx(40e-6, rel=REL)
    # one member per domain (stride 8): 16 domains, every step a network hop: 10 + 15 x 10 = 160 us
    assert float(comm.all_gather_time(0.0, 16, 8, HW)) == pytest.approx(160e-6, rel=REL)
    # calls: one latency each, the bytes once
    t = comm.all_gather_from_terms(8e8, *comm.all_gather_terms(16, 1, HW), 5.0)
    assert float(t) == pytest.approx(15 / 16 * 8e8 / 2e11 + 5 * 67.6e-6, rel=REL)


@pytest.mark.parametrize(
    "size,stride,k", [(8, 1, 8), (16, 1, 8), (4, 2, 4), (4, 4, 2), (4, 16, 1), (2, 8, 1), (8, 3, 2), (3, 0, 3)]
)
def test_members_per_domain(size, stride, k):
    # k = min(size, max(1, 8 // stride)); stride 0 counts as 1
    assert int(members_per_domain(size, stride, 8)) == k


def test_latency_term():
    # 8 GPUs in a domain: 10 us * (1 + log2 8) = 40 us; 16 across domains: 20 us * (1 + 4) = 100 us; one GPU: 0
    from perfmodel.core.topology import LEAF, NVLINK

    assert float(comm._latency(HW, NVLINK, 8)) == pytest.approx(40e-6, rel=REL)
    assert float(comm._latency(HW, LEAF, 16)) == pytest.approx(100e-6, rel=REL)
    assert float(comm._latency(HW, NVLINK, 1)) == 0.0


def test_all_gather_inside_a_domain():
    # 8 GPUs, 800 MB gathered: 7/8 * 8e8 / 2e11 = 3.5 ms + 40 us
    assert float(comm.all_gather_time(8e8, 8, 1, HW)) == pytest.approx(3.54e-3, rel=REL)
    # 2 GPUs: 1/2 * 8e8 / 2e11 = 2 ms + 10 us * 2
    assert float(comm.all_gather_time(8e8, 2, 1, HW)) == pytest.approx(2.02e-3, rel=REL)
    assert float(comm.all_gather_time(8e8, 1, 1, HW)) == 0.0
    assert comm.reduce_scatter_time is comm.all_gather_time


def test_the_nvlink_ramp_adds_its_half_bandwidth_bytes_to_every_call_inside_a_domain():
    # busbw(b) = plateau x b / (b + b_half): b_half = 4 MB on the toy: 7/8 x (8e8 + 4e6) / 2e11 + 40 us
    hw = toy_hw(collective_half_bytes=4e6)
    assert comm.half_bytes(hw) == 4e6
    assert float(comm.all_gather_time(8e8, 8, 1, hw)) == pytest.approx(7 / 8 * 8.04e8 / 2e11 + 40e-6, rel=REL)
    # all-reduce (NVLS 3e11): 2 x 7/8 x (1.2e9 + 4e6) / 3e11 + 40 us
    assert float(comm.all_reduce_time(1.2e9, 8, 1, hw)) == pytest.approx(1.75 * 1.204e9 / 3e11 + 40e-6, rel=REL)
    # 5 calls: the ramp per call, as the latency (the same bytes in smaller messages ramp five times)
    t = comm.all_gather_from_terms(8e8, *comm.all_gather_terms(8, 1, hw), 5.0)
    assert float(t) == pytest.approx(7 / 8 * (8e8 + 5 * 4e6) / 2e11 + 5 * 40e-6, rel=REL)
    # across domains no table measures a ramp: the same time as without it
    for size, stride in ((16, 1), (16, 4)):
        assert float(comm.all_gather_time(8e8, size, stride, hw)) == float(comm.all_gather_time(8e8, size, stride, HW))
    assert float(comm.all_reduce_time(8e8, 16, 1, hw)) == float(comm.all_reduce_time(8e8, 16, 1, HW))
    assert float(comm.all_gather_time(8e8, 1, 1, hw)) == 0.0


def test_all_gather_across_domains():
    # 16 GPUs, 8 per domain: min(2e11, 8 x 4e10) = 2e11 (NVLink binds): 15/16 * 8e8 / 2e11 = 3.75 ms + the ring's
    # 67.6 us
    assert float(comm.all_gather_time(8e8, 16, 1, HW)) == pytest.approx(3.75e-3 + ring(16, 2), rel=REL)
    # 16 GPUs 4 apart, 2 per domain: min(2e11, 2 x 4e10) = 8e10 (NICs bind): 15/16 * 8e8 / 8e10 = 9.375 ms + the
    # ring over 8 domains, 107.2 us
    assert float(comm.all_gather_time(8e8, 16, 4, HW)) == pytest.approx(9.375e-3 + ring(16, 8), rel=REL)


def test_all_reduce():
    # inside (NVLS): 2 * 7/8 * 1.2e9 / 3e11 = 7 ms + 40 us
    assert float(comm.all_reduce_time(1.2e9, 8, 1, HW)) == pytest.approx(7.04e-3, rel=REL)
    # no NVLS: the ring busbw 2e11: 2.1e9 / 2e11 = 10.5 ms + 40 us
    plain = toy_hw().model_copy(update={"scale_up": toy_hw().scale_up.model_copy(update={"nvls": False})})
    assert float(comm.all_reduce_time(1.2e9, 8, 1, plain)) == pytest.approx(10.54e-3, rel=REL)
    # across domains the NVLink side runs the ring (no NVLS): 2 * 15/16 * 8e8 / 2e11 = 7.5 ms + 100 us
    assert float(comm.all_reduce_time(8e8, 16, 1, HW)) == pytest.approx(7.6e-3, rel=REL)
    assert float(comm.all_reduce_time(8e8, 1, 1, HW)) == 0.0


def test_all_to_all():
    # 16 GPUs, 1.6 GB each: 7/16 to the 7 domain peers over NVLink, 8/16 over the NIC, concurrently:
    # max(0.7e9 / 1e11, 0.8e9 / 2.5e10) = max(7 ms, 32 ms) + 100 us
    assert float(comm.all_to_all_time(1.6e9, 16, 1, HW)) == pytest.approx(32.1e-3, rel=REL)
    # inside a domain: 7/8 * 1.6e9 / 1e11 = 14 ms + 40 us
    assert float(comm.all_to_all_time(1.6e9, 8, 1, HW)) == pytest.approx(14.04e-3, rel=REL)
    assert float(comm.all_to_all_time(1.6e9, 1, 1, HW)) == 0.0


def test_domains_reached_balls_into_bins():
    # R (1 - (1 - 1/R)^k): 4 domains, top-2: 4 (1 - 9/16) = 1.75; one domain: 1
    assert float(comm.domains_reached(2, 4, 64)) == pytest.approx(1.75, rel=REL)
    assert float(comm.domains_reached(8, 1, 64)) == pytest.approx(1.0, rel=REL)


def test_domains_reached_group_limited():
    # DeepSeek-V3 §2.1.2 node-limited routing. 8 domains, 4 groups (2 domains each), a token's 2 groups
    # reach R = 2 * 8/4 = 4 domains; top-8 over them: 4 (1 - (3/4)^8)
    assert float(comm.domains_reached(8, 8, 64, 4, 2)) == pytest.approx(4 * (1 - 0.75**8), rel=REL)
    # 4 domains, 8 groups (2 per domain), 4 groups picked: a domain is missed when none of its 2 groups is:
    # C(6,4)/C(8,4) = (6/8)(5/7)(4/6)(3/5) = 3/14 -> R = 4 (1 - 3/14) = 22/7; top-8: R (1 - (15/22)^8)
    assert float(comm.domains_reached(8, 4, 64, 8, 4)) == pytest.approx(22 / 7 * (1 - (15 / 22) ** 8), rel=REL)
    # 2 domains, 8 groups, 1 picked: the token lands in exactly one domain (miss 4/8 -> R = 1)
    assert float(comm.domains_reached(8, 2, 64, 8, 1)) == pytest.approx(1.0, rel=REL)


def test_moe_dispatch():
    # EP 32 (4 domains of 8), top-2, 100 MB of token copies: NVLink carries 2 * 7/32 * 1e8 = 43.75 MB (0.4375 ms);
    # the NIC carries each token once per other domain reached: 1.75 * 3/4 * 1e8 = 131.25 MB -> 5.25 ms; +120 us
    assert float(comm.moe_dispatch_time(1e8, 2, 32, 1, HW, 64)) == pytest.approx(5.25e-3 + 120e-6, rel=REL)
    # EP 8 in one domain: 2 * 7/8 * 1e8 / 1e11 = 1.75 ms + 40 us; no NIC traffic
    assert float(comm.moe_dispatch_time(1e8, 2, 8, 1, HW, 64)) == pytest.approx(1.79e-3, rel=REL)
    assert float(comm.moe_dispatch_time(1e8, 2, 1, 1, HW, 64)) == 0.0


def test_moe_dispatch_group_limited():
    # EP 64 = 8 domains, 4 groups of 2 domains, 2 groups picked, top-8: R = 4 reachable domains,
    # 4 (1 - (3/4)^8) reached; NIC: that * 7/8 * 1e8 / 2.5e10; NVLink: 8 * 7/64 * 1e8 / 1e11 = 0.875 ms
    reached = 4 * (1 - 0.75**8)
    expect = max(reached * 7 / 8 * 1e8 / 2.5e10, 0.875e-3) + 20e-6 * (1 + 6)
    assert float(comm.moe_dispatch_time(1e8, 8, 64, 1, HW, 256, 4, 2)) == pytest.approx(expect, rel=REL)


def test_p2p():
    # neighbours 4 ranks apart share a domain: the link's 2e11 is above NCCL's per-pair send/recv rate
    # (K.NCCL_P2P_PEER_BW = 8e10): 1e9 / 8e10 = 12.5 ms + 10 us; 8 apart cross it: 1e9 / 4e10 + 20 us
    assert float(comm.p2p_time(1e9, 4, HW)) == pytest.approx(12.51e-3, rel=REL)
    assert float(comm.p2p_time(1e9, 8, HW)) == pytest.approx(25.02e-3, rel=REL)
    # a link slower than the per-pair rate sets it: 5e10 x 0.5 (the toy's collective efficiency) = 2.5e10
    slow = HW.model_copy(update={"scale_up": HW.scale_up.model_copy(update={"bandwidth": 5e10})})
    assert float(comm.p2p_time(1e9, 4, slow)) == pytest.approx(40.01e-3, rel=REL)


def _spine_hw():
    # scalable units of 16 GPUs (2 nodes; a rail's leaf holds 2 GPUs), spine oversubscribed 2:1: a leaf's
    # uplinks carry 2 x 50 / 2 GB/s, 25 GB/s per GPU; a path through the spine adds 5 us per hop
    hw = toy_hw()
    return hw.model_copy(
        update={
            "scale_out": hw.scale_out.model_copy(
                update={"scalable_unit_gpus": 16, "spine_oversubscription": 2.0, "spine_latency_s": 5e-6}
            )
        }
    )


def test_all_to_all_through_an_oversubscribed_spine():
    hw = _spine_hw()
    # 32 GPUs = 2 units: 7/32 over NVLink (3.5 ms), 24/32 through the NIC (1.2e9 / 2.5e10 = 48 ms), the half
    # beyond the unit also through the GPU's 25 GB/s share of the uplinks at 0.5: 8e8 / 1.25e10 = 64 ms;
    # latency (20 + 5) us x (1 + log2 32)
    assert float(comm.all_to_all_time(1.6e9, 32, 1, hw)) == pytest.approx(64e-3 + 150e-6, rel=REL)
    # 16 GPUs stay in one unit: no spine, one leaf hop: max(7 ms, 0.8e9 / 2.5e10 = 32 ms) + 20 us x 5
    assert float(comm.all_to_all_time(1.6e9, 16, 1, hw)) == pytest.approx(32.1e-3, rel=REL)


def test_moe_dispatch_through_an_oversubscribed_spine():
    # EP 32 over 2 units: 1.75 domains reached (test_moe_dispatch), each beyond the unit with probability 1/2:
    # spine 1.75 x 0.5 x 1e8 / 1.25e10 = 7 ms > NIC 5.25 ms > NVLink 0.4375 ms; + 25 us x 6
    assert float(comm.moe_dispatch_time(1e8, 2, 32, 1, _spine_hw(), 64)) == pytest.approx(7e-3 + 150e-6, rel=REL)


def test_ring_and_p2p_through_the_spine():
    hw = _spine_hw()
    # the ring's hop between units: 8 NICs' worth (4e11 on the graph) x 0.8 > NVLink's 2e11: NVLink binds;
    # the ring's network hops at the spine tier (25 - 10 us): 31/32 * 8e8 / 2e11 + 10 + 28 x 3.4 + 3 x 15 us
    assert float(comm.all_gather_time(8e8, 32, 1, hw)) == pytest.approx(3.875e-3 + ring(32, 4, 15e-6), rel=REL)
    # pipeline neighbours 16 apart are in different units: the pair's path is the uplink share 25 GB/s x 0.8
    assert float(comm.p2p_time(1e9, 16, hw)) == pytest.approx(1e9 / 2e10 + 25e-6, rel=REL)


def test_vectorised_over_groups():
    t = comm.all_gather_time(8e8, np.array([8.0, 16.0, 1.0]), np.array([1, 4, 1]), HW)
    # 16 GPUs 4 apart: 2 per domain, 8 domains: ring latency 10 + 8 x 3.4 + 7 x 10 = 107.2 us
    assert t == pytest.approx([3.54e-3, 9.375e-3 + ring(16, 8), 0.0], rel=REL)


def test_cluster_graph():
    g = cluster_graph(HW, 20)  # 20 GPUs: domains r // 8 = 0, 1, 2
    assert sorted(n[1] for n in g.nodes if n[0] == "nvswitch") == [0, 1, 2]
    assert (
        g.nodes[("gpu", 17)]["domain"] == 2
        and g.nodes[("gpu", 7)]["domain"] == 0
        and g.nodes[("gpu", 8)]["domain"] == 1
    )
    # every GPU: NVLink 400 GB/s to its switch, NIC 50 GB/s to its rail leaf (rail r % 8; no unit named: one unit)
    assert g.edges[("gpu", 0), ("nvswitch", 0)]["capacity"] == 4e11
    assert g.edges[("nic", 9), ("leaf", 0, 1)]["capacity"] == 5e10
    # rail leaf 1 holds GPUs 1, 9, 17 of the 3 node positions (20 // 8 = 2 full nodes -> 2 x 1 GPUs counted)
    # and joins the spine at 2 x 50 GB/s / oversubscription 1
    assert g.nodes[("leaf", 0, 1)]["gpus"] == 2 and g.edges[("leaf", 0, 1), "spine"]["capacity"] == 1e11


def test_group_path():
    # 8 consecutive ranks: one domain, NVLink only
    p = group_path(HW, 8, 1)
    assert (p.k, p.tier, p.ring_bw, p.spine_share) == (8, NVLINK, float("inf"), 0.0)
    # 16 consecutive ranks: 2 domains of 8; the hop between them uses the 8 members' NICs through their 8 rail
    # leaves in parallel: max flow 8 x 50 GB/s = 400 GB/s, one leaf switch on the path, no spine
    p = group_path(HW, 16, 1)
    assert (p.k, p.tier, p.switches, p.ring_bw, p.spine_share) == (8, LEAF, 1, 4e11, 0.0)
    # 4 members 8 apart: one per domain, one NIC per hop: 50 GB/s
    p = group_path(HW, 4, 8)
    assert (p.k, p.tier, p.ring_bw) == (1, LEAF, 5e10)


# a toy cluster with scalable units of 16 GPUs (2 domains) under a 4:1 oversubscribed spine, 5 us extra per
# spine crossing (hardware.ScaleOut; DGX SuperPOD rail-optimised leaf-spine)
SPINE_HW = HW.model_copy(
    update={
        "scale_out": HW.scale_out.model_copy(
            update=dict(scalable_unit_gpus=16, spine_oversubscription=4.0, spine_latency_s=5e-6)
        )
    }
)
SPINE_LAT = (20e-6 + 5e-6) * (1 + 5)  # a 32-GPU group crossing the spine: (20 + 5) us x (1 + log2 32)


def test_group_path_through_the_spine():
    # 32 consecutive ranks: 4 domains in 2 units. A rail leaf has 2 GPUs of a full unit (one per node) and 2 x 50
    # GB/s / 4 = 25 GB/s of uplink, all of it the group's (both its GPUs are members): the hop from unit 0 to
    # unit 1 crosses 8 leaves' uplinks, 8 x 25 GB/s = 200 GB/s (NICs would give 400); leaf, spine, leaf
    p = group_path(SPINE_HW, 32, 1)
    assert (p.k, p.tier, p.switches, p.ring_bw) == (8, SPINE, 3, 2e11)
    # the worst member's peers beyond its unit: 16 of 32; a GPU's share of its leaf's uplinks 25 GB/s / 2
    assert (p.spine_share, p.uplink_bw) == (0.5, 1.25e10)


def test_collectives_through_the_spine():
    nb = 3.2e9
    # all-gather: min(NVLink 400 x 0.5, ring hop 200 x 0.8) = 160 GB/s: 31/32 x 3.2e9 / 1.6e11 = 19.375 ms
    assert float(comm.all_gather_time(nb, 32, 1, SPINE_HW)) == pytest.approx(19.375e-3 + ring(32, 4, 15e-6), rel=REL)
    # all-to-all: NVLink 7/32 x nb / 1e11 = 7 ms; NIC 24/32 x nb / (50 x 0.5 GB/s) = 96 ms; spine 0.5 x nb /
    # (12.5 x 0.5 GB/s) = 256 ms binds
    assert float(comm.all_to_all_time(nb, 32, 1, SPINE_HW)) == pytest.approx(0.256 + SPINE_LAT, rel=REL)
    # MoE dispatch of 1e8 B, top-2 of 16 experts over 4 domains: 4 (1 - (3/4)^2) = 1.75 domains reached;
    # NVLink 2 x 7/32 x 1e8 / 1e11 = 0.4375 ms, NIC 1.75 x 3/4 x 1e8 / 2.5e10 = 5.25 ms, spine
    # 1.75 x 0.5 x 1e8 / 6.25e9 = 14 ms binds
    t = comm.moe_dispatch_time(1e8, 2, 32, 1, SPINE_HW, 16)
    assert float(t) == pytest.approx(14e-3 + SPINE_LAT, rel=REL)
    # pipeline neighbours 16 ranks apart: one GPU per unit, its leaf's uplink share 25 GB/s x 1/2 = 12.5 GB/s
    # x 0.8 = 10 GB/s, one spine crossing: 1e8 / 1e10 + 25 us
    assert float(comm.p2p_time(1e8, 16, SPINE_HW)) == pytest.approx(10e-3 + 25e-6, rel=REL)


def test_a3_high_spec_reproduces_its_nccl_measurement():
    # validation/independent/hardware/gcp-a3-high.toml: 4 x 200 Gb/s for 8 GPUs = 12.5 GB/s per GPU at 0.50.
    # Its source, nccl-tests all_gather_perf on 2 x a3-highgpu-8g (16 ranks, 8 per VM): busbw 50 GB/s at 8 GiB.
    # The ring's inter-VM hop uses the 8 GPUs' NIC shares: 8 x 12.5 x 0.5 = 50 GB/s; the ring's latency 8.4 us +
    # 14 NVLink steps x 3.4 us + 1 network hop (22 - 8.4 us) = 69.6 us
    from pathlib import Path

    from perfmodel.specs.hardware import load_hardware

    a3 = load_hardware(str(Path(__file__).resolve().parents[2] / "validation/independent/hardware/gcp-a3-high.toml"))
    nbytes = 8 * 2**30
    t = float(comm.all_gather_time(nbytes, 16, 1, a3))
    assert t == pytest.approx(15 / 16 * nbytes / 50e9 + ring(16, 2, 13.6e-6, 8.4e-6), rel=REL)
    # one GPU per VM (MaxText's cross-VM gradient all-reduce, members 8 apart): its own 12.5 GB/s share at 0.50
    t = float(comm.all_reduce_time(1e9, 4, 8, a3))
    assert t == pytest.approx(2 * 3 / 4 * 1e9 / 6.25e9 + 22e-6 * 3, rel=REL)
