"""Reliability: interruptions, checkpointing, goodput and spares for a training job.

Model (each formula names its source):
- Interruptions are independent per GPU: the job's mean time between interruptions is
  M = mtbi_gpu_days x 86400 / gpus, so interruptions grow linearly with job size
  (cost_report.md: H100 2,000-5,000 GPU-days, GB200 NVL72 1,000-3,000).
- Checkpoint interval: Young 1974, tau = sqrt(2 C M) (C = blocking checkpoint write time), or Daly 2006's
  higher-order estimate tau = sqrt(2 C M) [1 + sqrt(C / 2M) / 3 + C / 18M] - C (for C < 2M, else M).
- Goodput (useful fraction of wall time) with exponential failures, restart time R: Daly 2006, "A higher
  order estimate of the optimum checkpoint interval for restart dumps", FGCS 22, eq. for the expected
  wall time of a segment: T(tau) = M e^(R/M) (e^((tau + C)/M) - 1), goodput = tau / T(tau), in (0, 1].
- Blast radius and spares (cost_report.md): an HGX server drains 8 GPUs on any fault; an NVL72 rack runs
  64 of 72 GPUs with 8 hot spares, compute-tray faults are absorbed by the spares, while switch-tray and
  backplane repairs drain all 72. The job holds spare units (servers or racks) so that a failed unit is
  replaced at once: spares = max(min_spare_units, ceil(units of the job expected in repair)), where units
  in repair = units x unit-wide event rate x repair time (Little's law). Without spares a unit-wide event
  (or, with no hot spares, any fault) adds its repair time to the restart.
- Cost: the job pays for its GPUs plus its spare units, and by default for the in-rack hot spares too (they are
  installed and paid for whether or not they train: gpus_per_unit / used_per_unit, 72/64 on NVL72);
  `--spares excluded` (count_hot_spares = False) leaves them out. Idle spares' energy is not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Literal, Mapping

from perfmodel.economics.tco import COSTS_FILE, SECONDS_PER_DAY, check_keys, load_costs
from perfmodel.errors import InputError
from perfmodel.specs.hardware import HardwareSpec

Interval = Literal["young", "daly"]


@dataclass(frozen=True)
class ReliabilityInputs:
    mtbi_gpu_days: float  # mean time between interruptions, GPU-days per interruption
    restart_s: float  # detect, reschedule onto spares, reload checkpoint
    checkpoint_bytes_per_param: float
    storage_write_bytes_per_s_per_gpu: float
    unit_event_fraction: float  # share of interruptions that drain a whole server / rack
    unit_repair_s: float  # repair time of such a unit-wide event
    component_repair_s: float  # repair time of the other faults (e.g. an NVL72 compute tray)
    hot_spare_gpus_per_unit: int
    min_spare_units: int
    gpus_per_unit: int  # from the hardware's [cost] (8 per HGX server, 72 per NVL72 rack)
    checkpoint_s: float | None = None  # blocking checkpoint write time; None = from bytes and bandwidth
    spare_units: int | None = None  # None = sized from the repair load
    count_hot_spares: bool = True  # charge the in-rack hot spares to training (installed hardware is paid)
    interval: Interval = "young"
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def used_per_unit(self) -> int:
        return self.gpus_per_unit - self.hot_spare_gpus_per_unit


REL_KEYS = tuple(f.name for f in fields(ReliabilityInputs) if f.name not in ("sources", "interval", "gpus_per_unit"))
SPARES = ("charged", "excluded")  # --spares: the in-rack hot spares charged to training (default) or left out


def spares_text(ri: "ReliabilityInputs", unit: str) -> str:
    """The spare policy in words, for every economics table."""
    hot = ri.hot_spare_gpus_per_unit
    if not hot:
        return f"spares: no in-rack hot spares ({ri.gpus_per_unit} GPUs per {unit}); spare {unit}s charged"
    how = "charged" if ri.count_hot_spares else "excluded (--spares excluded)"
    return (
        f"spares: in-rack hot spares {how}: {hot} of {ri.gpus_per_unit} GPUs per {unit} "
        f"{'paid for, not training' if ri.count_hot_spares else 'not paid for'}; spare {unit}s charged"
        + ("" if not ri.count_hot_spares else "; --spares excluded leaves the hot spares out")
    )


_INT_KEYS = ("hot_spare_gpus_per_unit", "min_spare_units", "spare_units")


def whole_units(ri: ReliabilityInputs, gpus: int) -> tuple[int, int]:
    """(units, training GPUs) of the fewest whole servers / racks that train on at least `gpus` GPUs: a cluster
    is bought and priced in whole units (an HGX server of 8; an NVL72 rack trains on 64 of its 72)."""
    units = -(-int(gpus) // ri.used_per_unit)
    return units, units * ri.used_per_unit


def reliability_inputs(
    hw: HardwareSpec,
    overrides: Mapping[str, float | int | bool | str | None] | None = None,
    costs_path: str = str(COSTS_FILE),
) -> ReliabilityInputs:
    """Defaults from costs.toml [reliability.server] or [reliability.rack] (by the hardware's unit), then overrides."""
    over = {k: v for k, v in (overrides or {}).items() if v is not None}
    check_keys({k: 0.0 for k in over if k != "interval"}, REL_KEYS)
    values, sources = load_costs(costs_path)
    sections = values.get("reliability", {})
    unit = hw.cost.unit_name if hw.cost is not None else "server"
    gpus_per_unit = hw.cost.gpus_per_unit if hw.cost is not None else hw.gpus_per_node
    base = dict(sections.get("server", {}))
    src = {k: sources.get(f"reliability.server.{k}", "") for k in base}
    if unit in sections and unit != "server":
        base.update(sections[unit])
        src.update({k: sources.get(f"reliability.{unit}.{k}", "") for k in sections[unit]})
    base.update(over)
    src.update({k: "override" for k in over})
    for k in _INT_KEYS:
        if base.get(k) is not None:
            v = float(base[k])
            if v != int(v):
                raise InputError("reliability", k, f"must be a whole number (got {v})")
            base[k] = int(v)
    if "count_hot_spares" in base:
        base["count_hot_spares"] = bool(base["count_hot_spares"])
    known = {f.name for f in fields(ReliabilityInputs)}
    ri = ReliabilityInputs(gpus_per_unit=gpus_per_unit, sources=src, **{k: v for k, v in base.items() if k in known})
    for f in fields(ri):
        v = getattr(ri, f.name)
        if isinstance(v, float) and not math.isfinite(v):
            raise InputError("reliability", f.name, f"must be a finite number (got {v})")
    for k in ("mtbi_gpu_days", "checkpoint_bytes_per_param", "storage_write_bytes_per_s_per_gpu"):
        if not getattr(ri, k) > 0:
            raise InputError("reliability", k, f"must be > 0 (got {getattr(ri, k)})")
    for k in ("restart_s", "unit_repair_s", "component_repair_s", "min_spare_units"):
        if getattr(ri, k) < 0:
            raise InputError("reliability", k, f"must be >= 0 (got {getattr(ri, k)})")
    if ri.checkpoint_s is not None and ri.checkpoint_s < 0:
        raise InputError("reliability", "checkpoint_s", "must be >= 0")
    if ri.spare_units is not None and ri.spare_units < 0:
        raise InputError("reliability", "spare_units", "must be >= 0")
    for k in ("restart_s", "unit_repair_s", "component_repair_s", "checkpoint_s"):  # 3 years
        if (getattr(ri, k) or 0) > 1e8:
            raise InputError("reliability", k, f"must be at most 1e8 s (got {getattr(ri, k):g}): a unit slip?")
    for k in ("spare_units", "min_spare_units"):
        if (getattr(ri, k) or 0) > 1e6:
            raise InputError("reliability", k, f"must be at most 1e6 units (got {getattr(ri, k):g})")
    if not 0 <= ri.unit_event_fraction <= 1:
        raise InputError("reliability", "unit_event_fraction", "must be in [0, 1]")
    if not 0 <= ri.hot_spare_gpus_per_unit < gpus_per_unit:
        raise InputError("reliability", "hot_spare_gpus_per_unit", f"must be in [0, {gpus_per_unit})")
    if ri.interval not in ("young", "daly"):
        raise InputError("reliability", "interval", "must be young or daly")
    return ri


def system_mtbi_s(mtbi_gpu_days: float, gpus: int) -> float:
    """Job mean time between interruptions: independent GPUs, rate adds up (cost_report.md per GPU-day)."""
    return mtbi_gpu_days * SECONDS_PER_DAY / gpus


def young_interval(checkpoint_s: float, mtbi_s: float) -> float:
    """Young 1974, "A first order approximation to the optimum checkpoint interval": sqrt(2 C M)."""
    return math.sqrt(2.0 * checkpoint_s * mtbi_s)


def daly_interval(checkpoint_s: float, mtbi_s: float) -> float:
    """Daly 2006 higher-order optimum: sqrt(2CM)[1 + sqrt(C/2M)/3 + C/18M] - C for C < 2M, else M."""
    c, m = checkpoint_s, mtbi_s
    if c >= 2.0 * m:
        return m
    return math.sqrt(2.0 * c * m) * (1.0 + math.sqrt(c / (2.0 * m)) / 3.0 + c / (18.0 * m)) - c


def goodput_fraction(interval_s: float, checkpoint_s: float, restart_s: float, mtbi_s: float) -> float:
    """Daly 2006: useful work tau per expected wall time M e^(R/M) (e^((tau+C)/M) - 1); in (0, 1]."""
    tau, m = interval_s, mtbi_s
    if tau <= 0:
        raise InputError("reliability", "checkpoint_interval_s", "must be > 0")
    x = (tau + checkpoint_s) / m
    if restart_s / m + x > 700:  # e^x overflows: no useful work survives
        return 5e-324
    g = tau / (m * math.exp(restart_s / m) * math.expm1(x))
    return max(min(g, 1.0), 5e-324)


@dataclass(frozen=True)
class Reliability:
    inputs: ReliabilityInputs
    gpus: int
    mtbi_s: float
    interruptions_per_day: float
    checkpoint_s: float
    checkpoint_interval_s: float
    recovery_s: float  # restart + any repair waited for
    goodput_fraction: float
    units: int  # servers / racks the job runs on
    blast_radius_gpus: int
    units_in_repair: float  # expected, from unit-wide events (Little's law)
    spare_units: int
    gpus_charged: float
    cost_factor: float  # GPUs paid / GPUs of the job
    energy_factor: float  # energy paid / energy of the job's GPUs

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "inputs"}
        i = self.inputs
        d["assumptions"] = {
            f.name: {"value": getattr(i, f.name), "source": i.sources.get(f.name, "")}
            for f in fields(i)
            if f.name != "sources"
        }
        return d


