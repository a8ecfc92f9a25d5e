"""Fuzz the measured-runs CSV path: random bytes / text into perfmodel.analysis.validate.read_csv, and rows of
validation/runs.csv with random cell edits into perfmodel.analysis.validate.validate_rows.

Contract: read_csv raises only perfmodel.errors.InputError; validate_rows never raises: a row it can't
use lands in Report.unsupported (with its line and a reason), every other row is predicted, and
given == predicted + unsupported.

Run standalone (longer than the test suite does):
    python fuzz/fuzz_csv.py                    # hypothesis, 1000 examples per target
    python fuzz/fuzz_csv.py --examples 10000
    python fuzz/fuzz_csv.py --atheris [atheris args]     # coverage-guided read_csv, needs `pip install atheris`
tests/cli/test_fuzz.py runs the same targets with a small bounded number of examples.
"""

from __future__ import annotations

import csv
import itertools
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from perfmodel.analysis.validate import REQUIRED, read_csv, validate_rows  # noqa: E402
from perfmodel.errors import InputError  # noqa: E402
from perfmodel.specs.specfile import data_dir  # noqa: E402

_counter = itertools.count()
_TMP: Path | None = None


def tmp_dir() -> Path:
    """A folder holding the CSVs and a spec file (spec.toml) that rows may name by relative path."""
    global _TMP
    if _TMP is None:
        _TMP = Path(tempfile.mkdtemp(prefix="perfmodel-fuzz-csv-"))
        (_TMP / "spec.toml").write_text((data_dir("models") / "llama3-8b.toml").read_text())
        (_TMP / "sub").mkdir()
        (_TMP / "sub" / "hw.toml").write_text((data_dir("hardware") / "h100-sxm.toml").read_text())
    return _TMP


def seed_rows() -> list[dict]:
    with (data_dir("validation") / "runs.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    # a spread of the catalog: every 12th row (dense, MoE, each GPU generation, several precisions)
    return rows[::12]


SEED_ROWS = seed_rows()
COLUMNS = list(SEED_ROWS[0])

# ---- the contract ---------------------------------------------------------------------------------------


def check_rows(rows: list[dict]) -> None:
    try:
        with np.errstate(all="ignore"):
            rep = validate_rows(rows, tmp_dir())
    except Exception as exc:  # noqa: BLE001 - that is the point
        raise AssertionError(f"validate_rows raised {type(exc).__name__}: {exc}\nrows: {rows!r:.3000}") from exc
    assert rep.given == len(rows)
    assert len(rep.results) + len(rep.unsupported) == len(rows), (len(rep.results), rep.unsupported)
    for u in rep.unsupported:
        assert isinstance(u["reason"], str) and u["reason"].strip(), u
        assert 2 <= u["row"] <= len(rows) + 1, u
    for r in rep.results:
        assert math.isfinite(r.predicted) and r.predicted > 0, r
        assert math.isfinite(r.error), r


def check_csv_bytes(data: bytes) -> None:
    p = tmp_dir() / f"r{next(_counter)}.csv"
    p.write_bytes(data)
    try:
        rows = read_csv(p)
    except InputError as exc:
        assert str(exc).strip() and "\n" not in str(exc).strip(), repr(exc)
        return
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"read_csv raised {type(exc).__name__}: {exc}\nfile: {data[:2000]!r}") from exc
    check_rows(rows)


# ---- strategies -----------------------------------------------------------------------------------------

text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=15)
cells = st.one_of(
    text,
    st.sampled_from(
        [
            "",
            " ",
            "0",
            "-1",
            "1",
            "2",
            "3",
            "7",
            "8",
            "64",
            "1e19",
            "1e400",
            "nan",
            "inf",
            "-inf",
            "1.5",
            "0x10",
            "1_000",
            " 8 ",
            "true",
            "none",
            "full",
            "selective",
            "bf16",
            "fp8",
            "fp8-block",
            "mxfp8",
            "nvfp4",
            "fp16",
            "fp4",
            "llama3-8b",
            "deepseek-v3",
            "mixtral-8x7b",
            "h100-sxm",
            "gb200-nvl72",
            "a100-sxm-80gb",
            "spec.toml",
            "./spec.toml",
            "sub/hw.toml",
            "../spec.toml",
            "sub/",
            "/",
            "/dev/null",
            "no/such.toml",
            "x" * 300,
            "a\x00b",
            "balanced-dropless",
            "token-drop",
        ]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@st.composite
def mutated_row(draw) -> dict:
    row = dict(draw(st.sampled_from(SEED_ROWS)))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["set", "set", "set", "blank", "drop", "none", "extra"]))
        key = draw(st.sampled_from(COLUMNS))
        if op == "set":
            row[key] = draw(cells)
        elif op == "blank":
            row[key] = ""
        elif op == "drop":
            row.pop(key, None)
        elif op == "none":  # csv.DictReader gives None for the cells of a short line
            row[key] = None
        else:  # ... and a list under key None for the cells of a long line
            row[None] = draw(st.lists(text, min_size=1, max_size=3))  # type: ignore[index]
    return row


row_lists = st.lists(mutated_row(), min_size=1, max_size=4)


def _to_csv(rows: list[dict]) -> str:
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore")
    w.writeheader()
    w.writerows([{k: (v if isinstance(v, str) else "") for k, v in r.items() if k is not None} for r in rows])
    return buf.getvalue()


@st.composite
def csv_files(draw) -> bytes:
    kind = draw(st.sampled_from(["raw", "text", "mutated", "header"]))
    if kind == "raw":
        return draw(st.binary(max_size=400))
    if kind == "text":
        return draw(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=400)).encode()
    if kind == "header":  # a valid header, then random text
        return (",".join(draw(st.permutations(list(REQUIRED)))) + "\n" + draw(text)).encode()
    body = _to_csv(draw(row_lists))
    # a few character-level edits: quotes, separators and line breaks in odd places
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(body)))
        body = body[:i] + draw(st.sampled_from(['"', ",", "\n", "\r", "\x00", "\ufeff", ";"])) + body[i:]
    return body.encode("utf-8")


# ---- standalone runner ----------------------------------------------------------------------------------


def _run_hypothesis(examples: int) -> None:
    from hypothesis import HealthCheck, given, settings

    s = settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    given(row_lists)(s(lambda rows: check_rows(rows)))()
    given(csv_files())(s(lambda data: check_csv_bytes(data)))()
    print(f"fuzz_csv: {examples} examples per target, no crash")


def _run_atheris(argv: list[str]) -> None:
    import atheris  # type: ignore[import-not-found]

    atheris.Setup(argv, check_csv_bytes)
    atheris.Fuzz()


def main(argv: list[str]) -> None:
    if "--atheris" in argv:
        _run_atheris([a for a in argv if a != "--atheris"])
        return
    n = int(argv[argv.index("--examples") + 1]) if "--examples" in argv else 1000
    _run_hypothesis(n)


if __name__ == "__main__":
    main(sys.argv)
