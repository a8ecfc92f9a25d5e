"""The software stack as an input: what a framework release switches on, read from its own code and docs.

A stack preset (stacks/*.toml, shipped with the package, or any file) holds facts, never fitted numbers:
each feature is a value and the `source` it was read from (framework code, config or docs at a named
version). The cost model reads the features through physics (the lead wires them into predict/workload);
this module only loads, checks, overrides and maps them.

A preset file:

    name = "NeMo 25.09 (Megatron-Bridge 0.1 performance recipes)"
    family = "megatron-core"     # preset whose values an `unstated` feature takes
    base = "nemo-25.04"          # optional: features not listed are inherited from it ...
    base_source = "..."          # ... and this says why that holds (required with base)
    software = ["NeMo 25.09"]    # `software` cells of measured-run CSVs this preset describes
    frameworks = ["megatron"]    # `framework` cells it applies to (empty: any)

    [features]
    attention_kernel = { value = "cudnn", source = "Megatron-Bridge ... at commit ..." }
    cpu_offload_layers = { unstated = true, note = "not published for this release" }

    [[per_model]]                # values that differ by model family inside one release
    match = { model = "deepseek-v3", hardware = "h100" }     # model id prefix, kind (dense|moe), hardware id prefix
    moe_dispatcher = { value = "deepep", source = "..." }

Every feature ends with a value, a non-empty source and an origin: `stated` (the preset's own source),
`inherited:<base>`, `unstated:<family>` (not published for this release: the family default, recorded so),
`per_model:<rule>` or `--stack-set`.

Every stated feature and rule also has a basis (issue 25): `read` (the release's own code, config or docs state
it), `secondary` (a blog, a third-party guide, a summary, another system's paper) or `inferred` (the framework's
code, but its link to this release or configuration is inferred: matched by layout, interpreted, copied from a
neighbouring release). A feature entry or a rule says `basis = "..."`; without it the basis is what the source's own
wording marks (`⚑ secondary` -> secondary; `⚑ by layout`, `assigned by layout`, `interp` -> inferred), else read,
and an explicit `read` that the wording contradicts is refused. `base_basis = "inferred"` marks a base whose
features and rules are assumed for this release (a release whose own configs were not read). `ID#read` loads a
preset with every secondary or inferred statement switched off: what it states without them (the base's, else
the family default; a family preset's own feature has nothing beneath it and is kept, still marked).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from perfmodel.errors import InputError, did_you_mean
from perfmodel.specs.specfile import catalog_ids, read_document, resolve, validate

DEFAULT_STACK = "default"
READ_ONLY = "#read"  # `ID#read` / `FILE#read`: the preset without its secondary or inferred statements
BASES = ("read", "secondary", "inferred")
# a source's own wording that marks it as not read from the release (what the basis must then say)
_WORDED = (
    (re.compile(r"⚑\s*secondary", re.IGNORECASE), "secondary"),
    (re.compile(r"⚑\s*(?:assigned\s+)?by\s+layout|\binterp\b|\binferred\b", re.IGNORECASE), "inferred"),
)

RecomputeModule = Literal["core_attn", "mlp", "moe_act", "layernorm", "mla_up_proj", "moe", "shared_experts"]


class Features(BaseModel):
    """The software features a step's cost depends on. Each field's description is its meaning."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attention_kernel: Literal["unfused", "te_unfused", "triton", "fa1", "fa2", "fa3", "cudnn", "fa4"] = Field(
        description=(
            "core-attention kernel: unfused = softmax(QK^T)V with the s^2 scores, probabilities and dropout mask "
            "written to HBM (Megatron's fused scale-mask-softmax still materialises them); te_unfused = Transformer "
            "Engine's UnfusedDotProductAttention at attention dropout 0 (the s^2 scores and probabilities in HBM, "
            "an explicit causal mask built every call, no dropout); triton = FlashAttention "
            "in Triton (flash_attn_triton, llm-foundry attn_impl='triton', the ALiBi-capable path of 2023); fa1 = "
            "FlashAttention 1.x; fa2 / fa3 / fa4 = "
            "FlashAttention 2 / 3 (Hopper) / 4 (Blackwell) tiles in SRAM, no s^2 tensor in HBM; cudnn = cuDNN "
            "fused flash attention (Transformer Engine 'fused' backend)"
        )
    )
    sequence_parallel: bool = Field(
        description=(
            "Megatron sequence parallelism (Korthikanti et al. 2022 Sec. 4.2.2): norms and dropout on s/tp "
            "tokens per rank, TP all-reduce split into reduce-scatter + all-gather; false keeps them on the "
            "full sequence on every TP rank and all-reduces"
        )
    )
    tp_overlap: Literal["none", "bulk", "userbuffers", "async_tp"] = Field(
        description=(
            "TP communication overlap: none = exposed; bulk = only the bulk wgrad/dgrad overlap; userbuffers = "
            "Transformer Engine userbuffers split/pipelined AG and RS under the GEMMs; async_tp = PyTorch "
            "AsyncTP (symmetric-memory micro-pipelined collective matmul)"
        )
    )
    tp_bwd_async: bool = Field(
        description=(
            "the column-parallel linear's backward launches its TP collectives asynchronously under its own "
            "GEMMs (Megatron-Core LinearWithGradAccumulationAndAsyncCommunication, Transformer Engine Linear / "
            "LayerNormLinear): with sequence parallelism the input all-gather under dgrad and the dgrad "
            "reduce-scatter under wgrad, without it the dgrad all-reduce under wgrad; exposed only where they "
            "outlast those GEMMs (parallel/tp.py). false = every backward TP collective on the critical path "
            "unless tp_overlap hides it"
        )
    )
    dp_grad_reduce_overlap: bool = Field(
        description=(
            "data-parallel gradient reduce(-scatter) issued per bucket during the backward pass (Megatron "
            "overlap_grad_reduce; FSDP reduce-scatter) rather than after it"
        )
    )
    dp_param_gather_overlap: bool = Field(
        description=(
            "distributed-optimizer / FSDP parameter all-gather overlapped with the next forward (Megatron "
            "overlap_param_gather; FSDP prefetch) rather than exposed"
        )
    )
    cuda_graphs: Literal["none", "per_layer", "full_iteration"] = Field(
        description=(
            "CUDA graph capture, which removes most of the per-kernel host launch cost: none; per_layer = "
            "layer or module scope (TE make_graphed_callables / Megatron cuda_graph_scope attn, mlp, moe_router); "
            "full_iteration = the whole forward-backward"
        )
    )
    fusions: Literal["none", "te_fused", "torch_compile", "xla"] = Field(
        description=(
            "fusion of the memory-bound element-wise ops (norms, activations, bias-dropout-add, RoPE): none = "
            "eager PyTorch kernels; te_fused = Transformer Engine / Apex fused kernels; torch_compile = Inductor; "
            "xla = XLA fusion (JAX)"
        )
    )
    fsdp: Literal[
        "none", "fsdp1", "fsdp2", "megatron_fsdp", "zero1", "zero2", "zero3", "xla_fsdp", "bf16_optimizer"
    ] = Field(
        description=(
            "sharding of weights/gradients/optimizer over data parallel: none = replicated DDP; zero1 = "
            "optimizer states and fp32 master weights sharded (Megatron distributed optimizer, DeepSpeed ZeRO "
            "stage 1): gradients reduced into the shards once per step, updated parameters all-gathered; zero2 = "
            "plus gradients, so each micro-batch's gradients are reduced into their partitions as its backward "
            "runs (DeepSpeed stage 2: stage_1_and_2.py reduce_ready_partitions_and_remove_grads reduces every "
            "micro-batch when partition_gradients); zero3 / fsdp1 / fsdp2 / megatron_fsdp = plus parameters "
            "(all-gathered before use); xla_fsdp = GSPMD parameter sharding over the fsdp mesh axis; "
            "bf16_optimizer = DeepSpeed BF16_Optimizer (bf16 without ZeRO, DeepSpeed >= 0.6.2, 'its own zero stage "
            "1'): fp32 master weights and Adam states sharded over data parallel, gradients added every "
            "micro-batch into an unsharded fp32 buffer beside the bf16 gradients autograd writes, the whole "
            "buffer all-reduced after the pipeline flush, then the updated bf16 parameters all-gathered "
            "(deepspeed/runtime/bf16_optimizer.py, pipe/engine.py _bf16_reduce_grads)"
        )
    )
    reshard_after_forward: bool = Field(
        description=(
            "parameter-sharding only: free the gathered parameters after each unit's forward and gather them "
            "again for its backward (FSDP FULL_SHARD / ZeRO-3); false keeps them to the backward (SHARD_GRAD_OP)"
        )
    )
    fsdp_gather: Literal["per_step", "per_microbatch", "per_microbatch_unless_pp"] = Field(
        description=(
            "parameter-sharding only: parameters all-gathered once per optimizer step (kept across "
            "micro-batches) or again for every micro-batch; per_microbatch_unless_pp = per micro-batch (resharded "
            "after forward as reshard_after_forward says) at pp = 1, once per step and kept at pp > 1 (torchtitan "
            "apply_fsdp: reshard_after_forward = not pp_enabled, 'to avoid per-microbatch all-gathers')"
        )
    )
    hybrid_shard_group: int | None = Field(
        ge=1,
        le=1_000_000,
        description=(
            "hybrid sharding (HSDP): GPUs in one sharding group, replicated across groups; null = shard over "
            "the whole data-parallel group"
        ),
    )
    optimizer_shard: Literal["dp", "dp_cp", "none"] = Field(
        description=(
            "group the optimizer state is sharded over: dp, dp x cp (Megatron shards over the data-parallel "
            "group including context-parallel ranks), or none (replicated)"
        )
    )
    grad_reduce_precision: Literal["bf16", "fp32"] = Field(
        description=("dtype of the data-parallel gradient reduce-scatter / all-reduce (bytes on the wire)")
    )
    main_grad_precision: Literal["fp32", "bf16"] = Field(
        description=(
            "dtype gradients are accumulated in across micro-batches (Megatron main_grad buffer; 4 or 2 B/param)"
        )
    )
    grad_accumulation_fusion: bool = Field(
        description=(
            "Megatron gradient_accumulation_fusion: true = each linear layer's weight-gradient GEMM accumulates "
            "straight into the main_grad buffer (APEX fused_weight_gradient_mlp_cuda / Transformer Engine "
            "fuse_wgrad_accumulation); false (--no-gradient-accumulation-fusion) = the GEMM writes a bf16 weight "
            "gradient and Megatron DDP's backward hook adds it into main_grad (main_grad.add_(grad)) for every "
            "micro-batch, one memory-bound pass over the weights. Stacks without a Megatron main_grad buffer "
            "(PyTorch FSDP, XLA) state true: no such pass is priced for them"
        )
    )
    fp8_recipe: Literal["none", "delayed", "current", "rowwise", "blockwise", "mxfp8"] = Field(
        description=(
            "what this stack runs when FP8 GEMMs are asked for: delayed = per-tensor delayed scaling (amax "
            "history); current = per-tensor current scaling; rowwise = per-row scales (torchao float8 rowwise); "
            "blockwise = 1x128 activation / 128x128 weight blocks (DeepSeek-V3); mxfp8 = MX 1x32 blocks with "
            "E8M0 scales (Blackwell); none = the stack runs no FP8 GEMMs (hardware without FP8, or not configured)"
        )
    )
    fp8_param_gather: bool = Field(
        description=("parameters all-gathered in FP8 (half the bytes of BF16) when FP8 is on")
    )
    moe_dispatcher: Literal["allgather", "alltoall", "deepep", "hybridep"] = Field(
        description=(
            "MoE token dispatcher: allgather of all tokens; NCCL all-to-all; DeepEP kernels (NVLink + RDMA, "
            "node-deduplicated); HybridEP (NVLink-domain aware DeepEP successor)"
        )
    )
    moe_a2a_overlap: bool = Field(
        description=(
            "expert all-to-all overlapped with computation of another micro-batch (Megatron "
            "overlap_moe_expert_parallel_comm / DualPipe); false = exposed on the critical path. Megatron's is the "
            "combined 1F1B schedule, active at pp = 1 too: the passes with no partner micro-batch (first forward, "
            "last backward, the interleaved warm-up and cool-down) stay exposed, and it is off at pp > 1 without vp "
            "or under full recompute (parallel/ep.py a2a_solo_microbatches)"
        )
    )
    grouped_gemm: Literal["none", "te", "cutlass", "cutedsl"] = Field(
        description=(
            "expert GEMM kernel: none = one GEMM per local expert in a loop; te = Transformer Engine grouped "
            "GEMM; cutlass = CUTLASS grouped GEMM (grouped_gemm package); cutedsl = CuTe-DSL fused grouped MLP"
        )
    )
    recompute: Literal["none", "selective", "full"] = Field(
        description=("activation recompute the recipe uses when a measured run does not state it")
    )
    selective_ac: Literal["modules", "op", "layer"] = Field(
        default="modules",
        description=(
            "what recompute = selective means in this stack: modules = the recompute_modules list (Megatron-Core); "
            "op = torchtitan's per-op SAC: each block re-runs in backward every forward op except those its save "
            "list keeps (matmul outputs but every second one of the block, SDPA outputs, TP reduce-scatters, "
            "max), parallel/recompute.py; layer = torchtitan's per-layer SAC: every selective_ac_every-th block "
            "fully checkpointed, the others keep everything"
        ),
    )
    selective_ac_every: int = Field(
        default=2,
        ge=1,
        le=100_000,
        description=(
            "with selective_ac = layer: one block in this many is fully checkpointed (torchtitan "
            "selective_ac_option = 'N': a block is wrapped when its running count % N == 0)"
        ),
    )
    fp8_linear: Literal["te", "torchao"] = Field(
        default="te",
        description=(
            "the FP8 linear layer: te = Transformer Engine (the quantised input saved for the weight gradient, "
            "one cast kernel writing the row- and column-wise copies); torchao = torchao Float8Linear / MX: the "
            "bf16 input and weight saved and re-cast in backward (matmul_with_hp_or_float8_args), each operand cast "
            "per layout it is used in (rowwise and mxfp8 scale along the GEMM's reduction dimension, so the output "
            "gradient is cast along both axes), and with rowwise scales the gradient GEMMs run in cuBLAS with an "
            "fp32 output and a separate rescale (pytorch/ao#1325); workload.py _fp8_casts"
        ),
    )
    moe_load_balancing: Literal["unstated", "aux_loss", "expert_bias", "global_batch"] = Field(
        default="unstated",
        description=(
            "how real (not force-balanced) MoE routing is balanced, which sets how far the busiest EP rank's token "
            "load exceeds the mean (parallel/ep.py routing_imbalance, constants.ROUTING_CV): aux_loss = a "
            "GShard / Switch auxiliary loss (Megatron-Core's moe_router_load_balancing_type 'aux_loss'); "
            "expert_bias = DeepSeek-V3's auxiliary-loss-free bias (moe_router_enable_expert_bias); global_batch = "
            "a global-batch load-balancing loss (Qwen3, arXiv 2501.11873); unstated = no imbalance priced (the "
            "measurements behind ROUTING_CV come from fine-grained MoE, 64-256 experts; a coarse one such as "
            "Mixtral's or Grok-1's 8 is not measured). Force-balanced (moe_routing balanced-dropless) and "
            "token-dropping rows are at 1 whatever this says"
        ),
    )
    dp_buckets: Literal["megatron", "fsdp_units", "deepspeed", "torch_ddp", "one"] = Field(
        default="megatron",
        description=(
            "how many collectives the data-parallel gradient reduction and parameter gather are issued in (each "
            "pays the collective's latency; parallel/dp.py collective_calls): megatron = Megatron-Core DDP buckets "
            "of max(40M, 1M x dp*cp) parameters when overlap_grad_reduce, else one per buffer, bucketed only on the "
            "first pipeline rank's first model chunk, one per chunk elsewhere (megatron/training/training.py "
            "get_model, core/distributed/distributed_data_parallel.py); fsdp_units = one per FSDP unit, every "
            "transformer block and the root (torch FSDP auto-wrap / FSDP2 fully_shard per block); deepspeed = "
            "ZeRO's reduce / all-gather buckets of 5e8 elements (deepspeed/runtime/zero/config.py "
            "reduce_bucket_size, allgather_bucket_size); torch_ddp = torch DistributedDataParallel's buckets of "
            "bucket_cap_mb = 25 MiB of bf16 gradients, the first of 1 MiB (torch/nn/parallel/distributed.py "
            "_DEFAULT_FIRST_BUCKET_BYTES); one = one per step (XLA's collective combiner, "
            "not modelled further)"
        ),
    )
    optimizer_launches: Literal["multi_tensor", "per_param", "per_flat_param", "per_param_clip"] = Field(
        default="multi_tensor",
        description=(
            "how the optimizer step and the gradient clipping launch their kernels (parallel/dp.py "
            "optimizer_kernels): multi_tensor = fused multi-tensor kernels over all parameters (apex / Transformer "
            "Engine FusedAdam, torch foreach, XLA), a few launches a step; per_param = a Python loop over the "
            "parameter tensors the optimizer holds, 8 Adam kernels and 2 clipping kernels each (Composer's "
            "DecoupledAdamW with FSDP use_orig_params); per_flat_param = the same loop over FSDP's flat "
            "parameters, one per FSDP unit (torch < 2.0, no use_orig_params); per_param_clip = a fused Adam (torch "
            "AdamW fused / foreach) with the gradient norm, clipping and master-weight copy looped per tensor, a vector_norm, "
            "a mul_ and a copy_ each (nanotron optim/clip_grads.py clip_grad_norm, FP32GradientAccumulator.step)"
        ),
    )
    param_dtype: Literal["bf16", "fp32_autocast"] = Field(
        default="bf16",
        description=(
            "the dtype the model's parameters are held in: bf16 = the GEMMs' 16-bit dtype, fp32 master weights (if "
            "any) in the optimizer (Megatron-Core, FSDP mixed precision); fp32_autocast = fp32 parameters that "
            "torch.autocast casts to bf16 at each op (the Hugging Face Trainer / accelerate with bf16=True on a "
            "model loaded in float32): a cast per weight each forward (read 4 B, write 2 B) and its backward (read "
            "2 B, write 4 B), the bf16 copy saved for the backward beside the fp32 parameter, and no separate master "
            "copy in Adam (the fp32 parameter is it); with fsdp = none only (a sharding wrapper handles fp32 "
            "parameters its own way: one clear error)"
        ),
    )
    projections: Literal["fused", "separate"] = Field(
        default="fused",
        description=(
            "the attention and MLP input projections as GEMMs: fused = one QKV GEMM and one gate + up GEMM "
            "(Megatron-Core linear_qkv / linear_fc1); separate = wq, wk, wv and w1, w3 as separate linears, "
            "in that order (torchtitan Attention / FeedForward)"
        ),
    )
    recompute_modules: tuple[RecomputeModule, ...] = Field(
        description=(
            "with recompute = selective: the modules recomputed (Megatron recompute_modules); core_attn = the "
            "attention scores/softmax (Korthikanti 2022 selective recompute)"
        )
    )
    pipeline_schedule: Literal["1f1b", "interleaved", "zero_bubble", "dualpipe", "gpipe"] = Field(
        description=(
            "pipeline schedule when pp > 1: 1f1b (PipeDream-Flush); interleaved = interleaved 1F1B when the "
            "layout has vp > 1 (Megatron falls back to 1F1B at vp = 1); zero_bubble = ZB-H1/ZB-1p (Qi et al. "
            "2024); dualpipe (DeepSeek-V3); gpipe = all forwards then all backwards"
        )
    )
    pipeline_layout: Literal["module_slots", "bridge_map"] = Field(
        description=(
            "how the decoder layers are cut into pipeline chunks where a recipe says more than Megatron-Core's split: "
            "module_slots = Megatron-Core's split, with a model's MTP modules (DeepSeek-V3) the embedding, each MTP "
            "layer and the loss taking one decoder layer's slot (NeMo 2.0 num_layers_in_first / last_pipeline_stage); "
            "bridge_map = Megatron-Bridge's DeepSeek-V3 / Kimi-K2 layout maps for the (pp, vp) they list: the first "
            "chunk holds the embedding and 64 / (pp vp) of the 61 decoder layers, the last chunk three fewer beside "
            "the MTP layer and the loss (parallel/pp.py chunk_layers)"
        )
    )
    pp_p2p_overlap: bool = Field(
        description=(
            "Megatron overlap_p2p_comm: the interleaved schedule posts each virtual chunk's send/recv and waits "
            "for it only before the chunk that needs it (p2p under the current chunk's compute); false = "
            "every send/recv is waited for before the next compute. Megatron-Core's non-interleaved 1F1B "
            "always waits (pipeline_parallel/p2p_communication.py: _communicate(wait_on_reqs=True) in "
            "send_forward_recv_backward and the other 1F1B calls), whatever this says"
        )
    )
    cp_comm_type: Literal["p2p", "a2a", "allgather", "a2a_p2p", "torch_allgather"] = Field(
        description=(
            "context-parallel attention communication: p2p ring of KV blocks, a2a (Ulysses), allgather of KV, "
            "or a2a within and p2p across groups; torch_allgather = PyTorch context_parallel with rotate_method "
            "allgather (torchtitan's default): K/V all-gathered in forward and again in backward, each under the "
            "first of cp blockwise attention steps, dK/dV passed around the ring in fp32, each hop under the next "
            "step's backward, the last one exposed (parallel/cp.py)"
        )
    )
    cross_entropy: Literal["fp32", "te"] = Field(
        description=(
            "loss over the vocabulary on the last stage: fp32 = the logits upcast to fp32 with an fp32 softmax kept "
            "for backward and the gradient returned (Megatron vocab_parallel_cross_entropy and its 'native' fused "
            "form, PyTorch cross_entropy under autocast): 2 x 4 B per logit; te = Transformer Engine "
            "parallel_cross_entropy (Megatron --cross-entropy-fusion-impl te): Triton kernels keep only the bf16 "
            "logits for backward and write the gradient into them in place: 2 B per logit"
        )
    )
    cpu_offload_layers: int = Field(
        ge=0,
        le=100_000,
        description=(
            "activation CPU offloading (Megatron-Core cpu_offloading with cpu_offloading_activations, "
            "cpu_offloading_num_layers = this): the saved activations of this many transformer layers are copied "
            "to host memory during forward and back during backward, asynchronously under compute, instead of "
            "staying in HBM; Megatron requires pp = 1 for it; 0 = off"
        ),
    )


