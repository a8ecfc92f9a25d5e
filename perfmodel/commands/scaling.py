"""`perfmodel scaling`: weak or strong scaling of one layout (or the planner's best per size) over a list
of GPU counts, with cost, energy, what grows, and goodput (perfmodel/analysis/scaling.py)."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

from perfmodel.analysis.checks import warn_context
from perfmodel.analysis.scaling import (
    MODES,
    load_runs,
    parse_gpu_list,
    plot,
    scaling,
    summary_growth,
)
from perfmodel.analysis.search import parse_constraints
from perfmodel.commands.common import (
    PlannerProgress,
    axis_options,
    convention_options,
    emit_json,
    precision_option,
    recompute_option,
    spares_option,
    stack_options,
)
from perfmodel.core.calibration import constants
from perfmodel.core.predict import Options
from perfmodel.economics.tco import BUYERS
from perfmodel.errors import InputError
from perfmodel.render import console
from perfmodel.render.scaling import print_scaling
from perfmodel.specs.hardware import resolve_hardware
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import load_model


@click.command("scaling")
@click.option("--model", "model_ref", required=True, help="catalog id or spec file (TOML / HF config.json)")
@click.option("--hardware", "hardware_ref", required=True, help="catalog id or TOML spec file")
@click.option(
    "--gpus",
    "gpus_text",
    required=True,
    help="GPU counts: 64,128,256 or 64,128,...,16384 (continues the ratio up to the last number)",
)
@click.option(
    "--mode",
    type=click.Choice(list(MODES)),
    default="weak",
    show_default=True,
    help="weak: hold the per-GPU batch (global batch grows); strong: hold the global batch",
)
@click.option("--gbs", type=int, required=True, help="global batch (sequences) at the first (smallest) GPU count")
@click.option("--seq", type=int, required=True, help="sequence length (tokens)")
@click.option("--search", "use_search", is_flag=True, help="run the planner at every size instead of a fixed layout")
@click.option("--fix", multiple=True, metavar="AXIS=V", help="with --search: pin an axis, e.g. --fix tp=8 (repeatable)")
@click.option(
    "--max", "cap", multiple=True, metavar="AXIS=V", help="with --search: cap an axis, e.g. --max pp=8 (repeatable)"
)
@axis_options
@precision_option
@recompute_option
@convention_options
@click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE", help="what-if hardware field (repeatable)")
@stack_options
@click.option("--buyer", default="hyperscaler", show_default=True, type=click.Choice(BUYERS), help="cost assumptions")
@spares_option
@click.option(
    "--measured/--no-measured",
    default=True,
    show_default=True,
    help="attach the measured runs of validation/runs.csv with the same model, hardware, precision, "
    "batch rule and layout",
)
@click.option(
    "--plot",
    "plot_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="write a PNG: tokens/s/GPU, MFU and the exposed share of what grows vs GPUs (log x)",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def command(
    *,
    model_ref: str,
    hardware_ref: str,
    gpus_text: str,
    mode: str,
    gbs: int,
    seq: int,
    use_search: bool,
    fix: tuple[str, ...],
    cap: tuple[str, ...],
    axes: dict[str, Any],
    precision: str,
    recompute: str,
    attention: str,
    routing: str,
    sets: tuple[str, ...],
    buyer: str,
    spares: str,
    measured: bool,
    plot_path: str | None,
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Weak or strong scaling over GPU counts: step time, tokens/s/GPU, MFU, $/1M tokens, J/token, what grows
    (DP communication, bubble, all-to-all) and goodput (failures dominate at 100,000 GPUs)."""
    m, hw = load_model(model_ref), resolve_hardware(hardware_ref, sets)
    warn_context(m, seq)
    gpus = parse_gpu_list(gpus_text)
    opts = Options(precision, attention, routing, constants(), stack, stack_set)  # type: ignore[arg-type]
    base = Layout(gpus=gpus[0], gbs=gbs, seq=seq, recompute=recompute, **axes)  # type: ignore[arg-type]
    given = [f"--{k}" for k in ("tp", "pp", "vp", "cp", "ep", "etp", "mbs") if getattr(base, k) != 1]
    given += ["--fsdp"] * base.fsdp + ["--recompute"] * (recompute != "none")
    if use_search and given:
        raise InputError(
            "--search",
            " ".join(given),
            "the planner picks the layout at every size: drop the layout "
            "flags, or pin an axis with --fix (e.g. --fix tp=8) or cap it with --max",
        )
    if (fix or cap) and not use_search:
        raise InputError("--fix / --max", "", "constrain the planner: use them with --search")
    cons = parse_constraints(fix, cap) if use_search else None
    prog = PlannerProgress(gpus[0], show=use_search and not as_json)  # a fixed layout takes well under a second
    try:
        with prog.bar:
            res = scaling(
                m,
                hw,
                gpus,
                mode,
                base,
                opts,
                search=use_search,
                buyer=buyer,
                measured=load_runs() if measured and not hw.overridden else None,
                constraints=cons,
                on_chunk=prog.step if use_search else None,
                spares=spares,
            )
    except KeyboardInterrupt:
        raise prog.interrupted() from None
    if not any(p.ok for p in res.points):  # nothing usable to show
        raise InputError(
            "scaling",
            "",
            f"no size can run {m.id} on {hw.id}: "
            + "; ".join(f"{p.gpus:,} GPUs: {p.reason}" for p in res.points[:4])
            + ("; ..." if len(res.points) > 4 else ""),
        )
    if plot_path:
        plot(res, plot_path)
    if as_json:
        d = res.to_dict()
        d["hardware_overridden"] = list(hw.overridden)
        d["growth"] = summary_growth(res)
        if plot_path:
            d["plot"] = plot_path
        return emit_json(d)
    print_scaling(res)
    if plot_path:
        console.print(f"plot written to {escape(plot_path)}")
    return None


COMMANDS = [command]
