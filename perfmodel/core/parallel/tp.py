"""Tensor parallelism with sequence parallelism (Shoeybi et al. 2019 §3; Korthikanti et al. 2022 §4.2.2).

Each attention or MLP block all-gathers its sequence-sharded input before the column-parallel GEMM and
reduce-scatters the row-parallel GEMM's output after it: two collectives of the block's full activation
(tokens x hidden, bf16) in forward, and the same two, mirrored, in backward. An all-gather and a
reduce-scatter of the same buffer cost the same (nccl-tests bus-bandwidth convention, (n-1)/n).

Megatron-Core's and Transformer Engine's column-parallel linear run part of the backward asynchronously
(stack feature tp_bwd_async; Megatron-Core tensor_parallel/layers.py
LinearWithGradAccumulationAndAsyncCommunication.backward, TE Linear / LayerNormLinear "overlap dgrad-RS/AR
with wgrad"): with sequence parallelism the input all-gather wgrad needs is launched (async_op=True) before
the dgrad GEMM and the dgrad reduce-scatter before the wgrad GEMM (CUDA_DEVICE_MAX_CONNECTIONS=1 orders
them on the GPU); without it the dgrad all-reduce runs under the wgrad GEMM. Only the row-parallel output
gradient's all-gather (sequence parallelism) stays on the critical path. `backward_pair` splits a block's
backward that way (`tp_pair_calls`); the asynchronous part is exposed only where it outlasts the column-
parallel GEMM's backward (cost.price_layer).
"""

from __future__ import annotations

from dataclasses import replace

from perfmodel.core.ops import Collective


def sequence_parallel_pair(name: str, nbytes, tp, calls_fwd: float = 2, calls_bwd: float = 2) -> Collective:
    """All-gather + reduce-scatter of `nbytes` (the gathered buffer) over the TP group (stride 1: TP is the
    innermost rank, Megatron-Core order tp-cp-ep-dp-pp)."""
    return Collective(name, "tp", "all_gather", nbytes, tp, 1, calls_fwd, calls_bwd)


def tp_pair_calls(sw) -> tuple[float, float]:
    """(synchronous backward calls of a block's TP pair, asynchronous ones) under stack `sw`: without
    tp_bwd_async both backward collectives are synchronous (2, 0); with it, sequence parallelism keeps the
    output gradient's all-gather (1, 2: the input re-gather and the dgrad reduce-scatter under the column-
    parallel GEMM's dgrad and wgrad), and the all-reduce of plain TP runs entirely under wgrad (0, 2: an
    all-reduce moves the bytes of an all-gather + reduce-scatter pair)."""
    if not sw.tp_bwd_async:
        return 2.0, 0.0
    return (1.0 if sw.sequence_parallel else 0.0), 2.0


def block_pair(name: str, nbytes, tp, sw, column: tuple[str, ...]) -> list[Collective]:
    """One TP block's collectives (attention or MLP): the pair in forward, its backward split into the
    synchronous part and the part that runs under the backward of the block's column-parallel GEMMs
    `column` (tp_pair_calls)."""
    sync, asynchronous = tp_pair_calls(sw)
    pair = sequence_parallel_pair(name, nbytes, tp, 2, sync)
    if not asynchronous:
        return [pair]
    return [
        pair,
        replace(
            pair,
            name=f"{name} (backward, async under the column-parallel dgrad / wgrad)",
            overlap="tp_async",
            calls_fwd=0,
            calls_bwd=asynchronous,
            window=column,
        ),
    ]
