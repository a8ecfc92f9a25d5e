"""check on plain DeepSpeed logs (perfmodel/analysis/logparse.py DS_*, logrun.py deepspeed_run): the step from the
ThroughputTimer's samples/s, the batch, data-parallel size, precision and ZeRO stage from the engine's configuration
dump and optimizer line; the model, sequence and recompute given by the user."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_err, run_json
from log_helpers import deepspeed_log, ds_config, ds_tput_line, iteration_line

from perfmodel import api
from perfmodel.analysis.logparse import parse_text

RATES = [30.0, 32.0, 32.0, 31.0, 33.0, 32.0, 32.5, 31.5, 32.0, 32.0, 32.0, 31.8, 32.2, 32.0]
PREDICT = ["--hardware", "h100-sxm", "--model", "llama3-8b", "--arg", "seq_length=4096", "--arg", "recompute=none"]


def write(tmp_path: Path, text: str, name: str = "ds.log") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_a_deepspeed_log_is_measured_from_its_throughput_lines(tmp_path, capsys):
    """step = train_batch_size / CurrSamplesPerSec (the median of the stable intervals, the first after the start
    left out as warm-up); MaxMemAllocated in GiB; without the model, sequence and recompute the measurement is still
    reported and each missing input is named."""
    log = write(tmp_path, deepspeed_log(ds_config(), RATES))
    out = run_json(capsys, ["check", log, "--hardware", "h100-sxm"])
    assert out["framework"] == "deepspeed" and out["status"] == "measured"
    med = sorted(RATES[1:])[len(RATES[1:]) // 2]
    assert out["measured"]["step_s"] == pytest.approx(64 / med)
    assert out["measured"]["tokens_per_s_per_gpu"] is None
    assert out["measured"]["mem_max_allocated_bytes"] == pytest.approx(40.5 * 2**30)
    for word in ("seq_length", "recompute", "model"):
        assert word in out["not_predicted"], word
    out = run_json(capsys, ["check", log, "--hardware", "h100-sxm", "--arg", "seq_length=4096"])
    assert out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(64 * 4096 / (64 / med * 8))


def test_the_run_check_predicts_is_the_dump_s_layout_on_the_deepspeed_preset(tmp_path, capsys):
    """With --model, seq_length and recompute given: data parallel over world_size, micro-batch and batch from the
    dump, ZeRO stage 2 from the optimizer line, on megatron-deepspeed-2023; the prediction is api.predict's."""
    out = run_json(capsys, ["check", write(tmp_path, deepspeed_log(ds_config(), RATES)), *PREDICT])
    assert out["status"] == "predicted" and out["stack"] == "megatron-deepspeed-2023"
    lay = out["layout"]
    assert (lay["gpus"], lay["gbs"], lay["mbs"], lay["tp"], lay["fsdp"]) == (8, 64, 2, 1, False)
    assert "fsdp=zero2" in out["stack_set"] and "DeepSpeed 0.14.0" in out["stack_why"]
    p = api.predict(
        "llama3-8b",
        "h100-sxm",
        api.Layout(gpus=8, gbs=64, seq=4096, mbs=2),
        "bf16",
        stack="megatron-deepspeed-2023",
        stack_set=("fsdp=zero2",),
    )
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(float(p.tokens_per_s_per_gpu[0]))


@pytest.mark.parametrize(
    "cfg, optimizer, fsdp, layout_fsdp",
    [
        ({}, "BF16 optimizer", "bf16_optimizer", False),
        ({"zero_optimization_stage": 3, "zero_config": "stage=3"}, None, "zero3", True),
        (
            {"zero_optimization_stage": 1, "grad_accum_dtype": "fp32", "zero_config": "stage=1"},
            None,
            "bf16_optimizer",
            False,
        ),
        ({"zero_optimization_stage": 1, "zero_config": "stage=1"}, None, "zero1", False),
        ({"zero_optimization_stage": 0, "zero_config": "stage=0"}, None, "bf16_optimizer", False),
        ({"zero_optimization_stage": 0, "zero_config": "stage=0", "grad_accum_dtype": "bf16"}, None, "none", False),
        ({}, "fp16 optimizer with dynamic loss scale", "none", False),
    ],
)
def test_the_zero_stage_is_the_optimizer_the_engine_built(tmp_path, capsys, cfg, optimizer, fsdp, layout_fsdp):
    """The optimizer line where logged, else the dump's stage with engine.py's rule (bf16 + fp32 accumulation at
    stage 1 is BF16_Optimizer; bf16 at stage 0 accumulates in fp32 on 0.14.0 unless grad_accum_dtype says bf16);
    ZeRO-3 shards the parameters (the layout's fsdp)."""
    out = run_json(capsys, ["check", write(tmp_path, deepspeed_log(ds_config(**cfg), RATES, optimizer)), *PREDICT])
    assert out["status"] == "predicted"
    assert f"fsdp={fsdp}" in out["stack_set"] and out["layout"]["fsdp"] is layout_fsdp


