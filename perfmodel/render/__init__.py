"""The commands' text. This module: what several commands share (rich tables that never cut a cell, SI units,
the stack line of an output header, the drawn-power and energy rows of a job); one module per command group
(render/predict.py, render/economics.py, ...) prints that group's documents. Rendering formats what the
library returned; it predicts nothing."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from perfmodel.core.predict import stack_info

# stdout closed early (`perfmodel ... | head`): rich points stdout at devnull and raises SystemExit(1) from the
# BrokenPipeError, which cli.main turns into status 0 (as it does for click.echo)
console = Console()


def table(title: str, columns: list[str], rows: list[list[Any]], justify_right_from: int = 1) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    for i, c in enumerate(columns):
        t.add_column(c, justify="right" if i >= justify_right_from else "left")
    for r in rows:
        t.add_row(*[str(x) for x in r])
    return t


def compact(t: Table, rows: list[list[Any]], wrap: tuple[int, ...] = ()) -> Table:
    """Simple borders, no outer padding; numbers never truncate (each column as wide as its widest
    cell), only the `wrap` columns fold. Cells with rich markup are measured as printed."""
    t.box, t.pad_edge, t.collapse_padding = box.SIMPLE_HEAD, False, True
    for i, c in enumerate(t.columns):
        if i not in wrap:
            c.min_width = max([len(str(c.header))] + [cell_len(r[i]) for r in rows if len(r) > i])
            c.no_wrap = True
    return t


def cell_len(cell: Any) -> int:
    try:
        return Text.from_markup(str(cell)).cell_len
    except MarkupError:
        return len(str(cell))


def fits_width(t: Table) -> bool:
    """Whether `t` prints within the console's width without squeezing a column."""
    wide = console.options.update(width=100_000, max_width=100_000)  # measure unclamped
    return Measurement.get(console, wide, t).minimum <= console.width


def print_table(
    title: str,
    columns: list[str],
    rows: list[list[Any]],
    justify_right_from: int = 1,
    wrap: tuple[int, ...] = (),
    keep: int = 1,
    left: tuple[int, ...] = (),
) -> None:
    """Print a compact table (see `compact`); where the console is too narrow for it (an 80-column terminal,
    a pipe), as consecutive tables that each repeat the first `keep` columns, so no column is ever cut."""

    def sub(idx: list[int], head: str) -> Table:
        t = Table(title=head, title_justify="left", header_style="bold")
        for j in idx:
            t.add_column(columns[j], justify="right" if j >= justify_right_from and j not in left else "left")
        sub_rows = [[r[j] for j in idx] for r in rows]
        for r in sub_rows:
            t.add_row(*[str(x) for x in r])
        return compact(t, sub_rows, tuple(k for k, j in enumerate(idx) if j in wrap))

    whole = sub(list(range(len(columns))), title)
    if fits_width(whole):
        console.print(whole)
        return
    chunks: list[list[int]] = [[]]
    for j in range(keep, len(columns)):
        if chunks[-1] and not fits_width(sub(list(range(keep)) + chunks[-1] + [j], title)):
            chunks.append([])
        chunks[-1].append(j)
    for n, ch in enumerate(chunks):
        console.print(sub(list(range(keep)) + ch, title if n == 0 else "(continued)"))


def si(x: float, unit: str = "", digits: int = 3) -> str:
    """1.23e12 -> '1.23 T' + unit."""
    if x is None or not math.isfinite(x):
        return "-"
    for p, s in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= p:
            return f"{x / p:.{digits}g} {s}{unit}"
    return f"{x:.{digits}g} {unit}".rstrip()


def stack_line(opts: Any, model: Any = None, hw: Any = None) -> str:
    """The output header's stack line: 'stack nemo-25.11 (NeMo 25.11 ...) + --stack-set tp_overlap=none'."""
    s = stack_info(opts, model, hw)
    sets = f" + --stack-set {', '.join(s['stack_set'])}" if s["stack_set"] else ""
    rules = f"; per-model rules: {'; '.join(s['stack_rules'])}" if s["stack_rules"] else ""
    return escape(f"stack {s['stack']} ({s['stack_name']}){sets}{rules}")


def watts(v: float | None) -> str:
    """Watts in a readable unit: '643 W', '7.93 kW', '1.22 MW'."""
    if v is None:
        return "-"
    for div, unit in ((1e6, "MW"), (1e3, "kW")):
        if abs(v) >= div:
            return f"{v / div:,.3g} {unit}" if abs(v) < 100 * div else f"{v / div:,.0f} {unit}"
    return f"{v:,.0f} W"


def power_rows(power: dict[str, Any]) -> list[list[str]]:
    """The drawn power of a job (economics/power.py PowerDraw, as JSON) beside the rated method, as table rows."""
    if power.get("method") != "drawn":
        return [
            ["method", f"rated only: {power.get('note', '')}"],
            ["node (rated)", watts(power["node_avg_w"])],
            ["cluster IT (rated)", watts(power["cluster_avg_w"])],
            ["site x PUE (rated)", watts(power["site_avg_w"])],
        ]
    lv = power["levels_w"]
    cap = f"{lv['tensor']:,.0f} W" + (f" (power limit {lv['power_limit_w']:,.0f} W)" if lv["power_limit_w"] else "")
    n = power["gpus_per_node"]
    return [
        ["GPU average (peak)", f"{watts(power['gpu_avg_w'])} ({watts(power['gpu_peak_w'])}; tensor work at {cap})"],
        [
            f"node of {n} GPUs: average, peak; rated",
            f"{watts(power['node_avg_w'])}, {watts(power['node_peak_w'])}; rated {watts(power['node_rated_w'])} "
            f"({power['share_of_rating']:.0%} of rating)",
        ],
        [
            f"cluster IT ({power['gpus']:,} GPUs + network): average; rated",
            f"{watts(power['cluster_avg_w'])}; rated {watts(power['cluster_rated_w'])}",
        ],
        [
            f"site x PUE {power['pue']:.2f}: average; rated",
            f"{watts(power['site_avg_w'])}; rated {watts(power['site_rated_w'])}",
        ],
        [
            "swing per step (cluster)",
            f"{watts(power['swing_w'])}: {watts(power['cluster_peak_w'])} in the pipeline to {watts(power['cluster_trough_w'])} "
            f"at the step's end, every {power['step_s']:.2f} s",
        ],
        [
            "swing at a checkpoint write (cluster)",
            f"{watts(power['checkpoint_swing_w'])}: down to {watts(power['checkpoint_w'])} for {power['checkpoint_s']:.1f} s "
            f"every {power['checkpoint_interval_s'] / 60:,.1f} min",
        ],
    ]


def energy_rows(energy: dict[str, Any], which: str = "nominal") -> list[list[str]]:
    """Energy by both methods (economics/job.py Energy, as JSON): drawn and rated, for one of nominal /
    after_reliability."""
    rows = []
    fmt = (
        ("utility J per token", "joules_per_token", "{:.3f}"),
        ("MWh", "mwh", "{:,.1f}"),
        ("US household-years", "household_years", "{:,.1f}"),
        ("electricity $", "electricity_usd", "{:,.0f}"),
    )
    d, r = energy.get("drawn"), energy["rated"]
    for name, k, f in fmt:
        key = f"{k}_{which}"
        rows.append([name, f.format(d[key]) if d else "-", f.format(r[key])])
    return rows
