"""Tensor parallelism with sequence parallelism (Shoeybi et al. 2019 §3; Korthikanti et al. 2022 §4.2.2).

Each attention or MLP block all-gathers its sequence-sharded input before the column-parallel GEMM and
reduce-scatters the row-parallel GEMM's output after it: two collectives of the block's full activation
(tokens x hidden, bf16) in forward, and the same two, mirrored, in backward. An all-gather and a
reduce-scatter of the same buffer cost the same (nccl-tests bus-bandwidth convention, (n-1)/n).
"""
from __future__ import annotations

from .. import comm
from ..ops import Collective


def sequence_parallel_pair(name: str, nbytes, tp, calls_fwd: float = 2, calls_bwd: float = 2) -> Collective:
    """All-gather + reduce-scatter of `nbytes` (the gathered buffer) over the TP group (stride 1: TP is the
    innermost rank, Megatron-Core order tp-cp-ep-dp-pp)."""
    return Collective(name, "tp", lambda hw: comm.all_gather_time(nbytes, tp, 1, hw), calls_fwd, calls_bwd)
