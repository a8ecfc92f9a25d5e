"""HardwareSpec: one GPU type in its system (HGX node, NVL72 rack, AMD Infinity Fabric platform), loaded from hardware/*.toml.

Units are SI throughout: FLOP/s (dense, no 2:4 sparsity), bytes, bytes/s per GPU per direction,
seconds, watts, US dollars.
"""

from __future__ import annotations

import difflib
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from perfmodel.errors import InputError, did_you_mean
from perfmodel.specs.hashed import HashedSpec
from perfmodel.specs.specfile import read_document, resolve, split_sources, validate

PRECISIONS = ("fp16", "bf16", "fp8", "fp8-block", "mxfp8", "nvfp4")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Pos = Field(gt=0, allow_inf_nan=False)
Frac = Field(gt=0, le=1, allow_inf_nan=False)
# Plausibility bounds: a value outside them is a typo or a unit slip (GB vs bytes), never a GPU.
Flops = Field(ge=1e9, le=1e18, allow_inf_nan=False)  # 1 GFLOP/s .. 1 EFLOP/s per GPU
OptFlops = Field(default=None, ge=1e9, le=1e18, allow_inf_nan=False)
Bytes = Field(ge=1e8, le=1e14, allow_inf_nan=False)  # 100 MB .. 100 TB of HBM
Bandwidth = Field(ge=1e8, le=1e15, allow_inf_nan=False)  # 100 MB/s .. 1 PB/s
Watts = Field(ge=1, le=1e5, allow_inf_nan=False)


class PeakFlops(Frozen):
    """Dense peak FLOP/s per precision (datasheet sparse figures halved)."""

    fp32: float = Flops
    tf32: float = Flops
    bf16: float = Flops
    fp16: float = Flops
    fp8: float | None = OptFlops
    mxfp8: float | None = OptFlops
    nvfp4: float | None = OptFlops
    fp64: float | None = OptFlops


class Memory(Frozen):
    hbm_bytes: float = Bytes  # the vendor's capacity, its "GB" read as 10^9 bytes (80 GB H100: 80e9)
    hbm_bandwidth: float = Bandwidth
    # what the device lets a process allocate, as PyTorch reports it (torch.cuda.get_device_properties().total_memory,
    # the driver's context already outside it): 85.03e9 B on an "80 GB" H100. None = not measured for this part;
    # the capacity is then hbm_bytes
    device_bytes: float | None = Field(default=None, ge=1e6, le=1e14, allow_inf_nan=False)
    # GPU <-> host memory link, per GPU per direction (NVLink-C2C on Grace systems, PCIe otherwise): what
    # activation CPU offloading moves over; None = not given (a stack that offloads is then refused)
    host_bandwidth: float | None = Field(default=None, ge=1e8, le=1e15, allow_inf_nan=False)

    @property
    def capacity(self) -> float:
        """Bytes a training process can hold on one GPU before the reserve (constants.reserved_bytes): the
        device-reported total where it is measured, else the vendor's figure."""
        return self.device_bytes if self.device_bytes is not None else self.hbm_bytes


class ScaleUp(Frozen):
    """NVLink domain: GPUs that talk at NVLink speed (8 in an HGX node, 72 in an NVL72 rack)."""

    domain_size: int = Field(ge=1, le=100000)
    bandwidth: float = Bandwidth  # per GPU, per direction
    nvls: bool = False  # NVLink SHARP in-switch reduction
    latency_s: float = Field(default=5e-6, ge=0, le=0.1, allow_inf_nan=False)  # 100 ms: a typo or a unit slip


