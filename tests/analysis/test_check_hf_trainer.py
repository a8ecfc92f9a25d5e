"""check on Hugging Face Trainer logs (perfmodel/analysis/logparse.py HF_*, logrun.py hf_trainer_run): the batch
from the 'Running training' banner, the measurement from the train metrics, the model from the logged 'Model
config' JSON (or the parameter count), precision, gradient checkpointing and FSDP from the TrainingArguments dump;
DeepSpeed under the Trainer read from DeepSpeed's own lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_json
from log_helpers import (
    LLAMA3_8B_HF_CONFIG,
    deepspeed_log,
    ds_config,
    ds_tput_line,
    hf_line,
    hf_trainer_log,
    hf_training_args,
    iteration_line,
)

from perfmodel import api
from perfmodel.analysis.logparse import parse_text

HW = ["--hardware", "h100-sxm"]
SEQ = ["--arg", "seq_length=4096"]


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "hf.log"
    p.write_text(text)
    return str(p)


def test_a_trainer_log_is_the_run_check_predicts(tmp_path, capsys):
    """Llama 3 8B from its logged config (the catalog model its _name_or_path names), 8 processes from 64 / (2 x 4),
    FSDP full shard, gradient checkpointing as full recompute, sdpa (transformers 4.44) as FA2; the measurement is
    train_batch / train_samples_per_second, the sequence train_tokens_per_second / train_samples_per_second; the
    prediction is api.predict's on llm-foundry-2024 with those features, and the band the unseen-stack one."""
    log = write(tmp_path, hf_trainer_log(LLAMA3_8B_HF_CONFIG, hf_training_args(), tokens_per_s=11.634 * 4096 / 8))
    out = run_json(capsys, ["check", log, *HW])
    assert out["framework"] == "hf_trainer" and out["status"] == "predicted"
    assert out["model"] == "llama3-8b" and out["stack"] == "llm-foundry-2024"
    assert out["measured"]["step_s"] == pytest.approx(64 / 11.634)
    lay = out["layout"]
    assert (lay["gpus"], lay["gbs"], lay["mbs"], lay["seq"], lay["fsdp"], lay["recompute"]) == (
        8,
        64,
        2,
        4096,
        True,
        "full",
    )
    sets = out["stack_set"]
    assert {"fsdp=fsdp1", "attention_kernel=fa2", "projections=separate", "recompute=full"} <= set(sets)
    assert "optimizer_launches=multi_tensor" in sets  # optim=adamw_torch: torch's foreach AdamW, not Composer's loop
    p = api.predict(
        "llama3-8b",
        "h100-sxm",
        api.Layout(gpus=8, gbs=64, seq=4096, mbs=2, fsdp=True, recompute="full"),
        "bf16",
        stack="llm-foundry-2024",
        stack_set=tuple(sets),
    )
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(float(p.tokens_per_s_per_gpu[0]))
    assert out["band"]["group"].startswith("unseen")


def test_what_the_trainer_log_states_decides_the_features(tmp_path, capsys):
    """DDP without fsdp, no checkpointing, transformers before 4.36 (eager attention); no config JSON: the catalog
    model with exactly the banner's parameter count, and none for a LoRA count; no TrainingArguments: the measurement
    alone, each missing input named."""
    old = dict(LLAMA3_8B_HF_CONFIG, transformers_version="4.34.0")
    args = hf_training_args(fsdp="[]", gradient_checkpointing=False)
    out = run_json(capsys, ["check", write(tmp_path, hf_trainer_log(old, args)), *HW, *SEQ])
    assert {"fsdp=none", "attention_kernel=unfused", "recompute=none", "dp_buckets=torch_ddp"} <= set(out["stack_set"])
    assert out["layout"]["fsdp"] is False
    # DDP on transformers 4.x: the weights loaded in float32, each forward under accelerate's torch.autocast
    assert "param_dtype=fp32_autocast" in out["stack_set"]
    # transformers 5 loads the checkpoint's dtype by default: not assumed, and said
    new = dict(LLAMA3_8B_HF_CONFIG, transformers_version="5.1.0")
    out5 = run_json(capsys, ["check", write(tmp_path, hf_trainer_log(new, args)), *HW, *SEQ])
    assert not any(s.startswith("param_dtype=") for s in out5["stack_set"])
    assert any("not logged (transformers >= 5" in n for n in out5["notes"])
    out = run_json(capsys, ["check", write(tmp_path, hf_trainer_log(None, hf_training_args())), *HW, *SEQ])
    assert out["status"] == "predicted" and out["model"] == "llama3-8b"
    assert "Number of trainable parameters" in out["model_source"]
    out = run_json(
        capsys, ["check", write(tmp_path, hf_trainer_log(None, hf_training_args(), params=4194304)), *HW, *SEQ]
    )
    assert out["status"] == "measured" and "4,194,304" in out["not_predicted"]
    out = run_json(capsys, ["check", write(tmp_path, hf_trainer_log(LLAMA3_8B_HF_CONFIG, None)), *HW])
    assert out["status"] == "measured" and out["measured"]["step_s"] == pytest.approx(64 / 11.634)
    for word in ("seq_length", "precision", "fsdp", "recompute"):
        assert word in out["not_predicted"], word