FEATURES: tuple[str, ...] = tuple(Features.model_fields)
# the `fsdp` kinds that shard parameters (gathered before use); each implementation's default is to gather them
# for every micro-batch and free them after the forward: PyTorch FSDP1 ShardingStrategy.FULL_SHARD and FSDP2
# fully_shard(reshard_after_forward=True) (torch/distributed/fsdp/_fully_shard/_fully_shard.py), DeepSpeed ZeRO-3's
# fetch and release around each submodule (deepspeed/runtime/zero/partitioned_param_coordinator.py), Megatron-FSDP
# (megatron_fsdp.py _pre_forward_param_unshard at Megatron-LM d7288711), GSPMD gathering at each use
PARAM_SHARDING = ("fsdp1", "fsdp2", "megatron_fsdp", "zero3", "xla_fsdp")
# features a preset may leave out (added after most presets were written; they describe mechanisms only some
# stacks have): missing from a file (and its base), they take the schema default, whose meaning the field states
# (the Megatron-Core behaviour)
OPTIONAL = {
    "selective_ac": "not a torchtitan stack: selective recompute is the recompute_modules list",
    "selective_ac_every": "only read with selective_ac = layer",
    "projections": "fused QKV and gate + up projections (Megatron-Core linear_qkv / linear_fc1)",
    "param_dtype": "parameters in the GEMMs' 16-bit dtype, fp32 master weights in the optimizer (no autocast casts)",
    "fp8_linear": "Transformer Engine's FP8 linear layers",
    "moe_load_balancing": "unstated: no routing imbalance priced (say the release's balancing to price it)",
}
NULLABLE = ("hybrid_shard_group",)  # "none" in a file (TOML has no null) = null
ORIGINS = ("stated", "inherited", "unstated", "per_model", "--stack-set")