class ScaleOut(Frozen):
    """InfiniBand / RoCE between domains, per GPU: a rail-optimised two-tier (leaf, spine) fat tree.

    Each GPU's NIC sits on the leaf of its rail (GPU i of a node on rail i mod `rails`) in its scalable
    unit; GPUs on one rail of one unit are one leaf hop apart, everything else crosses the spine (DGX
    SuperPOD reference architectures: "traffic per rail ... is always one hop away from the other nodes in
    a SU. Traffic between nodes, or between rails, traverses the spine layer"). The new fields are optional:
    without them the whole cluster is one unit (no traffic needs the spine), non-blocking, as before."""

    bandwidth: float = Bandwidth  # per GPU, per direction (all its NICs)
    nics_per_gpu: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    latency_s: float = Field(default=1e-5, ge=0, le=0.1, allow_inf_nan=False)  # one network hop (a leaf)
    rails: int | None = Field(default=None, ge=1, le=1024)  # leaves per unit; None = gpus_per_node
    scalable_unit_gpus: int | None = Field(default=None, ge=1, le=10**7)  # GPUs under one set of rail
    # leaves; None = the whole cluster
    spine_oversubscription: float = Field(default=1.0, ge=1, le=1000, allow_inf_nan=False)  # leaf down:up
    # bandwidth; 1 = non-blocking
    spine_latency_s: float = Field(default=0.0, ge=0, le=0.1, allow_inf_nan=False)  # extra for a path
    # through the spine (leaf-spine-leaf)


OptWatts = Field(default=None, ge=0, le=1e5, allow_inf_nan=False)


class Power(Frozen):
    """Power of one GPU in its system. `gpu_tdp_w` and `allin_w_per_gpu` are ratings (the cost report's method:
    rating x time). The optional drawn-power fields describe what the hardware draws by phase of a step
    (economics/power.py): all of them, or none (the drawn method is then unavailable for the spec)."""

    gpu_tdp_w: float = Watts
    allin_w_per_gpu: float = Watts  # GPU + its share of CPUs, NICs, switches, storage (IT power)
    # the GPU power cap the site runs at (nvidia-smi -pl), W; None = the TDP. A fact about the site, not the
    # software: Meta's Grand Teton H100s run at a 500 W default limit (torchtitan
    # benchmarks/llama3_h100_202412_torchtitan.md). The cost model lowers the tensor clocks by the rule of
    # core/software.py (power_factor); the drawn-power model caps every phase at it (economics/power.py)
    power_limit_w: float | None = Field(default=None, gt=0, le=1e5, allow_inf_nan=False)
    idle_w: float | None = OptWatts  # GPU idle, no job (nvidia-smi at P0, no memory held)
    wait_w: float | None = OptWatts  # GPU in a job with no kernel running: waiting on communication, a pipeline
    # stage, the host or a checkpoint write (memory held, clocks up)
    memory_bound_w: float | None = OptWatts  # GPU streaming HBM (memory-bound kernels, optimizer step)
    host_w_per_gpu: float | None = OptWatts  # per GPU: host CPUs, DRAM, NICs / DPUs, NVLink switches, drives, VRs
    cooling_w_per_gpu: float | None = OptWatts  # per GPU: fans (air) or in-system pumps; 0 where the facility cools
    conversion_efficiency: float | None = Field(default=None, gt=0.5, le=1, allow_inf_nan=False)  # DC out / AC in
    # of the system's power supplies or rack power shelves

    @model_validator(mode="after")
    def _drawn_fields(self) -> "Power":
        given = {k: getattr(self, k) for k in DRAWN_FIELDS}
        missing = [k for k, v in given.items() if v is None]
        if missing and len(missing) < len(DRAWN_FIELDS):
            raise ValueError(
                f"drawn-power fields are all given or none: missing {', '.join(missing)} "
                f"(given: {', '.join(k for k in DRAWN_FIELDS if k not in missing)})"
            )
        if not missing:
            order = (("idle_w", "wait_w"), ("wait_w", "memory_bound_w"), ("memory_bound_w", "gpu_tdp_w"))
            for lo, hi in order:
                if getattr(self, lo) > getattr(self, hi):
                    raise ValueError(f"{lo} ({getattr(self, lo):g} W) must not exceed {hi} ({getattr(self, hi):g} W)")
        return self

    @property
    def drawn(self) -> bool:
        """The spec carries the drawn-power fields (economics/power.py can price its phases)."""
        return self.idle_w is not None


