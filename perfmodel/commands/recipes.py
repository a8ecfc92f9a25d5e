"""`perfmodel recipes`: the planner against the experts' hand-tuned layouts (perfmodel/analysis/recipes.py)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click
from rich.markup import escape

from perfmodel.analysis.recipes import check_rows, summary
from perfmodel.analysis.validate import read_csv
from perfmodel.commands.common import calibration_option, emit_json, stack_options, stderr_progress
from perfmodel.errors import InputError
from perfmodel.render import console, table
from perfmodel.specs.layout import layout_text
from perfmodel.specs.specfile import data_dir

SHOWN = 20  # disagreements printed as a table (every row is in --json)


def _lay(d: dict | None) -> str:
    return layout_text(d or None)


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
    s = summary(checks, top_k, threshold)
    s["seconds"] = seconds
    s["skipped"] = len(skipped)
    s["stack"] = stack if stack is not None else ("each row's own" if not stack_set else "each row's own + --stack-set")
    s["stack_set"] = list(stack_set)
    dis = sorted((c for c in checks if c.gap is None or abs(c.gap) > threshold), key=lambda c: -(abs(c.gap or 0)))
    if as_json:
        emit_json({"summary": s, "rows": [asdict(c) for c in checks], "skipped": skipped})
        return
    console.print(f"[bold]planner vs recipes[/]: {s['rows']} rows checked ({s['skipped']} skipped) in {seconds:.1f} s")
    console.print(escape(f"  stack: {s['stack']}" + (f" + --stack-set {', '.join(stack_set)}" if stack_set else "")))
    console.print(
        f"  planner's top-{top_k} contains or beats the recipe: {s['contained_or_beaten']}/{s['rows']} "
        f"({(s['share_contained_or_beaten'] or 0):.0%}); recipe itself in top-{top_k}: {s['recipe_in_top_k']}, "
        f"ranked 1st: {s['recipe_rank_1']}"
    )
    console.print(
        f"  recipe outside the planner's space: {s['recipe_outside_space']}; recipe predicted OOM: "
        f"{s['recipe_predicted_oom']}; median gap best/recipe - 1: {(s['median_gap'] or 0):+.1%}"
    )
    console.print(
        f"  disagreements > {threshold:.0%}: {s['disagreements']} (planner faster {s['planner_faster']}, "
        f"recipe faster {s['recipe_faster']})"
    )
    shown = dis[:SHOWN]
    more = f"; the {len(shown)} largest of {len(dis)} shown, all in --json" if len(dis) > len(shown) else ""
    t = table(
        f"disagreements > {threshold:.0%} (gap = planner best / recipe - 1, predicted{more})",
        ["run", "recipe", "rank", "planner best", "gap", "reason"],
        [
            [
                c.run_id,
                _lay(c.recipe),
                f"{c.rank}/{c.candidates}",
                _lay(c.best),
                f"{c.gap:+.0%}" if c.gap is not None else "-",
                c.reason,
            ]
            for c in shown
        ],
    )
    t.columns[0].overflow = "fold"  # a run id cut to "am-gptoss120b-h…" names nothing
    for i in (1, 3, 5):
        t.columns[i].justify = "left"
    console.print(t)
    if skipped:
        console.print(table("skipped rows", ["run", "reason"], [[k["run_id"], k["reason"]] for k in skipped]))


COMMANDS = [command]
