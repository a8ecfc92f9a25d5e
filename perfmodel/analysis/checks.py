"""Plausibility checks shared by the commands: a layout that cannot run, a measured throughput that no GPU
can reach, a sequence beyond the model's context. Each returns a reason in words (or raises InputError), so
every command refuses the same cases with the same sentence.

- Runnable: a layout runs when its predicted memory per GPU (the fullest pipeline rank, perfmodel/core/memory.py) is at
  most the GPU's HBM. A layout that does not fit gets no throughput, cost or energy anywhere.
- Implied MFU: a measured tokens/s/GPU x model FLOPs per token (causal attention, the smaller convention,
  without MTP layers: counts.flops_per_token) / the dense peak FLOP/s of the training precision
  (hardware.peak) is the MFU the measurement implies (MFU definition, DESIGN.md). Above 1 (100%) it is
  impossible: the usual slip is a cluster total typed as a per-GPU figure.
- NVLink domain: a layout whose TP, TP x CP or EP group spans more than one scale-up domain runs those
  collectives on the scale-out network (priced so, comm.py), and a TP overlap that needs the domain
  (software.OVERLAP_DOMAIN) hides nothing there: a warning names the group and what it costs
  (`domain_warning`), and --json carries the flags (`domain_flags`).
- Context: a sequence longer than the model's max_position_embeddings is a warning, not an error (long-context
  training extends RoPE, e.g. Llama 3.1's x16 from 8,192 to 131,072), so the command goes on and says so.
"""

from __future__ import annotations

from dataclasses import replace

from perfmodel import api
from perfmodel.core.predict import Options
from perfmodel.errors import InputError, warn
from perfmodel.specs.counts import flops_per_token
from perfmodel.specs.hardware import PRECISIONS, HardwareSpec
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import ModelSpec

GB = 1e9  # every table prints memory in GB = 1e9 bytes (HBM is sold in these units: 80 GB H100)


def gb(x: float) -> str:
    return f"{x / GB:.1f} GB"


def usable_note(hw) -> str:
    """' (the device's total; 80 GB HBM)' where the usable capacity is the device-reported total."""
    m = hw.memory
    return f" (device total; {m.hbm_bytes / 1e9:.0f} GB HBM)" if m.device_bytes is not None else " HBM"


def memory_reason(memory_bytes: float, hbm_bytes: float, hw_id: str) -> str:
    """'needs 131.7 GB per GPU, 51.7 GB over the 85.0 GB the device reports on h100-sxm' (hbm_bytes: the
    capacity the fit used, hardware Memory.capacity)."""
    return (
        f"needs {gb(memory_bytes)} per GPU, {gb(memory_bytes - hbm_bytes)} over the {gb(hbm_bytes)} usable on {hw_id}"
    )


def min_flops_per_token(model: ModelSpec, seq: int) -> float:
    """The smallest model FLOPs per token a run of `model` at `seq` can do: causal attention, no MTP layers
    (a run without MTP does less; the rule must never refuse a real run)."""
    return float(flops_per_token(model, seq, "causal", mtp=False))


def max_dense_peak(hw: HardwareSpec) -> tuple[float, str]:
    """(the largest dense peak FLOP/s among the precisions the GPU has, that precision)."""
    best = (0.0, "bf16")
    for p in PRECISIONS:
        try:
            v = hw.peak(p)
        except InputError:
            continue
        if v > best[0]:  # the first precision of a tie (fp8 before fp8-block)
            best = (v, p)
    return best


def implausible_throughput(
    model: ModelSpec, hw: HardwareSpec, tokens_per_s_per_gpu: float, seq: int, precision: str | None = None
) -> str | None:
    """Why a measured tokens/s/GPU is impossible (implied MFU above 100% of the dense peak), else None.
    precision None: the GPU's fastest precision (never refuses a run because its precision was not given)."""
    if precision is None:
        peak, precision = max_dense_peak(hw)
    else:
        peak = hw.peak(precision)
    fpt = min_flops_per_token(model, seq)
    mfu = tokens_per_s_per_gpu * fpt / peak
    if mfu <= 1.0:
        return None
    return (
        f"{tokens_per_s_per_gpu:,.6g} tokens/s/GPU implies an MFU of {mfu:,.0%} of the {precision} dense peak "
        f"({peak / 1e12:,.0f} TFLOP/s, {fpt / 1e9:,.1f} GFLOP per token at seq {seq:,}): impossible above 100%, "
        f"at most {peak / fpt:,.0f} tokens/s/GPU (a cluster total typed as per-GPU?)"
    )


