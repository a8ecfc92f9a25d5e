"""Reliability: interruptions, checkpointing, goodput and spares for a training job.

Model (each formula names its source):
- Interruptions are independent per GPU: the job's mean time between interruptions is
  M = mtbi_gpu_days x 86400 / gpus, so interruptions grow linearly with job size. The rate is a property of
  the hardware class and its operator (costs.toml [reliability.*]): a central value from the largest
  published measurement and a band over the published spread, from a new or very large cluster (_low: more
  interruptions) to a mature operator (_high): HGX H100 1,900 GPU-days (Llama 3 405B, 466 interruptions of
  16,384 H100 in 54 days), 1,200 (Meta FT-HSDP, ~98K H100, one every ~18 min: 1,229, rounded down) to 5,000 (cost_report.md);
  A100 1,231 (Kokolis et al. 2025, RSC-1), 567 (OPT-175B) to 3,419 (RSC-2); GB200 NVL72 2,000, 1,000-3,000
  (cost_report.md). The band comes with restart times over their measured spread (restart_s_low/_high).
- Recovery from an interruption (job-scoped, the default): restart (detect, drain, reschedule, re-initialise)
  plus the checkpoint restore, checkpoint bytes over storage_read_bytes_per_s_per_gpu x gpus, plus any repair
  waited for. Replica-scoped (recovery = "replica", Meta FT-HSDP / torchft): the whole job stalls for
  replica_stall_s, then only the failed data-parallel replica recovers (replica_recovery_s, fetching the state
  from a healthy peer) while the others train on: an interruption, one per M of wall time, costs L =
  replica_stall_s + replica_recovery_s / replicas of it and no work since the last checkpoint is lost, so
  goodput = (1 - L / M) x tau / (tau + C) (FT-HSDP's model; checkpoints still written for job-wide faults at
  Young's interval tau). One replica (FSDP over all GPUs, dp = 1) recovers job-scoped.
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
Recovery = Literal["job", "replica"]
RECOVERIES = ("job", "replica")


@dataclass(frozen=True)
class ReliabilityInputs:
    mtbi_gpu_days: float  # mean time between interruptions, GPU-days per interruption
    restart_s: float  # detect, drain, reschedule onto spares, re-initialise (the checkpoint restore is separate)
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
    # the published spread (goodput band): fewer GPU-days per interruption (_low) to more (_high); a restart
    # from quick (_low) to slow (_high). None: the central value (no band)
    mtbi_gpu_days_low: float | None = None
    mtbi_gpu_days_high: float | None = None
    restart_s_low: float | None = None
    restart_s_high: float | None = None
    storage_read_bytes_per_s_per_gpu: float = 0.5e9  # checkpoint restore bandwidth per GPU of the job
    recovery: Recovery = "job"  # job: every interruption restarts the job; replica: only the failed replica
    replica_stall_s: float = 180.0  # replica-scoped: the whole job's stall per interruption
    replica_recovery_s: float = 420.0  # replica-scoped: the failed replica's time out (state from a peer)
    replicas: int | None = None  # data-parallel replicas holding the full state; None = from the layout
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def used_per_unit(self) -> int:
        return self.gpus_per_unit - self.hot_spare_gpus_per_unit


REL_KEYS = tuple(
    f.name for f in fields(ReliabilityInputs) if f.name not in ("sources", "interval", "recovery", "gpus_per_unit")
)
BANDED = ("mtbi_gpu_days", "restart_s")  # central values with a _low / _high spread in costs.toml
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


_INT_KEYS = ("hot_spare_gpus_per_unit", "min_spare_units", "spare_units", "replicas")


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
    """Defaults from costs.toml [reliability.server] or [reliability.rack] (by the hardware's unit), an HGX
    server's generation table [reliability.generation.<generation>] where there is one, then overrides. A
    central value overridden without its _low / _high is the assumption on both sides (no band)."""
    over = {k: v for k, v in (overrides or {}).items() if v is not None}
    check_keys({k: 0.0 for k in over if k not in ("interval", "recovery")}, REL_KEYS)
    values, sources = load_costs(costs_path)
    sections = values.get("reliability", {})
    unit = hw.cost.unit_name if hw.cost is not None else "server"
    gpus_per_unit = hw.cost.gpus_per_unit if hw.cost is not None else hw.gpus_per_node
    base = dict(sections.get("server", {}))
    src = {k: sources.get(f"reliability.server.{k}", "") for k in base}
    if unit in sections and unit != "server":
        base.update(sections[unit])
        src.update({k: sources.get(f"reliability.{unit}.{k}", "") for k in sections[unit]})
    elif hw.generation in sections.get("generation", {}):  # an HGX server's interruption rate by generation
        gen = sections["generation"][hw.generation]
        base.update(gen)
        src.update({k: sources.get(f"reliability.generation.{hw.generation}.{k}", "") for k in gen})
    for k in BANDED:  # an overridden central value without its spread: the band collapses onto it
        if k in over:
            for end in ("_low", "_high"):
                if k + end not in over:
                    base[k + end] = over[k]
                    src[k + end] = f"override of {k} (no band)"
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
    if not ri.storage_read_bytes_per_s_per_gpu > 0:
        raise InputError("reliability", "storage_read_bytes_per_s_per_gpu", "must be > 0")
    for k in ("restart_s", "unit_repair_s", "component_repair_s", "min_spare_units", "replica_stall_s"):
        if getattr(ri, k) < 0:
            raise InputError("reliability", k, f"must be >= 0 (got {getattr(ri, k)})")
    if ri.replica_recovery_s < 0:
        raise InputError("reliability", "replica_recovery_s", f"must be >= 0 (got {ri.replica_recovery_s})")
    if ri.checkpoint_s is not None and ri.checkpoint_s < 0:
        raise InputError("reliability", "checkpoint_s", "must be >= 0")
    if ri.spare_units is not None and ri.spare_units < 0:
        raise InputError("reliability", "spare_units", "must be >= 0")
    if ri.replicas is not None and not 1 <= ri.replicas <= 1e7:
        raise InputError("reliability", "replicas", f"must be a whole number in [1, 1e7] (got {ri.replicas})")
    for k in ("restart_s", "unit_repair_s", "component_repair_s", "checkpoint_s", "replica_stall_s"):  # 3 years
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
    if ri.recovery not in RECOVERIES:
        raise InputError("reliability", "recovery", f"must be one of {', '.join(RECOVERIES)} (got {ri.recovery!r})")
    for k in BANDED:
        lo, mid, hi = getattr(ri, k + "_low"), getattr(ri, k), getattr(ri, k + "_high")
        lo, hi = (mid if lo is None else lo), (mid if hi is None else hi)
        if not (lo > 0 or (k == "restart_s" and lo == 0)):
            raise InputError("reliability", k + "_low", f"must be {'>= 0' if k == 'restart_s' else '> 0'} (got {lo:g})")
        if lo > mid:
            raise InputError("reliability", k + "_low", f"must be at most {k} = {mid:g} (got {lo:g})")
        if hi < mid:
            raise InputError("reliability", k + "_high", f"must be at least {k} = {mid:g} (got {hi:g})")
        if hi > 1e8:
            raise InputError("reliability", k + "_high", f"must be at most 1e8 (got {hi:g}): a unit slip?")
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
    recovery_s: float  # job-scoped: restart + checkpoint restore + any repair waited for; replica-scoped: the
    #                    job time one interruption costs (stall + the failed replica's recovery / replicas)
    goodput_fraction: float
    units: int  # servers / racks the job runs on
    blast_radius_gpus: int
    units_in_repair: float  # expected, from unit-wide events (Little's law)
    spare_units: int
    gpus_charged: float
    cost_factor: float  # GPUs paid / GPUs of the job
    energy_factor: float  # energy paid / energy of the job's GPUs
    restore_s: float = 0.0  # checkpoint restore (read) time, part of a job-scoped recovery
    recovery: str = "job"  # job | replica: what recovered (replica only with more than one replica)
    replicas: int = 1  # data-parallel replicas of the job (replica-scoped recovery's unit)
    # the band over the published spread: _low = more interruptions and slower restarts, _high = fewer and quicker
    interruptions_per_day_low: float = 0.0  # the fewest (mtbi_gpu_days_high)
    interruptions_per_day_high: float = 0.0  # the most (mtbi_gpu_days_low)
    goodput_fraction_low: float = 0.0
    goodput_fraction_high: float = 0.0

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "inputs"}
        i = self.inputs
        d["assumptions"] = {
            f.name: {"value": getattr(i, f.name), "source": i.sources.get(f.name, "")}
            for f in fields(i)
            if f.name != "sources"
        }
        return d


def _band(ri: ReliabilityInputs, k: str) -> tuple[float, float]:
    lo, hi = getattr(ri, k + "_low"), getattr(ri, k + "_high")
    mid = getattr(ri, k)
    return (mid if lo is None else lo), (mid if hi is None else hi)


def _goodput(
    ri: ReliabilityInputs, gpus: int, ckpt: float, restore: float, mtbi_days: float, restart: float, replicas: int
) -> tuple[float, float, float, float]:
    """(job MTBI s, checkpoint interval s, recovery s, goodput) at one interruption rate and restart time."""
    m = system_mtbi_s(mtbi_days, gpus)
    tau = 0.0  # free checkpoints: checkpoint continuously
    if ckpt > 0:
        tau = young_interval(ckpt, m) if ri.interval == "young" else daly_interval(ckpt, m)
    if ri.recovery == "replica" and replicas > 1:
        # FT-HSDP's own model: the job stalls, the failed replica recovers from a peer while the others train,
        # no rework: each interruption (one per M of wall time) costs `lost` of it
        lost = ri.replica_stall_s + ri.replica_recovery_s / replicas
        written = tau / (tau + ckpt) if ckpt > 0 else 1.0  # checkpoints still written for job-wide faults
        return m, tau, lost, max(written * (1.0 - lost / m), 5e-324)
    recovery = restart + restore + _repair_wait(ri, gpus)
    # limit of Daly's goodput as tau -> 0 with C = 0 is e^(-R/M)
    g = goodput_fraction(tau, ckpt, recovery, m) if ckpt > 0 else max(math.exp(-recovery / m), 5e-324)
    return m, tau, recovery, g


def _spares(ri: ReliabilityInputs, gpus: int) -> tuple[int, float, int]:
    """(units, units expected in repair, spare units) of a job of `gpus` GPUs."""
    units = math.ceil(gpus / ri.used_per_unit)
    unit_event_rate = ri.used_per_unit / (ri.mtbi_gpu_days * SECONDS_PER_DAY) * ri.unit_event_fraction  # per unit/s
    in_repair = units * unit_event_rate * ri.unit_repair_s
    spares = ri.spare_units if ri.spare_units is not None else max(ri.min_spare_units, math.ceil(in_repair))
    return units, in_repair, spares


def _repair_wait(ri: ReliabilityInputs, gpus: int) -> float:
    """Expected repair time an interruption waits for: none while spare units (or, for component faults, the
    in-rack hot spares) take the failed one's place."""
    spares = _spares(ri, gpus)[2]
    f = ri.unit_event_fraction
    wait_unit = 0.0 if spares > 0 else ri.unit_repair_s
    wait_component = 0.0 if (spares > 0 or ri.hot_spare_gpus_per_unit > 0) else ri.component_repair_s
    return f * wait_unit + (1.0 - f) * wait_component


def assess(ri: ReliabilityInputs, gpus: int, params_total: float, replicas: int = 1) -> Reliability:
    """Goodput, checkpoint interval and spare accounting for a job of `gpus` GPUs training a model of
    `params_total` parameters (sets the checkpoint size), with its band over the published spread.
    `replicas`: the job's data-parallel replicas holding the full state (replica-scoped recovery's unit), unless
    the inputs set them."""
    if gpus < 1:
        raise InputError("gpus", "gpus", "must be >= 1")
    replicas = ri.replicas if ri.replicas is not None else replicas
    if replicas < 1 or replicas > gpus:
        raise InputError("reliability", "replicas", f"must be in [1, gpus = {gpus}] (got {replicas})")
    ckpt = ri.checkpoint_s
    state = params_total * ri.checkpoint_bytes_per_param
    if ckpt is None:
        ckpt = state / (ri.storage_write_bytes_per_s_per_gpu * gpus)
    restore = state / (ri.storage_read_bytes_per_s_per_gpu * gpus)
    m, tau, recovery, g = _goodput(ri, gpus, ckpt, restore, ri.mtbi_gpu_days, ri.restart_s, replicas)
    (mtbi_lo, mtbi_hi), (restart_lo, restart_hi) = _band(ri, "mtbi_gpu_days"), _band(ri, "restart_s")
    g_lo = _goodput(ri, gpus, ckpt, restore, mtbi_lo, restart_hi, replicas)[3]
    g_hi = _goodput(ri, gpus, ckpt, restore, mtbi_hi, restart_lo, replicas)[3]
    units, in_repair, spares = _spares(ri, gpus)
    used = ri.used_per_unit
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
        restore_s=restore if not (ri.recovery == "replica" and replicas > 1) else 0.0,
        recovery="replica" if (ri.recovery == "replica" and replicas > 1) else "job",
        replicas=replicas,
        interruptions_per_day_low=gpus / mtbi_hi,
        interruptions_per_day_high=gpus / mtbi_lo,
        goodput_fraction_low=min(g_lo, g),
        goodput_fraction_high=max(g_hi, g),
    )
