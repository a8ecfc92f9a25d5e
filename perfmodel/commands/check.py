"""`perfmodel check LOG`: what a run's own training log measured, the same run predicted, the gap explained.

Parses the options, calls perfmodel.analysis.logcheck (which does the work) and renders its document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from perfmodel.analysis.logcheck import WARMUP_ITERS, check, check_log, shown_what_ifs, stack_groups, write_csv
from perfmodel.commands.common import emit_json, stack_options
from perfmodel.errors import InputError
from perfmodel.render import console, print_table, table

__all__ = ["check_cmd", "check_log"]  # check_log: the library entry, kept importable from here


def _kv(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k.strip():
            raise InputError("--arg", it, "expected NAME=VALUE (an argument-dump or job-config field)")
        out[k.strip()] = v.strip()
    return out


def _gb(x: float | None) -> str:
    return "-" if not x else f"{x / 1e9:.1f} GB"


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _measured_rows(m: dict[str, Any], framework: str) -> list[list[str]]:
    """The measured column: step time, tokens/s/GPU, the framework's own TFLOP/s and MFU, peak memory."""
    step = _num(m["step_s"], ".3f")
    if m["step_p10_s"] is not None:
        step += f" (p10-p90 {m['step_p10_s']:.3f}-{m['step_p90_s']:.3f})"
    mem = f"{_gb(m['mem_max_reserved_bytes'])} reserved, {_gb(m['mem_max_allocated_bytes'])} allocated"
    if m["mem_usage_fraction"]:
        mem += f"; device {m['mem_usage_fraction']:.1%} in use"
    return [
        ["step time (s)", step],
        ["tokens/s/GPU", _num(m["tokens_per_s_per_gpu"], ",.0f")],
        ["MFU (causal, perfmodel FLOPs)", _num(m["mfu_causal"], ".1%")],
        [f"TFLOP/s/GPU ({framework}'s own)", _num(m["tflops_per_gpu"], ".1f")],
        [f"MFU ({framework}'s own)", _num(m["mfu_framework"], ".1%")],
        ["peak memory per GPU", mem],
    ]


def _print_measured_only(out: dict[str, Any]) -> None:
    m = out["measured"]
    console.print(table("Measured", ["", "measured"], _measured_rows(m, out["framework"]), 1))
    for n in m["missing"]:
        console.print(f"[yellow]not measured:[/yellow] {escape(n)}")
    console.print(f"[bold]{escape(out['not_predicted'])}[/bold]")


def _print_stack(out: dict[str, Any]) -> None:
    console.print(escape(f"stack: {out['stack']} ({out['stack_name']}): {out['stack_why']}"))
    for label, items in stack_groups(out):
        console.print(escape(f"  {label}: " + "; ".join(items)))


def _print_predicted(out: dict[str, Any]) -> None:
    m, pr = out["measured"], out["predicted"]
    console.print(
        f"model: {escape(out['model_name'])} ({escape(out['model_source'])}); {out['hardware']}, "
        f"{out['precision']}, {out['layout']['gpus']} GPUs, {out['layout_text']}, "
        f"gbs {out['layout']['gbs']}, seq {out['layout']['seq']}, {out['micro_batches']} micro-batches"
    )
    _print_stack(out)
    rows = _measured_rows(m, out["framework"])
    predicted = [
        f"{pr['step_time_s']:.3f}",
        f"{pr['tokens_per_s_per_gpu']:,.0f}",
        f"{pr['mfu_causal']:.1%}",
        "-",
        "-",
        _gb(pr["memory_bytes_per_gpu"]) + ("" if pr["fits"] else " (does not fit)"),
    ]
    rows = [r + [p] for r, p in zip(rows, predicted)]
    console.print(table("Measured vs predicted", ["", "measured", "predicted"], rows, 1))
    ff = out["framework_flops"]
    if m["flops_per_token_framework"]:
        console.print(
            f"framework FLOPs/token {m['flops_per_token_framework']:.3e} ({escape(ff['source'])}); "
            f"perfmodel {ff['perfmodel_flops_per_token_causal']:.3e} causal, "
            f"{ff['perfmodel_flops_per_token_full']:.3e} full"
        )
    console.print(f"[bold]gap[/bold] (predicted - measured) / measured: {out['gap']:+.1%}; {out['verdict']}")
    print_table(
        "Likely causes, closest to the measurement first (each predicted)",
        ["what if", "tokens/s/GPU", "vs measured", "fits"],
        [
            [
                escape(w["cause"]),
                f"{w['tokens_per_s_per_gpu']:,.0f}",
                f"{w['tokens_per_s_per_gpu'] / m['tokens_per_s_per_gpu'] - 1:+.1%}",
                "yes" if w["fits"] else "no",
            ]
            for w in shown_what_ifs(out["what_ifs"])
        ],
        1,
        wrap=(0,),
    )
    print_table(
        "Predicted overheads, largest first",
        ["part", "s", "% of step", "tokens/s/GPU without"],
        [
            [
                escape(o["label"]),
                f"{o['seconds']:.3f}",
                f"{o['share']:.1%}",
                f"{o['tokens_per_s_per_gpu_without']:,.0f}",
            ]
            for o in out["overheads"][:8]
        ],
        1,
        wrap=(0,),
    )


def _render(out: dict[str, Any]) -> None:
    head = f"[bold]{escape(out['log'])}[/bold]: {out['framework']} log, {out['lines']:,} lines"
    if out["status"] == "no_iteration":  # one line, however wide
        console.print(f"{head}: {escape(out['summary'])}", soft_wrap=True)
        return
    console.print(f"{head}, {out['measured']['intervals']} intervals; step time: {escape(out['measured']['rule'])}")
    for n in out["notes"]:
        console.print(f"[yellow]note:[/yellow] {escape(n)}")
    if out["status"] == "measured":
        _print_measured_only(out)
    else:
        _print_predicted(out)
    if out.get("csv"):
        console.print(f"wrote {escape(out['csv'])} (one row; `perfmodel validate {escape(out['csv'])}`)")


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
    """Read a Megatron-LM / Megatron-Bridge / NeMo or torchtitan training LOG: what it measured, and where the
    log states the whole run, the same run predicted with the gap explained (ranked what-ifs, overheads)."""
    if csv_out and sets:
        raise InputError(
            "--csv",
            csv_out,
            "a measured-run row names catalog hardware or a spec file: write the "
            "what-if hardware (--set) to a TOML file and pass it as --hardware",
        )
    fields = _kv(args)
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
    _render(out)
    return None


COMMANDS = [check_cmd]
