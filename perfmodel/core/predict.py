"""Predict one training step for arrays of layouts: time, its breakdown, MFU/HFU and memory per GPU.

Structure of a step (Narayanan et al. 2021 §2.2 and §3; Megatron-Core schedules):
  step = (m + (pp-1)/vp) * t_stage       pipeline: m micro-batches, bubble (pp-1)/vp stage-times
       + exposed DP / FSDP communication  outside the overlap windows
       + optimizer step + per-step host overhead  the slowest of N ranks' host work: mean x H_N
t_stage is one micro-batch's forward + backward through one pipeline rank's layers, including the
exposed part of its TP, CP, EP and PP communication. Every array here has one entry per layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from perfmodel.core import constants as K
from perfmodel.core import price, workload
from perfmodel.core.calibration import Constants, constants
from perfmodel.core.compute import memory_time
from perfmodel.core.memory import Ranks, memory_per_gpu, offloads, ranks_of, weight_bytes
from perfmodel.core.overlap import exposed, exposed_shared
from perfmodel.core.parallel import cp as cp_par
from perfmodel.core.parallel import dp as dp_par
from perfmodel.core.parallel import ep as ep_par
from perfmodel.core.parallel import pp as pp_par
from perfmodel.core.parallel import recompute
from perfmodel.core.parallel import tp as tp_par
from perfmodel.core.software import Software
from perfmodel.core.software import resolve as resolve_software
from perfmodel.core.topology import leaves_domain
from perfmodel.specs.counts import Convention, flops_per_token
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.layout import LayoutGrid
from perfmodel.specs.model import ModelSpec
from perfmodel.specs.stack import load_stack

Routing = Literal["balanced", "real"]


@dataclass(frozen=True)
class Options:
    precision: str = "bf16"
    attention: Convention = "causal"  # MFU attention-FLOPs convention
    routing: Routing = "real"  # MoE: real (imbalanced) or force-balanced routing
    consts: Constants = field(default_factory=constants)
    # the software stack: a preset id or stack file (None: the `default` stack) and --stack-set overrides
    stack: str | None = None
    stack_set: tuple[str, ...] = ()


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
    memory_stages: dict[str, np.ndarray] = field(
        default_factory=dict
    )  # bytes per GPU: first, fullest, last rank; fullest_rank

    def take(self, idx) -> "Prediction":
        """The predictions of layouts `idx` (an index array or mask), as a Prediction."""
        pick = lambda d: {k: np.asarray(v)[idx] for k, v in d.items()}
        return Prediction(
            self.layouts.take(idx),
            self.step_time_s[idx],
            self.tokens_per_s_per_gpu[idx],
            self.mfu[idx],
            self.hfu[idx],
            self.memory_bytes_per_gpu[idx],
            pick(self.memory_parts),
            self.fits[idx],
            pick(self.breakdown_s),
            self.model_flops_per_token[idx],
            self.hbm_bytes,
            pick(self.comm_raw_s),
            pick(self.memory_stages),
        )

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
            "memory_stages_bytes": {k: float(v[i]) for k, v in self.memory_stages.items() if k != "fullest_rank"},
            **(
                {"memory_fullest_rank": int(self.memory_stages["fullest_rank"][i])}
                if "fullest_rank" in self.memory_stages
                else {}
            ),
        }


@dataclass(frozen=True)
class Term:
    """One term of the step's breakdown: its group (compute, communication, pipeline, fixed), what it is, the
    words a summary uses for it, and what a step it dominates is limited by. Every command and report reads this
    one table (issue 24: the terms were classified six ways)."""

    group: str
    text: str
    short: str
    limit: str


# The breakdown of a step, defined once. Communication keys are EXPOSED seconds; their raw (unhidden) seconds
# are in Prediction.comm_raw_s under the same key.
BREAKDOWN = {
    "gemm": Term(
        "compute",
        "GEMMs (and MoE routing syncs), all layers of the slowest stage, all micro-batches",
        "GEMMs",
        "compute",
    ),
    "attention": Term("compute", "flash-attention cores", "attention", "compute"),
    "memory_bound": Term(
        "compute", "norms, RoPE, residual adds, activations, permutes, FP8 casts", "memory-bound kernels", "compute"
    ),
    "recompute": Term("compute", "forward work recomputed in backward", "activation recompute", "memory"),
    "embedding_head_mtp": Term(
        "compute", "embedding, LM head, loss and MTP modules", "embedding, head and MTP", "compute"
    ),
    "tp_comm": Term(
        "communication", "TP / SP and expert-TP collectives, exposed", "tensor-parallel communication", "communication"
    ),
    "cp_comm": Term("communication", "CP K/V exchange, exposed", "context-parallel communication", "communication"),
    "ep_comm": Term("communication", "MoE dispatch + combine, exposed", "expert all-to-all", "communication"),
    "pp_comm": Term("communication", "pipeline send/recv, exposed", "pipeline send/receive", "communication"),
    "stage_imbalance": Term(
        "pipeline",
        "the slowest stage's time beyond its share of the work",
        "pipeline stage imbalance",
        "pipeline stage balance",
    ),
    "pipeline_bubble": Term(
        "pipeline", "schedule fill and drain", "pipeline bubble (few micro-batches per step)", "batch size"
    ),
    "dp_comm": Term(
        "communication",
        "gradient reduce-scatter / parameter all-gather (FSDP gathers), exposed",
        "data-parallel gradient sync",
        "communication",
    ),
    "optimizer": Term("fixed", "optimizer step over this GPU's shard", "optimizer step", "per-step overhead"),
    "step_overhead": Term(
        "fixed",
        "per-step host work of the slowest rank (mean x H_N over the job's N GPUs)",
        "per-step host overhead",
        "per-step overhead",
    ),
}
# the work a step must do (tensor, attention, memory-bound kernels and the head): every other term is an overhead
KERNEL_TERMS = tuple(k for k, t in BREAKDOWN.items() if t.limit == "compute")


def terms(group: str) -> tuple[str, ...]:
    """The breakdown terms of one group (compute, communication, pipeline, fixed)."""
    return tuple(k for k, t in BREAKDOWN.items() if t.group == group)


def software_of(m: ModelSpec, hw: HardwareSpec, opts: Options) -> Software:
    """The stack of `opts` (preset, file or the default, with its per-model rules and --stack-set) as the
    cost model reads it."""
    return resolve_software(opts.stack, tuple(opts.stack_set), m.id, m.is_moe, hw, opts.precision, opts.consts)


def stack_info(opts: Options, model: ModelSpec | None = None, hw: HardwareSpec | None = None) -> dict:
    """The stack a prediction used, for --json: "stack" (preset id), "stack_name", "stack_set" and the
    per-model rules of the preset that applied to this model and system."""
    spec = load_stack(opts.stack)
    rules = (
        spec.for_model(model.id, model.is_moe, hw.id, opts.precision).applied
        if model is not None and hw is not None
        else ()
    )
    return {"stack": spec.id, "stack_name": spec.name, "stack_set": list(opts.stack_set), "stack_rules": list(rules)}


def check_recompute(sw: Software, rec) -> None:
    """Selective recompute needs the stack's module list (Megatron-Core recompute_modules): a stack that names
    none (its selective policy is not a module list, e.g. torchtitan's op-level SAC, or it has none) would
    price selective as no recompute at all, a silently wrong number; refused instead."""
    if not sw.has_selective and np.any(np.asarray(rec) == recompute.SELECTIVE):
        from perfmodel.errors import InputError

        raise InputError(
            "recompute",
            "recompute",
            f"selective: stack {sw.stack_id} names no selective-recompute modules; give them with "
            "--stack-set recompute_modules=core_attn[,mlp,...] or use none or full",
        )


@dataclass(frozen=True)
class KindPrice:
    """One layer kind priced on the distinct layer-axis combinations (workload.unique_layer_axes), per
    micro-batch: its breakdown parts (exposed communication), raw communication, the forward a full
    recompute re-runs, the selected modules' forward seconds and FLOPs."""

    parts: dict[str, np.ndarray]
    raw: dict[str, np.ndarray]
    fwd: np.ndarray
    selective_f: np.ndarray
    selective_flops: np.ndarray
    offload: np.ndarray | None = None  # activation CPU offloading's exposed seconds at pp = 1 (None: no offload)
    ep_solo: np.ndarray | float = 0.0  # a pass's extra exposed seconds when its EP all-to-all runs without overlap


@dataclass(frozen=True)
class KindTime:
    """One layer kind priced and gathered to layouts: its breakdown parts (exposed communication), raw
    communication, recompute seconds and selective-recompute FLOPs, per micro-batch."""

    parts: dict[str, np.ndarray]
    raw: dict[str, np.ndarray]
    recompute: np.ndarray
    selective_flops: np.ndarray


def _price_kinds(ws, hw, prec: str, c_layer: Constants, sw: Software) -> list[KindPrice]:
    """Each layer kind of workload `ws` (built on the distinct layer-axis combinations) priced, its TP, CP
    and EP communication hidden under its own compute in one budget (overlap.py)."""
    return [price_kind(layer, ws, hw, prec, c_layer, sw) for layer in ws.layers]


def price_kind(layer, ws, hw, prec: str, c_layer: Constants, sw: Software, reduce=None) -> KindPrice:
    """One layer kind of workload `ws` priced (_price_kinds; `reduce`: price.price_layer's)."""
    zs = 0 * np.asarray(ws.T, dtype=float)
    tp_f, tp_b = tp_shares(ws, hw, sw, layer.kind == "moe")
    shares = {"tp_f": tp_f, "tp_b": tp_b, "cp": sw.cp_share, "ep": sw.ep_share}
    t = price.price_layer(layer, hw, prec, c_layer, sw, reduce)
    tp_c = t.comm.get("tp", (zs, zs))
    comm = {"tp_f": tp_c[0], "tp_b": tp_c[1], **{k: t.comm[k][0] + t.comm[k][1] for k in ("cp", "ep") if k in t.comm}}
    exp = exposed_shared(comm, shares, t.compute_f + t.compute_b)
    # the asynchronous backward TP collectives (tp_async) hide under their own GEMMs, outside this budget; so do
    # the collectives whose exposure follows from their own mechanism (overlap "mechanism": PyTorch AsyncTP's
    # collective matmuls, parallel/tp.py; PyTorch context_parallel's all-gather rotation, parallel/cp.py)
    tp_a = t.comm.get("tp_async", (zs, zs))[1]
    m_tp = tp_par.async_tp_exposed(layer, hw, prec, c_layer, ws.tp, sw.selective_ac == "op") if sw.async_tp else None
    m_tp = m_tp or (zs, zs, zs, zs, zs)
    m_cp = (
        cp_par.torch_allgather_exposed(layer, t.attn_f, t.attn_b, ws.cp, hw)
        if sw.cp_comm == "torch_allgather"
        else None
    )
    m_cp = m_cp or (zs, zs, zs, zs)
    parts = {
        "gemm": t.gemm_f + t.gemm_b,
        "attention": t.attn_f + t.attn_b,
        "memory_bound": t.mem_f + t.mem_b,
        "tp_comm": exp["tp_f"] + exp["tp_b"] + t.tp_async_exposed + m_tp[0] + m_tp[1],
        "cp_comm": exp.get("cp", zs) + m_cp[0] + m_cp[1],
        "ep_comm": exp.get("ep", zs),
    }
    fwd = t.compute_f + exposed(tp_c[0], t.gemm_f, tp_f) + m_tp[0] + m_cp[0]  # what full recompute re-runs
    raw = {
        "tp_comm": tp_c[0] + tp_c[1] + tp_a + m_tp[2] + m_tp[3],
        "cp_comm": comm.get("cp", zs) + m_cp[2] + m_cp[3],
        "ep_comm": comm.get("ep", zs),
    }
    sel_f, sel_flops = t.selective_f + m_tp[4], t.selective_flops
    share = recompute.layer_share(sw, ws.model.num_layers)
    if share:  # per-layer SAC: that share of the layers re-runs its whole forward
        sel_f = share * fwd
        sel_flops = share * (
            sum(g.flops_fwd for g in layer.gemms) + sum(a.flops_fwd * a.share for a in layer.attention)
        )
    # activation CPU offloading: the host-link transfer beyond the layer's own compute (memory traffic),
    # per layer of this kind at pp = 1 (added where the layout has pp = 1, _gather_kinds)
    off = price.offload_exposed(layer, t, hw, sw, ws.model.num_layers)
    # the same micro-batch with its EP all-to-all outside the overlap (ep.a2a_solo_microbatches: Megatron-Core's
    # combined 1F1B; DualPipe pairs its own chunks, DeepSeek-V3 report Sec. 3.2.1, and is not priced so)
    solo = (
        sum(exposed_shared(comm, shares | {"ep": 0.0}, t.compute_f + t.compute_b).values()) - sum(exp.values())
        if sw.ep_share > 0 and "ep" in comm and sw.schedule != "dualpipe"
        else 0.0
    )
    return KindPrice(parts, raw, fwd, sel_f, sel_flops, off, solo)


def tp_shares(ws, hw, sw: Software, moe: bool = False):
    """(forward, backward) share of a layer's TP collectives (overlap class "tp": TP / SP, and in an MoE layer
    expert-TP) the stack hides, per combination of workload `ws`: its TP overlap's, or none where that
    overlap needs the NVLink domain (software.OVERLAP_DOMAIN) and the TP (or expert-TP) group leaves it."""
    if not sw.tp_overlap_scale_up:
        return sw.tp_share_fwd, sw.tp_share_bwd
    D = hw.scale_up.domain_size
    out = leaves_domain(np.asarray(ws.tp, dtype=np.int64), 1, D)
    if moe:
        out = out | leaves_domain(np.asarray(ws.etp, dtype=np.int64), 1, D)
    return np.where(out, 0.0, sw.tp_share_fwd), np.where(out, 0.0, sw.tp_share_bwd)


def _gather_kinds(prices: list[KindPrice], rec, g, pp) -> list[KindTime]:
    """The kind prices gathered to layouts by `g`, with recompute policy `rec`'s seconds and, where the
    layout has pp = 1 and no recompute, activation offloading's exposed copy time in the memory-bound part."""
    return [
        KindTime(
            with_offload({k: g(v) for k, v in p.parts.items()}, p.offload, g, pp, rec),
            {k: g(v) for k, v in p.raw.items()},
            recompute.time(rec, g(p.fwd), g(p.selective_f)),
            g(p.selective_flops),
        )
        for p in prices
    ]


def with_offload(parts: dict, offload, g, pp, rec=recompute.NONE) -> dict:
    """`parts` with the offload seconds (per combination, gathered by `g`) added to memory_bound where the
    stack offloads: pp = 1 and no recompute (memory.offloads)."""
    if offload is None:
        return parts
    return parts | {"memory_bound": parts["memory_bound"] + np.where(offloads(pp, rec), g(offload), 0.0)}


def _price_head(ws, kinds: list[KindPrice], hw, prec: str, c_layer: Constants, c_other: Constants, reduce=None):
    """(head, embedding) seconds per micro-batch on the distinct layer-axis combinations: LM head GEMM,
    logits / loss traffic and its TP gathers, MTP modules (one layer of the last kind, the projection and
    their own head each) on the last rank; the embedding lookup on the first. `reduce` (the planner's): the
    records priced once per distinct combination of their declared axes (price._gemms_on, _comms_on)."""
    hd = ws.head
    hf, hb = price.gemms_fwd_bwd(hd.gemms, hw, prec, c_other, reduce)
    ce_f, ce_b = price.streams_fwd_bwd(hd.streams, hw, c_other)
    head = (
        hf
        + hb
        + ce_f
        + ce_b
        + sum(x.calls_fwd * t + x.calls_bwd * t for x, t in zip(hd.comms, price._comms_on(hd.comms, hw, reduce)))
    )
    if hd.mtp_layers:
        mf, mb = price._gemm_on(hd.mtp_gemm, hw, prec, c_layer, reduce)
        head = head + hd.mtp_layers * (sum(kinds[-1].parts.values()) + mf + mb + head)
    embed, _ = price.streams_fwd_bwd((hd.embedding,), hw, c_other)
    return head, embed


def pp_share(sw: Software, vp) -> np.ndarray:
    """Share of each layout's pipeline send/recv that can hide under compute: the interleaved schedule's
    (vp > 1, the stack's overlap_p2p_comm) or the non-interleaved one's (Software.pp_share_1f1b)."""
    return np.where(np.asarray(vp) > 1, sw.pp_share, sw.pp_share_1f1b).astype(float)


@dataclass(frozen=True)
class Stages:
    t_max: np.ndarray  # the slowest rank's time per micro-batch
    t_sum: np.ndarray  # summed over ranks
    parts: dict[str, np.ndarray]  # the mean rank's breakdown per micro-batch
    p2p: np.ndarray  # raw pipeline send/recv per micro-batch
    pipeline: np.ndarray  # all micro-batches through the schedule
    bubble: np.ndarray


def _stages(
    m: ModelSpec, w, grid: LayoutGrid, kinds: list[KindTime], head, embed, hw, sw: Software, nmb, g=lambda x: x
) -> Stages:
    """Each distinct pipeline rank priced once (parallel/pp.py signatures): its layers of each kind, its
    embedding or head, its exposed send/recv; then the schedule. The mean over ranks needs no per-rank
    arrays: every layer of kind k is on some rank (sum over ranks of its count is the kind's count)."""
    f64 = lambda x: np.asarray(x, dtype=float)
    tp, pp, vp, cp, dp = (f64(getattr(grid, k)) for k in ("tp", "pp", "vp", "cp", "dp"))
    cnt, has_emb, has_head, mult = pp_par.signature_arrays(
        w.layer_kinds, len(w.layers), grid.pp, grid.vp, m.mtp_layers, sw.pipeline_layout
    )
    per_layer = [sum(k.parts.values()) + k.recompute for k in kinds]
    layers = sum(cnt[i] * per_layer[i][:, None] for i in range(len(kinds)))
    compute_s = pp_par.stage_compute(layers, has_emb, embed[:, None], has_head, head[:, None])
    p2p = pp_par.boundary_p2p_time(g(w.Ts), m.hidden_size, tp, cp, dp, pp, vp, hw)
    t_stage = pp_par.stage_seconds(compute_s, p2p[:, None], pp_share(sw, vp)[:, None], mult > 0)
    pp_exp_s = exposed(p2p[:, None], compute_s, pp_share(sw, vp)[:, None])  # the breakdown's part of it
    t_max = t_stage.max(axis=1)
    t_sum = (mult * np.where(mult > 0, t_stage, 0.0)).sum(axis=1)
    share = [layer.count / pp for layer in w.layers]  # layers of kind k per rank, mean
    parts = {p: sum(share[i] * kinds[i].parts[p] for i in range(len(kinds))) for p in kinds[0].parts}
    parts |= {
        "recompute": sum(share[i] * kinds[i].recompute for i in range(len(kinds))),
        "embedding_head_mtp": (embed + head) / pp,
        "pp_comm": (mult * np.where(mult > 0, pp_exp_s, 0.0)).sum(axis=1) / pp,
    }
    parts |= {f"raw_{k}": sum(share[i] * kinds[i].raw[k] for i in range(len(kinds))) for k in kinds[0].raw}
    pipeline, bubble = pp_par.schedule_time(t_max, t_sum, pp, vp, nmb, sw.schedule)
    return Stages(t_max, t_sum, parts, p2p, pipeline, bubble)


@dataclass(frozen=True)
class StepEnd:
    dp_comm: np.ndarray  # exposed DP / FSDP communication per step, on the rank that finishes last
    dp_raw: np.ndarray
    optimizer: np.ndarray
    ranks: Ranks  # the candidate pipeline ranks and their parameters (memory.ranks_of)


def _step_end(m: ModelSpec, w, grid: LayoutGrid, prec: str, sw: Software, t_max, nmb, hw, c_other) -> StepEnd:
    """Data-parallel communication and the optimizer step on every candidate pipeline rank (memory.ranks_of,
    parallel/dp.py); the step waits for the one that finishes last."""
    f64 = lambda x: np.asarray(x, dtype=float)
    tp, ep, etp, cp = (f64(getattr(grid, k)) for k in ("tp", "ep", "etp", "cp"))
    dpc, edp = f64(grid.dp) * cp, f64(grid.edp)  # dense parameters replicate over dp x cp
    r = ranks_of(w, grid, sw)
    gb = sw.grad_bytes
    layers, vp, fs = sum(r.cnt), f64(grid.vp)[:, None], grid.fsdp[:, None]
    calls = []  # per layout, the calls of its own sharding choice (dp.calls_by_sharding: replicated, sharded)
    for p in (r.p_dense, r.p_exp):
        plain, sharded = dp_par.calls_by_sharding(p, dpc[:, None], r.rank, layers, vp, sw.dp_buckets, sw.dp_bucketed)
        calls.append(np.where(fs, sharded, plain))
    rs, ag = dp_par.grad_and_param_times(
        r.p_dense,
        r.p_exp,
        sw.reduce_bytes,
        weight_bytes(prec, sw.fp8_param_gather),
        dpc[:, None],
        edp[:, None],
        tp[:, None],
        ep[:, None],
        etp[:, None],
        hw,
        sw.hybrid_shard_group if sw.shards_params else None,
        sw.grad_all_reduce,
        *calls,
    )
    pp = f64(grid.pp)[:, None]
    dp_r = dp_par.exposed_time(rs, ag, grid.fsdp[:, None], t_max[:, None], nmb[:, None], sw, pp)
    # the optimizer steps the state this GPU holds (memory.memory_per_gpu): FSDP's shard (under hybrid sharding
    # its group's), else the stack's optimizer sharding (dp x cp, dp, or none: every rank steps all of it)
    shard = dp_par.optimizer_shard(r.p_dense, r.p_exp, dpc[:, None], edp[:, None], cp[:, None], grid.fsdp[:, None], sw)
    opt_r = memory_time(
        (K.ADAM_STATE_STEP_BYTES + gb) * shard + K.GRAD_NORM_ZERO_GRADS * gb * (r.p_dense + r.p_exp),
        hw,
        dp_par.optimizer_kernels(m, [x.kind for x in w.layers], r.cnt, sw),
        c_other,
    )
    last = np.argmax(dp_r + opt_r, axis=1)
    pick = lambda a: np.take_along_axis(a, last[:, None], axis=1)[:, 0]
    raw = pick(dp_par.raw_time(rs, ag, grid.fsdp[:, None], nmb[:, None], sw, pp))
    return StepEnd(pick(dp_r), raw, pick(opt_r), r)


def step_overhead(mean_s: float, gpus):
    """Seconds per step the job waits at its end for the slowest of its `gpus` ranks' per-step host work (data
    loading, the training loop's Python, logging and the loss / grad-norm syncs): each rank's is taken as
    exponentially distributed with mean `mean_s` (Constants.step_host_s), and a synchronous step ends when
    the last rank's does, so it pays the expected maximum of N such delays, mean_s x H_N with H_N the N-th harmonic
    number (order statistics of the exponential: E[max of N] = H_N / rate, Renyi 1953; system noise amplified by
    bulk-synchronous collectives grows with the process count: Petrini et al. SC03, Hoefler et al. SC10).
    Elementwise over `gpus`; H_N exact to N = 64, the Euler-Maclaurin series (error < 1e-9) above."""
    n = np.maximum(np.asarray(gpus, dtype=float), 1.0)
    return mean_s * harmonic(n)


_H_EXACT = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, 65))))


