"""Weak and strong scaling: one model on one hardware type over a list of GPU counts.

Definitions (cost_report.md, "Weak scaling ... strong scaling"; Amdahl 1967 for strong scaling):
- weak scaling holds the per-GPU batch: the global batch grows with the GPU count,
  gbs(n) = gbs(n0) * n / n0, so with a fixed layout each data-parallel replica keeps its micro-batches
  and only the data-parallel group (its gradient reduce-scatter / parameter all-gather) grows;
- strong scaling holds the global batch: each replica gets fewer micro-batches as dp grows, so the
  pipeline bubble (pp-1)/vp stage-times is amortised over fewer micro-batches (Narayanan et al. 2021
  §2.2) and tokens/s/GPU can only fall.
With a fixed layout tp, pp, vp, cp, ep, etp, mbs, FSDP and recompute stay as given and
dp = gpus / (tp * pp * cp); with the planner (perfmodel/analysis/search.py) each size gets its own best layout.

Per size this module adds the economics (perfmodel/economics/tco.py: $ per 1M tokens, utility J/token) and
reliability (perfmodel/economics/reliability.py: interruptions grow linearly with the GPU count, Young/Daly
checkpointing, Daly 2006 goodput), so goodput-adjusted tokens/s/GPU = tokens/s/GPU x goodput.
Everything is SI inside; the CLI converts at the edge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Literal

from perfmodel.analysis.checks import memory_reason
from perfmodel.analysis.energy import step_of
from perfmodel.analysis.releases import release_of
from perfmodel.analysis.search import Constraints
from perfmodel.analysis.search import search as run_search
from perfmodel.api import check
from perfmodel.core.predict import Options, Prediction, predict_grid
from perfmodel.economics.job import Step, job_of, priced_tco
from perfmodel.economics.reliability import ReliabilityInputs, reliability_inputs, spares_text
from perfmodel.economics.tco import TCO
from perfmodel.errors import InputError
from perfmodel.specs.counts import flops_per_token, param_counts
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.layout import Layout, LayoutGrid, layout_text
from perfmodel.specs.model import ModelSpec

Mode = Literal["weak", "strong"]
MODES: tuple[str, ...] = ("weak", "strong")
MAX_GPUS = 1_048_576  # far above the 100,000-GPU clusters the issue asks for
MAX_SIZES = 64
# breakdown_s terms (predict.py) that grow with scale: exposed data-parallel communication, the
# pipeline bubble, and the exposed MoE dispatch/combine all-to-all
GROWS = ("dp_comm", "pipeline_bubble", "ep_comm")
RUN_TOKENS = 1e12  # run size for run_cost; $/token and J/token do not depend on it


def parse_gpu_list(text: str) -> list[int]:
    """'64,128,256' or '64,128,...,16384' (the step or ratio of the two numbers before '...' is
    continued up to the number after it: doubling here) -> sorted unique GPU counts."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts:
        raise InputError("gpus", "gpus", "empty list")
    out: list[int] = []
    i = 0
    while i < len(parts):
        p = parts[i]
        if p in ("...", "…"):
            if len(out) < 2 or i + 1 >= len(parts):
                raise InputError(
                    "gpus", "gpus", "'...' needs two numbers before it and one after, e.g. 64,128,...,16384"
                )
            a, b = out[-2], out[-1]
            end = _gpu_int(parts[i + 1])
            if b % a == 0 and b // a > 1:  # geometric: 64,128,... doubles
                nxt = lambda x: x * (b // a)
            elif b > a:  # arithmetic: 64,128,192,...
                nxt = lambda x: x + (b - a)
            else:
                raise InputError("gpus", "gpus", f"cannot continue {a},{b},... (the list must grow)")
            x = nxt(b)
            while x < end:
                out.append(x)
                if len(out) > MAX_SIZES:
                    raise InputError("gpus", "gpus", f"at most {MAX_SIZES} sizes")
                x = nxt(x)
            i += 1
            continue
        out.append(_gpu_int(p))
        i += 1
    res = sorted(set(out))
    if len(res) > MAX_SIZES:
        raise InputError("gpus", "gpus", f"at most {MAX_SIZES} sizes (got {len(res)})")
    return res


def _gpu_int(text: str) -> int:
    try:
        n = int(text.replace("_", ""))
    except ValueError:
        raise InputError("gpus", "gpus", f"expected integers separated by commas (got {text!r})") from None
    if n < 1:
        raise InputError("gpus", "gpus", f"must be positive (got {n})")
    if n > MAX_GPUS:
        raise InputError("gpus", "gpus", f"at most {MAX_GPUS:,} GPUs (got {n:,})")
    return n


def global_batch(mode: str, gbs0: int, gpus0: int, gpus: int) -> int | None:
    """Global batch at `gpus`: weak keeps gbs/gpus (per-GPU batch) fixed, strong keeps gbs. None when
    the weak-scaled batch is not a whole number of sequences."""
    if mode == "strong":
        return gbs0
    num = gbs0 * gpus
    return num // gpus0 if num % gpus0 == 0 else None


# ---- economics per size ----------------------------------------------------------------------------


def _layout_no_dp(d: dict[str, Any]) -> str:
    """A layout (dict) as layout_text writes it, without dp (the axis that changes with the GPU count)."""
    return layout_text({**d, "dp": 1}).replace(" dp1", "")


@dataclass
class ScalePoint:
    gpus: int
    gbs: int | None
    ok: bool
    reason: str = ""
    layout_from: str = "given"
    layout: dict[str, Any] | None = None
    fits: bool | None = None
    step_time_s: float | None = None
    tokens_per_s_per_gpu: float | None = None
    mfu: float | None = None
    hfu: float | None = None
    memory_bytes_per_gpu: float | None = None
    breakdown_s: dict[str, float] = field(default_factory=dict)
    grows_s: dict[str, float] = field(default_factory=dict)
    scaling_efficiency: float | None = None
    usd_per_million_tokens_nominal: float | None = None
    usd_per_million_tokens_after_reliability: float | None = None
    joules_per_token_nominal: float | None = None
    joules_per_token_after_reliability: float | None = None
    joules_per_token_drawn_nominal: float | None = None  # drawn by phase of the step (economics/power.py)
    node_power_drawn_w: float | None = None
    goodput_fraction: float | None = None
    goodput_tokens_per_s_per_gpu: float | None = None
    job_mtbi_s: float | None = None
    interruptions_per_day: float | None = None
    checkpoint_interval_s: float | None = None
    measured: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ScalingResult:
    model: str
    hardware: str
    mode: str
    precision: str
    attention: str
    seq: int
    base_gpus: int
    base_gbs: int
    search: bool
    priced: bool
    stack: str  # the stack preset id (perfmodel/specs/stack.py)
    stack_set: list[str]  # its --stack-set overrides
    points: list[ScalePoint]
    usd_per_gpu_hour: float | None
    moe: bool = False
    spares: str = "charged"
    spares_text: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "points"}
        d["points"] = [p.to_dict() for p in self.points]
        return d


