"""What `perfmodel search` reports: the top layouts and the memory front over one or several GPU counts
(analysis/search.py searches), each with its 80% band (analysis/uncertainty.py), NVLink-domain flags, the ties
(search.equivalents) and the best layout per GPU count, as one JSON-ready document."""

from __future__ import annotations

import numpy as np

from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import domain_flags, domain_warning
from perfmodel.analysis.search import SearchResult, _pareto_idx, equivalents, objective_scale, why_better
from perfmodel.core.predict import Options, Prediction, predict_grid, software_of, stack_info
from perfmodel.errors import InputError
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.layout import LayoutGrid
from perfmodel.specs.model import ModelSpec


def entry(p: Prediction, i: int, value: float, rank: int | None = None) -> dict:
    row = p.row(i)
    out = {
        "layout": row.pop("layout"),
        "prediction": row,
        "objective_value": float(value),
        "memory_headroom_bytes": float(p.hbm_bytes - p.memory_bytes_per_gpu[i]),
    }
    return {"rank": rank, **out} if rank is not None else out


def combined(
    results: list[SearchResult], model, hw, opts: Options, top_k: int
) -> tuple[Prediction | None, np.ndarray, Prediction | None]:
    """Top K and memory front over several searches (a --gpus list)."""
    tops = [r.top for r in results if r.top is not None]
    if not tops:
        return None, np.zeros(0), None
    if len(results) == 1:
        return results[0].top, results[0].top_values, results[0].pareto
    vals = np.concatenate([r.top_values for r in results if r.top is not None])
    keep = np.argsort(-vals, kind="stable")[:top_k]
    top = predict_grid(model, hw, LayoutGrid.concat([t.layouts for t in tops]).take(keep), opts)
    fronts = [r.pareto for r in results if r.pareto is not None]
    fg = LayoutGrid.concat([f.layouts for f in fronts])
    thr = np.concatenate([f.tokens_per_s_per_gpu for f in fronts])
    head = np.concatenate([f.hbm_bytes - f.memory_bytes_per_gpu for f in fronts])
    front = predict_grid(model, hw, fg.take(_pareto_idx(thr, head)), opts)
    return top, vals[keep], front


def gpu_front(results: list[SearchResult]) -> list[dict]:
    """Best layout per GPU count; on the front when its cluster throughput beats every smaller count."""
    rows, best_total = [], 0.0
    base = None
    for r in results:
        if r.top is None:
            rows.append(
                {
                    "gpus": r.gpus,
                    "tokens_per_s_per_gpu": None,
                    "tokens_per_s": None,
                    "scaling_efficiency": None,
                    "pareto": False,
                    "layout": None,
                }
            )
            continue
        tps = float(r.top.tokens_per_s_per_gpu[0])
        total = tps * r.gpus
        base = base or tps
        rows.append(
            {
                "gpus": r.gpus,
                "tokens_per_s_per_gpu": tps,
                "tokens_per_s": total,
                "scaling_efficiency": tps / base,
                "pareto": total > best_total,
                "layout": r.top.row(0)["layout"],
            }
        )
        best_total = max(best_total, total)
    return rows


def search_report(
    model: ModelSpec,
    hw: HardwareSpec,
    gpus: list[int],
    gbs: int,
    seq: int,
    opts: Options,
    objective: str,
    top_k: int,
    results: list[SearchResult],
    fix: tuple[str, ...] = (),
    cap: tuple[str, ...] = (),
) -> tuple[dict, Prediction, Prediction | None, np.ndarray]:
    """(the --json document, the top layouts' prediction, the memory front's, their objective values) of the
    searches `results` (one per GPU count); an InputError when no layout is legal or none fits."""
    scale = objective_scale(hw, objective)
    top, values, front = combined(results, model, hw, opts, top_k)
    legal = sum(r.legal for r in results)
    score_s = sum(r.seconds for r in results)
    why = why_better(top, 0, top, 1) if top is not None and top.layouts.n > 1 else None
    out = {
        "model": model.id,
        "hardware": hw.id,
        "hardware_overridden": list(hw.overridden),
        "gpus": gpus if len(gpus) > 1 else gpus[0],
        "gbs": gbs,
        "seq": seq,
        "precision": opts.precision,
        "objective": objective,
        **stack_info(opts, model, hw),
        "fix": list(fix),
        "max": list(cap),
        "evaluated": sum(r.evaluated for r in results),
        "legal": legal,
        "fits": sum(r.fits for r in results),
        "seconds": sum(r.seconds for r in results),
        "layouts_per_s": legal / score_s if score_s > 0 else None,
        "top": [entry(top, i, values[i], i + 1) for i in range(top.layouts.n)] if top is not None else [],
        "why_winner": why,
        "pareto_memory": [entry(front, i, float(front.tokens_per_s_per_gpu[i]) * scale) for i in range(front.layouts.n)]
        if front is not None
        else [],
    }
    # 80% band from validation spread (perfmodel/analysis/uncertainty.py); the unseen-stack band depends on the layout's vp
    bands = [uncertainty.band_for(model, hw, opts.stack, int(e["layout"]["vp"])) for e in out["top"]]
    out["band"] = (bands[0] if bands else uncertainty.band_for(model, hw, opts.stack)).to_dict()
    for e, band in zip(out["top"], bands):
        e["band"] = band.to_dict()
        pr = e["prediction"]
        for key, lo_hi in (
            ("tokens_per_s_per_gpu", band.throughput(pr["tokens_per_s_per_gpu"])),
            ("step_time_s", band.inverse(pr["step_time_s"])),
            ("mfu", band.throughput(pr["mfu"])),
        ):
            uncertainty.with_band(e, key, lo_hi)
    for e in out["top"]:
        e["leaves_nvlink_domain"] = domain_flags(hw, e["layout"])
    out["equivalent"] = equivalents(values, [e["layout"] for e in out["top"]], bands[0].low) if out["top"] else None
    if out["top"]:
        pick = out["top"][(out["equivalent"] or {"suggestion": 1})["suggestion"] - 1]["layout"]
        dom = domain_warning(hw, pick, software_of(model, hw, opts).tp_overlap_scale_up)
        out["suggestion_warning"] = f"suggested layout: {dom}" if dom else None
    if len(gpus) > 1:
        out["by_gpus"] = [
            {"gpus": r.gpus, "evaluated": r.evaluated, "legal": r.legal, "fits": r.fits, "seconds": r.seconds}
            for r in results
        ]
        out["pareto_gpus"] = gpu_front(results)
    if top is None:  # nothing usable: exit 2 with the real reason
        cons = [f"--fix {x}" for x in out.get("fix", [])] + [f"--max {x}" for x in out.get("max", [])]
        if out["legal"] == 0:
            raise InputError(
                "search",
                "",
                f"no legal layout of {out['model']} on {out['gpus']} GPUs with gbs {out['gbs']}, seq "
                f"{out['seq']}"
                + (f" and {' '.join(cons)}" if cons else "")
                + " (no combination of tp, pp, cp, dp and the batch divides; try another GPU count or batch)",
            )
        raise InputError(
            "search",
            "",
            f"none of the {out['legal']:,} legal layouts fits in HBM on {out['hardware']} "
            "(try more GPUs, recompute, or a smaller micro-batch)",
        )
    return out, top, front, values
