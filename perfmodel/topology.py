"""Where a parallel group lands on the cluster, and the cluster as a networkx graph.

Ranks are numbered tp-cp-ep-dp-pp, tp innermost (Megatron-Core default order), and filled into
scale-up domains (NVLink: 8 GPUs per HGX node, 72 per NVL72 rack) in rank order. A group of size g
whose members are `stride` ranks apart has k = min(g, max(1, D // stride)) members in each domain it
touches and spans g / k domains. k == g means the group never leaves NVLink.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .hardware import HardwareSpec

if TYPE_CHECKING:
    import networkx as nx       # imported where the graph is built (about 0.1 s; scoring never needs it)


def members_per_domain(size, stride, domain: int):
    """GPUs of one group inside one scale-up domain (arrays broadcast)."""
    size = np.asarray(size)
    stride = np.asarray(stride)
    return np.minimum(size, np.maximum(1, domain // np.maximum(stride, 1)))


def cluster_graph(hw: HardwareSpec, gpus: int) -> nx.Graph:
    """GPUs -> domain switch (NVLink, per-GPU bandwidth) and GPUs -> spine (per-GPU NIC bandwidth).

    Edge attribute `bw` is bytes/s per direction. A two-tier, non-blocking fat tree is assumed for the
    scale-out network (rail-optimised InfiniBand as in DGX SuperPOD reference designs)."""
    import networkx as nx
    g = nx.Graph()
    D = hw.scale_up.domain_size
    g.add_node("spine", kind="switch")
    for d in range((gpus + D - 1) // D):
        g.add_node(f"nvswitch{d}", kind="switch")
    for r in range(gpus):
        dom = r // D
        g.add_node(r, kind="gpu", domain=dom)
        g.add_edge(r, f"nvswitch{dom}", bw=hw.scale_up.bandwidth, tier="scale_up")
        g.add_edge(r, "spine", bw=hw.scale_out.bandwidth, tier="scale_out")
    return g


def path_bandwidth(graph: nx.Graph, a: int, b: int) -> float:
    """Bottleneck bandwidth of the fastest path between two GPUs (NVLink inside a domain, NIC outside)."""
    if graph.nodes[a]["domain"] == graph.nodes[b]["domain"]:
        sw = f"nvswitch{graph.nodes[a]['domain']}"
        return min(graph.edges[a, sw]["bw"], graph.edges[b, sw]["bw"])
    return min(graph.edges[a, "spine"]["bw"], graph.edges[b, "spine"]["bw"])
