"""`perfmodel search`: rank every legal layout for a model on a cluster (perfmodel/analysis/search.py)."""

from __future__ import annotations

import time

import click

from perfmodel.analysis.checks import warn_context
from perfmodel.analysis.planner_report import search_report
from perfmodel.analysis.scaling import parse_gpu_list
from perfmodel.analysis.search import OBJECTIVES, parse_constraints, search_sizes
from perfmodel.commands.common import PlannerProgress, convention_options, emit_json, precision_option, stack_options
from perfmodel.core.calibration import constants
from perfmodel.core.predict import Options
from perfmodel.errors import warn
from perfmodel.render.search import print_search
from perfmodel.specs.hardware import resolve_hardware, whatif_fields
from perfmodel.specs.model import load_model


@click.command("search")
@click.option("--model", "model_ref", required=True, help="catalog id or spec file (TOML / HF config.json)")
@click.option("--hardware", "hardware_ref", required=True, help="catalog id or TOML spec file")
@click.option(
    "--gpus", "gpus_text", required=True, help="GPU count, or a list: 128,256,512 or 128,256,...,4096 (doubling)"
)
@click.option("--gbs", type=int, required=True, help="global batch (sequences)")
@click.option("--seq", type=int, required=True, help="sequence length (tokens)")
@precision_option
@click.option(
    "--objective",
    default="throughput",
    show_default=True,
    type=click.Choice(list(OBJECTIVES)),
    help="tokens/s/GPU, cost per token, or energy per token",
)
@click.option("--top", "top_k", type=int, default=10, show_default=True, help="layouts to show")
@click.option("--fix", multiple=True, metavar="AXIS=V", help="pin an axis, e.g. --fix tp=4 (repeatable)")
@click.option("--max", "cap", multiple=True, metavar="AXIS=V", help="cap an axis, e.g. --max pp=8 (repeatable)")
@click.option(
    "--uneven-vp",
    is_flag=True,
    help="also interleaved layouts whose layers do not fill the pp*vp chunks "
    "evenly (Megatron-Core pipeline_model_parallel_layout; ~4x the layouts)",
)
@convention_options
@stack_options
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="FIELD=VALUE",
    help="what-if hardware: override a spec field (repeatable), e.g. nvlink_domain=144, nic_gbit_s=800",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def command(
    *,
    model_ref: str,
    hardware_ref: str,
    gpus_text: str,
    gbs: int,
    seq: int,
    precision: str,
    objective: str,
    top_k: int,
    fix: tuple[str, ...],
    cap: tuple[str, ...],
    attention: str,
    routing: str,
    as_json: bool,
    sets: tuple[str, ...] = (),
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
    uneven_vp: bool = False,
) -> None:
    """Enumerate every legal layout, score them all, print the best and the Pareto fronts.

    Axes for --fix / --max: tp pp vp cp ep etp dp mbs fsdp recompute."""
    t0 = time.perf_counter()
    model, hw = load_model(model_ref), resolve_hardware(hardware_ref, sets)
    warn_context(model, seq)
    gpus = parse_gpu_list(gpus_text)
    opts = Options(precision, attention, routing, constants(), stack, stack_set)  # type: ignore[arg-type]
    cons = parse_constraints(fix, cap, uneven_vp)
    prog = PlannerProgress(gpus[0], show=not as_json)
    try:
        with prog.bar:
            results = search_sizes(model, hw, gpus, gbs, seq, opts, objective, top_k, cons, prog.on_size)
    except KeyboardInterrupt:
        raise prog.interrupted(where=len(gpus) > 1) from None
    out, top, front, values = search_report(model, hw, gpus, gbs, seq, opts, objective, top_k, results, fix, cap)
    out["seconds"] = time.perf_counter() - t0
    warn(out.get("suggestion_warning"))
    if as_json:
        emit_json(out)
        return
    print_search(out, top, front, values, results, objective, whatif_fields(hw))


COMMANDS = [command]
