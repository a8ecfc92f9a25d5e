"""Named physical constants of the cost model: bytes per element and per parameter, kernels per op.

None of these is fitted (the fitted few live in calibration.toml). Each says its unit and where it comes
from; the cost model uses these names, never the bare numbers.
"""

from __future__ import annotations

# ---- element sizes (bytes) ----------------------------------------------------------------------
BF16 = 2.0  # bf16 / fp16 activations, weights, gradients (IEEE 754 half formats)
FP32 = 4.0  # fp32 softmax / loss, master weights, Adam moments
FP8 = 1.0  # fp8 weights under fp8_param_gather (Transformer Engine)

# ---- optimizer (mixed-precision Adam; Micikevicius et al. 2018, Rajbhandari et al. 2020 §3) ----------
ADAM_STATE_BYTES = 12.0  # per parameter: fp32 master weight + first and second moment (ZeRO's K = 12)
# torch.autocast's cast of an fp32 weight to bf16 (aten::_to_copy): reads 4 B, writes 2 B per element; its backward
# casts the bf16 weight gradient back to fp32: reads 2 B, writes 4 B (workload._autocast_casts)
AUTOCAST_CAST_BYTES_FWD = 4.0 + 2.0
AUTOCAST_CAST_BYTES_BWD = 2.0 + 4.0
# fused Adam step per parameter of the local shard: read master, m, v (3 x 4 B) and write them (3 x 4 B),
# plus reading the gradient (2 B bf16, 4 B fp32): 26 B with bf16 grads (apex / TE FusedAdam multi-tensor kernel)
ADAM_STATE_STEP_BYTES = 24.0
# per parameter held by the GPU, in units of the gradient's size: zero the grad buffer (write 1x), read it for
# the global grad norm (1x) and scale it for clipping (read + write 2x) -> 4x (8 B with bf16 grads)
# (Megatron-Core optimizer clip_grad_norm)
GRAD_NORM_ZERO_GRADS = 4.0
OPTIMIZER_KERNELS = 10  # multi-tensor launches of one optimizer step (zero, norm, clip, Adam chunks)
# a per-tensor optimizer loop (parallel/dp.py optimizer_kernels): Composer's DecoupledAdamW.adamw runs, per
# parameter tensor at weight_decay 0, exp_avg.mul_ / add_, exp_avg_sq.mul_ / addcmul_, sqrt, div, add_(eps) and
# param.addcdiv_ (mosaicml/composer v0.13.4 and v0.17.2 composer/optim/decoupled_weight_decay.py: 8 kernels), and
# FSDP's clip_grad_norm_ one vector_norm and one mul_ per gradient (2): 10 launches per tensor
PER_TENSOR_OPTIMIZER_KERNELS = 10
# nanotron's per-parameter loops beside its fused Adam (huggingface/nanotron@0e0a27ea): clip_grad_norm
# (src/nanotron/optim/clip_grads.py) one torch.linalg.vector_norm per gradient, stacked, and one mul_ per gradient (or
# its fp32 accumulation buffer) by the clip coefficient; with accumulate_grad_in_fp32 (its examples' setting)
# FP32GradientAccumulator.step copies each updated fp32 master back into its bf16 parameter (half_param.copy_):
# 3 launches per tensor (2 without the fp32 accumulation, not distinguished)
PER_TENSOR_CLIP_KERNELS = 3

# ---- elementwise traffic per token (bytes per hidden unit), Megatron-Core transformer layer ----------
NORM_BYTES = 4.0  # one RMSNorm/LayerNorm: read x, write y in bf16 (per hidden unit)
RESIDUAL_BYTES = 12.0  # two residual (bias-dropout-)adds: each reads two bf16 tensors, writes one
ROPE_BYTES = 4.0  # rotary embedding on q and k: read and write bf16 per rotated dimension
# activation function per unit of FFN width: SwiGLU reads gate and up and writes one (6 B),
# GELU reads one and writes one (4 B)
ACT_BYTES_GLU = 6.0
ACT_BYTES_PLAIN = 4.0
# kernels of the elementwise ops of one layer (norms, RoPE, residual adds, activation, SP copies): forward 12,
# backward 20 (PyTorch profiler traces of a Megatron-Core / Transformer Engine layer; backward adds the
# grad-accumulation adds and the recomputed norm statistics)
LAYER_KERNELS_FWD = 12
LAYER_KERNELS_BWD = 20