class MatchRule(BaseModel):
    """Which rows a per-model override applies to: every given key must match."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    model: str | None = Field(default=None, min_length=1)  # model id prefix
    kind: Literal["dense", "moe"] | None = None
    hardware: str | None = Field(default=None, min_length=1)  # hardware id prefix
    precision: str | None = Field(default=None, min_length=1)  # GEMM precision (bf16, fp8, mxfp8, ...)

    def matches(self, model_id: str, is_moe: bool, hardware_id: str, precision: str = "") -> bool:
        return (
            (self.model is None or model_id.startswith(self.model))
            and (self.kind is None or self.kind == ("moe" if is_moe else "dense"))
            and (self.hardware is None or hardware_id.startswith(self.hardware))
            and (self.precision is None or precision == self.precision)
        )

    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.model_dump().items() if v is not None)


class PerModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    match: MatchRule
    values: dict[str, Any]
    sources: dict[str, str]
    basis: dict[str, str] = Field(default_factory=dict)  # per feature: read | secondary | inferred (absent: read)


class StackSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    name: str
    family: str
    date: str = ""
    base: str | None = None
    base_source: str = ""
    software: tuple[str, ...] = ()
    frameworks: tuple[str, ...] = ()
    notes: str = ""
    path: str = ""
    features: Features
    sources: dict[str, str]
    origin: dict[str, str]
    basis: dict[str, str] = Field(default_factory=dict)  # per feature: read | secondary | inferred (absent: read)
    base_basis: str = "read"
    read_only: bool = False  # loaded as `ID#read`: the secondary and inferred statements switched off
    per_model: tuple[PerModel, ...] = ()
    applied: tuple[str, ...] = ()  # per-model rules applied by `for_model`

    def value(self, feature: str) -> Any:
        return getattr(self.features, feature)

    def basis_of(self, feature: str) -> str:
        return self.basis.get(feature, "read")

    def not_read(self) -> list[dict[str, Any]]:
        """The statements a value of this spec rests on that are secondary or inferred, one per (origin, basis):
        the rule or inheritance (origin), its basis and the features it sets."""
        groups: dict[tuple[str, str], list[str]] = {}
        for f in FEATURES:
            if self.basis_of(f) != "read":
                groups.setdefault((self.origin[f], self.basis_of(f)), []).append(f)
        return [{"origin": o, "basis": b, "features": fs} for (o, b), fs in groups.items()]

    def for_model(self, model_id: str, is_moe: bool, hardware_id: str, precision: str = "") -> StackSpec:
        """The preset as it applies to one model on one system at one GEMM precision: matching per-model
        rules in file order (a later rule wins; a base's rules come first)."""
        vals = self.features.model_dump()
        sources, origin, basis, applied = dict(self.sources), dict(self.origin), dict(self.basis), []
        for rule in self.per_model:
            if rule.match.matches(model_id, is_moe, hardware_id, precision):
                vals.update(rule.values)
                for f in rule.values:
                    sources[f] = rule.sources[f]
                    origin[f] = f"per_model:{rule.match.label()}"
                    basis[f] = rule.basis.get(f, "read")
                applied.append(rule.match.label())
        if not applied:
            return self
        feats = _features(vals, self.path or self.id)
        return self.model_copy(
            update={
                "features": feats,
                "sources": sources,
                "origin": origin,
                "basis": basis,
                "applied": tuple(applied),
            }
        )

    def rows(self) -> list[dict[str, Any]]:
        """One dict per feature: value, origin, source, meaning (for `show stack`)."""
        return [
            {
                "feature": f,
                "value": _jsonable(getattr(self.features, f)),
                "origin": self.origin[f],
                "basis": self.basis_of(f),
                "source": self.sources[f],
                "meaning": Features.model_fields[f].description,
            }
            for f in FEATURES
        ]


def _jsonable(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


_META = {"id", "name", "family", "date", "base", "base_source", "base_basis", "software", "frameworks", "notes"}


# A GPU power cap is a fact about the site, not the software: hardware power.power_limit_w (--set power_limit_w=W).
# Stack files written before it moved may still say `power_limit_w = { value = "none" }` or leave it unstated
# (no framework sets a cap): such an entry is read and dropped; a number is refused with where it belongs now.
MOVED = {
    "power_limit_w": "a GPU power cap is a site fact: give it as hardware power.power_limit_w (--set power_limit_w=W)"
}


def _moved_entry(where: str, name: str, entry: Any) -> bool:
    """True for an entry of a feature that moved (MOVED) that says nothing (unstated, or "none"): skip it."""
    if name not in MOVED:
        return False
    if isinstance(entry, dict) and (entry.get("unstated") is True or entry.get("value") == "none"):
        return True
    raise InputError(where, f"features.{name}", f"no longer a stack feature: {MOVED[name]}")


def _basis(where: str, field: str, given: Any, source: str) -> str:
    """The basis of a statement: `given` (checked), else what its source's wording marks, else read. An explicit
    read that the wording contradicts is refused: the mark and the words must agree."""
    if given is not None and given not in BASES:
        raise InputError(where, field, f"must be one of {', '.join(BASES)} (got {given!r})")
    worded = next((b for rx, b in _WORDED if rx.search(source)), None)
    if given == "read" and worded:
        raise InputError(
            where, field, f"basis 'read', but the source's own words mark it {worded}: say basis = \"{worded}\""
        )
    return str(given or worded or "read")


def _feature_entry(where: str, name: str, entry: Any, default_basis: str | None = None) -> tuple[str, Any, str, str]:
    """('stated' | 'unstated', value, source, basis) of one [features] or [[per_model]] entry; `default_basis`:
    the rule's own basis, for an entry that gives none."""
    field = f"features.{name}"
    if name not in FEATURES:
        raise InputError(where, field, f"unknown stack feature{did_you_mean(name, FEATURES)}")
    if not isinstance(entry, dict):
        raise InputError(
            where, field, 'must be a table { value = ..., source = "..." } or { unstated = true, note = "..." }'
        )
    extra = set(entry) - {"value", "source", "note", "unstated", "basis"}
    if extra:
        raise InputError(where, f"{field}.{sorted(extra)[0]}", "unknown key (value, source, note, unstated, basis)")
    if entry.get("unstated") is True:
        if "value" in entry:
            raise InputError(where, field, "an unstated feature takes the family default: give no value")
        if "basis" in entry:
            raise InputError(where, f"{field}.basis", "an unstated feature states nothing: give no basis")
        return "unstated", None, str(entry.get("note", "")).strip(), "read"
    if "value" not in entry:
        raise InputError(where, f"{field}.value", "required field is missing (or mark the feature unstated = true)")
    src = entry.get("source")
    if not isinstance(src, str) or not src.strip():
        raise InputError(
            where, f"{field}.source", "required: every feature names its source (code, config or docs at a version)"
        )
    note = str(entry.get("note", "")).strip()
    value = None if name in NULLABLE and entry["value"] == "none" else entry["value"]
    text = src.strip() + (f" — {note}" if note else "")
    return "stated", value, text, _basis(where, f"{field}.basis", entry.get("basis", default_basis), text)


def _features(doc: dict[str, Any], where: str) -> Features:
    """Features.model_validate; a problem names `features.<feature>` (TOML has no null: "none")."""
    try:
        return validate(Features, doc, where)
    except InputError as exc:
        raise InputError(where, f"features.{exc.field}", exc.reason) from None


def _load(path: Path, chain: tuple[str, ...] = (), read_only: bool = False) -> StackSpec:
    """The preset of `path`; with `read_only` its secondary and inferred statements are left out (the base's and
    family's read-only values beneath them), a base whose basis is not read is not inherited, and a feature with
    nothing read beneath it keeps its value and its mark."""
    where = str(path)
    doc = read_document(path)
    sid = str(doc.get("id", path.stem))
    if sid in chain:
        raise InputError(where, "base", f"circular base chain: {' -> '.join(chain + (sid,))}")
    unknown = set(doc) - _META - {"features", "per_model"}
    if unknown:
        k = sorted(unknown)[0]
        raise InputError(where, k, f"unknown field{did_you_mean(k, sorted(_META | {'features', 'per_model'}))}")
    for key in ("name", "family"):
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            raise InputError(where, key, "required field is missing")
    base_ref, family_ref = doc.get("base"), doc["family"]
    if base_ref is not None and not str(doc.get("base_source", "")).strip():
        raise InputError(where, "base_source", "required with base: say why the base's features hold for this release")
    base_basis = _basis(where, "base_basis", doc.get("base_basis"), "")
    if "base_basis" in doc and base_ref is None:
        raise InputError(where, "base_basis", "only with base: how the base's features are known to hold")
    feats = doc.get("features", {})
    if not isinstance(feats, dict):
        raise InputError(where, "features", "must be a table")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    origin: dict[str, str] = {}
    basis: dict[str, str] = {}
    unstated: dict[str, str] = {}
    for name, entry in feats.items():
        if _moved_entry(where, name, entry):
            continue
        kind, val, src, b = _feature_entry(where, name, entry)
        if kind == "unstated":
            unstated[name] = src
        elif not (read_only and b != "read"):
            values[name], sources[name], origin[name], basis[name] = val, src, "stated", b
    base = _ref(base_ref, path, chain + (sid,), where, "base", read_only) if base_ref is not None else None
    if read_only and base_basis != "read":
        base = None  # the base's features are assumed for this release, not read: not inherited
    family = None
    if family_ref != sid:
        family = _ref(family_ref, path, chain + (sid,), where, "family", read_only)
    full = _load(path, chain) if read_only else None  # what a feature with nothing read beneath it keeps
    for name in FEATURES:
        if name in values:
            continue
        if name in unstated or (read_only and base is None and family is not None):
            src_spec = family or base
            if src_spec is None:
                raise InputError(
                    where,
                    f"features.{name}",
                    "unstated, but this preset is its own family: a family preset states every feature",
                )
            values[name] = src_spec.value(name)
            basis[name] = src_spec.basis_of(name)
            if name in unstated:
                note = f" ({unstated[name]})" if unstated[name] else ""
                sources[name] = (
                    f"not published for this release{note}; family default from {src_spec.id}: {src_spec.sources[name]}"
                )
            else:
                sources[name] = f"no read statement in this preset (read-only); family default from {src_spec.id}: "
                sources[name] += src_spec.sources[name]
            origin[name] = f"unstated:{src_spec.id}"
        elif base is None and name in OPTIONAL:  # the schema default, not the family's: a preset that does not
            # know the mechanism keeps the behaviour it was written for
            values[name] = Features.model_fields[name].default
            sources[name], origin[name] = f"not stated: {OPTIONAL[name]}", "unstated:schema"
        elif base is not None:
            values[name] = base.value(name)
            b = base.basis_of(name)
            if base.origin[name].startswith("unstated"):  # still not published: say so, not "inherited"
                sources[name], origin[name], basis[name] = base.sources[name], base.origin[name], b
            else:
                basis[name] = b if b != "read" else base_basis
                sources[name] = f"as {base.id} ({doc['base_source']}): {base.sources[name]}"
                origin[name] = f"inherited:{base.id}"
        elif full is not None:  # read-only, a family preset's own secondary / inferred feature: nothing beneath it
            values[name], sources[name], origin[name] = full.value(name), full.sources[name], full.origin[name]
            basis[name] = full.basis_of(name)
        else:
            raise InputError(
                where,
                f"features.{name}",
                "required field is missing (state it with its source, or mark it unstated = true)",
            )
    features = _features({k: values[k] for k in FEATURES}, where)
    per_model = []
    if base is not None:
        per_model = [
            r
            if base_basis == "read"
            else r.model_copy(update={"basis": {f: r.basis.get(f, base_basis) for f in r.values}})
            for r in base.per_model
        ]
    if family is not None and unstated:  # the family default of an unstated feature keeps its own per-model rules
        for rule in family.per_model:
            keep = {f: v for f, v in rule.values.items() if f in unstated}
            if keep and not any(r.match == rule.match and r.values == keep for r in per_model):
                per_model.insert(
                    0,
                    PerModel(
                        match=rule.match,
                        values=keep,
                        sources={
                            f: f"not published for this release; family rule of {family.id}: {rule.sources[f]}"
                            for f in keep
                        },
                        basis={f: rule.basis[f] for f in keep if f in rule.basis},
                    ),
                )
    rules = doc.get("per_model", [])
    if not isinstance(rules, list):
        raise InputError(where, "per_model", "must be an array of tables [[per_model]]")
    for i, rule in enumerate(rules):
        rwhere = f"{where}: per_model[{i}]"
        if not isinstance(rule, dict) or "match" not in rule:
            raise InputError(rwhere, "match", "required field is missing")
        match = validate(MatchRule, rule["match"], rwhere)
        if match == MatchRule():
            raise InputError(rwhere, "match", "give at least one of model, kind, hardware, precision")
        rule_basis = rule.get("basis")
        if rule_basis is not None:
            _basis(rwhere, "basis", rule_basis, "")
        rvals, rsrc, rbasis = {}, {}, {}
        for name, entry in rule.items():
            if name in ("match", "basis") or _moved_entry(rwhere, name, entry):
                continue
            kind, val, src, b = _feature_entry(rwhere, name, entry, rule_basis)
            if kind == "unstated":
                raise InputError(
                    rwhere, f"features.{name}", "a per-model rule states values; leave unstated features out"
                )
            if read_only and b != "read":
                continue
            rvals[name], rsrc[name] = val, src
            if b != "read":
                rbasis[name] = b
        if not rvals:
            if read_only:  # every statement of the rule is secondary or inferred: the rule is off
                continue
            raise InputError(rwhere, "", "a per-model rule needs at least one feature")
        _features({**features.model_dump(), **rvals}, rwhere)  # each value checked by the schema
        per_model.append(PerModel(match=match, values=rvals, sources=rsrc, basis=rbasis))
    software = doc.get("software", [])
    frameworks = doc.get("frameworks", [])
    for key, seq in (("software", software), ("frameworks", frameworks)):
        if not isinstance(seq, list) or not all(isinstance(s, str) and s.strip() for s in seq):
            raise InputError(where, key, "must be a list of non-empty strings")
    return StackSpec(
        id=sid,
        name=doc["name"].strip(),
        family=str(family_ref),
        date=str(doc.get("date", "")),
        base=base_ref if base_ref is None or base is None else base.id,
        base_source=str(doc.get("base_source", "")),
        software=tuple(software),
        frameworks=tuple(frameworks),
        notes=str(doc.get("notes", "")),
        path=where,
        features=features,
        sources=sources,
        origin=origin,
        basis={f: b for f, b in basis.items() if b != "read"},
        base_basis=base_basis,
        read_only=read_only,
        per_model=tuple(per_model),
    )


def _ref(ref: Any, path: Path, chain: tuple[str, ...], where: str, field: str, read_only: bool = False) -> StackSpec:
    if not isinstance(ref, str) or not ref.strip():
        raise InputError(where, field, "must be a stack id or a file path")
    rel = path.parent / ref
    target = rel if ("/" in ref or ref.endswith(".toml")) and rel.exists() else None
    try:
        p = target or resolve(ref, "stacks")
    except InputError as exc:
        raise InputError(where, field, exc.reason if exc.field else str(exc)) from None
    return _load(Path(p), chain, read_only)


@lru_cache(maxsize=256)
def _load_cached(path: str, stamp: tuple[int, int], read_only: bool = False) -> StackSpec:
    return _load(Path(path), (), read_only)


def load_stack(ref: str | StackSpec | None = None) -> StackSpec:
    """A catalog id (`nemo-25.09`), a path to a stack TOML, or None for the default stack; `ID#read` (or
    `FILE#read`): the preset with its secondary and inferred statements switched off. Loaded once per file version
    (path, mtime, size): an edited file is read again."""
    if isinstance(ref, StackSpec):
        return ref
    ref = ref or DEFAULT_STACK
    read_only = ref.endswith(READ_ONLY)
    if read_only:
        ref = ref[: -len(READ_ONLY)] or DEFAULT_STACK
    path = resolve(ref, "stacks")
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (0, 0)
    return _load_cached(str(path), stamp, read_only)


def stack_ids() -> list[str]:
    return catalog_ids("stacks")


# ---- --stack-set feature=value ------------------------------------------------------------------


def _parse(feature: str, text: str) -> Any:
    t = text.strip()
    low = t.lower()
    ann = Features.model_fields[feature].annotation
    if feature == "recompute_modules":
        return tuple(s.strip() for s in t.split(",") if s.strip()) if low not in ("", "none", "[]") else ()
    if ann is bool:
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise InputError("stack_set", feature, f"expects true or false (got {t!r})")
    if feature == "hybrid_shard_group":
        if low in ("none", "null", ""):
            return None
        try:
            v = float(t)
        except ValueError:
            raise InputError("stack_set", feature, f"expects a number or none (got {t!r})") from None
        if not math.isfinite(v):
            raise InputError("stack_set", feature, "value must be finite")
        if v != int(v):
            raise InputError("stack_set", feature, f"expects an integer (got {t!r})")
        return int(v)
    if feature in ("cpu_offload_layers", "selective_ac_every"):
        if not (t.isascii() and t.isdigit()):  # isdigit alone takes '²', which int() refuses
            raise InputError("stack_set", feature, f"expects a non-negative integer (got {t!r})")
        return int(t)
    return t


def apply_overrides(spec: StackSpec, sets: list[str] | tuple[str, ...]) -> StackSpec:
    """`spec` with `feature=value` overrides (repeatable), re-validated by the schema; each changed
    feature gets `--stack-set feature=value` as its source and origin."""
    if not sets:
        return spec
    vals = spec.features.model_dump()
    sources, origin, basis = dict(spec.sources), dict(spec.origin), dict(spec.basis)
    for item in sets:
        if "=" not in item:
            raise InputError("stack_set", item.strip(), "expects FEATURE=VALUE")
        name, text = (s.strip() for s in item.split("=", 1))
        if name in MOVED:
            raise InputError("stack_set", name, f"no longer a stack feature: {MOVED[name]}")
        if name not in FEATURES:
            raise InputError(
                "stack_set",
                name,
                f"unknown stack feature{did_you_mean(name, FEATURES)}; one of {', '.join(FEATURES)}",
            )
        vals[name] = _parse(name, text)
        sources[name] = f"--stack-set {name}={text}"
        origin[name] = "--stack-set"
        basis.pop(name, None)  # the user's own statement
    named = {item.split("=", 1)[0].strip() for item in sets}
    if "fsdp" in named and vals["fsdp"] in PARAM_SHARDING and spec.features.fsdp not in PARAM_SHARDING:
        # parameter sharding set over a preset that shards none: the preset's gathering features describe no
        # sharding, so the implementation's own default applies unless the same overrides state them
        for name, value in (("fsdp_gather", "per_microbatch"), ("reshard_after_forward", True)):
            if name not in named:
                vals[name] = value
                sources[name] = (
                    f"implied by --stack-set fsdp={vals['fsdp']} over {spec.id}, which shards no parameters: the "
                    "implementation's default, parameters gathered for every micro-batch and freed after the "
                    "forward (specs/stack.py PARAM_SHARDING)"
                )
                origin[name] = "implied"
                basis.pop(name, None)
    try:
        feats = validate(Features, vals, "--stack-set")
    except InputError as exc:  # the feature as the user typed it (a list item keeps its index)
        raise InputError("stack_set", exc.field, exc.reason) from None
    return spec.model_copy(update={"features": feats, "sources": sources, "origin": origin, "basis": basis})


# ---- measured-run rows -> preset --------------------------------------------------------------------

# the preset a row falls back to when no preset lists its `software` label: the framework family's own
# defaults (what an unconfigured run of that framework does), else the default stack
FRAMEWORK_FALLBACK = {"megatron": "megatron-core", "maxtext": "maxtext-gpu-2024", "automodel": "automodel-2025"}


@lru_cache(maxsize=1)
def _labels() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(software label, preset id, frameworks) of every catalog preset, longest label first."""
    out = []
    for sid in stack_ids():
        s = load_stack(sid)
        out += [(lab, sid, s.frameworks) for lab in s.software]
    return tuple(sorted(out, key=lambda t: -len(t[0])))


def stack_for_row(framework: str, software: str, date: str = "") -> str:
    """The preset id for a measured row's `framework`, `software` and `date` cells (infer_stack)."""
    return infer_stack(framework, software, date).stack


@dataclass(frozen=True)
class StackChoice:
    """The preset a run's own words lead to, the --stack-set overrides the words state, why, and on what basis:
    "label" (a preset's software label), "release" (the release the text names), "nearest release" (no preset of
    that release: the nearest, said so), "release by date" (a framework without a version: the latest preset
    released by the run's date), "framework named" (the framework in the text), "framework default" (the
    framework cell's family defaults) or "default". The last two are guesses a row is flagged for."""

    stack: str
    sets: tuple[str, ...]
    why: str
    basis: str

    @property
    def fallback(self) -> bool:
        return self.basis in ("framework default", "default", "stand-in")


_VERSION = re.compile(r"(\d{2})\.(\d{2})")
# a NeMo release in free text: "NeMo 25.09", "nemo:25.09", "NeMo Megatron Release 23.04", "NeMo-Megatron 24.05",
# "nvcr.io/nvidia/nemo:24.07", "NeMo 2.0 container 24.12" (the toolkit version before the container's); a DGX
# Cloud benchmarking release: "DGXC v25.04", "dgxc-25.05"
_NEMO_RELEASE = re.compile(
    r"nemo(?:[\s:_-]*megatron)?(?:(?:[\s:_-]*v?\d\.\d+(?:\.\d+)?)?[\s:_-]*(?:release|framework|container))?"
    r"[\s:_v-]*(\d{2})\.(\d{2})",
    re.IGNORECASE,
)
_DGXC_RELEASE = re.compile(r"dgxc[\s:_-]*v?(\d{2})\.(\d{2})", re.IGNORECASE)
# a library version in free text: "Megatron-Bridge 0.2.0", "megatron-bridge==0.1.0rc3", "Megatron Bridge v0.4";
# the NeMo toolkit's own version, "NeMo 2.3.0" / "nemo_toolkit 2.3.1" (a container release reads "NeMo 25.04")
# (library, pattern, whether a version newer than every preset's takes the newest: Megatron-Bridge's versions are
# all mapped, 0.1.0rc3 to 0.6.0; only NeMo 2.3 is, so another NeMo minor version is left to the run's date)
_VERSIONED = (
    (
        "Megatron-Bridge",
        re.compile(r"megatron[\s_-]*bridge[\s:=_v-]*(\d+)\.(\d+)(?:\.(\d+))?(?:\s*rc\s*(\d+))?", re.I),
        True,
    ),
    (
        "NeMo",
        re.compile(r"nemo(?:[\s_-]*toolkit)?[\s:=_v-]*(2)\.(\d+)(?:\.(\d+))?(?:\s*rc\s*(\d+))?(?![\d.])", re.I),
        False,
    ),
)
# frameworks named in free text -> preset, and words that state a feature of that framework's run
_NAMED = (
    (re.compile(r"torch\s*titan", re.IGNORECASE), "torchtitan-2025"),
    (re.compile(r"big[\s-]*science|\bbloom\b", re.IGNORECASE), "megatron-deepspeed-bloom-2022"),
    (re.compile(r"mt[\s-]*nlg|megatron[\s-]*turing", re.IGNORECASE), "megatron-deepspeed-2021"),
    (re.compile(r"megatron[\s-]*deepspeed|deepspeed", re.IGNORECASE), "megatron-deepspeed-2023"),
    (re.compile(r"automodel", re.IGNORECASE), "automodel-2025"),
    (re.compile(r"max\s*text", re.IGNORECASE), "maxtext-gpu-2024"),
    (re.compile(r"\bpax(ml)?\b", re.IGNORECASE), "paxml-2024"),
    (re.compile(r"llm[\s-]*foundry|composer|mosaic", re.IGNORECASE), "llm-foundry-2023"),
    (re.compile(r"hai[\s-]*llm", re.IGNORECASE), "hai-llm-2024"),
    (re.compile(r"nano\s*tron", re.IGNORECASE), "nanotron-2025"),
    (re.compile(r"megatron[\s-]*(lm|core)", re.IGNORECASE), "megatron-core"),
)
# software no preset describes, with the nearest preset that runs the same kind of code: the Hugging Face Trainer /
# accelerate on transformers' modules is PyTorch DDP / FSDP, eager, as llm-foundry's hf_causal_lm is (a stand-in:
# the row is flagged; check predicts such a log the same way, logcheck.implied_stack)
_STAND_IN = (
    (
        re.compile(r"hugging[\s-]*face|\btransformers\b|\bhf[\s_-]*trainer\b|\baccelerate\b", re.IGNORECASE),
        "llm-foundry-2024",
        "the Hugging Face Trainer / accelerate (PyTorch DDP / FSDP on transformers' modules, eager)",
    ),
    (
        re.compile(r"\bolmo\b|\bolmo[\s_-]*core\b", re.IGNORECASE),
        "llm-foundry-2024",
        "AI2's OLMo / OLMo-core trainer (PyTorch FSDP on blocks with fused projections and flash attention, as "
        "llm-foundry runs MPT; allenai/OLMo olmo/model.py, olmo/train.py)",
    ),
)
_FEATURE_WORDS = {
    "torchtitan-2025": (
        (re.compile(r"compile", re.IGNORECASE), "fusions=torch_compile"),
        # AsyncTP runs only compiled (torchtitan parallelize.py: 'Async TP requires torch.compile')
        (re.compile(r"async[\s_-]*tp|async tensor parallel", re.IGNORECASE), "fusions=torch_compile"),
        (re.compile(r"async[\s_-]*tp|async tensor parallel", re.IGNORECASE), "tp_overlap=async_tp"),
        (re.compile(r"row[\s_-]*wise", re.IGNORECASE), "fp8_recipe=rowwise"),
        (re.compile(r"mxfp8", re.IGNORECASE), "fp8_recipe=mxfp8"),
        (re.compile(r"float8 all[\s_-]*gather|fsdp[\s_-]*float8", re.IGNORECASE), "fp8_param_gather=true"),
        (re.compile(r"selective[\s_-]*layer|per[\s_-]*layer sac|layer[\s_-]*sac", re.IGNORECASE), "selective_ac=layer"),
    ),
    # DeepSpeed's optimizer wrapper as a run names it (deepspeedai/DeepSpeed@v0.12.6 deepspeed/runtime/engine.py
    # _configure_zero_optimizer ~L1462-1563: stage 1 / 2 -> DeepSpeedZeroOptimizer (partition_grads at stage 2),
    # stage 3 -> DeepSpeedZeroOptimizer_Stage3; _do_optimizer_sanity_check ~L1151-1203: bf16 without ZeRO, or ZeRO
    # stage 1 with grad_accum_dtype fp32 (get_data_types ~L872: bf16 under ZeRO accumulates in bf16 unless the
    # config says fp32), -> BF16_Optimizer); "BF16Optimizer ZeRO-1" (BLOOM's own words) is the BF16 optimizer, the
    # one listed first
    "megatron-deepspeed": (
        (re.compile(r"bf16[\s_-]*optimi[sz]er", re.IGNORECASE), "fsdp=bf16_optimizer"),
        (re.compile(r"zero[\s_-]*(?:stage[\s_-]*)?1(?![\d.])", re.IGNORECASE), "fsdp=zero1"),
        (re.compile(r"zero[\s_-]*(?:stage[\s_-]*)?2(?![\d.])", re.IGNORECASE), "fsdp=zero2"),
        (re.compile(r"zero[\s_-]*(?:stage[\s_-]*)?3(?![\d.])|zero[\s_-]*infinity", re.IGNORECASE), "fsdp=zero3"),
    ),
}
# the word table a preset's runs are read with: its family's (torchtitan), or its framework's
_WORDS_OF = {
    "megatron-deepspeed-2021": "megatron-deepspeed",
    "megatron-deepspeed-2023": "megatron-deepspeed",
    "megatron-deepspeed-bloom-2022": "megatron-deepspeed",
}


def _words(sid: str, text: str) -> tuple[str, ...]:
    """The --stack-set items the words of `text` state for preset `sid` (_FEATURE_WORDS); of several values of one
    feature, the first in the table."""
    key = _WORDS_OF.get(sid) or load_stack(sid).family
    out: dict[str, str] = {}
    for rx, item in _FEATURE_WORDS.get(key, ()):
        if item.split("=", 1)[0] not in out and rx.search(text):
            out[item.split("=", 1)[0]] = item
    return tuple(out.values())


def _stated(c: StackChoice, text: str) -> StackChoice:
    """`c` with the features the run's own words state over its preset (_words), said in its why."""
    sets = _words(c.stack, text)
    if not sets:
        return c
    why = f"{c.why}, with {', '.join(sets)} from its words"
    return StackChoice(c.stack, tuple(dict.fromkeys((*c.sets, *sets))), why, c.basis)


def _month(text: str) -> int | None:
    """'2025-09' / '2025-09-30' -> months since year 0; None when the text holds no such date."""
    m = re.match(r"\s*(\d{4})-(\d{2})", text or "")
    return int(m.group(1)) * 12 + int(m.group(2)) - 1 if m else None


@lru_cache(maxsize=1)
def _releases() -> dict[str, list[tuple[int, str, str]]]:
    """Per release family ("nemo", "dgxc"), (release as months, release text, preset) of every catalog preset whose
    software labels name a release of it."""
    out: dict[str, list[tuple[int, str, str]]] = {"nemo": [], "dgxc": []}
    for sid in stack_ids():
        for lab in load_stack(sid).software:
            for fam, rx in (("dgxc", _DGXC_RELEASE), ("nemo", _NEMO_RELEASE)):
                m = rx.search(lab)
                if m:  # a DGXC label names its NeMo container too: "DGXC v24.11.1 (NeMo 24.09)"
                    out[fam].append(
                        ((2000 + int(m.group(1))) * 12 + int(m.group(2)) - 1, f"{m.group(1)}.{m.group(2)}", sid)
                    )
    return {k: sorted(set(v)) for k, v in out.items()}


def _version(m: re.Match) -> tuple[int, int, int, int]:
    """(major, minor, patch, rc) of a _VERSIONED match; a final release sorts after its release candidates."""
    major, minor, patch, rc = m.groups()
    return int(major), int(minor), int(patch or 0), int(rc) if rc else 10**6


@lru_cache(maxsize=1)
def _library_versions() -> dict[str, list[tuple[tuple[int, int, int, int], str, str]]]:
    """Per library of _VERSIONED, (version, label, preset) of every catalog preset whose software labels name a
    version of it (the release's own: nemo-25.11 lists "Megatron-Bridge 0.2.0", the version NeMo 25.11 ships)."""
    out: dict[str, list[tuple[tuple[int, int, int, int], str, str]]] = {lib: [] for lib, _, _ in _VERSIONED}
    for sid in stack_ids():
        for lab in load_stack(sid).software:
            for lib, rx, _ in _VERSIONED:
                m = rx.fullmatch(lab.strip())
                if m:
                    out[lib].append((_version(m), lab, sid))
    return {k: sorted(v) for k, v in out.items()}


def _by_library_version(sw: str) -> StackChoice | None:
    """The preset of a library version the text names (Megatron-Bridge, the NeMo toolkit): that version's; a patch
    release without a preset, the latest earlier one of its minor version (the minor release's scripts, until read);
    a version newer than every preset's, the newest (where the library's versions are all mapped); else None."""
    for lib, rx, beyond in _VERSIONED:
        m = rx.search(sw)
        known = _library_versions()[lib]
        if not m or not known:
            continue
        v, said = _version(m), m.group(0).strip()
        exact = [k for k in known if k[0] == v]
        if exact:
            return StackChoice(
                exact[0][2], (), f"{lib} version in '{sw}' ({said}): the release that ships it", "release"
            )
        minor = [k for k in known if k[0][:2] == v[:2] and k[0] < v]
        near = minor[-1] if minor else (known[-1] if beyond and v > known[-1][0] else None)
        if near is not None:
            return StackChoice(
                near[2],
                (),
                f"{lib} version in '{sw}' ({said}) has no preset: the nearest earlier version with one, "
                f"{near[1]} ({near[2]})",
                "nearest release",
            )
    return None


def _nearest(family: str, month: int, on_or_before: bool = False, framework: str = "") -> tuple[int, str, str] | None:
    """The release of `family` nearest to `month` (or the latest on or before it), among presets that run
    `framework` (those that list no frameworks, or list it; any, for a run whose framework cell is empty or
    "other"); None when there is none."""
    cands = _releases()[family]
    if framework and framework != "other":  # a run of another framework is not described by these releases
        cands = [c for c in cands if not load_stack(c[2]).frameworks or framework in load_stack(c[2]).frameworks]
    if on_or_before:
        before = [c for c in cands if c[0] <= month]
        return before[-1] if before else (cands[0] if cands else None)
    return min(cands, key=lambda c: (abs(c[0] - month), c[0])) if cands else None


# a framework cell's words for the frameworks presets list: NeMo and Megatron-Bridge run Megatron-Core (NeMo 2's
# recipes build Megatron-Core models: NeMo@7a8f1cc7 nemo/collections/llm/gpt/model/base.py), so a NeMo run's
# framework is "megatron"; Megatron-LM by its other names likewise
_FRAMEWORK_ALIASES = {
    "nemo": "megatron",
    "nemo-megatron": "megatron",
    "nemo megatron": "megatron",
    "nemo2": "megatron",
    "megatron-bridge": "megatron",
    "megatron bridge": "megatron",
    "megatron-lm": "megatron",
    "megatron_lm": "megatron",
    "megatron-core": "megatron",
    "megatron core": "megatron",
    "mcore": "megatron",
    "llm-foundry": "other",
    "composer": "other",
}


@lru_cache(maxsize=1)
def _known_frameworks() -> frozenset[str]:
    """Every framework a catalog preset lists."""
    return frozenset(f for sid in stack_ids() for f in load_stack(sid).frameworks)


def _framework(framework: str) -> str:
    """A framework cell as the presets name frameworks: its alias (_FRAMEWORK_ALIASES); a word no preset lists
    ("pytorch", "mlperf") is no evidence against any preset and reads as empty."""
    fw = (framework or "").strip().lower()
    fw = _FRAMEWORK_ALIASES.get(fw, fw)
    return fw if fw in _known_frameworks() else ""


def infer_stack(framework: str, software: str, date: str = "") -> StackChoice:
    """The preset a measured run's `framework`, `software` and `date` cells describe (_infer), with the features its
    words state over that preset (_stated: torchtitan's compile / AsyncTP / float8 words, DeepSpeed's ZeRO stage),
    whichever rule found the preset (issue 26 item 4)."""
    return _stated(_infer(framework, software, date), (software or "").strip())


def _infer(framework: str, software: str, date: str = "") -> StackChoice:
    """The preset a measured run's `framework`, `software` and `date` cells (or a log banner, a container tag, an
    MLPerf system description: free text) describe, in this order (issue 26):
    1. a preset's software label that the text starts with (and whose frameworks list the framework, when it lists any);
    2. a NeMo or DGXC release the text names (container tags too): that release's preset, or the nearest release's;
       a Megatron-Bridge or NeMo toolkit version it names: the release that ships it, or the nearest earlier one;
    3. a NeMo run naming no release: the latest NeMo preset released by the run's `date`;
    4. a framework named in the text (torchtitan, DeepSpeed, MaxText, ...);
    5. the framework cell's family defaults (FRAMEWORK_FALLBACK), else the default stack: flagged as guesses."""
    named, sw = (framework or "").strip().lower(), (software or "").strip()
    fw = _framework(named)
    for label, sid, fws in _labels():
        if sw.startswith(label) and (not fws or not fw or fw in fws):
            return StackChoice(sid, (), f"software label '{label}' of preset {sid}", "label")
    for fam, rx in (("dgxc", _DGXC_RELEASE), ("nemo", _NEMO_RELEASE)):
        m = rx.search(sw)
        if m:
            month = (2000 + int(m.group(1))) * 12 + int(m.group(2)) - 1
            near = _nearest(fam, month, framework=fw)
            if near is not None:
                rel = f"{m.group(1)}.{m.group(2)}"
                if near[0] == month:
                    return StackChoice(near[2], (), f"{fam.upper()} release {rel} named in '{sw}'", "release")
                return StackChoice(
                    near[2],
                    (),
                    f"{fam.upper()} release {rel} named in '{sw}' has no preset: the nearest "
                    f"release with one, {near[1]} ({near[2]})",
                    "nearest release",
                )
    by_version = _by_library_version(sw)
    if by_version is not None and (not fw or fw in ("megatron", "other")):
        return by_version
    month = _month(date)
    if re.search(r"\bnemo\b", sw, re.IGNORECASE) and month is not None:
        near = _nearest("nemo", month, on_or_before=True, framework=fw)
        if near is not None:
            return StackChoice(
                near[2],
                (),
                f"NeMo named in '{sw}' without a release: the latest NeMo preset by the "
                f"run's date {date.strip()[:7]}, {near[1]} ({near[2]})",
                "release by date",
            )
    for rx, sid in _NAMED:
        if rx.search(sw) or rx.search(named):
            said = sw if rx.search(sw) else named
            return StackChoice(sid, (), f"framework named in '{said}': preset {sid}", "framework named")
    for rx, sid, what in _STAND_IN:
        if rx.search(sw) or rx.search(named):
            return StackChoice(sid, (), f"no preset of {what}: the nearest one, {sid} (a stand-in)", "stand-in")
    if fw in FRAMEWORK_FALLBACK:
        sid = FRAMEWORK_FALLBACK[fw]
        return StackChoice(
            sid, (), f"no preset matches '{sw}': framework {fw}'s library defaults ({sid})", "framework default"
        )
    return StackChoice(
        DEFAULT_STACK, (), f"no preset matches framework '{named}' / software '{sw}': the default stack", "default"
    )


def check_stack(stack: str | None, stack_set: tuple[str, ...] | list[str] = ()) -> None:
    """Load the stack and apply its overrides once, so a bad id, file or feature is one InputError naming the
    input (`stack`, `stack_set`) and the field before any prediction (load_stack / apply_overrides)."""
    try:
        spec = load_stack(stack)
    except InputError as exc:
        if exc.where == "stacks":  # an unknown id
            raise InputError("stack", exc.field, exc.reason) from None
        raise
    apply_overrides(spec, list(stack_set))
