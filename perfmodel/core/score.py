"""The planner's scorer: step time, tokens/s/GPU and memory per GPU of a product of layouts, evaluated on the
structure of the product instead of layout by layout (issue 14, factorised evaluation).

A planner chunk is `B` base rows (tp, cp, pp, vp, ep, etp, mbs; dp follows from the GPU count) crossed with
the fsdp choices F and the recompute choices R, in that order (search._expand). Each term is evaluated on
the axes it depends on, never on all B x F x R layouts before it must be (`_tables`):
- layer kinds, head and embedding: once per distinct (tp, cp, ep, etp, mbs) (workload.unique_layer_axes;
  with a search's cache once per search, `prime` pricing each enumeration block at once), the recompute
  seconds as a [U, R] table (predict._price_kinds, _price_head: the same functions);
- stage signatures and memory ranks: once per distinct (pp, vp) (parallel/pp.py signature_table,
  memory_rank_table);
- p2p and in-flight micro-batches: once per (tp, cp, pp, vp, mbs);
- DP group placement, parameters per rank, optimizer: once per (tp, cp, pp, vp, ep, etp), on the Q candidate
  memory ranks (parallel/pp.memory_ranks; mbs, the enumeration's innermost axis, does not enter them).
Then the per-layout tail: stage times and the schedule ([S, B, R] -> [B, R]; recompute changes them, fsdp
does not), exposed DP time, the rank that finishes last and the fullest rank's memory ([Q, B, R] per fsdp
choice), in numpy (`_numpy_tail`) or compiled (`_kernel_tail`, kernel.py, where numba is installed).
The step tail is written once: its formulas are elementwise functions in the modules they belong to
(parallel/pp.py stage_compute / stage_seconds / pipeline_seconds, parallel/dp.py exposed_plain / exposed_fsdp,
overlap.py, memory.py rank_state / rank_activations / rank_logits / rank_dummies / rank_held / rank_total,
predict.step_seconds; core/elementwise.py), which predict_grid calls on [n, ...] arrays, the numpy tail on the
product's axes and kernel.tail, compiled, on one layout's scalars. Only the loops and reductions over
signatures and memory ranks are the callers' own. tests/core/test_score.py asserts that the result equals
predict_grid on every layout of sampled grids to 1e-12 relative (it is bit-identical) and the kernel the numpy
tail bit for bit; benchmarks/search_bench.py compares the full benchmark grids.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from perfmodel.core import constants as K
from perfmodel.core import workload
from perfmodel.core.calibration import Constants
from perfmodel.core.compute import memory_time
from perfmodel.core.memory import (
    dummy_wgrad_from,
    dummy_wgrad_on,
    dummy_wgrad_sets,
    layer_activation_bytes,
    offload_kept_share,
    rank_activations,
    rank_held,
    rank_logits,
    rank_state,
    rank_total,
    weight_bytes,
)
from perfmodel.core.parallel import dp as dp_par
from perfmodel.core.parallel import ep as ep_par
from perfmodel.core.parallel import pp as pp_par
from perfmodel.core.parallel import recompute
from perfmodel.core.parallel.recompute import FULL, NONE
from perfmodel.core.predict import (
    KindPrice,
    Options,
    _price_head,
    a2a_solo,
    check_recompute,
    pp_share,
    price_kind,
    software_of,
    step_overhead,
    step_seconds,
    with_offload,
)
from perfmodel.core.software import Software
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.layout import LayoutGrid
from perfmodel.specs.model import ModelSpec

KERNEL_ENV = "PERFMODEL_KERNEL"  # numba | numpy | auto (the default): see use_kernel


@lru_cache(maxsize=1)
def _numba_installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def kernel_available() -> bool:
    """numba installed and not switched off ($PERFMODEL_KERNEL=numpy)."""
    return os.environ.get(KERNEL_ENV, "auto").lower() != "numpy" and _numba_installed()


def kernel_loaded() -> bool:
    """The compiled tail is loaded in this process (from then on it costs nothing to use)."""
    return "perfmodel.core.kernel" in sys.modules and kernel_available()


# Loading numba and the cached kernel costs ~0.5 s per process; the kernel saves ~0.2 µs per layout over the
# numpy tail, so a search loads it once it has scored this many layouts (or at once with PERFMODEL_KERNEL=numba)
KERNEL_PAYS_LAYOUTS = 3_000_000


def use_kernel(scored: int) -> bool:
    """Whether to score the next chunk with the compiled tail, after `scored` layouts of this search."""
    if not kernel_available():
        return False
    return kernel_loaded() or os.environ.get(KERNEL_ENV, "auto").lower() == "numba" or scored >= KERNEL_PAYS_LAYOUTS


@dataclass(frozen=True)
class Scores:
    """Per layout of the product, shape [B, F, R] (C order = the planner's layout order)."""

    step_time_s: np.ndarray
    tokens_per_s_per_gpu: np.ndarray
    memory_bytes_per_gpu: np.ndarray
    hbm_bytes: float

    @property
    def fits(self) -> np.ndarray:
        return self.memory_bytes_per_gpu <= self.hbm_bytes


def score_product(
    model: ModelSpec,
    hw: HardwareSpec,
    gpus: int,
    gbs: int,
    seq: int,
    base: dict[str, np.ndarray],
    fsdp: np.ndarray,
    rec: np.ndarray,
    opts: Options = Options(),
    kernel: bool | None = None,
    cache: dict | None = None,
) -> Scores:
    """Step time, tokens/s/GPU and memory of every layout base[b] x fsdp[f] x rec[r] (shape [B, F, R]),
    equal to predict_grid on the expanded grid. `kernel`: the per-layout tail compiled (kernel.py, needs
    numba), in numpy (False), or (None) compiled where it is already loaded in this process. `cache`: an
    empty dict shared by the calls of one search (same model, hardware, options, GPUs, seq, fsdp and
    recompute choices), which keeps the per-combination tables across its chunks."""
    t = _tables(model, hw, gpus, gbs, seq, base, fsdp, rec, opts, cache)
    if kernel is None:
        kernel = kernel_loaded()
    return _kernel_tail(t) if kernel and kernel_available() else _numpy_tail(t)


@dataclass(frozen=True)
class _Tables:
    """What both tails read: per combination (index u per base row), per (pp, vp) pair, per run of equal
    (tp, cp, pp, vp, ep, etp) (`run`), per (tp, cp, pp, vp, mbs) (`fl`), per base row."""

    m: ModelSpec
    sw: Software
    c: Constants
    hbm: float
    fs: np.ndarray  # [F] fsdp choices as the stack runs them
    rec: np.ndarray  # [R]
    n_kinds: int
    mtp_layers: int
    tab: dict  # per combination: _layer_tables
    u: np.ndarray  # [B] -> combination
    per_layer: np.ndarray  # [K, U or B, R] each kind's seconds per micro-batch, indexed by `upl`
    upl: np.ndarray  # [B] -> per_layer's second axis (u; the base row itself under activation offloading)
    dummy_on: np.ndarray  # [G, P2, Q] 1.0 where a memory rank holds a dummy-wgrad group (memory.dummy_wgrad_on)
    last_pq: np.ndarray  # [P2, Q] the last rank, per (pp, vp) pair
    act_share: np.ndarray  # [P2, Q] share of saved activations kept in HBM (activation offloading, no recompute)
    sig: tuple  # pp.signature_table: cnt [K][P, S], embedding, head, multiplicity [P, S], pair [B]
    mcnt: list  # pp.memory_rank_table: layers per kind [K][P2, Q], rank [P2, Q], pair [B]
    mrank: np.ndarray
    mpair: np.ndarray
    run: np.ndarray  # [B] -> run
    rs: np.ndarray  # [2, runs, Q] DP reduce-scatter, all-gather seconds without / with FSDP
    ag: np.ndarray
    opt: np.ndarray  # [2, runs, Q] optimizer seconds without / with FSDP
    params: np.ndarray  # [runs, Q] parameters, their shard, the optimizer's group
    shard: np.ndarray
    opt_group: np.ndarray
    fl: np.ndarray  # [B] -> in-flight row
    in_fl: np.ndarray  # [FL, Q] micro-batches in flight on the memory ranks
    tp: np.ndarray  # [B]
    pp: np.ndarray
    vp: np.ndarray
    nmb: np.ndarray
    p2p: np.ndarray
    wb: float
    gb: float
    tokens: float
    gpus: float
    solo: np.ndarray  # [FL, R] micro-batches whose EP all-to-all the overlap leaves exposed (predict.a2a_solo)


def _runs(*cols: np.ndarray) -> np.ndarray:
    """True where a row starts a run of equal `cols` (the enumeration keeps equal prefixes together)."""
    new = np.zeros(len(cols[0]), bool)
    new[0] = True
    for x in cols:
        new[1:] |= x[1:] != x[:-1]
    return new


def _tables(
    m: ModelSpec,
    hw: HardwareSpec,
    gpus: int,
    gbs: int,
    seq: int,
    base: dict[str, np.ndarray],
    fsdp,
    rec,
    opts: Options,
    cache: dict | None,
) -> _Tables:
    c, prec = opts.consts, opts.precision
    sw, c_layer, c_other, low, imb = _context(m, hw, opts)
    check_recompute(sw, rec)
    f64 = lambda x: np.asarray(x, dtype=float)
    col = lambda x: x[:, None]
    fs = np.asarray(fsdp, dtype=bool)
    if sw.shards_params:  # an FSDP stack shards parameters whatever the layout's flag says
        fs = np.ones(fs.shape, bool)
    rec = np.asarray(rec, dtype=np.int64)
    B = len(base["tp"])
    ti, ci, pi, vi, ei, xi, mi = (
        np.asarray(base[k], dtype=np.int64) for k in ("tp", "cp", "pp", "vp", "ep", "etp", "mbs")
    )
    di = gpus // (ti * pi * ci)
    tp, cp, pp, vp, dp = (f64(x) for x in (ti, ci, pi, vi, di))
    nmb = np.maximum(float(gbs) / (dp * f64(mi)), 1.0)

    # layer kinds and head: once per distinct (tp, cp, ep, etp, mbs, seq), recompute as a column; with a
    # search's `cache`, once per search
    build = lambda rows: _layer_tables(
        m,
        _base_grid(gpus, gbs, seq, base).take(rows),
        rec,
        hw.at_clock(sw.power_factor),
        prec,
        low,
        imb,
        c,
        sw,
        c_layer,
        c_other,
    )
    if cache is None:
        first, u = workload.unique_layer_axes(_base_grid(gpus, gbs, seq, base))
        tab = build(first)
    else:
        tab, u = _cached_tables(cache, gpus, (ti, ci, ei, xi, mi), build)
    ws = tab["ws"]
    n_k = len(ws.layers)

    # p2p and the in-flight micro-batches depend on (tp, cp, pp, vp, mbs) (dp follows): once per run of equal
    # (tp, cp, pp, vp) and mbs, found with a lookup table (no sort)
    pre = _runs(ti, ci, pi, vi)
    pkey = (np.cumsum(pre) - 1) * (int(mi.max()) + 1) + mi
    seen = np.zeros(int(pkey.max()) + 1, np.intp)
    seen[pkey] = 1
    ukeys = np.flatnonzero(seen)
    seen[ukeys] = np.arange(ukeys.size)
    fl = seen[pkey]
    one = np.empty(ukeys.size, np.intp)
    one[fl[::-1]] = np.arange(B - 1, -1, -1)  # a representative row of each
    Ts = tab["Ts"][u[one]]
    p2p = pp_par.boundary_p2p_time(Ts, m.hidden_size, tp[one], cp[one], dp[one], pp[one], vp[one], hw)[fl]

    # the DP side does not depend on mbs, the enumeration's innermost axis: one row per run of equal
    # (tp, cp, pp, vp, ep, etp), gathered back by `run`
    chg = pre | _runs(ei, xi)
    rows, run = np.flatnonzero(chg), np.cumsum(chg) - 1
    tR, cR, pR, eR, xR = (f64(x[rows]) for x in (ti, ci, pi, ei, xi))
    dpc, edp = dp[rows] * cR, f64((ti[rows] * ci[rows] * di[rows]) // (ei[rows] * xi[rows]))
    mcnt, mrank, mpair = pp_par.memory_rank_table(
        ws.layer_kinds, n_k, pi, vi, m.mtp_layers, sw.pipeline_layout, sw.schedule
    )
    rank_cnt, rank_of = [x[mpair[rows]] for x in mcnt], mrank[mpair[rows]]
    p_dense, p_exp = dp_par.rank_params(m, ws, rank_cnt, rank_of, col(pR), sw.schedule)
    p_dense, p_exp = p_dense / col(tR), p_exp / col(eR * xR)
    # calls per step without / with parameter sharding (dp.calls_by_sharding): rs, ag are [2, runs, Q] like opt
    calls = [
        dp_par.calls_by_sharding(p, col(dpc), rank_of, sum(rank_cnt), col(f64(vi[rows])), sw.dp_buckets, sw.dp_bucketed)
        for p in (p_dense, p_exp)
    ]
    gb = sw.grad_bytes
    wb = weight_bytes(prec, sw.fp8_param_gather)
    # one placement of the groups; the calls' leading axis (without / with FSDP) broadcasts through
    rs, ag = dp_par.grad_and_param_times(
        p_dense,
        p_exp,
        sw.reduce_bytes,
        wb,
        col(dpc),
        col(edp),
        col(tR),
        col(eR),
        col(xR),
        hw,
        sw.hybrid_shard_group if sw.shards_params else None,
        sw.grad_all_reduce,
        np.stack(calls[0]),
        np.stack(calls[1]),
    )
    # the state each GPU holds and steps (dp.optimizer_shard): FSDP's shard (hybrid sharding: its group's) and,
    # without FSDP, the stack's optimizer sharding; the optimizer step per fsdp choice [2, runs, Q]
    shard, opt_group = (
        dp_par.optimizer_shard(p_dense, p_exp, col(dpc), col(edp), col(cR), f, sw) for f in (True, False)
    )
    opt = np.stack(
        [
            memory_time(
                (K.ADAM_STATE_STEP_BYTES + gb) * held + K.GRAD_NORM_ZERO_GRADS * gb * (p_dense + p_exp),
                hw,
                dp_par.optimizer_kernels(m, [x.kind for x in ws.layers], rank_cnt, sw),
                c_other,
            )
            for held in (opt_group, shard)
        ]
    )
    in_fl = pp_par.in_flight(col(pp[one]), col(vp[one]), col(nmb[one]), mrank[mpair[one]], sw.schedule)  # [FL, Q]
    # per memory rank: which ranks hold each dummy-wgrad group, the last rank, and the share of activations
    # offloading keeps in HBM depend on the (pp, vp) pair only (pp is the pair's; the tails gather them)
    last_pq = mrank == mrank[:, -1:]
    dummy_on = (
        np.stack(dummy_wgrad_on(tab["dummy_keys"], mcnt)).astype(float)
        if tab["dummy_keys"]
        else np.zeros((0, *last_pq.shape))
    )
    pp_pair = np.zeros(len(mrank))
    pp_pair[mpair] = pp
    act_share = (
        np.broadcast_to(offload_kept_share(sw, col(pp_pair), sum(mcnt)), last_pq.shape)
        if sw.cpu_offload_layers
        else np.ones(last_pq.shape)
    )  # no offloading: every share is 1
    if "per_layer_pp1" in tab:  # activation offloading (pp = 1): each base row its own per-layer seconds
        per_layer, upl = (
            np.where((pi == 1)[None, :, None], tab["per_layer_pp1"][:, u], tab["per_layer"][:, u]),
            np.arange(B),
        )
    else:
        per_layer, upl = tab["per_layer"], u
    return _Tables(
        m,
        sw,
        c,
        hw.memory.capacity,
        fs,
        rec,
        n_k,
        int(ws.head.mtp_layers),
        tab,
        u,
        np.ascontiguousarray(per_layer),
        upl,
        dummy_on,
        last_pq,
        np.ascontiguousarray(act_share),
        pp_par.signature_table(ws.layer_kinds, n_k, pi, vi, m.mtp_layers, sw.pipeline_layout),
        mcnt,
        mrank,
        mpair,
        run,
        rs,
        ag,
        opt,
        p_dense + p_exp,
        shard,
        opt_group,
        fl,
        in_fl,
        tp,
        pp,
        vp,
        nmb,
        p2p,
        wb + sw.param_extra_bytes,  # weight bytes held per parameter (memory.memory_per_gpu)
        gb + sw.lp_grad_bytes,  # gradient bytes held per parameter (memory.memory_per_gpu)
        float(gbs) * float(seq),
        float(gpus),
        ep_par.a2a_solo_microbatches(col(pp[one]), col(vp[one]), col(nmb[one]), rec[None, :] == FULL),
    )


def _numpy_tail(t: _Tables) -> Scores:
    """Stage times, schedule, exposed DP time and memory of every layout, in numpy: the step tail's elementwise
    functions (core/elementwise.py) on the product's axes, in kernel.tail's order of operations."""
    m, sw, c, tab, u = t.m, t.sw, t.c, t.tab, t.u
    B, F, R, Q = len(u), len(t.fs), len(t.rec), t.mrank.shape[1]
    col = lambda x: x[:, None]
    q3 = lambda x: np.ascontiguousarray(np.broadcast_to(x, (B, Q)).T)[:, :, None]  # [B, Q] -> [Q, B, 1]
    per_layer, kept, upl = list(t.per_layer), list(tab["kept"]), t.upl
    rr = t.rec[None, :]

    # stages and schedule: [S, B, R] -> [B, R] (predict._stages); the small axes (signatures S, memory ranks
    # Q) lead, so their reductions run over contiguous slices
    cnt, has_emb, has_head, mult, pair = t.sig
    lead = lambda x: np.ascontiguousarray(x.T[:, pair])[:, :, None]  # [P, S] -> [S, B, 1]
    cnt, mult = [lead(x) for x in cnt], lead(mult)
    layers = sum(cnt[i] * per_layer[i][upl][None] for i in range(t.n_kinds))
    compute_s = pp_par.stage_compute(
        layers, lead(has_emb), tab["embed"][u][None, :, None], lead(has_head), tab["head"][u][None, :, None]
    )
    on = mult > 0
    t_stage = pp_par.stage_seconds(compute_s, t.p2p[None, :, None], pp_share(sw, t.vp)[None, :, None], on)
    t_max = np.maximum.reduce(t_stage, axis=0)
    t_sum = np.add.reduce(mult * np.where(on, t_stage, 0.0), axis=0)
    code = pp_par.SCHEDULE_CODES.get(sw.schedule, 0)
    pipeline = pp_par.pipeline_seconds(t_max, t_sum, col(t.pp), col(t.vp), col(t.nmb), code)  # [B, R]

    # step end on the memory ranks: [Q, B, R] per fsdp choice (predict._step_end); the EP all-to-all the overlap
    # leaves exposed (predict.a2a_solo: the solo micro-batches per (tp, cp, pp, vp, mbs) times one micro-batch's
    # exposure of all layers, shared by the pp ranks)
    solo = t.solo[t.fl] * col(tab["ep_solo"][u] / t.pp)
    stage, nmb3 = t_max[None], t.nmb[None, :, None]
    plain = fsdp_t = None
    pm = dp_par.gathers_per_microbatch(sw.fsdp_per_microbatch, sw.fsdp_pp_per_step, t.pp)[None, :, None]  # [1, B, 1]
    step = np.empty((B, F, R))
    for f, on_f in enumerate(t.fs):
        rs3, ag3 = (q3(x[int(on_f)][t.run]) for x in (t.rs, t.ag))
        if on_f:
            if fsdp_t is None:
                fsdp_t = dp_par.exposed_fsdp(rs3, ag3, stage, nmb3, pm, sw.fsdp_reshard, sw.dp_rs_share, sw.dp_ag_share)
            dp_r = fsdp_t
        else:
            if plain is None:
                plain = dp_par.exposed_plain(
                    rs3, ag3, stage, sw.dp_rs_share, sw.dp_ag_share, dp_par.grad_calls(nmb3, sw.shards_grads)
                )
            dp_r = plain
        opt3 = q3(t.opt[int(on_f)][t.run])
        # the rank that finishes last (np.argmax's rule: the first of equal ones)
        best, dp_comm, optimizer = dp_r[0] + opt3[0], dp_r[0], opt3[0]
        for q in range(1, Q):
            tot = dp_r[q] + opt3[q]
            later = tot > best
            best, dp_comm, optimizer = (
                np.where(later, tot, best),
                np.where(later, dp_r[q], dp_comm),
                np.where(later, opt3[q], optimizer),
            )
        step[:, f] = step_seconds(pipeline, dp_comm, optimizer, float(step_overhead(c.step_host_s, t.gpus)), solo)
    tps = np.full(B, t.tokens)[:, None, None] / (step * np.full(B, t.gpus)[:, None, None])

    # memory of the fullest rank: [Q, B, R] per fsdp choice (memory.memory_per_gpu)
    params, shard3, opt_group = (q3(x[t.run]) for x in (t.params, t.shard, t.opt_group))
    held = 0.0
    rank3 = q3(t.mrank[t.mpair])
    for k in range(t.n_kinds):
        held = held + q3(t.mcnt[k][t.mpair]) * kept[k][u][None]  # [Q, B, R]
    lastr = rank3 == t.pp[None, :, None] - 1
    Ts, T = tab["Ts"][u], tab["T"][u]
    activations = rank_activations(
        held,
        q3(t.in_fl[t.fl]),
        np.where(rr[None] == NONE, q3(t.act_share[t.mpair]), 1.0),  # memory.offloads
        lastr,
        t.mtp_layers * kept[-1][u][None],
        recompute.transient(rr[None], sw),
        tab["full_layer"][u][None, :, None],
        rank3 == 0,
        K.BF16 * m.hidden_size * Ts[None, :, None],
    )
    logits = rank_logits(lastr, sw.logit_bytes, T[None, :, None], m.vocab_size, t.tp[None, :, None])
    dummies = q3(
        dummy_wgrad_from(
            [x[u] for x in tab["dummy"]], tab["dummy_head"][u], list(t.dummy_on[:, t.mpair]), t.last_pq[t.mpair]
        )
        if sw.dummy_wgrad
        else np.zeros((B, Q))
    )
    reserved = c.reserved_bytes + 0 * rank3
    mem = np.empty((B, F, R))
    for f, on_f in enumerate(t.fs):
        weights, grads, optim = rank_state(
            params, shard3, opt_group, on_f, pm, sw.shards_grads, t.wb, t.gb, sw.adam_bytes
        )
        total = rank_total(rank_held(weights, grads, dummies, optim), activations, logits, reserved)
        mem[:, f] = np.maximum.reduce(total, axis=0)
    return Scores(step, tps, mem, t.hbm)


def _kernel_tail(t: _Tables) -> Scores:
    """The same tail compiled (kernel.tail): the same functions one layout at a time."""
    from perfmodel.core import kernel

    sw, c, tab = t.sw, t.c, t.tab
    B, F, R = len(t.u), len(t.fs), len(t.rec)
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)
    qr = np.ascontiguousarray  # [rows, Q], a rank's values side by side
    cnt, emb, hd, mult, pair = t.sig
    stages = kernel.Stages(
        t.per_layer,
        i64(t.upl),
        tab["embed"],
        tab["head"],
        i64(t.u),
        np.ascontiguousarray(np.stack(cnt)),
        emb,
        hd,
        mult,
        i64(np.where(mult > 0, np.arange(mult.shape[1]), 0).max(axis=1) + 1),
        i64(pair),
        t.p2p,
        np.ascontiguousarray(pp_share(sw, t.vp)),
    )
    schedule = kernel.Schedule(
        t.pp, t.vp, t.nmb, pp_par.SCHEDULE_CODES.get(sw.schedule, 0), float(pp_par.ZERO_BUBBLE_SHARE)
    )
    dp = kernel.DataParallel(
        i64(t.run),
        qr(t.rs[0]),
        qr(t.ag[0]),
        qr(t.rs[1]),
        qr(t.ag[1]),
        qr(t.opt[0]),
        qr(t.opt[1]),
        float(sw.dp_rs_share),
        float(sw.dp_ag_share),
        bool(sw.fsdp_per_microbatch),
        bool(sw.fsdp_reshard),
        t.fs,
        bool(sw.fsdp_pp_per_step),
    )
    stepa = kernel.Step(
        float(step_overhead(c.step_host_s, t.gpus)),
        np.ascontiguousarray(t.solo),
        tab["ep_solo"],
        i64(t.fl),
        t.tokens,
        t.gpus,
    )
    mm = kernel.Memory(
        qr(t.params),
        qr(t.shard),
        qr(t.opt_group),
        float(t.wb),
        float(t.gb),
        float(sw.adam_bytes),
        bool(sw.shards_grads),
        np.ascontiguousarray(np.stack(t.mcnt)),
        i64(t.mpair),
        i64(1 + np.count_nonzero(t.mrank[:, 1:] != t.mrank[:, :-1], axis=1)),
        qr(t.in_fl),
        qr(t.mrank == t.mrank[:, -1:]),
        qr(t.mrank == 0),  # last rank (pp - 1), first rank
        tab["kept"],
        tab["full_layer"],
        recompute.transient(t.rec, sw),
        t.rec == NONE,
        t.mtp_layers,
        tab["Ts"],
        float(K.BF16 * t.m.hidden_size),
        tab["T"],
        float(sw.logit_bytes),
        float(t.m.vocab_size),
        t.tp,
        float(c.reserved_bytes),
        bool(sw.dummy_wgrad),
        tab["dummy"],
        np.ascontiguousarray(t.dummy_on),
        tab["dummy_head"],
        float(K.BF16),
        qr(t.act_share),
    )
    step, tps, mem = np.empty((B, F, R)), np.empty((B, F, R)), np.empty((B, F, R))
    kernel.tail(stages, schedule, dp, stepa, mm, step, tps, mem)
    return Scores(step, tps, mem, t.hbm)


def _context(m: ModelSpec, hw: HardwareSpec, opts: Options):
    """(stack, layer constants, other constants, low precision, MoE imbalance) as predict_grid sets them."""
    c = opts.consts
    hw.peak(opts.precision)  # a clear error when the GPU lacks the precision
    sw = software_of(m, hw, opts)
    c_layer, c_other = replace(c, kernel_fixed_s=sw.layer_kernel_s), replace(c, kernel_fixed_s=sw.other_kernel_s)
    return (
        sw,
        c_layer,
        c_other,
        opts.precision not in ("bf16", "fp16"),
        ("real" if opts.routing == "real" else 1.0),  # real: per layout, parallel/ep.py routing_imbalance
    )


def _base_grid(gpus: int, gbs: int, seq: int, base: dict[str, np.ndarray]) -> LayoutGrid:
    B = len(base["tp"])
    full = lambda v: np.full(B, v, np.int64)
    zeros = np.zeros(B, np.int64)
    return LayoutGrid(
        gpus=full(gpus),
        gbs=full(gbs),
        seq=full(seq),
        fsdp=zeros.astype(bool),
        recompute=zeros,
        **{k: np.asarray(base[k], dtype=np.int64) for k in ("tp", "pp", "vp", "cp", "ep", "etp", "mbs")},
    )


def prime(
    model: ModelSpec,
    hw: HardwareSpec,
    gpus: int,
    gbs: int,
    seq: int,
    base: dict[str, np.ndarray],
    rec,
    opts: Options,
    cache: dict,
) -> None:
    """Price the combinations of base rows `base` (an enumeration block, several chunks) into a search's
    `cache` at once: one pricing pass instead of one per chunk."""
    sw, c_layer, c_other, low, imb = _context(model, hw, opts)
    bgrid = _base_grid(gpus, gbs, seq, base)
    rec = np.asarray(rec, dtype=np.int64)
    build = lambda rows: _layer_tables(
        model,
        bgrid.take(rows),
        rec,
        hw.at_clock(sw.power_factor),
        opts.precision,
        low,
        imb,
        opts.consts,
        sw,
        c_layer,
        c_other,
    )
    _cached_tables(
        cache, gpus, tuple(np.asarray(base[k], dtype=np.int64) for k in ("tp", "cp", "ep", "etp", "mbs")), build
    )


def _layer_tables(m, rows: LayoutGrid, rec, hw, prec, low, imb, c, sw, c_layer, c_other) -> dict:
    """The per-combination tables of the layouts `rows` (one row per combination): each kind's seconds per
    micro-batch under each recompute choice [K, U, R], its kept activation bytes [K, U, R], the largest full
    layer's bytes [U], head and embedding seconds [U], tokens per micro-batch T and T / tp [U]."""
    f64 = lambda x: np.asarray(x, dtype=float)
    U = rows.n
    ws = workload.build(m, rows, low, imb, c, sw)
    reduce = _reducer(rows)
    prices = _kind_prices(m, ws, rows, low, imb, c, sw, hw, prec, c_layer, reduce)
    at_u = lambda x, *tail: np.ascontiguousarray(np.broadcast_to(f64(x), (U, *tail)))  # maybe a scalar
    rr = rec[None, :]
    per_layer = [
        at_u(sum(p.parts.values()))[:, None] + recompute.time(rr, at_u(p.fwd)[:, None], at_u(p.selective_f)[:, None])
        for p in prices
    ]  # [U, R]
    offload = {}
    if any(p.offload is not None for p in prices):  # the same at pp = 1 with activation offloading's copy
        one = np.ones(U)  # (without recompute only: memory.offloads)
        offload["per_layer_pp1"] = np.where(
            (rr == NONE)[None],
            np.stack(
                [
                    at_u(sum(with_offload({k: at_u(v) for k, v in p.parts.items()}, p.offload, at_u, one).values()))[
                        :, None
                    ]
                    + recompute.time(rr, at_u(p.fwd)[:, None], at_u(p.selective_f)[:, None])
                    for p in prices
                ]
            ),
            np.stack(per_layer),
        )
    keys, elems, dhead = dummy_wgrad_sets(ws)
    head, embed = (at_u(x) for x in _price_head(ws, prices, hw, prec, c_layer, c_other, reduce))
    ep_solo = at_u(a2a_solo(ws, prices, 1.0, 1.0, 1.0, 0))  # all layers, one micro-batch (predict.a2a_solo)
    kept, full_layer = [], 0.0
    for layer in ws.layers:
        k_, fl = layer_activation_bytes(
            layer, rr, sw.recompute_modules, lambda x: f64(x)[..., None], recompute.layer_share(sw, m.num_layers)
        )
        kept.append(at_u(k_, len(rec)))
        full_layer = np.maximum(full_layer, at_u(fl, 1)[:, 0])
    return {
        "ws": ws,
        "per_layer": np.stack(per_layer),
        "kept": np.stack(kept),
        "full_layer": at_u(full_layer),
        "head": head,
        "embed": embed,
        "ep_solo": ep_solo,
        "Ts": at_u(ws.Ts),
        "T": at_u(ws.T),
        **offload,
        "dummy_keys": keys,
        "dummy": np.stack([at_u(e) for e in elems]) if elems else np.zeros((0, U)),
        "dummy_head": at_u(dhead),
    }


def _reducer(rows: LayoutGrid):
    """reduce(axes): (one row of `rows` per distinct combination of `axes`, each row's combination), or None
    where every row is its own; computed once per axes."""
    found: dict = {}

    def reduce(axes):
        if axes not in found:
            first, inv = workload.unique_layer_axes(rows, axes)
            found[axes] = (first, inv) if first.size < rows.n else None
        return found[axes]

    return reduce


def _kind_prices(m, ws, rows: LayoutGrid, low, imb, c, sw, hw, prec, c_layer, reduce) -> list:
    """predict._price_kinds on the combinations `rows`, each kind evaluated once per distinct combination of
    the axes its records depend on (workload.KIND_AXES: a dense layer's on (tp, cp, mbs, seq), not ep or
    etp) and gathered back: the same prices, elementwise, from fewer rows (`reduce`: _reducer(rows))."""
    out = []
    for layer in ws.layers:
        axes = workload.KIND_AXES[layer.kind]
        if axes == workload.AXES or reduce(axes) is None:  # the kind's other records on every combination
            out.append(price_kind(layer, ws, hw, prec, c_layer, sw, reduce))
            continue
        first, inv = reduce(axes)
        ws_r = workload.build(m, rows.take(first), low, imb, c, sw)
        p = price_kind(next(x for x in ws_r.layers if x.kind == layer.kind), ws_r, hw, prec, c_layer, sw)
        g = lambda x: np.asarray(x)[inv] if np.ndim(x) else x
        out.append(
            KindPrice(
                {k: g(v) for k, v in p.parts.items()},
                {k: g(v) for k, v in p.raw.items()},
                g(p.fwd),
                g(p.selective_f),
                g(p.selective_flops),
                None if p.offload is None else g(p.offload),
                g(p.ep_solo),
            )
        )
    return out


TABLE_KEYS = (
    "per_layer",
    "kept",
    "full_layer",
    "head",
    "embed",
    "ep_solo",
    "Ts",
    "T",
    "per_layer_pp1",
    "dummy",
    "dummy_head",
)
_AXIS = {"per_layer": 1, "kept": 1, "per_layer_pp1": 1, "dummy": 1}  # tables with the combination on their second axis


DENSE_LOOKUP_MAX = 1 << 22  # entries of _cached_tables' direct lookup table (int32, 16 MB at most)


def _cached_tables(cache: dict, gpus: int, cols, build) -> tuple[dict, np.ndarray]:
    """(the search's tables, each base row's index into them): combinations seen in earlier chunks are
    looked up, the new ones built (`build(rows)`, in key order) and appended. tp, cp, ep and etp divide the
    GPU count: each is coded by its index among the divisors, mbs by its value, into one int64 key; the key
    space is a direct lookup table where it is small (DENSE_LOOKUP_MAX), else a sorted search."""
    if "div" not in cache:
        cache["div"] = np.flatnonzero(gpus % np.arange(1, gpus + 1) == 0) + 1
        cache["div_code"] = np.zeros(gpus + 1, np.int64)  # a divisor's index, by lookup (no search)
        cache["div_code"][cache["div"]] = np.arange(cache["div"].size)
        cache["k4"], cache["km"] = np.zeros(0, np.int64), np.zeros(0, np.int64)  # the known combinations
    n_div, code = cache["div"].size, cache["div_code"]
    key4 = code[cols[0]]
    for x in cols[1:4]:
        key4 = key4 * n_div + code[x]
    mbs = cols[4]
    if int(mbs.max()) + 1 > cache.get("mb", 0):  # the key's mbs stride: re-coded when a larger mbs comes
        cache["mb"] = int(mbs.max()) + 1
        _key_index(cache, n_div)
    mb = cache["mb"]
    key = key4 * mb + mbs
    pos = _key_positions(cache, key)
    miss = pos < 0
    if miss.any():
        rows = np.flatnonzero(miss)
        ukey, first = np.unique(key[rows], return_index=True)
        t = build(rows[first])
        if "tab" not in cache:
            cache["tab"] = t
        else:
            old = cache["tab"]
            cache["tab"] = {
                "ws": old["ws"],
                "dummy_keys": old["dummy_keys"],
                **{k: np.concatenate([old[k], t[k]], axis=_AXIS.get(k, 0)) for k in TABLE_KEYS if k in old},
            }
        n0 = cache["k4"].size
        cache["k4"] = np.concatenate([cache["k4"], ukey // mb])
        cache["km"] = np.concatenate([cache["km"], ukey % mb])
        if "dense" in cache:
            cache["dense"][ukey] = n0 + np.arange(ukey.size)
        else:
            _key_index(cache, n_div)
        pos = _key_positions(cache, key)
    return cache["tab"], pos


def _key_index(cache: dict, n_div: int) -> None:
    """The lookup of the known combinations' keys (k4 * mb + mbs) to their table index: a table over the key
    space where it is small, else the sorted keys and their order."""
    key = cache["k4"] * cache["mb"] + cache["km"]
    for k in ("dense", "sorted", "order"):
        cache.pop(k, None)
    if n_div**4 * cache["mb"] <= DENSE_LOOKUP_MAX:
        cache["dense"] = np.full(n_div**4 * cache["mb"], -1, np.int32)
        cache["dense"][key] = np.arange(key.size)
    else:
        cache["order"] = np.argsort(key, kind="stable")
        cache["sorted"] = key[cache["order"]]


def _key_positions(cache: dict, key: np.ndarray) -> np.ndarray:
    """Each key's table index, -1 where the combination is not priced yet."""
    if "dense" in cache:
        return cache["dense"][key]
    srt, order = cache["sorted"], cache["order"]
    if not srt.size:
        return np.full(key.shape, -1, np.int64)
    i = np.minimum(np.searchsorted(srt, key), srt.size - 1)
    return np.where(srt[i] == key, order[i], -1)
