"""`perfmodel list`, `perfmodel show` and `perfmodel explain`: what is in the catalog and where each
number comes from. Values stay SI inside; tables convert at the edge (TFLOP/s, GB, TB/s, GB/s, us)."""

from __future__ import annotations

import click

from perfmodel.commands.common import emit_json
from perfmodel.errors import InputError
from perfmodel.render.catalog import (
    print_flops,
    print_hardware,
    print_hardware_list,
    print_kernels,
    print_model,
    print_model_list,
    print_stack,
    print_stack_list,
)
from perfmodel.specs.catalog import (
    flops_explanation,
    hardware_doc,
    hardware_row,
    model_doc,
    model_row,
    stack_doc,
    stack_row,
)
from perfmodel.specs.hardware import load_hardware, resolve_hardware
from perfmodel.specs.model import load_model
from perfmodel.specs.specfile import catalog_ids
from perfmodel.specs.stack import apply_overrides, load_stack, stack_ids

# ---- list ---------------------------------------------------------------------------------------


@click.command("list")
@click.argument("kind", type=click.Choice(["hardware", "models", "stacks"]))
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def list_cmd(*, kind: str, as_json: bool) -> None:
    """List the catalog: hardware, models or software stacks, with key figures."""
    if kind == "stacks":
        specs = [load_stack(i) for i in stack_ids()]
        return emit_json([stack_row(s) for s in specs]) if as_json else print_stack_list(specs)
    if kind == "hardware":
        rows = [hardware_row(load_hardware(i)) for i in catalog_ids("hardware")]
        return emit_json(rows) if as_json else print_hardware_list(rows)
    rows = [model_row(load_model(i)) for i in catalog_ids("models")]
    return emit_json(rows) if as_json else print_model_list(rows)


# ---- show ---------------------------------------------------------------------------------------


@click.command("show")
@click.argument("kind", type=click.Choice(["hardware", "model", "stack"]))
@click.argument("ref")
@click.option(
    "--seq", type=click.IntRange(min=1), default=None, help="sequence length for FLOPs [default: the model's]"
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="FIELD=VALUE",
    help="hardware: show the effective spec with this field overridden (repeatable), e.g. nvlink_domain=144; "
    "stack: a feature override, e.g. tp_overlap=none",
)
@click.option(
    "--kernels",
    is_flag=True,
    help="hardware: the measured component tables of its GPU generation (GEMM and grouped-GEMM shape, attention, "
    "memory-bound kernels, launch costs, collectives; hardware/kernels/), each with its source",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def show_cmd(*, kind: str, ref: str, seq: int | None, sets: tuple[str, ...], kernels: bool, as_json: bool) -> None:
    """Every field of a hardware, model or stack spec (catalog id or file), with units and sources."""
    if kernels and kind != "hardware":
        raise InputError("--kernels", kind, "only for `show hardware` (kernel tables belong to a GPU generation)")
    if kind == "stack":
        st = apply_overrides(load_stack(ref), sets)
        doc = stack_doc(st)
        return emit_json(doc) if as_json else print_stack(st, doc)
    if kind == "hardware" and kernels:  # the component tables of the part's generation (perfmodel/specs/kernels.py)
        from perfmodel.core.comm import measured_part
        from perfmodel.specs.kernels import report

        hw = resolve_hardware(ref, sets)
        part, latency = measured_part(hw)  # a what-if's tables are those of the part it derives from
        r = report(part, hw.generation, latency, hw.efficiency.collective_half_bytes)
        return emit_json({"id": hw.id, **r}) if as_json else print_kernels(hw, r)
    if kind == "hardware":
        hw = resolve_hardware(ref, sets)
        doc = hardware_doc(hw)
        return emit_json(doc) if as_json else print_hardware(hw, doc)
    if sets:
        raise InputError("--set", sets[0], "only for `show hardware` and `show stack` (model specs take no overrides)")
    m = load_model(ref)
    s = seq or m.seq_len
    doc = model_doc(m, s)
    return emit_json(doc) if as_json else print_model(m, doc, s)


# ---- explain ------------------------------------------------------------------------------------


@click.command("explain")
@click.argument("topic", type=click.Choice(["flops"]))
@click.argument("model_ref", metavar="MODEL")
@click.option("--seq", type=click.IntRange(min=1), default=None, help="sequence length [default: the model's]")
@click.option(
    "--attention",
    "convention",
    default="causal",
    show_default=True,
    type=click.Choice(["causal", "full"]),
    help="attention-FLOPs convention",
)
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def explain_cmd(*, topic: str, model_ref: str, seq: int | None, convention: str, as_json: bool) -> None:
    """Show how a count is derived: the general sympy formula, the model's expression of S, its value."""
    m = load_model(model_ref)
    s = seq or m.seq_len
    e = flops_explanation(m, s, convention)  # type: ignore[arg-type]
    return emit_json(e) if as_json else print_flops(m, e, s, convention)


COMMANDS = [list_cmd, show_cmd, explain_cmd]
