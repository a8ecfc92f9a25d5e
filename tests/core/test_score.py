"""The planner's factorised scorer (perfmodel/core/score.py) against predict_grid, layout by layout.

score_product restates the glue of predict._stages, predict._step_end and memory.memory_per_gpu on the
product's axes (base rows x fsdp x recompute); these tests fail when either side's physics changes
without the other. Each case: base rows sampled from the planner's own enumeration (every rule applied),
crossed with every fsdp x recompute choice, and predicted both ways."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from perfmodel.analysis import search as S
from perfmodel.api import load_hardware, load_model
from perfmodel.core.predict import Options, predict_grid
from perfmodel.core.score import score_product

REL = 1e-12

# (model, hardware, GPUs, gbs, seq, options): dense / MoE / MLA + MTP / sliding window; the stacks' FSDP,
# ZeRO-2, per-step gathers, 1F1B / interleaved / zero-bubble / DualPipe schedules, optimizer sharded over
# dp, dp x cp or not at all; FP8 recipes; balanced routing; activation offloading, hybrid sharding
CASES = [
    ("deepseek-v3", "gb200-nvl72", 2048, 8192, 4096, Options("bf16")),
    ("deepseek-v3", "h100-sxm", 1024, 2048, 4096, Options("fp8", stack="hai-llm-2024")),
    ("llama3.1-405b", "h100-sxm", 2048, 1024, 8192, Options("fp8")),
    ("llama3-70b", "h100-sxm", 256, 256, 8192, Options("bf16", stack="megatron-core")),
    (
        "llama3-70b",
        "h100-sxm",
        256,
        256,
        8192,
        Options("bf16", stack="torchtitan-2025", stack_set=("selective_ac=modules", "recompute_modules=layernorm,mlp")),
    ),
    # torchtitan as it runs: op-level SAC, AsyncTP collective matmuls, FSDP gathered once per step under PP only,
    # CP's all-gather rotation, on the 500 W Grand Teton part; per-layer SAC
    ("llama3-70b", "h100-grand-teton", 256, 256, 8192, Options("fp8", stack="torchtitan-2025-asynctp")),
    (
        "llama3-8b",
        "h100-grand-teton",
        64,
        128,
        32768,
        Options("bf16", stack="torchtitan-2025", stack_set=("selective_ac=layer", "selective_ac_every=3")),
    ),
    (
        "llama3-70b",
        "h100-sxm",
        256,
        256,
        8192,
        Options(
            "bf16",
            stack="torchtitan-2025",
            stack_set=(
                "fsdp_gather=per_step",
                "reshard_after_forward=false",
                "selective_ac=modules",
                "recompute_modules=core_attn",
            ),
        ),
    ),
    (
        "llama3-8b",
        "a100-sxm-80gb",
        64,
        512,
        4096,
        Options("bf16", stack="zero-bubble-2024", stack_set=("pipeline_schedule=zero_bubble",)),
    ),
    ("llama3-8b", "h100-sxm", 64, 512, 4096, Options("bf16", stack_set=("fsdp=zero2",))),
    # DeepSpeed BF16_Optimizer: whole-gradient all-reduce, bf16 gradients beside the fp32 buffer
    (
        "gpt3-175b",
        "a100-sxm-80gb",
        256,
        512,
        2048,
        Options("bf16", stack_set=("fsdp=bf16_optimizer", "optimizer_shard=dp")),
    ),
    ("llama3-8b", "h100-grand-teton", 64, 512, 4096, Options("bf16")),  # a site power cap (hardware power_limit_w)
    ("mixtral-8x22b", "h100-sxm", 256, 256, 4096, Options("fp8", routing="balanced")),
    ("gpt-oss-120b", "b200", 64, 512, 8192, Options("mxfp8")),
    ("qwen3-30b-a3b", "gb300-nvl72", 72, 576, 4096, Options("bf16", stack="nemo-25.11")),
    # activation CPU offloading (Megatron-Bridge Llama 3 70B GB200 FP8 preset: 40 layers at pp = 1), TE's fused
    # cross-entropy and dummy wgrads; hybrid sharding over 8 GPUs (FSDP2 HSDP)
    ("llama3-70b", "gb200-nvl72", 144, 288, 8192, Options("fp8", stack="nemo-25.11")),
    (
        "llama3-70b",
        "h100-sxm",
        128,
        256,
        8192,
        Options("bf16", stack="torchtitan-2025", stack_set=("hybrid_shard_group=8", "recompute_modules=core_attn")),
    ),
    # the optimizer sharded over dp only (not cp) and FSDP's shard: the optimizer step differs per fsdp choice
    ("gpt3-175b", "h100-sxm", 128, 256, 2048, Options("bf16", stack="nemo-megatron-24.05")),
    # GPipe: every micro-batch's activations in flight
    ("llama3-8b", "h100-sxm", 64, 512, 4096, Options("bf16", stack_set=("pipeline_schedule=gpipe",))),
    # fp32 parameters under torch.autocast: the casts, the fp32 parameter and its bf16 copy held, Adam without a
    # master copy
    ("llama3-8b", "h100-sxm", 64, 512, 4096, Options("bf16", stack_set=("param_dtype=fp32_autocast", "fsdp=none"))),
]


def _sample(m, gpus, gbs, seq, n, seed, cons=None):
    s = S.space(m, gpus, gbs, seq, cons or S.Constraints())
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
    grid = S._expand(s, base)  # the same layouts, one per row, in the product's order
    assert sc.step_time_s.shape == (len(base["tp"]), len(s.fsdp), len(s.recompute))
    p = predict_grid(m, hw, grid, opts)
    for name, a, b in (
        ("step", sc.step_time_s, p.step_time_s),
        ("tokens/s", sc.tokens_per_s_per_gpu, p.tokens_per_s_per_gpu),
        ("memory", sc.memory_bytes_per_gpu, p.memory_bytes_per_gpu),
    ):
        a = a.ravel()
        assert np.all(np.isfinite(a)), name
        rel = np.abs(a - b) / np.abs(b)
        assert rel.max() <= REL, (name, int(np.argmax(rel)), float(rel.max()))
    assert np.array_equal(sc.fits.ravel(), p.fits)


@pytest.mark.parametrize(
    "mid, hid, gpus, gbs, seq",
    [("deepseek-v3", "gb200-nvl72", 2048, 8192, 4096), ("llama3-70b", "h100-sxm", 256, 256, 8192)],
)
def test_score_product_equals_predict_grid_uneven_vp(mid, hid, gpus, gbs, seq):
    """search --uneven-vp: interleaved layouts whose chunks hold unequal layer counts (MTP slots too)."""
    m, hw = load_model(mid), load_hardware(hid)
    s, base = _sample(m, gpus, gbs, seq, 400, 7, S.Constraints(uneven_vp=True))
    assert np.any(base["vp"] > 1)
    sc = score_product(m, hw, gpus, gbs, seq, base, s.fsdp, s.recompute, Options("bf16"))
    p = predict_grid(m, hw, S._expand(s, base), Options("bf16"))
    for a, b in ((sc.step_time_s, p.step_time_s), (sc.memory_bytes_per_gpu, p.memory_bytes_per_gpu)):
        assert (np.abs(a.ravel() - b) / np.abs(b)).max() <= REL


def test_score_product_takes_any_subset_of_choices():
    # pinned fsdp / recompute (the planner's --fix) give the matching slices of the full product
    m, hw = load_model("llama3-70b"), load_hardware("h100-sxm")
    s, base = _sample(m, 128, 256, 8192, 200, 1)
    full = score_product(m, hw, 128, 256, 8192, base, np.array([0, 1]), np.array([0, 1, 2]))
    one = score_product(m, hw, 128, 256, 8192, base, np.array([1]), np.array([2, 0]))
    assert np.array_equal(one.step_time_s, full.step_time_s[:, [1]][:, :, [2, 0]])
    assert np.array_equal(one.memory_bytes_per_gpu, full.memory_bytes_per_gpu[:, [1]][:, :, [2, 0]])


@pytest.mark.parametrize("case", range(len(CASES)))
def test_kernel_equals_numpy_tail(case):
    """kernel.py restates the numpy tail one layout at a time: the same bits on every sampled layout."""
    pytest.importorskip("numba")
    mid, hid, gpus, gbs, seq, opts = CASES[case]
    m, hw = load_model(mid), load_hardware(hid)
    s, base = _sample(m, gpus, gbs, seq, 400, 100 + case)
    a = score_product(m, hw, gpus, gbs, seq, base, s.fsdp, s.recompute, opts, kernel=False)
    b = score_product(m, hw, gpus, gbs, seq, base, s.fsdp, s.recompute, opts, kernel=True)
    for x, y in (
        (a.step_time_s, b.step_time_s),
        (a.tokens_per_s_per_gpu, b.tokens_per_s_per_gpu),
        (a.memory_bytes_per_gpu, b.memory_bytes_per_gpu),
    ):
        assert np.array_equal(x, y), float((abs(x - y) / abs(x)).max())


@pytest.mark.parametrize("lookup", ["table", "search"])
def test_search_tables_shared_across_chunks(monkeypatch, lookup):
    """One search's chunks share the per-combination tables (score._cached_tables): every chunk size and
    both tails give the same result as one chunk without the cache, with the combinations found by the
    direct lookup table and (a key space too big for it) by the sorted search."""
    from perfmodel.core import score

    if lookup == "search":
        monkeypatch.setattr(score, "DENSE_LOOKUP_MAX", 0)
    m, hw = load_model("mixtral-8x7b"), load_hardware("h100-sxm")
    s = S.space(m, 64, 256, 4096)
    base = S.structural(m, s)
    ref = score_product(m, hw, 64, 256, 4096, base, s.fsdp, s.recompute, Options("bf16"), kernel=False)
    kernels = [False, True] if importlib.util.find_spec("numba") else [False]
    for kernel in kernels:
        for step in (97, 1000):
            cache: dict = {}
            parts = [
                score_product(
                    m,
                    hw,
                    64,
                    256,
                    4096,
                    {k: v[lo : lo + step] for k, v in base.items()},
                    s.fsdp,
                    s.recompute,
                    Options("bf16"),
                    kernel=kernel,
                    cache=cache,
                )
                for lo in range(0, len(base["tp"]), step)
            ]
            assert np.array_equal(np.concatenate([p.step_time_s for p in parts]), ref.step_time_s)
            assert np.array_equal(np.concatenate([p.memory_bytes_per_gpu for p in parts]), ref.memory_bytes_per_gpu)
            # every combination priced once: the table holds exactly the distinct (tp, cp, ep, etp, mbs)
            combos = {tuple(r) for r in np.stack([base[k] for k in ("tp", "cp", "ep", "etp", "mbs")], 1).tolist()}
            assert cache["k4"].size == len(combos) == cache["tab"]["head"].size
            assert ("dense" in cache) == (lookup == "table")


def test_kernel_switch(monkeypatch):
    """PERFMODEL_KERNEL=numpy never uses the kernel; otherwise a search turns to it once it pays (or at once
    with =numba), where numba is installed."""
    from perfmodel.core import score

    for env, scored, want in (
        ("numpy", 10**9, False),
        ("auto", 0, False),
        ("auto", score.KERNEL_PAYS_LAYOUTS, True),
        ("numba", 0, True),
    ):
        monkeypatch.setenv(score.KERNEL_ENV, env)
        monkeypatch.delitem(sys.modules, "perfmodel.core.kernel", raising=False)
        assert score.use_kernel(scored) == (want and importlib.util.find_spec("numba") is not None)


def test_search_same_on_both_tails(monkeypatch):
    """The planner's result (counts, top K, values, Pareto front) does not depend on the tail it scored with."""
    pytest.importorskip("numba")
    from dataclasses import fields as dc_fields

    from perfmodel.core import score
    from perfmodel.specs.layout import LayoutGrid

    m, hw = load_model("qwen3-30b-a3b"), load_hardware("h100-sxm")
    out = []
    for tail in ("numpy", "numba"):
        monkeypatch.setenv(score.KERNEL_ENV, tail)
        monkeypatch.setattr(S, "SCORE_CHUNK", 5000)  # many chunks: the shared tables are exercised
        r = S.search(m, hw, 64, 512, 4096, Options("bf16"), top_k=50)
        out.append(r)
    a, b = out
    assert (a.legal, a.fits) == (b.legal, b.fits) and a.legal > 10_000
    assert np.array_equal(a.top_values, b.top_values)
    for x, y in ((a.top.layouts, b.top.layouts), (a.pareto.layouts, b.pareto.layouts)):
        assert all(np.array_equal(getattr(x, f.name), getattr(y, f.name)) for f in dc_fields(LayoutGrid))


