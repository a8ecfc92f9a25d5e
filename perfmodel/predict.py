"""Predict one training step for arrays of layouts: time, its breakdown, MFU/HFU and memory per GPU.

Structure of a step (Narayanan et al. 2021 §2.2 and §3; Megatron-Core schedules):
  step = (m + (pp-1)/vp) * t_stage       pipeline: m micro-batches, bubble (pp-1)/vp stage-times
       + exposed DP / FSDP communication  outside the overlap windows
       + optimizer step + fixed per-step overhead
t_stage is one micro-batch's forward + backward through one pipeline rank's layers, including the
exposed part of its TP, CP, EP and PP communication. Every array here has one entry per layout.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from . import comm
from .calibration import Constants, constants
from .compute import BF16, attention_time, gemm_time, memory_time
from .counts import Convention, flops_per_token, param_counts
from .memory import GRAD_BYTES, memory_per_gpu, weight_bytes
from .hardware import HardwareSpec
from .layout import LayoutGrid
from .model import ModelSpec
from .workload import (Gemm, act_bytes_per_width, attention_gemms, expert_gemms, mean_keys_value,
                       mlp_gemms, rope_dims)

Routing = Literal["balanced", "real"]


@dataclass(frozen=True)
class Options:
    precision: str = "bf16"
    attention: Convention = "causal"      # MFU attention-FLOPs convention
    routing: Routing = "real"             # MoE: real (imbalanced) or force-balanced routing
    consts: Constants = field(default_factory=constants)


@dataclass(frozen=True)
class Prediction:
    layouts: LayoutGrid
    step_time_s: np.ndarray
    tokens_per_s_per_gpu: np.ndarray
    mfu: np.ndarray
    hfu: np.ndarray
    memory_bytes_per_gpu: np.ndarray
    memory_parts: dict[str, np.ndarray]
    fits: np.ndarray
    breakdown_s: dict[str, np.ndarray]
    model_flops_per_token: np.ndarray
    hbm_bytes: float

    def row(self, i: int = 0) -> dict:
        """JSON-ready dict of layout i."""
        lay = self.layouts.layout(i)
        return {
            "layout": {**lay.__dict__, "dp": lay.dp},
            "step_time_s": float(self.step_time_s[i]),
            "tokens_per_s_per_gpu": float(self.tokens_per_s_per_gpu[i]),
            "mfu": float(self.mfu[i]),
            "hfu": float(self.hfu[i]),
            "memory_bytes_per_gpu": float(self.memory_bytes_per_gpu[i]),
            "memory_parts_bytes": {k: float(v[i]) for k, v in self.memory_parts.items()},
            "fits": bool(self.fits[i]),
            "hbm_bytes": self.hbm_bytes,
            "breakdown_s": {k: float(v[i]) for k, v in self.breakdown_s.items()},
            "model_flops_per_token": float(self.model_flops_per_token[i]),
        }


def _exposed(comm_t, window, share):
    """Communication left on the critical path when `share` of it can run under `window` seconds of
    compute: (1-share)*comm + whatever of the overlappable part exceeds the window."""
    return (1.0 - share) * comm_t + np.maximum(0.0, share * comm_t - window)


def _gemms_time(gemms: list[Gemm], hw: HardwareSpec, precision: str, c: Constants):
    """(fwd, bwd, fwd input elements, bwd grad elements) summed over a list of GEMMs."""
    fwd = bwd = in_el = out_el = 0.0
    for g in gemms:
        prec = precision if g.low_precision else "bf16"
        n = g.count
        # grouped GEMMs: one kernel, `count` tiles of work
        f = n * (gemm_time(g.M, g.N, g.K, hw, prec, c) - c.kernel_fixed_s) + c.kernel_fixed_s
        b = n * (gemm_time(g.M, g.K, g.N, hw, prec, c) + gemm_time(g.N, g.K, g.M, hw, prec, c)
                 - 2 * c.kernel_fixed_s) + 2 * c.kernel_fixed_s
        fwd, bwd = fwd + f, bwd + b
        if g.low_precision:
            in_el = in_el + n * g.M * g.K
            out_el = out_el + n * g.M * g.N
    return fwd, bwd, in_el, out_el


def predict_grid(model: ModelSpec, hw: HardwareSpec, grid: LayoutGrid, opts: Options = Options()) -> Prediction:
    c, prec = opts.consts, opts.precision
    m, a, h = model, model.attention, model.hidden_size
    hw.peak(prec)  # raises a clear error when the GPU lacks the precision
    low = prec != "bf16" and prec != "fp16"
    f64 = lambda x: np.asarray(x, dtype=float)
    tp, pp, vp, cp = f64(grid.tp), f64(grid.pp), f64(grid.vp), f64(grid.cp)
    ep, etp, mbs, seq = f64(grid.ep), f64(grid.etp), f64(grid.mbs), f64(grid.seq)
    dp = f64(grid.dp)
    edp = f64(grid.edp)
    nmb = np.maximum(f64(grid.gbs) / (dp * mbs), 1.0)
    T = mbs * seq / cp                      # tokens per micro-batch on one CP rank (GEMM rows)
    Ts = T / tp                              # ... and per GPU after sequence-parallel sharding

    # ---- attention block ------------------------------------------------------------------
    att_f, att_b, att_in, att_out = _gemms_time(attention_gemms(m, T, tp), hw, prec, c)
    per_q = 2 * a.num_heads * (a.qk_dim + a.v_dim) / tp          # score FLOPs per query per key
    n_win = m.num_windowed_layers
    core_f = core_b = 0.0
    for kind, count, win in (("global", m.num_layers - n_win, 0), (a.window_kind, n_win, a.window)):
        if count == 0:
            continue
        keys = mean_keys_value(kind, win, seq)
        f, b = attention_time(per_q * mbs * seq * keys / cp, keys, hw, c)
        core_f = core_f + f * count / m.num_layers
        core_b = core_b + b * count / m.num_layers
    attn_mem = (m.norms_per_layer / 2 * 8 * h + 12 * h) * Ts + 4 * rope_dims(m) / tp * T
    # TP with sequence parallelism: all-gather before the block, reduce-scatter after (fwd), mirrored in bwd
    tp_ag = comm.all_gather_time(T * h * BF16, tp, 1, hw)
    # context parallelism: ring exchange of K/V blocks, (cp-1) steps (Liu et al. 2023, Ring Attention)
    kv_width = (a.num_heads * (a.qk_dim + a.v_dim)) if a.kind == "mla" else 2 * a.num_kv_heads * a.head_dim
    cp_step = comm.p2p_time(T * kv_width / tp * BF16, tp, hw)
    cp_f = np.where(cp > 1, (cp - 1) * cp_step, 0.0)
    cp_b = 2 * cp_f

    # ---- dense FFN ------------------------------------------------------------------------
    def ffn_dense():
        f, b, i, o = _gemms_time(mlp_gemms(m, T, m.ffn.intermediate_size, tp), hw, prec, c)
        mem = act_bytes_per_width(m) * m.ffn.intermediate_size / tp * T
        return f, b, i, o, mem, 2 * tp_ag, 0.0

    # ---- MoE FFN --------------------------------------------------------------------------
    def ffn_moe():
        e = m.moe
        assert e is not None
        imb = c.moe_imbalance if opts.routing == "real" else 1.0
        local = e.num_experts / ep
        rows = T * e.top_k * ep * etp / (tp * e.num_experts) * imb
        gem = expert_gemms(m, rows, local, etp)
        gem.append(Gemm(Ts, e.num_experts + 0 * tp, h + 0 * tp, 1.0, False))       # router
        if e.shared_experts:
            gem += mlp_gemms(m, T, e.shared_experts * e.shared_width, tp)
        f, b, i, o = _gemms_time(gem, hw, prec, c)
        assign = Ts * e.top_k * imb                                              # token copies per GPU
        # token routing per layer forward: moe_permute_bytes of HBM traffic per token copy per hidden
        # unit (20 B unfused Megatron-Core alltoall path ... ~4 B for DeepEP-style dispatch; calibration.toml)
        mem = (c.moe_permute_bytes * h * assign + act_bytes_per_width(m) * e.expert_intermediate_size * assign
               + act_bytes_per_width(m) * e.shared_experts * e.shared_width / tp * T)
        a2a = comm.moe_dispatch_time(Ts * imb * h * BF16, e.top_k, ep, etp, hw, e.num_experts,
                                     e.route_groups, e.route_group_topk)          # dispatch or combine
        etp_c = np.where(etp > 1, 2 * comm.all_gather_time(assign * etp * h * BF16, etp, 1, hw), 0.0)
        tp_c = (2 * tp_ag if e.shared_experts else 0.0) + etp_c
        # host sync + routing-kernel launches, once in forward and once in backward
        f = f + c.moe_layer_overhead_s
        b = b + c.moe_layer_overhead_s
        return f, b, i, o, mem, tp_c, 2 * a2a

    def layer(ffn):
        f_g, b_g, i_el, o_el, mem, tp_ffn, a2a = ffn
        gf = att_f + f_g
        gb = att_b + b_g
        mem_f = attn_mem + mem
        cast = (c.fp8_cast_bytes * (att_in + i_el)) if low else 0.0
        cast_b = (c.fp8_cast_bytes * (att_out + o_el)) if low else 0.0
        t_mem_f = memory_time(mem_f + cast, hw, 12, c)
        t_mem_b = memory_time(2 * mem_f + cast_b, hw, 20, c)
        comp_f = gf + core_f + t_mem_f
        comp_b = gb + core_b + t_mem_b
        tp_f = 2 * tp_ag + tp_ffn                     # fwd collectives of the layer; bwd the same
        # TP, CP and EP communication share ONE overlap budget: the layer's compute can hide each
        # byte only once. Separate windows would let faster compute expose more than it saves.
        comms = ((2 * tp_f, c.tp_overlap), (cp_f + cp_b, c.cp_overlap), (2 * a2a, c.ep_overlap))
        hideable = sum(share * t for t, share in comms)
        spill = np.maximum(0.0, hideable - (comp_f + comp_b))          # overlappable but not hidden
        tp_exp, cp_exp, ep_exp = (
            (1 - share) * t + spill * np.divide(share * t, hideable, out=np.zeros_like(spill), where=hideable > 0)
            for t, share in comms)
        return dict(gemm=gf + gb, attention=core_f + core_b, memory_bound=t_mem_f + t_mem_b,
                    tp_comm=tp_exp, cp_comm=cp_exp, ep_comm=ep_exp, fwd=comp_f + _exposed(tp_f, gf, c.tp_overlap))

    zero = np.zeros_like(tp)
    kinds = []
    if m.num_dense_ffn_layers:
        kinds.append((m.num_dense_ffn_layers, layer(ffn_dense())))
    if m.num_moe_layers:
        kinds.append((m.num_moe_layers, layer(ffn_moe())))
    parts = ("gemm", "attention", "memory_bound", "tp_comm", "cp_comm", "ep_comm")
    layers_sum = {p: sum(n * k[p] for n, k in kinds) + zero for p in parts}
    fwd_sum = sum(n * k["fwd"] for n, k in kinds) + zero

    # recompute: full re-runs each layer's forward in backward; selective re-runs core attention
    # (Korthikanti et al. 2022 §5)
    rec = grid.recompute
    recompute_t = np.where(rec == 2, fwd_sum, np.where(rec == 1, m.num_layers * core_f, 0.0))

    # ---- embedding, LM head + loss, MTP ---------------------------------------------------------
    hf, hb, _, _ = _gemms_time([Gemm(T, m.vocab_size / tp, h + 0 * tp, 1.0, False)], hw, prec, c)
    ce = memory_time(3 * 4 * T * m.vocab_size / tp + 2 * 4 * h * T, hw, 6, c)     # fp32 softmax/CE fwd+bwd
    head = hf + hb + ce + 2 * tp_ag
    mtp = 0.0
    if m.mtp_layers:
        k_last = kinds[-1][1]
        mtp_gf, mtp_gb, _, _ = _gemms_time([Gemm(T, h + 0 * tp, 2 * h + 0 * tp)], hw, prec, c)
        mtp = m.mtp_layers * (sum(k_last[p] for p in parts) + mtp_gf + mtp_gb + head)
    embed = memory_time(2 * 2 * h * Ts * 2, hw, 2, c)

    per_layer_avg = sum(layers_sum[p] for p in parts) / m.num_layers
    work = sum(layers_sum[p] for p in parts) + recompute_t + head + mtp + embed
    layers_per_rank = np.ceil(m.num_layers / pp)
    stage = np.maximum(work / pp, layers_per_rank * (per_layer_avg + recompute_t / m.num_layers))
    # pipeline p2p: each rank sends activations forward and gradients backward, vp times per micro-batch
    p2p = np.where(pp > 1, 2 * vp * comm.p2p_time(Ts * h * BF16, tp * cp * dp, hw), 0.0)
    stage = stage + _exposed(p2p, stage, c.pp_overlap)
    bubble = np.where(pp > 1, (pp - 1) / vp, 0.0) * stage
    pipeline = nmb * stage + bubble

    # ---- data parallel: grads reduce-scatter, params all-gather (distributed optimizer) --------
    pc = param_counts(m)
    e = m.moe
    expert_params = 0.0
    if e:
        exp_each = (m.ffn.matrices * h * e.expert_intermediate_size)
        expert_params = float(m.num_moe_layers * e.num_experts * exp_each)
        if m.mtp_layers:
            expert_params += m.mtp_layers * e.num_experts * exp_each
    dense_params = float(pc.total + pc.mtp_total) - expert_params
    # per GPU: dense weights split by tp (embeddings and head too) and pp; experts by ep*etp and pp
    p_dense = dense_params / (tp * pp)
    p_exp = expert_params / (ep * etp * pp)
    window_b = stage * 2 / 3                                # last micro-batch's backward
    window_f = stage / 3                                    # first micro-batch's forward
    fsdp = grid.fsdp
    gb, wb = GRAD_BYTES, weight_bytes(prec)
    rs = comm.reduce_scatter_time(p_dense * gb, dp, tp * cp, hw) + comm.reduce_scatter_time(p_exp * gb, edp, ep * etp, hw)
    ag = comm.all_gather_time(p_dense * wb, dp, tp * cp, hw) + comm.all_gather_time(p_exp * wb, edp, ep * etp, hw)
    dp_plain = _exposed(rs, window_b, c.dp_overlap) + _exposed(ag, window_f, c.dp_overlap)
    # FSDP: parameters gathered for forward and again for backward, grads scattered, every micro-batch
    fsdp_mb = 2 * ag + rs
    dp_fsdp = nmb * _exposed(fsdp_mb, stage, c.dp_overlap)
    dp_t = np.where(fsdp, dp_fsdp, dp_plain)

    # ---- optimizer: fused Adam over this GPU's shard (26 B/param) + grad zero/norm (8 B/param) --
    shard = p_dense / dp + p_exp / edp
    optimizer = memory_time(26 * shard + 8 * (p_dense + p_exp), hw, 10, c)

    step = pipeline + dp_t + optimizer + c.step_overhead_s
    tokens = f64(grid.gbs) * seq
    fpt = flops_per_token(m, seq, opts.attention, mtp=True) * np.ones_like(tp)
    peak = hw.peak(prec)
    gpus = f64(grid.gpus)
    mfu = fpt * tokens / (step * gpus * peak)
    extra = np.where(rec == 2, (fpt - 0) / 3, np.where(rec == 1, 0.0, 0.0))   # full: one more forward
    attn_fwd_per_tok = 2 * a.num_heads * (a.qk_dim + a.v_dim) * m.num_layers * mean_keys_value("global", 0, seq)
    extra = np.where(rec == 1, attn_fwd_per_tok, extra)
    hfu = (fpt + extra) * tokens / (step * gpus * peak)

    breakdown = {
        "gemm": layers_sum["gemm"] / pp * nmb,
        "attention": layers_sum["attention"] / pp * nmb,
        "memory_bound": layers_sum["memory_bound"] / pp * nmb,
        "recompute": recompute_t / pp * nmb,
        "embedding_head_mtp": (head + mtp + embed) / pp * nmb,
        "tp_comm": layers_sum["tp_comm"] / pp * nmb,
        "cp_comm": layers_sum["cp_comm"] / pp * nmb,
        "ep_comm": layers_sum["ep_comm"] / pp * nmb,
        "pp_comm": _exposed(p2p, stage, c.pp_overlap) * nmb,
        "stage_imbalance": 0.0 * tp,
        "pipeline_bubble": bubble,
        "dp_comm": dp_t,
        "optimizer": optimizer + 0 * tp,
        "step_overhead": c.step_overhead_s + 0 * tp,
    }
    accounted = sum(v for k, v in breakdown.items() if k not in ("pipeline_bubble", "dp_comm", "optimizer", "step_overhead", "stage_imbalance"))
    breakdown["stage_imbalance"] = np.maximum(0.0, nmb * stage - accounted)

    # ---- memory per GPU (first pipeline rank, the fullest) ---------------------------------------
    mem_parts = memory_per_gpu(m, hw, grid, opts, p_dense, p_exp, dp, edp, nmb, T, Ts)
    total_mem = sum(mem_parts.values())
    return Prediction(
        layouts=grid, step_time_s=step, tokens_per_s_per_gpu=tokens / (step * gpus),
        mfu=mfu, hfu=hfu, memory_bytes_per_gpu=total_mem, memory_parts=mem_parts,
        fits=total_mem <= hw.memory.hbm_bytes, breakdown_s=breakdown,
        model_flops_per_token=fpt, hbm_bytes=hw.memory.hbm_bytes,
    )
