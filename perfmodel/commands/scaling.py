"""`perfmodel scaling`: weak or strong scaling of one layout (or the planner's best per size) over a list
of GPU counts, with cost, energy, what grows, and goodput (perfmodel/scaling.py)."""
from __future__ import annotations

from typing import Any

import click
from rich import box
from rich.markup import escape

from ..layout import Layout
from ..model import load_model
from ..predict import Options
from ..profiles import get_profile
from ..scaling import GROWS, MODES, ScalingResult, load_runs, parse_gpu_list, plot, scaling, summary_growth
from .common import console, emit_json, resolve_hardware, table
from .profiles import profile_option

PRECISIONS = ["fp16", "bf16", "fp8", "fp8-block", "mxfp8", "nvfp4"]


def layout_text(L: dict[str, Any] | None) -> str:
    if not L:
        return "-"
    parts = [f"{k}{L[k]}" for k in ("tp", "pp", "vp", "cp", "ep", "etp", "dp") if L[k] != 1 or k in ("tp", "pp", "dp")]
    if L["mbs"] != 1:
        parts.append(f"mbs{L['mbs']}")
    if L["fsdp"]:
        parts.append("fsdp")
    if L["recompute"] != "none":
        parts.append(f"rc-{L['recompute']}")
    return " ".join(parts)


