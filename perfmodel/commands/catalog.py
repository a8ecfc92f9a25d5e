"""`perfmodel list`, `perfmodel show` and `perfmodel explain`: what is in the catalog and where each
number comes from. Values stay SI inside; tables convert at the edge (TFLOP/s, GB, TB/s, GB/s, us)."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from perfmodel.commands.common import emit_json
from perfmodel.errors import InputError
from perfmodel.render import cell_len, console, print_table, si, table
from perfmodel.specs.catalog import (
    flops_explanation,
    fmt,
    hardware_doc,
    hardware_row,
    model_doc,
    model_row,
)
from perfmodel.specs.hardware import HardwareSpec, load_hardware, resolve_hardware, whatif_fields
from perfmodel.specs.model import load_model
from perfmodel.specs.specfile import catalog_ids, display_path

# ---- list ---------------------------------------------------------------------------------------


@click.command("list")
@click.argument("kind", type=click.Choice(["hardware", "models", "stacks"]))
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def list_cmd(*, kind: str, as_json: bool) -> None:
    """List the catalog: hardware, models or software stacks, with key figures."""
    if kind == "stacks":
        from perfmodel.commands.stacks import list_stacks

        return list_stacks(as_json)
    if kind == "hardware":
        rows = [hardware_row(load_hardware(i)) for i in catalog_ids("hardware")]
        if as_json:
            return emit_json(rows)
        # ids are what a user copies: never cut (print_table: the id column keeps its width, the name wraps, and
        # a terminal too narrow for the rest continues in a second table); every header names its unit
        print_table(
            "Hardware, per GPU (dense peaks; link bandwidths one direction)",
            [
                "id",
                "name",
                "BF16 TFLOP/s",
                "FP8 TFLOP/s",
                "HBM GB",
                "HBM TB/s",
                "NVLink GPUs",
                "NVLink GB/s",
                "NIC Gbit/s",
                "TDP W",
            ],
            [
                [
                    r["id"],
                    escape(r["name"].split(" (")[0]),
                    f"{r['bf16_flops'] / 1e12:.0f}",
                    f"{r['fp8_flops'] / 1e12:.0f}" if r["fp8_flops"] else "-",
                    f"{r['hbm_bytes'] / 1e9:.0f}",
                    f"{r['hbm_bandwidth'] / 1e12:.2f}",
                    r["nvlink_domain"],
                    f"{r['nvlink_bandwidth'] / 1e9:.0f}",
                    f"{r['nic_bandwidth'] * 8 / 1e9:.0f}",
                    f"{r['tdp_w']:.0f}",
                ]
                for r in rows
            ],
            2,
            wrap=(1,),
        )
        return None
    rows = [model_row(load_model(i)) for i in catalog_ids("models")]
    if as_json:
        return emit_json(rows)
    print_table(
        "Models (params counted by perfmodel.specs.counts)",
        ["id", "name", "layers", "hidden", "total params", "active params", "MoE", "seq tokens"],
        [
            [
                r["id"],
                escape(r["name"].split(" (")[0]),
                r["layers"],
                r["hidden"],
                si(r["total_params"]),
                si(r["active_params"]),
                "yes" if r["moe"] else "no",
                r["seq_len"],
            ]
            for r in rows
        ],
        2,
        wrap=(1,),
    )
    return None


# ---- show ---------------------------------------------------------------------------------------


def field_table(title: str, rows: list[list[str]]) -> Table:
    """The field / value / source table of `show`: the field column is as wide as its longest name and
    never wraps or truncates (a dotted name cut to `efficiency.scale_out_collecti…` names nothing); the
    value and source columns wrap, folding a word longer than the column instead of cutting it."""
    t = table(title, ["field", "value", "source"], rows, 1)
    name = t.columns[0]
    name.no_wrap, name.min_width = True, max([len("field")] + [cell_len(r[0]) for r in rows])
    for col in t.columns[1:]:
        col.overflow = "fold"
    return t


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
        from perfmodel.commands.stacks import show_stack

        return show_stack(ref, sets, as_json)
    if kind == "hardware" and kernels:
        return show_kernels(resolve_hardware(ref, sets), as_json)
    if kind == "hardware":
        hw = resolve_hardware(ref, sets)
        doc = hardware_doc(hw)
        if as_json:
            return emit_json(doc)
        rows = doc["fields"]
        where = display_path(hw.path)
        head = (
            f"{hw.id} ({where}): {hw.display_name(changes=False)}"
            if hw.overridden  # what-if: the changes below
            else f"{hw.name}: {hw.id} ({where})"
        )
        console.print(
            field_table(
                escape(head),
                [
                    [
                        ("[bold yellow]* " if r["overridden"] else "")
                        + r["field"]
                        + ("[/]" if r["overridden"] else ""),
                        escape(f"{r['display']} {r['display_unit']}".strip()),
                        escape(r["source"]),
                    ]
                    for r in rows
                ],
            )
        )
        if hw.overridden:
            console.print(
                f"* overridden ({len(hw.overridden)} field{'s' if len(hw.overridden) > 1 else ''}) in this what-if "
                f"of {escape(hw.base)}: {escape(whatif_fields(hw, '='))}"
            )
        if hw.notes and hw.notes_of:  # written for the base: they may describe what the what-if changed
            console.print(
                f"notes of the base system {escape(hw.notes_of)} (as written for it, before the "
                f"overrides above): {escape(hw.notes)}"
            )
        elif hw.notes:
            console.print(f"notes: {escape(hw.notes)}")
        return None
    if sets:
        raise InputError("--set", sets[0], "only for `show hardware` and `show stack` (model specs take no overrides)")
    m = load_model(ref)
    s = seq or m.seq_len
    doc = model_doc(m, s)
    if as_json:
        return emit_json(doc)
    rows = doc["fields"]
    console.print(
        field_table(
            escape(f"{m.name}: {m.id} ({display_path(m.path)})"),
            [[r["field"], escape(f"{fmt(r['value'])} {r['unit']}".strip()), escape(r["source"])] for r in rows],
        )
    )
    p = doc["params"]
    prow = [["total (counted)", f"{p['total']:,}", ""], ["active (counted)", f"{p['active']:,}", ""]]
    if m.mtp_layers:
        prow.append(["MTP modules (not in total)", f"{p['mtp_total']:,}", ""])
    if "published_total" in p:
        prow.append(
            [
                "total (published)",
                f"{p['published_total']:,.0f}",
                f"gap {p['total_gap']:+.2%} (tolerance {p['total_tolerance']:.0%})",
            ]
        )
    if "published_active" in p:
        prow.append(
            [
                "active (published)",
                f"{p['published_active']:,.0f}",
                f"gap {p['active_gap']:+.2%} (tolerance {p['active_tolerance']:.0%})",
            ]
        )
    console.print(table("Parameters (perfmodel.specs.counts.param_counts)", ["", "params", "vs published"], prow, 1))
    frow = [[k.replace("_", " "), si(v, "FLOP")] for k, v in doc["flops_per_token"].items()]
    console.print(
        table(
            f"Model FLOPs per token, training fwd+bwd, seq {s} (attention convention)",
            ["convention", "FLOPs/token"],
            frow,
            1,
        )
    )
    if m.notes:
        console.print(f"notes: {escape(m.notes)}")
    return None


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
    if as_json:
        return emit_json(e)
    console.print(f"[bold]Model FLOPs per token (training, fwd + bwd, no recompute), {convention} attention[/bold]")
    console.print(
        "Sources: 6 N per token (Kaplan et al. 2020 §2.1; Narayanan et al. 2021 Eq. 3); attention scores "
        "3 x 2 heads (d_qk + d_v) S_eff per layer (Korthikanti et al. 2022 §4)\n"
    )
    console.print("General formula:")
    console.print(e["general_formula_pretty"], highlight=False, markup=False)
    console.print(
        "\nwith "
        + ", ".join(f"{k} = {v:,}" if isinstance(v, int) else f"{k} = {v:g}" for k, v in e["symbols"].items())
        + (f"  (+ {e['windowed_layers']} windowed layers with their own S_eff)" if "windowed_layers" in e else "")
    )
    console.print(
        f"\n{escape(m.name)}, as a function of the sequence length S{' (MTP included)' if m.mtp_layers else ''}:"
    )
    console.print(e["model_expression_pretty"], highlight=False, markup=False)
    console.print(f"\nAt S = {s}: {e['flops_per_token']:.4e} FLOPs per token ({si(e['flops_per_token'], 'FLOP')})")
    if m.mtp_layers:
        console.print(f"Without MTP: {e['flops_per_token_without_mtp']:.4e} FLOPs per token")
    return None


COMMANDS = [list_cmd, show_cmd, explain_cmd]


def show_kernels(hw: HardwareSpec, as_json: bool) -> None:
    """`show hardware ID --kernels`: the component tables of the part's generation (perfmodel/specs/kernels.py)."""
    from perfmodel.specs.kernels import report

    r = report(hw.id, hw.generation)
    if as_json:
        return emit_json({"id": hw.id, **r})
    console.print(
        f"[bold]{escape(hw.id)}: component tables of {escape(r['name'])}[/] (hardware/kernels/{r['generation']}.toml)"
    )
    for name, title in (("gemm", "GEMM efficiency shape"), ("grouped_gemm", "grouped GEMM (MoE experts) shape")):
        sec = r[name]
        print_table(f"{title}: {sec['table']}", ["parameter", "value", "range", "unit"], sec["rows"])
        console.print(
            f"  source: {escape(sec['source'])}"
            + (f" ({escape(r['borrowed'][name])})" if name in r["borrowed"] else "")
        )
    print_table("launch and host costs per kernel", ["cost", "us", "range us", "source"], r["launch"], wrap=(3,))
    if r["attention"]:
        print_table(
            "attention kernels, TFLOP/s by sequence length",
            ["kernel", "pass", "head dim", "mask", "TFLOP/s"],
            r["attention"],
            wrap=(4,),
        )
    if r["memory_bound"]:
        print_table(
            "memory-bound kernels, achieved GB/s on ideal bytes",
            ["kind", "implementation", "pass", "size", "GB/s", "GPU"],
            r["memory_bound"],
        )
    if r["collectives"]:
        print_table(
            "collectives, bus bandwidth by message size", ["op", "groups x GPUs", "busbw"], r["collectives"], wrap=(2,)
        )
    console.print(f"  collectives: {escape(r['collectives_source'])}")
    for name, why in r["borrowed"].items():
        console.print(f"  {name}: {escape(why)}")
