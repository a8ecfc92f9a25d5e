"""Economics: total cost of ownership per GPU-hour, cost per token, energy per token, households.

Method of the reference cost report (cost_report.md, SemiAnalysis 2025-08-20): all-in capital cost per
GPU (server or rack + networking + storage + other), recovered over the depreciation life at the cost of
capital, plus operating cost (all-in power x PUE x electricity price, colocation per kW-month, support),
gives $ per GPU-hour; dividing by throughput gives $ per token. Energy is "utility joules per token":
all-in power of the cluster grossed up by PUE, over tokens/s/GPU. Defaults are the named assumptions of
perfmodel/costs.toml (per buyer type) and the hardware file's [cost] and [power]; any can be overridden.

SI inside (s, J, W, USD); the user-facing assumption names keep their customary units (kWh, kW-month,
years) and are converted in the formulas below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from perfmodel.errors import InputError, did_you_mean
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.specfile import read_document, split_sources

COSTS_FILE = Path(__file__).resolve().parents[1] / "costs.toml"  # perfmodel/costs.toml
HOURS_PER_YEAR = 8760.0  # 365 days
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86400.0
J_PER_KWH = 3.6e6
# US EIA: average annual electricity use of a US residential customer, 2022: 10,791 kWh (cost_report.md)
HOUSEHOLD_KWH_PER_YEAR = 10791.0
HOUSEHOLD_J_PER_YEAR = HOUSEHOLD_KWH_PER_YEAR * J_PER_KWH  # 38,847,600,000 J, 1,232 W average
BUYERS = ("hyperscaler", "neocloud-giant", "emerging-neocloud")


@lru_cache(maxsize=8)
def load_costs(path: str = str(COSTS_FILE)) -> tuple[dict[str, Any], dict[str, str]]:
    """costs.toml -> (plain values, {dotted.key: source})."""
    return split_sources(read_document(Path(path)))


@dataclass(frozen=True)
class CostInputs:
    """Every input of the TCO, resolved for one hardware and buyer (overridable by name with --set)."""

    hardware: str
    buyer: str
    server_capex_usd_per_gpu: float  # server or rack alone, per GPU, hyperscaler price
    allin_capex_usd_per_gpu: float  # + networking, storage, other, per GPU, hyperscaler price
    capex_factor: float  # buyer's price relative to the hardware file's
    depreciation_years: float
    cost_of_capital: float  # annual
    electricity_usd_per_kwh: float
    pue: float
    colocation_usd_per_kw_month: float  # per kW of critical IT power
    support_fraction_per_year: float  # support + maintenance, fraction of capex per year
    allin_w_per_gpu: float  # the system's IT power per GPU (hardware [power])
    network_storage_w_per_gpu: float  # cluster network + storage IT power per GPU
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def settable(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in COST_KEYS}


COST_KEYS = tuple(f.name for f in fields(CostInputs) if f.name not in ("hardware", "buyer", "sources"))


def parse_sets(items: tuple[str, ...] | list[str]) -> dict[str, float]:
    """['KEY=VALUE', ...] -> {KEY: float}; a malformed item or value is an InputError."""
    out: dict[str, float] = {}
    for item in items:
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError("set", item, "expected KEY=VALUE")
        try:
            num = float(val)
        except ValueError:
            raise InputError("set", key, f"value must be a number (got {val!r})") from None
        if not math.isfinite(num):
            raise InputError("set", key, f"value must be finite (got {val!r})")
        if key in out:  # a repeated key is two answers to one question, never "the last wins"
            raise InputError("set", key, f"given twice ({out[key]:g} and {num:g}): give it once")
        out[key] = num
    return out


def check_keys(overrides: Mapping[str, float], known: tuple[str, ...]) -> None:
    for key in overrides:
        if key not in known:
            raise InputError("set", key, f"unknown assumption{did_you_mean(key, known)}; known: {', '.join(known)}")


# Plausibility: above these a value is a typo or a unit slip (cents for dollars, W for kW), never a data centre.
ABSURD_ABOVE = {
    "server_capex_usd_per_gpu": 1e7,
    "allin_capex_usd_per_gpu": 1e7,
    "capex_factor": 100.0,
    "depreciation_years": 100.0,
    "cost_of_capital": 10.0,
    "electricity_usd_per_kwh": 100.0,
    "pue": 10.0,
    "colocation_usd_per_kw_month": 1e5,
    "support_fraction_per_year": 10.0,
    "allin_w_per_gpu": 1e5,
    "network_storage_w_per_gpu": 1e5,
}


def _require(cond: bool, key: str, reason: str) -> None:
    if not cond:
        raise InputError("cost assumption", key, reason)


def cost_inputs(
    hw: HardwareSpec,
    buyer: str = "hyperscaler",
    overrides: Mapping[str, float] | None = None,
    costs_path: str = str(COSTS_FILE),
) -> CostInputs:
    """Defaults from costs.toml (buyer) and the hardware file, then `overrides` by name."""
    overrides = dict(overrides or {})
    check_keys(overrides, COST_KEYS)
    values, sources = load_costs(costs_path)
    buyers = values.get("buyer", {})
    if buyer not in buyers:
        raise InputError("buyer", buyer, f"unknown buyer type{did_you_mean(buyer, buyers)}; one of {', '.join(buyers)}")
    b = buyers[buyer]
    src = {k: sources.get(f"buyer.{buyer}.{k}", "") for k in b}

    c = hw.cost
    server = allin = None
    if c is not None:
        if c.unit_capex_usd is not None:
            server = c.unit_capex_usd / c.gpus_per_unit
            src["server_capex_usd_per_gpu"] = hw.sources.get("cost.unit_capex_usd", hw.path)
        if c.allin_capex_usd is not None:
            allin = c.allin_capex_usd / c.gpus_per_unit
            src["allin_capex_usd_per_gpu"] = hw.sources.get("cost.allin_capex_usd", hw.path)
    f_other = float(b["other_capex_fraction"])
    if "allin_capex_usd_per_gpu" in overrides:
        allin = overrides["allin_capex_usd_per_gpu"]
    if "server_capex_usd_per_gpu" in overrides:
        server = overrides["server_capex_usd_per_gpu"]
    if allin is None and server is not None:  # networking, storage, other at the report's H100 share
        allin = server * (1 + f_other)
        src["allin_capex_usd_per_gpu"] = f"server capex x (1 + other_capex_fraction {f_other})"
    if server is None and allin is not None:
        server = allin / (1 + f_other)
        src["server_capex_usd_per_gpu"] = f"all-in capex / (1 + other_capex_fraction {f_other})"
    if allin is None or server is None:
        raise InputError(
            hw.id,
            "cost",
            "no capital cost in the hardware file ([cost] unit_capex_usd / allin_capex_usd); "
            "pass --set allin_capex_usd_per_gpu=USD",
        )
    pue = float(b["pue_liquid"] if (c is not None and c.liquid_cooled) else b["pue_air"])
    src["pue"] = src.get("pue_liquid" if (c is not None and c.liquid_cooled) else "pue_air", "")
    src["allin_w_per_gpu"] = hw.sources.get("power.allin_w_per_gpu", hw.path)
    vals: dict[str, float] = {
        "server_capex_usd_per_gpu": server,
        "allin_capex_usd_per_gpu": allin,
        "capex_factor": float(b["capex_factor"]),
        "depreciation_years": float(b["depreciation_years"]),
        "cost_of_capital": float(b["cost_of_capital"]),
        "electricity_usd_per_kwh": float(b["electricity_usd_per_kwh"]),
        "pue": pue,
        "colocation_usd_per_kw_month": float(b["colocation_usd_per_kw_month"]),
        "support_fraction_per_year": float(b["support_fraction_per_year"]),
        "allin_w_per_gpu": hw.power.allin_w_per_gpu,
        "network_storage_w_per_gpu": float(b["network_storage_w_per_gpu"]),
    }
    # a what-if spec (fields changed by --set or a `base =` file) is priced as its base system unless a price is
    # given: said in the price's source, which every command prints or puts in --json
    changed = [f for f in hw.overridden if not f.startswith("cost.")]
    if changed and not {"allin_capex_usd_per_gpu", "server_capex_usd_per_gpu"} & set(overrides):
        note = (
            f" (what-if hardware: priced as {hw.base or hw.id}, unchanged by {', '.join(changed)}; give "
            "--set allin_capex_usd_per_gpu=USD for the variant's price)"
        )
        for k in ("server_capex_usd_per_gpu", "allin_capex_usd_per_gpu"):
            src[k] = src.get(k, "") + note
    vals.update(overrides)
    src.update({k: "--set" for k in overrides})
    ci = CostInputs(hardware=hw.id, buyer=buyer, **vals, sources={k: src.get(k, "") for k in COST_KEYS})
    _require(
        ci.allin_capex_usd_per_gpu >= ci.server_capex_usd_per_gpu,
        "allin_capex_usd_per_gpu",
        "must be at least server_capex_usd_per_gpu",
    )
    for k in ("server_capex_usd_per_gpu", "capex_factor", "depreciation_years", "pue", "allin_w_per_gpu"):
        _require(getattr(ci, k) > 0, k, "must be > 0")
    _require(ci.pue >= 1, "pue", "must be >= 1 (facility power / IT power)")
    for k in (
        "cost_of_capital",
        "electricity_usd_per_kwh",
        "colocation_usd_per_kw_month",
        "support_fraction_per_year",
        "network_storage_w_per_gpu",
    ):
        _require(getattr(ci, k) >= 0, k, "must be >= 0")
    for k, top in ABSURD_ABOVE.items():
        _require(getattr(ci, k) <= top, k, f"must be at most {top:g} (got {getattr(ci, k):g}): a typo or a unit slip?")
    return ci


def capital_recovery_factor(rate: float, years: float) -> float:
    """Level annual payment per $ of capital over `years` at `rate` (standard annuity formula,
    CRF = r / (1 - (1 + r)^-n)); r = 0 gives straight-line depreciation 1/n."""
    if rate == 0:
        return 1.0 / years
    return rate / (1.0 - (1.0 + rate) ** -years)


@dataclass(frozen=True)
class TCO:
    inputs: CostInputs
    usd_per_gpu_hour: float
    capex_usd_per_gpu: float
    capex_breakdown_usd_per_gpu: dict[str, float]
    breakdown_usd_per_gpu_hour: dict[str, float]
    it_w_per_gpu: float  # all-in IT power incl. cluster network + storage
    utility_w_per_gpu: float  # x PUE

    def to_dict(self) -> dict[str, Any]:
        i = self.inputs
        return {
            "hardware": i.hardware,
            "buyer": i.buyer,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "capex_usd_per_gpu": self.capex_usd_per_gpu,
            "capex_breakdown_usd_per_gpu": self.capex_breakdown_usd_per_gpu,
            "breakdown_usd_per_gpu_hour": self.breakdown_usd_per_gpu_hour,
            "it_w_per_gpu": self.it_w_per_gpu,
            "utility_w_per_gpu": self.utility_w_per_gpu,
            "assumptions": {k: {"value": v, "source": i.sources.get(k, "")} for k, v in i.settable().items()},
            "price_note": self.price_note,
        }

    @property
    def price_note(self) -> str:
        """'' for a catalog system's price; for a what-if spec priced as its base system, the sentence that says so."""
        src = self.inputs.sources.get("allin_capex_usd_per_gpu", "")
        return src[src.index("(what-if hardware") :].strip("() ") if "(what-if hardware" in src else ""


