"""`perfmodel sensitivity`'s text: the ranked elasticities of step time and of $ per token, or a sweep table."""

from __future__ import annotations

from rich.markup import escape

from perfmodel.analysis.sensitivity import Elasticity, Sensitivity, Sweep
from perfmodel.core.predict import Options
from perfmodel.render import console, stack_line, table
from perfmodel.specs.hardware import HardwareSpec, show_field
from perfmodel.specs.model import ModelSpec

# how each elasticity was obtained (perfmodel/analysis/sensitivity.py): the derivative where the model is differentiable
METHOD = {
    "derivative": "derivative",
    "finite difference": "±10% (kink)",
    "discrete step": "next size",
    "exact (TCO share)": "TCO share",
}


def effect(e: Elasticity, rel: float) -> str:
    """'+10% NIC bandwidth -> -3.2% step time' (the domain size: '72 -> 144 GPUs NVLink domain -> ...')."""
    if e.field == "scale_up.domain_size":
        what = f"NVLink domain {e.low:.0f} -> {e.high:.0f} GPUs"
    else:
        what = f"+{rel:.0%} {e.label}"
    return f"{what} -> {signed_percent(e.change_high)} step time"


def signed_percent(change: float) -> str:
    """A relative change as a percentage whose sign is always that of `change`: one decimal from 0.1%
    ('-6.7%'), two below ('-0.03%'), '<0.01%' with the sign below 0.005% ('+<0.01%'), '0.0%' only for
    exactly no change, so a small negative change never reads '+0.0%'."""
    if change == 0:
        return "0.0%"
    sign, pct = ("+" if change > 0 else "-"), abs(change) * 100
    if pct < 0.005:
        return f"{sign}<0.01%"
    return f"{sign}{pct:.{1 if pct >= 0.1 else 2}f}%"


def print_sweep(sw: Sweep, title: str, opts: Options, m: ModelSpec, hw: HardwareSpec) -> None:
    (f0, v0), rest = sw.axes[0], sw.axes[1:]
    cols = [f"{rest[0][0]}={v}" for v in rest[0][1]] if rest else ["tokens/s/GPU"]
    fits = sw.matrix("fits")
    mem = sw.matrix("memory_bytes_per_gpu")
    rows = [
        [f"{f0}={v}", *[f"{x:,.0f}" if ok else f"no fit ({mb / 1e9:.1f} GB)" for x, ok, mb in zip(r, fr, mr)]]
        for v, r, fr, mr in zip(v0, sw.matrix(), fits, mem)
    ]
    console.print(stack_line(opts, m, hw))
    console.print(table(escape(f"tokens/s per GPU: {title}"), ["", *cols], rows, 1))


def print_sensitivity(s: Sensitivity, title: str, opts: Options, m: ModelSpec, hw: HardwareSpec, rel: float) -> None:
    b = s.base
    console.print(
        f"[bold]{escape(title)}[/bold]: step {b['step_time_s']:.3f} s, "
        f"{b['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU, MFU {b['mfu']:.1%}"
    )
    console.print(stack_line(opts, m, hw))
    top = s.ranked[0]
    console.print(
        f"most sensitive: [bold]{escape(effect(top, rel))}[/bold] (elasticity {round(top.elasticity, 3) + 0.0:+.3f})"
    )
    console.print(
        "how: derivative = d ln(step)/d ln(x) at x, where the model is differentiable (both one-sided "
        f"derivatives agree); ±{rel:.0%} (kink) = central difference where it is not; next size = to the "
        "next NVLink domain size"
    )
    rows = [
        [
            str(i + 1),
            escape(effect(e, rel)),
            f"{round(e.elasticity, 3) + 0.0:+.3f}",
            METHOD[e.method],
            escape(show_field(e.field, e.value)),
        ]
        for i, e in enumerate(s.ranked)
    ]
    console.print(
        table(
            "Elasticity of step time, d ln(step) / d ln(x): -1 = inversely proportional, 0 = no effect",
            ["#", "effect", "elasticity", "how", "value"],
            rows,
            2,
        )
    )
    if s.cost:
        crow = [
            [str(i + 1), escape(c["label"]), f"{round(c['cost_elasticity'], 3) + 0.0:+.3f}", METHOD[c["method"]]]
            for i, c in enumerate(s.cost)
        ]
        console.print(
            table(
                f"Elasticity of $ per token (hyperscaler TCO ${s.usd_per_gpu_hour:.3f}/GPU-h; "
                "performance knobs as for step time)",
                ["#", "knob", "elasticity", "how"],
                crow,
                2,
            )
        )
    else:
        console.print(
            f"$ per token: {escape(hw.id)} has no sourced price (--set cost.allin_capex_usd=USD per unit "
            "to add one); its elasticities equal those of step time"
        )
    mem = s.memory
    verdict = lambda ok: "fits" if ok else "does NOT fit"
    console.print(
        f"HBM capacity (no effect on step time): needs {mem['memory_bytes_per_gpu'] / 1e9:.1f} GB of "
        f"{mem['hbm_bytes'] / 1e9:.0f} GB; -{rel:.0%} capacity: {verdict(mem['fits_minus'])}, "
        f"as is: {verdict(mem['fits'])}, +{rel:.0%}: {verdict(mem['fits_plus'])}"
    )
