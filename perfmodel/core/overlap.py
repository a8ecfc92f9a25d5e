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

from perfmodel.core.elementwise import select


def exposed(comm_t, window, share):
    """Communication left on the critical path when `share` of it can run under `window` seconds of
    compute: (1-share)*comm + whatever of the overlappable part exceeds the window."""
    return (1.0 - share) * comm_t + np.maximum(0.0, share * comm_t - window)


def spill(hideable, window):
    """Overlappable seconds that do not fit under `window` seconds of compute."""
    return np.maximum(0.0, hideable - window)


def exposed_in_budget(comm_t, share, spilled, hideable):
    """One class's exposed seconds in a shared budget (module docstring): its unhidden part plus its share of the
    spill. A zero budget has nothing to spill (every share x t is 0, so dividing by 1 instead gives 0)."""
    return (1.0 - share) * comm_t + spilled * (share * comm_t / select(hideable > 0, hideable, 1.0))


def exposed_shared(comms: dict[str, np.ndarray], shares: dict[str, float], compute) -> dict[str, np.ndarray]:
    """Exposed seconds per class when the classes in `comms` share one compute window of `compute` s."""
    hideable = sum(shares[k] * t for k, t in comms.items())
    s = spill(hideable, compute)
    return {k: exposed_in_budget(t, shares[k], s, hideable) for k, t in comms.items()}


def exposed_pair(t1, share1, t2, share2, window):
    """exposed_shared of two classes, summed (the elementwise form the step tail compiles: FSDP's gathers and
    scatters under the step's compute)."""
    hideable = share1 * t1 + share2 * t2
    s = spill(hideable, window)
    return exposed_in_budget(t1, share1, s, hideable) + exposed_in_budget(t2, share2, s, hideable)


TAIL_FUNCTIONS = (exposed, spill, exposed_in_budget, exposed_pair)
