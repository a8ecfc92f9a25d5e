"""Uncertainty bands: how far measured throughput falls from the prediction, per hardware family and op class.

Method (validation/uncertainty.py fits it; perfmodel/uncertainty.toml stores it):
- For every measured run of validation/runs.csv, r = ln(measured / predicted tokens/s/GPU).
- On the CALIBRATION split only (perfmodel.analysis.validate.calibration_split), the 10th and 90th percentiles of r
  per group, with the plotting position p_k = k / (n + 1) (Hyndman & Fan 1996, definition 6; numpy
  method="weibull"): a new exchangeable draw falls between the order statistics X_(j) and X_(k) with
  probability (k - j) / (n + 1) (the distribution-free prediction interval, Wilks 1941), so this pair
  is an 80% prediction interval for a new run even for small groups, where the default linear
  interpolation (definition 7) is too narrow (70% held-out coverage instead of 80% on runs.csv,
  2026-11-30). Groups: hardware family (the hardware's
  `generation`: ampere, hopper, blackwell, blackwell-ultra, cdna3) x op class (dense / moe). A group with fewer
  than MIN_ROWS calibration rows falls back to the family alone, then the op class alone, then all rows; a family
  with no group at all (cdna3: no AMD row in runs.csv) takes the band of all rows (`band_of`).
- The band of a prediction v is [v e^min(p10, 0), v e^max(p90, 0)]: an 80% central interval of the
  measured-to-predicted ratio, widened to contain the prediction itself when the whole spread of a group
  lies on one side. Coverage on the held-out rows (never seen by the fit) is what the script reports and
  the README quotes.
- Quantities inverse to throughput (step time, wall-clock days, $ per token, energy per token, whole-run
  cost and energy at fixed tokens) take the reciprocal factors: low throughput <-> long step, high cost.
  MFU and HFU scale like throughput (same FLOPs per token, same GPUs).

What the band is not: it holds for layouts like the measured ones (published recipes on real clusters).
What-if hardware (`--set`, `base =` files) keeps its family's band, which does not cover the error of the
what-if itself.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Iterable, Sequence

import numpy as np

from perfmodel.specs.hardware import HardwareSpec, load_hardware
from perfmodel.specs.model import ModelSpec, load_model

FILE = Path(__file__).resolve().parents[1] / "uncertainty.toml"  # perfmodel/uncertainty.toml
QUANTILES = (0.10, 0.90)  # an 80% central band
MIN_ROWS = 10  # calibration rows a group needs for its own percentiles
ALL = "all"


@dataclass(frozen=True)
class Band:
    """Multiplicative band on throughput: measured / predicted lies in [low, high] for ~80% of runs."""

    low: float  # factor <= 1
    high: float  # factor >= 1
    group: str  # the group whose spread was used, e.g. "hopper/dense" or "all"
    rows: int  # calibration rows behind it
    source: str = (
        "perfmodel/uncertainty.toml"  # the file the band comes from (a `perfmodel calibrate` file has its own)
    )

    def throughput(self, v: float) -> tuple[float, float]:
        """(low, high) of a quantity proportional to throughput: tokens/s/GPU, MFU, HFU."""
        return v * self.low, v * self.high

    def inverse(self, v: float) -> tuple[float, float]:
        """(low, high) of a quantity inverse to throughput: step time, days, $ per token, J per token."""
        return v / self.high, v / self.low

    @property
    def unseen(self) -> bool:
        """The band for a stack the bands were not fitted on (band_of(..., unseen=True))."""
        return self.group.startswith("unseen:")

    def to_dict(self) -> dict:
        return {
            "low_factor": self.low,
            "high_factor": self.high,
            "group": self.group,
            "calibration_rows": self.rows,
            "coverage_target": QUANTILES[1] - QUANTILES[0],
            "source": self.source,
            "unseen_stack": self.unseen,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Band":
        """The band of a --json output's "band" (to_dict)."""
        return cls(d["low_factor"], d["high_factor"], d["group"], d["calibration_rows"], d["source"])

    def line(self) -> str:
        """The one line a command prints under its table: which band, on what."""
        if self.unseen:
            return (
                f"80% band: measured/predicted {self.low:.2f}-{self.high:.2f}x, unseen-stack band for "
                f"{self.group.removeprefix('unseen:')} (no row of this stack fitted the bands; {self.source})"
            )
        return (
            f"80% band: measured/predicted {self.low:.2f}-{self.high:.2f}x on {self.group} validation runs "
            f"({self.rows} calibration rows, {self.source})"
        )


