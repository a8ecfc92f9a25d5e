"""compute.py against cases worked by hand on the toy GPU (tests/toy.py: 1 PFLOP/s BF16, 2 FP8, 4 FP4,
1 TB/s HBM at 0.8 streaming efficiency; sustained 0.8, k_half 1000, mn_half 100, kernel fixed cost 10 us).

Roofline (Williams et al. 2009): t = max(2MNK / (peak * eff), bytes / (HBM * eff_mem)) + fixed, with
eff = eff_best * sustained * K/(K + k_half) * M/(M + mn_half) * N/(N + mn_half). Flash attention backward
does 2.5x the forward FLOPs (Dao 2023, FlashAttention-2 §3.2)."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_consts, toy_hw

from perfmodel.core.compute import attention_time, gemm_peak_and_eff, gemm_time, gemm_train_time, memory_time

HW, C = toy_hw(), toy_consts()
REL = 1e-12


def test_peak_and_efficiency_per_precision():
    assert gemm_peak_and_eff(HW, "bf16") == (1e15, 0.5, 2.0)
    assert gemm_peak_and_eff(HW, "fp16") == (1e15, 0.5, 2.0)
    assert gemm_peak_and_eff(HW, "fp8") == (2e15, 0.4, 1.0)  # 1 byte per operand element
    assert gemm_peak_and_eff(HW, "mxfp8") == (2e15, 0.4, 1.0)
    assert gemm_peak_and_eff(HW, "nvfp4") == (4e15, 0.25, 0.5)  # half a byte per element
    # no measured FP4 efficiency: the FP8 one stands in
    assert gemm_peak_and_eff(toy_hw(gemm_fp4=None), "nvfp4") == (4e15, 0.4, 0.5)


def test_gemm_compute_bound():
    # M = N = 900, K = 4000: eff = 0.5 * 0.8 * 4000/5000 * 900/1000 * 900/1000 = 0.2592
    # FLOPs 2 * 900 * 900 * 4000 = 6.48e9 -> 6.48e9 / (1e15 * 0.2592) = 25 us
    # bytes (900*4000 + 4000*900) * 2 + 900*900 * 2 = 16.02e6 -> / 0.8e12 = 20.025 us < 25 us
    assert float(gemm_time(900, 900, 4000, HW, "bf16", C)) == pytest.approx(25e-6 + 10e-6, rel=REL)


def test_gemm_power_bound_caps_bf16_only():
    # a power-bound part: BF16 efficiency capped at 0.2. M = N = 900, K = 4000 has 0.2592 uncapped (above):
    # 6.48e9 / (1e15 * 0.2) = 32.4 us (> the 20.025 us of HBM traffic)
    hw = toy_hw(gemm_bf16_power_bound=0.2)
    assert float(gemm_time(900, 900, 4000, hw, "bf16", C)) == pytest.approx(32.4e-6 + 10e-6, rel=REL)
    # a GEMM already below the cap keeps its own efficiency: M = N = 900, K = 1000: 0.5 * 0.8 * 0.5 * 0.81 =
    # 0.162; 1.62e9 FLOPs -> 10 us (bytes 5.22e6 -> 6.525 us)
    assert float(gemm_time(900, 900, 1000, hw, "bf16", C)) == pytest.approx(10e-6 + 10e-6, rel=REL)
    # the cap is the BF16 tensor rate: FP8 keeps the uncapped 15.625 us
    assert float(gemm_time(900, 900, 4000, hw, "fp8", C)) == pytest.approx(15.625e-6 + 10e-6, rel=REL)


def test_gemm_memory_bound():
    # M = 400, N = 900, K = 4000: eff = 0.4 * 0.8 * 0.8 * 0.9 = 0.2304; 2.88e9 FLOPs -> 12.5 us
    # bytes (400*4000 + 4000*900) * 2 + 400*900 * 2 = 11.12e6 -> 13.9 us: HBM-bound
    assert float(gemm_time(400, 900, 4000, HW, "bf16", C)) == pytest.approx(13.9e-6 + 10e-6, rel=REL)


def test_gemm_fp8_and_fp4():
    # FP8: peak 2e15, eff 0.4 * 0.8 * 0.8 * 0.81 = 0.20736: 6.48e9 / 4.1472e14 = 15.625 us;
    # bytes 7.2e6 * 1 + 0.81e6 * 2 (BF16 output) = 8.82e6 -> 11.025 us
    assert float(gemm_time(900, 900, 4000, HW, "fp8", C)) == pytest.approx(15.625e-6 + 10e-6, rel=REL)
    # NVFP4: peak 4e15, eff 0.25 * 0.5184 = 0.1296: 6.48e9 / 5.184e14 = 12.5 us; bytes 3.6e6 + 1.62e6 -> 6.525 us
    assert float(gemm_time(900, 900, 4000, HW, "nvfp4", C)) == pytest.approx(12.5e-6 + 10e-6, rel=REL)


def test_gemm_train_shapes():
    # fprop [M,N,K] = [400, 900, 4000] (23.9 us above); dgrad [M,K,N] = [400, 4000, 900]; wgrad [N,K,M] = [900, 4000, 400]
    f, b = gemm_train_time(400, 900, 4000, HW, "bf16", C)
    assert float(f) == pytest.approx(23.9e-6, rel=REL)
    # dgrad: eff 0.4 * 900/1900 * 400/500 * 4000/4100; FLOPs 2.88e9; bytes (400*900 + 900*4000)*2 + 400*4000*2 = 11.12e6
    dgrad = max(2.88e9 / (1e15 * 0.4 * 900 / 1900 * 0.8 * 4000 / 4100), 11.12e6 / 0.8e12) + 10e-6
    # wgrad: eff 0.4 * 400/1400 * 900/1000 * 4000/4100; bytes (900*400 + 400*4000)*2 + 900*4000*2 = 11.12e6
    wgrad = max(2.88e9 / (1e15 * 0.4 * 400 / 1400 * 0.9 * 4000 / 4100), 11.12e6 / 0.8e12) + 10e-6
    assert float(b) == pytest.approx(dgrad + wgrad, rel=REL)


def test_gemm_broadcasts_over_layouts():
    t = gemm_time(np.array([900.0, 400.0]), 900, 4000, HW, "bf16", C)
    assert t == pytest.approx([35e-6, 23.9e-6], rel=REL)


def test_attention_forward_and_backward():
    # 3,000 keys per query: size factor 0.8 * 3000 / (3000 + 1000) = 0.6
    # forward 3e9 FLOPs / (1e15 * 0.5 * 0.6) = 10 us; backward 2.5 * 3e9 / (1e15 * 0.4 * 0.6) = 31.25 us; +10 us each
    f, b = attention_time(3e9, 3000.0, HW, C)
    assert float(f) == pytest.approx(20e-6, rel=REL)
    assert float(b) == pytest.approx(41.25e-6, rel=REL)
    # 1,000 keys: size 0.8 * 0.5 = 0.4: forward 3e9 / 2e14 = 15 us, backward 7.5e9 / 1.6e14 = 46.875 us
    f, b = attention_time(3e9, 1000.0, HW, C)
    assert float(f) == pytest.approx(25e-6, rel=REL)
    assert float(b) == pytest.approx(56.875e-6, rel=REL)


def test_memory_time():
    # 8e8 bytes / (1e12 * 0.8) = 1 ms; 3 kernels add 3 x 10 us; without constants no kernel cost
    assert float(memory_time(8e8, HW)) == pytest.approx(1e-3, rel=REL)
    assert float(memory_time(8e8, HW, 3, C)) == pytest.approx(1.03e-3, rel=REL)


def test_empty_gemm_is_its_operand_traffic_not_nan():
    # M = 0 (a record with no rows on this rank): eff = 0 and 0 FLOPs, so no math time (not 0/0 = NaN); the
    # roofline's memory term is left: B[K, N] read once, (0 * K + K * N) * 2 B = 2 * 4000 * 900 B = 7.2e6 B
    # at 0.8 TB/s = 9 us; no kernel is launched for it (fixed cost x (M > 0) = 0)
    t = gemm_time(np.array([0.0, 900.0]), 900, 4000, HW, "bf16", C)
    assert np.isfinite(t).all()
    assert float(t[0]) == pytest.approx(7.2e6 / 0.8e12, rel=REL)
    assert float(t[1]) == pytest.approx(25e-6 + 10e-6, rel=REL)
