"""`perfmodel check LOG` as a library: read a run's own training log, report what it measured, predict the same
run, explain the gap.

The log (perfmodel/analysis/logparse.py) gives the logged step times and the framework's own figures; the run it
states (perfmodel/analysis/logrun.py) gives the model, the layout, the precision and the stack switches. What the
log measured is always reported (`measure`: the median of the stable intervals, with the rule that left the others
out), even when a prediction input is missing: the document then says "not predicted: missing X (give ...)". A
complete run is predicted (perfmodel.api.predict) with the stack the log implies (or --stack) plus, as --stack-set
overrides, every feature the log states; what-if variants are ranked by how close each comes to the measurement,
beside where the predicted step spends its time. A measurement no GPU can reach is refused as `validate` refuses
its row (checks.implausible_throughput); the --csv row is validated before it is written, so `check --csv` and
`validate` agree on every row.

Document statuses (`status` in --json): "predicted"; "measured" (what the log measured, no prediction: `missing`
says why); "no_iteration" (the run logged no training step).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel import api
from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import implausible_throughput, low_mfu_warning
from perfmodel.analysis.explain import overheads
from perfmodel.analysis.logparse import ParsedLog, parse_file
from perfmodel.analysis.logrun import DEVICE_NAMES, Built, Facts, Run, Stated, build_run
from perfmodel.errors import WARNINGS, InputError
from perfmodel.specs.counts import flops_per_token
from perfmodel.specs.hardware import HardwareSpec, apply_overrides, load_hardware
from perfmodel.specs.layout import Layout, layout_text
from perfmodel.specs.specfile import data_dir
from perfmodel.specs.stack import apply_overrides as apply_stack_overrides
from perfmodel.specs.stack import check_stack, infer_stack, load_stack, stack_ids

WARMUP_ITERS = 10  # iterations after each (re)start treated as warm-up (compile, allocator, NCCL setup)
OUTLIER = 1.5  # an interval more than this factor slower or faster than the median of the stable ones

# FLOP conventions of the frameworks' own TFLOP/s figures, from their code
FLOP_CONVENTION = {
    "megatron": (
        "causal",
        "Megatron-LM training.py @001b00c num_floating_point_operations: 3 (fwd+bwd) x 2 x "
        "GEMM MACs, causal attention (s/2), logits with the padded vocabulary, no recompute",
    ),
    "torchtitan": (
        "full",
        "torchtitan models/utils.py get_nparams_and_flops: 6 (N - N_embedding) + 12 l h q t "
        "per token, full attention (no causal halving), no recompute",
    ),
    "maxtext": (
        "",
        "MaxText maxtext_utils.calculate_tflops_training_per_device: 6 x the GEMM FLOPs with the logits; attention "
        "4 b s^2 heads head_dim x 3 without causal halving @cae41ec2 (2024), causal @e591f30c (2026)",
    ),
    "composer": (
        "",
        "llm-foundry's MFU callback (its model FLOPs as the model class counts them; not read)",
    ),
    "deepspeed": (
        "",
        "DeepSpeed's ThroughputTimer logs samples/s only (its flops profiler's report, when enabled, is not read)",
    ),
    "hf_trainer": ("", "the Hugging Face Trainer logs no TFLOP/s (total_flos is a count, not read)"),
    "nanotron": (
        "full",
        "nanotron models/llama.py @0e0a27ea get_flops: 3 (fwd+bwd) x 2 x the GEMM MACs of qkv, attention (s^2, no "
        "causal halving), output, MLP and the LM head, no recompute (model_tflops_per_gpu)",
    ),
    "nemo": (
        "",
        "NeMo FLOPsMeasurementCallback TFLOPS_per_GPU (nemo/lightning/pytorch/callbacks/flops_callback.py @8cfedd7: "
        "model FLOPs per GPU / (1e12 x mean step time), nemo/utils/flops_formulas.py, its convention not read)",
    ),
}

# validation/README.md columns (the measured-run schema that `perfmodel validate` reads)
CSV_COLUMNS = [
    "run_id",
    "source",
    "source_url",
    "date",
    "software",
    "framework",
    "model",
    "hardware",
    "gpus",
    "precision",
    "seq_len",
    "global_batch",
    "micro_batch",
    "tp",
    "pp",
    "vp",
    "cp",
    "ep",
    "etp",
    "dp",
    "fsdp",
    "recompute",
    "moe_routing",
    "tokens_per_s_per_gpu",
    "throughput_basis",
    "step_time_s",
    "source_model_tflops_per_gpu",
    "source_mfu",
    "source_model_name",
    "stack",
    "stack_set",
    "notes",
]

# ---- the measurement ----------------------------------------------------------------------------


@dataclass
class Measured:
    """What the log measured: the median over the stable intervals and the rule that chose them. A figure the
    log's facts cannot give (tokens/s without the sequence length, a torchtitan step time without the batch) is
    None, and `missing` says what it needs."""

    intervals: int
    used: int
    dropped_warmup: int
    dropped_events: int
    dropped_invalid: int
    dropped_outliers: int
    dropped_earlier: int
    rule: str
    basis: str  # what the median is of: 'step time' (Megatron, NeMo) or 'tps' (torchtitan tokens/s/device)
    step_s: float | None
    step_p10_s: float | None
    step_p90_s: float | None
    tokens_per_s_per_gpu: float | None
    tflops_per_gpu: float | None  # the framework's own TFLOP/s per GPU
    mfu_framework: float | None  # the framework's own MFU (torchtitan), a fraction
    flops_per_token_framework: float | None
    mem_max_allocated_bytes: float | None
    mem_max_reserved_bytes: float | None
    mem_usage_fraction: float | None  # ROCm fork 'mem usages'
    missing: list[str] = field(default_factory=list)
    mfu_causal: float | None = None  # tokens/s x perfmodel's causal FLOPs per token / the hardware's peak


def stable_mask(
    iters: np.ndarray, starts: np.ndarray, events: np.ndarray, warmup: int
) -> tuple[np.ndarray, np.ndarray]:
    """(warm-up, after an event) masks over the intervals. An interval logged at iteration i after one
    at j covers (j, i]; it is warm-up when j < origin + warmup, origin being where its segment (a start or
    a resume) began, estimated as the first line's iteration minus the first logging gap, at least 0. The
    first interval of a segment is warm-up unless warmup = 0 (it averages from the segment's first iteration,
    with its initialization; Megatron logs iteration 1 alone for that overhead, training.py @001b00c
    is_first_iteration)."""
    n = len(iters)
    if not n:
        return np.zeros(0, bool), np.zeros(0, bool)
    first = starts.astype(bool).copy()
    first[0] = True
    s = np.flatnonzero(first)  # segment starts
    nxt = np.minimum(s + 1, n - 1)
    has_next = (s + 1 < n) & ~first[nxt] & (iters[nxt] > iters[s])
    gap = np.where(has_next, iters[nxt] - iters[s], 0)
    origin = np.where(s + 1 < n, np.maximum(0, iters[s] - gap), iters[s])
    seg = np.cumsum(first) - 1
    prev = np.concatenate(([0], iters[:-1]))
    warm = prev < origin[seg] + warmup
    warm[first] = warmup > 0  # the first interval after a start holds initialization
    return warm, events.astype(bool) & ~warm


def _arr(a: Any, dtype: Any) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype)


def _examples(vals: np.ndarray, iters: np.ndarray, mask: np.ndarray, unit: str) -> str:
    idx = np.flatnonzero(mask)[:2]
    more = ", ..." if mask.sum() > 2 else ""
    return ", ".join(f"{vals[i]:.4g}{unit} at iteration {int(iters[i])}" for i in idx) + more


def _choose(
    log: ParsedLog, vals: np.ndarray, warmup: int, unit: str, zero_based: bool
) -> tuple[np.ndarray, dict[str, int], str]:
    """The stable intervals, how many of each kind were left out and the rule in words. Left out, in this order:
    an earlier start (before the last argument dump), an invalid value (not a positive number: a timer that ran
    backwards), warm-up, after an evaluation / checkpoint save / profiler dump, an outlier (more than OUTLIER x off
    the median of the rest). With no interval left after warm-up, the warm-up rule narrows to the first interval
    of each start; with none left then, every valid interval is kept and the rule says so."""
    iters = _arr(log.iters, np.int64)
    starts = _arr(log.starts, np.int8).astype(bool)
    events = _arr(log.event_after, np.int8).astype(bool)
    n = len(iters)
    earlier = np.arange(n) < log.last_dump_at
    invalid = ~earlier & ~(np.isfinite(vals) & (vals > 0))
    base = ~earlier & ~invalid
    # NeMo numbers its steps from 0 (ProgressPrinter prints n - 1 of n completed; the bar's global_step is the
    # count before the step): the warm-up rule counts completed iterations
    warm, _ = stable_mask(iters + 1 if zero_based else iters, starts, events, warmup)
    warm_rule = f"the first {warmup} iterations after each start, the first interval averaging from its first one"
    if warmup > 0 and not (base & ~warm & ~events).any():
        warm = starts.copy()
        warm[:1] = True
        warm_rule = f"fewer than {warmup} iterations logged after the start: only its first interval"
    warm_d = base & warm
    ev_d = base & ~warm & events
    ok = base & ~warm & ~events
    kept_all = not ok.any()
    if kept_all:
        ok, warm_d, ev_d = base.copy(), np.zeros(n, bool), np.zeros(n, bool)
    out = np.zeros(n, bool)
    if ok.sum() > 2:
        med = float(np.median(vals[ok]))
        out = ok & ((vals > med * OUTLIER) | (vals < med / OUTLIER))
        ok &= ~out
    counts = {
        "earlier": int(earlier.sum()),
        "invalid": int(invalid.sum()),
        "warmup": int(warm_d.sum()),
        "events": int(ev_d.sum()),
        "outliers": int(out.sum()),
    }
    why = []
    if counts["earlier"]:
        why.append(f"{counts['earlier']} of an earlier start (before the last argument dump)")
    if counts["invalid"]:
        why.append(f"{counts['invalid']} invalid (not a positive number: {_examples(vals, iters, invalid, unit)})")
    if counts["warmup"]:
        why.append(f"{counts['warmup']} warm-up ({warm_rule})")
    if counts["events"]:
        why.append(f"{counts['events']} after an evaluation, checkpoint save or profiler dump")
    if counts["outliers"]:
        why.append(
            f"{counts['outliers']} outlier (over {OUTLIER}x off the median: {_examples(vals, iters, out, unit)})"
        )
    text = (f"median of {int(ok.sum())} of {n} intervals" if n > 1 else "the one interval logged") + (
        "; left out " + "; ".join(why) if why else ""
    )
    if kept_all:
        text += " (no stable interval: start-up included)"
    return ok, counts, text


def _median(a: np.ndarray) -> float | None:
    a = a[np.isfinite(a)]
    return float(np.median(a)) if len(a) else None


def measure(log: ParsedLog, facts: Facts, warmup: int, framework: str) -> Measured | None:
    """What the log measured (None when it logged no interval). Megatron / NeMo: the median interval step time,
    tokens/s/GPU = global batch x sequence / (step x GPUs) where the facts are known; torchtitan: the median tps
    (tokens/s per device, metrics.py), the step time = global batch x sequence / (tps x GPUs) where known."""
    if not len(log.iters):
        return None
    # the logged tokens/s/device where the framework logs it (torchtitan always, MaxText from cae41ec2)
    tt = framework in ("torchtitan", "composer", "olmo") or (
        framework == "maxtext" and bool(np.isfinite(_arr(log.tps, np.float64)).any())
    )
    # DeepSpeed's ThroughputTimer and the HF Trainer's train metrics: samples/s of the whole job
    ds = framework == "deepspeed" or (framework == "hf_trainer" and not log.hf_bar)
    vals = _arr(log.sps if ds else (log.tps if tt else log.step_s), np.float64)
    unit = " samples/s" if ds else (" tokens/s" if tt else " s")
    ok, counts, rule = _choose(log, vals, warmup, unit, framework == "nemo")
    tokens = float(facts.gbs * facts.seq) if facts.gbs and facts.seq and facts.gpus else None
    gpus = facts.gpus or 1
    med = _median(vals[ok])
    if ds:  # step = train_batch_size / CurrSamplesPerSec (deepspeed/utils/timer.py ThroughputTimer.stop)
        gbs = float(facts.gbs or 0)
        steps = gbs / vals[ok] if gbs else vals[ok][:0]
        step = gbs / med if gbs and med else None
        tps = tokens / (step * gpus) if tokens and step else None
    elif tt:  # the step of the median tps, so that tokens/s = gbs x seq / (step x GPUs) holds as for Megatron
        logged = _arr(log.step_s, np.float64)[ok]  # a framework that logs its own step rate (Composer)
        steps = tokens / (vals[ok] * gpus) if tokens else logged[np.isfinite(logged)]
        tps, step = med, (tokens / (med * gpus) if tokens and med else _median(logged))
    else:
        steps = vals[ok]
        tps, step = (tokens / (med * gpus) if tokens and med else None), med
        if tps is None:  # Megatron-DeepSpeed logs its tokens/s per GPU ('tgs') beside the step time
            tps = _median(_arr(log.tps, np.float64)[ok])
    tf_med = _median(_arr(log.tflops, np.float64)[ok])
    mfu = _median(_arr(log.mfu, np.float64)[ok])
    return Measured(
        intervals=len(vals),
        used=int(ok.sum()),
        dropped_warmup=counts["warmup"],
        dropped_events=counts["events"],
        dropped_invalid=counts["invalid"],
        dropped_outliers=counts["outliers"],
        dropped_earlier=counts["earlier"],
        rule=rule,
        basis="samples/s" if ds else ("tps" if tt else "step time"),
        step_s=step,
        step_p10_s=float(np.percentile(steps, 10)) if len(steps) else None,
        step_p90_s=float(np.percentile(steps, 90)) if len(steps) else None,
        tokens_per_s_per_gpu=tps,
        tflops_per_gpu=tf_med,
        mfu_framework=mfu / 100 if mfu is not None else None,
        flops_per_token_framework=tf_med * 1e12 / tps if tf_med and tps else None,
        mem_max_allocated_bytes=log.mem_max_allocated or None,
        mem_max_reserved_bytes=log.mem_max_reserved or None,
        mem_usage_fraction=log.mem_usage or None,
        # a tokens/s basis with its own logged step rate (Composer, OLMo) measured both without the facts
        missing=[] if tokens or (tt and step is not None and tps is not None) else [_facts_missing(facts, tt, ds)],
    )


def _facts_missing(facts: Facts, tt: bool, ds: bool = False) -> str:
    gbs, seq = ("training.global_batch_size", "training.seq_len") if tt else ("global_batch_size", "seq_length")
    if ds:
        gbs = "train_batch_size"
    what = [
        n
        for n, v in (
            (f"the global batch (give --arg {gbs}=N)", facts.gbs),
            (f"the sequence length (give --arg {seq}=N)", facts.seq),
            ("the GPU count (give --gpus N)", facts.gpus),
        )
        if not v
    ]
    what_for = "step time and tokens/s/GPU" if ds and not facts.gbs else ("step time" if tt else "tokens/s/GPU")
    return f"{what_for} needs " + ", ".join(what) + ", which the log does not state"


# ---- the hardware ---------------------------------------------------------------------------------------


def log_hardware(log: ParsedLog, ref: str | None, sets: tuple[str, ...]) -> tuple[HardwareSpec | None, str, str]:
    """(the hardware, a note on where it came from, what is missing): --hardware, else the device the log names
    (DEVICE_NAMES); a ROCm container without a device name is an AMD GPU the log does not name."""
    if ref is not None:
        return apply_overrides(load_hardware(ref), list(sets)), "", ""
    hw_id = DEVICE_NAMES.get(log.device_name)
    if hw_id:
        hw = apply_overrides(load_hardware(hw_id), list(sets))
        return hw, f"hardware from the log's device name '{log.device_name}' ({log.device_source}): {hw_id}", ""
    if log.device_name.startswith("AMD Instinct"):
        why = f"the log names '{log.device_name}', which the catalog has no spec for"
    elif log.device_name:
        why = f"the log names '{log.device_name}', which does not identify one catalog entry"
    elif log.rocm_image:
        why = (
            f"the log runs the {log.rocm_image} container, an AMD Instinct GPU it does not name (mi300x for an MI300X)"
        )
    else:
        why = "the log does not name it"
    return None, "", f"hardware ({why}; give --hardware ID|FILE)"


# ---- prediction and causes ----------------------------------------------------------------------


# only the public Prediction fields (step_time_s, tokens_per_s_per_gpu, mfu, memory_bytes_per_gpu,
# breakdown_s) are read; whether a layout fits is memory against the hardware's HBM
def _tps(p: Any) -> float:
    return float(p.tokens_per_s_per_gpu[0])


def _fits(p: Any, hw: HardwareSpec) -> bool:
    return float(p.memory_bytes_per_gpu[0]) <= hw.memory.capacity


# ---- the stack ------------------------------------------------------------------------------------

NO_OVERLAP = (
    "tp_overlap=none",
    "dp_grad_reduce_overlap=false",
    "dp_param_gather_overlap=false",
    "moe_a2a_overlap=false",
)


# frameworks whose implied preset is another software's nearest one (implied_stack): their runs are unseen stacks
STAND_IN = ("hf_trainer", "deepspeed")


def implied_stack(run: Run) -> tuple[str, str]:
    """(preset id, why) of the stack the log implies: torchtitan -> torchtitan-2025 (-compile with compile
    on); a NeMo release named by the container banner -> its preset, or the nearest release with one (infer_stack); else Megatron-Core's
    library defaults."""
    if run.framework == "torchtitan":
        if run.compiled:
            return "torchtitan-2025-compile", "a torchtitan log with torch.compile on (compile.enable=True)"
        return "torchtitan-2025", "a torchtitan log, torch.compile off"
    if run.framework == "deepspeed":
        c = infer_stack("deepspeed", run.software or "DeepSpeed")
        return c.stack, (
            f"a DeepSpeed log ({run.software or 'no version line'}): {c.why}, the DeepSpeed preset; the log does "
            "not state the model code's kernels (attention, fusions): --stack-set names them"
        )
    if run.framework == "hf_trainer":  # the stand-in a row naming the Trainer gets (specs/stack.infer_stack)
        c = infer_stack("other", "Hugging Face Trainer")
        return (
            c.stack,
            f"a Hugging Face Trainer log: {c.why}; the Trainer's own optimizer and data loading are not read",
        )
    if run.framework == "nanotron":
        return "nanotron-2025", "a nanotron log: nanotron's preset (read at 0e0a27ea, 2025-02)"
    if run.software:  # the banner's release, or the nearest release with a preset (specs/stack.infer_stack)
        c = infer_stack("megatron", run.software)
        return c.stack, f"the log's container banner names {run.software}: {c.why}"
    if run.framework == "composer":
        return "llm-foundry-2024", "a Composer log with llm-foundry's config: its newest preset (llm-foundry 2024)"
    if run.framework == "maxtext":
        return "maxtext-gpu-2024", "a MaxText log: MaxText on GPU (JAX/XLA), its A3 high-performance configs"
    if run.framework == "nemo":
        return "megatron-core", "a NeMo log naming no release: Megatron-Core defaults (--stack ID names the release)"
    return "megatron-core", f"a {run.states}: the Megatron-Core library defaults"


@dataclass
class RunStack:
    stack: str  # the base preset id or file
    why: str
    stack_set: tuple[str, ...]  # what the log states, then --stack-set
    from_log: dict[str, Stated]
    user_set: tuple[str, ...]

    def features(self, run: Run, hw: HardwareSpec) -> list[dict[str, Any]]:
        """Every feature of the stack used, once, with where its value came from: the log (and its field),
        --arg (a field given for the log), --stack-set or the preset (and the preset's own origin)."""
        spec = apply_stack_overrides(
            load_stack(self.stack).for_model(run.model.id, run.model.is_moe, hw.id, run.precision), list(self.stack_set)
        )
        user = {x.split("=", 1)[0].strip() for x in self.user_set}
        out = []
        for r in spec.rows():
            f = r["feature"]
            if f in user:
                src, how = "--stack-set", r["source"]
            elif f in self.from_log:
                src, how = self.from_log[f].origin, self.from_log[f].how
            elif r["origin"] == "implied":  # pulled in by a stated feature (stack.apply_overrides)
                src, how = "implied", r["source"]
            else:
                src, how = "preset", f"{spec.id}: {r['origin']}"
            out.append({"feature": f, "value": r["value"], "from": src, "how": how})
        return out


def run_stack(run: Run, stack: str | None, user_set: tuple[str, ...]) -> RunStack:
    """The stack check predicts with: --stack, else the preset the log implies; then the features the log
    states (--stack-set overrides), then the command's own --stack-set."""
    sid, why = (stack, "--stack") if stack is not None else implied_stack(run)
    logged = tuple(f"{k}={v.value}" for k, v in run.stated.items())
    sets = logged + tuple(user_set)
    check_stack(sid, sets)
    return RunStack(sid, why, sets, dict(run.stated), tuple(user_set))


def what_ifs(run: Run, hw: HardwareSpec, measured: float, st: RunStack) -> list[dict[str, Any]]:
    """Variants of the run, each predicted with the run's stack but one change: other recompute modes,
    every overlap switch off, CUDA graphs toggled, and the other releases' presets (with the features the
    log states kept); ranked by how close each comes to the measured throughput (|ln(predicted / measured)|)."""
    out: list[dict[str, Any]] = []
    lay = run.layout

    def add(cause: str, kind: str, layout: Layout, stack: str, sets: tuple[str, ...], **extra: Any) -> None:
        try:
            p = api.predict(run.model, hw, layout, run.precision, stack=stack, stack_set=sets)
        except InputError:
            return
        out.append(
            {
                "cause": cause,
                "kind": kind,
                "stack": stack,
                "stack_set": list(sets),
                **extra,
                "tokens_per_s_per_gpu": _tps(p),
                "fits": _fits(p, hw),
            }
        )

    for mode in ("none", "selective", "full"):
        if mode != lay.recompute:
            add(
                f"recompute {mode} instead of {lay.recompute}",
                "recompute",
                replace(lay, recompute=mode),  # type: ignore[arg-type]
                st.stack,
                st.stack_set,
            )
    feats = {f["feature"]: f["value"] for f in st.features(run, hw)}
    on = [x for x in NO_OVERLAP if str(feats[x.split("=")[0]]).lower() != x.split("=")[1]]
    if on:
        add(
            "communication overlap off (--stack-set " + ", ".join(on) + ")",
            "overlap",
            lay,
            st.stack,
            st.stack_set + tuple(on),
        )
    graphs = "per_layer" if feats["cuda_graphs"] == "none" else "none"
    add(
        f"CUDA graphs {'on' if graphs != 'none' else 'off'} (--stack-set cuda_graphs={graphs})",
        "cuda_graphs",
        lay,
        st.stack,
        st.stack_set + (f"cuda_graphs={graphs}",),
    )
    prefixes = {
        "torchtitan": ("torchtitan-",),
        "maxtext": ("maxtext-", "dgxc-"),
        "composer": ("llm-foundry-",),
        "deepspeed": ("megatron-deepspeed-",),
        "hf_trainer": ("llm-foundry-", "torchtitan-"),
    }.get(run.framework, ("nemo-", "dgxc-", "megatron-core", "default"))
    logged = tuple(f"{k}={v.value}" for k, v in st.from_log.items()) + st.user_set
    for sid in stack_ids():
        if sid != st.stack and sid.startswith(prefixes) and (run.framework == "maxtext") == ("maxtext" in sid):
            add(f"stack {sid} (the log's stated features kept)", "release", lay, sid, logged, release=sid)
    for o in out:
        o["log_distance"] = abs(math.log(o["tokens_per_s_per_gpu"] / measured))
    return sorted(out, key=lambda o: o["log_distance"])


def shown_what_ifs(ws: list[dict[str, Any]], n: int = 8) -> list[dict[str, Any]]:
    """The table's rows: every variant except the other release presets, of which only the closest one
    (with how many there are), so a dozen releases do not crowd out the physical causes."""
    rel = [w for w in ws if w["kind"] == "release"]
    rows = [w for w in ws if w["kind"] != "release"]
    if rel:
        best = dict(rel[0])
        best["cause"] = f"{best['cause']}: the closest of {len(rel)} other release presets"
        rows.append(best)
    return sorted(rows, key=lambda o: o["log_distance"])[:n]


def verdict(ratio: float, band: Any) -> str:
    """Where measured / predicted lies against the 80% band of validation spread (perfmodel/analysis/uncertainty.py)."""
    where = f"measured/predicted {ratio:.3f}, 80% band {band.low:.3f}-{band.high:.3f} ({band.group})"
    if band.low <= ratio <= band.high:
        return f"consistent with the prediction ({where})"
    return f"{'slower' if ratio < band.low else 'faster'} than predicted ({where})"


# ---- the --csv row: validate's own reading of it ---------------------------------------------------------


def csv_row(run: Run, hw: HardwareSpec, hw_ref: str, meas: Measured, log_path: str, run_id: str, st: RunStack) -> dict:
    """The run as one row of the measured-run schema (validation/README.md), the cells validate reads."""
    lay = run.layout
    if run.model.id == "log-model":
        raise InputError(
            "--csv", "model", "the log's model is not in the catalog: give --model FILE so the CSV row can name it"
        )
    # a spec file is named by its absolute path (validate resolves cells relative to the CSV's folder)
    in_catalog = bool(run.model.path) and Path(run.model.path).resolve().parent == data_dir("models").resolve()
    model_cell = run.model.id if in_catalog or not run.model.path else str(Path(run.model.path).resolve())
    hw_cell = hw.id if not hw_ref.endswith(".toml") else str(Path(hw_ref).resolve())
    assert meas.tokens_per_s_per_gpu and meas.step_s
    return {
        "run_id": run_id,
        "source": f"training log {Path(log_path).name}",
        "source_url": "",
        "date": "",
        "software": run.software or run.framework,
        "framework": "megatron" if run.framework in ("megatron", "nemo") else "other",
        "model": model_cell,
        "hardware": hw_cell,
        "gpus": lay.gpus,
        "precision": run.precision,
        "seq_len": lay.seq,
        "global_batch": lay.gbs,
        "micro_batch": lay.mbs,
        "tp": lay.tp,
        "pp": lay.pp,
        "vp": lay.vp if lay.vp > 1 else "",
        "cp": lay.cp,
        "ep": lay.ep,
        "etp": lay.etp if run.model.is_moe else "",
        "dp": lay.dp,
        "fsdp": int(lay.fsdp),
        "recompute": lay.recompute,
        "moe_routing": "",
        "tokens_per_s_per_gpu": f"{meas.tokens_per_s_per_gpu:.2f}",
        "throughput_basis": "step_time",
        "step_time_s": f"{meas.step_s:.4f}",
        "source_model_tflops_per_gpu": f"{meas.tflops_per_gpu:.1f}" if meas.tflops_per_gpu else "",
        "source_mfu": f"{meas.mfu_framework:.4f}" if meas.mfu_framework else "",
        "source_model_name": run.model.name,
        # the stack check predicted with: validate reads these cells first (a file by its absolute path)
        "stack": st.stack if st.stack in stack_ids() else str(Path(st.stack).resolve()),
        "stack_set": ";".join(st.stack_set),
        "notes": f"task=pretrain; perfmodel check of {Path(log_path).name}: {meas.rule}"
        + "".join(f"; {n}" for n in run.notes),
    }


def validated_row(row: dict[str, Any], csv_path: str) -> dict[str, Any]:
    """`row` if `perfmodel validate` reads it as check did (same rules, same refusals), else the InputError
    validate's reason gives: check --csv never writes a row that validate refuses."""
    from perfmodel.analysis.validate import validate_rows

    cells = {k: str(v) for k, v in row.items()}
    report = validate_rows([cells], Path(csv_path).resolve().parent)
    if report.unsupported:
        raise InputError("--csv", csv_path, f"validate refuses the row: {report.unsupported[0]['reason']}")
    return row


def write_csv(path: str, row: dict[str, Any]) -> None:
    """The --csv file: the header of the measured-run schema and the one row."""
    try:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
            w.writeheader()
            w.writerow(row)
    except OSError as exc:
        raise InputError("--csv", path, f"cannot write ({exc.strerror or exc})") from None


# ---- the whole check ------------------------------------------------------------------------------------


@dataclass
class LogCheck:
    """The check of one log: the --json document, and what the --csv row needs (a predicted run only)."""

    document: dict[str, Any]
    run: Run | None = None
    hardware: HardwareSpec | None = None
    hardware_ref: str = ""
    measured: Measured | None = None
    stack: RunStack | None = None

    def csv_row(self, run_id: str, csv_path: str) -> dict[str, Any]:
        """The row `perfmodel validate` reads as this check (validated_row); InputError for a run not predicted."""
        d = self.document
        if self.run is None or self.hardware is None or self.measured is None or self.stack is None:
            raise InputError(
                "--csv",
                csv_path,
                f"a measured-run row needs the predicted run; {d.get('not_predicted') or d.get('summary', '')}",
            )
        row = csv_row(self.run, self.hardware, self.hardware_ref, self.measured, d["log"], run_id, self.stack)
        return validated_row(row, csv_path)


def _log_notes(log: ParsedLog) -> list[str]:
    notes: list[str] = []
    if log.last_dump_at:
        notes.append(
            f"the log holds {log.dumps} argument dumps (restarts): the last one and its "
            f"{len(log.iters) - log.last_dump_at} intervals are used, the {log.last_dump_at} before it left out"
        )
    if log.last_line_cut or log.gzip_truncated:
        notes.append("the log ends inside a line (cut while written): that last line is not read")
    if log.config:
        notes.append("the run's fields from Megatron-Bridge's printed config ('Task Configuration')")
    return notes


def _header(path: str, log: ParsedLog, built: Built, notes: list[str]) -> dict[str, Any]:
    return {
        "log": path,
        "framework": log.framework,
        "lines": log.lines,
        "cut_lines": log.cut_lines,
        "gzip": log.gzip,
        "last_line_cut": log.last_line_cut,
        "gzip_truncated": log.gzip_truncated,
        "device_name": log.device_name,
        "notes": notes,
        "given": built.given,
    }


def _peak_note(log: ParsedLog, hw: HardwareSpec | None) -> str:
    """torchtitan's MFU is against the peak it logged (tools/utils.py get_peak_flops: its table, else the A100's
    312 TFLOP/s with 'Peak flops undefined for: {device}, fallback to A100')."""
    peak = log.peak_flops_logged / 1e12
    line = f"torchtitan's own MFU is against the peak it logged, {peak:,.0f} TFLOP/s"
    if log.device_source == "torchtitan peak-FLOPs warning":
        line += f" (its A100 fallback: it had no peak for '{log.device_name}')"
    if hw is not None and abs(peak * 1e12 / hw.peak("bf16") - 1) > 0.05:
        line += f"; {hw.id}'s dense BF16 peak is {hw.peak('bf16') / 1e12:,.0f} TFLOP/s"
    return line


def _stopped(log: ParsedLog) -> str:
    """The one line of a log with no training step."""
    line = "the run logged no iteration: it stopped before step 1"
    if log.framework == "hf_trainer" and not log.error and not log.failed:  # its one measurement comes at the end
        return (
            "no train metrics: the Trainer logs its throughput only when training ends ({'train_runtime': ..., "
            "'train_samples_per_second': ...}), and this log stops before"
        )
    if log.error:
        line += f" (first error: {log.error})"
    elif log.failed:
        line += " (torchrun reports a failed child process)"
    return line


def _refuse_impossible(path: str, built: Built, hw: HardwareSpec | None, meas: Measured, notes: list[str]) -> None:
    """A measured throughput no GPU can reach is refused, as validate refuses its row (implied MFU above 100%
    of the dense peak of the run's precision, or of the GPU's fastest one when the precision is not known)."""
    model, seq = (built.run.model, built.run.layout.seq) if built.run else (built.model, built.facts.seq)
    if hw is None or model is None or not seq or not meas.tokens_per_s_per_gpu:
        return
    prec = built.run.precision if built.run else built.precision
    why = implausible_throughput(model, hw, meas.tokens_per_s_per_gpu, seq, prec)
    if why:
        raise InputError(path, "measured", f"impossible: {why}")
    low = low_mfu_warning(model, hw, meas.tokens_per_s_per_gpu, seq, prec)
    if low:
        notes.append(low)
        if low not in WARNINGS:
            WARNINGS.append(low)
    if prec:
        meas.mfu_causal = meas.tokens_per_s_per_gpu * float(flops_per_token(model, seq, "causal")) / hw.peak(prec)


def _hardware_notes(hw: HardwareSpec) -> list[str]:
    if uncertainty.hardware_fitted(hw):
        return []
    return [
        f"{hw.id} ({hw.generation}): no validation run of this hardware family fitted the bands; the band is "
        "the spread of all (NVIDIA) runs, which does not cover the error of a new hardware family"
    ]


def _prediction(run: Run, hw: HardwareSpec, meas: Measured, st: RunStack) -> dict[str, Any]:
    p = api.predict(run.model, hw, run.layout, run.precision, stack=st.stack, stack_set=st.stack_set)
    # the unseen-stack band for a new stack, and for a preset standing in for software no fitted row ran
    stand_in = run.framework in STAND_IN and st.why != "--stack"
    band = uncertainty.band_for(run.model, hw, st.stack, run.layout.vp, stand_in=stand_in)
    pred = _tps(p)
    measured = meas.tokens_per_s_per_gpu
    assert measured
    ratio = measured / pred
    conv, conv_text = FLOP_CONVENTION[run.framework]
    seq = run.layout.seq
    fpt = {c: float(flops_per_token(run.model, seq, c)) for c in ("causal", "full")}  # type: ignore[arg-type]
    return {
        "model": run.model.id,
        "model_name": run.model.name,
        "model_source": run.model_source,
        "hardware": hw.id,
        "hardware_overridden": list(hw.overridden),
        "precision": run.precision,
        "layout": {**run.layout.__dict__, "dp": run.layout.dp},
        "layout_text": layout_text(run.layout, mbs=True),
        "micro_batches": run.layout.gbs // (run.layout.dp * run.layout.mbs),
        "stack": st.stack,
        "stack_name": load_stack(st.stack).name,
        "stack_why": st.why,
        "stack_set": list(st.stack_set),
        "stack_features": st.features(run, hw),
        "read_no_feature": list(run.read),
        "framework_flops": {
            "convention": conv,
            "source": conv_text,
            "perfmodel_flops_per_token_causal": fpt["causal"],
            "perfmodel_flops_per_token_full": fpt["full"],
        },
        "predicted": {
            "step_time_s": float(p.step_time_s[0]),
            "tokens_per_s_per_gpu": pred,
            "mfu_causal": float(p.mfu[0]),
            "memory_bytes_per_gpu": float(p.memory_bytes_per_gpu[0]),
            "fits": _fits(p, hw),
            "breakdown_s": {k: float(v[0]) for k, v in p.breakdown_s.items()},
        },
        "gap": (pred - measured) / measured,
        "measured_over_predicted": ratio,
        "band": band.to_dict(),
        "verdict": verdict(ratio, band),
        "what_ifs": what_ifs(run, hw, measured, st),
        "overheads": overheads({k: float(v[0]) for k, v in p.breakdown_s.items()}, float(p.step_time_s[0]), run.layout),
    }


ALLOCATOR_HEADROOM = 0.05  # a peak reserved within this share of the device's capacity is reported (_allocator_note)


def _allocator_note(reserved: float | None, hw: HardwareSpec) -> str | None:
    """A run whose PyTorch caching allocator reserved within ALLOCATOR_HEADROOM of what the device lets a process
    allocate: there a cudaMalloc that finds no free block makes the allocator release its cached blocks and retry
    (torch.cuda.memory_stats 'num_alloc_retries': "failed cudaMalloc calls that result in a cache flush and
    retry"), and releasing them synchronizes the device; a cost the model does not price, named beside the gap."""
    cap = hw.memory.capacity
    if not reserved or reserved < (1 - ALLOCATOR_HEADROOM) * cap:
        return None
    return (
        f"peak reserved {reserved / 1e9:.1f} GB is {reserved / cap:.0%} of the {cap / 1e9:.1f} GB {hw.id} lets a "
        "process allocate: this close to the limit PyTorch's caching allocator flushes its cache and retries "
        "cudaMalloc (torch.cuda.memory_stats num_alloc_retries), each flush a device synchronize; a step slower "
        "than predicted may be paying it (not priced)"
    )


def field_overrides(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """NAME=VALUE items (check's --arg) as the log fields they add or override."""
    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k.strip():
            raise InputError("arg", it, "expected NAME=VALUE (an argument-dump or job-config field)")
        out[k.strip()] = v.strip()
    return out


def check(
    path: str,
    hardware: str | None = None,
    gpus: int | None = None,
    model: str | None = None,
    overrides: dict[str, str] | None = None,
    warmup: int = WARMUP_ITERS,
    sets: tuple[str, ...] = (),
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> LogCheck:
    """Read the log, report what it measured, predict the run it states where every input is known."""
    if warmup < 0:
        raise InputError("--warmup", str(warmup), "must be >= 0")
    if gpus is not None and gpus < 1:
        raise InputError("gpus", str(gpus), "must be a positive integer")
    log = parse_file(path)
    if not log.framework:
        raise InputError(
            path,
            "",
            f"no Megatron-LM / NeMo / Megatron-Bridge, torchtitan, MaxText, Composer, DeepSpeed, Hugging Face "
            f"Trainer, nanotron, OLMo, nanoGPT or modded-nanogpt training lines in {log.lines:,} lines (argument "
            "dump, 'iteration ... elapsed time per iteration', 'step: ... tps:', 'Training epoch ... "
            "train_step_timing in s', 'completed step: ... seconds:', 'Train throughput/device/tokens_per_sec:', "
            "'... CurrSamplesPerSec=', \"{'train_runtime': ...}\", 'iteration: N / M | ... "
            "elapsed_time_per_iteration_ms:', '[step=N/M]' then '    throughput/device/...=', 'iter N: loss ..., "
            "time ...ms', 'step:N/M ... train_time:')",
        )
    notes = _log_notes(log)
    hw, hw_note, hw_missing = log_hardware(log, hardware, sets)
    if hw_note:
        notes.append(hw_note)
    if log.peak_flops_logged:
        notes.append(_peak_note(log, hw))
    built = build_run(log, overrides or {}, model, gpus)
    doc = _header(path, log, built, notes)
    meas = measure(log, built.facts, max(warmup, built.min_warmup), built.framework)
    if meas is None:
        doc.update(status="no_iteration", summary=_stopped(log), measured=None, error=log.error)
        return LogCheck(doc)
    _refuse_impossible(path, built, hw, meas, notes)
    if hw is not None and (note := _allocator_note(meas.mem_max_reserved_bytes, hw)):
        notes.append(note)
    doc["measured"] = meas.__dict__
    missing = ([hw_missing] if hw_missing else []) + built.missing
    if missing or built.run is None or hw is None:
        notes.extend(built.notes)
        doc.update(status="measured", missing=missing, not_predicted="not predicted: missing " + "; ".join(missing))
        return LogCheck(doc, measured=meas)
    run = built.run
    if not meas.tokens_per_s_per_gpu:  # every fact known, but no interval held a valid value (a corrupted log)
        why = ["a measurement (no logged interval holds a positive, finite value)"]
        doc.update(status="measured", missing=why, not_predicted="not predicted: missing " + why[0])
        return LogCheck(doc, measured=meas)
    notes.extend(run.notes + _hardware_notes(hw))
    st = run_stack(run, stack, stack_set)
    doc.update(status="predicted", **_prediction(run, hw, meas, st))
    return LogCheck(doc, run, hw, hardware or hw.id, meas, st)


def check_log(
    path: str,
    hardware: str | None = None,
    gpus: int | None = None,
    model: str | None = None,
    overrides: dict[str, str] | None = None,
    warmup: int = WARMUP_ITERS,
    sets: tuple[str, ...] = (),
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The whole check as a JSON-ready dict (what `perfmodel check --json` prints)."""
    return check(path, hardware, gpus, model, overrides, warmup, sets, stack, tuple(stack_set)).document


def stack_groups(doc: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The stack's features grouped by where each value came from, every feature once: (label, ['feature=value
    (the field saying so)', ...]) for the log, --arg, --stack-set and the preset, then the switches read that set
    no feature."""
    by: dict[str, list[str]] = {}
    for f in doc.get("stack_features", []):
        v = f["value"]
        v = (
            (",".join(v) or "none")
            if isinstance(v, list)
            else ("none" if v is None else str(v).lower() if isinstance(v, bool) else v)
        )
        said = f["from"] in ("log", "--arg") and f["how"].lower() != f"{f['feature']}={v}".lower()
        by.setdefault(f["from"], []).append(f"{f['feature']}={v}" + (f" ({f['how']})" if said else ""))
    labels = (
        ("log", "from the log"),
        ("--arg", "from --arg"),
        ("--stack-set", "from --stack-set"),
        ("implied", "implied by those"),
        ("preset", f"not stated, from the preset {doc.get('stack')}"),
    )
    out = [(label, by[src]) for src, label in labels if by.get(src)]
    if doc.get("read_no_feature"):
        out.append(("read, no feature set", doc["read_no_feature"]))
    return out