DRAWN_FIELDS = ("idle_w", "wait_w", "memory_bound_w", "host_w_per_gpu", "cooling_w_per_gpu", "conversion_efficiency")


class Efficiency(Frozen):
    """Achievable fractions of peak, each measured (sources in the file)."""

    gemm_bf16: float = Frac  # best-shape dense GEMM / bf16 peak
    gemm_fp8: float = Frac  # best-shape FP8 GEMM / fp8 peak
    gemm_fp4: float | None = Field(default=None, gt=0, le=1)
    # BF16 tensor rate that back-to-back large GEMMs sustain at the board power limit (steady state), / bf16
    # peak: a GEMM's efficiency never exceeds it (compute.gemm_time); None = the part is not power-bound
    gemm_bf16_power_bound: float | None = Field(default=None, gt=0, le=1)
    # the GEMM efficiency shape (compute.gemm_time): K, and M / N, at which a GEMM reaches half its best-shape rate;
    # None = fitted to the part's generation's measured GEMM table (hardware/kernels/, specs/kernels.py)
    gemm_k_half: float | None = Field(default=None, ge=0, le=1e5, allow_inf_nan=False)
    gemm_mn_half: float | None = Field(default=None, ge=0, le=1e5, allow_inf_nan=False)
    attention_fwd: float = Frac  # flash-attention forward / bf16 peak
    attention_bwd: float = Frac  # flash-attention backward / bf16 peak
    memory_bound: float = Frac  # streaming kernels / HBM bandwidth
    scale_up_allreduce: float = Frac  # busbw / NVLink line rate (NVLS where present)
    scale_up_collective: float = Frac  # all-gather / reduce-scatter busbw / line rate
    # message size at which NCCL inside the NVLink domain reaches half its plateau bus bandwidth (comm.py);
    # None = fitted to the part's generation's measured collective table (hardware/kernels/, specs/kernels.py)
    collective_half_bytes: float | None = Field(default=None, ge=0, le=1e10, allow_inf_nan=False)
    scale_up_all_to_all: float = Frac
    scale_out_collective: float = Frac  # busbw / NIC line rate
    scale_out_all_to_all: float = Frac


class Cost(Frozen):
    """Capital cost of one purchasable unit (server or rack); economics reads these."""

    gpus_per_unit: int = Field(ge=1)
    unit_name: str = "server"
    unit_capex_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    allin_capex_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    liquid_cooled: bool = False  # direct liquid cooling: economics uses the buyer's liquid-cooled PUE