def family(hw: HardwareSpec) -> str:
    return hw.generation


def op_class(model: ModelSpec) -> str:
    return "moe" if model.is_moe else "dense"


def group_chain(fam: str, kind: str) -> list[str]:
    """Groups tried in order: family x op class, family, op class, all rows."""
    return [f"{fam}/{kind}", fam, kind, ALL]


# ---- fitting (validation/uncertainty.py) ----------------------------------------------------------


def log_ratio(measured: float, predicted: float) -> float:
    return math.log(measured / predicted)


def weighted_quantiles(vals: Sequence[float], weights: Sequence[float], qs: Sequence[float]) -> list[float]:
    """Quantiles of weighted values with the plotting position p_k = C_k / (W + W/n) (C_k the cumulative weight
    up to the k-th smallest value, W the total): with equal weights k / (n + 1), Hyndman & Fan definition 6,
    so equal weights give np.percentile(method="weibull")."""
    o = np.argsort(vals, kind="stable")
    v, w = np.asarray(vals, dtype=float)[o], np.asarray(weights, dtype=float)[o]
    c = np.cumsum(w)
    p = c / (c[-1] * (1 + 1 / len(v)))
    return [float(np.interp(q, p, v)) for q in qs]


def fit(
    samples: Iterable[tuple[str, str, float]],
    min_rows: int = MIN_ROWS,
    quantiles: Sequence[float] = QUANTILES,
    units: Sequence[str] | None = None,
) -> dict[str, dict]:
    """samples: (family, op class, ln(measured/predicted)) of the calibration rows ->
    {group: {rows, log_p10, log_p90, low, high}} for every group with at least `min_rows` rows
    (and always "all"). `units` (one per sample, e.g. its source family): within each group every unit weighs
    the same, each of its rows 1 / (its rows in the group): the pooled distribution of equally weighted
    groups, the prediction set for a new group of a two-layer hierarchy (Dunn, Wasserman & Ramdas 2022,
    JASA 118(544), "pooling CDFs")."""
    by: dict[str, list[tuple[float, str]]] = {}
    for i, (fam, kind, r) in enumerate(samples):
        for g in group_chain(fam, kind):
            by.setdefault(g, []).append((r, "" if units is None else units[i]))
    out: dict[str, dict] = {}
    for g, pairs in sorted(by.items()):
        vals = [r for r, _ in pairs]
        if len(vals) < min_rows and g != ALL:
            continue
        count: dict[str, int] = {}
        for _, u in pairs:
            count[u] = count.get(u, 0) + 1
        # Hyndman & Fan 1996 definition 6 (p_k = k / (n+1)): unbiased coverage for a new draw (Wilks 1941)
        lo, hi = weighted_quantiles(vals, [1.0 / count[u] for _, u in pairs], quantiles)
        out[g] = {
            "rows": len(vals),
            "log_p10": lo,
            "log_p90": hi,
            "low": math.exp(min(lo, 0.0)),
            "high": math.exp(max(hi, 0.0)),
        }
    return out


def family_fitted(groups: dict[str, dict], fam: str) -> bool:
    """Whether any group of `groups` is of hardware family `fam` (its own rows fitted a band)."""
    return any(g == fam or g.startswith(fam + "/") for g in groups)


def lookup(groups: dict[str, dict], fam: str, kind: str, source: str = Band.source) -> Band:
    for g in group_chain(fam, kind):
        if g in groups:
            d = groups[g]
            return Band(float(d["low"]), float(d["high"]), g, int(d["rows"]), source)
    raise KeyError("no 'all' group in the uncertainty bands")


def inside(lo: float, hi: float, r: float) -> bool:
    """Whether ln ratio `r` lies in the band [lo, hi] (ends included, to rounding)."""
    return lo - 1e-12 <= r <= hi + 1e-12


