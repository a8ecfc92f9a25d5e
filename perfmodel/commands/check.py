"""`perfmodel check LOG`: read a run's own training log, predict the same run, explain the gap.

Parses the options, calls perfmodel.analysis.logcheck (which does the work) and renders its document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from perfmodel.analysis.logcheck import WARMUP_ITERS, _check, _csv_row, check_log, shown_what_ifs, write_csv
from perfmodel.commands.common import console, emit_json, print_table, stack_options, table
from perfmodel.errors import InputError

__all__ = ["check_cmd", "check_log"]


def print_stack(out: dict[str, Any]) -> None:
    """Which stack, and which features came from the log, from --stack-set and from the preset."""
    console.print(escape(f"stack: {out['stack']} ({out['stack_name']}): {out['stack_why']}"))
    by: dict[str, list[str]] = {}
    for f in out["stack_features"]:
        v = f["value"]
        v = (
            (",".join(v) or "none")
            if isinstance(v, list)
            else ("none" if v is None else str(v).lower() if isinstance(v, bool) else v)
        )
        said = f["from"] == "log" and f["how"].lower() != f"{f['feature']}={v}".lower()
        by.setdefault(f["from"], []).append(f"{f['feature']}={v}" + (f" ({f['how']})" if said else ""))
    for src, label in (
        ("log", "from the log"),
        ("--stack-set", "from --stack-set"),
        ("preset", f"not stated, from the preset {out['stack']}"),
    ):
        if by.get(src):
            console.print(escape(f"  {label}: " + "; ".join(by[src])))


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


@click.command("check")
@click.argument("log", type=click.Path(dir_okay=False))
@click.option(
    "--hardware", "hardware_ref", default=None, help="catalog id or TOML spec (required unless the log names the GPU)"
)
@click.option("--gpus", type=int, default=None, help="GPU count, where the log does not state it")
@click.option(
    "--model",
    "model_ref",
    default=None,
    help="catalog id or spec file (TOML / HF config.json) instead of the log's shape",
)
@click.option(
    "--arg",
    "args",
    multiple=True,
    metavar="NAME=VALUE",
    help="add or override a field of the log's argument dump / job config (repeatable)",
)
@click.option(
    "--warmup",
    type=int,
    default=WARMUP_ITERS,
    show_default=True,
    help="iterations after each start treated as warm-up and left out",
)
@click.option("--run-id", default=None, help="run_id of the --csv row [default: the log's file name]")
@click.option(
    "--csv",
    "csv_out",
    type=click.Path(dir_okay=False),
    default=None,
    help="write the run as one row of the measured-run schema (validation/README.md)",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="FIELD=VALUE",
    help="what-if hardware: override a spec field (repeatable), e.g. nic_gbps=800",
)
@stack_options
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def check_cmd(
    *,
    log: str,
    hardware_ref: str | None,
    gpus: int | None,
    model_ref: str | None,
    args: tuple[str, ...],
    warmup: int,
    run_id: str | None,
    csv_out: str | None,
    sets: tuple[str, ...],
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Read a Megatron-LM / NeMo / Megatron-Bridge or torchtitan training LOG, predict the same run and
    explain the gap: measured vs predicted throughput, ranked what-ifs, the predicted overheads."""
    if warmup < 0:
        raise InputError("--warmup", str(warmup), "must be >= 0")
    if gpus is not None and gpus < 1:
        raise InputError("--gpus", str(gpus), "must be a positive integer")
    if csv_out and sets:
        raise InputError(
            "--csv",
            csv_out,
            "a measured-run row names catalog hardware or a spec file: write the "
            "what-if hardware (--set) to a TOML file and pass it as --hardware",
        )
    out = _check(log, hardware_ref, gpus, model_ref, _kv(args), warmup, sets, stack, stack_set)
    run, hw_ref, hw, meas, mfu_fw, st = out.pop("_csv")
    if csv_out:
        row = _csv_row(run, hw_ref, hw, meas, log, run_id or Path(log).name, mfu_fw, st)
        write_csv(csv_out, row)
        out["csv"] = csv_out
    if as_json:
        return emit_json(out)
    m, pr = out["measured"], out["predicted"]
    console.print(
        f"[bold]{escape(log)}[/bold]: {out['framework']} log, {out['lines']:,} lines, "
        f"{m['intervals']} intervals ({m['used']} stable; {m['dropped_warmup']} warm-up, "
        f"{m['dropped_events']} after an evaluation/checkpoint left out)"
    )
    console.print(
        f"model: {escape(out['model_name'])} ({escape(out['model_source'])}); {out['hardware']}, "
        f"{out['precision']}, {out['layout']['gpus']} GPUs, {out['layout_text']}, "
        f"gbs {out['layout']['gbs']}, seq {out['layout']['seq']}, {out['micro_batches']} micro-batches"
    )
    for n in out["notes"]:
        console.print(f"[yellow]note:[/yellow] {escape(n)}")
    print_stack(out)
    ff = out["framework_flops"]
    fw_tf = "-" if m["tflops_per_gpu"] is None else f"{m['tflops_per_gpu']:.1f}"
    rows = [
        [
            "step time (s)",
            f"{m['step_s']:.3f} (p10-p90 {m['step_p10_s']:.3f}-{m['step_p90_s']:.3f})",
            f"{pr['step_time_s']:.3f}",
        ],
        ["tokens/s/GPU", f"{m['tokens_per_s_per_gpu']:,.0f}", f"{pr['tokens_per_s_per_gpu']:,.0f}"],
        ["MFU (causal, perfmodel FLOPs)", f"{m['mfu_causal']:.1%}", f"{pr['mfu_causal']:.1%}"],
        [f"TFLOP/s/GPU ({out['framework']}, {ff['convention'] or '-'} attention)", fw_tf, "-"],
        [
            "peak memory per GPU",
            f"{_gb(m['mem_max_reserved_bytes'])} reserved, {_gb(m['mem_max_allocated_bytes'])} allocated",
            f"{_gb(pr['memory_bytes_per_gpu'])}" + ("" if pr["fits"] else " (does not fit)"),
        ],
    ]
    console.print(table("Measured vs predicted", ["", "measured", "predicted"], rows, 1))
    if m["flops_per_token_framework"]:
        console.print(
            f"framework FLOPs/token {m['flops_per_token_framework']:.3e} ({escape(ff['source'])}); "
            f"perfmodel {ff['perfmodel_flops_per_token_causal']:.3e} causal, "
            f"{ff['perfmodel_flops_per_token_full']:.3e} full"
        )
    console.print(f"[bold]gap[/bold] (predicted - measured) / measured: {out['gap']:+.1%}; {out['verdict']}")
    wi = shown_what_ifs(out["what_ifs"])
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
            for w in wi
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
    if csv_out:
        console.print(f"wrote {escape(csv_out)} (one row; `perfmodel validate {escape(csv_out)}`)")
    return None


COMMANDS = [check_cmd]
