"""Fit the global constants (perfmodel/calibration.toml, `fit = true`) to measured runs.

Used by validation/calibrate.py (the project's calibration), validation/loso.py (leave-one-source-out)
and `perfmodel calibrate` (a user's own runs). The split is fixed per row: a row is in the CALIBRATION
split when crc32(run_id) % 4 == 0 (perfmodel.analysis.validate.calibration_split; a row without run_id is named
row<line> as `validate` names it). Only calibration rows are given to `coordinate_search`: the held-out
rows are dropped before the objective is built, so they cannot influence the fit.

Objective: the mean absolute log error |ln(predicted / measured)| of tokens/s/GPU over the rows, symmetric
in over- and under-prediction. Search: coordinate search with multiplicative steps (each constant in turn
tries x(1-s), x/(1-s), x(1-s/2), x/(1-s/2), clipped to its calibration.BOUNDS; a step is kept when it
lowers the objective by more than 1e-5), s = 0.35 shrinking by 0.6 per round: deterministic and
dependency-free (Hooke & Jeeves 1961, pattern search without the pattern move).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from perfmodel.analysis import uncertainty as U
from perfmodel.analysis.validate import Report, calibration_split, merge, read_csv, validate_rows
from perfmodel.analysis.validate import _resolve_ref as resolve_ref
from perfmodel.core import calibration as C
from perfmodel.core.calibration import BANDS, PROVENANCE, Constants, bounds, names
from perfmodel.errors import InputError
from perfmodel.specs.hardware import load_hardware

STEP0 = 0.35  # first relative step
SHRINK = 0.6  # step factor per round
MIN_GAIN = 1e-5  # objective drop a step must bring to be kept
ROUNDS = 5
MAX_PASSES = 4  # restarts of the search from its own result (step back at STEP0) ...
PASS_GAIN = 1e-3  # ... while a pass lowers the objective by at least this


@dataclass(frozen=True)
class RunSet:
    """The rows of one measured-runs CSV (validation/README.md schema), every row with a run_id."""

    path: Path
    rows: tuple[dict, ...]

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def base(self) -> Path:
        return self.path.resolve().parent

    def where(self, keep: Callable[[dict], bool]) -> "RunSet":
        return replace(self, rows=tuple(r for r in self.rows if keep(r)))


def read_set(path: str | Path) -> RunSet:
    """A CSV as a RunSet; rows without run_id are named row<line>, the name `validate` reports them by."""
    rows = read_csv(path)
    return RunSet(
        Path(path),
        tuple(r if (r.get("run_id") or "").strip() else {**r, "run_id": f"row{i + 2}"} for i, r in enumerate(rows)),
    )


def is_calibration(row: dict) -> bool:
    return calibration_split((row.get("run_id") or "").strip())


def calibration_part(sets: Iterable[RunSet]) -> list[RunSet]:
    return [s.where(is_calibration) for s in sets]


def held_out_part(sets: Iterable[RunSet]) -> list[RunSet]:
    return [s.where(lambda r: not is_calibration(r)) for s in sets]


def evaluate(sets: Iterable[RunSet], consts: Constants | None) -> Report:
    """validate's report over every row of the sets with these constants (None: the active calibration)."""
    return merge([validate_rows(s.rows, s.base, consts, dataset=s.name) for s in sets if s.rows])


def log_errors(report: Report) -> np.ndarray:
    return np.abs(np.log1p(np.array([r.error for r in report.results])))


def objective(sets: list[RunSet], consts: Constants) -> float:
    """Mean |ln(predicted / measured)| of tokens/s/GPU over the predicted rows of `sets`."""
    e = log_errors(evaluate(sets, consts))
    if not e.size:
        raise InputError("calibrate", "rows", "no predictable row to fit on")
    return float(e.mean())


@dataclass(frozen=True)
class Fit:
    start: Constants
    consts: Constants
    names: tuple[str, ...]  # the constants searched
    start_objective: float
    objective: float
    evaluations: int
    rounds: int
    inert: tuple[str, ...] = ()  # searched constants no trial value changed the objective of (not identified)
    passes: int = 1