def test_precision_offload_and_inconsistent_batches(tmp_path, capsys):
    """fp16 from fp16_enabled (or v0.17.1's float16_config); fp32 and ZeRO-Offload are named, not priced; a batch
    that is not micro-batch x accumulation x world_size, or a --gpus that is not world_size, is one error."""
    fp16 = ds_config(bfloat16_enabled=None, fp16_enabled=None, float16_config="enabled=True loss_scale=0.0")
    out = run_json(capsys, ["check", write(tmp_path, deepspeed_log(fp16, RATES, None)), *PREDICT])
    assert out["precision"] == "fp16"
    fp32 = ds_config(bfloat16_enabled=False)
    out = run_json(capsys, ["check", write(tmp_path, deepspeed_log(fp32, RATES, None)), *PREDICT])
    assert out["status"] == "measured" and "fp32" in out["not_predicted"]
    off = ds_config(
        zero_config="stage=2 offload_optimizer=DeepSpeedZeroOffloadOptimizerConfig(device='cpu', pin_memory=True)"
    )
    out = run_json(capsys, ["check", write(tmp_path, deepspeed_log(off, RATES)), *PREDICT])
    assert out["status"] == "measured" and "ZeRO-Offload" in out["not_predicted"]
    err = run_err(capsys, ["check", write(tmp_path, deepspeed_log(ds_config(train_batch_size=96), RATES)), *PREDICT])
    assert "train_batch_size" in err
    out = run_json(capsys, ["check", write(tmp_path, deepspeed_log(ds_config(), RATES)), *PREDICT, "--gpus", "16"])
    assert out["status"] == "measured" and "data-parallel size, is 8" in out["not_predicted"]


def test_what_a_deepspeed_log_cannot_lay_out_is_named(tmp_path, capsys):
    """Ulysses (v0.17+ prints world_size / sequence-parallel size as a float) and the pipeline engine
    ('CONFIG: micro_batches=') are not data parallel only: named, the measurement still reported."""
    out = run_json(capsys, ["check", write(tmp_path, deepspeed_log(ds_config(world_size="2.0"), RATES)), *PREDICT])
    assert out["status"] == "measured" and "Ulysses" in out["not_predicted"]
    pipe = deepspeed_log(ds_config(), RATES).replace(
        "[Rank 0] Creating", "[Rank 0] CONFIG: micro_batches=4 micro_batch_size=2\n[INFO] [Rank 0] Creating"
    )
    out = run_json(capsys, ["check", write(tmp_path, pipe), *PREDICT])
    assert out["status"] == "measured" and "PipelineEngine" in out["not_predicted"]


