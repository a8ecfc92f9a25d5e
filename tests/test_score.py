"""The planner's factorised scorer (perfmodel/score.py) against predict_grid, layout by layout.

score_product restates the glue of predict._stages, predict._step_end and memory.memory_per_gpu on the
product's axes (base rows x fsdp x recompute); these tests fail when either side's physics changes
without the other. Each case: base rows sampled from the planner's own enumeration (every rule applied),
crossed with every fsdp x recompute choice, and predicted both ways."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel import search as S
from perfmodel.api import load_hardware, load_model
from perfmodel.predict import Options, predict_grid
from perfmodel.score import score_product

REL = 1e-12

# (model, hardware, GPUs, gbs, seq, options): dense / MoE / MLA + MTP / sliding window; the stacks' FSDP,
# ZeRO-2, per-step gathers, 1F1B / interleaved / zero-bubble / DualPipe schedules, optimizer sharded over
# dp, dp x cp or not at all; FP8 recipes; balanced routing
CASES = [
    ("deepseek-v3", "gb200-nvl72", 2048, 8192, 4096, Options("bf16")),
    ("deepseek-v3", "h100-sxm", 1024, 2048, 4096, Options("fp8", stack="hai-llm-2024")),
    ("llama3.1-405b", "h100-sxm", 2048, 1024, 8192, Options("fp8")),
    ("llama3-70b", "h100-sxm", 256, 256, 8192, Options("bf16", stack="megatron-core")),
    ("llama3-70b", "h100-sxm", 256, 256, 8192, Options("bf16", stack="torchtitan-2025")),
    ("llama3-70b", "h100-sxm", 256, 256, 8192,
     Options("bf16", stack="torchtitan-2025", stack_set=("fsdp_gather=per_step", "reshard_after_forward=false"))),
    ("llama3-8b", "a100-sxm-80gb", 64, 512, 4096, Options("bf16", stack="zero-bubble-2024",
                                                        stack_set=("pipeline_schedule=zero_bubble",))),
    ("llama3-8b", "h100-sxm", 64, 512, 4096, Options("bf16", stack_set=("fsdp=zero2",))),
    ("mixtral-8x22b", "h100-sxm", 256, 256, 4096, Options("fp8", routing="balanced")),
    ("gpt-oss-120b", "b200", 64, 512, 8192, Options("mxfp8")),
    ("qwen3-30b-a3b", "gb300-nvl72", 72, 576, 4096, Options("bf16", stack="nemo-25.11")),
]


def _sample(m, gpus, gbs, seq, n, seed):
    s = S.space(m, gpus, gbs, seq)
    base = S.structural(m, s)
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(base["tp"]), min(n, len(base["tp"])), replace=False))
    return s, {k: v[pick] for k, v in base.items()}


@pytest.mark.parametrize("case", range(len(CASES)))
def test_score_product_equals_predict_grid(case):
    mid, hid, gpus, gbs, seq, opts = CASES[case]
    m, hw = load_model(mid), load_hardware(hid)
    s, base = _sample(m, gpus, gbs, seq, 400, case)
    sc = score_product(m, hw, gpus, gbs, seq, base, s.fsdp, s.recompute, opts)
    grid = S._expand(s, base)                  # the same layouts, one per row, in the product's order
    assert sc.step_time_s.shape == (len(base["tp"]), len(s.fsdp), len(s.recompute))
    p = predict_grid(m, hw, grid, opts)
    for name, a, b in (("step", sc.step_time_s, p.step_time_s), ("tokens/s", sc.tokens_per_s_per_gpu, p.tokens_per_s_per_gpu),
                       ("memory", sc.memory_bytes_per_gpu, p.memory_bytes_per_gpu)):
        a = a.ravel()
        assert np.all(np.isfinite(a)), name
        rel = np.abs(a - b) / np.abs(b)
        assert rel.max() <= REL, (name, int(np.argmax(rel)), float(rel.max()))
    assert np.array_equal(sc.fits.ravel(), p.fits)


def test_score_product_takes_any_subset_of_choices():
    # pinned fsdp / recompute (the planner's --fix) give the matching slices of the full product
    m, hw = load_model("llama3-70b"), load_hardware("h100-sxm")
    s, base = _sample(m, 128, 256, 8192, 200, 1)
    full = score_product(m, hw, 128, 256, 8192, base, np.array([0, 1]), np.array([0, 1, 2]))
    one = score_product(m, hw, 128, 256, 8192, base, np.array([1]), np.array([2, 0]))
    assert np.array_equal(one.step_time_s, full.step_time_s[:, [1]][:, :, [2, 0]])
    assert np.array_equal(one.memory_bytes_per_gpu, full.memory_bytes_per_gpu[:, [1]][:, :, [2, 0]])
