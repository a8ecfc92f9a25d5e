"""Where predict_grid's time goes, statement by statement, and which layout axes each statement's
result depends on (what a factorised evaluation could compute once per distinct axis combination).

    python benchmarks/predict_profile.py [--model deepseek-v3 --hardware gb200-nvl72 --gpus 2048 --gbs 8192 --seq 4096]

1. Time: every legal layout of the job is scored in the planner's chunks under sys.settrace. A
   "statement" is a line of predict_grid or of a function nested in it (ffn_moe, layer, ...); the
   time of everything it calls (gemm_time, comm.*, memory_per_gpu, ...) is charged to it, so the
   shares add up to 100% of predict_grid. Tracing adds a few % of Python overhead.
2. Dependencies: one predict_grid call on a random sample of 65,536 legal layouts, reading the
   variables each statement assigns. A result depends on axis a when it is not a function of the other
   axes (tp, pp, vp, cp, ep, etp, mbs, fsdp, recompute; dp = gpus / (tp cp pp) is derived). "distinct"
   is the number of distinct combinations of those axes among all legal layouts: the evaluations a
   factorised pass needs instead of one per layout.
Generic: it reads predict.py's source at run time, so it still works after the cost model changes.
"""

from __future__ import annotations

import argparse
import linecache
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel.analysis import search as S  # noqa: E402
from perfmodel.api import load_hardware, load_model  # noqa: E402
from perfmodel.core import predict as P  # noqa: E402
from perfmodel.specs.layout import LayoutGrid  # noqa: E402

AXES = ("tp", "pp", "vp", "cp", "ep", "etp", "mbs", "fsdp", "recompute")
SAMPLE = 65536


def _is_statement(code) -> bool:
    q = code.co_qualname
    return code.co_filename == P.__file__ and (q == "predict_grid" or q.startswith("predict_grid.<locals>."))


class Timer:
    """Exclusive time per (code, line) of statement-level frames, callees included."""

    def __init__(self) -> None:
        self.acc: dict[tuple, float] = defaultdict(float)
        self.cur: tuple | None = None
        self.t = 0.0

    def _charge(self, new: tuple | None) -> None:
        now = time.perf_counter()
        if self.cur is not None:
            self.acc[self.cur] += now - self.t
        self.cur, self.t = new, now

    def trace(self, frame, event, arg):
        if event == "call" and _is_statement(frame.f_code):
            self._charge((frame.f_code, frame.f_lineno))
            return self.local
        return None

    def local(self, frame, event, arg):
        if event == "line":
            self._charge((frame.f_code, frame.f_lineno))
        elif event == "return":
            back = frame.f_back
            self._charge((back.f_code, back.f_lineno) if back is not None and _is_statement(back.f_code) else None)
        return self.local