def tco(ci: CostInputs) -> TCO:
    """$ per GPU-hour of owning and running one GPU (no rental margin), with its breakdown."""
    capex = ci.allin_capex_usd_per_gpu * ci.capex_factor
    server = ci.server_capex_usd_per_gpu * ci.capex_factor
    capital = capex * capital_recovery_factor(ci.cost_of_capital, ci.depreciation_years) / HOURS_PER_YEAR
    depreciation = capex / ci.depreciation_years / HOURS_PER_YEAR
    it_w = ci.allin_w_per_gpu + ci.network_storage_w_per_gpu
    utility_w = it_w * ci.pue
    electricity = utility_w * SECONDS_PER_HOUR * ci.electricity_usd_per_kwh / J_PER_KWH
    colocation = it_w / 1000.0 * ci.colocation_usd_per_kw_month * 12.0 / HOURS_PER_YEAR
    support = ci.support_fraction_per_year * capex / HOURS_PER_YEAR
    parts = {
        "depreciation": depreciation,
        "cost_of_capital": capital - depreciation,
        "electricity": electricity,
        "colocation": colocation,
        "support_maintenance": support,
    }
    return TCO(
        ci,
        sum(parts.values()),
        capex,
        {"server_or_rack": server, "network_storage_other": capex - server},
        parts,
        it_w,
        utility_w,
    )