# query rows per flash-attention work item (one thread block's q tile): 128 in FlashAttention-2/-3 and cuDNN's
# fused attention for head_dim 128 (Dao 2023, FlashAttention-2 Sec. 3.3 block sizes; hardware/kernels/*.toml
# tile_rows states the tile the occupancy tables were read with)
ATTENTION_TILE_ROWS = 128

# ---- embedding, LM head and loss ---------------------------------------------------------------------
# fp32 logits: write, read for softmax + cross-entropy, write the gradient (3 x 4 B per vocab entry);
# final norm in and out in fp32 (2 x 4 B per hidden unit) (Megatron-Core vocab_parallel_cross_entropy)
LOGIT_BYTES = 3 * FP32
FINAL_NORM_BYTES = 2 * FP32
HEAD_KERNELS = 6  # cast, max, exp-sum, loss, grad, final norm
# embedding lookup forward (write bf16 row) and its gradient scatter-add backward (read + write)
EMBED_BYTES = 2 * 2 * BF16
EMBED_KERNELS = 2

# ---- saved for backward beyond the bf16 tensors -------------------------------------------------------
LSE_BYTES = FP32  # flash-attention log-sum-exp per query per head (Dao 2023 §3.1)
ROUTER_LOGIT_BYTES = FP32  # MoE router logits / probabilities per token per expert, fp32

# ---- software-stack features (perfmodel/core/software.py) ---------------------------------------------------
# unfused attention (Megatron fused scale-mask-softmax path), bytes per score element and micro-batch moved by
# the kernels BETWEEN the two batched GEMMs (the GEMMs' own operand and result traffic, the QK^T score write
# and the PV probability read, is in their roofline, compute.gemm_time):
# forward: softmax reads 2 writes 2, dropout reads 2 writes 2 and a 1-byte mask -> 9;
# backward: dropout backward reads the probability gradient (2) and the mask (1) and writes 2, softmax
# backward reads that gradient (2) and the softmax output (2) and writes the score gradient (2) -> 11
# (Megatron-LM megatron/fused_kernels scaled_masked_softmax forward / backward; torch dropout / its backward):
# two kernels each way (workload._attention_block)
UNFUSED_SCORE_BYTES_FWD = 9.0
UNFUSED_SCORE_BYTES_BWD = 11.0
# ... and saved for backward per score element: softmax output (2), dropout mask (1), dropout output (2)
# (Korthikanti et al. 2022 §4.1, Table 2: 5 a s^2 b)
UNFUSED_SCORE_SAVED = 5.0
# Transformer Engine's UnfusedDotProductAttention (attention kernel "te_unfused"), read at TE v2.3
# (transformer_engine/pytorch/attention/dot_product_attention/backends.py UnfusedDotProductAttention.forward, the
# same in v2.2 and v2.4), as NeMo's DeepSeek-V3 recipe runs it (attention_dropout 0.0: torch.nn.Dropout(p=0)
# returns its input, no kernel): bytes per score element and micro-batch between the two batched GEMMs (as
# UNFUSED_SCORE_*): forward the fused ScaledMaskedSoftmax reads the scores (2) and the explicit mask (1) and writes
# the probabilities (2) -> 5; backward its in-place backward reads the probability gradient (2) and the
# probabilities (2) and writes the score gradient (2) -> 6; saved for backward: the probabilities (2).
TE_UNFUSED_SCORE_BYTES_FWD = 5.0
TE_UNFUSED_SCORE_BYTES_BWD = 6.0
TE_UNFUSED_SCORE_SAVED = 2.0
# ... and every call first builds the full [1, 1, s_q, s_kv] causal mask (dot_product_attention/utils.py
# get_full_mask, v2.3 lines 1100-1130), bytes per (query, key) position, shared by the heads and sequences of the
# call: int32 arange difference (write 4), swa_left = mask - w0 and swa_right = mask + w1 (read 4 + write 4 each),
# swa_left <= 0 and swa_right < 0 (read 4 + write 1 each), two torch.where(cond, 1, 0) to int64 (read 1 + write 8
# each), their int64 difference (read 16 + write 8), logical_not (read 8 + write 1) -> 81 B in 9 full-size
# kernels (and two small aranges)
TE_CAUSAL_MASK_BYTES = 81.0
TE_CAUSAL_MASK_KERNELS = 11
# FP8 current (per-tensor, just-in-time) scaling: one more bf16 read of each quantised tensor for its amax
# (Transformer Engine Float8CurrentScaling)
AMAX_PASS_BYTES = 2.0

