"""`perfmodel validate`'s output: the error tables (overall, per set, per group, worst, unsupported, flagged) and
the --json document written row by row."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any

from rich.markup import escape

from perfmodel.analysis.validate import Report, RowResult
from perfmodel.jsonable import to_jsonable
from perfmodel.render import console, print_table, table

FLAGGED_SHOWN = 25


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def emit_json_rows(out: dict[str, Any], rows: list[RowResult]) -> None:
    """emit_json's document plus a last key "per_row", written row by row, one compact row per line:
    100,000 rows as one indented string would take ~20 s and ~1 GB of memory."""
    head = json.dumps(to_jsonable({**out, "per_row": []}), indent=2)
    assert head.endswith('"per_row": []\n}')
    write = sys.stdout.write
    write(head[: -len("[]\n}")] + "[")
    sep = "\n    "
    for r in rows:
        try:  # fields are plain Python values (asdict's deep copy: 3/4 of the time)
            line = json.dumps(vars(r), allow_nan=False)
        except ValueError:  # non-finite floats -> null, as emit_json
            line = json.dumps(to_jsonable(asdict(r)))
        write(sep + line)
        sep = ",\n    "
    write(("\n  ]" if rows else "]") + "\n}\n")


def print_unsupported(u: list[dict[str, Any]]) -> None:
    console.print(
        table(
            "Unsupported rows",
            ["run_id", "line", "reason"],
            [[escape(x["run_id"]), x["row"], escape(x["reason"])] for x in u],
            1,
        )
    )


def print_report(report: Report, path: str, several_sets: bool, by_key: str) -> None:
    s, worst, flagged, sets = report.summary(), report.worst(), report.flagged(), report.by_set()
    cal, held = s["calibration"], s["held_out"]
    console.print(
        f"[bold]{escape(path)}[/bold]: {s['rows']} rows given, {s['predicted']} predicted "
        f"({s['coverage']:.0%} coverage), {len(report.unsupported)} unsupported"
    )
    srows = [["all", s["predicted"], _pct(s["mape"]), _pct(s["median_ape"]), _pct(s["p90_ape"]), _pct(s["bias"])]]
    for name, st in (("calibration split", cal), ("held-out", held)):
        srows.append(
            [name, st["rows"], _pct(st["mape"]), _pct(st["median_ape"]), _pct(st["p90_ape"]), _pct(st["bias"])]
        )
    console.print(
        table(
            "Error of predicted tokens/s/GPU: (predicted - measured) / measured",
            ["rows", "n", "MAPE", "median APE", "p90 APE", "bias"],
            srows,
            1,
        )
    )
    if several_sets:
        print_table(
            "By measured set (source): tokens/s/GPU error; memory per GPU vs measured peak allocated",
            ["set", "n", "MAPE", "bias", "memory n", "memory MAPE", "memory bias", "stack presets"],
            [
                [
                    escape(k),
                    g["rows"],
                    _pct(g["mape"]),
                    _pct(g["bias"]),
                    g["memory"]["rows"] or "-",
                    _pct(g["memory"]["mape"]),
                    _pct(g["memory"]["bias"]),
                    escape(", ".join(sorted({r.stack for r in report.results if r.dataset == k}))),
                ]
                for k, g in sets.items()
            ],
            1,
            wrap=(7,),
            left=(7,),
        )
    elif s["memory"]["rows"]:
        m = s["memory"]
        console.print(
            f"memory per GPU vs measured peak allocated: {m['rows']} rows, MAPE {_pct(m['mape'])}, bias {_pct(m['bias'])}"
        )
    ro = s["read_only"]
    if ro["rows_marked"]:
        w, wo = ro["with"], ro["without"]
        console.print(
            f"{ro['rows_marked']} row(s) rest on secondary or inferred stack statements ({ro['by_basis']['secondary']} "
            f"secondary, {ro['by_basis']['inferred']} inferred; {ro['rows_moved']} move without them): MAPE "
            f"{_pct(w['mape'])} (bias {_pct(w['bias'])}) with them, {_pct(wo['mape'])} (bias {_pct(wo['bias'])}) "
            f"with the presets' read statements only (read_only and per-row not_read in --json)"
        )
    falls = s["stack_fallbacks"]
    if falls:
        console.print(
            f"[yellow]{len(falls)} row(s) matched no stack preset and run a guess[/yellow] (stack_fallbacks in --json), "
            f"e.g. {escape(falls[0]['run_id'])}: {escape(falls[0]['why'])}; name the preset in a `stack` column"
        )
    contra = s["memory_contradictions"]
    if contra:
        console.print(
            f"{len(contra)} run(s) predicted although perfmodel's memory model places them over HBM with any recompute "
            f"mode (they ran: memory_contradictions in --json), e.g. {escape(contra[0]['run_id'])}: "
            f"{escape(contra[0]['reason'])}"
        )
    if s["power"]["rows"]:
        pw = s["power"]
        console.print(
            f"node power (drawn model) vs measured: {pw['rows']} rows, MAPE {_pct(pw['mape'])}, bias {_pct(pw['bias'])}"
        )
        print_table(
            "Node power: predicted (drawn by phase) vs measured",
            ["run_id", "measured W", "predicted W", "error"],
            [
                [escape(r.run_id), f"{r.power_measured:,.0f}", f"{r.power_predicted:,.0f}", f"{r.power_error:+.1%}"]
                for r in report.results
                if r.power_error is not None
            ],
            1,
        )
    groups = report.by(by_key)
    console.print(
        table(
            f"By {by_key}",
            [by_key, "n", "MAPE", "median APE", "p90 APE", "bias"],
            [
                [escape(k), g["rows"], _pct(g["mape"]), _pct(g["median_ape"]), _pct(g["p90_ape"]), _pct(g["bias"])]
                for k, g in groups.items()
            ],
            1,
        )
    )
    # print_table never cuts a cell (a run id cut to "dgxc250504-…" names nothing); where the terminal is too
    # narrow it continues in a second table, so the numbers come first
    print_table(
        "Worst rows (tokens/s/GPU)",
        ["run_id", "error", "measured", "predicted", "model", "hardware", "GPUs", "precision"],
        [
            [
                escape(r.run_id),
                f"{r.error:+.1%}",
                f"{r.measured:,.0f}",
                f"{r.predicted:,.0f}",
                r.model,
                r.hardware,
                r.gpus,
                r.precision,
            ]
            for r in worst
        ],
        1,
        left=(4, 5, 7),
    )
    if report.unsupported:  # run ids never cut (print_table); the reason wraps
        print_table(
            "Unsupported rows",
            ["run_id", "line", "reason"],
            [[escape(u["run_id"]), u["row"], escape(u["reason"])] for u in report.unsupported],
            1,
            wrap=(2,),
            left=(2,),
        )
    if flagged:
        shown = sorted(flagged, key=lambda r: -abs(r.error))[:FLAGGED_SHOWN]
        more = f", the {FLAGGED_SHOWN} largest shown (all in --json)" if len(flagged) > FLAGGED_SHOWN else ""
        print_table(
            f"Flagged rows: {len(flagged)} far from their prediction{more}",
            ["run_id", "error", "verdict"],
            [[escape(r.run_id), f"{r.error:+.1%}", escape(r.verdict)] for r in shown],
            1,
            wrap=(2,),
            left=(2,),
        )
    for w in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")
