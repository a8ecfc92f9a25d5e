"""`perfmodel predict`: one layout -> step time, throughput, MFU/HFU, memory per GPU and the breakdown.

A layout that does not fit in HBM is an input error (unless --ignore-memory): the message says by how
much it is over and which single change of the layout would fit, found by predicting those variants."""
from __future__ import annotations

from dataclasses import replace
import click
from rich.markup import escape

from .. import api, calibration, uncertainty
from ..counts import flops_per_token
from ..errors import InputError
from ..hardware import HardwareSpec, whatif_fields
from ..layout import Layout, default_etp
from ..model import ModelSpec, load_model
from .common import console, emit_json, layout_options, resolve_hardware, table
from ..profiles import get_profile
from .profiles import profile_option


def fitting_alternatives(m: ModelSpec, hw: HardwareSpec, lay: Layout, precision: str, attention: str,
                         routing: str, consts=None) -> list[str]:
    """Single changes of `lay` that are legal and fit in HBM, as CLI flags (checked by predicting each)."""
    cands: list[tuple[str, Layout]] = []
    if lay.recompute != "selective" and lay.recompute != "full":
        cands.append(("--recompute selective", replace(lay, recompute="selective")))
    if lay.recompute != "full":
        cands.append(("--recompute full", replace(lay, recompute="full")))
    if not lay.fsdp:
        cands.append(("--fsdp", replace(lay, fsdp=True)))
    for name in ("pp", "tp", "cp", "ep"):
        if name == "ep" and not m.is_moe:
            continue
        new = 2 * getattr(lay, name)
        cands.append((f"--{name} {new}", replace(lay, **{name: new})))
    if lay.mbs > 1:
        cands.append((f"--mbs {lay.mbs // 2}", replace(lay, mbs=lay.mbs // 2)))
    out = []
    for flag, cand in cands:
        try:
            p = api.predict(m, hw, cand, precision, attention, routing, consts)
        except InputError:
            continue                    # the change breaks a layout rule (divisibility, ...)
        if bool(p.fits[0]):
            out.append(flag)
    return out


def _gb(x: float) -> str:
    return f"{x / 1e9:.1f} GB"


@click.command("predict")
@layout_options
@profile_option
@click.option("--ignore-memory", is_flag=True, help="predict even when the layout does not fit in HBM")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def predict_cmd(model_ref: str, hardware_ref: str, gpus: int, tp: int, pp: int, vp: int, cp: int, ep: int,
                etp: int | None, fsdp: bool, mbs: int, gbs: int, seq: int, precision: str, recompute: str,
                attention: str, routing: str, sets: tuple[str, ...], ignore_memory: bool, as_json: bool,
                profile: str = "default") -> None:
    """Predict one training step of MODEL on HARDWARE with a parallel layout."""
    m, hw = load_model(model_ref), resolve_hardware(hardware_ref, sets)
    prof = get_profile(profile)             # software profile: overrides of the calibrated constants
    lay = Layout(gpus=gpus, gbs=gbs, seq=seq, tp=tp, pp=pp, vp=vp, cp=cp, ep=ep, 
                 etp=default_etp(m.is_moe, tp, cp, gpus // max(tp * pp * cp, 1), ep) if etp is None else etp,
                 mbs=mbs, fsdp=fsdp, recompute=recompute)  # type: ignore[arg-type]
    p = api.predict(m, hw, lay, precision, attention, routing, prof.consts)
    r = p.row(0)
    mem, hbm = r["memory_bytes_per_gpu"], r["hbm_bytes"]
    if not r["fits"] and not ignore_memory:
        alts = fitting_alternatives(m, hw, lay, precision, attention, routing, prof.consts)
        hint = (f"single changes that fit: {', '.join(alts)}" if alts
                else "no single change (recompute, fsdp, 2x pp/tp/cp/ep) fits: use more GPUs or a smaller micro-batch")
        raise InputError("layout", "memory",
                         f"needs {_gb(mem)} per GPU, {_gb(mem - hbm)} over the {_gb(hbm)} of HBM on {hw.id}; "
                         f"{hint} (or --ignore-memory)")
    # MFU in the other attention convention: MFU is proportional to model FLOPs per token
    other = "full" if attention == "causal" else "causal"
    mfu_other = r["mfu"] * float(flops_per_token(m, seq, other)) / r["model_flops_per_token"]  # type: ignore[arg-type]
    b = uncertainty.band_of(m, hw)          # 80% band from validation spread (perfmodel/uncertainty.py)
    lows = {"tokens_per_s_per_gpu": b.throughput(r["tokens_per_s_per_gpu"]), "step_time_s": b.inverse(r["step_time_s"]),
            "mfu": b.throughput(r["mfu"])}
    if as_json:
        return emit_json({"model": m.id, "hardware": hw.id, "precision": precision, "attention": attention,
                          "routing": routing, "hardware_overridden": list(hw.overridden), "profile": prof.name,
                          "calibration": str(calibration.active_file()), **r, f"mfu_{other}": mfu_other,
                          "memory_over_bytes": max(0.0, mem - hbm),
                          **{f"{k}_{end}": v[i] for k, v in lows.items() for i, end in enumerate(("low", "high"))},
                          "band": b.to_dict()})
    L = r["layout"]
    console.print(f"[bold]{escape(m.name)}[/bold] on {L['gpus']} x {escape(hw.display_name(changes=False))}, {precision}, "
                  f"seq {seq}, global batch {gbs}")
    if prof.overrides:
        console.print(f"software profile {prof.name}: " + ", ".join(f"{k} = {v:g}" for k, v in prof.overrides.items()))
    if calibration.active_file() != calibration.shipped_file():
        console.print(f"calibration {escape(str(calibration.active_file()))} (perfmodel calibrate)")
    if hw.overridden:
        console.print("what-if hardware: " + escape(whatif_fields(hw)))
    console.print(f"layout: dp={L['dp']} tp={tp} pp={pp} vp={vp} cp={cp} ep={ep} etp={L['etp']} mbs={mbs}"
                  f"{' fsdp' if fsdp else ''} recompute={recompute}")
    summary = [
        ["step time", f"{r['step_time_s']:.3f} s ({uncertainty.span(*lows['step_time_s'], '.3f')} s)"],
        ["tokens/s per GPU", f"{r['tokens_per_s_per_gpu']:,.0f} ({uncertainty.span(*lows['tokens_per_s_per_gpu'], ',.0f')})"],
        [f"MFU ({attention} attention)", f"{r['mfu']:.1%} ({uncertainty.span(*lows['mfu'], '.1%')})"],
        [f"MFU ({other} attention)", f"{mfu_other:.1%}"],
        ["HFU (incl. recompute)", f"{r['hfu']:.1%}"],
        ["model FLOPs per token", f"{r['model_flops_per_token']:.3e}"],
        ["memory per GPU", f"{_gb(mem)} of {_gb(hbm)} HBM: " + ("fits" if r["fits"] else "[red]DOES NOT FIT[/red]")],
    ]
    console.print(table("Prediction", ["", "value (80% band)"], summary, 1))
    console.print(f"80% band: measured/predicted {b.low:.2f}-{b.high:.2f}x on {b.group} validation runs "
                  f"({b.rows} calibration rows, {b.source})")
    parts = r["memory_parts_bytes"]
    console.print(table("Memory per GPU (first pipeline rank)", ["part", "GB", "% of HBM"],
                        [[k, f"{v / 1e9:.2f}", f"{v / hbm:.1%}"] for k, v in parts.items()]
                        + [["total", f"{mem / 1e9:.2f}", f"{mem / hbm:.1%}"]], 1))
    step = r["step_time_s"]
    rows = sorted(((k, v) for k, v in r["breakdown_s"].items() if v > 0), key=lambda kv: -kv[1])
    console.print(table("Step time breakdown", ["part", "seconds", "% of step"],
                        [[k, f"{v:.4f}", f"{v / step:.1%}"] for k, v in rows], 1))
    return None


COMMANDS = [predict_cmd]
