"""Drawn power: what the GPUs, their nodes, the cluster and the site draw while a step runs, from the step's
breakdown by phase (issue 28), beside the rated method of the cost report (rating x time, economics/tco.py).

Per GPU, each level a field of the hardware's [power] with its source:
- tensor-core work (breakdown terms gemm, attention, recompute, embedding_head_mtp) at the power cap: dense
  GEMMs hold the board at its limit on every generation measured (an H100 reads 699 W of 700 under training);
  the cap is the TDP, or the stack's power_limit_w where lower, by the clock rule the cost model prices the
  kernels with (core/software.py from_stack: clock factor min(1, (limit / TDP)^(1/3)); the power is then the
  limit, TDP x factor^3);
- memory-bound kernels (memory_bound) and the optimizer step at memory_bound_w, capped;
- exposed communication (tp/cp/ep/pp/dp_comm), the pipeline bubble, stage imbalance, the per-step overhead and
  checkpoint writes at wait_w: the GPU is in the job with no kernel of its own to run (a checkpoint stall and
  an NCCL wait both read ~100 W on an H100).
Per node: + host_w_per_gpu + cooling_w_per_gpu, over conversion_efficiency (AC at the wall). Per cluster:
+ the scale-out network and storage (costs.toml network_storage_w_per_gpu, the rated method's own). Per site:
x PUE. Energy per token = site W per GPU / tokens/s/GPU.

Power over the step (the grid-facing swing): inside the pipeline body (compute, memory-bound kernels, the
exposed TP/CP/EP/PP communication, bubble) phases alternate within milliseconds and the cluster draws their
average; the step's end (exposed DP communication, optimizer, overhead) runs on every GPU at once, and so
does a checkpoint write. Peak = the body's draw, trough = the step end's (swing per step), and a checkpoint
write's (checkpoint swing). The node peak is every GPU of a node at its cap (what its supplies carry).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from perfmodel.errors import InputError
from perfmodel.specs.hardware import DRAWN_FIELDS, HardwareSpec

TENSOR, MEMORY, WAIT = "tensor", "memory_bound", "wait"
# every breakdown term of core/predict.py BREAKDOWN -> (phase of the step, power level); tests check the keys
TERM_PHASE: dict[str, tuple[str, str]] = {
    "gemm": ("compute", TENSOR),
    "attention": ("compute", TENSOR),
    "recompute": ("compute", TENSOR),
    "embedding_head_mtp": ("compute", TENSOR),
    "memory_bound": ("memory_bound", MEMORY),
    "tp_comm": ("exposed_communication", WAIT),
    "cp_comm": ("exposed_communication", WAIT),
    "ep_comm": ("exposed_communication", WAIT),
    "pp_comm": ("exposed_communication", WAIT),
    "stage_imbalance": ("bubble", WAIT),
    "pipeline_bubble": ("bubble", WAIT),
    "dp_comm": ("dp_communication", WAIT),
    "optimizer": ("optimizer", MEMORY),
    "step_overhead": ("overhead", WAIT),
}
BODY = ("compute", "memory_bound", "exposed_communication", "bubble")  # the pipeline: averaged by the cluster
TAIL = ("dp_communication", "optimizer", "overhead")  # the step's end: every GPU at once
PHASES = BODY + TAIL


def clock_factor(tdp_w: float, limit_w: float | None) -> float:
    """Sustained tensor clock under a power limit, relative to the TDP's: the cost model's rule (core/software.py
    from_stack, dynamic power ~ f V^2 with V ~ f gives f ~ P^(1/3)), as a function."""
    return min(1.0, (limit_w / tdp_w) ** (1 / 3)) if limit_w else 1.0


def power_cap_w(tdp_w: float, limit_w: float | None) -> float:
    """The board's draw under dense tensor work: the TDP at the clock_factor rule's clock, TDP x factor^3
    (= the limit where it is below the TDP)."""
    return tdp_w * clock_factor(tdp_w, limit_w) ** 3


@dataclass(frozen=True)
class Levels:
    """Per-GPU power levels (W, DC at the board) and the node's per-GPU overheads, for one system and cap."""

    tensor_w: float
    memory_w: float
    wait_w: float
    idle_w: float
    host_w: float
    cooling_w: float
    efficiency: float
    tdp_w: float
    limit_w: float | None = None

    def level(self, kind: str) -> float:
        return {TENSOR: self.tensor_w, MEMORY: self.memory_w, WAIT: self.wait_w}[kind]

    def node_w(self, gpu_w: float) -> float:
        """AC power per GPU of a node whose GPUs draw `gpu_w`: (GPU + host + cooling) / conversion efficiency."""
        return (gpu_w + self.host_w + self.cooling_w) / self.efficiency