def _pct(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{100 * x:.{digits}f}%"


def render(res: ScalingResult) -> None:
    how = "planner's best layout per size" if res.search else "fixed layout"
    batch = ("per-GPU batch held: global batch grows with the GPU count" if res.mode == "weak"
             else "global batch held")
    console.print(f"[bold]{res.model}[/] on {res.hardware}, {res.mode} scaling ({batch}), {res.precision}, "
                  f"seq {res.seq}, global batch {res.base_gbs} at {res.base_gpus} GPUs, {how}"
                  + (f", profile {res.profile}" if res.profile != "default" else ""))
    rows = []
    for p in res.points:
        if not p.ok:
            rows.append([f"{p.gpus:,}", p.gbs if p.gbs is not None else "-", f"[red]{escape(p.reason)}[/red]"]
                        + [""] * 11)
            continue
        step = p.step_time_s or 1.0
        share = lambda k: f"{100 * p.grows_s[k] / step:.1f}%"
        rows.append([f"{p.gpus:,}", f"{p.gbs:,}", layout_text(p.layout) + ("" if p.fits else " [red](no fit)[/red]"),
                     f"{p.step_time_s:.3g}", f"{p.tokens_per_s_per_gpu:,.0f}", _pct(p.mfu),
                     _pct(p.scaling_efficiency, 0), share("dp_comm"), share("pipeline_bubble"), share("ep_comm"),
                     _pct(p.goodput_fraction), f"{p.goodput_tokens_per_s_per_gpu:,.0f}",
                     f"{p.usd_per_million_tokens:.3f}" if p.usd_per_million_tokens is not None else "-",
                     f"{p.joules_per_token:.3g}"])
    cols = ["GPUs", "gbs", "layout", "step s", "tok/s/GPU", "MFU", "scal.", "DP", "bubble", "a2a",
            "goodput", "×goodput", "$/Mtok", "J/tok"]
    if all(not p.ok or p.grows_s["ep_comm"] == 0 for p in res.points):       # dense model: no all-to-all
        cols, rows = cols[:9] + cols[10:], [r[:9] + r[10:] for r in rows]
    t = table("Per size", cols, rows, 3)
    t.box, t.pad_edge, t.collapse_padding = box.SIMPLE_HEAD, False, True
    t.caption = (f"MFU: {res.attention} attention. DP, bubble, a2a: exposed data-parallel communication, pipeline "
                 "bubble and MoE all-to-all as a share of the step. ×goodput: tok/s/GPU x goodput.")
    t.caption_justify = "left"
    for i, c in enumerate(t.columns):         # numbers never truncate; the layout column wraps instead
        if i != 2:
            c.min_width = max([len(str(c.header))] + [len(str(r[i])) for r in rows if len(r) > i and "[red]" not in str(r[i])])
            c.no_wrap = True
    console.print(t)
    meas = [(p, m) for p in res.points for m in p.measured]
    if meas:
        console.print(table(f"Measured (validation/runs.csv) vs predicted; MFU ({res.attention} attention) recomputed "
                            "from tokens/s/GPU, source MFU as published",
                            ["GPUs", "release", "measured tok/s/GPU", "predicted", "error", "measured MFU",
                             "predicted MFU", "source MFU"],
                            [[f"{p.gpus:,}", escape(m["software"].split(" (")[0]), f"{m['tokens_per_s_per_gpu']:,.0f}",
                              f"{p.tokens_per_s_per_gpu:,.0f}", f"{100 * m['error']:+.1f}%", _pct(m["mfu"]),
                              _pct(p.mfu), _pct(m["source_mfu"])] for p, m in meas], 2))
    g = summary_growth(res)
    if g:
        grow = "; ".join(f"{k.replace('_', ' ')} {g[k]['from_s'] * 1e3:.3g} -> {g[k]['to_s'] * 1e3:.3g} ms "
                         f"({100 * g[k]['from_share']:.1f}% -> {100 * g[k]['to_share']:.1f}%)" for k in GROWS
                         if g[k]["from_s"] > 0 or g[k]["to_s"] > 0)
        console.print(f"{g['from_gpus']:,} -> {g['to_gpus']:,} GPUs: tokens/s/GPU x{g['tokens_per_s_per_gpu_ratio']:.3f}; "
                      f"{grow}; goodput {_pct(g['goodput']['from'])} -> {_pct(g['goodput']['to'])}")
    if res.usd_per_gpu_hour is None:
        console.print(f"$/1M tokens: '-' because {res.hardware} has no sourced price ([cost] in its hardware file); "
                      "J/token needs only its power")
    else:
        console.print(f"$/1M tokens at ${res.usd_per_gpu_hour:.3f} per GPU-hour (perfmodel tco), before reliability; "
                      "goodput: interruptions grow with the GPU count (perfmodel cost explains the reliability model)")


@click.command("scaling")
@click.option("--model", "model_ref", required=True, help="catalog id or spec file (TOML / HF config.json)")
@click.option("--hardware", "hardware_ref", required=True, help="catalog id or TOML spec file")
@click.option("--gpus", "gpus_text", required=True,
              help="GPU counts: 64,128,256 or 64,128,...,16384 (continues the ratio up to the last number)")
@click.option("--mode", type=click.Choice(list(MODES)), default="weak", show_default=True,
              help="weak: hold the per-GPU batch (global batch grows); strong: hold the global batch")
@click.option("--gbs", type=int, required=True, help="global batch (sequences) at the first (smallest) GPU count")
@click.option("--seq", type=int, required=True, help="sequence length (tokens)")
@click.option("--search", "use_search", is_flag=True, help="run the planner at every size instead of a fixed layout")
@click.option("--tp", type=int, default=1, show_default=True, help="tensor parallel (+ sequence parallel)")
@click.option("--pp", type=int, default=1, show_default=True, help="pipeline parallel")
@click.option("--vp", type=int, default=1, show_default=True, help="virtual stages per pipeline rank")
@click.option("--cp", type=int, default=1, show_default=True, help="context parallel")
@click.option("--ep", type=int, default=1, show_default=True, help="expert parallel")
@click.option("--etp", type=int, default=1, show_default=True, help="expert tensor parallel")
@click.option("--fsdp", is_flag=True, help="shard parameters, grads and optimizer over dp (ZeRO-3)")
@click.option("--mbs", type=int, default=1, show_default=True, help="micro-batch size (sequences)")
@click.option("--precision", default="bf16", show_default=True, type=click.Choice(PRECISIONS))
@click.option("--recompute", default="none", show_default=True, type=click.Choice(["none", "selective", "full"]))
@click.option("--attention", default="causal", show_default=True, type=click.Choice(["causal", "full"]),
              help="attention-FLOPs convention for MFU (DGXC recipes count full)")
@click.option("--routing", default="real", show_default=True, type=click.Choice(["real", "balanced"]),
              help="MoE routing: real (load imbalance) or force-balanced")
@click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE", help="what-if hardware field (repeatable)")
@profile_option
@click.option("--buyer", default="hyperscaler", show_default=True,
              type=click.Choice(["hyperscaler", "neocloud-giant", "emerging-neocloud"]), help="cost assumptions")
@click.option("--measured/--no-measured", default=True, show_default=True,
              help="attach the measured runs of validation/runs.csv with the same model, hardware, precision, "
                   "batch rule and layout")
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="write a PNG: tokens/s/GPU and MFU vs GPUs (log x)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def command(model_ref: str, hardware_ref: str, gpus_text: str, mode: str, gbs: int, seq: int, use_search: bool,
            tp: int, pp: int, vp: int, cp: int, ep: int, etp: int, fsdp: bool, mbs: int, precision: str,
            recompute: str, attention: str, routing: str, sets: tuple[str, ...], profile: str, buyer: str,
            measured: bool, plot_path: str | None, as_json: bool) -> None:
    """Weak or strong scaling over GPU counts: step time, tokens/s/GPU, MFU, $/1M tokens, J/token, what grows
    (DP communication, bubble, all-to-all) and goodput (failures dominate at 100,000 GPUs)."""
    m, hw = load_model(model_ref), resolve_hardware(hardware_ref, sets)
    gpus = parse_gpu_list(gpus_text)
    prof = get_profile(profile)
    opts = Options(precision, attention, routing, prof.consts)  # type: ignore[arg-type]
    base = Layout(gpus=gpus[0], gbs=gbs, seq=seq, tp=tp, pp=pp, vp=vp, cp=cp, ep=ep, etp=etp, mbs=mbs, fsdp=fsdp,
                  recompute=recompute)  # type: ignore[arg-type]
    res = scaling(m, hw, gpus, mode, base, opts, search=use_search, buyer=buyer, profile=prof.name,
                  measured=load_runs() if measured and not hw.overridden else None)
    if plot_path:
        plot(res, plot_path)
    if as_json:
        d = res.to_dict()
        d["growth"] = summary_growth(res)
        if plot_path:
            d["plot"] = plot_path
        return emit_json(d)
    render(res)
    if plot_path:
        console.print(f"plot written to {escape(plot_path)}")
    return None


COMMANDS = [command]