# biased experts (gpt-oss) under Megatron-Core TEGroupedMLP._apply_bias: fc2 bias times routing probability
# added in an eager per-expert loop, bf16 bytes per element of the fc2 output (workload._expert_bias_loop)
EXPERT_BIAS_BYTES_FWD = 12.0
EXPERT_BIAS_BYTES_BWD = 12.0

# gpt-oss clamped SwiGLU experts under Megatron-Core (TEGroupedMLP.bias_act_func ->
# megatron/core/fusions/fused_bias_geglu.py weighted_bias_quick_geglu_impl at 1fb2a0ca, activation_func_clamp_value
# 7.0 from Megatron-Bridge GPTOSSProvider): the clamp runs eagerly before the fused (jit) activation:
# x_glu, x_linear = input.chunk(2, -1); input = torch.cat((x_glu.clamp(max=v), x_linear.clamp(-v, v)), -1).
# Bytes per token copy per unit of expert width f (each half is f wide, bf16): forward, two clamps read 2 and
# write 2 each (8) and the cat reads both halves and writes 2f (8) -> 16 B; backward (PyTorch autograd,
# torch/csrc/autograd/FunctionsManual.cpp clamp_backward: where(self <= max, grad, 0) for the gate half, reading
# the mask comparison's input 2 and writing 1, then where reading 1 + 2 and writing 2 -> 8; the linear half
# where((self >= min).logical_and_(self <= max), grad, 0): two comparisons 3 + 3, logical_and 3, where 5 -> 14;
# chunk's backward (split_backward) cats the two half-gradients into the fc1 output gradient: read 4, write 4
# -> 8) -> 30 B. Kernels: 2 clamps + cat + the offset's host-to-device copy
# (torch.tensor(linear_offset, device=...), every call) forward; 2 + 4 + 1 backward (not counting the two
# at::scalar_tensor zeros clamp_backward builds).
CLAMP_BYTES_FWD = 16.0
CLAMP_BYTES_BWD = 30.0
CLAMP_KERNELS_FWD = 4
CLAMP_KERNELS_BWD = 7

# ---- eager PyTorch without fusion (stack fusions = "none") ------------------------------------------------
# LayerNorm and GELU are single native CUDA kernels in eager PyTorch (aten::native_layer_norm, aten::gelu),
# so they cost what the fused path costs. RMSNorm, SwiGLU and RoPE are composites of elementwise kernels, and
# RMSNorm and RoPE compute in fp32: torchtitan's RMSNorm (pytorch/torchtitan@9dec370ad torchtitan/models/norms.py,
# until @3b39d7ab 2025-03-19) is `self._norm(x.float()).type_as(x) * self.weight` with _norm = x * rsqrt(x.pow(2)
# .mean(-1, keepdim=True) + eps), and the torch.nn.RMSNorm it switched to runs the same upcast composite on CUDA
# (aten/src/ATen/native/layer_norm.cpp rms_norm_symint: input.to(opmath_t), pow, mean, add_, rsqrt, mul, mul by the
# weight, type_as) until the fused _fused_rms_norm kernel replaced it. Bytes per element of the normalised
# activation, forward: cast bf16 -> fp32 (read 2, write 4), pow (4, 4), mean (4), x * rsqrt (4, 4), cast back
# (4, 2), times the weight (2, 2) -> 36 B in 8 kernels (with the per-row add and rsqrt) against the fused 4 B in
# 1. Backward (autograd of the same ops): grad x weight (2, 2) and the weight's gradient sum (2 + 2), cast up (2, 4),
# x rsqrt (4, 4) and the rsqrt gradient sum (4 + 4), mean's gradient expanded and divided (write 4), pow's 2 x a x
# grad (read 4 + 4 + 4, write 4 + 4), the two input gradients added (4 + 4, write 4), cast down (4, 2) -> 72 B in
# 11 kernels against the fused 8 B in 1.
# SwiGLU silu(gate) * up: silu (read 2, write 2), mul (read 2 + 2, write 2) -> 10 B per unit of width
# against the fused 6 B, 2 kernels. RoPE as complex multiplication (torchtitan apply_rotary_emb, the same at
# @9dec370ad and @038d5fd1b: view_as_complex(xq.float()), * freqs_cis, view_as_real, type_as), per element of q and
# k: cast up (2, 4), the complex product (4, 4), cast down (4, 2) -> 20 B in 3 kernels per tensor, forward;
# backward the same three in reverse (cast up, times conj(freqs), cast down) -> 20 B.
EAGER_RMSNORM_BYTES_FWD = 36.0
EAGER_RMSNORM_BYTES_BWD = 72.0
EAGER_SWIGLU_BYTES = 10.0
EAGER_ROPE_BYTES_FWD = 20.0
EAGER_ROPE_BYTES_BWD = 20.0
# kernels added per layer over the fused path: 2 norms x 7 extra forward (8 - 1) and 10 extra backward (11 - 1),
# SwiGLU +1 each way, RoPE 2 x 3 kernels for q and k against the fused 1 (+5) each way
EAGER_EXTRA_KERNELS_FWD = 20
EAGER_EXTRA_KERNELS_BWD = 26
# what that eager RMSNorm keeps for backward, per element of the normalised activation (pytorch
# tools/autograd/derivatives.yaml: _to_copy saves nothing, pow.Tensor_Scalar saves self, mul.Tensor saves self and
# other, rsqrt saves its result): the fp32 copy x.float() (4 B, saved by the pow and by x * rsqrt, one tensor) and
# the normalised bf16 output before the weight (2 B, saved by the multiplication by the weight), the per-row rsqrt
# aside; not the bf16 input (no op of the composite saves it) -> 6 B where a fused norm keeps its 2 B input: 4 B
# more, recomputed with the norm (module layernorm)
EAGER_RMSNORM_SAVED_EXTRA = 4.0

