"""Context parallelism: the sequence split over cp ranks, each holding 2 load-balanced chunks (causal).

Ring (p2p, Megatron-Core cp_comm_type="p2p"): K/V blocks circulate in cp-1 steps, each step one send/recv
of the local K/V (Liu et al. 2023, Ring Attention §3); backward sends K/V and their gradients: twice the
forward bytes. All-gather (cp_comm_type="allgather"): the K/V of all CP ranks gathered once per layer
(forward), reduce-scattered in backward. All-to-all (Ulysses, cp_comm_type="a2a"; Jacobs et al. 2023
§3.1): q, k and v all-to-all'd from sequence to head sharding before attention and the output back after
it (4 all-to-alls of the local tokens, forward), the same in backward. CP ranks are tp ranks apart
(order tp-cp-ep-dp-pp).
"""

from __future__ import annotations

import numpy as np

from perfmodel.core import constants as K
from perfmodel.core.ops import Collective
from perfmodel.specs.model import ModelSpec


def kv_width(m: ModelSpec) -> float:
    """K and V elements per token exchanged by CP (MLA exchanges the decompressed per-head K and V)."""
    a = m.attention
    return (a.num_heads * (a.qk_dim + a.v_dim)) if a.kind == "mla" else 2 * a.num_kv_heads * a.head_dim


def exchange(m: ModelSpec, T, tp, cp, kind: str = "p2p") -> Collective:
    """The CP communication of one layer for `kind` (p2p ring; a2a_p2p is priced as the ring)."""
    on = np.asarray(cp) > 1
    if kind == "a2a":
        a = m.attention
        width = (
            a.num_heads * (a.qk_dim + a.qk_dim + a.v_dim + a.v_dim)
            if a.kind == "mla"
            else a.num_heads * a.head_dim * 2 + 2 * a.num_kv_heads * a.head_dim
        )  # q, k, v in; o out
        return Collective(
            "CP all-to-all (Ulysses) q, k, v, o", "cp", "all_to_all", T * width / tp * K.BF16, cp, tp, 1, 1, active=on
        )
    if kind == "allgather":
        return Collective(
            "CP K/V all-gather", "cp", "all_gather", T * kv_width(m) / tp * K.BF16 * cp, cp, tp, 1, 1, active=on
        )
    return ring_exchange(m, T, tp, cp)


def ring_exchange(m: ModelSpec, T, tp, cp) -> Collective:
    """The ring's cp-1 K/V steps of one layer, forward once and backward twice."""
    return Collective(
        "CP ring K/V exchange",
        "cp",
        "p2p",
        T * kv_width(m) / tp * K.BF16,
        2,
        tp,
        1,
        2,
        steps=np.asarray(cp) - 1,
        active=np.asarray(cp) > 1,
    )
