"""`perfmodel predict`'s text: the prediction, memory per GPU, the step-time breakdown, power and energy."""

from __future__ import annotations

from rich.markup import escape

from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import gb, usable_note
from perfmodel.analysis.explain import hidden_by
from perfmodel.analysis.predict_report import OneLayout, other_convention
from perfmodel.core import calibration
from perfmodel.core.predict import Options
from perfmodel.core.software import Software
from perfmodel.render import console, energy_rows, power_rows, stack_line, table
from perfmodel.specs.hardware import HardwareSpec, whatif_fields
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import ModelSpec
from perfmodel.specs.specfile import display_path


def print_prediction(res: OneLayout, m: ModelSpec, hw: HardwareSpec, lay: Layout, opts: Options, tokens: float) -> None:
    r, sw, b = res.doc, res.software, res.band
    mem, hbm, other = r["memory_bytes_per_gpu"], r["hbm_bytes"], other_convention(opts.attention)
    L, pp = r["layout"], lay.pp
    console.print(
        f"[bold]{escape(m.name)}[/bold] on {L['gpus']} x {escape(hw.display_name(changes=False))}, {opts.precision}, "
        f"seq {lay.seq}, global batch {lay.gbs}"
    )
    console.print(stack_line(opts, m, hw))
    if calibration.active_file() != calibration.shipped_file():
        console.print(f"calibration {escape(display_path(calibration.active_file()))} (perfmodel calibrate)")
    if hw.overridden:
        console.print("what-if hardware: " + escape(whatif_fields(hw)))
    console.print(
        f"layout: dp={L['dp']} tp={lay.tp} pp={pp} vp={lay.vp} cp={lay.cp} ep={lay.ep} etp={L['etp']} mbs={lay.mbs}"
        f"{' fsdp' if lay.fsdp else ''} recompute={lay.recompute}"
    )
    summary = [
        ["step time", f"{r['step_time_s']:.3f} s ({_band(r, 'step_time_s', '.3f')} s)"],
        ["tokens/s per GPU", f"{r['tokens_per_s_per_gpu']:,.0f} ({_band(r, 'tokens_per_s_per_gpu', ',.0f')})"],
        [f"MFU ({opts.attention} attention)", f"{r['mfu']:.1%} ({_band(r, 'mfu', '.1%')})"],
        [f"MFU ({other} attention)", f"{r[f'mfu_{other}']:.1%}"],
        ["HFU (incl. recompute)", f"{r['hfu']:.1%}"],
        ["model FLOPs per token", f"{r['model_flops_per_token']:.3e}"],
        [
            "memory per GPU",
            f"{gb(mem)} of {gb(hbm)} usable{usable_note(hw)}: " + ("fits" if r["fits"] else "[red]DOES NOT FIT[/red]"),
        ],
    ]
    console.print(table("Prediction", ["", "value (80% band)"], summary, 1))
    console.print(escape(b.line()))
    parts = r["memory_parts_bytes"]
    console.print(
        table(
            f"Memory per GPU ({memory_rank_label(r, pp)})",
            ["part", "GB", "% of HBM"],
            [[k, f"{v / 1e9:.2f}", f"{v / hbm:.1%}"] for k, v in parts.items()]
            + [["total", f"{mem / 1e9:.2f}", f"{mem / hbm:.1%}"]],
            1,
        )
    )
    if pp > 1:
        st = r["memory_stages_bytes"]
        console.print(
            f"by pipeline rank: first {gb(st['first'])}, fullest (rank {r['memory_fullest_rank']}) "
            f"{gb(st['fullest'])}, last (rank {pp - 1}) {gb(st['last'])}"
        )
    terms = {**r["breakdown_s"], **{f"{k}_raw": v for k, v in r.get("comm_raw_s", {}).items()}}
    print_breakdown(terms, r["step_time_s"], sw, r["leaves_nvlink_domain"]["tp"])
    console.print(
        table("Power over the step (drawn by phase, economics/power.py)", ["", "value"], power_rows(r["power"]), 1)
    )
    console.print(
        table(
            f"Energy of {tokens:.3g} tokens, nominal (hyperscaler network power and PUE)",
            ["", "drawn", "rated (all-in rating x time)"],
            energy_rows(r["energy"]),
            1,
        )
    )


def _band(r: dict, key: str, fmt: str) -> str:
    """The 80% band of a predicted figure, e.g. '1,050-1,230'."""
    return uncertainty.span(r[f"{key}_low"], r[f"{key}_high"], fmt)


def memory_rank_label(r: dict, pp: int) -> str:
    """Which pipeline rank a memory table shows: the fullest one, named."""
    if pp <= 1:
        return "one pipeline rank"
    k = r["memory_fullest_rank"]
    name = "first" if k == 0 else "last" if k == pp - 1 else f"rank {k} of 0-{pp - 1}"
    return f"fullest pipeline rank: {name}"


def print_breakdown(b: dict, step: float, sw: Software | None = None, tp_outside: bool = False) -> None:
    """The step-time breakdown. Where the prediction carries a communication's raw time (key `<term>_raw`, before
    overlap), it is shown beside the exposed time, with the overlap assumption that hides the rest; otherwise
    the exposed times alone."""
    raw = {k[:-4]: v for k, v in b.items() if k.endswith("_raw")}
    rows = sorted(
        ((k, v) for k, v in b.items() if not k.endswith("_raw") and (v > 0 or raw.get(k, 0) > 0)), key=lambda kv: -kv[1]
    )
    if not raw:
        console.print(
            table(
                "Step time breakdown (communication: exposed time)",
                ["part", "seconds", "% of step"],
                [[k, f"{v:.4f}", f"{v / step:.1%}"] for k, v in rows],
                1,
            )
        )
        return
    console.print(
        table(
            "Step time breakdown",
            ["part", "exposed s", "% of step", "raw s", "hidden by"],
            [
                [
                    k,
                    f"{v:.4f}",
                    f"{v / step:.1%}",
                    f"{raw[k]:.4f}" if k in raw else "",
                    hidden_by(k, sw, tp_outside) if k in raw and raw[k] > v else "",
                ]
                for k, v in rows
            ],
            1,
        )
    )