def coverage(
    groups: dict[str, dict],
    samples: Iterable[tuple[str, str, float]],
    spreads: Sequence[tuple[float, float]] | None = None,
) -> dict:
    """Share of samples (family, op class, ln ratio) whose measured value lies inside its band; `spreads`, one
    (down, up) per sample (parameter_spread), widens each sample's band by the constants its fit left open."""
    hits = n = 0
    for i, (fam, kind, r) in enumerate(samples):
        b = lookup(groups, fam, kind)
        lo, hi = widened(math.log(b.low), math.log(b.high), *(spreads[i] if spreads is not None else (0.0, 0.0)))
        n += 1
        hits += int(inside(lo, hi, r))
    return {"rows": n, "covered": hits, "coverage": hits / n if n else None}


# ---- constants the fit could not identify --------------------------------------------------------
# A fitted constant that no trial value moved on the fit's rows (fit.Fit.inert: no row of the fit depends on it,
# e.g. the MoE constants when no row is MoE) keeps its prior, and all the fit knows of it is its physical range
# (calibration.BOUNDS). A prediction that does depend on it is uncertain by what that range does to it: the
# prediction at the constant's 10th and 90th percentile points, the constant taken as uniform over its bounds
# (the band's own 80%), relative to the prediction at the prior. Several such constants combine in quadrature,
# each side apart (independent inputs: GUM, JCGM 100:2008 §5.1.2), and the result is added in quadrature to the
# band's own spread, which was measured on rows that do not depend on those constants.


def unidentified_points(names: Iterable[str], quantiles: Sequence[float] = QUANTILES) -> list[tuple[str, float, float]]:
    """(name, low point, high point) of each constant: its bounds' quantiles for a uniform distribution."""
    from perfmodel.core.calibration import bounds

    out = []
    for n in names:
        lo, hi = bounds(n)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"{n}: no finite bounds to take its range from")
        out.append((n, lo + quantiles[0] * (hi - lo), lo + quantiles[1] * (hi - lo)))
    return out


def parameter_spread(shifts: Sequence[Sequence[tuple[float, float]]]) -> list[tuple[float, float]]:
    """shifts[c][i]: ln(prediction at constant c's low point / at its prior), the same at its high point, of
    sample i -> per sample (down <= 0, up >= 0): each side's shifts in quadrature over the constants."""
    return combined(*[[(min(0.0, *p), max(0.0, *p)) for p in c] for c in shifts])


def widened(lo: float, hi: float, down: float = 0.0, up: float = 0.0) -> tuple[float, float]:
    """The band [lo, hi] of ln(measured / predicted) (lo <= 0 <= hi) with the prediction itself uncertain by
    [down, up] (ln of predicted over the prediction at the prior): a measured value above a prediction that
    could have been higher lies within hi + up, below one that could have been lower within lo + down; the two
    independent spreads add in quadrature."""
    return -math.hypot(lo, down), math.hypot(hi, up)


# ---- a stack the bands were not fitted on (leave-one-source-out residuals) ----------------------------
# Residuals of rows whose source was IN the fit are shrunk towards zero: the fitted constants have absorbed part
# of that source's own offset (2026-12-01: the DerSimonian-Laird between-source variance of the in-fit residuals
# is 0, while the same sources scored without themselves sit -0.04 to +0.05 apart). A new run of a stack the fit
# never saw carries its stack's offset in full. Its band is therefore taken from cross-validated residuals: for
# each source family T of the fit, T's calibration rows predicted with the constants refitted WITHOUT T
# (validation/loso.py), r_j^(-T) = ln(measured_j / predicted_j(theta_-T)) (the cross-validation residuals of the
# CV+ / jackknife+ prediction interval over exchangeable units, here source families: Barber, Candes, Ramdas &
# Tibshirani 2021, Ann. Statist. 49(1), §3), each family weighing the same (a new stack is a new group, Dunn,
# Wasserman & Ramdas 2022). Their 10th / 90th percentiles are cut by the width model below (`fit_scaled`: width as a
# function of MoE and interleaving, all residuals at once); session 5 cut them per generation x op class
# (`fit(..., units=)`), which left one or two families per group. The between-source spread enters through each
# source's residuals, the within-source spread through the rows.
#
# The row's own part (the "+" of jackknife+): how far the row's prediction moves across those refits,
# s_T(x) = ln(predicted_x(theta_-T) / predicted_x(theta)), is the spread of the fitted constants across source
# families seen through this row's sensitivity to them (to first order sum_c d ln pred_x / d ln c x
# d ln c_T): a row that does not depend on a constant gets no width from it. Its jackknife variance
# (n - 1) / n sum_T (s_T - mean s)^2 (Quenouille-Tukey; Efron & Stein 1981) is added in quadrature, at the
# z of the band's quantiles (z_0.9 = 1.2816), to both sides (`jackknife_spread`).


