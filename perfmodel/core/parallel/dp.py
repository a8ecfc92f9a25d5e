"""Data parallelism with the distributed optimizer (ZeRO-1, Rajbhandari et al. 2020; Megatron-Core
distributed optimizer) or FSDP (ZeRO-3: weights, gradients and optimizer sharded).

Dense parameters replicate over dp*cp and split by tp (embeddings and head too) and pp; expert parameters
split by ep*etp and pp and replicate over the expert data-parallel group edp = tp*cp*dp/(ep*etp).
Distributed optimizer: gradients reduce-scattered over dp, updated parameters all-gathered, both once per
step and overlapped with the last micro-batch's backward / first micro-batch's forward.
FSDP: parameters gathered for forward and again for backward, gradients reduce-scattered, every
micro-batch. Hybrid sharding (HSDP; PyTorch FSDP HYBRID_SHARD, MaxText ici_fsdp x dcn_data): parameters,
gradients and optimizer state sharded over a group of h GPUs and replicated across the dp*cp/h groups; a
gradient reduction is the reduce-scatter inside the group followed by an all-reduce of the 1/h shard across
the replicas (Zhao et al. 2023, PyTorch FSDP, §3.2.2 hybrid sharding: gradients reduce-scattered inside
each sharding group, then all-reduced across the replication groups)."""

from __future__ import annotations

import numpy as np

from perfmodel.core import comm
from perfmodel.core import constants as K
from perfmodel.core.elementwise import select
from perfmodel.core.overlap import exposed, exposed_pair
from perfmodel.specs.counts import (
    attention_params,
    mlp_params,
    moe_layer_params,
    norm_params,
    param_counts,
    parameter_tensors,
)
from perfmodel.specs.model import ModelSpec


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


def shard_group(dpc, hsg):
    """GPUs the dense parameters are sharded over: the whole dp*cp group, or under hybrid sharding the
    stack's group of `hsg` GPUs (where dp*cp is not a multiple of it, gcd(dp*cp, hsg): the groups must tile
    the data-parallel ranks and each stay inside one of the stack's groups)."""
    dpc = np.asarray(dpc, dtype=float)
    if not hsg:
        return dpc
    return np.gcd(np.rint(dpc).astype(np.int64), int(hsg)).astype(float)


def optimizer_shard(p_dense, p_exp, dpc, edp, cp, fsdp, sw):
    """Parameters per GPU whose optimizer state the GPU holds and steps: FSDP's shard (dense over dp*cp, or
    under hybrid sharding over its group; experts over edp), else the stack's optimizer sharding: Megatron's
    distributed optimizer over dp*cp (ZeRO-1, Rajbhandari et al. 2020 §5.1), over dp only, or none (the local
    optimizer / torch DDP: every data-parallel rank keeps and steps the state of all its parameters).
    Arguments broadcast together (`fsdp` a bool array)."""
    sharded = p_dense / shard_group(dpc, sw.hybrid_shard_group) + p_exp / edp
    if sw.optimizer_shard == "dp_cp":
        group = sharded
    elif sw.optimizer_shard == "dp":
        group = p_dense / (dpc / cp) + p_exp / edp
    else:  # "none"
        group = p_dense + p_exp
    return np.where(fsdp, sharded, group)