def coordinate_search(
    sets: list[RunSet],
    start: Constants,
    names: Iterable[str],
    rounds: int = ROUNDS,
    log: Callable[[str], None] | None = None,
) -> Fit:
    """Minimise `objective(sets, .)` over `names` from `start`, each inside calibration.bounds. `sets` is
    everything the objective sees: pass the calibration split only (calibration_part)."""
    names = tuple(names)
    c = start
    best = first = objective(sets, c)
    evals = 1
    if log:
        log(f"start: mean |log err| = {best:.4f}")
    step = STEP0
    felt: set[str] = set()
    for rnd in range(rounds):
        for n in names:
            lo, hi = bounds(n)
            cur = getattr(c, n)
            for mult in (1 - step, 1 / (1 - step), 1 - step / 2, 1 / (1 - step / 2)):
                val = float(np.clip(cur * mult, lo, hi))
                if val == cur:
                    continue
                trial = c.with_(**{n: val})
                o = objective(sets, trial)
                evals += 1
                if abs(o - best) > 1e-12:
                    felt.add(n)
                if o < best - MIN_GAIN:
                    best, c, cur = o, trial, val
            if log:
                log(f"round {rnd} {n:20s} = {getattr(c, n):.4g}   objective {best:.4f}")
        step *= SHRINK
    return Fit(start, c, names, first, best, evals, rounds, tuple(n for n in names if n not in felt))


def search(
    sets: list[RunSet],
    start: Constants,
    names: Iterable[str],
    rounds: int = ROUNDS,
    max_passes: int = MAX_PASSES,
    log: Callable[[str], None] | None = None,
) -> Fit:
    """coordinate_search restarted from its own result, its step back at STEP0, while a pass lowers the
    objective by at least PASS_GAIN (at most `max_passes` passes). One pass moves a constant by at most
    ~4.8x (the shrinking steps' sum), so a start far from the optimum (the priors: kernel_fixed_s 4e-6 vs
    a host-bound 3e-5) needs several; a start near it stops after the second."""
    names = tuple(names)
    f = coordinate_search(sets, start, names, rounds, log)
    first, evals, felt, n = f.start_objective, f.evaluations, set(names) - set(f.inert), 1
    while n < max_passes and f.start_objective - f.objective >= PASS_GAIN:
        f = coordinate_search(sets, f.consts, names, rounds, log)
        evals, n = evals + f.evaluations, n + 1
        felt |= set(names) - set(f.inert)
    return Fit(start, f.consts, names, first, f.objective, evals, rounds, tuple(x for x in names if x not in felt), n)


def attribution(sets: list[RunSet], fit: Fit) -> dict[str, dict]:
    """Per searched constant: start and fitted value, relative move, and the objective with that constant
    alone reverted to its start (`explains` = that objective minus the fitted one: the part of the residual
    drop it carries; the parts need not add up to the total, constants interact)."""
    out: dict[str, dict] = {}
    for n in fit.names:
        a, b = getattr(fit.start, n), getattr(fit.consts, n)
        rev = fit.objective if a == b else objective(sets, fit.consts.with_(**{n: a}))
        out[n] = {
            "start": a,
            "fitted": b,
            "moved": (b - a) / a if a else (0.0 if a == b else float("inf")),
            "objective_reverted": rev,
            "explains": rev - fit.objective,
        }
    return out


# ---- uncertainty-band samples (perfmodel/analysis/uncertainty.py groups: hardware generation x op class) --------


def generations(sets: Iterable[RunSet]) -> dict[str, str]:
    """Hardware id -> generation (the band family) for every hardware cell of the sets that loads."""
    gen: dict[str, str] = {}
    for s in sets:
        for cell in {(r.get("hardware") or "").strip() for r in s.rows}:
            try:
                hw = load_hardware(resolve_ref(cell, s.base))
            except ValueError:
                continue  # validate reports its rows as unsupported
            gen[hw.id] = U.family(hw)
    return gen


def band_samples(report: Report, gen: dict[str, str]) -> list[tuple[str, str, float]]:
    """(generation, op class, ln(measured / predicted)) per predicted row, as uncertainty.fit takes them."""
    return [
        (gen[r.hardware], "moe" if r.moe else "dense", U.log_ratio(r.measured, r.predicted)) for r in report.results
    ]


# ---- calibration files (the shape of calibration.toml plus [provenance]) ----------------------------


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if v == v and abs(v) != float("inf") else ('"inf"' if v > 0 else '"nan"')
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml_value(x)}' for k, x in v.items()) + " }"
    raise TypeError(f"no TOML for {type(v).__name__}")


