"""Planner speed: the full DeepSeek-V3 search on 2,048 GB200 GPUs (gbs 8192, seq 4096, bf16) and Llama 3.1
405B on 16,384 H100 (gbs 16384, seq 8192), the scorer's rate, and the scorer checked against predict_grid
on every legal layout of both jobs. Targets (issue 14): >= 10M layouts/s (DeepSeek-V3), >= 5M (Llama).

    python benchmarks/search_bench.py [--repeat 3] [--no-check]   # both jobs (~30 s with the check)
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

from perfmodel.analysis import search as S  # noqa: E402
from perfmodel.api import load_hardware, load_model  # noqa: E402
from perfmodel.core import score  # noqa: E402
from perfmodel.core.predict import Options, predict_grid  # noqa: E402
from perfmodel.core.score import score_product  # noqa: E402

JOBS = [("deepseek-v3", "gb200-nvl72", 2048, 8192, 4096), ("llama3.1-405b", "h100-sxm", 16384, 16384, 8192)]

# Growth jobs: batch scaled with the cluster (weak scaling): DeepSeek-V3 keeps the 2,048-GPU job's 4
# sequences of 4,096 tokens per GPU, Llama 3.1 405B one 8,192-token sequence per GPU.
GROWTH = {
    "deepseek-v3": ("gb200-nvl72", 4096, 4),  # hardware, seq, sequences per GPU (gbs = that x GPUs)
    "llama3.1-405b": ("h100-sxm", 8192, 1),
}
GROWTH_GPUS = (1024, 2048, 4096, 16384, 24576, 65536, 98304, 262144, 786432, 1048576)


def one(model: str, hardware: str, gpus: int, gbs: int, seq: int, repeat: int = 1, precision: str = "bf16") -> dict:
    """One search (best of `repeat`), in this process, after a small warm-up search (spec loading,
    formula cache)."""
    m, hw, opts = load_model(model), load_hardware(hardware), Options(precision)
    S.search(m, hw, 64, 256, seq, opts)
    r, cpu = _best_search(m, hw, gpus, gbs, seq, opts, repeat)
    return {
        "model": model,
        "hardware": hardware,
        "gpus": gpus,
        "gbs": gbs,
        "seq": seq,
        "candidates": r.evaluated,
        "legal": r.legal,
        "fits": r.fits,
        "seconds": r.seconds,
        "cpu_seconds": cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }  # Linux: kB


def growth(models: list[str], max_gpus: int, repeat: int) -> None:
    rows = []
    for model in models:
        hardware, seq, per_gpu = GROWTH[model]
        for gpus in (g for g in GROWTH_GPUS if g <= max_gpus):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--one",
                    model,
                    hardware,
                    str(gpus),
                    str(per_gpu * gpus),
                    str(seq),
                    str(repeat),
                ],
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            r = json.loads(out.stdout)
            rows.append(r)
            print(
                f"  {model} {gpus:>9,} GPUs: {r['legal']:>10,} legal  {r['seconds']:7.2f} s  {r['cpu_seconds']:7.2f} CPU s  "
                f"{r['peak_rss_mb']:5.0f} MB",
                file=sys.stderr,
                flush=True,
            )
    print(
        "| model | hardware | GPUs | gbs | legal layouts | seconds (wall) | CPU seconds | CPU µs per layout | peak RSS |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['hardware']} | {r['gpus']:,} | {r['gbs']:,} | {r['legal']:,} | {r['seconds']:.2f} "
            f"| {r['cpu_seconds']:.2f} | {1e6 * r['cpu_seconds'] / r['legal']:.2f} | {r['peak_rss_mb']:.0f} MB |"
        )
    for model in models:
        sub = [r for r in rows if r["model"] == model]
        if len(sub) > 2:
            import numpy as np

            x, y = np.array([r["legal"] for r in sub], float), np.array([r["cpu_seconds"] for r in sub])
            b, a = np.polyfit(x, y, 1)
            r2 = 1 - ((y - (a + b * x)) ** 2).sum() / ((y - y.mean()) ** 2).sum()
            print(
                f"\n{model}: CPU seconds = {a:.3f} + {1e6 * b:.3f} µs x legal layouts (least squares, R^2 = {r2:.4f}); "
                f"peak RSS {min(r['peak_rss_mb'] for r in sub):.0f}-{max(r['peak_rss_mb'] for r in sub):.0f} MB"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-check", action="store_true", help="skip the full-grid check against predict_grid")
    ap.add_argument("--growth", action="store_true", help="the growth table (opt-in: minutes)")
    ap.add_argument("--max-gpus", type=int, default=1 << 20)
    ap.add_argument("--models", default=",".join(GROWTH))
    ap.add_argument("--profile", action="store_true", help="where predict_grid's time goes (predict_profile.py)")
    ap.add_argument(
        "--one", nargs=6, metavar=("MODEL", "HARDWARE", "GPUS", "GBS", "SEQ", "REPEAT"), help=argparse.SUPPRESS
    )
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
    for job in JOBS:
        bench(*job, repeat=args.repeat, check=not args.no_check)


def _best_search(m, hw, gpus: int, gbs: int, seq: int, opts: Options, repeat: int):
    """(the search with the shortest wall time of `repeat`, the least CPU seconds of them)."""
    best, cpu = None, float("inf")
    for _ in range(repeat):
        c0 = time.process_time()
        r = S.search(m, hw, gpus, gbs, seq, opts)
        cpu = min(cpu, time.process_time() - c0)
        best = r if best is None or r.seconds < best.seconds else best
    return best, cpu


def bench(model: str, hardware: str, gpus: int, gbs: int, seq: int, repeat: int, check: bool) -> None:
    """The search (best of `repeat`, CPU seconds: the box is shared), the scorer alone on the same chunks,
    and (check) the scorer against predict_grid on every legal layout."""
    m, hw, opts = load_model(model), load_hardware(hardware), Options("bf16")
    S.search(m, hw, 64, 512, seq, opts)  # warm caches (spec loading, formulas, placements)
    print(f"{model} on {gpus} x {hardware}, gbs {gbs}, seq {seq}, bf16 (best of {repeat}):")
    for tail in ["numpy", "numba"] if score._numba_installed() else ["numpy"]:
        os.environ[score.KERNEL_ENV] = tail  # the whole search on one tail (kernel loaded, warm)
        S.search(m, hw, gpus, gbs, seq, opts)
        best, cpu = _best_search(m, hw, gpus, gbs, seq, opts, repeat)
        assert best is not None and best.top is not None
        print(f"  candidates {best.evaluated:,}  legal (scored) {best.legal:,}  fit {best.fits:,}")
        print(
            f"  search, {tail} tail: {cpu:.3f} CPU s ({best.seconds:.3f} s wall) -> {best.legal / cpu:,.0f} legal "
            f"layouts per CPU s"
        )
    os.environ.pop(score.KERNEL_ENV)
    print(f"  best: {best.top.layouts.layout(0)}  {best.top.tokens_per_s_per_gpu[0]:,.0f} tok/s/GPU")

    # the scorer alone, on the planner's chunks (enumeration apart; pricing included, once per enumeration
    # block as search does): the numpy tail and, where numba is installed, the compiled one
    s = S.space(m, gpus, gbs, seq)
    c0 = time.process_time()
    enum = list(S.structural_blocks(m, s))
    blocks = list(S._rechunk(iter(enum), max(1, S.SCORE_CHUNK // (len(s.fsdp) * len(s.recompute)))))
    t_enum = time.process_time() - c0
    for kernel in [False, True] if score.kernel_available() else [False]:
        score_product(m, hw, gpus, gbs, seq, blocks[0], s.fsdp, s.recompute, opts, kernel=kernel)  # loaded, warm
        t_score = float("inf")
        for _ in range(repeat):
            c0 = time.process_time()
            cache: dict = {}
            for b in enum:
                score.prime(m, hw, gpus, gbs, seq, b, s.recompute, opts, cache)
            scores = [score_product(m, hw, gpus, gbs, seq, b, s.fsdp, s.recompute, opts, kernel, cache) for b in blocks]
            t_score = min(t_score, time.process_time() - c0)
        n = sum(x.step_time_s.size for x in scores)
        print(
            f"  scoring ({'compiled kernel' if kernel else 'numpy tail'}): {t_score:.3f} CPU s for {n:,} layouts (fsdp "
            f"duplicates included) -> {n / t_score:,.0f} layouts per CPU s; enumeration {t_enum:.3f} CPU s"
        )
    if not check:
        return
    worst, c0 = 0.0, time.process_time()
    for b, x in zip(blocks, scores):
        p = predict_grid(m, hw, S._expand(s, b), opts)
        for a, ref in (
            (x.step_time_s, p.step_time_s),
            (x.tokens_per_s_per_gpu, p.tokens_per_s_per_gpu),
            (x.memory_bytes_per_gpu, p.memory_bytes_per_gpu),
        ):
            worst = max(worst, float((abs(a.ravel() - ref) / abs(ref)).max()))
    t_pred = time.process_time() - c0
    print(
        f"  check: predict_grid on all {n:,} layouts ({t_pred:.2f} CPU s, {n / t_pred:,.0f} layouts/s): max relative "
        f"difference of step time, tokens/s and memory {worst:.1e}"
    )
    assert worst <= 1e-12, worst


if __name__ == "__main__":
    main()
