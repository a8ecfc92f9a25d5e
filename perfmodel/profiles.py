"""The old software profiles, now stacks (issue #13: "Profiles become stacks").

A profile used to be a few overrides of the global constants, and a release profile one tensor_sustained
fitted on that release's rows. A release is now a preset of facts (stacks/*.toml, perfmodel/stack.py) and
`--profile NAME` is a deprecated alias of `--stack`: each old name maps to the stack preset of the same
release, or, for the what-if profiles, to `--stack-set` overrides of the default stack. Nothing here is
fitted.

`release_series` is the release table of `perfmodel releases`: per software release of validation/runs.csv
its rows predicted with each row's own stack (as `validate` does), and the model-free like-for-like speedup
over the previous release that ran the same configuration.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .errors import InputError, did_you_mean

DEFAULT = "default"

# old release profile name or alias -> the stack preset of that release (stacks/*.toml: the preset whose
# `software` label names the release; a point release takes its release's preset)
RELEASE_STACKS: dict[str, str] = {
    "nemo-24.07": "nemo-24.07", "2024-09": "nemo-24.07",
    "dgxc-24.11.1": "dgxc-24.11", "dgxc-24.11": "dgxc-24.11", "2024-11": "dgxc-24.11",
    "nemo-25.02": "nemo-25.02", "2025-02": "nemo-25.02",
    "dgxc-25.04.01": "dgxc-25.04", "dgxc-25.04": "dgxc-25.04",
    "nemo-25.04": "nemo-25.04",
    "dgxc-25.05.04": "dgxc-25.05", "dgxc-25.05": "dgxc-25.05", "2025-05": "dgxc-25.05",
    "nemo-25.07": "nemo-25.07", "2025-07": "nemo-25.07",
    "nemo-25.09": "nemo-25.09", "2025-10": "nemo-25.09",
    "nemo-25.11": "nemo-25.11", "2025-12": "nemo-25.11",
    "nemo-26.02": "nemo-26.02", "2026-02": "nemo-26.02", "nemo-26.02.01": "nemo-26.02", "2026-03": "nemo-26.02",
    "nemo-26.04": "nemo-26.04", "2026-04": "nemo-26.04", "nemo-26.04.01": "nemo-26.04", "2026-05": "nemo-26.04",
    "nemo-26.06": "nemo-26.06", "2026-06": "nemo-26.06",
    # the report's early-2024 stack (GPT-3 175B at 34% MFU, Jan 2024): the nearest early-2024 preset
    "dgxc-2024-01": "nemo-megatron-24.05", "2024-01": "nemo-megatron-24.05", "jan-2024": "nemo-megatron-24.05",
}

# old what-if profile -> --stack-set overrides of the default stack
WHATIF_SETS: dict[str, tuple[str, ...]] = {
    "no-overlap": ("tp_overlap=none", "dp_grad_reduce_overlap=false", "dp_param_gather_overlap=false",
                   "moe_a2a_overlap=false"),
    "cuda-graphs": ("cuda_graphs=per_layer",),
    # TE fused norm/activation + FP8 cast: the Transformer Engine fusions (the default stack has them already)
    "fp8-fused-cast": ("fusions=te_fused",),
}


def profile_names() -> list[str]:
    return [DEFAULT, *WHATIF_SETS, *RELEASE_STACKS]


def profile_as_stack(name: str) -> tuple[str | None, tuple[str, ...], str]:
    """A deprecated profile name -> (stack preset id or None for the default stack, --stack-set overrides,
    the one-line deprecation note)."""
    if name == DEFAULT:
        return None, (), "--profile is deprecated: the default profile is the default stack (omit --stack)"
    if name in WHATIF_SETS:
        sets = WHATIF_SETS[name]
        return None, sets, ("--profile is deprecated: " + name + " is now "
                            + " ".join(f"--stack-set {s}" for s in sets) + " (on the default stack)")
    if name in RELEASE_STACKS:
        sid = RELEASE_STACKS[name]
        why = " (the nearest early-2024 preset)" if sid == "nemo-megatron-24.05" else ""
        return sid, (), f"--profile is deprecated: {name} is now --stack {sid}{why}"
    raise InputError("--profile", name, f"unknown profile{did_you_mean(name, profile_names())}; --profile is "
                                        "deprecated, use --stack ID (`perfmodel list stacks`)")


# ---- releases in the measured rows --------------------------------------------------------------------

def release_of(row: dict) -> str:
    """`software` column up to the container note: 'DGXC v24.11.1 (NeMo 24.09)' -> 'DGXC v24.11.1'."""
    return (row.get("software") or "").split(" (")[0].strip()


def rows_of_release(rows: Iterable[dict], release: str) -> list[dict]:
    return [r for r in rows if release_of(r) == release]


CONFIG_COLUMNS = ("framework", "model", "hardware", "gpus", "precision", "seq_len", "global_batch", "micro_batch", "tp", "pp",
                  "vp", "cp", "ep", "etp", "fsdp", "recompute", "moe_routing")


def config_key(row: dict) -> tuple:
    """The run's configuration without its software release (the framework kept: a MaxText row is no earlier
    NeMo release): rows with equal keys are like-for-like."""
    # fsdp: empty = not published; FSDP is opt-in in Megatron/NeMo, so empty means 0 (validation/README.md)
    return tuple((row.get(k) or "").strip() or ("0" if k == "fsdp" else "") for k in CONFIG_COLUMNS)


SERIES_PREFIX = {"DGXC": "dgxc", "NeMo": "nemo"}      # release label prefix -> series name


def series_of(release: str) -> str | None:
    """'DGXC v24.11.1' -> 'dgxc', 'NeMo 26.02.01' -> 'nemo'; papers, reports -> None."""
    head, _, ver = release.partition(" ")
    if head not in SERIES_PREFIX or not ver or not ver.lstrip("v")[:1].isdigit():
        return None
    return SERIES_PREFIX[head]


def _filter(rows: list[dict], model: str | None, hardware: str | None, precision: str | None,
            gpus: int | None) -> list[dict]:
    want = {"model": model, "hardware": hardware, "precision": precision, "gpus": str(gpus) if gpus else None}
    return [r for r in rows if all(not v or (r.get(k) or "").strip() == v for k, v in want.items())]


def release_series(rows: list[dict], base: Path, series: str | None = None, model: str | None = None,
                   hardware: str | None = None, precision: str | None = None,
                   gpus: int | None = None) -> dict[str, Any]:
    """Per software release of a series (DGXC recipes, NeMo containers), by date: its rows (after the
    filters), each predicted with its own stack preset (validate's stack_for_row, or the row's `stack`
    cell), measured / predicted tokens/s/GPU (geometric mean), MAPE, and the like-for-like measured speedup
    over the previous release of the series that ran the same configuration (config_key: model, hardware,
    GPUs, precision, batch, layout); and every row (MFU in the full-attention convention the DGXC recipes use)."""
    from .validate import validate_rows
    sel = _filter(rows, model, hardware, precision, gpus)
    groups: dict[str, list[dict]] = {}
    for r in sel:
        rel = release_of(r)
        ser = series_of(rel)
        if ser is not None and (series is None or ser == series):
            groups.setdefault(rel, []).append(r)
    order = sorted(groups, key=lambda k: (min((r.get("date") or "").strip() for r in groups[k]), k))
    out_rel: list[dict[str, Any]] = []
    out_rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, tuple], tuple[str, float, str]] = {}      # (series, config) -> (release, measured, run_id)
    for rel in order:
        rr = groups[rel]
        ser = series_of(rel) or ""
        d = validate_rows(rr, base).results
        by_id = {(row.get("run_id") or "").strip(): row for row in rr}
        like: list[float] = []
        pairs: list[tuple[str, str]] = []
        for r in d:
            row = by_id.get(r.run_id, {})
            prev = seen.get((ser, config_key(row)))
            if prev is not None and prev[0] != rel:
                like.append(r.measured / prev[1])
                pairs.append((prev[2], r.run_id))
            full = _full_over_causal(r.model, int((row.get("seq_len") or "0").strip() or 0))
            out_rows.append({"release": rel, "stack": r.stack, "date": (row.get("date") or "").strip(),
                             "run_id": r.run_id, "model": r.model, "hardware": r.hardware, "gpus": r.gpus,
                             "precision": r.precision, "layout": _layout_text(row), "measured": r.measured,
                             "source_mfu": _float_or_none(row.get("source_mfu")),
                             "measured_mfu_full": r.mfu * r.measured / r.predicted * full,
                             "predicted": r.predicted, "mfu_full": r.mfu * full})
        for r in d:
            seen[(ser, config_key(by_id.get(r.run_id, {})))] = (rel, r.measured, r.run_id)
        ratios = [r.measured / r.predicted for r in d]
        out_rel.append({
            "release": rel, "series": ser, "stacks": sorted({r.stack for r in d}),
            "date": min((r.get("date") or "").strip() for r in rr),
            "rows": len(d), "hardware": sorted({r.hardware for r in d}),
            "measured_over_predicted": float(np.exp(np.mean(np.log(ratios)))) if ratios else None,
            "mape": float(np.mean(np.abs([r.error for r in d]))) if d else None,
            "like_for_like_pairs": len(like), "like_for_like_run_ids": pairs,
            "like_for_like_speedup": float(np.exp(np.mean(np.log(like)))) if like else None,
        })
    return {"filters": {"series": series, "model": model, "hardware": hardware, "precision": precision, "gpus": gpus},
            "releases": out_rel, "rows": out_rows}


def _full_over_causal(model_id: str, seq: int) -> float:
    """MFU in the full-attention convention (DGXC recipes, older NeMo pages) over the causal one that
    validate computes: the ratio of model FLOPs per token (counts.flops_per_token)."""
    from .counts import flops_per_token
    from .model import load_model
    m = load_model(model_id)
    return float(flops_per_token(m, seq, "full")) / float(flops_per_token(m, seq, "causal"))


def _float_or_none(v: Any) -> float | None:
    try:
        return float(str(v).strip())
    except (TypeError, ValueError):
        return None


def _layout_text(row: dict) -> str:
    parts = []
    for k in ("tp", "pp", "vp", "cp", "ep"):
        v = (row.get(k) or "").strip()
        if v and v != "1":
            parts.append(f"{k}{v}")
    mbs = (row.get("micro_batch") or "").strip()
    parts.append(f"gbs{(row.get('global_batch') or '').strip()}" + (f" mbs{mbs}" if mbs else ""))
    return " ".join(parts)
