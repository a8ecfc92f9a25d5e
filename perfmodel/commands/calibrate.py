"""`perfmodel calibrate RUNS.csv [RUNS2.csv ...]`: fit the global constants to your own measured runs.

The fitted constants (calibration.toml `fit = true`) are searched inside their physical bounds by the
same coordinate search as the project's own calibration (perfmodel/fit.py, validation/calibrate.py),
on the CALIBRATION split of the given rows only (crc32(run_id) % 4 == 0); the held-out rest is scored
before and after. The result is a calibration file (calibration.toml's shape plus [provenance]) that
every predicting command takes as `--calibration FILE`."""
from __future__ import annotations

import datetime as _dt
import hashlib
from pathlib import Path

import click
from rich.markup import escape

from .. import calibration as C, fit as F, uncertainty as U
from ..errors import InputError
from ..validate import CALIBRATION_SPLITS
from .common import calibration_option, console, emit_json, print_table, stderr_progress

SPLIT = (f"calibration split: crc32(run_id) % {CALIBRATION_SPLITS} == 0 (perfmodel.validate.calibration_split); "
         "the rest held out")


def _stats(rep) -> dict:
    s = rep.stats()
    e = F.log_errors(rep)
    return {"rows": s["rows"], "mape": s["mape"], "bias": s["bias"],
            "mean_abs_log_error": float(e.mean()) if e.size else None}


def _pct(x: float | None, sign: bool = False) -> str:
    return "-" if x is None else (f"{x:+.1%}" if sign else f"{x:.1%}")


def _start_name() -> str:
    f = C.active_file()
    return "the shipped perfmodel/calibration.toml" if f == C.shipped_file() else escape(str(f))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@click.command("calibrate")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False), metavar="RUNS.csv [RUNS2.csv ...]")
@click.option("--out", "out", default="calibration.toml", show_default=True, type=click.Path(dir_okay=False),
              help="calibration file to write (use it with --calibration FILE)")
@click.option("--rounds", type=click.IntRange(1, 20), default=F.ROUNDS, show_default=True,
              help="rounds of coordinate search (each tries 4 values per constant, steps shrinking)")
@click.option("--passes", type=click.IntRange(1, 20), default=F.MAX_PASSES, show_default=True,
              help=f"most passes: the search restarts from its result while a pass gains >= {F.PASS_GAIN:g}")
