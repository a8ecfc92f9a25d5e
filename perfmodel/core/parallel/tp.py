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

import numpy as np

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


def split_pair(
    name: str, nbytes, tp, sw, column: tuple[str, ...], row: tuple[str, ...], ag_bytes=None
) -> list[Collective]:
    """One TP block's collectives as four records (sw.split_tp): the input all-gather before the column-parallel
    GEMMs `column` (its backward: the input gradient's reduce-scatter after their dgrad) and the output
    reduce-scatter after the row-parallel GEMM `row` (its backward: the output gradient's all-gather before its
    dgrad). torchtitan's plan (PrepareModuleInput Shard(1) -> Replicate, ColwiseParallel, RowwiseParallel with
    output Shard(1); pytorch/torchtitan@9dec370ad:torchtitan/parallelisms/parallelize_llama.py apply_tp). Vanilla
    TP: plain NCCL collectives on the critical path (overlap "tp", the stack's share, none for torchtitan). AsyncTP:
    overlap "mechanism", priced by async_tp_exposed. Under op-level SAC the all-gather is re-run in backward
    (_c10d_functional.all_gather_into_tensor is not in the save list) and the reduce-scatter is kept
    (reduce_scatter_tensor is): `module` OP_SAC on the forward all-gather. `ag_bytes`: the forward all-gather's
    bytes where they differ (torchao's float8 TP styles gather the float8 input)."""
    from perfmodel.core.software import OP_SAC

    over = "mechanism" if sw.async_tp else "tp"
    ag_mod = OP_SAC if (sw.selective_ac == "op" and not sw.async_tp) else ""
    one = lambda n, f, b, win, mech, mod="", nb=nbytes: Collective(
        n, over, "all_gather", nb, tp, 1, f, b, module=mod, window=win, mechanism=mech if sw.async_tp else ""
    )
    return [
        one(f"{name}: input all-gather", 1, 0, column, "ag", ag_mod, nbytes if ag_bytes is None else ag_bytes),
        one(f"{name}: input-gradient reduce-scatter", 0, 1, column, "rs"),
        one(f"{name}: output reduce-scatter", 1, 0, row, "rs"),
        one(f"{name}: output-gradient all-gather", 0, 1, row, "ag"),
    ]


def async_tp_exposed(layer, hw, precision: str, c, tp, recomputed_ag: bool = False):
    """(forward, backward, raw forward, raw backward, forward of the all-gathers op-level SAC re-runs) seconds of a
    layer's AsyncTP collectives (overlap "mechanism", mechanism "ag" / "rs").

    Mechanism (PyTorch micro-pipeline TP: torch._inductor.config._micro_pipeline_tp, set by torchtitan with
    enable_symm_mem_for_group, pytorch/torchtitan@9dec370ad:torchtitan/parallelisms/parallelize_llama.py apply_tp;
    the fused ops torch.ops.symm_mem.fused_all_gather_matmul / fused_matmul_reduce_scatter of
    torch/distributed/_symmetric_memory, "[Distributed w/ TorchTitan] Introducing Async Tensor Parallelism in
    PyTorch", discuss.pytorch.org/t/209487, 2024): the collective is decomposed into tp - 1 peer-to-peer copies of
    one shard each, moved by the copy engines (no SMs taken from the GEMMs), and the GEMM into tp partial GEMMs
    of M / tp rows. All-gather-matmul: the local shard's partial GEMM runs first while the first remote shard
    is fetched; each further shard is fetched under the previous partial GEMM. Matmul-reduce-scatter: each
    remote rank's partial output is computed, then copied under the next partial GEMM; the local one is computed
    last; the tp partial results are then summed (one memory-bound pass: read tp x T/tp x h, write T/tp x h).
    So a copy of c = (collective seconds) / (tp - 1) hides under a partial GEMM of g = (window GEMMs) / tp, and
    exposed = (tp - 1) x max(0, c - g) + (tp x g(M/tp) - g(M), the partial GEMMs' own loss of efficiency)
    [+ the reduction]. Forward windows are the GEMMs' forward, backward windows their dgrad [M, K, N]."""
    from perfmodel.core.compute import gemm_time, memory_time

    tp = np.asarray(tp, dtype=float)
    n = np.maximum(tp, 1.0)
    by = {g.name: g for g in layer.gemms}
    out = {"f": 0.0, "b": 0.0, "rf": 0.0, "rb": 0.0, "sel": 0.0}
    for x in layer.comms:
        if x.overlap != "mechanism" or x.mechanism not in ("ag", "rs"):
            continue
        fwd = x.calls_fwd > 0
        calls = x.calls_fwd if fwd else x.calls_bwd
        t = x.price(hw)
        full = chunk = 0.0
        for name in x.window:
            g = by[name]
            prec = precision if g.low_precision else "bf16"
            a, b = (g.N, g.K) if fwd else (g.K, g.N)  # forward [M, N, K]; dgrad [M, K, N]
            full = full + g.count * gemm_time(g.M, a, b, hw, prec, c)
            chunk = chunk + g.count * gemm_time(g.M / n, a, b, hw, prec, c)
        copy = t / np.maximum(tp - 1.0, 1.0)
        e = (tp - 1.0) * np.maximum(0.0, copy - chunk) + np.maximum(0.0, tp * chunk - full)
        if x.mechanism == "rs":  # the sum of the tp partial outputs: read the gathered-size buffer, write one shard
            e = e + memory_time(x.nbytes * (1.0 + 1.0 / n), hw, 1.0, c)
        e = np.where(tp > 1, e, 0.0) * calls
        raw = np.where(tp > 1, t, 0.0) * calls
        key = "f" if fwd else "b"
        out[key] = out[key] + e
        out["r" + key] = out["r" + key] + raw
        if fwd and x.mechanism == "ag" and recomputed_ag:
            out["sel"] = out["sel"] + e
    return out["f"], out["b"], out["rf"], out["rb"], out["sel"]