def harmonic(n):
    """H_n = 1 + 1/2 + ... + 1/n, elementwise (n >= 1): exact for n <= 64 (integers), else
    ln n + gamma + 1/(2n) - 1/(12n^2) + 1/(120n^4)."""
    n = np.asarray(n, dtype=float)
    big = np.log(n) + np.euler_gamma + 1 / (2 * n) - 1 / (12 * n**2) + 1 / (120 * n**4)
    small = _H_EXACT[np.clip(np.rint(n), 0, 64).astype(np.int64)]
    return np.where((n <= 64) & (n == np.rint(n)), small, big)


def step_seconds(pipeline, dp_comm, optimizer, overhead, ep_solo):
    """The step: all micro-batches through the schedule, then the exposed DP communication and the optimizer
    step of the rank that finishes last, the per-step host overhead (step_overhead), and the EP all-to-all the overlap leaves
    exposed (a2a_solo). Elementwise (core/elementwise.py): the planner's loop adds the same terms in this order."""
    return pipeline + dp_comm + optimizer + overhead + ep_solo


TAIL_FUNCTIONS = (step_seconds,)


def a2a_solo(ws, prices: list[KindPrice], pp, vp, nmb, rec, g=lambda x: x):
    """Seconds per step the EP all-to-all overlap leaves exposed outside the combined 1F1B schedule: the
    mean rank's layers (count / pp of each kind) for ep.a2a_solo_microbatches micro-batches."""
    per_mb = sum(layer.count * g(p.ep_solo) for layer, p in zip(ws.layers, prices)) / np.asarray(pp, dtype=float)
    return ep_par.a2a_solo_microbatches(pp, vp, nmb, np.asarray(rec) == recompute.FULL) * per_mb


