"""The planner's per-layout tail as one compiled loop (numba): stage times, schedule, exposed DP time, the
rank that finishes last, and the fullest rank's memory, for every layout of a product base x fsdp x
recompute. score.py prepares the per-combination and per-base-row tables (the same ones its numpy tail reads)
and calls `tail` where numba is installed (score.use_kernel).

No formula is written here: the loop calls the step tail's elementwise functions (core/elementwise.py) where
they live -- parallel/pp.py (stage_compute, stage_seconds, pipeline_seconds), parallel/dp.py (exposed_plain,
exposed_fsdp), overlap.py (exposed, exposed_pair), memory.py (rank_state, rank_activations, rank_logits,
rank_dummies, rank_total) and predict.py (step_seconds) -- which numba compiles from their Python source
(`numba.extending.register_jitable`), `elementwise.select` as a scalar `a if c else b`. predict_grid and
score's numpy tail call the same functions on arrays, in the same order of operations (IEEE, no fast-math),
so the three agree bit for bit: tests/core/test_score.py asserts it on every sampled layout.

Why the dependency: numpy evaluates each term as a pass over arrays of every layout (memory traffic on
temporaries, ~0.3 µs per layout here); one fused loop keeps a layout's values in registers. Loading numba
and the cached machine code costs ~0.5 s per process, so score.py uses it only once it pays for itself.
The machine code is cached under a directory named by the hash of every module whose functions the loop
compiles (numba itself tracks only this file), so a change to any of them compiles afresh.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from perfmodel.core import elementwise, memory, overlap, predict
from perfmodel.core.parallel import dp as dp_par
from perfmodel.core.parallel import pp as pp_par

if "scipy" in sys.modules:
    import numba
else:
    # numba imports scipy (0.1-0.15 s here) only for its optional BLAS bindings of np.linalg, which this loop
    # does not use: blocked for this import (np.linalg in numba code may then be unavailable in this process)
    sys.modules["scipy"] = None  # type: ignore[assignment]
    try:
        import numba
    finally:
        del sys.modules["scipy"]
from numba.extending import overload, register_jitable  # noqa: E402

_SOURCES = (elementwise, overlap, pp_par, dp_par, memory, predict)


@overload(elementwise.select)
def _select(cond, a, b):
    return lambda cond, a, b: a if cond else b


for _mod in _SOURCES:
    for _fn in getattr(_mod, "TAIL_FUNCTIONS", ()):
        register_jitable(_fn)


def _cache_dir() -> str | None:
    """Where numba keeps the compiled loop: beside this file (a read-only install: perfmodel's cache directory,
    fncache.cache_dir), in a folder named by the hash of this file and of every module the loop compiles."""
    h = hashlib.sha256()
    for mod in (sys.modules[__name__], *_SOURCES):
        h.update(Path(mod.__file__).read_bytes())
    here = Path(__file__).resolve().parent
    if os.access(here, os.W_OK):
        return str(here / "__pycache__" / f"numba-{h.hexdigest()[:16]}")
    from perfmodel.specs.fncache import cache_dir

    d = cache_dir()
    return None if d is None else str(d / "numba" / h.hexdigest()[:16])


class Stages(NamedTuple):
    """Per combination u and per (pp, vp) pair: each kind's seconds per micro-batch [K, U or B, R] (indexed by
    upl), embedding and head seconds [U], the signature tables [K, P, S] / [P, S]; per base row: combination u,
    pair, p2p seconds and its overlappable share."""

    per_layer: np.ndarray
    upl: np.ndarray
    embed: np.ndarray
    head: np.ndarray
    u: np.ndarray
    cnt: np.ndarray
    emb: np.ndarray
    hd: np.ndarray
    mult: np.ndarray
    ns: np.ndarray  # [P] signatures of each pair up to its last real one (the padding after it is skipped)
    pair: np.ndarray
    p2p: np.ndarray
    pp_share: np.ndarray


class Schedule(NamedTuple):
    pp: np.ndarray  # [B]
    vp: np.ndarray
    nmb: np.ndarray
    code: int  # parallel/pp.SCHEDULE_CODES
    zb_share: float


class DataParallel(NamedTuple):
    """Per run of equal (tp, cp, pp, vp, ep, etp) (`run` per base row) and memory rank q: reduce-scatter and
    all-gather seconds, optimizer seconds without / with FSDP [runs, Q]; the stack's DP overlap."""

    run: np.ndarray
    rs: np.ndarray
    ag: np.ndarray
    rs_fs: np.ndarray  # ... with FSDP (one collective per unit: dp.calls_by_sharding)
    ag_fs: np.ndarray
    opt: np.ndarray
    opt_fs: np.ndarray
    rs_share: float
    ag_share: float
    per_microbatch: bool
    reshard: bool
    fs: np.ndarray  # [F] the fsdp choices
    pp_per_step: bool  # FSDP gathers once per step at pp > 1 (Software.fsdp_pp_per_step; dp.gathers_per_microbatch)


