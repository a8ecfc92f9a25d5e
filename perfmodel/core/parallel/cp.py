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


def exchange(m: ModelSpec, T, tp, cp, kind: str = "p2p") -> Collective | list[Collective]:
    """The CP communication of one layer for `kind` (p2p ring; a2a_p2p is priced as the ring)."""
    on = np.asarray(cp) > 1
    if kind == "torch_allgather":
        return torch_allgather(m, T, tp, cp)
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


def torch_allgather(m: ModelSpec, T, tp, cp) -> list[Collective]:
    """PyTorch context_parallel with rotate_method "allgather" (torchtitan's default, context_parallel_rotate_method
    = "allgather": pytorch/torchtitan@9dec370ad:torchtitan/config_manager.py, @038d5fd1b:torchtitan/config/
    job_config.py; set by torchtitan/distributed/utils.py create_context_parallel_ctx via set_rotate_method), as
    pytorch/pytorch torch/distributed/tensor/experimental/_attention.py implements it (indexed copy, version not
    pinned): _templated_ring_attention issues one all-gather of the local [K, V] (_AllGatherRotater) before the
    first of cp blockwise SDPA steps and waits for it before the second; _templated_ring_attention_backward
    all-gathers [K, V] again the same way, and passes the dK / dV accumulators around the ring in fp32
    (dkv_rotater = _create_rotater(pg, 2, method=ALL_TO_ALL), accum_dtype float32 under convert_to_f32): one hop
    per step, waited for after the next step's SDPA backward, the last one after the loop. Records: the K/V
    all-gather in forward and in backward (the gathered buffer: cp x the local K/V), the dK/dV hop (fp32, 2 x the
    local K/V bytes) cp times in backward; exposure: torch_allgather_exposed."""
    on = np.asarray(cp) > 1
    kv = T * kv_width(m) / tp * K.BF16  # this rank's K/V bytes
    ag = lambda f, b: Collective(
        "CP K/V all-gather", "mechanism", "all_gather", kv * cp, cp, tp, f, b, active=on, mechanism="cp_ag"
    )
    hop = Collective(
        "CP dK/dV ring hop (fp32)", "mechanism", "p2p", 2 * kv, 2, tp, 0, cp, active=on, mechanism="cp_dkv"
    )
    return [ag(1, 0), ag(0, 1), hop]


def torch_allgather_exposed(layer, attn_f, attn_b, cp, hw):
    """(forward, backward, raw forward, raw backward) seconds of torch_allgather's records of one layer: each K/V
    all-gather hides under the first blockwise step (1 / cp of the layer's attention, forward or backward: the
    head-tail load balance gives every step the same work), each dK/dV hop under the next step's backward, the
    last hop not at all: max(0, t_ag - a / cp) and (cp - 1) x max(0, t_hop - a_b / cp) + t_hop."""
    cp = np.asarray(cp, dtype=float)
    n = np.maximum(cp, 1.0)
    f = b = rf = rb = 0.0
    for x in layer.comms:
        if x.overlap != "mechanism" or x.mechanism not in ("cp_ag", "cp_dkv"):
            continue
        t = np.where(cp > 1, x.price(hw), 0.0)
        if x.mechanism == "cp_ag" and x.calls_fwd:
            f, rf = f + np.maximum(0.0, t - attn_f / n), rf + t
        elif x.mechanism == "cp_ag":
            b, rb = b + np.maximum(0.0, t - attn_b / n), rb + t
        else:
            b = b + (n - 1.0) * np.maximum(0.0, t - attn_b / n) + t
            rb = rb + x.calls_bwd * t
    return f, b, rf, rb
