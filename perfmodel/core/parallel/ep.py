"""Expert parallelism (MoE parallel folding, Liu et al. 2025): experts over ep ranks, each expert's
weights over etp ranks; the token dispatch and combine all-to-alls of one MoE layer.

Dispatch and combine move the same bytes (each token copy's hidden vector, bf16); forward runs both,
backward both again (their gradients). In the folded MoE layout the expert ranks are ordered
etp-ep-edp (Megatron-Core), so EP members are etp ranks apart.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from perfmodel.core import constants as K
from perfmodel.core.ops import Collective
from perfmodel.specs.model import ModelSpec


def dispatch_combine(m: ModelSpec, token_bytes, ep, etp, dispatcher: str = "deepep") -> Collective:
    """Dispatch + combine of one MoE layer (`token_bytes` per GPU: its tokens' hidden vectors): 2 calls
    forward, 2 backward.
    - deepep / hybridep: a token crosses the NIC once per destination domain, then NVLink
      (comm.moe_dispatch_time; DeepEP internode dispatch).
    - alltoall: NCCL all-to-all of every token copy (top_k copies, no deduplication across a node).
    - allgather: every EP rank all-gathers all tokens of the group and reduce-scatters the combine
      (Megatron-Core MoEAllGatherTokenDispatcher): ep x token_bytes gathered per GPU."""
    e = m.moe
    assert e is not None
    name = f"EP dispatch + combine ({dispatcher})"
    if dispatcher == "alltoall":
        return Collective(name, "ep", "all_to_all", token_bytes * e.top_k, ep, etp, 2, 2, "moe")
    if dispatcher == "allgather":
        return Collective(name, "ep", "all_gather", token_bytes * ep, ep, etp, 2, 2, "moe")
    return Collective(
        name,
        "ep",
        "moe_dispatch",
        token_bytes,
        ep,
        etp,
        2,
        2,
        "moe",
        top_k=e.top_k,
        num_experts=e.num_experts,
        groups=e.route_groups,
        group_topk=e.route_group_topk,
    )


def expert_tp_gather(nbytes, etp) -> Collective:
    """Expert tensor parallelism: the routed tokens all-gathered before and reduce-scattered after the
    expert GEMMs over the etp group (stride 1), forward and backward; hidden by the TP overlap switch. Part of
    the MoE layer's forward, so a "moe" recompute runs it again (Megatron-Core MoELayer: the whole routed
    forward under one checkpoint), as it does the dispatch."""
    return Collective("expert TP all-gather + reduce-scatter", "tp", "all_gather", nbytes, etp, 1, 2, 2, "moe")


def a2a_solo_microbatches(pp, vp, nmb, full_recompute):
    """Micro-batches' worth of one pipeline rank's layer passes (forward + backward) whose EP all-to-all the
    stack's overlap (Megatron-Core overlap_moe_expert_parallel_comm) cannot hide. The overlap is the combined
    1F1B schedule: the forward of one micro-batch runs beside the backward of another, each one's dispatch
    and combine hidden under the other's compute, so a pass with no partner is exposed:
    - pp = 1 (pipeline_parallel/combined_1f1b.py combined_1f1b_schedule_for_no_pipelining: "The forward step
      for the first microbatch is executed alone, no a2a overlapping" ... "The backward step for the last
      microbatch is executed alone"): the first forward and the last backward, one micro-batch's worth.
    - pp > 1 with interleaving (schedules.py get_pp_rank_microbatches): rank r runs
      W_r = 2 (pp - r - 1) + (vp - 1) pp + 1 warm-up forwards alone ("we schedule one extra micro-batch forward
      step before the 1f1b stages") and as many cool-down backwards, each over one of its vp chunks: W_r / vp
      micro-batches' worth, at most nmb (microbatch_group_size_per_vp_stage at its default pp); the mean rank.
    - pp > 1 without interleaving, or full recompute: no overlap (transformer_config.py __post_init__: "If
      enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when
      pipeline_model_parallel_size > 1"; "disable full recomputation when enabling
      overlap_moe_expert_parallel_comm"): every micro-batch, nmb."""
    pp, vp, nmb = (np.asarray(x, dtype=float) for x in (pp, vp, nmb))
    # sum over ranks of min(A, c + 2 j), j = pp - r - 1 = 0 .. pp - 1, with c = (vp - 1) pp + 1 and the cap
    # A = nmb vp: the first J terms are under the cap, J = clip(floor((A - c) / 2) + 1, 0, pp)
    c, cap = (vp - 1) * pp + 1, nmb * vp
    J = np.clip(np.floor((cap - c) / 2) + 1, 0, pp)
    mean_w = (J * c + J * (J - 1) + (pp - J) * cap) / pp / vp
    solo = np.where(pp == 1, 1.0, np.where(vp > 1, mean_w, nmb))
    return np.minimum(np.where(full_recompute, nmb, solo), nmb)


def _expected_max(n: float) -> float:
    """Expected largest of n standard normal draws, Blom's approximation Phi^-1((n - 0.375) / (n + 0.25))
    (Blom 1958, Statistical Estimates and Transformed Beta-Variables); 0 for one draw."""
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25)) if n > 1 else 0.0


def routing_imbalance(m: ModelSpec, ep, balancing: str):
    """Busiest EP rank's routed tokens over the mean under real (not force-balanced) routing, per layout: a rank
    holds n = E / ep experts whose loads scatter with a coefficient of variation sigma (constants.ROUTING_CV, by
    the stack's load-balancing method, measured); the busiest of ep ranks carries 1 + sigma x E[max of ep
    normals] / sqrt(n) of the mean (a sum of n independent loads). One rank (ep = 1) has no busier peer: 1; a
    stack that does not state its balancing (unstated) prices none."""
    e = m.moe
    ep = np.asarray(ep, dtype=float)
    if e is None or balancing == "unstated":
        return np.ones_like(ep)
    sigma = K.ROUTING_CV[balancing]
    z = np.vectorize(_expected_max, otypes=[float])(ep)
    return 1.0 + sigma * z / np.sqrt(e.num_experts / np.maximum(ep, 1.0))