class HardwareSpec(Frozen, HashedSpec):
    HASH_EXCLUDE: ClassVar[set[str]] = {"sources", "notes", "path", "overridden", "base", "notes_of"}
    __hash__ = HashedSpec.__hash__  # in the class body: pydantic gives a frozen model its own hash otherwise
    id: str
    name: str
    # NVIDIA ampere / hopper / blackwell / blackwell-ultra; AMD cdna3 (Instinct MI300X). The band family
    # (perfmodel/analysis/uncertainty.py) and the attention-kernel factors (perfmodel/core/software.py) key on it
    generation: Literal["ampere", "hopper", "blackwell", "blackwell-ultra", "cdna3"]
    gpus_per_node: int = Field(ge=1)
    peak_flops: PeakFlops
    memory: Memory
    scale_up: ScaleUp
    scale_out: ScaleOut
    power: Power
    efficiency: Efficiency
    cost: Cost | None = None
    measured: dict[str, Any] = Field(default_factory=dict)  # free-form dated measurements
    notes: str = ""
    sources: dict[str, str] = Field(default_factory=dict)  # dotted field -> source (filled by loader)
    path: str = ""
    overridden: tuple[str, ...] = ()  # dotted fields changed by a `base =` file or --set (what-if specs)
    base: str = ""  # what-if specs: id of the spec `overridden` is relative to (the root of
    # the `base =` chain, or the spec --set was applied to)
    notes_of: str = ""  # id of the spec `notes` were written for, where not this one (inherited
    # by a `base =` file, or kept through --set): they may describe what changed

    def display_name(self, changes: bool = True) -> str:
        """The name to print. A catalog spec: `name`. A what-if spec (a field overridden by a `base =` file or
        --set) keeps its base's name only with what it is: 'NVIDIA GB200 NVL72 (72-GPU NVLink rack, ...) —
        what-if of gb200-nvl72: scale_up.domain_size=144' (without the changed fields when `changes` is
        False, for a header whose next line lists them)."""
        if not self.overridden:
            return self.name
        what = f"{self.name} — what-if of {self.base or self.id}"
        return f"{what}: {whatif_fields(self, '=')}" if changes else what

    @model_validator(mode="after")
    def _domain_holds_node(self) -> "HardwareSpec":
        if self.scale_up.domain_size % self.gpus_per_node and self.gpus_per_node % self.scale_up.domain_size:
            raise ValueError("scale_up.domain_size and gpus_per_node must divide one another")
        so = self.scale_out
        if so.rails is not None and so.rails > self.gpus_per_node:
            raise ValueError(
                f"scale_out.rails ({so.rails}) cannot exceed gpus_per_node ({self.gpus_per_node}): "
                "a rail is a GPU position in the node"
            )
        unit = max(self.scale_up.domain_size, self.gpus_per_node)
        if so.scalable_unit_gpus is not None and so.scalable_unit_gpus % unit:
            raise ValueError(
                f"scale_out.scalable_unit_gpus ({so.scalable_unit_gpus}) must be a multiple of the "
                f"NVLink domain and node size ({unit})"
            )
        return self

    def at_clock(self, factor: float) -> "HardwareSpec":
        """This GPU with its tensor-core peaks scaled by `factor` (a sustained clock below the nominal one under
        a power cap; memory and network rates unchanged). factor 1: itself."""
        if factor == 1.0:
            return self
        p = self.peak_flops
        scaled = {k: v * factor for k, v in p.model_dump().items() if v is not None}
        return self.model_copy(update={"peak_flops": p.model_copy(update=scaled)})

    def peak(self, precision: str) -> float:
        """Dense peak FLOP/s of the tensor cores for a training precision."""
        p = self.peak_flops
        table = {"fp16": p.fp16, "bf16": p.bf16, "fp8": p.fp8, "fp8-block": p.fp8, "mxfp8": p.mxfp8, "nvfp4": p.nvfp4}
        if precision not in table:
            raise InputError(
                "precision",
                precision,
                f"unknown precision{did_you_mean(precision, table)}; one of {', '.join(table)}",
            )
        val = table[precision]
        if val is None:
            raise InputError(
                self.id,
                "precision",
                f"{self.name} has no {precision} tensor cores (peak_flops.{precision.replace('-block', '')} not set)",
            )
        return val


# ---- display units of fields (SI value -> display value) ------------------------------------------


def hardware_unit(field: str) -> tuple[float, str, str]:
    """(display divisor, display unit, SI unit) for a hardware field, by its name."""
    leaf = field.rsplit(".", 1)[-1]
    if field.startswith("peak_flops."):
        return 1e12, "TFLOP/s", "FLOP/s"
    if leaf in ("hbm_bytes", "device_bytes"):
        return 1e9, "GB", "B"
    if leaf == "hbm_bandwidth":
        return 1e12, "TB/s", "B/s"
    if leaf == "bandwidth":
        return 1e9, "GB/s", "B/s"
    if leaf.endswith("_s"):
        return 1e-6, "us", "s"
    if leaf.endswith("_w") or leaf.endswith("_w_per_gpu"):
        return 1.0, "W", "W"
    if leaf.endswith("_usd"):
        return 1.0, "USD", "USD"
    if leaf in ("gemm_k_half", "gemm_mn_half"):
        return 1.0, "elements", "elements"
    if leaf == "collective_half_bytes":
        return 2.0**20, "MiB", "B"
    if field.startswith("efficiency."):
        return 1.0, "fraction of peak", "fraction of peak"
    return 1.0, "", ""


