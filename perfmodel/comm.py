"""Collective communication time for a group placed on the topology, vectorised.

Bandwidth terms follow the nccl-tests bus-bandwidth conventions (busbw = algbw * 2(n-1)/n for
all-reduce, (n-1)/n for all-gather / reduce-scatter). A group inside one NVLink domain runs at the
measured NVLink bus bandwidth (NVLS for all-reduce where present). A group that spans domains runs a
ring whose inter-domain hops use the k NICs of its members in each domain in parallel (one NCCL channel
per rail), so its bus bandwidth is min(NVLink, k x NIC) (NCCL ring model; Sanders et al. 2009 for the
ring lower bound). Latency: base + log2(n) hops (NCCL tree/ring tuning model, specs.md §2.4).
"""
from __future__ import annotations

import numpy as np

from .hardware import HardwareSpec
from .topology import members_per_domain


def _bus_bw(hw: HardwareSpec, k, g, allreduce: bool):
    su = hw.scale_up.bandwidth * (hw.efficiency.scale_up_allreduce if (allreduce and hw.scale_up.nvls)
                                  else hw.efficiency.scale_up_collective)
    so = hw.scale_out.bandwidth * hw.efficiency.scale_out_collective
    inside = k >= g
    return np.where(inside, su, np.minimum(hw.scale_up.bandwidth * hw.efficiency.scale_up_collective, k * so))


def _latency(hw: HardwareSpec, k, g):
    g = np.maximum(np.asarray(g, dtype=float), 1)
    lat = np.where(k >= g, hw.scale_up.latency_s, hw.scale_out.latency_s)
    return np.where(g > 1, lat * (1 + np.log2(g)), 0.0)


def all_gather_time(nbytes, size, stride, hw: HardwareSpec):
    """All-gather (or reduce-scatter) whose gathered buffer is `nbytes` per GPU."""
    size = np.asarray(size, dtype=float)
    k = members_per_domain(size, stride, hw.scale_up.domain_size)
    t = (size - 1) / np.maximum(size, 1) * nbytes / _bus_bw(hw, k, size, False)
    return np.where(size > 1, t + _latency(hw, k, size), 0.0)


reduce_scatter_time = all_gather_time


def all_reduce_time(nbytes, size, stride, hw: HardwareSpec):
    size = np.asarray(size, dtype=float)
    k = members_per_domain(size, stride, hw.scale_up.domain_size)
    t = 2 * (size - 1) / np.maximum(size, 1) * nbytes / _bus_bw(hw, k, size, True)
    return np.where(size > 1, t + _latency(hw, k, size), 0.0)


def all_to_all_time(nbytes, size, stride, hw: HardwareSpec):
    """All-to-all where each GPU holds `nbytes` to scatter evenly over the group (itself included).

    The share for members in the same domain moves over NVLink, the rest over the GPU's own NIC; both
    at once, so the slower side sets the time (DeepEP-style dispatch, DEEPEP measurements)."""
    size = np.asarray(size, dtype=float)
    k = members_per_domain(size, stride, hw.scale_up.domain_size)
    local = (k - 1) / np.maximum(size, 1) * nbytes
    remote = (size - k) / np.maximum(size, 1) * nbytes
    t_local = local / (hw.scale_up.bandwidth * hw.efficiency.scale_up_all_to_all)
    t_remote = remote / (hw.scale_out.bandwidth * hw.efficiency.scale_out_all_to_all)
    return np.where(size > 1, np.maximum(t_local, t_remote) + _latency(hw, k, size), 0.0)


def domains_reached(top_k: int, domains, num_experts: int, groups: int = 0, group_topk: int = 0):
    """Expected number of distinct scale-up domains one token's top_k expert copies land in, experts
    spread evenly over `domains` domains and chosen uniformly ("balls into bins": R(1-(1-1/R)^k) for R
    reachable domains). Group-limited routing (DeepSeek-V3 §2.1.2, at most M nodes per token) first
    narrows the reachable domains to those holding the token's route_group_topk groups."""
    G = np.maximum(np.asarray(domains, dtype=float), 1.0)
    R = G
    if groups:
        # groups span G/groups domains each when G >= groups; otherwise groups/G groups share a domain
        # and a domain is missed when none of its groups is picked: C(n-m, t)/C(n, t)
        per_dom = groups / G
        miss = np.ones_like(G)
        for i in range(group_topk):
            miss = miss * np.maximum(0.0, groups - per_dom - i) / (groups - i)
        R = np.where(G >= groups, group_topk * G / groups, G * (1.0 - miss))
    R = np.maximum(R, 1.0)
    return R * (1.0 - (1.0 - 1.0 / R) ** top_k)


def moe_dispatch_time(token_bytes, top_k: int, size, stride, hw: HardwareSpec, num_experts: int,
                      groups: int = 0, group_topk: int = 0):
    """MoE dispatch (or combine) of `token_bytes` per token copy-set, each token to top_k experts over
    an EP group of `size` GPUs. Copies inside the GPU's scale-up domain move over NVLink one per
    expert; across domains a token crosses the NIC once per destination domain and is forwarded over
    NVLink there (DeepEP internode dispatch: RDMA to each target node once, then NVLink; DEEPEP,
    DeepSeek-V3 §3.2.2). The two paths run concurrently; the slower sets the time."""
    size = np.asarray(size, dtype=float)
    k = members_per_domain(size, stride, hw.scale_up.domain_size)
    local = top_k * (k - 1) / np.maximum(size, 1) * token_bytes
    G = size / k
    remote = domains_reached(top_k, G, num_experts, groups, group_topk) * (G - 1) / G * token_bytes
    t_local = local / (hw.scale_up.bandwidth * hw.efficiency.scale_up_all_to_all)
    t_remote = remote / (hw.scale_out.bandwidth * hw.efficiency.scale_out_all_to_all)
    return np.where(size > 1, np.maximum(t_local, t_remote) + _latency(hw, k, size), 0.0)


def p2p_time(nbytes, stride, hw: HardwareSpec):
    """One send/recv between pipeline neighbours `stride` ranks apart."""
    stride = np.asarray(stride)
    inside = stride < hw.scale_up.domain_size
    bw = np.where(inside, hw.scale_up.bandwidth * hw.efficiency.scale_up_collective,
                  hw.scale_out.bandwidth * hw.efficiency.scale_out_collective)
    lat = np.where(inside, hw.scale_up.latency_s, hw.scale_out.latency_s)
    return nbytes / bw + lat
