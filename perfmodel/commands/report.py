"""`perfmodel report --out DIR`: a self-contained HTML page with the PNG figures (perfmodel/report.py)."""

from __future__ import annotations

import click
from rich.markup import escape

from perfmodel.analysis.checks import warn_context
from perfmodel.commands.common import emit_json, precision_option, spares_option, stack_options, stderr_progress
from perfmodel.economics.tco import BUYERS
from perfmodel.render import console
from perfmodel.report import REPORT_STEPS, ReportConfig, build
from perfmodel.specs.model import load_model

_D = ReportConfig()


@click.command("report")
@click.option(
    "--out", "out", required=True, type=click.Path(file_okay=False), help="folder to write index.html and PNGs into"
)
@click.option("--model", "model", default=_D.model, show_default=True, help="catalog id or spec file")
@click.option("--hardware", "hardware", default=_D.hardware, show_default=True, help="catalog id or TOML spec file")
@click.option(
    "--gpus", type=int, default=_D.gpus, show_default=True, help="GPU count for the planner and the breakdown"
)
@click.option("--gbs", type=int, default=_D.gbs, show_default=True, help="global batch (sequences)")
@click.option("--seq", type=int, default=_D.seq, show_default=True, help="sequence length (tokens)")
@precision_option
@click.option(
    "--compare",
    "compare",
    default=",".join(_D.compare),
    show_default=True,
    help="hardware ids to compare on cost, energy and perf per TCO (comma-separated)",
)
@click.option("--top", type=int, default=_D.top, show_default=True, help="planner layouts to show")
@click.option(
    "--scaling-max-gpus",
    type=int,
    default=_D.scaling_max_gpus,
    show_default=True,
    help="weak-scaling curve from --gpus doubling up to this",
)
@click.option(
    "--validation-csv",
    default=None,
    type=click.Path(dir_okay=False),
    help="measured runs for the scatter [default: validation/runs.csv]",
)
@click.option("--buyer", default=_D.buyer, show_default=True, type=click.Choice(BUYERS))
@spares_option
@stack_options
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="FIELD=VALUE",
    help="what-if hardware: override a field of --hardware (repeatable), e.g. nic_gbit_s=800",
)
@click.option("--json", "as_json", is_flag=True, help="print the written files and timings as JSON")
def command(
    *,
    out: str,
    model: str,
    hardware: str,
    gpus: int,
    gbs: int,
    seq: int,
    precision: str,
    compare: str,
    top: int,
    scaling_max_gpus: int,
    validation_csv: str | None,
    buyer: str,
    spares: str,
    as_json: bool,
    sets: tuple[str, ...] = (),
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Write an HTML report (index.html + PNGs): breakdown, roofline, top layouts, scaling, validation
    scatter and the H100 vs GB200 NVL72 cost/energy comparison."""
    warn_context(load_model(model), seq)
    hws = tuple(h.strip() for h in compare.split(",") if h.strip())
    cfg = ReportConfig(
        model=model,
        hardware=hardware,
        hardware_sets=tuple(sets),
        gpus=gpus,
        gbs=gbs,
        seq=seq,
        precision=precision,
        compare=hws or _D.compare,
        top=top,
        scaling_max_gpus=scaling_max_gpus,
        validation_csv=validation_csv,
        stack=stack,
        stack_set=stack_set,
        buyer=buyer,
        spares=spares,
    )
    # progress on a terminal's stderr only: the report's steps (planner, roofline, scaling, validation, ...)
    with stderr_progress("{task.description}", "{task.completed}/{task.total} steps", show=not as_json) as bar:
        task = bar.add_task("report", total=len(REPORT_STEPS))

        def step(name: str) -> None:
            bar.update(task, completed=REPORT_STEPS.index(name), description=f"report: {name}")

        rep = build(cfg, out, on_step=step)
    if as_json:
        return emit_json(
            {"out": str(rep.out), "index": str(rep.out / "index.html"), "files": rep.files, "seconds": rep.seconds}
        )
    console.print(
        f"wrote {escape(str(rep.out / 'index.html'))} and {len(rep.files) - 1} files "
        f"({', '.join(rep.files[1:])}) in {rep.seconds:.1f} s"
    )
    return None


COMMANDS = [command]
