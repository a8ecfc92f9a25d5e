"""Issue 23: what the planner recommends must run. Memory on every distinct pipeline rank, TP overlap only
inside the NVLink domain, impossible measurements refused, ties named, degenerate inputs refused."""

from __future__ import annotations

import pytest
from cli_helpers import run_err, run_json
from log_helpers import L70, megatron_args, megatron_log

from perfmodel import api
from perfmodel.analysis.search import equivalents, parallel_axes
from perfmodel.cli import main
from perfmodel.specs.hardware import apply_overrides, load_hardware
from perfmodel.specs.model import load_model

DSV3 = dict(gpus=128, gbs=4096, seq=4096, tp=1, pp=32, ep=4, mbs=2, recompute="full")


def test_deepseek_v3_memory_is_checked_on_every_pipeline_rank():
    # pp 32 over 61 layers + MTP (NeMo's layout, parallel/pp.py): rank 0 holds layer 0 (dense) and the
    # embedding, rank 1 layers 1-2 (dense), rank 2 layers 3-4: the first two MoE layers. Their routed experts
    # alone at ep 4 (edp = 128 / (32 x 4) = 1: no optimizer sharding of experts) are
    # 2 x 256 x 3 x 7168 x 2048 / 4 = 5.64e9 parameters; bf16 weights 2 B + bf16 gradients 2 B + Adam 12 B
    routed = 2 * 256 * 3 * 7168 * 2048 / 4
    p = api.predict("deepseek-v3", "h100-sxm", api.Layout(**DSV3), "bf16").row(0)
    assert p["memory_fullest_rank"] == 2
    assert p["memory_bytes_per_gpu"] >= 16 * routed > 80e9
    assert not p["fits"]
    # the first and last rank are lighter, and the fullest is the largest of all three
    st = p["memory_stages_bytes"]
    assert st["fullest"] == p["memory_bytes_per_gpu"] > max(st["first"], st["last"])


def test_size_recommends_a_layout_that_fits_on_its_fullest_rank(capsys):
    (d,) = run_json(
        capsys, ["size", "--model", "deepseek-v3", "--hardware", "h100-sxm", "--tokens", "1e9", "--days", "1"]
    )
    lay = {
        k: d["layout"][k]
        for k in ("gpus", "gbs", "seq", "tp", "pp", "vp", "cp", "ep", "etp", "mbs", "fsdp", "recompute")
    }
    p = api.predict("deepseek-v3", "h100-sxm", api.Layout(**lay), "bf16").row(0)
    assert p["fits"] and p["memory_bytes_per_gpu"] == pytest.approx(d["memory_bytes_per_gpu"])
    assert d["gpus"] > 128  # 128 GPUs (tp1 pp32 ep4) was the old, wrong answer


def _tps(layout, sets=(), hw="h100-sxm", stack_set=()):
    hw_spec = apply_overrides(load_hardware(hw), list(sets)) if sets else hw
    return float(api.predict("llama3.1-405b", hw_spec, layout, "bf16", stack_set=stack_set).tokens_per_s_per_gpu[0])


def test_tp_overlap_of_userbuffers_stops_at_the_nvlink_domain():
    tp16 = api.Layout(gpus=2048, gbs=512, seq=8192, tp=16, pp=8, vp=2)
    tp8 = api.Layout(gpus=2048, gbs=512, seq=8192, tp=8, pp=8, vp=2)
    off = ("tp_overlap=none",)
    # TP16 on H100 (8 GPUs per NVLink domain) spans two HGX nodes: userbuffers cannot run there, so switching the
    # overlap off changes nothing; TP8 inside one node loses its overlap
    assert _tps(tp16) == _tps(tp16, stack_set=off)
    assert _tps(tp8) > _tps(tp8, stack_set=off)
    # a what-if H100 with a 16-GPU NVLink domain keeps TP16 inside it: the overlap hides TP time again
    assert _tps(tp16, ("nvlink_domain=16",)) > _tps(tp16, ("nvlink_domain=16",), stack_set=off)


def test_search_for_405b_on_h100_keeps_tp_inside_the_node(capsys):
    out = run_json(
        capsys,
        [
            "search",
            "--model",
            "llama3.1-405b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "16384",
            "--gbs",
            "2048",
            "--seq",
            "8192",
            "--top",
            "3",
        ],
    )
    assert all(e["layout"]["tp"] <= 8 for e in out["top"])
    assert all(not e["leaves_nvlink_domain"]["tp"] for e in out["top"])


def test_predict_flags_and_warns_a_group_that_leaves_the_domain(capsys):
    args = [
        "predict",
        "--model",
        "llama3.1-405b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "2048",
        "--tp",
        "16",
        "--pp",
        "8",
        "--vp",
        "2",
        "--gbs",
        "512",
        "--seq",
        "8192",
    ]
    out = run_json(capsys, args)
    assert out["leaves_nvlink_domain"] == {"tp": True, "tp_cp": True, "ep": False}
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "tp 16 spans 2 NVLink domains" in err and "hides none of them" in err


def test_check_refuses_an_impossible_measurement(tmp_path, capsys):
    # Llama 3 70B on 64 H100 at 300 ms per step of 128 x 8192 tokens: 54,613 tokens/s/GPU, ~25x the dense peak
    a = megatron_args(**L70)
    f = tmp_path / "fast.log"
    f.write_text(megatron_log(a, [300.0] * 5))
    err = run_err(capsys, ["check", str(f), "--hardware", "h100-sxm"])
    assert "impossible" in err and "MFU" in err


def test_ties_name_the_layout_with_the_fewest_parallel_axes():
    lays = [
        dict(tp=8, pp=8, vp=4, cp=2, ep=1, etp=1, fsdp=False),
        dict(tp=8, pp=8, vp=1, cp=1, ep=1, etp=1, fsdp=False),
        dict(tp=8, pp=16, vp=1, cp=1, ep=1, etp=1, fsdp=False),
    ]
    assert [parallel_axes(x) for x in lays] == [4, 2, 2]
    eq = equivalents([100.0, 95.0, 90.0], lays, 0.93)
    # within 0.93x of the leader: #1 and #2 (#3 at 0.90x is not); #2 uses fewer axes
    assert eq["ranks"] == [1, 2] and eq["suggestion"] == 2
    assert equivalents([100.0, 80.0], lays[:2], 0.93) is None


def test_size_takes_fix_and_max(capsys):
    (d,) = run_json(
        capsys,
        [
            "size",
            "--model",
            "llama3-70b",
            "--hardware",
            "h100-sxm",
            "--tokens",
            "1e11",
            "--gpus",
            "256",
            "--fix",
            "tp=4",
            "--max",
            "pp=4",
        ],
    )
    assert d["layout"]["tp"] == 4 and d["layout"]["pp"] <= 4
    assert d["search_constraints"] == {"fix": {"tp": 4}, "cap": {"pp": 4, "etp": 2}}
    # the sequence defaults to the model's own pre-training length (models/llama3-70b.toml seq_len)
    assert d["seq"] == load_model("llama3-70b").seq_len


def test_fewer_tokens_than_one_batch_is_refused(capsys):
    err = run_err(capsys, ["size", "--model", "llama3-8b", "--hardware", "h100-sxm", "--tokens", "1000", "--days", "1"])
    assert "fewer than one global batch" in err
    err = run_err(
        capsys,
        [
            "cost",
            "--model",
            "llama3-8b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "8",
            "--gbs",
            "64",
            "--seq",
            "8192",
            "--tokens",
            "1e5",
        ],
    )
    assert "fewer than one global batch" in err
