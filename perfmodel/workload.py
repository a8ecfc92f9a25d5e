"""The model graph per GPU: the GEMMs, attention and memory-bound traffic of each layer kind, with the
shapes a layout gives them (TP/SP, CP, EP/ETP splits), as arrays over layouts.

Shapes follow Megatron-Core: with tensor parallelism t and sequence parallelism, column-parallel GEMMs
see the all-gathered tokens (M = micro-batch tokens / cp) and N / t; row-parallel GEMMs K / t
(Shoeybi et al. 2019 §3; Korthikanti et al. 2022 §4.2.2). MLA down-projections are duplicated across
TP ranks (Megatron-Core MLASelfAttention). Routed experts see tokens * top_k * ep * etp / (t * E) rows
each under balanced routing (MoE parallel folding, Liu et al. 2025).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .counts import mean_keys, S
from .model import ModelSpec

import sympy as sp


@dataclass(frozen=True)
class Gemm:
    """A linear layer per GPU: M rows (tokens), N outputs, K inputs; `count` identical GEMMs
    (experts of a grouped GEMM); `low_precision` False keeps it in BF16 (router, LM head)."""
    M: np.ndarray
    N: np.ndarray
    K: np.ndarray
    count: np.ndarray | float = 1.0
    low_precision: bool = True


@lru_cache(maxsize=64)
def _mean_keys_fn(kind: str, window: int, convention: str):
    return sp.lambdify(S, mean_keys(kind, window, convention), modules="numpy")  # type: ignore[arg-type]


def mean_keys_value(kind: str, window: int, seq: np.ndarray, convention: str = "causal") -> np.ndarray:
    """Mean keys per query (counts.mean_keys), lambdified once per (kind, window, convention)."""
    f = _mean_keys_fn(kind, window, convention)
    return np.broadcast_to(np.asarray(f(np.asarray(seq, dtype=float)), dtype=float), np.shape(seq)).astype(float)


def attention_gemms(m: ModelSpec, T, tp) -> list[Gemm]:
    a, h = m.attention, m.hidden_size
    if a.kind == "mla":
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        out = []
        if a.q_lora_rank:
            out += [Gemm(T, a.q_lora_rank + 0 * tp, h + 0 * tp),
                    Gemm(T, a.num_heads * qk / tp, a.q_lora_rank + 0 * tp)]
        else:
            out += [Gemm(T, a.num_heads * qk / tp, h + 0 * tp)]
        out += [Gemm(T, a.kv_lora_rank + a.qk_rope_head_dim + 0 * tp, h + 0 * tp),
                Gemm(T, a.num_heads * (a.qk_nope_head_dim + a.v_head_dim) / tp, a.kv_lora_rank + 0 * tp),
                Gemm(T, h + 0 * tp, a.num_heads * a.v_head_dim / tp)]
        return out
    q = a.num_heads * a.head_dim
    kv = 2 * a.num_kv_heads * a.head_dim
    return [Gemm(T, (q + kv) / tp, h + 0 * tp), Gemm(T, h + 0 * tp, q / tp)]


def mlp_gemms(m: ModelSpec, T, width, split) -> list[Gemm]:
    """Dense MLP (or shared expert) of `width`, split `split`-ways (TP)."""
    h = m.hidden_size
    up = (2 if m.ffn.matrices == 3 else 1) * width
    return [Gemm(T, up / split, h + 0 * split), Gemm(T, h + 0 * split, width / split)]


def expert_gemms(m: ModelSpec, rows_per_expert, local_experts, etp) -> list[Gemm]:
    e, h = m.moe, m.hidden_size
    assert e is not None
    up = (2 if m.ffn.matrices == 3 else 1) * e.expert_intermediate_size
    return [Gemm(rows_per_expert, up / etp, h + 0 * etp, local_experts),
            Gemm(rows_per_expert, h + 0 * etp, e.expert_intermediate_size / etp, local_experts)]


def rope_dims(m: ModelSpec) -> float:
    a = m.attention
    if m.position_embedding != "rope":
        return 0.0
    if a.kind == "mla":
        return (a.num_heads + 1) * a.qk_rope_head_dim
    return (a.num_heads + a.num_kv_heads) * a.head_dim


def act_bytes_per_width(m: ModelSpec) -> float:
    """HBM bytes per token per unit of FFN width for the activation function (read in, write out, BF16)."""
    return 6.0 if m.ffn.matrices == 3 else 4.0