def test_deepspeed_under_the_trainer(tmp_path, capsys):
    """The Trainer running DeepSpeed: with the ThroughputTimer lines, they are the intervals (framework deepspeed)
    and the model and recompute come from the Trainer's lines; without them, the Trainer's metrics are, and the ZeRO
    stage still comes from DeepSpeed's optimizer line."""
    engine = deepspeed_log(ds_config(), []).rstrip("\n")  # the engine's start-up: version, optimizer, config dump
    tput = [ds_tput_line(10 * (i + 1), 32.0, 4) for i in range(14)]
    args = hf_training_args(fsdp="[]", deepspeed="ds_config.json")
    text = hf_trainer_log(LLAMA3_8B_HF_CONFIG, args, prelude=[engine], between=tput)
    out = run_json(capsys, ["check", write(tmp_path, text), *HW, *SEQ])
    assert out["framework"] == "deepspeed" and out["status"] == "predicted"
    assert out["model"] == "llama3-8b" and "recompute=full" in out["stack_set"] and "fsdp=zero2" in out["stack_set"]
    assert out["measured"]["step_s"] == pytest.approx(64 / 32.0)
    text = hf_trainer_log(LLAMA3_8B_HF_CONFIG, args, prelude=[engine])
    out = run_json(capsys, ["check", write(tmp_path, text), *HW, *SEQ])
    assert out["framework"] == "hf_trainer" and "fsdp=zero2" in out["stack_set"]
    assert out["measured"]["step_s"] == pytest.approx(64 / 11.634)


def test_a_trainer_log_before_its_train_metrics_says_so(tmp_path, capsys):
    """The Trainer logs no per-step time: a log that ends before training does (no train metrics dict) has no
    measurement, and check says why instead of 'stopped before step 1'."""
    text = hf_trainer_log(LLAMA3_8B_HF_CONFIG, hf_training_args())
    cut = text[: text.index("{'train_runtime'")]
    out = run_json(capsys, ["check", write(tmp_path, cut), *HW])
    assert out["framework"] == "hf_trainer" and out["status"] == "no_iteration"
    assert "only when training ends" in out["summary"]


def test_the_progress_bar_gives_the_step_times(tmp_path, capsys):
    """With the Trainer's progress bar in the log (one tqdm frame per optimizer step, '\\r'-separated), the intervals
    are its frames: the step time the median of their smoothed s/it after warm-up, not the whole-run average; a bar
    of another total (checkpoint shards, evaluation) is not read."""
    steps = [30.0] + [6.2] * 199  # a slow first step, then 6.2 s
    other = "Loading checkpoint shards: 100%|██████████| 4/4 [00:05<00:00,  1.30s/it]"
    text = hf_trainer_log(LLAMA3_8B_HF_CONFIG, hf_training_args(), between=[other], bar=steps)
    out = run_json(capsys, ["check", write(tmp_path, text), *HW, *SEQ])
    assert out["measured"]["intervals"] == 200 and out["measured"]["step_s"] == pytest.approx(6.2, rel=0.002)
    assert out["status"] == "predicted" and any("progress bar" in n for n in out["notes"])
    assert any("start-up, evaluation" in n for n in out["notes"])  # the train metrics' average, as a cross-check


def test_launcher_prefixes_and_cut_dumps_do_not_swallow_the_log(tmp_path, capsys):
    """srun -l prefixes every line, the config's continuation lines too ('0: '): the capture strips it and ends at
    its '}'; a config cut before its '}' ends at the first line that is not JSON, which is read as any other line
    (here a Megatron iteration line after a Model config that never closed)."""
    text = hf_trainer_log(LLAMA3_8B_HF_CONFIG, hf_training_args(), tokens_per_s=11.634 * 4096 / 8)
    prefixed = "".join("0: " + line + "\n" for line in text.splitlines())
    out = run_json(capsys, ["check", write(tmp_path, prefixed), *HW])
    assert out["status"] == "predicted" and out["model"] == "llama3-8b" and out["layout"]["seq"] == 4096
    cut = hf_line("x", "Model config LlamaConfig {") + '\n  "hidden_size": 4096,\n'
    cut += "".join(iteration_line(10 * i, 200, 64, 1500.0) + "\n" for i in range(1, 15))
    log = parse_text(cut)
    assert log.framework == "megatron" and len(log.iters) == 14 and not log.hf_config


