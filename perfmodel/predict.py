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

from . import constants as K, cost, workload
from .calibration import Constants, constants
from .compute import memory_time
from .counts import Convention, flops_per_token
from .hardware import HardwareSpec
from .layout import LayoutGrid
from .memory import GRAD_BYTES, memory_per_gpu, weight_bytes
from .model import ModelSpec
from .overlap import exposed, exposed_shared
from .parallel import dp as dp_par, pp as pp_par, recompute

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
    comm_raw_s: dict[str, np.ndarray] = field(default_factory=dict)

    def take(self, idx) -> "Prediction":
        """The predictions of layouts `idx` (an index array or mask), as a Prediction."""
        pick = lambda d: {k: np.asarray(v)[idx] for k, v in d.items()}
        return Prediction(self.layouts.take(idx), self.step_time_s[idx], self.tokens_per_s_per_gpu[idx],
                          self.mfu[idx], self.hfu[idx], self.memory_bytes_per_gpu[idx], pick(self.memory_parts),
                          self.fits[idx], pick(self.breakdown_s), self.model_flops_per_token[idx], self.hbm_bytes,
                          pick(self.comm_raw_s))

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
            "comm_raw_s": {k: float(v[i]) for k, v in self.comm_raw_s.items()},
        }


# The breakdown of a step, defined once: each key, the group it belongs to (search, validate, sensitivity
# and the report group by this), and what it is. Communication keys are EXPOSED seconds; their raw
# (unhidden) seconds are in Prediction.comm_raw_s under the same key.
BREAKDOWN = {
    "gemm": ("compute", "GEMMs (and MoE routing syncs), all layers of the slowest stage, all micro-batches"),
    "attention": ("compute", "flash-attention cores"),
    "memory_bound": ("compute", "norms, RoPE, residual adds, activations, permutes, FP8 casts"),
    "recompute": ("compute", "forward work recomputed in backward"),
    "embedding_head_mtp": ("compute", "embedding, LM head, loss and MTP modules"),
    "tp_comm": ("communication", "TP / SP and expert-TP collectives, exposed"),
    "cp_comm": ("communication", "CP K/V exchange, exposed"),
    "ep_comm": ("communication", "MoE dispatch + combine, exposed"),
    "pp_comm": ("communication", "pipeline send/recv, exposed"),
    "stage_imbalance": ("pipeline", "the slowest stage's time beyond its share of the work"),
    "pipeline_bubble": ("pipeline", "schedule fill and drain"),
    "dp_comm": ("communication", "gradient reduce-scatter / parameter all-gather (FSDP gathers), exposed"),
    "optimizer": ("fixed", "optimizer step over this GPU's shard"),
    "step_overhead": ("fixed", "per-step host and framework overhead"),
}


