"""Properties of the cost model checked against hand-derived cases and published observations."""

import numpy as np
import pytest

from perfmodel.api import Layout, LayoutGrid, predict, predict_many
from perfmodel.core.calibration import constants
from perfmodel.core.compute import gemm_time
from perfmodel.core.workload import attention_gemms, mlp_gemms
from perfmodel.specs.counts import param_counts
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.model import load_model


def test_gpt3_tp4_beats_tp8_on_h100():
    """cost_report.md: GPT-3 175B on 128 H100, TP=4 beats TP=8 (GEMM K 3,072 vs 1,536 after the split)."""
    kw = dict(gpus=128, gbs=256, seq=2048, pp=8, vp=4, mbs=1)
    tp4 = predict("gpt3-175b", "h100-sxm", Layout(tp=4, **kw)).row(0)
    tp8 = predict("gpt3-175b", "h100-sxm", Layout(tp=8, **kw)).row(0)
    assert tp4["tokens_per_s_per_gpu"] > tp8["tokens_per_s_per_gpu"]
    assert tp4["breakdown_s"]["gemm"] < tp8["breakdown_s"]["gemm"]  # shorter K is less efficient


def test_gemm_time_hand_case():
    """Roofline by hand: 2MNK / (peak * eff_best * sustained * size factors) + fixed cost."""
    from perfmodel.specs.kernels import tables

    hw, c = load_hardware("h100-sxm"), constants()
    M = N = K = 8192
    shape = tables("hopper").gemm  # the shape fitted to Hopper's measured GEMM sweep (hardware/kernels/)
    kh, mh = shape.k_half.value, shape.mn_half.value
    eff = hw.efficiency.gemm_bf16 * c.tensor_sustained * K / (K + kh) * M / (M + mh) * N / (N + mh)
    expect = 2 * M * N * K / (hw.peak_flops.bf16 * eff) + c.kernel_fixed_s
    assert float(gemm_time(M, N, K, hw, "bf16", c)) == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("mid", ["llama3-70b", "deepseek-v3", "mixtral-8x7b", "gpt3-175b", "llama4-maverick"])
def test_workload_gemms_match_matmul_params(mid):
    """The GEMM shapes of one layer at tp=1 reproduce the counted matmul parameters (n_mm) of that layer."""
    m = load_model(mid)
    T, one = np.array([1.0]), np.array([1.0])
    attn = sum(float(g.N[0] * g.K[0] * g.count) for g in attention_gemms(m, T, one))
    from perfmodel.specs.counts import attention_params

    assert attn == attention_params(m)[1]
    if m.num_dense_ffn_layers:
        mlp = sum(float(g.N[0] * g.K[0]) for g in mlp_gemms(m, T, m.ffn.intermediate_size, one))
        assert mlp == m.ffn.matrices * m.hidden_size * m.ffn.intermediate_size


def test_vectorised_equals_single():
    m = "llama3-8b"
    lays = [
        Layout(gpus=16, gbs=64, seq=8192, tp=t, pp=p, cp=c, mbs=1)
        for t, p, c in ((1, 1, 2), (2, 2, 1), (4, 1, 1), (1, 2, 1))
    ]
    many = predict_many(m, "h100-sxm", LayoutGrid.from_layouts(lays))
    for i, lay in enumerate(lays):
        one = predict(m, "h100-sxm", lay)
        assert one.step_time_s[0] == many.step_time_s[i]
        assert one.memory_bytes_per_gpu[0] == many.memory_bytes_per_gpu[i]


def test_throughput_identity_and_bounds():
    lay = Layout(gpus=64, gbs=128, seq=8192, tp=8, pp=4, vp=5)
    p = predict("llama3-70b", "h100-sxm", lay)
    r = p.row(0)
    assert r["tokens_per_s_per_gpu"] * r["step_time_s"] == pytest.approx(128 * 8192 / 64)
    assert 0 < r["mfu"] <= r["hfu"] <= 1
    assert all(np.isfinite(v) and v >= 0 for v in r["breakdown_s"].values())
    assert sum(r["breakdown_s"].values()) == pytest.approx(r["step_time_s"], rel=1e-9)


def test_full_recompute_costs_time_and_saves_memory():
    base = dict(gpus=64, gbs=128, seq=8192, tp=8, pp=4, vp=5)
    none = predict("llama3-70b", "h100-sxm", Layout(**base)).row(0)
    full = predict("llama3-70b", "h100-sxm", Layout(recompute="full", **base)).row(0)
    assert full["step_time_s"] > none["step_time_s"]
    assert full["memory_parts_bytes"]["activations"] < none["memory_parts_bytes"]["activations"]
    assert full["hfu"] > full["mfu"]


def test_moe_all_to_all_cheaper_inside_nvl72():
    """cost_report.md: a 64-GPU all-to-all is far faster inside one NVL72 than across 64 H100s."""
    from perfmodel.core import comm

    h100, gb200 = load_hardware("h100-sxm"), load_hardware("gb200-nvl72")
    nbytes = 1e9
    assert comm.all_to_all_time(nbytes, 64, 1, gb200) * 5 < comm.all_to_all_time(nbytes, 64, 1, h100)


def test_param_counts_feed_memory():
    m = load_model("llama3-8b")
    assert param_counts(m).total == 8_030_261_248


def test_factorised_grid_equals_one_layout_at_a_time():
    """The layer kinds are priced once per distinct (tp, cp, ep, etp, mbs, seq) and gathered to layouts
    (#14): every layout of a sampled grid, with repeated and unique combinations, MoE with MTP and dense
    first layers, gets what it gets alone, to 1e-12."""
    from perfmodel.specs.layout import legality
    from perfmodel.specs.model import load_model

    m = load_model("deepseek-v3")
    rng = np.random.default_rng(3)
    n = 400
    pick = lambda v: rng.choice(np.array(v, dtype=np.int64), n)
    g = LayoutGrid(
        gpus=np.full(n, 1024),
        gbs=np.full(n, 4096),
        seq=pick([2048, 4096]),
        tp=pick([1, 2, 4, 8]),
        pp=pick([1, 2, 4, 8, 16]),
        vp=pick([1, 2]),
        cp=pick([1, 2]),
        ep=pick([8, 16, 32, 64]),
        etp=pick([1, 2]),
        mbs=pick([1, 2]),
        fsdp=rng.random(n) < 0.2,
        recompute=pick([0, 1, 2]),
    )
    a = m.attention
    ok = ~np.any(np.stack(list(legality(g, m.num_layers, a.num_heads, a.num_kv_heads, m.moe.num_experts).values())), 0)
    g = g.take(np.flatnonzero(ok)[:120])
    assert g.n >= 60
    many = predict_many(m, "gb200-nvl72", g)
    for i in range(g.n):
        one = predict_many(m, "gb200-nvl72", g.take(np.array([i])))
        assert one.step_time_s[0] == pytest.approx(many.step_time_s[i], rel=1e-12)
        assert one.memory_bytes_per_gpu[0] == pytest.approx(many.memory_bytes_per_gpu[i], rel=1e-12)
