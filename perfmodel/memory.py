"""Memory per GPU on the first pipeline rank (the one holding the most in-flight activations).

- weights BF16 (2 B/param; FP8 recipes 1 B), BF16 gradients (2 B), Adam FP32 master + two moments (12 B) sharded
  over the data-parallel group by the distributed optimizer (Rajbhandari et al. 2020, ZeRO-1;
  Megatron-Core distributed optimizer); FSDP also shards weights and gradients (ZeRO-3).
- activations per layer from the tensors saved for backward (Korthikanti et al. 2022 §4, Table 2, with
  flash attention: no s^2 score term), divided by tp under sequence parallelism; full recompute keeps
  only each layer's input.
- in-flight micro-batches: pp on the first rank for 1F1B, pp*(1 + (pp-1)/(pp*vp)) for the
  interleaved schedule (vp > 1) (Narayanan et al. 2021 §2.2.2; Korthikanti et al. 2022 §4.2.3).
"""
from __future__ import annotations

import numpy as np

from .compute import BF16
from .hardware import HardwareSpec
from .layout import LayoutGrid
from .model import ModelSpec


# NeMo / Megatron-Bridge performance recipes reduce gradients in BF16 (grad_reduce_in_fp32=False) and,
# for FP8, keep the model weights in FP8 (fp8_param_gather=True); FP32 master weights live in the optimizer.
GRAD_BYTES = 2.0


def weight_bytes(precision: str) -> float:
    """Bytes per model weight held on the GPU: BF16, or the FP8 copy under fp8_param_gather."""
    return BF16 if precision in ("bf16", "fp16") else 1.0


def activation_bytes_per_layer(m: ModelSpec, T, Ts, tp, ep, etp, recompute, moe: bool, imbalance: float):
    """Saved activation bytes of one layer for one micro-batch on one GPU."""
    a, h = m.attention, m.hidden_size
    if a.kind == "mla":
        q = a.num_heads * (a.qk_dim)
        kv = a.num_heads * (a.qk_dim + a.v_dim)
        o = a.num_heads * a.v_dim
        lat = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim
    else:
        q = a.num_heads * a.head_dim
        kv = 2 * a.num_kv_heads * a.head_dim
        o = q
        lat = 0
    attn = BF16 * (2 * h * Ts + (q + kv + o) / tp * T + lat * T) + 4 * a.num_heads / tp * T
    glu = 2 if m.ffn.matrices == 3 else 1
    if moe:
        e = m.moe
        assert e is not None
        assign = Ts * e.top_k * imbalance
        fe = e.expert_intermediate_size
        ffn = BF16 * (2 * h * Ts + assign * (h + (glu + 1) * fe))
        ffn = ffn + 4 * Ts * e.num_experts  # router logits/probs fp32
        if e.shared_experts:
            fs = e.shared_experts * e.shared_width
            ffn = ffn + BF16 * (glu + 1) * fs / tp * T
        act_out = BF16 * assign * fe
    else:
        f = m.ffn.intermediate_size
        ffn = BF16 * (2 * h * Ts + (glu + 1) * f / tp * T)
        act_out = BF16 * f / tp * T
    full = attn + ffn
    selective = full - act_out          # activation function output recomputed
    only_input = BF16 * h * Ts
    return np.where(recompute == 2, only_input, np.where(recompute == 1, selective, full)), full


def memory_per_gpu(m: ModelSpec, hw: HardwareSpec, grid: LayoutGrid, opts, p_dense, p_exp, dp, edp, nmb, T, Ts):
    c = opts.consts
    tp, pp, vp = (np.asarray(x, dtype=float) for x in (grid.tp, grid.pp, grid.vp))
    ep, etp = np.asarray(grid.ep, float), np.asarray(grid.etp, float)
    fsdp = grid.fsdp
    params = p_dense + p_exp
    wbytes = weight_bytes(opts.precision)
    weights = np.where(fsdp, params * wbytes / dp, params * wbytes)
    grads = np.where(fsdp, params * GRAD_BYTES / dp, params * GRAD_BYTES)
    optim = 12 * (p_dense / dp + p_exp / edp)

    imb = c.moe_imbalance if opts.routing == "real" else 1.0
    rec = grid.recompute
    per_layer = 0.0
    full_layer = 0.0
    for count, moe in ((m.num_dense_ffn_layers, False), (m.num_moe_layers, True)):
        if count:
            kept, full = activation_bytes_per_layer(m, T, Ts, tp, ep, etp, rec, moe, imb)
            per_layer = per_layer + kept * count / m.num_layers
            full_layer = np.maximum(full_layer, full)
    layers_per_rank = np.ceil(m.num_layers / pp)
    # 1F1B: the first rank holds pp micro-batches; interleaved (vp > 1): Megatron's warm-up of
    # 2(pp-1) + (vp-1)pp chunks of L/(pp vp) layers gives pp (1 + (pp-1)/(pp vp)) micro-batch equivalents
    # (Korthikanti et al. 2022 §4.2.3); that formula applies to vp > 1 only (at vp = 1 it would say 2pp-1)
    sched = np.where(vp > 1, pp * (1 + (pp - 1) / (pp * vp)), pp)
    inflight = np.where(pp > 1, np.minimum(sched, np.maximum(nmb, 1)), 1.0)
    activations = per_layer * layers_per_rank * inflight
    # during recompute one layer's full activations are live again
    activations = activations + np.where(rec == 2, full_layer, 0.0)
    # embedding output on the first rank; logits (fp32, + grad) are on the last rank but are transient
    logits = np.where(pp > 1, 0.0, 2 * 4 * T * m.vocab_size / tp)
    return {
        "weights": weights,
        "gradients": grads,
        "optimizer": optim,
        "activations": activations + BF16 * m.hidden_size * Ts,
        "logits": logits,
        "reserved": c.reserved_bytes + 0 * tp,
    }