def assess(ri: ReliabilityInputs, gpus: int, params_total: float) -> Reliability:
    """Goodput, checkpoint interval and spare accounting for a job of `gpus` GPUs training a model of
    `params_total` parameters (sets the checkpoint size)."""
    if gpus < 1:
        raise InputError("gpus", "gpus", "must be >= 1")
    m = system_mtbi_s(ri.mtbi_gpu_days, gpus)
    ckpt = ri.checkpoint_s
    if ckpt is None:
        ckpt = params_total * ri.checkpoint_bytes_per_param / (ri.storage_write_bytes_per_s_per_gpu * gpus)
    tau = 0.0  # free checkpoints: checkpoint continuously
    if ckpt > 0:
        tau = young_interval(ckpt, m) if ri.interval == "young" else daly_interval(ckpt, m)
    used = ri.used_per_unit
    units = math.ceil(gpus / used)
    unit_event_rate = used / (ri.mtbi_gpu_days * SECONDS_PER_DAY) * ri.unit_event_fraction  # per unit per s
    in_repair = units * unit_event_rate * ri.unit_repair_s
    spares = ri.spare_units if ri.spare_units is not None else max(ri.min_spare_units, math.ceil(in_repair))
    f = ri.unit_event_fraction
    wait_unit = 0.0 if spares > 0 else ri.unit_repair_s
    wait_component = 0.0 if (spares > 0 or ri.hot_spare_gpus_per_unit > 0) else ri.component_repair_s
    recovery = ri.restart_s + f * wait_unit + (1.0 - f) * wait_component
    # limit of Daly's goodput as tau -> 0 with C = 0 is e^(-R/M)
    g = goodput_fraction(tau, ckpt, recovery, m) if ckpt > 0 else max(math.exp(-recovery / m), 5e-324)
    per_unit_paid = ri.gpus_per_unit if ri.count_hot_spares else used
    job_paid = gpus * (ri.gpus_per_unit / used if ri.count_hot_spares else 1.0)
    charged = job_paid + spares * per_unit_paid
    return Reliability(
        ri,
        gpus,
        m,
        SECONDS_PER_DAY / m,
        ckpt,
        tau,
        recovery,
        g,
        units,
        ri.gpus_per_unit,
        in_repair,
        spares,
        charged,
        charged / gpus,
        job_paid / gpus,
    )
