"""A self-contained HTML report: index.html (inline CSS, no external resources) plus its PNG figures.

Sections (every number comes from the cost model, the planner, validation or the economics; nothing is
typed in by hand):
1. step-time breakdown of the planner's top layouts (stacked bars, predict.py breakdown_s);
2. a roofline (Williams et al. 2009) with the model's main per-GPU ops placed on it: arithmetic intensity
   vs the FLOP/s the cost model achieves for them (compute.py gemm_time / attention_time / memory_time);
3. the planner's top layouts (search.py) as a table;
4. weak-scaling curves of the best layout (scaling.py);
5. predicted vs measured tokens/s/GPU of every validation row (validate.py), by hardware, log-log, with
   the y = x line and a +-25% band;
6. H100 vs GB200 NVL72: best layout each, tokens/s/GPU, $/GPU-hour, $ per 1M tokens, utility J/token by the
   drawn and the rated method, goodput with its band and perf per TCO (economics/; the method of cost_report.md);
7. power over the step of the best layout: the cluster's draw through the pipeline, the step's end and a
   checkpoint write, beside the rated power (economics/power.py).
"""

from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel.analysis.energy import step_of
from perfmodel.analysis.scaling import default_runs_csv, load_runs
from perfmodel.analysis.scaling import plot as scaling_plot
from perfmodel.analysis.scaling import scaling as run_scaling
from perfmodel.analysis.search import search
from perfmodel.core.calibration import constants
from perfmodel.core.compute import BF16, attention_time, gemm_peak_and_eff, gemm_time, memory_time
from perfmodel.core.ops import Gemm
from perfmodel.core.predict import Options, Prediction
from perfmodel.economics.job import job
from perfmodel.errors import InputError
from perfmodel.specs.counts import param_counts
from perfmodel.specs.hardware import HardwareSpec, apply_overrides, load_hardware
from perfmodel.specs.layout import Layout, layout_text
from perfmodel.specs.model import ModelSpec, load_model

# one colour per breakdown term, stable across figures (matplotlib tab20)
TERMS = (
    "gemm",
    "attention",
    "memory_bound",
    "recompute",
    "embedding_head_mtp",
    "tp_comm",
    "cp_comm",
    "ep_comm",
    "pp_comm",
    "stage_imbalance",
    "pipeline_bubble",
    "dp_comm",
    "optimizer",
    "step_overhead",
)


@dataclass
class ReportConfig:
    model: str = "llama3-70b"
    hardware: str = "h100-sxm"
    hardware_sets: tuple[str, ...] = ()  # what-if --set FIELD=VALUE on `hardware` (hardware.apply_overrides)
    gpus: int = 64
    gbs: int = 128
    seq: int = 8192
    precision: str = "bf16"
    compare: tuple[str, ...] = ("h100-sxm", "gb200-nvl72")
    top: int = 5
    scaling_max_gpus: int = 16384
    validation_csv: str | None = None
    stack: str | None = None  # software stack preset id or file (None: default), --stack
    stack_set: tuple[str, ...] = ()  # its feature=value overrides, --stack-set
    buyer: str = "hyperscaler"
    tokens: float = 1e12
    spares: str = "charged"  # in-rack hot spares charged to training, or "excluded" (--spares)


@dataclass
class Report:
    out: Path
    files: list[str] = field(default_factory=list)
    seconds: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ---- 1. breakdown bars -----------------------------------------------------------------------------


def breakdown_png(p: Prediction, labels: list[str], path: Path, title: str) -> None:
    plt = _plt()
    n = p.layouts.n
    fig, ax = plt.subplots(figsize=(10, 0.55 * n + 1.8))
    cmap = plt.get_cmap("tab20")
    left = np.zeros(n)
    y = np.arange(n)[::-1]
    for j, k in enumerate(TERMS):
        v = np.asarray(p.breakdown_s.get(k, np.zeros(n)), dtype=float)
        if not np.any(v > 0):
            continue
        ax.barh(y, v, left=left, color=cmap(j % 20), label=k.replace("_", " "), edgecolor="white", linewidth=0.5)
        left += v
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("seconds per optimizer step")
    ax.set_title(textwrap.fill(title, 90), fontsize=10)  # wrapped, never cut at the figure's edge
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.28 if n < 4 else -0.16), frameon=False)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---- 2. roofline -----------------------------------------------------------------------------------


@dataclass
class Op:
    name: str
    kind: str  # gemm | attention | memory
    flops: float
    bytes: float
    seconds: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def achieved(self) -> float:
        return self.flops / self.seconds


