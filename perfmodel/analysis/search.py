"""The parallelism planner: enumerate every legal layout for (model, hardware, GPUs, batch, sequence),
score them all with the vectorised cost model, keep the best K and the Pareto front.

Search space (Megatron-Core semantics, see layout.py):
- tp divides the attention heads and either divides the KV heads or is a multiple of them (KV heads
  replicated across TP ranks); sequence parallelism is always on with tp (Korthikanti et al. 2022 §4.2.2).
- pp <= layers, any divisor of the GPU count: stages may be uneven (first/last stage hold fewer layers,
  Megatron-Core `decoder_first/last_pipeline_num_layers`), so pp need not divide the layers.
- vp (interleaved virtual stages) when pp > 1 and the pp*vp chunks are evenly filled (see
  _balanced_chunks) (Narayanan et al. 2021 §2.2).
- cp with seq divisible by 2*cp (load-balanced causal CP); ep divides the experts; etp with
  ep*etp dividing tp*cp*dp (MoE parallel folding, Liu et al. 2025): the experts fold over the same GPUs.
- dp = gpus / (tp*cp*pp); global batch divisible by dp * micro-batch; micro-batch a small power of two.
- distributed optimizer (ZeRO-1) or FSDP (ZeRO-3); recompute none / selective / full.
Every candidate is checked by layout.legality (the single source of the rules) before scoring, and
only layouts whose predicted memory fits in HBM are ranked.

Objectives (all "higher is better" inside): throughput = tokens/s/GPU; energy = tokens per joule of
all-in IT power; cost = tokens per US dollar of GPU-hours. For one hardware type the three rank the
same layouts identically (per-GPU power and price are constants); they differ in the value shown and
across hardware.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Literal

import numpy as np

from perfmodel.core.parallel.recompute import SELECTIVE
from perfmodel.core.predict import Options, Prediction, check_recompute, predict_grid, software_of
from perfmodel.core.score import prime, score_product, use_kernel
from perfmodel.economics.tco import usd_per_gpu_hour
from perfmodel.errors import InputError, did_you_mean
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.layout import RECOMPUTE, Layout, LayoutGrid, legality
from perfmodel.specs.model import ModelSpec

Objective = Literal["throughput", "cost", "energy"]
OBJECTIVES: tuple[str, ...] = ("throughput", "cost", "energy")
AXES: tuple[str, ...] = ("tp", "pp", "vp", "cp", "ep", "etp", "dp", "mbs", "fsdp", "recompute")
MBS_CHOICES: tuple[int, ...] = (1, 2, 4, 8, 16)
SCORE_CHUNK = 1 << 17  # layouts per score_product call: big enough to amortise Python, small enough for memory
_INT_COLS = ("tp", "pp", "vp", "cp", "ep", "etp", "mbs")


# ---- constraints -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Constraints:
    """`fix`: axis pinned to one value; `cap`: axis at most this value; `uneven_vp`: interleaved layouts whose
    layers do not fill the pp*vp chunks evenly too (legal in Megatron-Core with an explicit
    pipeline_model_parallel_layout; off by default: ~3.8x the layouts of a DeepSeek-V3 search, and on the
    benchmark jobs never the best)."""

    fix: dict[str, int] = field(default_factory=dict)
    cap: dict[str, int] = field(default_factory=dict)
    uneven_vp: bool = False


def _axis_value(axis: str, text: str, where: str) -> int:
    if axis == "recompute":
        if text not in RECOMPUTE:
            raise InputError(
                where, axis, f"must be one of {', '.join(RECOMPUTE)} (got {text!r}){did_you_mean(text, RECOMPUTE)}"
            )
        return RECOMPUTE[text]
    if axis == "fsdp" and text.lower() in ("true", "false", "yes", "no", "on", "off"):
        return int(text.lower() in ("true", "yes", "on"))
    try:
        val = int(text)
    except ValueError:
        raise InputError(where, axis, f"must be an integer (got {text!r})") from None
    if val < (0 if axis == "fsdp" else 1) or (axis == "fsdp" and val > 1):
        raise InputError(
            where, axis, f"{'must be 0 or 1' if axis == 'fsdp' else 'must be a positive integer'} (got {val})"
        )
    return val


def parse_constraints(
    fix: list[str] | tuple[str, ...] = (), cap: list[str] | tuple[str, ...] = (), uneven_vp: bool = False
) -> Constraints:
    """['tp=4', 'recompute=full'], ['pp=8'] -> Constraints; unknown axes raise InputError with a suggestion."""
    out: dict[str, dict[str, int]] = {"--fix": {}, "--max": {}}
    for where, items in (("--fix", fix), ("--max", cap)):
        for item in items:
            for part in item.split(","):
                part = part.strip()
                if not part:
                    continue
                if "=" not in part:
                    raise InputError(where, part, "expected AXIS=VALUE, e.g. tp=4")
                axis, text = (s.strip() for s in part.split("=", 1))
                axis = axis.lower()
                if axis not in AXES:
                    raise InputError(where, axis, f"unknown axis{did_you_mean(axis, AXES)}; one of {', '.join(AXES)}")
                if where == "--max" and axis in ("fsdp", "recompute"):
                    raise InputError(where, axis, "cannot be capped; use --fix")
                val = _axis_value(axis, text, where)
                if axis in out[where] and out[where][axis] != val:  # two answers to one question
                    raise InputError(
                        where, axis, f"given twice with different values ({out[where][axis]} and {val}): give it once"
                    )
                out[where][axis] = val
    for axis, v in out["--fix"].items():
        if axis in out["--max"] and v > out["--max"][axis]:
            raise InputError(
                "fix / max", axis, f"--fix {axis}={v} conflicts with --max {axis}={out['--max'][axis]}: drop one"
            )
    return Constraints(fix=out["--fix"], cap=out["--max"], uneven_vp=uneven_vp)


# ---- enumeration -----------------------------------------------------------------------------------


def _divisors(n: int) -> np.ndarray:
    r = np.arange(1, int(n) + 1, dtype=np.int64)
    return r[n % r == 0]


def _select(axis: str, values: np.ndarray, c: Constraints) -> np.ndarray:
    if axis in c.fix:
        return np.array([c.fix[axis]], dtype=np.int64)
    if axis in c.cap:
        values = values[values <= c.cap[axis]]
    return values.astype(np.int64)


@dataclass(frozen=True)
class Space:
    """Candidate values per axis; the search is their product, pruned rule by rule."""

    gpus: int
    gbs: int
    seq: int
    tp: np.ndarray
    pp: np.ndarray
    vp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    etp: np.ndarray
    mbs: np.ndarray
    fsdp: np.ndarray
    recompute: np.ndarray
    dp_fix: int | None
    dp_cap: int | None
    uneven_vp: bool = False

    @property
    def size(self) -> int:
        """Layouts in the plain product of the axis values (what the planner considers)."""
        return int(np.prod([len(getattr(self, a)) for a in (*_INT_COLS, "fsdp", "recompute")], dtype=float))

    def contains(self, lay: Layout) -> bool:
        """Whether a layout is one of this space's candidates (before the legality rules)."""
        return (
            lay.gpus == self.gpus
            and lay.gbs == self.gbs
            and lay.seq == self.seq
            and all(int(getattr(lay, a)) in getattr(self, a) for a in _INT_COLS)
            and int(lay.fsdp) in self.fsdp
            and RECOMPUTE[lay.recompute] in self.recompute
            and (self.dp_fix is None or lay.dp == self.dp_fix)
            and (self.dp_cap is None or lay.dp <= self.dp_cap)
        )


