"""Facts behind NVIDIA's dense rows (validation/runs.csv) that the DENSE work read from the recipes, each
checked where it acts: the layout cell it fills and the physics it changes, against a hand-derived case."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from perfmodel.api import Layout, predict
from perfmodel.specs.specfile import data_dir
from perfmodel.specs.stack import load_stack


def _rows(prefix: str) -> list[dict]:
    with (data_dir("validation") / "runs.csv").open(encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["run_id"].startswith(prefix)]


def test_dgxc_25_04_nemotron4_340b_rows_run_the_launch_scripts_vp12():
    # NVIDIA/dgxc-benchmarking nemotron/launch.sh (GSW_VERSION=25.04.01): MODEL_SIZE=340b -> TP=8 PP=8 VP=12,
    # passed as -vp 12, though the README's table prints VP=NA
    rows = _rows("dgxc250401-n4-340b-")
    assert len(rows) == 7
    assert {(r["tp"], r["pp"], r["vp"], r["micro_batch"]) for r in rows} == {("8", "8", "12", "1")}
    assert all("launch.sh" in r["notes"] for r in rows)


def test_interleaving_divides_the_nemotron4_340b_bubble_by_vp():
    # 96 layers over pp 8: 16 micro-batches (gbs 64 / dp 4 / mbs 1) >= pp, so no fill term and the
    # interleaved bubble is (t_sum - t_max) / vp (Narayanan et al. 2021 §2.2.2: the bubble shrinks by v);
    # the stage times themselves differ only by the 2 vp p2p sends per micro-batch, a few ms in ~4 s
    lay = lambda vp: Layout(gpus=256, gbs=64, seq=4096, tp=8, pp=8, vp=vp)
    one, twelve = (
        predict("nemotron4-340b", "h100-sxm", lay(v), precision="bf16", stack="dgxc-25.04").row(0) for v in (1, 12)
    )
    b1, b12 = one["breakdown_s"]["pipeline_bubble"], twelve["breakdown_s"]["pipeline_bubble"]
    assert b1 > 1.0
    assert b12 == pytest.approx(b1 / 12, rel=0.05)


# NVIDIA/Megatron-LM examples/sc21/run_table_1.sh, the Narayanan et al. 2021 Table 1 cases: MBS per model and
# --num-layers-per-virtual-pipeline-stage n, i.e. vp = layers / pp / n
SC21 = {
    "gpt-1.7b": (16, ""),
    "gpt-3.6b": (16, ""),
    "gpt-7.5b": (16, ""),
    "gpt-39b": (4, ""),
    "gpt-76b": (2, "3"),
    "gpt-145b": (2, "2"),
    "gpt-310b": (1, "2"),
    "gpt-530b": (1, "3"),
    "gpt-1t": (1, ""),
}


def test_megatron_lm_2021_rows_take_mbs_and_vp_from_the_sc21_scripts():
    rows = _rows("mlm2021-")
    assert {r["model"]: (int(r["micro_batch"]), r["vp"]) for r in rows} == SC21
    for r in rows:
        gpus, tp, pp, gbs, mbs = (int(r[k]) for k in ("gpus", "tp", "pp", "global_batch", "micro_batch"))
        m = gbs // (gpus // (tp * pp) * mbs)  # micro-batches per step
        assert m * (gpus // (tp * pp)) * mbs == gbs
        if r["vp"]:  # Megatron's interleaving rule: m a multiple of pp
            assert m % pp == 0


@pytest.mark.parametrize(
    "model, overlapped",
    [("gpt-1.7b", True), ("gpt-3.6b", True), ("gpt-7.5b", True), ("gpt-39b", False), ("gpt-1t", False)],
)
def test_sc21_small_models_ran_torch_ddp_with_overlapped_grad_reduce(model, overlapped):
    # run_table_1.sh: DDP=torch for 1.7B-18B (bucketed all-reduce under backward), DDP=local above
    from perfmodel.core.calibration import constants
    from perfmodel.core.software import resolve
    from perfmodel.specs.hardware import load_hardware

    c = constants()
    sw = resolve("megatron-lm-2021", (), model, False, load_hardware("a100-sxm-80gb"), "bf16", c)
    assert sw.dp_rs_share == (c.dp_overlap if overlapped else 0.0)
    assert sw.dp_ag_share == 0.0  # no sharded optimizer: nothing to all-gather either way


def test_fp8_linears_keep_their_quantised_inputs_for_wgrad():
    # toy dense (tests/toy.py): h 1024, 8 x 128 heads (2 KV), SwiGLU 4096; tp 2 + SP, seq 2048, mbs 1.
    # Transformer Engine's FP8 Linear / LayerNormLinear keep the FP8 copy of their input (1 B) for the
    # weight gradient: qkv input and fc1 input (Ts x h), fc2 input (T x f / tp), plus the out-projection's
    # own FP8 copy of the attention output (T x q / tp); norm inputs, SwiGLU input, q/k/v stay BF16
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    from toy import toy_consts, toy_dense, toy_hw, toy_sw

    from perfmodel.core.workload import build
    from perfmodel.specs.layout import LayoutGrid

    m, hw, c = toy_dense(), toy_hw(), toy_consts()
    grid = LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2))
    saved = lambda low: {
        s.name: float(np.asarray(s.nbytes).ravel()[0])
        for s in build(m, grid, low, 1.0, c, toy_sw(m, hw, c)).layers[0].saved
    }
    bf, f8 = saved(False), saved(True)
    Ts, T = 1024, 2048
    assert f8["qkv input"] == 1 * 1024 * Ts and bf["qkv input"] == 2 * 1024 * Ts
    assert f8["fc1 input"] == 1 * 1024 * Ts
    assert f8["activation output"] == 1 * 4096 / 2 * T
    assert f8["out-proj input (quantised copy)"] == 1 * 1024 / 2 * T and "out-proj input (quantised copy)" not in bf
    for kept in ("attention norm input", "q, k, v", "attention output", "MLP norm input", "activation input"):
        assert f8[kept] == bf[kept]
    # per layer: 2 MiB + 2 MiB + 8 MiB saved, 1 MiB added
    assert sum(bf.values()) - sum(f8.values()) == pytest.approx(1024 * Ts + 1024 * Ts + 4096 / 2 * T - 1024 / 2 * T)


# ---- activation CPU offloading (Megatron-Core cpu_offloading_num_layers; Megatron-Bridge FSDP presets) ----


def test_offload_keeps_the_unoffloaded_layers_and_one_in_transit():
    from dataclasses import replace

    from toy import toy_dense, toy_sw

    from perfmodel.core.memory import offload_kept_share

    sw = replace(toy_sw(toy_dense()), cpu_offload_layers=20)
    # 80 layers, 20 offloaded: 60 kept + 1 whose copy is in flight; pp 2: Megatron offloads only at pp 1
    got = offload_kept_share(sw, np.array([[1], [2]]), np.array([[80.0], [40.0]]))
    assert got.ravel().tolist() == pytest.approx([61 / 80, 1.0])
    # at most L - 1 layers offload (Megatron: cpu_offloading_num_layers in 0 .. num_layers - 1)
    assert float(offload_kept_share(replace(sw, cpu_offload_layers=500), np.array(1), np.array(8.0))) == pytest.approx(
        2 / 8
    )
    assert float(offload_kept_share(replace(sw, cpu_offload_layers=0), np.array(1), np.array(8.0))) == 1.0


def test_offload_exposes_only_the_transfer_beyond_the_layers_compute():
    from dataclasses import replace

    from toy import toy_consts, toy_dense, toy_hw, toy_sw

    from perfmodel.core import price
    from perfmodel.core.workload import build
    from perfmodel.errors import InputError
    from perfmodel.specs.layout import LayoutGrid

    m, c = toy_dense(), toy_consts()
    hw = toy_hw()
    hw = hw.model_copy(update={"memory": hw.memory.model_copy(update={"host_bandwidth": 1e9})})
    sw = replace(toy_sw(m, hw, c), cpu_offload_layers=2)
    layer = build(m, LayoutGrid.of(Layout(gpus=8, gbs=8, seq=2048, tp=2)), False, 1.0, c, sw).layers[0]
    saved = sum(float(np.asarray(s.nbytes).ravel()[0]) for s in layer.saved)
    t = price.LayerTime(*(np.array([x]) for x in (1e-3, 2e-3, 0.0, 0.0, 0.0, 0.0)), comm={})
    x = saved / 1e9  # seconds per direction over a 1 GB/s host link
    assert x > 2e-3
    from perfmodel.core.predict import with_offload

    got = price.offload_exposed(layer, t, hw, sw, 4)
    # 2 of 4 layers offloaded: half of (x - forward) + (x - backward) per layer; nothing at pp 2
    assert got.tolist() == pytest.approx([0.5 * ((x - 1e-3) + (x - 2e-3))])
    parts = with_offload({"memory_bound": np.zeros(2)}, got, lambda v: v + np.zeros(2), np.array([1, 2]))
    assert parts["memory_bound"].tolist() == pytest.approx([0.5 * ((x - 1e-3) + (x - 2e-3)), 0.0])
    assert price.offload_exposed(layer, t, hw, replace(sw, cpu_offload_layers=0), 4) is None
    fast = hw.model_copy(update={"memory": hw.memory.model_copy(update={"host_bandwidth": 1e15})})
    assert price.offload_exposed(layer, t, fast, sw, 4).tolist() == [0.0]
    with pytest.raises(InputError, match="give at most 3, or 0"):  # n >= L layers: refused, with the largest n
        price.offload_exposed(layer, t, hw, replace(sw, cpu_offload_layers=4), 4)
    with pytest.raises(InputError, match="host_bandwidth"):  # a GPU with no host link given: refused
        price.offload_exposed(layer, t, toy_hw(), sw, 4)


@pytest.mark.parametrize(
    "hw, prec, layers",
    [
        ("gb300-nvl72", "fp8", 20),
        ("gb300-nvl72", "bf16", 30),
        ("gb200-nvl72", "fp8", 40),
        ("gb200-nvl72", "bf16", 20),
        ("b200", "fp8", 5),
        ("gb200-nvl72", "mxfp8", 0),
        ("h100-sxm", "fp8", 0),
    ],
)
def test_megatron_bridge_llama3_70b_presets_offload_activations(hw, prec, layers):
    # llama3_workload_base_configs.py: LLAMA3_70B_PRETRAIN_CONFIG_{GPU}_{PRECISION} cpu_offloading_num_layers
    from perfmodel.core.calibration import constants
    from perfmodel.core.software import resolve
    from perfmodel.specs.hardware import load_hardware

    for sid in ("nemo-25.11", "nemo-26.04", "default"):
        assert resolve(sid, (), "llama3-70b", False, load_hardware(hw), prec, constants()).cpu_offload_layers == layers


@pytest.mark.parametrize("prec, overlap, fp8_gather", [("nvfp4", 0.0, False), ("fp8", None, None)])
def test_megatron_bridge_turns_tp_overlap_off_under_nvfp4(prec, overlap, fp8_gather):
    # llama31_llm_pretrain.py: tp_comm_overlap = False if precision == 'nvfp4'; bf16_with_nvfp4_mixed:
    # fp8_param_gather = False. FP8 keeps userbuffers (the tp_overlap constant); its own gather setting stays
    from perfmodel.core.calibration import constants
    from perfmodel.core.software import resolve
    from perfmodel.specs.hardware import load_hardware

    c = constants()
    for sid in ("nemo-25.11", "nemo-26.02", "nemo-26.04"):
        sw = resolve(sid, (), "llama3.1-405b", False, load_hardware("gb300-nvl72"), prec, c)
        assert (sw.tp_share_fwd, sw.tp_share_bwd) == (
            (overlap, overlap) if overlap is not None else (c.tp_overlap,) * 2
        )
        if fp8_gather is not None:
            assert sw.fp8_param_gather is fp8_gather
    # the synchronous TP collectives of Llama 3.1 405B tp4 on GB300 are then exposed in full: with the backward's
    # asynchronous part synchronous too (tp_bwd_async = false), breakdown tp_comm = raw; with Megatron-Core's
    # own split, the asynchronous part hides under the column-parallel GEMMs and less is exposed
    lay = Layout(gpus=256, gbs=1536, seq=8192, tp=4, pp=8, vp=4)
    r = predict(
        "llama3.1-405b", "gb300-nvl72", lay, precision="nvfp4", stack="nemo-26.04", stack_set=("tp_bwd_async=false",)
    ).row(0)
    if prec == "nvfp4":
        assert r["breakdown_s"]["tp_comm"] == pytest.approx(r["comm_raw_s"]["tp_comm"], rel=1e-9)
        a = predict("llama3.1-405b", "gb300-nvl72", lay, precision="nvfp4", stack="nemo-26.04").row(0)
        # raw: each block's backward runs 3 collectives, not 2 (the input re-gathered for wgrad): 5 of 4 calls
        assert a["comm_raw_s"]["tp_comm"] == pytest.approx(1.25 * r["comm_raw_s"]["tp_comm"], rel=1e-9)
        assert a["breakdown_s"]["tp_comm"] < r["breakdown_s"]["tp_comm"]


@pytest.mark.parametrize(
    "sid, model, is_moe, ce",
    [
        ("nemo-25.11", "llama3-70b", False, "te"),
        ("nemo-26.02", "llama3-8b", False, "te"),
        ("nemo-26.04", "llama3.1-405b", False, "te"),
        ("default", "llama3-70b", False, "te"),
        ("nemo-25.11", "qwen3-30b-a3b", True, "te"),
        # every performance recipe runs TE cross-entropy: Megatron-Bridge v0.2.0 scripts/performance/utils/helpers.py:108
        # (set_common_perf_overrides, all recipes) and v0.1.0rc3's *_llm_pretrain.yaml model.cross_entropy_fusion_impl
        ("nemo-25.11", "deepseek-v3", True, "te"),
        ("nemo-25.11", "nemotron4-340b", False, "te"),
        ("nemo-25.09", "llama3-70b", False, "te"),
        ("megatron-core", "llama3-70b", False, "fp32"),
    ],
)
def test_megatron_bridge_llama3_and_qwen_recipes_run_te_cross_entropy(sid, model, is_moe, ce):
    # Megatron-Bridge PR #1154 (cherry-picked into r0.2.0 = NeMo 25.11 as #1201): the Llama 3 and Qwen recipes
    # set cross_entropy_fusion_impl = 'te'; the performance scripts set it for every recipe (v0.1.0rc3 yaml, v0.2.0
    # helpers.py:108); the Megatron-Core family preset keeps the native kernel
    from perfmodel.core.calibration import constants
    from perfmodel.core.software import resolve
    from perfmodel.specs.hardware import load_hardware

    sw = resolve(sid, (), model, is_moe, load_hardware("gb200-nvl72"), "fp8", constants())
    assert sw.logit_bytes == (2 if ce == "te" else 8)


def test_llama3_70b_gb200_fp8_fsdp_row_keeps_bf16_logits_only():
    # mb2511-l3-70b-gb200-64-fp8 (FSDP, tp 1, mbs 2, seq 8192, vocab 128,256): the last rank holds the bf16
    # logits of one micro-batch, the gradient written into them: 2 B x 2 x 8192 x 128256 = 4,202,692,608 B
    # (the fp32 path held 4 x that: 16,810,770,432 B)
    lay = Layout(gpus=64, gbs=256, mbs=2, seq=8192, fsdp=True)
    p = predict("llama3-70b", "gb200-nvl72", lay, precision="fp8", stack="nemo-25.11")
    assert float(p.memory_parts["logits"][0]) == pytest.approx(2 * 2 * 8192 * 128256, rel=1e-12)
    q = predict(
        "llama3-70b", "gb200-nvl72", lay, precision="fp8", stack="nemo-25.11", stack_set=("cross_entropy=fp32",)
    )
    assert float(q.memory_parts["logits"][0]) == pytest.approx(4 * 2 * 2 * 8192 * 128256, rel=1e-12)
    # 189.7 GB fits the 197.9 GB the GB200 reports to PyTorch (hardware memory.device_bytes) with no recompute;
    # the fp32 loss (202.3 GB) does not
    from perfmodel.specs.hardware import load_hardware

    cap = load_hardware("gb200-nvl72").memory.capacity
    assert cap == pytest.approx(184.31 * 2**30, rel=1e-9)
    assert float(p.memory_bytes_per_gpu[0]) < cap < float(q.memory_bytes_per_gpu[0])


def test_dgxc_maxtext_llama2_70b_recomputes_attention_and_mlp_only():
    # dgxc-benchmarking maxtext/configure.sh (v24.11): remat_policy=custom saving q/k/v/qkv/out_proj (+ mlpwo
    # in BF16): the flash-attention output and the MLP are re-run, the attention projections are not
    s = load_stack("dgxc-24.11-maxtext")
    assert (s.value("recompute"), s.value("recompute_modules")) == ("selective", ("core_attn", "mlp", "layernorm"))
    (row,) = [r for r in _rows("dgxc241101-l2-70b-h100-64-bf16") if r["run_id"].endswith("-maxtext")]
    assert (row["micro_batch"], row["fsdp"], row["recompute"]) == ("2", "1", "")
    lay = lambda rc: Layout(gpus=64, gbs=128, mbs=2, seq=4096, fsdp=True, recompute=rc)
    run = {
        rc: predict("llama2-70b", "h100-sxm", lay(rc), precision="bf16", stack="dgxc-24.11-maxtext")
        for rc in ("none", "selective", "full")
    }
    # with no recompute the 80 layers' activations overflow 80 GB (hardware/h100-sxm.toml); the stated policy fits
    assert float(run["none"].memory_bytes_per_gpu[0]) > 80e9 > float(run["selective"].memory_bytes_per_gpu[0])
    rec = {rc: run[rc].row(0)["breakdown_s"]["recompute"] for rc in run}
    # it re-runs attention and the MLP but not the four attention projections (18% of the layer's GEMM FLOPs:
    # (8192 x 10240 + 8192 x 8192) / (that + 3 x 8192 x 28672)), so it costs less than the whole forward
    assert rec["none"] == 0.0 < rec["selective"] < rec["full"]
    assert rec["selective"] / rec["full"] > 0.75


@pytest.mark.parametrize("hw_id", ["gb200-nvl72", "gb300-nvl72", "b300"])
def test_blackwell_bf16_power_bound_is_the_b200_measurement_scaled_by_power(hw_id):
    # the B200 sweep (0.488 of 2,250 TFLOP/s at 1,000 W) scaled by each part's power limit, as gemm_bf16 is:
    # GB200 1,200 W -> 1,317.6 TF = 0.527 of 2,500; GB300 1,400 W -> 0.615 of 2,500; B300 1,100 W -> 0.537 of 2,250
    from perfmodel.specs.hardware import load_hardware

    b200, hw = load_hardware("b200"), load_hardware(hw_id)
    rate = b200.efficiency.gemm_bf16_power_bound * b200.peak("bf16") * hw.power.gpu_tdp_w / b200.power.gpu_tdp_w
    assert hw.efficiency.gemm_bf16_power_bound == pytest.approx(rate / hw.peak("bf16"), abs=5e-4)


def test_llama31_405b_bf16_gemm_on_gb200_runs_at_the_power_bound():
    # the 405B MLP fprop of one micro-batch at tp 4, cp 2 (M = 4,096 tokens, N = 53,248 / 4, K = 16,384):
    # the shape curve (0.729 x sustained x K, M, N fill) lies above the cap, so it runs at 0.527 x 2,500 TF:
    # 2 x 4096 x 13312 x 16384 / 1.3175e15 s plus the fixed cost; FP8 is not capped
    from perfmodel.core.calibration import constants
    from perfmodel.core.compute import gemm_time
    from perfmodel.specs.hardware import load_hardware

    c, hw = constants(), load_hardware("gb200-nvl72")
    M, N, K = 4096, 13312, 16384
    assert float(gemm_time(M, N, K, hw, "bf16", c)) == pytest.approx(
        2 * M * N * K / (2.5e15 * 0.527) + c.kernel_fixed_s, rel=1e-9
    )
    assert float(gemm_time(M, N, K, hw, "fp8", c)) < float(gemm_time(M, N, K, hw, "bf16", c)) / 2


def test_dgxc_25_05_nemotron4_on_gb200_launches_with_cuda_graphs():
    # dgxc-benchmarking nemotron/launch.sh (25.05.04): '--cuda_graphs true' on gb200 only; Llama 3.1 405B's
    # launch passes none (the NeMo 25.04 B200-only default stays)
    s = load_stack("dgxc-25.05")
    assert s.for_model("nemotron4-340b", False, "gb200-nvl72", "fp8").value("cuda_graphs") == "per_layer"
    assert s.for_model("nemotron4-15b", False, "h100-sxm", "bf16").value("cuda_graphs") == "none"
    assert s.for_model("llama3.1-405b", False, "gb200-nvl72", "fp8").value("cuda_graphs") == "none"
