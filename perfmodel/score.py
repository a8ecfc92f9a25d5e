"""The planner's scorer: step time, tokens/s/GPU and memory per GPU of a product of layouts, evaluated on the
structure of the product instead of layout by layout (issue 14, factorised evaluation).

A planner chunk is `B` base rows (tp, cp, pp, vp, ep, etp, mbs; dp follows from the GPU count) crossed with
the fsdp choices F and the recompute choices R, in that order (search._expand). Each term is evaluated on
the axes it depends on and broadcast, never gathered to all B x F x R layouts before it must be:
- layer kinds, head and embedding: once per distinct (tp, cp, ep, etp, mbs) (workload.unique_layer_axes),
  the recompute seconds as a [U, R] table (predict._price_kinds, _price_head: the same functions);
- stage signatures and memory ranks: once per distinct (pp, vp) (parallel/pp.py signature_table,
  memory_rank_table);
- stage times and the schedule: [B, R, S] and [B, R] (recompute changes them, fsdp does not);
- DP group placement, parameters per rank, optimizer: [B, Q] over the Q = 3 memory ranks;
- exposed DP time and memory: [B, F, R, Q], the only full-size arrays, then the rank that finishes last /
  the fullest rank.
Every formula is the one predict_grid uses (parallel/pp.py, parallel/dp.py, overlap.py, compute.py), called
on broadcast shapes; only the glue that predict._stages, predict._step_end and memory.memory_per_gpu write
for one layout per row is restated here for the product's axes. tests/test_score.py asserts that the
result equals predict_grid on every layout of sampled grids to 1e-12 relative (it fails when either side's
physics changes without the other); benchmarks/search_bench.py --check compares the full benchmark grid.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from . import constants as K, workload
from .compute import memory_time
from .hardware import HardwareSpec
from .layout import LayoutGrid
from .memory import layer_activation_bytes, weight_bytes
from .model import ModelSpec
from .overlap import exposed
from .parallel import dp as dp_par, pp as pp_par, recompute
from .parallel.recompute import FULL
from .predict import Options, _price_head, _price_kinds, software_of

KERNEL_ENV = "PERFMODEL_KERNEL"      # numba | numpy | auto (the default): see use_kernel


@lru_cache(maxsize=1)
def _numba_installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def kernel_available() -> bool:
    """numba installed and not switched off ($PERFMODEL_KERNEL=numpy)."""
    return os.environ.get(KERNEL_ENV, "auto").lower() != "numpy" and _numba_installed()


def kernel_loaded() -> bool:
    """The compiled tail is loaded in this process (from then on it costs nothing to use)."""
    return "perfmodel.kernel" in sys.modules and kernel_available()


# Loading numba and the cached kernel costs ~0.5 s per process; the kernel saves ~0.2 µs per layout over the
# numpy tail, so a search loads it once it has scored this many layouts (or at once with PERFMODEL_KERNEL=numba)
KERNEL_PAYS_LAYOUTS = 3_000_000


def use_kernel(scored: int) -> bool:
    """Whether to score the next chunk with the compiled tail, after `scored` layouts of this search."""
    if not kernel_available():
        return False
    return (kernel_loaded() or os.environ.get(KERNEL_ENV, "auto").lower() == "numba"
            or scored >= KERNEL_PAYS_LAYOUTS)


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


def score_product(model: ModelSpec, hw: HardwareSpec, gpus: int, gbs: int, seq: int, base: dict[str, np.ndarray],
                  fsdp: np.ndarray, rec: np.ndarray, opts: Options = Options(), kernel: bool | None = None,
                  cache: dict | None = None) -> Scores:
    """Step time, tokens/s/GPU and memory of every layout base[b] x fsdp[f] x rec[r] (shape [B, F, R]),
    equal to predict_grid on the expanded grid. `kernel`: the per-layout tail compiled (kernel.py, needs
    numba), in numpy (False), or (None) compiled where it is already loaded in this process. `cache`: an
    empty dict shared by the calls of one search (same model, hardware, options, GPUs, seq, fsdp and
    recompute choices), which keeps the per-combination tables across its chunks."""
    c, prec, m = opts.consts, opts.precision, model
    sw, c_layer, c_other, low, imb = _context(m, hw, opts)
    f64 = lambda x: np.asarray(x, dtype=float)
    fs = np.asarray(fsdp, dtype=bool)
    if sw.shards_params:                     # an FSDP stack shards parameters whatever the layout's flag says
        fs = np.ones(fs.shape, bool)
    rec = np.asarray(rec, dtype=np.int64)
    B, F, R = len(base["tp"]), len(fs), len(rec)
    ti, ci, pi, vi, ei, xi, mi = (np.asarray(base[k], dtype=np.int64) for k in ("tp", "cp", "pp", "vp", "ep", "etp", "mbs"))
    di = gpus // (ti * pi * ci)
    tp, cp, pp, vp, ep, etp, dp = (f64(x) for x in (ti, ci, pi, vi, ei, xi, di))
    nmb = np.maximum(f64(np.full(B, gbs)) / (dp * f64(mi)), 1.0)

    # ---- layer kinds and head: once per distinct (tp, cp, ep, etp, mbs, seq), recompute as a column; with a
    # search's `cache`, once per search
    bgrid = _base_grid(gpus, gbs, seq, base)
    build = lambda rows: _layer_tables(m, bgrid.take(rows), rec, hw, prec, low, imb, c, sw, c_layer, c_other)
    if cache is None:
        first, u = workload.unique_layer_axes(bgrid)
        tab = build(first)
    else:
        tab, u = _cached_tables(cache, gpus, (ti, ci, ei, xi, mi), build)
    ws = tab["ws"]
    per_layer, kept_u, head, embed = list(tab["per_layer"]), list(tab["kept"]), tab["head"], tab["embed"]
    Ts, T = tab["Ts"][u], tab["T"][u]
    rr = rec[None, :]

    # ---- per base row: stage tables per (pp, vp), p2p, parameters and DP collectives of the memory ranks
    n_k = len(ws.layers)
    sig = pp_par.signature_table(ws.layer_kinds, n_k, pi, vi)
    # p2p and the in-flight micro-batches depend on (tp, cp, pp, vp, mbs) (dp follows): once per run of equal
    # (tp, cp, pp, vp) and mbs, found with a lookup table (no sort)
    pre = np.zeros(B, bool)
    pre[0] = True
    for x in (ti, ci, pi, vi):
        pre[1:] |= x[1:] != x[:-1]
    pkey = (np.cumsum(pre) - 1) * (int(mi.max()) + 1) + mi
    seen = np.zeros(int(pkey.max()) + 1, np.intp)
    seen[pkey] = 1
    ukeys = np.flatnonzero(seen)
    seen[ukeys] = np.arange(ukeys.size)
    p_inv = seen[pkey]
    p_first = np.empty(ukeys.size, np.intp)
    p_first[p_inv[::-1]] = np.arange(B - 1, -1, -1)
    p2p = pp_par.p2p_time(Ts[p_first], m.hidden_size, tp[p_first], cp[p_first], dp[p_first], pp[p_first],
                          vp[p_first], hw)[p_inv]
    col = lambda x: x[:, None]
    # the DP side does not depend on mbs, the enumeration's innermost axis: one row per run of equal
    # (tp, cp, pp, vp, ep, etp), gathered back by `run`
    chg = np.zeros(B, bool)
    chg[0] = True
    for x in (ti, ci, pi, vi, ei, xi):
        chg[1:] |= x[1:] != x[:-1]
    rows, run = np.flatnonzero(chg), np.cumsum(chg) - 1
    tR, cR, pR, eR, xR = (f64(x[rows]) for x in (ti, ci, pi, ei, xi))
    dpc, edp = (dp * cp)[rows], f64((ti * ci * di) // (ei * xi))[rows]
    mcnt, mrank, mpair = pp_par.memory_rank_table(ws.layer_kinds, n_k, pi, vi)
    p_dense, p_exp = dp_par.rank_params(m, ws, [x[mpair[rows]] for x in mcnt], mrank[mpair[rows]], col(pR))
    p_dense, p_exp = p_dense / col(tR), p_exp / col(eR * xR)
    gb = sw.grad_bytes
    wb = weight_bytes(prec, sw.fp8_param_gather)
    rs, ag = dp_par.grad_and_param_times(p_dense, p_exp, sw.reduce_bytes, wb, col(dpc), col(edp), col(tR), col(eR),
                                         col(xR), hw)
    shard = p_dense / col(dpc) + p_exp / col(edp)
    opt_r = memory_time((K.ADAM_STATE_STEP_BYTES + gb) * shard + K.GRAD_NORM_ZERO_GRADS * gb * (p_dense + p_exp), hw,
                        K.OPTIMIZER_KERNELS, c_other)
    opt_group = {"dp_cp": shard, "dp": p_dense / col(dpc / cR) + p_exp / col(edp), "none": p_dense + p_exp}[sw.optimizer_shard]
    in_fl = pp_par.in_flight(col(pp[p_first]), col(vp[p_first]), col(nmb[p_first]), mrank[mpair[p_first]])  # [PK, Q]
    fl_idx = p_inv
    q3 = lambda x: np.ascontiguousarray(np.broadcast_to(x, (B, len(mrank[0]))).T)[:, :, None]   # [B, Q] -> [Q, B, 1]
    tokens1 = float(gbs) * float(seq)
    if kernel is None:
        kernel = kernel_loaded()
    if kernel and kernel_available():
        return _kernel_tail(locals())

    rs, ag, opt_r, shard, opt_group, p_dense, p_exp = (x[run] for x in (rs, ag, opt_r, shard, opt_group, p_dense, p_exp))

    # ---- stages and schedule: [S, B, R] -> [B, R] (predict._stages); the small axes (signatures S, memory
    # ranks Q) lead, so their reductions run over contiguous slices
    cnt, has_emb, has_head, mult, pair = sig
    lead = lambda x, idx: np.ascontiguousarray(x.T[:, idx])[:, :, None]      # [P, S] -> [S, B, 1]
    cnt = [lead(x, pair) for x in cnt]
    mult = lead(mult, pair)
    compute_s = (sum(cnt[i] * per_layer[i][u][None] for i in range(n_k))
                 + lead(has_emb, pair) * embed[u][None, :, None] + lead(has_head, pair) * head[u][None, :, None])
    pp_exp_s = exposed(p2p[None, :, None], compute_s, sw.pp_share)
    on = mult > 0
    t_stage = np.where(on, compute_s + pp_exp_s, -np.inf)
    t_max = np.maximum.reduce(t_stage, axis=0)
    t_sum = np.add.reduce(mult * np.where(on, t_stage, 0.0), axis=0)
    pipeline, _ = pp_par.schedule_time(t_max, t_sum, col(pp), col(vp), col(nmb), sw.schedule)        # [B, R]

    # ---- step end on the memory ranks: [Q, B, R] per fsdp choice (predict._step_end)
    rs3, ag3, opt3 = q3(rs), q3(ag), q3(opt_r)
    stage, nmb3 = t_max[None], nmb[None, :, None]
    plain = fsdp_t = None
    step = np.empty((B, F, R))
    for f, on_f in enumerate(fs):
        if on_f:
            fsdp_t = dp_par.exposed_fsdp(rs3, ag3, stage, nmb3, sw) if fsdp_t is None else fsdp_t
            dp_r = fsdp_t
        else:
            plain = dp_par.exposed_plain(rs3, ag3, stage, sw) if plain is None else plain
            dp_r = plain
        # the rank that finishes last (np.argmax's rule: the first of equal ones)
        best, dp_comm, optimizer = dp_r[0] + opt3[0], dp_r[0], opt3[0]
        for q in range(1, dp_r.shape[0]):
            tot = dp_r[q] + opt3[q]
            later = tot > best
            best, dp_comm, optimizer = (np.where(later, tot, best), np.where(later, dp_r[q], dp_comm),
                                        np.where(later, opt3[q], optimizer))
        step[:, f] = pipeline + dp_comm + optimizer + c.step_overhead_s
    tokens = f64(np.full(B, gbs)) * f64(np.full(B, seq))
    tps = tokens[:, None, None] / (step * f64(np.full(B, gpus))[:, None, None])

    # ---- memory of the fullest rank: [Q, B, R] per fsdp choice (memory.memory_per_gpu)
    params, shard3 = q3(p_dense + p_exp), q3(shard)
    opt_group = q3(opt_group)
    held = 0.0
    rank3 = q3(mrank[mpair])
    for k in range(n_k):
        held = held + q3(mcnt[k][mpair]) * kept_u[k][u][None]                   # [Q, B, R]
    full_layer = tab["full_layer"][u][None, :, None]                             # [1, B, 1]
    lastr = rank3 == pp[None, :, None] - 1
    activations = held * q3(in_fl[fl_idx])
    if ws.head.mtp_layers:
        activations = activations + np.where(lastr, ws.head.mtp_layers * kept_u[-1][u][None], 0.0)
    activations = activations + np.where(rr[None] == FULL, full_layer, 0.0)
    activations = activations + np.where(rank3 == 0, K.BF16 * m.hidden_size * Ts[None, :, None], 0.0)
    logits = np.where(lastr, 2 * K.FP32 * T[None, :, None] * m.vocab_size / tp[None, :, None], 0.0)
    reserved = c.reserved_bytes + 0 * rank3
    mem = np.empty((B, F, R))
    for f, on_f in enumerate(fs):
        sharded = on_f and sw.fsdp_per_microbatch
        weights = shard3 * wb if sharded else params * wb
        grads = shard3 * gb if (sharded or sw.shards_grads) else params * gb
        optim = K.ADAM_STATE_BYTES * (shard3 if on_f else opt_group)
        total = weights + grads + optim + activations + logits + reserved
        mem[:, f] = np.maximum.reduce(total, axis=0)
    return Scores(step, tps, mem, hw.memory.hbm_bytes)


def _kernel_tail(v: dict) -> Scores:
    """The tail after the per-base-row tables, compiled (kernel.tail): the same statements as the numpy tail
    above, one layout at a time."""
    from . import kernel
    m, ws, sw, c, B, F, R = v["m"], v["ws"], v["sw"], v["c"], v["B"], v["F"], v["R"]
    f64 = v["f64"]
    u, rr, tab = v["u"], v["rr"], v["tab"]
    p_dense, p_exp, shard, opt_group = v["p_dense"], v["p_exp"], v["shard"], v["opt_group"]     # per run
    qr = lambda x: np.ascontiguousarray(x.T)                                                    # [runs, Q] -> [Q, runs]
    pp, vp, nmb, tp = v["pp"], v["vp"], v["nmb"], v["tp"]
    cnt, emb, hd, mult, pair = v["sig"]
    params = p_dense + p_exp
    step, tps, mem = np.empty((B, F, R)), np.empty((B, F, R)), np.empty((B, F, R))
    kernel.tail(tab["per_layer"], tab["embed"], tab["head"], u.astype(np.int64),
                np.ascontiguousarray(np.stack(cnt)), emb, hd, mult, pair.astype(np.int64),
                f64(v["p2p"]), float(sw.pp_share), pp, vp, nmb, kernel.SCHEDULES.get(sw.schedule, 0),
                float(pp_par.ZERO_BUBBLE_SHARE),
                v["run"].astype(np.int64), qr(v["rs"]), qr(v["ag"]), qr(v["opt_r"]), float(sw.dp_rs_share),
                float(sw.dp_ag_share),
                bool(sw.fsdp_per_microbatch), bool(sw.fsdp_reshard), v["fs"], float(c.step_overhead_s),
                float(v["tokens1"]), float(v["gpus"]),
                qr(params), qr(shard), qr(opt_group), float(v["wb"]), float(v["gb"]), float(K.ADAM_STATE_BYTES),
                bool(sw.shards_grads),
                np.ascontiguousarray(np.stack(v["mcnt"])), v["mpair"].astype(np.int64),
                v["fl_idx"].astype(np.int64), qr(v["in_fl"]), np.ascontiguousarray((v["mrank"] == v["mrank"][:, -1:]).T),
                np.ascontiguousarray((v["mrank"] == 0).T),
                tab["kept"], tab["full_layer"],
                rr[0] == FULL, int(ws.head.mtp_layers), K.BF16 * m.hidden_size * v["Ts"],
                2 * K.FP32 * v["T"] * m.vocab_size / tp, float(c.reserved_bytes), step, tps, mem)
    return Scores(step, tps, mem, v["hw"].memory.hbm_bytes)


def _context(m: ModelSpec, hw: HardwareSpec, opts: Options):
    """(stack, layer constants, other constants, low precision, MoE imbalance) as predict_grid sets them."""
    c = opts.consts
    hw.peak(opts.precision)                  # a clear error when the GPU lacks the precision
    sw = software_of(m, hw, opts)
    c_layer, c_other = replace(c, kernel_fixed_s=sw.layer_kernel_s), replace(c, kernel_fixed_s=sw.other_kernel_s)
    return sw, c_layer, c_other, opts.precision not in ("bf16", "fp16"), (c.moe_imbalance if opts.routing == "real" else 1.0)


def _base_grid(gpus: int, gbs: int, seq: int, base: dict[str, np.ndarray]) -> LayoutGrid:
    B = len(base["tp"])
    full = lambda v: np.full(B, v, np.int64)
    zeros = np.zeros(B, np.int64)
    return LayoutGrid(gpus=full(gpus), gbs=full(gbs), seq=full(seq), fsdp=zeros.astype(bool), recompute=zeros,
                      **{k: np.asarray(base[k], dtype=np.int64) for k in ("tp", "pp", "vp", "cp", "ep", "etp", "mbs")})


def prime(model: ModelSpec, hw: HardwareSpec, gpus: int, gbs: int, seq: int, base: dict[str, np.ndarray], rec,
          opts: Options, cache: dict) -> None:
    """Price the combinations of base rows `base` (an enumeration block, several chunks) into a search's
    `cache` at once: one pricing pass instead of one per chunk."""
    sw, c_layer, c_other, low, imb = _context(model, hw, opts)
    bgrid = _base_grid(gpus, gbs, seq, base)
    rec = np.asarray(rec, dtype=np.int64)
    build = lambda rows: _layer_tables(model, bgrid.take(rows), rec, hw, opts.precision, low, imb, opts.consts, sw,
                                       c_layer, c_other)
    _cached_tables(cache, gpus, tuple(np.asarray(base[k], dtype=np.int64) for k in ("tp", "cp", "ep", "etp", "mbs")),
                   build)


def _layer_tables(m, rows: LayoutGrid, rec, hw, prec, low, imb, c, sw, c_layer, c_other) -> dict:
    """The per-combination tables of the layouts `rows` (one row per combination): each kind's seconds per
    micro-batch under each recompute choice [K, U, R], its kept activation bytes [K, U, R], the largest full
    layer's bytes [U], head and embedding seconds [U], tokens per micro-batch T and T / tp [U]."""
    f64 = lambda x: np.asarray(x, dtype=float)
    U = rows.n
    ws = workload.build(m, rows, low, imb, c, sw)
    prices = _price_kinds(ws, hw, prec, c_layer, sw)
    at_u = lambda x, *tail: np.ascontiguousarray(np.broadcast_to(f64(x), (U, *tail)))   # maybe a scalar
    rr = rec[None, :]
    per_layer = [at_u(sum(p.parts.values()))[:, None]
                 + recompute.time(rr, at_u(p.fwd)[:, None], at_u(p.selective_f)[:, None]) for p in prices]   # [U, R]
    head, embed = (at_u(x) for x in _price_head(ws, prices, hw, prec, c_layer, c_other))
    kept, full_layer = [], 0.0
    for layer in ws.layers:
        k_, fl = layer_activation_bytes(layer, rr, sw.recompute_modules, lambda x: f64(x)[..., None])
        kept.append(at_u(k_, len(rec)))
        full_layer = np.maximum(full_layer, at_u(fl, 1)[:, 0])
    return {"ws": ws, "per_layer": np.stack(per_layer), "kept": np.stack(kept), "full_layer": at_u(full_layer),
            "head": head, "embed": embed, "Ts": at_u(ws.Ts), "T": at_u(ws.T)}