def collective_calls(params, dpc, rank, layers, vp, rule: str, bucketed: bool):
    """Collectives per step one buffer of `params` parameters per GPU (a rank's dense or expert parameters) is
    reduced or gathered in, each paying the collective's latency (comm.all_gather_from_terms); elementwise over
    layouts x pipeline ranks (`rank` 0 the first, `layers` the rank's decoder layers, `vp` its model chunks).
    rule (Software.dp_buckets):
    - megatron: Megatron-Core DDP. Buckets of max(40M, 1M x dp*cp) parameters where overlap_grad_reduce is on, one
      bucket per buffer where it is off (NVIDIA/Megatron-LM megatron/training/training.py get_model: 'If using very
      large dp_sizes, make buckets larger to ensure that chunks used in NCCL ring-reduce implementations are large
      enough to remain bandwidth-bound rather than latency-bound'; 'Set bucket_size to infinity if
      overlap_grad_reduce is False'), and bucketed only on the first pipeline rank's first model chunk: every other
      chunk (disable_bucketing for model_chunk_idx > 0) and every later pipeline rank (core/distributed/
      distributed_data_parallel.py: 'Turn off bucketing if we are on a pipeline stage that is not the first') is
      one bucket;
    - fsdp_units: one per FSDP unit, the rank's transformer blocks and the root module (embedding, final norm,
      head);
    - deepspeed: ZeRO's buckets of 5e8 elements (deepspeed/runtime/zero/config.py reduce_bucket_size and
      allgather_bucket_size default 500,000,000);
    - torch_ddp: torch DDP's buckets, 25 MiB of bf16 gradients after a first bucket of 1 MiB
      (torch/nn/parallel/distributed.py bucket_cap_mb, _DEFAULT_FIRST_BUCKET_BYTES);
    - one: one call per step.
    A layout that shards parameters (FSDP, ZeRO-3, Megatron-FSDP) issues one per unit, whatever the stack's
    rule for replicated parameters (`rule` = "fsdp_units": torch FSDP / FSDP2 per wrapped block; Megatron-FSDP's
    fsdp_unit_modules are the transformer layers; ZeRO-3 fetches per submodule, at least as many)."""
    params = np.asarray(params, dtype=float)
    if rule == "fsdp_units":
        return np.asarray(layers, dtype=float) + 1.0 + 0.0 * params
    if rule == "deepspeed":
        return np.maximum(1.0, np.ceil(params / K.DEEPSPEED_BUCKET_PARAMS))
    if rule == "torch_ddp":
        rest = np.maximum(0.0, params - K.TORCH_DDP_FIRST_BUCKET_PARAMS)
        return 1.0 + np.ceil(rest / K.TORCH_DDP_BUCKET_PARAMS)
    if rule == "one":
        return 1.0 + 0.0 * params
    chunks = np.asarray(vp, dtype=float) + 0.0 * params
    if not bucketed:
        return chunks
    bucket = np.maximum(K.MEGATRON_BUCKET_MIN_PARAMS, K.MEGATRON_BUCKET_PER_DP_PARAMS * np.asarray(dpc, dtype=float))
    first = np.maximum(1.0, np.ceil(params / chunks / bucket)) + chunks - 1.0
    return np.where(np.asarray(rank) == 0, first, chunks)


def calls_by_sharding(params, dpc, rank, layers, vp, rule: str, bucketed: bool):
    """collective_calls without and with parameter sharding: (replicated, sharded) calls per step."""
    return (
        collective_calls(params, dpc, rank, layers, vp, rule, bucketed),
        collective_calls(params, dpc, rank, layers, vp, "fsdp_units", bucketed),
    )


def optimizer_kernels(m: ModelSpec, kinds, cnt, sw):
    """Kernel launches of one optimizer step (with its gradient clipping) on the pipeline ranks holding `cnt[k]`
    layers of each kind `kinds[k]` (elementwise over layouts x ranks), by the stack's optimizer_launches:
    multi_tensor = K.OPTIMIZER_KERNELS (fused multi-tensor kernels, whatever the parameter count); per_param =
    those + K.PER_TENSOR_OPTIMIZER_KERNELS per parameter tensor the rank holds (per_param_clip: a fused Adam and
    K.PER_TENSOR_CLIP_KERNELS per tensor, the norm, clip and master-copy loop) (its layers' and, on every rank, the
    few outside them: counts.parameter_tensors); per_flat_param = the same per FSDP flat parameter, one per unit
    (the rank's layers and the root; FSDP without use_orig_params)."""
    if sw.optimizer_launches == "multi_tensor":
        return float(K.OPTIMIZER_KERNELS)
    layers = sum(cnt)
    per_tensor = (
        K.PER_TENSOR_CLIP_KERNELS if sw.optimizer_launches == "per_param_clip" else K.PER_TENSOR_OPTIMIZER_KERNELS
    )
    if sw.optimizer_launches == "per_flat_param":
        tensors = layers + 1.0
    else:
        dense, moe, outside = parameter_tensors(m, sw.separate_projections)
        tensors = sum(c * (moe if k == "moe" else dense) for k, c in zip(kinds, cnt)) + outside
    return K.OPTIMIZER_KERNELS + per_tensor * np.asarray(tensors, dtype=float)