def calibration_text(
    base: dict[str, dict], consts: Constants, provenance: dict, header: str, bands: dict[str, dict] | None = None
) -> str:
    """A calibration file: `header` as comments, [provenance], then every constant's table from `base`
    (the calibration the fit started from: prior, fit, unit, meaning, source) with its value replaced
    (full precision, so predictions from the file equal those of the fit), then its uncertainty bands
    ([bands."group"], uncertainty.fit's output) where given."""
    out = [f"# {ln}" if ln else "#" for ln in header.splitlines()]
    out += ["", f"[{PROVENANCE}]"] + [f"{k} = {_toml_value(v)}" for k, v in provenance.items()]
    for n in names():
        t = {**{k: v for k, v in base[n].items() if k != "value"}}
        out += ["", f"[{n}]", f"value = {_toml_value(float(getattr(consts, n)))}"]
        out += [f"{k} = {_toml_value(v)}" for k, v in t.items()]
    for g, d in (bands or {}).items():
        out += ["", f'[{BANDS}."{g}"]'] + [f"{k} = {_toml_value(v)}" for k, v in d.items()]
    return "\n".join(out) + "\n"


# ---- a user's own runs: fit on all of them, score each out of sample -------------------------------

CV_FOLDS = 5  # folds of a user calibration's cross-validation (leave-one-out below this many rows)


def cv_folds(folds: int, rows: int) -> int:
    """The folds a cross-validation of `rows` rows runs: `folds`, or one per row (leave-one-out) for fewer rows."""
    return max(2, min(folds, rows))


def fold_sets(sets: list[RunSet], k: int, j: int) -> tuple[list[RunSet], list[RunSet]]:
    """(every row but fold j, fold j) of `sets`: the rows, numbered in file order across the sets, go to fold
    i % k. With k = the row count each fold is one row (leave-one-out)."""
    train, test, i = [], [], 0
    for s in sets:
        keep, out = [], []
        for r in s.rows:
            (out if i % k == j else keep).append(r)
            i += 1
        train.append(replace(s, rows=tuple(keep)))
        test.append(replace(s, rows=tuple(out)))
    return train, test


def cross_validate(
    sets: list[RunSet],
    start: Constants,
    names: Iterable[str],
    k: int,
    rounds: int = ROUNDS,
    passes: int = MAX_PASSES,
    log: Callable[[str], None] | None = None,
) -> tuple[Report, list[int]]:
    """Every row predicted by constants fitted without its fold (fold_sets, k folds), each fold's fit the same
    search as the whole fit's (from `start`, `rounds` rounds, up to `passes` passes), so nothing of a row
    reaches its own prediction. Returns the merged report of the held-out predictions and each result's fold."""
    names = tuple(names)
    reps, fold_of = [], []
    for j in range(k):
        train, test = fold_sets(sets, k, j)
        if not any(s.rows for s in test):
            continue
        f = search([s for s in train if s.rows], start, names, rounds, passes, log)
        rep = evaluate(test, f.consts)
        reps.append(rep)
        fold_of += [j] * len(rep.results)
    return merge(reps), fold_of


def fold_coverage(samples: list[tuple[str, str, float]], fold_of: list[int]) -> dict:
    """Coverage of cross-validated residuals by bands that never saw them: each fold's samples against the
    bands (uncertainty.fit) of the other folds' samples."""
    hits = n = 0
    for j in sorted(set(fold_of)):
        rest = [s for s, f in zip(samples, fold_of) if f != j]
        mine = [s for s, f in zip(samples, fold_of) if f == j]
        if not rest:
            continue
        c = U.coverage(U.fit(rest), mine)
        hits, n = hits + c["covered"], n + c["rows"]
    return {"rows": n, "covered": hits, "coverage": hits / n if n else None}


@dataclass(frozen=True)
class UserCalibration:
    """What `perfmodel calibrate` computes: the fit on all rows, the cross-validated predictions, the bands."""

    sets: list[RunSet]
    fit: Fit
    start_report: Report  # every row with the start constants
    fitted_report: Report  # every row with the fitted constants (in sample)
    cv_report: Report  # every row with constants fitted without its fold (out of sample)
    folds: int
    bands: dict[str, dict]
    coverage: dict  # of the cross-validated residuals by bands fitted on the other folds
    attribution: dict[str, dict]


