"""The economics of one training job, once: its TCO, its reliability (goodput, spares) and its run cost nominal
and after reliability (cost_report.md's method: economics/tco.py run_cost, economics/reliability.py assess), and
its energy by both methods: drawn (economics/power.py, from what the predicted step does) and rated (the cost
report's all-in rating x time, kept to reproduce the report). Every command and report that prices a job reads
`job` (issue 24: job economics was written four times)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from perfmodel.economics import power as pw
from perfmodel.economics.reliability import (
    REL_KEYS,
    Reliability,
    ReliabilityInputs,
    assess,
    reliability_inputs,
    spares_text,
)
from perfmodel.economics.tco import (
    COST_KEYS,
    HOUSEHOLD_J_PER_YEAR,
    J_PER_KWH,
    TCO,
    RunCost,
    parse_sets,
    run_cost,
    tco_for,
)
from perfmodel.errors import InputError, did_you_mean
from perfmodel.specs.hardware import HardwareSpec, hardware_set_keys


@dataclass(frozen=True)
class Step:
    """What the job's predicted step does, for its drawn power and replica-scoped recovery: seconds per
    core/predict.py BREAKDOWN term, the GPU power limit of the stack (None: the TDP) and the job's
    data-parallel replicas."""

    breakdown_s: Mapping[str, float] = field(default_factory=dict)
    power_limit_w: float | None = None
    replicas: int = 1


ENERGY_KEYS = ("joules_per_token", "energy_j", "mwh", "household_years", "electricity_usd")


@dataclass(frozen=True)
class Energy:
    """The job's energy by one method: utility (site) W per training GPU, and per token, in total, in US
    household-years and in electricity dollars, nominal and after reliability (x energy factor / goodput)."""

    method: str  # drawn | rated
    site_w_per_gpu: float
    nominal: dict[str, float]
    after_reliability: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "site_w_per_gpu": self.site_w_per_gpu,
            **{k + "_nominal": v for k, v in self.nominal.items()},
            **{k + "_after_reliability": v for k, v in self.after_reliability.items()},
        }


def energy_of(
    method: str,
    site_w_per_gpu: float,
    tokens_per_s_per_gpu: float,
    tokens: float,
    usd_per_kwh: float,
    energy_factor: float,
    goodput: float,
) -> Energy:
    """Energy = site W per GPU / tokens/s/GPU x tokens; after reliability x energy_factor / goodput (the lost
    time drawn at the step's mean power, an upper bound: checkpoint writes and restarts draw less)."""

    def figures(j_per_token: float) -> dict[str, float]:
        e = j_per_token * tokens
        return {
            "joules_per_token": j_per_token,
            "energy_j": e,
            "mwh": e / J_PER_KWH / 1000.0,
            "household_years": e / HOUSEHOLD_J_PER_YEAR,
            "electricity_usd": e / J_PER_KWH * usd_per_kwh,
        }

    j = site_w_per_gpu / tokens_per_s_per_gpu
    return Energy(method, site_w_per_gpu, figures(j), figures(j * energy_factor / goodput))


@dataclass(frozen=True)
class Job:
    """A job of `gpus` GPUs training `tokens` tokens at `tokens_per_s_per_gpu`, priced."""

    tco: TCO
    priced: bool  # False: the hardware has no sourced price; every $ figure is withheld
    reliability: Reliability
    nominal: RunCost
    after_reliability: RunCost
    spares_text: str
    energy_rated: Energy | None = None
    energy_drawn: Energy | None = None  # None: no predicted step, or a spec without drawn-power fields
    power: pw.PowerDraw | None = None
    power_rated: dict[str, Any] = field(default_factory=dict)  # the `power` record when drawn is unavailable
    power_note: str = ""

    def energy_dict(self) -> dict[str, Any]:
        """Both energy figures: drawn (what the hardware draws over the predicted step) and rated (the cost
        report's rating x time); the top-level joules_per_token / mwh / household_years keys are the rated."""
        return {
            "drawn": self.energy_drawn.to_dict() if self.energy_drawn is not None else None,
            "rated": self.energy_rated.to_dict() if self.energy_rated is not None else None,
            "note": self.power_note
            or "drawn: power by phase of the predicted step (economics/power.py); rated: all-in rating x time "
            "(cost_report.md's method)",
        }

    def power_dict(self) -> dict[str, Any]:
        return self.power.to_dict() if self.power is not None else self.power_rated

    def to_dict(self) -> dict[str, Any]:
        """The JSON keys every command prints for a job: $/GPU-hour, goodput, the two run costs (their fields
        suffixed _nominal and _after_reliability), the reliability and TCO records. Unpriced: $ keys None."""
        rel, t = self.reliability, self.tco
        d = {
            "usd_per_gpu_hour": t.usd_per_gpu_hour,
            "goodput_fraction": rel.goodput_fraction,
            **self.nominal.to_dict("_nominal"),
            **self.after_reliability.to_dict("_after_reliability"),
            "usd_per_job_gpu_hour_after_reliability": t.usd_per_gpu_hour * rel.cost_factor,
            "reliability": rel.to_dict(),
            "tco": t.to_dict(),
            "spares": "charged" if rel.inputs.count_hot_spares else "excluded",
            "spares_text": self.spares_text,
            "power": self.power_dict(),
            "energy": self.energy_dict(),
        }
        if not self.priced:
            d = {k: (None if k.startswith("usd") else v) for k, v in d.items()}
        return d


def priced_tco(hw: HardwareSpec, buyer: str, overrides: Mapping[str, float] | None = None) -> tuple[TCO, bool]:
    """(TCO, priced). Energy per token does not depend on capital cost, so a hardware file without a
    price still gets J/token: a placeholder capex is used for the power terms and `priced` is False."""
    try:
        return tco_for(hw, buyer, overrides), True
    except InputError as exc:
        if exc.field != "cost":
            raise
        return tco_for(hw, buyer, {**(overrides or {}), "allin_capex_usd_per_gpu": 1.0}), False


def job_of(
    t: TCO,
    priced: bool,
    ri: ReliabilityInputs,
    hw: HardwareSpec,
    params_total: float,
    tokens_per_s_per_gpu: float,
    tokens: float,
    gpus: int,
    step: Step | None = None,
) -> Job:
    """A job from its TCO and reliability inputs (callers that price many jobs of one system keep both).
    `step`: the predicted step (drawn power, replicas); None: rated energy only."""
    rel = assess(ri, gpus, params_total, step.replicas if step is not None else 1)
    nominal = run_cost(t, tokens_per_s_per_gpu, tokens, gpus)
    after = run_cost(t, tokens_per_s_per_gpu, tokens, gpus, rel.goodput_fraction, rel.cost_factor, rel.energy_factor)
    i = t.inputs
    args = (tokens_per_s_per_gpu, tokens, i.electricity_usd_per_kwh)
    rated = energy_of("rated", t.utility_w_per_gpu, *args, rel.energy_factor, rel.goodput_fraction)
    drawn = draw = None
    note = ""
    if step is None:
        note = "drawn power needs a predicted step (a layout); rated method only"
    elif not hw.power.drawn:
        note = f"{hw.id} has no drawn-power fields (power.idle_w, ...); rated method only"
    else:
        lv = pw.levels(hw, step.power_limit_w)
        draw = pw.draw(
            pw.step_power(lv, step.breakdown_s),
            lv,
            hw,
            gpus,
            i.network_storage_w_per_gpu,
            i.pue,
            rel.checkpoint_s,
            rel.checkpoint_interval_s,
        )
        site = draw.site_w_per_gpu
        factor = 1.0
        if ri.count_hot_spares and ri.hot_spare_gpus_per_unit:  # installed hot spares powered, at idle
            spare_site = (lv.node_w(lv.idle_w) + i.network_storage_w_per_gpu) * i.pue
            factor += ri.hot_spare_gpus_per_unit / ri.used_per_unit * spare_site / site
        drawn = energy_of("drawn", site, *args, factor, rel.goodput_fraction)
    rated_power = {} if draw is not None else pw.rated(hw, gpus, i.network_storage_w_per_gpu, i.pue, note)
    return Job(
        t,
        priced,
        rel,
        nominal,
        after,
        spares_text(ri, hw.cost.unit_name if hw.cost is not None else "server"),
        rated,
        drawn,
        draw,
        rated_power,
        note,
    )


def job(
    hw: HardwareSpec,
    params_total: float,
    tokens_per_s_per_gpu: float,
    tokens: float,
    gpus: int,
    buyer: str = "hyperscaler",
    cost_over: Mapping[str, float] | None = None,
    rel_over: Mapping[str, Any] | None = None,
    require_price: bool = True,
    step: Step | None = None,
) -> Job:
    """The job's economics with the buyer's cost assumptions and reliability defaults (costs.toml), overridden
    by `cost_over` / `rel_over`. `require_price` False: unpriced hardware gives energy and time, no dollars.
    `step`: the predicted step, for the drawn energy and power (None: rated only)."""
    if require_price:
        t, priced = tco_for(hw, buyer, cost_over), True
    else:
        t, priced = priced_tco(hw, buyer, cost_over)
    return job_of(
        t,
        priced,
        reliability_inputs(hw, dict(rel_over or {})),
        hw,
        params_total,
        tokens_per_s_per_gpu,
        tokens,
        gpus,
        step,
    )


def step_power(
    hw: HardwareSpec,
    step: Step,
    gpus: int,
    params_total: float,
    buyer: str = "hyperscaler",
    cost_over: Mapping[str, float] | None = None,
    rel_over: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The `power` record of a predicted step without a run to price (predict): the buyer's network power and
    PUE, the checkpoint write from the reliability defaults; the rated record where the spec has no drawn
    fields."""
    t, _ = priced_tco(hw, buyer, cost_over)
    i = t.inputs
    if not hw.power.drawn:
        why = f"{hw.id} has no drawn-power fields (power.idle_w, ...); rated method only"
        return pw.rated(hw, gpus, i.network_storage_w_per_gpu, i.pue, why)
    rel = assess(reliability_inputs(hw, dict(rel_over or {})), gpus, params_total, step.replicas)
    lv = pw.levels(hw, step.power_limit_w)
    return pw.draw(
        pw.step_power(lv, step.breakdown_s),
        lv,
        hw,
        gpus,
        i.network_storage_w_per_gpu,
        i.pue,
        rel.checkpoint_s,
        rel.checkpoint_interval_s,
    ).to_dict()


# ---- the assumptions a command overrides -----------------------------------------------------------------


def split_sets(items: tuple[str, ...] | list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """KEY=VALUE overrides -> (cost overrides, reliability overrides); unknown keys name a close match
    (hardware fields included: split those off first with specs.hardware.split_hardware_sets)."""
    sets = parse_sets(items)
    known = COST_KEYS + tuple(k for k in REL_KEYS if k != "count_hot_spares")
    for k in sets:
        if k == "count_hot_spares":
            raise InputError("set", k, "the spare policy has one flag on every command: --spares charged|excluded")
        if k not in known:
            raise InputError(
                "set",
                k,
                f"unknown assumption{did_you_mean(k, [*known, *hardware_set_keys()])}; "
                f"known: {', '.join(known)}, or a hardware field as `perfmodel show hardware` "
                "lists it",
            )
    return ({k: v for k, v in sets.items() if k in COST_KEYS}, {k: v for k, v in sets.items() if k in REL_KEYS})


def reliability_overrides(
    extra: Mapping[str, Any],
    *,
    mtbi_gpu_days: float | None = None,
    restart_s: float | None = None,
    checkpoint_s: float | None = None,
    spare_units: int | None = None,
    spares: str = "charged",
    interval: str = "young",
    recovery: str = "job",
) -> dict[str, Any]:
    """The reliability overrides of a job: `extra` (KEY=VALUE assumptions), the values given (None: the
    costs.toml default), the spare policy, the checkpoint-interval formula and the recovery scope."""
    over: dict[str, Any] = dict(extra)
    for k, v in (
        ("mtbi_gpu_days", mtbi_gpu_days),
        ("restart_s", restart_s),
        ("checkpoint_s", checkpoint_s),
        ("spare_units", spare_units),
    ):
        if v is not None:
            over[k] = v
    over["count_hot_spares"] = spares == "charged"
    over["interval"] = interval
    over["recovery"] = recovery
    return over
