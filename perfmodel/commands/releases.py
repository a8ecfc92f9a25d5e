"""`perfmodel releases`: the release series of the measured runs, each row predicted with its own stack preset
(perfmodel/analysis/releases.py)."""

from __future__ import annotations

from pathlib import Path

import click

from perfmodel.analysis.releases import release_series
from perfmodel.analysis.scaling import default_runs_csv, load_runs
from perfmodel.commands.common import emit_json
from perfmodel.render import console
from perfmodel.render.releases import print_series
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.model import load_model


@click.command("releases")
@click.option(
    "--series",
    "series_name",
    type=click.Choice(["dgxc", "nemo"]),
    default=None,
    help="one series: DGXC benchmarking recipes or NeMo / Megatron-Bridge containers",
)
@click.option("--model", "model", default=None, help="only rows of this catalog model id")
@click.option("--hardware", "hardware", default=None, help="only rows of this catalog hardware id")
@click.option("--precision", default=None, help="only rows of this precision")
@click.option("--gpus", type=int, default=None, help="only rows with this GPU count")
@click.option(
    "--rows/--no-rows",
    "show_rows",
    default=None,
    help="print every row [default: when a --model or --gpus filter is given]",
)
@click.option(
    "--csv",
    "csv_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="measured runs [default: validation/runs.csv]",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def releases_cmd(
    *,
    series_name: str | None,
    model: str | None,
    hardware: str | None,
    precision: str | None,
    gpus: int | None,
    show_rows: bool | None,
    csv_path: str | None,
    as_json: bool,
) -> None:
    """The release series: per software release, its measured rows vs the prediction with that release's own stack preset."""
    if model:
        model = load_model(model).id  # unknown id -> InputError with a suggestion
    if hardware:
        hardware = load_hardware(hardware).id
    path = Path(csv_path) if csv_path else default_runs_csv()
    s = release_series(load_runs(path), path.resolve().parent, series_name, model, hardware, precision, gpus)
    if as_json:
        return emit_json(s)
    if not s["releases"]:
        console.print("no release rows match these filters")
        return None
    print_series(s, show_rows if show_rows is not None else bool(model or gpus))
    return None


COMMANDS = [releases_cmd]
