"""`perfmodel check LOG`: logs written for the tests from the frameworks' format strings (tests/log_helpers.py
cites each: Megatron-LM arguments.py @000c4ac, training.py @001b00c, utils.py @00caa53; torchtitan
metrics.py @00fbaaf, train.py @000204a), plus broken and adversarial ones, and a round trip through a
row of validation/runs.csv."""

from __future__ import annotations

import csv
import gzip
import math
import random
import re
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_err, run_json
from log_helpers import (
    L70,
    LLAMA3_8B_TT_ARGS,
    args_dump,
    bridge_config,
    bridge_log,
    iteration_line,
    megatron_args,
    megatron_log,
    memory_line,
    nemo_log,
    torchrun_failure,
    torchtitan_config,
    torchtitan_log,
    torchtitan_log_2025,
    torchtitan_step,
    torchtitan_step_head,
)

from perfmodel import api
from perfmodel.analysis.logparse import MAX_LINE, parse_file, parse_text
from perfmodel.analysis.validate import read_csv, validate_rows
from perfmodel.cli import main
from perfmodel.specs.counts import param_counts
from perfmodel.specs.model import load_model
from perfmodel.specs.specfile import data_dir


def write(tmp_path: Path, text: str | bytes, name: str = "train.log") -> str:
    p = tmp_path / name
    if isinstance(text, str):
        p.write_text(text)
    else:
        p.write_bytes(text)
    return str(p)


# ---- parsing ------------------------------------------------------------------------------------


def test_argument_dump_and_intervals_are_read():
    a = megatron_args(**L70)
    log = parse_text(megatron_log(a, [16000.0, 14700.0, 14650.0], tflops=420.0))
    assert log.framework == "megatron"
    assert log.args["tensor_model_parallel_size"] == "4"
    assert log.args["virtual_pipeline_model_parallel_size"] == "5"
    assert log.args["recompute_granularity"] == "None"
    assert log.args["normalization"] == "RMSNorm"
    assert list(log.iters) == [10, 20, 30]
    assert list(log.step_s) == [16.0, 14.7, 14.65]
    assert list(log.tflops) == [420.0] * 3
    assert (log.vocab_unpadded, log.vocab_padded) == (128256, 128512)  # multiple 128 x tp 4 = 512
    assert log.mem_max_reserved == 70000.0 * 2**20 and log.mem_max_allocated == 60000.0 * 2**20


def _bigscience_line(it: int, train_iters: int, gbs: int, seq: int, s: float) -> str:
    """The BigScience Megatron-DeepSpeed fork's interval line (bigscience-workshop/Megatron-DeepSpeed@8387ae17
    megatron/training.py training_log, the time in seconds since @4c2aea04), behind a launcher's rank prefix."""
    line = "[default7]: iteration {:8d}/{:8d} |".format(it, train_iters)
    line += " consumed samples: {:12d} |".format(it * gbs)
    line += " consumed tokens: {:12d} |".format(it * gbs * seq)
    line += " elapsed time per iteration (s): {:.2f} |".format(s)
    line += " learning rate: {:.3E} |".format(6e-5)
    line += " global batch size: {:5d} |".format(gbs)
    line += " lm loss: {:.6E} |".format(2.46)
    line += " grad norm: {:.3f} |".format(0.174)
    line += " num zeros: {:.1f} |".format(0.0)
    line += " number of skipped iterations: {:3d} |".format(0)
    line += " number of nan iterations: {:3d} |".format(0)
    line += " samples per second: {:.3f} |".format(gbs / s)
    line += " TFLOPs: {:.2f} |".format(149.0)
    return line


def test_the_bigscience_fork_logs_its_step_time_in_seconds():
    a = megatron_args(**L70)
    head = "\n".join(args_dump(a))
    text = head + "\n" + "\n".join(_bigscience_line(i * 10, 1000, 2048, 2048, t) for i, t in ((1, 110.0), (2, 105.22)))
    log = parse_text(text + "\n")
    assert log.framework == "megatron"
    assert list(log.iters) == [10, 20] and list(log.step_s) == [110.0, 105.22]
    # the same interval in Megatron-LM's milliseconds reads the same
    ms = parse_text(head + "\n" + iteration_line(20, 1000, 2048, 105220.0) + "\n")
    assert list(ms.step_s) == pytest.approx([105.22])


def _mds_line(it: int, gbs: int, seq: int, ms: float, world: int) -> str:
    """microsoft/Megatron-DeepSpeed@00caa0e9 megatron/training.py training_log's interval line: tgs = samples per
    second x seq / world_size, TFLOPs its own count per GPU, behind DeepSpeed's timer line."""
    sps = gbs / (ms / 1e3)
    timer = "[2024-03-07 15:27:02,646] [INFO] [timer.py:260:stop] epoch=0/micro_step={0}/global_step={0}, "
    timer += "RunningAvgSamplesPerSec=58.73, CurrSamplesPerSec=61.35, MemAllocated=6.01GB, MaxMemAllocated=19.52GB"
    line = " iteration {:8d}/{:8d} |".format(it, 317892)
    line += " consumed samples: {:12d} |".format(it * gbs)
    line += " consumed tokens: {:12d} |".format(it * gbs * seq)
    line += " elapsed time per iteration (ms): {:.1f} |".format(ms)
    line += " learning rate: {:.3E} |".format(2.4e-4)
    line += " global batch size: {:5d} |".format(gbs)
    line += " lm loss: {:.6E} |".format(5.9)
    line += " loss scale: {:.1f} |".format(8192.0)
    line += " actual seqlen: {:5d} |".format(seq)
    line += " number of skipped iterations: {:3d} |".format(0)
    line += " number of nan iterations: {:3d} |".format(0)
    line += " samples per second: {:.3f} |".format(sps)
    line += " tokens per gpu per second (tgs): {:.3f} |".format(sps * seq / world)
    line += " TFLOPs: {:.2f} |".format(69.85)
    return timer.format(it) + "\n" + line


def test_megatron_deepspeed_lines_state_the_sequence_world_size_and_tokens_per_gpu(tmp_path, capsys):
    """Without an argument dump, the interval lines alone give the measurement: the batch, 'actual seqlen', the
    world size their tgs implies (gbs x seq / (step x tgs)) and the framework's own TFLOP/s."""
    steps = [15100.0] + [14287.5 + 3.0 * (i % 4) for i in range(12)]
    text = "\n".join(_mds_line(10 * (i + 1), 768, 4096, t, 192) for i, t in enumerate(steps)) + "\n"
    log = parse_text(text)
    assert log.framework == "megatron" and log.seq_logged == {4096} and log.gbs_logged == {768}
    assert list(log.tflops)[:2] == [69.85, 69.85] and log.tps[1] == pytest.approx(
        768 * 4096 / (14.2885 * 192), rel=1e-3
    )
    m = run_json(capsys, ["check", write(tmp_path, text)])["measured"]
    step = m["step_s"]
    assert m["tokens_per_s_per_gpu"] == pytest.approx(768 * 4096 / (step * 192), rel=1e-9)  # world 192 from tgs
    assert m["tflops_per_gpu"] == 69.85 and m["missing"] == []
    # a curriculum that changes the sequence states no one sequence: the GPUs are not inferred
    varied = text + _mds_line(200, 768, 2048, 7200.0, 192) + "\n"
    m = run_json(capsys, ["check", write(tmp_path, varied, "varied.log")])["measured"]
    assert m["tokens_per_s_per_gpu"] == pytest.approx(np.median([r for r in parse_text(varied).tps][1:]), rel=0.01)


def test_stable_median_leaves_out_warmup_and_evaluation(tmp_path, capsys):
    # interval 1 (iterations 1-10) is warm-up; the one after the evaluation at 30 is left out too
    steps = [19000.0, 14000.0, 14200.0, 25000.0, 14100.0, 14400.0]
    f = write(tmp_path, megatron_log(megatron_args(**L70), steps, eval_at=[30]))
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm"])
    m = out["measured"]
    assert (m["intervals"], m["used"], m["dropped_warmup"], m["dropped_events"]) == (6, 4, 1, 1)
    assert m["step_s"] == pytest.approx(np.median([14.0, 14.2, 14.1, 14.4]))
    assert m["step_p10_s"] == pytest.approx(np.percentile([14.0, 14.2, 14.1, 14.4], 10))
    # tokens/s/GPU = gbs * seq / (step * gpus)
    assert m["tokens_per_s_per_gpu"] == pytest.approx(128 * 8192 / (m["step_s"] * 64))
    # --warmup 0 keeps the first interval (still not the one after the evaluation)
    out0 = run_json(capsys, ["check", f, "--hardware", "h100-sxm", "--warmup", "0"])
    assert out0["measured"]["dropped_warmup"] == 0 and out0["measured"]["used"] == 5


def test_prediction_is_api_predict_of_the_logged_run(tmp_path, capsys):
    f = write(tmp_path, megatron_log(megatron_args(**L70, recompute_granularity="selective"), [15000.0] * 4))
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm"])
    assert out["model"] == "llama3-70b" and out["layout"]["vp"] == 5 and out["layout"]["recompute"] == "selective"
    # a Megatron-LM log naming no release: the Megatron-Core defaults, with what the dump states on top
    assert out["stack"] == "megatron-core"
    assert out["stack_set"] == [
        "tp_overlap=userbuffers",
        "dp_grad_reduce_overlap=true",
        "dp_param_gather_overlap=true",
        "sequence_parallel=true",
        "recompute=selective",
        "recompute_modules=core_attn",
        "fsdp=zero1",
        "optimizer_shard=dp_cp",
    ]
    frm = {f["feature"]: f["from"] for f in out["stack_features"]}
    assert frm["tp_overlap"] == "log" and frm["attention_kernel"] == "preset" and frm["cuda_graphs"] == "preset"
    lay = api.Layout(gpus=64, gbs=128, seq=8192, tp=4, pp=4, vp=5, cp=2, recompute="selective")
    p = api.predict("llama3-70b", "h100-sxm", lay, "bf16", stack="megatron-core", stack_set=tuple(out["stack_set"]))
    assert out["predicted"]["tokens_per_s_per_gpu"] == float(p.tokens_per_s_per_gpu[0])
    assert out["gap"] == pytest.approx(
        (float(p.tokens_per_s_per_gpu[0]) - out["measured"]["tokens_per_s_per_gpu"])
        / out["measured"]["tokens_per_s_per_gpu"]
    )
    # what-ifs: the two other recompute modes, overlap off, CUDA graphs toggled, the other release presets
    kinds = [w["cause"] for w in out["what_ifs"]]
    assert any("recompute none" in c for c in kinds) and any("recompute full" in c for c in kinds)
    assert any(c.startswith("communication overlap off") for c in kinds)
    assert any(c.startswith("CUDA graphs on") for c in kinds)
    rel = [w for w in out["what_ifs"] if w["kind"] == "release"]
    assert {w["release"] for w in rel} >= {"nemo-25.09", "dgxc-24.11", "default"} and "megatron-core" not in {
        w["release"] for w in rel
    }
    d = [w["log_distance"] for w in out["what_ifs"]]
    assert d == sorted(d)
    bubble = [o for o in out["overheads"] if "bubble" in o["part"]]
    assert bubble and "m 64:" in bubble[0]["label"] and out["micro_batches"] == 64  # 128 / (dp 2 x mbs 1)


def test_verdict_band_is_the_unseen_stack_band_for_a_stack_the_bands_never_saw(tmp_path, capsys):
    """A Megatron-LM log naming no release runs the megatron-core preset, whose rows never fitted the bands:
    the verdict uses the unseen-stack band of the layout's cell (dense, interleaved at vp 5), the band
    `predict --stack megatron-core` prints; a log carrying a fitted release's banner keeps the fitted band."""
    from perfmodel.analysis import uncertainty

    f = write(tmp_path, megatron_log(megatron_args(**L70), [15000.0] * 4))
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm"])
    assert uncertainty.stack_seen("megatron-core") is False and uncertainty.stack_seen("nemo-25.09") is True
    want = uncertainty.band_of("llama3-70b", "h100-sxm", unseen=True, vp=5)
    assert out["band"]["unseen_stack"] and out["band"]["group"] == want.group
    assert (out["band"]["low_factor"], out["band"]["high_factor"]) == (want.low, want.high)
    seen = run_json(capsys, ["check", f, "--hardware", "h100-sxm", "--stack", "nemo-25.09"])
    fitted = uncertainty.band_of("llama3-70b", "h100-sxm")
    assert not seen["band"]["unseen_stack"]
    assert (seen["band"]["low_factor"], seen["band"]["high_factor"], seen["band"]["group"]) == (
        fitted.low,
        fitted.high,
        fitted.group,
    )


