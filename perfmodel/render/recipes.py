"""`perfmodel recipes`'s text: how often the planner contains or beats the experts' layouts, the disagreements."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from perfmodel.analysis.recipes import RecipeCheck
from perfmodel.render import console, table
from perfmodel.specs.layout import layout_text

SHOWN = 20  # disagreements printed as a table (every row is in --json)


def _lay(d: dict | None) -> str:
    return layout_text(d or None)


def print_recipes(
    s: dict[str, Any],
    dis: list[RecipeCheck],
    skipped: list[dict[str, Any]],
    top_k: int,
    threshold: float,
    stack_set: tuple[str, ...],
) -> None:
    seconds = s["seconds"]
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
