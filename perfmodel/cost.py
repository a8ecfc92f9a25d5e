"""Pricing op records: roofline time of each record on one GPU (compute.py) and of each collective on the
cluster topology (comm.py). Pure functions of (records, hardware, constants); arrays over layouts."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .calibration import Constants
from .compute import attention_time, gemm_time, memory_time
from .hardware import HardwareSpec
from .ops import AttentionCore, Collective, Fixed, Gemm, Layer, Stream


def gemm_fwd_bwd(g: Gemm, hw: HardwareSpec, precision: str, c: Constants):
    """(forward, backward) seconds of one GEMM record: fprop [M,N,K]; dgrad [M,K,N] + wgrad [N,K,M].
    A grouped GEMM (`count` experts) is one kernel: `count` tiles of work and one fixed cost."""
    prec = precision if g.low_precision else "bf16"
    n, fx = g.count, c.kernel_fixed_s
    f = n * (gemm_time(g.M, g.N, g.K, hw, prec, c) - fx) + fx
    b = n * (gemm_time(g.M, g.K, g.N, hw, prec, c) + gemm_time(g.N, g.K, g.M, hw, prec, c) - 2 * fx) + 2 * fx
    return f, b


def gemms_fwd_bwd(gemms, hw, precision, c):
    fwd = bwd = 0.0
    for g in gemms:
        f, b = gemm_fwd_bwd(g, hw, precision, c)
        fwd, bwd = fwd + f, bwd + b
    return fwd, bwd


def attention_fwd_bwd(cores: tuple[AttentionCore, ...], hw: HardwareSpec, c: Constants):
    """Flash-attention cores, weighted by the share of layers running each kind."""
    fwd = bwd = 0.0
    for a in cores:
        f, b = attention_time(a.flops_fwd, a.mean_keys, hw, c)
        fwd, bwd = fwd + f * a.share, bwd + b * a.share
    return fwd, bwd


def streams_fwd_bwd(streams: tuple[Stream, ...], hw: HardwareSpec, c: Constants):
    bf = sum(s.bytes_fwd for s in streams)
    bb = sum(s.bytes_bwd for s in streams)
    kf = sum(s.kernels_fwd for s in streams)
    kb = sum(s.kernels_bwd for s in streams)
    return memory_time(bf, hw, kf, c), memory_time(bb, hw, kb, c)


def comm_raw(comms: tuple[Collective, ...], hw: HardwareSpec) -> dict[str, tuple]:
    """Raw (unhidden) seconds per overlap class: {class: (forward, backward)}."""
    out: dict[str, tuple] = {}
    for x in comms:
        t = x.price(hw)
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
    comm: dict            # overlap class -> (forward, backward) raw seconds

    @property
    def compute_f(self):
        return self.gemm_f + self.attn_f + self.mem_f

    @property
    def compute_b(self):
        return self.gemm_b + self.attn_b + self.mem_b


def price_layer(layer: Layer, hw: HardwareSpec, precision: str, c: Constants) -> LayerTime:
    gf, gb = gemms_fwd_bwd(layer.gemms, hw, precision, c)
    for x in layer.fixed:                      # host syncs run on the GEMM stream's critical path
        gf, gb = gf + x.seconds_fwd, gb + x.seconds_bwd
    af, ab = attention_fwd_bwd(layer.attention, hw, c)
    mf, mb = streams_fwd_bwd(layer.streams, hw, c)
    return LayerTime(gf, gb, af, ab, mf, mb, comm_raw(layer.comms, hw))