def grad_and_param_times(
    p_dense,
    p_exp,
    grad_bytes,
    weight_bytes,
    dpc,
    edp,
    tp,
    ep,
    etp,
    hw,
    hsg=None,
    all_reduce=False,
    calls_dense=1.0,
    calls_exp=1.0,
):
    """(reduce-scatter of gradients, all-gather of parameters) seconds over dp*cp (dense: CP ranks hold the
    same weights and reduce their gradients together, Megatron-Core's data-parallel group with context
    parallelism; members tp ranks apart) and edp (experts; members ep*etp ranks apart). `p_dense` / `p_exp`
    may carry a trailing axis (pipeline ranks): each group shape is placed once and its terms broadcast.
    `hsg`: hybrid sharding (parameter-sharding stacks only): the gather and reduce-scatter run inside the
    shard group h = shard_group(dp*cp, hsg) (members tp ranks apart), and the gradient reduction adds the
    all-reduce of the 1/h shard across the dp*cp/h replicas (members h*tp ranks apart).
    `all_reduce` (DeepSpeed BF16_Optimizer, Software.grad_all_reduce): the gradients are all-reduced whole although
    the optimizer is sharded; a ring all-reduce is a reduce-scatter followed by an all-gather of the same bytes
    (Patarasuk & Yuan 2009; Thakur et al. 2005, NCCL's ring), so the gradient term is twice the reduce-scatter.
    `calls_dense` / `calls_exp`: the collectives each buffer is issued in (collective_calls), one latency each."""
    one = lambda x: np.asarray(x, dtype=float)[..., 0] if np.ndim(x) > 1 else x
    h = shard_group(one(dpc), hsg)
    d = tuple(t[..., None] for t in comm.all_gather_terms(h, one(tp), hw))
    e = tuple(t[..., None] for t in comm.all_gather_terms(one(edp), one(ep) * one(etp), hw))
    if np.ndim(p_dense) < 2:
        d, e = tuple(t[..., 0] for t in d), tuple(t[..., 0] for t in e)
    # a rank without expert parameters (a dense model, or a pipeline rank of dense layers only) runs no
    # expert collective, so it pays no latency for one
    has_exp = np.asarray(p_exp) > 0
    rs = comm.all_gather_from_terms(p_dense * grad_bytes, *d, calls_dense) + np.where(
        has_exp, comm.all_gather_from_terms(p_exp * grad_bytes, *e, calls_exp), 0.0
    )
    ag = comm.all_gather_from_terms(p_dense * weight_bytes, *d, calls_dense) + np.where(
        has_exp, comm.all_gather_from_terms(p_exp * weight_bytes, *e, calls_exp), 0.0
    )
    if hsg:  # the all-reduce is linear in its bytes: its latency and per-byte time, placed once per shape
        reps, stride = one(dpc) / h, h * one(tp)
        lat = comm.all_reduce_time(0.0 * reps, reps, stride, hw)
        per_byte = comm.all_reduce_time(1.0 + 0.0 * reps, reps, stride, hw) - lat
        if np.ndim(p_dense) >= 2:
            lat, per_byte, h, reps = lat[..., None], per_byte[..., None], h[..., None], reps[..., None]
        rs = rs + np.where(reps > 1, calls_dense * lat + per_byte * (p_dense / h * grad_bytes), 0.0)
    if all_reduce:
        rs = 2.0 * rs
    return rs, ag