def _fill(
    pt: ScalePoint,
    p: Prediction,
    ri: ReliabilityInputs,
    t: TCO,
    priced: bool,
    params_total: float,
    hw: HardwareSpec,
    step: Step | None = None,
) -> None:
    r = p.row(0)
    tps = r["tokens_per_s_per_gpu"]
    pt.layout, pt.fits = r["layout"], r["fits"]
    pt.step_time_s, pt.tokens_per_s_per_gpu, pt.mfu, pt.hfu = r["step_time_s"], tps, r["mfu"], r["hfu"]
    pt.memory_bytes_per_gpu = r["memory_bytes_per_gpu"]
    pt.breakdown_s = r["breakdown_s"]
    pt.grows_s = {k: r["breakdown_s"].get(k, 0.0) for k in GROWS}
    j = job_of(t, priced, ri, hw, params_total, tps, RUN_TOKENS, pt.gpus, step)
    rel, nominal, eff = j.reliability, j.nominal, j.after_reliability
    if j.energy_drawn is not None and j.power is not None:
        pt.joules_per_token_drawn_nominal = j.energy_drawn.nominal["joules_per_token"]
        pt.node_power_drawn_w = j.power.node_avg_w
    if priced:
        pt.usd_per_million_tokens_nominal = nominal.usd_per_million_tokens
        pt.usd_per_million_tokens_after_reliability = eff.usd_per_million_tokens
    pt.joules_per_token_nominal, pt.joules_per_token_after_reliability = nominal.joules_per_token, eff.joules_per_token
    pt.goodput_fraction = rel.goodput_fraction
    pt.goodput_tokens_per_s_per_gpu = tps * rel.goodput_fraction
    pt.job_mtbi_s, pt.interruptions_per_day = rel.mtbi_s, rel.interruptions_per_day
    pt.checkpoint_interval_s = rel.checkpoint_interval_s


