"""`perfmodel list stacks` and `perfmodel show stack ID|FILE`: the software-stack presets and where
each feature was read (perfmodel.specs.stack). Registered through `list` / `show` in commands/catalog.py."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from perfmodel.commands.common import emit_json
from perfmodel.render import console, print_table, table
from perfmodel.specs.catalog import KEY_FEATURES, stack_doc, stack_row
from perfmodel.specs.specfile import display_path
from perfmodel.specs.stack import apply_overrides, load_stack, stack_ids

SHORT = {
    "attention_kernel": "attention",
    "sequence_parallel": "SP",
    "tp_overlap": "TP overlap",
    "dp_grad_reduce_overlap": "DP overlap",
    "cuda_graphs": "CUDA graphs",
    "fsdp": "sharding",
    "grad_reduce_precision": "grad reduce",
    "fp8_recipe": "FP8",
    "moe_dispatcher": "MoE dispatch",
    "moe_a2a_overlap": "A2A overlap",
    "recompute": "recompute",
    "pipeline_schedule": "PP schedule",
}


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, (list, tuple)):
        return ",".join(v) or "-"
    return "-" if v is None else str(v)


def list_stacks(as_json: bool) -> None:
    specs = [load_stack(i) for i in stack_ids()]
    if as_json:
        return emit_json([stack_row(s) for s in specs])
    print_table(
        "Software stacks (stacks/*.toml): key features; `perfmodel show stack ID` for all with sources",
        ["id", "date", *(SHORT[f] for f in KEY_FEATURES), "unstated", "rules"],
        [
            [
                s.id,
                s.date,
                *(_cell(s.value(f)) for f in KEY_FEATURES),
                sum(o.startswith("unstated") for o in s.origin.values()),
                len(s.per_model),
            ]
            for s in specs
        ],
        2,
    )
    return None


def show_stack(ref: str, sets: tuple[str, ...], as_json: bool) -> None:
    s = apply_overrides(load_stack(ref), sets)
    doc = stack_doc(s)
    if as_json:
        return emit_json(doc)
    rows, rules = doc["features"], doc["per_model"]
    console.print(f"[bold]{escape(s.name)}[/bold]: {s.id} ({escape(display_path(s.path))})")
    console.print(
        f"family {s.family}"
        + (f", base {s.base} ({escape(s.base_source)})" if s.base else "")
        + (f"; the base's features are {s.base_basis}, not read for this release" if s.base_basis != "read" else "")
    )
    if s.read_only:
        console.print("read-only: the preset's secondary and inferred statements are switched off")
    ft = table(
        "Features (origin: stated / inherited:<base> / unstated:<family default> / --stack-set; basis: read / "
        "secondary / inferred)",
        ["feature", "value", "origin", "basis", "source"],
        [[r["feature"], escape(_cell(r["value"])), r["origin"], r["basis"], escape(r["source"])] for r in rows],
        5,
    )
    ft.columns[0].no_wrap = True
    ft.columns[4].overflow = "fold"  # a long file path folds, never cut
    console.print(ft)
    if rules:
        rt = table(
            "Per-model rules (applied in order to matching model / hardware / precision)",
            ["match", "feature", "value", "basis", "source"],
            [
                [
                    escape(",".join(f"{k}={v}" for k, v in r["match"].items())),
                    f,
                    escape(_cell(v)),
                    r["basis"][f],
                    escape(r["sources"][f]),
                ]
                for r in rules
                for f, v in r["values"].items()
            ],
            5,
        )
        rt.columns[4].overflow = "fold"
        console.print(rt)
    if s.notes:
        console.print(f"notes: {escape(s.notes)}")
    return None
