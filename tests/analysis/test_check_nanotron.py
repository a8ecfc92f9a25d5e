"""check on nanotron logs (perfmodel/analysis/logparse.py NT_*, logrun.py nanotron_run): the step time from the
interval lines (human_format, 3 significant digits), the layout, batch, model, precision and stack features from
the pformat'ed Config; predicted on nanotron-2025 (stacks/nanotron-2025.toml, read at huggingface/nanotron@0e0a27ea)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_json
from log_helpers import LlamaConfig, nanotron_config, nanotron_log, nt_human

from perfmodel import api
from perfmodel.analysis.logparse import MAX_NT_LINES, _human, parse_text
from perfmodel.core import constants as K
from perfmodel.core.parallel import dp as dp_par
from perfmodel.specs.stack import infer_stack

MS = [7210.0, 4840.0, 4810.0, 4830.0, 4820.0, 4850.0, 4800.0, 4830.0]


def write(tmp_path: Path, text: str, name: str = "nanotron.log") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("v", [0.0003, 3e-05, 0.42, 1.0, 11.2, 999.4, 4830.0, 61034.5, 2.6e6, 1.3e9, 7.7e12])
@pytest.mark.parametrize("head", [False, True])
def test_human_format_values_read_back_to_three_significant_digits(v, head):
    """nanotron's human_format keeps 3 significant digits with a K / M / G (B at HEAD) / T suffix: read back within
    0.5%."""
    assert _human(nt_human(v, head).encode()) == pytest.approx(v, rel=5e-3)


@pytest.mark.parametrize("text, v", [(b"4.83K", 4830.0), (b"1.2G", 1.2e9), (b"1.2B", 1.2e9), (b"3e-05", 3e-05)])
def test_human_format_strings_of_each_version(text, v):
    assert _human(text) == pytest.approx(v)


def test_the_config_dump_start_line_memory_and_intervals_are_read():
    log = parse_text(nanotron_log(nanotron_config(), MS))
    assert log.framework == "nanotron"
    c = log.nt_config
    assert (c["dp"], c["tp"], c["pp"], c["model_config"]) == ("2", "4", "1", "LlamaConfig")
    assert (c["hidden_size"], c["num_key_value_heads"], c["vocab_size"]) == ("4096", "8", "128256")
    assert c["tp_mode"] == "<TensorParallelLinearMode.REDUCE_SCATTER: 2>" and c["dtype"] == "torch.bfloat16"
    assert (c["micro_batch_size"], c["batch_accumulation_per_replica"], c["zero_stage"]) == ("2", "16", "1")
    assert log.nt_start["mbs"] == "2" and log.nt_start["global_batch_size"] == "64"
    assert list(log.iters) == list(range(1, 9))
    assert np.allclose(np.array(log.step_s), np.array(MS) / 1e3, rtol=5e-3)
    assert log.mem_max_allocated == pytest.approx(37980.5 * 2**20)


def test_head_s_colour_prefixed_config_reads_as_0e0a27ea_s():
    """Every line of the Config record carries the formatter's prefix (NewLineStreamHandler): 0e0a27ea's plain one
    and HEAD's colour-coded one give the same fields."""
    plain = parse_text(nanotron_log(nanotron_config(), MS)).nt_config
    assert plain == parse_text(nanotron_log(nanotron_config(), MS, head=True)).nt_config
    assert plain["vocab_size"] == "128256" and plain["accumulate_grad_in_fp32"] == "True"


