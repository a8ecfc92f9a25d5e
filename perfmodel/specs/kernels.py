"""Component measurements per GPU generation (hardware/kernels/<generation>.toml and the CSV tables beside it).

Each generation file names the measured tables of its kernels, every one with its source: GEMM efficiency over
(M, N, K), grouped GEMM at few tokens per expert, attention kernels per implementation, memory-bound kernels by
kind and implementation, per-kernel launch costs, and collectives by size and group. These are measurements of
the hardware (published microbenchmarks, simulator tables measured on the GPU), never fits to training rows.

The shape of a GEMM's efficiency is fitted here, once, to its table: efficiency = plateau x K/(K + k_half) x
M/(M + mn_half) x N/(N + mn_half) (compute.gemm_time's form), time = FLOPs / (peak x efficiency) + t0, by an
exhaustive log-spaced grid (deterministic), minimising the mean |ln(model / measured)| time error. The range of
each parameter is the span of the grid points whose error lies within 5% of the best (how well the table pins
it). Tables a generation does not measure are taken from the nearest generation that does, and say so (`from`).

A collective table gives the size at which NCCL inside one NVLink domain reaches half its plateau bus bandwidth,
busbw(b) = plateau x b / (b + b_half) on top of the cost model's latency per call (collective_ramp): NCCL moves
a small message in fewer, smaller chunks than it needs to fill its channels, which a latency alone does not
describe (the tables' 1-64 MiB points run 0.5-0.8x the latency-bandwidth model's speed).
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from perfmodel.errors import InputError
from perfmodel.specs.specfile import data_dir

GENERATIONS = ("ampere", "hopper", "blackwell", "blackwell-ultra", "cdna3")
NEAR = 1.05  # a parameter's range: grid points whose error is within 5% of the best fit's
_GRID_K = np.geomspace(8.0, 4096.0, 73)
_GRID_MN = np.geomspace(2.0, 2048.0, 73)


@dataclass(frozen=True)
class Sourced:
    """A measured value with its range and source."""

    value: float
    low: float
    high: float
    source: str


@dataclass(frozen=True)
class ShapeFit:
    """A GEMM table's efficiency shape: k_half, mn_half (elements) with their ranges, the per-call floor t0 (s),
    the fit's mean |ln error| over its `points`, and where the table comes from."""

    k_half: Sourced
    mn_half: Sourced
    t0_s: float
    error: float
    points: int
    table: str
    source: str
    plateau: float


@dataclass(frozen=True)
class KernelTables:
    """The component tables of one GPU generation."""

    generation: str
    name: str
    gemm: ShapeFit
    grouped_gemm: ShapeFit
    launch: dict[str, Sourced]
    attention: tuple[dict, ...]
    memory_bound: tuple[dict, ...]
    collectives: tuple[dict, ...]
    collectives_source: str
    notes: dict[str, str]  # table -> why it is borrowed from another generation (empty: measured on this one)
    occupancy: dict[str, Sourced]  # attention pass -> work items (q tiles x heads x batch) at half the plateau
    occupancy_ref: float  # the work items at which the hardware file's attention efficiency is stated
    tile_rows: int  # query rows per attention work item (the kernel's q tile)


def _dir() -> Path:
    return data_dir("hardware") / "kernels"


def _rows(name: str) -> list[dict]:
    path = _dir() / name
    try:
        with path.open(newline="") as fh:
            return list(csv.DictReader(fh))
    except OSError as exc:
        raise InputError(str(path), "", f"cannot read the kernel table ({exc.strerror or exc})") from None


