"""`perfmodel calibrate RUNS.csv [RUNS2.csv ...]`: fit the global constants to your own measured runs.

The fitted constants (calibration.toml `fit = true`) are searched inside their physical bounds by the
same coordinate search as the project's own calibration (perfmodel/analysis/fit.py, validation/calibrate.py), on
every predictable row of the given files (fit.calibrate_runs: a user's rows need no held-out split, which
exists for the shipped sets' accuracy report). Each row is then predicted out of sample by k-fold
cross-validation (leave-one-out for fewer than --folds rows), and the 80% bands come from those
out-of-sample residuals. The result is a calibration file (calibration.toml's shape plus [provenance]) that
every predicting command takes as `--calibration FILE`."""

from __future__ import annotations

from pathlib import Path

import click

from perfmodel.analysis import fit as F
from perfmodel.commands.common import calibration_option, emit_json, stderr_progress
from perfmodel.core import calibration as C
from perfmodel.errors import InputError
from perfmodel.render.calibrate import print_calibration


@click.command("calibrate")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False), metavar="RUNS.csv [RUNS2.csv ...]")
@click.option(
    "--out",
    "out",
    default="calibration.toml",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="calibration file to write (use it with --calibration FILE)",
)
@click.option(
    "--rounds",
    type=click.IntRange(1, 20),
    default=F.ROUNDS,
    show_default=True,
    help="rounds of coordinate search (each tries 4 values per constant, steps shrinking)",
)
@click.option(
    "--passes",
    type=click.IntRange(1, 20),
    default=F.MAX_PASSES,
    show_default=True,
    help=f"most passes: the search restarts from its result while a pass gains >= {F.PASS_GAIN:g}",
)
@click.option(
    "--folds",
    type=click.IntRange(2, 1000),
    default=F.CV_FOLDS,
    show_default=True,
    help="cross-validation folds for the out-of-sample error and the bands (leave-one-out with fewer rows)",
)
@calibration_option
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def command(*, files: tuple[str, ...], out: str, rounds: int, passes: int, folds: int, as_json: bool) -> None:
    """Fit the global constants to measured runs (validation/README.md CSV schema) and write a calibration
    file. Fits on every row, reports each row out of sample by cross-validation. --calibration FILE starts
    from that file instead of the shipped constants."""
    out_p = Path(out)
    if out_p.resolve() == C.shipped_file().resolve():
        raise InputError("--out", out, "is perfmodel's shipped calibration; write your calibration elsewhere")
    sets = [F.read_set(p) for p in files]
    names = C.fitted_names()
    with stderr_progress("calibrating", "{task.completed} steps", show=not as_json) as bar:
        task = bar.add_task("calibrating", total=None)
        uc = F.calibrate_runs(sets, C.constants(), names, rounds, passes, folds, log=lambda _m: bar.advance(task))
    prov = F.provenance(files, uc, rounds, passes, folds)
    res = F.write_calibration(out_p, uc, prov)
    if as_json:
        return emit_json(res)
    print_calibration(res, uc, prov, sets, rounds, out_p)
    return None


COMMANDS = [command]
