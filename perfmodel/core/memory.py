"""Memory per GPU on the fullest pipeline rank (every distinct rank is checked: parallel/pp.memory_ranks), from
the same op records the time model prices.

- weights BF16 (2 B/param; FP8 recipes 1 B), BF16 gradients (2 B), Adam FP32 master + two moments (12 B) sharded
  over the data-parallel group by the distributed optimizer (Rajbhandari et al. 2020, ZeRO-1;
  Megatron-Core distributed optimizer); FSDP also shards weights and gradients (ZeRO-3).
- activations per layer: the `Saved` records of the workload (Korthikanti et al. 2022 §4, Table 2, with
  flash attention: no s^2 score term), less the modules the recompute policy drops; full recompute keeps
  only each layer's input.
- in-flight micro-batches from the schedule (parallel/pp.py `in_flight`); activation CPU offloading
  (pp = 1, no recompute) moves the saved activations of `cpu_offload_layers` layers to host memory.
- dummy weight gradients (Megatron-Core + Transformer Engine, gradient-accumulation fusion): the wgrad GEMM
  accumulates into the fp32 main_grad and hands autograd a bf16 dummy of the weight's shape, one buffer per
  distinct shape cached for the whole run (TE transformer_engine/pytorch/module/base.py get_dummy_wgrad,
  `_dummy_wgrads`; Megatron megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsync-
  Communication.backward for the output layer: "get_dummy_wgrad function in TE enables reuse of single dummy
  wgrad buffer across different layers/microbatches"): 2 B x each distinct GEMM weight on the rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.core import constants as K
from perfmodel.core.elementwise import select
from perfmodel.core.ops import Workload
from perfmodel.core.parallel import dp as dp_par
from perfmodel.core.parallel import pp as pp_par
from perfmodel.core.parallel import recompute
from perfmodel.core.parallel.recompute import FULL, NONE, SELECTIVE, dropped


def weight_bytes(precision: str, fp8_param_gather: bool = True) -> float:
    """Bytes per model weight held on the GPU: BF16, or the FP8 copy under fp8_param_gather (NeMo /
    Megatron-Bridge FP8 recipes); FP32 master weights live in the optimizer."""
    return K.FP8 if precision not in ("bf16", "fp16") and fp8_param_gather else K.BF16


def layer_activation_bytes(
    layer, rec, modules: tuple[str, ...] = ("core_attn",), gather=lambda x: x, layer_share: float = 0.0
):
    """(kept, full) saved bytes of one layer for one micro-batch under recompute policy `rec` (array);
    selective recompute drops the saved activations of `modules` (parallel/recompute.py); the records only
    op-level SAC keeps (workload.SAC_SAVED: the outputs its save list caches) count under selective alone.
    `layer_share` > 0: per-layer SAC (stack selective_ac = layer), that share of the layers fully checkpointed
    (their input kept), the rest keeping everything (recompute.layer_share). `gather` maps the layer's arrays (a
    workload built on the distinct layer-axis combinations) to the layouts of `rec`."""
    from perfmodel.core.workload import SAC_SAVED

    gone = dropped(modules)
    full = gather(sum(s.nbytes for s in layer.saved if s.module != SAC_SAVED))
    only_input = gather(sum(s.nbytes for s in layer.saved if s.module == "input"))
    if layer_share:
        selective = layer_share * only_input + (1.0 - layer_share) * full
    else:
        selective = gather(sum(s.nbytes for s in layer.saved if s.module not in gone))
    return np.where(rec == FULL, only_input, np.where(rec == SELECTIVE, selective, full)), full


def offloads(pp, rec):
    """Where a stack that offloads activations does so: Megatron-Core's TransformerConfig refuses CPU
    offloading with pipeline parallelism ('no support for Pipeline parallelism with CPU offloading') and
    with recompute ('CPU offloading does not work when activation recomputation is enabled'), so a layout
    with pp > 1 or a recompute policy runs the stack without it."""
    return (np.asarray(pp) == 1) & (np.asarray(rec) == NONE)


def offload_kept_share(sw, pp, layers, rec=NONE):
    """Share of a rank's saved activations still in HBM under activation CPU offloading
    (Megatron-Core cpu_offloading_num_layers = n; only where `offloads`): the L - n layers kept, plus one
    offloaded layer whose device-to-host copy is in flight while the next layer runs (its buffers are freed
    when the copy ends; Transformer Engine docs, cpu_offloading: transfers are asynchronous, layer by layer)."""
    layers = np.maximum(np.asarray(layers, dtype=float), 1.0)
    n = np.minimum(float(sw.cpu_offload_layers), layers - 1)  # Megatron: 0 .. num_layers - 1
    kept = (layers - n + (n > 0)) / layers
    return np.where(offloads(pp, rec), kept, 1.0)


def dummy_wgrad_sets(w: Workload):
    """The distinct GEMM weights of workload `w` grouped by the layer kinds that hold them: (kind tuples,
    weight elements per GPU of each group, the output layer's elements). A GEMM name shared by two kinds (the
    attention projections of dense and MoE layers) is one shape; identical local experts are one buffer. The
    MoE router is a plain parameter (Megatron-Core TopKRouter, not a TE or fused-wgrad linear): autograd gets
    its real gradient, no dummy; nor do the unfused attention's QK^T and PV (module core_attn), batched
    matmuls of two activations with no weight."""
    kinds: dict[str, set[int]] = {}  # GEMM name -> the layer kinds that have it
    size: dict[str, np.ndarray] = {}
    for k, layer in enumerate(w.layers):
        for g in layer.gemms:
            if g.name != "router" and g.module != "core_attn":
                kinds.setdefault(g.name, set()).add(k)
                size[g.name] = g.N * g.K
    by_kinds: dict[tuple[int, ...], np.ndarray] = {}  # names present on the same kinds: summed before a gather
    for name, ks in kinds.items():
        key = tuple(sorted(ks))
        by_kinds[key] = by_kinds.get(key, 0.0) + size[name]
    # the last rank: the output layer, and the MTP modules' 2h -> h projection (Megatron
    # MultiTokenPredictionLayer.eh_proj, a TE column-parallel linear; one shape for all MTP modules)
    mtp = w.head.mtp_gemm
    head = sum(g.N * g.K for g in w.head.gemms) + (mtp.N * mtp.K if mtp is not None and w.head.mtp_layers else 0.0)
    return list(by_kinds), list(by_kinds.values()), head


def dummy_wgrad_on(keys, cnt) -> list[np.ndarray]:
    """Per `dummy_wgrad_sets` group, the ranks holding any of its kinds (cnt[k] > 0)."""
    return [np.logical_or.reduce([np.asarray(cnt[k]) > 0 for k in ks]) for ks in keys]


def dummy_wgrad_from(elems, head, on, last):
    """Bytes of the cached bf16 dummy weight gradients on each rank ([n, R]) from `dummy_wgrad_sets`' groups
    (`elems`, `head` already per layout) and where each group is held (`dummy_wgrad_on`): the output
    layer's on the last rank."""
    total = 0.0
    for e, o in zip(elems, on):
        total = total + np.asarray(e).reshape(-1, 1) * o
    return rank_dummies(total, last, np.asarray(head).reshape(-1, 1), K.BF16)


