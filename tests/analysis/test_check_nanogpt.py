"""check on nanoGPT logs (perfmodel/analysis/logparse.py NG_*, logrun.py nanogpt_run): the per-iteration times, the
tokens of a step and the sequence from the printed config; measured, not predicted (no nanoGPT preset)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from cli_helpers import run_json
from log_helpers import nanogpt_log

from perfmodel.analysis.logparse import parse_text

MS = [30000.0] + [460.0, 455.0, 462.0] * 5


def write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "nanogpt.log"
    p.write_text(text)
    return str(p)


def test_the_iteration_lines_the_tokens_per_step_and_the_block_size_are_read():
    log = parse_text(nanogpt_log(MS, eval_at=(12,)))
    assert log.framework == "nanogpt" and log.ng_tokens == 40 * 12 * 1024
    assert list(log.step_s) == pytest.approx([t / 1e3 for t in MS])
    assert math.isnan(log.mfu[0]) and log.mfu[-1] == pytest.approx(38.5)  # -100.00% before the 5th iteration
    assert [i for i, e in zip(log.iters, log.event_after) if e] == [12]  # the iteration after the evaluation
    assert log.ng_overrides["block_size"] == "1024"
    assert parse_text(nanogpt_log(MS, block=256, cli_block=512)).ng_overrides["block_size"] == "512"  # last wins


def test_a_nanogpt_log_is_measured_with_the_gpu_count_given(tmp_path, capsys):
    """step time = the median stable iteration; tokens/s/GPU = tokens per iteration / (step x GPUs), the world size
    being what nanoGPT does not print."""
    out = run_json(capsys, ["check", write(tmp_path, nanogpt_log(MS)), "--gpus", "8"])
    assert out["framework"] == "nanogpt" and out["status"] == "measured"
    m = out["measured"]
    assert m["step_s"] == pytest.approx(0.460)
    assert m["tokens_per_s_per_gpu"] == pytest.approx(491520 / (0.460 * 8))
    assert "nanoGPT preset" in out["not_predicted"]
    out = run_json(capsys, ["check", write(tmp_path, nanogpt_log(MS, batch=64, block=256, accum=1))])
    assert out["measured"]["step_s"] == pytest.approx(0.460) and out["measured"]["tokens_per_s_per_gpu"] is None
    assert "--gpus" in out["measured"]["missing"][0]


def test_launcher_prefixes_and_a_block_size_expression(tmp_path, capsys):
    """torchrun --tee's '[default0]:' and srun -l's '0: ' prefixes are read; a config block_size that is an expression
    is not a number the reader takes (named missing), and --arg block_size gives it."""
    text = nanogpt_log(MS)
    for pre in ("[default0]:", "0: "):
        log = parse_text("".join(pre + x + "\n" for x in text.splitlines()))
        assert log.framework == "nanogpt" and len(log.iters) == len(MS) and log.ng_tokens == 491520
    expr = text.replace("block_size = 1024", "block_size = 64*16")
    out = run_json(capsys, ["check", write(tmp_path, expr), "--gpus", "8"])
    assert out["measured"]["tokens_per_s_per_gpu"] is None and "block_size" in out["not_predicted"]
    out = run_json(capsys, ["check", write(tmp_path, expr), "--gpus", "8", "--arg", "block_size=1024"])
    assert out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(491520 / (0.460 * 8))


def test_a_tokens_line_of_thousands_of_digits_is_not_read():
    assert parse_text("tokens per iteration will be: " + ",123" * 2000 + "\n").ng_tokens == 0
