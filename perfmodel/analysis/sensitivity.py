"""Which hardware knob matters: elasticities of step time and of cost per token, and sweeps over what-if hardware.

Elasticity of step time s to a parameter x: e = d ln s / d ln x (e = -1: step time inversely proportional
to x, as for a purely compute-bound step and peak FLOP/s; e = 0: x does not matter). Two figures per knob:
- the derivative at x: central difference with a relative step of 1e-6, and the one-sided derivatives on
  each side. Where they agree (to 1e-4) the cost model is differentiable at x and this is its derivative to
  the printed digits (the truncation error of a 1e-6 central step is ~1e-12); it is the headline figure
  (method "derivative"). Where they disagree, x sits on a kink (an overlap that just hides, a bottleneck
  that switches) and the headline is the arc elasticity below (method "finite difference").
- the arc elasticity over +/-d (d = 10 %): [ln s(x (1 + d)) - ln s(x (1 - d))] / [ln(1 + d) - ln(1 - d)],
  with the step time at +d reported as "+10% x -> y% step time".
The NVLink domain size is discrete, so its elasticity is one-sided, to the next product size up:
e = ln(s(D') / s(D)) / ln(D' / D) (method "discrete step"). HBM capacity does not enter the step time
(perfmodel.core.predict); it decides whether the layout fits, which is reported instead.

Cost per token = $/GPU-hour x step time / tokens per GPU per step, and $/GPU-hour (perfmodel.economics.tco) does
not depend on the performance knobs, so their cost elasticity equals their step-time elasticity. GPU price
and power move only $/GPU-hour, which is linear in each: their cost elasticity is exactly the share of
$/GPU-hour they drive (capital + support; electricity + colocation of the GPU's own watts).
Every variant is a `HardwareSpec` made by `hardware.apply_overrides` and scored by `predict_grid`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product
from typing import Any, Callable

from perfmodel.analysis.checks import memory_reason
from perfmodel.api import check
from perfmodel.core.predict import Options, predict_grid
from perfmodel.economics.tco import tco_for
from perfmodel.errors import InputError
from perfmodel.specs.hardware import HardwareSpec, apply_overrides, field_value
from perfmodel.specs.layout import Layout, LayoutGrid
from perfmodel.specs.model import ModelSpec

# NVLink domain sizes of shipped or announced systems: HGX 8, HGX B300 NVL16, GB200 NVL36 / NVL72,
# Vera Rubin NVL144, Rubin Ultra NVL576 (NVIDIA product pages); the next one up is the discrete step.
DOMAIN_LADDER = (8, 16, 36, 72, 144, 288, 576)
DERIV_STEP = 1e-6  # relative step of the local derivative
KINK_TOL = 1e-4  # left and right derivatives further apart than this: x sits on a kink


@dataclass(frozen=True)
class Knob:
    field: str  # dotted HardwareSpec field
    label: str  # words for "+10% <label>"


@dataclass(frozen=True)
class Elasticity:
    field: str
    label: str
    value: float  # SI value in the base spec
    elasticity: float  # d ln(step) / d ln(value): the derivative, or the arc value at a kink (`method`)
    low: float  # value of the lower variant (x (1-d), or the base for the domain size)
    high: float  # value of the upper variant
    step_low_s: float
    step_high_s: float
    change_high: float  # step(high) / step(base) - 1
    arc: float = 0.0  # arc elasticity over +/-d
    method: str = "derivative"  # derivative | finite difference (kink) | discrete step
    cost_elasticity: float | None = None  # d ln($ per token) / d ln(value); None: hardware without a price

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def knobs(precision: str) -> list[Knob]:
    """The continuous hardware parameters the step time depends on, for a training precision."""
    peak = precision.replace("-block", "")
    out = [Knob(f"peak_flops.{peak}", f"{peak.upper()} peak FLOP/s")]
    if peak != "bf16":  # flash attention and high-precision GEMMs run on the BF16 tensor rate (compute.py)
        out.append(Knob("peak_flops.bf16", "BF16 peak (attention)"))
    out += [
        Knob("memory.hbm_bandwidth", "HBM bandwidth"),
        Knob("scale_up.bandwidth", "NVLink bandwidth"),
        Knob("scale_out.bandwidth", "NIC bandwidth"),
        Knob("scale_up.latency_s", "NVLink latency"),
        Knob("scale_out.latency_s", "network latency"),
    ]
    return out


def next_domain(hw: HardwareSpec) -> int:
    """The next NVLink domain size up that still tiles the node (domain and node divide one another)."""
    d, node = hw.scale_up.domain_size, hw.gpus_per_node
    for cand in (*DOMAIN_LADDER, 2 * d):
        if cand > d and (cand % node == 0 or node % cand == 0):
            return cand
    return 2 * d


def _with(hw: HardwareSpec, field: str, value: float | int) -> HardwareSpec:
    return apply_overrides(hw, [f"{field}={value!r}"])


def _local(step_at: Callable[[float], float], x: float, s0: float) -> tuple[float, bool]:
    """(d ln s / d ln x at x by a central step of DERIV_STEP, whether the one-sided derivatives agree)."""
    h = DERIV_STEP
    sp, sm = step_at(x * (1 + h)), step_at(x * (1 - h))
    right, left = math.log(sp / s0) / math.log1p(h), math.log(s0 / sm) / -math.log1p(-h)
    central = math.log(sp / sm) / (math.log1p(h) - math.log1p(-h))
    return central, abs(right - left) <= KINK_TOL * max(1.0, abs(left), abs(right))


def cost_shares(hw: HardwareSpec, buyer: str = "hyperscaler") -> dict[str, float] | None:
    """Exact elasticities of $/GPU-hour (so of $ per token) to GPU price and GPU power, with the $/GPU-hour;
    None where the hardware file has no price."""
    try:
        t = tco_for(hw, buyer)
    except InputError:
        return None
    p, total = t.breakdown_usd_per_gpu_hour, t.usd_per_gpu_hour
    gpu_w = t.inputs.allin_w_per_gpu / t.it_w_per_gpu  # the GPU's share of the IT power billed
    return {
        "usd_per_gpu_hour": total,
        "cost.allin_capex_usd": (p["depreciation"] + p["cost_of_capital"] + p["support_maintenance"]) / total,
        "power.allin_w_per_gpu": (p["electricity"] + p["colocation"]) * gpu_w / total,
    }


def _row(model: ModelSpec, hw: HardwareSpec, grid: LayoutGrid, opts: Options) -> dict[str, Any]:
    """Prediction.row(0) of one variant; a non-finite step time (absurd what-if values) is an InputError."""
    r = predict_grid(model, hw, grid, opts).row(0)
    if not (math.isfinite(r["step_time_s"]) and r["step_time_s"] > 0):
        changed = ", ".join(hw.overridden) or hw.id
        raise InputError(hw.id, changed, "these hardware values give no finite step time; check their units")
    return r


@dataclass(frozen=True)
class Sensitivity:
    base: dict[str, Any]  # Prediction.row of the unchanged spec
    rel: float  # the relative step d
    ranked: list[Elasticity]  # by |elasticity|, largest first
    memory: dict[str, Any]  # HBM capacity -> fits
    cost: list[dict[str, Any]]  # elasticities of $ per token, ranked (empty: no price)
    usd_per_gpu_hour: float | None  # hyperscaler TCO, perfmodel.economics.tco

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "rel_step": self.rel,
            "elasticities": [e.to_dict() for e in self.ranked],
            "hbm_capacity": self.memory,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "cost_elasticities": self.cost,
        }


def sensitivity(model: ModelSpec, hw: HardwareSpec, layout: Layout, opts: Options, rel: float = 0.10) -> Sensitivity:
    """Elasticity of step time to each hardware parameter at `layout`, ranked by magnitude."""
    if not 0 < rel < 1:
        raise InputError("rel", str(rel), "relative step must be between 0 and 1 (0.1 = +/-10%)")
    check(model, layout)
    grid = LayoutGrid.of(layout)
    base = _row(model, hw, grid, opts)
    s0 = base["step_time_s"]
    shares = cost_shares(hw)

    def cost(e: float) -> float | None:  # performance knobs move $ per token exactly as they move the step
        return e if shares else None

    out: list[Elasticity] = []
    for k in knobs(opts.precision):
        x = float(field_value(hw, k.field))
        if x == 0:  # a zero latency has no relative change; it cannot matter at first order
            out.append(Elasticity(k.field, k.label, x, 0.0, x, x, s0, s0, 0.0, 0.0, "derivative", cost(0.0)))
            continue
        step_at = lambda v, f=k.field: _row(model, _with(hw, f, v), grid, opts)["step_time_s"]
        lo, hi = x * (1 - rel), x * (1 + rel)
        s_lo, s_hi = step_at(lo), step_at(hi)
        arc = (math.log(s_hi) - math.log(s_lo)) / (math.log1p(rel) - math.log1p(-rel))
        deriv, smooth = _local(step_at, x, s0)
        e = deriv if smooth else arc
        out.append(
            Elasticity(
                k.field,
                k.label,
                x,
                e,
                lo,
                hi,
                s_lo,
                s_hi,
                s_hi / s0 - 1,
                arc,
                "derivative" if smooth else "finite difference",
                cost(e),
            )
        )
    d0, d1 = hw.scale_up.domain_size, next_domain(hw)
    s_d = _row(model, _with(hw, "scale_up.domain_size", d1), grid, opts)["step_time_s"]
    e_d = math.log(s_d / s0) / math.log(d1 / d0)
    out.append(
        Elasticity(
            "scale_up.domain_size",
            "NVLink domain size",
            float(d0),
            e_d,
            float(d0),
            float(d1),
            s0,
            s_d,
            s_d / s0 - 1,
            e_d,
            "discrete step",
            cost(e_d),
        )
    )
    out.sort(key=lambda e: -abs(e.elasticity))
    cost_rows: list[dict[str, Any]] = []
    if shares:
        cost_rows = [
            {"field": e.field, "label": e.label, "cost_elasticity": e.cost_elasticity, "method": e.method} for e in out
        ]
        cost_rows += [
            {"field": f, "label": label, "cost_elasticity": shares[f], "method": "exact (TCO share)"}
            for f, label in (
                ("cost.allin_capex_usd", "GPU price (all-in capex)"),
                ("power.allin_w_per_gpu", "GPU power"),
            )
        ]
        cost_rows.sort(key=lambda r: -abs(r["cost_elasticity"]))
    need, cap = base["memory_bytes_per_gpu"], hw.memory.capacity
    memory = {
        "hbm_bytes": cap,
        "memory_bytes_per_gpu": need,
        "fits": need <= cap,
        "fits_minus": need <= cap * (1 - rel),
        "fits_plus": need <= cap * (1 + rel),
        "headroom_fraction": 1 - need / cap,
    }
    return Sensitivity(base, rel, out, memory, cost_rows, shares["usd_per_gpu_hour"] if shares else None)


# ---- sweeps ---------------------------------------------------------------------------------------


def parse_sweep(text: str) -> tuple[str, list[str]]:
    """'FIELD=V1,V2,...' -> (FIELD, [V1, V2, ...]); FIELD as --set takes it (dotted field or alias)."""
    key, sep, vals = text.partition("=")
    values = [v.strip() for v in vals.split(",") if v.strip()]
    if not sep or not key.strip() or not values:
        raise InputError("sweep", text, "expected FIELD=V1,V2,..., e.g. nvlink_domain=8,16,36,72,144")
    return key.strip(), values


@dataclass(frozen=True)
class Sweep:
    axes: list[tuple[str, list[str]]]  # one or two (FIELD, values)
    cells: list[dict[str, Any]]  # one per combination, first axis outermost

    def matrix(self, key: str = "tokens_per_s_per_gpu") -> list[list[Any]]:
        """Rows = first axis values, columns = second axis values (one column for a single sweep)."""
        ncol = len(self.axes[1][1]) if len(self.axes) > 1 else 1
        vals = [c[key] for c in self.cells]
        return [vals[i : i + ncol] for i in range(0, len(vals), ncol)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "axes": [{"field": f, "values": v} for f, v in self.axes],
            "cells": self.cells,
            "tokens_per_s_per_gpu": self.matrix(),
        }


def sweep(model: ModelSpec, hw: HardwareSpec, layout: Layout, opts: Options, specs: list[str]) -> Sweep:
    """Tokens/s/GPU of `layout` on every combination of one or two --sweep FIELD=V1,V2,... lists."""
    if not 1 <= len(specs) <= 2:
        raise InputError("sweep", "", f"give one or two sweeps (got {len(specs)})")
    axes = [parse_sweep(s) for s in specs]
    if len(axes) == 2 and axes[0][0] == axes[1][0]:
        raise InputError("sweep", axes[1][0], "the two sweeps must vary different fields")
    check(model, layout)
    grid = LayoutGrid.of(layout)
    cells = []
    for combo in product(*(vals for _, vals in axes)):
        sets = [f"{f}={v}" for (f, _), v in zip(axes, combo)]
        try:
            variant = apply_overrides(hw, sets)
        except InputError as exc:
            raise InputError("sweep", " ".join(sets), exc.reason) from None
        r = _row(model, variant, grid, opts)
        run = bool(r["fits"])  # a variant the layout cannot run on gets no throughput
        cells.append(
            {
                "set": dict(zip((f for f, _ in axes), combo)),
                **{k: r[k] if run else None for k in ("tokens_per_s_per_gpu", "step_time_s", "mfu")},
                "fits": run,
                "memory_bytes_per_gpu": r["memory_bytes_per_gpu"],
                "hbm_bytes": r["hbm_bytes"],
            }
        )
    if not any(c["fits"] for c in cells):
        c = cells[0]
        raise InputError(
            "sweep",
            "",
            f"the layout fits in HBM on no variant of the sweep (first: "
            f"{memory_reason(c['memory_bytes_per_gpu'], c['hbm_bytes'], hw.id)})",
        )
    return Sweep(axes, cells)


def plot_sweep(sw: Sweep, path: str, title: str) -> None:
    """Heat map of tokens/s/GPU (matplotlib, Agg backend): rows = first sweep, columns = second."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    z = np.array([[np.nan if v is None else v for v in r] for r in sw.matrix()], dtype=float)
    fits = np.array(sw.matrix("fits"), dtype=bool)
    fig, ax = plt.subplots(figsize=(1.2 * z.shape[1] + 3, 0.6 * z.shape[0] + 2))
    im = ax.imshow(z, cmap="viridis", aspect="auto", origin="lower")
    ax.set_yticks(range(z.shape[0]), sw.axes[0][1])
    ax.set_ylabel(sw.axes[0][0])
    if len(sw.axes) > 1:
        ax.set_xticks(range(z.shape[1]), sw.axes[1][1])
        ax.set_xlabel(sw.axes[1][0])
    else:
        ax.set_xticks([])
    for (i, j), v in np.ndenumerate(z):
        lo, hi = np.nanmin(z), np.nanmax(z)
        ax.text(
            j,
            i,
            f"{v:,.0f}" if fits[i, j] else "no fit",
            ha="center",
            va="center",
            color="white" if fits[i, j] and v < lo + 0.5 * (hi - lo) else "black",
            fontsize=8,
        )
    fig.colorbar(im, ax=ax, label="tokens/s per GPU")
    import textwrap

    ax.set_title(textwrap.fill(title, max(30, int(11 * fig.get_figwidth()))), fontsize=9)  # wrapped, never cut
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise InputError("plot", path, f"cannot write the plot ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)
