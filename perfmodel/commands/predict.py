"""`perfmodel predict`: one layout -> step time, throughput, MFU/HFU, memory per GPU and the breakdown.

A layout that does not fit in HBM is an input error (unless --ignore-memory): the message says by how
much it is over and which single change of the layout would fit, found by predicting those variants."""

from __future__ import annotations

import click

from perfmodel.analysis.predict_report import predict_report
from perfmodel.commands.common import LayoutFlags, emit_json, layout_options, stack_options
from perfmodel.render.predict import print_prediction
from perfmodel.specs.layout import default_etp


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
    flags: LayoutFlags,
    sets: tuple[str, ...],
    ignore_memory: bool,
    tokens: float,
    as_json: bool,
    with_ops: bool = False,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> None:
    """Predict one training step of MODEL on HARDWARE with a parallel layout."""
    m, hw = flags.specs(sets)
    opts = flags.options(stack, stack_set)
    f = flags
    lay = f.layout(default_etp(m.is_moe, f.tp, f.cp, f.gpus // max(f.tp * f.pp * f.cp, 1), f.ep))
    res = predict_report(m, hw, lay, opts, tokens=tokens, with_ops=with_ops and as_json, ignore_memory=ignore_memory)
    if as_json:
        return emit_json(res.doc)
    print_prediction(res, m, hw, lay, opts, tokens)
    return None


COMMANDS = [predict_cmd]
