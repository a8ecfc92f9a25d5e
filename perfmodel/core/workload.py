"""The workload as data: op records per layer kind and per pipeline stage, for arrays of layouts.

An op record says what one GPU does for one micro-batch: a GEMM's M, N, K; an attention core's FLOPs
and keys per query; a memory-bound op's HBM bytes; a collective's bytes, group and overlap class; the
activation bytes kept for backward and the recompute module they belong to. Nothing here prices
anything: cost.py turns records into seconds and memory.py sums their saved bytes, so time and memory
read the same ops. Every field is a numpy array over layouts (or a scalar that broadcasts).

Shapes follow Megatron-Core: with tensor parallelism t and sequence parallelism, column-parallel GEMMs
see the all-gathered tokens (M = micro-batch tokens / cp) and N / t; row-parallel GEMMs K / t
(Shoeybi et al. 2019 §3; Korthikanti et al. 2022 §4.2.2). MLA down-projections are duplicated across
TP ranks (Megatron-Core MLASelfAttention). Routed experts see tokens * top_k * ep * etp / (t * E) rows
each under balanced routing (MoE parallel folding, Liu et al. 2025).

The axes each record depends on are declared (`AXES`): the planner can evaluate a record once per unique
combination of those axes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from perfmodel.core import constants as K
from perfmodel.core.ops import AttentionCore, Fixed, Gemm, Head, Layer, Saved, Stream, Workload
from perfmodel.core.parallel import cp as cp_par
from perfmodel.core.parallel import ep as ep_par
from perfmodel.core.parallel import tp as tp_par
from perfmodel.core.software import head_dim_factor
from perfmodel.specs.layout import LayoutGrid
from perfmodel.specs.model import ModelSpec

# layout axes a per-layer record depends on (never dp, pp, vp: those act in parallel/pp.py and dp.py)
AXES = ("tp", "cp", "ep", "etp", "mbs", "seq", "precision")
# ... per layer kind: a dense layer's records (_attention_block, _dense_ffn) never read ep or etp; nor do
# the attention, dense-MLP, shared-expert and router GEMMs of an MoE layer (Gemm.axes)
DENSE_AXES = ("tp", "cp", "mbs", "seq", "precision")
KIND_AXES = {"dense": DENSE_AXES, "moe": AXES}


def _dense_axes(records: list) -> list:
    """`records` (GEMMs, collectives) declared to depend on DENSE_AXES only."""
    return [replace(g, axes=DENSE_AXES) for g in records]


# ---- helpers shared with the report ---------------------------------------------------------------


def _mean_keys_fn(kind: str, window: int, convention: str):
    from perfmodel.specs.counts import mean_keys_fn  # sympy formula, lambdified once and cached on disk (fncache.py)

    return mean_keys_fn(kind, window, convention)


def mean_keys_value(kind: str, window: int, seq: np.ndarray, convention: str = "causal") -> np.ndarray:
    """Mean keys per query (counts.mean_keys), lambdified once per (kind, window, convention)."""
    f = _mean_keys_fn(kind, window, convention)
    return np.broadcast_to(np.asarray(f(np.asarray(seq, dtype=float)), dtype=float), np.shape(seq)).astype(float)


def rope_dims(m: ModelSpec) -> float:
    a = m.attention
    if m.position_embedding != "rope":
        return 0.0
    if a.kind == "mla":
        return (a.num_heads + 1) * a.qk_rope_head_dim
    return (a.num_heads + a.num_kv_heads) * a.head_dim


def act_bytes_per_width(m: ModelSpec, eager: bool = False) -> float:
    """HBM bytes per token per unit of FFN width for the activation function (read in, write out, BF16);
    eager PyTorch runs SwiGLU as two kernels (constants.EAGER_SWIGLU_BYTES), GELU as one native kernel."""
    if m.ffn.matrices == 3:
        return K.EAGER_SWIGLU_BYTES if eager else K.ACT_BYTES_GLU
    return K.ACT_BYTES_PLAIN


def attention_gemms(m: ModelSpec, T, tp, separate: bool = False) -> list[Gemm]:
    """The attention block's GEMMs in execution order; `separate` (stack projections): wq, wk, wv as three GEMMs
    (torchtitan Attention.forward: xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)), else one fused QKV GEMM."""
    a, h = m.attention, m.hidden_size
    one = 0 * np.asarray(tp, dtype=float)
    if a.kind == "mla":
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        out = []
        if a.q_lora_rank:
            out += [
                Gemm("q down", T, a.q_lora_rank + one, h + one),
                Gemm("q up", T, a.num_heads * qk / tp, a.q_lora_rank + one, module="mla_up_proj"),
            ]
        else:
            out += [Gemm("q proj", T, a.num_heads * qk / tp, h + one)]
        out += [
            Gemm("kv down", T, a.kv_lora_rank + a.qk_rope_head_dim + one, h + one),
            Gemm(
                "kv up",
                T,
                a.num_heads * (a.qk_nope_head_dim + a.v_head_dim) / tp,
                a.kv_lora_rank + one,
                module="mla_up_proj",
            ),
            Gemm("out proj", T, h + one, a.num_heads * a.v_head_dim / tp),
        ]
        return _dense_axes(out)
    q = a.num_heads * a.head_dim
    kv = 2 * a.num_kv_heads * a.head_dim
    if separate:
        return _dense_axes(
            [
                Gemm("q proj", T, q / tp, h + one),
                Gemm("k proj", T, kv / 2 / tp, h + one),
                Gemm("v proj", T, kv / 2 / tp, h + one),
                Gemm("out proj", T, h + one, q / tp),
            ]
        )
    return _dense_axes([Gemm("qkv proj", T, (q + kv) / tp, h + one), Gemm("out proj", T, h + one, q / tp)])


COLUMN = {False: ("qkv proj",), True: ("q proj", "k proj", "v proj")}  # the column-parallel GEMMs of attention
MLP_COLUMN = {False: ("mlp up/gate",), True: ("mlp gate", "mlp up")}


def mlp_gemms(
    m: ModelSpec, T, width, split, name: str = "mlp", module: str = "mlp", separate: bool = False
) -> list[Gemm]:
    """Dense MLP (or shared expert) of `width`, split `split`-ways (TP), in execution order; `separate` (stack
    projections) with a gated FFN: w1 (gate), w3 (up), w2 (down) as three GEMMs (torchtitan FeedForward.forward:
    self.w2(F.silu(self.w1(x)) * self.w3(x)))."""
    h = m.hidden_size
    one = 0 * np.asarray(split, dtype=float)
    up = (2 if m.ffn.matrices == 3 else 1) * width
    if separate and m.ffn.matrices == 3:
        return _dense_axes(
            [
                Gemm(f"{name} gate", T, width / split, h + one, module=module),
                Gemm(f"{name} up", T, width / split, h + one, module=module),
                Gemm(f"{name} down", T, h + one, width / split, module=module),
            ]
        )
    return _dense_axes(
        [
            Gemm(f"{name} up/gate", T, up / split, h + one, module=module),
            Gemm(f"{name} down", T, h + one, width / split, module=module),
        ]
    )


def expert_gemms(m: ModelSpec, rows_per_expert, local_experts, etp, grouped: bool = True) -> list[Gemm]:
    e, h = m.moe, m.hidden_size
    assert e is not None
    one = 0 * np.asarray(etp, dtype=float)
    up = (2 if m.ffn.matrices == 3 else 1) * e.expert_intermediate_size
    return [
        Gemm(
            "expert up/gate",
            rows_per_expert,
            up / etp,
            h + one,
            local_experts,
            module="moe",
            grouped=grouped,
            experts=True,
        ),
        Gemm(
            "expert down",
            rows_per_expert,
            h + one,
            e.expert_intermediate_size / etp,
            local_experts,
            module="moe",
            grouped=grouped,
            experts=True,
        ),
    ]


# ---- the layer kinds --------------------------------------------------------------------------------


def _attention_block(m: ModelSpec, T, Ts, tp, cp, mbs, seq, sw, gin: float = K.BF16, ag: float = K.BF16):
    """(gemms, attention cores, streams, collectives, saved) of the attention half of a layer; `gin` = bytes
    per element of the GEMM inputs the linear layers keep for their weight gradient (saved_input_bytes)."""
    a, h = m.attention, m.hidden_size
    sep = sw.separate_projections and a.kind != "mla"
    gemms = attention_gemms(m, T, tp, sep)
    # without sequence parallelism norms, dropout and residual adds run on every TP rank's full sequence
    # (Korthikanti et al. 2022 §4.2.2); the TP all-reduce moves the same bytes as all-gather + reduce-scatter
    Tn = Ts if sw.sequence_parallel else T
    per_q = 2 * a.num_heads * (a.qk_dim + a.v_dim) / tp  # score FLOPs per query per key
    n_win = m.num_windowed_layers
    cores, streams = [], []
    unfused = sw.attention in ("unfused", "te_unfused")
    te = sw.attention == "te_unfused"  # Transformer Engine's UnfusedDotProductAttention (constants.TE_UNFUSED_*)
    dim_f, dim_b = head_dim_factor(sw.attention, a.qk_dim)
    for kind, count, win in (("global", m.num_layers - n_win, 0), (a.window_kind, n_win, a.window)):
        if count:
            keys = mean_keys_value(kind, win, seq)
            if unfused:  # two batched GEMMs over the whole s x s square per head, scores through HBM
                heads = a.num_heads / tp * mbs * (count / m.num_layers)
                s_loc = seq / cp
                gemms += _dense_axes(
                    [
                        Gemm("QK^T (unfused)", s_loc, seq + 0 * tp, a.qk_dim + 0 * tp, heads, False, "core_attn"),
                        Gemm("PV (unfused)", s_loc, a.v_dim + 0 * tp, seq + 0 * tp, heads, False, "core_attn"),
                    ]
                )
                b_f, b_b = (
                    (K.TE_UNFUSED_SCORE_BYTES_FWD, K.TE_UNFUSED_SCORE_BYTES_BWD)
                    if te
                    else (K.UNFUSED_SCORE_BYTES_FWD, K.UNFUSED_SCORE_BYTES_BWD)
                )
                streams.append(
                    Stream(
                        "attention scores (unfused)",
                        b_f * heads * s_loc * seq,
                        b_b * heads * s_loc * seq,
                        2,
                        2,
                        "core_attn",
                    )
                )
                if te:  # the causal mask TE builds on every call, one per layer and micro-batch (share of layers)
                    share = count / m.num_layers
                    streams.append(
                        Stream(
                            "causal mask build (unfused)",
                            K.TE_CAUSAL_MASK_BYTES * s_loc * seq * share + 0 * tp,
                            0.0,
                            K.TE_CAUSAL_MASK_KERNELS * share,
                            0.0,
                            "core_attn",
                        )
                    )
            else:
                cores.append(
                    AttentionCore(
                        f"attention ({kind})",
                        per_q * mbs * seq * keys / cp,
                        keys,
                        count / m.num_layers,
                        dim_factor_fwd=dim_f,
                        dim_factor_bwd=dim_b,
                        items=mbs * (a.num_heads / tp) * np.ceil(seq / cp / K.ATTENTION_TILE_ROWS),
                    )
                )
    eager = sw.eager
    # eager RMSNorm / RoPE: PyTorch composites in fp32 (constants.EAGER_RMSNORM_BYTES_*); LayerNorm is native
    norm_f, norm_bw = (
        (K.EAGER_RMSNORM_BYTES_FWD, K.EAGER_RMSNORM_BYTES_BWD)
        if (eager and m.norm == "rmsnorm")
        else (K.NORM_BYTES, 2 * K.NORM_BYTES)
    )
    rope_f, rope_bw = (K.EAGER_ROPE_BYTES_FWD, K.EAGER_ROPE_BYTES_BWD) if eager else (K.ROPE_BYTES, 2 * K.ROPE_BYTES)
    rope = Stream("rope", rope_f * rope_dims(m) / tp * T, rope_bw * rope_dims(m) / tp * T)
    if m.rope_scaling == "yarn" and a.kind != "mla" and sw.megatron_core:
        # YaRN's mscale sends Megatron-Core's q / k RoPE down its unfused path (constants.MCORE_UNFUSED_ROPE_*)
        rope = Stream(
            "rope (unfused, YaRN mscale)",
            K.MCORE_UNFUSED_ROPE_BYTES_FWD * rope_dims(m) / tp * T,
            K.MCORE_UNFUSED_ROPE_BYTES_BWD * rope_dims(m) / tp * T,
            K.MCORE_UNFUSED_ROPE_KERNELS_FWD,
            K.MCORE_UNFUSED_ROPE_KERNELS_BWD,
        )
    streams += [
        Stream("norms", m.norms_per_layer * norm_f * h * Tn, m.norms_per_layer * norm_bw * h * Tn, module="layernorm"),
        Stream("residual adds", K.RESIDUAL_BYTES * h * Tn, 2 * K.RESIDUAL_BYTES * h * Tn),
        rope,
    ]
    # GQA / MHA: the fused QKV projection is the column-parallel GEMM on the gathered input; MLA gathers the
    # input itself before its duplicated down-projections (Megatron-Core MLASelfAttention), so its backward
    # pair stays synchronous
    name = "attention TP all-gather + reduce-scatter"
    if a.kind == "mla":
        tp_comms = [tp_par.sequence_parallel_pair(name, T * h * K.BF16, tp)]
    elif sw.split_tp:
        tp_comms = tp_par.split_pair("attention TP", T * h * K.BF16, tp, sw, COLUMN[sep], ("out proj",), T * h * ag)
    else:
        tp_comms = tp_par.block_pair(name, T * h * K.BF16, tp, sw, COLUMN[sep])
    cp_comms = cp_par.exchange(m, T, tp, cp, sw.cp_comm)
    comms = _dense_axes([*tp_comms, *(cp_comms if isinstance(cp_comms, list) else [cp_comms])])
    # saved for backward (Korthikanti et al. 2022 §4.1, Table 2, with flash attention: no s^2 terms)
    if a.kind == "mla":
        q, kv, o = a.num_heads * a.qk_dim, a.num_heads * (a.qk_dim + a.v_dim), a.num_heads * a.v_dim
        lat = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim
    else:
        q, kv = a.num_heads * a.head_dim, 2 * a.num_kv_heads * a.head_dim
        o, lat = q, 0
    saved = [
        Saved("attention norm input", K.BF16 * h * Tn, "input"),
        *eager_norm_saved("attention", m, sw, h * Tn),
        Saved("qkv input", gin * h * Tn, "layernorm"),
        Saved("q, k, v", K.BF16 * (q + kv) / tp * T, "mla_up_proj" if lat else "qkv"),
        Saved("attention output", K.BF16 * o / tp * T, "core_attn"),
        Saved("softmax log-sum-exp", K.LSE_BYTES * a.num_heads / tp * T, "core_attn"),
    ]
    if gin != K.BF16:  # the out-projection keeps its own quantised copy of the attention output
        saved.append(Saved("out-proj input (quantised copy)", gin * o / tp * T, "proj"))
    if lat:
        saved.append(Saved("MLA latents", K.BF16 * lat * T, "latents"))
    if sw.cp_comm in ("a2a", "a2a_p2p"):
        # all-to-all CP (Ulysses): flash attention saves its output O in the head-scattered layout its
        # backward reads, the output projection its sequence-scattered input after the all-to-all back: two
        # copies where the ring keeps one (TE >= 2.8 AttnFuncWithCPAndQKVOA2A saves the pre-A2A O apart from
        # the W_o input: SimuMax docs/b200/b200_real_repro_guide.md, "TE >= v2.8 CP A2A policy")
        saved.append(Saved("attention output before the CP all-to-all", K.BF16 * o / tp * T * (cp > 1), "core_attn"))
    if unfused:
        saved.append(
            Saved(
                "attention scores (unfused)",
                (K.TE_UNFUSED_SCORE_SAVED if te else K.UNFUSED_SCORE_SAVED) * a.num_heads / tp * mbs * seq / cp * seq,
                "core_attn",
            )
        )
    return gemms, cores, streams, comms, saved


def eager_norm_saved(where: str, m: ModelSpec, sw, elements) -> list[Saved]:
    """What an eager fp32 RMSNorm keeps beyond a fused norm's input (constants.EAGER_RMSNORM_SAVED_EXTRA: its fp32
    copy and normalised output); nothing for a fused norm or a LayerNorm (a native kernel)."""
    if not (sw.eager and m.norm == "rmsnorm"):
        return []
    nbytes = K.EAGER_RMSNORM_SAVED_EXTRA * np.asarray(elements, dtype=float)
    return [Saved(f"{where} norm fp32 copy and normalised output (eager)", nbytes, "layernorm")]


def _dense_ffn(m: ModelSpec, T, Ts, tp, sw, gin: float = K.BF16, ag: float = K.BF16):
    h, f = m.hidden_size, m.ffn.intermediate_size
    Tn = Ts if sw.sequence_parallel else T
    glu = 2 if m.ffn.matrices == 3 else 1
    sep = sw.separate_projections
    gemms = mlp_gemms(m, T, f, tp, separate=sep)
    ab = act_bytes_per_width(m, sw.eager)
    streams = [Stream("activation", ab * f / tp * T, 2 * ab * f / tp * T, module="mlp")]
    column = MLP_COLUMN[sep and m.ffn.matrices == 3]
    if sw.split_tp:
        comms = tp_par.split_pair("MLP TP", T * h * K.BF16, tp, sw, column, ("mlp down",), T * h * ag)
    else:
        comms = tp_par.block_pair("MLP TP all-gather + reduce-scatter", T * h * K.BF16, tp, sw, column)
    saved = [
        Saved("MLP norm input", K.BF16 * h * Tn, "residual"),
        *eager_norm_saved("MLP", m, sw, h * Tn),
        Saved("fc1 input", gin * h * Tn, "layernorm"),
        Saved("activation input", K.BF16 * glu * f / tp * T, "mlp"),
        Saved("activation output", gin * f / tp * T, "mlp"),
    ]
    return gemms, streams, comms, [], saved


def _moe_ffn(m: ModelSpec, T, Ts, tp, ep, etp, imbalance: float, c, sw, gin: float = K.BF16):
    """(gemms, streams, collectives, fixed costs, saved) of an MoE FFN; `gin` = bytes per element of the GEMM
    inputs the expert linear layers keep for their weight gradient (saved_input_bytes): the grouped fc1 keeps
    its quantised copy of the permuted tokens and fc2 its copy of the activation output, as the dense
    linears do (Transformer Engine GroupedLinear forward saves the split_quantize'd inputs, not the bf16
    tensor, when FP8 is on); the SwiGLU input stays BF16."""
    e, h = m.moe, m.hidden_size
    assert e is not None
    Tn = Ts if sw.sequence_parallel else T
    glu = 2 if m.ffn.matrices == 3 else 1
    rows = T * e.top_k * ep * etp / (tp * e.num_experts) * imbalance
    one = 0 * np.asarray(tp, dtype=float)
    gemms = expert_gemms(m, rows, e.num_experts / ep, etp, sw.grouped_gemm)
    gemms += _dense_axes([Gemm("router", Ts, e.num_experts + one, h + one, 1.0, False, "moe")])
    if e.shared_experts:
        gemms += mlp_gemms(m, T, e.shared_experts * e.shared_width, tp, "shared expert", "shared_experts")
    assign = Ts * e.top_k * imbalance  # token copies per GPU
    fs = e.shared_experts * e.shared_width
    # token routing: moe_permute_bytes of HBM traffic per token copy per hidden unit (calibration.toml) on the
    # NCCL all-to-all path; DeepEP's / HybridEP's flex dispatcher fuses the global permute and un-permute into its
    # communication kernels and keeps the local ones (constants.MOE_GLOBAL_PERMUTE_BYTES)
    pb = c.moe_permute_bytes - (K.MOE_GLOBAL_PERMUTE_BYTES if sw.dispatcher in ("deepep", "hybridep") else 0.0)
    streams = [
        Stream("token permute / unpermute", pb * h * assign, 2 * pb * h * assign, module="moe"),
        Stream(
            "expert activation",
            act_bytes_per_width(m, sw.eager) * e.expert_intermediate_size * assign,
            2 * act_bytes_per_width(m, sw.eager) * e.expert_intermediate_size * assign,
            module="moe_act",
        ),
        Stream(
            "shared expert activation",
            act_bytes_per_width(m, sw.eager) * fs / tp * T,
            2 * act_bytes_per_width(m, sw.eager) * fs / tp * T,
            module="shared_experts",
        ),
    ]
    comms = [ep_par.dispatch_combine(m, Ts * imbalance * h * K.BF16, ep, etp, sw.dispatcher)]
    if e.shared_experts:
        comms += tp_par.block_pair(
            "shared expert TP all-gather + reduce-scatter", T * h * K.BF16, tp, sw, ("shared expert up/gate",)
        )
    comms.append(ep_par.expert_tp_gather(assign * etp * h * K.BF16, etp))
    # host sync + routing-kernel launches, once in forward and once in backward; a whole-iteration CUDA graph
    # has none: a capture cannot hold a device-to-host sync, so those recipes size the expert buffers
    # statically (Megatron-Bridge qwen3_llm_pretrain.py set_full_iter_cg_configs: moe_paged_stash,
    # moe_expert_rank_capacity_factor) instead of reading tokens_per_expert on the host
    sync = 0.0 if sw.cuda_graphs == "full_iteration" else c.moe_layer_overhead_s
    fixed = [Fixed("MoE routing sync", sync, sync, "moe")]  # a "moe" recompute reruns the router and dispatch
    # the fused grouped MLP (TE op fuser / CuTe-DSL) serves SwiGLU experts only (Megatron-Core TEGroupedMLP
    # _is_fused_impl_supported: activation_func must be F.silu with gated_linear_unit); other GLUs run TEGroupedMLP
    te_path = sw.grouped_kernel == "te" or (sw.grouped_kernel == "cutedsl" and m.ffn.activation != "swiglu")
    if e.expert_bias and te_path:
        b_stream, b_fixed = _expert_bias_loop(h, assign * etp, e.num_experts / ep, sw)
        streams.append(b_stream)
        fixed.append(b_fixed)
    saved = [
        Saved("MoE norm input", K.BF16 * h * Tn, "residual"),
        *eager_norm_saved("MoE", m, sw, h * Tn),
        Saved("router input", K.BF16 * h * Tn, "layernorm"),
        Saved("permuted tokens", gin * assign * h, "moe"),
        Saved("expert activation input", K.BF16 * assign * glu * e.expert_intermediate_size, "moe"),
        Saved("expert activation output", gin * assign * e.expert_intermediate_size, "moe_act"),
        Saved("router logits", K.ROUTER_LOGIT_BYTES * Ts * e.num_experts, "moe"),
    ]
    if m.ffn.activation == "clamped_swiglu" and te_path and sw.megatron_core:
        c_stream, c_fixed = _eager_clamp(e.expert_intermediate_size, assign, sw)
        streams.append(c_stream)
        fixed.append(c_fixed)
        # the fused activation keeps the clamped copy, the clamps keep the fc1 output they read
        saved.append(
            Saved("clamped expert activation input", K.BF16 * assign * glu * e.expert_intermediate_size, "moe_act")
        )
    if e.shared_experts:
        saved += [
            Saved("shared expert activation input", K.BF16 * glu * fs / tp * T, "shared_experts"),
            Saved("shared expert activation output", gin * fs / tp * T, "shared_experts"),
        ]
    return gemms, streams, comms, fixed, saved


def saved_input_bytes(low_precision: bool) -> float:
    """Bytes per element a linear layer keeps of its input for the weight-gradient GEMM: BF16, or under
    low-precision GEMMs the quantised copy it already made for the forward GEMM (Transformer Engine
    pytorch/module/linear.py and layernorm_linear.py: with FP8 on, the saved input is the FP8 /
    MXFP8 tensor, 1 byte per element, not the BF16 original; NVFP4 taken at the same byte, its 4-bit copy
    and scales being smaller). Tensors a non-GEMM op needs (norm inputs, the SwiGLU input, attention
    q, k, v and output) stay BF16."""
    return K.FP8 if low_precision else K.BF16


def _expert_bias_loop(h: int, rows, local_experts, sw):
    """Biased experts under Megatron-Core's TEGroupedMLP: the fc2 bias is not fused into the grouped GEMM
    but added after it, scaled by each token's routing probability, in an eager Python loop over the local
    experts (megatron/core/transformer/moe/experts.py TEGroupedMLP._apply_bias:
    torch.cat([t + b * p for t, b, p in zip(split(out, tokens_per_expert), biases, split(probs, ...))])).
    Per element of the fc2 output (`rows` x h on this GPU), bf16: b * p writes 2 B, t + b*p reads 2 + 2 and
    writes 2, torch.cat reads 2 and writes 2 -> 12 B forward; backward grad * p (read 2, write 2) and its sum
    over tokens for the bias gradient (read 2), grad * b (read 2, write 2) and its sum over h for the
    probability gradient (read 2) -> 12 B. Kernels: 2 per local expert + 1 (cat) forward, 4 per local expert
    backward. The loop sits after the tokens_per_expert.tolist() host sync, outside every partial CUDA-graph
    scope (attn, moe_router, moe_preprocess), so its launches cost the eager per-kernel time unless the whole
    iteration is graphed (sw.other_kernel_s)."""
    n = rows * h
    kf, kb = 2 * local_experts + 1, 4 * local_experts
    stream = Stream(
        "expert bias (per-expert loop)", K.EXPERT_BIAS_BYTES_FWD * n, K.EXPERT_BIAS_BYTES_BWD * n, module="moe"
    )
    return stream, Fixed("expert bias launches", kf * sw.other_kernel_s, kb * sw.other_kernel_s, "moe")


def _eager_clamp(f: int, rows, sw):
    """gpt-oss's clamped SwiGLU experts under Megatron-Core: the clamp of the fc1 output to +-7 runs as eager
    PyTorch ops before the fused activation (fused_bias_geglu.weighted_bias_quick_geglu_impl: chunk, two clamps,
    cat; constants.CLAMP_BYTES_*), and each call builds its linear offset as a device tensor from a Python
    float. `rows` token copies on this GPU, `f` the expert width. The bytes belong to the activation
    (module moe_act: a moe_act recompute reruns them, launches included); the launches sit outside every partial CUDA-graph
    scope (attn, moe_router, moe_preprocess), after the routing sync, so they cost the eager per-kernel time
    unless the whole iteration is graphed (sw.other_kernel_s)."""
    n = rows * f
    stream = Stream(
        "clamp before the activation (eager)", K.CLAMP_BYTES_FWD * n, K.CLAMP_BYTES_BWD * n, module="moe_act"
    )
    return stream, Fixed(
        "clamp launches", K.CLAMP_KERNELS_FWD * sw.other_kernel_s, K.CLAMP_KERNELS_BWD * sw.other_kernel_s, "moe_act"
    )


# torchao rowwise recipes: the gradient GEMMs (use_fast_accum=False) run the cuBLAS kernel with an fp32 output and
# scale it afterwards instead of the slow CUTLASS rowwise kernel (pytorch/ao#1325, torchao/float8/
# float8_python_api.py addmm_float8_unwrapped): per output element the fp32 write is 2 B more than bf16, the rescale
# reads those 4 B and writes 2 B of bf16: 8 B
ROWWISE_RESCALE_BYTES = 2.0 + 4.0 + 2.0


def _fp8_casts(gemms: list[Gemm], c, sw) -> Stream:
    """Quantising each low-precision GEMM's inputs (forward) and output gradients (backward) to FP8:
    fp8_cast_bytes of HBM traffic per element (calibration.toml), plus an amax read under current scaling.
    torchao's linear (stack fp8_linear = torchao) saves the bf16 input and casts it again in backward for the weight
    gradient (torchao/float8/float8_linear.py matmul_with_hp_or_float8_args: ctx.save_for_backward(input_hp,
    weight_hp_t)); its rowwise and MX recipes scale along each GEMM's reduction dimension, so the output gradient
    is cast once for dgrad (along N) and once for wgrad (along M), the amax found inside the cast (a per-row /
    per-block reduction); rowwise adds the gradient GEMMs' fp32 output and rescale (ROWWISE_RESCALE_BYTES per
    dgrad [M, K] and wgrad [N, K] element)."""
    per = c.fp8_cast_bytes + (K.AMAX_PASS_BYTES if sw.fp8_amax_pass else 0.0)
    low = [g for g in gemms if g.low_precision]
    fwd = sum(g.count * g.M * g.K for g in low)
    bwd = sum(g.count * g.M * g.N for g in low)
    extra = 0.0
    if sw.fp8_torchao:
        extra = per * fwd  # the saved bf16 input re-cast for wgrad
        if sw.fp8_recipe in ("rowwise", "mxfp8"):
            extra = extra + c.fp8_cast_bytes * bwd  # the output gradient along its second axis
        if sw.fp8_recipe == "rowwise":
            extra = extra + ROWWISE_RESCALE_BYTES * sum(g.count * (g.M * g.K + g.N * g.K) for g in low)
    return Stream("fp8 casts", per * fwd, per * bwd + extra)


def _grad_accumulate(gemms: list[Gemm], sw, name: str = "wgrad accumulate into main_grad") -> Stream:
    """Without Megatron's gradient-accumulation fusion (stack grad_accumulation_fusion = false,
    --no-gradient-accumulation-fusion) each linear layer's wgrad GEMM writes a bf16 weight gradient, and
    Megatron DDP's backward hook adds it into the main_grad buffer, once per weight per micro-batch
    (megatron/model/distributed.py DistributedDataParallel._make_param_hook, 2023, and
    megatron/core/distributed/distributed_data_parallel.py: param.main_grad.add_(param.grad.data)): the
    add reads main_grad and the bf16 gradient and writes main_grad, 2 x grad_bytes + 2 B per weight element
    of this GPU, one kernel per weight tensor. With the fusion the GEMM epilogue accumulates in place
    (APEX fused_weight_gradient_mlp_cuda, TE fuse_wgrad_accumulation): nothing. Attention-score GEMMs of the
    unfused path have no weights."""
    if sw.grad_accum_fusion:
        return Stream(name, 0.0, 0.0)
    elems, tensors = _weight_elements(gemms)
    return Stream(name, 0.0, (2 * sw.grad_bytes + K.BF16) * elems, 0.0, tensors)


def _weight_elements(gemms: list[Gemm]):
    """(weight elements on this GPU, weight tensors) of a layer's GEMM records: the attention-score GEMMs of the
    unfused path have no weights."""
    weights = [g for g in gemms if g.module != "core_attn"]
    return sum(g.count * g.N * g.K for g in weights), float(sum(np.max(g.count) for g in weights))


def _autocast_casts(gemms: list[Gemm], sw, name: str = "autocast weight casts (fp32 -> bf16)") -> Stream:
    """fp32 parameters under torch.autocast (stack param_dtype = fp32_autocast): each linear's weight is cast to
    bf16 once per forward (the autocast weight cache holds it for the region: torch.autocast cache_enabled; the
    cast reads 4 B and writes 2 B per element, K.AUTOCAST_CAST_BYTES_FWD) and the cast's backward turns the bf16
    weight gradient into the fp32 one autograd accumulates into .grad (reads 2 B, writes 4 B), one kernel per
    weight tensor each way. A recomputed forward (gradient checkpointing) casts again. The add into .grad of the
    micro-batches after the first (12 B per element) is not priced: Hugging Face runs commonly take one."""
    if not sw.autocast_casts:
        return Stream(name, 0.0, 0.0)
    elems, tensors = _weight_elements(gemms)
    return Stream(name, K.AUTOCAST_CAST_BYTES_FWD * elems, K.AUTOCAST_CAST_BYTES_BWD * elems, tensors, tensors)


SAC_SAVED = "sac_saved"  # saved-activation records only op-level SAC keeps (memory.layer_activation_bytes)


def op_sac(gemms, streams, comms, fixed, saved, tp):
    """A layer's records as torchtitan's op-level selective activation checkpointing treats them
    (pytorch/torchtitan@9dec370ad:torchtitan/parallelisms/parallelize_llama.py _save_list and
    _apply_ac_to_transformer_block; the same at @820504e20 and @038d5fd1b:torchtitan/models/llama3/infra/
    parallelize.py less aten.abs): the block is checkpointed with a policy that saves the outputs of aten.mm,
    the flash / efficient SDPA ops, _c10d_functional.reduce_scatter_tensor and aten.max, "except every second mm"
    (a per-block counter: mm number 2, 4, 6, ... is recomputed), and re-runs every other forward op in backward.
    Records re-run get module OP_SAC (what the stack's selective policy recomputes, price.price_layer): the even-
    numbered GEMMs in execution order (only non-grouped GEMMs are aten.mm; grouped expert GEMMs, _grouped_mm,
    are re-run), every memory-bound stream and fixed cost, the TP input all-gather (split_pair tags it) and the MoE
    all-to-all; the attention cores (SDPA saved) and the reduce-scatters are not. Saved for backward: the
    block's input, the saved GEMMs' outputs, the SDPA outputs (attention output, log-sum-exp) and the reduce-
    scatter outputs (SAC_SAVED records, counted only under this policy); the other saved tensors are recomputed
    (module OP_SAC). Returns (gemms, streams, comms, fixed, saved)."""
    from perfmodel.core.software import OP_SAC

    count, out_g, extra = 0, [], []
    for g in gemms:
        mm = not (g.grouped and np.max(np.asarray(g.count, dtype=float)) > 1) and g.module != "core_attn"
        count += mm
        keep = mm and count % 2 == 1
        out_g.append(replace(g, module="" if keep else OP_SAC))
        if keep:
            extra.append(Saved(f"{g.name} output (op-SAC saved mm)", K.BF16 * g.M * g.N * g.count, SAC_SAVED))
    for x in comms:
        if x.calls_fwd and "reduce-scatter" in x.name:
            extra.append(
                Saved(f"{x.name} (op-SAC saved)", x.nbytes / np.asarray(tp, dtype=float) * (tp > 1), SAC_SAVED)
            )
    keep_mod = ("input", "core_attn")
    streams = [replace(st, module=OP_SAC) for st in streams]
    fixed = [replace(fx, module=OP_SAC) for fx in fixed]
    comms = [replace(x, module=OP_SAC) if x.overlap == "ep" else x for x in comms]
    saved = [sv if sv.module in keep_mod else replace(sv, module=OP_SAC) for sv in saved] + extra
    return out_g, streams, comms, fixed, saved


def build(m: ModelSpec, grid: LayoutGrid, low_precision: bool, imbalance, c, sw) -> Workload:
    """The op records of every layer kind and of the head for the layouts of `grid`, as software stack
    `sw` (perfmodel/core/software.py `Software`) runs them. `imbalance`: the busiest EP rank's token load over
    the mean, a number (1 = force-balanced) or "real": real routing under the stack's load-balancing method, per
    layout (parallel/ep.py routing_imbalance)."""
    f64 = lambda x: np.asarray(x, dtype=float)
    tp, cp, ep, etp, mbs, seq = (f64(getattr(grid, k)) for k in ("tp", "cp", "ep", "etp", "mbs", "seq"))
    if isinstance(imbalance, str):
        imbalance = ep_par.routing_imbalance(m, ep, sw.moe_balancing)
    h = m.hidden_size
    T = mbs * seq / cp
    Ts = T / tp
    gin = saved_input_bytes(low_precision and not sw.fp8_torchao)  # torchao keeps the bf16 input (_fp8_casts)
    # torchao's tensorwise float8 TP styles (Float8ColwiseParallel / PrepareFloat8ModuleInput: the block input cast
    # to float8 before its all-gather; pytorch/torchtitan@9dec370ad:torchtitan/parallelisms/parallelize_llama.py
    # apply_tp enable_float8, @038d5fd1b enable_float8_tensorwise_tp); rowwise recipes keep the plain styles
    ag = K.FP8 if (low_precision and sw.fp8_torchao and sw.fp8_recipe == "current") else K.BF16
    att = _attention_block(m, T, Ts, tp, cp, mbs, seq, sw, gin, ag)
    layers = []
    for kind, count in (("dense", m.num_dense_ffn_layers), ("moe", m.num_moe_layers)):
        if not count:
            continue
        ffn = (
            _dense_ffn(m, T, Ts, tp, sw, gin, ag)
            if kind == "dense"
            else _moe_ffn(m, T, Ts, tp, ep, etp, imbalance, c, sw, gin)
        )
        gemms = att[0] + ffn[0]
        streams = att[2] + ffn[1]
        if low_precision:
            streams = streams + [_fp8_casts(gemms, c, sw)]
        else:
            streams = streams + [Stream("fp8 casts", 0.0, 0.0)]
        streams.append(_grad_accumulate(gemms, sw))
        streams.append(_autocast_casts(gemms, sw))
        extra = (K.EAGER_EXTRA_KERNELS_FWD, K.EAGER_EXTRA_KERNELS_BWD) if (sw.eager and m.norm == "rmsnorm") else (0, 0)
        streams.append(
            Stream("elementwise launches", 0.0, 0.0, K.LAYER_KERNELS_FWD + extra[0], K.LAYER_KERNELS_BWD + extra[1])
        )
        comms, fixed, saved = list(att[3] + ffn[2]), list(ffn[3]), list(att[4] + ffn[4])
        if sw.selective_ac == "op":
            gemms, streams, comms, fixed, saved = op_sac(gemms, streams, comms, fixed, saved, tp)
        layers.append(
            Layer(kind, count, tuple(gemms), tuple(att[1]), tuple(streams), tuple(comms), tuple(fixed), tuple(saved))
        )
    one = 0 * tp
    lm_head = Gemm("lm head", T, m.vocab_size / tp, h + one, 1.0, False, axes=DENSE_AXES)
    head = Head(
        gemms=(lm_head,),
        streams=(
            Stream(
                "logits, softmax, cross-entropy",
                K.LOGIT_BYTES * T * m.vocab_size / tp + K.FINAL_NORM_BYTES * h * T,
                0.0,
                K.HEAD_KERNELS,
                0.0,
            ),
            _grad_accumulate([lm_head], sw, "lm head wgrad accumulate"),
            _autocast_casts([lm_head], sw, "lm head autocast cast"),
        ),
        comms=tuple(
            _dense_axes(
                [tp_par.sequence_parallel_pair("head TP all-gather + reduce-scatter", T * h * K.BF16, tp, 1, 1)]
            )
        ),
        embedding=Stream("embedding lookup + grad", K.EMBED_BYTES * h * Ts, 0.0, K.EMBED_KERNELS, 0.0),
        mtp_gemm=Gemm("MTP projection", T, h + one, 2 * h + one, axes=DENSE_AXES) if m.mtp_layers else None,
        mtp_layers=m.mtp_layers,
    )
    index = {layer.kind: i for i, layer in enumerate(layers)}
    kinds = tuple(index["moe" if m.is_moe_layer(i) else "dense"] for i in range(m.num_layers))
    return Workload(m, T, Ts, tuple(layers), head, low_precision, kinds, tp, etp, cp)


def layer_kind_index(m: ModelSpec, w: Workload) -> list[int]:
    """For each of the model's layers, in order, the index of its kind in `w.layers` (set by `build`)."""
    return list(w.layer_kinds)


def unique_layer_axes(grid: LayoutGrid, axes: tuple[str, ...] = AXES) -> tuple[np.ndarray, np.ndarray]:
    """(index of one layout per distinct combination of `axes` (by default those any layer's records depend
    on, AXES; precision, which a grid shares, is left out), each layout's combination): price once per
    combination, gather back. The axis values are combined in mixed radix (each axis's max + 1) into one
    integer key, or, where that could overflow, each axis is first coded by its own unique (no 2-D unique
    either way)."""
    cols = [np.asarray(getattr(grid, name), dtype=np.int64) for name in axes if name != "precision"]
    radix = [int(c.max()) + 1 if c.size else 1 for c in cols]
    key = np.zeros(grid.n, dtype=np.int64)
    if float(np.prod(np.array(radix, dtype=float))) < 2.0**62:  # the values themselves are the codes
        for c, r in zip(cols, radix):
            key = key * r + c
    else:
        for c in cols:
            u, code = np.unique(c, return_inverse=True)
            key = key * len(u) + code.reshape(-1)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)
