"""Pipeline parallelism: stages, schedules and their bubbles (Narayanan et al. 2021 §2.2; Megatron-Core
schedules.py).

A step runs m micro-batches through pp ranks. With stage time t (one micro-batch's forward + backward on
one rank) the 1F1B schedule takes (m + pp - 1) t; the interleaved schedule with vp virtual chunks per rank
shrinks the bubble to (pp - 1) t / vp (Narayanan et al. 2021 Eq. 1-2).
"""
from __future__ import annotations

import numpy as np

from .. import comm
from .. import constants as K


def p2p_time(Ts, h: int, tp, cp, dp, pp, vp, hw):
    """Send activations forward and gradients backward, once per virtual chunk per micro-batch: 2 vp sends
    of one micro-batch's sequence-parallel activation (tokens/tp x hidden, bf16); neighbours are
    tp*cp*dp ranks apart (order tp-cp-ep-dp-pp)."""
    one = comm.p2p_time(Ts * h * K.BF16, tp * cp * dp, hw)
    return np.where(pp > 1, 2 * vp * one, 0.0)


def bubble(stage, pp, vp):
    """Idle time of the schedule: (pp - 1) / vp stage-times (Narayanan et al. 2021 §2.2.2)."""
    return np.where(pp > 1, (pp - 1) / vp, 0.0) * stage


def in_flight(pp, vp, nmb):
    """Micro-batches whose activations the first rank holds at the peak: pp for 1F1B; for the interleaved
    schedule Megatron's warm-up of 2(pp-1) + (vp-1)pp chunks of L/(pp vp) layers gives
    pp (1 + (pp-1)/(pp vp)) micro-batch equivalents (Korthikanti et al. 2022 §4.2.3); at most nmb."""
    sched = np.where(vp > 1, pp * (1 + (pp - 1) / (pp * vp)), pp)
    return np.where(pp > 1, np.minimum(sched, np.maximum(nmb, 1)), 1.0)
