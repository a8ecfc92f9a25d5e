"""The cluster as a networkx graph, and what one parallel group gets from it.

Ranks are numbered tp-cp-ep-dp-pp, tp innermost (Megatron-Core default order), and filled into
scale-up domains (NVLink: 8 GPUs per HGX node, 72 per NVL72 rack) in rank order. A group of size g
whose members are `stride` ranks apart has k = min(g, max(1, D // stride)) members in each domain it
touches and spans g / k domains. k == g means the group never leaves NVLink.

The graph (`cluster_graph`): every GPU joins its domain's NVLink switch and its NIC; the NIC joins the leaf
of its rail in its scalable unit (rail-optimised fat tree, DGX SuperPOD reference architectures: GPU i of
every node of a unit on leaf i); every leaf joins the spine with its downlink bandwidth divided by the
spine oversubscription. Edge `capacity` is bytes/s per direction.

A group is priced by placing one representative of its shape on the graph (`group_path`; on the graph
induced on its members, `member_graph`, which equals that subgraph of `cluster_graph`), once per
(hardware, size, stride) and broadcast over layouts (`group_paths`). Every GPU belongs to one group of each
kind and the groups of one kind run their collective at the same time, so a group's share of a leaf's
uplinks is its members' fraction of the GPUs under that leaf. The representative's first two scalable
units suffice: its ring crosses each unit boundary the same way, and its all-to-all's peers are those
inside its unit (leaf tier) or beyond it (spine).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import astuple, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from perfmodel.specs.hardware import HardwareSpec

if TYPE_CHECKING:
    import networkx as nx

NVLINK, LEAF, SPINE = 0, 1, 2  # tiers a group crosses, innermost first


def members_per_domain(size, stride, domain: int):
    """GPUs of one group inside one scale-up domain (arrays broadcast)."""
    size = np.asarray(size)
    stride = np.asarray(stride)
    return np.minimum(size, np.maximum(1, domain // np.maximum(stride, 1)))


def leaves_domain(size, stride, domain: int):
    """True where a group of `size` members `stride` ranks apart does not fit in one scale-up domain
    (members_per_domain below its size): its collectives cross the scale-out network."""
    return members_per_domain(size, stride, domain) < np.asarray(size)


def domain_exits(hw: HardwareSpec, tp, cp, ep, etp) -> dict[str, np.ndarray]:
    """Which of a layout's model-parallel groups leave the NVLink domain (rank order tp-cp-ep-dp-pp, tp
    innermost; MoE layers etp-ep-edp): the TP group (tp consecutive ranks), the TP x CP group and the EP group
    (ep members etp ranks apart). Arrays broadcast; True where the group crosses the scale-out network."""
    D = hw.scale_up.domain_size
    f = lambda x: np.asarray(x, dtype=np.int64)
    return {
        "tp": leaves_domain(f(tp), 1, D),
        "tp_cp": leaves_domain(f(tp) * f(cp), 1, D),
        "ep": leaves_domain(f(ep), f(etp), D),
    }


def _rails(hw: HardwareSpec) -> int:
    return hw.scale_out.rails or hw.gpus_per_node


def _unit(hw: HardwareSpec, gpus: int) -> int:
    """GPUs per scalable unit (the whole cluster where the spec names none)."""
    return hw.scale_out.scalable_unit_gpus or gpus


def _leaf_gpus(hw: HardwareSpec, unit_gpus: int, rail: int) -> int:
    """GPUs under the leaf of `rail` in a full unit of `unit_gpus` GPUs (node positions on that rail)."""
    node = hw.gpus_per_node
    return max(1, unit_gpus // node) * len(range(rail, min(node, unit_gpus), _rails(hw)))


def _add_gpus(g: nx.Graph, hw: HardwareSpec, ranks, unit_gpus: int) -> nx.Graph:
    """Add GPUs `ranks` with their NVLink switch, NIC and rail leaf to `g`; each leaf joins the spine at the
    bandwidth of the GPUs under it in a full unit divided by the oversubscription."""
    D, node, rails, nic = hw.scale_up.domain_size, hw.gpus_per_node, _rails(hw), hw.scale_out.bandwidth
    g.add_node("spine", kind="switch")
    for r in ranks:
        dom, unit, rail = r // D, r // unit_gpus, (r % node) % rails
        leaf = ("leaf", unit, rail)
        g.add_node(("gpu", r), kind="gpu", domain=dom, unit=unit, rail=rail)
        g.add_edge(("gpu", r), ("nvswitch", dom), capacity=hw.scale_up.bandwidth, tier="nvlink")
        g.add_edge(("gpu", r), ("nic", r), capacity=nic, tier="nic")
        g.add_edge(("nic", r), leaf, capacity=nic, tier="leaf")
        if not g.has_edge(leaf, "spine"):
            n = _leaf_gpus(hw, unit_gpus, rail)
            g.nodes[leaf]["gpus"] = n
            g.add_edge(leaf, "spine", capacity=n * nic / hw.scale_out.spine_oversubscription, tier="spine")
    return g


@lru_cache(maxsize=32)
def cluster_graph(hw: HardwareSpec, gpus: int) -> nx.Graph:
    """The cluster of `gpus` GPUs (whole units): nodes ("gpu", r), ("nvswitch", d), ("nic", r),
    ("leaf", unit, rail) and "spine"; edges with `capacity` (bytes/s per direction) and `tier` ("nvlink",
    "nic", "leaf", "spine")."""
    import networkx as nx

    return _add_gpus(nx.Graph(), hw, range(gpus), _unit(hw, gpus))


def member_graph(hw: HardwareSpec, ranks: tuple[int, ...], unit_gpus: int) -> nx.Graph:
    """The cluster graph induced on a group's members (their GPUs, NVLink switches, NICs, leaves and the
    spine), built without the rest of the cluster: a group in a 100,000-GPU unit costs its own size."""
    import networkx as nx

    return _add_gpus(nx.Graph(), hw, ranks, unit_gpus)


@dataclass(frozen=True)
class GroupPath:
    """What one group of a shape gets from the cluster (bandwidths in bytes/s per direction, line rate)."""

    k: int  # members per scale-up domain
    tier: int  # outermost tier its ring crosses: NVLINK, LEAF or SPINE
    switches: int  # switches on its ring's longest hop (1 NVLink or leaf, 3 leaf-spine-leaf)
    ring_bw: float  # scale-out bandwidth of the ring's slowest inter-domain hop (inf inside NVLink)
    spine_share: float  # share of a member's peers reached only through the spine
    uplink_bw: float  # a GPU's share of its leaf's spine uplinks (NIC / oversubscription)


MAX_OFFSETS = 64  # block positions tried for the worst-placed group (the pattern repeats every lcm(block, unit))


def _worst_offset(ranks: np.ndarray, size: int, stride: int, D: int, U: int) -> tuple[int, float]:
    """(offset, spine share) of the worst-placed group of the shape. The groups of a shape tile the ranks in
    blocks of span = size x stride ranks (`stride` interleaved groups each), so where a unit is not a
    multiple of the span some groups straddle a unit boundary; the member in the smaller part reaches the
    most peers through the spine and the collective waits for it. Offsets tried: each block start in one
    period (at most MAX_OFFSETS; rounded down to a domain boundary where the group has k > 1 members per
    domain, keeping its k-per-domain shape) and, for strides beyond a domain, up to 8 interleaved groups."""
    span = size * stride
    period = min(U // math.gcd(span, U), MAX_OFFSETS)
    starts = np.arange(period, dtype=np.int64) * span
    if stride >= D:
        inner = np.unique(np.linspace(0, stride - 1, min(stride, 8)).astype(np.int64))
        offs = (starts[:, None] + inner[None, :]).ravel()
    else:
        offs = np.unique(starts // D * D)
    units = (ranks[None, :] + offs[:, None]) // U
    best, worst = 0, -1.0
    for j, row in enumerate(units):
        # peers beyond the unit of the member in the smallest part (parts are whole, filled domains)
        share = (size - float(np.unique(row, return_counts=True)[1].min())) / size
        if share > worst + 1e-12:
            best, worst = int(offs[j]), share
    return best, worst


def _placement(hw: HardwareSpec, size: int, stride: int) -> tuple[list[tuple[int, int]], float]:
    """(member, rank) of the representative group within its first two scalable units, renumbered onto a
    cluster of at most two units, and the share of its worst member's peers beyond its unit. Members fill
    domains k at a time (k = members_per_domain): member i sits in the group's domain i // k at local slot
    (i % k) * stride, or at rank i * stride once stride >= D. A last domain holding fewer than k members is
    filled to k, so that every domain the ring passes is full (the domain-granular k of members_per_domain).
    The representative is the worst-placed group of its shape (_worst_offset)."""
    D = hw.scale_up.domain_size
    k = int(members_per_domain(size, stride, D))
    padded = -(-size // k) * k
    ranks = np.array(
        [i * stride if stride >= D else (i // k) * D + (i % k) * stride for i in range(padded)], dtype=np.int64
    )
    U = hw.scale_out.scalable_unit_gpus
    if not U:  # one unit: keep the first two domains the group touches
        doms = sorted({int(r) // D for r in ranks})[:2]
        return [(i, doms.index(r // D) * D + r % D) for i, r in enumerate(ranks.tolist()) if r // D in doms], 0.0
    off, spine = _worst_offset(ranks[:size], size, stride, D, U)  # the share over the real members, not the padding
    ranks = ranks + off
    units = sorted({int(r) // U for r in ranks})[:2]
    return [(i, units.index(r // U) * U + r % U) for i, r in enumerate(ranks.tolist()) if r // U in units], spine


def _hop(g: nx.Graph, a: list[int], b: list[int], share: dict) -> tuple[float, bool, int]:
    """(max flow, crosses the spine, switches on the shortest path) from the members `a` of one domain to
    the members `b` of the next, over the members' own NVLink switch, NICs and leaves and the spine at
    the group's share of each leaf's uplinks (other GPUs' links belong to other groups)."""
    import networkx as nx

    nodes = {("gpu", r) for r in a + b} | {("nic", r) for r in a + b} | {"spine"}
    nodes |= {("nvswitch", g.nodes[("gpu", r)]["domain"]) for r in (a[0], b[0])}
    nodes |= {n for r in a + b for n in g[("nic", r)] if n[0] == "leaf"}
    h = nx.DiGraph(g.subgraph(nodes))
    for leaf in [n for n in h if n != "spine" and n[0] == "leaf"]:
        cap = g.edges[leaf, "spine"]["capacity"] * share[leaf] / g.nodes[leaf]["gpus"]
        h.edges[leaf, "spine"]["capacity"] = h.edges["spine", leaf]["capacity"] = cap
    h.add_edges_from(("src", ("gpu", r)) for r in a)  # no capacity attribute: unbounded
    h.add_edges_from((("gpu", r), "dst") for r in b)
    flow = nx.maximum_flow_value(h, "src", "dst", flow_func=nx.flow.boykov_kolmogorov)
    leaf_only = h.subgraph(n for n in h if n != "spine")
    crosses = not nx.has_path(leaf_only, "src", "dst")
    path = nx.shortest_path(h if crosses else leaf_only, "src", "dst")
    return flow, crosses, sum(1 for n in path if n == "spine" or n[0] in ("leaf", "nvswitch"))


# Placing a group (max flows on networkx graphs) costs ~10 ms a shape, ~0.6 s for the shapes of one planner
# search: the results are kept on disk (fncache's directory, `paths/`), one file per hardware spec, keyed by
# the sha256 of the spec's JSON, this module's and hardware.py's source and the networkx release, so a later
# process neither places them again nor imports networkx. PERFMODEL_CACHE_DIR=off disables it.
_PATH_SOURCES = ("core/topology.py", "specs/hardware.py")  # relative to perfmodel/


@lru_cache(maxsize=32)
def _path_file(hw: HardwareSpec) -> Path | None:
    from perfmodel.specs import fncache
    from perfmodel.specs.hardware import _DESCRIPTIVE

    d = fncache.cache_dir()
    if d is None:
        return None
    h = hashlib.sha256(hw.model_dump_json(exclude=_DESCRIPTIVE).encode())
    try:
        pkg = Path(__file__).resolve().parents[1]
        for name in _PATH_SOURCES:
            h.update((pkg / name).read_bytes())
        import importlib.util

        spec = importlib.util.find_spec("networkx")  # the networkx release, without importing it
        h.update(Path(spec.origin).read_bytes() if spec and spec.origin else b"?")
    except (OSError, ImportError, ValueError):
        return None
    return d / "paths" / f"{h.hexdigest()}.jsonl"


@lru_cache(maxsize=32)
def _stored_paths(hw: HardwareSpec) -> dict[tuple[int, int], GroupPath]:
    """The placements on disk for `hw`: one JSON line [size, stride, *GroupPath fields] each; a line that
    does not parse (a write cut short) is skipped."""
    f, out = _path_file(hw), {}
    if f is None:
        return out
    try:
        lines = f.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            v = json.loads(line)
            out[(int(v[0]), int(v[1]))] = GroupPath(
                int(v[2]), int(v[3]), int(v[4]), float(v[5]), float(v[6]), float(v[7])
            )
        except (ValueError, TypeError, IndexError):
            continue
    return out


def _store_path(hw: HardwareSpec, size: int, stride: int, p: GroupPath) -> None:
    f = _path_file(hw)
    if f is None:
        return
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        with open(f, "a", encoding="utf-8") as fh:  # one short line per write: appends do not interleave
            fh.write(json.dumps([size, stride, *astuple(p)]) + "\n")
    except OSError:
        pass


@lru_cache(maxsize=4096)
def group_path(hw: HardwareSpec, size: int, stride: int) -> GroupPath:
    """Place one group of `size` members `stride` ranks apart on the cluster graph and read off its ring's
    bottleneck hop, the tiers it crosses and the spine share of its all-to-all (from the disk store when a
    process placed it before)."""
    if size <= 1 or members_per_domain(size, stride, hw.scale_up.domain_size) >= size:
        return place_group(hw, size, stride)  # inside one domain: no graph
    stored = _stored_paths(hw).get((size, stride))
    if stored is not None:
        return stored
    p = place_group(hw, size, stride)
    _store_path(hw, size, stride, p)
    return p


def place_group(hw: HardwareSpec, size: int, stride: int) -> GroupPath:
    """group_path computed on the graph (no store)."""
    D = hw.scale_up.domain_size
    k = int(members_per_domain(size, stride, D))
    if size <= 1 or k >= size:
        return GroupPath(k, NVLINK, 1, float("inf"), 0.0, hw.scale_out.bandwidth / hw.scale_out.spine_oversubscription)
    placed, spine = _placement(hw, size, stride)
    ranks = [r for _, r in placed]
    U = hw.scale_out.scalable_unit_gpus
    g = member_graph(hw, tuple(ranks), U or 2 * D)
    share: dict = {}
    for r in ranks:
        leaf = next(x for x in g[("nic", r)] if x[0] == "leaf")
        share[leaf] = share.get(leaf, 0) + 1
    by_dom: dict[int, list[int]] = {}
    for r in ranks:
        by_dom.setdefault(r // D, []).append(r)
    doms = list(by_dom.values())
    unit_of = (lambda r: r // U) if U else (lambda r: 0)
    hops = []  # the first hop inside a unit and the first across units
    for same in (True, False):
        for a, b in zip(doms, doms[1:]):
            if (unit_of(a[0]) == unit_of(b[0])) == same:
                hops.append(_hop(g, a, b, share))
                break
    flow = min(h[0] for h in hops)
    crosses = any(h[1] for h in hops)
    switches = max(h[2] for h in hops)
    leaf = next(x for x in g[("nic", ranks[0])] if x[0] == "leaf")
    up = g.edges[leaf, "spine"]["capacity"] / g.nodes[leaf]["gpus"]  # a GPU's share of its leaf's uplinks
    return GroupPath(k, SPINE if crosses else LEAF, switches, flow, spine, up)


def _codes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique values, inverse) of a non-negative int array; a lookup table, not a sort, for small values."""
    hi = int(x.max())
    if hi >= 1 << 22:
        u, inv = np.unique(x, return_inverse=True)
        return u, inv.reshape(x.shape)
    seen = np.zeros(hi + 1, bool)
    seen[x] = True
    u = np.flatnonzero(seen)
    pos = np.zeros(hi + 1, np.intp)
    pos[u] = np.arange(len(u))
    return u, pos[x]


def group_paths(hw: HardwareSpec, size, stride) -> tuple[list[GroupPath], np.ndarray | None]:
    """The GroupPath of every distinct (size, stride) and the index of each layout's one (None for scalars):
    `paths[i]` for layout i is `paths[inv[i]]`."""
    s = np.rint(np.asarray(size, dtype=float)).astype(np.int64)
    t = np.maximum(np.rint(np.asarray(stride, dtype=float)).astype(np.int64), 1)
    if s.ndim == 0 and t.ndim == 0:
        return [group_path(hw, int(s), int(t))], None
    s, t = np.broadcast_arrays(s, t)
    us, si = _codes(s)
    ut, ti = _codes(t)
    pair, inv = _codes(si * len(ut) + ti)
    return [group_path(hw, int(us[p // len(ut)]), int(ut[p % len(ut)])) for p in pair], inv


def path_field(paths: list[GroupPath], inv: np.ndarray | None, name: str):
    """One GroupPath field as an array over layouts (a scalar where `inv` is None)."""
    vals = np.array([getattr(p, name) for p in paths], dtype=float)
    return vals[0] if inv is None else vals[inv]