def predict_grid(model: ModelSpec, hw: HardwareSpec, grid: LayoutGrid, opts: Options = Options()) -> Prediction:
    """workload -> priced layer kinds -> stage times -> schedule -> step end -> throughput, MFU, HFU, memory."""
    c, prec, m = opts.consts, opts.precision, model
    hw.peak(prec)  # a clear error when the GPU lacks the precision
    sw = software_of(m, hw, opts)
    check_recompute(sw, grid.recompute)
    if sw.shards_params:  # an FSDP stack shards parameters whatever the layout's flag says
        grid = replace(grid, fsdp=np.ones(grid.n, bool))
    f64 = lambda x: np.asarray(x, dtype=float)
    seq, gpus, zero = f64(grid.seq), f64(grid.gpus), 0 * f64(grid.tp)
    nmb = np.maximum(f64(grid.gbs) / (f64(grid.dp) * f64(grid.mbs)), 1.0)
    imb = "real" if opts.routing == "real" else 1.0  # real: per layout, parallel/ep.py
    low = prec not in ("bf16", "fp16")
    c_layer, c_other = replace(c, kernel_fixed_s=sw.layer_kernel_s), replace(c, kernel_fixed_s=sw.other_kernel_s)
    # the workload, its layer kinds and head priced once per distinct (tp, cp, ep, etp, mbs, seq)
    # (workload.AXES), gathered back to layouts by g
    first, inv = workload.unique_layer_axes(grid)
    ws = workload.build(m, grid.take(first), low, imb, c, sw)
    g = lambda x: np.asarray(x, dtype=float)[inv] if np.ndim(x) else x + zero
    hw_k = hw.at_clock(sw.power_factor)  # kernels under the stack's power cap: lower tensor clocks
    prices = _price_kinds(ws, hw_k, prec, c_layer, sw)
    kinds = _gather_kinds(prices, grid.recompute, g, grid.pp)
    head, embed = (g(x) for x in _price_head(ws, prices, hw_k, prec, c_layer, c_other))

    st = _stages(m, ws, grid, kinds, head, embed, hw, sw, nmb, g)
    end = _step_end(m, ws, grid, prec, sw, st.t_max, nmb, hw, c_other)
    solo = a2a_solo(ws, prices, grid.pp, grid.vp, nmb, grid.recompute, g)
    overhead = step_overhead(c.step_host_s, gpus)
    step = step_seconds(st.pipeline, end.dp_comm, end.optimizer, overhead, solo)

    tokens, peak = f64(grid.gbs) * seq, hw.peak(prec)
    fpt = flops_per_token(m, seq, opts.attention, mtp=True) * np.ones_like(zero)
    sel_flops = sum(layer.count * kinds[i].selective_flops for i, layer in enumerate(ws.layers)) / g(ws.T)
    mfu = fpt * tokens / (step * gpus * peak)
    hfu = (fpt + recompute.extra_flops_per_token(grid.recompute, fpt, sel_flops)) * tokens / (step * gpus * peak)

    # breakdown: the mean rank's work, the slowest rank's excess, the schedule, the step's end
    breakdown = {k: v * nmb for k, v in st.parts.items() if not k.startswith("raw_")}
    breakdown |= {
        "stage_imbalance": (st.t_max - st.t_sum / f64(grid.pp)) * nmb,
        "pipeline_bubble": st.bubble,
        "dp_comm": end.dp_comm,
        "optimizer": end.optimizer,
        "step_overhead": overhead + zero,
    }
    breakdown["ep_comm"] = breakdown["ep_comm"] + solo
    breakdown = {k: breakdown[k] for k in BREAKDOWN}
    comm_raw = {k[4:]: v * nmb for k, v in st.parts.items() if k.startswith("raw_")}
    comm_raw |= {"pp_comm": st.p2p * nmb, "dp_comm": end.dp_raw}

    mem, mem_stages = memory_per_gpu(ws, grid, prec, sw, c, nmb, end.ranks, g)
    total_mem = sum(mem.values())
    return Prediction(
        layouts=grid,
        step_time_s=step,
        tokens_per_s_per_gpu=tokens / (step * gpus),
        mfu=mfu,
        hfu=hfu,
        memory_bytes_per_gpu=total_mem,
        memory_parts=mem,
        fits=total_mem <= hw.memory.capacity,
        breakdown_s=breakdown,
        model_flops_per_token=fpt,
        hbm_bytes=hw.memory.capacity,
        comm_raw_s=comm_raw,
        memory_stages=mem_stages,
    )