def predict_grid(model: ModelSpec, hw: HardwareSpec, grid: LayoutGrid, opts: Options = Options()) -> Prediction:
    """workload -> priced layers -> stage time -> schedule -> step, MFU, HFU, memory."""
    c, prec, m = opts.consts, opts.precision, model
    hw.peak(prec)  # raises a clear error when the GPU lacks the precision
    f64 = lambda x: np.asarray(x, dtype=float)
    tp, pp, vp, cp, ep, etp = (f64(getattr(grid, k)) for k in ("tp", "pp", "vp", "cp", "ep", "etp"))
    dp, edp, seq = f64(grid.dp), f64(grid.edp), f64(grid.seq)
    nmb = np.maximum(f64(grid.gbs) / (dp * f64(grid.mbs)), 1.0)
    imb = c.moe_imbalance if opts.routing == "real" else 1.0
    w = workload.build(m, grid, prec not in ("bf16", "fp16"), imb, c)

    # ---- layers: priced, their communication hidden under their own compute (one overlap budget) ----
    shares = {"tp": c.tp_overlap, "cp": c.cp_overlap, "ep": c.ep_overlap}
    zero = 0 * tp
    sums = {k: zero for k in ("gemm", "attention", "memory_bound", "tp_comm", "cp_comm", "ep_comm")}
    raw = {k: zero for k in ("tp_comm", "cp_comm", "ep_comm")}
    fwd_all = core_fwd = zero
    per_kind = {}
    for layer in w.layers:
        t = cost.price_layer(layer, hw, prec, c)
        comm = {k: t.comm[k][0] + t.comm[k][1] for k in ("tp", "cp", "ep") if k in t.comm}
        exp = exposed_shared(comm, shares, t.compute_f + t.compute_b)
        parts = {"gemm": t.gemm_f + t.gemm_b, "attention": t.attn_f + t.attn_b, "memory_bound": t.mem_f + t.mem_b,
                 **{f"{k}_comm": exp.get(k, zero) for k in ("tp", "cp", "ep")}}
        per_kind[layer.kind] = parts
        for k, v in parts.items():
            sums[k] = sums[k] + layer.count * v
        for k in ("tp", "cp", "ep"):
            raw[f"{k}_comm"] = raw[f"{k}_comm"] + layer.count * comm.get(k, zero)
        fwd_all = fwd_all + layer.count * (t.compute_f + exposed(t.comm.get("tp", (zero, zero))[0], t.gemm_f, c.tp_overlap))
        core_fwd = t.attn_f
    rec_t = recompute.time(grid.recompute, fwd_all, m.num_layers * core_fwd)

    # ---- embedding, LM head + loss, MTP ---------------------------------------------------------
    hd = w.head
    hf, hb = cost.gemms_fwd_bwd(hd.gemms, hw, prec, c)
    ce, _ = cost.streams_fwd_bwd(hd.streams, hw, c)
    head = hf + hb + ce + sum(x.calls_fwd * x.price(hw) + x.calls_bwd * x.price(hw) for x in hd.comms)
    mtp = 0.0
    if hd.mtp_layers:
        mf, mb = cost.gemm_fwd_bwd(hd.mtp_gemm, hw, prec, c)
        mtp = hd.mtp_layers * (sum(per_kind[w.layers[-1].kind].values()) + mf + mb + head)
    embed, _ = cost.streams_fwd_bwd((hd.embedding,), hw, c)

    # ---- pipeline stage and schedule -----------------------------------------------------------
    layer_total = sum(sums.values())
    work = layer_total + rec_t + head + mtp + embed
    per_layer = (layer_total + rec_t) / m.num_layers
    stage = np.maximum(work / pp, np.ceil(m.num_layers / pp) * per_layer)
    p2p = pp_par.p2p_time(w.Ts, m.hidden_size, tp, cp, dp, pp, vp, hw)
    pp_exp = exposed(p2p, stage, c.pp_overlap)
    stage = stage + pp_exp
    bubble = pp_par.bubble(stage, pp, vp)
    pipeline = nmb * stage + bubble

    # ---- data parallel and optimizer -----------------------------------------------------------
    dense, expert = dp_par.param_split(m)
    p_dense, p_exp = dense / (tp * pp), expert / (ep * etp * pp)
    dpc = dp * cp                         # dense parameters replicate over the data- and context-parallel ranks
    rs, ag = dp_par.grad_and_param_times(p_dense, p_exp, GRAD_BYTES, weight_bytes(prec), dpc, edp, tp, ep, etp, hw)
    dp_t = dp_par.exposed_time(rs, ag, grid.fsdp, stage, nmb, c.dp_overlap)
    shard = p_dense / dpc + p_exp / edp
    optimizer = memory_time(K.ADAM_STEP_BYTES * shard + K.GRAD_NORM_ZERO_BYTES * (p_dense + p_exp), hw, K.OPTIMIZER_KERNELS, c)
    step = pipeline + dp_t + optimizer + c.step_overhead_s

    # ---- throughput, MFU, HFU ------------------------------------------------------------------
    tokens, gpus, peak = f64(grid.gbs) * seq, f64(grid.gpus), hw.peak(prec)
    fpt = flops_per_token(m, seq, opts.attention, mtp=True) * np.ones_like(tp)
    a = m.attention
    attn_fwd = 2 * a.num_heads * (a.qk_dim + a.v_dim) * m.num_layers * workload.mean_keys_value("global", 0, seq)
    mfu = fpt * tokens / (step * gpus * peak)
    hfu = (fpt + recompute.extra_flops_per_token(grid.recompute, fpt, attn_fwd)) * tokens / (step * gpus * peak)

    per_mb = nmb / pp
    breakdown = {k: sums[k] * per_mb for k in ("gemm", "attention", "memory_bound")}
    breakdown |= {"recompute": rec_t * per_mb, "embedding_head_mtp": (head + mtp + embed) * per_mb,
                  **{k: sums[k] * per_mb for k in ("tp_comm", "cp_comm", "ep_comm")},
                  "pp_comm": pp_exp * nmb, "stage_imbalance": zero, "pipeline_bubble": bubble, "dp_comm": dp_t,
                  "optimizer": optimizer + zero, "step_overhead": c.step_overhead_s + zero}
    accounted = sum(v for k, v in breakdown.items() if BREAKDOWN[k][0] in ("compute", "communication") and k != "dp_comm")
    breakdown["stage_imbalance"] = np.maximum(0.0, nmb * stage - accounted)
    comm_raw = {k: raw[k] * per_mb for k in raw} | {"pp_comm": p2p * nmb,
                                                    "dp_comm": np.where(grid.fsdp, nmb * (2 * ag + rs), rs + ag)}

    mem = memory_per_gpu(w, grid, prec, c, p_dense, p_exp, dpc, edp, nmb)
    total_mem = sum(mem.values())
    return Prediction(
        layouts=grid, step_time_s=step, tokens_per_s_per_gpu=tokens / (step * gpus),
        mfu=mfu, hfu=hfu, memory_bytes_per_gpu=total_mem, memory_parts=mem,
        fits=total_mem <= hw.memory.hbm_bytes, breakdown_s=breakdown,
        model_flops_per_token=fpt, hbm_bytes=hw.memory.hbm_bytes, comm_raw_s=comm_raw,
    )