@pytest.mark.parametrize("block", [97, 4096])
def test_blocks_of_any_size_parse_the_same(tmp_path, monkeypatch, block):
    """Lines and the argument dump spanning read blocks (plain and gzip) give what one block gives."""
    import perfmodel.analysis.logparse as lp

    text = megatron_log(megatron_args(**L70), [15000.0, 14000.0, 14100.0, 14200.0], tflops=400.0, eval_at=[20])
    whole = parse_text(text)
    f = write(tmp_path, text)
    gz = tmp_path / "t.log.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    monkeypatch.setattr(lp, "BLOCK", block)
    for path in (f, str(gz)):
        got = parse_file(path)
        assert got.args == whole.args and list(got.iters) == list(whole.iters)
        assert list(got.step_s) == list(whole.step_s) and list(got.event_after) == list(whole.event_after) == [
            0,
            0,
            1,
            0,
        ]
        assert got.lines == whole.lines and got.mem_max_reserved == whole.mem_max_reserved


@pytest.mark.parametrize("block", [131, 4096])
def test_torchtitan_blocks_ranks_and_checkpoints(tmp_path, monkeypatch, block):
    """torchtitan steps from two ranks, a checkpoint save after step 30 and a validation after 40, read in
    small blocks (the fast path after the first step) give what one block gives: one interval per step,
    the ones after the save and the validation flagged, memory the max over ranks."""
    from log_helpers import torchtitan_step

    import perfmodel.analysis.logparse as lp

    text = torchtitan_log(torchtitan_config(), LLAMA3_8B_TT_ARGS, (["dp_shard"], [8]), [], 1, 8, 8192)
    for step in (1, 10, 20, 30, 40, 50):
        text += torchtitan_step(step, 6500.0, 312.0, 40.0, mem_gib=50.0) + "\n"
        text += torchtitan_step(step, 6400.0, 307.0, 39.0, mem_gib=52.25).replace("[rank0]", "[rank7]") + "\n"
        if step == 30:
            text += "[rank0]:[titan] 2026-11-30 10:00:00,000 - root - INFO - Saving the checkpoint (or staging if async is enabled).\n"
        if step == 40:  # metrics.py log_validation: no tflops / mfu fields
            text += (
                "[rank0]:[titan] 2026-11-30 10:00:00,000 - root - INFO - \033[33mvalidate step: 40  \033[32mloss:  6.9000"
                "  \033[36mmemory: 50.00GiB(63.10%)  \033[34mtps: 21,000\033[39m\n"
            )
    whole = parse_text(text)
    assert list(whole.iters) == [1, 10, 20, 30, 40, 50] and list(whole.event_after) == [0, 0, 0, 0, 1, 1]
    assert list(whole.tps) == [6500.0] * 6 and whole.mem_max_reserved == 52.25 * 2**30
    monkeypatch.setattr(lp, "BLOCK", block)
    got = parse_file(write(tmp_path, text))
    assert (list(got.iters), list(got.event_after), list(got.tps)) == (
        list(whole.iters),
        list(whole.event_after),
        list(whole.tps),
    )
    assert (
        got.args == whole.args and got.model_args == whole.model_args and got.mem_max_reserved == whole.mem_max_reserved
    )


def test_bridge_memory_line_and_cut_numbers():
    # Megatron-Bridge train_utils.py @031e7de: memory in GB (1e9 bytes) under MEMORY_KEYS names
    bridge = (
        "[Rank 0] (after 10 iterations) memory (GB) | mem-allocated-gigabytes: 41.2 | mem-max-allocated-gigabytes: "
        "55.123 | mem-max-reserved-gigabytes: 61.5 | mem-alloc-retires: 0"
    )
    log = parse_text("\n".join(args_dump(megatron_args(**L70)) + [bridge]) + "\n")
    assert log.mem_max_allocated == pytest.approx(55.123e9) and log.mem_max_reserved == pytest.approx(61.5e9)
    # a file cut inside the last number of its last line: that line is not read (70 of 70000.00 MB would be
    # wrong), as a line without a line end never is
    cut = memory_line(0, 10, 60000.0, 70000.0)[:-6]
    log = parse_text("\n".join(args_dump(megatron_args(**L70)) + [cut]))
    assert log.mem_max_reserved == 0.0 and log.last_line_cut


def test_interleaved_ranks_prefixes_and_colours(tmp_path):
    a = megatron_args(**L70)
    lines = args_dump(a)
    for i, ms in enumerate([15000.0, 14000.0, 14100.0]):
        it = (i + 1) * 10
        line = iteration_line(it, 100, 128, ms)
        # the same interval printed by two ranks, with torchrun and srun prefixes and colour codes
        lines += [f"[rank63]:{line}", f"63: \x1b[32m{line}\x1b[0m"]
        lines += [f"{r}: " + memory_line(r, it, 50000.0 + 100 * r, 60000.0 + 100 * r) for r in (0, 16, 32, 48)]
    # two ranks' memory reports written into one line (no line buffering)
    lines.append(memory_line(2, 30, 50000.0, 90000.0) + memory_line(6, 30, 95000.0, 60000.0))
    log = parse_text("\n".join(lines) + "\n")
    assert list(log.iters) == [10, 20, 30]
    assert log.mem_max_reserved == 90000.0 * 2**20 and log.mem_max_allocated == 95000.0 * 2**20


def test_a_peak_reserved_near_the_devices_limit_is_named_as_a_cost_not_priced(tmp_path, capsys):
    # an H100 lets a process allocate 85.03e9 B (hardware device_bytes); a peak reserved within 5% of it is named
    # (the caching allocator's flush-and-retry), further below it is not
    def notes(max_res_mb):
        a = megatron_args(**L70)
        lines = args_dump(a)
        for i, ms in enumerate([15000.0] * 4):
            it = (i + 1) * 10
            lines += [iteration_line(it, 100, 128, ms), memory_line(0, it, 0.8 * max_res_mb, max_res_mb)]
        out = run_json(capsys, ["check", write(tmp_path, "\n".join(lines) + "\n"), "--hardware", "h100-sxm"])
        return [n for n in out["notes"] if "caching allocator" in n]

    (near,) = notes(80000.0)  # 83.9e9 B: 98.7% of 85.03e9
    assert "peak reserved 83.9 GB is 99% of the 85.0 GB h100-sxm lets a process allocate" in near
    assert notes(70000.0) == []  # 73.4e9 B: 86%


def test_truncated_log_keeps_what_was_written(tmp_path, capsys):
    text = megatron_log(megatron_args(**L70), [15000.0, 14000.0, 14100.0, 14200.0])
    cut = text[: text.rindex("| learning rate") - 3]  # the last line broken mid-number
    f = write(tmp_path, cut)
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm"])
    assert out["measured"]["intervals"] == 3  # the broken line has no 'elapsed time' field left
    # a log cut inside the argument dump logged no iteration: it says so (a measured run is data, not an error)
    dump_cut = text[: text.index("num_layers ")]
    out = run_json(capsys, ["check", write(tmp_path, dump_cut, "cut.log"), "--hardware", "h100-sxm"])
    assert out["status"] == "no_iteration" and out["measured"] is None
    assert out["summary"].startswith("the run logged no iteration: it stopped before step 1")


def test_missing_fields_are_named_with_how_to_give_them(tmp_path, capsys):
    a = megatron_args(**L70)
    del a["tensor_model_parallel_size"], a["world_size"]
    f = write(tmp_path, megatron_log(a, [15000.0] * 3, vocab=None))
    out = run_json(capsys, ["check", f])
    assert out["status"] == "measured" and out["measured"]["step_s"] == pytest.approx(15.0)
    err = out["not_predicted"]
    assert "hardware" in err and "--hardware" in err
    assert "tensor_model_parallel_size (give --arg tensor_model_parallel_size=" in err
    assert "world_size (give --gpus N)" in err
    # giving them makes the same log check
    out = run_json(
        capsys,
        [
            "check",
            f,
            "--hardware",
            "h100-sxm",
            "--gpus",
            "64",
            "--arg",
            "tensor_model_parallel_size=4",
            "--arg",
            "vocab_size=128256",
        ],
    )
    assert out["layout"]["tp"] == 4 and out["model"] == "llama3-70b"


def test_precision_from_the_fp8_recipe(tmp_path, capsys):
    for kw, want in (
        (dict(fp8="hybrid", fp8_recipe="mxfp8"), "mxfp8"),
        (dict(fp8="e4m3", fp8_recipe="tensorwise"), "fp8"),
        (dict(fp8="e4m3", fp8_recipe="blockwise"), "fp8-block"),
        (dict(fp4="e2m1"), "nvfp4"),
    ):
        f = write(tmp_path, megatron_log(megatron_args(**{**L70, **kw}), [15000.0] * 3))
        assert run_json(capsys, ["check", f, "--hardware", "b200"])["precision"] == want


def test_vp_from_layers_per_virtual_stage(tmp_path, capsys):
    a = megatron_args(
        **{**L70, "virtual_pipeline_model_parallel_size": None, "num_layers_per_virtual_pipeline_stage": 4}
    )  # 80 / (pp 4 x 4) = 5
    out = run_json(capsys, ["check", write(tmp_path, megatron_log(a, [15000.0] * 3)), "--hardware", "h100-sxm"])
    assert out["layout"]["vp"] == 5


def test_moe_dump_matches_the_catalog(tmp_path, capsys):
    a = megatron_args(
        num_layers=32,
        hidden_size=4096,
        ffn_hidden_size=14336,
        num_attention_heads=32,
        num_query_groups=8,
        kv_channels=128,
        num_experts=8,
        moe_router_topk=2,
        moe_ffn_hidden_size=None,
        moe_layer_freq=1,
        expert_model_parallel_size=8,
        tensor_model_parallel_size=1,
        world_size=64,
        data_parallel_size=64,
        global_batch_size=256,
        seq_length=4096,
    )
    out = run_json(
        capsys, ["check", write(tmp_path, megatron_log(a, [9000.0] * 3, vocab=32000)), "--hardware", "h100-sxm"]
    )
    assert out["model"] == "mixtral-8x7b"
    assert out["layout"]["ep"] == 8 and out["layout"]["etp"] == 1  # expert TP defaults to TP (1)


def test_unknown_shape_is_built_and_csv_needs_a_model_file(tmp_path, capsys):
    a = megatron_args(
        num_layers=24,
        hidden_size=2048,
        ffn_hidden_size=5632,
        num_attention_heads=16,
        num_query_groups=16,
        kv_channels=128,
        group_query_attention=False,
        world_size=8,
        data_parallel_size=8,
        global_batch_size=64,
        seq_length=2048,
    )
    f = write(tmp_path, megatron_log(a, [1500.0] * 3, vocab=32000))
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm"])
    assert out["model"] == "log-model" and "built from the dump" in out["model_source"]
    err = run_err(capsys, ["check", f, "--hardware", "h100-sxm", "--csv", str(tmp_path / "o.csv")])
    assert "--model FILE" in err


def test_binary_junk_and_huge_lines(tmp_path, capsys):
    rnd = random.Random(7)
    junk = bytes(rnd.randrange(256) for _ in range(20000))
    body = megatron_log(megatron_args(**L70), [15000.0, 14000.0, 14100.0]).encode()
    data = junk + b"\n" + b"\xff\xfe" * (MAX_LINE + 10) + b"\n" + body + b"x" * (3 * MAX_LINE)  # no final newline
    log = parse_file(write(tmp_path, data, "junk.log"))
    assert list(log.iters) == [10, 20, 30] and log.cut_lines == 1  # the 3 MB tail without a newline
    err = run_err(capsys, ["check", write(tmp_path, junk, "only-junk.log"), "--hardware", "h100-sxm"])
    assert "no Megatron-LM / NeMo / Megatron-Bridge, torchtitan, MaxText, Composer, DeepSpeed, Hugging Face" in err


