"""Leave-one-source-out: how perfmodel does on a software stack its fit never saw.

    python3 validation/loso.py [--rounds N] [--passes N] [--start prior|current] [--nvidia-by-source] [--json]
    python3 validation/loso.py --fits LOSO.json     # reuse an earlier --json run's refits: bands and scores only
    python3 validation/loso.py --jobs 2 --json      # the same refits, two at a time (they are independent)

For every source family S (the shipped measured sets: NVIDIA's tables validation/runs.csv as ONE family,
and each validation/independent/*.csv): refit the global constants (perfmodel/analysis/fit.py, the same bounds and
coordinate search as validation/calibrate.py) on the calibration split (crc32(run_id) % 4 == 0) of every
OTHER family, then score ALL of S's rows: MAPE, bias (signed mean of (predicted - measured) / measured)
and the coverage of the 80% uncertainty band, the band itself fitted (perfmodel/analysis/uncertainty.py: 10th/90th
percentile of ln(measured / predicted) per hardware generation x op class, Hyndman-Fan type 6) on the
same calibration rows without S, with the refitted constants. Nothing of S enters either fit.

Constants the refit cannot identify (no row without S depends on them: without NVIDIA's rows, the MoE and
TP-overlap constants) stay at their priors; a row of S that depends on them is uncertain by what their
physical range does to its prediction, and its band is widened by that (perfmodel/analysis/uncertainty.py,
parameter_spread: the prediction at each such constant's 10th and 90th percentile points over its bounds).
The table gives the coverage with and without that widening, and S's offset: the median of ln(measured /
predicted) over S's rows minus the centre of each row's band, how far the stack sits from where the others'
bands put it.

The unseen-stack band (the LOSO coverage column; perfmodel/analysis/uncertainty.py, "a stack the bands were not fitted
on"): bands fitted on residuals of the fit that are themselves out of source. For every pair of families
{S, T} the constants are refitted without both; inside S's fold, T's calibration rows predicted with that
refit are T's cross-validated residuals, and the 10th / 90th percentiles of those over every T (scaled by the
width model of uncertainty.fit_scaled: MoE, interleaved pipeline; the table's [bracketed] figure: per
generation x op class as in session 5) make S's band, widened in quadrature by the unidentified constants'
spread and by the row's own jackknife spread (how far its prediction moves across the refits without each
T). Nothing of S enters: the refits
without {S, T} and the fold's refit never see S's rows. The reference (every family in the fit) scores the
held-out rows with both bands: the one fitted on the calibration rows (a stack the fit saw) and the
unseen-stack band from the six single refits (a stack it did not).

Why runs.csv is one family: its sources (Megatron-Bridge and NeMo performance summaries, DGX Cloud
recipes 24.11-25.05, NeMo AutoModel) are one software lineage, NVIDIA's tuned NeMo / Megatron-Core /
Transformer Engine recipes on NVIDIA's clusters; leaving out one release while its siblings stay in the
fit would not test an unseen stack. `--nvidia-by-source` splits it by its `source` column anyway.

Start: every fold starts from the constants' priors (calibration.toml `prior`), not from the shipped
values, which were fitted with S's rows in: a constant S's absence leaves unidentified would otherwise
carry S's information in. From the priors one pass of the search cannot reach the optimum (a pass moves
a constant at most ~4.8x), so each refit restarts the search from its result while a pass gains >= 1e-3
(perfmodel.analysis.fit.search). The reference ("S in the fit") fits all families the same way and scores S's
held-out rows, so the two differ only by S's presence.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfmodel.analysis import fit as F  # noqa: E402
from perfmodel.analysis import uncertainty as U
from perfmodel.analysis.validate import shipped_sets  # noqa: E402
from perfmodel.core.calibration import constants, fitted_names, priors  # noqa: E402

NAMES = {"runs.csv": "nvidia", "simumax-b200-dense.csv": "simumax-b200"}  # else the file stem
# 3 rounds per pass (calibrate.py: 5): from the priors, restarted 3-round passes reach 0.1377 mean |log err| on
# all calibration rows in 4 passes (86 s), the objective the 5-round search reaches from the shipped values
# (0.1379), 2026-12-01
ROUNDS = 3
PASSES = 6
EQUAL_SOURCES = True  # unseen-stack bands: each source family weighs the same within a group (uncertainty.fit units)


def families(sets: list[F.RunSet], nvidia_by_source: bool) -> dict[str, list[F.RunSet]]:
    out: dict[str, list[F.RunSet]] = {}
    for s in sets:
        name = NAMES.get(s.name, s.path.stem)
        if name == "nvidia" and nvidia_by_source:
            for src in sorted({(r.get("source") or "").split(" (")[0] for r in s.rows}):
                out[f"nvidia: {src}"] = [s.where(lambda r, src=src: (r.get("source") or "").split(" (")[0] == src)]
        else:
            out[name] = [s]
    return out


def _search(train: list[F.RunSet], start, rounds: int, passes: int, reuse: dict | None) -> F.Fit:
    """The refit of one fold, or, with `reuse` (that fold's entry of an earlier --json run), its stored result."""
    if reuse is None:
        return F.search(train, start, fitted_names(), rounds, passes)
    consts = start.with_(**reuse["consts"])
    return F.Fit(
        start,
        consts,
        tuple(reuse["consts"]),
        float("nan"),
        float(reuse["objective"]),
        int(reuse["evaluations"]),
        rounds,
        tuple(reuse.get("not_identified", ())),
        int(reuse["passes"]),
    )


def pair_key(a: str, b: str, order: list[str]) -> str:
    """The key of the refit without families a and b ("a|b" in the families' order)."""
    x, y = sorted((a, b), key=order.index)
    return f"{x}|{y}"


def without_two(fams: dict[str, list[F.RunSet]], a: str, b: str) -> list[F.RunSet]:
    """The calibration rows of every family but a and b: what the refit without both sees."""
    return F.calibration_part([s for n, v in fams.items() if n not in (a, b) for s in v])


def train_rows(fams: dict[str, list[F.RunSet]], kind: str, key: str = "") -> list[F.RunSet]:
    """What a refit sees: the calibration rows of every family but the pair ("pairs", "a|b"), but S
    ("families", S), or of every family ("in_fit")."""
    if kind == "pairs":
        return without_two(fams, *key.split("|"))
    return F.calibration_part([s for n, v in fams.items() if n != key or kind == "in_fit" for s in v])


def pair_fits(
    fams: dict[str, list[F.RunSet]], start, rounds: int, passes: int, reuse: dict | None, log=lambda m: None
) -> dict[str, F.Fit]:
    """Every refit without two families (from the priors, as the folds): inside the fold of S, the refit without
    S and T is T's leave-one-source-out fit, whose residuals on T's calibration rows are the cross-validated
    residuals of the band for S (perfmodel/analysis/uncertainty.py, a stack the bands were not fitted on)."""
    order, out = list(fams), {}
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            k = pair_key(a, b, order)
            t0 = time.perf_counter()
            out[k] = _search(train_rows(fams, "pairs", k), start, rounds, passes, None if reuse is None else reuse[k])
            log(f"  refit without {a} and {b}: {time.perf_counter() - t0:.0f} s")
    return out


def unseen_bands(fams: dict[str, list[F.RunSet]], fit_without: dict[str, F.Fit], gen: dict[str, str]) -> dict:
    """Bands from cross-validated residuals: each family T's calibration rows predicted with `fit_without[T]`
    (the constants fitted without T), pooled and cut into groups by uncertainty.fit."""
    samples, units = [], []
    for t, f in fit_without.items():
        x = F.band_samples(F.evaluate(F.calibration_part(fams[t]), f.consts), gen)
        samples += x
        units += [t] * len(x)
    return U.fit(samples, units=units if EQUAL_SOURCES else None)


def vps(sets: list[F.RunSet], rep) -> list[int]:
    """The pipeline interleaving (the CSV's vp cell, empty = 1) of every predicted row of `rep`."""
    cell = {(s.name, r["run_id"]): r.get("vp") for s in sets for r in s.rows}
    return [int(float(cell.get((x.dataset, x.run_id)) or 1)) for x in rep.results]


def unseen_scaled(fams: dict[str, list[F.RunSet]], fit_without: dict[str, F.Fit]) -> dict:
    """The unseen-stack band's width model (uncertainty.fit_scaled): each family T's calibration rows predicted with
    `fit_without[T]`, their ln(measured / predicted) against MoE and interleaving, each family weighing the same."""
    samples, units = [], []
    for t, f in fit_without.items():
        cal = F.calibration_part(fams[t])
        rep = F.evaluate(cal, f.consts)
        samples += [(r.moe, v, U.log_ratio(r.measured, r.predicted)) for r, v in zip(rep.results, vps(cal, rep))]
        units += [t] * len(rep.results)
    return U.fit_scaled(samples, units)


def scaled_coverage(model: dict, rep, test: list[F.RunSet], spread: list[tuple[float, float]]) -> dict:
    """Coverage of `rep`'s rows by the scaled band (uncertainty.scaled_band), each widened by its `spread`."""
    hits, widths = 0, []
    for r, v, (dn, up) in zip(rep.results, vps(test, rep), spread):
        lo, hi = U.widened(*U.scaled_band(model, r.moe, v), dn, up)
        hits += int(U.inside(lo, hi, U.log_ratio(r.measured, r.predicted)))
        widths.append(hi - lo)
    n = len(rep.results)
    return {
        "rows": n,
        "covered": hits,
        "coverage": hits / n if n else None,
        "width": float(np.median(widths)) if widths else float("nan"),
    }


def shift_spread(test: list[F.RunSet], rep, fit_without: dict[str, F.Fit]) -> list[tuple[float, float]]:
    """Per row of `rep`: z x the jackknife spread of its prediction across the refits without each source
    (uncertainty.jackknife_spread), as a (down, up) pair."""
    key = lambda r: (r.dataset, r.run_id)
    base = {key(r): r.predicted for r in rep.results}
    shifts = []
    for f in fit_without.values():
        at = {key(r): r.predicted for r in F.evaluate(test, f.consts).results}
        shifts.append([math.log(at[k] / base[k]) if k in at else 0.0 for k in map(key, rep.results)])
    return [(-x, x) for x in U.jackknife_spread(shifts)]


def spreads(test: list[F.RunSet], fit: F.Fit, rep) -> list[tuple[float, float]]:
    """Per row of `rep` (scored with fit.consts): how far its prediction moves over the range of the constants
    the fit could not identify (perfmodel/analysis/uncertainty.py, unidentified_points / parameter_spread)."""
    if not fit.inert:
        return [(0.0, 0.0)] * len(rep.results)
    key = lambda r: (r.dataset, r.run_id)
    base = {key(r): r.predicted for r in rep.results}
    shifts = []
    for name, lo, hi in U.unidentified_points(fit.inert):
        at = [{key(r): r.predicted for r in F.evaluate(test, fit.consts.with_(**{name: v})).results} for v in (lo, hi)]
        shifts.append([tuple(math.log(a[k] / base[k]) if k in a else 0.0 for a in at) for k in map(key, rep.results)])
    return U.parameter_spread(shifts)


def fold(
    train: list[F.RunSet],
    test: list[F.RunSet],
    start,
    rounds: int,
    passes: int,
    gen: dict[str, str],
    reuse: dict | None = None,
    fit_without: dict[str, tuple[list[F.RunSet], F.Fit]] | None = None,
) -> dict:
    """Fit on `train` (calibration rows only), bands on the same rows; score every row of `test`. `fit_without`:
    per family T of `train`, its sets and the refit without T (and without S): the cross-validated band."""
    t0 = time.perf_counter()
    fit = _search(train, start, rounds, passes, reuse)
    bands = U.fit(F.band_samples(F.evaluate(train, fit.consts), gen))
    rep = F.evaluate(test, fit.consts)
    samples = F.band_samples(rep, gen)
    inert = spreads(test, fit, rep)
    st, cov = rep.stats(), U.coverage(bands, samples, inert)
    plain = U.coverage(bands, samples)
    # where S's rows sit relative to bands fitted without S: the median of ln(measured / predicted) minus the
    # centre of the row's band, the between-source offset a band for an unseen stack would have to absorb
    centre = [(lambda b: (math.log(b.low) + math.log(b.high)) / 2)(U.lookup(bands, f, k)) for f, k, _ in samples]
    offset = float(np.median([r - c for (_, _, r), c in zip(samples, centre)])) if samples else None
    out = {
        "rows": sum(len(s.rows) for s in test),
        "predicted": st["rows"],
        "mape": st["mape"],
        "bias": st["bias"],
        "coverage_fitted_bands": cov["coverage"],
        "coverage_fitted_constants_only": plain["coverage"],
        "offset_from_bands": offset,
        "fit_rows": sum(len(s.rows) for s in train),
        "objective": fit.objective,
        "not_identified": list(fit.inert),
        "consts": {n: getattr(fit.consts, n) for n in fit.names},
        "evaluations": fit.evaluations,
        "passes": fit.passes,
    }
    if fit_without:
        # the band for a stack the fit never saw (perfmodel/analysis/uncertainty.py): cross-validated residuals of the
        # training families, widened by the unidentified constants and by the row's own jackknife spread
        fams, fits = {t: v[0] for t, v in fit_without.items()}, {t: v[1] for t, v in fit_without.items()}
        cv = unseen_bands(fams, fits, gen)
        jk = shift_spread(test, rep, fits)
        scaled = unseen_scaled(fams, fits)
        new = scaled_coverage(scaled, rep, test, U.combined(inert, jk))
        out.update(
            coverage=new["coverage"],
            covered=new["covered"],
            coverage_cv_bands=scaled_coverage(scaled, rep, test, inert)["coverage"],
            band_width=new["width"],
            scale_model=scaled,
            # session 5's rule (percentiles per generation x op class), kept for comparison
            coverage_group_bands=U.coverage(cv, samples, U.combined(inert, jk))["coverage"],
            band_width_group_bands=_width(cv, samples, U.combined(inert, jk)),
        )
    out["seconds"] = time.perf_counter() - t0
    return out


def _width(groups: dict, samples, spread) -> float:
    """Median width of the rows' bands, ln(high / low)."""
    w = []
    for (f, k, _), (dn, up) in zip(samples, spread):
        b = U.lookup(groups, f, k)
        lo, hi = U.widened(math.log(b.low), math.log(b.high), dn, up)
        w.append(hi - lo)
    return float(np.median(w)) if w else float("nan")


def measure(
    rounds: int,
    passes: int,
    start_from: str,
    nvidia_by_source: bool,
    log=lambda m: None,
    reuse: dict | None = None,
    with_pairs: bool = True,
) -> dict:
    sets = [F.read_set(p) for p in shipped_sets()]
    gen = F.generations(sets)
    fams = families(sets, nvidia_by_source)
    order = list(fams)
    start = priors() if start_from == "prior" else constants()
    t0 = time.perf_counter()
    out: dict = {"rounds": rounds, "max_passes": passes, "start": start_from, "families": {}}
    pairs = (
        pair_fits(fams, start, rounds, passes, None if reuse is None or "pairs" not in reuse else reuse["pairs"], log)
        if with_pairs
        else {}
    )
    out["pairs"] = {k: _fit_dict(f) for k, f in pairs.items()}
    singles: dict[str, F.Fit] = {}
    for name, mine in fams.items():
        without = {t: (fams[t], pairs[pair_key(name, t, order)]) for t in fams if t != name} if with_pairs else None
        out["families"][name] = fold(
            train_rows(fams, "families", name),
            mine,
            start,
            rounds,
            passes,
            gen,
            None if reuse is None else reuse["families"][name],
            without,
        )
        d = out["families"][name]
        singles[name] = _search([], start, rounds, passes, d)
        log(
            f"{name}: MAPE {d['mape']:.1%} bias {d['bias']:+.1%} coverage {_p(d.get('coverage'))} "
            f"(bands fitted on the rest: {d['coverage_fitted_bands']:.1%}; "
            f"{d['passes']} passes, {d['evaluations']} evaluations, {d['seconds']:.0f} s)"
        )
    # reference: every family in the fit, each scored on its held-out rows
    t1 = time.perf_counter()
    every = train_rows(fams, "in_fit")
    fit = _search(every, start, rounds, passes, None if reuse is None else reuse["in_fit"])
    bands = U.fit(F.band_samples(F.evaluate(every, fit.consts), gen))
    cv = unseen_bands(fams, singles, gen)
    scaled = unseen_scaled(fams, singles)
    ref = {}
    for name, mine in fams.items():
        test = F.held_out_part(mine)
        rep = F.evaluate(test, fit.consts)
        samples = F.band_samples(rep, gen)
        st, cov = rep.stats(), U.coverage(bands, samples, spreads(test, fit, rep))
        jk = shift_spread(test, rep, singles)
        unseen = scaled_coverage(scaled, rep, test, jk)
        ref[name] = {
            "held_out_rows": st["rows"],
            "mape": st["mape"],
            "bias": st["bias"],
            "coverage": cov["coverage"],
            "covered": cov["covered"],
            "coverage_unseen_band": unseen["coverage"],
            "covered_unseen_band": unseen["covered"],
            "coverage_unseen_group_bands": U.coverage(cv, samples, jk)["coverage"],
        }
    n = sum(r["held_out_rows"] for r in ref.values())
    out["in_fit"] = {
        "families": ref,
        "objective": fit.objective,
        "consts": {n: getattr(fit.consts, n) for n in fit.names},
        "passes": fit.passes,
        "evaluations": fit.evaluations,
        "held_out_coverage": sum(r["covered"] for r in ref.values()) / n,
        "held_out_coverage_unseen_band": sum(r["covered_unseen_band"] for r in ref.values()) / n,
        "seconds": time.perf_counter() - t1,
    }
    out["seconds"] = time.perf_counter() - t0
    return out


def _fit_task(task: tuple[str, str], start_from: str, rounds: int, passes: int, nvidia_by_source: bool) -> dict:
    """One refit of measure(), run in a worker process: the training rows are rebuilt from the task's key,
    ("pairs", "a|b"), ("families", S) or ("in_fit", ""), exactly as measure() builds them."""
    sets = [F.read_set(p) for p in shipped_sets()]
    fams = families(sets, nvidia_by_source)
    start = priors() if start_from == "prior" else constants()
    return _fit_dict(F.search(train_rows(fams, *task), start, fitted_names(), rounds, passes))


def parallel_fits(
    start_from: str, rounds: int, passes: int, nvidia_by_source: bool, with_pairs: bool, jobs: int, log=lambda m: None
) -> dict:
    """Every refit measure() makes, `jobs` at a time: the refits are independent and deterministic, so the
    result is the one a sequential run reaches, in the `--fits` form measure() reuses."""
    order = list(families([F.read_set(p) for p in shipped_sets()], nvidia_by_source))
    tasks = [("pairs", f"{a}|{b}") for i, a in enumerate(order) for b in order[i + 1 :]] if with_pairs else []
    tasks += [("families", n) for n in order] + [("in_fit", "")]
    out: dict = {"pairs": {}, "families": {}}
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_fit_task, t, start_from, rounds, passes, nvidia_by_source): t for t in tasks}
        for done in concurrent.futures.as_completed(futures):
            kind, key = futures[done]
            if kind == "in_fit":
                out["in_fit"] = done.result()
            else:
                out[kind][key] = done.result()
            log(
                f"  refit {kind} {key or 'all'} done ({len(out['pairs']) + len(out['families']) + ('in_fit' in out)}"
                f" of {len(tasks)})"
            )
    return out


