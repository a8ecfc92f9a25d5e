"""`perfmodel size`: how many whole servers / racks to train MODEL on TOKENS by a deadline (--days), the
fastest within a budget (--budget), or time and cost at a size (--gpus); several --hardware side by side.

Method in perfmodel/analysis/sizing.py (planner per size, reliability goodput and spares, economics, 80% bands)."""

from __future__ import annotations

import time
from typing import Callable

import click

from perfmodel.analysis.checks import warn_context
from perfmodel.analysis.sizing import DEFAULT_BATCH_TOKENS, size_constraints, size_systems
from perfmodel.commands.common import (
    buyer_option,
    convention_options,
    emit_json,
    precision_option,
    spares_option,
    stack_options,
    stderr_progress,
)
from perfmodel.core.calibration import constants
from perfmodel.core.predict import Options
from perfmodel.economics.job import split_sets
from perfmodel.errors import InputError
from perfmodel.render.size import print_sizing
from perfmodel.specs.hardware import HardwareSpec, resolve_hardware, split_hardware_sets
from perfmodel.specs.model import load_model


@click.command("size")
@click.option("--model", "model_ref", required=True, help="catalog id or spec file (TOML / HF config.json)")
@click.option("--tokens", type=float, required=True, help="tokens to train, e.g. 15e12")
@click.option("--days", type=float, default=None, help="deadline: the smallest cluster that meets it")
@click.option("--budget", type=float, default=None, help="US dollars: the fastest cluster whose whole run fits")
@click.option("--gpus", type=int, default=None, help="time and cost at this many GPUs (rounded up to whole units)")
@click.option(
    "--hardware",
    "hardware_refs",
    required=True,
    multiple=True,
    help="catalog id or TOML spec file (repeat to compare systems side by side)",
)
@precision_option
@click.option(
    "--seq",
    type=int,
    default=None,
    help="sequence length (tokens) [default: the model's pre-training length, its seq_len]",
)
@click.option(
    "--gbs",
    type=int,
    default=None,
    help=f"global batch (sequences) [default: {DEFAULT_BATCH_TOKENS:,} tokens / seq, a power of two]",
)
@buyer_option
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="what-if hardware field (e.g. nic_gbit_s=800) or cost / reliability assumption "
    "(e.g. allin_capex_usd_per_gpu=40000); repeatable",
)
@click.option(
    "--fix", multiple=True, metavar="AXIS=V", help="pin a layout axis at every size, e.g. --fix tp=8 (repeatable)"
)
@click.option(
    "--max",
    "cap",
    multiple=True,
    metavar="AXIS=V",
    help="cap a layout axis at every size, e.g. --max pp=8 (repeatable)",
)
@spares_option
@convention_options
@stack_options
@click.option("--json", "as_json", is_flag=True, help="machine-readable output: a list, one dict per system")
def command(
    *,
    model_ref: str,
    tokens: float,
    days: float | None,
    budget: float | None,
    gpus: int | None,
    hardware_refs: tuple[str, ...],
    precision: str,
    seq: int | None,
    gbs: int | None,
    buyer: str,
    sets: tuple[str, ...],
    spares: str,
    attention: str,
    routing: str,
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
    fix: tuple[str, ...] = (),
    cap: tuple[str, ...] = (),
) -> None:
    """Size a cluster for TOKENS of training: by deadline, budget or GPU count, per system."""
    given = [(n, v) for n, v in (("days", days), ("budget", budget), ("gpus", gpus)) if v is not None]
    if len(given) != 1:
        raise InputError(
            "--days / --budget / --gpus",
            "",
            "give exactly one of them" + (f" (got {', '.join('--' + n for n, _ in given)})" if given else ""),
        )
    mode, target = given[0]
    t0 = time.perf_counter()
    m = load_model(model_ref)
    seq = seq if seq is not None else m.seq_len
    warn_context(m, seq)
    cons = size_constraints(fix, cap)
    hw_sets, rest = split_hardware_sets(sets)
    cost_over, rel_over = split_sets(tuple(rest))
    rel_over = {**rel_over, "count_hot_spares": spares == "charged"}
    opts = Options(precision, attention, routing, constants(), stack, stack_set)  # type: ignore[arg-type]
    hws = [resolve_hardware(ref, hw_sets) for ref in hardware_refs]  # every id checked before any planning
    # progress on a terminal's stderr only (never in --json, never in a log): the sizes planned so far
    with stderr_progress("{task.description}", "{task.completed} sizes planned", show=not as_json) as bar:

        def on_system(hw: HardwareSpec) -> Callable[[int], None]:
            task = bar.add_task(f"{hw.id}", total=None)
            return lambda n: bar.update(task, advance=1, description=f"{hw.id}: {n:,} GPUs")

        out = size_systems(
            m,
            hws,
            tokens,
            mode,  # type: ignore[arg-type]
            target,
            opts,
            seq=seq,
            gbs=gbs,
            buyer=buyer,
            cost_over=cost_over,
            rel_over=rel_over,
            constraints=cons,
            on_system=on_system,
        )
    if as_json:
        return emit_json(out)
    print_sizing(out, m.name, tokens, mode, target, opts, buyer, hw_sets, cons, time.perf_counter() - t0)
    return None


COMMANDS = [command]