def calibrate_runs(
    sets: list[RunSet],
    start: Constants,
    names: Iterable[str],
    rounds: int = ROUNDS,
    passes: int = MAX_PASSES,
    folds: int = CV_FOLDS,
    log: Callable[[str], None] | None = None,
) -> UserCalibration:
    """A user's own runs: the constants fitted on every row (there is no split to keep: no accuracy is
    reported on these rows by perfmodel itself), each row then predicted out of sample by min(folds, rows)-fold
    cross-validation (leave-one-out for fewer rows than `folds`; every fold refitted from `start` as the whole
    fit is), the 80% bands fitted on those out-of-sample residuals, and their coverage measured fold by fold on
    bands that did not see the fold."""
    names = tuple(names)
    start_rep = evaluate(sets, start)
    n = len(start_rep.results)
    need = len(names) + 1
    if n < need:
        first = (
            f" ({len(start_rep.unsupported)} row(s) not predicted, first: {start_rep.unsupported[0]['reason']})"
            if start_rep.unsupported
            else ""
        )
        raise InputError(
            ", ".join(s.name for s in sets),
            "rows",
            f"{n} predictable row(s); fitting {len(names)} constants needs at least {need}{first}",
        )
    f = search(sets, start, names, rounds, passes, log)
    fitted = evaluate(sets, f.consts)
    k = cv_folds(folds, sum(len(s.rows) for s in sets))
    cv, fold_of = cross_validate(sets, start, names, k, rounds, passes, log)
    gen = generations(sets)
    samples = band_samples(cv, gen)
    return UserCalibration(
        sets, f, start_rep, fitted, cv, k, U.fit(samples), fold_coverage(samples, fold_of), attribution(sets, f)
    )


# ---- the calibration file `perfmodel calibrate` writes ------------------------------------------------------

HEADER = (
    "perfmodel calibration file written by `perfmodel calibrate` (perfmodel/analysis/fit.py); use it with\n"
    "`--calibration FILE` on any predicting command. Each constant keeps calibration.toml's meaning,\n"
    "prior and source; `value` is fitted on every row of the inputs in [provenance], [bands.*] are the\n"
    "80% bands of ln(measured / predicted) of those rows predicted out of sample (cross-validation;\n"
    "perfmodel/analysis/uncertainty.py)."
)


def error_stats(rep: Report) -> dict[str, Any]:
    """Rows, MAPE, bias and mean |ln(predicted / measured)| of a report."""
    s = rep.stats()
    e = log_errors(rep)
    return {
        "rows": s["rows"],
        "mape": s["mape"],
        "bias": s["bias"],
        "mean_abs_log_error": float(e.mean()) if e.size else None,
    }


def provenance(files: Iterable[str], uc: UserCalibration, rounds: int, passes: int, folds: int) -> dict[str, Any]:
    """How a user calibration was made: the command, the date, each input with its sha256 and rows, the
    cross-validation, the start file, what was fitted and what the rows do not identify, the objective."""
    files = list(files)
    fit = uc.fit
    n_rows = sum(len(s.rows) for s in uc.sets)
    prov: dict[str, Any] = {
        "command": "perfmodel calibrate " + " ".join(files) + f" --rounds {rounds} --passes {passes} --folds {folds}",
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "inputs": [str(Path(p).resolve()) for p in files],
        "inputs_sha256": [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in files],
        "rows": [len(s.rows) for s in uc.sets],
        "fit_rows": len(uc.fitted_report.results),
        "cross_validation": (
            f"{uc.folds}-fold (row i in fold i % {uc.folds}, file order)" if uc.folds < n_rows else "leave-one-out"
        )
        + "; each fold fitted as the whole fit is, from the same start",
        "started_from": str(C.active_file()),
        "fitted": list(fit.names),
        "not_identified": list(fit.inert),
        "rounds": rounds,
        "passes": fit.passes,
        "objective": "mean |ln(predicted / measured tokens/s/GPU)| over every predicted row",
        "objective_start": fit.start_objective,
        "objective_fitted": fit.objective,
        "cross_validated_mape_start": error_stats(uc.start_report)["mape"],
        "cross_validated_mape_fitted": error_stats(uc.cv_report)["mape"],
    }
    if uc.coverage["coverage"] is not None:  # TOML has no null: without it the key is left out
        prov["cross_validated_band_coverage"] = uc.coverage["coverage"]
    return prov


def write_calibration(out: Path, uc: UserCalibration, prov: dict[str, Any]) -> dict[str, Any]:
    """Write the calibration file (calibration.toml's shape plus [provenance] and [bands.*]) and return what
    `perfmodel calibrate --json` reports of it."""
    try:
        out.write_text(calibration_text(C.table(), uc.fit.consts, prov, HEADER, uc.bands), encoding="utf-8")
    except OSError as exc:
        raise InputError("out", str(out), f"cannot write ({exc.strerror or exc})") from None
    C.forget()  # the file just written may replace one read earlier
    return {
        "out": str(out),
        "provenance": prov,
        "constants": uc.attribution,
        "calibration": {"start": error_stats(uc.start_report), "fitted": error_stats(uc.fitted_report)},
        "cross_validated": {"start": error_stats(uc.start_report), "fitted": error_stats(uc.cv_report)},
        "bands": uc.bands,
        "cross_validated_band_coverage": uc.coverage,
        "unsupported": uc.start_report.unsupported,
        "evaluations": uc.fit.evaluations,
    }
