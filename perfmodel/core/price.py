"""Pricing op records: roofline time of each record on one GPU (compute.py) and of each collective on the
cluster topology (comm.py). Pure functions of (records, hardware, constants); arrays over layouts."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from perfmodel.core.calibration import Constants
from perfmodel.core.compute import attention_time, gemm_time, memory_time
from perfmodel.core.ops import AttentionCore, Collective, Gemm, Layer, Stream
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.kernels import tables


def gemm_fwd_bwd(g: Gemm, hw: HardwareSpec, precision: str, c: Constants):
    """(forward, backward) seconds of one GEMM record: fprop [M,N,K]; dgrad [M,K,N] + wgrad [N,K,M].
    A grouped GEMM (`count` experts) is one kernel: `count` tiles of work and one fixed cost."""
    return gemms_each([g], hw, precision, c)[0]


def gemms_each(gemms, hw: HardwareSpec, precision: str, c: Constants) -> list[tuple]:
    """gemm_fwd_bwd of every record. The records that share a precision and an efficiency shape are priced
    in one gemm_time call over their stacked (fprop, dgrad, wgrad) shapes: gemm_time is elementwise, so each
    record's seconds are the ones a call of its own gives, with fewer passes over small arrays (the planner
    prices ~50 records per layer kind)."""
    out: list = [None] * len(gemms)
    groups: dict = {}
    for i, g in enumerate(gemms):
        groups.setdefault((precision if g.low_precision else "bf16", bool(g.grouped and g.experts)), []).append(i)
    for (prec, experts), idx in groups.items():
        # the local experts' grouped kernel has its own efficiency shape, measured at few tokens per expert (the
        # generation's grouped_gemm table, specs/kernels.py); one local expert (count 1) and batched GEMMs (the
        # unfused attention's per-head bmm) keep the dense shape
        sh = None
        if experts:
            gs = tables(hw.generation).grouped_gemm
            sh = (gs.k_half.value, gs.mn_half.value)
        dims = [[np.asarray(x, dtype=float) for x in (gemms[i].M, gemms[i].N, gemms[i].K)] for i in idx]
        shape = np.broadcast_shapes(*(x.shape for d in dims for x in d))
        # [3 passes, records, *shape]: fprop (M, N, K), dgrad (M, K, N), wgrad (N, K, M)
        mnk = np.stack([np.stack([np.broadcast_to(d[a], shape) for d in dims]) for a in range(3)])
        M, N, Kd = mnk[[0, 0, 1]], mnk[[1, 2, 2]], mnk[[2, 1, 0]]
        if sh is None:
            dense = shaped = gemm_time(M, N, Kd, hw, prec, c)
        else:  # the dense shape only where some record runs one local expert (count 1: np.where below picks it)
            shaped = gemm_time(M, N, Kd, hw, prec, c, sh)
            need = np.logical_or.reduce([np.broadcast_to(np.asarray(gemms[i].count) == 1, shape) for i in idx])
            if need.all():
                dense = gemm_time(M, N, Kd, hw, prec, c)
            else:
                dense = shaped.copy()
                if need.any():
                    dense[..., need] = gemm_time(M[..., need], N[..., need], Kd[..., need], hw, prec, c)
        fx = c.kernel_fixed_s
        for j, i in enumerate(idx):
            g, n = gemms[i], gemms[i].count
            if not g.grouped:  # one kernel (and its fixed cost) per GEMM of the group
                out[i] = (n * dense[0, j], n * (dense[1, j] + dense[2, j]))
                continue
            one = np.asarray(n) == 1
            t = [np.where(one, dense[p, j], shaped[p, j]) if sh is not None else dense[p, j] for p in range(3)]
            out[i] = (n * (t[0] - fx) + fx, n * (t[1] + t[2] - 2 * fx) + 2 * fx)
    return out


def gemms_fwd_bwd(gemms, hw, precision, c, reduce=None):
    """(forward, backward) seconds of the GEMM records together (`reduce`: as _gemms_on)."""
    fwd = bwd = 0.0
    for f, b in _gemms_on(list(gemms), hw, precision, c, reduce):
        fwd, bwd = fwd + f, bwd + b
    return fwd, bwd


def attention_fwd_bwd(
    cores: tuple[AttentionCore, ...], hw: HardwareSpec, c: Constants, factor_fwd: float = 1.0, factor_bwd: float = 1.0
):
    """Flash-attention cores, weighted by the share of layers running each kind; `factor_*` is the
    stack's kernel relative to the one the hardware file measures (software.py), each core's
    `dim_factor_*` that kernel's rate at the model's head dimension relative to head_dim 128."""
    fwd = bwd = 0.0
    fx = c.kernel_fixed_s
    for a in cores:
        f, b = attention_time(a.flops_fwd, a.mean_keys, hw, c, a.items)
        f, b = (f - fx) / (factor_fwd * a.dim_factor_fwd) + fx, (b - fx) / (factor_bwd * a.dim_factor_bwd) + fx
        fwd, bwd = fwd + f * a.share, bwd + b * a.share
    return fwd, bwd


def streams_fwd_bwd(streams: tuple[Stream, ...], hw: HardwareSpec, c: Constants):
    bf = sum(s.bytes_fwd for s in streams)
    bb = sum(s.bytes_bwd for s in streams)
    kf = sum(s.kernels_fwd for s in streams)
    kb = sum(s.kernels_bwd for s in streams)
    return memory_time(bf, hw, kf, c), memory_time(bb, hw, kb, c)


def comm_raw(comms: tuple[Collective, ...], hw: HardwareSpec, seconds=None) -> dict[str, tuple]:
    """Raw (unhidden) seconds per overlap class: {class: (forward, backward)}; `seconds`: each collective's
    price per call, where the caller has it already."""
    out: dict[str, tuple] = {}
    for x, t in zip(comms, seconds if seconds is not None else [x.price(hw) for x in comms]):
        f, b = out.get(x.overlap, (0.0, 0.0))
        out[x.overlap] = (f + x.calls_fwd * t, b + x.calls_bwd * t)
    return out


@dataclass(frozen=True)
class LayerTime:
    """One layer's priced parts for one micro-batch (seconds, arrays over layouts)."""

    gemm_f: np.ndarray
    gemm_b: np.ndarray
    attn_f: np.ndarray
    attn_b: np.ndarray
    mem_f: np.ndarray
    mem_b: np.ndarray
    comm: dict  # overlap class -> (forward, backward) raw seconds
    selective_f: np.ndarray = 0.0  # forward seconds of the ops of the recomputed modules
    selective_flops: np.ndarray = 0.0
    tp_async_exposed: np.ndarray = 0.0  # backward TP collectives beyond their column-parallel GEMMs (tp_async)

    @property
    def compute_f(self):
        return self.gemm_f + self.attn_f + self.mem_f

    @property
    def compute_b(self):
        return self.gemm_b + self.attn_b + self.mem_b