def test_the_run_check_predicts_is_the_config_s_on_the_nanotron_preset(tmp_path, capsys):
    """tp 4 x dp 2 from ParallelismArgs, gbs = mbs x accumulation x dp, the catalog's Llama 3 8B from the LlamaConfig;
    REDUCE_SCATTER = sequence parallel, async TP, ZeRO-1 and the 1F1B engine as stack features; the prediction is
    api.predict's of the same run."""
    out = run_json(capsys, ["check", write(tmp_path, nanotron_log(nanotron_config(), MS)), "--hardware", "h100-sxm"])
    assert out["framework"] == "nanotron" and out["status"] == "predicted" and out["stack"] == "nanotron-2025"
    lay = out["layout"]
    assert (lay["gpus"], lay["gbs"], lay["seq"], lay["tp"], lay["pp"], lay["mbs"]) == (8, 64, 4096, 4, 1, 2)
    assert out["model"] == "llama3-8b"
    sets = set(out["stack_set"])
    # ZeRO-1 with fp32 accumulation: no DDP, one all-reduce of the fp32 buffer after the backward (BF16_Optimizer's
    # pattern), the states sharded
    for s in (
        "sequence_parallel=true",
        "tp_bwd_async=true",
        "fsdp=bf16_optimizer",
        "optimizer_shard=dp",
        "dp_grad_reduce_overlap=false",
        "dp_buckets=one",
        "recompute=none",
    ):
        assert s in sets, s
    p = api.predict(
        "llama3-8b",
        "h100-sxm",
        api.Layout(gpus=8, gbs=64, seq=4096, tp=4, mbs=2),
        "bf16",
        stack="nanotron-2025",
        stack_set=tuple(out["stack_set"]),
    )
    assert out["predicted"]["tokens_per_s_per_gpu"] == pytest.approx(float(p.tokens_per_s_per_gpu[0]))
    assert out["measured"]["step_s"] == pytest.approx(4.83, rel=5e-3)
    # the memory nanotron@0e0a27ea holds per parameter under ZeRO-1 with fp32 accumulation: bf16 weights (2 B); the
    # fp32 gradient buffer of every parameter (FP32GradientAccumulator.build_grad_buffers over all of them, 4 B)
    # beside the bf16 .grad that loss.backward() fills before _accumulate_grad frees it (2 B); the fp32 master copy
    # of this rank's slice only (helpers.py: ZeroDistributedOptimizer builds the accumulator on its sliced params)
    # and Adam's two moments of it (4 + 8 B over dp = 2)
    parts, params = p.memory_parts, 8.03e9 / 4
    assert [float(parts[k][0]) / params for k in ("weights", "gradients", "optimizer")] == pytest.approx(
        [2.0, 6.0, 12.0 / 2], rel=2e-3
    )


def test_library_defaults_and_other_switches_are_read(tmp_path, capsys):
    """ALL_REDUCE (no sequence parallelism), the AFAB engine (gpipe), recompute_layer (full), ZeRO 0 and bf16
    accumulation each become the stated feature."""
    cfg = nanotron_config(
        tp_mode="ALL_REDUCE", async_tp=False, engine="afab", recompute=True, zero=0, fp32_accum=False, pp=2, tp=2
    )  # zero_stage 0: torch DDP, the preset's buckets and overlap
    out = run_json(capsys, ["check", write(tmp_path, nanotron_log(cfg, MS)), "--hardware", "h100-sxm"])
    assert out["status"] == "predicted"
    sets = set(out["stack_set"])
    for s in (
        "sequence_parallel=false",
        "tp_bwd_async=false",
        "pipeline_schedule=gpipe",
        "recompute=full",
        "main_grad_precision=bf16",
        "grad_reduce_precision=bf16",
    ):
        assert s in sets, s
    assert not any(s.startswith(("fsdp=", "dp_buckets=", "dp_grad_reduce_overlap=")) for s in sets)
    assert out["layout"]["pp"] == 2 and out["layout"]["recompute"] == "full"


def test_a_model_not_in_the_catalog_is_built_from_the_llama_config(tmp_path, capsys):
    m = LlamaConfig(
        hidden_size=2048,
        intermediate_size=8192,
        num_attention_heads=16,
        num_key_value_heads=16,
        num_hidden_layers=24,
        vocab_size=49152,
        tie_word_embeddings=True,
    )
    cfg = nanotron_config(model=m, tp=1, dp=8, accum=4)
    out = run_json(capsys, ["check", write(tmp_path, nanotron_log(cfg, MS)), "--hardware", "h100-sxm"])
    assert out["status"] == "predicted" and "built from the logged LlamaConfig" in out["model_source"]