def _shape_points(rows: list[dict], kind: str, dtype: str, peak_flops: float) -> tuple[np.ndarray, ...]:
    """(M, N, K, measured seconds-per-FLOP ratio basis) of a GEMM table in compute.gemm_time's convention:
    C[M, N] = A[M, K] B[K, N]; a grouped table's passes mapped as gemm_train_time maps them (fprop [M, N, K],
    dgrad [M, K, N], wgrad [N, K, M], M = tokens per group)."""
    M, N, K, eff = [], [], [], []
    for r in rows:
        if kind == "grouped":
            t, n, k, p = float(r["tokens_per_group"]), float(r["n"]), float(r["k"]), r["pass"]
            m_, n_, k_ = {"fprop": (t, n, k), "dgrad": (t, k, n), "wgrad": (n, k, t)}[p]
            M.append(m_), N.append(n_), K.append(k_), eff.append(float(r["efficiency"]))
        else:
            if r.get("dtype", dtype) != dtype:
                continue
            b = float(r["b"])
            M.append(b * float(r["m"])), N.append(float(r["n"])), K.append(float(r["k"]))
            eff.append(float(r["efficiency"]) if "efficiency" in r else float(r["tflops"]) * 1e12 / peak_flops)
    return tuple(np.asarray(x, dtype=float) for x in (M, N, K, eff))


def fit_shape(
    M, N, K, eff, plateau: float, peak_flops: float, with_floor: bool
) -> tuple[float, float, float, float, tuple]:
    """(k_half, mn_half, t0, error, (k_lo, k_hi, mn_lo, mn_hi)) of the shape that best reproduces the measured
    efficiencies `eff` (achieved / peak) given the table's plateau; `with_floor` fits a per-call floor t0 too (a
    table timed per call with its launch, e.g. XLA's), else t0 = 0 (a table of kernel efficiencies)."""
    flops = 2.0 * M * N * K
    t = flops / (peak_flops * eff)
    w2 = (1.0 / t) ** 2
    fk = K[None, :] / (K[None, :] + _GRID_K[:, None])  # [k, point]
    fm = (M[None, :] / (M[None, :] + _GRID_MN[:, None])) * (
        N[None, :] / (N[None, :] + _GRID_MN[:, None])
    )  # [mn, point]
    tc = flops / (peak_flops * plateau * fk[:, None, :] * fm[None, :, :])  # [k, mn, point]
    t0 = np.maximum(0.0, ((t - tc) * w2).sum(-1) / w2.sum()) if with_floor else np.zeros(tc.shape[:2])
    errs = np.abs(np.log((tc + t0[..., None]) / t)).mean(-1)
    i, j = np.unravel_index(int(np.argmin(errs)), errs.shape)
    best = (float(errs[i, j]), float(_GRID_K[i]), float(_GRID_MN[j]), float(t0[i, j]))
    near = errs <= best[0] * NEAR
    ks, ms = _GRID_K[near.any(axis=1)], _GRID_MN[near.any(axis=0)]
    return best[1], best[2], best[3], best[0], (float(ks.min()), float(ks.max()), float(ms.min()), float(ms.max()))


FITTED = "fitted.json"  # the shape fits of every table, cached (python -m perfmodel.specs.kernels rewrites it)