def gathers_per_microbatch(per_microbatch, pp_per_step, pp):
    """Whether FSDP gathers parameters again for every micro-batch on a layout with `pp` stages: the stack's rule,
    except under a stack that keeps them for the whole step once the layout pipelines (Software.fsdp_pp_per_step:
    torchtitan apply_fsdp, reshard_after_forward = not pp_enabled, and torch.distributed.pipelining reducing the
    gradients on the last backward only). Elementwise (core/elementwise.py)."""
    return select(pp_per_step & (pp > 1), False, per_microbatch)


def fsdp_calls(nmb, per_microbatch, reshard):
    """(gathers, scatters) of FSDP per step: per micro-batch, one gather for forward and, resharding after
    forward (FULL_SHARD), another for backward, and one reduce-scatter; gathered once per step (kept across
    micro-batches), one gather and one scatter per step. Elementwise (core/elementwise.py)."""
    n_ag = select(per_microbatch, nmb * select(reshard, 2.0, 1.0), 1.0 + 0 * nmb)
    return n_ag, select(per_microbatch, nmb, 1.0 + 0 * nmb)


def exposed_plain(rs, ag, stage, rs_share, ag_share, rs_calls=1.0):
    """Exposed DP communication per step with the distributed optimizer: the reduce-scatter hides under the
    last micro-batch's backward (2/3 of a stage time) when the stack overlaps gradient reduction, the
    all-gather under the first forward (1/3) when it overlaps the parameter gather. `rs_calls` reductions per
    step (grad_calls: every micro-batch's under its own backward with sharded gradients, ZeRO-2). Elementwise."""
    return exposed(rs_calls * rs, rs_calls * stage * 2 / 3, rs_share) + exposed(ag, stage / 3, ag_share)


def grad_calls(nmb, shards_grads):
    """Gradient reductions per step without parameter sharding: once per step, or with gradients sharded (ZeRO-2)
    once per micro-batch, since a rank keeps only its partition and must reduce each micro-batch's gradients into
    it before the next (DeepSpeed@v0.9.0 deepspeed/runtime/zero/stage_1_and_2.py reduce_ready_partitions_and_remove_
    grads: 'if self.partition_gradients or self.is_gradient_accumulation_boundary'). Elementwise."""
    return select(shards_grads, nmb, 1.0 + 0 * nmb)


def exposed_fsdp(rs, ag, stage, nmb, per_microbatch, reshard, rs_share, ag_share):
    """Exposed FSDP communication per step: each gather and scatter hides under a stage time. The gathers
    and scatters of all micro-batches share one window, the step's compute (overlap.exposed_pair): separate
    per-call windows would let faster compute expose more communication than it saves. Elementwise."""
    n_ag, n_rs = fsdp_calls(nmb, per_microbatch, reshard)
    return exposed_pair(n_ag * ag, ag_share, n_rs * rs, rs_share, nmb * stage)


def exposed_time(rs, ag, fsdp, stage, nmb, sw, pp=1.0):
    """Exposed DP communication per step: FSDP's where `fsdp`, the distributed optimizer's elsewhere."""
    pm = gathers_per_microbatch(sw.fsdp_per_microbatch, sw.fsdp_pp_per_step, np.asarray(pp))
    fs = exposed_fsdp(rs, ag, stage, nmb, pm, sw.fsdp_reshard, sw.dp_rs_share, sw.dp_ag_share)
    plain = exposed_plain(rs, ag, stage, sw.dp_rs_share, sw.dp_ag_share, grad_calls(nmb, sw.shards_grads))
    return np.where(fsdp, fs, plain)