def show_field(field: str, value: Any) -> str:
    """A hardware field's value in its display unit: `scale_out.bandwidth`, 1e11 -> '100 GB/s'."""
    div, unit, _ = hardware_unit(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value / div:.4g} {unit}".strip()


def whatif_fields(hw: HardwareSpec, eq: str = " = ") -> str:
    """The overridden fields of a what-if spec with their values: 'scale_out.bandwidth = 100 GB/s, ...'."""
    return ", ".join(f"{f}{eq}{show_field(f, field_value(hw, f))}" for f in hw.overridden)


# ---- loading: catalog files, `base =` inheritance, --set overrides ------------------------------

_MAX_BASE_DEPTH = 8
_NOT_OVERRIDES = {"id", "name", "notes"}  # a `base =` file's own identity, not a change
_DESCRIPTIVE = HardwareSpec.HASH_EXCLUDE  # no effect on any prediction
_NOT_SETTABLE = {"sources", "path", "overridden", "measured", "id", "base", "notes_of"}

# friendly --set names: alias -> (dotted field, SI factor, unit the value is written in)
# aliases name their unit (gbit_s = Gbit/s, gbyte_s = GB/s, tbyte_s = TB/s, gb = GB of 1e9 bytes): the old
# `nic_gbps` (Gbit/s) and `nvlink_gbps` (GB/s) read alike and differed 8x; they are refused with the new name
RENAMED = {
    "nic_gbps": "nic_gbit_s",
    "nvlink_gbps": "nvlink_gbyte_s",
    "nvlink_bw": "nvlink_gbyte_s",
    "hbm_tbps": "hbm_tbyte_s",
}
ALIASES: dict[str, tuple[str, float, str]] = {
    "nvlink_domain": ("scale_up.domain_size", 1.0, "GPUs per NVLink domain"),
    "nvlink_gbyte_s": ("scale_up.bandwidth", 1e9, "GB/s per GPU per direction"),
    "nic_gbit_s": ("scale_out.bandwidth", 1e9 / 8, "Gbit/s per GPU, all its NICs; 400 = one CX7"),
    "spine_oversubscription": ("scale_out.spine_oversubscription", 1.0, "leaf down:up bandwidth, 1 = non-blocking"),
    "hbm_gb": ("memory.hbm_bytes", 1e9, "GB per GPU"),
    "hbm_tbyte_s": ("memory.hbm_bandwidth", 1e12, "TB/s per GPU"),
    "power_limit_w": ("power.power_limit_w", 1.0, "W, the GPU power cap the site runs at"),
}


