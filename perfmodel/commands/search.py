"""`perfmodel search`: rank every legal layout for a model on a cluster (perfmodel/analysis/search.py)."""

from __future__ import annotations

import time
from typing import Callable

import click
import numpy as np
from rich.markup import escape

from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import warn_context
from perfmodel.analysis.planner_report import search_report
from perfmodel.analysis.scaling import parse_gpu_list
from perfmodel.analysis.search import OBJECTIVES, SearchResult, describe_why, parse_constraints, search_sizes
from perfmodel.commands.common import convention_options, emit_json, precision_option, stack_options, stderr_progress
from perfmodel.core.calibration import constants
from perfmodel.core.predict import Options, Prediction, terms
from perfmodel.errors import warn
from perfmodel.render import console, si, table
from perfmodel.specs.hardware import HardwareSpec, resolve_hardware, whatif_fields
from perfmodel.specs.layout import layout_text
from perfmodel.specs.model import load_model

GB = 1e9  # memory in GB = 1e9 bytes, as every table (perfmodel/analysis/checks.py)
# breakdown_s keys grouped for the top-K table (predict.py)
COMPUTE, COMM = terms("compute"), terms("communication")
FRONT_ROWS = 20  # Pareto points printed (evenly spaced along the front); --json has all


def objective_text(objective: str, value: float) -> str:
    """Objective value at the edge: tokens/s/GPU, J/token, USD per 1M tokens."""
    if objective == "energy":
        return f"{1.0 / value:.4g} J/tok"
    if objective == "cost":
        return f"${1e6 / value:.4g}/1M tok"
    return f"{value:,.0f} tok/s/GPU"


def short(p: Prediction, i: int) -> str:
    return layout_text(p.layouts.layout(i), mbs=True)


def run_searches(
    model,
    hw: HardwareSpec,
    gpus: list[int],
    gbs: int,
    seq: int,
    opts: Options,
    objective: str,
    top_k: int,
    fix: tuple[str, ...],
    cap: tuple[str, ...],
    show_progress: bool,
    uneven_vp: bool = False,
) -> list[SearchResult]:
    cons = parse_constraints(fix, cap, uneven_vp)
    at = {"gpus": gpus[0], "done": 0, "total": 0}  # how far the search got, for a Ctrl-C message

    def step(done: int, total: int, task) -> None:
        at.update(done=done, total=total)
        bar.update(task, completed=done, total=total, visible=total > 1)

    def on_size(n: int) -> Callable[[int, int], None]:
        at.update(gpus=n, done=0, total=0)
        task = bar.add_task(f"{n} GPUs", total=None)
        return lambda done, total: step(done, total, task)

    try:
        # progress on a terminal's stderr only: never mixed into --json, never written into a log file
        with stderr_progress("{task.description}", "{task.completed}/{task.total} chunks", show_progress) as bar:
            results = search_sizes(model, hw, gpus, gbs, seq, opts, objective, top_k, cons, on_size)
    except KeyboardInterrupt:
        where = f" of the {at['gpus']:,}-GPU search" if len(gpus) > 1 else ""
        got = f"after {at['done']} of {at['total']} chunks" if at["total"] else "before the first chunk was scored"
        raise KeyboardInterrupt(f"interrupted {got}{where}; no results written") from None
    return results


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
    results = run_searches(
        model, hw, gpus, gbs, seq, opts, objective, top_k, fix, cap, show_progress=not as_json, uneven_vp=uneven_vp
    )
    out, top, front, values = search_report(model, hw, gpus, gbs, seq, opts, objective, top_k, results, fix, cap)
    out["seconds"] = time.perf_counter() - t0
    warn(out.get("suggestion_warning"))
    if as_json:
        emit_json(out)
        return
    render(out, top, front, values, results, objective, whatif_fields(hw))