def _fit_key(doc: dict, kind: str) -> str:
    """What a shape fit depends on: the table's bytes and the fit's inputs."""
    blob = (_dir() / str(doc["table"])).read_bytes()
    inputs = json.dumps(
        [kind, doc.get("dtype", "bf16"), doc["plateau"], doc["peak_flops"], bool(doc.get("per_call_floor"))]
    )
    return hashlib.sha256(blob + inputs.encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def _cache() -> dict:
    try:
        return json.loads((_dir() / FITTED).read_text())
    except (OSError, ValueError):
        return {}


def shape_fit_of(doc: dict, kind: str, where: str) -> tuple[float, float, float, float, tuple, int]:
    """(k_half, mn_half, t0, error, ranges, points) of a GEMM table: from the cache when it was made from these
    very bytes and inputs (fitted.json), else fitted now."""
    key = _fit_key(doc, kind)
    hit = _cache().get(key)
    if hit:
        return hit["k_half"], hit["mn_half"], hit["t0_s"], hit["error"], tuple(hit["ranges"]), hit["points"]
    peak = float(doc["peak_flops"])
    M, N, K, eff = _shape_points(_rows(str(doc["table"])), kind, str(doc.get("dtype", "bf16")), peak)
    if not M.size:
        raise InputError(where, kind, f"no {doc.get('dtype', 'bf16')} point in {doc['table']}")
    kh, mh, t0, err, ranges = fit_shape(M, N, K, eff, float(doc["plateau"]), peak, bool(doc.get("per_call_floor")))
    return kh, mh, t0, err, ranges, int(M.size)


def _shape(doc: dict, kind: str, where: str) -> ShapeFit:
    try:
        table, source, plateau = doc["table"], doc["source"], float(doc["plateau"])
        float(doc["peak_flops"])
    except (KeyError, TypeError, ValueError):
        raise InputError(where, kind, "needs table, source, plateau and peak_flops") from None
    kh, mh, t0, err, (klo, khi, mlo, mhi), n = shape_fit_of(doc, kind, where)
    how = f"fitted to {n} points of {table} (mean |ln error| {err:.3f}): {source}"
    return ShapeFit(Sourced(kh, klo, khi, how), Sourced(mh, mlo, mhi, how), t0, err, n, table, source, plateau)


def work_items(batch, heads, q_rows, tile: int):
    """Independent (q tile, head, sequence) work items of one flash-attention call: what fills the SMs."""
    return np.asarray(batch, dtype=float) * heads * np.ceil(np.asarray(q_rows, dtype=float) / tile)


def attention_occupancy(doc: dict, rows: tuple[dict, ...], where: str) -> tuple[dict[str, Sourced], float, int]:
    """Per pass, the work items n at which the table's kernel reaches half its plateau, rate = E n / (n + n_half),
    fitted to the rows of `occupancy_kernel` at `occupancy_seq` that vary the heads (the FlashAttention
    benchmarks hold batch x heads x tiles fixed and say nothing of it); the range is the n_half within 5% of the
    best error. Empty where the table has no such rows (the hardware file's rate is then used as it is)."""
    kern, seq, tile = doc.get("occupancy_kernel"), doc.get("occupancy_seq"), int(doc.get("tile_rows", 128))
    if not kern:
        return {}, 0.0, tile
    out: dict[str, Sourced] = {}
    ref = 0.0
    grid = np.geomspace(4.0, 8192.0, 301)
    for p in ("fwd", "bwd"):
        pts = [r for r in rows if r["kernel"] == kern and r["pass"] == p and int(r["seq"]) == int(seq)]
        if len(pts) < 3:
            raise InputError(where, "attention.occupancy_kernel", f"fewer than 3 {kern} {p} rows at seq {seq}")
        n = work_items([float(r["batch"]) for r in pts], np.array([float(r["heads"]) for r in pts]), float(seq), tile)
        y = np.array([float(r["tflops"]) for r in pts])
        g = n[None, :] / (n[None, :] + grid[:, None])
        E = np.exp(np.mean(np.log(y[None, :] / g), axis=1))
        errs = np.mean(np.abs(np.log(E[:, None] * g / y[None, :])), axis=1)
        i = int(np.argmin(errs))
        near = grid[errs <= errs[i] * NEAR]
        how = f"fitted to {len(pts)} {kern} {p} rows at seq {seq} (mean |ln error| {errs[i]:.3f}): {doc.get('source', '')}"
        out[p] = Sourced(float(grid[i]), float(near.min()), float(near.max()), how)
        ref = max(ref, float(n.max()))
    return out, ref, tile


def occupancy_factor(t: KernelTables, p: str, n):
    """The rate at `n` work items relative to the rate at the table's reference (the hardware file's attention
    efficiency is read as the rate with that much parallel work); 1 where the generation measures none."""
    if p not in t.occupancy:
        return 1.0
    h = t.occupancy[p].value
    return (np.asarray(n, dtype=float) / (n + h)) * (t.occupancy_ref + h) / t.occupancy_ref


_GRID_RAMP = np.geomspace(1e5, 2e8, 400)  # bytes
RAMP_OPS = ("all-reduce", "all-gather")  # XLA's reduce-scatter rows are left out (collective_ramp)


@dataclass(frozen=True)
class RampFit:
    """NVLink collectives' bandwidth ramp fitted to a measured table: b_half (bytes) with its range, the mean
    |ln(model / measured)| time error with and without the ramp, the points, the table."""

    half_bytes: Sourced
    error: float
    error_without: float
    points: int
    table: str


def fit_ramp(rows, latency_s: float) -> tuple[float, float, float, float, float, int]:
    """(b_half, low, high, error, error without the ramp, points) of the collectives `rows` (op, group_size,
    groups, tensor_bytes, time_us): each series (op, group) at its own plateau (its largest message's bus
    bandwidth once the latency is taken off), time = busbw factor x (b + b_half) / plateau + latency x (1 +
    log2 n) (comm.py's latency inside a domain), over the messages of 1 MiB and more."""
    series: dict[tuple, list] = {}
    for r in rows:
        if r["op"] in RAMP_OPS:
            key = (r["op"], int(r["group_size"]), int(r["groups"]))
            series.setdefault(key, []).append((float(r["tensor_bytes"]), float(r["time_us"]) * 1e-6))
    B, T, F, P, L = [], [], [], [], []
    for (op, n, _), pts in series.items():
        pts.sort()
        f = _busbw_factor(op, n)
        lat = latency_s * (1.0 + np.log2(n))
        plateau = f * pts[-1][0] / max(pts[-1][1] - lat, 1e-9)
        for b, t in pts:
            if b >= 2.0**20:
                B.append(b), T.append(t), F.append(f), P.append(plateau), L.append(lat)
    if not B:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0
    B, T, F, P, L = (np.asarray(x, dtype=float) for x in (B, T, F, P, L))
    errs = np.abs(np.log((F * (B + _GRID_RAMP[:, None]) / P + L) / T)).mean(-1)
    i = int(np.argmin(errs))
    near = _GRID_RAMP[errs <= errs[i] * NEAR]
    e0 = float(np.abs(np.log((F * B / P + L) / T)).mean())
    return float(_GRID_RAMP[i]), float(near.min()), float(near.max()), float(errs[i]), e0, int(B.size)


@lru_cache(maxsize=32)
def collective_ramp(gen: str, hw_id: str, latency_s: float) -> RampFit | None:
    """The NVLink collectives' ramp of part `hw_id` of generation `gen` (its own table where the generation file
    names one, `by_part`), fitted at the part's NVLink latency per hop; None where the generation stores no
    collective table. All-reduce and all-gather only: the reduce-scatter rows of XLA's tables run 4x faster
    than the same table's all-gather at 1-16 MiB (7.4 us for 1 MiB over 8 H100, under NCCL's own latency), so
    their tensor_bytes is not the others' convention."""
    sec, _ = _section(gen, "collectives")
    name = sec.get("by_part", {}).get(hw_id, sec.get("table"))
    if not name:
        return None
    h, lo, hi, err, e0, n = fit_ramp(_rows(str(name)), latency_s)
    if not n:
        return None
    how = f"fitted to {n} all-reduce / all-gather points of {name} (mean |ln error| {e0:.3f} -> {err:.3f})"
    return RampFit(Sourced(h, lo, hi, how), err, e0, n, str(name))


def _sourced(where: str, name: str, x: object) -> Sourced:
    if not isinstance(x, dict) or not {"value", "low", "high", "source"} <= set(x):
        raise InputError(where, name, "needs value, low, high and source")
    v, lo, hi = float(x["value"]), float(x["low"]), float(x["high"])
    if not lo <= v <= hi:
        raise InputError(where, name, f"value {v:g} outside its range {lo:g}-{hi:g}")
    return Sourced(v, lo, hi, str(x["source"]))


def _section(gen: str, name: str, seen: tuple[str, ...] = ()) -> tuple[dict, str]:
    """A generation's section, or the generation it takes it from (`from = "hopper"`), with why."""
    doc = _doc(gen)
    sec = doc.get(name)
    if not isinstance(sec, dict):
        raise InputError(f"hardware/kernels/{gen}.toml", name, "missing section")
    if "from" in sec:
        src = str(sec["from"])
        if src in seen or src == gen:
            raise InputError(f"hardware/kernels/{gen}.toml", f"{name}.from", "a cycle of borrowed tables")
        got, _ = _section(src, name, seen + (gen,))
        return got, f"from {src}: {sec.get('why', '')}".strip()
    return sec, ""


@lru_cache(maxsize=8)
def _doc(gen: str) -> dict:
    path = _dir() / f"{gen}.toml"
    try:
        return tomllib.loads(path.read_text())
    except OSError:
        raise InputError(
            "generation", gen, f"no kernel tables ({path} not found); one of {', '.join(GENERATIONS)}"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), "", f"TOML syntax error: {exc}") from None


