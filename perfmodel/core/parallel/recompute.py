"""Activation recompute (Korthikanti et al. 2022 §5; Megatron-Core recompute_granularity and
recompute_modules): what backward runs again and what it keeps.

Policies: none; selective (the stack's recompute modules: their forward ops run again in backward and
the activations they alone need are not kept; Megatron-Core's default module is core_attn); full (each
layer's forward runs again; only each layer's input is kept, plus one layer's full activations while it
is being recomputed).

Saved-activation modules (workload.py `Saved.module`): input and residual (always kept), layernorm (norm
outputs: the qkv / fc1 / router inputs), qkv, latents, mla_up_proj (MLA q/k/v from the latents), core_attn
(attention output, log-sum-exp, unfused scores), mlp (dense activation input and output), moe (permuted
tokens, expert activations, router logits), moe_act (expert activation output), shared_experts."""

from __future__ import annotations

import numpy as np

NONE, SELECTIVE, FULL = 0, 1, 2
ALWAYS_KEPT = ("input", "residual")


def dropped(modules: tuple[str, ...]) -> tuple[str, ...]:
    """Saved-activation modules not kept under selective recompute of `modules` ("moe" covers moe_act)."""
    out = set(modules)
    if "moe" in out:
        out.add("moe_act")
    return tuple(sorted(out - set(ALWAYS_KEPT)))


def time(rec, fwd_all_layers, selective_fwd):
    """Extra seconds per micro-batch spent recomputing: a whole forward (full) or the forward of the
    selected modules' ops (selective)."""
    return np.where(rec == FULL, fwd_all_layers, np.where(rec == SELECTIVE, selective_fwd, 0.0))


def extra_flops_per_token(rec, model_flops_per_token, selective_flops_per_token):
    """HFU's extra FLOPs: full recompute runs one more forward (a third of fwd+bwd), selective the
    forward FLOPs of the recomputed modules."""
    return np.where(rec == FULL, model_flops_per_token / 3, np.where(rec == SELECTIVE, selective_flops_per_token, 0.0))


def layer_share(sw, num_layers: int) -> float:
    """Share of the layers torchtitan's per-layer SAC fully checkpoints (stack selective_ac = layer, N =
    selective_ac_every): a block is wrapped when its running count % N == 0 (pytorch/torchtitan@9dec370ad:
    torchtitan/parallelisms/parallelize_llama.py _apply_ac_to_transformer_block, ptd_checkpoint_wrapper._count;
    the same at @038d5fd1b), floor(L / N) of L blocks. 0 for any other policy."""
    if sw.selective_ac != "layer" or num_layers <= 0:
        return 0.0
    return (num_layers // max(int(sw.selective_every), 1)) / num_layers


def transient(rec, sw):
    """Where one layer's full activations live again during backward: under full recompute (its forward re-runs),
    and under torchtitan's selective policies, which re-run the forward of a whole block (per-layer SAC: the
    checkpointed blocks; op-level SAC: every op but the saved ones) before its backward."""
    rec = np.asarray(rec)
    out = rec == FULL
    if sw.selective_ac in ("op", "layer"):
        out = out | (rec == SELECTIVE)
    return out