def scaling(
    model: ModelSpec,
    hw: HardwareSpec,
    gpus: list[int],
    mode: str,
    base: Layout,
    opts: Options,
    search: bool = False,
    buyer: str = "hyperscaler",
    measured: list[dict] | None = None,
    constraints: Any = None,
    on_chunk: Callable[[int, int, int], None] | None = None,
    spares: str = "charged",
) -> ScalingResult:
    """Predict `base` (its gpus and gbs are those of the first, smallest size) at every GPU count.
    search=True runs the planner per size instead (base's tp/pp/... are then ignored; `constraints`, a
    search.Constraints, pins or caps axes; `on_chunk(gpus, done, total)` reports the planner's progress)."""
    if mode not in MODES:
        raise InputError("mode", "mode", f"must be weak or strong (got {mode!r})")
    if not gpus:
        raise InputError("gpus", "gpus", "empty list")
    hw.peak(opts.precision)
    gpus = sorted(gpus)
    n0 = gpus[0]
    t, priced = priced_tco(hw, buyer)
    ri = reliability_inputs(hw, {"count_hot_spares": spares == "charged"})
    params_total = float(param_counts(model).total)
    cons = Constraints() if constraints is None else constraints
    points: list[ScalePoint] = []
    for n in gpus:
        gbs = global_batch(mode, base.gbs, n0, n)
        pt = ScalePoint(gpus=n, gbs=gbs, ok=False, layout_from="planner" if search else "given")
        points.append(pt)
        if gbs is None:
            pt.reason = f"weak-scaled global batch {base.gbs} x {n} / {n0} is not a whole number of sequences"
            continue
        if search:
            try:
                res = run_search(
                    model,
                    hw,
                    n,
                    gbs,
                    base.seq,
                    opts,
                    "throughput",
                    top_k=1,
                    constraints=cons,
                    on_chunk=(lambda done, total, n=n: on_chunk(n, done, total)) if on_chunk else None,
                )
            except InputError as exc:  # a --fix value this size cannot take (tp=8 on 4 GPUs)
                if exc.where != "fix":
                    raise
                pt.reason = f"{exc.field}: {exc.reason}"
                continue
            if res.top is None:
                pt.reason = f"no legal layout fits in HBM ({res.legal:,} legal layouts scored)"
                continue
            p = res.top
        else:
            lay = replace(base, gpus=n, gbs=gbs)
            try:
                check(model, lay)
            except InputError as exc:
                pt.reason = f"{exc.field}: {exc.reason}"
                continue
            p = predict_grid(model, hw, LayoutGrid.of(lay), opts)
            if not bool(p.fits[0]):  # cannot run: no throughput, cost or energy, never a baseline
                pt.layout, pt.fits = p.row(0)["layout"], False
                pt.memory_bytes_per_gpu = float(p.memory_bytes_per_gpu[0])
                pt.reason = "does not fit: " + memory_reason(pt.memory_bytes_per_gpu, float(p.hbm_bytes), hw.id)
                continue
        pt.ok = True
        _fill(pt, p, ri, t, priced, params_total, hw, step_of(p, 0, model, hw, opts))
    first = next((p for p in points if p.ok), None)  # the 100% baseline: the first size that runs
    for p in points:
        if p.ok and first is not None:
            p.scaling_efficiency = p.tokens_per_s_per_gpu / first.tokens_per_s_per_gpu  # type: ignore[operator]
    if measured is not None:
        attach_measured(points, measured, model, hw, opts, base, mode, search)
    return ScalingResult(
        model.id,
        hw.id,
        mode,
        opts.precision,
        opts.attention,
        base.seq,
        n0,
        base.gbs,
        search,
        priced,
        opts.stack or "default",
        list(opts.stack_set),
        points,
        t.usd_per_gpu_hour if priced else None,
        model.is_moe,
        "charged" if ri.count_hot_spares else "excluded",
        spares_text(ri, hw.cost.unit_name if hw.cost is not None else "server"),
    )


