"""`perfmodel calibrate`'s text: the constants start -> fitted, the error in and out of sample, the bands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape

from perfmodel.analysis import fit as F
from perfmodel.core import calibration as C
from perfmodel.render import console, print_table


def _pct(x: float | None, sign: bool = False) -> str:
    return "-" if x is None else (f"{x:+.1%}" if sign else f"{x:.1%}")


def _start_name() -> str:
    f = C.active_file()
    return "the shipped perfmodel/calibration.toml" if f == C.shipped_file() else escape(str(f))


def print_calibration(
    res: dict[str, Any], uc: F.UserCalibration, prov: dict[str, Any], sets: list[F.RunSet], rounds: int, out_p: Path
) -> None:
    names, fit = C.fitted_names(), uc.fit
    n_rows = sum(len(s.rows) for s in sets)
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
