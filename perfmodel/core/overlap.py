"""The one overlap model: which communication hides under which compute.

A collective of overlap class k ("tp", "cp", "ep", "dp", "pp") can run concurrently with compute for
`share_k` of its time (the stack's overlap switches; calibration.toml's tp/ep/cp/dp/pp_overlap today).
Within one layer, TP, CP and EP communication share ONE budget: the layer's compute hides each byte once,
so faster compute never exposes more communication than it saves (Wang et al. 2023 for TP overlap with
dependent compute; Megatron-Core A2A overlap for EP).
  exposed_k = (1 - share_k) * t_k + spill * share_k t_k / sum_j share_j t_j,
  spill     = max(0, sum_j share_j t_j - compute)
"""

from __future__ import annotations

import numpy as np


def exposed(comm_t, window, share):
    """Communication left on the critical path when `share` of it can run under `window` seconds of
    compute: (1-share)*comm + whatever of the overlappable part exceeds the window."""
    return (1.0 - share) * comm_t + np.maximum(0.0, share * comm_t - window)


def exposed_shared(comms: dict[str, np.ndarray], shares: dict[str, float], compute) -> dict[str, np.ndarray]:
    """Exposed seconds per class when the classes in `comms` share one compute window of `compute` s."""
    hideable = sum(shares[k] * t for k, t in comms.items())
    spill = np.maximum(0.0, hideable - compute)
    out = {}
    for k, t in comms.items():
        frac = np.divide(shares[k] * t, hideable, out=np.zeros_like(spill), where=hideable > 0)
        out[k] = (1 - shares[k]) * t + spill * frac
    return out