# ---- measured runs (validation/runs.csv) ----------------------------------------------------------


@lru_cache(maxsize=4)
def _runs(path: str) -> tuple[dict, ...]:
    from perfmodel.analysis.validate import read_csv

    return tuple(read_csv(path))


def default_runs_csv() -> Path:
    from perfmodel.specs.specfile import data_dir

    return data_dir("validation") / "runs.csv"


def load_runs(path: str | Path | None = None) -> list[dict]:
    return list(_runs(str(path or default_runs_csv())))


def _cell_int(row: dict, key: str, default: int = 1) -> int:
    v = (row.get(key) or "").strip()
    try:
        return int(float(v)) if v else default
    except ValueError:
        return -1


def _row_layout(row: dict, lay: Layout | None = None) -> tuple:
    """The layout a measured row states, comparable with a Layout's (given `lay`, that layout's values;
    recompute only where the row states one: blank means unpublished, validate infers it)."""
    rc = (row.get("recompute") or "").strip()
    if lay is not None:
        return (lay.tp, lay.pp, lay.vp, lay.cp, lay.ep, lay.mbs, int(lay.fsdp)) + ((lay.recompute,) if rc else ())
    return (
        tuple(_cell_int(row, k) for k in ("tp", "pp", "vp", "cp", "ep"))
        + (_cell_int(row, "micro_batch"), _cell_int(row, "fsdp", 0))
        + ((rc,) if rc else ())
    )


def attach_measured(
    points: list[ScalePoint],
    rows: list[dict],
    model: ModelSpec,
    hw: HardwareSpec,
    opts: Options,
    base: Layout,
    mode: str,
    search: bool,
) -> None:
    """Attach the measured rows of the same model, hardware, precision, sequence length, batch rule
    (weak: same sequences per GPU; strong: same global batch) and, with a fixed layout, the same
    tp/pp/vp/cp/ep, micro-batch, FSDP and (where the row states it) recompute. Measured MFU is recomputed
    from measured tokens/s/GPU with this model's FLOPs per token in the chosen attention convention (MFU
    definition, DESIGN.md); the source's own MFU string is kept alongside (`source_mfu`, DGXC recipes count full attention)."""
    by_gpus = {p.gpus: p for p in points}
    fpt = float(flops_per_token(model, base.seq, opts.attention))  # type: ignore[arg-type]
    peak = hw.peak(opts.precision)
    n0 = points[0].gpus
    for r in rows:
        if (
            r.get("model", "").strip() != model.id
            or r.get("hardware", "").strip() != hw.id
            or r.get("precision", "").strip() != opts.precision
        ):
            continue
        n, g, s = _cell_int(r, "gpus", 0), _cell_int(r, "global_batch", 0), _cell_int(r, "seq_len", 0)
        if n not in by_gpus or s != base.seq:
            continue
        if mode == "weak" and g * n0 != base.gbs * n:
            continue
        if mode == "strong" and g != base.gbs:
            continue
        if not search and _row_layout(r) != _row_layout(r, base):
            continue
        try:
            tps = float(r["tokens_per_s_per_gpu"])
        except (KeyError, ValueError):
            continue
        src_mfu = (r.get("source_mfu") or "").strip()
        by_gpus[n].measured.append(
            {
                "run_id": r.get("run_id", ""),
                "software": (r.get("software") or "").strip(),
                "date": r.get("date", ""),
                "tokens_per_s_per_gpu": tps,
                "mfu": tps * fpt / peak,
                "source_mfu": float(src_mfu) if src_mfu else None,
                "error": ((by_gpus[n].tokens_per_s_per_gpu or math.nan) - tps) / tps,
            }
        )
    for p in points:
        p.measured.sort(key=lambda m: m["date"])


