"""Shared CLI plumbing: layout flags, --json output, rich tables."""

from __future__ import annotations

import functools
import json
import math
from typing import TYPE_CHECKING, Any, Callable

import click
from rich import box
from rich.console import Console
from rich.errors import MarkupError
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from perfmodel.analysis.checks import context_warning
from perfmodel.specs.hardware import (
    ALIASES,
    PRECISIONS,
    RENAMED,
    HardwareSpec,
    apply_overrides,
    load_hardware,
    settable_fields,
)

if TYPE_CHECKING:
    from rich.progress import Progress

from perfmodel.core.predict import stack_info  # noqa: E402,F401
from perfmodel.jsonable import to_jsonable  # noqa: E402,F401  (re-exported for the commands)
from perfmodel.specs.stack import check_stack  # noqa: E402,F401

# stdout closed early (`perfmodel ... | head`): rich points stdout at devnull and raises SystemExit(1) from the
# BrokenPipeError, which cli.main turns into status 0 (as it does for click.echo)
console = Console()


def stderr_progress(label: str, count: str, show: bool = True) -> Progress:
    """A transient progress bar (label, bar, count, elapsed time) on stderr, drawn only when `show` and
    stderr is a terminal: never mixed into --json output, never written into a log file. `label` and
    `count` are rich TextColumn formats, e.g. "{task.description}", "{task.completed}/{task.total} rows"."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    return Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn(count),
        TimeElapsedColumn(),
        console=err,
        disable=not (show and err.is_terminal),
        transient=True,
    )


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(to_jsonable(obj), indent=2))


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
            c.min_width = max([len(str(c.header))] + [_cell_len(r[i]) for r in rows if len(r) > i])
            c.no_wrap = True
    return t


def _cell_len(cell: Any) -> int:
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


def _precision() -> Callable:
    return click.option(
        "--precision",
        default="bf16",
        show_default=True,
        type=click.Choice(PRECISIONS),
        help="number format of the GEMMs",
    )


def _attention() -> Callable:
    return click.option(
        "--attention",
        "attention",
        default="causal",
        show_default=True,
        type=click.Choice(["causal", "full"]),
        help="attention-FLOPs convention for MFU (DGXC recipes count full)",
    )


def _routing() -> Callable:
    return click.option(
        "--routing",
        default="real",
        show_default=True,
        type=click.Choice(["real", "balanced"]),
        help="MoE routing: real (load imbalance) or force-balanced",
    )


def _use_calibration(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """--calibration FILE: its constants for this command (perfmodel.core.calibration.use), restored after it."""
    if value is not None:
        from perfmodel.core import calibration

        before = calibration.use(value)
        ctx.call_on_close(lambda: calibration.use(before))


def calibration_option(f: Callable) -> Callable:
    """--calibration FILE (a file written by `perfmodel calibrate`), as every predicting command takes it."""
    if any(p.name == "calibration_file" for p in getattr(f, "__click_params__", [])):
        return f
    return click.option(
        "--calibration",
        "calibration_file",
        metavar="FILE",
        default=None,
        expose_value=False,
        is_eager=True,
        callback=_use_calibration,
        help="global constants from a calibration file written by `perfmodel calibrate` "
        "[default: the shipped perfmodel/calibration.toml]",
    )(f)


def spares_option(f: Callable) -> Callable:
    """--spares charged|excluded: one flag on every economics command (perfmodel/economics/reliability.py)."""
    return click.option(
        "--spares",
        default="charged",
        show_default=True,
        type=click.Choice(["charged", "excluded"]),
        help="in-rack hot spares (NVL72: 8 of 72 GPUs per rack): charged to training as installed "
        "hardware, or excluded",
    )(f)


def precision_option(f: Callable) -> Callable:
    """--precision and --calibration FILE, as every predicting command takes them."""
    return calibration_option(_precision()(f))


def convention_options(f: Callable) -> Callable:
    """--attention (the MFU convention) and --routing (MoE), as every predicting command takes them."""
    return _attention()(_routing()(f))


def layout_options(f: Callable) -> Callable:
    """The layout flags shared by predict, cost, scaling and friends."""
    opts = [
        click.option("--model", "model_ref", required=True, help="catalog id or spec file (TOML / HF config.json)"),
        click.option("--hardware", "hardware_ref", required=True, help="catalog id or TOML spec file"),
        click.option("--gpus", type=int, required=True, help="number of GPUs"),
        click.option("--tp", type=int, default=1, show_default=True, help="tensor parallel (+ sequence parallel)"),
        click.option("--pp", type=int, default=1, show_default=True, help="pipeline parallel"),
        click.option("--vp", type=int, default=1, show_default=True, help="virtual stages per pipeline rank"),
        click.option("--cp", type=int, default=1, show_default=True, help="context parallel"),
        click.option("--ep", type=int, default=1, show_default=True, help="expert parallel"),
        click.option(
            "--etp",
            type=int,
            default=None,
            help="expert tensor parallel [default: tp, as Megatron-Core; 1 for a dense model or where ep*tp does not divide tp*cp*dp]",
        ),
        click.option("--fsdp", is_flag=True, help="shard parameters, grads and optimizer over dp (ZeRO-3)"),
        click.option("--mbs", type=int, default=1, show_default=True, help="micro-batch size (sequences)"),
        click.option("--gbs", type=int, required=True, help="global batch (sequences)"),
        click.option("--seq", type=int, required=True, help="sequence length (tokens)"),
        _precision(),
        click.option(
            "--recompute", default="none", show_default=True, type=click.Choice(["none", "selective", "full"])
        ),
        _attention(),
        _routing(),
    ]
    if not any(p.name == "sets" for p in getattr(f, "__click_params__", [])):  # a command's own --set wins
        opts.append(
            click.option(
                "--set",
                "sets",
                multiple=True,
                metavar="FIELD=VALUE",
                help="what-if hardware: override a spec field (repeatable), e.g. "
                "scale_up.domain_size=144, nvlink_domain=144, nic_gbit_s=800, hbm_gb=288",
            )
        )
    for o in reversed(opts):
        f = o(f)
    return calibration_option(f)


from perfmodel.errors import WARNINGS  # noqa: E402  (warnings printed after a command's output, by cli.main)


def warn_context(model: Any, seq: int | None) -> None:
    """A warning when seq exceeds the model's maximum context (perfmodel/analysis/checks.py: the command goes on):
    one stderr line after the output, never on stdout, so --json stays one document."""
    msg = context_warning(model, seq) if seq else None
    if msg and msg not in WARNINGS:
        WARNINGS.append(msg)


def resolve_hardware(ref: str | HardwareSpec, sets: tuple[str, ...] | list[str] = ()) -> HardwareSpec:
    """--hardware REF plus its --set FIELD=VALUE overrides -> the effective HardwareSpec."""
    return apply_overrides(load_hardware(ref), list(sets))


def hardware_set_keys() -> list[str]:
    """Every key --set takes for hardware: dotted spec fields and their aliases (nvlink_domain, nic_gbit_s, ...)."""
    return [*settable_fields(), *ALIASES]


def split_hardware_sets(sets: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """--set items -> (hardware overrides, the rest), for commands whose --set also takes other keys."""
    hw_keys = set(hardware_set_keys()) | set(RENAMED)  # a renamed alias reaches parse_set, which names the new one
    mine = [s for s in sets if s.partition("=")[0].strip() in hw_keys]
    return mine, [s for s in sets if s not in mine]


# ---- the software stack: --stack ID|FILE, --stack-set FEATURE=VALUE ----------------------------------------


def stack_options(f: Callable) -> Callable:
    """--stack ID|FILE and --stack-set FEATURE=VALUE (repeatable), as every predicting command takes them: the
    command receives `stack` (preset id or file, None = the `default` stack) and `stack_set` (a tuple),
    checked, for perfmodel.core.predict.Options."""
    if any(p.name == "stack_set" for p in getattr(f, "__click_params__", [])):
        return f

    @functools.wraps(f)
    def wrapper(*args: Any, stack: str | None = None, stack_set: tuple[str, ...] = (), **kw: Any) -> Any:
        stack_set = tuple(stack_set)
        check_stack(stack, stack_set)
        return f(*args, stack=stack, stack_set=stack_set, **kw)

    for o in reversed(
        [
            click.option(
                "--stack",
                "stack",
                default=None,
                metavar="ID|FILE",
                help="software stack: a preset id (`perfmodel list stacks`) or a stack TOML file [default: default]",
            ),
            click.option(
                "--stack-set",
                "stack_set",
                multiple=True,
                metavar="FEATURE=VALUE",
                help="override a stack feature (repeatable), e.g. tp_overlap=none, cuda_graphs=per_layer "
                "(`perfmodel show stack default` lists them)",
            ),
        ]
    ):
        wrapper = o(wrapper)
    return wrapper


def stack_line(opts: Any, model: Any = None, hw: Any = None) -> str:
    """The output header's stack line: 'stack nemo-25.11 (NeMo 25.11 ...) + --stack-set tp_overlap=none'."""
    from rich.markup import escape

    s = stack_info(opts, model, hw)
    sets = f" + --stack-set {', '.join(s['stack_set'])}" if s["stack_set"] else ""
    rules = f"; per-model rules: {'; '.join(s['stack_rules'])}" if s["stack_rules"] else ""
    return escape(f"stack {s['stack']} ({s['stack_name']}){sets}{rules}")


