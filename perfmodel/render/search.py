"""`perfmodel search`'s text: the top layouts with their bands and breakdown, why the winner wins, ties, and the
Pareto fronts (memory headroom, GPU count)."""

from __future__ import annotations

import numpy as np
from rich.markup import escape

from perfmodel.analysis import uncertainty
from perfmodel.analysis.search import SearchResult, describe_why
from perfmodel.core.predict import Prediction, terms
from perfmodel.render import console, si, table
from perfmodel.specs.layout import layout_text

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


def print_search(
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
