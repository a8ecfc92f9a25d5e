"""`perfmodel predict`: one layout -> step time, throughput, MFU/HFU, memory per GPU and the breakdown.

A layout that does not fit in HBM is an input error (unless --ignore-memory): the message says by how
much it is over and which single change of the layout would fit, found by predicting those variants."""

from __future__ import annotations

import click
from rich.markup import escape

from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import gb, usable_note, warn_context
from perfmodel.analysis.explain import hidden_by
from perfmodel.analysis.predict_report import other_convention, predict_report
from perfmodel.commands.common import emit_json, layout_options, stack_options
from perfmodel.core import calibration
from perfmodel.core.predict import Options
from perfmodel.core.software import Software
from perfmodel.render import console, energy_rows, power_rows, stack_line, table
from perfmodel.specs.hardware import resolve_hardware, whatif_fields
from perfmodel.specs.layout import Layout, default_etp
from perfmodel.specs.model import load_model
from perfmodel.specs.specfile import display_path


@click.command("predict")
@layout_options
@stack_options
@click.option("--ignore-memory", is_flag=True, help="predict even when the layout does not fit in HBM")
@click.option(
    "--ops",
    "with_ops",
    is_flag=True,
    help="with --json: every op record of each layer kind, priced "
    "(GEMMs, attention, streams, collectives, saved tensors)",
)
@click.option(
    "--tokens",
    type=float,
    default=1e12,
    show_default=True,
    help="tokens to train, for the run's energy (drawn and rated; hyperscaler network power and PUE)",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def predict_cmd(
    *,
    model_ref: str,
    hardware_ref: str,
    gpus: int,
    tp: int,
    pp: int,
    vp: int,
    cp: int,
    ep: int,
    etp: int | None,
    fsdp: bool,
    mbs: int,
    gbs: int,
    seq: int,
    precision: str,
    recompute: str,
    attention: str,
    routing: str,
    sets: tuple[str, ...],
    ignore_memory: bool,
    tokens: float,
    as_json: bool,
    with_ops: bool = False,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Predict one training step of MODEL on HARDWARE with a parallel layout."""
    m, hw = load_model(model_ref), resolve_hardware(hardware_ref, sets)
    warn_context(m, seq)
    opts = Options(precision, attention, routing, calibration.constants(), stack, stack_set)  # type: ignore[arg-type]
    lay = Layout(
        gpus=gpus,
        gbs=gbs,
        seq=seq,
        tp=tp,
        pp=pp,
        vp=vp,
        cp=cp,
        ep=ep,
        etp=default_etp(m.is_moe, tp, cp, gpus // max(tp * pp * cp, 1), ep) if etp is None else etp,
        mbs=mbs,
        fsdp=fsdp,
        recompute=recompute,
    )  # type: ignore[arg-type]
    res = predict_report(m, hw, lay, opts, tokens=tokens, with_ops=with_ops and as_json, ignore_memory=ignore_memory)
    if as_json:
        return emit_json(res.doc)
    r, sw, b = res.doc, res.software, res.band
    mem, hbm, other = r["memory_bytes_per_gpu"], r["hbm_bytes"], other_convention(attention)
    L = r["layout"]
    console.print(
        f"[bold]{escape(m.name)}[/bold] on {L['gpus']} x {escape(hw.display_name(changes=False))}, {precision}, "
        f"seq {seq}, global batch {gbs}"
    )
    console.print(stack_line(opts, m, hw))
    if calibration.active_file() != calibration.shipped_file():
        console.print(f"calibration {escape(display_path(calibration.active_file()))} (perfmodel calibrate)")
    if hw.overridden:
        console.print("what-if hardware: " + escape(whatif_fields(hw)))
    console.print(
        f"layout: dp={L['dp']} tp={tp} pp={pp} vp={vp} cp={cp} ep={ep} etp={L['etp']} mbs={mbs}"
        f"{' fsdp' if fsdp else ''} recompute={recompute}"
    )
    summary = [
        ["step time", f"{r['step_time_s']:.3f} s ({_band(r, 'step_time_s', '.3f')} s)"],
        ["tokens/s per GPU", f"{r['tokens_per_s_per_gpu']:,.0f} ({_band(r, 'tokens_per_s_per_gpu', ',.0f')})"],
        [f"MFU ({attention} attention)", f"{r['mfu']:.1%} ({_band(r, 'mfu', '.1%')})"],
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
    return None


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


COMMANDS = [predict_cmd]
