"""The README's scaling reproduction tables (cost_report.md's weak-scaling figures on H100): for every
layout and software release of validation/runs.csv measured at these sizes, MFU (full attention, as the
DGXC recipes count it; measured MFU recomputed from measured tokens/s/GPU) measured / predicted per size.

    python3 validation/scaling_tables.py          # Markdown, paste into README.md "scaling"

Rerun after any change of the cost model or the calibration; tests/analysis/test_scaling.py checks the shapes
(flat from the smallest to the largest size, levels within 10% of every measured cell)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfmodel.analysis.scaling import measured_series  # noqa: E402
from perfmodel.specs.hardware import load_hardware  # noqa: E402
from perfmodel.specs.model import load_model  # noqa: E402

# (title, model, seq, GPU counts, global batch at the first count): the report's three weak-scaling figures
STUDIES = [
    ("Llama 3 70B, seq 8192, 2 sequences per GPU", "llama3-70b", 8192, [64, 128, 256, 512, 1024, 2048], 128),
    ("Llama 3.1 405B, seq 8192, 252 sequences per 576 GPUs", "llama3.1-405b", 8192, [576, 1152, 2304], 252),
    ("GPT-3 175B, seq 2048, 2 sequences per GPU", "gpt3-175b", 2048, [128, 256, 512, 1024, 2048], 256),
]
HARDWARE = "h100-sxm"


def table(title: str, model: str, seq: int, gpus: list[int], gbs0: int) -> str:
    series = measured_series(load_model(model), load_hardware(HARDWARE), seq, gpus, gbs0)
    pct = lambda v: "–" if v is None else f"{100 * v:.1f}%"
    lines = [
        f"{title}: MFU (full attention), **measured** / predicted",
        "",
        "| layout, release | " + " | ".join(f"{n:,}" for n in gpus) + " |",
        "|---|" + "---|" * len(gpus),
    ]
    for s in series:
        cells = [(f"**{pct(m)}**" if m is not None else "–") + f" / {pct(p)}" for m, p in (s["mfu"][n] for n in gpus)]
        lines.append(f"| {s['precision'].upper()} {s['layout']}, {s['release']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    print("\n\n".join(table(*study) for study in STUDIES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
