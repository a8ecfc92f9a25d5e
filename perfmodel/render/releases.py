"""`perfmodel releases`'s text: measured vs predicted per software release, and the rows."""

from __future__ import annotations

from rich.markup import escape

from perfmodel.analysis.releases import main_stacks, software_story
from perfmodel.render import console, print_table


def _hw_short(h: str) -> str:
    return h.replace("-nvl72", "").replace("-sxm", "").replace("-80gb", "")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def print_series(s: dict, show_rows: bool) -> None:
    f = {k: v for k, v in s["filters"].items() if v}
    title = "Release series" + (f" ({', '.join(f'{k}={v}' for k, v in f.items())})" if f else "")
    rows = []
    main = main_stacks(s)
    for r in s["releases"]:
        stack = main[r["release"]] + (f" +{len(r['stacks']) - 1}" if len(r["stacks"]) > 1 else "")
        like = (
            f"{r['like_for_like_speedup']:.3f}x ({r['like_for_like_pairs']})"
            if r["like_for_like_speedup"] is not None
            else "-"
        )
        rows.append(
            [
                r["release"],
                r["date"],
                r["rows"],
                " ".join(_hw_short(h) for h in r["hardware"]),
                stack,
                f"{r['measured_over_predicted']:.3f}",
                _pct(r["mape"]),
                like,
            ]
        )
    print_table(
        title + ": measured vs predicted tokens/s/GPU per software release, each with its own stack",
        ["release", "date", "rows", "hardware", "stack", "meas/pred", "MAPE", "vs prev (pairs)"],
        rows,
        2,
        wrap=(3,),
        left=(3, 4),
    )
    console.print(
        "stack: the preset of most of the release's rows (+N: other presets of its other frameworks; "
        "--rows or --json lists each row's). meas/pred: geometric mean of measured / predicted "
        "tokens/s/GPU, each row predicted with its own stack preset (as `validate`); MAPE of those "
        "predictions. vs prev: measured speedup over "
        "the previous release of the series that ran the same configuration (model-free)."
    )
    if show_rows:
        one_model = len({r["model"] for r in s["rows"]}) == 1
        one_hw = len({r["hardware"] for r in s["rows"]}) == 1
        dated = [
            (
                r["date"],
                [r["release"]]
                + ([] if one_model else [r["model"]])
                + ([] if one_hw else [_hw_short(r["hardware"])])
                + [
                    r["gpus"],
                    r["precision"],
                    r["layout"],
                    r["stack"],
                    f"{r['measured']:,.0f}",
                    _pct(r["measured_mfu_full"]),
                    _pct(r["source_mfu"]),
                    f"{r['predicted']:,.0f}",
                    _pct(r["mfu_full"]),
                ],
            )
            for r in s["rows"]
        ]
        rr = [row for _, row in sorted(dated, key=lambda d: d[0])]
        cols = (
            ["release"]
            + ([] if one_model else ["model"])
            + ([] if one_hw else ["hardware"])
            + ["gpus", "prec", "layout", "stack", "measured", "MFU", "source MFU", "predicted", "MFU"]
        )
        what = ", ".join(
            ([s["rows"][0]["model"]] if one_model else []) + ([s["rows"][0]["hardware"]] if one_hw else [])
        )
        print_table(
            "Rows" + (f" ({what})" if what else "") + ": tokens/s/GPU, and MFU with full attention as the "
            "DGXC recipes count it",
            cols,
            rr,
            3 - one_model - one_hw,
        )
        story = software_story(s)
        if story:
            console.print(story_text(*story))


def story_text(config: tuple, pts: list[tuple[str, str, float]]) -> str:
    model, hw, gpus, prec = config
    return (
        f"Software over time, {model} on {gpus} {hw}, {prec}: MFU (full attention) "
        + " -> ".join(f"{100 * m:.1f}% ({escape(lab)})" for _, lab, m in pts)
        + f": x{pts[-1][2] / pts[0][2]:.2f} on the same hardware"
    )