def _gemm_on(g: Gemm, hw: HardwareSpec, precision: str, c: Constants, reduce):
    """gemm_fwd_bwd, on the distinct combinations of the axes the record declares (`reduce(axes)` gives
    (one row per combination, each row's combination) or None) and gathered back: elementwise, the same."""
    return _gemms_on([g], hw, precision, c, reduce)[0]


def _gemms_on(gemms, hw: HardwareSpec, precision: str, c: Constants, reduce) -> list[tuple]:
    """_gemm_on of every record: the records declaring the same axes reduced to those axes' combinations
    together and priced in one gemms_each call."""
    out: list = [None] * len(gemms)
    by_axes: dict = {}
    for i, g in enumerate(gemms):
        rows = reduce(g.axes) if (reduce is not None and g.axes is not None) else None
        by_axes.setdefault(None if rows is None else g.axes, (rows, []))[1].append(i)
    for rows, idx in by_axes.values():
        if rows is None:
            for i, t in zip(idx, gemms_each([gemms[i] for i in idx], hw, precision, c)):
                out[i] = t
            continue
        take, back = _take_back(rows)
        red = [replace(g, M=take(g.M), N=take(g.N), K=take(g.K), count=take(g.count)) for g in (gemms[i] for i in idx)]
        for i, (f, b) in zip(idx, gemms_each(red, hw, precision, c)):
            out[i] = (back(f), back(b))
    return out


def _comms_on(comms, hw: HardwareSpec, reduce) -> list:
    """Each collective's seconds per call (Collective.price), on the distinct combinations of the axes it
    declares where `reduce` gives them (as _gemms_on) and gathered back: elementwise, the same."""
    out = []
    for x in comms:
        rows = reduce(x.axes) if (reduce is not None and x.axes is not None) else None
        if rows is None:
            out.append(x.price(hw))
            continue
        take, back = _take_back(rows)
        red = replace(
            x,
            nbytes=take(x.nbytes),
            size=take(x.size),
            stride=take(x.stride),
            steps=take(x.steps),
            active=None if x.active is None else take(x.active),
        )
        out.append(back(red.price(hw)))
    return out


def _take_back(rows):
    """(take, back) for reduce's (first, inv): an array field to one row per combination, and a result from
    those rows back to every row (scalars pass through)."""
    first, inv = rows
    return (lambda x: np.asarray(x)[first] if np.ndim(x) else x), (lambda x: np.asarray(x)[inv] if np.ndim(x) else x)


