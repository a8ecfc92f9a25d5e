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
from rich.markup import escape

from perfmodel.analysis import fit as F
from perfmodel.commands.common import calibration_option, emit_json, stderr_progress
from perfmodel.core import calibration as C
from perfmodel.errors import InputError
from perfmodel.render import console, print_table


def _pct(x: float | None, sign: bool = False) -> str:
    return "-" if x is None else (f"{x:+.1%}" if sign else f"{x:.1%}")


def _start_name() -> str:
    f = C.active_file()
    return "the shipped perfmodel/calibration.toml" if f == C.shipped_file() else escape(str(f))


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
    fit = uc.fit
    n_rows = sum(len(s.rows) for s in sets)
    prov = F.provenance(files, uc, rounds, passes, folds)
    res = F.write_calibration(out_p, uc, prov)
    if as_json:
        return emit_json(res)
    n_fit = len(uc.fitted_report.results)
    console.print(
        f"[bold]calibrated[/bold] {len(names)} constants on {n_fit} of {n_rows} rows "
        f"({', '.join(escape(s.name) for s in sets)}); {fit.evaluations} evaluations "
        f"({fit.passes} passes of {rounds} rounds); {prov['cross_validation']}"
    )
    rows = []
    for n, a in uc.attribution.items():
        lo, hi = C.bounds(n)
        at = " (bound)" if a["fitted"] != a["start"] and a["fitted"] in (lo, hi) else ""
        rows.append(
            [
                n,
                f"{a['start']:.4g}",
                f"{a['fitted']:.4g}{at}",
                "no effect" if n in fit.inert else ("-" if a["moved"] == 0 else f"{a['moved']:+.1%}"),
                f"{a['explains']:+.4f}",
            ]
        )
    print_table(
        f"Constants, start -> fitted (mean |ln(pred/meas)| {fit.start_objective:.4f} -> {fit.objective:.4f})",
        ["constant", "start", "fitted", "moved", "explains"],
        rows,
        1,
    )
    console.print(
        "explains: objective with that constant alone back at its start, minus the fitted objective "
        "(its share of the drop; constants interact, so the shares need not add up). "
        f"start: {_start_name()}. no effect: no trial value changed the objective "
        "(these rows do not identify it; it keeps its start value)"
    )
    srows = []
    for name, d in (
        ("in sample (every row, fitted on all)", res["calibration"]),
        ("cross-validated (each row out of sample)", res["cross_validated"]),
    ):
        srows.append(
            [
                name,
                d["fitted"]["rows"],
                _pct(d["start"]["mape"]),
                _pct(d["fitted"]["mape"]),
                _pct(d["start"]["bias"], True),
                _pct(d["fitted"]["bias"], True),
            ]
        )
    print_table(
        "Error of predicted tokens/s/GPU, start -> fitted",
        ["rows", "n", "MAPE start", "MAPE fitted", "bias start", "bias fitted"],
        srows,
        1,
    )
    cov = uc.coverage
    console.print(
        "80% bands from the cross-validated residuals (measured/predicted): "
        + ", ".join(f"{g} {d['low']:.2f}-{d['high']:.2f}x ({d['rows']} rows)" for g, d in uc.bands.items())
        + (
            f"; coverage of each fold by bands fitted on the others {cov['coverage']:.1%} of {cov['rows']}"
            if cov["rows"]
            else ""
        )
    )
    if res["unsupported"]:
        console.print(
            f"{len(res['unsupported'])} row(s) not predicted (first: {escape(res['unsupported'][0]['reason'])}); "
            f"`perfmodel validate FILE` lists them"
        )
    console.print(f"wrote {escape(str(out_p))}: use it with --calibration {escape(str(out_p))}")
    return None


COMMANDS = [command]
