"""`perfmodel check LOG`: what a run's own training log measured, the same run predicted, the gap explained.

Parses the options, calls perfmodel.analysis.logcheck (which does the work) and renders its document.
"""

from __future__ import annotations

from pathlib import Path

import click

from perfmodel.analysis.logcheck import WARMUP_ITERS, check, check_log, field_overrides, write_csv
from perfmodel.commands.common import emit_json, stack_options
from perfmodel.errors import InputError
from perfmodel.render.check import print_check

__all__ = ["check_cmd", "check_log"]  # check_log: the library entry, kept importable from here


@click.command("check")
@click.argument("log", type=click.Path(dir_okay=False))
@click.option("--hardware", "hardware_ref", default=None, help="catalog id or TOML spec (where the log names no GPU)")
@click.option("--gpus", type=int, default=None, help="GPU count, where the log does not state it")
@click.option("--model", "model_ref", default=None, help="catalog id or spec file (TOML / HF config.json)")
@click.option("--arg", "args", multiple=True, metavar="NAME=VALUE", help="add or override a log field (repeatable)")
@click.option(
    "--megatron-args",
    default=None,
    metavar="FLAGS",
    help="Megatron-LM command-line flags the run used ('--use-distributed-optimizer --sequence-parallel ...'): "
    "the argument-dump fields they set, under --arg",
)
@click.option(
    "--warmup", type=int, default=WARMUP_ITERS, show_default=True, help="iterations after each start left out"
)
@click.option("--run-id", default=None, help="run_id of the --csv row [default: the log's file name]")
@click.option("--csv", "csv_out", type=click.Path(dir_okay=False), default=None, help="write the run as a CSV row")
@click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE", help="what-if hardware field (repeatable)")
@stack_options
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def check_cmd(
    *,
    log: str,
    hardware_ref: str | None,
    gpus: int | None,
    model_ref: str | None,
    args: tuple[str, ...],
    megatron_args: str | None,
    warmup: int,
    run_id: str | None,
    csv_out: str | None,
    sets: tuple[str, ...],
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Read a Megatron-LM / Megatron-Bridge / NeMo, torchtitan, MaxText, llm-foundry, DeepSpeed, Hugging Face Trainer,
    nanotron, OLMo or nanoGPT (and modded-nanogpt) training LOG: what it measured, and where the log states the whole run, the same run
    predicted with the gap explained (ranked what-ifs, overheads)."""
    if csv_out and sets:
        raise InputError(
            "--csv",
            csv_out,
            "a measured-run row names catalog hardware or a spec file: write the "
            "what-if hardware (--set) to a TOML file and pass it as --hardware",
        )
    fields = field_overrides(args)
    if megatron_args:  # Megatron-LM's argparse table (analysis/megatron_args.py): the dump fields the flags set
        from perfmodel.analysis.megatron_args import parse

        fields = {**parse(megatron_args, "--megatron-args").given, **fields}
    res = check(log, hardware_ref, gpus, model_ref, fields, warmup, sets, stack, tuple(stack_set))
    out = res.document
    if csv_out:
        write_csv(csv_out, res.csv_row(run_id or Path(log).name, csv_out))
        out["csv"] = csv_out
    if as_json:
        return emit_json(out)
    print_check(out)
    return None


COMMANDS = [check_cmd]