def _fit_dict(f: F.Fit) -> dict:
    return {
        "consts": {n: getattr(f.consts, n) for n in f.names},
        "not_identified": list(f.inert),
        "objective": f.objective,
        "passes": f.passes,
        "evaluations": f.evaluations,
    }


def _p(x, sign: bool = False) -> str:
    return "-" if x is None else (f"{x:+.1%}" if sign else f"{x:.1%}")


def markdown(m: dict) -> str:
    lines = [
        "| left out (S) | rows of S | fit rows (calibration split of the rest) | LOSO MAPE | LOSO bias "
        "| LOSO 80% band coverage: unseen-stack band (without the jackknife spread) [per generation x op class] "
        "| bands fitted on the rest (without the unidentified constants' spread) | S's offset from those bands "
        "| S in the fit: held-out rows, MAPE, bias, coverage (unseen-stack band) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, d in m["families"].items():
        r = m["in_fit"]["families"][name]
        lines.append(
            f"| {name} | {d['predicted']} of {d['rows']} | {d['fit_rows']} | {_p(d['mape'])} | {_p(d['bias'], True)} "
            f"| {_p(d.get('coverage'))} ({_p(d.get('coverage_cv_bands'))}) [{_p(d.get('coverage_group_bands'))}] "
            f"| {_p(d['coverage_fitted_bands'])} ({_p(d['coverage_fitted_constants_only'])}) "
            f"| {d['offset_from_bands']:+.3f} "
            f"| {r['held_out_rows']}: {_p(r['mape'])}, {_p(r['bias'], True)}, {_p(r['coverage'])} "
            f"({_p(r.get('coverage_unseen_band'))}) |"
        )
    f = m["in_fit"]
    lines.append(
        f"\nheld-out rows, every family in the fit: {_p(f.get('held_out_coverage'))} inside the bands fitted "
        f"on the calibration rows, {_p(f.get('held_out_coverage_unseen_band'))} inside the unseen-stack band"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="coordinate-search rounds per pass")
    ap.add_argument(
        "--passes", type=int, default=PASSES, help="most passes per refit (restarts while one gains >= 1e-3)"
    )
    ap.add_argument("--start", choices=("prior", "current"), default="prior")
    ap.add_argument(
        "--nvidia-by-source",
        action="store_true",
        help="split validation/runs.csv by its source column (14 families: 91 refits of pairs unless --no-pairs)",
    )
    ap.add_argument(
        "--no-pairs",
        action="store_true",
        help="skip the refits without two families: no unseen-stack "
        "band for the folds (the bands fitted on the rest only)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="refits run this many at a time in worker processes (the same result as one at a time)",
    )
    ap.add_argument(
        "--fits",
        metavar="JSON",
        help="reuse every fitted constant (folds, refits without two families, "
        "reference) from an earlier `--json` run (same code and sets) instead of refitting: the bands and "
        "scores again in a few minutes",
    )
    a = ap.parse_args()
    reuse = json.loads(Path(a.fits).read_text()) if a.fits else None
    t0 = time.perf_counter()
    if reuse is None and a.jobs > 1:
        reuse = parallel_fits(
            a.start,
            a.rounds,
            a.passes,
            a.nvidia_by_source,
            not a.no_pairs,
            a.jobs,
            log=(lambda s: None) if a.json else (lambda s: print(s, file=sys.stderr, flush=True)),
        )
    m = measure(
        a.rounds,
        a.passes,
        a.start,
        a.nvidia_by_source,
        log=(lambda s: None) if a.json else (lambda s: print(s, file=sys.stderr, flush=True)),
        reuse=reuse,
        with_pairs=not a.no_pairs,
    )
    m["seconds"] = time.perf_counter() - t0
    if a.json:
        print(json.dumps(m, indent=2))
        return
    print(markdown(m))
    if a.fits:
        print(f"\nrefits reused from {a.fits}; bands and scores: {m['seconds']:.0f} s")
        return
    print(
        f"\n{len(m['families'])} refits, {len(m['pairs'])} refits without two families and 1 reference fit (S in the "
        f"fit), each from the {a.start} values, passes of "
        f"{a.rounds} rounds restarted while one gains >= {F.PASS_GAIN:g} (at most {a.passes}): {m['seconds']:.0f} s"
    )


if __name__ == "__main__":
    main()
