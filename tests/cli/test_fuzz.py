"""Bounded fuzzing (issue 7): random and mutated spec files into the loaders, random and mutated CSV rows
into validate, logs with malformed numbers into check. Only InputError may escape a loader or check (the CLI
prints it as one line, exit 2); validate_rows never raises. The targets live in fuzz/ (run them standalone for
longer, see fuzz/README.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings

FUZZ_DIR = Path(__file__).resolve().parents[2] / "fuzz"


def _load(name: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, FUZZ_DIR / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


fs = _load("fuzz_specs")
fc = _load("fuzz_csv")
fl = _load("fuzz_logs")

BOUNDED = settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


@BOUNDED
@given(fs.raw_files)
def test_random_bytes_into_spec_loaders(inp):
    suffix, data = inp
    fs.check_spec_bytes(data, suffix)


@BOUNDED
@given(fs.mutated_doc())
def test_mutated_spec_documents(inp):
    suffix, data = inp
    fs.check_spec_bytes(data, suffix)


@BOUNDED
@given(fs.mutated_text())
def test_mutated_spec_text(inp):
    suffix, data = inp
    fs.check_spec_bytes(data, suffix)


@BOUNDED
@given(fc.row_lists)
def test_mutated_rows_into_validate_rows(rows):
    fc.check_rows(rows)


@BOUNDED
@given(fc.csv_files())
def test_random_and_mutated_csv_files(data):
    fc.check_csv_bytes(data)


@BOUNDED
@given(fl.mutated_logs())
def test_malformed_numbers_in_logs_into_check(text):
    fl.check_log_text(text)


def test_log_seeds_are_read_by_check():
    """The fuzzer's seeds are logs check measures (or mutations test nothing)."""
    from perfmodel.analysis.logparse import parse_text

    for text in fl.SEEDS:
        log = parse_text(text)
        # the Hugging Face Trainer logs one measurement, its train metrics at the end
        assert log.framework and len(log.iters) >= (1 if log.framework == "hf_trainer" else 3)


def test_toml_writer_round_trips():
    """The fuzzer's TOML writer must write what tomllib reads back, or mutations test the writer."""
    import math
    import tomllib

    for _, doc, suffix in fs.SEEDS:
        if suffix == ".toml":
            assert tomllib.loads(fs.toml_dumps(doc)) == doc
    odd = {"a b": [1, -2.5, True, 'x"y\\z\n\u00e9'], "t": {"k": {"v": 1}}, "n": math.inf}
    assert tomllib.loads(fs.toml_dumps(odd)) == odd


# The 100,000-row CSV (validate in ~10 s with a peak-memory bound) lives with the other scale measurements in
# tests/analysis/test_scale.py::test_validate_100k_rows_fast_and_bounded (opt-in: PERFMODEL_SCALE_TEST=1).