def _check_positive(name: str, v: int) -> None:
    if not isinstance(v, (int, np.integer)) or v < 1:
        raise InputError(f"{name}", name, f"must be a positive integer (got {v!r})")


def space(model: ModelSpec, gpus: int, gbs: int, seq: int, c: Constraints = Constraints()) -> Space:
    for name, v in (("gpus", gpus), ("gbs", gbs), ("seq", seq)):
        _check_positive(name, v)
    a = model.attention
    div = _divisors(gpus)
    tp = div[(a.num_heads % div == 0) & ((a.num_kv_heads % div == 0) | (div % a.num_kv_heads == 0))]
    pp = div[div <= model.num_layers]
    vp_max = (model.num_layers + VP_SLACK + model.mtp_layers) // max(
        1, int(_select("pp", pp, c).min(initial=model.num_layers))
    )
    vp = np.arange(1, max(1, vp_max) + 1, dtype=np.int64)
    cp = div[(div == 1) | (seq % (2 * div) == 0)]
    if model.moe:
        ep = div[model.moe.num_experts % div == 0]
        etp = div
    else:
        ep = etp = np.array([1], dtype=np.int64)
    mbs = np.array([m for m in MBS_CHOICES if gbs % m == 0], dtype=np.int64)
    # a pinned value no layout can take is the user's error, named with its rule (not "nothing fits")
    kv = a.num_kv_heads
    rules = {
        "tp": (
            tp,
            f"tp must divide the {gpus:,} GPUs and the {a.num_heads} attention heads, and divide or be a "
            f"multiple of the {kv} KV heads",
        ),
        "pp": (pp, f"pp must divide the {gpus:,} GPUs and be at most the {model.num_layers} layers"),
        "cp": (cp, f"cp must divide the {gpus:,} GPUs and seq {seq:,} must be divisible by 2 x cp"),
        "ep": (
            ep,
            (
                f"ep must divide the {gpus:,} GPUs and the {model.moe.num_experts} experts"
                if model.moe
                else f"{model.id} is dense: ep must be 1"
            ),
        ),
        "etp": (etp, f"etp must divide the {gpus:,} GPUs" if model.moe else f"{model.id} is dense: etp must be 1"),
        "mbs": (mbs, f"mbs must divide the global batch {gbs:,} and be one of {', '.join(map(str, MBS_CHOICES))}"),
    }
    for axis, (vals, rule) in rules.items():
        if axis in c.fix and c.fix[axis] not in vals:
            raise InputError("fix", f"{axis}={c.fix[axis]}", f"no layout can take it: {rule}")
    if "dp" in c.fix and (gpus % c.fix["dp"] or gbs % c.fix["dp"]):
        raise InputError(
            "fix",
            f"dp={c.fix['dp']}",
            f"no layout can take it: dp must divide the {gpus:,} GPUs and the global batch {gbs:,}",
        )
    return Space(
        gpus,
        gbs,
        seq,
        _select("tp", tp, c),
        _select("pp", pp, c),
        _select("vp", vp, c),
        _select("cp", cp, c),
        _select("ep", ep, c),
        _select("etp", etp, c),
        _select("mbs", mbs, c),
        _select("fsdp", np.array([0, 1]), c),
        _select("recompute", np.array([0, 1, 2]), c),
        c.fix.get("dp"),
        c.cap.get("dp"),
        c.uneven_vp,
    )