def measured_series(
    model: ModelSpec,
    hw: HardwareSpec,
    seq: int,
    gpus: list[int],
    gbs0: int,
    attention: str = "full",
    rows: list[dict] | None = None,
) -> list[dict[str, Any]]:
    """Weak-scaling series of validation/runs.csv: every (precision, layout) that was measured at some of
    `gpus` with `gbs0` sequences per `gpus[0]` GPUs, predicted at all of `gpus` with that fixed layout, and
    its measured runs per release. -> [{"precision", "layout" (text, no dp), "release", "mfu": {gpus:
    (measured or None, predicted)}, "tokens_per_s_per_gpu": {...}}], the README's reproduction tables
    (validation/scaling_tables.py)."""
    from perfmodel.analysis.validate import _could_fit  # validate imports this module's neighbours; imported here

    rows = load_runs() if rows is None else rows
    n0, want = gpus[0], set(gpus)
    groups: dict[tuple, Layout] = {}
    for r in rows:
        if r.get("model", "").strip() != model.id or r.get("hardware", "").strip() != hw.id:
            continue
        n, g = _cell_int(r, "gpus", 0), _cell_int(r, "global_batch", 0)
        if n not in want or _cell_int(r, "seq_len", 0) != seq or g * n0 != gbs0 * n:
            continue
        prec = r.get("precision", "").strip()
        lay = _row_layout(r)
        if min(lay[:6]) < 1 or lay[6] not in (0, 1):
            continue
        groups.setdefault(
            (prec,) + lay,
            Layout(
                gpus=n0,
                gbs=gbs0,
                seq=seq,
                tp=lay[0],
                pp=lay[1],
                vp=lay[2],
                cp=lay[3],
                ep=lay[4],
                mbs=lay[5],
                fsdp=bool(lay[6]),
                recompute=lay[7] if len(lay) > 7 else "none",
            ),
        )  # type: ignore[arg-type]
    out: list[dict[str, Any]] = []
    for key, base in sorted(groups.items(), key=lambda kv: (kv[0][0] != "bf16", kv[0])):
        prec = key[0]
        if len(key) == 8:  # recompute unpublished: the lightest that fits, as validate infers it
            for rc in ("none", "selective", "full"):
                cand = replace(base, recompute=rc)  # type: ignore[arg-type]
                # the run fitted: within the memory model's error, as validate infers it
                if bool(_could_fit(predict_grid(model, hw, LayoutGrid.of(cand), Options(prec)))[0]):
                    base = cand
                    break
        res = scaling(model, hw, gpus, "weak", base, Options(prec, attention), measured=rows)  # type: ignore[arg-type]
        text = _layout_no_dp(base.__dict__)
        first: dict[str, str] = {}  # release -> date of its first measured run
        for p in res.points:
            for m in p.measured:
                rel = release_of(m)
                first[rel] = min(first.get(rel, m["date"]), m["date"])
        for rel, date in sorted(first.items(), key=lambda kv: kv[1]):
            mfu: dict[int, tuple[float | None, float | None]] = {}
            tps: dict[int, tuple[float | None, float | None]] = {}
            for p in res.points:
                ms = [m for m in p.measured if release_of(m) == rel]
                mfu[p.gpus] = (ms[0]["mfu"] if ms else None, p.mfu if p.ok else None)
                tps[p.gpus] = (ms[0]["tokens_per_s_per_gpu"] if ms else None, p.tokens_per_s_per_gpu if p.ok else None)
            out.append(
                {
                    "precision": prec,
                    "layout": text,
                    "release": rel,
                    "date": date,
                    "fsdp": base.fsdp,
                    "mfu": mfu,
                    "tokens_per_s_per_gpu": tps,
                }
            )
    return sorted(out, key=lambda o: (o["precision"] != "bf16", o["precision"], o["fsdp"], o["date"], o["layout"]))


# ---- plot ------------------------------------------------------------------------------------------

GROWS_LABEL = {"dp_comm": "DP communication", "pipeline_bubble": "pipeline bubble", "ep_comm": "MoE all-to-all"}