def _submodel(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside a field annotation (`Cost | None` -> Cost), else None."""
    for a in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


def _leaf_fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    out: list[str] = []
    for name, fld in model.model_fields.items():
        sub = _submodel(fld.annotation)
        path = f"{prefix}.{name}" if prefix else name
        out += _leaf_fields(sub, path) if sub else [path]
    return out


def settable_fields() -> list[str]:
    """Dotted hardware fields that --set accepts (aliases not included)."""
    return [f for f in _leaf_fields(HardwareSpec) if f.split(".")[0] not in _NOT_SETTABLE]


def _is_value_leaf(x: Any) -> bool:
    return isinstance(x, dict) and "value" in x and set(x) <= {"value", "source", "note"}


def _leaves(doc: Any, prefix: str) -> list[str]:
    if isinstance(doc, dict) and not _is_value_leaf(doc):
        return [p for k, v in doc.items() for p in _leaves(v, f"{prefix}.{k}")]
    return [prefix]


def _deep_merge(base: dict[str, Any], over: dict[str, Any], prefix: str = "") -> tuple[dict[str, Any], list[str]]:
    """`over` merged into `base` table by table (a leaf, with or without its source, replaces the
    base's leaf); returns the merged document and the dotted leaves `over` set."""
    out, changed = dict(base), []
    for key, val in over.items():
        path = f"{prefix}.{key}" if prefix else key
        old = out.get(key)
        if isinstance(val, dict) and not _is_value_leaf(val) and isinstance(old, dict) and not _is_value_leaf(old):
            out[key], sub = _deep_merge(old, val, path)
            changed += sub
        else:
            out[key] = val
            changed += _leaves(val, path)
    return out, changed


def _tag(doc: Any, source: str) -> Any:
    """Give every leaf of `doc` that names no source of its own `source` (so `show` says where it came from)."""
    if _is_value_leaf(doc):
        return doc if "source" in doc else {**doc, "source": source}
    if isinstance(doc, dict):
        return {k: _tag(v, source) for k, v in doc.items()}
    return {"value": doc, "source": source}


def scaled_device_bytes(hbm_bytes: float, device_bytes: float | None, new_hbm_bytes: Any) -> float | None:
    """A what-if vendor capacity keeps the part's measured usable share: device total / vendor figure of the
    base, times the new figure (None where the base has no device total or the new figure is not a number)."""
    if device_bytes is None or isinstance(new_hbm_bytes, bool) or not isinstance(new_hbm_bytes, (int, float)):
        return None
    return float(new_hbm_bytes) * device_bytes / hbm_bytes


def _leaf_value(x: Any) -> Any:
    return x.get("value") if _is_value_leaf(x) else x


def _read_with_base(path: Path, depth: int = 0) -> tuple[dict[str, Any], list[str]]:
    """The raw document of `path` with its `base = "<catalog id or file>"` chain merged in, and the
    dotted fields the chain overrides."""
    doc = read_document(path)
    base_ref = doc.pop("base", None)
    if base_ref is None:
        return doc, []
    where = str(path)
    if not isinstance(base_ref, str) or not base_ref:
        raise InputError(where, "base", "must be a hardware catalog id or a path to a hardware file")
    if depth >= _MAX_BASE_DEPTH:
        raise InputError(where, "base", f"more than {_MAX_BASE_DEPTH} nested `base =` files (a cycle?)")
    near = path.parent / base_ref  # a relative path is relative to this file first
    base_path = (
        near
        if ("/" in base_ref or near.suffix in (".toml", ".json")) and near.exists()
        else resolve(base_ref, "hardware")
    )
    if base_path.resolve() == path.resolve():
        raise InputError(where, "base", "a file cannot be its own base")
    base_doc, base_over = _read_with_base(base_path, depth + 1)
    base_id = str(base_doc.get("id", base_path.stem))
    if "notes_of" in doc:  # set by the loader (the base's notes), never by a file
        raise InputError(where, "notes_of", "is set by the loader; write `notes = ...` for notes of this spec")
    own = {k: v if k in _NOT_OVERRIDES else _tag(v, f"overridden in {path.name}") for k, v in doc.items()}
    merged, changed = _deep_merge(base_doc, own)
    merged["id"] = doc.get("id", path.stem)
    merged["base"] = base_doc.get("base") or base_id  # the root of the chain: what `overridden` is relative to
    # Without a name of its own the file keeps the base's (HardwareSpec.display_name says it is a what-if of
    # the base and what changed); without notes of its own it keeps the base's, marked as the base's
    # (`notes_of`): they describe the base system and may contradict the override ("one NVLink domain of 72").
    if "notes" in doc:
        merged.pop("notes_of", None)
    elif merged.get("notes"):
        merged["notes_of"] = base_doc.get("notes_of") or base_id
    own_mem, base_mem = doc.get("memory") or {}, base_doc.get("memory") or {}
    if isinstance(own_mem, dict) and "hbm_bytes" in own_mem and "device_bytes" not in own_mem:
        dev = scaled_device_bytes(
            float(_leaf_value(base_mem.get("hbm_bytes"))),
            _leaf_value(base_mem.get("device_bytes")),
            _leaf_value(own_mem["hbm_bytes"]),
        )
        if dev is not None:  # derived, not an override of the file's own (its source says how)
            merged["memory"]["device_bytes"] = {
                "value": dev,
                "source": f"memory.hbm_bytes of {path.name} x {base_id}'s device-reported share of its vendor capacity",
            }
    over = [c for c in changed if c not in _NOT_OVERRIDES]
    return merged, list(dict.fromkeys(base_over + over))


@lru_cache(maxsize=256)
def _load(path: str) -> HardwareSpec:
    doc, overridden = _read_with_base(Path(path))
    plain, sources = split_sources(doc)
    plain.setdefault("id", Path(path).stem)
    plain["sources"] = sources
    plain["path"] = path
    plain["overridden"] = tuple(overridden)
    return validate(HardwareSpec, plain, path)


def load_hardware(ref: str | HardwareSpec) -> HardwareSpec:
    """A catalog id (`h100-sxm`) or a path to a TOML file -> HardwareSpec.

    A file may start from another spec: `base = "gb200-nvl72"` (catalog id, or a path relative to the
    file) and then list only the fields it changes, table by table; its `id` defaults to the file stem."""
    if isinstance(ref, HardwareSpec):
        return ref
    return _load(str(resolve(ref, "hardware")))


def _parse_value(text: str) -> bool | int | float | str:
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    for conv in (int, float):
        try:
            v = conv(t)
        except ValueError:
            continue
        if isinstance(v, float) and not math.isfinite(v):
            raise InputError("set", t, "value must be finite")
        return v
    return t


def parse_set(item: str) -> tuple[str, str, bool | int | float | str]:
    """'FIELD=VALUE' -> (dotted field, the name as written, value in SI units); aliases converted."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key or not raw.strip():
        raise InputError("set", item, "expected FIELD=VALUE, e.g. scale_up.domain_size=144 or nic_gbit_s=800")
    if key in RENAMED:
        new = RENAMED[key]
        raise InputError(
            "set",
            key,
            f"renamed to {new} (the unit in the name: {ALIASES[new][2]}); "
            f"{key} was ambiguous (Gbit/s for the NIC, GB/s for NVLink)",
        )
    value = _parse_value(raw)
    if key in ALIASES:
        field, factor, unit = ALIASES[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError("set", key, f"value must be a number in {unit} (got {raw.strip()!r})")
        return field, key, value if factor == 1.0 else value * factor
    fields = settable_fields()
    if key not in fields:
        hint = did_you_mean(key, fields + list(ALIASES))
        if not hint:  # a bare or misspelled leaf name (`domain_size`) -> its dotted path
            by_leaf = {f.rsplit(".", 1)[-1]: f for f in fields}
            close = difflib.get_close_matches(key, list(by_leaf), n=1, cutoff=0.6)
            hint = f" (did you mean '{by_leaf[close[0]]}'?)" if close else ""
        raise InputError(
            "set",
            key,
            f"unknown hardware field{hint}; fields as in `perfmodel show hardware ID`, or aliases {', '.join(ALIASES)}",
        )
    if isinstance(value, bool) and not _takes_bool(key):  # pydantic would read true as 1
        raise InputError(
            "set", key, f"value must be a number in {hardware_unit(key)[2] or 'its unit'} (got {raw.strip()!r})"
        )
    return key, key, value


def _takes_bool(field: str) -> bool:
    """Whether a dotted hardware field is a switch (its annotation admits bool)."""
    model: Any = HardwareSpec
    ann: Any = None
    for part in field.split("."):
        fld = model.model_fields[part]
        ann, model = fld.annotation, _submodel(fld.annotation)
    return ann is bool or bool in getattr(ann, "__args__", ())


def field_value(hw: HardwareSpec, field: str) -> Any:
    """The value of a dotted field (`scale_up.domain_size`), None where a table is absent."""
    obj: Any = hw
    for part in field.split("."):
        obj = getattr(obj, part, None)
    return obj


def apply_overrides(hw: HardwareSpec, sets: list[str] | tuple[str, ...]) -> HardwareSpec:
    """`hw` with `FIELD=VALUE` overrides (dotted fields or ALIASES), re-validated by the schema as a whole.
    The result records the changed fields in `overridden` and `--set ...` as their source."""
    if not sets:
        return hw
    doc = hw.model_dump(exclude={"overridden"})
    changed: list[str] = []
    given: dict[str, str] = {}
    for item in sets:
        field, name, value = parse_set(item)
        if field in given:  # a repeated field is two answers to one question, never "the last wins"
            raise InputError("set", name, f"sets {field} twice ({given[field]} and {item.strip()}): give it once")
        given[field] = item.strip()
        node = doc
        *parents, leaf = field.split(".")
        for p in parents:
            if node.get(p) is None:
                node[p] = {}
            node = node[p]
        node[leaf] = value
        doc["sources"][field] = f"--set {item.strip()}" + (f" ({ALIASES[name][2]})" if name in ALIASES else "")
        changed.append(field)
    if "memory.hbm_bytes" in given and "memory.device_bytes" not in given:
        # derived, so not listed among the fields the user overrode (its source says how)
        dev = scaled_device_bytes(hw.memory.hbm_bytes, hw.memory.device_bytes, doc["memory"]["hbm_bytes"])
        if dev is not None:
            doc["memory"]["device_bytes"] = dev
            doc["sources"]["memory.device_bytes"] = (
                f"--set {given['memory.hbm_bytes']} x {hw.id}'s device-reported share of its vendor capacity"
            )
    doc["overridden"] = tuple(dict.fromkeys(hw.overridden + tuple(changed)))
    doc["base"] = hw.base or hw.id
    if hw.notes and not hw.notes_of:  # the notes describe the spec before --set
        doc["notes_of"] = hw.id
    try:
        return validate(HardwareSpec, doc, "--set")
    except InputError as exc:
        if exc.field not in given:
            raise
        raise _in_user_units(exc, given[exc.field]) from None


def _in_user_units(exc: InputError, item: str) -> InputError:
    """A --set value the schema refused, restated as the user wrote it: the name typed (an alias keeps its
    own unit: hbm_gb in GB, nic_gbit_s in Gbit/s), the value as typed and the bound in that unit."""
    name, _, raw = item.partition("=")
    name, raw = name.strip(), raw.strip()
    bound = exc.details.get("bound")
    if bound is None:
        reason = exc.reason.split(" (got ")[0]
        return InputError("set", name, f"{reason} (got {raw})")
    words, value = bound
    if name in ALIASES:
        _, factor, unit = ALIASES[name]
        return InputError("set", name, f"must be {words} {value / factor:g} ({unit}; got {raw})")
    return InputError("set", name, f"must be {words} {value:g} (got {raw})")


def resolve_hardware(ref: str | HardwareSpec, sets: tuple[str, ...] | list[str] = ()) -> HardwareSpec:
    """A hardware reference plus its FIELD=VALUE overrides -> the effective HardwareSpec."""
    return apply_overrides(load_hardware(ref), list(sets))


def hardware_set_keys() -> list[str]:
    """Every key --set takes for hardware: dotted spec fields and their aliases (nvlink_domain, nic_gbit_s, ...)."""
    return [*settable_fields(), *ALIASES]


def split_hardware_sets(sets: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """--set items -> (hardware overrides, the rest), for commands whose --set also takes other keys."""
    hw_keys = set(hardware_set_keys()) | set(RENAMED)  # a renamed alias reaches parse_set, which names the new one
    mine = [s for s in sets if s.partition("=")[0].strip() in hw_keys]
    return mine, [s for s in sets if s not in mine]
