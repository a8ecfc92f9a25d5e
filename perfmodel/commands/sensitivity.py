"""`perfmodel sensitivity`: which hardware knob matters for one workload and layout (elasticities of step
time and of cost per token, perfmodel/analysis/sensitivity.py), or a sweep of one or two hardware fields as a
tokens/s/GPU table and heat map."""

from __future__ import annotations

import click
from rich.markup import escape

from perfmodel import api
from perfmodel.analysis.checks import memory_error, warn_context
from perfmodel.analysis.sensitivity import Elasticity, plot_sweep, sensitivity, sweep
from perfmodel.commands.common import emit_json, layout_options, stack_options
from perfmodel.core.calibration import constants
from perfmodel.core.predict import Options, stack_info
from perfmodel.errors import InputError
from perfmodel.render import console, stack_line, table
from perfmodel.specs.hardware import resolve_hardware, show_field
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import load_model

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


@click.command("sensitivity")
@layout_options
@stack_options
@click.option(
    "--sweep",
    "sweeps",
    multiple=True,
    metavar="FIELD=V1,V2,...",
    help="sweep a hardware field (as --set takes it; one or two sweeps) and print tokens/s/GPU, "
    "e.g. --sweep nvlink_domain=8,16,36,72,144 --sweep nic_gbit_s=400,800",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="with --sweep: write a heat map of tokens/s/GPU to this PNG",
)
@click.option(
    "--rel",
    type=float,
    default=0.10,
    show_default=True,
    help="relative change of the '+10% x' column and of the finite difference used at a kink",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def sensitivity_cmd(
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
    gbs: int,
    seq: int,
    precision: str,
    recompute: str,
    attention: str,
    routing: str,
    sets: tuple[str, ...],
    sweeps: tuple[str, ...],
    plot_path: str | None,
    rel: float,
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Elasticity of step time and cost per token to each hardware parameter, ranked (which knob matters),
    or --sweep tables."""
    m, hw = load_model(model_ref), resolve_hardware(hardware_ref, sets)
    warn_context(m, seq)
    lay = Layout(
        gpus=gpus,
        gbs=gbs,
        seq=seq,
        tp=tp,
        pp=pp,
        vp=vp,
        cp=cp,
        ep=ep,
        etp=1 if etp is None else etp,
        mbs=mbs,
        fsdp=fsdp,
        recompute=recompute,
    )  # type: ignore[arg-type]
    opts = Options(precision, attention, routing, constants(), stack, stack_set)  # type: ignore[arg-type]
    head = {
        "model": m.id,
        "hardware": hw.id,
        "hardware_overridden": list(hw.overridden),
        "precision": precision,
        **stack_info(opts, m, hw),
    }
    title = f"{m.name} on {gpus} x {hw.id}, {precision}"
    if plot_path and not sweeps:
        raise InputError("--plot", plot_path, "needs --sweep (the heat map shows a sweep)")
    if sweeps:
        sw = sweep(m, hw, lay, opts, list(sweeps))
        if plot_path:
            plot_sweep(sw, plot_path, f"tokens/s per GPU: {m.id}, {gpus} x {hw.id}, {precision}")
        if as_json:
            return emit_json({**head, **sw.to_dict(), **({"plot": plot_path} if plot_path else {})})
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
        if plot_path:
            console.print(f"heat map written to {escape(plot_path)}")
        return None
    base = api.predict(m, hw, lay, precision, attention, routing, stack=stack, stack_set=stack_set)
    if not bool(base.fits[0]):  # elasticities of a layout that cannot run mean nothing
        raise memory_error(
            m, hw, lay, base.row(0), precision, attention, routing, ignore_flag=False, stack=stack, stack_set=stack_set
        )
    s = sensitivity(m, hw, lay, opts, rel)
    if as_json:
        return emit_json({**head, **s.to_dict()})
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
    return None


COMMANDS = [sensitivity_cmd]