@lru_cache(maxsize=8)
def tables(gen: str) -> KernelTables:
    """The component tables of generation `gen` (hardware `generation` field)."""
    where = f"hardware/kernels/{gen}.toml"
    doc = _doc(gen)
    notes: dict[str, str] = {}
    secs = {}
    for name in ("gemm", "grouped_gemm", "launch", "attention", "memory_bound", "collectives"):
        secs[name], why = _section(gen, name)
        if why:
            notes[name] = why
    gemm = _shape(secs["gemm"], "dense", where)
    grouped = _shape(secs["grouped_gemm"], "grouped", where)
    launch = {k: _sourced(where, f"launch.{k}", v) for k, v in secs["launch"].items() if k not in ("from", "why")}
    at_gen = lambda rows, g: tuple(r for r in rows if r.get("generation", g) == g)
    att_gen = secs["attention"].get("generation", gen)
    attention = at_gen(_rows(secs["attention"]["table"]), att_gen)
    memory = tuple(_rows(secs["memory_bound"]["table"]))
    coll = secs["collectives"]
    collectives = tuple(_rows(coll["table"])) if "table" in coll else ()
    occupancy, ref, tile = attention_occupancy(secs["attention"], attention, where)
    return KernelTables(
        gen,
        str(doc.get("name", gen)),
        gemm,
        grouped,
        launch,
        attention,
        memory,
        collectives,
        str(coll.get("source", "")),
        notes,
        occupancy,
        ref,
        tile,
    )