def test_gzip_log_reads_as_the_plain_one(tmp_path, capsys):
    text = megatron_log(megatron_args(**L70), [15000.0, 14000.0, 14100.0, 14300.0])
    plain = run_json(capsys, ["check", write(tmp_path, text), "--hardware", "h100-sxm"])
    gz = tmp_path / "train.log.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    out = run_json(capsys, ["check", str(gz), "--hardware", "h100-sxm"])
    assert out["gzip"] and out["measured"] == plain["measured"]
    # a gzip cut short (copied while still written) keeps the lines read
    gz.write_bytes(gzip.compress(text.encode())[:-9])  # the trailer and one byte of data
    cut = parse_file(str(gz))
    assert cut.framework == "megatron" and cut.gzip_truncated and len(cut.iters) >= 1


def test_inconsistent_logs_are_refused(tmp_path, capsys):
    f = write(tmp_path, megatron_log(megatron_args(**L70), [15000.0] * 3))
    assert "world_size is 64" in run_err(capsys, ["check", f, "--hardware", "h100-sxm", "--gpus", "32"])
    text = megatron_log(megatron_args(**L70), [15000.0] * 3).replace(
        "global batch size:   128", "global batch size:   256", 1
    )
    assert "varies in the log" in run_err(
        capsys, ["check", write(tmp_path, text, "ramp.log"), "--hardware", "h100-sxm"]
    )
    bad = megatron_log(megatron_args(**{**L70, "data_parallel_size": 4}), [15000.0] * 3)
    assert "data_parallel_size" in run_err(capsys, ["check", write(tmp_path, bad, "dp.log"), "--hardware", "h100-sxm"])
    assert "file not found" in run_err(capsys, ["check", str(tmp_path / "nope.log"), "--hardware", "h100-sxm"])
    assert "NAME=VALUE" in run_err(capsys, ["check", f, "--hardware", "h100-sxm", "--arg", "tp"])


def test_nemo_progress_bar_with_args(tmp_path, capsys):
    # NeMo 2 Lightning progress bar: step timing per refresh, \r-separated; the layout comes from --arg
    bar = "".join(
        f"Epoch 0: : {i}it [00:10, reduced_train_loss=6.1, global_step={i}.0, consumed_samples={i * 128}.0, "
        f"train_step_timing in s=15.900]\r"
        for i in range(1, 40)
    )
    f = write(tmp_path, bar)
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm"])
    assert out["status"] == "measured" and out["measured"]["step_s"] == pytest.approx(15.9)
    assert "a NeMo log states neither" in out["not_predicted"]
    # Lightning's bar numbers (tqdm format_num padded to 5 characters: 9.000, 19.00, 1e+3) and a negative time
    bar2 = "".join(
        f"Epoch 0: 50%|#####| {n}/2000 [00:10<00:10, global_step={g}, train_step_timing in s={t}]\r"
        for n, g, t in ((10, "9.000", "15.90"), (20, "19.00", "-12.7"), (1001, "1e+3", "15.80"))
    )
    log = parse_text(bar2)
    assert list(log.iters) == [9, 19, 1000] and list(log.step_s) == [15.9, -12.7, 15.8]
    sets = [f"{k}={v}" for k, v in megatron_args(**L70).items()] + ["vocab_size=128256"]
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm", *sum((["--arg", s] for s in sets), [])])
    assert out["framework"] == "nemo" and out["measured"]["step_s"] == pytest.approx(15.9)
    assert out["measured"]["tflops_per_gpu"] is None  # the progress bar prints no TFLOP/s
    # --model that disagrees with the given shape is used, and said so
    out = run_json(
        capsys, ["check", f, "--hardware", "h100-sxm", "--model", "llama3-8b", *sum((["--arg", s] for s in sets), [])]
    )
    assert out["model"] == "llama3-8b" and any("differs from the dump's shape" in n for n in out["notes"])


# ---- torchtitan -----------------------------------------------------------------------------------


def test_torchtitan_log(tmp_path, capsys):
    tps = [3000.0, 6000.0, 6500.0, 6550.0, 6520.0, 6480.0]
    f = write(tmp_path, torchtitan_log(torchtitan_config(), LLAMA3_8B_TT_ARGS, (["dp_shard"], [8]), tps, 1, 8, 8192))
    out = run_json(capsys, ["check", f])
    assert out["framework"] == "torchtitan" and out["hardware"] == "h100-sxm"
    assert out["model"] == "llama3-8b"  # FFN 4096 -> int(2*4*4096/3)=10922 x1.3 -> 14198 -> 14336
    assert out["layout"]["fsdp"] and out["layout"]["dp"] == 8 and out["layout"]["recompute"] == "selective"
    m = out["measured"]
    # steps 1 and 10 are warm-up; tps is tokens/s per device (metrics.py), so its median is the measured
    # throughput, and the step time is gbs x seq / (tps x gpus)
    tps_med = np.median([6500, 6550, 6520, 6480])
    assert m["used"] == 4 and m["tokens_per_s_per_gpu"] == pytest.approx(tps_med, rel=1e-12)
    assert m["step_s"] == pytest.approx(8 * 8192 / (tps_med * 8), rel=1e-12) and m["basis"] == "tps"
    assert m["mem_max_reserved_bytes"] == pytest.approx(60.5 * 2**30)
    assert out["framework_flops"]["convention"] == "full"


def test_torchtitan_float8_tp_and_missing_config(tmp_path, capsys):
    cfg = torchtitan_config(tp=2, shard=4, ac="full", converters=["float8"])
    f = write(tmp_path, torchtitan_log(cfg, LLAMA3_8B_TT_ARGS, (["dp_shard", "tp"], [4, 2]), [5000.0] * 4, 1, 4, 8192))
    out = run_json(capsys, ["check", f])
    assert out["precision"] == "fp8" and out["layout"]["tp"] == 2 and out["layout"]["recompute"] == "full"
    # without the job config ('Running with args' is printed only with job.print_args) the start-up lines state
    # the same run: the mesh (tp 2), the float8 line, the activation-checkpointing line
    text = torchtitan_log(cfg, LLAMA3_8B_TT_ARGS, (["dp_shard", "tp"], [4, 2]), [5000.0] * 4, 1, 4, 8192)
    no_cfg = "\n".join(l for l in text.splitlines() if "Running with args" not in l)
    got = run_json(capsys, ["check", write(tmp_path, no_cfg, "nocfg.log")])
    assert got["status"] == "predicted" and (got["precision"], got["layout"]) == (out["precision"], out["layout"])
    # with neither the job config nor the start-up lines, the missing layout is named and the tps still measured
    steps_only = "\n".join(l for l in text.splitlines() if "step:" in l)
    got = run_json(capsys, ["check", write(tmp_path, steps_only, "steps.log")])
    assert got["status"] == "measured" and got["measured"]["tokens_per_s_per_gpu"] == pytest.approx(5000.0)
    assert "Running with args" in got["not_predicted"] and "activation_checkpoint.mode" in got["not_predicted"]


# ---- round trip through validation/runs.csv ----------------------------------------------------------

ROUND_TRIP_ROW = "dgxc250401-l3-70b-h100-64-bf16"


def _round_trip_log(tmp_path, row: dict, res, banner: str = "") -> str:
    """A Megatron-LM log of `row`: its layout, the recompute validate used, and the stack switches its preset
    sets, stated in the argument dump as Megatron-LM names them."""
    from perfmodel.analysis.validate import row_stack_spec
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.model import load_model

    inferred = res.verdict.split("recompute=")[1].split(" ")[0] if "recompute=" in res.verdict else None
    spec = row_stack_spec(
        row, data_dir("validation"), load_model(row["model"]), load_hardware(row["hardware"]), row["precision"]
    )
    f = spec.features
    assert f.tp_overlap in ("userbuffers", "none") and f.fsdp in ("zero1", "none")  # what a dump can state
    gpus, gbs, seq = int(row["gpus"]), int(row["global_batch"]), int(row["seq_len"])
    tp, pp, cp, vp = (int(row[k] or 1) for k in ("tp", "pp", "cp", "vp"))
    step_ms = gbs * seq / (float(row["tokens_per_s_per_gpu"]) * gpus) * 1e3
    fp8 = (
        {}
        if row["precision"] == "bf16"
        else {  # Megatron-LM --fp8-format / --fp8-recipe names
            "fp8": "hybrid",
            "fp8_recipe": {"current": "tensorwise", "delayed": "delayed", "mxfp8": "mxfp8", "blockwise": "blockwise"}[
                f.fp8_recipe
            ],
        }
    )
    a = megatron_args(
        **fp8,
        tensor_model_parallel_size=tp,
        pipeline_model_parallel_size=pp,
        context_parallel_size=cp,
        virtual_pipeline_model_parallel_size=vp if vp > 1 else None,
        world_size=gpus,
        data_parallel_size=gpus // (tp * pp * cp),
        global_batch_size=gbs,
        seq_length=seq,
        micro_batch_size=int(row["micro_batch"] or 1),
        recompute_granularity=inferred,
        tp_comm_overlap=f.tp_overlap == "userbuffers",
        overlap_grad_reduce=f.dp_grad_reduce_overlap,
        overlap_param_gather=f.dp_param_gather_overlap,
        sequence_parallel=f.sequence_parallel,
        use_distributed_optimizer=f.fsdp == "zero1",
    )
    return write(tmp_path, banner + megatron_log(a, [step_ms * 1.3] + [step_ms] * 5), f"{row['run_id']}.log")