def levels(hw: HardwareSpec, power_limit_w: float | None = None) -> Levels:
    """The drawn-power levels of `hw` under a GPU power limit (None: the TDP). A spec without the drawn-power
    fields is an InputError naming them."""
    p = hw.power
    if not p.drawn:
        raise InputError(
            hw.id,
            "power",
            f"no drawn-power fields ({', '.join('power.' + k for k in DRAWN_FIELDS)}): the drawn method needs "
            "them; the rated method (power.allin_w_per_gpu x time) still applies",
        )
    if power_limit_w is not None and not (power_limit_w > 0 and math.isfinite(power_limit_w)):
        raise InputError("power_limit_w", "power_limit_w", f"must be a positive number of W (got {power_limit_w})")
    cap = power_cap_w(p.gpu_tdp_w, power_limit_w)
    assert p.memory_bound_w is not None and p.wait_w is not None and p.idle_w is not None  # p.drawn
    return Levels(
        tensor_w=cap,
        memory_w=min(p.memory_bound_w, cap),
        wait_w=min(p.wait_w, cap),
        idle_w=p.idle_w,
        host_w=float(p.host_w_per_gpu or 0.0),
        cooling_w=float(p.cooling_w_per_gpu or 0.0),
        efficiency=float(p.conversion_efficiency or 1.0),
        tdp_w=p.gpu_tdp_w,
        limit_w=power_limit_w if cap < p.gpu_tdp_w else None,
    )


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: float  # per GPU per step
    gpu_w: float  # the GPU's mean draw in it


@dataclass(frozen=True)
class StepPower:
    """One GPU over one step: its phases and mean draws (W, DC at the board)."""

    phases: tuple[Phase, ...]
    step_s: float
    gpu_avg_w: float
    gpu_peak_w: float  # the highest level the step reaches (the cap where it runs tensor work)
    body_w: float  # mean over the pipeline body (BODY phases)
    tail_w: float  # mean over the step's end (TAIL phases); = body_w where the step has none

    def seconds(self, phase: str) -> float:
        return next((p.seconds for p in self.phases if p.name == phase), 0.0)


def step_power(lv: Levels, breakdown_s: Mapping[str, float]) -> StepPower:
    """The per-GPU draw of a step from its breakdown (seconds per core/predict.py BREAKDOWN term)."""
    secs = {ph: 0.0 for ph in PHASES}
    energy = {ph: 0.0 for ph in PHASES}
    top = 0.0
    for term, s in breakdown_s.items():
        if term not in TERM_PHASE:
            raise InputError("breakdown", term, f"unknown step term; one of {', '.join(TERM_PHASE)}")
        s = float(s)
        if not (s >= 0 and math.isfinite(s)):
            raise InputError("breakdown", term, f"seconds must be a finite number >= 0 (got {s})")
        phase, kind = TERM_PHASE[term]
        secs[phase] += s
        energy[phase] += s * lv.level(kind)
        if s > 0:
            top = max(top, lv.level(kind))
    step = sum(secs.values())
    if not step > 0:
        raise InputError("breakdown", "step_time_s", "the step has no time: nothing to draw power over")
    mean = lambda names: (  # noqa: E731
        sum(energy[n] for n in names) / sum(secs[n] for n in names) if sum(secs[n] for n in names) > 0 else None
    )
    body = mean(BODY)
    tail = mean(TAIL)
    body = tail if body is None else body
    tail = body if tail is None else tail
    assert body is not None and tail is not None
    phases = tuple(Phase(ph, secs[ph], energy[ph] / secs[ph] if secs[ph] > 0 else 0.0) for ph in PHASES)
    return StepPower(phases, step, sum(energy.values()) / step, top, body, tail)