class Step(NamedTuple):
    overhead: float  # fixed per-step seconds
    solo: np.ndarray  # [FL, R] micro-batches whose EP all-to-all stays exposed
    ep_solo: np.ndarray  # [U] one micro-batch's exposure of all layers
    fl: np.ndarray  # [B] -> in-flight row
    tokens: float
    gpus: float


class Memory(NamedTuple):
    """Per memory rank q of each run / pair / in-flight row, what memory.memory_per_gpu composes."""

    params: np.ndarray  # [runs, Q]
    shard: np.ndarray
    opt_group: np.ndarray
    wb: float
    gb: float
    adam: float
    shards_grads: bool
    mcnt: np.ndarray  # [K, P, Q]
    mpair: np.ndarray  # [B]
    nq: np.ndarray  # [P] distinct memory ranks of each pair: its first columns (pp.memory_rank_table repeats the last)
    in_flight: np.ndarray  # [FL, Q]
    last: np.ndarray  # [P, Q]
    first: np.ndarray
    kept: np.ndarray  # [K, U, R]
    full_layer: np.ndarray  # [U]
    rec_full: np.ndarray  # [R]
    rec_none: np.ndarray
    mtp_layers: int
    Ts: np.ndarray  # [U]
    emb_bytes: float
    T: np.ndarray
    logit_bytes: float
    vocab: float
    tp: np.ndarray  # [B]
    reserved: float
    has_dummy: bool
    dummy_e: np.ndarray  # [G, U]
    dummy_on: np.ndarray  # [G, P, Q]
    dummy_head: np.ndarray  # [U]
    bf16: float
    act_share: np.ndarray  # [P, Q]


_DIR = _cache_dir()
_saved = numba.config.CACHE_DIR
numba.config.CACHE_DIR = _DIR or ""


