"""`perfmodel tco`, `perfmodel cost`, `perfmodel compare`: $ per GPU-hour, cost and energy of a training
run (nominal and after reliability), and systems side by side.

Formulas live in perfmodel/economics/tco.py (TCO, $/token, J/token, households) and perfmodel/economics/reliability.py
(interruptions, Young/Daly checkpointing, goodput, spares); defaults in perfmodel/costs.toml."""

from __future__ import annotations

from typing import Any, Callable

import click
from click.core import ParameterSource
from rich.markup import escape

from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import warn_context
from perfmodel.analysis.costs import compare, run_cost
from perfmodel.commands.common import emit_json, layout_options, precision_option, spares_option, stack_options
from perfmodel.core.predict import Options
from perfmodel.economics.job import reliability_overrides, split_sets
from perfmodel.economics.reliability import RECOVERIES
from perfmodel.economics.tco import BUYERS, tco_for
from perfmodel.errors import InputError
from perfmodel.render import console, energy_rows, power_rows, stack_line, table
from perfmodel.specs.hardware import resolve_hardware, split_hardware_sets, whatif_fields
from perfmodel.specs.layout import Layout, layout_text
from perfmodel.specs.model import load_model


def cost_options(f: Callable) -> Callable:
    opts = [
        click.option(
            "--buyer",
            default="hyperscaler",
            show_default=True,
            type=click.Choice(BUYERS),
            help="buyer type whose cost assumptions apply (perfmodel/costs.toml)",
        ),
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


def reliability_options(f: Callable) -> Callable:
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
        f = o(f)
    return spares_option(f)


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
    console.print(f"[bold]{escape(hw.display_name(changes=False))}[/bold], buyer: {buyer}")
    if hw.overridden:
        console.print("what-if hardware: " + escape(whatif_fields(hw)))
    if t.price_note:
        console.print(f"[yellow]{escape(t.price_note)}[/yellow]")
    console.print(
        f"capital cost per GPU all-in: ${t.capex_usd_per_gpu:,.0f} "
        f"(server/rack ${t.capex_breakdown_usd_per_gpu['server_or_rack']:,.0f} + network, storage, other "
        f"${t.capex_breakdown_usd_per_gpu['network_storage_other']:,.0f}); power per GPU {t.it_w_per_gpu:,.0f} W IT, "
        f"{t.utility_w_per_gpu:,.0f} W at the utility"
    )
    rows = [
        [k.replace("_", " "), f"{v:.4f}", f"{v / t.usd_per_gpu_hour:.1%}"]
        for k, v in t.breakdown_usd_per_gpu_hour.items()
    ]
    rows.append(["[bold]total[/bold]", f"[bold]{t.usd_per_gpu_hour:.4f}[/bold]", "100%"])
    console.print(table("$ per GPU-hour", ["part", "$/GPU-h", "share"], rows, 1))
    t_assume = table(
        "Assumptions (override with --set KEY=VALUE)",
        ["key", "value", "source"],
        [[k, f"{a['value']:g}", escape(a["source"])] for k, a in d["assumptions"].items()],
        1,
    )
    t_assume.columns[2].justify = "left"
    console.print(t_assume)
    return None


# ---- cost ------------------------------------------------------------------------------------------


def _relaxed_layout_options(f: Callable) -> Callable:
    """predict's layout flags, with --gbs/--seq optional (not needed with --tokens-per-s-per-gpu)."""
    f = layout_options(f)
    for p in getattr(f, "__click_params__", []):
        if p.name in ("gbs", "seq"):
            p.required = False
    return f


def _print_run(title: str, r: dict[str, Any]) -> None:
    fmt: list[tuple[str, str, Callable[[float], str]]] = [
        ("$ per 1M tokens", "usd_per_million_tokens", lambda v: f"{v:.4f}"),
        ("$ whole run", "usd_total", lambda v: f"{v:,.0f}"),
        ("utility J per token", "joules_per_token", lambda v: f"{v:.3f}"),
        ("MWh", "mwh", lambda v: f"{v:,.1f}"),
        ("US household-years", "household_years", lambda v: f"{v:,.1f}"),
        ("GPU-hours", "gpu_hours", lambda v: f"{v:,.0f}"),
        ("wall-clock days", "wall_days", lambda v: f"{v:,.2f}"),
    ]
    rows = [
        [
            "$ per GPU-hour (job, incl. spares after reliability)",
            f"{r['usd_per_gpu_hour']:.3f}",
            f"{r['usd_per_job_gpu_hour_after_reliability']:.3f}",
        ]
    ]
    rows += [[name, fn(r[k + "_nominal"]), fn(r[k + "_after_reliability"])] for name, k, fn in fmt]
    console.print(table(title, ["", "nominal", "after reliability"], rows, 1))
    rel = r["reliability"]
    rrows = [
        [
            "job MTBI",
            f"{rel['mtbi_s'] / 3600:,.1f} h ({rel['interruptions_per_day']:.2f} interruptions/day, band "
            f"{rel['interruptions_per_day_low']:.2f}-{rel['interruptions_per_day_high']:.2f})",
        ],
        [
            "checkpoint write / interval",
            f"{rel['checkpoint_s']:.1f} s every {rel['checkpoint_interval_s'] / 60:,.1f} min "
            f"({rel['assumptions']['interval']['value']})",
        ],
        [
            "recovery per interruption",
            f"{rel['recovery_s'] / 60:,.1f} min "
            + (
                f"(job-scoped: restart + {rel['restore_s']:,.0f} s checkpoint restore"
                + (
                    "; --recovery replica needs more than one replica holding the full state: the layout's "
                    "optimizer or parameters are sharded over all data-parallel ranks; --set replicas=N)"
                    if rel["assumptions"]["recovery"]["value"] == "replica"
                    else ")"
                )
                if rel["recovery"] == "job"
                else f"(replica-scoped over {rel['replicas']} replicas: stall + the failed replica's recovery / replicas)"
            ),
        ],
        [
            "goodput (band)",
            f"{rel['goodput_fraction']:.2%} ({rel['goodput_fraction_low']:.1%}-{rel['goodput_fraction_high']:.1%}: "
            "published spread of interruption rates and restart times)",
        ],
        [
            "units / blast radius",
            f"{rel['units']} x {rel['blast_radius_gpus']} GPUs, "
            f"{rel['assumptions']['hot_spare_gpus_per_unit']['value']} hot spares each",
        ],
        ["spare units", f"{rel['spare_units']} ({rel['units_in_repair']:.3f} expected in repair)"],
        ["GPUs paid / GPUs used", f"{rel['cost_factor']:.3f}"],
    ]
    console.print(table("Reliability", ["", "value"], rrows, 1))
    console.print(r["spares_text"])
    e = r["energy"]
    erows = [
        [name, a, b, c, d]
        for (name, a, b), (_, c, d) in zip(energy_rows(e, "nominal"), energy_rows(e, "after_reliability"))
    ]
    console.print(
        table(
            "Energy: drawn (by phase of the predicted step) and rated (all-in rating x time, the cost report's)",
            ["", "drawn nominal", "rated nominal", "drawn after reliability", "rated after reliability"],
            erows,
            1,
        )
    )
    console.print(table("Power (drawn, economics/power.py)", ["", "value"], power_rows(r["power"]), 1))


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
    model_ref: str,
    hardware_ref: str,
    gpus: int,
    tp: int,
    pp: int,
    vp: int,
    cp: int,
    ep: int,
    etp: int | None,
    fsdp: bool,
    mbs: int,
    gbs: int | None,
    seq: int | None,
    precision: str,
    recompute: str,
    attention: str,
    routing: str,
    measured_tps: float | None,
    tokens: float,
    buyer: str,
    sets: tuple[str, ...],
    mtbi_gpu_days,
    restart_s,
    checkpoint_s,
    spare_units,
    spares: str,
    interval: str,
    recovery: str,
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Cost, energy and time of training TOKENS: per 1M tokens, whole run, households; nominal and after reliability."""
    hw_sets, rest = split_hardware_sets(sets)
    m, hw = load_model(model_ref), resolve_hardware(hardware_ref, hw_sets)
    warn_context(m, seq)
    cost_over, extra = split_sets(rest)
    rel_over = reliability_overrides(
        extra,
        mtbi_gpu_days=mtbi_gpu_days,
        restart_s=restart_s,
        checkpoint_s=checkpoint_s,
        spare_units=spare_units,
        spares=spares,
        interval=interval,
        recovery=recovery,
    )
    lay = None
    if gbs is not None and seq is not None:
        lay = Layout(
            gpus=gpus,
            gbs=gbs,
            seq=seq,
            tp=tp,
            pp=pp,
            vp=vp,
            cp=cp,
            ep=ep,  # type: ignore[arg-type]
            etp=1 if etp is None else etp,
            mbs=mbs,
            fsdp=fsdp,
            recompute=recompute,
        )  # type: ignore[arg-type]
    elif measured_tps is None:
        missing = [n for n, v in (("--gbs", gbs), ("--seq", seq)) if v is None]
        raise InputError(" and ".join(missing), "", "required to predict throughput (or pass --tokens-per-s-per-gpu)")
    opts = Options(precision, attention, routing, stack=stack, stack_set=stack_set)  # type: ignore[arg-type]
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
    src, tps = r["throughput_source"], r["tokens_per_s_per_gpu"]
    console.print(
        f"[bold]{escape(m.name)}[/bold] on {gpus} x {escape(hw.display_name(changes=False))}, {tokens:.3g} tokens, buyer {buyer}"
    )
    if hw.overridden:
        console.print("what-if hardware: " + escape(whatif_fields(hw)))
    if r["tco"]["price_note"]:
        console.print(f"[yellow]{escape(r['tco']['price_note'])}[/yellow]")
    if src == "predicted":
        console.print(stack_line(opts, m, hw))
    console.print(f"throughput ({src}): {tps:,.1f} tokens/s/GPU" + (f", MFU {r['mfu']:.1%}" if "mfu" in r else ""))
    _print_run("Training run", r)
    return None


# ---- compare ---------------------------------------------------------------------------------------


def _drawn(o: dict, key: str, fmt: str, rated: bool = False) -> str:
    """A drawn energy figure of a compare row ('-' where the drawn method is unavailable), with the rated one."""
    d, r = o["energy"]["drawn"], o["energy"]["rated"]
    text = format(d[key], fmt) if d else "-"
    return f"{text} / {format(r[key], fmt)}" if rated else text


def _goodput_band(o: dict) -> str:
    rel = o["reliability"]
    return f"{o['goodput_fraction']:.2%} ({rel['goodput_fraction_low']:.1%}-{rel['goodput_fraction_high']:.1%})"


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
@click.option("--recompute", default="none", show_default=True, type=click.Choice(["none", "selective", "full"]))
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
    mtbi_gpu_days,
    restart_s,
    checkpoint_s,
    spare_units,
    spares: str,
    interval: str,
    recovery: str,
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Systems side by side: best layout, tokens/s/GPU, MFU, $/GPU-h, $/1M tokens, J/token, goodput, perf/TCO."""
    m = load_model(model_ref)
    warn_context(m, seq)
    hw_sets, rest = split_hardware_sets(sets)
    cost_over, extra = split_sets(rest)
    rel_over = reliability_overrides(
        extra,
        mtbi_gpu_days=mtbi_gpu_days,
        restart_s=restart_s,
        checkpoint_s=checkpoint_s,
        spare_units=spare_units,
        spares=spares,
        interval=interval,
        recovery=recovery,
    )
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
    out = doc["systems"]
    ok = [o for o in out if o["runnable"]]
    base = ok[0]
    console.print(
        f"[bold]{escape(m.name)}[/bold], {gpus} GPUs, {precision}, seq {seq}, global batch {gbs}, "
        f"{tokens:.3g} tokens, buyer {buyer}"
    )
    rounded = [o for o in out if o["gpus"] != gpus]
    if rounded:
        console.print(
            "rounded up to whole units: "
            + ", ".join(
                f"{o['hardware']} {o['gpus']:,} GPUs ({o['units']:,} {o['unit_name']}{'s' if o['units'] != 1 else ''})"
                for o in rounded
            )
        )
    console.print(stack_line(opts))
    if hw_sets:
        console.print("what-if hardware (every system): " + escape(", ".join(hw_sets)))
    metrics: list[tuple[str, Callable[[dict], str]]] = [
        ("layout", lambda o: f"{layout_text(o['layout'], mbs=True)} ({o['layout_from']})"),
        (
            "tokens/s/GPU (80% band)",
            lambda o: (
                f"{o['tokens_per_s_per_gpu']:,.0f} "
                f"({o['tokens_per_s_per_gpu_low']:,.0f}–{o['tokens_per_s_per_gpu_high']:,.0f})"
            ),
        ),
        ("MFU", lambda o: f"{o['mfu']:.1%}"),
        ("$ per GPU-hour", lambda o: f"{o['usd_per_gpu_hour']:.3f}"),
        (
            "$ per 1M tokens nominal (80% band)",
            lambda o: (
                f"{o['usd_per_million_tokens_nominal']:.4f} "
                f"({o['usd_per_million_tokens_nominal_low']:.4f}–{o['usd_per_million_tokens_nominal_high']:.4f})"
            ),
        ),
        ("utility J/token nominal, rated", lambda o: f"{o['joules_per_token_nominal']:.3f}"),
        ("utility J/token nominal, drawn", lambda o: _drawn(o, "joules_per_token_nominal", ".3f")),
        (
            "node power drawn (of rating)",
            lambda o: (
                f"{o['power']['node_avg_w'] / 1e3:,.2f} kW ({o['power']['share_of_rating']:.0%})"
                if o["power"]["method"] == "drawn"
                else "-"
            ),
        ),
        ("MWh after reliability, drawn / rated", lambda o: _drawn(o, "mwh_after_reliability", ",.0f", rated=True)),
        ("goodput (band)", lambda o: _goodput_band(o)),
        (
            "$ per 1M tokens after reliability",
            lambda o: (
                f"{o['usd_per_million_tokens_after_reliability']:.4f} "
                f"({o['usd_per_million_tokens_after_reliability_low']:.4f}–"
                f"{o['usd_per_million_tokens_after_reliability_high']:.4f})"
            ),
        ),
        ("$ whole run after reliability", lambda o: f"${o['usd_total_after_reliability']:,.0f}"),
        ("perf per TCO vs first, nominal", lambda o: f"{o['perf_per_tco_vs_first_nominal']:.2f}x"),
        ("  after reliability", lambda o: f"{o['perf_per_tco_vs_first_after_reliability']:.2f}x"),
    ]
    console.print(
        table(
            "Side by side",
            [""] + [o["hardware"] for o in ok],
            [[name] + [fn(o) for o in ok] for name, fn in metrics],
            1,
        )
    )
    console.print(
        f"perf per TCO relative to {base['hardware']}; " + "; ".join(f"{o['hardware']} {o['spares_text']}" for o in ok)
    )
    for line in dict.fromkeys(uncertainty.Band.from_dict(o["band"]).line() for o in ok):
        console.print(escape(line))
    for note in dict.fromkeys(o["tco"]["price_note"] for o in ok if o["tco"]["price_note"]):
        console.print(f"[yellow]{escape(note)}[/yellow]")
    for o in out:
        if not o["runnable"]:
            console.print(
                f"[red]{escape(o['hardware'])}: cannot run[/red], so no throughput, cost or energy: "
                f"{escape(o['reason'])}"
            )
    return None


COMMANDS = [tco_cmd, cost_cmd, compare_cmd]