TABLE_KEYS = ("per_layer", "kept", "full_layer", "head", "embed", "Ts", "T")
_AXIS = {"per_layer": 1, "kept": 1}           # tables with the combination on their second axis


def _cached_tables(cache: dict, gpus: int, cols, build) -> tuple[dict, np.ndarray]:
    """(the search's tables, each base row's index into them): combinations seen in earlier chunks are
    looked up, the new ones built (`build(rows)`) and appended. tp, cp, ep and etp divide the GPU count:
    each is coded by its index among the divisors, mbs by its value, into one int64 key."""
    div = np.flatnonzero(gpus % np.arange(1, gpus + 1) == 0) + 1 if "div" not in cache else cache["div"]
    cache["div"] = div
    key = np.zeros(len(cols[0]), np.int64)
    for x in cols[:4]:
        key = key * len(div) + np.searchsorted(div, x)
    key = key * (1 << 16) + cols[4]
    known = cache.get("keys", np.zeros(0, np.int64))
    order = cache.get("order", np.zeros(0, np.int64))
    if known.size:                                     # every combination seen before (a primed chunk)
        srt = cache["sorted"]
        pos = np.minimum(np.searchsorted(srt, key), srt.size - 1)
        if np.array_equal(srt[pos], key):
            return cache["tab"], order[pos]
    ukey, first, inv = np.unique(key, return_index=True, return_inverse=True)
    pos = np.searchsorted(known[order], ukey) if known.size else np.zeros(ukey.size, np.int64)
    hit = (pos < known.size) & (known[order][np.minimum(pos, max(known.size - 1, 0))] == ukey) if known.size \
        else np.zeros(ukey.size, bool)
    idx = np.empty(ukey.size, np.int64)
    idx[hit] = order[pos[hit]]
    new = np.flatnonzero(~hit)
    if new.size:
        t = build(first[new])
        if "tab" not in cache:
            cache["tab"] = t
        else:
            old = cache["tab"]
            cache["tab"] = {"ws": old["ws"], **{k: np.concatenate([old[k], t[k]], axis=_AXIS.get(k, 0)) for k in TABLE_KEYS}}
        idx[new] = known.size + np.arange(new.size)
        known = np.concatenate([known, ukey[new]])
        cache["keys"], cache["order"] = known, np.argsort(known, kind="stable")
        cache["sorted"] = known[cache["order"]]
    return cache["tab"], idx[inv.reshape(-1)]
