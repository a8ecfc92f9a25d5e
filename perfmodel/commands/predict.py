"""`perfmodel predict`: one layout -> step time, throughput, MFU/HFU, memory per GPU and the breakdown.

A layout that does not fit in HBM is an input error (unless --ignore-memory): the message says by how
much it is over and which single change of the layout would fit, found by predicting those variants."""

from __future__ import annotations

import click
from rich.markup import escape

from perfmodel import api
from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import domain_flags, domain_warning, gb, memory_error, usable_note, warn_context
from perfmodel.analysis.energy import step_of
from perfmodel.commands.common import emit_json, layout_options, stack_options
from perfmodel.core import calibration
from perfmodel.core.oprecords import op_records
from perfmodel.core.predict import Options, stack_info
from perfmodel.economics.job import job
from perfmodel.errors import warn
from perfmodel.render import console, energy_rows, power_rows, stack_line, table
from perfmodel.specs.counts import flops_per_token, param_counts
from perfmodel.specs.hardware import resolve_hardware, whatif_fields
from perfmodel.specs.layout import Layout, LayoutGrid, default_etp
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
    consts = calibration.constants()
    opts = Options(precision, attention, routing, consts, stack, stack_set)  # type: ignore[arg-type]
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
    p = api.predict(m, hw, lay, precision, attention, routing, consts, stack, stack_set)
    r = p.row(0)
    mem, hbm = r["memory_bytes_per_gpu"], r["hbm_bytes"]
    if not r["fits"] and not ignore_memory:
        raise memory_error(m, hw, lay, r, precision, attention, routing, consts, stack=stack, stack_set=stack_set)
    # MFU in the other attention convention: MFU is proportional to model FLOPs per token
    other = "full" if attention == "causal" else "causal"
    mfu_other = r["mfu"] * float(flops_per_token(m, seq, other)) / r["model_flops_per_token"]  # type: ignore[arg-type]
    from perfmodel.core.predict import software_of

    sw = software_of(m, hw, opts)
    lay_d = r["layout"]
    dom = domain_warning(hw, lay_d, sw.tp_overlap_scale_up)
    warn(dom)
    b = uncertainty.band_for(m, hw, stack, vp)  # 80% band from validation spread (perfmodel/analysis/uncertainty.py)
    lows = {
        "tokens_per_s_per_gpu": b.throughput(r["tokens_per_s_per_gpu"]),
        "step_time_s": b.inverse(r["step_time_s"]),
        "mfu": b.throughput(r["mfu"]),
    }
    # the step's power by phase and the run's energy, drawn and rated (economics/power.py, job.py)
    j = job(
        hw,
        float(param_counts(m).total),
        r["tokens_per_s_per_gpu"],
        tokens,
        gpus,
        require_price=False,
        step=step_of(p, 0, m, hw, opts),
    )
    if as_json:
        return emit_json(
            {
                "model": m.id,
                "hardware": hw.id,
                "precision": precision,
                "attention": attention,
                "routing": routing,
                "hardware_overridden": list(hw.overridden),
                **stack_info(opts, m, hw),
                "calibration": str(calibration.active_file()),
                **r,
                f"mfu_{other}": mfu_other,
                "memory_over_bytes": max(0.0, mem - hbm),
                "leaves_nvlink_domain": domain_flags(hw, lay_d),
                **{f"{k}_{end}": v[i] for k, v in lows.items() for i, end in enumerate(("low", "high"))},
                "band": b.to_dict(),
                **({"ops": op_records(m, hw, LayoutGrid.of(lay), opts)} if with_ops else {}),
                "power": j.power_dict(),
                "energy": {**j.energy_dict(), "tokens": tokens},
            }
        )
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
        ["step time", f"{r['step_time_s']:.3f} s ({uncertainty.span(*lows['step_time_s'], '.3f')} s)"],
        [
            "tokens/s per GPU",
            f"{r['tokens_per_s_per_gpu']:,.0f} ({uncertainty.span(*lows['tokens_per_s_per_gpu'], ',.0f')})",
        ],
        [f"MFU ({attention} attention)", f"{r['mfu']:.1%} ({uncertainty.span(*lows['mfu'], '.1%')})"],
        [f"MFU ({other} attention)", f"{mfu_other:.1%}"],
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
    b = {**r["breakdown_s"], **{f"{k}_raw": v for k, v in r.get("comm_raw_s", {}).items()}}
    print_breakdown(b, r["step_time_s"], consts, sw, domain_flags(hw, lay_d)["tp"])
    console.print(
        table("Power over the step (drawn by phase, economics/power.py)", ["", "value"], power_rows(j.power_dict()), 1)
    )
    console.print(
        table(
            f"Energy of {tokens:.3g} tokens, nominal (hyperscaler network power and PUE)",
            ["", "drawn", "rated (all-in rating x time)"],
            energy_rows(j.energy_dict()),
            1,
        )
    )
    return None


def memory_rank_label(r: dict, pp: int) -> str:
    """Which pipeline rank a memory table shows: the fullest one, named."""
    if pp <= 1:
        return "one pipeline rank"
    k = r["memory_fullest_rank"]
    name = "first" if k == 0 else "last" if k == pp - 1 else f"rank {k} of 0-{pp - 1}"
    return f"fullest pipeline rank: {name}"


# the stack switch and calibrated share that hide each communication kind (perfmodel/core/software.py)
_HIDDEN_BY = {
    "tp_comm": ("tp_overlap", "tp_share_bwd"),
    "cp_comm": ("cp ring", "cp_share"),
    "ep_comm": ("moe_a2a_overlap", "ep_share"),
    "dp_comm": ("dp overlap", "dp_rs_share"),
    "pp_comm": ("pp p2p", "pp_share"),
}


def overlap_text(term: str, consts, sw=None, tp_outside: bool = False) -> str:
    """Which overlap assumption hides a communication term: the stack's switch and the share of the raw time
    it may hide (the stack's feature times the calibrated constant), e.g. 'tp_overlap x0.96'. `tp_outside`:
    the TP group leaves the NVLink domain, where a userbuffers / AsyncTP overlap hides nothing and only the
    NCCL backward launches (tp_bwd_async) hide TP time."""
    if term not in _HIDDEN_BY:
        return "-"
    if term == "tp_comm" and tp_outside and sw is not None and sw.tp_overlap_scale_up:
        return "tp_bwd_async (NCCL)" if sw.tp_bwd_async else "-"
    switch, share = _HIDDEN_BY[term]
    v = getattr(sw, share, None) if sw is not None else None
    return f"{switch} x{v:.2f}" if v is not None else switch


def print_breakdown(b: dict, step: float, consts=None, sw=None, tp_outside: bool = False) -> None:
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
                    overlap_text(k, consts, sw, tp_outside) if k in raw and raw[k] > v else "",
                ]
                for k, v in rows
            ],
            1,
        )
    )


COMMANDS = [predict_cmd]