def test_fsdp_options_lora_and_resumed_runs(tmp_path, capsys):
    """hybrid_shard_zero2 keeps the parameters after the forward and needs the node size; offload is named; a LoRA
    run (trainable parameters a fraction of the model's) is named, not priced as full training; a resumed run's
    train metrics (every step counted over the rest's runtime) are not a measurement."""
    args = hf_training_args(fsdp="[<FSDPOption.HYBRID_SHARD_ZERO2: 'hybrid_shard_zero2'>]")
    out = run_json(capsys, ["check", write(tmp_path, hf_trainer_log(LLAMA3_8B_HF_CONFIG, args)), *HW, *SEQ])
    assert out["status"] == "measured" and "hybrid_shard_group" in out["not_predicted"]
    given = [*HW, *SEQ, "--arg", "hybrid_shard_group=8"]
    out = run_json(capsys, ["check", write(tmp_path, hf_trainer_log(LLAMA3_8B_HF_CONFIG, args)), *given])
    assert {"reshard_after_forward=false", "hybrid_shard_group=8"} <= set(out["stack_set"])
    off = hf_training_args(fsdp="[<FSDPOption.FULL_SHARD: 'full_shard'>, <FSDPOption.OFFLOAD: 'offload'>]")
    out = run_json(capsys, ["check", write(tmp_path, hf_trainer_log(LLAMA3_8B_HF_CONFIG, off)), *HW, *SEQ])
    assert "offload" in out["not_predicted"]
    lora = hf_trainer_log(LLAMA3_8B_HF_CONFIG, hf_training_args(), params=4194304)
    out = run_json(capsys, ["check", write(tmp_path, lora), *HW, *SEQ])
    assert out["status"] == "measured" and "LoRA" in out["not_predicted"]
    resumed = hf_trainer_log(
        LLAMA3_8B_HF_CONFIG, hf_training_args(), between=[hf_line("t", "  Continuing training from global step 150")]
    )
    out = run_json(capsys, ["check", write(tmp_path, resumed), *HW, *SEQ])
    assert out["status"] == "measured" and "resumed at step 150" in out["not_predicted"]


def test_a_lora_run_under_deepspeed_is_named(tmp_path, capsys):
    """The Trainer's trainable-parameter count is checked under DeepSpeed too: a LoRA run is not priced as full."""
    engine = deepspeed_log(ds_config(), []).rstrip("\n")
    tput = [ds_tput_line(10 * (i + 1), 32.0, 4) for i in range(14)]
    args = hf_training_args(fsdp="[]", deepspeed="ds_config.json")
    text = hf_trainer_log(LLAMA3_8B_HF_CONFIG, args, prelude=[engine], between=tput, params=4194304)
    out = run_json(capsys, ["check", write(tmp_path, text), *HW, *SEQ])
    assert out["framework"] == "deepspeed" and out["status"] == "measured" and "LoRA" in out["not_predicted"]


def test_what_deepspeed_under_the_trainer_lacks_is_named(tmp_path, capsys):
    """The Trainer ran DeepSpeed (no ThroughputTimer lines): a precision neither states, or a ZeRO stage the dump
    lacks, is named in missing, never priced as bf16 or guessed."""
    engine = deepspeed_log(ds_config(bfloat16_enabled=False), [], optimizer=None).rstrip("\n")
    args = hf_training_args(fsdp="[]", deepspeed="ds_config.json", bf16=False)
    text = hf_trainer_log(LLAMA3_8B_HF_CONFIG, args, prelude=[engine])
    out = run_json(capsys, ["check", write(tmp_path, text), *HW, *SEQ])
    assert out["framework"] == "hf_trainer" and out["status"] == "measured" and "fp32" in out["not_predicted"]
    engine = deepspeed_log(ds_config(zero_optimization_stage=None), [], optimizer=None).rstrip("\n")
    args = hf_training_args(fsdp="[]", deepspeed="ds_config.json")
    text = hf_trainer_log(LLAMA3_8B_HF_CONFIG, args, prelude=[engine])
    out = run_json(capsys, ["check", write(tmp_path, text), *HW, *SEQ])
    assert out["status"] == "measured" and "zero_optimization_stage" in out["not_predicted"]


@pytest.mark.parametrize(
    "optim, launches",
    [
        ("OptimizerNames.ADAMW_TORCH_FUSED", "multi_tensor"),
        ("adamw_hf", "per_param"),
        ("OptimizerNames.ADAFACTOR", None),
    ],
)
def test_the_trainer_s_optimizer_sets_its_launches(tmp_path, capsys, optim, launches):
    """TrainingArguments optim: torch's AdamW (foreach or fused) launches multi-tensor kernels, transformers' own AdamW
    loops per parameter; another optimizer keeps another state and is named, not priced as Adam."""
    log = write(tmp_path, hf_trainer_log(LLAMA3_8B_HF_CONFIG, hf_training_args(optim=optim), tokens_per_s=5816.0))
    out = run_json(capsys, ["check", log, *HW])
    if launches is None:
        assert out["status"] == "measured" and f"optim ({optim}: perfmodel prices AdamW" in out["not_predicted"]
    else:
        assert out["status"] == "predicted" and f"optimizer_launches={launches}" in out["stack_set"]
