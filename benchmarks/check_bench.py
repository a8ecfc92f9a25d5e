"""`perfmodel check` on a gigabyte log. Target (issue 16): a 1 GB log checked in under 10 s and 200 MB.

    python benchmarks/check_bench.py [--size-gb 1.0] [--path /tmp/perfmodel-big.log] [--gzip]

Writes a synthetic Megatron-LM log (kept for reruns): the argument dump of a Llama 3 70B run on 64 H100,
then per iteration one `training_log` line from the last rank (log interval 1), NCCL-style warnings from
eight ranks with torchrun prefixes, a memory report from four ranks every 50 iterations, an evaluation
every 1,000 and a line of binary junk now and then. Every line comes from tests/log_helpers.py (the
frameworks' format strings). Then runs `perfmodel check LOG --hardware h100-sxm --json` in a fresh
process and reports its wall time and peak RSS (getrusage of the child: the whole process, imports
included).
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from log_helpers import (
    L70,
    LLAMA3_8B_TT_ARGS,
    args_dump,
    iteration_line,
    megatron_args,
    memory_line,  # noqa: E402
    torchtitan_config,
    torchtitan_log,
    torchtitan_step,
    validation_line,
)


def write_log(path: Path, size: float, zipped: bool) -> int:
    a = megatron_args(
        **L70,
        train_iters=10_000_000,
        log_interval=1,
    )
    target = int(size * 1e9)
    opener = gzip.open if zipped else open
    written = it = 0
    with opener(path, "wb") as fh:  # type: ignore[operator]
        head = "\n".join(args_dump(a)) + "\n > padded vocab (size: 128256) with 256 dummy tokens (new size: 128512)\n"
        fh.write(head.encode())
        while written < target:
            buf = []
            for _ in range(1000):
                it += 1
                ms = 14650.0 + (it * 7919 % 400) - 200.0
                buf.append(f"[rank63]:{iteration_line(it, 10_000_000, 128, ms, 431.2)}")
                for r in range(0, 64, 8):
                    buf.append(
                        f"[rank{r}]:[W1130 10:00:{it % 60:02d}.{r:06d} ProcessGroupNCCL.cpp:{1000 + r}] "
                        f"Warning: TORCH_NCCL_AVOID_RECORD_STREAMS is deprecated (seen {it} times)"
                    )
                if it % 50 == 0:
                    buf += [f"[rank{r}]:" + memory_line(r, it, 61000.0 + r, 70000.0 + r) for r in (0, 16, 32, 48)]
                if it % 1000 == 0:
                    buf.append(validation_line(it))
            chunk = ("\n".join(buf) + "\n").encode() + (b"\x00\xff\xfe junk \x1b[31m\n" if it % 7000 == 0 else b"")
            fh.write(chunk)
            written += len(chunk)
    return it


def write_torchtitan(path: Path, size: float, zipped: bool) -> int:
    """torchtitan, Llama 3 8B on 64 H100 (FSDP 64): a step line with colours every step from rank 0 and
    from 1 rank in 8 every 10 steps (LOG_RANK with several ranks), warnings from 8 ranks."""
    head = torchtitan_log(torchtitan_config(), LLAMA3_8B_TT_ARGS, (["dp_shard"], [64]), [], 1, 64, 8192)
    target = int(size * 1e9)
    opener = gzip.open if zipped else open
    written = step = 0
    with opener(path, "wb") as fh:  # type: ignore[operator]
        fh.write(head.encode())
        while written < target:
            buf = []
            for _ in range(1000):
                step += 1
                tps = 7000.0 + (step * 7919 % 400) - 200.0
                for r in range(0, 64, 8):
                    if r == 0 or step % 10 == 0:
                        buf.append(
                            torchtitan_step(step, tps, tps * 4.8e10 / 1e12, 40.0).replace("[rank0]", f"[rank{r}]")
                        )
                    buf.append(
                        f"[rank{r}]:[W1130 10:00:00.{r:06d} ProcessGroupNCCL.cpp:{1000 + r}] Warning: "
                        f"TORCH_NCCL_AVOID_RECORD_STREAMS is deprecated (seen {step} times)"
                    )
            chunk = ("\n".join(buf) + "\n").encode()
            fh.write(chunk)
            written += len(chunk)
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-gb", type=float, default=1.0)
    ap.add_argument("--path", default="/tmp/perfmodel-big.log")
    ap.add_argument("--gzip", action="store_true", help="write and read the log gzip-compressed")
    ap.add_argument("--framework", choices=["megatron", "torchtitan"], default="megatron")
    args = ap.parse_args()
    path = Path(args.path + ("-tt" if args.framework == "torchtitan" else "") + (".gz" if args.gzip else ""))
    if not path.exists():
        t = time.perf_counter()
        n = (write_log if args.framework == "megatron" else write_torchtitan)(path, args.size_gb, args.gzip)
        print(f"wrote {path} ({n:,} iterations) in {time.perf_counter() - t:.1f} s")
    size = path.stat().st_size
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "perfmodel", "check", str(path), "--json"]
        + (["--hardware", "h100-sxm"] if args.framework == "megatron" else []),
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t
    if done.returncode:
        sys.exit(done.stderr)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB -> MB (Linux)
    import json

    out = json.loads(done.stdout)
    m = out["measured"]
    print(
        f"{path.name}: {size / 1e9:.2f} GB on disk, {out['lines']:,} lines, {m['intervals']:,} intervals "
        f"({m['used']:,} stable)"
    )
    print(f"  perfmodel check: {wall:.1f} s wall ({size / 1e6 / wall:,.0f} MB/s), peak RSS {peak:.0f} MB")
    print(
        f"  measured {m['tokens_per_s_per_gpu']:,.0f} tokens/s/GPU, predicted "
        f"{out['predicted']['tokens_per_s_per_gpu']:,.0f}"
    )


if __name__ == "__main__":
    main()
