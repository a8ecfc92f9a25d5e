"""The planner against the experts' hand-tuned layouts (`perfmodel recipes`; validation/runs.csv by default).

For every row: search the same (model, hardware, GPUs, global batch, sequence, precision, routing),
find where the recipe's layout ranks among the planner's fitting candidates (1 + the number predicted
strictly faster), and compare the planner's best with the recipe in predicted tokens/s/GPU. Summary:
the share of recipes that the planner's top-K contains or beats, and every row where the two differ
by more than a threshold, with the breakdown term that makes the difference.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from perfmodel.analysis.search import SearchResult, describe_why, illegal, search, why_better
from perfmodel.analysis.validate import has_selective, row_inputs
from perfmodel.core.predict import Options, predict_grid
from perfmodel.errors import InputError, cli_message
from perfmodel.specs.layout import Layout, LayoutGrid


@dataclass(frozen=True)
class RecipeCheck:
    run_id: str
    model: str
    hardware: str
    gpus: int
    precision: str
    recipe: dict  # the recipe's layout
    best: dict | None  # the planner's best layout
    recipe_tps: float  # predicted tokens/s/GPU of the recipe
    best_tps: float | None  # ... of the planner's best
    gap: float | None  # best / recipe - 1 (> 0: the planner predicts a faster layout)
    rank: int  # recipe among the planner's fitting candidates (1 = best)
    candidates: int  # fitting candidates ranked
    in_space: bool  # the recipe is one of the planner's candidates
    recipe_fits: bool  # the model predicts the recipe fits in HBM
    contained_or_beaten: bool  # top-K holds the recipe, or its best is at least as fast
    reason: str  # why the best beats the recipe (or the other way)


def _key(model, hw, lay, opts) -> tuple:
    return (model.id, hw.id, lay.gpus, lay.gbs, lay.seq, opts.precision, opts.routing, opts.stack, opts.stack_set)


def fill_unpublished(model, hw, lay: Layout, opts: Options, row: dict) -> tuple[Layout, str]:
    """A recipe whose recompute or FSDP column is empty (not published) gets the fastest choice that the
    model predicts to fit, so an unknown switch is not read as 'off' (validate.row_inputs does that).
    Returns the layout and the names of the fields filled ('' when none)."""
    free = [k for k in ("recompute", "fsdp") if not (row.get(k) or "").strip()]
    if not free:
        return lay, ""
    # selective only where the stack names its modules (predict.check_recompute refuses it otherwise)
    rec = ("none", "selective", "full") if has_selective(model, hw, opts) else ("none", "full")
    options = {"recompute": rec, "fsdp": (False, True)}
    variants = [lay]
    for k in free:
        variants = [replace(v, **{k: o}) for v in variants for o in options[k]]
    p = predict_grid(model, hw, LayoutGrid.from_layouts(variants), opts)
    if not p.fits.any():
        return lay, ""
    best = int(np.argmax(np.where(p.fits, p.tokens_per_s_per_gpu, -np.inf)))
    return variants[best], " and ".join(free)


def check_rows(
    rows: list[dict],
    base: Path,
    top_k: int = 10,
    progress=None,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> tuple[list[RecipeCheck], list[dict], float]:
    """Compare every row, each with its own stack (validate.row_inputs), or with `stack` / `stack_set` for
    every row when given; rows the model cannot take go to the second list with the reason."""
    t0 = time.perf_counter()
    cache: dict[tuple, SearchResult] = {}
    specs: dict = {}  # each model / hardware cell loaded once (validate.row_inputs)
    out, skipped = [], []
    for n, row in enumerate(rows):
        rid = (row.get("run_id") or f"row{n + 2}").strip()
        try:
            model, hw, lay, opts = row_inputs(row, base, specs)
            if stack is not None or stack_set:
                opts = replace(
                    opts,
                    stack=stack if stack is not None else opts.stack,
                    stack_set=(opts.stack_set if stack is None else ()) + tuple(stack_set),
                )
        except (InputError, ValueError, KeyError) as exc:
            skipped.append({"run_id": rid, "reason": cli_message(exc)})
            continue
        key = _key(model, hw, lay, opts)
        if key not in cache:
            cache[key] = search(model, hw, lay.gpus, lay.gbs, lay.seq, opts, "throughput", top_k, keep_scores=True)
        r = cache[key]
        lay, filled = fill_unpublished(model, hw, lay, opts, row)
        grid = LayoutGrid.of(lay)
        rec = predict_grid(model, hw, grid, opts)
        rtps = float(rec.tokens_per_s_per_gpu[0])
        fits = bool(rec.fits[0])
        in_space = r.space.contains(lay) and not bool(illegal(model, grid)[0])
        rank = r.rank_of(rtps)
        best_tps = float(r.top.tokens_per_s_per_gpu[0]) if r.top is not None else None
        if r.top is not None:
            beats = best_tps >= rtps * (1 - 1e-9) or (in_space and fits and rank <= top_k)
            w = why_better(r.top, 0, rec, 0) if best_tps >= rtps else why_better(rec, 0, r.top, 0)
            reason = ("planner: " if best_tps >= rtps else "recipe: ") + describe_why(w)
        else:
            beats, reason = False, "no candidate fits in memory"
        if not fits:
            reason = (
                f"recipe predicted not to fit ({rec.memory_bytes_per_gpu[0] / 1e9:.0f} GB > "
                f"{rec.hbm_bytes / 1e9:.0f} GB); " + reason
            )
        if not in_space:
            reason = "recipe outside the planner's space; " + reason
        if filled:
            reason = f"unpublished {filled} filled with the fastest that fits; " + reason
        out.append(
            RecipeCheck(
                rid,
                model.id,
                hw.id,
                lay.gpus,
                opts.precision,
                rec.row(0)["layout"],
                r.top.row(0)["layout"] if r.top is not None else None,
                rtps,
                best_tps,
                best_tps / rtps - 1 if best_tps else None,
                rank,
                r.fits,
                in_space,
                fits,
                beats,
                reason,
            )
        )
        if progress:
            progress(n + 1, len(rows))
    return out, skipped, time.perf_counter() - t0


def summary(
    checks: list[RecipeCheck],
    top_k: int,
    threshold: float,
    *,
    seconds: float = 0.0,
    skipped: int = 0,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> dict:
    """What `recipes` reports of `checks`: how often the planner's top-`top_k` contains or beats the recipe, the
    disagreements over `threshold`, and the run (its seconds, rows skipped, the stack the rows ran with)."""
    n = len(checks)
    disagree = [c for c in checks if c.gap is None or abs(c.gap) > threshold]
    return {
        "rows": n,
        "top_k": top_k,
        "contained_or_beaten": sum(c.contained_or_beaten for c in checks),
        "share_contained_or_beaten": sum(c.contained_or_beaten for c in checks) / n if n else None,
        "recipe_in_top_k": sum(c.in_space and c.recipe_fits and c.rank <= top_k for c in checks),
        "recipe_rank_1": sum(c.in_space and c.recipe_fits and c.rank == 1 for c in checks),
        "recipe_outside_space": sum(not c.in_space for c in checks),
        "recipe_predicted_oom": sum(not c.recipe_fits for c in checks),
        "median_gap": sorted(c.gap for c in checks if c.gap is not None)[n // 2] if n else None,
        "threshold": threshold,
        "disagreements": len(disagree),
        "planner_faster": sum(1 for c in disagree if c.gap is not None and c.gap > threshold),
        "recipe_faster": sum(1 for c in disagree if c.gap is not None and c.gap < -threshold),
        "seconds": seconds,
        "skipped": skipped,
        "stack": stack
        if stack is not None
        else ("each row's own" if not stack_set else "each row's own + --stack-set"),
        "stack_set": list(stack_set),
    }


def disagreements(checks: list[RecipeCheck], threshold: float) -> list[RecipeCheck]:
    """The checks whose gap exceeds `threshold` (or that have none), largest first."""
    return sorted((c for c in checks if c.gap is None or abs(c.gap) > threshold), key=lambda c: -(abs(c.gap or 0)))