def fresh_fits() -> dict[str, dict]:
    """Every generation's GEMM tables fitted afresh, keyed as fitted.json keys them."""
    out: dict[str, dict] = {}
    for gen in GENERATIONS:
        for name, kind in (("gemm", "dense"), ("grouped_gemm", "grouped")):
            doc, _ = _section(gen, name)
            peak = float(doc["peak_flops"])
            M, N, K, eff = _shape_points(_rows(str(doc["table"])), kind, str(doc.get("dtype", "bf16")), peak)
            kh, mh, t0, err, ranges = fit_shape(
                M, N, K, eff, float(doc["plateau"]), peak, bool(doc.get("per_call_floor"))
            )
            out[_fit_key(doc, kind)] = {
                "table": doc["table"],
                "kind": kind,
                "k_half": kh,
                "mn_half": mh,
                "t0_s": t0,
                "error": err,
                "ranges": list(ranges),
                "points": int(M.size),
            }
    return out


def write_fits() -> Path:
    """Fit every generation's GEMM tables afresh and store them in hardware/kernels/fitted.json."""
    path = _dir() / FITTED
    path.write_text(json.dumps(fresh_fits(), indent=1, sort_keys=True) + "\n")
    _cache.cache_clear()
    tables.cache_clear()
    return path


if __name__ == "__main__":  # python -m perfmodel.specs.kernels: refit and store the GEMM shape fits
    print(write_fits(), file=sys.stderr)