@calibration_option
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def command(files: tuple[str, ...], out: str, rounds: int, passes: int, as_json: bool) -> None:
    """Fit the global constants to measured runs (validation/README.md CSV schema) and write a calibration
    file. Fits on the calibration split of the rows, reports on the held-out rest. --calibration FILE
    starts from that file instead of the shipped constants."""
    out_p = Path(out)
    if out_p.resolve() == C.shipped_file().resolve():
        raise InputError("--out", out, "is perfmodel's shipped calibration; write your calibration elsewhere")
    sets = [F.read_set(p) for p in files]
    cal, held = F.calibration_part(sets), F.held_out_part(sets)
    names = C.fitted_names()
    start = C.constants()
    start_cal = F.evaluate(cal, start)
    n_cal, n_rows = len(start_cal.results), sum(len(s.rows) for s in sets)
    need = len(names) + 1
    if n_cal < need:
        raise InputError(", ".join(files), "calibration rows",
                         f"{n_cal} predictable row(s) in the calibration split (crc32(run_id) % {CALIBRATION_SPLITS} == 0) of {n_rows} "
                         f"row(s); fitting {len(names)} constants needs at least {need}"
                         + (f" ({len(start_cal.unsupported)} calibration row(s) unsupported, first: "
                            f"{start_cal.unsupported[0]['reason']})" if start_cal.unsupported else ""))
    with stderr_progress("calibrating", "{task.completed} constants searched", show=not as_json) as bar:
        task = bar.add_task("calibrating", total=None)
        fit = F.search(cal, start, names, rounds, passes, log=lambda _m: bar.advance(task))
    attr = F.attribution(cal, fit)
    start_held, fit_held = F.evaluate(held, start), F.evaluate(held, fit.consts)
    fit_cal = F.evaluate(cal, fit.consts)
    # the 80% bands of the new predictor, fitted on the same calibration rows (perfmodel/uncertainty.py), and
    # their coverage of the held-out rows
    gen = F.generations(sets)
    bands = U.fit(F.band_samples(fit_cal, gen))
    cover = U.coverage(bands, F.band_samples(fit_held, gen))
    prov = {
        "command": "perfmodel calibrate " + " ".join(files) + f" --rounds {rounds} --passes {passes}",
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "inputs": [str(Path(p).resolve()) for p in files],
        "inputs_sha256": [_sha256(Path(p)) for p in files],
        "rows": [len(s.rows) for s in sets],
        "calibration_rows": [len(s.rows) for s in cal],
        "held_out_rows": [len(s.rows) for s in held],
        "predicted_calibration_rows": n_cal,
        "split": SPLIT,
        "started_from": str(C.active_file()),
        "fitted": list(names),
        "not_identified": list(fit.inert),
        "rounds": rounds,
        "passes": fit.passes,
        "objective": "mean |ln(predicted / measured tokens/s/GPU)| over the predicted calibration rows",
        "objective_start": fit.start_objective,
        "objective_fitted": fit.objective,
    }
    if fit_held.results:                 # TOML has no null: without held-out rows the keys are left out
        prov["held_out_mape_start"] = _stats(start_held)["mape"]
        prov["held_out_mape_fitted"] = _stats(fit_held)["mape"]
        prov["held_out_band_coverage"] = cover["coverage"]
    header = ("perfmodel calibration file written by `perfmodel calibrate` (perfmodel/fit.py); use it with\n"
              "`--calibration FILE` on any predicting command. Each constant keeps calibration.toml's meaning,\n"
              "prior and source; `value` is fitted on the calibration split of the inputs in [provenance],\n"
              "[bands.*] are the 80% bands of ln(measured / predicted) on those rows (perfmodel/uncertainty.py).")
    try:
        out_p.write_text(F.calibration_text(C.table(), fit.consts, prov, header, bands), encoding="utf-8")
    except OSError as exc:
        raise InputError("--out", out, f"cannot write ({exc.strerror or exc})") from None
    C.forget()                           # the file just written may replace one read earlier
    res = {"out": str(out_p), "provenance": prov, "constants": attr,
           "calibration": {"start": _stats(start_cal), "fitted": _stats(fit_cal)},
           "held_out": {"start": _stats(start_held), "fitted": _stats(fit_held)},
           "bands": bands, "held_out_band_coverage": cover,
           "unsupported": start_cal.unsupported + start_held.unsupported, "evaluations": fit.evaluations}
    if as_json:
        return emit_json(res)
    console.print(f"[bold]calibrated[/bold] {len(names)} constants on {n_cal} calibration rows of {n_rows} "
                  f"({', '.join(escape(s.name) for s in sets)}); {sum(len(s.rows) for s in held)} held out; "
                  f"{fit.evaluations} evaluations ({fit.passes} passes of {rounds} rounds)")
    rows = []
    for n, a in attr.items():
        lo, hi = C.bounds(n)
        at = " (bound)" if a["fitted"] != a["start"] and a["fitted"] in (lo, hi) else ""
        rows.append([n, f"{a['start']:.4g}", f"{a['fitted']:.4g}{at}",
                     "no effect" if n in fit.inert else ("-" if a["moved"] == 0 else f"{a['moved']:+.1%}"),
                     f"{a['explains']:+.4f}"])
    print_table(f"Constants, start -> fitted (mean |ln(pred/meas)| {fit.start_objective:.4f} -> {fit.objective:.4f})",
                ["constant", "start", "fitted", "moved", "explains"], rows, 1)
    console.print("explains: objective with that constant alone back at its start, minus the fitted objective "
                  "(its share of the drop; constants interact, so the shares need not add up). "
                  f"start: {_start_name()}. no effect: no trial value changed the objective "
                  "(these rows do not identify it; it keeps its start value)")
    srows = []
    for name, d in (("calibration split (fit)", res["calibration"]), ("held-out", res["held_out"])):
        srows.append([name, d["start"]["rows"], _pct(d["start"]["mape"]), _pct(d["fitted"]["mape"]),
                      _pct(d["start"]["bias"], True), _pct(d["fitted"]["bias"], True)])
    print_table("Error of predicted tokens/s/GPU, start -> fitted",
                ["rows", "n", "MAPE start", "MAPE fitted", "bias start", "bias fitted"], srows, 1)
    console.print("80% bands fitted on the calibration rows with the fitted constants (measured/predicted): "
                  + ", ".join(f"{g} {d['low']:.2f}-{d['high']:.2f}x ({d['rows']} rows)" for g, d in bands.items())
                  + (f"; held-out coverage {cover['coverage']:.1%} of {cover['rows']}" if cover["rows"] else ""))
    if res["unsupported"]:
        console.print(f"{len(res['unsupported'])} row(s) not predicted (first: {escape(res['unsupported'][0]['reason'])}); "
                      f"`perfmodel validate FILE` lists them")
    console.print(f"wrote {escape(str(out_p))}: use it with --calibration {escape(str(out_p))}")
    return None


COMMANDS = [command]
