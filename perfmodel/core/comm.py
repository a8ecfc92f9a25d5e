"""Collective communication time for a group placed on the topology, vectorised.

Bandwidth terms follow the nccl-tests bus-bandwidth conventions (busbw = algbw * 2(n-1)/n for
all-reduce, (n-1)/n for all-gather / reduce-scatter). A group inside one NVLink domain runs at the
measured NVLink bus bandwidth (NVLS for all-reduce where present). A group that spans domains runs a
ring whose inter-domain hops use the k NICs of its members in each domain in parallel (one NCCL channel
per rail); the hop's bandwidth is the max flow between two consecutive domains' members on the cluster
graph (topology.group_path: k x NIC on a non-blocking fabric, less where the hop crosses an
oversubscribed spine), so the ring's bus bandwidth is min(NVLink, hop) (NCCL ring model; Sanders et al.
2009 for the ring lower bound). Latency: an all-gather / reduce-scatter across domains is NCCL's ring, linear in
the GPUs (ring_latency); everything else base + log2(n) hops (NCCL's tree tuning model, specs.md §2.4) at the
latency of the outermost tier the group crosses (NVLink, one leaf, or leaf-spine-leaf). Inside one NVLink domain
an all-reduce / all-gather / reduce-scatter reaches its plateau only with large messages: busbw(b) = plateau x b /
(b + b_half), b_half fitted to the generation's measured collective table (specs/kernels.py collective_ramp: 3-8
MiB on A100 ... GB300), which adds the busbw factor x b_half / plateau to every call (_ramp_s). Across domains
no table measures the ramp, and none is added.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from perfmodel.core import constants as K
from perfmodel.core.topology import NVLINK, SPINE, group_paths, path_field
from perfmodel.specs.hardware import HardwareSpec


def _paths(size, stride, hw: HardwareSpec):
    """Field reader over the group shapes of every layout (topology.group_paths, once per shape)."""
    paths, inv = group_paths(hw, size, stride)
    return lambda name: path_field(paths, inv, name)


def _bus_bw(hw: HardwareSpec, f, allreduce: bool):
    su = hw.scale_up.bandwidth * (
        hw.efficiency.scale_up_allreduce if (allreduce and hw.scale_up.nvls) else hw.efficiency.scale_up_collective
    )
    hop = f("ring_bw") * hw.efficiency.scale_out_collective
    return np.where(f("tier") == NVLINK, su, np.minimum(hw.scale_up.bandwidth * hw.efficiency.scale_up_collective, hop))


def half_bytes(hw: HardwareSpec) -> float:
    """The part's NVLink collectives' half-bandwidth message size (bytes): its own (efficiency.collective_half_bytes,
    a what-if's), else its generation's measured table's fit (specs/kernels.py collective_ramp), else 0."""
    if hw.efficiency.collective_half_bytes is not None:
        return float(hw.efficiency.collective_half_bytes)
    from perfmodel.specs.kernels import collective_ramp

    fit = collective_ramp(hw.generation, *measured_part(hw))
    return fit.half_bytes.value if fit is not None else 0.0


def measured_part(hw: HardwareSpec) -> tuple[str, float]:
    """(id, NVLink latency per hop) of the part whose measured collective table the ramp is fitted to: the catalog
    part a what-if or a `base =` file derives from (hw.base), at that part's own latency, else the part itself. b_half
    is a property of the measured table, so a what-if of the latency moves the latency alone."""
    if hw.base:
        base = _catalog_latency(hw.base)
        if base is not None:
            return hw.base, base
    return hw.id, float(hw.scale_up.latency_s)


@lru_cache(maxsize=64)
def _catalog_latency(hw_id: str) -> float | None:
    from perfmodel.errors import InputError
    from perfmodel.specs.hardware import load_hardware

    try:
        return float(load_hardware(hw_id).scale_up.latency_s)
    except InputError:  # a base that is a file path outside the catalog: the part's own statement
        return None


def _ramp_s(hw: HardwareSpec, tier, bw, factor):
    """Seconds a call inside one NVLink domain adds for NCCL's bandwidth ramp: busbw factor x b_half / plateau
    (t = factor x (b + b_half) / plateau for busbw(b) = plateau x b / (b + b_half)); 0 across domains."""
    return np.where(tier == NVLINK, factor * half_bytes(hw) / bw, 0.0)


def _tier_latency(hw: HardwareSpec, tier):
    """One hop's latency at a tier: NVLink, one network hop, or a network hop through the spine."""
    so = hw.scale_out.latency_s
    return np.where(
        tier == NVLINK, hw.scale_up.latency_s, np.where(tier == SPINE, so + hw.scale_out.spine_latency_s, so)
    )


def _latency(hw: HardwareSpec, tier, g):
    g = np.maximum(np.asarray(g, dtype=float), 1)
    return np.where(g > 1, _tier_latency(hw, tier) * (1 + np.log2(g)), 0.0)


def ring_latency(hw: HardwareSpec, tier, size, k):
    """NCCL's latency of a ring all-gather / reduce-scatter over `size` GPUs, `k` of them in each scale-up domain
    (NVIDIA/nccl@b6475625 src/graph/tuning.cc ncclTopoTuneModel, Ring / Simple: baseLat + (nsteps - nInterSteps) x
    intraLat + nInterSteps x interLat, nsteps = n - 1, nInterSteps = nodes - 1): the base (hw.scale_up.latency_s,
    8.4 us), one NVLink step per hop inside a domain (K.NCCL_RING_NVLINK_STEP_S, 3.4 us) and one network hop per
    domain boundary (the tier's latency less the base: 13.6 us, NCCL's 14). Linear in the GPUs, where a tree is
    logarithmic: at 64 nodes of 8 a ring step count of 511 makes 2.4 ms per call. A group inside one domain keeps
    `_latency` (NVLS or the ring's few steps: 8 GPUs 33.6 us against the ring's 32.2 us; one GPU, always inside its
    domain: 0)."""
    size = np.maximum(np.asarray(size, dtype=float), 1.0)
    dom = size / np.maximum(np.asarray(k, dtype=float), 1.0)
    hop = _tier_latency(hw, np.maximum(tier, 1)) - hw.scale_up.latency_s
    ring = hw.scale_up.latency_s + (size - dom) * K.NCCL_RING_NVLINK_STEP_S + (dom - 1.0) * hop
    return np.where(tier == NVLINK, _latency(hw, tier, size), ring)


def all_gather_terms(size, stride, hw: HardwareSpec):
    """(size, bus bandwidth, latency per call) of an all-gather group shape, so several buffers over the same
    groups are priced with one placement: all_gather_from_terms(nbytes, *terms)."""
    size = np.asarray(size, dtype=float)
    f = _paths(size, stride, hw)
    bw, tier = _bus_bw(hw, f, False), f("tier")
    ramp = _ramp_s(hw, tier, bw, (size - 1) / np.maximum(size, 1))
    return size, bw, ring_latency(hw, tier, size, f("k")) + ramp


def all_gather_from_terms(nbytes, size, bw, lat, calls=1.0):
    """`nbytes` gathered in `calls` collectives (buckets, FSDP units): one latency per call, the bytes once."""
    t = (size - 1) / np.maximum(size, 1) * nbytes / bw
    return np.where(size > 1, t + calls * lat, 0.0)


def all_gather_time(nbytes, size, stride, hw: HardwareSpec):
    """All-gather (or reduce-scatter) whose gathered buffer is `nbytes` per GPU."""
    return all_gather_from_terms(nbytes, *all_gather_terms(size, stride, hw))


reduce_scatter_time = all_gather_time


def all_reduce_time(nbytes, size, stride, hw: HardwareSpec):
    size = np.asarray(size, dtype=float)
    f = _paths(size, stride, hw)
    bw, tier, factor = _bus_bw(hw, f, True), f("tier"), 2 * (size - 1) / np.maximum(size, 1)
    t = factor * nbytes / bw + _ramp_s(hw, tier, bw, factor)
    return np.where(size > 1, t + _latency(hw, tier, size), 0.0)


def _remote_time(hw: HardwareSpec, remote, spine, f):
    """Scale-out part of an all-to-all: every byte leaves through the GPU's NIC, the bytes for peers
    beyond its scalable unit also through its share of the leaf's spine uplinks; the slower sets the time."""
    eff = hw.efficiency.scale_out_all_to_all
    return np.maximum(remote / (hw.scale_out.bandwidth * eff), spine / (f("uplink_bw") * eff))


def all_to_all_time(nbytes, size, stride, hw: HardwareSpec):
    """All-to-all where each GPU holds `nbytes` to scatter evenly over the group (itself included).

    The share for members in the same domain moves over NVLink, the rest over the GPU's own NIC (and, for
    members beyond its scalable unit, the spine); all at once, so the slowest sets the time (DeepEP-style
    dispatch, DEEPEP measurements)."""
    size = np.asarray(size, dtype=float)
    f = _paths(size, stride, hw)
    k = f("k")
    local = (k - 1) / np.maximum(size, 1) * nbytes
    remote = (size - k) / np.maximum(size, 1) * nbytes
    t_local = local / (hw.scale_up.bandwidth * hw.efficiency.scale_up_all_to_all)
    t_remote = _remote_time(hw, remote, f("spine_share") * nbytes, f)
    return np.where(size > 1, np.maximum(t_local, t_remote) + _latency(hw, f("tier"), size), 0.0)


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


def moe_dispatch_time(
    token_bytes, top_k: int, size, stride, hw: HardwareSpec, num_experts: int, groups: int = 0, group_topk: int = 0
):
    """MoE dispatch (or combine) of `token_bytes` per token copy-set, each token to top_k experts over
    an EP group of `size` GPUs. Copies inside the GPU's scale-up domain move over NVLink one per
    expert; across domains a token crosses the NIC once per destination domain and is forwarded over
    NVLink there (DeepEP internode dispatch: RDMA to each target node once, then NVLink; DEEPEP,
    DeepSeek-V3 §3.2.2). The two paths run concurrently; the slower sets the time."""
    size = np.asarray(size, dtype=float)
    f = _paths(size, stride, hw)
    k = f("k")
    local = top_k * (k - 1) / np.maximum(size, 1) * token_bytes
    G = size / k
    reached = domains_reached(top_k, G, num_experts, groups, group_topk)
    remote = reached * (G - 1) / G * token_bytes
    # a reached domain lies beyond the sender's scalable unit with probability spine_share (= its share of
    # the group's domains there): those copies also cross the spine
    t_local = local / (hw.scale_up.bandwidth * hw.efficiency.scale_up_all_to_all)
    t_remote = _remote_time(hw, remote, reached * f("spine_share") * token_bytes, f)
    return np.where(size > 1, np.maximum(t_local, t_remote) + _latency(hw, f("tier"), size), 0.0)


def p2p_time(nbytes, stride, hw: HardwareSpec):
    """One send/recv between pipeline neighbours `stride` ranks apart: NVLink inside a domain, at the rate
    NCCL's few channels per peer reach there (K.NCCL_P2P_PEER_BW: a pair's send/recv does not fill the
    link the way a collective's many channels do), else the pair's path on the cluster graph (its NIC, or
    its share of the spine uplinks where it crosses them)."""
    stride = np.asarray(stride)
    inside = stride < hw.scale_up.domain_size
    f = _paths(2, stride, hw)
    bw = np.where(
        inside,
        np.minimum(hw.scale_up.bandwidth * hw.efficiency.scale_up_collective, K.NCCL_P2P_PEER_BW),
        f("ring_bw") * hw.efficiency.scale_out_collective,
    )
    lat = np.where(inside, hw.scale_up.latency_s, _tier_latency(hw, np.maximum(f("tier"), 1)))
    return nbytes / bw + lat


def collective_time(c, hw: HardwareSpec):
    """Seconds per call of a collective record (ops.Collective), by its kind."""
    if c.kind == "all_gather":
        t = all_gather_time(c.nbytes, c.size, c.stride, hw)
    elif c.kind == "all_to_all":
        t = all_to_all_time(c.nbytes, c.size, c.stride, hw)
    elif c.kind == "moe_dispatch":
        t = moe_dispatch_time(c.nbytes, c.top_k, c.size, c.stride, hw, c.num_experts, c.groups, c.group_topk)
    elif c.kind == "p2p":
        t = c.steps * p2p_time(c.nbytes, c.stride, hw)
    else:
        raise ValueError(f"unknown collective kind {c.kind!r}")
    return t if c.active is None else np.where(c.active, t, 0.0)
