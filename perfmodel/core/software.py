"""A software stack (perfmodel/specs/stack.py, stacks/*.toml) as the cost model reads it: the overlap switches,
kernel choices and byte sizes each feature implies. Every value here follows from a stated feature through
physics or a measured kernel ratio with its source; nothing is fitted per stack. The calibrated constants
(calibration.toml) describe the best stack: a feature switched off takes away what that constant grants.

`Software` is frozen and hashable, so rows and layouts that ran the same stack are scored together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from perfmodel.core import constants as K
from perfmodel.core.calibration import Constants
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.stack import DEFAULT_STACK, PARAM_SHARDING, StackSpec, apply_overrides, load_stack

# attention kernels relative to the kernel each hardware file's attention_fwd / attention_bwd measures
# (A100: FlashAttention-2; Hopper: FlashAttention-3; Blackwell: cuDNN fused attention).
# FA3 paper (Shah et al. 2024) §4.1: FA3 is 1.5-2.0x faster than FA2 in forward, 1.5-1.75x in backward
# (BF16, H100) -> FA2 at 1/1.75 and 1/1.6 of FA3; cuDNN 9 fused attention within a few % of FA3 on H100
# (same figure) -> 1. FlashAttention-4 (Dao et al. 2025): forward up to 1.3x cuDNN 9.13 on B200.
# No FA2 measurement on Blackwell is recorded: it runs the pre-tcgen05 mma path, taken at its Hopper ratio.
# FA2 paper (Dao 2023) §4.1, Fig. 4-5 (A100): FA2 is 1.7-3.0x faster than FlashAttention 1 and 1.3-2.5x
# faster than FlashAttention in Triton -> FA1 at 1/2.3, Triton at 1/1.8 of FA2 (geometric means), on every
# generation relative to that generation's FA2 factor.
# On Hopper "triton" is the kernel the llm-foundry presets ran: llm-foundry's flash_attn_triton (flash-attention
# eff9fe6b flash_attn_triton.py, "only been tested on A100") on the pre-MLIR Triton compiler (llm-foundry setup.py
# at b2a43a14 / 5e85bd62: triton-pre-mlir from vchiley/triton@triton_pre_mlir_sm90, whose sm90 commits 808e5642 /
# 25cecaaf only add the sm_90 target and PTX 8.0 to the legacy backend: no wgmma, no TMA). Like FA2 (2.4.x has no
# Hopper path) it issues Ampere mma.sync on H100, so the A100 ratio to FA2 is carried to Hopper by that shared
# instruction path; no H100 measurement of this kernel is published. The Triton column of the FlashAttention-3
# paper's H100 figures (~0.6 of FA3 forward at head_dim 128) is another kernel: the Triton tutorial fused
# attention built with 2024 Triton nightly, which emits wgmma (flash-attention hopper/benchmark_attn.py at
# dfe1a59e imports triton_fused_attention and asks for triton-nightly); it is not used for this kernel.
_FA1, _TRITON = 1 / 2.3, 1 / 1.8
_ATTN_FACTOR = {
    ("ampere", "fa2"): (1.0, 1.0),
    ("ampere", "cudnn"): (1.0, 1.0),
    ("ampere", "fa3"): (1.0, 1.0),
    ("ampere", "fa4"): (1.0, 1.0),
    ("hopper", "fa3"): (1.0, 1.0),
    ("hopper", "cudnn"): (1.0, 1.0),
    ("hopper", "fa4"): (1.0, 1.0),
    ("hopper", "fa2"): (1 / 1.75, 1 / 1.6),
    ("blackwell", "cudnn"): (1.0, 1.0),
    ("blackwell", "fa4"): (1.3, 1.0),
    ("blackwell", "fa3"): (1.0, 1.0),
    ("blackwell", "fa2"): (1 / 1.75, 1 / 1.6),
    ("blackwell-ultra", "cudnn"): (1.0, 1.0),
    ("blackwell-ultra", "fa4"): (1.0, 1.0),
    ("blackwell-ultra", "fa3"): (1.0, 1.0),
    ("blackwell-ultra", "fa2"): (1 / 1.75, 1 / 1.6),
    # AMD CDNA 3 (MI300X): FA3's wgmma tiles, FA4's tcgen05 tiles and cuDNN do not exist there; what a ROCm run
    # calls for any of them (Transformer Engine's fused backend, the flash-attn package's ROCm build) is the
    # Composable Kernel flash attention that mi300x.toml's attention_fwd / attention_bwd stand for -> 1
    ("cdna3", "cudnn"): (1.0, 1.0),
    ("cdna3", "fa2"): (1.0, 1.0),
    ("cdna3", "fa3"): (1.0, 1.0),
    ("cdna3", "fa4"): (1.0, 1.0),
}


for _gen in ("ampere", "hopper", "blackwell", "blackwell-ultra", "cdna3"):
    _f, _b = _ATTN_FACTOR[(_gen, "fa2")]
    _ATTN_FACTOR[(_gen, "fa1")] = (_f * _FA1, _b * _FA1)
    _ATTN_FACTOR[(_gen, "triton")] = (_f * _TRITON, _b * _TRITON)


# Flash-attention rate at head_dim 64 relative to head_dim 128, (forward, backward): FA3 paper (Shah et al.
# 2024) Fig. 5 (forward, causal) and Fig. 6 (backward), H100 SXM5 BF16, seqlen 4k, TFLOP/s:
#   FA3   fwd 420 vs 579 -> 0.725, bwd 453 vs 542 -> 0.836
#   cuDNN fwd 363 vs 518 -> 0.701, bwd 417 vs 499 -> 0.836
#   FA2   fwd 284 vs 319 -> 0.890, bwd 279 vs 310 -> 0.900
#   Triton (FA2 in Triton) fwd 363 vs 353 -> no loss (its backward is not in the figures): 1
# Per score element the two matmuls do 4 * head_dim FLOPs while the softmax (max, exp, rescale) work is
# fixed, so a short head dimension raises the non-matmul share (FA3 paper §3: the exponential runs at a
# small fraction of the matmul rate); the warpgroup / tcgen05 kernels (FA3, cuDNN, FA4) lose more than FA2.
# No Blackwell figure at head_dim 64 is published for cuDNN or FA4: they take cuDNN's Hopper ratio. At
# head_dim 256 the same figures give 1.04 (FA3) and 0.94 (cuDNN) of head_dim 128 (causal forward, 16k):
# held at 1 above 128.
# FlashAttention 1 is not measured there either: 1.
_DIM64 = {"fa3": (0.725, 0.836), "cudnn": (0.701, 0.836), "fa4": (0.701, 0.836), "fa2": (0.890, 0.900)}


def head_dim_factor(kernel: str, head_dim: float) -> tuple[float, float]:
    """(forward, backward) rate of flash-attention `kernel` at `head_dim` relative to head_dim 128 (_DIM64):
    1 at 128 and above, the head_dim-64 ratio at 64 and below (no measurement below 64), linear in
    log2(head_dim) between. The unfused path is priced as GEMMs (no factor)."""
    if kernel not in _DIM64 or head_dim >= 128:
        return 1.0, 1.0
    t = max(0.0, math.log2(head_dim / 64.0))  # 0 at 64, 1 at 128
    f64, b64 = _DIM64[kernel]
    return f64 + t * (1.0 - f64), b64 + t * (1.0 - b64)


# The interconnect each overlap mechanism needs (issue 23). A mechanism marked "scale_up" runs only where
# every member of its group shares one NVLink domain (an NVL72 rack is one domain across its trays); beyond
# it the collectives run as plain NCCL calls on the scale-out network, hidden only by what NCCL-based
# overlap the stack also has (tp_bwd_async: the backward collectives launched ahead of their GEMMs, parallel/tp.py).
# - TP userbuffers and TE's bulk dgrad / wgrad overlap (both Transformer Engine userbuffers): "Tensor-parallel
#   GPUs must be on a single node, and connected over NVLink/NVSwitch" (NVIDIA/TransformerEngine@d1929ccc
#   examples/pytorch/comm_gemm_overlap/README.md, Requirements).
# - PyTorch AsyncTP (torch.distributed._symmetric_memory fused all-gather-matmul / matmul-reduce-scatter):
#   its chunks move by copy-engine peer-to-peer writes into the peers' symmetric memory ("[Distributed w/
#   TorchTitan] Introducing Async Tensor Parallelism in PyTorch", discuss.pytorch.org/t/209487, 2024: "Using
#   copy engine for P2P"), CUDA peer access, which exists inside an NVLink domain only (derived from the
#   mechanism; the post states no multi-node form).
# - Every other overlap (CP ring send/recv, the EP all-to-all under the combined 1F1B, the distributed
#   optimizer's reduce-scatter / all-gather, pipeline send/recv, tp_bwd_async) is NCCL on its own stream,
#   which runs on any tier: "any".
OVERLAP_DOMAIN = {
    "tp_overlap": {"userbuffers": "scale_up", "bulk": "scale_up", "async_tp": "scale_up", "none": "any"},
    "tp_bwd_async": "any",
    "cp": "any",
    "moe_a2a_overlap": "any",
    "dp": "any",
    "pp_p2p_overlap": "any",
}


def power_factor(hw: HardwareSpec) -> float:
    """Sustained tensor rate under the site's GPU power cap (hardware power.power_limit_w), relative to the TDP:
    a cap below the TDP lowers the sustained clock and the tensor rate follows it (dynamic power ~ f V^2 with
    V ~ f near the top of the DVFS curve gives f ~ P^(1/3); NVIDIA power-capping behaviour). 1 without a cap
    or at / above the TDP."""
    limit = hw.power.power_limit_w
    return min(1.0, (limit / hw.power.gpu_tdp_w) ** (1 / 3)) if limit else 1.0


@dataclass(frozen=True)
class Software:
    """The cost model's view of one stack on one system."""

    stack_id: str
    tp_share_fwd: float  # share of forward / backward TP collectives hidden under GEMMs
    tp_share_bwd: float
    cp_share: float
    ep_share: float
    dp_rs_share: float  # gradient reduce-scatter hidden under backward
    dp_ag_share: float  # parameter all-gather hidden under forward
    pp_share: float  # pipeline send/recv hidden under compute, interleaved schedule (vp > 1)
    layer_kernel_s: float  # fixed cost per kernel inside the layers (CUDA graphs lower it)
    other_kernel_s: float  # ... in the head, embedding and optimizer
    attention: str  # unfused | fa2 | fa3 | cudnn | fa4
    attn_fwd_factor: float
    attn_bwd_factor: float
    sequence_parallel: bool
    grad_bytes: float  # main-gradient buffer, bytes per parameter
    reduce_bytes: float  # data-parallel reduction, bytes per parameter on the wire
    optimizer_shard: str  # dp | dp_cp | none
    shards_params: bool  # the stack shards parameters (FSDP / ZeRO-3) whatever the layout says
    shards_grads: bool  # ... or gradients only (ZeRO-2)
    fsdp_per_microbatch: bool  # FSDP gathers parameters again for every micro-batch
    fsdp_reshard: bool  # ... and again for backward (FULL_SHARD)
    hybrid_shard_group: int | None  # HSDP: parameters sharded over this many GPUs, replicated across groups
    fp8_param_gather: bool
    fp8_amax_pass: bool  # current scaling: an extra read of each tensor to find its amax
    dispatcher: str  # allgather | alltoall | deepep | hybridep
    grouped_gemm: bool
    recompute: str  # none | selective | full, when a run does not state it
    recompute_modules: tuple[str, ...]
    schedule: str  # 1f1b | interleaved | zero_bubble | dualpipe | gpipe
    cp_comm: str  # p2p | a2a | allgather | a2a_p2p
    power_factor: float  # sustained tensor rate under the site's power limit (hardware), relative to TDP
    eager: bool = False  # memory-bound ops as eager PyTorch kernels (fusions = "none")
    cpu_offload_layers: int = 0  # layers whose saved activations go to host memory (pp = 1 only)
    dummy_wgrad: bool = False  # Megatron + TE gradient-accumulation fusion: a cached bf16 dummy wgrad per weight shape
    logit_bytes: float = 2 * K.FP32  # bytes per logit held on the last stage for the loss (stack cross_entropy)
    grouped_kernel: str = "te"  # none | te | cutlass | cutedsl: the expert GEMM implementation (stack grouped_gemm)
    cuda_graphs: str = "none"  # none | per_layer | full_iteration (stack cuda_graphs)
    pp_share_1f1b: float = 0.0  # ... at vp = 1: Megatron-Core's 1F1B waits on every send/recv (stack.py pp_p2p_overlap)
    grad_accum_fusion: bool = True  # wgrad GEMMs accumulate into main_grad (else a per-micro-batch add pass)
    autocast_casts: bool = False  # fp32 parameters cast to bf16 by torch.autocast at each op (stack param_dtype)
    param_extra_bytes: float = 0.0  # bytes per parameter held beyond the GEMM-dtype weight (memory.py)
    adam_bytes: float = K.ADAM_STATE_BYTES  # optimizer state per parameter it steps
    pipeline_layout: str = (
        "module_slots"  # module_slots | bridge_map: MTP models' pipeline split (stack pipeline_layout)
    )
    tp_bwd_async: bool = False  # backward TP collectives under the column-parallel GEMMs (stack tp_bwd_async)
    megatron_core: bool = False  # a Megatron-Core stack (family): its MoE experts run Megatron-Core's activation code
    tp_overlap_scale_up: bool = False  # the TP overlap runs only inside the NVLink domain (OVERLAP_DOMAIN)
    # DeepSpeed BF16_Optimizer (stack fsdp = bf16_optimizer): the gradient collective is an all-reduce of the whole
    # buffer although the optimizer is sharded, and autograd's bf16 gradients stay beside the fp32 buffer
    grad_all_reduce: bool = False
    lp_grad_bytes: float = 0.0  # bytes per parameter of those bf16 gradients (memory only)
    selective_ac: str = "modules"  # modules | op | layer: what selective recompute means (stack selective_ac)
    selective_every: int = 2  # selective_ac = layer: one block in this many fully checkpointed
    separate_projections: bool = False  # wq, wk, wv and w1, w3 as separate GEMMs (stack projections)
    async_tp: bool = False  # PyTorch AsyncTP: collective matmuls over symmetric memory (parallel/tp.py)
    # the collectives the DP reduction / gather is issued in (parallel/dp.py collective_calls): megatron (buckets
    # where dp_bucketed), fsdp_units, deepspeed, one
    dp_buckets: str = "megatron"
    optimizer_launches: str = "multi_tensor"  # parallel/dp.py optimizer_kernels
    dp_bucketed: bool = True  # Megatron DDP buckets only with overlap_grad_reduce
    fsdp_pp_per_step: bool = False  # FSDP gathers once per step at pp > 1, per micro-batch at pp = 1 (torchtitan)
    fp8_torchao: bool = False  # torchao's FP8 linear: bf16 input saved, re-cast in backward (stack fp8_linear)
    fp8_recipe: str = "none"  # stack fp8_recipe (what FP8 GEMMs run as)
    moe_balancing: str = "unstated"  # stack moe_load_balancing: real routing's imbalance (parallel/ep.py)

    @property
    def has_selective(self) -> bool:
        """The stack can run recompute = selective: a module list (op-level SAC is one, OP_SAC) or layer SAC."""
        return bool(self.recompute_modules) or self.selective_ac == "layer"

    @property
    def split_tp(self) -> bool:
        """A block's TP all-gather and reduce-scatter are separate records (AsyncTP prices each under its own
        GEMMs; op-level SAC recomputes the all-gather and keeps the reduce-scatter's output)."""
        return self.async_tp or self.selective_ac == "op"


