"""The catalog's text (`perfmodel list`, `show`, `explain`): tables of hardware, models and stacks, every field
of a spec with its source, a GPU generation's component tables, and how a FLOP count is derived."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from perfmodel.render import cell_len, console, print_table, si, table
from perfmodel.specs.catalog import KEY_FEATURES, fmt
from perfmodel.specs.hardware import HardwareSpec, whatif_fields
from perfmodel.specs.model import ModelSpec
from perfmodel.specs.specfile import display_path
from perfmodel.specs.stack import StackSpec

# ---- list ---------------------------------------------------------------------------------------


def print_hardware_list(rows: list[dict[str, Any]]) -> None:
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


def print_model_list(rows: list[dict[str, Any]]) -> None:
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


SHORT = {
    "attention_kernel": "attention",
    "sequence_parallel": "SP",
    "tp_overlap": "TP overlap",
    "dp_grad_reduce_overlap": "DP overlap",
    "cuda_graphs": "CUDA graphs",
    "fsdp": "sharding",
    "grad_reduce_precision": "grad reduce",
    "fp8_recipe": "FP8",
    "moe_dispatcher": "MoE dispatch",
    "moe_a2a_overlap": "A2A overlap",
    "recompute": "recompute",
    "pipeline_schedule": "PP schedule",
}


def _cell(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, (list, tuple)):
        return ",".join(v) or "-"
    return "-" if v is None else str(v)


def print_stack_list(specs: list[StackSpec]) -> None:
    print_table(
        "Software stacks (stacks/*.toml): key features; `perfmodel show stack ID` for all with sources",
        ["id", "date", *(SHORT[f] for f in KEY_FEATURES), "unstated", "rules"],
        [
            [
                s.id,
                s.date,
                *(_cell(s.value(f)) for f in KEY_FEATURES),
                sum(o.startswith("unstated") for o in s.origin.values()),
                len(s.per_model),
            ]
            for s in specs
        ],
        2,
    )


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


def print_hardware(hw: HardwareSpec, doc: dict[str, Any]) -> None:
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
                    ("[bold yellow]* " if r["overridden"] else "") + r["field"] + ("[/]" if r["overridden"] else ""),
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


def print_model(m: ModelSpec, doc: dict[str, Any], s: int) -> None:
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


def print_stack(s: StackSpec, doc: dict[str, Any]) -> None:
    rows, rules = doc["features"], doc["per_model"]
    console.print(f"[bold]{escape(s.name)}[/bold]: {s.id} ({escape(display_path(s.path))})")
    console.print(
        f"family {s.family}"
        + (f", base {s.base} ({escape(s.base_source)})" if s.base else "")
        + (f"; the base's features are {s.base_basis}, not read for this release" if s.base_basis != "read" else "")
    )
    if s.read_only:
        console.print("read-only: the preset's secondary and inferred statements are switched off")
    ft = table(
        "Features (origin: stated / inherited:<base> / unstated:<family default> / --stack-set; basis: read / "
        "secondary / inferred)",
        ["feature", "value", "origin", "basis", "source"],
        [[r["feature"], escape(_cell(r["value"])), r["origin"], r["basis"], escape(r["source"])] for r in rows],
        5,
    )
    ft.columns[0].no_wrap = True
    ft.columns[4].overflow = "fold"  # a long file path folds, never cut
    console.print(ft)
    if rules:
        rt = table(
            "Per-model rules (applied in order to matching model / hardware / precision)",
            ["match", "feature", "value", "basis", "source"],
            [
                [
                    escape(",".join(f"{k}={v}" for k, v in r["match"].items())),
                    f,
                    escape(_cell(v)),
                    r["basis"][f],
                    escape(r["sources"][f]),
                ]
                for r in rules
                for f, v in r["values"].items()
            ],
            5,
        )
        rt.columns[4].overflow = "fold"
        console.print(rt)
    if s.notes:
        console.print(f"notes: {escape(s.notes)}")


def print_kernels(hw: HardwareSpec, r: dict[str, Any]) -> None:
    """`show hardware ID --kernels`: the component tables of the part's generation (perfmodel/specs/kernels.py)."""
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
    if r.get("collective_ramp"):
        print_table(
            "NVLink collectives' bandwidth ramp, busbw = plateau x b / (b + b_half) (the cost model's)",
            ["parameter", "value", "range", "unit", "mean |ln(model / measured)| without -> with"],
            [r["collective_ramp"]],
        )
    console.print(f"  collectives: {escape(r['collectives_source'])}")
    for name, why in r["borrowed"].items():
        console.print(f"  {name}: {escape(why)}")


# ---- explain ------------------------------------------------------------------------------------


def print_flops(m: ModelSpec, e: dict[str, Any], s: int, convention: str) -> None:
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