def roofline_ops(m: ModelSpec, hw: HardwareSpec, lay: Layout, opts: Options) -> list[Op]:
    """Forward pass of one layer (the MoE layer of an MoE model) and the LM head for one micro-batch on one
    GPU: the workload's own op records (workload.py) priced by the cost model (cost.py / compute.py). GEMM
    bytes are the operand and result traffic of one kernel ((MK + KN) x operand bytes + MN x 2); flash
    attention reads Q, K, V and writes O once (Dao 2023); memory-bound ops are the workload's streams with
    nominal FLOPs per byte (norm ~1, activation ~5/6, residual add ~1/6, fp32 softmax + cross-entropy
    ~5/12): an approximation, labelled as such on the chart."""
    from perfmodel.core.workload import build
    from perfmodel.specs.layout import LayoutGrid

    c, prec = opts.consts, opts.precision
    a = m.attention
    _, _, nbytes = gemm_peak_and_eff(hw, prec)
    from perfmodel.core.predict import software_of

    w = build(m, LayoutGrid.of(lay), prec not in ("bf16", "fp16"), 1.0, c, software_of(m, hw, opts))
    layer = w.layers[-1]
    ops: list[Op] = []
    one = lambda x: float(np.asarray(x).reshape(-1)[0])

    def add_gemm(g: Gemm) -> None:
        pr = prec if g.low_precision else "bf16"
        nb = nbytes if g.low_precision else BF16
        M, N, K, cnt = one(g.M), one(g.N), one(g.K), one(g.count)
        if M <= 0:
            return
        t = float(gemm_time(M, N, K, hw, pr, c)) * cnt
        ops.append(
            Op(
                f"{g.name} [{M:.0f}x{N:.0f}x{K:.0f}]" + (f" x{cnt:.0f}" if cnt != 1 else ""),
                "gemm",
                2 * M * N * K * cnt,
                ((M * K + K * N) * nb + M * N * BF16) * cnt,
                t,
            )
        )

    for g in layer.gemms:
        if g.name != "router":
            add_gemm(g)
    for g in w.head.gemms:
        add_gemm(g)
    core = layer.attention[0]  # the global-attention record
    flops, keys = one(core.flops_fwd), one(core.mean_keys)
    fwd, _ = attention_time(flops, keys, hw, c)
    T, tp = one(w.T), float(lay.tp)
    kv = 2 * a.num_kv_heads * a.head_dim / tp if a.kind != "mla" else a.num_heads * (a.qk_dim + a.v_dim) / tp
    att_bytes = BF16 * T * (a.num_heads * a.qk_dim / tp + kv + a.num_heads * a.v_dim / tp)
    ops.append(Op("flash attention fwd", "attention", flops, float(att_bytes), float(fwd)))
    nominal = {
        "norms": ("RMSNorm" if m.norm == "rmsnorm" else "LayerNorm", 1.0),
        "activation": ("SwiGLU" if m.ffn.matrices == 3 else "GeLU", 5 / 6),
        "expert activation": ("SwiGLU (experts)" if m.ffn.matrices == 3 else "GeLU (experts)", 5 / 6),
        "residual adds": ("residual add", 1 / 6),
    }
    for st in layer.streams + w.head.streams:
        name, fpb = nominal.get(
            st.name, ("softmax + cross-entropy (fp32)", 5 / 12) if st in w.head.streams else (None, 0)
        )
        by = one(st.bytes_fwd)
        if name and by > 0:
            ops.append(Op(name, "memory", fpb * by, by, float(memory_time(by, hw, 1, c))))
    return ops


