"""Shared CLI plumbing: layout flags, --json output, rich tables."""
from __future__ import annotations

import json
import math
from typing import Any, Callable

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from ..hardware import ALIASES, HardwareSpec, apply_overrides, load_hardware, settable_fields

console = Console()


def to_jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(to_jsonable(obj), indent=2))


def table(title: str, columns: list[str], rows: list[list[Any]], justify_right_from: int = 1) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    for i, c in enumerate(columns):
        t.add_column(c, justify="right" if i >= justify_right_from else "left")
    for r in rows:
        t.add_row(*[str(x) for x in r])
    return t


def si(x: float, unit: str = "", digits: int = 3) -> str:
    """1.23e12 -> '1.23 T' + unit."""
    if x is None or not math.isfinite(x):
        return "-"
    for p, s in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= p:
            return f"{x / p:.{digits}g} {s}{unit}"
    return f"{x:.{digits}g} {unit}".rstrip()


def layout_options(f: Callable) -> Callable:
    """The layout flags shared by predict, cost, scaling and friends."""
    opts = [
        click.option("--model", "model_ref", required=True, help="catalog id or spec file (TOML / HF config.json)"),
        click.option("--hardware", "hardware_ref", required=True, help="catalog id or TOML spec file"),
        click.option("--gpus", type=int, required=True, help="number of GPUs"),
        click.option("--tp", type=int, default=1, show_default=True, help="tensor parallel (+ sequence parallel)"),
        click.option("--pp", type=int, default=1, show_default=True, help="pipeline parallel"),
        click.option("--vp", type=int, default=1, show_default=True, help="virtual stages per pipeline rank"),
        click.option("--cp", type=int, default=1, show_default=True, help="context parallel"),
        click.option("--ep", type=int, default=1, show_default=True, help="expert parallel"),
        click.option("--etp", type=int, default=None, help="expert tensor parallel [default: 1]"),
        click.option("--fsdp", is_flag=True, help="shard parameters, grads and optimizer over dp (ZeRO-3)"),
        click.option("--mbs", type=int, default=1, show_default=True, help="micro-batch size (sequences)"),
        click.option("--gbs", type=int, required=True, help="global batch (sequences)"),
        click.option("--seq", type=int, required=True, help="sequence length (tokens)"),
        click.option("--precision", default="bf16", show_default=True,
                     type=click.Choice(["fp16", "bf16", "fp8", "fp8-block", "mxfp8", "nvfp4"])),
        click.option("--recompute", default="none", show_default=True, type=click.Choice(["none", "selective", "full"])),
        click.option("--attention", "attention", default="causal", show_default=True,
                     type=click.Choice(["causal", "full"]), help="attention-FLOPs convention for MFU"),
        click.option("--routing", default="real", show_default=True, type=click.Choice(["real", "balanced"]),
                     help="MoE routing: real (load imbalance) or force-balanced"),
    ]
    if not any(p.name == "sets" for p in getattr(f, "__click_params__", [])):   # a command's own --set wins
        opts.append(click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE",
                                 help="what-if hardware: override a spec field (repeatable), e.g. "
                                      "scale_up.domain_size=144, nvlink_domain=144, nic_gbps=800, hbm_gb=288"))
    for o in reversed(opts):
        f = o(f)
    return f


def resolve_hardware(ref: str | HardwareSpec, sets: tuple[str, ...] | list[str] = ()) -> HardwareSpec:
    """--hardware REF plus its --set FIELD=VALUE overrides -> the effective HardwareSpec."""
    return apply_overrides(load_hardware(ref), list(sets))


def split_hardware_sets(sets: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """--set items -> (hardware overrides, the rest), for commands whose --set also takes other keys."""
    hw_keys = set(settable_fields()) | set(ALIASES)
    mine = [s for s in sets if s.partition("=")[0].strip() in hw_keys]
    return mine, [s for s in sets if s not in mine]
