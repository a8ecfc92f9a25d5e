"""The economics of one training job, once: its TCO, its reliability (goodput, spares) and its run cost nominal
and after reliability (cost_report.md's method: economics/tco.py run_cost, economics/reliability.py assess).
Every command and report that prices a job reads `job` (issue 24: job economics was written four times)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from perfmodel.economics.reliability import Reliability, ReliabilityInputs, assess, reliability_inputs, spares_text
from perfmodel.economics.tco import TCO, RunCost, run_cost, tco_for
from perfmodel.errors import InputError
from perfmodel.specs.hardware import HardwareSpec


@dataclass(frozen=True)
class Job:
    """A job of `gpus` GPUs training `tokens` tokens at `tokens_per_s_per_gpu`, priced."""

    tco: TCO
    priced: bool  # False: the hardware has no sourced price; every $ figure is withheld
    reliability: Reliability
    nominal: RunCost
    after_reliability: RunCost
    spares_text: str

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
) -> Job:
    """A job from its TCO and reliability inputs (callers that price many jobs of one system keep both)."""
    rel = assess(ri, gpus, params_total)
    nominal = run_cost(t, tokens_per_s_per_gpu, tokens, gpus)
    after = run_cost(t, tokens_per_s_per_gpu, tokens, gpus, rel.goodput_fraction, rel.cost_factor, rel.energy_factor)
    return Job(t, priced, rel, nominal, after, spares_text(ri, hw.cost.unit_name if hw.cost is not None else "server"))


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
) -> Job:
    """The job's economics with the buyer's cost assumptions and reliability defaults (costs.toml), overridden
    by `cost_over` / `rel_over`. `require_price` False: unpriced hardware gives energy and time, no dollars."""
    if require_price:
        t, priced = tco_for(hw, buyer, cost_over), True
    else:
        t, priced = priced_tco(hw, buyer, cost_over)
    return job_of(
        t, priced, reliability_inputs(hw, dict(rel_over or {})), hw, params_total, tokens_per_s_per_gpu, tokens, gpus
    )
