"""`perfmodel check LOG` as a library: read a run's own training log, measure it, predict the same run, explain
the gap.

The log (perfmodel/analysis/logparse.py) gives the model shape, the layout, the stack switches its argument dump
states and the measured step time (perfmodel/analysis/logrun.py builds the run); perfmodel predicts that very run
(perfmodel.api.predict) with a software stack: the preset the log implies (or --stack) plus, as --stack-set
overrides, every feature the dump states; what the dump does not state is the preset's, and the output says
which is which. What-if variants (other recompute modes, overlap off, CUDA graphs toggled, the other releases'
presets) are ranked by how close each comes to the measurement, beside where the predicted step spends its time
(pipeline bubble with the run's real micro-batch count, exposed communication by kind, memory-bound kernels).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from perfmodel import api
from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import implausible_throughput, low_mfu_warning
from perfmodel.analysis.logparse import ParsedLog, parse_file
from perfmodel.analysis.logrun import DEVICE_NAMES, Run, build_run
from perfmodel.errors import WARNINGS, InputError
from perfmodel.specs.counts import flops_per_token
from perfmodel.specs.hardware import HardwareSpec, apply_overrides, load_hardware
from perfmodel.specs.layout import Layout, layout_text
from perfmodel.specs.specfile import data_dir
from perfmodel.specs.stack import (
    FRAMEWORK_FALLBACK,
    check_stack,
    load_stack,
    stack_for_row,
    stack_ids,
)
from perfmodel.specs.stack import (
    apply_overrides as apply_stack_overrides,
)

WARMUP_ITERS = 10  # iterations after each (re)start treated as warm-up (compile, allocator, NCCL setup)

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
    "nemo": ("", "NeMo progress bar: no TFLOP/s printed"),
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

# torchtitan prints the CUDA device name (metrics.py build_device_memory_monitor); only names that
# identify one catalog entry without doubt are mapped (an NVL72 rack or a PCIe card is not guessed)
# ---- the measurement ----------------------------------------------------------------------------


@dataclass
class Measured:
    intervals: int
    used: int
    dropped_warmup: int
    dropped_events: int
    step_s: float
    step_p10_s: float
    step_p90_s: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: float | None
    flops_per_token_framework: float | None
    mem_max_allocated_bytes: float | None
    mem_max_reserved_bytes: float | None


def stable_mask(
    iters: np.ndarray, starts: np.ndarray, events: np.ndarray, warmup: int
) -> tuple[np.ndarray, np.ndarray]:
    """(warm-up, after an event) masks over the intervals. An interval logged at iteration i after one
    at j covers (j, i]; it is warm-up when j < origin + warmup, origin being where its segment (a start or
    a resume) began, estimated as the first line's iteration minus the first logging gap, at least 0. The
    first interval of a segment is warm-up unless warmup = 0 (Megatron logs iteration 1 alone to show
    its initialization overhead, training.py @001b00c is_first_iteration)."""
    n = len(iters)
    warm = np.zeros(n, bool)
    seg_origin = 0
    for i in range(n):
        if starts[i] or i == 0:
            gap = int(iters[i + 1] - iters[i]) if i + 1 < n and not starts[i + 1] and iters[i + 1] > iters[i] else 0
            seg_origin = max(0, int(iters[i]) - gap) if i + 1 < n else int(iters[i])
            warm[i] = warmup > 0  # the first interval after a start holds initialization
            continue
        warm[i] = int(iters[i - 1]) < seg_origin + warmup
    return warm, events.astype(bool) & ~warm


def measure(log: ParsedLog, run: Run, warmup: int, where: str) -> Measured:
    lay = run.layout
    iters = np.frombuffer(log.iters, dtype=np.int64) if len(log.iters) else np.zeros(0, np.int64)
    if not len(iters):
        raise InputError(
            where,
            "",
            "no interval lines (iteration ... elapsed time per iteration / step: ... tps:)"
            " in the log: nothing measured",
        )
    step = np.frombuffer(log.step_s, dtype=np.float64)
    tps = np.frombuffer(log.tps, dtype=np.float64)
    tflops = np.frombuffer(log.tflops, dtype=np.float64)
    tokens = lay.gbs * lay.seq
    if run.framework == "torchtitan":
        with np.errstate(divide="ignore"):
            step = np.where(tps > 0, tokens / (tps * lay.gpus), np.nan)
    warm, ev = stable_mask(
        iters, np.frombuffer(log.starts, dtype=np.int8), np.frombuffer(log.event_after, dtype=np.int8), warmup
    )
    ok = ~warm & ~ev & np.isfinite(step) & (step > 0)
    ok[: log.last_dump_at] = False  # intervals of an earlier start: the dump read is the last one
    if not ok.any():
        raise InputError(
            where,
            "",
            f"no stable interval: {len(iters)} interval line(s), all warm-up (the first "
            f"{warmup} iterations after a start) or after an evaluation/checkpoint; "
            "give --warmup 0 to use them",
        )
    s = step[ok]
    med = float(np.median(s))
    tf = tflops[ok]
    tf = tf[np.isfinite(tf)]
    tf_med = float(np.median(tf)) if len(tf) else None
    tok = tokens / (med * lay.gpus)
    return Measured(
        len(iters),
        int(ok.sum()),
        int(warm.sum()),
        int(ev.sum()),
        med,
        float(np.percentile(s, 10)),
        float(np.percentile(s, 90)),
        tok,
        tf_med,
        tf_med * 1e12 / tok if tf_med else None,
        log.mem_max_allocated or None,
        log.mem_max_reserved or None,
    )


# ---- prediction and causes ----------------------------------------------------------------------


# only the public Prediction fields (step_time_s, tokens_per_s_per_gpu, mfu, memory_bytes_per_gpu,
# breakdown_s) are read; whether a layout fits is memory against the hardware's HBM
def _tps(p: Any) -> float:
    return float(p.tokens_per_s_per_gpu[0])


def _fits(p: Any, hw: HardwareSpec) -> bool:
    return float(p.memory_bytes_per_gpu[0]) <= hw.memory.hbm_bytes


# ---- the stack ------------------------------------------------------------------------------------

NO_OVERLAP = (
    "tp_overlap=none",
    "dp_grad_reduce_overlap=false",
    "dp_param_gather_overlap=false",
    "moe_a2a_overlap=false",
)


def implied_stack(run: Run) -> tuple[str, str]:
    """(preset id, why) of the stack the log implies: torchtitan -> torchtitan-2025 (-compile with compile
    on); a NeMo release named by the container banner -> its preset (stack_for_row); else Megatron-Core's
    library defaults."""
    if run.framework == "torchtitan":
        if run.compiled:
            return "torchtitan-2025-compile", "a torchtitan log with torch.compile on (compile.enable=True)"
        return "torchtitan-2025", "a torchtitan log, torch.compile off"
    if run.software:
        sid = stack_for_row("megatron", run.software)
        if sid == FRAMEWORK_FALLBACK["megatron"]:
            return sid, f"the log names {run.software}, which no preset describes: Megatron-Core defaults"
        return sid, f"the log's container banner names {run.software}"
    if run.framework == "nemo":
        return "megatron-core", "a NeMo log naming no release: Megatron-Core defaults (--stack ID names the release)"
    return "megatron-core", "a Megatron-LM argument dump: the Megatron-Core library defaults"


@dataclass
class RunStack:
    stack: str  # the base preset id or file
    why: str
    stack_set: tuple[str, ...]  # what the log states, then --stack-set
    from_log: dict[str, tuple[str, str]]
    user_set: tuple[str, ...]

    def features(self, run: Run, hw: HardwareSpec) -> list[dict[str, Any]]:
        """Every feature of the stack used, with where its value came from: the log (and its field), the
        command line (--stack-set) or the preset (and the preset's own origin)."""
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
                src, how = "log", self.from_log[f][1]
            else:
                src, how = "preset", f"{spec.id}: {r['origin']}"
            out.append({"feature": f, "value": r["value"], "from": src, "how": how})
        return out


def run_stack(run: Run, stack: str | None, user_set: tuple[str, ...]) -> RunStack:
    """The stack check predicts with: --stack, else the preset the log implies; then the features the log
    states (--stack-set overrides), then the command's own --stack-set."""
    sid, why = (stack, "--stack") if stack is not None else implied_stack(run)
    logged = tuple(f"{k}={v}" for k, (v, _) in run.stated.items())
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
    prefixes = ("torchtitan-",) if run.framework == "torchtitan" else ("nemo-", "dgxc-", "megatron-core", "default")
    logged = tuple(f"{k}={v}" for k, (v, _) in st.from_log.items()) + st.user_set
    for sid in stack_ids():
        if sid != st.stack and sid.startswith(prefixes) and not sid.endswith("-maxtext"):
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


def overheads(run: Run, p: Any) -> list[dict[str, Any]]:
    """Where the predicted step spends time beyond the tensor-core work, largest first, each with the
    throughput the run would have without it. The bubble uses the run's own micro-batch count."""
    step = float(p.step_time_s[0])
    lay = run.layout
    m = lay.gbs // (lay.dp * lay.mbs)
    tokens = lay.gbs * lay.seq
    out = []
    for k, arr in p.breakdown_s.items():
        v = float(arr[0])
        if v <= 0 or k in ("gemm", "attention"):
            continue
        label = k
        if "bubble" in k:
            label = (
                f"pipeline bubble (pp {lay.pp}, vp {lay.vp}, m {m}: (pp-1)/(vp m) = {(lay.pp - 1) / (lay.vp * m):.4f})"
            )
        elif k.endswith("_comm"):
            label = f"exposed {k.replace('_comm', '').upper()} communication"
        out.append(
            {
                "part": k,
                "label": label,
                "seconds": v,
                "share": v / step,
                "tokens_per_s_per_gpu_without": tokens / (max(step - v, 1e-12) * lay.gpus),
            }
        )
    return sorted(out, key=lambda o: -o["seconds"])


def verdict(ratio: float, band: Any) -> str:
    """Where measured / predicted lies against the 80% band of validation spread (perfmodel/analysis/uncertainty.py)."""
    where = f"measured/predicted {ratio:.3f}, 80% band {band.low:.3f}-{band.high:.3f} ({band.group})"
    if band.low <= ratio <= band.high:
        return f"consistent with the prediction ({where})"
    return f"{'slower' if ratio < band.low else 'faster'} than predicted ({where})"


def _csv_row(
    run: Run,
    hw_ref: str,
    hw: HardwareSpec,
    meas: Measured,
    log_path: str,
    run_id: str,
    mfu_framework: float | None,
    st: RunStack,
) -> dict[str, Any]:
    lay = run.layout
    if run.model.id == "log-model":
        raise InputError(
            "--csv", "model", "the log's model is not in the catalog: give --model FILE so the CSV row can name it"
        )
    # a spec file is named by its absolute path (validate resolves cells relative to the CSV's folder)
    in_catalog = bool(run.model.path) and Path(run.model.path).resolve().parent == data_dir("models").resolve()
    model_cell = run.model.id if in_catalog or not run.model.path else str(Path(run.model.path).resolve())
    hw_cell = hw.id if not hw_ref.endswith(".toml") else str(Path(hw_ref).resolve())
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
        "source_mfu": f"{mfu_framework:.4f}" if mfu_framework else "",
        "source_model_name": run.model.name,
        # the stack check predicted with: validate reads these cells first (a file by its absolute path)
        "stack": st.stack if st.stack in stack_ids() else str(Path(st.stack).resolve()),
        "stack_set": ";".join(st.stack_set),
        "notes": f"task=pretrain; perfmodel check of {Path(log_path).name}: median of {meas.used} stable "
        f"intervals" + "".join(f"; {n}" for n in run.notes),
    }