def test_without_the_config_dump_the_start_line_gives_the_batch_and_each_missing_field_is_named(tmp_path, capsys):
    out = run_json(
        capsys, ["check", write(tmp_path, nanotron_log(nanotron_config(), MS, config=False)), "--hardware", "h100-sxm"]
    )
    assert out["framework"] == "nanotron" and out["status"] == "measured"
    for word in ("tp", "pp", "model", "precision"):
        assert word in out["not_predicted"], word
    m = out["measured"]
    assert m["step_s"] == pytest.approx(4.83, rel=5e-3)
    # the interval lines' own tokens/s per GPU where the GPU count is unknown
    assert m["tokens_per_s_per_gpu"] == pytest.approx(64 * 4096 / 4.83 / 8, rel=5e-3)


def test_a_cut_config_dump_keeps_what_it_read():
    """A dump cut mid-way (another record follows) ends the capture; its fields are kept, nothing is swallowed; a
    dump cut at the end of the file is kept too."""
    lines = nanotron_log(nanotron_config(), MS).splitlines()
    cut = next(i for i, x in enumerate(lines) if "tokenizer=" in x)
    log = parse_text("\n".join(lines[:cut] + [x for x in lines[cut:] if "iteration: " in x]) + "\n")
    assert log.nt_config["dp"] == "2" and "micro_batch_size" not in log.nt_config
    assert len(log.iters) == len(MS)
    assert parse_text("\n".join(lines[:cut]) + "\n").nt_config["tp"] == "4"


def test_a_config_record_past_max_nt_lines_ends_there():
    """A record of more indented lines than a Config has (MAX_NT_LINES) ends the capture; what follows is not read
    into the config, and the parse does not hang on long lines of word characters."""
    p = "12/04/2026 10:00:00 [INFO|DP=0|PP=0|TP=0]: "
    body = "\n".join(p + "     x=(" + "a" * 4000 for _ in range(MAX_NT_LINES + 50))
    log = parse_text(p + "Config(general=GeneralArgs(project='p',\n" + body + "\n" + p + "     late=1,\n")
    assert log.framework == "nanotron" and log.nt_config["project"] == "'p'" and "late" not in log.nt_config


def test_torch_ddp_buckets_are_25_mib_of_bf16_gradients_after_a_1_mib_first():
    first, rest = K.TORCH_DDP_FIRST_BUCKET_PARAMS, K.TORCH_DDP_BUCKET_PARAMS
    calls = lambda p: float(dp_par.collective_calls(p, 8, 0, 32, 1, "torch_ddp", True))  # noqa: E731
    assert calls(first) == 1.0 and calls(first + 1) == 2.0 and calls(first + 3 * rest) == 4.0
    assert rest == 25 * 2**20 / 2


def test_the_per_tensor_loop_costs_three_launches_per_tensor_beside_the_fused_adam():
    """vector_norm, mul_ (clip) and copy_ (fp32 master -> bf16) per parameter tensor the rank holds."""
    from perfmodel.core.software import resolve as resolve_software
    from perfmodel.specs.counts import parameter_tensors
    from perfmodel.specs.model import load_model

    m = load_model("llama3-8b")
    hw = api.load_hardware("h100-sxm")
    sw = resolve_software("nanotron-2025", (), m.id, m.is_moe, hw, "bf16", api.constants())
    multi = resolve_software(
        "nanotron-2025", ("optimizer_launches=multi_tensor",), m.id, m.is_moe, hw, "bf16", api.constants()
    )
    dense, _, outside = parameter_tensors(m, sw.separate_projections)
    k = dp_par.optimizer_kernels(m, ["dense"], [32], sw)
    assert dp_par.optimizer_kernels(m, ["dense"], [32], multi) == K.OPTIMIZER_KERNELS
    assert k == K.OPTIMIZER_KERNELS + 3 * (32 * dense + outside)


@pytest.mark.parametrize("framework, software", [("other", "nanotron 0e0a27ea"), ("nanotron", ""), ("", "Nanotron")])
def test_a_row_naming_nanotron_gets_its_preset(framework, software):
    assert infer_stack(framework, software).stack == "nanotron-2025"
