"""Compute time of one op on one GPU, roofline style, vectorised over numpy arrays.

- GEMM: t = max(FLOPs / (peak * eff(M, N, K)), bytes / HBM) + fixed  (Williams et al. 2009, roofline),
  with eff = eff_best * K/(K + k_half) * M/(M + mn_half) * N/(N + mn_half): the best-shape efficiency
  measured by MAMF (hardware file), reduced when K is short (per-tile prologue/epilogue not amortised)
  or M, N under-fill output tiles; k_half and mn_half fitted to the generation's measured GEMM sweep
  (hardware/kernels/, specs/kernels.py), the local experts' grouped GEMM to its own grouped sweep.
  This is why TP=8 loses to TP=4 on GPT-3 175B (K 1,536 vs 3,072).
  On a power-bound part the BF16 efficiency is capped at the rate large GEMMs sustain at the power limit
  (hardware `gemm_bf16_power_bound`): tensor power grows with the FLOP rate, so once a GEMM runs long enough
  for the power controller to act, the clock falls until the board power meets the limit (NVIDIA DGX B200
  power capping: the GPU lowers clocks to hold the cap), whatever the shape.
- Flash attention: FLOPs at the measured flash efficiency (FA3 / FA4), lower for short key ranges;
  backward does 2.5x the forward matmul FLOPs (Dao 2023, FlashAttention-2 §3.2: 5 vs 2 GEMMs).
- Memory-bound ops (norms, activations, RoPE, permutes, casts, optimizer): bytes / (HBM * eff).
"""

from __future__ import annotations

import numpy as np

from perfmodel.core.calibration import Constants
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.kernels import occupancy_factor, tables

BF16 = 2.0


def gemm_peak_and_eff(hw: HardwareSpec, precision: str) -> tuple[float, float, float]:
    """(peak FLOP/s, best-shape efficiency, bytes per operand element) of the GEMM precision."""
    e = hw.efficiency
    if precision in ("fp8", "fp8-block", "mxfp8"):
        return hw.peak(precision), e.gemm_fp8, 1.0
    if precision == "nvfp4":
        return hw.peak(precision), e.gemm_fp4 or e.gemm_fp8, 0.5
    return hw.peak(precision), e.gemm_bf16, BF16


def gemm_shape(hw: HardwareSpec) -> tuple[float, float]:
    """(k_half, mn_half) of the part's dense GEMMs: its own (efficiency.gemm_k_half / gemm_mn_half, a what-if's)
    where given, else fitted to its generation's measured GEMM table (hardware/kernels/, specs/kernels.py)."""
    e = hw.efficiency
    if e.gemm_k_half is not None and e.gemm_mn_half is not None:
        return e.gemm_k_half, e.gemm_mn_half
    g = tables(hw.generation).gemm
    return (
        e.gemm_k_half if e.gemm_k_half is not None else g.k_half.value,
        e.gemm_mn_half if e.gemm_mn_half is not None else g.mn_half.value,
    )


def gemm_time(M, N, K, hw: HardwareSpec, precision: str, c: Constants, shape: tuple[float, float] | None = None):
    """Seconds for C[M,N] = A[M,K] @ B[K,N] on one GPU (arrays broadcast). `shape`: (k_half, mn_half) of the
    kernel's own efficiency shape (a grouped GEMM's, from the generation's measured table), else the constants'."""
    M, N, K = (np.asarray(x, dtype=float) for x in (M, N, K))
    peak, eff_best, nbytes = gemm_peak_and_eff(hw, precision)
    kh, mh = shape if shape is not None else gemm_shape(hw)
    eff = eff_best * c.tensor_sustained * K / (K + kh) * M / (M + mh) * N / (N + mh)
    cap = hw.efficiency.gemm_bf16_power_bound
    if cap is not None and precision in ("bf16", "fp16"):
        eff = np.minimum(eff, cap)
    flops = 2.0 * M * N * K
    t_math = np.divide(flops, peak * eff, out=np.zeros_like(flops), where=eff > 0)  # an empty GEMM costs nothing
    t_mem = ((M * K + K * N) * nbytes + M * N * BF16) / (hw.memory.hbm_bandwidth * hw.efficiency.memory_bound)
    return np.maximum(t_math, t_mem) + c.kernel_fixed_s * (M > 0)


def gemm_train_time(M, N, K, hw: HardwareSpec, precision: str, c: Constants):
    """(forward, backward) seconds of one linear layer: fprop [M,N,K]; dgrad [M,K,N]; wgrad [N,K,M]."""
    fwd = gemm_time(M, N, K, hw, precision, c)
    bwd = gemm_time(M, K, N, hw, precision, c) + gemm_time(N, K, M, hw, precision, c)
    return fwd, bwd


def attention_time(flops_fwd, mean_keys, hw: HardwareSpec, c: Constants, items=None):
    """(forward, backward) seconds of flash attention doing `flops_fwd` score FLOPs (BF16 kernels). `items`: the
    call's independent work items (q tiles x local heads x micro-batch sequences, kernels.work_items): where the
    generation's tables measure how the rate grows with them (kernels.occupancy_factor: B200 cuDNN, SimuMax's
    TE sweep over 4-128 heads at 4k), a call with few items runs below the hardware file's rate."""
    flops_fwd = np.asarray(flops_fwd, dtype=float)
    size = c.tensor_sustained * mean_keys / (mean_keys + c.attention_keys_half)
    peak = hw.peak_flops.bf16
    occ_f = occ_b = 1.0
    if items is not None:
        t = tables(hw.generation)
        occ_f, occ_b = occupancy_factor(t, "fwd", items), occupancy_factor(t, "bwd", items)
    fwd = flops_fwd / (peak * hw.efficiency.attention_fwd * size * occ_f) + c.kernel_fixed_s
    bwd = 2.5 * flops_fwd / (peak * hw.efficiency.attention_bwd * size * occ_b) + c.kernel_fixed_s
    return fwd, bwd


def memory_time(nbytes, hw: HardwareSpec, kernels=0.0, c: Constants | None = None):
    """Seconds to stream `nbytes` through HBM, plus `kernels` fixed kernel costs."""
    t = np.asarray(nbytes, dtype=float) / (hw.memory.hbm_bandwidth * hw.efficiency.memory_bound)
    return t + (kernels * c.kernel_fixed_s if c is not None else 0.0)