@numba.njit(cache=_DIR is not None, nogil=True)
def tail(st, sc, dp, sp, mm, step, tps, mem):
    """Step seconds, tokens/s/GPU and memory per GPU of every layout base b x fsdp f x recompute r. What does
    not depend on the recompute choice (a memory rank's held bytes and logits) is evaluated once per b."""
    K, B, R = st.per_layer.shape[0], st.u.shape[0], st.per_layer.shape[2]
    Q, F = dp.rs.shape[1], dp.fs.shape[0]
    G = mm.dummy_e.shape[0]
    act = np.empty(Q)
    lg = np.empty(Q)
    held = np.empty((F, Q))
    for b in range(B):
        ub, pb, mb, rb, fb, lb = st.u[b], st.pair[b], mm.mpair[b], dp.run[b], sp.fl[b], st.upl[b]
        solo_b = sp.ep_solo[ub] / sc.pp[b]
        pm = dp_par.gathers_per_microbatch(dp.per_microbatch, dp.pp_per_step, sc.pp[b])
        nq = mm.nq[mb]  # the repeated columns change no maximum: skipped
        for q in range(nq):
            lg[q] = memory.rank_logits(mm.last[mb, q], mm.logit_bytes, mm.T[ub], mm.vocab, mm.tp[b])
            dm = 0.0
            if mm.has_dummy:
                for gi in range(G):
                    dm = dm + mm.dummy_e[gi, ub] * mm.dummy_on[gi, mb, q]
                dm = memory.rank_dummies(dm, mm.last[mb, q], mm.dummy_head[ub], mm.bf16)
            for f in range(F):
                w, g, o = memory.rank_state(
                    mm.params[rb, q],
                    mm.shard[rb, q],
                    mm.opt_group[rb, q],
                    dp.fs[f],
                    pm,
                    mm.shards_grads,
                    mm.wb,
                    mm.gb,
                    mm.adam,
                )
                held[f, q] = memory.rank_held(w, g, dm, o)
        for r in range(R):
            # stages: the slowest and the summed rank, then the schedule
            t_max = -np.inf
            t_sum = 0.0
            for s in range(st.ns[pb]):  # a padding signature (-inf, multiplicity 0) changes no max or sum
                layers = 0.0
                for k in range(K):
                    layers = layers + st.cnt[k, pb, s] * st.per_layer[k, lb, r]
                c = pp_par.stage_compute(layers, st.emb[pb, s], st.embed[ub], st.hd[pb, s], st.head[ub])
                on = st.mult[pb, s] > 0
                t = pp_par.stage_seconds(c, st.p2p[b], st.pp_share[b], on)
                if s == 0:
                    t_max = t
                    t_sum = st.mult[pb, s] * (t if on else 0.0)
                else:
                    t_max = max(t_max, t)
                    t_sum = t_sum + st.mult[pb, s] * (t if on else 0.0)
            pipeline = pp_par.pipeline_seconds(t_max, t_sum, sc.pp[b], sc.vp[b], sc.nmb[b], sc.code, sc.zb_share)
            # activations of the memory ranks
            for q in range(nq):
                saved = 0.0
                for k in range(K):
                    saved = saved + mm.mcnt[k, mb, q] * mm.kept[k, ub, r]
                act[q] = memory.rank_activations(
                    saved,
                    mm.in_flight[fb, q],
                    mm.act_share[mb, q] if mm.rec_none[r] else 1.0,
                    mm.last[mb, q],
                    mm.mtp_layers * mm.kept[K - 1, ub, r],
                    mm.rec_full[r],
                    mm.full_layer[ub],
                    mm.first[mb, q],
                    mm.emb_bytes * mm.Ts[ub],
                )
            for f in range(F):
                # exposed DP time on each memory rank and the rank that finishes last
                best = 0.0
                dsel = 0.0
                osel = 0.0
                for q in range(nq):
                    if dp.fs[f]:
                        d = dp_par.exposed_fsdp(
                            dp.rs_fs[rb, q],
                            dp.ag_fs[rb, q],
                            t_max,
                            sc.nmb[b],
                            pm,
                            dp.reshard,
                            dp.rs_share,
                            dp.ag_share,
                        )
                        o = dp.opt_fs[rb, q]
                    else:
                        d = dp_par.exposed_plain(
                            dp.rs[rb, q],
                            dp.ag[rb, q],
                            t_max,
                            dp.rs_share,
                            dp.ag_share,
                            dp_par.grad_calls(sc.nmb[b], mm.shards_grads),
                        )
                        o = dp.opt[rb, q]
                    tot = d + o
                    if q == 0 or tot > best:
                        best, dsel, osel = tot, d, o
                s_b = predict.step_seconds(pipeline, dsel, osel, sp.overhead, sp.solo[fb, r] * solo_b)
                step[b, f, r] = s_b
                tps[b, f, r] = sp.tokens / (s_b * sp.gpus)
                # memory of the fullest rank
                m = 0.0
                for q in range(nq):
                    tot = memory.rank_total(held[f, q], act[q], lg[q], mm.reserved)
                    m = tot if q == 0 else max(m, tot)
                mem[b, f, r] = m


numba.config.CACHE_DIR = _saved
