"""`perfmodel predict`: one layout -> step time, throughput, MFU/HFU, memory per GPU and the breakdown.

A layout that does not fit in HBM is an input error (unless --ignore-memory): the message says by how
much it is over and which single change of the layout would fit, found by predicting those variants."""

from __future__ import annotations

import click

from perfmodel.analysis.checks import warn_context
from perfmodel.analysis.predict_report import predict_report
from perfmodel.commands.common import emit_json, layout_options, stack_options
from perfmodel.core import calibration
from perfmodel.core.predict import Options
from perfmodel.render.predict import print_prediction
from perfmodel.specs.hardware import resolve_hardware
from perfmodel.specs.layout import Layout, default_etp
from perfmodel.specs.model import load_model


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
    print_prediction(res, m, hw, lay, opts, tokens)
    return None


COMMANDS = [predict_cmd]
