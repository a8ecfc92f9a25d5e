"""`perfmodel sensitivity`: which hardware knob matters for one workload and layout (elasticities of step
time and of cost per token, perfmodel/analysis/sensitivity.py), or a sweep of one or two hardware fields as a
tokens/s/GPU table and heat map."""

from __future__ import annotations

import click
from rich.markup import escape

from perfmodel.analysis.checks import require_fits
from perfmodel.analysis.sensitivity import plot_sweep, sensitivity, sweep
from perfmodel.commands.common import LayoutFlags, emit_json, layout_options, stack_options
from perfmodel.core.predict import stack_info
from perfmodel.errors import InputError
from perfmodel.render import console
from perfmodel.render.sensitivity import print_sensitivity, print_sweep


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
    flags: LayoutFlags,
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
    m, hw = flags.specs(sets)
    lay, opts, precision = flags.layout(), flags.options(stack, stack_set), flags.precision
    head = {
        "model": m.id,
        "hardware": hw.id,
        "hardware_overridden": list(hw.overridden),
        "precision": precision,
        **stack_info(opts, m, hw),
    }
    title = f"{m.name} on {lay.gpus} x {hw.id}, {precision}"
    if plot_path and not sweeps:
        raise InputError("--plot", plot_path, "needs --sweep (the heat map shows a sweep)")
    if sweeps:
        sw = sweep(m, hw, lay, opts, list(sweeps))
        if plot_path:
            plot_sweep(sw, plot_path, f"tokens/s per GPU: {m.id}, {lay.gpus} x {hw.id}, {precision}")
        if as_json:
            return emit_json({**head, **sw.to_dict(), **({"plot": plot_path} if plot_path else {})})
        print_sweep(sw, title, opts, m, hw)
        if plot_path:
            console.print(f"heat map written to {escape(plot_path)}")
        return None
    require_fits(m, hw, lay, opts)  # elasticities of a layout that cannot run mean nothing
    s = sensitivity(m, hw, lay, opts, rel)
    if as_json:
        return emit_json({**head, **s.to_dict()})
    print_sensitivity(s, title, opts, m, hw, rel)
    return None


COMMANDS = [sensitivity_cmd]