class Deps:
    """The variables each statement assigns, read at the next line event of its frame."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.seen: dict[int, dict[str, int]] = {}
        self.last: dict[int, tuple] = {}
        self.values: dict[tuple, list] = defaultdict(list)

    def trace(self, frame, event, arg):
        if event == "call" and _is_statement(frame.f_code):
            self.seen[id(frame)] = {k: id(v) for k, v in frame.f_locals.items()}
            self.last[id(frame)] = (frame.f_code, frame.f_lineno)
            return self.local
        return None

    def local(self, frame, event, arg):
        if event in ("line", "return"):
            loc = frame.f_locals
            old = self.seen.get(id(frame), {})
            key = self.last.get(id(frame))
            new = [v for k, v in loc.items() if old.get(k) != id(v)]
            if event == "return":
                new.append(arg)
            if key is not None and new:
                self.values[key].extend(new)
            self.seen[id(frame)] = {k: id(v) for k, v in loc.items()}
            self.last[id(frame)] = (frame.f_code, frame.f_lineno)
        return self.local


def _arrays(v, n: int, out: list) -> None:
    if isinstance(v, np.ndarray) and v.ndim == 1 and v.shape[0] == n and v.dtype.kind in "fbiu":
        out.append(v.astype(float))
    elif isinstance(v, (tuple, list)):
        for x in v:
            _arrays(x, n, out)
    elif isinstance(v, dict):
        for x in v.values():
            _arrays(x, n, out)


class Axes:
    """Which axes an array over the sample depends on (each axis: is it a function of the others?)."""

    def __init__(self, grid: LayoutGrid) -> None:
        codes = {a: np.unique(np.asarray(getattr(grid, a)).astype(np.int64), return_inverse=True)[1] for a in AXES}
        self.groups = {}
        for a in AXES:
            key = np.zeros(grid.n, np.int64)
            for b in AXES:
                if b != a:
                    key = key * (int(codes[b].max()) + 1) + codes[b]
            order = np.argsort(key, kind="stable")
            self.groups[a] = (order, key[order][1:] == key[order][:-1])

    def of(self, y: np.ndarray) -> tuple[str, ...]:
        scale = max(float(np.max(np.abs(y))), 1e-300)
        dep = []
        for a, (order, same) in self.groups.items():
            ys = y[order]
            if np.any(np.abs(ys[1:] - ys[:-1])[same] > 1e-12 * scale):
                dep.append(a)
        return tuple(dep)


def distinct(grid_cols: dict[str, np.ndarray], axes: tuple[str, ...]) -> int:
    if not axes:
        return 1
    return int(np.unique(np.stack([grid_cols[a] for a in axes], axis=1), axis=0).shape[0])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="deepseek-v3")
    ap.add_argument("--hardware", default="gb200-nvl72")
    ap.add_argument("--gpus", type=int, default=2048)
    ap.add_argument("--gbs", type=int, default=8192)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--precision", default="bf16")
    args = ap.parse_args(argv)
    m, hw, opts = load_model(args.model), load_hardware(args.hardware), P.Options(args.precision)
    s = S.space(m, args.gpus, args.gbs, args.seq)
    grids = [g.take(~S._fsdp_duplicate(g)) for g in S.chunks(s, S.structural(m, s))]
    n_all = sum(g.n for g in grids)
    P.predict_grid(m, hw, grids[0], opts)  # warm caches

    t0 = time.perf_counter()
    for g in grids:
        P.predict_grid(m, hw, g, opts)
    plain = time.perf_counter() - t0
    timer = Timer()
    sys.settrace(timer.trace)
    try:
        for g in grids:
            P.predict_grid(m, hw, g, opts)
    finally:
        sys.settrace(None)
    timer._charge(None)
    total = sum(timer.acc.values())

    full = LayoutGrid.concat(grids)
    cols = {a: np.asarray(getattr(full, a)).astype(np.int64) for a in AXES}
    sample = full.take(np.sort(np.random.default_rng(0).choice(full.n, min(SAMPLE, full.n), replace=False)))
    deps = Deps(sample.n)
    sys.settrace(deps.trace)
    try:
        P.predict_grid(m, hw, sample, opts)
    finally:
        sys.settrace(None)
    ax = Axes(sample)

    rows = []
    for key, t in timer.acc.items():
        code, line = key
        arrs: list = []
        for v in deps.values.get(key, []):
            _arrays(v, sample.n, arrs)
        dep = tuple(sorted({a for y in arrs for a in ax.of(y)}, key=AXES.index)) if arrs else None
        rows.append(
            (
                t / total,
                code.co_qualname.replace("predict_grid.<locals>.", ""),
                line,
                linecache.getline(code.co_filename, line).strip(),
                dep,
            )
        )
    rows.sort(key=lambda r: -r[0])
    print(
        f"{args.model} on {args.gpus:,} x {args.hardware}, gbs {args.gbs}, seq {args.seq}: {n_all:,} legal layouts "
        f"in {len(grids)} chunks; predict_grid {plain:.2f} s untraced ({n_all / plain:,.0f} layouts/s), "
        f"{total:.2f} s traced\n"
    )
    print("| share | where | statement | depends on | distinct |")
    print("|---|---|---|---|---|")
    by_dep: dict = defaultdict(float)
    cache: dict = {}
    for share, fn, line, src, dep in rows:
        if dep is not None and dep not in cache:
            cache[dep] = distinct(cols, dep)
        by_dep[dep] += share
        if share >= 0.005:
            d = "-" if dep is None else (", ".join(dep) or "nothing (layout-invariant)")
            c = "" if dep is None else f"{cache[dep]:,}"
            print(f"| {share:.1%} | {fn}:{line} | `{src[:90]}` | {d} | {c} |")
    print("\nBy dependency set (all statements):\n")
    print("| depends on | share of time | distinct combinations | of layouts |")
    print("|---|---|---|---|")
    for dep, share in sorted(by_dep.items(), key=lambda kv: -kv[1]):
        if dep is None:
            print(f"| (no array assigned: control flow, returns) | {share:.1%} | | |")
        else:
            print(
                f"| {', '.join(dep) or 'nothing (layout-invariant)'} | {share:.1%} | {cache[dep]:,} | "
                f"{cache[dep] / n_all:.2%} |"
            )


if __name__ == "__main__":
    main()