@dataclass(frozen=True)
class PowerDraw:
    """A job's drawn power: per GPU, node, cluster (IT, AC) and site (x PUE), its swing, and the rated method's
    figures beside it. Node = the system's gpus_per_node GPUs (an HGX server; an NVL72 compute tray)."""

    method: str
    gpus: int
    gpus_per_node: int
    gpu_avg_w: float
    gpu_peak_w: float
    node_avg_w: float
    node_peak_w: float  # every GPU of the node at its cap
    node_rated_w: float  # the rated method: power.allin_w_per_gpu x gpus_per_node
    share_of_rating: float  # node_avg_w / node_rated_w
    cluster_avg_w: float  # nodes + scale-out network and storage, AC, before PUE
    cluster_peak_w: float  # the pipeline body's draw, cluster-wide
    cluster_trough_w: float  # the step end's draw (exposed DP communication, optimizer, overhead)
    swing_w: float  # peak - trough, once per step
    checkpoint_w: float  # every GPU waiting on a checkpoint write
    checkpoint_swing_w: float  # peak - checkpoint_w, once per checkpoint interval
    site_avg_w: float  # x PUE
    site_swing_w: float
    cluster_rated_w: float  # the rated method: (allin_w_per_gpu + network) x gpus
    site_rated_w: float
    pue: float
    network_w_per_gpu: float
    step_s: float
    checkpoint_s: float = 0.0
    checkpoint_interval_s: float = 0.0
    timeline: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    levels_w: dict[str, Any] = field(default_factory=dict)

    @property
    def site_w_per_gpu(self) -> float:
        return self.site_avg_w / self.gpus

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def draw(
    sp: StepPower,
    lv: Levels,
    hw: HardwareSpec,
    gpus: int,
    network_w_per_gpu: float,
    pue: float,
    checkpoint_s: float = 0.0,
    checkpoint_interval_s: float = 0.0,
) -> PowerDraw:
    """Node, cluster and site power of `gpus` GPUs running step `sp`, with the step's swing and a checkpoint
    write's (checkpoint_s every checkpoint_interval_s; 0: none)."""
    if gpus < 1:
        raise InputError("gpus", "gpus", "must be >= 1")
    if not (pue >= 1 and math.isfinite(pue)):
        raise InputError("cost assumption", "pue", f"must be >= 1 (got {pue})")
    if not (network_w_per_gpu >= 0 and math.isfinite(network_w_per_gpu)):
        raise InputError("cost assumption", "network_storage_w_per_gpu", f"must be >= 0 (got {network_w_per_gpu})")
    n = hw.gpus_per_node
    cluster = lambda gpu_w: gpus * (lv.node_w(gpu_w) + network_w_per_gpu)  # noqa: E731
    peak, trough = max(sp.body_w, sp.tail_w), min(sp.body_w, sp.tail_w)
    rated_cluster = gpus * (hw.power.allin_w_per_gpu + network_w_per_gpu)
    node_rated = n * hw.power.allin_w_per_gpu
    node_avg = n * lv.node_w(sp.gpu_avg_w)
    timeline = tuple(
        {"phase": p.name, "seconds": p.seconds, "gpu_w": p.gpu_w, "cluster_w": cluster(p.gpu_w) if p.seconds else 0.0}
        for p in sp.phases
    ) + (
        {
            "phase": "checkpoint_write",
            "seconds": checkpoint_s,
            "every_s": checkpoint_interval_s,
            "gpu_w": lv.wait_w,
            "cluster_w": cluster(lv.wait_w) if checkpoint_s else 0.0,
        },
    )
    return PowerDraw(
        method="drawn",
        gpus=gpus,
        gpus_per_node=n,
        gpu_avg_w=sp.gpu_avg_w,
        gpu_peak_w=sp.gpu_peak_w,
        node_avg_w=node_avg,
        node_peak_w=n * lv.node_w(lv.tensor_w),
        node_rated_w=node_rated,
        share_of_rating=node_avg / node_rated,
        cluster_avg_w=cluster(sp.gpu_avg_w),
        cluster_peak_w=cluster(peak),
        cluster_trough_w=cluster(trough),
        swing_w=cluster(peak) - cluster(trough),
        checkpoint_w=cluster(lv.wait_w),
        checkpoint_swing_w=max(0.0, cluster(peak) - cluster(lv.wait_w)),
        site_avg_w=cluster(sp.gpu_avg_w) * pue,
        site_swing_w=(cluster(peak) - cluster(trough)) * pue,
        cluster_rated_w=rated_cluster,
        site_rated_w=rated_cluster * pue,
        pue=pue,
        network_w_per_gpu=network_w_per_gpu,
        step_s=sp.step_s,
        checkpoint_s=checkpoint_s,
        checkpoint_interval_s=checkpoint_interval_s,
        timeline=timeline,
        levels_w={
            "tensor": lv.tensor_w,
            "memory_bound": lv.memory_w,
            "wait": lv.wait_w,
            "idle": lv.idle_w,
            "host_per_gpu": lv.host_w,
            "cooling_per_gpu": lv.cooling_w,
            "conversion_efficiency": lv.efficiency,
            "power_limit_w": lv.limit_w,
        },
    )


def rated(hw: HardwareSpec, gpus: int, network_w_per_gpu: float, pue: float, why: str) -> dict[str, Any]:
    """The `power` record where the drawn method cannot run (`why`): the rated method's figures."""
    n = hw.gpus_per_node
    cluster = gpus * (hw.power.allin_w_per_gpu + network_w_per_gpu)
    return {
        "method": "rated",
        "gpus": gpus,
        "gpus_per_node": n,
        "gpu_avg_w": hw.power.gpu_tdp_w,
        "node_avg_w": n * hw.power.allin_w_per_gpu,
        "node_peak_w": n * hw.power.allin_w_per_gpu,
        "node_rated_w": n * hw.power.allin_w_per_gpu,
        "cluster_avg_w": cluster,
        "cluster_rated_w": cluster,
        "site_avg_w": cluster * pue,
        "site_rated_w": cluster * pue,
        "pue": pue,
        "note": why,
    }