@pytest.mark.parametrize("dense_max", [1 << 22, 0])
def test_cached_tables_recodes_a_larger_mbs(monkeypatch, dense_max):
    """A chunk bringing a micro-batch larger than any before re-codes the known keys: the combinations priced
    earlier keep their table index, only the new ones are built (in key order), under the direct lookup table
    and under the sorted search alike."""
    from perfmodel.core import score

    monkeypatch.setattr(score, "DENSE_LOOKUP_MAX", dense_max)
    built = []

    def build(rows):  # one "table" column per new combination: the row it was built from
        built.append(rows.tolist())
        return {"ws": None, "dummy_keys": (), "head": np.asarray(rows, float)}

    cache: dict = {}
    one = lambda *v: np.array(v, np.int64)
    cols = (one(1, 2, 1), one(1, 1, 1), one(1, 1, 1), one(1, 1, 1), one(1, 1, 2))  # tp, cp, ep, etp, mbs
    tab, u = score._cached_tables(cache, 8, cols, build)
    assert u.tolist() == [0, 2, 1] and built == [[0, 2, 1]]  # key order: (tp 1, mbs 1), (tp 1, mbs 2), (tp 2, mbs 1)
    cols = (one(2, 1, 1), one(1, 1, 1), one(1, 1, 1), one(1, 1, 1), one(1, 8, 2))  # mbs 8: larger than any before
    tab, u = score._cached_tables(cache, 8, cols, build)
    assert u.tolist() == [2, 3, 1] and built[1:] == [[1]] and cache["mb"] == 9
    assert tab["head"].tolist() == [0.0, 2.0, 1.0, 1.0]