def raw_time(rs, ag, fsdp, nmb, sw, pp=1.0):
    """DP communication per step before any overlap."""
    pm = gathers_per_microbatch(sw.fsdp_per_microbatch, sw.fsdp_pp_per_step, np.asarray(pp))
    n_ag, n_rs = fsdp_calls(nmb, pm, sw.fsdp_reshard)
    return np.where(fsdp, n_ag * ag + n_rs * rs, grad_calls(nmb, sw.shards_grads) * rs + ag)


TAIL_FUNCTIONS = (gathers_per_microbatch, fsdp_calls, exposed_plain, grad_calls, exposed_fsdp)


def layer_params(m: ModelSpec, kind: str) -> tuple[float, float]:
    """(dense, expert) parameters of one layer of `kind` ("dense" or "moe")."""
    attn, _ = attention_params(m)
    base = attn + m.norms_per_layer * norm_params(m)
    if kind == "dense":
        return float(base + mlp_params(m, m.ffn.intermediate_size)[0]), 0.0
    e = m.moe
    assert e is not None
    total, _, _ = moe_layer_params(m)
    experts = float(e.num_experts * m.ffn.matrices * m.hidden_size * e.expert_intermediate_size)
    return float(base + total) - experts, experts


def rank_params(m: ModelSpec, w, cnt, rank, pp, schedule: str = "1f1b"):
    """(dense, expert) parameters held by the pipeline ranks `rank` ([n, R]) with `cnt[k]` layers of each
    kind: their layers; the embedding on the first rank; the final norm, head (a copy of the tied
    embedding when pp > 1, Megatron-Core shared embedding) and MTP modules on the last. DualPipe
    (`dualpipe_params`): each rank also holds its mirror stage's."""
    pc = param_counts(m)
    dense = expert = 0.0
    for k, layer in enumerate(w.layers):
        d, e = layer_params(m, layer.kind)
        dense, expert = dense + cnt[k] * d, expert + cnt[k] * e
    last = rank == pp - 1
    head = pc.head if not m.tied_embeddings else m.vocab_size * m.hidden_size
    final = norm_params(m) if m.final_norm else 0
    mtp_exp = 0.0
    if m.mtp_layers and m.moe:
        mtp_exp = m.mtp_layers * layer_params(m, "moe")[1]
    dense = dense + np.where(rank == 0, pc.embedding, 0.0)
    dense = dense + np.where(last, final + pc.mtp_total - mtp_exp, 0.0)
    dense = dense + np.where(last & ((pp > 1) | (not m.tied_embeddings)), head, 0.0)
    expert = expert + np.where(last, mtp_exp, 0.0)
    if schedule == "dualpipe":
        return dualpipe_params(dense, rank, pp), dualpipe_params(expert, rank, pp)
    return dense, expert


def dualpipe_params(p, rank, pp):
    """Parameters of the ranks `rank` ([n, R]) under DualPipe: their own stage's `p` plus the mirror stage
    pp - 1 - r's, which the reverse direction runs on the same GPU (DeepSeek-V3 report §3.2.1, Table 2:
    "Parameter 2x"; the first and last ranks both hold the embedding and the head). The mirror is read
    from the column of `rank` that holds it (pp.memory_ranks keeps every candidate's mirror under DualPipe);
    where none does, the rank's own stage stands in."""
    p = np.broadcast_to(np.asarray(p, dtype=float), np.broadcast_shapes(np.shape(p), np.shape(rank)))
    rank = np.broadcast_to(rank, p.shape)
    pp = np.broadcast_to(np.asarray(pp, dtype=float), p.shape)
    mirror = p.copy()
    for j in range(p.shape[-1] - 1, -1, -1):  # the first column holding the mirror rank wins
        holds = rank[..., j : j + 1] == pp - 1 - rank
        mirror = np.where(holds, p[..., j : j + 1], mirror)
    return np.where(pp > 1, p + mirror, p)
