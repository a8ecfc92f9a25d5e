"""`perfmodel recipes`: the planner against the experts' hand-tuned layouts (perfmodel/analysis/recipes.py)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from perfmodel.analysis.recipes import check_rows, disagreements, summary
from perfmodel.analysis.validate import read_csv
from perfmodel.commands.common import calibration_option, emit_json, stack_options, stderr_progress
from perfmodel.errors import InputError
from perfmodel.render.recipes import print_recipes
from perfmodel.specs.specfile import data_dir


@click.command("recipes")
@calibration_option
@click.option(
    "--csv", "csv_path", default=None, help="measured runs in the validation schema [default: validation/runs.csv]"
)
@click.option("--top", "top_k", type=int, default=10, show_default=True, help="the planner's top-K to test against")
@click.option("--threshold", type=float, default=0.10, show_default=True, help="disagreement to list (fraction)")
@stack_options
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def command(
    *,
    csv_path: str | None,
    top_k: int,
    threshold: float,
    as_json: bool,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Rank each published recipe's layout among the planner's candidates."""
    if top_k < 1:
        raise InputError("--top", "top", f"must be at least 1 (got {top_k})")
    csv_path = csv_path or str(data_dir("validation") / "runs.csv")
    rows = read_csv(csv_path)
    base = Path(csv_path).resolve().parent
    with stderr_progress("recipes", "{task.completed}/{task.total} rows", show=not as_json) as bar:
        task = bar.add_task("rows", total=len(rows))
        checks, skipped, seconds = check_rows(
            rows, base, top_k, lambda i, n: bar.update(task, completed=i), stack, stack_set
        )
    s = summary(checks, top_k, threshold, seconds=seconds, skipped=len(skipped), stack=stack, stack_set=stack_set)
    dis = disagreements(checks, threshold)
    if as_json:
        emit_json({"summary": s, "rows": [asdict(c) for c in checks], "skipped": skipped})
        return
    print_recipes(s, dis, skipped, top_k, threshold, stack_set)


COMMANDS = [command]