Cols = dict[str, np.ndarray]


def _cross(cols: Cols, name: str, values: np.ndarray) -> Cols:
    """Every row of `cols` paired with every value (np.repeat / np.tile cartesian product)."""
    n, k = len(next(iter(cols.values()))), len(values)
    out = {key: np.repeat(v, k) for key, v in cols.items()}
    out[name] = np.tile(values, n)
    return out


def _keep(cols: Cols, mask: np.ndarray) -> Cols:
    return {k: v[mask] for k, v in cols.items()}


def _balanced_chunks(model: ModelSpec, chunks: np.ndarray) -> np.ndarray:
    """Interleaving (vp > 1) with evenly filled virtual stages: the layers plus up to VP_SLACK + mtp slots
    (the embedding, loss and MTP blocks placed as pipeline entries, Megatron-Core
    `pipeline_model_parallel_layout`) divide over pp*vp chunks. Covers every recipe in validation/."""
    ok = np.zeros(chunks.shape, bool)
    for e in range(VP_SLACK + model.mtp_layers + 1):
        ok |= (model.num_layers + e) % chunks == 0
    return ok


VP_SLACK = 3


def _prefix(model: ModelSpec, s: Space) -> Cols:
    """(tp, cp, pp, vp) rows that pass the GPU-count, dp and balanced-chunk rules: thousands of rows at
    most, so the later stages can be run on slices of it."""
    g = s.gpus
    cols: Cols = {"tp": s.tp}
    cols = _cross(cols, "cp", s.cp)
    cols = _cross(cols, "pp", s.pp)
    mp = cols["tp"] * cols["cp"] * cols["pp"]
    ok = g % mp == 0
    dp = g // np.maximum(mp, 1)
    if s.dp_fix is not None:
        ok &= dp == s.dp_fix
    if s.dp_cap is not None:
        ok &= dp <= s.dp_cap
    cols = _keep(cols, ok)
    cols = _cross(cols, "vp", s.vp)
    # the layers-per-chunk bound itself is layout.legality's (applied to every chunk before scoring)
    even = _balanced_chunks(model, cols["pp"] * cols["vp"]) if not s.uneven_vp else True
    return _keep(cols, (cols["vp"] == 1) | ((cols["pp"] > 1) & even))


