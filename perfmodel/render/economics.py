"""The economics commands' text (`perfmodel tco`, `cost`, `compare`): $ per GPU-hour with its breakdown, a
training run nominal and after reliability with its energy and power, and systems side by side."""

from __future__ import annotations

from typing import Any, Callable

from rich.markup import escape

from perfmodel.analysis import uncertainty
from perfmodel.core.predict import Options
from perfmodel.economics.tco import TCO
from perfmodel.render import console, energy_rows, power_rows, stack_line, table
from perfmodel.specs.hardware import HardwareSpec, whatif_fields
from perfmodel.specs.layout import layout_text
from perfmodel.specs.model import ModelSpec


def print_tco(hw: HardwareSpec, buyer: str, t: TCO, d: dict[str, Any]) -> None:
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


def print_cost(
    r: dict[str, Any], m: ModelSpec, hw: HardwareSpec, opts: Options, gpus: int, tokens: float, buyer: str
) -> None:
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
    print_run("Training run", r)


def print_run(title: str, r: dict[str, Any]) -> None:
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


def _drawn(o: dict, key: str, fmt: str, rated: bool = False) -> str:
    """A drawn energy figure of a compare row ('-' where the drawn method is unavailable), with the rated one."""
    d, r = o["energy"]["drawn"], o["energy"]["rated"]
    text = format(d[key], fmt) if d else "-"
    return f"{text} / {format(r[key], fmt)}" if rated else text


def _goodput_band(o: dict) -> str:
    rel = o["reliability"]
    return f"{o['goodput_fraction']:.2%} ({rel['goodput_fraction_low']:.1%}-{rel['goodput_fraction_high']:.1%})"


def print_compare(
    doc: dict[str, Any],
    m: ModelSpec,
    opts: Options,
    hw_sets: list[str],
    gpus: int,
    gbs: int,
    seq: int,
    tokens: float,
    buyer: str,
) -> None:
    out = doc["systems"]
    ok = [o for o in out if o["runnable"]]
    base = ok[0]
    console.print(
        f"[bold]{escape(m.name)}[/bold], {gpus} GPUs, {opts.precision}, seq {seq}, global batch {gbs}, "
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