def dummy_wgrad_bytes(w: Workload, cnt, last, gather=lambda x: x):
    """Bytes of the cached bf16 dummy weight gradients on each rank ([n, R]): one per distinct GEMM weight
    (N x K per GPU) of the layer kinds the rank holds, and the output layer's on the last rank."""
    keys, elems, head = dummy_wgrad_sets(w)
    return dummy_wgrad_from([gather(e) for e in elems], gather(head), dummy_wgrad_on(keys, cnt), last)


@dataclass(frozen=True)
class Ranks:
    """The pipeline ranks of each layout whose memory can be the largest (parallel/pp.ranks_for_memory: column 0
    the first rank, column -1 the last) with their layers per kind and parameters per GPU ([n, Q] each): what
    memory and the step end's DP / optimizer time both read."""

    cnt: list  # layers of each kind [K][n, Q]
    rank: np.ndarray
    p_dense: np.ndarray  # dense parameters per GPU (split by tp)
    p_exp: np.ndarray  # expert parameters per GPU (split by ep x etp)


def ranks_of(w: Workload, grid, sw) -> Ranks:
    """The candidate ranks of every layout of `grid` and their parameters per GPU (parallel/dp.rank_params)."""
    m = w.model
    f64 = lambda x: np.asarray(x, dtype=float)
    cnt, rank = pp_par.ranks_for_memory(
        w.layer_kinds, len(w.layers), grid.pp, grid.vp, m.mtp_layers, sw.pipeline_layout, sw.schedule
    )
    p_dense, p_exp = dp_par.rank_params(m, w, cnt, rank, f64(grid.pp)[:, None], sw.schedule)
    return Ranks(cnt, rank, p_dense / f64(grid.tp)[:, None], p_exp / (f64(grid.ep) * f64(grid.etp))[:, None])