# the recompute "module" of every record torchtitan's op-level SAC re-runs in backward (workload.py tags them)
OP_SAC = "op_sac"


def from_stack(spec: StackSpec, hw: HardwareSpec, c: Constants) -> Software:
    f = spec.features
    tp = {
        "none": (0.0, 0.0),
        "bulk": (0.0, c.tp_overlap),
        "userbuffers": (c.tp_overlap, c.tp_overlap),
        # PyTorch AsyncTP has its own mechanism (parallel/tp.py async_tp_exposed: the collective decomposed into
        # tp - 1 peer copies under tp partial GEMMs), not the share fitted on Transformer Engine userbuffers
        "async_tp": (0.0, 0.0),
    }[f.tp_overlap]
    if f.tp_overlap == "async_tp" and spec.family == "torchtitan-2025" and f.fusions != "torch_compile":
        from perfmodel.errors import InputError

        raise InputError(
            f"stack {spec.id}",
            "tp_overlap",
            "async_tp needs torch.compile (fusions = torch_compile): torchtitan refuses it otherwise "
            "(torchtitan/models/llama3/infra/parallelize.py: 'Async TP requires torch.compile')",
        )
    autocast = f.param_dtype == "fp32_autocast"
    if autocast and f.fsdp != "none":
        from perfmodel.errors import InputError

        raise InputError(
            f"stack {spec.id}",
            "param_dtype",
            f"fp32_autocast with fsdp = {f.fsdp} is not priced: a sharding wrapper holds, gathers or reduces fp32 "
            "parameters its own way (FSDP's mixed precision is param_dtype = bf16); fp32_autocast describes "
            "torch DDP (fsdp = none)",
        )
    graphs = f.cuda_graphs
    graphed = min(c.kernel_fixed_s, c.graphed_kernel_s)  # a graph removes the host part only
    fa, fb = _ATTN_FACTOR.get((hw.generation, f.attention_kernel), (1.0, 1.0))
    power = power_factor(hw)
    fp8 = f.fp8_recipe
    sharding = f.fsdp in PARAM_SHARDING
    return Software(
        stack_id=spec.id,
        tp_share_fwd=tp[0],
        tp_share_bwd=tp[1],
        cp_share=c.cp_overlap,  # the ring's send/recv overlaps blockwise attention in every CP implementation
        ep_share=c.ep_overlap if f.moe_a2a_overlap else 0.0,
        dp_rs_share=c.dp_overlap if f.dp_grad_reduce_overlap else 0.0,
        dp_ag_share=c.dp_overlap if f.dp_param_gather_overlap else 0.0,
        # Megatron's interleaved schedule hides its send/recv only with overlap_p2p_comm; its 1F1B never does
        # (p2p_communication._communicate waits on every request); the zero-bubble and DualPipe schedules
        # place their send/recv beside the other micro-batch's compute
        pp_share=c.pp_overlap if (f.pp_p2p_overlap or f.pipeline_schedule in ("zero_bubble", "dualpipe")) else 0.0,
        layer_kernel_s=graphed if graphs in ("per_layer", "full_iteration") else c.kernel_fixed_s,
        other_kernel_s=graphed if graphs == "full_iteration" else c.kernel_fixed_s,
        attention=f.attention_kernel,
        attn_fwd_factor=fa,
        attn_bwd_factor=fb,
        sequence_parallel=f.sequence_parallel,
        tp_bwd_async=f.tp_bwd_async,
        megatron_core=spec.family == "megatron-core",
        tp_overlap_scale_up=OVERLAP_DOMAIN["tp_overlap"][f.tp_overlap] == "scale_up",
        grad_bytes=K.FP32 if f.main_grad_precision == "fp32" else K.BF16,
        reduce_bytes=K.FP32 if f.grad_reduce_precision == "fp32" else K.BF16,
        optimizer_shard=("none" if f.fsdp == "none" else f.optimizer_shard),
        shards_params=sharding,
        shards_grads=f.fsdp == "zero2",
        dp_buckets=f.dp_buckets,
        optimizer_launches=f.optimizer_launches,
        dp_bucketed=f.dp_grad_reduce_overlap,
        # a layout that asks for FSDP on a stack whose own kind does not shard parameters gets ZeRO-3 /
        # Megatron-FSDP defaults: gathered per micro-batch and again for backward (reshard after forward)
        fsdp_per_microbatch=(f.fsdp_gather != "per_step") if sharding else True,
        fsdp_reshard=f.reshard_after_forward if sharding else True,
        hybrid_shard_group=f.hybrid_shard_group if sharding else None,
        fp8_param_gather=f.fp8_param_gather,
        fp8_amax_pass=fp8 == "current",
        dispatcher=f.moe_dispatcher,
        grouped_gemm=f.grouped_gemm != "none",
        recompute=f.recompute,
        # a Megatron-family preset whose recipe recomputes nothing lists no modules; run selective, Megatron-Core
        # recomputes its default module (transformer_config.py: recompute_modules defaults to ['core_attn'])
        recompute_modules=(
            (OP_SAC,)
            if f.selective_ac == "op"
            else tuple(f.recompute_modules) or (("core_attn",) if spec.family == "megatron-core" else ())
        ),
        selective_ac=f.selective_ac,
        selective_every=f.selective_ac_every,
        separate_projections=f.projections == "separate",
        async_tp=f.tp_overlap == "async_tp",
        fsdp_pp_per_step=sharding and f.fsdp_gather == "per_microbatch_unless_pp",
        fp8_torchao=f.fp8_linear == "torchao",
        fp8_recipe=fp8,
        moe_balancing=f.moe_load_balancing,
        schedule=f.pipeline_schedule,
        cp_comm=f.cp_comm_type,
        power_factor=power,
        eager=f.fusions == "none",
        cpu_offload_layers=f.cpu_offload_layers,
        # Megatron's TE / fused-kernel stacks accumulate wgrad into main_grad and hand autograd a dummy
        # gradient of the weight's shape (memory.py); without the accumulation fusion autograd gets the real
        # bf16 gradient, freed by the DDP hook once added
        dummy_wgrad=f.fusions == "te_fused" and f.grad_accumulation_fusion,
        logit_bytes=K.BF16 if f.cross_entropy == "te" else 2 * K.FP32,
        grouped_kernel=f.grouped_gemm,
        cuda_graphs=graphs,
        grad_accum_fusion=f.grad_accumulation_fusion,
        # torch.autocast (fp32 parameters): the fp32 parameter (4 B) and the bf16 copy autocast casts and autograd
        # saves for the matmul's backward (2 B) are held where the GEMM-dtype weight (2 B) is counted (4 B more), and
        # Adam keeps its two moments only (8 B), the fp32 parameter being the master copy
        autocast_casts=autocast,
        param_extra_bytes=K.FP32 if autocast else 0.0,
        adam_bytes=K.ADAM_STATE_BYTES - (K.FP32 if autocast else 0.0),
        pipeline_layout=f.pipeline_layout,
        pp_share_1f1b=c.pp_overlap if f.pipeline_schedule in ("zero_bubble", "dualpipe") else 0.0,
        # BF16_Optimizer (DeepSpeed@v0.7.0 deepspeed/runtime/bf16_optimizer.py): backward() sets the bf16 .grad to
        # None, lets autograd write it and adds it into fp32_groups_gradients_flat (zeros_like of the flat bf16
        # group, unsharded) in update_hp_grads(clear_lp_grads=False), so at a backward's end the rank holds both;
        # the pipe engine's _bf16_reduce_grads all-reduces that fp32 buffer (buffered_allreduce_fallback) and
        # step() all-gathers the updated bf16 partitions (all_gather_dp_groups)
        grad_all_reduce=f.fsdp == "bf16_optimizer",
        lp_grad_bytes=K.BF16 if f.fsdp == "bf16_optimizer" else 0.0,
    )


@lru_cache(maxsize=4096)
def resolve(
    stack_ref: str | None,
    stack_set: tuple[str, ...],
    model_id: str,
    is_moe: bool,
    hw: HardwareSpec,
    precision: str,
    c: Constants,
) -> Software:
    """The Software of a preset id or stack file (None: the default stack) for one model, system and
    precision: the preset's per-model rules, then the `stack_set` overrides (feature=value)."""
    spec = load_stack(stack_ref or DEFAULT_STACK).for_model(model_id, is_moe, hw.id, precision)
    if stack_set:
        spec = apply_overrides(spec, list(stack_set))
    return from_stack(spec, hw, c)
