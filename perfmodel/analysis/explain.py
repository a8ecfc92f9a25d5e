"""What limits a predicted run and what would speed it up, read from its step breakdown (core/predict.py
BREAKDOWN, the one vocabulary of the terms). One module for the rules every command states:

- `limit` (size: "limited by"): "memory" when fewer than MEMORY_FIT_SHARE of the legal layouts fit in HBM, else
  the largest term beyond the kernels' work (`overhead_terms`): the pipeline bubble means the batch is too small
  for the cluster, the *_comm terms communication, recompute memory; "compute" when that term is under
  COMPUTE_BOUND_OVERHEAD of the step.
- `likely_cause` (validate: a run measured far below its prediction): the largest overhead when it reaches
  CAUSE_SHARE of the step, else the kernel class where slower kernels than modelled would lose most.
- `overheads` (check): every term beyond the tensor-core work, largest first, with the throughput without it.
- `hidden_by` (predict's breakdown): the overlap assumption that hides each communication's raw time.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfmodel.core.predict import BREAKDOWN, KERNEL_TERMS
from perfmodel.core.software import Software
from perfmodel.specs.layout import Layout

MEMORY_FIT_SHARE = 0.05  # below this share of legal layouts fitting in HBM, memory is the limit
COMPUTE_BOUND_OVERHEAD = 0.05  # largest non-compute term under this share of the step: compute-bound
CAUSE_SHARE = 0.10  # an overhead at least this share of the step is where a slow run most likely lost time


def overhead_terms(b: Mapping[str, float]) -> dict[str, float]:
    """The terms of a breakdown beyond the kernels' own work (KERNEL_TERMS), exposed seconds (no `_raw` key)."""
    return {k: v for k, v in b.items() if k not in KERNEL_TERMS and not k.endswith("_raw")}


def limit(b: Mapping[str, float], step: float, fits_share: float) -> dict[str, Any]:
    """What limits a run whose best layout has breakdown `b` and step `step`, `fits_share` of the legal layouts
    fitting in HBM (see the module docstring)."""
    other = overhead_terms(b)
    term = max(other, key=lambda k: other[k])
    share = other[term] / step
    compute = sum(b[k] for k in KERNEL_TERMS if k in b) / step
    overhead = f"{BREAKDOWN[term].short} {share:.0%}"
    if fits_share < MEMORY_FIT_SHARE:
        what, text = "memory", f"memory: {fits_share:.1%} of legal layouts fit in HBM (largest overhead: {overhead})"
    elif share < COMPUTE_BOUND_OVERHEAD:
        what, text = "compute", f"compute: kernels {compute:.0%} of the step (largest overhead: {overhead})"
    else:
        what = BREAKDOWN[term].limit
        text = f"{what}: {overhead} of the step (kernels {compute:.0%})"
    return {
        "limit": what,
        "term": term,
        "term_share": share,
        "compute_share": compute,
        "fits_share": fits_share,
        "text": text,
    }


def likely_cause(b: Mapping[str, float], step: float) -> str:
    """Where a run slower than predicted most likely lost time. When no overhead reaches CAUSE_SHARE of the
    predicted step, the step is kernel-bound and the loss is in kernel efficiency (shapes, fusion,
    unsupported features such as attention sinks), so name the largest kernel class instead."""
    comm = overhead_terms(b)  # exposed: raw (before overlap) left out
    k = max(comm, key=comm.get)  # type: ignore[arg-type]
    if comm[k] >= CAUSE_SHARE * step:
        return f"largest overhead in the prediction: {k} ({comm[k] / step:.0%} of the step)"
    kern = max(KERNEL_TERMS, key=lambda n: b.get(n, 0.0))
    return (
        f"kernel-bound prediction (no overhead above 10%): slower kernels than modelled, "
        f"most likely {kern} ({b.get(kern, 0.0) / step:.0%} of the step)"
    )


def overheads(b: Mapping[str, float], step: float, lay: Layout) -> list[dict[str, Any]]:
    """Where the predicted step of `lay` spends time beyond the tensor-core work, largest first, each with the
    throughput the run would have without it. The bubble names the layout's own micro-batch count."""
    m = lay.gbs // (lay.dp * lay.mbs)
    tokens = lay.gbs * lay.seq
    out = []
    for k, v in b.items():
        if v <= 0 or k in ("gemm", "attention"):
            continue
        label = BREAKDOWN[k].short if k in BREAKDOWN else k
        if k == "pipeline_bubble":
            label = f"{label}: pp {lay.pp}, vp {lay.vp}, m {m}: (pp-1)/(vp m) = {(lay.pp - 1) / (lay.vp * m):.4f}"
        elif BREAKDOWN.get(k) and BREAKDOWN[k].group == "communication":
            label = f"{label}, exposed"
        out.append(
            {
                "part": k,
                "label": label,
                "seconds": v,
                "share": v / step,
                "tokens_per_s_per_gpu_without": tokens / (max(step - v, 1e-12) * lay.gpus),
            }
        )
    return sorted(out, key=lambda o: -o["seconds"])


# the stack switch and calibrated share that hide each communication kind (perfmodel/core/software.py)
HIDDEN_BY = {
    "tp_comm": ("tp_overlap", "tp_share_bwd"),
    "cp_comm": ("cp ring", "cp_share"),
    "ep_comm": ("moe_a2a_overlap", "ep_share"),
    "dp_comm": ("dp overlap", "dp_rs_share"),
    "pp_comm": ("pp p2p", "pp_share"),
}


def hidden_by(term: str, sw: Software | None = None, tp_outside: bool = False) -> str:
    """Which overlap assumption hides a communication term: the stack's switch and the share of the raw time
    it may hide (the stack's feature times the calibrated constant), e.g. 'tp_overlap x0.96'. `tp_outside`:
    the TP group leaves the NVLink domain, where a userbuffers / AsyncTP overlap hides nothing and only the
    NCCL backward launches (tp_bwd_async) hide TP time."""
    if term not in HIDDEN_BY:
        return "-"
    if term == "tp_comm" and tp_outside and sw is not None and sw.tp_overlap_scale_up:
        return "tp_bwd_async (NCCL)" if sw.tp_bwd_async else "-"
    switch, share = HIDDEN_BY[term]
    v = getattr(sw, share, None) if sw is not None else None
    return f"{switch} x{v:.2f}" if v is not None else switch