def plot(res: ScalingResult, path: str | Path, title: str | None = None) -> Path:
    """PNG, three panels against GPUs on a log-2 axis: tokens/s/GPU (nominal and x goodput), MFU, and the
    exposed share of the step of the terms that grow (DP communication, pipeline bubble, MoE all-to-all);
    measured points when attached."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    out = Path(path)
    if out.suffix.lower() != ".png":
        raise InputError("plot", str(path), "the plot is written as PNG: give a file name ending in .png")
    if not out.parent.exists():
        raise InputError("plot", str(path), f"folder {out.parent} does not exist")
    ok = [p for p in res.points if p.ok]
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4.6))
    x = [p.gpus for p in ok]
    ax1.plot(x, [p.tokens_per_s_per_gpu for p in ok], "o-", color="#1f77b4", label="predicted")
    ax1.plot(
        x,
        [p.goodput_tokens_per_s_per_gpu for p in ok],
        "s--",
        color="#ff7f0e",
        label="predicted x goodput (failures, checkpoints)",
    )
    ax2.plot(x, [100 * p.mfu for p in ok], "o-", color="#1f77b4", label=f"predicted ({res.attention} attention)")
    mx = [(p.gpus, m) for p in res.points for m in p.measured]
    if mx:
        ax1.plot([g for g, _ in mx], [m["tokens_per_s_per_gpu"] for _, m in mx], "kx", ms=8, mew=2, label="measured")
        ax2.plot([g for g, _ in mx], [100 * m["mfu"] for _, m in mx], "kx", ms=8, mew=2, label="measured")
    colors = {"dp_comm": "#d62728", "pipeline_bubble": "#8c564b", "ep_comm": "#9467bd"}
    for k in GROWS:
        if k == "ep_comm" and not res.moe and not any(p.grows_s.get(k, 0) > 0 for p in ok):
            continue
        ax3.plot(
            x,
            [100 * p.grows_s.get(k, 0.0) / p.step_time_s for p in ok],
            "o-",
            color=colors[k],  # type: ignore[operator]
            label=f"exposed {GROWS_LABEL[k]}",
        )
    panels = (
        (ax1, "tokens/s per GPU", "Throughput per GPU", "lower left"),
        (ax2, "MFU (%)", "Model FLOPs utilisation", "lower left"),
        (ax3, "share of the step (%)", "What grows with the GPU count", "upper left"),
    )
    for ax, lab, head, where in panels:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.set_xlabel("GPUs (log scale)")
        ax.set_ylabel(lab)
        ax.set_title(head, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        top = max([1e-9] + [float(max(l.get_ydata())) for l in ax.get_lines() if len(l.get_ydata())])
        ax.set_ylim(0, 1.25 * top if ax is not ax3 else max(1.0, 1.35 * top))
        ax.legend(fontsize=8, loc=where)
        if x:
            ax.set_xticks(x if len(x) <= 9 else x[:: max(1, len(x) // 8)])
            ax.tick_params(axis="x", labelsize=8)
    if res.search:
        how = "planner's best layout per size"
    else:
        first = ok[0].layout if ok else None
        how = "fixed layout " + (_layout_no_dp(first) if first else "-")
    batch = "per-GPU batch held" if res.mode == "weak" else "global batch held"
    import textwrap

    fig.suptitle(
        textwrap.fill(
            title
            or f"{res.model} on {res.hardware}: {res.mode} scaling ({batch}), {res.precision}, "
            f"seq {res.seq}, global batch {res.base_gbs:,} at {res.base_gpus:,} GPUs, {how}"
            + (f", stack {res.stack}" if res.stack != "default" or res.stack_set else "")
            + (f" + {', '.join(res.stack_set)}" if res.stack_set else ""),
            150,
        ),
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def summary_growth(res: ScalingResult) -> dict[str, Any]:
    """First vs last predicted size: how tokens/s/GPU, each growing term and goodput moved."""
    ok = [p for p in res.points if p.ok]
    if len(ok) < 2:
        return {}
    a, b = ok[0], ok[-1]
    out: dict[str, Any] = {
        "from_gpus": a.gpus,
        "to_gpus": b.gpus,
        "tokens_per_s_per_gpu_ratio": b.tokens_per_s_per_gpu / a.tokens_per_s_per_gpu,
    }  # type: ignore[operator]
    for k in GROWS:
        out[k] = {
            "from_s": a.grows_s[k],
            "to_s": b.grows_s[k],
            "from_share": a.grows_s[k] / a.step_time_s,
            "to_share": b.grows_s[k] / b.step_time_s,
        }  # type: ignore[operator]
    out["goodput"] = {"from": a.goodput_fraction, "to": b.goodput_fraction}
    return out
