"""check on modded-nanogpt record logs (perfmodel/analysis/logparse.py MN_*, logrun.py modded_nanogpt_run): the step
time from the cumulative train_time, the device and GPU count from the nvidia-smi table; measured, not predicted."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_json
from log_helpers import modded_nanogpt_log

from perfmodel.analysis.logparse import parse_text

MS = [161.0, 159.0, 160.5, 160.0] * 50


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "record.txt"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("seconds", [False, True])
def test_step_times_are_train_time_differences_and_the_source_lines_are_not_steps(seconds):
    log = parse_text(modded_nanogpt_log(MS, seconds=seconds))
    assert log.framework == "modded-nanogpt" and log.mn_gpus == 8 and log.device_name == "NVIDIA H100 80GB HBM3"
    # the warm-up steps' own differences, then one interval per timed step (a validation line at the same step adds
    # none); the timer's restart after the warm-up is no interval
    timed = [s for i, s in zip(log.iters, log.step_s) if i > 11]
    assert timed == pytest.approx([m / 1e3 for m in MS[1:]], abs=1.5e-3 if seconds else 1.01e-3)


def test_a_record_is_measured_without_any_flag(tmp_path, capsys):
    """The hardware from the nvidia-smi table, the step the median stable difference; tokens/s/GPU needs the batch
    and sequence of the script, given with --arg."""
    out = run_json(capsys, ["check", write(tmp_path, modded_nanogpt_log(MS))])
    assert out["framework"] == "modded-nanogpt" and out["status"] == "measured"
    assert out["measured"]["step_s"] == pytest.approx(0.160, abs=1e-3)
    assert out["measured"]["tokens_per_s_per_gpu"] is None and "modded-nanogpt preset" in out["not_predicted"]
    given = ["--arg", "global_batch_size=8", "--arg", "seq_length=65536"]
    out = run_json(capsys, ["check", write(tmp_path, modded_nanogpt_log(MS)), *given])
    assert out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(8 * 65536 / (0.160 * 8), rel=5e-3)


def test_an_nvidia_smi_table_names_the_device_of_a_megatron_log(tmp_path, capsys):
    """A launcher script that runs nvidia-smi before training prints the GPUs: the log's device for any framework
    (here a Megatron-LM log, whose hardware then needs no flag); a table printed again later adds no GPU."""
    from log_helpers import L70, megatron_args, megatron_log

    table = "\n".join(
        f"|   {i}  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |"
        for i in range(8)
    )
    text = table + "\n" + megatron_log(megatron_args(**L70), [16000.0, 14700.0, 14650.0] * 4, tflops=420.0) + table
    log = parse_text(text)
    assert log.framework == "megatron" and log.device_name == "NVIDIA H100 80GB HBM3" and log.mn_gpus == 8
    out = run_json(capsys, ["check", write(tmp_path, text)])
    assert out["hardware"] == "h100-sxm" and out["status"] == "predicted"


def test_an_nvidia_smi_list_names_the_device_too(tmp_path, capsys):
    """`nvidia-smi -L` ('GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)') before the training lines names the device."""
    from log_helpers import L70, megatron_args, megatron_log

    listing = "\n".join(
        f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:08x}-aaaa-bbbb-cccc-000000000000)" for i in range(8)
    )
    text = listing + "\n" + megatron_log(megatron_args(**L70), [16000.0, 14700.0, 14650.0] * 4, tflops=420.0)
    assert parse_text(text).device_name == "NVIDIA H100 80GB HBM3"
    out = run_json(capsys, ["check", write(tmp_path, text)])
    assert out["hardware"] == "h100-sxm"