# Rows of one enumeration block before its ep x etp x mbs pruning (7 int64 columns, ~15 MB): bounds the
# planner's memory whatever the size of the space (a 10M-layout search would otherwise hold every row).
ENUM_ROWS = 1 << 18


def structural_blocks(model: ModelSpec, s: Space, rows: int | None = None) -> Iterator[Cols]:
    """`structural` in blocks of at most about `rows` (ENUM_ROWS) rows, in the same order: contiguous
    slices of the (tp, cp, pp, vp) prefix, each crossed with ep, etp and mbs and pruned. Empty blocks
    are skipped."""
    g = s.gpus
    pre = _prefix(model, s)
    step = max(1, (rows or ENUM_ROWS) // max(1, len(s.ep) * len(s.etp) * len(s.mbs)))
    for lo in range(0, len(pre["tp"]), step):
        cols = {k: v[lo : lo + step] for k, v in pre.items()}
        cols = _cross(cols, "ep", s.ep)
        cols = _cross(cols, "etp", s.etp)
        fold = g // cols["pp"]  # tp*cp*dp: the GPUs experts fold over
        cols = _keep(cols, fold % (cols["ep"] * cols["etp"]) == 0)
        cols = _cross(cols, "mbs", s.mbs)
        dp = g // (cols["tp"] * cols["cp"] * cols["pp"])
        cols = _keep(cols, s.gbs % (dp * cols["mbs"]) == 0)
        # last, layout.legality itself (the single source of the rules; fsdp and recompute do not enter it)
        zeros = np.zeros(len(cols["tp"]), np.int64)
        cols = _keep(cols, ~illegal(model, _grid(s, {**cols, "fsdp": zeros, "recompute": zeros})))
        if len(cols["tp"]):
            yield cols


def structural(model: ModelSpec, s: Space) -> Cols:
    """(tp, cp, pp, vp, ep, etp, mbs) combinations that pass the divisibility rules, pruned stage by
    stage so the full product is never materialised. fsdp and recompute are crossed in later, per chunk.
    All rows at once: the search itself streams `structural_blocks` instead."""
    blocks = list(structural_blocks(model, s))
    return {
        k: np.concatenate([b[k] for b in blocks]) if blocks else np.zeros(0, np.int64)
        for k in ("tp", "cp", "pp", "vp", "ep", "etp", "mbs")
    }


def _grid(s: Space, cols: Cols) -> LayoutGrid:
    m = len(cols["tp"])
    return LayoutGrid(
        gpus=np.full(m, s.gpus, np.int64),
        gbs=np.full(m, s.gbs, np.int64),
        seq=np.full(m, s.seq, np.int64),
        tp=cols["tp"],
        pp=cols["pp"],
        vp=cols["vp"],
        cp=cols["cp"],
        ep=cols["ep"],
        etp=cols["etp"],
        mbs=cols["mbs"],
        fsdp=cols["fsdp"].astype(bool),
        recompute=cols["recompute"],
    )


def _expand(s: Space, cols: Cols) -> LayoutGrid:
    """Base rows crossed with every fsdp x recompute choice."""
    return _grid(s, _cross(_cross(cols, "fsdp", s.fsdp), "recompute", s.recompute))


def chunks(s: Space, base: Cols, size: int = SCORE_CHUNK) -> Iterator[LayoutGrid]:
    """LayoutGrids of about `size` layouts: base rows crossed with every fsdp x recompute choice."""
    extra = len(s.fsdp) * len(s.recompute)
    n = len(base["tp"])
    step = max(1, size // extra)
    for lo in range(0, n, step):
        yield _expand(s, {k: v[lo : lo + step] for k, v in base.items()})


def _rechunk(blocks: Iterable[Cols], step: int) -> Iterator[Cols]:
    """Re-cut a stream of base blocks into pieces of exactly `step` rows (the last may be shorter), so
    the scored chunks are those `chunks(s, structural(...))` would give, without holding every row."""
    held: list[Cols] = []
    n = 0
    for b in blocks:
        held.append(b)
        n += len(b["tp"])
        if n < step:
            continue
        cols = {k: np.concatenate([h[k] for h in held]) for k in b}
        lo = 0
        while n - lo >= step:
            yield {k: v[lo : lo + step] for k, v in cols.items()}
            lo += step
        held = [{k: v[lo:] for k, v in cols.items()}]
        n -= lo
    if n:
        yield {k: np.concatenate([h[k] for h in held]) for k in held[0]}


def _product_layouts(s: Space, cols: Cols, flat: np.ndarray) -> LayoutGrid:
    """The layouts at flat indices `flat` of base rows `cols` x fsdp x recompute (the order of `_expand`)."""
    F, R = len(s.fsdp), len(s.recompute)
    b = flat // (F * R)
    pick = {k: v[b] for k, v in cols.items()}
    return _grid(s, {**pick, "fsdp": s.fsdp[(flat // R) % F], "recompute": s.recompute[flat % R]})


def _fsdp_duplicate(grid: LayoutGrid) -> np.ndarray:
    """FSDP over a data-parallel group of one shards nothing: the same layout as without it, so the
    planner skips the duplicate (predict still accepts it). The only rule fsdp or recompute enter."""
    return grid.fsdp & (grid.dp == 1)


def illegal(model: ModelSpec, grid: LayoutGrid) -> np.ndarray:
    """True where any rule of layout.legality (plus the planner's KV-head and FSDP rules) is broken."""
    a = model.attention
    bad = legality(grid, model.num_layers, a.num_heads, a.num_kv_heads, model.moe.num_experts if model.moe else None)
    out = (a.num_kv_heads % grid.tp != 0) & (grid.tp % a.num_kv_heads != 0)
    out |= _fsdp_duplicate(grid)
    for mask in bad.values():
        out |= mask
    return out


# ---- objective -------------------------------------------------------------------------------------


def objective_scale(hw: HardwareSpec, objective: str) -> float:
    """Multiply tokens/s/GPU by this to get the objective (higher is better)."""
    if objective == "throughput":
        return 1.0
    if objective == "energy":
        return 1.0 / hw.power.allin_w_per_gpu  # tokens per joule
    if objective == "cost":
        return 3600.0 / usd_per_gpu_hour(hw)  # tokens per USD (perfmodel.economics.tco TCO)
    raise InputError(
        "objective",
        "objective",
        f"unknown objective{did_you_mean(objective, OBJECTIVES)}; one of {', '.join(OBJECTIVES)}",
    )


# ---- the search ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchResult:
    gpus: int
    objective: str
    evaluated: int  # layouts in the candidate space (product of the axis values)
    legal: int  # layouts passing every legality rule: all scored by the cost model
    fits: int  # legal layouts whose predicted memory fits in HBM
    seconds: float
    top: Prediction | None  # best K fitting layouts, best first
    top_values: np.ndarray  # their objective values
    pareto: Prediction | None  # throughput vs memory-headroom front, by throughput descending
    space: Space
    scores: np.ndarray | None = None  # objective of every fitting layout (keep_scores=True), unsorted

    def rank_of(self, value: float) -> int:
        """1 + number of fitting candidates strictly better than `value` (needs keep_scores)."""
        if self.scores is None:
            raise ValueError("search was run without keep_scores")
        return 1 + int(np.count_nonzero(self.scores > value * (1 + 1e-12)))


def _order(values: np.ndarray) -> np.ndarray:
    return np.argsort(-values, kind="stable")


def _pareto_idx(thr: np.ndarray, headroom: np.ndarray) -> np.ndarray:
    """Indices on the (max throughput, max headroom) front, by throughput descending.
    Pre-filter: every point no better in headroom than the fastest remaining point is dominated by it."""
    idx = np.arange(thr.shape[0])
    anchors = []
    while idx.size > 4096 and len(anchors) < 8:
        j = idx[np.argmax(thr[idx])]
        anchors.append(j)
        idx = idx[headroom[idx] > headroom[j]]
    idx = np.concatenate([np.array(anchors, dtype=np.int64), idx])
    o = idx[np.lexsort((-headroom[idx], -thr[idx]))]
    h = headroom[o]
    prev = np.concatenate([[-np.inf], np.maximum.accumulate(h)[:-1]])
    return o[h > prev]


def _undominated(front_t: np.ndarray, front_h: np.ndarray, thr: np.ndarray, headroom: np.ndarray) -> np.ndarray:
    """True where a point is not weakly dominated by the front (front_t descending, front_h then
    strictly ascending, as _pareto_idx returns it): the front points at least as fast form a prefix,
    whose largest headroom is its last. O(n log f), no sort of the points."""
    if front_t.size == 0:
        return np.ones(thr.shape, bool)
    cnt = np.searchsorted(-front_t, -thr, side="right")  # front points with t >= thr
    return (cnt == 0) | (front_h[np.maximum(cnt - 1, 0)] < headroom)


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, best first; among equal values the earliest index first
    (np.partition finds the k-th value, O(n); only the <= k winners are sorted)."""
    if values.size > k:
        kth = -np.partition(-values, k - 1)[k - 1]
        idx = np.flatnonzero(values >= kth)
        if idx.size > k:  # ties at the k-th value: the earliest ones
            above = idx[values[idx] > kth]
            idx = np.sort(np.concatenate([above, idx[values[idx] == kth][: k - above.size]]))
    else:
        idx = np.arange(values.size)
    return idx[np.argsort(-values[idx], kind="stable")]


def search(
    model: ModelSpec,
    hw: HardwareSpec,
    gpus: int,
    gbs: int,
    seq: int,
    opts: Options,
    objective: str = "throughput",
    top_k: int = 10,
    constraints: Constraints = Constraints(),
    keep_scores: bool = False,
    on_chunk: Callable[[int, int], None] | None = None,
) -> SearchResult:
    """Score every legal layout; keep the best `top_k` that fit and the throughput/headroom front.
    `on_chunk(done, total)` is called after each scored chunk (progress bars).

    Selection streams: a running top K (a chunk's layouts enter only above the current K-th value, found
    with a partition, not a sort) and a running Pareto front (a chunk's layouts are first tested against
    it by binary search; only the few it does not dominate are merged). Among equal values the earlier
    enumerated layout is kept."""
    t0 = time.perf_counter()
    if top_k < 1:
        raise InputError("top", "top", f"must be at least 1 (got {top_k})")
    scale = objective_scale(hw, objective)
    hw.peak(opts.precision)
    s = space(model, gpus, gbs, seq, constraints)
    sw = software_of(model, hw, opts)
    if not sw.has_selective:  # selective would be a duplicate of none
        kept = s.recompute[s.recompute != SELECTIVE]
        if not kept.size:
            check_recompute(sw, s.recompute)
        s = replace(s, recompute=kept)
    per_base = len(s.fsdp) * len(s.recompute)
    step = max(1, SCORE_CHUNK // per_base)
    # a progress bar needs the number of chunks: one extra, storeless enumeration pass (a few % of the time)
    nchunks = -(-sum(len(b["tp"]) for b in structural_blocks(model, s)) // step) if on_chunk else 0
    legal = fits = 0
    top_g: LayoutGrid | None = None  # running best top_k, best first
    top_v = np.zeros(0)
    front_g: LayoutGrid | None = None  # running front, throughput descending
    front_t = front_h = np.zeros(0)
    scores: list[np.ndarray] = []
    # memory stays bounded: the base rows are streamed block by block, and only the running top K and
    # Pareto front are kept
    tables: dict = {}  # the per-combination prices, shared by the chunks
    scored = 0

    def primed(blocks: Iterable[Cols]) -> Iterator[Cols]:
        for b in blocks:  # each block's prices at once, before its chunks
            prime(model, hw, gpus, gbs, seq, b, s.recompute, opts, tables)
            yield b

    for i, cols in enumerate(_rechunk(primed(structural_blocks(model, s)), step)):
        # structural_blocks applied every other rule (layout.legality included) to these base rows; the
        # product base x fsdp x recompute is scored on its axes (score.py), equal to predict_grid
        sc = score_product(model, hw, gpus, gbs, seq, cols, s.fsdp, s.recompute, opts, use_kernel(scored), tables)
        scored += sc.step_time_s.size
        fc = _cross(cols, "fsdp", s.fsdp)  # the rule on base rows x fsdp (recompute does not enter)
        dup = _fsdp_duplicate(_grid(s, {**fc, "recompute": np.zeros(len(fc["tp"]), np.int64)}))
        ok = np.broadcast_to(~dup.reshape(len(cols["tp"]), len(s.fsdp), 1), sc.step_time_s.shape)
        legal += int(np.count_nonzero(ok))
        idx = np.flatnonzero((ok & sc.fits).ravel())
        fits += idx.size
        if idx.size:
            thr = sc.tokens_per_s_per_gpu.ravel()[idx]
            val = thr * scale
            if keep_scores:
                scores.append(val)
            # top K: only values above the current K-th can enter
            cand = np.arange(idx.size) if top_v.size < top_k else np.flatnonzero(val > top_v[-1])
            if cand.size:
                sel = cand[_top(val[cand], top_k)]
                g_new = _product_layouts(s, cols, idx[sel])
                g_all = g_new if top_g is None else LayoutGrid.concat([top_g, g_new])
                v_all = np.concatenate([top_v, val[sel]])
                keep = _order(v_all)[:top_k]  # <= 2K values; the running ones first
                top_g, top_v = g_all.take(keep), v_all[keep]
            # Pareto front: merge only the points the running front does not dominate
            head = sc.hbm_bytes - sc.memory_bytes_per_gpu.ravel()[idx]
            new = np.flatnonzero(_undominated(front_t, front_h, thr, head))
            if new.size:
                g_new = _product_layouts(s, cols, idx[new])
                g_all = g_new if front_g is None else LayoutGrid.concat([front_g, g_new])
                t_all, h_all = np.concatenate([front_t, thr[new]]), np.concatenate([front_h, head[new]])
                pi = _pareto_idx(t_all, h_all)
                front_g, front_t, front_h = g_all.take(pi), t_all[pi], h_all[pi]
        if on_chunk:
            on_chunk(i + 1, nchunks)
    top = pareto = None
    top_values = np.zeros(0)
    if top_g is not None and front_g is not None:
        top = predict_grid(model, hw, top_g, opts)
        top_values = top.tokens_per_s_per_gpu * scale
        o = _order(top_values)  # re-sort on the fresh prediction
        if (o != np.arange(o.size)).any():
            top, top_values = predict_grid(model, hw, top.layouts.take(o), opts), top_values[o]
        pareto = predict_grid(model, hw, front_g, opts)
    return SearchResult(
        gpus,
        objective,
        s.size,
        legal,
        fits,
        time.perf_counter() - t0,
        top,
        top_values,
        pareto,
        s,
        np.concatenate(scores) if keep_scores and scores else (np.zeros(0) if keep_scores else None),
    )


def search_sizes(
    model: ModelSpec,
    hw: HardwareSpec,
    gpus: list[int],
    gbs: int,
    seq: int,
    opts: Options,
    objective: str = "throughput",
    top_k: int = 10,
    constraints: Constraints = Constraints(),
    on_size: Callable[[int], Callable[[int, int], None] | None] | None = None,
) -> list[SearchResult]:
    """`search` at each GPU count of `gpus`. `on_size(n)` is called as the search at n GPUs starts and returns
    its `on_chunk(done, total)` callback (progress bars)."""
    return [
        search(model, hw, n, gbs, seq, opts, objective, top_k, constraints, on_chunk=on_size(n) if on_size else None)
        for n in gpus
    ]


# ---- explanation -----------------------------------------------------------------------------------


def layout_diff(a: Layout, b: Layout) -> dict[str, tuple]:
    """Axes on which two layouts differ: {axis: (a's value, b's value)}."""
    return {f: (getattr(a, f), getattr(b, f)) for f in AXES if getattr(a, f) != getattr(b, f)}


def why_better(a: Prediction, i: int, b: Prediction, j: int) -> dict:
    """Why layout i of `a` beats layout j of `b` (e.g. winner vs runner-up, or the planner's best vs a
    recipe): the breakdown term (predict.py breakdown_s, seconds per step) whose time differs most,
    the step times and the axes that differ ({axis: [winner's, loser's]}). `term` saves the most;
    `pays` is the term it loses most on."""
    diffs = {k: float(b.breakdown_s[k][j] - a.breakdown_s[k][i]) for k in a.breakdown_s}
    term = max(diffs, key=lambda k: diffs[k])
    pays = min(diffs, key=lambda k: diffs[k])
    return {
        "term": term,
        "term_saving_s": diffs[term],
        "pays": pays,
        "pays_s": -diffs[pays],
        "step_time_s": [float(a.step_time_s[i]), float(b.step_time_s[j])],
        "differences_s": diffs,
        "axes": {k: list(v) for k, v in layout_diff(a.layouts.layout(i), b.layouts.layout(j)).items()},
    }


def describe_why(w: dict) -> str:
    """One sentence from why_better's dict."""
    axes = ", ".join(f"{k} {b}->{a}" for k, (a, b) in w["axes"].items()) or "no axis"

    def ms(s: float) -> str:  # 1,100 ms, not 1.1e+03 ms
        return f"{s * 1e3:,.0f}" if s >= 0.1 else f"{s * 1e3:.3g}"

    text = f"{w['term']} is {ms(w['term_saving_s'])} ms shorter per step"
    if w["pays_s"] > 1e-6:  # not float noise (a term equal in both layouts)
        text += f" (while {w['pays']} is {ms(w['pays_s'])} ms longer)"
    return f"{text}; step {w['step_time_s'][0]:.4g} s vs {w['step_time_s'][1]:.4g} s; from the slower layout: {axes}"


# ---- ties ------------------------------------------------------------------------------------------

PARALLEL_AXES = ("tp", "pp", "vp", "cp", "ep", "etp")


def parallel_axes(layout: Layout | dict) -> int:
    """Parallel axes a layout uses beyond data parallelism: tp, pp, vp (interleaving), cp, ep, etp above 1, and
    FSDP. Fewer axes is a simpler job to run: fewer process groups, fewer overlap settings to get right."""
    d = layout if isinstance(layout, dict) else layout.__dict__
    return sum(int(d[k]) > 1 for k in PARALLEL_AXES) + bool(d["fsdp"])


def equivalents(values: np.ndarray, layouts: list, low: float) -> dict | None:
    """The leading layouts the model cannot tell apart: those whose objective value (higher is better, in
    proportion to throughput) lies inside the leader's 80% band, value >= leader x `low` (the band's low
    factor: the leader's measured throughput may be that much below its prediction). Among them the suggestion
    is the one with the fewest parallel axes (`parallel_axes`), the faster of equals. None when the leader
    stands alone. Ranks are 1-based, as printed."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return None
    tied = np.flatnonzero(v >= v[0] * low)
    if tied.size < 2:
        return None
    axes = [parallel_axes(layouts[i]) for i in tied]
    pick = int(tied[int(np.argmin(axes))])  # np.argmin: the first (fastest) of the fewest
    return {
        "ranks": [int(i) + 1 for i in tied],
        "within_factor": float(low),
        "suggestion": pick + 1,
        "suggestion_axes": parallel_axes(layouts[pick]),
        "why": (
            f"{tied.size} layouts are within the 80% band of #1 (predicted >= {low:.2f}x its throughput): "
            f"the model cannot rank them; #{pick + 1} uses the fewest parallel axes "
            f"({parallel_axes(layouts[pick])})"
        ),
    }
