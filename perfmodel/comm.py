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


def p2p_time(nbytes, stride, hw: HardwareSpec):
    """One send/recv between pipeline neighbours `stride` ranks apart."""
    stride = np.asarray(stride)
    inside = stride < hw.scale_up.domain_size
    bw = np.where(inside, hw.scale_up.bandwidth * hw.efficiency.scale_up_collective,
                  hw.scale_out.bandwidth * hw.efficiency.scale_out_collective)
    lat = np.where(inside, hw.scale_up.latency_s, hw.scale_out.latency_s)
    return nbytes / bw + lat