LOW_MFU = 0.01  # a measured run below 1% MFU is warned: training at that rate is a unit slip or a broken run


def low_mfu_warning(
    model: ModelSpec, hw: HardwareSpec, tokens_per_s_per_gpu: float, seq: int, precision: str | None = None
) -> str | None:
    """A warning when a measured tokens/s/GPU implies an MFU below LOW_MFU (1%) of the dense peak (causal
    attention, the larger MFU of the two conventions), else None: predicted and reported, but the unit is
    suspect (tokens/s of one GPU typed as per second of a step? a per-GPU figure divided by the GPU count?)."""
    peak = hw.peak(precision) if precision is not None else max_dense_peak(hw)[0]
    mfu = tokens_per_s_per_gpu * float(flops_per_token(model, seq, "causal", mtp=True)) / peak
    if mfu >= LOW_MFU:
        return None
    return (
        f"{tokens_per_s_per_gpu:,.6g} tokens/s/GPU implies an MFU of {mfu:.2%} (below {LOW_MFU:.0%}): predicted as "
        "given, but check the unit (tokens/s per GPU, not per cluster divided again; seconds, not ms)"
    )


def check_measured_throughput(
    model: ModelSpec, hw: HardwareSpec, tokens_per_s_per_gpu: float, seq: int, flag: str, precision: str | None = None
) -> None:
    """InputError naming the input `flag` (errors.FLAGS) when a measured throughput is impossible
    (implausible_throughput)."""
    why = implausible_throughput(model, hw, tokens_per_s_per_gpu, seq, precision)
    if why:
        raise InputError(flag, "tokens_per_s_per_gpu", why)


def context_warning(model: ModelSpec, seq: int) -> str | None:
    """A warning when `seq` exceeds the model's maximum context (max_position_embeddings), else None."""
    ctx = model.max_position_embeddings
    if seq <= ctx:
        return None
    return (
        f"seq {seq:,} is {seq / ctx:.3g}x {model.id}'s maximum context ({ctx:,} tokens, max_position_embeddings): "
        "predicted as given (rule: above the maximum context perfmodel warns and goes on; long-context "
        "training extends RoPE)"
    )


def warn_context(model: ModelSpec, seq: int | None) -> None:
    """context_warning as a warning the command line prints on stderr after its output (errors.WARNINGS), never
    on stdout, so --json stays one document; the command goes on."""
    warn(context_warning(model, seq) if seq else None)


def domain_flags(hw: HardwareSpec, layout) -> dict[str, bool]:
    """{"tp", "tp_cp", "ep"}: True where that group of `layout` (a Layout or a layout dict) leaves the NVLink
    domain (topology.domain_exits)."""
    from perfmodel.core.topology import domain_exits

    get = (lambda k: layout[k]) if isinstance(layout, dict) else (lambda k: getattr(layout, k))
    return {k: bool(v) for k, v in domain_exits(hw, get("tp"), get("cp"), get("ep"), get("etp")).items()}


def domain_warning(hw: HardwareSpec, layout, tp_overlap_scale_up: bool = False) -> str | None:
    """One line naming each group of `layout` that leaves the NVLink domain, or None: TP (its collectives on
    the critical path of every layer, and a userbuffers / AsyncTP overlap hides none of them there), TP x CP,
    EP (dispatch and combine across the scale-out network)."""
    flags = domain_flags(hw, layout)
    if not any(flags.values()):
        return None
    get = (lambda k: layout[k]) if isinstance(layout, dict) else (lambda k: getattr(layout, k))
    D = hw.scale_up.domain_size
    parts = []
    if flags["tp"]:
        parts.append(
            f"tp {get('tp')} spans {-(-get('tp') // D)} NVLink domains: its collectives cross the scale-out "
            "network" + (" and the stack's TP overlap (NVLink only) hides none of them" if tp_overlap_scale_up else "")
        )
    elif flags["tp_cp"]:
        parts.append(
            f"tp x cp = {get('tp') * get('cp')} spans more than one NVLink domain: the CP ring crosses the "
            "scale-out network"
        )
    if flags["ep"]:
        parts.append(
            f"ep {get('ep')} spans more than one NVLink domain: MoE dispatch / combine cross the scale-out network"
        )
    return f"{hw.id} has {D} GPUs per NVLink domain; " + "; ".join(parts) + " (priced so)"