def render(
    out: dict,
    top: Prediction | None,
    front: Prediction | None,
    values: np.ndarray,
    results: list[SearchResult],
    objective: str,
    what_if: str = "",
) -> None:
    g = out["gpus"]
    console.print(
        f"[bold]{out['model']}[/] on {g} x {out['hardware']}, gbs {out['gbs']}, seq {out['seq']}, "
        f"{out['precision']}" + f": {out['evaluated']:,} candidates, {out['legal']:,} legal, "
        f"{out['fits']:,} fit in HBM; scored in {out['seconds']:.2f} s "
        f"({si(out['layouts_per_s'] or 0, 'layouts/s')})"
    )
    console.print(
        escape(
            f"stack {out['stack']} ({out['stack_name']})"
            + (f" + --stack-set {', '.join(out['stack_set'])}" if out["stack_set"] else "")
        )
    )
    if top is None:
        return
    rows = []
    extra = [objective] if objective != "throughput" else []
    for i in range(top.layouts.n):
        b = {k: float(v[i]) for k, v in top.breakdown_s.items()}
        step = float(top.step_time_s[i])
        comm = sum(b[k] for k in COMM)
        e = out["top"][i]
        rows.append(
            [
                i + 1,
                short(top, i),
                f"{top.tokens_per_s_per_gpu[i]:,.0f}",
                uncertainty.span(e["tokens_per_s_per_gpu_low"], e["tokens_per_s_per_gpu_high"], ",.0f"),
                f"{top.mfu[i]:.1%}",
                f"{step:.3g}",
                f"{sum(b[k] for k in COMPUTE) / step:.0%}",
                f"{comm / step:.0%}",
                f"{b['pipeline_bubble'] / step:.0%}",
                f"{top.memory_bytes_per_gpu[i] / GB:.1f}",
            ]
            + [objective_text(objective, float(values[i]))] * len(extra)
        )
    if what_if:
        console.print("what-if hardware: " + escape(what_if))
    t = table(
        f"top {top.layouts.n} by {objective}",
        ["#", "layout", "tok/s/GPU", "80% band", "MFU", "step s", "compute", "comm", "bubble", "mem GB"] + extra,
        rows,
        justify_right_from=2,
    )
    console.print(t)
    for line in dict.fromkeys(uncertainty.Band.from_dict(e["band"]).line() for e in out["top"]):
        console.print(escape(line))
    terms = [k for k in top.breakdown_s if np.any(top.breakdown_s[k] > 0) and not k.endswith("_raw")]
    console.print(
        table(
            "breakdown, ms per step (columns: rank)",
            ["term"] + [f"#{i + 1}" for i in range(top.layouts.n)],
            [
                [k] + [f"{round(top.breakdown_s[k][i] * 1e3, 1) + 0.0:,.1f}" for i in range(top.layouts.n)]
                for k in terms
            ],
        )
    )
    if out["why_winner"]:
        console.print(f"[bold]winner vs runner-up:[/] {describe_why(out['why_winner'])}")
    if out.get("equivalent"):
        eq = out["equivalent"]
        pick = out["top"][eq["suggestion"] - 1]["layout"]
        console.print(
            f"[bold]ties:[/] {escape(eq['why'])}; suggested: #{eq['suggestion']} {escape(layout_text(pick, mbs=True))}"
        )
    if front is not None:
        n = front.layouts.n
        shown = sorted(set(np.linspace(0, n - 1, min(n, FRONT_ROWS)).round().astype(int).tolist()))
        note = f" ({len(shown)} of {n} points; --json lists all)" if len(shown) < n else ""
        t = table(
            "Pareto front: throughput vs memory headroom" + note,
            ["layout", "tok/s/GPU", "mem GB", "headroom GB"],
            [
                [
                    short(front, i),
                    f"{front.tokens_per_s_per_gpu[i]:,.0f}",
                    f"{front.memory_bytes_per_gpu[i] / GB:.1f}",
                    f"{(front.hbm_bytes - front.memory_bytes_per_gpu[i]) / GB:.1f}",
                ]
                for i in shown
            ],
        )
        t.columns[0].no_wrap = True
        console.print(t)
    if "pareto_gpus" in out:
        console.print(
            table(
                "throughput vs GPU count (* = Pareto: more cluster throughput than any smaller count)",
                ["gpus", "tok/s/GPU", "cluster tok/s", "scaling eff", "best layout", "front"],
                [
                    [
                        r["gpus"],
                        f"{r['tokens_per_s_per_gpu']:,.0f}" if r["tokens_per_s_per_gpu"] else "-",
                        si(r["tokens_per_s"] or float("nan"), "tok/s"),
                        f"{r['scaling_efficiency']:.0%}" if r["scaling_efficiency"] else "-",
                        short(res.top, 0) if res.top is not None else "none fits",
                        "*" if r["pareto"] else "",
                    ]
                    for r, res in zip(out["pareto_gpus"], results)
                ],
            )
        )


COMMANDS = [command]
