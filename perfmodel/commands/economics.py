"""`perfmodel tco`, `perfmodel cost`, `perfmodel compare`: $ per GPU-hour, cost and energy of a training
run (nominal and after reliability), and systems side by side.

Formulas live in perfmodel/economics/tco.py (TCO, $/token, J/token, households) and perfmodel/economics/reliability.py
(interruptions, Young/Daly checkpointing, goodput, spares); defaults in perfmodel/costs.toml."""

from __future__ import annotations

import functools
from typing import Any, Callable

import click
from click.core import ParameterSource

from perfmodel.analysis.checks import warn_context
from perfmodel.analysis.costs import compare, run_cost
from perfmodel.commands.common import (
    LayoutFlags,
    buyer_option,
    emit_json,
    layout_options,
    precision_option,
    recompute_option,
    spares_option,
    stack_options,
)
from perfmodel.core.predict import Options
from perfmodel.economics.job import reliability_overrides, split_sets
from perfmodel.economics.reliability import RECOVERIES
from perfmodel.economics.tco import tco_for
from perfmodel.errors import InputError
from perfmodel.render.economics import print_compare, print_cost, print_tco
from perfmodel.specs.hardware import resolve_hardware, split_hardware_sets
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import load_model


def cost_options(f: Callable) -> Callable:
    opts = [
        buyer_option,
        click.option(
            "--set",
            "sets",
            multiple=True,
            metavar="KEY=VALUE",
            help="override a named cost or reliability assumption, e.g. electricity_usd_per_kwh=0.12, or a "
            "what-if hardware field, e.g. nic_gbit_s=800 (repeatable)",
        ),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


RELIABILITY_FLAGS = ("mtbi_gpu_days", "restart_s", "checkpoint_s", "spare_units", "spares", "interval", "recovery")


def reliability_options(f: Callable) -> Callable:
    """The reliability flags, passed to the command as `reliability`: economics.job.reliability_overrides's
    keyword arguments."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kw: Any) -> Any:
        return f(*args, reliability={k: kw.pop(k) for k in RELIABILITY_FLAGS}, **kw)

    opts = [
        click.option(
            "--mtbi-gpu-days",
            type=float,
            default=None,
            help="mean time between interruptions per GPU, GPU-days [default: costs.toml by hardware class: HGX "
            "1,900 (Llama 3, band 1,200-5,000), A100 1,231, NVL72 2,000; given alone, no band]",
        ),
        click.option(
            "--restart-s",
            type=float,
            default=None,
            help="restart time after an interruption, s, without the checkpoint restore [default: 600, band 300-1,200]",
        ),
        click.option(
            "--checkpoint-s",
            type=float,
            default=None,
            help="blocking checkpoint write time, s [default: 14 B/param over 0.5 GB/s per GPU]",
        ),
        click.option(
            "--spare-units",
            type=int,
            default=None,
            help="spare servers / racks held for the job [default: enough for the repair load, at least 1]",
        ),
        click.option(
            "--interval",
            type=click.Choice(["young", "daly"]),
            default="young",
            show_default=True,
            help="checkpoint interval formula",
        ),
        click.option(
            "--recovery",
            type=click.Choice(RECOVERIES),
            default="job",
            show_default=True,
            help="job: every interruption restarts the whole job from its checkpoint; replica: only the failed "
            "data-parallel replica recovers, from a peer, while the others train (Meta FT-HSDP / torchft)",
        ),
    ]
    for o in reversed(opts):
        wrapper = o(wrapper)
    return spares_option(wrapper)


# ---- tco -------------------------------------------------------------------------------------------


@click.command("tco")
@click.option("--hardware", "hardware_ref", required=True, help="catalog id or TOML spec file")
@cost_options
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def tco_cmd(*, hardware_ref: str, buyer: str, sets: tuple[str, ...], as_json: bool) -> None:
    """Total cost of ownership: $ per GPU-hour with its breakdown (capital, power, colocation, support)."""
    hw_sets, rest = split_hardware_sets(sets)
    cost_over, rel_over = split_sets(rest)
    if rel_over:
        k = next(iter(rel_over))
        raise InputError("--set", k, "a reliability assumption: use it with `perfmodel cost` or `compare`")
    hw = resolve_hardware(hardware_ref, hw_sets)
    t = tco_for(hw, buyer, cost_over)
    d = {**t.to_dict(), "hardware_overridden": list(hw.overridden)}
    if as_json:
        return emit_json(d)
    print_tco(hw, buyer, t, d)
    return None


# ---- cost ------------------------------------------------------------------------------------------


def _relaxed_layout_options(f: Callable) -> Callable:
    """predict's layout flags, with --gbs/--seq optional (not needed with --tokens-per-s-per-gpu)."""
    f = layout_options(f)
    for p in getattr(f, "__click_params__", []):
        if p.name in ("gbs", "seq"):
            p.required = False
    return f


@click.command("cost")
@_relaxed_layout_options
@click.option(
    "--tokens-per-s-per-gpu",
    "measured_tps",
    type=float,
    default=None,
    help="use this measured throughput instead of a prediction (layout flags other than --gpus then unused)",
)
@click.option("--tokens", type=float, required=True, help="tokens to train, e.g. 15e12")
@cost_options
@reliability_options
@stack_options
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def cost_cmd(
    *,
    flags: LayoutFlags,
    measured_tps: float | None,
    tokens: float,
    buyer: str,
    sets: tuple[str, ...],
    reliability: dict[str, Any],
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Cost, energy and time of training TOKENS: per 1M tokens, whole run, households; nominal and after reliability."""
    hw_sets, rest = split_hardware_sets(sets)
    m, hw = flags.specs(hw_sets)
    cost_over, extra = split_sets(rest)
    rel_over = reliability_overrides(extra, **reliability)
    gpus, gbs, seq = flags.gpus, flags.gbs, flags.seq
    lay = flags.layout() if gbs is not None and seq is not None else None
    if lay is None and measured_tps is None:
        missing = [n for n, v in (("--gbs", gbs), ("--seq", seq)) if v is None]
        raise InputError(" and ".join(missing), "", "required to predict throughput (or pass --tokens-per-s-per-gpu)")
    opts = flags.options(stack, stack_set)
    # the precision bounds a measured throughput's implied MFU only where given (else the fastest precision)
    prec_given = click.get_current_context().get_parameter_source("precision") != ParameterSource.DEFAULT
    r = run_cost(
        m,
        hw,
        lay,
        opts,
        tokens=tokens,
        buyer=buyer,
        cost_over=cost_over,
        rel_over=rel_over,
        gpus=gpus,
        measured_tps=measured_tps,
        seq=seq,
        precision_given=prec_given,
    )
    if as_json:
        return emit_json(r)
    print_cost(r, m, hw, opts, gpus, tokens, buyer)
    return None


# ---- compare ---------------------------------------------------------------------------------------


@click.command("compare")
@click.option("--model", "model_ref", required=True, help="catalog id or spec file")
@click.option("--hardware", "hardware_refs", required=True, multiple=True, help="catalog id or TOML file (repeat)")
@click.option("--gpus", type=int, required=True, help="number of GPUs on each system")
@click.option("--gbs", type=int, required=True, help="global batch (sequences)")
@click.option("--seq", type=int, required=True, help="sequence length (tokens)")
@precision_option
@click.option("--tp", type=int, default=1, show_default=True, help="given layout (used where the planner finds none)")
@click.option("--pp", type=int, default=1, show_default=True)
@click.option("--vp", type=int, default=1, show_default=True)
@click.option("--cp", type=int, default=1, show_default=True)
@click.option("--ep", type=int, default=1, show_default=True)
@click.option("--etp", type=int, default=1, show_default=True)
@click.option("--mbs", type=int, default=1, show_default=True)
@click.option("--fsdp", is_flag=True)
@recompute_option
@click.option("--planner/--no-planner", default=True, show_default=True, help="search the best layout per system")
@click.option("--tokens", type=float, default=1e12, show_default=True, help="tokens to train (run totals)")
@cost_options
@reliability_options
@stack_options
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def compare_cmd(
    *,
    model_ref: str,
    hardware_refs: tuple[str, ...],
    gpus: int,
    gbs: int,
    seq: int,
    precision: str,
    tp: int,
    pp: int,
    vp: int,
    cp: int,
    ep: int,
    etp: int,
    mbs: int,
    fsdp: bool,
    recompute: str,
    planner: bool,
    tokens: float,
    buyer: str,
    sets: tuple[str, ...],
    reliability: dict[str, Any],
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Systems side by side: best layout, tokens/s/GPU, MFU, $/GPU-h, $/1M tokens, J/token, goodput, perf/TCO."""
    m = load_model(model_ref)
    warn_context(m, seq)
    hw_sets, rest = split_hardware_sets(sets)
    cost_over, extra = split_sets(rest)
    rel_over = reliability_overrides(extra, **reliability)
    given = Layout(
        gpus=gpus, gbs=gbs, seq=seq, tp=tp, pp=pp, vp=vp, cp=cp, ep=ep, etp=etp, mbs=mbs, fsdp=fsdp, recompute=recompute
    )  # type: ignore[arg-type]
    opts = Options(precision=precision, stack=stack, stack_set=stack_set)
    hws = [resolve_hardware(ref, hw_sets) for ref in hardware_refs]
    doc = compare(
        m, hws, given, opts, planner=planner, tokens=tokens, buyer=buyer, cost_over=cost_over, rel_over=rel_over
    )
    if as_json:
        return emit_json(doc)
    print_compare(doc, m, opts, hw_sets, gpus, gbs, seq, tokens, buyer)
    return None


COMMANDS = [tco_cmd, cost_cmd, compare_cmd]