def _busbw_factor(op: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter, all-to-all."""
    return (2.0 if op == "all-reduce" else 1.0) * (n - 1) / n


def report(hw_id: str, gen: str, latency_s: float = 8.4e-6, half_bytes: float | None = None) -> dict:
    """The component tables of generation `gen` as rows to print or emit (`show hardware ID --kernels`): each
    section its rows and source; `hw_id` picks the part's own memory-bound and collective rows where the tables
    have them; `latency_s`, the measured part's NVLink latency per hop, is what the collectives' ramp is fitted at
    (comm.measured_part); `half_bytes`, a what-if's own b_half (efficiency.collective_half_bytes), replaces the
    fit in the ramp row, as it does in the cost model."""
    t = tables(gen)
    ramp = collective_ramp(gen, hw_id, latency_s)
    shape = lambda f: [  # noqa: E731
        ["k_half", f"{f.k_half.value:.0f}", f"{f.k_half.low:.0f}-{f.k_half.high:.0f}", "elements"],
        ["mn_half", f"{f.mn_half.value:.0f}", f"{f.mn_half.low:.0f}-{f.mn_half.high:.0f}", "elements"],
        ["plateau", f"{f.plateau:.3f}", "", "of the table's peak"],
        ["per-call floor t0", f"{f.t0_s * 1e6:.1f}", "", "us"],
        ["fit error", f"{f.error:.3f}", f"{f.points} points", "mean |ln(model / measured)|"],
    ]
    att: dict[tuple, list] = {}
    for r in t.attention:
        att.setdefault((r["kernel"], r["pass"], r["head_dim"], r["causal"]), []).append(
            (int(r["seq"]), float(r["tflops"]))
        )
    attention = [
        [
            k,
            p,
            d,
            "causal" if c == "1" else "full",
            "  ".join(f"{s // 1024 if s >= 1024 else s}{'k' if s >= 1024 else ''}:{v:.0f}" for s, v in sorted(pts)),
        ]
        for (k, p, d, c), pts in sorted(att.items())
    ]
    mem = [
        [r["kind"], r["implementation"], r["pass"], r["size"], f"{float(r['gb_s']):.0f}", r["gpu"]]
        for r in t.memory_bound
        if r["gpu"] == hw_id or not any(x["gpu"] == hw_id for x in t.memory_bound)
    ]
    sec, _ = _section(gen, "collectives")
    by_part = sec.get("by_part", {})
    rows = tuple(_rows(by_part[hw_id])) if hw_id in by_part else t.collectives
    coll: dict[tuple, list] = {}
    for r in rows:
        n, b = int(r["group_size"]), float(r["tensor_bytes"])
        if b in (2.0**20, 2.0**24, 2.0**28, 2.0**30):  # 1 MiB, 16 MiB, 256 MiB, 1 GiB
            coll.setdefault((r["op"], n, int(r["groups"])), []).append(
                (b, float(r["algbw_gb_s"]) * _busbw_factor(r["op"], n), float(r["time_us"]))
            )
    collectives = [
        [op, f"{g} x {n}", "  ".join(f"{b / 2**20:.0f} MiB:{bw:.0f} GB/s" for b, bw, _ in sorted(pts))]
        for (op, n, g), pts in sorted(coll.items())
    ]
    return {
        "generation": gen,
        "name": t.name,
        "borrowed": t.notes,
        "gemm": {"rows": shape(t.gemm), "source": t.gemm.source, "table": t.gemm.table},
        "grouped_gemm": {"rows": shape(t.grouped_gemm), "source": t.grouped_gemm.source, "table": t.grouped_gemm.table},
        "launch": [
            [k, f"{v.value * 1e6:.2f}", f"{v.low * 1e6:.2f}-{v.high * 1e6:.2f}", v.source] for k, v in t.launch.items()
        ],
        "attention": attention,
        "memory_bound": mem,
        "collectives": collectives,
        "collective_ramp": (
            ["b_half", f"{half_bytes / 2**20:.2f}", "", "MiB", "efficiency.collective_half_bytes (the part's own)"]
            if half_bytes is not None
            else None
            if ramp is None
            else [
                "b_half",
                f"{ramp.half_bytes.value / 2**20:.2f}",
                f"{ramp.half_bytes.low / 2**20:.2f}-{ramp.half_bytes.high / 2**20:.2f}",
                "MiB",
                f"{ramp.error_without:.3f} -> {ramp.error:.3f} ({ramp.points} points)",
            ]
        ),
        "collectives_source": t.collectives_source + (f" (this part: {by_part[hw_id]})" if hw_id in by_part else ""),
    }
