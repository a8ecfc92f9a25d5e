"""Fit the cost model's few global constants on the CALIBRATION split of validation/runs.csv.

    python3 validation/calibrate.py            # fit and print; --write stores the values in calibration.toml

Only rows with `calibration_split(run_id)` True (crc32(run_id) % 4 == 0, fixed, ~1/4 of the rows) enter
the objective: the mean absolute log error of predicted vs measured tokens/s/GPU. Held-out rows are
never seen by the fit; `perfmodel validate --by split` reports both. Each constant keeps its physical
bounds (fractions in (0, 1], sizes and times positive), and coordinate search (multiplicative steps,
shrinking) keeps the fit deterministic and dependency-free.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfmodel.calibration import _FILE, constants, fitted_names, table  # noqa: E402
from perfmodel.validate import calibration_split, read_csv, validate_rows  # noqa: E402

BOUNDS = {"tensor_sustained": (0.3, 1.0), "tp_overlap": (0.0, 1.0), "ep_overlap": (0.0, 1.0),
          "moe_imbalance": (1.0, 2.5), "gemm_k_half": (16, 4096), "gemm_mn_half": (4, 1024),
          "kernel_fixed_s": (5e-7, 5e-5), "step_overhead_s": (1e-3, 0.5), "moe_layer_overhead_s": (0.0, 0.01),
          "moe_permute_bytes": (2.0, 24.0)}


def objective(rows, base, consts) -> float:
    rep = validate_rows(rows, base, consts)
    return float(np.mean([abs(np.log1p(r.error)) for r in rep.results]))


def fit(rows, base, rounds: int = 5):
    c = constants()
    names = fitted_names()
    best = objective(rows, base, c)
    print(f"start: mean |log err| = {best:.4f}")
    step = 0.35
    for rnd in range(rounds):
        for n in names:
            lo, hi = BOUNDS.get(n, (1e-12, 1e12))
            cur = getattr(c, n)
            for mult in (1 - step, 1 / (1 - step), 1 - step / 2, 1 / (1 - step / 2)):
                val = float(np.clip(cur * mult, lo, hi))
                if val == cur:
                    continue
                trial = c.with_(**{n: val})
                o = objective(rows, base, trial)
                if o < best - 1e-5:
                    best, c, cur = o, trial, val
            print(f"round {rnd} {n:18s} = {getattr(c, n):.4g}   objective {best:.4f}", flush=True)
        step *= 0.6
    return c, best


def write(c) -> None:
    text = _FILE.read_text()
    for n in fitted_names():
        v = getattr(c, n)
        text = re.sub(rf"(\[{n}\]\nvalue = )[^\n]+", lambda m: m.group(1) + f"{v:.4g}", text)
    _FILE.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--csv", default=str(ROOT / "validation" / "runs.csv"))
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    all_rows = read_csv(a.csv)
    rows = [r for r in all_rows if calibration_split(r.get("run_id", ""))]
    print(f"calibration rows: {len(rows)} of {len(all_rows)}")
    c, best = fit(rows, Path(a.csv).resolve().parent, a.rounds)
    for n in fitted_names():
        print(f"  {n} = {getattr(c, n):.4g}  (prior {table()[n]['prior']})")
    if a.write:
        write(c)
        print(f"written to {_FILE}")


if __name__ == "__main__":
    main()