def check_tokens_cover_a_batch(tokens: float, gbs: int, seq: int, flag: str = "tokens") -> None:
    """InputError naming the input `flag` when a run's tokens are fewer than one global batch (gbs x seq): a run
    trains at least one step, so its days, dollars and energy would be a fraction of one step's, printed as
    "$0" and "0.0 days"."""
    batch = float(gbs) * float(seq)
    if tokens < batch:
        raise InputError(
            flag,
            "tokens",
            f"{tokens:,.6g} tokens are fewer than one global batch ({gbs:,} sequences x "
            f"{seq:,} tokens = {batch:,.0f} tokens): a run trains at least one step; give "
            f"--tokens of at least {batch:,.0f}",
        )


# ---- a layout that does not fit: the single changes that would ----------------------------------------------


def fitting_alternatives(
    m: ModelSpec,
    hw: HardwareSpec,
    lay: Layout,
    precision: str,
    attention: str,
    routing: str,
    consts=None,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> list[str]:
    """Single changes of `lay` that are legal and fit in HBM, as CLI flags (checked by predicting each)."""
    cands: list[tuple[str, Layout]] = []
    if lay.recompute != "selective" and lay.recompute != "full":
        cands.append(("--recompute selective", replace(lay, recompute="selective")))
    if lay.recompute != "full":
        cands.append(("--recompute full", replace(lay, recompute="full")))
    if not lay.fsdp:
        cands.append(("--fsdp", replace(lay, fsdp=True)))
    for name in ("pp", "tp", "cp", "ep"):
        if name == "ep" and not m.is_moe:
            continue
        new = 2 * getattr(lay, name)
        cands.append((f"--{name} {new}", replace(lay, **{name: new})))
    if lay.mbs > 1:
        cands.append((f"--mbs {lay.mbs // 2}", replace(lay, mbs=lay.mbs // 2)))
    out = []
    for flag, cand in cands:
        try:
            p = api.predict(m, hw, cand, precision, attention, routing, consts, stack, stack_set)
        except InputError:
            continue  # the change breaks a layout rule (divisibility, ...)
        if bool(p.fits[0]):
            out.append(flag)
    return out


def memory_error(
    m: ModelSpec,
    hw: HardwareSpec,
    lay: Layout,
    row: dict,
    precision: str,
    attention: str = "causal",
    routing: str = "real",
    consts=None,
    ignore_flag: bool = True,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> InputError:
    """The one error every command gives a layout that does not fit in HBM: by how much, and the single
    changes that would fit (each checked by predicting it, with the same stack)."""
    alts = fitting_alternatives(m, hw, lay, precision, attention, routing, consts, stack, stack_set)
    hint = (
        f"single changes that fit: {', '.join(alts)}"
        if alts
        else "no single change (recompute, fsdp, 2x pp/tp/cp/ep) fits: use more GPUs or a smaller micro-batch"
    )
    return InputError(
        "layout",
        "memory",
        f"{memory_reason(row['memory_bytes_per_gpu'], row['hbm_bytes'], hw.id)}; "
        f"{hint}" + (" (or --ignore-memory)" if ignore_flag else ""),
    )


def require_fits(m: ModelSpec, hw: HardwareSpec, lay: Layout, opts: Options) -> None:
    """memory_error (without --ignore-memory) where `lay` does not fit in HBM: what reads its prediction further
    (elasticities, cost) would mean nothing for a layout that cannot run."""
    o = opts
    p = api.predict(m, hw, lay, o.precision, o.attention, o.routing, o.consts, o.stack, o.stack_set)
    if not bool(p.fits[0]):
        raise memory_error(
            m, hw, lay, p.row(0), o.precision, o.attention, o.routing, o.consts, False, o.stack, o.stack_set
        )
