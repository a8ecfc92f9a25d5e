"""Exact parameter and FLOP counts, written once as sympy expressions.

Conventions (../shared/reference/model_arch.md §1):
- total  = every decoder weight (embeddings, untied head, norms, biases, routers, router-bias buffers,
           attention sinks); MTP modules excluded.
- active = weights one token touches with perfect top-k routing, incl. input embedding and head.
- n_mm   = matmul weights per token (active minus input embedding, norms, biases, sinks);
           training matmul FLOPs per token = 6 * n_mm (Kaplan et al. 2020 §2.1; Narayanan et al. 2021 Eq. 3
           without recompute).
- attention-score FLOPs per token, forward = sum over layers 2 * heads * (d_qk + d_v) * S_eff, training 3x
  (Korthikanti et al. 2022 §4 / Megatron-LM `num_floating_point_operations`). S_eff is the mean number of
  keys per query: `causal` counts the real causal/windowed keys, `full` counts all S keys (the convention
  of the older NeMo pages and the DGXC recipes; Megatron's 72 l h^2 (1 + s/6h + V/12lh)).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Literal

import numpy as np

from perfmodel.specs.fncache import numpy_fn
from perfmodel.specs.model import ModelSpec

if TYPE_CHECKING:
    import sympy as sp

Convention = Literal["causal", "full"]


# sympy is imported on first use only (about 0.2 s): scoring layouts needs the lambdified numpy
# functions, which perfmodel.specs.fncache keeps on disk once generated from these formulas.
@lru_cache(maxsize=1)
def _seq_symbol() -> "sp.Symbol":
    import sympy as sp

    return sp.Symbol("S", positive=True)  # sequence length


def __getattr__(name: str):
    """`counts.S`, the sequence-length symbol users see in `perfmodel explain`, made on first access."""
    if name == "S":
        return _seq_symbol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class ParamCounts:
    total: int
    active: int
    embedding: int  # input embedding (+ learned positions)
    head: int  # untied output head (0 when tied)
    n_mm: int  # matmul params per token (FLOPs basis)
    mtp_total: int
    mtp_n_mm: int

    positions: int = 0  # learned position embedding (part of `embedding`)
    tied: bool = False

    @property
    def active_without_embedding(self) -> int:
        """gpt-oss convention: drop the input embedding; a tied matrix still serves as the head."""
        return self.active - (self.positions if self.tied else self.embedding)


# ---- per-layer building blocks (plain integers; each line says what it counts) -------------


def attention_params(m: ModelSpec) -> tuple[int, int]:
    """(all params, matmul params) of one attention block."""
    a, h = m.attention, m.hidden_size
    if a.kind == "mla":
        # DeepSeek-V2 §2.1.2 / V3 config: q = W_qb RMSNorm(W_qa x); [c_kv, k_rope] = W_kva x;
        # [k_nope, v] = W_kvb RMSNorm(c_kv); o = W_o [heads * v_dim].
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        if a.q_lora_rank:
            q_mm = h * a.q_lora_rank + a.q_lora_rank * a.num_heads * qk
            q_norm = a.q_lora_rank
        else:
            q_mm, q_norm = h * a.num_heads * qk, 0
        kv_mm = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank * a.num_heads * (
            a.qk_nope_head_dim + a.v_head_dim
        )
        o_mm = a.num_heads * a.v_head_dim * h
        mm = q_mm + kv_mm + o_mm
        return mm + q_norm + a.kv_lora_rank, mm
    q = a.num_heads * a.head_dim
    kv = 2 * a.num_kv_heads * a.head_dim
    mm = h * (q + kv) + q * h
    extra = (q + kv) * a.qkv_bias + h * a.o_bias
    extra += 2 * a.head_dim if a.qk_norm == "rmsnorm" else 0
    extra += a.num_heads if a.sinks else 0
    return mm + extra, mm


def mlp_params(m: ModelSpec, width: int) -> tuple[int, int]:
    """(all, matmul) params of one MLP/expert of `width`: GLU has 3 matrices, plain 2 (Shazeer 2020)."""
    h, f = m.hidden_size, m.ffn
    mats = f.matrices
    mm = mats * h * width
    bias = 0
    if f.bias:
        bias = (mats - 1) * width + h
    return mm + bias, mm


def moe_layer_params(m: ModelSpec) -> tuple[int, int, int]:
    """(total, active, active matmul) params of one MoE FFN block (router + experts + shared)."""
    e, h = m.moe, m.hidden_size
    assert e is not None
    exp_all, exp_mm = mlp_params(m, e.expert_intermediate_size)
    if e.expert_bias and not m.ffn.bias:
        # gpt-oss: biases on both expert matrices: fused gate/up (2*width) and down (h)
        exp_all += (m.ffn.matrices - 1) * e.expert_intermediate_size + h
    sh_all, sh_mm = mlp_params(m, e.shared_width)
    router_mm = h * e.num_experts
    router = router_mm + e.num_experts * e.router_bias + e.num_experts * e.score_correction_bias
    total = router + e.num_experts * exp_all + e.shared_experts * sh_all
    active = router + e.top_k * exp_all + e.shared_experts * sh_all
    active_mm = router_mm + e.top_k * exp_mm + e.shared_experts * sh_mm
    return total, active, active_mm


def norm_params(m: ModelSpec) -> int:
    return m.hidden_size * (2 if m.norm == "layernorm" else 1)


def parameter_tensors(m: ModelSpec, separate: bool = False) -> tuple[int, int, int]:
    """(dense layer, MoE layer, outside the layers) parameter TENSORS (not elements): what an optimizer that loops
    over its parameters launches kernels for (parallel/dp.py optimizer_kernels). One weight per linear layer
    (`separate`: wq, wk, wv and a GLU's w1, w3 apart, torchtitan / Hugging Face; else Megatron's fused QKV and
    gate+up, or MPT's Wqkv), one per bias, norm weight and norm bias; experts one set each (TE GroupedLinear and
    SequentialMLP keep a weight per expert). Outside: the embedding, learned positions, final norm, untied head."""
    a, f, nt = m.attention, m.ffn, 2 if m.norm == "layernorm" else 1
    if a.kind == "mla":  # q_a + q_b (or q), kv_a, kv_b, o; q_a and kv_a norms
        attn = (3 if a.q_lora_rank else 1) + 3 + 1
    else:
        qkv = 3 if separate else 1
        attn = qkv + 1 + qkv * a.qkv_bias + a.o_bias + 2 * (a.qk_norm == "rmsnorm") + a.sinks
    linears = f.matrices if separate else 2  # a GLU's gate and up are one fused linear unless separate
    mlp = linears * (1 + f.bias)
    base = attn + m.norms_per_layer * nt
    dense = base + mlp
    moe = 0
    if m.moe:
        e = m.moe
        expert = linears * (1 + (f.bias or e.expert_bias))
        router = 1 + e.router_bias + e.score_correction_bias
        moe = base + router + e.num_experts * expert + e.shared_experts * mlp
    outside = 1 + (m.position_embedding == "learned") + (nt if m.final_norm else 0) + (not m.tied_embeddings)
    return dense, moe, outside


@lru_cache(maxsize=256)
def param_counts(m: ModelSpec) -> ParamCounts:
    h, V = m.hidden_size, m.vocab_size
    attn_all, attn_mm = attention_params(m)
    norms = m.norms_per_layer * norm_params(m)
    dense_all, dense_mm = mlp_params(m, m.ffn.intermediate_size) if m.num_dense_ffn_layers else (0, 0)
    Ld, Lm = m.num_dense_ffn_layers, m.num_moe_layers
    moe_total, moe_active, moe_mm = moe_layer_params(m) if m.moe else (0, 0, 0)

    embedding = V * h + (m.max_position_embeddings * h if m.position_embedding == "learned" else 0)
    head = 0 if m.tied_embeddings else V * h
    final = norm_params(m) if m.final_norm else 0
    layers_total = m.num_layers * (attn_all + norms) + Ld * dense_all + Lm * moe_total
    layers_active = m.num_layers * (attn_all + norms) + Ld * dense_all + Lm * moe_active
    total = embedding + head + final + layers_total
    active = embedding + head + final + layers_active
    n_mm = m.num_layers * attn_mm + Ld * dense_mm + Lm * moe_mm + V * h

    # DeepSeek-V3 §2.2 MTP module: enorm + hnorm, projection 2h -> h, one transformer block (MoE when
    # the model is MoE), shared embedding and head (computed again: V*h matmul per token).
    mtp_block_all = attn_all + norms + (moe_total if m.moe else dense_all)
    mtp_block_mm = attn_mm + (moe_mm if m.moe else dense_mm)
    mtp_total = m.mtp_layers * (2 * norm_params(m) + 2 * h * h + mtp_block_all + norm_params(m))
    mtp_n_mm = m.mtp_layers * (2 * h * h + mtp_block_mm + V * h)
    positions = m.max_position_embeddings * h if m.position_embedding == "learned" else 0
    return ParamCounts(total, active, embedding, head, n_mm, mtp_total, mtp_n_mm, positions, m.tied_embeddings)


# ---- attention: mean keys per query as sympy expressions of S ---------------------------------


def mean_keys(kind: str, window: int, convention: Convention) -> sp.Expr:
    """Mean keys attended per query over a sequence of S tokens."""
    import sympy as sp

    S = _seq_symbol()
    if convention == "full":
        return S
    if kind == "global" or window <= 0:
        return (S + 1) / 2
    W = sp.Integer(window)
    if kind == "sliding":  # key j visible to query i when i-W < j <= i (gpt-oss window counts self)
        return sp.Piecewise(((S + 1) / 2, S <= W), ((W * (W + 1) / 2 + (S - W) * W) / S, True))
    # chunked (Llama 4): query i sees the keys of its own chunk up to itself
    q = sp.floor(S / W)
    r = S - q * W
    return (q * W * (W + 1) / 2 + r * (r + 1) / 2) / S


def attention_flops_expr(m: ModelSpec, convention: Convention = "causal", mtp: bool = True) -> sp.Expr:
    """Training attention-score FLOPs per token (QK^T and PV, forward + backward = 3x forward)."""
    a = m.attention
    per_layer = 2 * a.num_heads * (a.qk_dim + a.v_dim)
    n_win = m.num_windowed_layers
    n_glob = m.num_layers - n_win + (m.mtp_layers if mtp else 0)
    expr = n_glob * per_layer * mean_keys("global", 0, convention)
    if n_win:
        expr += n_win * per_layer * mean_keys(a.window_kind, a.window, convention)
    return 3 * expr


def flops_per_token_expr(m: ModelSpec, convention: Convention = "causal", mtp: bool = True) -> sp.Expr:
    """Model FLOPs per token for training (fwd + bwd, no recompute) as a sympy expression of S."""
    import sympy as sp

    pc = param_counts(m)
    n_mm = pc.n_mm + (pc.mtp_n_mm if mtp else 0)
    return 6 * sp.Integer(n_mm) + attention_flops_expr(m, convention, mtp)


def symbolic_flops_formula(m: ModelSpec, convention: Convention = "causal") -> sp.Expr:
    """The general formula in named symbols, for `perfmodel explain flops`."""
    import sympy as sp

    n_mm, L, nh, dqk, dv, Seff = sp.symbols("n_mm L n_heads d_qk d_v S_eff", positive=True)
    return 6 * n_mm + 3 * L * 2 * nh * (dqk + dv) * Seff


@lru_cache(maxsize=512)
def flops_per_token_fn(
    m: ModelSpec, convention: Convention = "causal", mtp: bool = True
) -> Callable[[np.ndarray], np.ndarray]:
    """Numpy function of sequence length (scalar or array), lambdified once from the sympy expression
    (and kept on disk by perfmodel.specs.fncache)."""
    return numpy_fn(
        "flops_per_token",
        f"{m.model_dump_json()}|{convention}|{mtp}",
        lambda: (_seq_symbol(), flops_per_token_expr(m, convention, mtp)),
    )


@lru_cache(maxsize=64)
def mean_keys_fn(kind: str, window: int, convention: Convention) -> Callable[[np.ndarray], np.ndarray]:
    """`mean_keys` as a numpy function of sequence length, lambdified once (kept on disk by perfmodel.specs.fncache)."""
    return numpy_fn(
        "mean_keys", f"{kind}|{window}|{convention}", lambda: (_seq_symbol(), mean_keys(kind, window, convention))
    )


def flops_per_token(m: ModelSpec, seq: int | np.ndarray, convention: Convention = "causal", mtp: bool = True):
    return flops_per_token_fn(m, convention, mtp)(np.asarray(seq, dtype=float))
