"""Software releases in the measured runs. A release is a preset of facts (stacks/*.toml,
perfmodel/specs/stack.py); nothing here is fitted.

`release_series` is the release table of `perfmodel releases`: per software release of validation/runs.csv
its rows predicted with each row's own stack (as `validate` does), and the model-free like-for-like speedup
over the previous release that ran the same configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np

# ---- releases in the measured rows --------------------------------------------------------------------


def release_of(row: dict) -> str:
    """`software` column up to the container note: 'DGXC v24.11.1 (NeMo 24.09)' -> 'DGXC v24.11.1'."""
    return (row.get("software") or "").split(" (")[0].strip()


def rows_of_release(rows: Iterable[dict], release: str) -> list[dict]:
    return [r for r in rows if release_of(r) == release]


CONFIG_COLUMNS = (
    "framework",
    "model",
    "hardware",
    "gpus",
    "precision",
    "seq_len",
    "global_batch",
    "micro_batch",
    "tp",
    "pp",
    "vp",
    "cp",
    "ep",
    "etp",
    "fsdp",
    "recompute",
    "moe_routing",
)


def config_key(row: dict) -> tuple:
    """The run's configuration without its software release (the framework kept: a MaxText row is no earlier
    NeMo release): rows with equal keys are like-for-like."""
    # fsdp: empty = not published; FSDP is opt-in in Megatron/NeMo, so empty means 0 (validation/README.md)
    return tuple((row.get(k) or "").strip() or ("0" if k == "fsdp" else "") for k in CONFIG_COLUMNS)


SERIES_PREFIX = {"DGXC": "dgxc", "NeMo": "nemo"}  # release label prefix -> series name


def series_of(release: str) -> str | None:
    """'DGXC v24.11.1' -> 'dgxc', 'NeMo 26.02.01' -> 'nemo'; papers, reports -> None."""
    head, _, ver = release.partition(" ")
    if head not in SERIES_PREFIX or not ver or not ver.lstrip("v")[:1].isdigit():
        return None
    return SERIES_PREFIX[head]


def _filter(
    rows: list[dict], model: str | None, hardware: str | None, precision: str | None, gpus: int | None
) -> list[dict]:
    want = {"model": model, "hardware": hardware, "precision": precision, "gpus": str(gpus) if gpus else None}
    return [r for r in rows if all(not v or (r.get(k) or "").strip() == v for k, v in want.items())]


def release_series(
    rows: list[dict],
    base: Path,
    series: str | None = None,
    model: str | None = None,
    hardware: str | None = None,
    precision: str | None = None,
    gpus: int | None = None,
) -> dict[str, Any]:
    """Per software release of a series (DGXC recipes, NeMo containers), by date: its rows (after the
    filters), each predicted with its own stack preset (validate's stack_for_row, or the row's `stack`
    cell), measured / predicted tokens/s/GPU (geometric mean), MAPE, and the like-for-like measured speedup
    over the previous release of the series that ran the same configuration (config_key: model, hardware,
    GPUs, precision, batch, layout); and every row (MFU in the full-attention convention the DGXC recipes use)."""
    from perfmodel.analysis.validate import validate_rows

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
    seen: dict[tuple[str, tuple], tuple[str, float, str]] = {}  # (series, config) -> (release, measured, run_id)
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
            out_rows.append(
                {
                    "release": rel,
                    "stack": r.stack,
                    "date": (row.get("date") or "").strip(),
                    "run_id": r.run_id,
                    "model": r.model,
                    "hardware": r.hardware,
                    "gpus": r.gpus,
                    "precision": r.precision,
                    "layout": _layout_text(row),
                    "measured": r.measured,
                    "source_mfu": _float_or_none(row.get("source_mfu")),
                    "measured_mfu_full": r.mfu * r.measured / r.predicted * full,
                    "predicted": r.predicted,
                    "mfu_full": r.mfu * full,
                }
            )
        for r in d:
            seen[(ser, config_key(by_id.get(r.run_id, {})))] = (rel, r.measured, r.run_id)
        ratios = [r.measured / r.predicted for r in d]
        out_rel.append(
            {
                "release": rel,
                "series": ser,
                "stacks": sorted({r.stack for r in d}),
                "date": min((r.get("date") or "").strip() for r in rr),
                "rows": len(d),
                "hardware": sorted({r.hardware for r in d}),
                "measured_over_predicted": float(np.exp(np.mean(np.log(ratios)))) if ratios else None,
                "mape": float(np.mean(np.abs([r.error for r in d]))) if d else None,
                "like_for_like_pairs": len(like),
                "like_for_like_run_ids": pairs,
                "like_for_like_speedup": float(np.exp(np.mean(np.log(like)))) if like else None,
            }
        )
    return {
        "filters": {"series": series, "model": model, "hardware": hardware, "precision": precision, "gpus": gpus},
        "releases": out_rel,
        "rows": out_rows,
    }


def main_stacks(series: dict[str, Any]) -> dict[str, str]:
    """Per release of a release_series: the stack preset most of its rows ran ('-' for none)."""
    count: dict[tuple[str, str], int] = {}
    for x in series["rows"]:
        count[(x["release"], x["stack"])] = count.get((x["release"], x["stack"]), 0) + 1
    return {
        r["release"]: max(r["stacks"], key=lambda sid: count.get((r["release"], sid), 0)) if r["stacks"] else "-"
        for r in series["releases"]
    }


def software_story(series: dict[str, Any]) -> tuple[tuple, list[tuple[str, str, float]]] | None:
    """One configuration (model, hardware, GPUs, precision) across time: (the configuration, every release's
    (date, release, measured MFU with full attention), oldest first); None when the rows span several
    configurations or fewer than two releases."""
    pts = sorted((r["date"], r["release"], r["measured_mfu_full"]) for r in series["rows"])
    cfgs = {(r["model"], r["hardware"], r["gpus"], r["precision"]) for r in series["rows"]}
    if len(pts) < 2 or len(cfgs) != 1:
        return None
    return next(iter(cfgs)), pts


def _full_over_causal(model_id: str, seq: int) -> float:
    """MFU in the full-attention convention (DGXC recipes, older NeMo pages) over the causal one that
    validate computes: the ratio of model FLOPs per token (counts.flops_per_token)."""
    from perfmodel.specs.counts import flops_per_token
    from perfmodel.specs.model import load_model

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
