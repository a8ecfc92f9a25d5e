"""Cluster sizing: how many whole servers / racks train a model on T tokens by a deadline, within a budget,
or how long and how much at a given size (`perfmodel size`).

Method:
- A cluster is a whole number of units (perfmodel/economics/reliability.py): an HGX server of 8 GPUs, or an NVL72
  rack of which the job uses 72 - 8 = 64 GPUs, the other 8 being hot spares (cost_report.md; costs.toml
  [reliability.rack]). Spare units come from reliability.assess (Little's law on the repair load, at
  least one).
- At each size the planner (perfmodel/analysis/search.py) finds the best layout by tokens/s/GPU. To keep a sizing
  run to a few seconds the planner's space is reduced (SIZE_CONSTRAINTS: expert tensor parallel at most
  2, the axis with the most values; the best layout was unchanged for 6 MoE models x 3 systems checked,
  2026-11-30, while etp = 1 alone lost 6.7% on Mixtral 8x22B); every size of one run uses the same
  space, so sizes compare fairly.
- Wall-clock days = tokens / (tokens/s/GPU x GPUs) / goodput (reliability.assess: Daly 2006 goodput with
  Young's checkpoint interval); cost and energy = economics.run_cost with the reliability cost and energy
  factors (spares paid, idle spares' energy not counted); households = US EIA 10,791 kWh per year.
- Candidate sizes (LADDER_STEPS): every unit count up to 16, then 8 per doubling (16, 18, ..., 30, 32,
  36, ..., 60, 64, 72, ...: at most 12.5% apart). Throughput per GPU falls with scale (batch, bubble,
  communication) and is far from monotonic in the count: a count must divide into dp x tp x cp x pp with
  dp dividing the batch, so 2^a x 3 GPUs may run well and 2^a x 31 not at all. Nothing assumes linear
  scaling; each candidate is planned and predicted.
- --days: the smallest candidate that meets the deadline: doubling the unit count from one unit until a
  size meets it, then every candidate between the last doubling that missed and the first that met, in
  increasing order (powers of two divide best, so a candidate below a missing power of two is taken to
  miss too). The next smaller candidate is reported with its days.
- --budget: the fastest candidate whose whole-run cost after reliability fits. Cost is not monotonic in the
  size (one spare unit is a large share of a small cluster; throughput per GPU rises at some sizes, as at 48
  and 64 NVL72 racks for DeepSeek-V3), so no doubling is skipped for being over budget: every doubling is
  planned up to the fastest one (beyond it a size is slower and, paying more GPUs for longer, dearer), and
  a candidate between two doublings is planned where, at TPS_SLACK x the better throughput per GPU of the two
  and its own exact goodput and spares, it could fit the budget and beat the fastest so far. Over budget
  everywhere, the error names the cheapest size found the same way, and why fewer GPUs cost more.
- --gpus: the given GPU count, rounded up to whole units.
- What limits it: analysis/explain.py `limit` on the best layout's step breakdown and the share of legal
  layouts that fit in HBM.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping

from perfmodel.analysis.checks import check_tokens_cover_a_batch
from perfmodel.analysis.energy import step_of
from perfmodel.analysis.explain import limit
from perfmodel.analysis.search import Constraints, SearchResult, equivalents, parse_constraints, search
from perfmodel.analysis.uncertainty import band_for, with_band
from perfmodel.core.predict import Options, stack_info
from perfmodel.economics.job import Job, Step, job_of, priced_tco
from perfmodel.economics.reliability import Reliability, reliability_inputs, spares_text, whole_units
from perfmodel.economics.tco import TCO, RunCost
from perfmodel.errors import InputError, cli_message
from perfmodel.specs.counts import param_counts
from perfmodel.specs.hardware import HardwareSpec, load_hardware
from perfmodel.specs.model import ModelSpec, load_model

Mode = Literal["days", "budget", "gpus"]
DEFAULT_SEQ = 4096
# Llama 3 405B's main-stage batch: 16M tokens per step (Dubey et al. 2024, "The Llama 3 Herd of Models" §3.4.1)
DEFAULT_BATCH_TOKENS = 2**24
MAX_GPUS = 2**20  # sizes beyond a million GPUs are not searched
SIZE_CONSTRAINTS = Constraints(cap={"etp": 2})


LADDER_STEPS = 8  # candidate sizes per doubling above 2 x LADDER_STEPS units
# --budget: a candidate between two doublings is taken to run at most this factor more tokens/s/GPU than the
# better of the two (every candidate up to 2,048-32,768 units planned, 2026-11-30: at most 2.6% more, on
# Llama 3 70B, Llama 3 8B, Mixtral 8x22B and DeepSeek-V3 on H100, Llama 3.1 405B and DeepSeek-V3 on GB200 NVL72)
TPS_SLACK = 1.05


def ladder(limit: int) -> list[int]:
    """Candidate unit counts up to `limit`: 1..2*LADDER_STEPS, then m x 2^j for m in LADDER_STEPS..2*LADDER_STEPS-1."""
    out = set(range(1, min(limit, 2 * LADDER_STEPS) + 1))
    j = 1
    while LADDER_STEPS * 2**j <= limit:
        out.update(m * 2**j for m in range(LADDER_STEPS, 2 * LADDER_STEPS) if m * 2**j <= limit)
        j += 1
    return sorted(out)


def default_gbs(seq: int) -> int:
    """DEFAULT_BATCH_TOKENS / seq, rounded to a power of two (sequences)."""
    return 2 ** max(0, round(math.log2(DEFAULT_BATCH_TOKENS / seq)))


@dataclass
class Point:
    """One cluster size, evaluated."""

    units: int
    gpus: int
    result: SearchResult
    tps: float | None = None  # best layout's tokens/s/GPU (None: nothing fits)
    rel: Reliability | None = None
    job: Job | None = None  # the job's economics at this size (economics/job.py)
    days: float = math.inf  # wall-clock days after goodput
    usd: float | None = None  # whole run after reliability (None: no price)
    why_not: str = ""

    @property
    def ok(self) -> bool:
        return self.tps is not None


@dataclass
class Sizer:
    model: ModelSpec
    hw: HardwareSpec
    tokens: float
    opts: Options
    seq: int | None = None  # None: the model's pre-training sequence length (ModelSpec.seq_len)
    gbs: int | None = None
    buyer: str = "hyperscaler"
    cost_over: Mapping[str, float] = field(default_factory=dict)
    rel_over: Mapping[str, Any] = field(default_factory=dict)
    constraints: Constraints = SIZE_CONSTRAINTS
    on_size: Callable[[int], None] | None = None  # called with each size's GPU count after it is planned

    def __post_init__(self) -> None:
        if not (self.tokens > 0 and math.isfinite(self.tokens)):
            raise InputError("tokens", "tokens", f"must be a positive number (got {self.tokens})")
        if self.seq is None:
            self.seq = self.model.seq_len
        if self.seq < 1:
            raise InputError("seq", "seq", f"must be a positive integer (got {self.seq})")
        self.gbs = self.gbs or default_gbs(self.seq)
        if self.gbs < 1:
            raise InputError("gbs", "gbs", f"must be a positive integer (got {self.gbs})")
        check_tokens_cover_a_batch(self.tokens, self.gbs, self.seq)
        self.hw.peak(self.opts.precision)
        self.ri = reliability_inputs(self.hw, dict(self.rel_over))
        self.unit_gpus = self.ri.used_per_unit  # GPUs of a unit the job trains on (NVL72: 64 of 72)
        self.params = float(param_counts(self.model).total)
        self.tco, self.price_note = self._tco()
        self.points: dict[int, Point] = {}
        self.searches_s = 0.0

    def _tco(self) -> tuple[TCO, str]:
        """The TCO, or for hardware without a sourced price one with a placeholder capex, used only for
        energy (utility power does not depend on capex; every $ figure is then withheld)."""
        t, priced = priced_tco(self.hw, self.buyer, self.cost_over)
        return t, (
            ""
            if priced
            else f"no sourced price for {self.hw.id} (no capex in its [cost]); pass --set allin_capex_usd_per_gpu=USD"
        )

    @property
    def priced(self) -> bool:
        return not self.price_note

    @property
    def max_units(self) -> int:
        return max(1, MAX_GPUS // self.unit_gpus)

    def at(self, units: int) -> Point:
        """Evaluate `units` whole units (cached)."""
        if units in self.points:
            return self.points[units]
        gpus = units * self.unit_gpus
        t0 = time.perf_counter()
        res = search(self.model, self.hw, gpus, self.gbs, self.seq, self.opts, "throughput", 1, self.constraints)
        self.searches_s += time.perf_counter() - t0
        if self.on_size is not None:
            self.on_size(gpus)
        pt = Point(units, gpus, res)
        if res.top is None:
            pt.why_not = (
                "no layout fits in HBM"
                if res.legal
                else f"no legal layout (gbs {self.gbs} and the model's shape do not divide over {gpus:,} GPUs)"
            )
        else:
            pt.tps = float(res.top.tokens_per_s_per_gpu[0])
            pt.job = self._job(pt.tps, gpus, step_of(res.top, 0, self.model, self.hw, self.opts))
            pt.rel = pt.job.reliability
            pt.days = pt.job.after_reliability.wall_days
            if self.priced:
                pt.usd = pt.job.after_reliability.usd_total
        self.points[units] = pt
        return pt

    def _job(self, tps: float, gpus: int, step: Step | None = None) -> Job:
        """The run at `tps` tokens/s/GPU on `gpus` GPUs: goodput, spares, cost, days and energy by both methods
        (economics/job.py; `step`, the best layout's predicted step, for the drawn power)."""
        return job_of(self.tco, self.priced, self.ri, self.hw, self.params, tps, self.tokens, gpus, step)

    def run(self, pt: Point) -> RunCost:
        """economics.run_cost after reliability (goodput, spares' cost, energy factor)."""
        assert pt.job is not None
        return pt.job.after_reliability

    def _doubling(self) -> list[int]:
        k, out = 1, []
        while k <= self.max_units:
            out.append(k)
            k *= 2
        return out

    def _between(self, lo: int, hi: int) -> list[int]:
        """Candidate unit counts strictly between lo and hi, increasing."""
        return [k for k in ladder(hi) if lo < k < hi]

    # ---- the three questions ---------------------------------------------------------------------

    def for_days(self, days: float) -> tuple[Point, Point | None]:
        """Smallest size meeting `days` (and its one-unit-smaller neighbour, None when it is one unit)."""
        if not (days > 0 and math.isfinite(days)):
            raise InputError("days", "days", f"must be a positive number (got {days})")
        meets = lambda p: p.ok and p.days <= days  # noqa: E731
        lo = 0
        for k in self._doubling():
            if meets(self.at(k)):
                hi = k
                break
            lo = k
        else:
            best = min((p for p in self.points.values() if p.ok), key=lambda p: p.days, default=None)
            got = (
                f"the fastest size tried is {best.days:,.1f} days on {best.gpus:,} GPUs"
                if best
                else "no size tried fits the model"
            )
            raise InputError(
                "days",
                "days",
                f"a {days:g}-day deadline is out of reach on {self.hw.id} up to "
                f"{MAX_GPUS:,} GPUs: {got} (doubling from one {self.ri_unit})",
            )
        for k in self._between(lo, hi):  # lo missed, hi meets: first candidate between
            if meets(self.at(k)):
                hi = k
                break
            lo = k
        return self.at(hi), (self.at(lo) if lo else None)

    def _doublings_to_peak(self) -> list[int]:
        """Every doubling of the unit count from one unit, up to the first that is slower than the doubling
        before it (past the fastest size): a larger cluster is then slower still and, with more GPUs paid for
        longer, dearer, so it can answer neither the fastest size within a budget nor the cheapest."""
        out, prev = [], None
        for k in self._doubling():
            p = self.at(k)
            out.append(k)
            if p.ok:
                if prev is not None and p.days >= prev.days:
                    break
                prev = p
        return out

    def _optimistic(self, units: int, tps: float) -> tuple[float, float]:
        """(days, $) of `units` units running at `tps` tokens/s/GPU, with its exact goodput and spares: lower
        bounds on both when `tps` bounds its throughput (days and $ fall as throughput rises)."""
        j = self._job(tps, units * self.unit_gpus)
        return j.after_reliability.wall_days, j.after_reliability.usd_total

    def _between_bounds(self, doublings: list[int]) -> list[tuple[int, float, float]]:
        """(units, days lower bound, $ lower bound) of every candidate between two evaluated doublings, at
        TPS_SLACK x the better tokens/s/GPU of the two (none where neither has a layout that fits)."""
        out = []
        for a, b in zip(doublings, doublings[1:]):
            tps = [self.points[k].tps for k in (a, b) if self.points[k].tps is not None]
            if tps:
                out += [(k, *self._optimistic(k, TPS_SLACK * max(tps))) for k in self._between(a, b)]
        return out

    def for_budget(self, usd: float) -> Point:
        """Fastest size whose whole-run cost after reliability is within `usd`, over every candidate size:
        the doublings up to the fastest one are planned; a candidate between two doublings is planned only
        where its bounds (_between_bounds) leave it a chance to fit the budget and beat the fastest so far."""
        if not (usd > 0 and math.isfinite(usd)):
            raise InputError("budget", "budget", f"must be a positive number of US dollars (got {usd})")
        if not self.priced:
            raise InputError("budget", self.hw.id, self.price_note)
        within = lambda p: p.ok and p.usd is not None and p.usd <= usd  # noqa: E731
        faster = lambda p, q: q is None or (p.days, p.units) < (q.days, q.units)  # noqa: E731
        doublings = self._doublings_to_peak()
        bounds = self._between_bounds(doublings)
        best: Point | None = None
        for p in self.points.values():
            if within(p) and faster(p, best):
                best = p
        for k, days_lo, usd_lo in sorted(bounds, key=lambda c: (c[1], c[0])):  # most promising first
            if best is not None and days_lo >= best.days:
                break  # neither this nor any later one can be faster
            if usd_lo <= usd:
                p = self.at(k)
                if within(p) and faster(p, best):
                    best = p
        if best is not None:
            return best
        cheapest = min((p for p in self.points.values() if p.ok), key=lambda p: p.usd or math.inf, default=None)
        for k, _, usd_lo in sorted(bounds, key=lambda c: (c[2], c[0])):  # a cheaper size in between?
            if cheapest is None or cheapest.usd is None or usd_lo >= cheapest.usd:
                break
            p = self.at(k)
            if p.ok and p.usd is not None and p.usd < cheapest.usd:
                cheapest = p
        if cheapest is None or cheapest.usd is None:
            raise InputError(
                "budget", "budget", f"${usd:,.0f} is too small on {self.hw.id}: no size tried fits the model"
            )
        raise InputError(
            "budget",
            "budget",
            f"${usd:,.0f} is too small on {self.hw.id}: the cheapest size is "
            f"{self._size_text(cheapest)}, ${cheapest.usd:,.0f} and "
            f"{cheapest.days:,.1f} days{self._why_dearer_below(cheapest)}",
        )

    def _size_text(self, p: Point) -> str:
        return f"{p.units:,} {self.ri_unit}{'s' if p.units != 1 else ''} ({p.gpus:,} GPUs)"

    def _why_dearer_below(self, c: Point) -> str:
        """Why a smaller cluster than the cheapest costs more: $ = tokens / (tokens/s/GPU x goodput) x GPUs paid
        per training GPU (spare units) x $/GPU-hour, compared with the nearest smaller doubling that fits."""
        smaller = [p for p in self.points.values() if p.ok and p.usd is not None and p.units < c.units]
        if not smaller or c.rel is None or c.tps is None:
            return " (the smallest size with a layout that fits)" if not smaller else ""
        pow2 = [p for p in smaller if p.units & (p.units - 1) == 0]
        s = max(pow2 or smaller, key=lambda p: p.units)
        assert s.rel is not None and s.tps is not None and s.usd is not None
        return (
            f"; fewer GPUs cost more, not less: {self._size_text(s)} cost ${s.usd:,.0f} at {s.tps:,.0f} vs "
            f"{c.tps:,.0f} tokens/s/GPU, goodput {s.rel.goodput_fraction:.1%} vs {c.rel.goodput_fraction:.1%} "
            f"and {s.rel.cost_factor:.3f} vs {c.rel.cost_factor:.3f} GPUs paid per training GPU "
            f"({s.rel.spare_units} vs {c.rel.spare_units} spare {self.ri_unit}"
            f"{'s' if max(s.rel.spare_units, c.rel.spare_units) > 1 else ''}), as $ = tokens / "
            "(tokens/s/GPU x goodput) x GPUs paid per training GPU x $/GPU-hour"
        )

    def for_gpus(self, gpus: int) -> Point:
        if gpus < 1:
            raise InputError("gpus", "gpus", f"must be a positive integer (got {gpus})")
        units, _ = whole_units(self.ri, gpus)
        if units * self.unit_gpus > MAX_GPUS:
            raise InputError("gpus", "gpus", f"at most {MAX_GPUS:,} GPUs")
        p = self.at(units)
        if not p.ok:
            hint = ""
            if "legal" in p.why_not:
                up = 2 ** math.ceil(math.log2(units)) * self.unit_gpus
                hint = f"; try a count with more factors of two, e.g. --gpus {up}" if up != p.gpus else ""
            raise InputError("gpus", "gpus", f"{p.gpus:,} GPUs of {self.hw.id}: {p.why_not}{hint}")
        return p

    @property
    def ri_unit(self) -> str:
        return self.hw.cost.unit_name if self.hw.cost is not None else "server"

    # ---- reporting ---------------------------------------------------------------------------------

    def equivalent(self, p: Point, low: float, k: int = 10) -> dict[str, Any] | None:
        """The layouts at this size the model cannot rank apart from the best (search.equivalents over the
        planner's top `k`), with the suggested one's layout; None when the best stands alone."""
        res = search(self.model, self.hw, p.gpus, self.gbs, self.seq, self.opts, "throughput", k, self.constraints)
        if res.top is None:
            return None
        lays = [res.top.row(i)["layout"] for i in range(res.top.layouts.n)]
        eq = equivalents(res.top_values, lays, low)
        return None if eq is None else {**eq, "suggestion_layout": lays[eq["suggestion"] - 1]}

    def limit(self, p: Point) -> dict[str, Any]:
        """What limits the run at this size (analysis/explain.py limit)."""
        top, res = p.result.top, p.result
        assert top is not None
        b = {k: float(v[0]) for k, v in top.breakdown_s.items()}
        return limit(b, float(top.step_time_s[0]), res.fits / res.legal if res.legal else 0.0)

    def report(self, p: Point, mode: Mode, target: float, smaller: Point | None = None) -> dict[str, Any]:
        """JSON-ready dict of one sized system."""
        assert p.ok and p.rel is not None and p.tps is not None
        rel, top = p.rel, p.result.top
        assert top is not None
        row = top.row(0)
        band = band_for(
            self.model, self.hw, self.opts.stack, int(row["layout"]["vp"])
        )  # the unseen-stack band follows vp
        assert p.job is not None
        rc, nominal = p.job.after_reliability, p.job.nominal
        gpu_unit = self.ri.gpus_per_unit
        d: dict[str, Any] = {
            "hardware": self.hw.id,
            "name": self.hw.display_name(),
            "hardware_overridden": list(self.hw.overridden),
            "model": self.model.id,
            "tokens": self.tokens,
            "target": {"mode": mode, "value": target},
            "precision": self.opts.precision,
            "seq": self.seq,
            "gbs": self.gbs,
            "gbs_tokens": self.gbs * self.seq,
            "unit": {
                "name": self.ri_unit,
                "gpus": gpu_unit,
                "job_gpus": self.unit_gpus,
                "hot_spare_gpus": gpu_unit - self.unit_gpus,
            },
            "units": p.units,
            "spare_units": rel.spare_units,
            "gpus": p.gpus,
            "gpus_installed": (p.units + rel.spare_units) * gpu_unit,
            "gpus_paid": rel.gpus_charged,
            "spares": "charged" if self.ri.count_hot_spares else "excluded",
            "spares_text": spares_text(self.ri, self.ri_unit),
            "layout": row["layout"],
            "tokens_per_s_per_gpu": p.tps,
            "mfu": row["mfu"],
            "step_time_s": row["step_time_s"],
            "memory_bytes_per_gpu": row["memory_bytes_per_gpu"],
            "cluster_tokens_per_s": p.tps * p.gpus,
            "goodput_fraction": rel.goodput_fraction,
            "wall_days_after_reliability": p.days,
            "wall_days_nominal": nominal.wall_days,
            "priced": self.priced,
            "price_note": self.price_note,
            "usd_per_gpu_hour": self.tco.usd_per_gpu_hour if self.priced else None,
            **{
                k: (v if self.priced or not k.startswith("usd") else None)
                for k, v in {**nominal.to_dict("_nominal"), **rc.to_dict("_after_reliability")}.items()
                if not k.startswith("wall_days")
            },
            "limit": self.limit(p),
            "band": band.to_dict(),
            "power": p.job.power_dict(),
            "energy": p.job.energy_dict(),
            "reliability": {
                k: getattr(rel, k)
                for k in (
                    "interruptions_per_day",
                    "interruptions_per_day_low",
                    "interruptions_per_day_high",
                    "goodput_fraction",
                    "goodput_fraction_low",
                    "goodput_fraction_high",
                    "recovery",
                    "replicas",
                )
            },
        }
        # 80% band (perfmodel/analysis/uncertainty.py): throughput and MFU scale with it; days, $ and energy inversely
        for k in ("tokens_per_s_per_gpu", "mfu", "cluster_tokens_per_s"):
            with_band(d, k, band.throughput(d[k]))
        for k in (
            "step_time_s",
            "wall_days_after_reliability",
            "usd_total_after_reliability",
            "usd_per_million_tokens_after_reliability",
            "mwh_after_reliability",
            "household_years_after_reliability",
        ):
            with_band(d, k, band.inverse(d[k]) if d[k] is not None else (None, None))
        if mode == "days":
            d["smaller"] = (
                None
                if smaller is None
                else {
                    "units": smaller.units,
                    "gpus": smaller.gpus,
                    "wall_days_after_reliability": smaller.days if smaller.ok else None,
                    "why_not": smaller.why_not or f"{smaller.days:,.1f} days > {target:g}",
                }
            )
        d["tried"] = [
            {
                "units": q.units,
                "gpus": q.gpus,
                "tokens_per_s_per_gpu": q.tps,
                "wall_days_after_reliability": q.days if q.ok else None,
                "usd_total_after_reliability": q.usd,
                "why_not": q.why_not or None,
            }
            for q in sorted(self.points.values(), key=lambda q: q.units)
        ]
        d["equivalent"] = self.equivalent(p, band.low)
        d["search_constraints"] = {"fix": dict(self.constraints.fix), "cap": dict(self.constraints.cap)}
        d["search_seconds"] = self.searches_s
        return d


def size_constraints(fix: tuple[str, ...] | list[str] = (), cap: tuple[str, ...] | list[str] = ()) -> Constraints:
    """The planner's space at every size: the user's --fix / --max (search.parse_constraints) over
    SIZE_CONSTRAINTS (a cap the user gives on the same axis wins)."""
    user = parse_constraints(fix, cap)
    return Constraints(
        fix=dict(user.fix), cap={**{k: v for k, v in SIZE_CONSTRAINTS.cap.items() if k not in user.fix}, **user.cap}
    )


def size(
    model: ModelSpec | str,
    hw: HardwareSpec | str,
    tokens: float,
    mode: Mode,
    target: float,
    opts: Options,
    seq: int | None = None,
    gbs: int | None = None,
    buyer: str = "hyperscaler",
    cost_over: Mapping[str, float] | None = None,
    rel_over: Mapping[str, Any] | None = None,
    on_size: Callable[[int], None] | None = None,
    constraints: Constraints = SIZE_CONSTRAINTS,
) -> dict[str, Any]:
    """Size one system for a deadline (mode "days"), a budget in USD ("budget") or a GPU count ("gpus").
    `model` and `hw` are specs or catalog ids / spec files, as the CLI takes them; `seq` None: the model's
    pre-training sequence length (ModelSpec.seq_len); `constraints`: the planner's space (size_constraints)."""
    model, hw = load_model(model), load_hardware(hw)
    seq = model.seq_len if seq is None else seq
    s = Sizer(
        model,
        hw,
        tokens,
        opts,
        seq,
        gbs,
        buyer,
        dict(cost_over or {}),
        dict(rel_over or {}),
        constraints=constraints,
        on_size=on_size,
    )
    smaller = None
    if mode == "days":
        p, smaller = s.for_days(target)
    elif mode == "budget":
        p = s.for_budget(target)
    elif mode == "gpus":
        p = s.for_gpus(int(target))
    else:
        raise InputError("size", "mode", f"unknown mode {mode!r}")
    return s.report(p, mode, target, smaller)


def size_systems(
    model: ModelSpec,
    hws: list[HardwareSpec],
    tokens: float,
    mode: Mode,
    target: float,
    opts: Options,
    *,
    seq: int | None,
    gbs: int | None,
    buyer: str,
    cost_over: Mapping[str, float],
    rel_over: Mapping[str, Any],
    constraints: Constraints,
    on_system: Callable[[HardwareSpec], Callable[[int], None] | None] | None = None,
) -> list[dict[str, Any]]:
    """`size` on each system, with its seconds and stack. With several systems, one that cannot be sized is
    {"hardware", "error"} and the others go on; an InputError when none can. `on_system(hw)` is called as each
    system starts and returns its `on_size` callback (progress bars)."""
    out: list[dict[str, Any]] = []
    errors: list[str] = []
    for hw in hws:
        on_size = on_system(hw) if on_system else None
        try:
            t1 = time.perf_counter()
            d = size(
                model,
                hw,
                tokens,
                mode,
                target,
                opts,
                seq,
                gbs,
                buyer,
                cost_over,
                rel_over,
                on_size=on_size,
                constraints=constraints,
            )
            d["seconds"] = time.perf_counter() - t1
            d.update(stack_info(opts, model, hw))
            out.append(d)
        except InputError as exc:
            if len(hws) == 1:
                raise
            out.append({"hardware": hw.id, "error": cli_message(exc)})
            errors.append(f"{hw.id}: {cli_message(exc)}")
    if len(errors) == len(hws):
        raise InputError("size", "", "; ".join(errors))
    return out