def tco_for(hw: HardwareSpec, buyer: str = "hyperscaler", overrides: Mapping[str, float] | None = None) -> TCO:
    return tco(cost_inputs(hw, buyer, overrides))


@dataclass(frozen=True)
class RunCost:
    """Cost and energy of training `tokens` at a throughput, scaled by reliability factors."""

    usd_per_million_tokens: float
    joules_per_token: float  # utility joules (all-in power x PUE)
    usd_total: float
    energy_j: float
    mwh: float
    household_years: float
    gpu_hours: float
    wall_days: float

    def to_dict(self, suffix: str = "") -> dict[str, float]:
        """Its fields as JSON keys; `suffix` "_nominal" or "_after_reliability" names which run cost it is
        (RUN_COST_SUFFIXES: one vocabulary across cost, compare, size, scaling and the report)."""
        return {f.name + suffix: getattr(self, f.name) for f in fields(self)}


RUN_COST_SUFFIXES = ("_nominal", "_after_reliability")


def run_cost(
    t: TCO,
    tokens_per_s_per_gpu: float,
    tokens: float,
    gpus: int,
    goodput: float = 1.0,
    cost_factor: float = 1.0,
    energy_factor: float = 1.0,
) -> RunCost:
    """Cost per token = $/GPU-h / (tokens/s/GPU x 3600); energy per token = utility W / tokens/s/GPU.
    Reliability: wall time and GPU-hours grow by 1/goodput; cost by cost_factor (spares) / goodput;
    energy by energy_factor / goodput (idle spare units' power is not counted)."""
    if not (tokens_per_s_per_gpu > 0 and math.isfinite(tokens_per_s_per_gpu)):
        raise InputError(
            "throughput", "tokens_per_s_per_gpu", f"must be a positive number (got {tokens_per_s_per_gpu})"
        )
    if not (tokens > 0 and math.isfinite(tokens)):
        raise InputError("tokens", "tokens", f"must be a positive number (got {tokens})")
    if gpus < 1:
        raise InputError("gpus", "gpus", "must be >= 1")
    if not 0 < goodput <= 1:
        raise InputError("reliability", "goodput", f"must be in (0, 1] (got {goodput})")
    usd_per_token = t.usd_per_gpu_hour / (tokens_per_s_per_gpu * SECONDS_PER_HOUR) * cost_factor / goodput
    j_per_token = t.utility_w_per_gpu / tokens_per_s_per_gpu * energy_factor / goodput
    wall_s = tokens / (tokens_per_s_per_gpu * gpus) / goodput
    energy = j_per_token * tokens
    if not all(math.isfinite(v) for v in (usd_per_token * tokens, energy, wall_s * gpus * cost_factor)):
        if goodput < 1e-300:
            raise InputError(
                "reliability",
                "goodput",
                f"the run never finishes (goodput {goodput:.3g}): "
                "interruptions outpace recovery; check the reliability assumptions",
            )
        raise InputError(
            "tokens",
            "tokens",
            f"{tokens:g} tokens at {tokens_per_s_per_gpu:g} tokens/s/GPU: the run's cost, energy or time overflows",
        )
    return RunCost(
        usd_per_token * 1e6,
        j_per_token,
        usd_per_token * tokens,
        energy,
        energy / J_PER_KWH / 1000.0,
        energy / HOUSEHOLD_J_PER_YEAR,
        wall_s * gpus / SECONDS_PER_HOUR * cost_factor,
        wall_s / SECONDS_PER_DAY,
    )


def usd_per_gpu_hour(
    hw: HardwareSpec, buyer: str = "hyperscaler", overrides: Mapping[str, float] | None = None
) -> float:
    """$ per GPU-hour with the default assumptions (the planner's cost objective reads this)."""
    return tco_for(hw, buyer, overrides).usd_per_gpu_hour
