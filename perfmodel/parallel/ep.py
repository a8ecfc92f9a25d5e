"""Expert parallelism (MoE parallel folding, Liu et al. 2025): experts over ep ranks, each expert's
weights over etp ranks; the token dispatch and combine all-to-alls of one MoE layer.

Dispatch and combine move the same bytes (each token copy's hidden vector, bf16); forward runs both,
backward both again (their gradients). In the folded MoE layout the expert ranks are ordered
etp-ep-edp (Megatron-Core), so EP members are etp ranks apart.
"""
from __future__ import annotations

from .. import comm
from ..model import ModelSpec
from ..ops import Collective


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
    if dispatcher == "alltoall":
        price = lambda hw: comm.all_to_all_time(token_bytes * e.top_k, ep, etp, hw)
    elif dispatcher == "allgather":
        price = lambda hw: comm.all_gather_time(token_bytes * ep, ep, etp, hw)
    else:
        price = lambda hw: comm.moe_dispatch_time(token_bytes, e.top_k, ep, etp, hw, e.num_experts,
                                                  e.route_groups, e.route_group_topk)
    return Collective(f"EP dispatch + combine ({dispatcher})", "ep", price, 2, 2, "moe")


def expert_tp_gather(nbytes, etp) -> Collective:
    """Expert tensor parallelism: the routed tokens all-gathered before and reduce-scattered after the
    expert GEMMs over the etp group (stride 1), forward and backward; hidden by the TP overlap switch."""
    return Collective("expert TP all-gather + reduce-scatter", "tp",
                      lambda hw: comm.all_gather_time(nbytes, etp, 1, hw), 2, 2)