def price_layer(layer: Layer, hw: HardwareSpec, precision: str, c: Constants, sw, reduce=None) -> LayerTime:
    """Price a layer's records as stack `sw` runs them; also the forward seconds and FLOPs of the ops
    whose recompute module the stack's selective policy recomputes. `reduce` (the planner's, score.py):
    GEMMs priced once per distinct combination of their declared axes (_gemm_on)."""
    mods = set(sw.recompute_modules) | ({"moe_act"} if "moe" in sw.recompute_modules else set())
    gf = gb = sel = sel_fl = 0.0
    bwd: dict[str, np.ndarray] = {}
    for g, (f, b) in zip(layer.gemms, _gemms_on(layer.gemms, hw, precision, c, reduce)):
        gf, gb = gf + f, gb + b
        bwd[g.name] = b
        if g.module in mods:
            sel, sel_fl = sel + f, sel_fl + g.flops_fwd
    for x in layer.fixed:  # host syncs run on the GEMM stream's critical path
        gf, gb = gf + x.seconds_fwd, gb + x.seconds_bwd
        if x.module in mods:  # ... and again when their module is recomputed
            sel = sel + x.seconds_fwd
    af, ab = attention_fwd_bwd(layer.attention, hw, c, sw.attn_fwd_factor, sw.attn_bwd_factor)
    if "core_attn" in mods:
        sel = sel + af
        sel_fl = sel_fl + sum(a.flops_fwd * a.share for a in layer.attention)
    mf, mb = streams_fwd_bwd(layer.streams, hw, c)
    picked = tuple(st for st in layer.streams if st.module in mods)
    if picked:
        sel = sel + streams_fwd_bwd(picked, hw, c)[0]
    seconds = _comms_on(layer.comms, hw, reduce)  # each collective placed and priced once
    for x, t in zip(layer.comms, seconds):
        if x.module in mods:
            sel = sel + x.calls_fwd * t
    return LayerTime(
        gf,
        gb,
        af,
        ab,
        mf,
        mb,
        comm_raw(layer.comms, hw, seconds),
        sel,
        sel_fl,
        tp_async_exposed(layer.comms, seconds, bwd),
    )


def tp_async_exposed(comms: tuple[Collective, ...], seconds, bwd: dict):
    """Seconds of the asynchronous backward TP collectives (overlap "tp_async", parallel/tp.py; `seconds` per
    call) that outlast the backward (dgrad + wgrad) of the GEMMs they run under: max(0, calls x t - window)
    per collective. Launched before those GEMMs on their own NCCL stream, they hide up to the GEMMs' length;
    the rest waits (handle.wait() before the linear's backward returns)."""
    out = 0.0
    for x, t in zip(comms, seconds):
        if x.overlap == "tp_async":
            window = sum(bwd[name] for name in x.window)
            out = out + np.maximum(0.0, x.calls_bwd * t - window)
    return out


def offload_exposed(layer: Layer, t: LayerTime, hw: HardwareSpec, sw, num_layers: int):
    """Seconds per micro-batch per layer of this kind that activation CPU offloading adds at pp = 1, on the
    layer's own axis combinations (None when the stack does not offload): each offloaded layer's saved
    activations go to host memory during its forward and come back before its backward over the GPU-host
    link (hardware memory.host_bandwidth, per direction), on a copy stream beside compute (Transformer
    Engine docs, cpu_offloading: asynchronous transfers, hidden when the link is fast enough), so only what
    exceeds the layer's own pass is exposed. Megatron offloads only at pp = 1 (the caller applies it there);
    offloaded layers are n of L, spread as the share; n >= L is refused, as Megatron-Core does
    (TransformerConfig.__post_init__: 'CPU offloading can be done only for layers less than num_layers')."""
    n = sw.cpu_offload_layers
    if not n:
        return None
    from perfmodel.errors import InputError

    if n >= num_layers:
        raise InputError(
            f"stack {sw.stack_id}",
            "cpu_offload_layers",
            f"{n} of the model's {num_layers} layers: Megatron-Core offloads fewer than all of them "
            f"(give at most {num_layers - 1}, or 0 for none)",
        )
    if hw.memory.host_bandwidth is None:
        raise InputError(
            f"hardware {hw.id}",
            "memory.host_bandwidth",
            f"not given, but stack {sw.stack_id} offloads activations of {n} layers to host memory",
        )
    x = sum(s.nbytes for s in layer.saved) / hw.memory.host_bandwidth
    per_layer = np.maximum(0.0, x - t.compute_f) + np.maximum(0.0, x - t.compute_b)
    return n / num_layers * per_layer
