"""`perfmodel scaling`'s text: per size the step, throughput, MFU, what grows, goodput, cost and energy; the
measured runs beside the prediction; what grew from the first size to the last."""

from __future__ import annotations

from rich.markup import escape

from perfmodel.analysis.releases import release_of
from perfmodel.analysis.scaling import GROWS, ScalingResult, summary_growth
from perfmodel.core.predict import Options
from perfmodel.render import compact, console, fits_width, stack_line, table
from perfmodel.specs.layout import layout_text


def _pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def print_scaling(res: ScalingResult) -> None:
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
