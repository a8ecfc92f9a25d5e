"""Megatron-LM command-line flags in a measured row (issue 26 item 3): the `megatron_args` cell states exactly its
features over Megatron-LM's library defaults, through the one flag -> feature mapping `check` applies to a log's
argument dump (analysis/megatron_args.py -> logrun.megatron_stack_sets)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfmodel.analysis.logrun import Fields, megatron_stack_sets
from perfmodel.analysis.megatron_args import FLAGS, parse
from perfmodel.analysis.validate import row_stack_spec, validate_rows
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.model import load_model
from perfmodel.specs.stack import load_stack

ROW = {
    "run_id": "r",
    "model": "llama3-8b",
    "hardware": "h100-sxm",
    "gpus": "64",
    "precision": "bf16",
    "seq_len": "8192",
    "global_batch": "512",
    "micro_batch": "1",
    "tp": "2",
    "tokens_per_s_per_gpu": "8000",
}
FULL = (
    "torchrun pretrain_gpt.py --tensor-model-parallel-size 2 --use-distributed-optimizer --overlap-grad-reduce "
    "--sequence-parallel --tp-comm-overlap --recompute-granularity selective --cross-entropy-loss-fusion "
    "--cross-entropy-fusion-impl te --no-gradient-accumulation-fusion --bf16 --lr 3e-4"
)


def _spec(row: dict):
    return row_stack_spec(row, Path("."), load_model(row["model"]), load_hardware(row["hardware"]), row["precision"])


def _run(*rows: dict):
    return validate_rows([dict(r) for r in rows], Path("."))


def test_the_flags_state_exactly_their_features_over_the_library_defaults():
    f = _spec({**ROW, "megatron_args": FULL}).features
    assert (f.fsdp, f.optimizer_shard) == ("zero1", "dp_cp")
    assert f.dp_grad_reduce_overlap and f.sequence_parallel and f.tp_overlap == "userbuffers"
    assert (f.recompute, f.recompute_modules) == ("selective", ("core_attn",))
    assert (f.cross_entropy, f.grad_accumulation_fusion) == ("te", False)
    assert (f.main_grad_precision, f.grad_reduce_precision) == ("fp32", "fp32")  # --bf16: validate_args' fp32
    # everything the command line leaves at its default is Megatron-LM's library default
    core = load_stack("megatron-core").features
    assert not f.dp_param_gather_overlap and f.cuda_graphs == core.cuda_graphs == "none"
    assert f.attention_kernel == core.attention_kernel


def test_a_row_with_flags_predicts_as_the_library_defaults_with_those_features():
    sets = (
        "fsdp=zero1; optimizer_shard=dp_cp; dp_grad_reduce_overlap=true; sequence_parallel=true; tp_overlap=userbuffers; "
        "cross_entropy=te; grad_accumulation_fusion=false; recompute_modules=core_attn"
    )
    rep = _run(
        {**ROW, "run_id": "flags", "megatron_args": FULL},
        {**ROW, "run_id": "sets", "stack": "megatron-core", "stack_set": sets, "recompute": "selective"},
    )
    flags, by_sets = rep.results
    assert flags.predicted == pytest.approx(by_sets.predicted, rel=1e-12)
    assert flags.stack == "megatron-core" and flags.stack_basis == "megatron args"
    assert "--use-distributed-optimizer" in flags.stack_why and "arguments.py" in flags.stack_why
    # the recompute the command line states is the run's, not inferred: no --recompute-granularity = none
    bare = _run({**ROW, "run_id": "bare", "megatron_args": "--bf16"}).results[0]
    none = _run({**ROW, "run_id": "none", "stack": "megatron-core", "recompute": "none"}).results[0]
    assert bare.predicted == pytest.approx(none.predicted, rel=1e-12)


def test_over_a_stack_cell_only_the_given_flags_change_it():
    base = _spec({**ROW, "stack": "nemo-25.09"}).features
    f = _spec({**ROW, "stack": "nemo-25.09", "megatron_args": "--no-gradient-accumulation-fusion"}).features
    assert f.grad_accumulation_fusion is False
    assert f.model_copy(update={"grad_accumulation_fusion": base.grad_accumulation_fusion}) == base


def test_flags_in_a_software_cell_state_their_features_over_the_preset_its_words_find():
    nemo = _spec({**ROW, "framework": "megatron", "software": "NeMo 25.09"}).features
    text = "NeMo 25.09, --no-gradient-accumulation-fusion (TE 2.7)"
    f = _spec({**ROW, "framework": "megatron", "software": text}).features
    assert f.grad_accumulation_fusion is False
    assert f.model_copy(update={"grad_accumulation_fusion": nemo.grad_accumulation_fusion}) == nemo
    r = _run({**ROW, "framework": "megatron", "software": text}).results[0]
    assert r.stack == "nemo-25.09" and "--no-gradient-accumulation-fusion" in r.stack_why
    # a value flag takes the next word; prose around the flags is not a flag
    g = _spec({**ROW, "framework": "megatron", "software": "Megatron-LM, --recompute-granularity full; 2025"})
    assert g.features.recompute == "full"
    # Megatron-DeepSpeed runs DeepSpeed's optimizer: Megatron-LM's flag table does not describe them
    ds = {**ROW, "framework": "megatron", "software": "Megatron-DeepSpeed --use-distributed-optimizer"}
    assert _spec(ds).features.fsdp == load_stack("megatron-deepspeed-2023").features.fsdp


def test_a_bad_flag_in_a_software_cell_is_one_reason_naming_the_flag():
    rep = _run({**ROW, "framework": "megatron", "software": "Megatron-LM --recompute-granularity partial"})
    assert not rep.results and "--recompute-granularity: must be one of full, selective" in rep.unsupported[0]["reason"]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ("--recompute-granularity partial", "megatron_args: --recompute-granularity: must be one of full, selective"),
        ("--tensor-model-parallel-size 4", "megatron_args: --tensor-model-parallel-size: 4, but the row's tp is 2"),
        ("--fp16", "megatron_args: --fp16: states fp16, but the row's precision is bf16"),
        ("--sequence-parallel yes", "megatron_args: --sequence-parallel: a switch takes no value"),
        ("--tp-comm-overlap", "megatron_args: --tp-comm-overlap: needs --sequence-parallel"),
        ("--bf16 --fp16", "megatron_args: --fp16: --bf16 and --fp16 both given"),
        ("--recompute-granularity full", "megatron_args: --recompute-granularity: full, but the row's recompute is"),
    ],
)
def test_a_bad_flag_is_one_reason_naming_the_field(args, reason):
    row = {**ROW, "megatron_args": args, **({"recompute": "selective"} if "full" in args else {})}
    rep = _run(row)
    assert not rep.results and rep.unsupported[0]["reason"].startswith(reason)


def test_transformer_impl_local_runs_megatron_cores_own_attention():
    f = _spec({**ROW, "megatron_args": "--bf16 --transformer-impl local"}).features
    assert f.attention_kernel == "unfused"
    # the same mapping reads a log's argument dump (check)
    stated = megatron_stack_sets(Fields({"transformer_impl": "local"}, {}), "none", "bf16", [])
    assert stated["attention_kernel"].value == "unfused"


def test_every_flag_names_its_argparse_line():
    for flag, spec in FLAGS.items():
        assert flag.startswith("--") and spec.line > 0 and "arguments.py" in spec.source(flag)
    assert parse("--no-overlap-p2p-communication").given == {"overlap_p2p_comm": "False"}


def test_check_reads_the_flags_a_run_used(capsys):
    from cli_helpers import run_err, run_json

    log = str(Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "megatron-llama3-70b-h100.log")
    base = run_json(capsys, ["check", log, "--hardware", "h100-sxm", "--json"])
    flagged = run_json(
        capsys,
        ["check", log, "--hardware", "h100-sxm", "--json", "--megatron-args", "--no-gradient-accumulation-fusion"],
    )
    assert (
        "grad_accumulation_fusion=false" in flagged["stack_set"]
        and "grad_accumulation_fusion=false" not in base["stack_set"]
    )
    assert flagged["predicted"]["tokens_per_s_per_gpu"] < base["predicted"]["tokens_per_s_per_gpu"]
    err = run_err(
        capsys, ["check", log, "--hardware", "h100-sxm", "--megatron-args", "--recompute-granularity sometimes"]
    )
    assert "--megatron-args: --recompute-granularity: must be one of full, selective" in err
