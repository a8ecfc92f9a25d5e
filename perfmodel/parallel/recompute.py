"""Activation recompute (Korthikanti et al. 2022 §5): what backward runs again and what it keeps.

Policies: none; selective (recompute the core attention: its forward runs again in backward, and the
activation-function output is not kept); full (each layer's forward runs again; only each layer's input
is kept, plus one layer's full activations while it is being recomputed)."""
from __future__ import annotations

import numpy as np

NONE, SELECTIVE, FULL = 0, 1, 2

# recompute modules dropped from the saved activations per policy (Megatron-Core recompute_modules names)
DROPPED = {SELECTIVE: ("act",)}


def time(rec, fwd_all_layers, core_attn_fwd_all_layers):
    """Extra seconds per micro-batch spent recomputing."""
    return np.where(rec == FULL, fwd_all_layers, np.where(rec == SELECTIVE, core_attn_fwd_all_layers, 0.0))


def extra_flops_per_token(rec, model_flops_per_token, attn_fwd_flops_per_token):
    """HFU's extra FLOPs: full recompute runs one more forward (a third of fwd+bwd), selective the core
    attention forward."""
    return np.where(rec == FULL, model_flops_per_token / 3, np.where(rec == SELECTIVE, attn_fwd_flops_per_token, 0.0))
