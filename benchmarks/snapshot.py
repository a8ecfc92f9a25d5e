"""Snapshot of predictions over a fixed sample of layouts, to check that a restructuring changes no number.

    python3 benchmarks/snapshot.py save /tmp/before.npz     # on the old code
    python3 benchmarks/snapshot.py diff /tmp/before.npz     # on the new code: max relative difference per field

The sample: every validation row's layout under all three recompute modes, and random layouts (legal by
the layout rules, memory ignored) for dense, MoE, MLA, sliding-window and FSDP / CP / EP cases.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from perfmodel.core.predict import Options, predict_grid, software_of
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.layout import LayoutGrid, legality
from perfmodel.specs.model import load_model

JOBS = [
    ("llama3-70b", "h100-sxm", 512, 512, 8192, "bf16"),
    ("deepseek-v3", "gb200-nvl72", 2048, 8192, 4096, "bf16"),
    ("mixtral-8x22b", "h100-sxm", 256, 256, 4096, "fp8"),
    ("gpt-oss-120b", "b200", 64, 512, 8192, "mxfp8"),
    ("qwen3-30b-a3b", "gb300-nvl72", 72, 576, 4096, "bf16"),
    ("llama3.1-405b", "h100-sxm", 2048, 1024, 8192, "fp8"),
]


def _random_grid(model, gpus: int, gbs: int, seq: int, n: int, rng) -> LayoutGrid:
    pick = lambda vals: rng.choice(np.array(vals, dtype=np.int64), n)
    g = LayoutGrid(
        gpus=np.full(n, gpus),
        gbs=np.full(n, gbs),
        seq=np.full(n, seq),
        tp=pick([1, 2, 4, 8]),
        pp=pick([1, 2, 4, 8]),
        vp=pick([1, 1, 2, 4]),
        cp=pick([1, 1, 2]),
        ep=pick([1, 2, 4, 8, 16, 32] if model.moe else [1]),
        etp=pick([1, 1, 2] if model.moe else [1]),
        mbs=pick([1, 2]),
        fsdp=rng.random(n) < 0.3,
        recompute=pick([0, 1, 2]),
    )
    a = model.attention
    bad = legality(g, model.num_layers, a.num_heads, a.num_kv_heads, model.moe.num_experts if model.moe else None)
    ok = ~np.any(np.stack(list(bad.values())), axis=0)
    return g.take(np.flatnonzero(ok))


def collect() -> dict[str, np.ndarray]:
    out: dict[str, list] = {}
    rng = np.random.default_rng(7)

    def add(p, tag):
        fields = {
            "step": p.step_time_s,
            "tps": p.tokens_per_s_per_gpu,
            "mfu": p.mfu,
            "hfu": p.hfu,
            "mem": p.memory_bytes_per_gpu,
            **{"b_" + k: v for k, v in p.breakdown_s.items()},
            **{"m_" + k: v for k, v in p.memory_parts.items()},
        }
        for k, v in fields.items():
            out.setdefault(k, []).append(np.asarray(v, float) * np.ones(p.layouts.n))

    for mid, hid, gpus, gbs, seq, prec in JOBS:
        m, hw = load_model(mid), load_hardware(hid)
        g = _random_grid(m, gpus, gbs, seq, 3000, rng)
        add(predict_grid(m, hw, g, Options(prec)), mid)
    rows = _validation_grids()
    for m, hw, g, opts in rows:
        sel = bool(software_of(m, hw, opts).recompute_modules)  # selective needs the stack's module list
        for k in (0, 1, 2) if sel else (0, 2):
            add(predict_grid(m, hw, replace(g, recompute=np.full(g.n, k, np.int64)), opts), "v")
    return {k: np.concatenate(v) for k, v in out.items()}


def _validation_grids():
    from pathlib import Path

    from perfmodel.analysis import validate as V

    path = Path(__file__).resolve().parent.parent / "validation" / "runs.csv"
    res = []
    for row in V.read_csv(path):
        try:
            m, hw, lay, opts = V.row_inputs(row, path.parent)
        except Exception:
            continue
        res.append((m, hw, LayoutGrid.of(lay), opts))
    return res


if __name__ == "__main__":
    cmd, path = sys.argv[1], sys.argv[2]
    snap = collect()
    if cmd == "save":
        np.savez(path, **snap)
        print(f"saved {len(snap['step'])} predictions to {path}")
    else:
        old = np.load(path)
        worst = 0.0
        for k in old.files:
            if k not in snap:
                print(f"{k:5s} missing in the new snapshot")
                worst = 1.0
                continue
            a, b = old[k], snap[k]
            # breakdown terms near zero (a residual of 1e-16 s) are compared against 1 ns
            rel = np.abs(a - b) / np.maximum(np.abs(a), 1e-9 if k.startswith("b_") else 1e-300)
            # equal infinities and NaN on both sides are the same; a NaN or infinity on one side only is not
            rel = np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, np.nan_to_num(rel, nan=np.inf))
            print(f"{k:5s} n={len(a)} max rel diff {rel.max():.3e}  rows > 1e-9: {(rel > 1e-9).sum()}")
            worst = max(worst, rel.max())
        sys.exit(0 if worst <= 1e-9 else 1)
