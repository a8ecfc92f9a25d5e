"""`perfmodel check`'s text: what the log measured and, where the run is predicted, the gap and its causes."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from perfmodel.analysis.logcheck import shown_what_ifs, stack_groups
from perfmodel.render import console, print_table, table


def _gb(x: float | None) -> str:
    return "-" if not x else f"{x / 1e9:.1f} GB"


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _measured_rows(m: dict[str, Any], framework: str) -> list[list[str]]:
    """The measured column: step time, tokens/s/GPU, the framework's own TFLOP/s and MFU, peak memory."""
    step = _num(m["step_s"], ".3f")
    if m["step_p10_s"] is not None and m["used"] > 1:
        step += f" (p10-p90 {m['step_p10_s']:.3f}-{m['step_p90_s']:.3f})"
    mem = f"{_gb(m['mem_max_reserved_bytes'])} reserved, {_gb(m['mem_max_allocated_bytes'])} allocated"
    if m["mem_usage_fraction"]:
        mem += f"; device {m['mem_usage_fraction']:.1%} in use"
    return [
        ["step time (s)", step],
        ["tokens/s/GPU", _num(m["tokens_per_s_per_gpu"], ",.0f")],
        ["MFU (causal, perfmodel FLOPs)", _num(m["mfu_causal"], ".1%")],
        [f"TFLOP/s/GPU ({framework}'s own)", _num(m["tflops_per_gpu"], ".1f")],
        [f"MFU ({framework}'s own)", _num(m["mfu_framework"], ".1%")],
        ["peak memory per GPU", mem],
    ]


def _print_measured_only(out: dict[str, Any]) -> None:
    m = out["measured"]
    console.print(table("Measured", ["", "measured"], _measured_rows(m, out["framework"]), 1))
    for n in m["missing"]:
        console.print(f"[yellow]not measured:[/yellow] {escape(n)}")
    console.print(f"[bold]{escape(out['not_predicted'])}[/bold]")


def _print_stack(out: dict[str, Any]) -> None:
    console.print(escape(f"stack: {out['stack']} ({out['stack_name']}): {out['stack_why']}"))
    for label, items in stack_groups(out):
        console.print(escape(f"  {label}: " + "; ".join(items)))


def _print_predicted(out: dict[str, Any]) -> None:
    m, pr = out["measured"], out["predicted"]
    nmb = out["micro_batches"]
    console.print(
        f"model: {escape(out['model_name'])} ({escape(out['model_source'])}); {out['hardware']}, "
        f"{out['precision']}, {out['layout']['gpus']} GPUs, {out['layout_text']}, "
        f"gbs {out['layout']['gbs']}, seq {out['layout']['seq']}, {nmb} micro-batch{'es' if nmb != 1 else ''}"
    )
    _print_stack(out)
    rows = _measured_rows(m, out["framework"])
    predicted = [
        f"{pr['step_time_s']:.3f}",
        f"{pr['tokens_per_s_per_gpu']:,.0f}",
        f"{pr['mfu_causal']:.1%}",
        "-",
        "-",
        _gb(pr["memory_bytes_per_gpu"]) + ("" if pr["fits"] else " (does not fit)"),
    ]
    rows = [r + [p] for r, p in zip(rows, predicted)]
    console.print(table("Measured vs predicted", ["", "measured", "predicted"], rows, 1))
    ff = out["framework_flops"]
    if m["flops_per_token_framework"]:
        console.print(
            f"framework FLOPs/token {m['flops_per_token_framework']:.3e} ({escape(ff['source'])}); "
            f"perfmodel {ff['perfmodel_flops_per_token_causal']:.3e} causal, "
            f"{ff['perfmodel_flops_per_token_full']:.3e} full"
        )
    console.print(f"[bold]gap[/bold] (predicted - measured) / measured: {out['gap']:+.1%}; {out['verdict']}")
    print_table(
        "Likely causes, closest to the measurement first (each predicted)",
        ["what if", "tokens/s/GPU", "vs measured", "fits"],
        [
            [
                escape(w["cause"]),
                f"{w['tokens_per_s_per_gpu']:,.0f}",
                f"{w['tokens_per_s_per_gpu'] / m['tokens_per_s_per_gpu'] - 1:+.1%}",
                "yes" if w["fits"] else "no",
            ]
            for w in shown_what_ifs(out["what_ifs"])
        ],
        1,
        wrap=(0,),
    )
    print_table(
        "Predicted overheads, largest first",
        ["part", "s", "% of step", "tokens/s/GPU without"],
        [
            [
                escape(o["label"]),
                f"{o['seconds']:.3f}",
                f"{o['share']:.1%}",
                f"{o['tokens_per_s_per_gpu_without']:,.0f}",
            ]
            for o in out["overheads"][:8]
        ],
        1,
        wrap=(0,),
    )


def print_check(out: dict[str, Any]) -> None:
    head = f"[bold]{escape(out['log'])}[/bold]: {out['framework']} log, {out['lines']:,} lines"
    if out["status"] == "no_iteration":  # one line, however wide
        console.print(f"{head}: {escape(out['summary'])}", soft_wrap=True)
        return
    n = out["measured"]["intervals"]
    console.print(f"{head}, {n} interval{'s' if n != 1 else ''}; step time: {escape(out['measured']['rule'])}")
    for n in out["notes"]:
        console.print(f"[yellow]note:[/yellow] {escape(n)}")
    if out["status"] == "measured":
        _print_measured_only(out)
    else:
        _print_predicted(out)
    if out.get("csv"):
        console.print(f"wrote {escape(out['csv'])} (one row; `perfmodel validate {escape(out['csv'])}`)")