def jackknife_spread(shifts: Sequence[Sequence[float]], quantiles: Sequence[float] = QUANTILES) -> list[float]:
    """shifts[t][i]: ln(prediction of row i with the constants refitted without source t / with all of them) ->
    per row z x the jackknife standard deviation sqrt((n-1)/n sum_t (s_t - mean)^2), z the normal quantile of
    the band's upper level (1.2816 for 90%); 0 with fewer than two sources."""
    n = len(shifts)
    if n < 2:
        return [0.0] * (len(shifts[0]) if shifts else 0)
    z = NormalDist().inv_cdf(quantiles[1])
    a = np.array(shifts, dtype=float)
    sd = np.sqrt((n - 1) / n * ((a - a.mean(axis=0)) ** 2).sum(axis=0))
    return [float(z * x) for x in sd]


def combined(*spreads: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Per-row (down <= 0, up >= 0) spreads of independent causes combined in quadrature, each side apart."""
    return [
        (-math.sqrt(sum(s[i][0] ** 2 for s in spreads)), math.sqrt(sum(s[i][1] ** 2 for s in spreads)))
        for i in range(len(spreads[0]) if spreads else 0)
    ]


# ---- the unseen-stack band's width as a function of the row (heteroscedastic, location-scale) --------------
# Grouping the cross-validated residuals by hardware generation x op class leaves one or two other families per
# group, so a new stack's band there is only as wide as those families' offsets (Zero Bubble's A100 band came
# from two stacks the refit predicts closely). Instead, the width is a function of row features known before
# measuring, fitted on ALL the cross-validated residuals at once (each family weighing the same), and the shape
# of the band is the pooled distribution of the residuals divided by that width: the multiplicative
# heteroscedastic model ln|e| = x.beta + noise (Harvey 1976, Econometrica 44(3); ordinary least squares on
# ln|e|, weighted), with the prediction interval cut on the scaled residuals e / s(x) (locally weighted
# split conformal, Lei, G'Sell, Rinaldo, Tibshirani & Wasserman 2018, JASA 113(523), §5.2). Features:
# MoE (routing, expert all-to-all and grouped GEMMs are the least certain physics) and an interleaved pipeline
# (vp > 1: the per-chunk costs of interleaved schedules, README "pipeline"). A feature fewer than MIN_ROWS
# residual rows have gets no coefficient (the rule a group's own percentiles follow: one row does not measure a
# width; without NVIDIA's rows one row is interleaved), so it neither widens nor narrows the band: what its rows
# do not know comes in through the unidentified constants' spread (`parameter_spread`).

SCALE_FEATURES = ("moe", "interleaved")
ABS_FLOOR = 1e-3  # ln|e| of an exact prediction is -inf: |e| below 0.1% (under any measurement's resolution)


def scale_row(moe: bool, vp: int) -> list[float]:
    """The width model's regressors of a row: intercept, MoE, interleaved pipeline (vp > 1)."""
    return [1.0, float(moe), float(vp > 1)]


def unseen_cell(moe: bool, vp: int) -> str:
    """The name of a row's width cell: 'dense', 'dense/interleaved', 'moe', 'moe/interleaved'."""
    return ("moe" if moe else "dense") + ("/interleaved" if vp > 1 else "")


def fit_scaled(
    samples: Sequence[tuple[bool, int, float]],
    units: Sequence[str],
    quantiles: Sequence[float] = QUANTILES,
    min_rows: int = MIN_ROWS,
) -> dict:
    """samples: (moe, vp, ln(measured / predicted)) of cross-validated residuals, one unit (source family) each ->
    {"coef": [b0, b_moe, b_interleaved], "log_q10", "log_q90" (type-6 quantiles of e / s(x), each unit weighing
    the same), "rows"}; s(x) = exp(x . coef); a feature fewer than `min_rows` rows have: coefficient 0."""
    count: dict[str, int] = {}
    for u in units:
        count[u] = count.get(u, 0) + 1
    w = np.sqrt([1.0 / count[u] for u in units])
    x = np.array([scale_row(m, v) for m, v, _ in samples])
    e = np.array([r for _, _, r in samples])
    used = [0] + [j for j in range(1, x.shape[1]) if x[:, j].sum() >= min_rows]
    coef = np.zeros(x.shape[1])
    coef[used] = np.linalg.lstsq(x[:, used] * w[:, None], np.log(np.abs(e) + ABS_FLOOR) * w, rcond=None)[0]
    z = e / np.exp(x @ coef)
    if BETWEEN_FAMILIES == "random_effects" and len(count) >= 3:
        lo, hi = new_family_quantiles(z, units, quantiles)
    else:
        lo, hi = weighted_quantiles(list(z), list(w**2), quantiles)
    return {"coef": [float(c) for c in coef], "log_q10": lo, "log_q90": hi, "rows": len(e)}


# How a family the fit never saw is placed among the families it did see. "pooled": the equally weighted pooled
# distribution of the families' scaled residuals (Dunn, Wasserman & Ramdas 2022), which covers a new family only as
# far as the k seen families' offsets happen to spread; with k = 5-6 families it undercovers (leave-one-family-out:
# 68% of 80%). "random_effects": a new family's offset is drawn from the families' offsets as a random effect, with
# the uncertainty of their mean and spread from k families: offset = mu + tau sqrt(1 + 1/k) t_{k-2} (the prediction
# interval for a new study of a random-effects meta-analysis, Higgins, Thompson & Spiegelhalter 2009, JRSS A
# 172(1):137-159, eq. 12), plus a row's deviation from its own family's offset (the pooled within-family residuals,
# every family weighing the same).
BETWEEN_FAMILIES = "random_effects"
T_DRAWS = 4000  # Student-t quantile points of the offset (deterministic: evenly spaced probabilities)


def new_family_quantiles(z: np.ndarray, units: Sequence[str], quantiles: Sequence[float]) -> tuple[float, float]:
    """(q_lo, q_hi) of a new family's scaled residual: its offset (random effect over the k families' mean scaled
    residuals, Student-t with k - 2 degrees of freedom) plus a within-family deviation (each family weighing the
    same), the two independent (BETWEEN_FAMILIES)."""
    names = sorted(set(units))
    k = len(names)
    idx = np.array([names.index(u) for u in units])
    means = np.array([z[idx == j].mean() for j in range(k)])
    d = z - means[idx]
    wd = np.array([1.0 / (idx == j).sum() for j in idx]) / k
    mu, tau = float(means.mean()), float(means.std(ddof=1))
    t = _student_t_points(k - 2, T_DRAWS) * tau * math.sqrt(1 + 1 / k)
    vals = (mu + t[:, None] + d[None, :]).ravel()
    weights = np.broadcast_to(wd[None, :] / len(t), (len(t), len(d))).ravel()
    lo, hi = weighted_quantiles(list(vals), list(weights), quantiles)
    return lo, hi


@lru_cache(maxsize=8)
def _student_t_points(df: int, n: int) -> np.ndarray:
    """n quantiles of Student's t with `df` degrees of freedom at the probabilities (i + 0.5) / n."""
    from scipy.stats import t as student_t

    return np.asarray(student_t.ppf((np.arange(n) + 0.5) / n, df), dtype=float)


def scaled_band(model: dict, moe: bool, vp: int) -> tuple[float, float]:
    """(lo <= 0, hi >= 0) of ln(measured / predicted) for a row: the scaled quantiles times the row's width."""
    s = math.exp(float(np.dot(scale_row(moe, vp), model["coef"])))
    return min(model["log_q10"] * s, 0.0), max(model["log_q90"] * s, 0.0)


# ---- reading the stored bands ---------------------------------------------------------------------


@lru_cache(maxsize=4)
def load(path: str = str(FILE)) -> dict:
    """uncertainty.toml as a dict (groups, coverage, provenance); no file -> one wide fallback band."""
    p = Path(path)
    if not p.is_file():
        return {
            "groups": {ALL: {"rows": 0, "log_p10": math.log(0.7), "log_p90": math.log(1.3), "low": 0.7, "high": 1.3}},
            "missing": True,
        }
    return tomllib.loads(p.read_text(encoding="utf-8"))


def band(model: str | ModelSpec, hw: str | HardwareSpec, path: str | None = None) -> tuple[float, float, str]:
    """(low_factor, high_factor, group) for throughput predictions of `model` on `hw`."""
    b = band_of(model, hw, path)
    return b.low, b.high, b.group


def band_of(
    model: str | ModelSpec, hw: str | HardwareSpec, path: str | None = None, unseen: bool = False, vp: int = 1
) -> Band:
    """The band of `path` (an uncertainty.toml), else of the predictor in use: a calibration file written by
    `perfmodel calibrate` carries bands fitted on its own calibration rows with its constants; the shipped
    calibration uses perfmodel/uncertainty.toml. `unseen`: the band for a software stack of a family the fit
    never saw (the file's [unseen] cells by op class and interleaving `vp` > 1, from cross-validated residuals;
    older files: per generation x op class), where the file has them."""
    m, h = load_model(model), load_hardware(hw)
    if unseen:
        groups = load(path or str(FILE)).get("unseen")
        if groups:
            cell = unseen_cell(m.is_moe, vp)
            if cell in groups:
                d = groups[cell]
                return Band(float(d["low"]), float(d["high"]), f"unseen:{cell}", int(d["rows"]), path or Band.source)
            b = lookup(groups, family(h), op_class(m), path or Band.source)
            return Band(b.low, b.high, f"unseen:{b.group}", b.rows, b.source)
    if path is None:
        from perfmodel.core import calibration

        own = calibration.table().get("bands")
        if own:
            return lookup(own, _seen_family(own, h), op_class(m), calibration.active_file().name)
        path = str(FILE)
    groups = load(path)["groups"]
    return lookup(groups, _seen_family(groups, h), op_class(m))


def _seen_family(groups: dict[str, dict], hw: HardwareSpec) -> str:
    """`hw`'s family, or ALL where no group of the file is of that family: a hardware family no validation run
    fitted (an AMD generation; every measured row of the shipped sets is NVIDIA) takes the band of all rows, never
    the op-class group of the other families, whose error it is not known to share (rule: unseen family -> all)."""
    fam = family(hw)
    return fam if family_fitted(groups, fam) else ALL


def stack_seen(stack: str | None, path: str | None = None) -> bool | None:
    """Whether calibration rows of this stack fitted the bands: its preset id, or a preset of its `base` chain, is
    in the file's `stacks` (None = the default stack; a stack file outside the catalog is the user's own: not
    seen). None where the file lists no stacks (older files)."""
    listed = load(path or str(FILE)).get("stacks")
    if listed is None:
        return None
    from perfmodel.specs.specfile import data_dir, resolve
    from perfmodel.specs.stack import DEFAULT_STACK, load_stack

    ref = stack or DEFAULT_STACK
    if resolve(ref, "stacks").resolve().parent != data_dir("stacks").resolve():
        return False
    spec = load_stack(ref)
    while True:
        if spec.id in listed:
            return True
        if not spec.base:
            return False
        spec = load_stack(spec.base)


def hardware_fitted(hw: str | HardwareSpec) -> bool:
    """Whether validation runs of `hw`'s hardware family fitted the shipped bands (False for an AMD generation)."""
    return family_fitted(load(str(FILE))["groups"], family(load_hardware(hw)))


def band_for(
    model: str | ModelSpec, hw: str | HardwareSpec, stack: str | None = None, vp: int = 1, stand_in: bool = False
) -> Band:
    """The band the commands print: a `perfmodel calibrate` file's own bands when one is in use; else the fitted
    band when the stack's rows (or its base's) fitted it, and the unseen-stack band for any other stack or where
    the preset only stands in for the run's own software (`stand_in`: a Hugging Face Trainer run on llm-foundry's)."""
    from perfmodel.core import calibration

    if calibration.table().get("bands") or (not stand_in and stack_seen(stack) is not False):
        return band_of(model, hw)
    return band_of(model, hw, unseen=True, vp=vp)


def with_band(d: dict, key: str, lo_hi: tuple[float, float]) -> dict:
    """Add key_low / key_high to a JSON dict."""
    d[f"{key}_low"], d[f"{key}_high"] = lo_hi
    return d


def span(lo: float, hi: float, fmt: str) -> str:
    """'2,800–3,400' with one format for both ends."""
    return f"{format(lo, fmt)}–{format(hi, fmt)}"
