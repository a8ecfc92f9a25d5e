"""Fit the uncertainty bands (perfmodel/analysis/uncertainty.py) on the CALIBRATION split and measure their coverage.

    python3 validation/uncertainty.py            # fit, print bands and coverage (held-out, calibration, all)
    python3 validation/uncertainty.py --write    # ... and store them in perfmodel/uncertainty.toml
    python3 validation/uncertainty.py --csv validation/runs.csv    # one set only (before 2026-12-01: the default)
    python3 validation/uncertainty.py --write --fits LOSO.json     # ... and the unseen-stack bands from the
                                                                   # refits of `validation/loso.py --json > LOSO.json`

Re-run with --write after every change of the predictor or of calibration.toml: the bands describe the
errors of the current predictor. Only calibration rows (crc32(run_id) % 4 == 0) enter the percentiles;
the coverage of the held-out rows is the honest figure. The rows are those the constants are fitted on
(validation/calibrate.py): every shipped set, NVIDIA's tables and the five other stacks, so a group's spread
is that of every stack measured in its regime (hardware generation x op class), not NVIDIA's recipes alone;
coverage is reported per set as well.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfmodel.analysis import fit as F  # noqa: E402
from perfmodel.analysis import uncertainty as U
from perfmodel.analysis.validate import merge, shipped_sets, validate_file  # noqa: E402
from perfmodel.core import calibration as C

COMMAND = "python3 validation/uncertainty.py --write"
CSV = ROOT / "validation" / "runs.csv"


def samples(report, gen: dict[str, str]) -> list[tuple[str, str, float, bool]]:
    """(family, op class, ln(measured/predicted), calibration?) per predicted row; `gen`: hardware id ->
    generation (perfmodel.analysis.fit.generations: the independent sets' own hardware files included)."""
    return [
        (gen[r.hardware], "moe" if r.moe else "dense", U.log_ratio(r.measured, r.predicted), r.calibration)
        for r in report.results
    ]


def measure(csv: str | Path | list | None = None, min_rows: int = U.MIN_ROWS) -> dict:
    """Fit on calibration rows (of `csv`, a file or list of files; default every shipped set), coverage on
    held-out / calibration / all rows, per group and per set."""
    files = shipped_sets() if csv is None else [csv] if isinstance(csv, (str, Path)) else list(csv)
    rep = merge([validate_file(f) for f in files])
    s = samples(rep, F.generations(F.read_set(f) for f in files))
    groups = U.fit(((f, k, r) for f, k, r, cal in s if cal), min_rows)
    sel = {"held_out": [x for x in s if not x[3]], "calibration": [x for x in s if x[3]], "all": s}
    cov = {k: U.coverage(groups, ((f, k2, r) for f, k2, r, _ in v)) for k, v in sel.items()}
    by_group: dict[str, list] = {}
    for f, k, r, cal in s:
        used = U.lookup(groups, f, k).group
        by_group.setdefault(used + (f" <- {f}/{k}" if used != f"{f}/{k}" else ""), []).append((f, k, r))
    per = {g: U.coverage(groups, v) for g, v in sorted(by_group.items())}
    by_set: dict[str, list] = {}
    for r, (f, k, x, cal) in zip(rep.results, s):
        if not cal:
            by_set.setdefault(r.dataset, []).append((f, k, x))
    return {
        "groups": groups,
        "coverage": {k: v["coverage"] for k, v in cov.items()},
        "stacks": sorted({r.stack for r in rep.results if r.calibration and r.stack}),
        "rows": {k: v["rows"] for k, v in cov.items()},
        "coverage_by_group": per,
        "held_out_by_set": {d: U.coverage(groups, v) for d, v in by_set.items()},
        "csv": [
            str(Path(f).resolve().relative_to(ROOT)) if Path(f).resolve().is_relative_to(ROOT) else str(f)
            for f in files
        ],
    }


def unseen(fits: str | Path) -> dict:
    """The unseen-stack bands (perfmodel/analysis/uncertainty.py): every source family's calibration rows predicted with the
    constants refitted without that family (the single refits of a `validation/loso.py --json` run), pooled and
    cut into groups as the bands are; their coverage of the held-out rows (scored with the shipped constants)."""
    sys.path.insert(0, str(ROOT / "validation"))
    import loso  # noqa: E402  (validation/loso.py: the families and their refits)

    run = json.loads(Path(fits).read_text())
    sets = [F.read_set(p) for p in shipped_sets()]
    fams = loso.families(sets, False)
    missing = sorted(set(fams) - set(run.get("families", {}))) + ([] if "in_fit" in run else ["in_fit"])
    if missing:
        raise SystemExit(
            f"{fits}: no refit for {', '.join(missing)} (run python3 validation/loso.py --json on these sets)"
        )
    without = {t: loso._search([], C.priors(), run["rounds"], run["max_passes"], run["families"][t]) for t in fams}
    model = loso.unseen_scaled(fams, without)
    # the row's own jackknife spread (uncertainty.jackknife_spread: its prediction across the six refits, against
    # the reference fit of the same run) is per row; a stored band carries its cell's median over the
    # calibration rows (all rows' median for a cell without any), in quadrature with the scaled quantiles
    ref = loso._search([], C.priors(), run["rounds"], run["max_passes"], run["in_fit"])
    cal = F.calibration_part(sets)
    rep = F.evaluate(cal, ref.consts)
    by: dict[str, list[float]] = {}
    for r, v, (_, up) in zip(rep.results, loso.vps(cal, rep), loso.shift_spread(cal, rep, without)):
        by.setdefault(U.unseen_cell(r.moe, v), []).append(up)
    every = [j for v in by.values() for j in v]
    groups = {}
    for moe in (False, True):
        for vp in (1, 2):
            c = U.unseen_cell(moe, vp)
            j = float(np.median(by.get(c) or every))
            lo, hi = U.scaled_band(model, moe, vp)
            wlo, whi = U.widened(lo, hi, -j, j)
            groups[c] = {
                "rows": len(by.get(c, [])),
                "log_p10": lo,
                "log_p90": hi,
                "log_jackknife": j,
                "low": math.exp(wlo),
                "high": math.exp(whi),
            }
    held = F.held_out_part(sets)
    hrep = F.evaluate(held, None)
    cells = [groups[U.unseen_cell(r.moe, v)] for r, v in zip(hrep.results, loso.vps(held, hrep))]
    hits = sum(
        int(U.inside(math.log(g["low"]), math.log(g["high"]), U.log_ratio(r.measured, r.predicted)))
        for r, g in zip(hrep.results, cells)
    )
    n = len(hrep.results)
    return {
        "groups": groups,
        "model": model,
        "held_out_coverage": hits / n if n else None,
        "held_out_rows": n,
        "fits": Path(fits).name,
    }


def toml_text(m: dict) -> str:
    """The data file: bands with row counts, coverage, fit date and the command (hand-written TOML)."""
    today = _dt.date.today().isoformat()
    rel = ", ".join(m["csv"])
    lines = [
        "# Uncertainty bands of perfmodel's throughput predictions (perfmodel/analysis/uncertainty.py). GENERATED: do not edit;",
        f"# regenerate with `{COMMAND}` after any change of the predictor or calibration.toml.",
        "# Per group: 10th / 90th percentile (p_k = k/(n+1), Hyndman & Fan type 6) of ln(measured / predicted",
        "# tokens/s/GPU) over the CALIBRATION rows (crc32(run_id) % 4 == 0) of the csv files below;",
        "# low = exp(min(p10, 0)), high = exp(max(p90, 0)).",
        "# Groups: hardware generation x op class (dense / moe); with fewer than min_rows rows a group falls back",
        "# to the generation, then the op class, then all rows.",
        f'fitted = "{today}"',
        f'command = "{COMMAND}"',
        f'csv = "{rel}"',
        f"quantiles = [{U.QUANTILES[0]}, {U.QUANTILES[1]}]",
        f"min_rows = {U.MIN_ROWS}",
        "# the stack presets of the calibration rows: a command on any other stack (or a stack file) prints the",
        "# [unseen] band (uncertainty.band_for)",
        "stacks = [" + ", ".join(f'"{x}"' for x in m["stacks"]) + "]",
        "",
        "[coverage]   # share of measured runs inside their band",
    ]
    for k in ("held_out", "calibration", "all"):
        lines.append(f"{k} = {m['coverage'][k]:.4f}")
    lines += ["", "[rows]"] + [f"{k} = {m['rows'][k]}" for k in ("held_out", "calibration", "all")]
    for g, d in m["groups"].items():
        lines += [
            "",
            f'[groups."{g}"]',
            f"rows = {d['rows']}",
            f"log_p10 = {d['log_p10']:.5f}",
            f"log_p90 = {d['log_p90']:.5f}",
            f"low = {d['low']:.5f}",
            f"high = {d['high']:.5f}",
        ]
    if "unseen" in m:
        u = m["unseen"]
        lines += [
            "",
            "# A stack the fit never saw (uncertainty.band_of(..., unseen=True)): cross-validated residuals, each",
            "# source family's calibration rows predicted with the constants refitted without that family (the",
            f"# single refits of `python3 validation/loso.py --json`, {u['fits']}), each family weighing the same;",
            "# width exp(coef . (1, moe, vp > 1)) (uncertainty.fit_scaled), log_q10 / log_q90 the quantiles of a new",
            "# family's scaled residual (its offset a random effect over the families' offsets, Student-t k - 2,",
            "# uncertainty.new_family_quantiles), log_p10 / log_p90 = the scaled",
            "# quantiles times it; low / high add in quadrature log_jackknife, the cell's median z x jackknife",
            "# spread of a row's prediction across those refits.",
            "[unseen_model]",
            "coef = [" + ", ".join(f"{c:.5f}" for c in u["model"]["coef"]) + "]",
            f"log_q10 = {u['model']['log_q10']:.5f}",
            f"log_q90 = {u['model']['log_q90']:.5f}",
            f"rows = {u['model']['rows']}",
            f"# Held-out coverage with the shipped constants: {u['held_out_coverage']:.4f} of {u['held_out_rows']} rows.",
            f"# Regenerate with `{COMMAND} --fits LOSO.json` (without --fits the file has no [unseen] bands).",
        ]
        for g, d in u["groups"].items():
            lines += [
                "",
                f'[unseen."{g}"]',
                f"rows = {d['rows']}",
                f"log_p10 = {d['log_p10']:.5f}",
                f"log_p90 = {d['log_p90']:.5f}",
                f"log_jackknife = {d['log_jackknife']:.5f}",
                f"low = {d['low']:.5f}",
                f"high = {d['high']:.5f}",
            ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", action="append", help="measured-run file (repeatable) [default: every shipped set]")
    ap.add_argument("--write", action="store_true", help=f"store the bands in {U.FILE.relative_to(ROOT)}")
    ap.add_argument("--json", action="store_true", help="print the measurement as JSON")
    ap.add_argument(
        "--fits",
        metavar="LOSO_JSON",
        help="also fit the unseen-stack bands from the single refits of a `python3 validation/loso.py --json` run",
    )
    a = ap.parse_args()
    m = measure(a.csv)
    if a.fits:
        m["unseen"] = unseen(a.fits)
    if a.json:
        print(json.dumps(m, indent=2))
    else:
        print("band per group (fitted on the calibration split): measured/predicted tokens/s/GPU")
        print(f"  {'group':22s} {'rows':>5s} {'low':>7s} {'high':>7s}")
        for g, d in m["groups"].items():
            print(f"  {g:22s} {d['rows']:5d} {d['low']:7.3f} {d['high']:7.3f}")
        print("coverage (share of measured runs inside their band; target 80%)")
        for k in ("held_out", "calibration", "all"):
            print(f"  {k:12s} {m['coverage'][k]:6.1%}  of {m['rows'][k]} rows")
        print("coverage by band used (all rows; '<-' = fallback from a sparse group)")
        for g, c in m["coverage_by_group"].items():
            print(f"  {g:42s} {c['coverage']:6.1%}  of {c['rows']} rows")
        print("held-out coverage by set")
        for d, c in m["held_out_by_set"].items():
            print(f"  {d:42s} {c['coverage']:6.1%}  of {c['rows']} rows")
        if "unseen" in m:
            u = m["unseen"]
            print(
                "unseen-stack band per cell (width model on the cross-validated residuals of the refits without "
                "each family)"
            )
            for g, d in u["groups"].items():
                print(
                    f"  {g:22s} {d['rows']:5d} {d['low']:7.3f} {d['high']:7.3f}   (jackknife {d['log_jackknife']:.3f})"
                )
            print(f"  held-out coverage {u['held_out_coverage']:6.1%}  of {u['held_out_rows']} rows")
    if a.write:
        if not a.fits:
            print(
                "no --fits: the file gets no [unseen] bands (uncertainty.band_of(..., unseen=True) falls back to "
                "the fitted ones)",
                file=sys.stderr,
            )
        U.FILE.write_text(toml_text(m), encoding="utf-8")
        print(f"wrote {U.FILE.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
