"""`perfmodel validate FILE.csv`: predict every measured run and report the errors.

Error = (predicted - measured) / measured on tokens/s/GPU (validation compares throughput, never MFU
strings; DESIGN.md "Conventions"). Rows are split into the fixed calibration subset and the held-out
rest (perfmodel.analysis.validate.calibration_split); accuracy figures that matter are the held-out ones."""

from __future__ import annotations

from pathlib import Path

import click

from perfmodel.analysis.validate import (
    COLUMNS,
    GROUP_KEYS,
    Report,
    count_rows,
    iter_csv,
    merge,
    shipped_sets,
    validate_rows,
)
from perfmodel.commands.common import calibration_option, stderr_progress
from perfmodel.errors import InputError
from perfmodel.render.validate import emit_json_rows, print_report, print_unsupported
from perfmodel.specs.specfile import data_dir, display_path

PROGRESS_MIN_ROWS = 2000


def run_validation(path: str) -> Report:
    """Validate FILE streamed in chunks (bounded memory), with a progress bar on a terminal's stderr for
    large files. Ctrl-C: KeyboardInterrupt carrying one line for perfmodel.cli to print (exit 130)."""
    total = count_rows(path)  # a first, dict-free pass: a broken file fails before any prediction
    if not total:
        raise InputError(path, "", "no data rows (only a header)")
    base = Path(path).resolve().parent
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done = n
        bar.update(task, completed=n)

    try:
        with stderr_progress("predicting", "{task.completed}/{task.total} rows", show=total > PROGRESS_MIN_ROWS) as bar:
            task = bar.add_task("predicting", total=total)
            return validate_rows(iter_csv(path), base, progress=step, dataset=Path(path).name)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"interrupted after {done:,} of {total:,} rows; no results written") from None


def _columns_help() -> str:
    """The CSV columns for `perfmodel validate --help` (click keeps \\b paragraphs unwrapped)."""
    lines = ["\b", "Columns (name, unit, default, accepted values); other columns are ignored:"]
    lines += [f"  {n} [{u}] default {d}: {a}" for n, u, d, a in COLUMNS]
    return "\n".join(lines)


@click.command(
    "validate",
    help="Predict every measured run of FILE.csv (validation/README.md schema) and report "
    "the errors. Without FILE: every measured set shipped with perfmodel (validation/runs.csv and "
    "validation/independent/*.csv), with a per-set table. "
    "Rows that cannot be scored (a bad cell, an implied MFU above 100%, a layout that fits with no "
    "recompute mode) are listed as unsupported with the reason; a repeated run_id is an error, and so "
    "is a file with no row predicted (exit 2).\n\n" + _columns_help(),
)
@calibration_option
@click.argument("file", type=click.Path(dir_okay=False), required=False)
@click.option(
    "--by",
    "by_key",
    type=click.Choice(GROUP_KEYS),
    default="hardware",
    show_default=True,
    help="group the per-group table by this column",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def validate_cmd(*, file: str | None, by_key: str, as_json: bool) -> None:
    paths = [file] if file else [str(p) for p in shipped_sets()]
    report = merge([run_validation(p) for p in paths])
    path = (
        file or f"{len(paths)} shipped sets (runs.csv and independent/*.csv in {display_path(data_dir('validation'))})"
    )
    if not report.results:  # nothing usable: exit 2, with every row's reason
        u = report.unsupported
        if not as_json:
            print_unsupported(u)
        raise InputError(
            path,
            "",
            f"no row could be predicted (0 of {report.given} rows, 0% coverage); first "
            f"reason, line {u[0]['row']}: {u[0]['reason']}",
            details={"unsupported": u},
        )
    if as_json:
        return emit_json_rows(report.document(by_key), report.results)
    print_report(report, path, len(paths) > 1, by_key)
    return None


COMMANDS = [validate_cmd]
