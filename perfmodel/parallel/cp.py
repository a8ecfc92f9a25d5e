"""Context parallelism: the sequence split over cp ranks, each holding 2 load-balanced chunks (causal).

Ring (p2p, Megatron-Core cp_comm_type="p2p"): K/V blocks circulate in cp-1 steps, each step one send/recv
of the local K/V (Liu et al. 2023, Ring Attention §3); backward sends K/V and their gradients: twice the
forward bytes. CP ranks are tp ranks apart (order tp-cp-ep-dp-pp).
"""
from __future__ import annotations

import numpy as np

from .. import comm
from .. import constants as K
from ..model import ModelSpec
from ..ops import Collective


def kv_width(m: ModelSpec) -> float:
    """K and V elements per token exchanged by CP (MLA exchanges the decompressed per-head K and V)."""
    a = m.attention
    return (a.num_heads * (a.qk_dim + a.v_dim)) if a.kind == "mla" else 2 * a.num_kv_heads * a.head_dim


def ring_exchange(m: ModelSpec, T, tp, cp) -> Collective:
    """The ring's cp-1 K/V steps of one layer, forward once and backward twice."""
    def price(hw):
        one = comm.p2p_time(T * kv_width(m) / tp * K.BF16, tp, hw)
        return np.where(np.asarray(cp) > 1, (np.asarray(cp) - 1) * one, 0.0)
    return Collective("CP ring K/V exchange", "cp", price, 1, 2)
