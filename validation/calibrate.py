"""Fit the cost model's few global constants on the CALIBRATION split of ALL shipped measured sets.

    python3 validation/calibrate.py            # fit and print; --write stores the values in calibration.toml

The rows: validation/runs.csv (NVIDIA's tables) and validation/independent/*.csv (five other stacks)
together, or the files given with --csv. Only rows with `calibration_split(run_id)` True
(crc32(run_id) % 4 == 0, fixed, ~1/4 of each file) enter the objective, the mean absolute log error
of predicted vs measured tokens/s/GPU; held-out rows are never seen by the fit (`perfmodel validate
--by split` reports both). Bounds, objective and coordinate search are perfmodel/analysis/fit.py, the same code
`perfmodel calibrate` runs on a user's own runs. --write stores the values and rewrites the file's
header to declare the rows it was fitted on.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from perfmodel.analysis import fit as F  # noqa: E402
from perfmodel.analysis.validate import shipped_sets  # noqa: E402
from perfmodel.core.calibration import _FILE, constants, fitted_names, priors, shipped_table  # noqa: E402


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def header(sets: list[F.RunSet], cal: list[F.RunSet], fit: F.Fit, start: str) -> str:
    """The calibration.toml header: what the values were fitted on, when, and how."""
    used = ", ".join(f"{_rel(s.path)} ({len(c.rows)} of {len(s.rows)} rows)" for s, c in zip(sets, cal))
    lines = [
        "Global efficiency constants of the cost model. Each is a physical quantity, not a per-row factor.",
        "`fit = true` marks the ones fitted by validation/calibrate.py (perfmodel/analysis/fit.py) on the CALIBRATION split",
        "(rows whose run_id hashes into split 0 of 4: crc32(run_id) % 4 == 0, perfmodel/analysis/validate.py",
        f"`calibration_split`) of every measured set together: {used}.",
        f"Fitted {_dt.date.today().isoformat()}: coordinate search from the {start} values ({fit.passes} passes of "
        f"{fit.rounds} rounds),",
        f"mean |ln(predicted / measured)| {fit.start_objective:.4f} -> {fit.objective:.4f}. Accuracy is reported",
        "on the held-out rows as well as on all rows.",
        "`value` is what the model uses; `prior` is the physically motivated starting point with its source.",
    ]
    words: list[str] = []
    out: list[str] = []
    for ln in lines:  # wrap at ~110 columns
        for w in ln.split(" "):
            if words and len(" ".join(words + [w])) > 108:
                out.append("# " + " ".join(words))
                words = []
            words.append(w)
        out.append("# " + " ".join(words))
        words = []
    return "\n".join(out) + "\n"


def write(c, head: str, path: Path = _FILE) -> None:
    """Store the fitted values (4 significant digits) and replace the leading comment block with `head`."""
    text = path.read_text()
    for n in fitted_names():
        v = getattr(c, n)
        text = re.sub(rf"(\[{n}\]\nvalue = )[^\n]+", lambda m: m.group(1) + f"{v:.4g}", text)
    body = re.sub(r"\A(#[^\n]*\n)+", "", text)
    path.write_text(head + body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", action="append", help="measured-run file (repeatable) [default: every shipped set]")
    ap.add_argument("--write", action="store_true", help=f"store the values in {_rel(_FILE)}")
    ap.add_argument("--rounds", type=int, default=F.ROUNDS, help="coordinate-search rounds per pass")
    ap.add_argument(
        "--passes",
        type=int,
        default=F.MAX_PASSES,
        help=f"most passes (the search restarts from its result while a pass gains >= {F.PASS_GAIN:g})",
    )
    ap.add_argument(
        "--start",
        choices=("current", "prior"),
        default="current",
        help="start from calibration.toml's values (default) or from every constant's prior",
    )
    a = ap.parse_args()
    sets = [F.read_set(p) for p in (a.csv or shipped_sets())]
    cal = F.calibration_part(sets)
    for s, c in zip(sets, cal):
        print(f"{_rel(s.path)}: {len(c.rows)} calibration rows of {len(s.rows)}")
    start = constants() if a.start == "current" else priors()
    fit = F.search(cal, start, fitted_names(), a.rounds, a.passes, log=lambda m: print(m, flush=True))
    print(f"{fit.evaluations} objective evaluations in {fit.passes} passes")
    for n in fitted_names():
        print(
            f"  {n} = {getattr(fit.consts, n):.4g}  (start {getattr(start, n):.4g}, prior {shipped_table()[n]['prior']})"
        )
    if a.write:
        write(fit.consts, header(sets, cal, fit, a.start))
        print(f"written to {_FILE}")


if __name__ == "__main__":
    main()
