"""A predicted step as the economics read it (economics/job.py Step): its breakdown, the site's GPU power
limit and the job's data-parallel replicas. Power and energy themselves are economics/power.py and job.py."""

from __future__ import annotations

import numpy as np

from perfmodel.core.parallel.dp import shard_group
from perfmodel.core.predict import Options, Prediction, software_of
from perfmodel.economics.job import Step
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.model import ModelSpec


def power_limit_w(m: ModelSpec, hw: HardwareSpec, opts: Options) -> float | None:
    """The GPU power limit the site runs at (hardware power.power_limit_w; None: the TDP), where it is below the
    TDP: the cap the cost model priced the kernels under (core/software.py power_factor)."""
    limit = hw.power.power_limit_w
    return limit if limit is not None and limit < hw.power.gpu_tdp_w else None


def replicas(p: Prediction, i: int, m: ModelSpec, hw: HardwareSpec, opts: Options) -> int:
    """Data-parallel groups that each hold a full copy of the model state (replica-scoped recovery's unit):
    dp x cp / the parameter-sharding group under FSDP (hybrid sharding: its group), 1 under an optimizer sharded
    over data parallelism, dp where nothing is sharded."""
    sw = software_of(m, hw, opts)
    lay = p.layouts.layout(i)
    dpc = lay.dp * lay.cp
    if lay.fsdp or sw.shards_params:
        return max(1, int(round(dpc / float(shard_group(np.array([dpc]), sw.hybrid_shard_group)[0]))))
    if sw.optimizer_shard != "none" or sw.shards_grads:
        return 1
    return max(1, lay.dp)


def step_of(p: Prediction, i: int, m: ModelSpec, hw: HardwareSpec, opts: Options) -> Step:
    """Layout i of prediction `p` as a Step: its breakdown in seconds, the stack's power limit, its replicas."""
    return Step(
        {k: float(v[i]) for k, v in p.breakdown_s.items()},
        power_limit_w(m, hw, opts),
        replicas(p, i, m, hw, opts),
    )
