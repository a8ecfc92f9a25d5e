"""`perfmodel scaling`: weak or strong scaling of one layout (or the planner's best per size) over a list
of GPU counts, with cost, energy, what grows, and goodput (perfmodel/analysis/scaling.py)."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

from perfmodel.analysis.checks import warn_context
from perfmodel.analysis.releases import release_of
from perfmodel.analysis.scaling import (
    GROWS,
    MODES,
    ScalingResult,
    load_runs,
    parse_gpu_list,
    plot,
    scaling,
    summary_growth,
)
from perfmodel.analysis.search import parse_constraints
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
from perfmodel.economics.tco import BUYERS
from perfmodel.errors import InputError
from perfmodel.render import compact, console, fits_width, stack_line, table
from perfmodel.specs.hardware import resolve_hardware
from perfmodel.specs.layout import Layout, layout_text
from perfmodel.specs.model import load_model


def _pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def render(res: ScalingResult) -> None:
    how = "planner's best layout per size" if res.search else "fixed layout"
    batch = "per-GPU batch held: global batch grows with the GPU count" if res.mode == "weak" else "global batch held"
    console.print(
        f"[bold]{res.model}[/] on {res.hardware}, {res.mode} scaling ({batch}), {res.precision}, "
        f"seq {res.seq}, global batch {res.base_gbs} at {res.base_gpus} GPUs, {how}"
    )
    console.print(
        stack_line(
            Options(res.precision, stack=None if res.stack == "default" else res.stack, stack_set=tuple(res.stack_set))
        )
    )
    rows = []
    for p in res.points:
        if not p.ok:
            rows.append(
                [f"{p.gpus:,}", p.gbs if p.gbs is not None else "-", f"[red]{escape(p.reason)}[/red]"] + [""] * 11
            )
            continue
        step = p.step_time_s or 1.0
        share = lambda k: f"{100 * p.grows_s[k] / step:.1f}%"
        rows.append(
            [
                f"{p.gpus:,}",
                f"{p.gbs:,}",
                layout_text(p.layout),
                f"{p.step_time_s:.3g}",
                f"{p.tokens_per_s_per_gpu:,.0f}",
                _pct(p.mfu),
                _pct(p.scaling_efficiency, 0),
                share("dp_comm"),
                share("pipeline_bubble"),
                share("ep_comm"),
                _pct(p.goodput_fraction),
                f"{p.goodput_tokens_per_s_per_gpu:,.0f}",
                f"{p.usd_per_million_tokens_nominal:.3f}" if p.usd_per_million_tokens_nominal is not None else "-",
                f"{p.joules_per_token_nominal:.3g}",
                f"{p.joules_per_token_drawn_nominal:.3g}" if p.joules_per_token_drawn_nominal is not None else "-",
            ]
        )
    cols = [
        "GPUs",
        "gbs",
        "layout",
        "step s",
        "tok/s/GPU",
        "MFU",
        "scal.",
        "DP",
        "bubble",
        "a2a",
        "goodput",
        "×goodput",
        "$/Mtok",
        "J/tok rated",
        "drawn",
    ]
    if not res.moe and all(not p.ok or p.grows_s["ep_comm"] == 0 for p in res.points):  # dense: no all-to-all
        cols, rows = cols[:9] + cols[10:], [r[:9] + r[10:] for r in rows]
    caption = (
        f"MFU: {res.attention} attention. DP, bubble, a2a: exposed data-parallel communication, pipeline "
        "bubble and MoE all-to-all as a share of the step. ×goodput: tok/s/GPU x goodput. J/tok: utility joules "
        "per token, rated (all-in rating x PUE, the cost report's method) and drawn (by phase of the step)."
    )
    t = compact(table("Per size", cols, rows, 3), rows, wrap=(2,))  # the layout column wraps
    if not fits_width(t):
        # a narrow terminal (or a pipe: 80 columns): two tables instead of squeezed or dropped columns
        cut = cols.index("DP")
        left = [r[:cut] for r in rows]
        right = [[r[0]] + r[cut:] if "[red]" not in str(r[2]) else [r[0]] + [""] * (len(cols) - cut) for r in rows]
        t = compact(table("Per size", cols[:cut], left, 3), left, wrap=(2,))
        t2 = compact(table("Per size: what grows, goodput, cost", [cols[0]] + cols[cut:], right, 1), right)
        console.print(t)
        t = t2
    console.print(t)
    console.print(caption)
    meas = [(p, m) for p in res.points for m in p.measured]
    if meas:
        mrows = [
            [
                f"{p.gpus:,}",
                escape(release_of(m)),
                f"{m['tokens_per_s_per_gpu']:,.0f}",
                f"{p.tokens_per_s_per_gpu:,.0f}",
                f"{100 * m['error']:+.1f}%",
                _pct(m["mfu"]),
                _pct(p.mfu),
                _pct(m["source_mfu"]),
            ]
            for p, m in meas
        ]
        t = compact(
            table(
                "Measured (validation/runs.csv) vs predicted tokens/s/GPU",
                ["GPUs", "release", "measured", "predicted", "error", "MFU meas.", "pred.", "source"],
                mrows,
                2,
            ),
            mrows,
            wrap=(1,),
        )
        console.print(t)
        console.print(
            f"MFU ({res.attention} attention): measured (recomputed from measured tokens/s/GPU), pred. "
            "(predicted), source (as published, in the source's own attention convention)"
        )
    g = summary_growth(res)
    if g:
        grow = "; ".join(
            f"{k.replace('_', ' ')} {g[k]['from_s'] * 1e3:.3g} -> {g[k]['to_s'] * 1e3:.3g} ms "
            f"({100 * g[k]['from_share']:.1f}% -> {100 * g[k]['to_share']:.1f}%)"
            for k in GROWS
            if g[k]["from_s"] > 0 or g[k]["to_s"] > 0
        )
        console.print(
            f"{g['from_gpus']:,} -> {g['to_gpus']:,} GPUs: tokens/s/GPU x{g['tokens_per_s_per_gpu_ratio']:.3f}; "
            f"{grow}; goodput {_pct(g['goodput']['from'])} -> {_pct(g['goodput']['to'])}"
        )
    if res.usd_per_gpu_hour is None:
        console.print(
            f"$/1M tokens: '-' because {res.hardware} has no sourced price ([cost] in its hardware file); "
            "J/token needs only its power"
        )
    else:
        console.print(
            f"$/1M tokens at ${res.usd_per_gpu_hour:.3f} per GPU-hour (perfmodel tco), before reliability; "
            "goodput: interruptions grow with the GPU count (perfmodel cost explains the reliability model)"
        )
    console.print(f"after reliability (--json *_after_reliability): {res.spares_text}")


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
@click.option("--tp", type=int, default=1, show_default=True, help="tensor parallel (+ sequence parallel)")
@click.option("--pp", type=int, default=1, show_default=True, help="pipeline parallel")
@click.option("--vp", type=int, default=1, show_default=True, help="virtual stages per pipeline rank")
@click.option("--cp", type=int, default=1, show_default=True, help="context parallel")
@click.option("--ep", type=int, default=1, show_default=True, help="expert parallel")
@click.option("--etp", type=int, default=1, show_default=True, help="expert tensor parallel")
@click.option("--fsdp", is_flag=True, help="shard parameters, grads and optimizer over dp (ZeRO-3)")
@click.option("--mbs", type=int, default=1, show_default=True, help="micro-batch size (sequences)")
@precision_option
@click.option("--recompute", default="none", show_default=True, type=click.Choice(["none", "selective", "full"]))
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
    tp: int,
    pp: int,
    vp: int,
    cp: int,
    ep: int,
    etp: int,
    fsdp: bool,
    mbs: int,
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
    base = Layout(
        gpus=gpus[0],
        gbs=gbs,
        seq=seq,
        tp=tp,
        pp=pp,
        vp=vp,
        cp=cp,
        ep=ep,
        etp=etp,
        mbs=mbs,
        fsdp=fsdp,
        recompute=recompute,
    )  # type: ignore[arg-type]
    given = [f"--{k}" for k in ("tp", "pp", "vp", "cp", "ep", "etp", "mbs") if getattr(base, k) != 1]
    given += ["--fsdp"] * fsdp + ["--recompute"] * (recompute != "none")
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
    at = {"gpus": gpus[0], "done": 0, "total": 0}  # how far the planner got, for a Ctrl-C message
    try:
        # progress on a terminal's stderr only, for the planner (a fixed layout takes well under a second)
        with stderr_progress(
            "{task.description}", "{task.completed}/{task.total} chunks", show=use_search and not as_json
        ) as bar:
            tasks: dict[int, Any] = {}

            def step(n: int, done: int, total: int) -> None:
                at.update(gpus=n, done=done, total=total)
                if n not in tasks:
                    tasks[n] = bar.add_task(f"{n:,} GPUs", total=total)
                bar.update(tasks[n], completed=done, total=total)

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
                on_chunk=step if use_search else None,
                spares=spares,
            )
    except KeyboardInterrupt:
        got = f"after {at['done']} of {at['total']} chunks" if at["total"] else "before the first chunk was scored"
        raise KeyboardInterrupt(f"interrupted {got} of the {at['gpus']:,}-GPU search; no results written") from None
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
    render(res)
    if plot_path:
        console.print(f"plot written to {escape(plot_path)}")
    return None


COMMANDS = [command]
