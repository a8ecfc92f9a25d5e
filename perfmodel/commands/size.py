"""`perfmodel size`: how many whole servers / racks to train MODEL on TOKENS by a deadline (--days), the
fastest within a budget (--budget), or time and cost at a size (--gpus); several --hardware side by side.

Method in perfmodel/analysis/sizing.py (planner per size, reliability goodput and spares, economics, 80% bands)."""

from __future__ import annotations

import time
from typing import Callable

import click
from rich.markup import escape

from perfmodel.analysis.checks import warn_context
from perfmodel.analysis.sizing import DEFAULT_BATCH_TOKENS, MAX_GPUS, size_constraints, size_systems
from perfmodel.analysis.uncertainty import span
from perfmodel.commands.common import (
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
from perfmodel.economics.tco import BUYERS
from perfmodel.errors import InputError
from perfmodel.render import console, stack_line, table
from perfmodel.specs.hardware import HardwareSpec, resolve_hardware, split_hardware_sets
from perfmodel.specs.layout import layout_text
from perfmodel.specs.model import load_model


def _band(d: dict, key: str, fmt: str) -> str:
    v = d.get(key)
    if v is None:
        return "-"
    return f"{format(v, fmt)} ({span(d.get(f'{key}_low'), d.get(f'{key}_high'), fmt)})"


def _usd(d: dict, key: str, fmt: str = ",.0f") -> str:
    if d.get(key) is None:
        return "- (no price)"
    return "$" + _band(d, key, fmt)


def _units(d: dict) -> str:
    u = d["unit"]
    per = f"{u['job_gpus']} of {u['gpus']}" if u["hot_spare_gpus"] else f"{u['gpus']}"
    return f"{d['gpus']:,} ({d['units']:,} {u['name']}s x {per})"


def _smaller(d: dict) -> str:
    s = d.get("smaller")
    if not s:
        return "-" if d["target"]["mode"] == "days" and "smaller" in d else ""
    days = s["wall_days_after_reliability"]
    return f"{s['gpus']:,} GPUs: " + (f"{days:,.1f} days" if days is not None else s["why_not"])


ROWS: list[tuple[str, Callable[[dict], str]]] = [
    ("GPUs training (units)", _units),
    (
        "installed incl. spare units",
        lambda d: (
            f"{d['gpus_installed']:,} ({d['spare_units']} spare {d['unit']['name']}"
            f"{'s' if d['spare_units'] != 1 else ''})"
        ),
    ),
    ("best layout", lambda d: layout_text(d["layout"], mbs=True)),
    ("tokens/s/GPU (80% band)", lambda d: _band(d, "tokens_per_s_per_gpu", ",.0f")),
    ("MFU", lambda d: f"{d['mfu']:.1%}"),
    (
        "goodput (band)",
        lambda d: (
            f"{d['goodput_fraction']:.2%} ({d['reliability']['goodput_fraction_low']:.1%}-"
            f"{d['reliability']['goodput_fraction_high']:.1%})"
        ),
    ),
    ("wall-clock days (80% band)", lambda d: _band(d, "wall_days_after_reliability", ",.1f")),
    ("$ whole run (80% band)", lambda d: _usd(d, "usd_total_after_reliability")),
    (
        "$ per 1M tokens",
        lambda d: (
            "-"
            if d["usd_per_million_tokens_after_reliability"] is None
            else f"{d['usd_per_million_tokens_after_reliability']:.4f}"
        ),
    ),
    ("$ per GPU-hour", lambda d: "-" if d["usd_per_gpu_hour"] is None else f"{d['usd_per_gpu_hour']:.3f}"),
    ("energy MWh, drawn / rated", lambda d: _both(d, "mwh_after_reliability")),
    ("US household-years, drawn / rated", lambda d: _both(d, "household_years_after_reliability")),
    ("electricity $, drawn / rated", lambda d: _both(d, "electricity_usd_after_reliability")),
    (
        "power drawn: node (of rating), site",
        lambda d: (
            f"{d['power']['node_avg_w'] / 1e3:,.2f} kW ({d['power']['share_of_rating']:.0%}), "
            f"{d['power']['site_avg_w'] / 1e6:,.2f} MW"
            if d["power"]["method"] == "drawn"
            else "- (rated only)"
        ),
    ),
    ("limited by", lambda d: d["limit"]["text"]),
    ("equivalent layouts", lambda d: _equivalent(d)),
]


def _both(d: dict, key: str) -> str:
    """An energy figure after reliability by the drawn method and by the rated one (the cost report's)."""
    e = d["energy"]
    drawn = f"{e['drawn'][key]:,.0f}" if e["drawn"] else "-"
    return f"{drawn} / {e['rated'][key]:,.0f}"


def _equivalent(d: dict) -> str:
    eq = d.get("equivalent")
    if not eq:
        return "none within the 80% band"
    return f"{len(eq['ranks'])} within the 80% band; suggested: {layout_text(eq['suggestion_layout'], mbs=True)}"


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
@click.option(
    "--buyer",
    default="hyperscaler",
    show_default=True,
    type=click.Choice(BUYERS),
    help="buyer type whose cost assumptions apply (perfmodel/costs.toml)",
)
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
    errors = [d for d in out if "error" in d]
    if as_json:
        return emit_json(out)
    ok = [d for d in out if "error" not in d]
    used = ", ".join(f"{d['hardware']} {d['gpus']:,}" for d in ok if d["gpus"] != int(target))
    on = f"on {int(target):,} GPUs" + (f" (rounded up to whole units: {used})" if used else "")
    what = {"days": f"in {target:g} days", "budget": f"within ${target:,.0f}", "gpus": on}[mode]
    d0 = ok[0]
    console.print(
        f"[bold]{escape(m.name)}[/bold]: {tokens:.3g} tokens {what}, {precision}, seq {d0['seq']}, "
        f"global batch {d0['gbs']} ({d0['gbs_tokens'] / 1e6:.1f}M tokens), buyer {buyer}"
    )
    console.print(stack_line(opts))
    rows = [[name] + [fn(d) if "error" not in d else "" for d in out] for name, fn in ROWS]
    if mode == "days":
        rows.append(["next smaller size"] + [_smaller(d) if "error" not in d else "" for d in out])
    if errors:
        rows.append(["[red]not possible[/red]"] + [escape(d.get("error", "")) for d in out])
    title = {
        "days": "Smallest cluster meeting the deadline",
        "budget": "Fastest cluster within the budget",
        "gpus": "Time and cost at this size",
    }[mode] + " (days, $ and energy after reliability)"
    console.print(table(title, [""] + [d["hardware"] for d in out], rows, 1))
    if hw_sets:
        console.print("what-if hardware: " + escape(", ".join(hw_sets)))
    for d in ok:
        console.print(f"{escape(d['hardware'])} {escape(d['spares_text'])}")
    for d in ok:
        if not d["priced"]:
            console.print(f"[yellow]{escape(d['hardware'])}: {escape(d['price_note'])}[/yellow]")
    sources = escape(", ".join(sorted({d["band"].get("source", "") for d in ok})))
    groups = ", ".join(d["hardware"] + " " + d["band"]["group"] for d in ok)
    console.print(
        f"80% bands: measured/predicted throughput spread of the validation runs per hardware family and "
        f"dense/MoE ({sources}; {groups}); days and $ scale inversely."
    )
    cons = ", ".join([f"{k}={v}" for k, v in cons.fix.items()] + [f"{k}<={v}" for k, v in cons.cap.items()])
    console.print(
        f"planner at each size tried ({cons}); sizes: whole units up to 16, then 8 per doubling, "
        f"up to {MAX_GPUS:,} GPUs; {time.perf_counter() - t0:.1f} s"
    )
    return None


COMMANDS = [command]