def test_round_trip_with_validate(tmp_path, capsys):
    """A log written for one measured row, checked with that row's preset (--stack), gives the prediction
    `validate` gives that row; its --csv row (with `stack` and `stack_set` cells) validates to the same
    prediction and measurement."""
    row = next(r for r in read_csv(data_dir("validation") / "runs.csv") if r["run_id"] == ROUND_TRIP_ROW)
    res = validate_rows([row], data_dir("validation")).results[0]
    assert res.stack == "dgxc-25.04"
    f = _round_trip_log(tmp_path, row, res)
    out_csv = tmp_path / "run.csv"
    out = run_json(
        capsys,
        ["check", f, "--hardware", row["hardware"], "--csv", str(out_csv), "--run-id", "rt", "--stack", res.stack],
    )
    assert out["stack"] == res.stack and out["stack_why"] == "--stack"
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(res.predicted, rel=1e-12)
    assert out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(float(row["tokens_per_s_per_gpu"]), rel=1e-3)
    with open(out_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    inferred = res.verdict.split("recompute=")[1].split(" ")[0] if "recompute=" in res.verdict else None
    assert len(rows) == 1 and rows[0]["model"] == "llama3-70b" and rows[0]["recompute"] == (inferred or "none")
    assert rows[0]["stack"] == res.stack and rows[0]["stack_set"].split(";") == out["stack_set"]
    v = run_json(capsys, ["validate", str(out_csv)])
    assert v["predicted"] == 1 and v["per_row"][0]["predicted"] == pytest.approx(res.predicted, rel=1e-12)
    assert v["per_row"][0]["measured"] == pytest.approx(
        out["measured"]["tokens_per_s_per_gpu"], abs=0.005
    )  # CSV: 2 decimals
    assert math.isclose(v["per_row"][0]["error"], out["gap"], abs_tol=1e-5)


NEMO_BANNER = "\n====================\n== NeMo Framework ==\n====================\n\nNVIDIA Release {} (build 1)\n\n"


def test_container_banner_names_the_preset(tmp_path, capsys):
    """A NeMo container's banner ('== NeMo Framework ==', 'NVIDIA Release 25.09 (build N)', the NGC entrypoint
    banner) names the release: without --stack, check predicts with that release's preset, exactly as
    validate does for a NeMo 25.09 row of runs.csv; a release no preset describes takes the nearest release's."""
    rows = read_csv(data_dir("validation") / "runs.csv")
    row = next(r for r in rows if r["run_id"] == "mb2509-l3-8b-b200-8-fp8")
    res = validate_rows([row], data_dir("validation")).results[0]
    assert res.stack == "nemo-25.09"
    f = _round_trip_log(tmp_path, row, res, NEMO_BANNER.format("25.09"))
    out = run_json(capsys, ["check", f, "--hardware", row["hardware"], "--model", row["model"]])
    assert out["stack"] == "nemo-25.09" and "NeMo 25.09" in out["stack_why"]
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(res.predicted, rel=1e-12)
    old = write(tmp_path, NEMO_BANNER.format("23.11") + megatron_log(megatron_args(**L70), [15000.0] * 4), "old.log")
    out = run_json(capsys, ["check", old, "--hardware", "h100-sxm"])
    # a release with no preset of its own: the nearest release that has one, said so (issue 26)
    assert out["stack"] == "nemo-megatron-24.05" and "nearest release" in out["stack_why"]


def test_stated_switches_set_the_stack(tmp_path, capsys):
    """What the dump states overrides the preset, one feature per Megatron-LM field; a field the dump does
    not print leaves the preset's value (and says so)."""
    a = megatron_args(
        **L70,
        tp_comm_overlap=False,
        overlap_grad_reduce=False,
        overlap_param_gather=True,
        use_distributed_optimizer=False,
        accumulate_allreduce_grads_in_fp32=False,
        cuda_graph_impl="transformer_engine",
        cuda_graph_scope="['attn', 'mlp']",
        attention_backend="AttnBackend.unfused",
        recompute_granularity="selective",
        recompute_modules="['core_attn', 'mlp']",
    )
    out = run_json(
        capsys,
        [
            "check",
            write(tmp_path, megatron_log(a, [15000.0] * 4)),
            "--hardware",
            "h100-sxm",
            "--stack",
            "nemo-25.11",
            "--stack-set",
            "fusions=none",
        ],
    )
    got = {f["feature"]: (f["value"], f["from"]) for f in out["stack_features"]}
    assert got["tp_overlap"] == ("none", "log") and got["dp_grad_reduce_overlap"] == (False, "log")
    assert got["dp_param_gather_overlap"] == (True, "log") and got["fsdp"] == ("none", "log")
    assert got["main_grad_precision"] == ("bf16", "log") and got["grad_reduce_precision"] == ("bf16", "log")
    assert got["cuda_graphs"] == ("per_layer", "log") and got["attention_kernel"] == ("unfused", "log")
    assert got["recompute_modules"] == (["core_attn", "mlp"], "log")
    assert got["fusions"] == ("none", "--stack-set") and got["pipeline_schedule"][1] == "preset"
    assert out["stack_set"][-1] == "fusions=none"  # the command's own --stack-set comes last and wins
    lay = api.Layout(gpus=64, gbs=128, seq=8192, tp=4, pp=4, vp=5, cp=2, recompute="selective")
    p = api.predict("llama3-70b", "h100-sxm", lay, "bf16", stack="nemo-25.11", stack_set=tuple(out["stack_set"]))
    assert out["predicted"]["tokens_per_s_per_gpu"] == float(p.tokens_per_s_per_gpu[0])
    # overlap off is a what-if that switches off only what is still on
    from perfmodel.analysis.logcheck import NO_OVERLAP

    w = next(w for w in out["what_ifs"] if w["kind"] == "overlap")
    still_on = [x for x in NO_OVERLAP if str(got[x.split("=")[0]][0]).lower() != x.split("=")[1]]
    assert "dp_param_gather_overlap=false" in still_on and "tp_overlap=none" not in still_on
    assert w["stack_set"] == out["stack_set"] + still_on and "tp_overlap=none" not in w["cause"]


def test_megatron_bridge_lines_with_args_given(tmp_path, capsys):
    """Megatron-Bridge (train_utils.py @031e7de) prints the iteration line with a timestamp without
    microseconds and memory in GB, and no Megatron-LM argument dump: every field it lacks is named, and
    given with --arg the run checks like the Megatron-LM one."""
    lines = [
        iteration_line(it, 100, 128, ms, 410.0, stamp="2026-11-30 10:00:00")
        for it, ms in ((10, 18000.0), (20, 15000.0), (30, 15100.0), (40, 14900.0))
    ]
    lines.insert(
        1,
        "[Rank 0] (after 10 iterations) memory (GB) | mem-max-allocated-gigabytes: 60.1 | "
        "mem-max-reserved-gigabytes: 66.0 | mem-alloc-retires: 0",
    )
    f = write(tmp_path, "\n".join(lines) + "\n")
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm"])
    assert out["status"] == "measured" and out["measured"]["step_s"] == pytest.approx(15.0)
    for name in ("tensor_model_parallel_size", "num_layers", "seq_length", "recompute_granularity", "world_size"):
        assert name in out["not_predicted"]
    sets = [f"{k}={v}" for k, v in megatron_args(**L70).items()] + ["vocab_size=128256"]
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm", *sum((["--arg", s] for s in sets), [])])
    assert out["model"] == "llama3-70b" and out["measured"]["used"] == 3
    assert out["measured"]["step_s"] == pytest.approx(15.0) and out["measured"][
        "mem_max_reserved_bytes"
    ] == pytest.approx(66e9)


# ---- bounded fuzzing: junk between the lines, random bytes, random block sizes ------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
_BASE = megatron_log(megatron_args(**L70), [15000.0, 14000.0, 14100.0, 14200.0], tflops=400.0, eval_at=[30])
_WHOLE = parse_text(_BASE)


@FUZZ
@given(st.binary(max_size=3000))
def test_random_bytes_never_raise(data):
    log = parse_blocks_of(data, 64)
    assert log.lines >= 0 and len(log.iters) == len(log.step_s) == len(log.event_after)


@FUZZ
@given(
    st.lists(
        st.tuples(
            st.integers(0, 10**6),
            st.binary(max_size=200).filter(
                lambda b: (
                    b"\n" not in b
                    and b"\r" not in b
                    and b" ." not in b
                    and not any(
                        w in b.lower()
                        for w in (
                            b"iteration",
                            b"arguments",
                            b"vocab",
                            b"checkpoint",
                            b"valid",
                            b"evaluating",
                            b"step:",
                            b"memory (",
                        )
                    )
                )
            ),
        ),
        max_size=20,
    ),
    st.integers(1, 5000),
)
def test_junk_lines_between_lines_change_nothing(junk, block):
    """Lines of junk (random bytes holding no marker word nor a 'name ... value' argument shape) inserted
    anywhere, read in any block size: the same dump and the same intervals."""
    lines = _BASE.encode().split(b"\n")
    for pos, j in junk:
        lines.insert(pos % len(lines), j)
    log = parse_blocks_of(b"\n".join(lines), block)
    assert list(log.iters) == list(_WHOLE.iters) and list(log.step_s) == list(_WHOLE.step_s)
    assert log.args == _WHOLE.args


def parse_blocks_of(data: bytes, block: int):
    from perfmodel.analysis.logparse import parse_blocks

    return parse_blocks(data[i : i + block] for i in range(0, max(len(data), 1), block))


def test_python_entry_point_is_the_json_document(tmp_path, capsys):
    from perfmodel.analysis.logcheck import check_log
    from perfmodel.commands import check as command

    f = write(tmp_path, megatron_log(megatron_args(**L70), [15000.0] * 4))
    assert check_log(f, "h100-sxm") == run_json(capsys, ["check", f, "--hardware", "h100-sxm"])
    assert command.check_log is check_log  # the name the docs use stays importable from the command module


def test_restart_with_a_new_dump_uses_the_last_one(tmp_path, capsys):
    """A job restarted with another layout appends a new argument dump: the last dump and only the
    intervals after it are the run checked."""
    first = megatron_log(
        megatron_args(**{**L70, "tensor_model_parallel_size": 8, "data_parallel_size": 1}), [20000.0] * 5
    )
    second = megatron_log(megatron_args(**L70), [16000.0, 15000.0, 15200.0, 15100.0])
    out = run_json(capsys, ["check", write(tmp_path, first + second), "--hardware", "h100-sxm"])
    assert out["layout"]["tp"] == 4
    assert out["measured"]["used"] == 3 and out["measured"]["step_s"] == pytest.approx(15.1)
    assert any("2 argument dumps" in n for n in out["notes"])


def test_torchtitan_compile_and_async_tp_pick_the_stack(tmp_path, capsys):
    """torchtitan with [compile] enable = true runs the torchtitan-2025-compile preset; AsyncTP stated in the job
    config (parallelism.enable_async_tensor_parallel) is tp_overlap=async_tp; FSDP2 from the shard degree."""
    tps = [3000.0, 6500.0, 6490.0, 6510.0, 6505.0, 6500.0]
    cfg = torchtitan_config(tp=2)
    out = run_json(
        capsys,
        [
            "check",
            write(
                tmp_path,
                torchtitan_log(cfg, LLAMA3_8B_TT_ARGS, (["dp_shard", "tp"], [4, 2]), tps, 1, 4, 8192),
                "eager.log",
            ),
        ],
    )
    assert out["stack"] == "torchtitan-2025" and "compile off" in out["stack_why"]
    assert "fsdp=fsdp2" in out["stack_set"] and "recompute=selective" in out["stack_set"]
    cfg = {
        **cfg,
        "compile": {"enable": True, "components": ["model", "loss"]},
        "parallelism": {**cfg["parallelism"], "enable_async_tensor_parallel": True},
    }
    out = run_json(
        capsys,
        [
            "check",
            write(
                tmp_path,
                torchtitan_log(cfg, LLAMA3_8B_TT_ARGS, (["dp_shard", "tp"], [4, 2]), tps, 1, 4, 8192),
                "compiled.log",
            ),
        ],
    )
    assert out["stack"] == "torchtitan-2025-compile" and "tp_overlap=async_tp" in out["stack_set"]
    lay = api.Layout(gpus=8, gbs=4, seq=8192, tp=2, fsdp=True, recompute="selective")
    p = api.predict(
        "llama3-8b", "h100-sxm", lay, "bf16", stack="torchtitan-2025-compile", stack_set=tuple(out["stack_set"])
    )
    assert out["predicted"]["tokens_per_s_per_gpu"] == float(p.tokens_per_s_per_gpu[0])


def test_bad_stack_flags_are_one_error(tmp_path, capsys):
    f = write(tmp_path, megatron_log(megatron_args(**L70), [15000.0] * 4))
    assert "--stack: nemo-25.1: unknown stacks id (did you mean 'nemo-25.11'?)" in run_err(
        capsys, ["check", f, "--hardware", "h100-sxm", "--stack", "nemo-25.1"]
    )
    assert "--stack-set: tp_overlaps: unknown stack feature (did you mean 'tp_overlap'?)" in run_err(
        capsys, ["check", f, "--hardware", "h100-sxm", "--stack-set", "tp_overlaps=none"]
    )


def test_megatron_cross_entropy_from_the_dump():
    # Megatron's language_module.compute_language_model_loss: only cross_entropy_fusion_impl 'te' keeps the
    # bf16 logits alone; the unfused loss and the 'native' fused one work in fp32
    from perfmodel.analysis.logrun import _Fields, megatron_stack_sets

    ce = lambda **a: megatron_stack_sets(_Fields({k: str(v) for k, v in a.items()}, {}), "none", "bf16", [])
    assert ce(cross_entropy_loss_fusion=True, cross_entropy_fusion_impl="te")["cross_entropy"][0] == "te"
    assert ce(cross_entropy_loss_fusion=True, cross_entropy_fusion_impl="native")["cross_entropy"][0] == "fp32"
    assert ce(cross_entropy_loss_fusion=True)["cross_entropy"][0] == "fp32"
    assert ce(cross_entropy_loss_fusion=False, cross_entropy_fusion_impl="te")["cross_entropy"][0] == "fp32"
    assert "cross_entropy" not in ce(sequence_parallel=True)


# ---- issue 27: the logs people actually have (one test per bullet of the issue) ------------------------------

L8B = dict(  # Llama 3 8B (models/llama3-8b.toml) as Megatron-LM prints it, 8 GPUs, data parallel
    num_layers=32,
    hidden_size=4096,
    ffn_hidden_size=14336,
    num_attention_heads=32,
    num_query_groups=8,
    world_size=8,
    data_parallel_size=8,
    global_batch_size=64,
    seq_length=8192,
    sequence_parallel=False,
    tp_comm_overlap=False,
)


def test_what_the_log_measured_is_reported_without_prediction_inputs(tmp_path, capsys):
    """Issue 27 bullet 1: a prediction input missing (no hardware named, no job config) still reports what the log
    measured, with the prediction "not predicted: missing X (give ...)", exit 0 and status "measured"; a run that
    stopped before its first iteration says so in one line."""
    f = write(tmp_path, megatron_log(megatron_args(**L70), [19000.0] + [15000.0] * 5, tflops=365.4))
    out = run_json(capsys, ["check", f])
    m = out["measured"]
    assert out["status"] == "measured" and m["step_s"] == pytest.approx(15.0) and m["tflops_per_gpu"] == 365.4
    assert m["tokens_per_s_per_gpu"] == pytest.approx(128 * 8192 / (15.0 * 64))
    assert out["not_predicted"].startswith("not predicted: missing hardware") and "--hardware" in out["not_predicted"]
    assert main(["check", f]) == 0 and "not predicted: missing hardware" in capsys.readouterr().out.replace("\n", " ")
    # torchtitan step lines alone (an excerpt: no start-up lines): tps is tokens/s per GPU, the step needs the batch
    tt = "\n".join(
        torchtitan_step(s, t, t * 4.8e10 / 1e12, 40.0)
        for s, t in ((1, 3000.0), (10, 6400.0), (20, 6540.0), (30, 6500.0))
    )
    out = run_json(capsys, ["check", write(tmp_path, tt + "\n", "excerpt.log")])
    assert out["status"] == "measured" and out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(6520.0)
    assert out["measured"]["step_s"] is None and "needs the global batch" in out["measured"]["missing"][0]
    # a Megatron-LM run that crashed before iteration 1: its dump, the error, torchrun's summary
    crash = args_dump(megatron_args(**L8B)) + [
        "[rank0]: torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB.",
        *torchrun_failure(),
    ]
    f = write(tmp_path, "\n".join(crash) + "\n", "crash.log")
    out = run_json(capsys, ["check", f, "--hardware", "mi300x"])
    assert out["status"] == "no_iteration" and "OutOfMemoryError" in out["summary"]
    assert main(["check", f]) == 0
    text = capsys.readouterr().out
    assert len(text.strip().splitlines()) == 1 and "the run logged no iteration: it stopped before step 1" in text


def test_nemo2_progress_printer_lines(tmp_path, capsys):
    """Issue 27 bullet 2: NeMo 2's default printer ('Training epoch 0, iteration 9/... | train_step_timing in s:
    ...', ProgressPrinter @8cfedd7), each line the mean over the print interval; the world size from the rank-0
    banner; with the layout given with --arg, predicted."""
    steps = [19.5] + [16.4, 16.5, 16.3, 16.45, 16.38, 16.42]
    f = write(tmp_path, nemo_log(steps, gbs=128, world=8, interval=10, tflops=402.0))
    out = run_json(capsys, ["check", f])
    m = out["measured"]
    assert out["framework"] == "nemo" and m["intervals"] == 7 and m["dropped_warmup"] == 1
    assert m["step_s"] == pytest.approx(np.median(steps[1:])) and m["tflops_per_gpu"] == 402.0
    assert m["tokens_per_s_per_gpu"] is None and "sequence length" in m["missing"][0]  # NeMo prints no seq
    sets = [f"{k}={v}" for k, v in megatron_args(**{**L8B, "global_batch_size": 128}).items() if k != "world_size"]
    sets.append("vocab_size=128256")
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm", *sum((["--arg", s] for s in sets), [])])
    assert out["status"] == "predicted" and out["model"] == "llama3-8b" and out["layout"]["gpus"] == 8
    assert out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(128 * 8192 / (np.median(steps[1:]) * 8))


def test_torchtitan_before_tflops_and_with_mfu_na(tmp_path, capsys):
    """Issue 27 bullet 3: an early-2025 torchtitan log (no tflops field, 'Training starts at step 1, with local
    batch size 1, global batch size 8, sequence length 8192', 'Applied selective activation checkpointing', no job
    config) is read and, its device named, predicted with no hint; lines with 'mfu: N/A' (FP8/MX) are read too."""
    tps = [3100.0, 7026.0, 7031.0, 7012.0, 7040.0, 7020.0]
    out = run_json(capsys, ["check", write(tmp_path, torchtitan_log_2025(tps), "h200.log")])
    assert out["status"] == "predicted" and out["hardware"] == "h200-sxm" and out["model"] == "llama3-8b"
    lay = out["layout"]
    assert (lay["gbs"], lay["seq"], lay["mbs"], lay["fsdp"], lay["recompute"]) == (8, 8192, 1, True, "selective")
    m = out["measured"]
    assert m["tokens_per_s_per_gpu"] == pytest.approx(np.median(tps[2:])) and m["tflops_per_gpu"] is None
    assert m["mfu_framework"] == pytest.approx(0.4115)
    feats = {f["feature"]: f for f in out["stack_features"]}
    assert feats["recompute"]["from"] == "log" and "Applied selective" in feats["recompute"]["how"]
    # HEAD: 'mfu: N/A' with float8 on; tflops read, no MFU
    cfg = torchtitan_config(converters=["float8"])
    text = torchtitan_log(cfg, LLAMA3_8B_TT_ARGS, (["dp_shard"], [8]), [], 1, 8, 8192)
    text += "".join(
        torchtitan_step_head(s, t, t * 4.8e10 / 1e12, None) + "\n"
        for s, t in ((1, 4000.0), (10, 9000.0), (20, 9100.0), (30, 9050.0))
    )
    out = run_json(capsys, ["check", write(tmp_path, text, "fp8.log")])
    assert out["precision"] == "fp8" and out["measured"]["used"] == 2 and out["measured"]["mfu_framework"] is None
    assert out["measured"]["tflops_per_gpu"] == pytest.approx(9075.0 * 4.8e10 / 1e12, abs=0.01)


def test_megatron_bridge_config_container_is_read(tmp_path, capsys):
    """Issue 27 bullet 3 (Bridge) and 4: Megatron-Bridge's printed ConfigContainer (model.num_layers,
    dataset.sequence_length, train.global_batch_size, ...) states the run; only what it cannot state (the GPU
    count, the hardware) is missing; values given with --arg are labelled so."""
    steps = [4100.0] + [3300.0, 3310.0, 3290.0, 3305.0, 3295.0]
    f = write(tmp_path, bridge_log(bridge_config(), steps, tflops=251.0), "bridge.log")
    out = run_json(capsys, ["check", f])
    assert out["status"] == "measured" and out["measured"]["tflops_per_gpu"] == 251.0
    assert [m.split(" (")[0] for m in out["missing"]] == ["hardware", "world_size"]
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm", "--gpus", "8", "--arg", "overlap_param_gather=False"])
    assert out["status"] == "predicted" and out["model"] == "log-model"
    lay = out["layout"]
    assert (lay["tp"], lay["dp"], lay["mbs"], lay["gbs"], lay["seq"]) == (1, 8, 2, 128, 8192)
    feats = {f["feature"]: f for f in out["stack_features"]}
    assert (
        feats["dp_grad_reduce_overlap"]["from"] == "log"
        and "ddp.overlap_grad_reduce" in feats["dp_grad_reduce_overlap"]["how"]
    )
    assert (
        feats["main_grad_precision"]["value"] == "fp32"
        and "ddp.grad_reduce_in_fp32" in feats["main_grad_precision"]["how"]
    )
    assert (feats["dp_param_gather_overlap"]["value"], feats["dp_param_gather_overlap"]["from"]) == (False, "--arg")
    assert out["given"] == ["overlap_param_gather"]
    # Megatron-Core's micro-batch count (128 / (2 x 8) = 8) gives the data-parallel size, so the GPU count
    f8 = write(tmp_path, bridge_log(bridge_config(), steps, tflops=251.0, microbatches=8), "bridge-m.log")
    got = run_json(capsys, ["check", f8, "--hardware", "h100-sxm"])
    assert got["status"] == "predicted" and got["layout"]["gpus"] == 8
    spec = api.load_model("llama3-8b")  # the shape read from the YAML: Llama 3.2 1B, tied embeddings
    assert out["model_name"] != spec.name and out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(
        128 * 8192 / (np.median(steps[1:]) / 1e3 * 8)
    )


def test_stated_switches_are_read_and_each_feature_has_one_source(tmp_path, capsys):
    """Issue 27 bullet 3 (switches): gradient_accumulation_fusion False and use_flash_attn are read (the latter sets
    no feature in a Megatron-Core model, and says so); a field given with --arg is 'from --arg', not 'from the log';
    every feature is listed once."""
    a = megatron_args(
        **L70, gradient_accumulation_fusion=False, use_flash_attn=True, attention_backend="AttnBackend.auto"
    )
    f = write(tmp_path, megatron_log(a, [15000.0] * 4))
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm", "--arg", "tp_comm_overlap=False"])
    feats = [x["feature"] for x in out["stack_features"]]
    assert len(feats) == len(set(feats))
    got = {x["feature"]: (x["value"], x["from"]) for x in out["stack_features"]}
    assert got["grad_accumulation_fusion"] == (False, "log") and got["tp_overlap"] == ("none", "--arg")
    assert any(r.startswith("use_flash_attn=True") for r in out["read_no_feature"])
    assert any(r.startswith("attention_backend=AttnBackend.auto") for r in out["read_no_feature"])
    from perfmodel.analysis.logcheck import stack_groups

    groups = dict(stack_groups(out))
    assert any(i.startswith("tp_overlap=none") for i in groups["from --arg"])
    assert not any(
        i.startswith("tp_overlap") for label, items in groups.items() if label != "from --arg" for i in items
    )


def test_attention_backend_unfused_is_transformer_engines_unfused_attention_at_no_dropout(tmp_path, capsys):
    # AttnBackend.unfused sets NVTE_UNFUSED_ATTN=1 (Megatron-Core language_module.py @core_v0.12.0): TE's
    # UnfusedDotProductAttention (te_unfused, priced without dropout) where TE's modules run at attention dropout 0;
    # at dropout 0.1 the nearest kernel is Megatron's unfused one (dropout mask in HBM); local is Megatron's own
    def kernel(**kw):
        a = megatron_args(**L70, **kw)
        out = run_json(capsys, ["check", write(tmp_path, megatron_log(a, [15000.0] * 4)), "--hardware", "h100-sxm"])
        (f,) = [f for f in out["stack_features"] if f["feature"] == "attention_kernel"]
        return f["value"], f["from"], f["how"]

    value, origin, how = kernel(attention_backend="AttnBackend.unfused", attention_dropout="0.0")
    assert (value, origin) == ("te_unfused", "log") and "attention_dropout=0.0" in how
    assert kernel(attention_backend="AttnBackend.unfused", attention_dropout="0.1")[0] == "unfused"
    assert kernel(attention_backend="AttnBackend.unfused")[0] == "unfused"  # dropout not printed: not assumed 0
    assert kernel(attention_backend="AttnBackend.local", attention_dropout="0.0")[0] == "unfused"
    assert kernel(attention_backend="AttnBackend.fused", attention_dropout="0.0")[0] == "cudnn"


def test_invalid_outlier_and_first_interval_are_left_out_with_a_word(tmp_path, capsys):
    """Issue 27 bullet 3 (NeMo): a negative step time (-12.71 s after 13.75 s), an outlier and the first interval
    (which averages from iteration 1) are left out, and the printed rule says which and why."""
    steps = [13.75, -12.71] + [0.45, 0.44, 0.46, 0.45] * 4 + [2.5, 0.45, 0.44]
    out = run_json(capsys, ["check", write(tmp_path, nemo_log(steps, gbs=32, world=8), "nemo.log")])
    m = out["measured"]
    assert (m["dropped_invalid"], m["dropped_outliers"]) == (1, 1) and m["step_s"] == pytest.approx(0.45)
    assert "-12.71 s at iteration 1" in m["rule"] and "2.5 s at iteration 18" in m["rule"]
    f = write(tmp_path, megatron_log(megatron_args(**L70), [19000.0] + [15000.0] * 4, every=10))
    m = run_json(capsys, ["check", f, "--hardware", "h100-sxm"])["measured"]
    assert m["dropped_warmup"] == 1 and "the first interval averaging from its first one" in m["rule"]
    assert main(["check", f, "--hardware", "h100-sxm"]) == 0
    # the rendered line wraps at 80 columns wherever the temporary path's length puts it (rich may break at the hyphen)
    printed = " ".join(re.sub(r"-\s*\n\s*", "-", capsys.readouterr().out).split())
    assert "left out 1 warm-up" in printed


def test_impossible_measurement_is_refused_as_validate_refuses_and_csv_agrees(tmp_path, capsys):
    """Issue 27 bullet 4: a step that implies an MFU above 100% is refused with validate's sentence, one line, exit
    2 (commit b0b7176's rule kept); `check --csv` writes no row that validate refuses (a layout the memory model
    cannot fit is predicted by both, the contradiction named)."""
    from perfmodel.analysis.checks import implausible_throughput
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.model import load_model

    f = write(tmp_path, megatron_log(megatron_args(**L70), [800.0] * 5), "fast.log")
    err = run_err(capsys, ["check", f, "--hardware", "h100-sxm"])
    why = implausible_throughput(
        load_model("llama3-70b"), load_hardware("h100-sxm"), 128 * 8192 / (0.8 * 64), 8192, "bf16"
    )
    assert why and err == f"error: {f}: measured: impossible: {why}"
    row = {
        "run_id": "x",
        "model": "llama3-70b",
        "hardware": "h100-sxm",
        "gpus": "64",
        "precision": "bf16",
        "seq_len": "8192",
        "global_batch": "128",
        "tp": "4",
        "pp": "4",
        "vp": "5",
        "cp": "2",
        "tokens_per_s_per_gpu": f"{128 * 8192 / (0.8 * 64)}",
    }
    assert why in validate_rows([row], data_dir("validation")).unsupported[0]["reason"]
    # a run the memory model cannot place (tp 1 on 64 GPUs of a 70B model): predicted, but validate leaves its row
    # out, so check --csv writes none
    a = megatron_args(
        **{
            **L70,
            "tensor_model_parallel_size": 1,
            "pipeline_model_parallel_size": 1,
            "virtual_pipeline_model_parallel_size": None,
            "context_parallel_size": 1,
            "data_parallel_size": 64,
            "use_distributed_optimizer": False,
        }
    )
    f = write(tmp_path, megatron_log(a, [18000.0] * 5), "nofit.log")
    out = run_json(capsys, ["check", f, "--hardware", "h100-sxm"])
    assert not out["predicted"]["fits"]  # predicted, and said not to fit
    # validate predicts a run that ran whatever the memory model says (issue 26: a memory contradiction, not a
    # refusal), so check --csv writes the row and validate scores it with the contradiction named
    assert main(["check", f, "--hardware", "h100-sxm", "--csv", str(tmp_path / "r.csv")]) == 0
    capsys.readouterr()
    rep = validate_rows(read_csv(tmp_path / "r.csv"), tmp_path)
    assert len(rep.results) == 1 and not rep.unsupported and rep.results[0].memory_contradiction
    assert out["status"] == "predicted"


def test_rocm_logs_and_the_mi300x_spec(tmp_path, capsys):
    """Issue 27 bullet 5: a hardware spec states an AMD generation (cdna3) and the catalog has mi300x; a ROCm
    Megatron-LM log (the fork's ' mem usages' field, the rocm/megatron-lm image) says which hardware it lacks and,
    given --hardware mi300x, is predicted with the band of all runs (no AMD run fitted the bands); a torchtitan
    log naming 'AMD Instinct MI300X' is predicted with no hint."""
    from perfmodel.specs.hardware import load_hardware

    hw = load_hardware("mi300x")
    assert (hw.generation, hw.peak("bf16"), hw.peak("fp8")) == ("cdna3", 1307.4e12, 2614.9e12)
    assert (hw.memory.hbm_bytes, hw.memory.hbm_bandwidth, hw.scale_up.domain_size) == (192e9, 5.3e12, 8)
    a = megatron_args(**L8B, microbatch_group_size_per_virtual_pipeline_stage=None)
    head = ["docker pull rocm/megatron-lm:v25.4"]  # the ROCm docs' image (ROCm/ROCm@e396b48 megatron-lm.rst)
    f = write(tmp_path, megatron_log(a, [12500.0] + [10100.0] * 5, tflops=310.5, mem_usages=0.5462, head=head))
    assert parse_file(f).args["microbatch_group_size_per_virtual_pipeline_stage"] == "None"  # 48 characters: no dots
    out = run_json(capsys, ["check", f])
    assert out["status"] == "measured" and out["measured"]["mem_usage_fraction"] == 0.5462
    assert "rocm/megatron-lm:v25.4" in out["not_predicted"] and "mi300x" in out["not_predicted"]
    out = run_json(capsys, ["check", f, "--hardware", "mi300x"])
    assert (
        out["status"] == "predicted" and out["hardware"] == "mi300x" and out["band"]["group"] in ("all", "unseen:dense")
    )
    assert any("no validation run of this hardware family" in n for n in out["notes"])
    tt = torchtitan_log(
        torchtitan_config(),
        LLAMA3_8B_TT_ARGS,
        (["dp_shard"], [8]),
        [2500.0] + [5200.0] * 5,
        1,
        8,
        8192,
        device="AMD Instinct MI300X",
    )
    out = run_json(capsys, ["check", write(tmp_path, tt, "tt-mi300x.log")])
    assert out["status"] == "predicted" and out["hardware"] == "mi300x"


@pytest.mark.parametrize("block", [157, 1 << 22])
def test_torchtitan_profiler_dumps_are_left_out(tmp_path, monkeypatch, block):
    """torchtitan with its profiler on ('Profiling active. Traces will be saved at ...', then 'Dumping profiler
    traces at step N' and 'Finished dumping profiler traces in S seconds', profiling.py @57387af): the interval
    after a dump holds the trace export and is left out, in any block size (the fast path after the first step)."""
    from log_helpers import PREFIX_25, torchtitan_step_2025

    import perfmodel.analysis.logparse as lp

    lines = torchtitan_log_2025([]).splitlines()
    lines.insert(1, PREFIX_25 + "Profiling active. Traces will be saved at ./outputs/profile_trace")
    for i, step in enumerate((1, 10, 20, 30, 40, 50)):
        lines.append(torchtitan_step_2025(step, 7000.0 - (2000.0 if step == 40 else 0.0), 41.0))
        if step == 30:
            lines.append(PREFIX_25 + "Dumping profiler traces at step 30")
            lines.append(PREFIX_25 + f"Finished dumping profiler traces in {1.23:.2f} seconds")
    monkeypatch.setattr(lp, "BLOCK", block)
    log = parse_file(write(tmp_path, "\n".join(lines) + "\n"))
    assert list(log.iters) == [1, 10, 20, 30, 40, 50] and list(log.event_after) == [0, 0, 0, 0, 1, 0]


def _maxtext_step(step: int, seconds: float, tps: float | None, ramp: bool = False) -> str:
    """MaxText's per-step line (src/maxtext/common/metric_logger.py @e591f30c _log_training_metrics; the fields of
    MaxText/train.py @cae41ec2), behind absl's log prefix; `tps` None: the line before cae41ec2 (no Tokens/s)."""
    head = "I0804 08:14:00.000000 140 metric_logger.py:196] " + ("[Rampup Batch Size Phase], " if ramp else "")
    parts = [f"completed step: {step}", f"seconds: {seconds:.3f}"]
    if not ramp:
        parts.append(f"TFLOP/s/device: {200.0:.3f}")
        if tps is not None:
            parts.append(f"Tokens/s/device: {tps:.3f}")
    parts += ["total_weights: 393216", f"loss: {9.0:.3f}"]
    return head + ", ".join(parts)


def test_a_maxtext_log_reports_what_it_measured(tmp_path, capsys):
    """MaxText logs one line per step ('completed step: N, seconds: S, TFLOP/s/device: T, Tokens/s/device: X, ...')
    and its config as 'Config param K: V' lines; check reports the median tokens/s/device after warm-up (step 0
    compiles), with the step time from the config's batch, and says that it does not build the run."""
    cfg = [f"Config param {k}: {v}" for k, v in (("per_device_batch_size", 2.0), ("max_target_length", 8192))]
    lines = cfg + ["Num_devices: 8, shape (1, 8, 1, 1)", _maxtext_step(0, 95.0, 170.0, ramp=False)]
    lines += [_maxtext_step(i, 2.7, 6000.0 + (i % 3)) for i in range(1, 31)]
    lines += ["I0804 completed profiler activation/deactivation step: 31, total_weights: 1, loss: 9.000"]
    f = write(tmp_path, "\n".join(lines) + "\n", "maxtext.log")
    out = run_json(capsys, ["check", f])
    m = out["measured"]
    assert out["framework"] == "maxtext" and out["status"] == "measured"
    assert m["tokens_per_s_per_gpu"] == pytest.approx(6001.0) and m["intervals"] == 31
    assert m["step_s"] == pytest.approx(2 * 8 * 8192 / (6001.0 * 8))  # gbs = per_device_batch_size x devices
    assert "decoder_block" in out["not_predicted"]  # no shape keys logged: the model is what is missing
    # before Tokens/s/device was logged: the step times, tokens/s from the config's batch
    old = cfg + ["Num_devices: 8, shape (1, 8, 1, 1)"] + [_maxtext_step(i, 2.5, None) for i in range(0, 20)]
    out = run_json(capsys, ["check", write(tmp_path, "\n".join(old) + "\n", "old.log")])
    assert out["measured"]["step_s"] == pytest.approx(2.5)
    assert out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(2 * 8192 / 2.5)
    # a ramp-up step is not an interval
    ramp = [_maxtext_step(i, 1.0, None, ramp=True) for i in range(5)]
    steady = [_maxtext_step(i, 2.5, 6000.0) for i in range(5, 25)]
    assert list(parse_text("\n".join(cfg + ramp + steady) + "\n").iters) == list(range(5, 25))


# the Config param keys of MaxText's Llama 2 7B A3 config (MaxText/configs/models/llama2-7b.yml and
# configs/a3/llama_2_7b/1vm.sh @cae41ec2), as pyconfig logs them after user_init (derived emb_dim ... mlp_dim)
MT_L2_7B = {
    "model_name": "llama2-7b",
    "decoder_block": "llama2",
    "emb_dim": 4096,
    "num_query_heads": 32,
    "num_kv_heads": 32,
    "head_dim": 128,
    "mlp_dim": 11008,
    "num_decoder_layers": 32,
    "vocab_size": 32000,
    "mlp_activations": "['silu', 'linear']",
    "logits_via_embedding": False,
    "num_experts": 1,
    "num_experts_per_tok": 1,
    "per_device_batch_size": 4.0,
    "max_target_length": 4096,
    "remat_policy": "minimal_flash",
    "attention": "cudnn_flash_te",
    "quantization": "",
    "dtype": "bfloat16",
    "num_slices": 1,
    **{
        f"{m}_{a}_parallelism": 1
        for m in ("ici", "dcn")
        for a in ("data", "fsdp", "fsdp_transpose", "sequence", "tensor", "autoregressive", "pipeline")
    },
    "ici_fsdp_parallelism": -1,
    "dcn_data_parallelism": -1,
}


def _maxtext_log(tmp_path: Path, devices: int, **over: object) -> str:
    cfg = {**MT_L2_7B, **over}
    cfg.setdefault("global_batch_size_to_train_on", int(float(cfg["per_device_batch_size"]) * devices))  # type: ignore[arg-type]
    lines = [f"Config param {k}: {v}" for k, v in sorted(cfg.items())] + [f"Num_devices: {devices}, shape (1, 8)"]
    lines += [_maxtext_step(i, 2.9, 11300.0) for i in range(0, 30)]
    return write(tmp_path, "\n".join(lines) + "\n", f"maxtext-{devices}.log")


def test_a_maxtext_config_is_the_run_check_predicts(tmp_path, capsys):
    """The run of a MaxText log comes from its Config param lines: the model from the shape keys (matched to the
    catalog), the mesh degrees with each -1 filled from the devices per slice and the slices, the global batch,
    remat_policy, attention and quantization; check's prediction is perfmodel's prediction of that run."""
    args8 = ["--hardware", "h100-sxm"]
    out = run_json(capsys, ["check", _maxtext_log(tmp_path, 8), "--hardware", "h100-sxm"])
    assert out["status"] == "predicted" and out["model"] == "llama2-7b" and out["stack"] == "maxtext-gpu-2024"
    lay = out["layout"]
    assert (lay["dp"], lay["tp"], lay["mbs"], lay["fsdp"], lay["recompute"]) == (8, 1, 4, True, "selective")
    assert {"attention_kernel=cudnn", "recompute_modules=layernorm", "hybrid_shard_group=none"} <= set(out["stack_set"])
    p = api.predict(
        "llama2-7b",
        "h100-sxm",
        api.Layout(gpus=8, gbs=32, seq=4096, mbs=4, fsdp=True, recompute="selective"),
        "bf16",
        stack="maxtext-gpu-2024",
        stack_set=tuple(out["stack_set"]),
    )
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(float(p.tokens_per_s_per_gpu[0]))
    # two slices of 8: FSDP inside a slice, data parallel across (the -1 of dcn_data filled with 2), TP 2 inside
    out = run_json(
        capsys,
        [
            "check",
            _maxtext_log(tmp_path, 16, num_slices=2, ici_fsdp_parallelism=-1, ici_tensor_parallelism=2),
            "--hardware",
            "h100-sxm",
        ],
    )
    lay = out["layout"]
    assert (lay["dp"], lay["tp"], lay["gbs"], lay["mbs"]) == (8, 2, 64, 8)
    assert "hybrid_shard_group=4" in out["stack_set"] and "fsdp=xla_fsdp" in out["stack_set"]
    # full remat, dot-product attention and fp8 (delayed scaling, Flax Fp8DotGeneralOp)
    out = run_json(
        capsys,
        [
            "check",
            _maxtext_log(tmp_path, 8, remat_policy="full", attention="dot_product", quantization="fp8"),
            "--hardware",
            "h100-sxm",
        ],
    )
    assert out["layout"]["recompute"] == "full" and out["precision"] == "fp8"
    assert {"attention_kernel=unfused", "fp8_recipe=delayed"} <= set(out["stack_set"])
    # the stage axis (ici_pipeline_parallelism): MaxText's circular pipeline as pyconfig resolves it, the
    # micro-batches of each of the gradient_accumulation_steps passes, the repeats as virtual stages, GPipe order
    for over, text, nmb in (
        ({"num_pipeline_microbatches": 4, "num_pipeline_repeats": 1}, "tp1 pp2 dp4 mbs2", 4),
        ({"num_pipeline_microbatches": -1, "num_pipeline_repeats": -1}, "tp1 pp2 vp16 dp4 mbs4", 2),
        (
            {"num_pipeline_microbatches": 4, "num_pipeline_repeats": 4, "gradient_accumulation_steps": 2},
            "vp4 dp4 mbs2",
            8,
        ),
    ):
        over = {"ici_pipeline_parallelism": 2, **over}
        over["global_batch_size_to_train_on"] = 32 * int(over.get("gradient_accumulation_steps", 1))
        out = run_json(capsys, ["check", _maxtext_log(tmp_path, 8, **over), "--hardware", "h100-sxm"])
        assert out["status"] == "predicted" and text in out["layout_text"] and out["micro_batches"] == nmb, over
        assert "pipeline_schedule=gpipe" in out["stack_set"]
    # PP + FSDP (sharding.md 'PP + FSDP/DP'): by default the sharded weights are gathered in every pipeline
    # iteration; pipeline_fsdp_ag_once / _per_repeat gather them once per pipeline call, so the step is shorter
    pp = {"ici_pipeline_parallelism": 2, "num_pipeline_microbatches": 4, "num_pipeline_repeats": 1}
    base = run_json(capsys, ["check", _maxtext_log(tmp_path, 8, **pp), *args8])
    assert "fsdp_gather=per_microbatch" in base["stack_set"], base["stack_set"]
    for mode in ("pipeline_fsdp_ag_once", "pipeline_fsdp_ag_per_repeat"):
        once = run_json(capsys, ["check", _maxtext_log(tmp_path, 8, **pp, **{mode: True}), *args8])
        assert {"fsdp_gather=per_step", "reshard_after_forward=false"} <= set(once["stack_set"]), mode
        assert once["predicted"]["step_time_s"] < base["predicted"]["step_time_s"]
    # with gradient accumulation the gathers run once per pipeline call: the uncounted ones are said
    acc = {**pp, "gradient_accumulation_steps": 2, "global_batch_size_to_train_on": 64, "pipeline_fsdp_ag_once": True}
    out = run_json(capsys, ["check", _maxtext_log(tmp_path, 8, **acc), *args8])
    assert any("1 gathers are not counted" in n for n in out["notes"]), out["notes"]
    # what perfmodel does not model is named, and the measurement still reported
    for over, word in (
        ({"ici_pipeline_parallelism": 2, "num_pipeline_microbatches": 3}, "not a multiple of the 2 stages"),
        ({"ici_pipeline_parallelism": 2, "num_pipeline_repeats": 3}, "does not divide the 32 layers"),
        ({"quantization": "int8"}, "quantization 'int8'"),
        ({"remat_policy": "custom"}, "remat_policy 'custom'"),
        ({"ici_autoregressive_parallelism": 2, "ici_fsdp_parallelism": 4}, "autoregressive=2"),
        ({"decoder_block": "gemma"}, "decoder_block 'gemma'"),
        ({"ici_fsdp_parallelism": 3}, "do not multiply to 8"),
    ):
        out = run_json(capsys, ["check", _maxtext_log(tmp_path, 8, **over), "--hardware", "h100-sxm"])
        assert out["status"] == "measured" and word in out["not_predicted"], over
    # the weights shard over fsdp x sequence (base.yml @cae41ec2 'embed' rule): 4 of the 8 data x context GPUs
    out = run_json(
        capsys,
        [
            "check",
            _maxtext_log(tmp_path, 8, ici_data_parallelism=2, ici_fsdp_parallelism=2, ici_sequence_parallelism=2),
            *args8,
        ],
    )
    assert (out["layout"]["cp"], out["layout"]["dp"]) == (2, 4) and "hybrid_shard_group=4" in out["stack_set"]
    # ... and over expert where the mesh has that axis (@91be8264b on): a Mixtral on fsdp 4 x expert 2 is sharded 8 ways
    mx = dict(decoder_block="mixtral", num_experts=8, num_experts_per_tok=2, mlp_dim=14336, num_kv_heads=8)
    out = run_json(
        capsys,
        ["check", _maxtext_log(tmp_path, 8, ici_fsdp_parallelism=4, ici_expert_parallelism=2, **mx), *args8],
    )
    assert out["status"] == "predicted" and "hybrid_shard_group=none" in out["stack_set"], out.get("not_predicted")
    # a mesh axis no table names is not modelled; a shape MaxText would refuse is one error naming why; the mesh
    # degrees can be given with --arg where the log has none
    out = run_json(capsys, ["check", _maxtext_log(tmp_path, 8, ici_foo_parallelism=2, ici_fsdp_parallelism=4), *args8])
    assert out["status"] == "measured" and "foo=2" in out["not_predicted"]
    assert "multiple of num_kv_heads (5)" in run_err(
        capsys, ["check", _maxtext_log(tmp_path, 8, num_kv_heads=5), *args8]
    )
    bare = {k: v for k, v in MT_L2_7B.items() if not k.endswith("_parallelism")}
    lines = [f"Config param {k}: {v}" for k, v in sorted({**bare, "global_batch_size_to_train_on": 32}.items())]
    lines += ["Num_devices: 8, shape (1, 8)"] + [_maxtext_step(i, 2.9, 11300.0) for i in range(30)]
    f = write(tmp_path, "\n".join(lines) + "\n", "bare.log")
    assert "ici_*_parallelism" in run_json(capsys, ["check", f, *args8])["not_predicted"]
    out = run_json(capsys, ["check", f, *args8, "--arg", "ici_fsdp_parallelism=8"])
    assert out["status"] == "predicted" and out["layout"]["fsdp"] is True
    # --model stands in for a shape the config does not state
    out = run_json(
        capsys,
        ["check", _maxtext_log(tmp_path, 8, decoder_block="gemma"), "--hardware", "h100-sxm", "--model", "llama2-7b"],
    )
    assert out["status"] == "predicted" and out["model_source"] == "--model llama2-7b"


def _composer_interval(batch: int, total: int, rate: float, world: int, tokens_per_batch: int) -> list[str]:
    """Composer's ConsoleLogger output for one logged batch (composer/loggers/console_logger.py @v0.16.4
    log_to_console: the progress header, then '\\n\\t Train {name}: {value:.4f}' per metric in the order they were
    logged; SpeedMonitor.batch_end's throughput metrics)."""
    metrics = {
        "time/batch": batch,
        "throughput/batches_per_sec": rate,
        "throughput/samples_per_sec": rate * 8.0,
        "throughput/device/batches_per_sec": rate / world,
        "throughput/device/samples_per_sec": rate * 8.0 / world,
        "throughput/tokens_per_sec": rate * tokens_per_batch,
        "throughput/device/tokens_per_sec": rate * tokens_per_batch / world,
    }
    body = [f"\t Train {k}: {v}" if isinstance(v, int) else f"\t Train {k}: {v:.4f}" for k, v in metrics.items()]
    return [f"[batch={batch}/{total}]:", *body]


def test_a_composer_log_reports_what_it_measured(tmp_path, capsys):
    """llm-foundry's trainer (Composer) logs SpeedMonitor's throughput per logged batch; check reports the median
    tokens/s/device after warm-up, the step time from the logged batches/s, the world size from the two rates, and
    says that it does not build the run. An evaluation drops the interval after it."""
    tpb = 512 * 2048
    lines = []
    for b in range(1, 31):
        lines += _composer_interval(b, 100, 0.5 if b != 20 else 0.2, 64, tpb)
        if b == 19:
            lines.append("[Eval batch=1/10] Eval on eval data")
    out = run_json(capsys, ["check", write(tmp_path, "\n".join(lines) + "\n", "composer.log")])
    m = out["measured"]
    assert out["framework"] == "composer" and out["status"] == "measured"
    assert m["tokens_per_s_per_gpu"] == pytest.approx(0.5 * tpb / 64, rel=1e-4)
    assert m["step_s"] == pytest.approx(2.0) and m["dropped_events"] == 1
    assert parse_text("\n".join(lines) + "\n").world_size == 64
    assert "Composer" in out["not_predicted"]


# llm-foundry's mpt-1b benchmark config (scripts/train/yamls/pretrain/mpt-1b.yaml @v0.6.0 with the benchmark's
# overrides) as log_config prints it: om.to_yaml of the resolved config, no closing line
MPT_1B_CONFIG = """max_seq_len: 2048
global_seed: 17
model:
  name: mpt_causal_lm
  init_device: meta
  d_model: 2048
  n_heads: 16
  n_layers: 24
  expansion_ratio: 4
  max_seq_len: ${max_seq_len}
  vocab_size: 50368
  attn_config:
    attn_impl: flash
optimizer:
  name: decoupled_adamw
  betas:
  - 0.9
  - 0.95
global_train_batch_size: 1536
device_train_microbatch_size: 12
precision: amp_bf16
fsdp_config:
  sharding_strategy: FULL_SHARD
  mixed_precision: DEFAULT
  activation_checkpointing: false
"""


def _composer_log(tmp_path: Path, config: str, prefix: str = "") -> str:
    lines = [f"{prefix}2024-01-06 10:00:00,000: rank0[1][MainThread]: INFO: llmfoundry.train: Logging config"]
    lines += [prefix + x for x in config.splitlines()]
    lines.append(f"{prefix}2024-01-06 10:00:01,000: rank0[1][MainThread]: INFO: composer.trainer: Starting training")
    for b in range(1, 31):
        lines += [prefix + x for x in _composer_interval(b, 100, 0.2, 128, 1536 * 2048)]
    return write(tmp_path, "\n".join(lines) + "\n", "foundry.log")


def test_the_maxtext_fixture_predicts_as_the_shipped_maxtext_row(capsys):
    """tests/fixtures/logs/maxtext-llama2-7b-a3.log states the run of MaxText's A3 Llama 2 7B one-VM script; check
    reads it to the same run, stack and prediction as validate gives the shipped row of that script."""
    ind = data_dir("validation") / "independent"
    log = str(Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "maxtext-llama2-7b-a3.log")
    out = run_json(capsys, ["check", log, "--hardware", str(ind / "hardware" / "gcp-a3-high.toml")])
    row = next(r for r in read_csv(ind / "maxtext-a3.csv") if r["run_id"] == "maxtext2404-l2-7b-h100-8-bf16")
    res = validate_rows([row], ind).results[0]
    assert out["stack"] == res.stack == "maxtext-gpu-2024"
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(res.predicted, rel=1e-9)
    assert out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(float(row["tokens_per_s_per_gpu"]), rel=0.01)


def test_an_llm_foundry_config_is_the_run_check_predicts(tmp_path, capsys):
    """llm-foundry prints its whole config ('Logging config', then om.to_yaml with no closing line) before training:
    check builds the MPT from model.*, the batch, precision, FSDP and attention from it and predicts on the
    llm-foundry preset. The MPT built equals the catalog file of the same benchmark model (its parameter count the
    table's NumParams), and check's prediction is perfmodel's prediction of that run."""
    for prefix in ("", "[rank0]:"):  # torchrun --tee prefixes every line, the config's too
        out = run_json(capsys, ["check", _composer_log(tmp_path, MPT_1B_CONFIG, prefix), "--hardware", "h100-sxm"])
        assert out["status"] == "predicted" and out["stack"] == "llm-foundry-2024", prefix
        lay = out["layout"]
        assert (lay["gpus"], lay["gbs"], lay["mbs"], lay["fsdp"], lay["recompute"]) == (128, 1536, 12, True, "none")
        assert {"attention_kernel=fa2", "fsdp=fsdp1", "grad_reduce_precision=fp32"} <= set(out["stack_set"])
    mpt = load_model(str(data_dir("validation") / "independent" / "models" / "repos-mpt-1b-s2048.json"))
    lay = api.Layout(gpus=128, gbs=1536, seq=2048, mbs=12, fsdp=True)
    p = api.predict(mpt, "h100-sxm", lay, "bf16", stack="llm-foundry-2024", stack_set=tuple(out["stack_set"]))
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(float(p.tokens_per_s_per_gpu[0]))
    assert param_counts(mpt).total == 1315950592
    # activation checkpointing is full recompute; SHARD_GRAD_OP keeps the parameters after the forward; PURE reduces
    # in bf16; amp_fp8 is Transformer Engine's delayed scaling
    cfg = (
        MPT_1B_CONFIG.replace("activation_checkpointing: false", "activation_checkpointing: true")
        .replace("FULL_SHARD", "SHARD_GRAD_OP")
        .replace("DEFAULT", "PURE")
        .replace("amp_bf16", "amp_fp8")
    )
    out = run_json(capsys, ["check", _composer_log(tmp_path, cfg), "--hardware", "h100-sxm"])
    assert out["layout"]["recompute"] == "full" and out["precision"] == "fp8"
    assert {"reshard_after_forward=false", "grad_reduce_precision=bf16", "fp8_recipe=delayed"} <= set(out["stack_set"])
    # what the config does not let perfmodel build is named, and the measurement is still reported
    for old, new, word in (
        ("mpt_causal_lm", "hf_causal_lm", "hf_causal_lm"),
        ("amp_bf16", "fp32", "'fp32'"),
        ("expansion_ratio: 4", "expansion_ratio: 4\n  ffn_config:\n    ffn_type: mptglu", "mptglu"),
    ):
        out = run_json(
            capsys, ["check", _composer_log(tmp_path, MPT_1B_CONFIG.replace(old, new)), "--hardware", "h100-sxm"]
        )
        assert out["status"] == "measured" and word in out["not_predicted"], old


# llm-foundry's Hugging Face pre-training config (scripts/train/yamls/pretrain/hf-llama-3.1-8B.yaml @8c8dd48f, the
# batch and FSDP keys of a multi-node run) as log_config prints it
HF_LLAMA_CONFIG = """variables:
  max_seq_len: 2048
  model_name: meta-llama/Meta-Llama-3.1-8B
max_seq_len: ${variables.max_seq_len}
model:
  name: hf_causal_lm
  init_device: meta
  pretrained_model_name_or_path: ${variables.model_name}
  pretrained: false
  use_auth_token: true
  use_flash_attention_2: true
global_train_batch_size: 1536
device_train_microbatch_size: 12
precision: amp_bf16
fsdp_config:
  sharding_strategy: FULL_SHARD
  mixed_precision: PURE
  activation_checkpointing: true
"""


def test_an_hf_causal_lm_config_is_its_catalog_model(tmp_path, capsys, monkeypatch):
    """hf_causal_lm names a Hub model (pretrained_model_name_or_path): check finds the catalog model that lists
    it (an '-Instruct' fine-tune too), predicts it with transformers' separate projections and the attention
    implementation llm-foundry resolves (use_flash_attention_2, else attn_implementation, else 'eager'), and
    equals perfmodel predict of that run; a LoRA run, a shape override, a name no catalog model lists and an MoE
    are named, their measurement still reported."""
    args = ["--hardware", "h100-sxm"]
    out = run_json(capsys, ["check", _composer_log(tmp_path, HF_LLAMA_CONFIG), *args])
    assert out["status"] == "predicted" and out["model"] == "llama3-8b" and out["stack"] == "llm-foundry-2024"
    assert {"attention_kernel=fa2", "projections=separate", "recompute=full"} <= set(out["stack_set"])
    lay = api.Layout(gpus=128, gbs=1536, seq=2048, mbs=12, fsdp=True, recompute="full")
    p = api.predict("llama3-8b", "h100-sxm", lay, "bf16", stack="llm-foundry-2024", stack_set=tuple(out["stack_set"]))
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(float(p.tokens_per_s_per_gpu[0]))
    # separate projections and an unfused attention are each slower than the fused / flash forms
    fused = [x for x in out["stack_set"] if x != "projections=separate"] + ["projections=fused"]
    p_fused = api.predict("llama3-8b", "h100-sxm", lay, "bf16", stack="llm-foundry-2024", stack_set=tuple(fused))
    assert float(p_fused.tokens_per_s_per_gpu[0]) > out["predicted"]["tokens_per_s_per_gpu"]
    cases = {
        "Meta-Llama-3.1-8B": ("Llama-2-7b-chat-hf", "llama2-7b", "attention_kernel=fa2"),
        "use_flash_attention_2: true": ("use_flash_attention_2: false", "llama3-8b", "attention_kernel=unfused"),
        "  use_auth_token: true": ("  attn_implementation: sdpa", "llama3-8b", "attention_kernel=fa2"),
    }
    fast = out["predicted"]["tokens_per_s_per_gpu"]
    for old, (new, model, kernel) in cases.items():
        cfg = HF_LLAMA_CONFIG.replace(old, new)
        if old == "use_flash_attention_2: true":
            cfg = cfg.replace("Meta-Llama-3.1-8B", "Meta-Llama-3.1-8B-Instruct")
        out = run_json(capsys, ["check", _composer_log(tmp_path, cfg), *args])
        assert out["status"] == "predicted" and out["model"] == model and kernel in out["stack_set"], old
        if kernel.endswith("unfused"):
            assert out["predicted"]["tokens_per_s_per_gpu"] < fast
    for old, new, word in (
        ("  pretrained: false", "  pretrained: false\n  peft_config:\n    peft_type: LORA\n    r: 16", "peft_config"),
        (
            "  pretrained: false",
            "  pretrained: false\n  config_overrides:\n    num_hidden_layers: 16",
            "num_hidden_layers",
        ),
        ("meta-llama/Meta-Llama-3.1-8B", "EleutherAI/pythia-1b", "EleutherAI/pythia-1b"),
        ("use_flash_attention_2: true", "attn_implementation: flex_attention", "flex_attention"),
    ):
        out = run_json(capsys, ["check", _composer_log(tmp_path, HF_LLAMA_CONFIG.replace(old, new)), *args])
        assert out["status"] == "measured" and word in out["not_predicted"], word
    from perfmodel.analysis import logrun

    moe = load_model("mixtral-8x7b").model_copy(update={"hf_names": ("mistralai/Mixtral-8x7B-v0.1",)})
    monkeypatch.setattr(logrun, "_catalog", lambda: [moe])
    cfg = HF_LLAMA_CONFIG.replace("meta-llama/Meta-Llama-3.1-8B", "mistralai/Mixtral-8x7B-v0.1")
    out = run_json(capsys, ["check", _composer_log(tmp_path, cfg), *args])
    assert out["status"] == "measured" and "MoE" in out["not_predicted"]


def test_an_llm_foundry_config_reads_as_pyyaml_prints_it(tmp_path, capsys):
    """The config as om.to_yaml (PyYAML) prints it: a plain string past 80 columns folds onto an indented next line,
    which is the string's and does not end the config; another rank's line between the config's lines (torchrun
    --tee) does not either. Without fsdp_config Composer trains with DDP. A shape llm-foundry would not build is
    named (never a traceback), a norm_type is read, and a micro-batch above a device's batch is that batch."""
    args = ["--hardware", "h100-sxm"]
    base = run_json(capsys, ["check", _composer_log(tmp_path, MPT_1B_CONFIG), *args])
    folded = "run_name: an experiment about long folded strings in the logged config of\n  llm-foundry runs\n"
    out = run_json(capsys, ["check", _composer_log(tmp_path, folded + MPT_1B_CONFIG), *args])
    assert out["status"] == "predicted" and out["layout"] == base["layout"]
    log = Path(_composer_log(tmp_path, MPT_1B_CONFIG, "[rank0]:"))
    text = log.read_text().replace("[rank0]:  n_heads: 16", "[rank1]:some other rank\n[rank0]:  n_heads: 16")
    out = run_json(capsys, ["check", write(tmp_path, text, "tee.log"), *args])
    assert out["status"] == "predicted" and out["layout"] == base["layout"]
    ddp = MPT_1B_CONFIG.split("fsdp_config:")[0]
    out = run_json(capsys, ["check", _composer_log(tmp_path, ddp), *args])
    assert out["layout"]["fsdp"] is False and {"fsdp=none", "grad_reduce_precision=fp32"} <= set(out["stack_set"])
    # DDP keeps every parameter and optimizer state
    assert out["predicted"]["memory_bytes_per_gpu"] > base["predicted"]["memory_bytes_per_gpu"]
    rms = MPT_1B_CONFIG.replace("  expansion_ratio: 4", "  expansion_ratio: 4\n  norm_type: low_precision_rmsnorm")
    out = run_json(capsys, ["check", _composer_log(tmp_path, rms), *args])
    assert out["status"] == "predicted" and out["predicted"] != base["predicted"]
    # 'auto' (Composer's auto micro-batching): the per-device batch, or the size its last OOM warning names
    auto = MPT_1B_CONFIG.replace("device_train_microbatch_size: 12", "device_train_microbatch_size: auto")
    out = run_json(capsys, ["check", _composer_log(tmp_path, auto), *args])
    assert out["status"] == "predicted" and out["layout"]["mbs"] == 12
    text = (
        Path(_composer_log(tmp_path, auto))
        .read_text()
        .replace(
            "[batch=1/100]:",
            "UserWarning: RuntimeWarning('CUDA out of memory detected. Train microbatch size will be decreased from 12 "
            "-> 6.')\nUserWarning: RuntimeWarning('CUDA out of memory detected. Train microbatch size will be decreased "
            "from 6 -> 3.')\n[batch=1/100]:",
            1,
        )
    )
    out = run_json(capsys, ["check", write(tmp_path, text, "auto.log"), *args])
    assert out["status"] == "predicted" and out["layout"]["mbs"] == 3
    big = MPT_1B_CONFIG.replace("device_train_microbatch_size: 12", "device_train_microbatch_size: 64")
    out = run_json(capsys, ["check", _composer_log(tmp_path, big), *args])
    assert out["status"] == "predicted" and out["layout"]["mbs"] == 12  # 1536 samples over 128 GPUs
    for old, new, word in (
        ("expansion_ratio: 4", "expansion_ratio: abc", "expansion_ratio 'abc'"),
        ("n_heads: 16", "n_heads: 15", "n_heads 15"),
        ("    attn_impl: flash", "    attn_impl: flash\n    kv_n_heads: 3", "kv_n_heads 3"),
        ("d_model: 2048", "d_model: -2048", "d_model=-2048"),
        ("  expansion_ratio: 4", "  expansion_ratio: 4\n  norm_type: groupnorm", "norm_type 'groupnorm'"),
        ("device_train_microbatch_size: 12\n", "", "not in the logged config"),
    ):
        out = run_json(capsys, ["check", _composer_log(tmp_path, MPT_1B_CONFIG.replace(old, new)), *args])
        assert out["status"] == "measured" and word in out["not_predicted"], word


def test_a_gpt_neox_interval_line_reads_as_megatrons():
    """GPT-NeoX's training_log (EleutherAI/gpt-neox@018b8a9e megatron/logging.py) puts ' samples/sec: {:.3f} |'
    before Megatron's ' iteration {:8d}/{:8d} |' and ' elapsed time per iteration (ms): {:.1f} |'."""
    line = " samples/sec: {:.3f} |".format(12.5) + " iteration {:8d}/{:8d} |".format(100, 143000)
    line += " elapsed time per iteration (ms): {:.1f} |".format(40960.0) + " learning rate: {:.3E} |".format(6e-4)
    line += " approx flops per GPU: 150.2TFLOPS | lm_loss: {:.6E} |".format(2.5)
    log = parse_text(line + "\n")
    assert log.framework == "megatron" and list(log.iters) == [100] and list(log.step_s) == [40.96]
