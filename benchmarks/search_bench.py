"""Planner speed: the full DeepSeek-V3 search on 2,048 GB200 GPUs (gbs 8192, seq 4096, bf16) and the
cost model's scoring rate. Target (issue 4): about a second for the search, >= 1,000,000 layouts/s.

    python benchmarks/search_bench.py [--repeat 3]          # the DeepSeek-V3 / 2,048 GB200 job (seconds)
    python benchmarks/search_bench.py --growth [--repeat 3] [--max-gpus N] [--models deepseek-v3,llama3.1-405b]
        # opt-in, minutes (best of --repeat per row): the growth table of benchmarks/README.md (GPUs -> legal layouts -> seconds ->
        # peak RSS), each search in its own process so its peak RSS is its own
    python benchmarks/search_bench.py --profile              # where predict_grid's time goes (predict_profile.py)

Numbers are wall-clock on the current machine; numpy's element-wise kernels run on one core.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfmodel import search as S  # noqa: E402
from perfmodel.api import load_hardware, load_model  # noqa: E402
from perfmodel.predict import Options, predict_grid  # noqa: E402

# Growth jobs: batch scaled with the cluster (weak scaling): DeepSeek-V3 keeps the 2,048-GPU job's 4
# sequences of 4,096 tokens per GPU, Llama 3.1 405B one 8,192-token sequence per GPU.
GROWTH = {
    "deepseek-v3": ("gb200-nvl72", 4096, 4),        # hardware, seq, sequences per GPU (gbs = that x GPUs)
    "llama3.1-405b": ("h100-sxm", 8192, 1),
}
GROWTH_GPUS = (1024, 2048, 4096, 16384, 24576, 65536, 98304, 262144, 786432, 1048576)


def one(model: str, hardware: str, gpus: int, gbs: int, seq: int, repeat: int = 1, precision: str = "bf16") -> dict:
    """One search (best of `repeat`), in this process, after a small warm-up search (spec loading,
    formula cache)."""
    m, hw, opts = load_model(model), load_hardware(hardware), Options(precision)
    S.search(m, hw, 64, 256, seq, opts)
    best, cpu = None, float("inf")
    for _ in range(repeat):
        c0 = time.process_time()
        r = S.search(m, hw, gpus, gbs, seq, opts)
        cpu = min(cpu, time.process_time() - c0)
        best = r if best is None or r.seconds < best.seconds else best
    r = best
    return {"model": model, "hardware": hardware, "gpus": gpus, "gbs": gbs, "seq": seq, "candidates": r.evaluated,
            "legal": r.legal, "fits": r.fits, "seconds": r.seconds, "cpu_seconds": cpu,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}   # Linux: kB


def growth(models: list[str], max_gpus: int, repeat: int) -> None:
    rows = []
    for model in models:
        hardware, seq, per_gpu = GROWTH[model]
        for gpus in (g for g in GROWTH_GPUS if g <= max_gpus):
            out = subprocess.run([sys.executable, __file__, "--one", model, hardware, str(gpus), str(per_gpu * gpus),
                                  str(seq), str(repeat)], capture_output=True, text=True, check=True, cwd=ROOT,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
            r = json.loads(out.stdout)
            rows.append(r)
            print(f"  {model} {gpus:>9,} GPUs: {r['legal']:>10,} legal  {r['seconds']:7.2f} s  {r['cpu_seconds']:7.2f} CPU s  "
                  f"{r['peak_rss_mb']:5.0f} MB", file=sys.stderr, flush=True)
    print("| model | hardware | GPUs | gbs | legal layouts | seconds (wall) | CPU seconds | CPU µs per layout | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['hardware']} | {r['gpus']:,} | {r['gbs']:,} | {r['legal']:,} | {r['seconds']:.2f} "
              f"| {r['cpu_seconds']:.2f} | {1e6 * r['cpu_seconds'] / r['legal']:.2f} | {r['peak_rss_mb']:.0f} MB |")
    for model in models:
        sub = [r for r in rows if r["model"] == model]
        if len(sub) > 2:
            import numpy as np
            x, y = np.array([r["legal"] for r in sub], float), np.array([r["cpu_seconds"] for r in sub])
            b, a = np.polyfit(x, y, 1)
            r2 = 1 - ((y - (a + b * x)) ** 2).sum() / ((y - y.mean()) ** 2).sum()
            print(f"\n{model}: CPU seconds = {a:.3f} + {1e6 * b:.3f} µs x legal layouts (least squares, R^2 = {r2:.4f}); "
                  f"peak RSS {min(r['peak_rss_mb'] for r in sub):.0f}-{max(r['peak_rss_mb'] for r in sub):.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--growth", action="store_true", help="the growth table (opt-in: minutes)")
    ap.add_argument("--max-gpus", type=int, default=1 << 20)
    ap.add_argument("--models", default=",".join(GROWTH))
    ap.add_argument("--profile", action="store_true", help="where predict_grid's time goes (predict_profile.py)")
    ap.add_argument("--one", nargs=6, metavar=("MODEL", "HARDWARE", "GPUS", "GBS", "SEQ", "REPEAT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        model, hardware, gpus, gbs, seq, repeat = args.one
        print(json.dumps(one(model, hardware, int(gpus), int(gbs), int(seq), int(repeat))))
        return
    if args.growth:
        growth(args.models.split(","), args.max_gpus, args.repeat)
        return
    if args.profile:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import predict_profile
        predict_profile.main([])
        return
    m, hw, opts = load_model("deepseek-v3"), load_hardware("gb200-nvl72"), Options("bf16")
    S.search(m, hw, 64, 512, 4096, opts)                       # warm caches (spec loading, sympy)

    best = None
    for _ in range(args.repeat):
        r = S.search(m, hw, 2048, 8192, 4096, opts)
        best = r if best is None or r.seconds < best.seconds else best
    assert best is not None and best.top is not None
    print(f"deepseek-v3 on 2048 x gb200-nvl72, gbs 8192, seq 4096, bf16 (best of {args.repeat}):")
    print(f"  candidates {best.evaluated:,}  legal (scored) {best.legal:,}  fit {best.fits:,}")
    print(f"  search time {best.seconds:.3f} s  -> {best.legal / best.seconds:,.0f} layouts/s end to end")
    print(f"  best: {best.top.layouts.layout(0)}  {best.top.tokens_per_s_per_gpu[0]:,.0f} tok/s/GPU")

    # the cost model alone, on the same layouts, in the planner's chunk size
    s = S.space(m, 2048, 8192, 4096)
    t0 = time.perf_counter()
    enum = S.structural(m, s)
    grids = list(S.chunks(s, enum))
    t_enum = time.perf_counter() - t0
    n = sum(g.n for g in grids)
    t0 = time.perf_counter()
    for g in grids:
        predict_grid(m, hw, g, opts)
    t_score = time.perf_counter() - t0
    print(f"  enumeration {t_enum:.3f} s; predict_grid alone {n / t_score:,.0f} layouts/s "
          f"({n:,} layouts in chunks of {S.SCORE_CHUNK:,})")


if __name__ == "__main__":
    main()
