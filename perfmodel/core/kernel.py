"""The planner's per-layout tail as one compiled loop (numba): stage times, schedule, exposed DP time, the
rank that finishes last, and the fullest rank's memory, for every layout of a product base x fsdp x
recompute. score.py prepares the same per-combination and per-base-row tables for it as for its numpy tail
and calls it where numba is installed (score.use_kernel); each statement below restates one line of that
tail in the same order of operations (IEEE arithmetic, no fast-math), so the two agree bit for bit:
tests/test_score.py asserts it on every sampled layout and fails when one changes without the other.

Sources of the formulas, as in the numpy tail: overlap.exposed / exposed_shared (one overlap budget),
parallel/pp.schedule_time (Narayanan et al. 2021 Eq. 1-2; Zero Bubble §3; DeepSeek-V3 §3.2.1),
parallel/dp.exposed_plain / exposed_fsdp, memory.memory_per_gpu (Korthikanti et al. 2022; ZeRO).

Why the dependency: numpy evaluates each term as a pass over arrays of every layout (memory traffic on
temporaries, ~0.3 µs per layout here); one fused loop keeps a layout's values in registers. Loading numba
and the cached machine code costs ~0.5 s per process, so score.py uses it only once it pays for itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

# numba caches the compiled loop beside this file; where the package directory is read-only (a system
# install), in perfmodel's cache directory instead (fncache.cache_dir), else it compiles in memory (~2 s)
if "NUMBA_CACHE_DIR" not in os.environ and not os.access(Path(__file__).resolve().parent, os.W_OK):
    from perfmodel.specs.fncache import cache_dir as _cache_dir

    if _cache_dir() is not None:
        os.environ["NUMBA_CACHE_DIR"] = str(_cache_dir() / "numba")

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

SCHEDULES = {"zero_bubble": 1, "dualpipe": 2}  # others: the 1F1B / interleaved formula (code 0)


@numba.njit(cache=True, nogil=True)
def tail(
    per_layer,
    upl,
    embed,
    head,
    u,  # [K, U or B, R], [B], [U], [U], [B]
    cnt,
    emb,
    hd,
    mult,
    pair,  # [K, P, S], [P, S] x 3, [B]
    p2p,
    pp_share,
    pp,
    vp,
    nmb,
    schedule,
    zb_share,  # [B] x 5, int, float
    run,
    rs,
    ag,
    opt,
    opt_fs,
    dp_rs_share,
    dp_ag_share,
    per_microbatch,
    reshard,
    fs,
    step_overhead,
    solo,
    ep_solo,
    tokens,
    gpus,  # float, [FL, R], [U]
    params,
    shard,
    opt_group,
    wb,
    gb,
    adam_bytes,
    shards_grads,  # [B]; [Q, runs] x 7
    mcnt,
    mpair,
    fl_idx,
    in_flight,
    lastr,
    first,
    kept,  # [K, P, Q], [B], [B], [Q, FL], [Q, P] x 2, [K, U, R]
    full_layer,
    rec_full,
    rec_none,
    mtp_layers,
    Ts,
    emb_bytes,
    T,
    logit_bytes,
    vocab,
    tp,  # [U], [R] x 2, int, [U], ..., [B]
    reserved,
    has_dummy,
    dummy_e,
    dummy_on,
    dummy_head,
    bf16,
    act_share,  # float, bool, [G, U], [G, P, Q], [U], float, [Q, P]
    step,
    tps,
    mem,
):
    K, B, R, S, Q, F = per_layer.shape[0], u.shape[0], per_layer.shape[2], cnt.shape[2], rs.shape[0], fs.shape[0]
    G = dummy_e.shape[0]
    act = np.empty(Q)
    eh = np.empty(S)  # per base row: terms that do not depend on r or f
    pa, pb_, fa, fr, fh, fga, fgr, wgo, lg = (
        np.empty(Q),
        np.empty(Q),
        np.empty(Q),
        np.empty(Q),
        np.empty(Q),
        np.empty(Q),
        np.empty(Q),
        np.empty((F, Q)),
        np.empty(Q),
    )
    pa2, pb2 = np.empty(Q), np.empty(Q)
    for b in range(B):
        ub, pb, mb, rb, fb, lb = u[b], pair[b], mpair[b], run[b], fl_idx[b], upl[b]
        for s in range(S):
            eh[s] = emb[pb, s] * embed[ub]
        x_fixed, x_share = (1.0 - pp_share[b]) * p2p[b], pp_share[b] * p2p[b]
        # terms of the schedule, the logits and the overhead that do not depend on r, f or q (hoisted: the
        # same operations on the same values)
        fill_b = max(0.0, pp[b] - nmb[b]) * (vp[b] - 1) / vp[b]
        solo_b = ep_solo[ub] / pp[b]
        lg_b = logit_bytes * T[ub] * vocab / tp[b]
        if per_microbatch:
            n_ag = nmb[b] * (2.0 if reshard else 1.0)
            n_rs = nmb[b]
        else:
            n_ag = 1.0 + 0 * nmb[b]
            n_rs = 1.0 + 0 * nmb[b]
        for q in range(Q):
            # distributed optimizer: overlap.exposed's two terms of the reduce-scatter and the all-gather
            pa[q], pb_[q] = (1.0 - dp_rs_share) * rs[q, rb], dp_rs_share * rs[q, rb]
            pa2[q], pb2[q] = (1.0 - dp_ag_share) * ag[q, rb], dp_ag_share * ag[q, rb]
            # FSDP: overlap.exposed_shared's hideable seconds and each class's share of the spill
            t_ag = n_ag * ag[q, rb]
            t_rs = n_rs * rs[q, rb]
            h = dp_ag_share * t_ag + dp_rs_share * t_rs
            fh[q] = h
            fa[q] = dp_ag_share * t_ag / h if h > 0 else 0.0
            fr[q] = dp_rs_share * t_rs / h if h > 0 else 0.0
            fga[q], fgr[q] = (1 - dp_ag_share) * t_ag, (1 - dp_rs_share) * t_rs
            lg[q] = lg_b if lastr[q, mb] else 0.0
            # the cached dummy weight gradients of the groups the rank holds, the output layer's on the last
            # (memory.dummy_wgrad_from)
            dm = 0.0
            if has_dummy:
                for g in range(G):
                    dm = dm + dummy_e[g, ub] * dummy_on[g, mb, q]
                dm = bf16 * (dm + (dummy_head[ub] if lastr[q, mb] else 0.0))
            for f in range(F):
                sharded = fs[f] and per_microbatch
                w = shard[q, rb] * wb if sharded else params[q, rb] * wb
                g = shard[q, rb] * gb if (sharded or shards_grads) else params[q, rb] * gb
                o = adam_bytes * (shard[q, rb] if fs[f] else opt_group[q, rb])
                wgo[f, q] = w + g + dm + o
        for r in range(R):
            # stages (predict._stages): the slowest and the summed rank
            t_max = -np.inf
            t_sum = 0.0
            for s in range(S):
                c = 0.0
                for k in range(K):
                    c = c + cnt[k, pb, s] * per_layer[k, lb, r]
                c = c + eh[s] + hd[pb, s] * head[ub]
                x = x_fixed + max(0.0, x_share - c)
                on = mult[pb, s] > 0
                t = c + x if on else -np.inf
                if s == 0:
                    t_max = t
                    t_sum = mult[pb, s] * (t if on else 0.0)
                else:
                    t_max = max(t_max, t)
                    t_sum = t_sum + mult[pb, s] * (t if on else 0.0)
            # schedule (parallel/pp.schedule_time)
            fill = fill_b * t_sum / pp[b]
            bub = (t_sum - t_max) / vp[b] + fill
            if schedule == 1:
                bub = bub * zb_share
            elif schedule == 2:
                bub = bub * zb_share * max(pp[b] / 2 - 1, 0.0) / max(pp[b] - 1, 1.0)
            pipeline = nmb[b] * t_max + bub if pp[b] > 1 else nmb[b] * t_max
            # activations of the memory ranks (memory.memory_per_gpu)
            for q in range(Q):
                h = 0.0
                for k in range(K):
                    h = h + mcnt[k, mb, q] * kept[k, ub, r]
                a = h * in_flight[q, fb] * (act_share[q, mb] if rec_none[r] else 1.0)
                if mtp_layers:
                    a = a + (mtp_layers * kept[K - 1, ub, r] if lastr[q, mb] else 0.0)
                a = a + (full_layer[ub] if rec_full[r] else 0.0)
                a = a + (emb_bytes * Ts[ub] if first[q, mb] else 0.0)
                act[q] = a
            window = nmb[b] * t_max
            w_rs, w_ag = t_max * 2 / 3, t_max / 3
            for f in range(F):
                # exposed DP time on each memory rank (parallel/dp.py), the one that finishes last
                best = 0.0
                dsel = 0.0
                osel = 0.0
                for q in range(Q):
                    if fs[f]:
                        spill = max(0.0, fh[q] - window)
                        d = (fga[q] + spill * fa[q]) + (fgr[q] + spill * fr[q])
                    else:
                        d = (pa[q] + max(0.0, pb_[q] - w_rs)) + (pa2[q] + max(0.0, pb2[q] - w_ag))
                    o = opt_fs[q, rb] if fs[f] else opt[q, rb]
                    tot = d + o
                    if q == 0 or tot > best:
                        best, dsel, osel = tot, d, o
                st = pipeline + dsel + osel + (step_overhead + solo[fb, r] * solo_b)
                step[b, f, r] = st
                tps[b, f, r] = tokens / (st * gpus)
                # memory of the fullest rank
                m = 0.0
                for q in range(Q):
                    tot = wgo[f, q] + act[q] + lg[q] + reserved
                    m = tot if q == 0 else max(m, tot)
                mem[b, f, r] = m