# ---- one rank's memory, elementwise (core/elementwise.py): the planner's compiled loop runs the same ----------


def rank_state(params, shard, opt_group, fsdp, per_microbatch, shards_grads, wb, gb, adam):
    """(weights, gradients, optimizer) bytes of one rank holding `params` parameters per GPU, `shard` of them its
    FSDP shard and `opt_group` its optimizer sharding's share without FSDP (dp.optimizer_shard). FSDP gathering
    once per step keeps the gathered parameters and unsharded gradients to the step's end."""
    sharded = fsdp & per_microbatch
    weights = select(sharded, shard * wb, params * wb)
    grads = select(sharded | shards_grads, shard * gb, params * gb)
    return weights, grads, adam * select(fsdp, shard, opt_group)


def rank_activations(held, in_flight, kept_share, last, mtp_bytes, rec_full, full_layer, first, embed_bytes):
    """Activation bytes of one rank: its layers' saved bytes per micro-batch x the micro-batches in flight x the
    share activation offloading keeps in HBM; the MTP blocks' on the last rank (one micro-batch); while a layer is
    recomputed (`rec_full`: recompute.transient) one layer's full activations live again; the embedding output on
    the first rank."""
    a = held * in_flight * kept_share
    a = a + select(last, mtp_bytes, 0.0)
    a = a + select(rec_full, full_layer, 0.0)
    return a + select(first, embed_bytes, 0.0)


def rank_logits(last, logit_bytes, tokens, vocab, tp):
    """The logits on the last rank while its loss runs backward: fp32 logits and their fp32 gradient, or with
    Transformer Engine's fused cross-entropy only the bf16 logits, the gradient written into them in place
    (transformer_engine/pytorch/cross_entropy.py: saves _input, backward returns it overwritten)."""
    return select(last, logit_bytes * tokens * vocab / tp, 0.0)


def rank_dummies(weight_elements, last, head_elements, bf16):
    """Bytes of the cached bf16 dummy weight gradients (dummy_wgrad_sets): the weights the rank holds, the output
    layer's on the last rank."""
    return bf16 * (weight_elements + select(last, head_elements, 0.0))


def rank_held(weights, grads, dummies, optim):
    """The bytes of one rank that do not depend on the recompute policy: its weights, gradients, dummy weight
    gradients and optimizer state, summed in this order (rank_total adds the rest)."""
    return weights + grads + dummies + optim


def rank_total(held, activations, logits, reserved):
    """One rank's bytes per GPU: rank_held's, then its activations, logits and the reserve, in this order."""
    return held + activations + logits + reserved


TAIL_FUNCTIONS = (rank_state, rank_activations, rank_logits, rank_dummies, rank_held, rank_total)


