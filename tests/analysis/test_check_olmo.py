"""check on OLMo and OLMo-core logs (perfmodel/analysis/logparse.py OL_*, logrun.py olmo_run): the tokens/s per
device and batches/s of each step's metric block, the peak memory, and the batch, sequence and world size of OLMo's
TrainConfig repr; measured, not predicted (no OLMo preset)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_json
from log_helpers import olmo_core_float, olmo_float, olmo_log

from perfmodel.analysis.logparse import parse_text

TPS = [5200.0, 12400.0] + [12500.0, 12480.0, 12520.0, 12510.0, 12490.0] * 3


def write(tmp_path: Path, text: str, name: str = "olmo.log") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_each_step_s_metric_block_is_one_interval_and_the_other_ranks_markers_none():
    log = parse_text(olmo_log(TPS))
    assert log.framework == "olmo" and not log.ol_core
    assert list(log.iters) == list(range(1, len(TPS) + 1))
    assert np.allclose(np.array(log.tps), [float(olmo_float(t).replace(",", "")) for t in TPS])
    device_tokens = 32 * 2048
    assert np.allclose(np.array(log.step_s), [1 / float(olmo_float(t / device_tokens)) for t in TPS])
    assert log.mem_max_allocated == pytest.approx(61234 * 1e6)
    c = log.ol_config
    assert (c["global_train_batch_size"], c["device_train_batch_size"], c["max_sequence_length"]) == (
        "2048",
        "32",
        "2048",
    )


def test_an_olmo_log_is_measured_without_any_flag(tmp_path, capsys):
    """tokens/s/GPU is the logged per-device rate; the world size is global / device batch (2048 / 32 = 64) and the
    step gbs x seq / (tps x GPUs); no prediction, and it says why."""
    out = run_json(capsys, ["check", write(tmp_path, olmo_log(TPS))])
    assert out["framework"] == "olmo" and out["status"] == "measured"
    med = float(np.median(TPS[10:]))
    assert out["measured"]["tokens_per_s_per_gpu"] == pytest.approx(med)
    assert out["measured"]["step_s"] == pytest.approx(2048 * 2048 / (med * 64))
    assert "OLMo preset" in out["not_predicted"]


def test_an_olmo_core_log_gives_its_step_mfu_and_memory(tmp_path, capsys):
    """OLMo-core: TPS and BPS of the logged step (the step 1 / BPS, with no facts needed), its MFU, active and
    reserved memory in GiB."""
    out = run_json(capsys, ["check", write(tmp_path, olmo_log(TPS, core=True))])
    m = out["measured"]
    assert "MFU is against the H100's or B200's peak" in " ".join(out["notes"])
    assert out["status"] == "measured" and m["missing"] == []
    assert m["tokens_per_s_per_gpu"] == pytest.approx(float(np.median(TPS[10:])))
    assert m["step_s"] == pytest.approx(32 * 2048 / float(np.median(TPS[10:])), rel=2e-3)
    assert m["mfu_framework"] == pytest.approx(0.415)
    assert m["mem_max_reserved_bytes"] == pytest.approx(60.5 * 2**30)
    assert "OLMo-core" in out["not_predicted"]


@pytest.mark.parametrize("v", [3e-05, 0.0793, 4.5, 24.5, 612.3, 12500.0, 4194304.0, 3.02e10, 7.7e13])
def test_format_float_values_read_back(v):
    """Both format_floats' outputs (',' thousands, B / T suffixes, E notation) parse back to the value."""
    for fmt, rel in ((olmo_float, 5e-3), (olmo_core_float, 5e-3)):
        text = f"[step=1/10]\n    throughput/device/TPS={fmt(v)}\n    throughput/device/BPS=1.0\n"
        log = parse_text(text)
        assert log.tps[0] == pytest.approx(v, rel=rel, abs=1e-4)


def test_a_marker_without_metrics_and_a_corrupted_value_make_no_interval():
    text = "[step=5/10]\n[step=6/10]\n    throughput/device/tokens_per_second=1,2.3\n[step=7/10]\n"
    assert len(parse_text(text).iters) == 0


@pytest.mark.parametrize("software", ["OLMo 7B (allenai/OLMo v0.3.0)", "olmo-core 2.1", "AI2 OLMo trainer"])
def test_a_row_naming_olmo_gets_the_nearest_preset_flagged_as_a_stand_in(software):
    from perfmodel.specs.stack import infer_stack

    c = infer_stack("other", software)
    assert (c.stack, c.basis) == ("llm-foundry-2024", "stand-in")


def test_a_word_containing_olmo_is_not_olmo():
    from perfmodel.specs.stack import infer_stack

    assert infer_stack("other", "Folmoor cluster, NeMo 25.09").stack != "llm-foundry-2024"


@pytest.mark.parametrize(
    "text, v",
    [(b"3e-05", 3e-05), (b"3.00E-05", 3e-05), (b"77.00T", 7.7e13), (b"1,234.5B", 1.2345e12), (b"12,500", 12500.0)],
)
def test_upstream_format_float_strings_read(text, v):
    """Literal outputs of OLMo's and OLMo-core's format_float, not the tests' own copies of them."""
    log = parse_text("[step=1/10]\n    throughput/device/TPS=" + text.decode() + "\n    throughput/device/BPS=1.0\n")
    assert log.tps[0] == pytest.approx(v)


def test_an_olmo_core_step_with_an_evaluation_inside_it_is_an_event(tmp_path, capsys):
    """The evaluator callback's lines come before the metrics of the step that includes it: that step is left out
    as after an evaluation, the step before it is not; the averaged TPS beside the step's own is not read."""
    log = parse_text(olmo_log(TPS, core=True, eval_at=(14,)))
    flagged = [i for i, e in zip(log.iters, log.event_after) if e]
    assert flagged == [14]
    assert log.tps[5] == pytest.approx(TPS[5])


def test_a_bounded_marker_reads_a_long_line_quickly():
    """A line of repeated '[step=1/1,eta=' is not a marker (the eta is bounded), and the parse of it ends."""
    log = parse_text("[step=1/1,eta=" * 20000 + "\n")
    assert len(log.iters) == 0


def test_olmo_s_window_averages_leave_out_a_window_of_steps_after_the_start(tmp_path, capsys):
    """OLMo's SpeedMonitor averages up to window_size (100) steps, so a rate within 100 steps of the start still
    holds the slow first steps: those are warm-up (the rule says 100), whatever --warmup says; OLMo-core's per-step
    rates keep the usual 10. A log shorter than the window keeps its rates (the warm-up rule narrows)."""
    tps = [3000.0 + 90 * i for i in range(100)] + [12500.0] * 30
    out = run_json(capsys, ["check", write(tmp_path, olmo_log(tps))])
    m = out["measured"]
    assert m["tokens_per_s_per_gpu"] == pytest.approx(12500.0) and "first 100 iterations" in m["rule"]
    assert any("window of 100 steps" in n for n in out["notes"])
    core = run_json(capsys, ["check", write(tmp_path, olmo_log(tps, core=True))])
    assert "first 10 iterations" in core["measured"]["rule"]
    short = run_json(capsys, ["check", write(tmp_path, olmo_log(TPS))])
    assert short["measured"]["tokens_per_s_per_gpu"] is not None
