"""What `perfmodel cost` and `perfmodel compare` report: one training run's cost, energy and time (a predicted or
a measured throughput), and systems side by side with the planner's best layout on each. The economics
themselves are economics/job.py (TCO, reliability, run cost, energy); this module predicts the step they
price and assembles the documents the commands print (and --json returns)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from perfmodel import api
from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import check_measured_throughput, check_tokens_cover_a_batch, memory_error, memory_reason
from perfmodel.analysis.energy import step_of
from perfmodel.analysis.search import search
from perfmodel.core.predict import Options, Prediction, stack_info
from perfmodel.economics.job import Step, job
from perfmodel.economics.reliability import reliability_inputs, whole_units
from perfmodel.errors import InputError, cli_message
from perfmodel.specs.counts import param_counts
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import ModelSpec


def _predict(m: ModelSpec, hw: HardwareSpec, lay: Layout, opts: Options) -> Prediction:
    return api.predict(
        m, hw, lay, opts.precision, opts.attention, opts.routing, opts.consts, opts.stack, opts.stack_set
    )


def run_cost(
    m: ModelSpec,
    hw: HardwareSpec,
    lay: Layout | None,
    opts: Options,
    *,
    tokens: float,
    buyer: str,
    cost_over: Mapping[str, float],
    rel_over: Mapping[str, Any],
    gpus: int,
    measured_tps: float | None = None,
    seq: int | None = None,
    precision_given: bool = True,
) -> dict[str, Any]:
    """One run of `gpus` GPUs training `tokens` tokens, priced nominal and after reliability: at the throughput
    predicted for `lay`, or at `measured_tps` (then `lay`, where given, only sets the drawn power's phases).
    A measured throughput above 100% of the dense peak (at `seq`, or seq 1 without it; at the precision where
    `precision_given`, else the fastest) is refused, as validate refuses it; a layout that does not fit gets no
    cost."""
    head: dict[str, Any] = {
        "model": m.id,
        "hardware": hw.id,
        "hardware_overridden": list(hw.overridden),
        "buyer": buyer,
        "gpus": gpus,
        "tokens": tokens,
    }
    step: Step | None = None  # the predicted step, for the drawn power (none with a measured throughput, no layout)
    if measured_tps is not None:
        check_measured_throughput(
            m, hw, measured_tps, seq or 1, "tokens_per_s_per_gpu", opts.precision if precision_given else None
        )
        head.update({"throughput_source": "measured", "tokens_per_s_per_gpu": measured_tps})
        tps = measured_tps
        if lay is not None:  # the layout's predicted phases set the drawn power's shares
            step = step_of(_predict(m, hw, lay, opts), 0, m, hw, opts)
            head["power_phases"] = "predicted for the given layout (throughput measured)"
    else:
        assert lay is not None
        check_tokens_cover_a_batch(tokens, lay.gbs, lay.seq)
        p = _predict(m, hw, lay, opts)
        row = p.row(0)
        step = step_of(p, 0, m, hw, opts)
        if not row["fits"]:  # a layout that cannot run gets no cost
            raise memory_error(
                m,
                hw,
                lay,
                row,
                opts.precision,
                opts.attention,
                opts.routing,
                ignore_flag=False,
                stack=opts.stack,
                stack_set=opts.stack_set,
            )
        tps = row["tokens_per_s_per_gpu"]
        head.update(
            {
                "throughput_source": "predicted",
                "tokens_per_s_per_gpu": tps,
                "mfu": row["mfu"],
                "precision": opts.precision,
                "layout": row["layout"],
                "fits": row["fits"],
                **stack_info(opts, m, hw),
            }
        )
    j = job(hw, float(param_counts(m).total), tps, tokens, gpus, buyer, cost_over, rel_over, step=step)
    return {**head, **j.to_dict()}


def best_layout(m: ModelSpec, hw: HardwareSpec, given: Layout, opts: Options) -> tuple[Prediction, str]:
    """The planner's best layout (perfmodel/analysis/search.py) when it finds one that fits, else the given layout."""
    res = search(m, hw, given.gpus, given.gbs, given.seq, opts, objective="throughput", top_k=1)
    if res.top is not None:
        return res.top, "planner"
    return _predict(m, hw, given, opts), "given"


# the compare figures with an 80% band: cost per token is inverse to throughput
BANDED = ("usd_per_million_tokens_nominal", "usd_per_million_tokens_after_reliability", "usd_total_after_reliability")


def _system(
    m: ModelSpec,
    hw: HardwareSpec,
    given: Layout,
    opts: Options,
    planner: bool,
    tokens: float,
    buyer: str,
    cost_over: Mapping[str, float],
    rel_over: Mapping[str, Any],
) -> dict[str, Any]:
    """One system of a comparison: its whole units, layout, throughput, economics and bands, or why it cannot run."""
    # a system is bought in whole servers / racks: the GPU count rounded up to whole units of this system
    units, n = whole_units(reliability_inputs(hw, rel_over), given.gpus)
    unit = {"units": units, "unit_name": hw.cost.unit_name if hw.cost is not None else "server", "gpus": n}
    sys_given = replace(given, gpus=n)
    try:
        if planner:
            p, how = best_layout(m, hw, sys_given, opts)
        else:
            p = api.predict(m, hw, sys_given, opts.precision, stack=opts.stack, stack_set=opts.stack_set)
            how = "given"
    except InputError as exc:  # the given layout breaks a rule on this system
        return {
            "hardware": hw.id,
            "hardware_overridden": list(hw.overridden),
            "runnable": False,
            "reason": cli_message(exc),
            **unit,
        }
    row = p.row(0)
    if not row["fits"]:  # cannot run: no throughput, cost or energy beside it
        why = memory_reason(row["memory_bytes_per_gpu"], row["hbm_bytes"], hw.id)
        return {
            "hardware": hw.id,
            "hardware_overridden": list(hw.overridden),
            "runnable": False,
            "layout_from": how,
            "layout": row["layout"],
            **unit,
            "reason": (
                "no layout the planner tried fits; the given layout "
                if how == "given" and planner
                else "the given layout "
            )
            + why,
        }
    tps = row["tokens_per_s_per_gpu"]
    step = step_of(p, 0, m, hw, opts)
    e = job(hw, float(param_counts(m).total), tps, tokens, n, buyer, cost_over, rel_over, step=step).to_dict()
    o = {
        "hardware": hw.id,
        "hardware_overridden": list(hw.overridden),
        "runnable": True,
        "layout_from": how,
        **unit,
        "layout": row["layout"],
        "tokens_per_s_per_gpu": tps,
        "mfu": row["mfu"],
        "stack_rules": stack_info(opts, m, hw)["stack_rules"],
        **e,
    }
    # 80% band from validation spread (perfmodel/analysis/uncertainty.py)
    b = uncertainty.band_for(m, hw, opts.stack, int(row["layout"]["vp"]))
    o["band"] = b.to_dict()
    uncertainty.with_band(o, "tokens_per_s_per_gpu", b.throughput(tps))
    for k in BANDED:
        uncertainty.with_band(o, k, b.inverse(e[k]))
    return o


def compare(
    m: ModelSpec,
    hws: list[HardwareSpec],
    given: Layout,
    opts: Options,
    *,
    planner: bool,
    tokens: float,
    buyer: str,
    cost_over: Mapping[str, float],
    rel_over: Mapping[str, Any],
) -> dict[str, Any]:
    """Systems side by side at `given.gpus` GPUs each (rounded up to whole units): the planner's best layout on
    each (`planner`; else `given`), throughput, economics nominal and after reliability, and perf per TCO
    relative to the first system that can run. An InputError when none can."""
    out = [_system(m, hw, given, opts, planner, tokens, buyer, cost_over, rel_over) for hw in hws]
    ok = [o for o in out if o["runnable"]]
    if not ok:  # nothing usable to show
        raise InputError(
            "compare",
            "",
            f"no system can run {m.id} on {given.gpus} GPUs (gbs {given.gbs}, seq {given.seq}): "
            + "; ".join(f"{o['hardware']}: {o['reason']}" for o in out),
        )
    base = ok[0]  # perf per TCO relative to the first system that can run
    for o in ok:
        o["perf_per_tco_vs_first_nominal"] = (o["tokens_per_s_per_gpu"] / o["usd_per_gpu_hour"]) / (
            base["tokens_per_s_per_gpu"] / base["usd_per_gpu_hour"]
        )
        o["perf_per_tco_vs_first_after_reliability"] = (
            base["usd_per_million_tokens_after_reliability"] / o["usd_per_million_tokens_after_reliability"]
        )
    return {
        "model": m.id,
        "gpus_requested": given.gpus,
        "gpus": given.gpus,
        "precision": opts.precision,
        "buyer": buyer,
        "tokens": tokens,
        **{k: v for k, v in stack_info(opts).items() if k != "stack_rules"},
        "systems": out,
    }