@pytest.mark.parametrize("form, note", [("0.7", "per micro-step"), ("0.5", "running average")])
def test_the_older_throughput_lines_are_read_in_order(tmp_path, capsys, form, note):
    """DeepSpeed 0.7 prints '{epoch}/{micro step}, RunningAvgSamplesPerSec=..., CurrSamplesPerSec=...' and 0.3-0.6
    '{epoch}/{micro step}, SamplesPerSec=...' (the average since the start): read in order, the step
    train_batch_size / the rate, with a note saying what the rate is."""
    cfg = ds_config(gradient_accumulation_steps=1, train_micro_batch_size_per_gpu=8)
    out = run_json(capsys, ["check", write(tmp_path, deepspeed_log(cfg, RATES, form=form)), *PREDICT])
    assert out["status"] == "predicted" and out["measured"]["intervals"] == len(RATES)
    assert out["measured"]["step_s"] == pytest.approx(64 / sorted(RATES[1:])[len(RATES[1:]) // 2])
    assert any(note in n for n in out["notes"])


def test_a_megatron_deepspeed_log_keeps_megatron_s_iteration_lines():
    """A Megatron-DeepSpeed log whose ThroughputTimer lines come before its first iteration line (no argument dump
    read): the iteration lines are the intervals, the ThroughputTimer's dropped."""
    lines = [ds_tput_line(10 * (i + 1), 40.0, 1) for i in range(3)]
    lines += [iteration_line(10 * (i + 1), 200, 64, 1500.0) for i in range(3, 15)]
    log = parse_text("\n".join(lines) + "\n")
    assert log.framework == "megatron"
    assert list(log.iters) == [10 * (i + 1) for i in range(3, 15)] and list(log.step_s) == [1.5] * 12
    assert log.mem_max_allocated == 0.0


def test_bf16_at_stage_0_follows_the_deepspeed_version(tmp_path, capsys):
    """get_data_types accumulates bf16 without ZeRO in fp32 (BF16_Optimizer) from v0.9.2 to v0.17.5, in bf16 from
    v0.17.6; with no version line, which one is named, not guessed."""
    cfg = ds_config(zero_optimization_stage=0, zero_config="stage=0")
    for version, want in (("0.17.5", "fsdp=bf16_optimizer"), ("0.18.0", "fsdp=none")):
        out = run_json(capsys, ["check", write(tmp_path, deepspeed_log(cfg, RATES, None, version=version)), *PREDICT])
        assert want in out["stack_set"], version
    text = "\n".join(x for x in deepspeed_log(cfg, RATES, None).splitlines() if "DeepSpeed info" not in x) + "\n"
    out = run_json(capsys, ["check", write(tmp_path, text), *PREDICT])
    assert out["status"] == "measured" and "grad_accum_dtype" in out["not_predicted"]


def test_a_pipeline_engine_log_with_its_stage_lines_is_the_pipelined_run(tmp_path, capsys):
    """PipelineModule's 'stage=N layers=M' lines give the stages: GPUs = world_size (the data-parallel size) x
    stages, the batch check over the data-parallel size, TrainSchedule's 1F1B with the gradients reduced after the
    flush; the prediction is api.predict's of that pipelined layout."""
    stages = "\n".join(f"stage={s} layers={9 if s in (0, 3) else 8}\n     0: EmbeddingPipe" for s in range(4))
    text = deepspeed_log(
        ds_config(world_size=2, train_batch_size=16, zero_optimization_stage=1),
        RATES,
        optimizer="torch.bfloat16 ZeRO stage 1 optimizer",
    )
    pipe = text.replace(
        "[Rank 0] Creating",
        "[Rank 0] CONFIG: micro_batches=4 micro_batch_size=2\n" + stages + "\n[INFO] [Rank 0] Creating",
    )
    # DeepSpeed refuses ZeRO-2 / 3 under its pipeline engine: such a log is contradictory, one error
    zero2 = pipe.replace("ZeRO stage 1 optimizer", "ZeRO stage 2 optimizer")
    assert "incompatible with pipeline parallelism" in run_err(capsys, ["check", write(tmp_path, zero2), *PREDICT])
    out = run_json(capsys, ["check", write(tmp_path, pipe), *PREDICT])
    assert out["status"] == "predicted"
    lay = out["layout"]
    assert (lay["gpus"], lay["pp"], lay["dp"], lay["gbs"]) == (8, 4, 2, 16)
    assert {"pipeline_schedule=1f1b", "dp_grad_reduce_overlap=false"} <= set(out["stack_set"])
    p = api.predict(
        "llama3-8b",
        "h100-sxm",
        api.Layout(gpus=8, gbs=16, seq=4096, pp=4, mbs=2),
        "bf16",
        stack="megatron-deepspeed-2023",
        stack_set=tuple(out["stack_set"]),
    )
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(float(p.tokens_per_s_per_gpu[0]))