def check_log(
    path: str,
    hardware_ref: str | None = None,
    gpus: int | None = None,
    model_ref: str | None = None,
    overrides: dict[str, str] | None = None,
    warmup: int = WARMUP_ITERS,
    sets: tuple[str, ...] = (),
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The whole check as a JSON-ready dict (what `perfmodel check --json` prints)."""
    out = _check(path, hardware_ref, gpus, model_ref, overrides or {}, warmup, sets, stack, tuple(stack_set))
    out.pop("_csv")
    return out


def _check(
    path: str,
    hardware_ref: str | None,
    gpus: int | None,
    model_ref: str | None,
    overrides: dict[str, str],
    warmup: int,
    sets: tuple[str, ...],
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> dict[str, Any]:
    """check_log, plus under "_csv" what the --csv row needs."""
    log = parse_file(path)
    if not log.framework:
        raise InputError(
            path,
            "",
            f"no Megatron-LM / NeMo / Megatron-Bridge or torchtitan training lines in "
            f"{log.lines:,} lines (argument dump, 'iteration ... elapsed time per iteration', "
            "'step: ... tps:')",
        )
    notes: list[str] = []
    if log.last_dump_at:
        notes.append(
            f"the log holds {log.dumps} argument dumps (restarts): the last one and its "
            f"{len(log.iters) - log.last_dump_at} intervals are used, the {log.last_dump_at} before it left out"
        )
    if log.last_line_cut or log.gzip_truncated:
        notes.append("the log ends inside a line (cut while written): that last line is not read")
    hw_missing = ""
    if hardware_ref is None:
        hardware_ref = DEVICE_NAMES.get(log.device_name)
        if hardware_ref:
            notes.append(f"hardware from the log's device name '{log.device_name}': {hardware_ref}")
        else:
            hw_missing = (
                "hardware (the log does not name it"
                + (f": '{log.device_name}' is ambiguous" if log.device_name else "")
                + "; give --hardware ID|FILE)"
            )
    try:
        run = build_run(log, overrides, model_ref, gpus, path)
    except InputError as exc:
        if hw_missing and exc.field == "missing":
            raise InputError(path, "missing", f"{hw_missing}; {exc.reason}") from None
        raise
    if hw_missing:
        raise InputError(path, "missing", hw_missing)
    assert hardware_ref is not None
    hw = apply_overrides(load_hardware(hardware_ref), list(sets))
    meas = measure(log, run, warmup, path)
    # a measurement no GPU can reach is refused, as validate refuses the row (checks.implausible_throughput)
    why = implausible_throughput(run.model, hw, meas.tokens_per_s_per_gpu, run.layout.seq, run.precision)
    if why:
        raise InputError(path, "measured", f"impossible: {why}")
    low = low_mfu_warning(run.model, hw, meas.tokens_per_s_per_gpu, run.layout.seq, run.precision)
    if low:
        notes.append(low)
        if low not in WARNINGS:
            WARNINGS.append(low)
    st = run_stack(run, stack, stack_set)
    p = api.predict(run.model, hw, run.layout, run.precision, stack=st.stack, stack_set=st.stack_set)
    r = {
        "step_time_s": float(p.step_time_s[0]),
        "tokens_per_s_per_gpu": _tps(p),
        "mfu": float(p.mfu[0]),
        "memory_bytes_per_gpu": float(p.memory_bytes_per_gpu[0]),
        "fits": _fits(p, hw),
        "breakdown_s": {k: float(v[0]) for k, v in p.breakdown_s.items()},
    }
    band = uncertainty.band_for(
        run.model, hw, st.stack, run.layout.vp
    )  # the unseen-stack band for a stack the bands never saw
    pred = r["tokens_per_s_per_gpu"]
    ratio = meas.tokens_per_s_per_gpu / pred
    conv, conv_text = FLOP_CONVENTION[run.framework]
    seq = run.layout.seq
    fpt = {c: float(flops_per_token(run.model, seq, c)) for c in ("causal", "full")}  # type: ignore[arg-type]
    mfu_fw = None  # the frameworks' MFU use their own peak tables; MFU is recomputed with perfmodel's
    mfu_meas = meas.tokens_per_s_per_gpu * fpt["causal"] / hw.peak(run.precision)
    return {
        "log": path,
        "framework": run.framework,
        "lines": log.lines,
        "cut_lines": log.cut_lines,
        "gzip": log.gzip,
        "last_line_cut": log.last_line_cut,
        "gzip_truncated": log.gzip_truncated,
        "model": run.model.id,
        "model_name": run.model.name,
        "model_source": run.model_source,
        "hardware": hw.id,
        "hardware_overridden": list(hw.overridden),
        "precision": run.precision,
        "layout": {**run.layout.__dict__, "dp": run.layout.dp},
        "layout_text": layout_text(run.layout, mbs=True),
        "micro_batches": run.layout.gbs // (run.layout.dp * run.layout.mbs),
        "notes": notes + run.notes,
        "stack": st.stack,
        "stack_name": load_stack(st.stack).name,
        "stack_why": st.why,
        "stack_set": list(st.stack_set),
        "stack_features": st.features(run, hw),
        "measured": {**meas.__dict__, "mfu_causal": mfu_meas},
        "framework_flops": {
            "convention": conv,
            "source": conv_text,
            "perfmodel_flops_per_token_causal": fpt["causal"],
            "perfmodel_flops_per_token_full": fpt["full"],
        },
        "predicted": {
            "step_time_s": r["step_time_s"],
            "tokens_per_s_per_gpu": pred,
            "mfu_causal": r["mfu"],
            "memory_bytes_per_gpu": r["memory_bytes_per_gpu"],
            "fits": r["fits"],
            "breakdown_s": r["breakdown_s"],
        },
        "gap": (pred - meas.tokens_per_s_per_gpu) / meas.tokens_per_s_per_gpu,
        "measured_over_predicted": ratio,
        "band": band.to_dict(),
        "verdict": verdict(ratio, band),
        "what_ifs": what_ifs(run, hw, meas.tokens_per_s_per_gpu, st),
        "overheads": overheads(run, p),
        "_csv": (run, hardware_ref, hw, meas, mfu_fw, st),
    }


def write_csv(path: str, row: dict[str, Any]) -> None:
    """The --csv file: the header of the measured-run schema and the one row."""
    try:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
            w.writeheader()
            w.writerow(row)
    except OSError as exc:
        raise InputError("--csv", path, f"cannot write ({exc.strerror or exc})") from None
