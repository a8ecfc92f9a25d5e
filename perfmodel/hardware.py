"""HardwareSpec: one GPU type in its system (HGX node or NVL72 rack), loaded from hardware/*.toml.

Units are SI throughout: FLOP/s (dense, no 2:4 sparsity), bytes, bytes/s per GPU per direction,
seconds, watts, US dollars.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from .errors import InputError, did_you_mean
from .specfile import read_document, resolve, split_sources, validate

PRECISIONS = ("fp16", "bf16", "fp8", "fp8-block", "mxfp8", "nvfp4")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Pos = Field(gt=0, allow_inf_nan=False)
Frac = Field(gt=0, le=1, allow_inf_nan=False)


class PeakFlops(Frozen):
    """Dense peak FLOP/s per precision (datasheet sparse figures halved)."""
    fp32: float = Pos
    tf32: float = Pos
    bf16: float = Pos
    fp16: float = Pos
    fp8: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    mxfp8: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    nvfp4: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    fp64: float | None = Field(default=None, gt=0, allow_inf_nan=False)


class Memory(Frozen):
    hbm_bytes: float = Pos
    hbm_bandwidth: float = Pos


class ScaleUp(Frozen):
    """NVLink domain: GPUs that talk at NVLink speed (8 in an HGX node, 72 in an NVL72 rack)."""
    domain_size: int = Field(ge=1, le=100000)
    bandwidth: float = Pos           # per GPU, per direction
    nvls: bool = False               # NVLink SHARP in-switch reduction
    latency_s: float = Field(default=5e-6, ge=0, allow_inf_nan=False)


class ScaleOut(Frozen):
    """InfiniBand / RoCE between domains, per GPU."""
    bandwidth: float = Pos           # per GPU, per direction (all its NICs)
    nics_per_gpu: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    latency_s: float = Field(default=1e-5, ge=0, allow_inf_nan=False)


class Power(Frozen):
    gpu_tdp_w: float = Pos
    allin_w_per_gpu: float = Pos     # GPU + its share of CPUs, NICs, switches, storage (IT power)


class Efficiency(Frozen):
    """Achievable fractions of peak, each measured (sources in the file)."""
    gemm_bf16: float = Frac          # best-shape dense GEMM / bf16 peak
    gemm_fp8: float = Frac           # best-shape FP8 GEMM / fp8 peak
    gemm_fp4: float | None = Field(default=None, gt=0, le=1)
    attention_fwd: float = Frac      # flash-attention forward / bf16 peak
    attention_bwd: float = Frac      # flash-attention backward / bf16 peak
    memory_bound: float = Frac       # streaming kernels / HBM bandwidth
    scale_up_allreduce: float = Frac     # busbw / NVLink line rate (NVLS where present)
    scale_up_collective: float = Frac    # all-gather / reduce-scatter busbw / line rate
    scale_up_all_to_all: float = Frac
    scale_out_collective: float = Frac   # busbw / NIC line rate
    scale_out_all_to_all: float = Frac


class Cost(Frozen):
    """Capital cost of one purchasable unit (server or rack); economics reads these."""
    gpus_per_unit: int = Field(ge=1)
    unit_name: str = "server"
    unit_capex_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    allin_capex_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    liquid_cooled: bool = False      # direct liquid cooling: economics uses the buyer's liquid-cooled PUE


class HardwareSpec(Frozen):
    id: str
    name: str
    generation: Literal["ampere", "hopper", "blackwell", "blackwell-ultra"]
    gpus_per_node: int = Field(ge=1)
    peak_flops: PeakFlops
    memory: Memory
    scale_up: ScaleUp
    scale_out: ScaleOut
    power: Power
    efficiency: Efficiency
    cost: Cost | None = None
    measured: dict[str, Any] = Field(default_factory=dict)   # free-form dated measurements
    notes: str = ""
    sources: dict[str, str] = Field(default_factory=dict)    # dotted field -> source (filled by loader)
    path: str = ""
    _hash: int | None = PrivateAttr(default=None)

    def __hash__(self) -> int:  # hashable despite dict fields, so derived counts can be cached
        if self._hash is None:
            self._hash = hash(self.model_dump_json(exclude={"sources", "notes", "path"}))
        return self._hash

    @model_validator(mode="after")
    def _domain_holds_node(self) -> "HardwareSpec":
        if self.scale_up.domain_size % self.gpus_per_node and self.gpus_per_node % self.scale_up.domain_size:
            raise ValueError("scale_up.domain_size and gpus_per_node must divide one another")
        return self

    def peak(self, precision: str) -> float:
        """Dense peak FLOP/s of the tensor cores for a training precision."""
        p = self.peak_flops
        table = {"fp16": p.fp16, "bf16": p.bf16, "fp8": p.fp8, "fp8-block": p.fp8,
                 "mxfp8": p.mxfp8, "nvfp4": p.nvfp4}
        if precision not in table:
            raise InputError("--precision", precision,
                             f"unknown precision{did_you_mean(precision, table)}; one of {', '.join(table)}")
        val = table[precision]
        if val is None:
            raise InputError(self.id, "precision",
                             f"{self.name} has no {precision} tensor cores (peak_flops.{precision.replace('-block', '')} not set)")
        return val


@lru_cache(maxsize=256)
def _load(path: str) -> HardwareSpec:
    doc = read_document(Path(path))
    plain, sources = split_sources(doc)
    plain.setdefault("id", Path(path).stem)
    plain["sources"] = sources
    plain["path"] = path
    return validate(HardwareSpec, plain, path)


def load_hardware(ref: str | HardwareSpec) -> HardwareSpec:
    """A catalog id (`h100-sxm`) or a path to a TOML file -> HardwareSpec."""
    if isinstance(ref, HardwareSpec):
        return ref
    return _load(str(resolve(ref, "hardware")))
