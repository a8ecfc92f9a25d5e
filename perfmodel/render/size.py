"""`perfmodel size`'s text: per system the cluster, layout, throughput, goodput, days, dollars and energy after
reliability, with the 80% bands and what limits the size."""

from __future__ import annotations

from typing import Any, Callable

from rich.markup import escape

from perfmodel.analysis.search import Constraints
from perfmodel.analysis.sizing import MAX_GPUS
from perfmodel.analysis.uncertainty import span
from perfmodel.core.predict import Options
from perfmodel.render import console, stack_line, table
from perfmodel.specs.layout import layout_text


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


def print_sizing(
    out: list[dict[str, Any]],
    model_name: str,
    tokens: float,
    mode: str,
    target: float,
    opts: Options,
    buyer: str,
    hw_sets: list[str],
    cons: Constraints,
    seconds: float,
) -> None:
    errors = [d for d in out if "error" in d]
    ok = [d for d in out if "error" not in d]
    used = ", ".join(f"{d['hardware']} {d['gpus']:,}" for d in ok if d["gpus"] != int(target))
    on = f"on {int(target):,} GPUs" + (f" (rounded up to whole units: {used})" if used else "")
    what = {"days": f"in {target:g} days", "budget": f"within ${target:,.0f}", "gpus": on}[mode]
    d0 = ok[0]
    console.print(
        f"[bold]{escape(model_name)}[/bold]: {tokens:.3g} tokens {what}, {opts.precision}, seq {d0['seq']}, "
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
    tried = ", ".join([f"{k}={v}" for k, v in cons.fix.items()] + [f"{k}<={v}" for k, v in cons.cap.items()])
    console.print(
        f"planner at each size tried ({tried}); sizes: whole units up to 16, then 8 per doubling, "
        f"up to {MAX_GPUS:,} GPUs; {seconds:.1f} s"
    )