# Megatron-Core's unfused RoPE, which a YaRN model runs (model rope_scaling = "yarn"): YaRN's concentration factor
# is 0.1 ln(factor) + 1 = 1.35 at factor 32 when yarn_mscale / yarn_mscale_all_dim are None
# (megatron/core/models/common/embeddings/yarn_rotary_pos_embedding.py _yarn_get_concentration_factor), and
# rope_utils.apply_rotary_pos_emb takes the unfused path for any mscale != 1 even with apply_rope_fusion ('mscale=...
# is not supported by TE's fused RoPE. Using unfused implementation.'); Megatron-Bridge also switches the fusion
# off for position_embedding_type != 'rope' (src/megatron/bridge/utils/fusions.py validate_rope_fusion_compatibility,
# called from gpt_provider.py provide(), at v0.2.0 / v0.3.0 / v0.4.0 / v0.5.0). Megatron-LM at the commits those
# Bridge tags pin (0d8e0714, b0cc2706, d7288711, d0b3b775), rope_utils.py lines 113-126 _apply_rotary_pos_emb_bshd,
# called once for q and once for k (attention.py, split_qkv): t, t_pass = t[..., :rot_dim], t[..., rot_dim:] (views,
# rot_dim = head_dim); cos_ = (cos(freqs) * mscale).to(bf16), sin_ likewise (3 + 3 small kernels on the [s, 1, 1, d]
# table); t * cos_ (read 2, write 2 B per element of t); _rotate_half: chunk (views), -x2 (read 1, write 1), cat
# (2 + 2); * sin_ (2 + 2); the sum (4 + 2); torch.cat((t, t_pass)) copies t (2 + 2) -> 24 B per rotated element
# forward in 6 full-size kernels and 6 small ones. Backward, the autograd of that graph: both cats give narrow views
# and the sum passes its gradient through; grad * sin_ (2 + 2), the negation's gradient (1 + 1), chunk's
# SplitBackward cat (2 + 2), grad * cos_ (2 + 2), the sum of t's two gradients (4 + 2) -> 20 B in 5 kernels (the
# empty t_pass slice's zero-filled gradient, if autograd builds it, is not counted). The fused kernel it replaces
# (ROPE_BYTES, one kernel per call each way, inside LAYER_KERNELS_*): 2 x 12 - 2 kernels forward, 2 x 5 - 2 backward.
MCORE_UNFUSED_ROPE_BYTES_FWD = 24.0
MCORE_UNFUSED_ROPE_BYTES_BWD = 20.0
MCORE_UNFUSED_ROPE_KERNELS_FWD = 22
MCORE_UNFUSED_ROPE_KERNELS_BWD = 8

# The share of moe_permute_bytes (calibration.toml: 20 B per token copy per hidden unit forward on the NCCL
# all-to-all path = permute 4 + local sort 4 + local unsort 4 + un-permute 4 with its FP32 weighted scatter-add 4)
# that DeepEP's and HybridEP's flex dispatcher fuses into the communication kernels: the global permute before
# dispatch and the global un-permute after combine, 4 + 8 B (NVIDIA/Megatron-LM docs/discussions/
# deepseek-v3-gb200-optimization/deepseek-v3-gb200-optimization.md Sec. 2.1.1: "The AlltoAll dispatcher using the
# NCCL backend requires one global and one local permute before and after EP communication ... The Flex Dispatcher
# of DeepEP or HybridEP fuses the global permute into the communication kernel ... but still requires a permute
# kernel to ... rearrange the tokens distributed to different local experts")
MOE_GLOBAL_PERMUTE_BYTES = 12.0

