"""Which hardware knob matters: elasticities of step time, and sweeps over what-if hardware.

Elasticity of step time s to a parameter x, by a central finite difference in log space:
    e = d ln s / d ln x  ~  [ln s(x (1 + d)) - ln s(x (1 - d))] / [ln(1 + d) - ln(1 - d)],  d = 10 %
(e = -1: step time inversely proportional to x, as for a purely compute-bound step and peak FLOP/s;
e = 0: x does not matter). The NVLink domain size is discrete, so its elasticity is one-sided, to the
next product size up: e = ln(s(D') / s(D)) / ln(D' / D). HBM capacity does not enter the step time
(perfmodel.predict); it decides whether the layout fits, which is reported instead.
Every variant is a `HardwareSpec` made by `hardware.apply_overrides` and scored by `predict_grid`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product
from typing import Any

from .api import check
from .hardware import HardwareSpec, apply_overrides, field_value
from .layout import Layout, LayoutGrid
from .model import ModelSpec
from .predict import Options, predict_grid
from .errors import InputError

# NVLink domain sizes of shipped or announced systems: HGX 8, HGX B300 NVL16, GB200 NVL36 / NVL72,
# Vera Rubin NVL144, Rubin Ultra NVL576 (NVIDIA product pages); the next one up is the discrete step.
DOMAIN_LADDER = (8, 16, 36, 72, 144, 288, 576)


@dataclass(frozen=True)
class Knob:
    field: str      # dotted HardwareSpec field
    label: str      # words for "+10% <label>"


@dataclass(frozen=True)
class Elasticity:
    field: str
    label: str
    value: float            # SI value in the base spec
    elasticity: float       # d ln(step) / d ln(value)
    low: float              # value of the lower variant (x (1-d), or the base for the domain size)
    high: float             # value of the upper variant
    step_low_s: float
    step_high_s: float
    change_high: float      # step(high) / step(base) - 1

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def knobs(precision: str) -> list[Knob]:
    """The continuous hardware parameters the step time depends on, for a training precision."""
    peak = precision.replace("-block", "")
    out = [Knob(f"peak_flops.{peak}", f"{peak.upper()} peak FLOP/s")]
    if peak != "bf16":  # flash attention and high-precision GEMMs run on the BF16 tensor rate (compute.py)
        out.append(Knob("peak_flops.bf16", "BF16 peak (attention)"))
    out += [Knob("memory.hbm_bandwidth", "HBM bandwidth"),
            Knob("scale_up.bandwidth", "NVLink bandwidth"),
            Knob("scale_out.bandwidth", "NIC bandwidth"),
            Knob("scale_up.latency_s", "NVLink latency"),
            Knob("scale_out.latency_s", "network latency")]
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


def _row(model: ModelSpec, hw: HardwareSpec, grid: LayoutGrid, opts: Options) -> dict[str, Any]:
    """Prediction.row(0) of one variant; a non-finite step time (absurd what-if values) is an InputError."""
    r = predict_grid(model, hw, grid, opts).row(0)
    if not (math.isfinite(r["step_time_s"]) and r["step_time_s"] > 0):
        changed = ", ".join(hw.overridden) or hw.id
        raise InputError(hw.id, changed, "these hardware values give no finite step time; check their units")
    return r


@dataclass(frozen=True)
class Sensitivity:
    base: dict[str, Any]                 # Prediction.row of the unchanged spec
    rel: float                           # the relative step d
    ranked: list[Elasticity]             # by |elasticity|, largest first
    memory: dict[str, Any]               # HBM capacity -> fits

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "rel_step": self.rel, "elasticities": [e.to_dict() for e in self.ranked],
                "hbm_capacity": self.memory}


def sensitivity(model: ModelSpec, hw: HardwareSpec, layout: Layout, opts: Options, rel: float = 0.10) -> Sensitivity:
    """Elasticity of step time to each hardware parameter at `layout`, ranked by magnitude."""
    if not 0 < rel < 1:
        raise InputError("--rel", str(rel), "relative step must be between 0 and 1 (0.1 = +/-10%)")
    check(model, layout)
    grid = LayoutGrid.of(layout)
    base = _row(model, hw, grid, opts)
    s0 = base["step_time_s"]
    out: list[Elasticity] = []
    for k in knobs(opts.precision):
        x = float(field_value(hw, k.field))
        if x == 0:      # a zero latency has no relative change; it cannot matter at first order
            out.append(Elasticity(k.field, k.label, x, 0.0, x, x, s0, s0, 0.0))
            continue
        lo, hi = x * (1 - rel), x * (1 + rel)
        s_lo = _row(model, _with(hw, k.field, lo), grid, opts)["step_time_s"]
        s_hi = _row(model, _with(hw, k.field, hi), grid, opts)["step_time_s"]
        e = (math.log(s_hi) - math.log(s_lo)) / (math.log1p(rel) - math.log1p(-rel))
        out.append(Elasticity(k.field, k.label, x, e, lo, hi, s_lo, s_hi, s_hi / s0 - 1))
    d0, d1 = hw.scale_up.domain_size, next_domain(hw)
    s_d = _row(model, _with(hw, "scale_up.domain_size", d1), grid, opts)["step_time_s"]
    out.append(Elasticity("scale_up.domain_size", "NVLink domain size", float(d0),
                          math.log(s_d / s0) / math.log(d1 / d0), float(d0), float(d1), s0, s_d, s_d / s0 - 1))
    out.sort(key=lambda e: -abs(e.elasticity))
    need, cap = base["memory_bytes_per_gpu"], hw.memory.hbm_bytes
    memory = {"hbm_bytes": cap, "memory_bytes_per_gpu": need, "fits": need <= cap,
              "fits_minus": need <= cap * (1 - rel), "fits_plus": need <= cap * (1 + rel),
              "headroom_fraction": 1 - need / cap}
    return Sensitivity(base, rel, out, memory)


# ---- sweeps ---------------------------------------------------------------------------------------

def parse_sweep(text: str) -> tuple[str, list[str]]:
    """'FIELD=V1,V2,...' -> (FIELD, [V1, V2, ...]); FIELD as --set takes it (dotted field or alias)."""
    key, sep, vals = text.partition("=")
    values = [v.strip() for v in vals.split(",") if v.strip()]
    if not sep or not key.strip() or not values:
        raise InputError("--sweep", text, "expected FIELD=V1,V2,..., e.g. nvlink_domain=8,16,36,72,144")
    return key.strip(), values


@dataclass(frozen=True)
class Sweep:
    axes: list[tuple[str, list[str]]]            # one or two (FIELD, values)
    cells: list[dict[str, Any]]                  # one per combination, first axis outermost

    def matrix(self, key: str = "tokens_per_s_per_gpu") -> list[list[Any]]:
        """Rows = first axis values, columns = second axis values (one column for a single sweep)."""
        ncol = len(self.axes[1][1]) if len(self.axes) > 1 else 1
        vals = [c[key] for c in self.cells]
        return [vals[i:i + ncol] for i in range(0, len(vals), ncol)]

    def to_dict(self) -> dict[str, Any]:
        return {"axes": [{"field": f, "values": v} for f, v in self.axes], "cells": self.cells,
                "tokens_per_s_per_gpu": self.matrix()}


def sweep(model: ModelSpec, hw: HardwareSpec, layout: Layout, opts: Options, specs: list[str]) -> Sweep:
    """Tokens/s/GPU of `layout` on every combination of one or two --sweep FIELD=V1,V2,... lists."""
    if not 1 <= len(specs) <= 2:
        raise InputError("--sweep", "", f"give one or two sweeps (got {len(specs)})")
    axes = [parse_sweep(s) for s in specs]
    if len(axes) == 2 and axes[0][0] == axes[1][0]:
        raise InputError("--sweep", axes[1][0], "the two sweeps must vary different fields")
    check(model, layout)
    grid = LayoutGrid.of(layout)
    cells = []
    for combo in product(*(vals for _, vals in axes)):
        sets = [f"{f}={v}" for (f, _), v in zip(axes, combo)]
        try:
            variant = apply_overrides(hw, sets)
        except InputError as exc:
            raise InputError("--sweep", " ".join(sets), exc.reason) from None
        r = _row(model, variant, grid, opts)
        cells.append({"set": dict(zip((f for f, _ in axes), combo)), "tokens_per_s_per_gpu": r["tokens_per_s_per_gpu"],
                      "step_time_s": r["step_time_s"], "mfu": r["mfu"], "fits": r["fits"]})
    return Sweep(axes, cells)


def plot_sweep(sw: Sweep, path: str, title: str) -> None:
    """Heat map of tokens/s/GPU (matplotlib, Agg backend): rows = first sweep, columns = second."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    z = np.array(sw.matrix(), dtype=float)
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
        ax.text(j, i, f"{v:,.0f}" + ("" if fits[i, j] else "\n(no fit)"), ha="center", va="center",
                color="white" if v < z.min() + 0.5 * (z.max() - z.min()) else "black", fontsize=8)
    fig.colorbar(im, ax=ax, label="tokens/s per GPU")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise InputError("--plot", path, f"cannot write the plot ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)