def roofline_png(ops: list[Op], hw: HardwareSpec, precision: str, path: Path, title: str) -> None:
    """Two panels: the whole roofline (log-log) with every op, the ridge point of the precision (and of bf16,
    where attention runs, when they differ) and the memory-bound ops labelled; and a zoom on the
    compute-bound corner (linear TFLOP/s) where the GEMMs and flash attention crowd, each labelled."""
    plt = _plt()
    from matplotlib.ticker import FuncFormatter

    peak = hw.peak(precision)
    peak16 = hw.peak_flops.bf16
    bw = hw.memory.hbm_bandwidth
    eff = gemm_peak_and_eff(hw, precision)[1]
    colors = {"gemm": "#1f77b4", "attention": "#d62728", "memory": "#2ca02c"}
    kinds = {"gemm": "GEMMs", "attention": "flash attention", "memory": "memory-bound ops (nominal FLOPs)"}
    fig, (ax, az) = plt.subplots(1, 2, figsize=(13, 5.8), gridspec_kw={"width_ratios": [1.25, 1]})
    lo_x = min([0.1] + [o.intensity / 2 for o in ops])
    hi_x = max([3e4] + [o.intensity * 3 for o in ops])
    x = np.logspace(np.log10(lo_x), np.log10(hi_x), 300)
    ridges = [(precision, peak)] + ([("bf16", peak16)] if peak16 != peak else [])
    for a in (ax, az):
        a.plot(
            x,
            np.minimum(peak, bw * x) / 1e12,
            "k-",
            lw=1.5,
            label=f"roofline: {precision} peak {peak / 1e12:,.0f} TFLOP/s, HBM {bw / 1e12:.2f} TB/s",
        )
        if peak16 != peak:
            a.plot(
                x,
                np.minimum(peak16, bw * x) / 1e12,
                "k:",
                lw=1,
                label=f"bf16 roofline {peak16 / 1e12:,.0f} TFLOP/s (attention kernels)",
            )
        a.axhline(peak * eff / 1e12, color="grey", ls="--", lw=1, label=f"best-shape GEMM (MAMF): {eff:.0%} of peak")
        for o in ops:
            a.scatter(o.intensity, o.achieved / 1e12, color=colors[o.kind], s=40, zorder=3, edgecolor="white", lw=0.5)
    for k in ("gemm", "attention", "memory"):  # one legend entry per kind
        if any(o.kind == k for o in ops):
            ax.scatter([], [], color=colors[k], s=40, label=kinds[k])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo_x, hi_x)
    y_lo = 0.3 * min([1.0] + [o.achieved / 1e12 for o in ops])
    ax.set_ylim(y_lo, 2.5 * max(peak, peak16) / 1e12)
    for k, (name, pk) in enumerate(ridges):  # ridge point: peak / bandwidth
        r = pk / bw
        ax.axvline(r, color="#9467bd", ls=":", lw=1)
        ax.text(
            r * (1.12 if k == 0 else 0.89),
            1.5 * y_lo,
            f"ridge {r:,.0f} FLOP/B ({name})",
            rotation=90,
            fontsize=7,
            color="#9467bd",
            ha="left" if k == 0 else "right",
            va="bottom",
        )
    # memory-bound ops crowd at 0.1-2 FLOP/B: labels stacked to their right, in order, with leader lines
    mem = sorted((o for o in ops if o.kind == "memory"), key=lambda o: o.achieved)
    ly = np.geomspace(1.8 * y_lo, 0.01 * peak / 1e12, max(2, len(mem)))
    tx = 30 * max([0.1] + [o.intensity for o in mem])
    for o, y in zip(mem, ly):
        ax.annotate(
            o.name,
            (o.intensity, o.achieved / 1e12),
            xytext=(tx, y),
            textcoords="data",
            fontsize=7,
            va="center",
            color="#2ca02c",
            arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "grey"},
        )
    hot = [o for o in ops if o.kind != "memory"]
    ax.set_xlabel("arithmetic intensity (FLOPs per HBM byte, log)")
    ax.set_ylabel("achieved TFLOP/s (cost model, log)")
    ax.set_title("All ops", fontsize=10)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=7, loc="upper left")
    if hot:
        zx0 = min(o.intensity for o in hot) / 1.6
        zx1 = max(o.intensity for o in hot) * 1.6
        ax.add_patch(
            plt.Rectangle(
                (zx0, 0.45 * min(o.achieved for o in hot) / 1e12),
                zx1 - zx0,
                1.3 * peak / 1e12 - 0.45 * min(o.achieved for o in hot) / 1e12,
                fill=False,
                ls="--",
                lw=0.8,
                color="grey",
            )
        )
        ax.annotate(
            "zoom (right)",
            (zx0, 0.45 * min(o.achieved for o in hot) / 1e12),
            xytext=(0, -11),
            textcoords="offset points",
            fontsize=7,
            color="grey",
        )
        az.set_xscale("log")
        az.set_xlim(zx0, zx1)
        az.set_ylim(0, 1.08 * max(peak, peak16) / 1e12)
        # labels in rows in the empty part below the points, in order of intensity, with leader lines; with
        # many ops (MoE, MLA) names only: the shapes are in the table under the figure
        lx = np.log10([zx0, zx1])
        rows = 2 if len(hot) <= 7 else 3
        ys = np.linspace(0.05 * az.get_ylim()[1], 0.8 * min(o.achieved for o in hot) / 1e12, rows + 1)[:rows]
        for k, o in enumerate(sorted(hot, key=lambda o: o.intensity)):
            fx = 0.08 + 0.84 * (k + 0.5) / len(hot)
            tx = 10 ** (lx[0] + fx * (lx[1] - lx[0]))
            name, _, shape = o.name.partition(" [")
            text = name + ("\n" + shape.split("]")[0] if shape and rows == 2 else "")
            az.annotate(
                text,
                (o.intensity, o.achieved / 1e12),
                xytext=(tx, ys[k % rows]),
                textcoords="data",
                fontsize=7,
                ha="center",
                va="center",
                color=colors[o.kind],
                arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "grey"},
            )
    az.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    az.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if str(round(v))[0] in "25" else ""))
    az.tick_params(axis="x", which="both", labelsize=8)
    xr = az.get_xlim()[1]
    for y, lab in [(peak, f"{precision} peak"), (peak * eff, f"best-shape GEMM {eff:.0%}")] + (
        [(peak16, "bf16 peak")] if peak16 != peak else []
    ):
        az.text(xr, y / 1e12, lab + " ", fontsize=7, ha="right", va="bottom", color="dimgrey")
    az.set_xlabel("arithmetic intensity (FLOPs per HBM byte, log)")
    az.set_ylabel("achieved TFLOP/s (cost model)")
    az.set_title(
        "Compute-bound corner: GEMMs"
        + (" [M x N x K]" if len(hot) <= 7 else " (shapes in the table)")
        + " and flash attention",
        fontsize=10,
    )
    az.grid(True, which="both", alpha=0.2)
    fig.suptitle(textwrap.fill(title, 120), fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---- 5. validation scatter -------------------------------------------------------------------------


def validation_png(results: list, path: Path) -> dict[str, Any]:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    hws = sorted({r.hardware for r in results})
    cmap = plt.get_cmap("tab10")
    meas = np.array([r.measured for r in results])
    pred = np.array([r.predicted for r in results])
    lo, hi = 0.7 * min(meas.min(), pred.min()), 1.4 * max(meas.max(), pred.max())
    x = np.logspace(np.log10(lo), np.log10(hi), 50)
    ax.fill_between(x, 0.75 * x, 1.25 * x, color="grey", alpha=0.15, label="±25%")
    ax.plot(x, x, "k-", lw=1, label="y = x")
    for i, h in enumerate(hws):
        sel = [r for r in results if r.hardware == h]
        ax.scatter(
            [r.measured for r in sel],
            [r.predicted for r in sel],
            s=14,
            color=cmap(i % 10),
            label=f"{h} ({len(sel)})",
            alpha=0.85,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured tokens/s per GPU")
    ax.set_ylabel("predicted tokens/s per GPU")
    within = float(np.mean(np.abs(pred / meas - 1) <= 0.25))
    mape = float(np.mean(np.abs(pred / meas - 1)))
    ax.set_title(f"validation: {len(results)} measured runs, MAPE {mape:.1%}, {within:.0%} within ±25%", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return {"rows": len(results), "mape": mape, "within_25": within}


# ---- 6. hardware comparison ------------------------------------------------------------------------


def compare_systems(m: ModelSpec, hws: list[HardwareSpec], cfg: ReportConfig, opts: Options) -> list[dict[str, Any]]:
    """Per system: the planner's best layout at cfg.gpus, then the economics of cost_report.md: $/GPU-hour
    (economics.tco), $ per 1M tokens and utility J/token (economics.run_cost), goodput and spares
    (reliability.assess), and perf per TCO = (tokens/s/GPU / $ per GPU-hour) relative to the first system."""
    params_total = float(param_counts(m).total)
    out = []
    for hw in hws:
        res = search(m, hw, cfg.gpus, cfg.gbs, cfg.seq, opts, "throughput", top_k=1)
        if res.top is None:  # cannot run: listed with the reason, no throughput, cost or energy
            out.append(
                {
                    "hardware": hw.id,
                    "name": hw.display_name(),
                    "layout": None,
                    "runnable": False,
                    "reason": f"none of the {res.legal:,} legal layouts fits in HBM"
                    if res.legal
                    else "no legal layout",
                }
            )
            continue
        tps = float(res.top.tokens_per_s_per_gpu[0])
        # unpriced hardware: energy only, $ fields None
        j = job(
            hw,
            params_total,
            tps,
            cfg.tokens,
            cfg.gpus,
            cfg.buyer,
            None,
            {"count_hot_spares": cfg.spares == "charged"},
            require_price=False,
            step=step_of(res.top, 0, m, hw, opts),
        )
        t, rel, nom, eff = j.tco, j.reliability, j.nominal, j.after_reliability
        usd = (lambda v: v) if j.priced else (lambda v: None)
        out.append(
            {
                "hardware": hw.id,
                "name": hw.display_name(),
                "layout": layout_text(res.top.layouts.layout(0)),
                "tokens_per_s_per_gpu": tps,
                "mfu": float(res.top.mfu[0]),
                "usd_per_gpu_hour": usd(t.usd_per_gpu_hour),
                "usd_per_million_tokens_nominal": usd(nom.usd_per_million_tokens),
                "joules_per_token_nominal": nom.joules_per_token,
                "joules_per_token_after_reliability": eff.joules_per_token,
                "joules_per_token_drawn_nominal": (
                    j.energy_drawn.nominal["joules_per_token"] if j.energy_drawn is not None else None
                ),
                "power": j.power_dict(),
                "energy": j.energy_dict(),
                "goodput_fraction": rel.goodput_fraction,
                "goodput_fraction_low": rel.goodput_fraction_low,
                "goodput_fraction_high": rel.goodput_fraction_high,
                "units": rel.units,
                "spare_units": rel.spare_units,
                "gpus_per_unit": rel.inputs.gpus_per_unit,
                "cost_factor": rel.cost_factor,
                "usd_per_million_tokens_after_reliability": usd(eff.usd_per_million_tokens),
                "usd_total_after_reliability": usd(eff.usd_total),
                "spares": cfg.spares,
                "spares_text": j.spares_text,
                "perf_per_tco_vs_first_nominal": None,
                "perf_per_tco_vs_first_after_reliability": None,
            }
        )
    base = next((o for o in out if o.get("layout") and o["usd_per_gpu_hour"] is not None), None)
    for o in out:
        if o.get("layout") and base and o["usd_per_gpu_hour"] is not None:
            o["perf_per_tco_vs_first_nominal"] = (o["tokens_per_s_per_gpu"] / o["usd_per_gpu_hour"]) / (
                base["tokens_per_s_per_gpu"] / base["usd_per_gpu_hour"]
            )
            o["perf_per_tco_vs_first_after_reliability"] = (
                base["usd_per_million_tokens_after_reliability"] / o["usd_per_million_tokens_after_reliability"]
            )
    return out


def compare_png(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    plt = _plt()
    ok = [r for r in rows if r.get("layout")]
    first = ok[0]["hardware"] if ok else "first"
    metrics = [
        ("tokens/s per GPU", "tokens_per_s_per_gpu", "{:,.0f}"),
        ("$ per GPU-hour", "usd_per_gpu_hour", "{:.2f}"),
        ("$ per 1M tokens, nominal", "usd_per_million_tokens_nominal", "{:.3f}"),
        ("$ per 1M tokens,\nafter reliability", "usd_per_million_tokens_after_reliability", "{:.3f}"),
        ("utility J per token,\nnominal, rated", "joules_per_token_nominal", "{:.2f}"),
        ("utility J per token,\nnominal, drawn", "joules_per_token_drawn_nominal", "{:.2f}"),
        (f"perf per TCO vs {first},\nnominal", "perf_per_tco_vs_first_nominal", "{:.2f}x"),
        (f"perf per TCO vs {first},\nafter reliability", "perf_per_tco_vs_first_after_reliability", "{:.2f}x"),
    ]
    fig, axes = plt.subplots(1, len(metrics), figsize=(18, 3.8))
    colors = ["#76b900", "#1f77b4", "#ff7f0e", "#9467bd"]
    for ax, (lab, k, fmt) in zip(axes, metrics):
        vals = [r[k] if r[k] is not None else 0.0 for r in ok]  # no sourced price: drawn as 0, labelled "-"
        bars = ax.bar(range(len(ok)), vals, color=colors[: len(ok)])
        ax.set_xticks(range(len(ok)), [r["hardware"].replace("-nvl72", "\nNVL72") for r in ok], fontsize=8)
        ax.set_title(lab, fontsize=9)
        for b, v in zip(bars, vals):
            ax.annotate(
                fmt.format(v) if v else "-",
                (b.get_x() + b.get_width() / 2, b.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
            )
        ax.set_ylim(0, 1.2 * max(vals) if vals and max(vals) > 0 else 1)
        ax.tick_params(axis="y", labelsize=7)
    fig.suptitle(textwrap.fill(title, 150), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---- 7. power over the step ------------------------------------------------------------------------


def power_segments(power: dict[str, Any], steps: int = 3) -> list[tuple[float, float, str]]:
    """The cluster's draw as (start s, W, segment) over `steps` steps and one checkpoint write: the pipeline
    body at the mean of its phases' draws, the step's end at its own (economics/power.py BODY / TAIL)."""
    from perfmodel.economics.power import BODY, TAIL

    ph = {t["phase"]: t for t in power["timeline"]}

    def seg(names: tuple[str, ...]) -> tuple[float, float]:
        s = sum(ph[n]["seconds"] for n in names)
        return s, (sum(ph[n]["seconds"] * ph[n]["cluster_w"] for n in names) / s if s > 0 else 0.0)

    (bs, bw), (ts, tw) = seg(BODY), seg(TAIL)
    out, t = [], 0.0
    for _ in range(steps):
        out.append((t, bw, "pipeline"))
        t += bs
        if ts > 0:
            out.append((t, tw, "step end"))
            t += ts
    ck = ph["checkpoint_write"]
    if ck["seconds"] > 0:
        out.append((t, ck["cluster_w"], "checkpoint write"))
        t += ck["seconds"]
    out.append((t, bw, "pipeline"))
    out.append((t + bs, bw, "end"))
    return out


def power_png(power: dict[str, Any], path: Path, title: str) -> None:
    """Cluster IT power over three steps and a checkpoint write (drawn), with the average and the rated power."""
    plt = _plt()
    segs = power_segments(power)
    fig, ax = plt.subplots(figsize=(10, 3.8))
    xs = [s[0] for s in segs]
    ys = [s[1] / 1e3 for s in segs]
    ax.step(xs, ys, where="post", color="#1f77b4", linewidth=1.8, label="drawn (cluster IT, AC)")
    ax.axhline(power["cluster_avg_w"] / 1e3, color="#1f77b4", linestyle=":", linewidth=1, label="drawn, step average")
    ax.axhline(power["cluster_rated_w"] / 1e3, color="#d62728", linestyle="--", linewidth=1, label="rated (all-in)")
    named: set[str] = set()
    for x, y, name in segs:
        if name in ("step end", "checkpoint write") and name not in named:  # label the first of each
            named.add(name)
            ax.annotate(name, (x, y / 1e3), xytext=(2, -12), textcoords="offset points", fontsize=8)
    ax.set_xlabel("seconds (three steps, then a checkpoint write)")
    ax.set_ylabel("kW")
    ax.set_ylim(0, 1.1 * power["cluster_rated_w"] / 1e3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(textwrap.fill(title, 100), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---- the page --------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
main{max-width:1100px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.2em;margin:1.8em 0 .4em;border-bottom:2px solid #76b900;padding-bottom:.2em}
p.note{color:#566;font-size:.9em;margin:.3em 0 .8em}
figure{margin:.6em 0;background:#fff;border:1px solid #dde;border-radius:6px;padding:8px}
figure img{max-width:100%;height:auto;display:block;margin:0 auto}
figcaption{font-size:.85em;color:#455;margin-top:.3em}
table{border-collapse:collapse;background:#fff;font-size:.88em;margin:.4em 0}
th,td{border:1px solid #dde;padding:4px 8px;text-align:right}th{background:#eef1f5}
td:first-child,th:first-child,td.l{text-align:left}
code{background:#eef1f5;padding:1px 4px;border-radius:3px}
footer{color:#778;font-size:.8em;margin-top:3em}
"""

# every <img> reports whether it decoded (data-loaded = natural width, or data-failed); the body counts them
IMG_CHECK = """
<script>
window.addEventListener('load', function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.body.setAttribute('data-images-ok', ok + '/' + imgs.length);
});
</script>
"""


def _img(src: str, alt: str, caption: str) -> str:
    e = html.escape
    return (
        f'<figure><img src="{e(src)}" alt="{e(alt)}" '
        f"onload=\"this.setAttribute('data-loaded', this.naturalWidth)\" "
        f"onerror=\"this.setAttribute('data-failed', '1')\">"
        f"<figcaption>{e(caption)}</figcaption></figure>"
    )


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    e = html.escape
    out = ["<table><thead><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in headers) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


REPORT_STEPS = ("planner", "roofline", "scaling", "validation", "comparison", "page")


def check_inputs(cfg: ReportConfig) -> None:
    """Every input of the report, checked before any work (a bad --compare id must not fail after the
    planner has run): specs, precision on each system, sizes, the validation CSV, the output folder."""
    from perfmodel.analysis.validate import count_rows
    from perfmodel.specs.stack import check_stack

    m, hw = load_model(cfg.model), apply_overrides(load_hardware(cfg.hardware), cfg.hardware_sets)
    hw.peak(cfg.precision)
    for h in cfg.compare:
        load_hardware(h).peak(cfg.precision)
    check_stack(cfg.stack, cfg.stack_set)
    for name in ("gpus", "gbs", "seq", "top"):
        if getattr(cfg, name) < 1:
            raise InputError(f"{name}", name, f"must be a positive integer (got {getattr(cfg, name)})")
    if cfg.scaling_max_gpus < cfg.gpus:
        raise InputError("scaling_max_gpus", "scaling_max_gpus", f"must be at least --gpus {cfg.gpus}")
    count_rows(Path(cfg.validation_csv) if cfg.validation_csv else default_runs_csv())
    _ = m


def build(cfg: ReportConfig, out: str | Path, on_step=None) -> Report:
    """Write index.html and its PNGs into `out` (created if missing), atomically: every input is checked first
    (check_inputs), the files are written into a temporary folder beside `out` and moved in only when all of
    them are done, so a failure leaves no half-written report. `on_step(name)` reports each REPORT_STEPS step."""
    outdir = Path(out)
    if outdir.exists() and not outdir.is_dir():
        raise InputError("out", str(out), "not a folder")
    check_inputs(cfg)
    try:
        outdir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.tmp-", dir=outdir.parent))
    except OSError as exc:
        raise InputError("out", str(out), f"cannot create the folder ({exc.strerror})") from None
    try:
        rep = _build(cfg, tmp, on_step or (lambda name: None))
        outdir.mkdir(exist_ok=True)
        for f in rep.files:
            os.replace(tmp / f, outdir / f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rep.out = outdir
    return rep


def _build(cfg: ReportConfig, outdir: Path, progress) -> Report:
    from perfmodel.analysis.validate import validate_file
    from perfmodel.specs.stack import load_stack

    t0 = time.perf_counter()
    m, hw = load_model(cfg.model), apply_overrides(load_hardware(cfg.hardware), cfg.hardware_sets)
    opts = Options(cfg.precision, "causal", "real", constants(), cfg.stack, tuple(cfg.stack_set))  # type: ignore[arg-type]
    stack_text = load_stack(cfg.stack).id + (f" + --stack-set {', '.join(cfg.stack_set)}" if cfg.stack_set else "")
    rep = Report(outdir)
    progress("planner")
    e = html.escape
    sections: list[str] = []

    # planner top layouts
    res = search(m, hw, cfg.gpus, cfg.gbs, cfg.seq, opts, "throughput", top_k=cfg.top)
    if res.top is None:
        raise InputError(
            "gpus",
            str(cfg.gpus),
            f"no legal layout of {m.id} fits on {cfg.gpus} x {hw.id} (gbs {cfg.gbs}, seq {cfg.seq}); try more GPUs",
        )
    top = res.top
    texts = [layout_text(top.layouts.layout(i)) for i in range(top.layouts.n)]
    labels = [f"#{i + 1} {text}" for i, text in enumerate(texts)]
    title = f"{m.name}, {cfg.gpus} x {hw.id}, {cfg.precision}, gbs {cfg.gbs}, seq {cfg.seq}"
    breakdown_png(top, labels, outdir / "breakdown.png", f"Step-time breakdown, planner's top {top.layouts.n}: {title}")
    rep.files.append("breakdown.png")
    top_rows = []
    for i in range(top.layouts.n):
        b = {k: float(v[i]) for k, v in top.breakdown_s.items()}
        step = float(top.step_time_s[i])
        comm_s = sum(b[k] for k in ("tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm"))
        top_rows.append(
            [
                i + 1,
                texts[i],
                f"{top.tokens_per_s_per_gpu[i]:,.0f}",
                f"{top.mfu[i]:.1%}",
                f"{step:.3f}",
                f"{comm_s / step:.1%}",
                f"{b['pipeline_bubble'] / step:.1%}",
                f"{top.memory_bytes_per_gpu[i] / 1e9:.1f}",
            ]
        )
    rep.data["top"] = [
        {"layout": texts[i], **{k: v for k, v in top.row(i).items() if k != "layout"}} for i in range(top.layouts.n)
    ]

    sections.append(
        "<h2>1. Where the step goes</h2><p class='note'>Predicted seconds per optimizer step of the "
        "planner's best layouts, by term (compute, the exposed part of each communication, the pipeline "
        "bubble, optimizer, fixed overhead).</p>"
        + _img("breakdown.png", "step-time breakdown", "Stacked step-time breakdown (perfmodel predict)")
    )

    # roofline
    progress("roofline")
    best = top.layouts.layout(0)
    ops = roofline_ops(m, hw, best, opts)
    roofline_png(
        ops,
        hw,
        cfg.precision,
        outdir / "roofline.png",
        f"Roofline of {hw.id}: forward ops of one layer, one micro-batch, layout {layout_text(best)}",
    )
    rep.files.append("roofline.png")
    rep.data["roofline"] = [
        {
            "op": o.name,
            "kind": o.kind,
            "flops": o.flops,
            "bytes": o.bytes,
            "seconds": o.seconds,
            "intensity": o.intensity,
            "achieved_flops_per_s": o.achieved,
        }
        for o in ops
    ]
    sections.append(
        "<h2>2. Roofline</h2><p class='note'>Each point is one op of the best layout's forward pass on one "
        "GPU: arithmetic intensity (FLOPs per HBM byte of operands and results) against the FLOP/s the cost "
        "model gives it. GEMMs sit under the best-shape GEMM line (efficiency falls for short K and "
        "under-filled tiles); memory-bound ops sit on the bandwidth slope, left of the ridge point (peak FLOP/s "
        "over HBM bandwidth; for FP8 and below also the bf16 ridge, where attention runs). FLOP counts of "
        "the memory-bound "
        "ops are nominal (approximation).</p>"
        + _img("roofline.png", "roofline", "Roofline with the model's main ops (perfmodel/report.py roofline_ops)")
        + _table(
            ["op", "kind", "GFLOP", "MB", "FLOP/B", "µs", "TFLOP/s"],
            [
                [
                    o.name,
                    o.kind,
                    f"{o.flops / 1e9:,.1f}",
                    f"{o.bytes / 1e6:,.1f}",
                    f"{o.intensity:,.1f}",
                    f"{o.seconds * 1e6:,.0f}",
                    f"{o.achieved / 1e12:,.0f}",
                ]
                for o in ops
            ],
        )
    )

    sections.append(
        f"<h2>3. Top layouts (planner)</h2><p class='note'>{res.evaluated:,} candidate layouts, "
        f"{res.legal:,} legal, {res.fits:,} fit in HBM, scored in {res.seconds:.2f} s "
        f"(<code>perfmodel search</code>).</p>"
        + _table(["#", "layout", "tok/s/GPU", "MFU", "step s", "comm", "bubble", "mem GB"], top_rows)
    )

    # scaling
    progress("scaling")
    sizes = []
    n = cfg.gpus
    while n <= max(cfg.scaling_max_gpus, cfg.gpus):
        sizes.append(n)
        n *= 2
    sc = run_scaling(m, hw, sizes, "weak", best, opts, measured=load_runs(), spares=cfg.spares)
    scaling_plot(sc, outdir / "scaling.png")
    rep.files.append("scaling.png")
    rep.data["scaling"] = sc.to_dict()
    sc_rows = [
        [
            f"{p.gpus:,}",
            f"{p.gbs:,}",
            f"{p.tokens_per_s_per_gpu:,.0f}",
            f"{p.mfu:.1%}",
            f"{p.grows_s['dp_comm'] / p.step_time_s:.1%}",
            f"{p.goodput_fraction:.2%}",
            f"{p.goodput_tokens_per_s_per_gpu:,.0f}",
            f"{p.usd_per_million_tokens_nominal:.3f}" if p.usd_per_million_tokens_nominal is not None else "-",
            f"{p.joules_per_token_nominal:.2f}",
        ]
        if p.ok
        else [f"{p.gpus:,}", p.gbs, p.reason, "", "", "", "", "", ""]
        for p in sc.points
    ]
    sections.append(
        f"<h2>4. Weak scaling</h2><p class='note'>Best layout {e(layout_text(best))} held fixed, per-GPU batch "
        f"held (global batch grows with data parallelism), {sizes[0]:,} to {sizes[-1]:,} GPUs "
        f"(<code>perfmodel scaling</code>). Goodput: interruptions grow with the GPU count, checkpoints "
        f"every Young interval (perfmodel/economics/reliability.py).</p>"
        + _img(
            "scaling.png",
            "scaling curves",
            "tokens/s per GPU (and x goodput), MFU, and the exposed "
            "share of the step of what grows (DP communication, bubble, all-to-all) vs GPUs (log x)",
        )
        + _table(
            ["GPUs", "gbs", "tok/s/GPU", "MFU", "DP comm", "goodput", "goodput tok/s/GPU", "$/1M tok", "J/tok"], sc_rows
        )
    )

    # validation
    progress("validation")
    csv_path = Path(cfg.validation_csv) if cfg.validation_csv else default_runs_csv()
    vrep = validate_file(csv_path)
    vstats = validation_png(vrep.results, outdir / "validation.png")
    rep.files.append("validation.png")
    by_hw = vrep.by("hardware")
    rep.data["validation"] = {**vstats, "by_hardware": by_hw}
    sections.append(
        f"<h2>5. Predicted vs measured</h2><p class='note'>Every row of <code>{e(csv_path.name)}</code> "
        f"predicted from its published layout with the calibrated constants and the row's own stack preset, coloured by "
        f"hardware; the band is ±25%.</p>"
        + _img("validation.png", "validation scatter", "predicted vs measured tokens/s per GPU (log-log)")
        + _table(
            ["hardware", "rows", "MAPE", "median APE", "bias"],
            [
                [h, s["rows"], f"{s['mape']:.1%}", f"{s['median_ape']:.1%}", f"{s['bias']:+.1%}"]
                for h, s in by_hw.items()
            ],
        )
    )

    # comparison
    progress("comparison")
    hws = [load_hardware(h) for h in cfg.compare]
    cmp_rows = compare_systems(m, hws, cfg, opts)
    compare_png(cmp_rows, outdir / "compare.png", f"{m.name} on {cfg.gpus} GPUs, {cfg.precision}, best layout each")
    rep.files.append("compare.png")
    rep.data["compare"] = cmp_rows
    ok = [r for r in cmp_rows if r.get("layout")]
    f = lambda v, spec: "-" if v is None else format(v, spec)
    heavy = [r for r in ok if r["cost_factor"] > 1.25]
    spare_note = (
        (
            " At this size the spare units are a large share of the cluster ("
            + ", ".join(
                f"{e(r['hardware'])}: {r['spare_units']} spare of {r['units']} unit"
                f"{'s' if r['units'] != 1 else ''} of {r['gpus_per_unit']} GPUs, "
                f"{r['cost_factor']:.2f}x GPUs paid"
                for r in heavy
            )
            + "), which dominates the after-reliability figures; at a few hundred GPUs and more it is a few "
            "percent (<code>--gpus</code>)."
        )
        if heavy
        else ""
    )
    spare_note += "".join(
        f" <b>{e(r['hardware'])} cannot run</b> this job at {cfg.gpus} GPUs ({e(r['reason'])}): "
        "no throughput, cost or energy is shown for it."
        for r in cmp_rows
        if not r.get("layout")
    )
    metric_rows = [
        ["best layout"] + [r["layout"] for r in ok],
        ["tokens/s per GPU"] + [f"{r['tokens_per_s_per_gpu']:,.0f}" for r in ok],
        ["MFU"] + [f"{r['mfu']:.1%}" for r in ok],
        ["$ per GPU-hour"] + [f(r["usd_per_gpu_hour"], ".3f") for r in ok],
        ["$ per 1M tokens nominal"] + [f(r["usd_per_million_tokens_nominal"], ".4f") for r in ok],
        ["utility J per token nominal, rated"] + [f"{r['joules_per_token_nominal']:.3f}" for r in ok],
        ["utility J per token nominal, drawn"] + [f(r["joules_per_token_drawn_nominal"], ".3f") for r in ok],
        ["node power drawn (share of rating)"]
        + [
            f"{r['power']['node_avg_w'] / 1e3:,.2f} kW ({r['power']['share_of_rating']:.0%})"
            if r["power"]["method"] == "drawn"
            else "-"
            for r in ok
        ],
        ["goodput (band)"]
        + [
            f"{r['goodput_fraction']:.2%} ({r['goodput_fraction_low']:.1%}-{r['goodput_fraction_high']:.1%})"
            for r in ok
        ],
        ["units + spare units (GPUs per unit)"]
        + [f"{r['units']} + {r['spare_units']} ({r['gpus_per_unit']})" for r in ok],
        ["GPUs paid / GPUs used"] + [f"{r['cost_factor']:.2f}x" for r in ok],
        ["$ per 1M tokens after reliability"] + [f(r["usd_per_million_tokens_after_reliability"], ".4f") for r in ok],
        ["perf per TCO vs first, nominal"]
        + [
            f(r["perf_per_tco_vs_first_nominal"], ".2f") + "x" * (r["perf_per_tco_vs_first_nominal"] is not None)
            for r in ok
        ],
        ["  after reliability"]
        + [
            f(r["perf_per_tco_vs_first_after_reliability"], ".2f")
            + "x" * (r["perf_per_tco_vs_first_after_reliability"] is not None)
            for r in ok
        ],
    ]
    sections.append(
        f"<h2>6. {' vs '.join(e(h.id) for h in hws)}</h2><p class='note'>The planner's best layout on each "
        f"system at {cfg.gpus} GPUs; cost from <code>perfmodel tco</code> ({e(cfg.buyer)} assumptions), "
        f"energy as utility joules by two methods: drawn (power by phase of the predicted step, "
        f"economics/power.py) and rated (all-in rating x PUE, the cost report's), goodput with its band over the "
        f"published spread of interruption rates and spares from the reliability model "
        f"(<code>perfmodel compare</code>).{spare_note} "
        + "; ".join(f"{e(r['hardware'])} {e(r['spares_text'])}" for r in ok)
        + "</p>"
        + _img("compare.png", "hardware comparison", "cost, energy and perf per TCO")
        + _table([""] + [r["hardware"] for r in ok], metric_rows)
    )

    # power over the step of the best layout
    pj = job(
        hw,
        float(param_counts(m).total),
        float(top.tokens_per_s_per_gpu[0]),
        cfg.tokens,
        cfg.gpus,
        cfg.buyer,
        None,
        {"count_hot_spares": cfg.spares == "charged"},
        require_price=False,
        step=step_of(top, 0, m, hw, opts),
    )
    pw_d, en = pj.power_dict(), pj.energy_dict()
    rep.data["power"] = {"power": pw_d, "energy": en}
    if pw_d["method"] == "drawn":
        power_png(pw_d, outdir / "power.png", f"Cluster power over the step: {title}, {layout_text(best)}")
        rep.files.append("power.png")
        kw = lambda w: f"{w / 1e3:,.1f} kW"  # noqa: E731
        sections.append(
            "<h2>7. Power over the step</h2><p class='note'>What the hardware draws by phase of the best layout's "
            "predicted step (<code>perfmodel predict</code>, economics/power.py): tensor work at the power cap, "
            "memory-bound kernels at their measured draw, exposed communication, bubbles and waits near idle, plus "
            "host, cooling and conversion losses per node and the scale-out network per GPU. The pipeline's phases "
            "alternate within milliseconds, so the cluster draws their mean; the step's end (exposed DP "
            "communication, optimizer) and checkpoint writes run on every GPU at once: the swing the grid sees. "
            "The rated method (all-in rating x time) reproduces the cost report's energy figures.</p>"
            + _img("power.png", "power over the step", "cluster IT power, drawn, against the rated power")
            + _table(
                ["", "drawn", "rated"],
                [
                    ["GPU average", f"{pw_d['gpu_avg_w']:,.0f} W", f"{hw.power.gpu_tdp_w:,.0f} W (TDP)"],
                    [
                        f"node of {pw_d['gpus_per_node']} GPUs",
                        f"{kw(pw_d['node_avg_w'])} ({pw_d['share_of_rating']:.0%} of rating), peak "
                        f"{kw(pw_d['node_peak_w'])}",
                        kw(pw_d["node_rated_w"]),
                    ],
                    ["cluster IT", kw(pw_d["cluster_avg_w"]), kw(pw_d["cluster_rated_w"])],
                    ["site (x PUE)", kw(pw_d["site_avg_w"]), kw(pw_d["site_rated_w"])],
                    [
                        "swing per step / at a checkpoint write",
                        f"{kw(pw_d['swing_w'])} / {kw(pw_d['checkpoint_swing_w'])}",
                        "-",
                    ],
                    [
                        "utility J per token, nominal",
                        f"{en['drawn']['joules_per_token_nominal']:.3f}",
                        f"{en['rated']['joules_per_token_nominal']:.3f}",
                    ],
                    [
                        f"MWh for {cfg.tokens:.3g} tokens, after reliability",
                        f"{en['drawn']['mwh_after_reliability']:,.1f}",
                        f"{en['rated']['mwh_after_reliability']:,.1f}",
                    ],
                ],
            )
        )

    progress("page")
    rep.seconds = time.perf_counter() - t0
    try:
        from importlib.metadata import version

        ver = version("perfmodel")
    except Exception:  # not installed (a plain checkout)
        ver = "checkout"
    head = (
        f"<h1>perfmodel report: {e(m.name)} on {e(hw.display_name())}</h1>"
        f"<p class='note'>{cfg.gpus} GPUs, global batch {cfg.gbs}, sequence {cfg.seq}, {e(cfg.precision)}, "
        f"software stack <code>{e(stack_text)}</code>"
        + (f", what-if hardware <code>{e(' '.join(cfg.hardware_sets))}</code>" if cfg.hardware_sets else "")
        + f". Generated {time.strftime('%Y-%m-%d %H:%M')} in "
        f"{rep.seconds:.1f} s by perfmodel {e(ver)}; every figure is a PNG next to this page.</p>"
    )
    page = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>perfmodel report: {e(m.id)}</title>"
        f"<style>{CSS}</style></head><body><main>{head}{''.join(sections)}"
        "<footer>Sources: perfmodel/core/predict.py (cost model), search.py (planner), scaling.py, validate.py with "
        "validation/runs.csv, economics.py and reliability.py (cost_report.md method). No external resources.</footer>"
        f"</main>{IMG_CHECK}</body></html>"
    )
    (outdir / "index.html").write_text(page, encoding="utf-8")
    rep.files.insert(0, "index.html")
    (outdir / "report.json").write_text(
        json.dumps(_jsonable({"config": cfg.__dict__, **rep.data}), indent=1), encoding="utf-8"
    )
    rep.files.append("report.json")
    return rep


def _jsonable(o: Any) -> Any:
    from perfmodel.jsonable import to_jsonable

    return to_jsonable(o)
