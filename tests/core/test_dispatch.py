"""MoE token dispatch across scale-up domains: hand-derived cases for the expected number of domains a
token's expert copies reach (balls into bins) and for node-limited routing (DeepSeek-V3 §2.1.2)."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.core import comm
from perfmodel.specs.hardware import load_hardware


def test_domains_reached_unrestricted():
    # 8 picks over 8 equally likely domains: 8 * (1 - (7/8)^8) = 5.2509
    assert comm.domains_reached(8, 8, 256) == pytest.approx(8 * (1 - (7 / 8) ** 8))
    # one domain: every copy stays home
    assert comm.domains_reached(8, 1, 256) == pytest.approx(1.0)
    # never more domains than copies or than domains
    d = comm.domains_reached(4, np.array([2, 4, 16, 64]), 128)
    assert np.all(d <= np.minimum(4, [2, 4, 16, 64]) + 1e-12)


def test_node_limited_routing_caps_domains():
    # DeepSeek-V3: 8 groups, 4 per token; EP over 8 nodes -> groups = nodes, 4 reachable:
    # 4 * (1 - (3/4)^8) = 3.5995, and never above the 4-node limit
    d = comm.domains_reached(8, 8, 256, groups=8, group_topk=4)
    assert d == pytest.approx(4 * (1 - 0.75**8))
    assert d <= 4
    # over 2 nodes with 8 groups: a node is missed only when none of its 4 groups is picked: C(4,4)/C(8,4)
    d2 = comm.domains_reached(8, 2, 256, groups=8, group_topk=4)
    reach = 2 * (1 - 1 / 70)
    assert d2 == pytest.approx(reach * (1 - (1 - 1 / reach) ** 8))


def test_dispatch_dedup_never_exceeds_plain_all_to_all():
    hw = load_hardware("h100-sxm")
    token_bytes, top_k = 1e6, 8
    for ep in (8, 16, 32, 64):
        plain = comm.all_to_all_time(token_bytes * top_k, ep, 1, hw)
        dedup = comm.moe_dispatch_time(token_bytes, top_k, ep, 1, hw, 256)
        limited = comm.moe_dispatch_time(token_bytes, top_k, ep, 1, hw, 256, 8, 4)
        assert limited <= dedup + 1e-15 <= plain + 2e-15
    # inside one NVLink domain dedup changes nothing
    assert comm.moe_dispatch_time(token_bytes, top_k, 8, 1, hw, 256) == pytest.approx(
        comm.all_to_all_time(token_bytes * top_k, 8, 1, hw)
    )


def test_collectives_against_nccl_bus_bandwidth_hand_cases():
    """nccl-tests convention: all-gather / reduce-scatter move (n-1)/n of the buffer at the bus
    bandwidth, all-reduce 2(n-1)/n; plus base latency x (1 + log2 n); inside the NVLink domain the bytes
    include the ramp's b_half (hopper's measured table: 2.5-4.5 MiB)."""
    hw = load_hardware("h100-sxm")
    nb, half = 1e9, comm.half_bytes(hw)
    assert 2.5 * 2**20 < half < 4.5 * 2**20
    su = hw.scale_up.bandwidth * hw.efficiency.scale_up_collective
    lat_in = hw.scale_up.latency_s * (1 + 3)  # n = 8: log2 8 = 3
    assert comm.all_gather_time(nb, 8, 1, hw) == pytest.approx(7 / 8 * (nb + half) / su + lat_in)
    nvls = hw.scale_up.bandwidth * hw.efficiency.scale_up_allreduce
    assert comm.all_reduce_time(nb, 8, 1, hw) == pytest.approx(2 * 7 / 8 * (nb + half) / nvls + lat_in)
    # 16 data-parallel ranks one per node (stride 8): one NIC per domain carries the ring
    so = hw.scale_out.bandwidth * hw.efficiency.scale_out_collective
    # NCCL's ring across 16 domains: the base + 15 network hops (tuning.cc, comm.ring_latency)
    lat_out = hw.scale_up.latency_s + 15 * (hw.scale_out.latency_s - hw.scale_up.latency_s)
    assert comm.reduce_scatter_time(nb, 16, 8, hw) == pytest.approx(15 / 16 * nb / so + lat_out)