def memory_per_gpu(w: Workload, grid, precision: str, sw, c, nmb, ranks: Ranks | None = None, gather=lambda x: x):
    """Memory parts of the fullest candidate rank of each layout (ranks_of; computed here when not given), and
    the first, fullest and last rank's totals. Dense parameters replicate over dp * cp, the group the
    distributed optimizer and FSDP shard them over (Megatron-Core builds its gradient buffers on the
    data-parallel group with context parallelism); expert parameters over the expert data-parallel group edp."""
    m = w.model
    r = ranks_of(w, grid, sw) if ranks is None else ranks
    cnt, rank = r.cnt, r.rank
    col = lambda x: np.asarray(x, dtype=float).reshape(-1, 1) * np.ones((grid.n, 1))
    tp, pp, vp, cp = (col(x) for x in (grid.tp, grid.pp, grid.vp, grid.cp))
    dpc, edp = col(np.asarray(grid.dp, dtype=float) * np.asarray(grid.cp, dtype=float)), col(grid.edp)
    fsdp, rec = grid.fsdp[:, None], grid.recompute
    # hybrid sharding (HSDP) shards the dense parameters over its group only (parallel/dp.shard_group)
    shard = dp_par.optimizer_shard(r.p_dense, r.p_exp, dpc, edp, cp, True, sw)
    opt_group = dp_par.optimizer_shard(r.p_dense, r.p_exp, dpc, edp, cp, False, sw)
    wb = weight_bytes(precision, sw.fp8_param_gather)
    weights, grads, optim = rank_state(
        r.p_dense + r.p_exp,
        shard,
        opt_group,
        fsdp,
        dp_par.gathers_per_microbatch(sw.fsdp_per_microbatch, sw.fsdp_pp_per_step, pp),
        sw.shards_grads,
        wb + sw.param_extra_bytes,  # under torch.autocast: the fp32 parameter and its saved bf16 copy
        sw.grad_bytes + sw.lp_grad_bytes,  # DeepSpeed BF16_Optimizer: its bf16 gradients beside the fp32 buffer
        sw.adam_bytes,
    )
    held = 0.0
    full_layer = 0.0
    share = recompute.layer_share(sw, m.num_layers)
    for k, layer in enumerate(w.layers):
        kept, full = layer_activation_bytes(layer, rec, sw.recompute_modules, gather, share)
        held = held + cnt[k] * col(kept)
        full_layer = np.maximum(full_layer, col(full))
    last = rank == pp - 1
    mtp = 0.0
    if w.head.mtp_layers:  # MTP blocks on the last rank: one layer of the last kind each, one micro-batch
        mtp = w.head.mtp_layers * col(layer_activation_bytes(w.layers[-1], rec, sw.recompute_modules, gather, share)[0])
    activations = rank_activations(
        held,
        pp_par.in_flight(pp, vp, col(nmb), rank, sw.schedule),
        offload_kept_share(sw, pp, sum(cnt), col(rec)),
        last,
        mtp,
        recompute.transient(col(rec), sw),
        full_layer,
        rank == 0,
        K.BF16 * m.hidden_size * col(gather(w.Ts)),
    )
    parts = {
        "weights": weights,
        "gradients": grads,
        "dummy_wgrads": dummy_wgrad_bytes(w, cnt, last, gather) if sw.dummy_wgrad else 0.0 * rank,
        "optimizer": optim,
        "activations": activations,
        "logits": rank_logits(last, sw.logit_bytes, col(gather(w.T)), m.vocab_size, tp),
        "reserved": c.reserved_bytes + 0 * rank,
    }
    parts = {k: np.broadcast_to(v, rank.shape) for k, v in parts.items()}
    p = parts
    total = rank_total(
        rank_held(p["weights"], p["gradients"], p["dummy_wgrads"], p["optimizer"]),
        p["activations"],
        p["logits"],
        p["reserved"],
    )
    fullest = np.argmax(total, axis=1)[:, None]
    pick = lambda a: np.take_along_axis(a, fullest, axis=1)[:, 0]
    # the first, the fullest and the last pipeline rank (columns 0 and -1 are the first and last rank,
    # parallel/pp.memory_rank_table), and which rank is the fullest
    stages = {"first": total[:, 0], "fullest": pick(total), "last": total[:, -1], "fullest_rank": pick(rank)}
    return {k: pick(v) for k, v in parts.items()}, stages