def _w(v: float | None) -> str:
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
            ["node (rated)", _w(power["node_avg_w"])],
            ["cluster IT (rated)", _w(power["cluster_avg_w"])],
            ["site x PUE (rated)", _w(power["site_avg_w"])],
        ]
    lv = power["levels_w"]
    cap = f"{lv['tensor']:,.0f} W" + (f" (power limit {lv['power_limit_w']:,.0f} W)" if lv["power_limit_w"] else "")
    n = power["gpus_per_node"]
    return [
        ["GPU average (peak)", f"{_w(power['gpu_avg_w'])} ({_w(power['gpu_peak_w'])}; tensor work at {cap})"],
        [
            f"node of {n} GPUs: average, peak; rated",
            f"{_w(power['node_avg_w'])}, {_w(power['node_peak_w'])}; rated {_w(power['node_rated_w'])} "
            f"({power['share_of_rating']:.0%} of rating)",
        ],
        [
            f"cluster IT ({power['gpus']:,} GPUs + network): average; rated",
            f"{_w(power['cluster_avg_w'])}; rated {_w(power['cluster_rated_w'])}",
        ],
        [
            f"site x PUE {power['pue']:.2f}: average; rated",
            f"{_w(power['site_avg_w'])}; rated {_w(power['site_rated_w'])}",
        ],
        [
            "swing per step (cluster)",
            f"{_w(power['swing_w'])}: {_w(power['cluster_peak_w'])} in the pipeline to {_w(power['cluster_trough_w'])} "
            f"at the step's end, every {power['step_s']:.2f} s",
        ],
        [
            "swing at a checkpoint write (cluster)",
            f"{_w(power['checkpoint_swing_w'])}: down to {_w(power['checkpoint_w'])} for {power['checkpoint_s']:.1f} s "
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