# ---- MoE routing imbalance (parallel/ep.py routing_imbalance) ---------------------------------------------------
# Coefficient of variation of one expert's routed-token load within a step under real routing, by load-balancing
# method, read back through the same max-of-sums relation from measured per-rank or per-expert imbalance
# (research notes moe-imbalance.md):
# - expert_bias (DeepSeek-V3's auxiliary-loss-free bias balancing): UltraEP (arXiv 2606.04101) measured the busiest
#   of 64 EP ranks at 1.30 of the mean with 4 DeepSeek-V3 experts each (Megatron-LM, from a training checkpoint):
#   0.30 x sqrt(4) / 2.335 = 0.26;
# - global_batch (Qwen3's global-batch load-balancing loss): UltraEP, Qwen3-235B, EP 64, 2 experts per rank: 2.86:
#   1.86 x sqrt(2) / 2.335 = 1.13;
# - aux_loss (GShard / Switch auxiliary loss, Megatron-Core's default moe_router_load_balancing_type): the
#   Auxiliary-Loss-Free Load Balancing paper (Wang et al. 2024, arXiv 2408.15664) Table: MaxVio_global 0.52-0.72
#   over 64 experts with aux-loss control: 0.72 / 2.335 = 0.31 (the upper end: a step's own imbalance exceeds the
#   whole validation set's).
ROUTING_CV = {"aux_loss": 0.31, "expert_bias": 0.26, "global_batch": 1.13}

# ---- point-to-point send/recv (pipeline stage boundaries, the context-parallel ring) -------------------
# One ring step between neighbours inside an NVLink domain in NCCL's latency model (hwLat[NVLINK][RING][SIMPLE] =
# 3.4 us, NVIDIA/nccl@b6475625 src/graph/tuning.cc; the same value since NCCL 2.8). comm.ring_latency.
NCCL_RING_NVLINK_STEP_S = 3.4e-6

# Data-parallel buckets (parallel/dp.py collective_calls): Megatron-Core's default bucket of max(40M, 1M x dp*cp)
# parameters (NVIDIA/Megatron-LM megatron/training/training.py get_model, ddp_config.bucket_size) and DeepSpeed
# ZeRO's reduce / all-gather buckets of 5e8 elements (deepspeed/runtime/zero/config.py reduce_bucket_size,
# allgather_bucket_size).
MEGATRON_BUCKET_MIN_PARAMS = 40e6
MEGATRON_BUCKET_PER_DP_PARAMS = 1e6
DEEPSPEED_BUCKET_PARAMS = 5e8
# torch DistributedDataParallel: bucket_cap_mb 25 (MiB of gradient bytes), the first bucket 1 MiB
# (torch/nn/parallel/distributed.py: bucket_cap_mb default 25, _DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024); counted
# on bf16 gradients (2 B), the dtype of a bf16 model's .grad (nanotron: ModelArgs.dtype bfloat16)
TORCH_DDP_BUCKET_PARAMS = 25 * 1024 * 1024 / 2.0
TORCH_DDP_FIRST_BUCKET_PARAMS = 1024 * 1024 / 2.0

# NCCL gives one pair of GPUs only a few channels for send/recv ("2 p2p channels per peer" in NCCL's init log,
# NVIDIA/nccl#1189; NCCL's send/recv is tuned for all-to-all, where every peer shares the links: NVIDIA/nccl#1272),
# so a single pair's NCCL send/recv over NVLink is bound by those channels' copy rate, not by the link:
# nccl-tests sendrecv_perf between two NVLink-connected H100s ~80 GB/s in the default configuration against 260 GB/s
# for an SM copy kernel (NVIDIA/nccl-tests#268); between two A100s ~71-73 GB/s, both P2P transports (nccl-tests#331).
# The pair's NVLink rate is min(this, the link's collective rate) (comm.p2p_time); across domains a pair's
# send/recv rides its NIC as before.
NCCL_P2P_PEER_BW = 80e9  # bytes/s, one pair of GPUs, NCCL send/recv over NVLink (default channels per peer)
