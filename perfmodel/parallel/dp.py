"""Data parallelism with the distributed optimizer (ZeRO-1, Rajbhandari et al. 2020; Megatron-Core
distributed optimizer) or FSDP (ZeRO-3: weights, gradients and optimizer sharded).

Dense parameters replicate over dp*cp and split by tp (embeddings and head too) and pp; expert parameters
split by ep*etp and pp and replicate over the expert data-parallel group edp = tp*cp*dp/(ep*etp).
Distributed optimizer: gradients reduce-scattered over dp, updated parameters all-gathered, both once per
step and overlapped with the last micro-batch's backward / first micro-batch's forward.
FSDP: parameters gathered for forward and again for backward, gradients reduce-scattered, every
micro-batch."""
from __future__ import annotations

import numpy as np

from .. import comm
from ..counts import param_counts
from ..model import ModelSpec
from ..overlap import exposed


def param_split(m: ModelSpec) -> tuple[float, float]:
    """(dense params, expert params) of the whole model, MTP modules included."""
    pc = param_counts(m)
    e, h = m.moe, m.hidden_size
    expert = 0.0
    if e:
        each = m.ffn.matrices * h * e.expert_intermediate_size
        expert = float(m.num_moe_layers * e.num_experts * each)
        if m.mtp_layers:
            expert += m.mtp_layers * e.num_experts * each
    return float(pc.total + pc.mtp_total) - expert, expert


def grad_and_param_times(p_dense, p_exp, grad_bytes, weight_bytes, dpc, edp, tp, ep, etp, hw):
    """(reduce-scatter of gradients, all-gather of parameters) seconds over dp*cp (dense: CP ranks hold the
    same weights and reduce their gradients together, Megatron-Core's data-parallel group with context
    parallelism; members tp ranks apart) and edp (experts; members ep*etp ranks apart)."""
    rs = (comm.reduce_scatter_time(p_dense * grad_bytes, dpc, tp, hw)
          + comm.reduce_scatter_time(p_exp * grad_bytes, edp, ep * etp, hw))
    ag = (comm.all_gather_time(p_dense * weight_bytes, dpc, tp, hw)
          + comm.all_gather_time(p_exp * weight_bytes, edp, ep * etp, hw))
    return rs, ag


def exposed_time(rs, ag, fsdp, stage, nmb, share):
    """Exposed DP communication per step. Distributed optimizer: the reduce-scatter hides under the last
    micro-batch's backward (2/3 of a stage time), the all-gather under the first forward (1/3); FSDP: each
    micro-batch's 2 gathers + 1 scatter hide under its stage time."""
    plain = exposed(rs, stage * 2 / 3, share) + exposed(ag, stage / 3, share)
    per_mb = nmb * exposed(2 * ag + rs, stage, share)
    return np.where(fsdp, per_mb, plain)
