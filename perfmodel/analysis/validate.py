"""Hold predictions against measured runs (CSV schema of validation/README.md).

For each row: predicted vs measured tokens/s/GPU and the signed error (pred - meas) / meas. Summary:
MAPE, median and p90 absolute error, worst rows, bias per group, coverage with every unsupported row
and its reason. Rows measured far below their prediction get the most likely cause from the breakdown.
"""

from __future__ import annotations

import csv
import math
import re
import sys
import zlib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import numpy as np

from perfmodel.analysis import explain
from perfmodel.analysis.checks import implausible_throughput, min_flops_per_token
from perfmodel.analysis.energy import power_limit_w
from perfmodel.core.predict import Options, Prediction, predict_grid, software_of
from perfmodel.economics import power as pw
from perfmodel.economics.job import priced_tco
from perfmodel.errors import InputError, did_you_mean
from perfmodel.specs.hardware import PRECISIONS, HardwareSpec, load_hardware
from perfmodel.specs.layout import Layout, LayoutGrid, check_layout, default_etp
from perfmodel.specs.model import ModelSpec, load_model
from perfmodel.specs.stack import READ_ONLY, StackChoice, StackSpec, apply_overrides, infer_stack, load_stack

REQUIRED = ("model", "hardware", "gpus", "precision", "seq_len", "global_batch")
# the measurement: tokens/s/GPU, or the step time it converts from (tokens/s/GPU = gbs x seq / (step x gpus))
MEASURED = ("tokens_per_s_per_gpu", "step_time_s")
# every column validate reads: (name, unit, default when empty or absent, accepted values)
COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("model", "-", "required", "catalog id, or a model spec file (TOML / HF config.json) relative to the CSV"),
    ("hardware", "-", "required", "catalog id, or a hardware TOML relative to the CSV"),
    ("gpus", "GPUs", "required", "positive integer"),
    ("precision", "-", "required", ", ".join(PRECISIONS)),
    ("seq_len", "tokens", "required", "positive integer"),
    ("global_batch", "sequences", "required", "positive integer"),
    (
        "tokens_per_s_per_gpu",
        "tokens/s per GPU",
        "required unless step_time_s",
        "positive number; implied MFU at most 100% of the precision's dense peak",
    ),
    (
        "step_time_s",
        "s",
        "used when tokens_per_s_per_gpu is absent or empty",
        "positive number: one optimizer step over global_batch x seq_len tokens",
    ),
    ("run_id", "-", "row<line>", "unique within the file"),
    ("tp", "-", "1", "positive integer"),
    ("pp", "-", "1", "positive integer"),
    ("vp", "-", "1", "positive integer"),
    ("cp", "-", "1", "positive integer"),
    ("ep", "-", "1", "positive integer (1 for dense models)"),
    ("etp", "-", "tp (MoE), 1 (dense)", "positive integer"),
    ("micro_batch", "sequences", "1", "positive integer"),
    ("fsdp", "-", "0", "0 or 1"),
    ("recompute", "-", "lightest that fits (inferred)", "none, selective, full"),
    ("moe_routing", "-", "real", "balanced-dropless, token-drop, or empty (real routing)"),
    ("source", "-", "empty", "free text (grouping with --by source)"),
    (
        "megatron_args",
        "-",
        "empty",
        "Megatron-LM command-line flags (--use-distributed-optimizer --recompute-granularity full ...): exactly the "
        "stack features they state over Megatron-LM's library defaults (megatron-core), or over the stack cell's "
        "preset; their recompute, precision and layout flags must agree with the row's columns",
    ),
    ("peak_mem_allocated_bytes", "bytes per GPU", "empty", "positive number: scored against predicted memory"),
    (
        "avg_node_power_w",
        "W per node (AC)",
        "empty",
        "positive number: a node's mean wall power over the run, scored against the drawn-power model",
    ),
    (
        "energy_j",
        "J",
        "empty (used when avg_node_power_w is empty)",
        "positive number with duration_s: the run's energy, per node = energy_j / duration_s / nodes",
    ),
    ("duration_s", "s", "required with energy_j", "positive number: the time energy_j was measured over"),
    (
        "energy_scope",
        "-",
        "nodes",
        "nodes (the nodes' wall power) or cluster (nodes + the scale-out network, costs.toml's W per GPU)",
    ),
)
CALIBRATION_SPLITS = 4
# Rows parsed and predicted together: large enough that each (model, hardware, options) group is one
# predict_grid call over many layouts, small enough to bound memory on files of any length.
CHUNK_ROWS = 20_000
PROGRESS_EVERY = 1000  # rows read between progress calls (a chunk is one step of several seconds)


def calibration_split(run_id: str) -> bool:
    """True for the fixed calibration subset: crc32(run_id) % 4 == 0 (about a quarter of the rows)."""
    return zlib.crc32(run_id.encode()) % CALIBRATION_SPLITS == 0


@dataclass
class RowResult:
    run_id: str
    model: str
    hardware: str
    precision: str
    source: str
    gpus: int
    measured: float
    predicted: float
    error: float  # signed relative error of the prediction
    calibration: bool
    moe: bool
    verdict: str
    breakdown: dict[str, float]
    mfu: float
    fits: bool
    stack: str = ""  # software-stack preset of the row (its `stack` cell, else stack_for_row);
    #                                    its `stack_set` overrides are in the CSV (row_stack_spec resolves both)
    dataset: str = ""  # the measured-run file the row came from
    mem_measured: float | None = None  # peak_mem_allocated_bytes where the source measured it
    mem_predicted: float | None = None
    mem_error: float | None = None  # (predicted - measured) / measured memory per GPU
    causes: list[dict] = field(default_factory=list)  # ranked explanations of a slow run (explain_slow)
    memory_contradiction: str | None = None  # the run ran, but perfmodel's memory model cannot place it in HBM
    stack_why: str = ""  # why the row runs its stack preset: its stack cell, or what its words name (infer_stack)
    stack_basis: str = ""
    power_measured: float | None = None  # mean node power (W, AC; + network per GPU where energy_scope = cluster)
    power_predicted: float | None = None  # the drawn-power model over the row's predicted step
    power_error: float | None = None  # (predicted - measured) / measured
    # the stack statements (rules, inheritance, features) this row's values rest on whose basis is secondary or
    # inferred (StackSpec.not_read), and the prediction with them switched off (the preset as `ID#read`)
    not_read: list[dict] = field(default_factory=list)
    predicted_read_only: float | None = None
    error_read_only: float | None = None


def _err_stats(errs: list[float]) -> dict:
    if not errs:
        return {"rows": 0, "mape": None, "bias": None}
    e = np.asarray(errs)
    return {"rows": len(errs), "mape": float(np.abs(e).mean()), "bias": float(e.mean())}


# the columns a report groups rows by (Report.by), and the verdicts that flag a row far from its prediction (others
# are "ok" or informational)
GROUP_KEYS = ("hardware", "model", "source", "precision", "kind", "split", "stack", "dataset")
FLAG_VERDICTS = ("underperforms", "faster than predicted")


@dataclass
class Report:
    given: int
    results: list[RowResult]
    unsupported: list[dict]
    warnings: list[str] = field(default_factory=list)

    def stats(self, rows: Iterable[RowResult] | None = None) -> dict:
        rs = list(self.results if rows is None else rows)
        if not rs:
            return {"rows": 0, "mape": None, "median_ape": None, "p90_ape": None, "bias": None}
        ape = np.abs([r.error for r in rs])
        return {
            "rows": len(rs),
            "mape": float(ape.mean()),
            "median_ape": float(np.median(ape)),
            "p90_ape": float(np.percentile(ape, 90)),
            "bias": float(np.mean([r.error for r in rs])),
        }

    def stack_bases(self) -> dict[str, int]:
        """How many predicted rows found their stack on each basis (a stack cell, a software label, a named release,
        ..., the framework's defaults, the default stack)."""
        out: dict[str, int] = {}
        for r in self.results:
            out[r.stack_basis] = out.get(r.stack_basis, 0) + 1
        return out

    def stack_fallbacks(self) -> list[dict]:
        """The rows whose stack is a guess: no preset matched their words (framework defaults or the default)."""
        return [
            {"run_id": r.run_id, "stack": r.stack, "why": r.stack_why}
            for r in self.results
            if r.stack_basis in ("framework default", "default")
        ]

    def read_only_stats(self, rows: Iterable[RowResult] | None = None) -> dict:
        """Accuracy with and without the secondary / inferred stack statements (issue 25): the rows that rest on
        any, how many on each basis, MAPE and bias over every row as predicted ("with") and with those rows
        predicted from the preset without them ("without", `ID#read`), the same over the marked rows alone, and
        the marked rows the read-only preset cannot predict (left out of both)."""
        rs = list(self.results if rows is None else rows)
        marked = [r for r in rs if r.not_read]
        lost = [r.run_id for r in marked if r.error_read_only is None]
        both = [r for r in rs if not r.not_read or r.error_read_only is not None]
        pairs = [r for r in marked if r.error_read_only is not None]
        by_basis = {b: sum(any(g["basis"] == b for g in r.not_read) for r in marked) for b in ("secondary", "inferred")}
        return {
            "rows_marked": len(marked),
            "rows_moved": sum(abs(r.error_read_only - r.error) > 1e-9 for r in pairs),  # type: ignore[operator]
            "by_basis": by_basis,
            "with": _err_stats([r.error for r in both]),
            "without": _err_stats([r.error if r.error_read_only is None else r.error_read_only for r in both]),
            "marked_with": _err_stats([r.error for r in pairs]),
            "marked_without": _err_stats([r.error_read_only for r in pairs]),  # type: ignore[misc]
            "unpredicted_without": lost,
        }

    def memory_contradictions(self) -> list[dict]:
        """The runs predicted although the memory model places them over HBM with any recompute mode."""
        return [{"run_id": r.run_id, "reason": r.memory_contradiction} for r in self.results if r.memory_contradiction]

    def memory_stats(self, rows: Iterable[RowResult] | None = None) -> dict:
        """Memory per GPU against measured peak allocated, over the rows that carry it."""
        rs = [r for r in (self.results if rows is None else rows) if r.mem_error is not None]
        if not rs:
            return {"rows": 0, "mape": None, "bias": None}
        err = np.array([r.mem_error for r in rs])
        return {"rows": len(rs), "mape": float(np.abs(err).mean()), "bias": float(err.mean())}

    def power_stats(self, rows: Iterable[RowResult] | None = None) -> dict:
        """Mean node power (drawn model) against measured node power or energy, over the rows that carry it."""
        rs = [r for r in (self.results if rows is None else rows) if r.power_error is not None]
        if not rs:
            return {"rows": 0, "mape": None, "bias": None}
        err = np.array([r.power_error for r in rs])
        return {"rows": len(rs), "mape": float(np.abs(err).mean()), "bias": float(err.mean())}

    def by(self, key: str) -> dict[str, dict]:
        groups: dict[str, list[RowResult]] = {}
        for r in self.results:
            k = {
                "hardware": r.hardware,
                "model": r.model,
                "source": r.source,
                "precision": r.precision,
                "kind": "moe" if r.moe else "dense",
                "split": "calibration" if r.calibration else "held-out",
                "stack": r.stack,
                "dataset": r.dataset,
            }[key]
            groups.setdefault(k, []).append(r)
        return {k: self.stats(v) for k, v in sorted(groups.items())}

    def summary(self) -> dict[str, Any]:
        """Rows given/predicted, coverage and error statistics: all rows, calibration split, held-out; memory,
        power, the stack each row ran and why, and the runs the memory model cannot place."""
        rs = self.results
        out: dict[str, Any] = {
            "rows": self.given,
            "predicted": len(rs),
            "coverage": len(rs) / self.given if self.given else 0.0,
        }
        all_stats = self.stats()
        out.update({k: all_stats[k] for k in ("mape", "median_ape", "p90_ape", "bias")})
        out["calibration"] = self.stats([r for r in rs if r.calibration])
        out["held_out"] = self.stats([r for r in rs if not r.calibration])
        out["memory"] = self.memory_stats()
        out["memory_contradictions"] = self.memory_contradictions()
        out["stack_basis"] = self.stack_bases()
        out["stack_fallbacks"] = self.stack_fallbacks()
        out["power"] = self.power_stats()
        out["read_only"] = self.read_only_stats()
        return out

    def by_set(self) -> dict[str, dict]:
        """Error statistics per measured set (file), with its memory and power statistics."""
        return {
            k: {
                **v,
                "memory": self.memory_stats([r for r in self.results if r.dataset == k]),
                "power": self.power_stats([r for r in self.results if r.dataset == k]),
                "read_only": self.read_only_stats([r for r in self.results if r.dataset == k]),
            }
            for k, v in self.by("dataset").items()
        }

    def worst(self, n: int = 10) -> list[RowResult]:
        """The `n` rows farthest from their prediction."""
        return sorted(self.results, key=lambda r: -abs(r.error))[:n]

    def flagged(self) -> list[RowResult]:
        """The rows whose verdict flags them far from their prediction (FLAG_VERDICTS)."""
        return [r for r in self.results if r.verdict.startswith(FLAG_VERDICTS)]

    def document(self, by_key: str) -> dict[str, Any]:
        """`validate --json` without its per-row list: the summary, per set, per group of every GROUP_KEYS,
        the worst and flagged rows, the unsupported ones with their reasons, warnings."""
        return {
            **self.summary(),
            "sets": self.by_set(),
            "by_key": by_key,
            "by": {k: self.by(k) for k in GROUP_KEYS},
            "worst": [r.run_id for r in self.worst()],
            "unsupported": self.unsupported,
            "flagged": [{"run_id": r.run_id, "error": r.error, "verdict": r.verdict} for r in self.flagged()],
            "warnings": self.warnings,
        }


def _int(row: dict, key: str, default: int | None = None) -> int | None:
    v = _cell(row, key)
    if v == "":
        return default
    try:
        f = float(v)
    except ValueError:
        raise ValueError(f"{key}: not a number ({_short(v)})") from None
    if not math.isfinite(f) or f != int(f):
        raise ValueError(f"{key}: not an integer ({_short(v)})")
    return int(f)


def _cell(row: dict, key: str) -> str:
    v = row.get(key)
    return v.strip() if isinstance(v, str) else ""


def _short(v: str) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _float(row: dict, key: str) -> float:
    v = _cell(row, key)
    try:
        f = float(v)
    except ValueError:
        raise ValueError(f"{key}: not a number ({_short(v)})") from None
    if not math.isfinite(f) or f <= 0:
        raise ValueError(f"{key}: must be a positive number (got {_short(v)})")
    return f


def _resolve_ref(ref: str, base: Path) -> str:
    p = base / ref
    try:
        if ("/" in ref or ref.endswith((".toml", ".json"))) and p.exists():
            return str(p)
    except (OSError, ValueError):  # a name the filesystem can't take: resolve() reports it
        pass
    return ref


_COLUMN_OF = {"gbs": "global_batch", "seq": "seq_len", "mbs": "micro_batch"}  # layout field -> CSV column


SpecCache = dict[tuple[str, str], Any]


def _spec(kind: str, ref: str, base: Path, cache: SpecCache | None) -> Any:
    """load_model / load_hardware of a CSV cell, remembered per distinct cell: 100,000 rows naming a
    few specs must not resolve paths 200,000 times. Failures are not cached (bad rows are rare)."""
    hit = cache.get((kind, ref)) if cache is not None else None
    if hit is None:
        hit = (load_model if kind == "model" else load_hardware)(_resolve_ref(ref, base))
        if cache is not None:
            cache[(kind, ref)] = hit
    return hit


def row_inputs(
    row: dict, base: Path, specs: SpecCache | None = None
) -> tuple[ModelSpec, HardwareSpec, Layout, Options]:
    """One CSV row -> (model, hardware, layout, options); raises ValueError/InputError with the reason.
    `specs`: a dict shared across the rows of one file, to load each model / hardware cell once."""
    for k in REQUIRED:
        if not _cell(row, k):
            raise ValueError(f"{k}: empty")
    if not any(_cell(row, k) for k in MEASURED):
        raise ValueError("tokens_per_s_per_gpu: empty (and no step_time_s to convert)")
    model = _spec("model", _cell(row, "model"), base, specs)
    hw = _spec("hardware", _cell(row, "hardware"), base, specs)
    prec = _cell(row, "precision")
    if prec not in PRECISIONS:
        raise ValueError(
            f"precision: unknown precision {_short(prec)}{did_you_mean(prec, PRECISIONS)}; "
            f"one of {', '.join(PRECISIONS)}"
        )
    tp = _int(row, "tp", 1)
    margs = row_megatron(row)
    if margs is not None:
        _check_megatron_columns(row, margs)
    rec = _cell(row, "recompute") or (margs.recompute if margs is not None else None) or "none"
    lay = Layout(
        gpus=_int(row, "gpus"),
        gbs=_int(row, "global_batch"),
        seq=_int(row, "seq_len"),
        tp=tp,
        pp=_int(row, "pp", 1),
        vp=_int(row, "vp", 1),
        cp=_int(row, "cp", 1),
        ep=_int(row, "ep", 1),
        etp=_int(row, "etp", 1),
        mbs=_int(row, "micro_batch", 1),
        fsdp=bool(_int(row, "fsdp", 0)),
        recompute=rec,
    )  # type: ignore[arg-type]
    positive = all(getattr(lay, f) >= 1 for f in ("gpus", "tp", "pp", "cp", "ep", "etp"))  # else check_layout says
    if positive and _int(row, "etp") is None:  # one rule with predict: layout.default_etp
        lay = Layout(**{**lay.__dict__, "etp": default_etp(model.is_moe, lay.tp, lay.cp, lay.dp, lay.ep)})
    a = model.attention
    try:
        check_layout(lay, model.num_layers, a.num_heads, a.num_kv_heads, model.moe.num_experts if model.moe else None)
    except InputError as exc:  # name the CSV column where it differs from the layout field
        if exc.where == "layout" and exc.field in _COLUMN_OF:
            raise InputError("layout", f"{exc.field} (column {_COLUMN_OF[exc.field]})", exc.reason) from None
        raise
    routing = _cell(row, "moe_routing")
    # the row's stack reaches the cost model: its preset (or stack file relative to the CSV) and its
    # stack_set overrides
    cell = _cell(row, "stack")
    choice = None if cell else row_stack_choice(row)
    opts = Options(
        precision=prec,
        routing="balanced" if routing in ("balanced-dropless", "token-drop") else "real",
        stack=_resolve_ref(cell, base) if cell else choice.stack,
        stack_set=(() if choice is None else choice.sets) + tuple(_stack_sets(row)),
    )
    hw.peak(prec)
    return model, hw, lay, opts


def measured_throughput(row: dict, lay: Layout) -> float:
    """The row's tokens/s/GPU: its tokens_per_s_per_gpu cell, else global_batch x seq_len / (step_time_s x
    gpus) (validation/README.md, throughput_basis `step_time`)."""
    if _cell(row, "tokens_per_s_per_gpu"):
        return _float(row, "tokens_per_s_per_gpu")
    return lay.gbs * lay.seq / (_float(row, "step_time_s") * lay.gpus)


_MODES = ("none", "selective", "full")


# A measured run fitted in HBM. When inferring the recompute it used, a layout whose predicted memory
# exceeds HBM by less than the memory model's measured error still counts as fitting: 5% is about the
# largest error against measured peak memory (SimuMax B200 rows, validation/independent, where the
# model's allocated-memory MAPE is 3-5%), so a smaller overshoot does not prove the run recomputed.
MEMORY_TOLERANCE = 0.05


def _could_fit(p: Prediction) -> np.ndarray:
    return p.memory_bytes_per_gpu <= p.hbm_bytes * (1 + MEMORY_TOLERANCE)


def has_selective(model, hw, opts: Options) -> bool:
    """The stack names selective-recompute modules (else selective is not a mode it can run: predict.check_recompute)."""
    return software_of(model, hw, opts).has_selective


def _mode_grid(grid: LayoutGrid, selective: bool) -> LayoutGrid:
    """`grid` under none, selective and full, n rows each; without selective modules its block is scored as
    none and never taken (`_mode_fits`)."""
    n = grid.n
    return LayoutGrid.concat(
        [replace(grid, recompute=np.full(n, k if (k != 1 or selective) else 0, np.int64)) for k in range(3)]
    )


def _mode_fits(p: Prediction, n: int, selective: bool) -> np.ndarray:
    fits = _could_fit(p).reshape(3, n).copy()
    if not selective:
        fits[1] = False
    return fits


def _inferred_modes(fits: np.ndarray, model, hw, opts: Options) -> np.ndarray:
    """Recompute mode per row (index into _MODES) from `fits` [3, n] (none, selective, full): the stack's own
    policy when it fits; else the first mode that fits (argmax of a bool column); full when none does."""
    stated = _MODES.index(software_of(model, hw, opts).recompute)
    mode = np.where(fits.any(axis=0), np.argmax(fits, axis=0), 2)
    return np.where(fits[stated], stated, mode)


def predict_row(model, hw, lay: Layout, opts: Options, recompute_published: bool) -> tuple[Prediction, str]:
    """Predict a measured row. When the source does not say which recompute it used: the stack's own
    policy if it fits in HBM, else the lightest recompute mode (none, selective, full) whose predicted
    memory fits (the run must have fit)."""
    if recompute_published:
        return predict_grid(model, hw, LayoutGrid.of(lay), opts), ""
    sel = has_selective(model, hw, opts)
    grid = _mode_grid(LayoutGrid.of(replace(lay, recompute="none")), sel)
    p = predict_grid(model, hw, grid, opts)
    i = int(_inferred_modes(_mode_fits(p, 1, sel), model, hw, opts)[0])
    one = predict_grid(model, hw, grid.take(np.array([i])), opts)
    return one, ("" if i == 0 else _MODES[i])


def likely_cause(p: Prediction, i: int = 0) -> str:
    """The largest non-compute term of the breakdown: where a slow real run most likely lost time."""
    return explain.likely_cause(p.row(i)["breakdown_s"], float(p.step_time_s[i]))


class _Row(NamedTuple):
    """A parsed, supported row waiting for its prediction (the CSV dict itself is not kept)."""

    rid: str
    source: str
    model: ModelSpec
    hw: HardwareSpec
    lay: Layout
    opts: Options
    measured: float
    published: bool  # the source states the recompute mode
    stack: str
    mem_measured: float | None
    mbs_published: bool = True  # the source states the micro-batch size
    stack_why: str = ""  # why the row runs its stack preset (stack_why)
    stack_basis: str = ""
    power_measured: tuple[float, str] | None = None  # (W per node, or per node + network; scope) where measured
    not_read: tuple = ()  # StackSpec.not_read of the row's resolved stack


class _Scored(NamedTuple):
    """Where a row's prediction lies: index `i` of prediction `p`, and the recompute mode inferred."""

    p: Prediction
    i: int
    inferred: str


def _score_group(rows: list[_Row]) -> list[_Scored]:
    """Rows sharing model, hardware, options and whether recompute is published: one predict_grid call.
    Element-wise the cost model does not depend on the other layouts of the grid, so each row gets
    the bit-identical numbers `predict_row` gives it alone. Unpublished recompute: the three modes are
    scored side by side (n rows each) and each row takes the lightest that fits, as `predict_row`."""
    r0 = rows[0]
    grid = LayoutGrid.from_layouts([r.lay for r in rows])
    if r0.published:
        p = predict_grid(r0.model, r0.hw, grid, r0.opts)
        return [_Scored(p, j, "") for j in range(len(rows))]
    n = len(rows)
    sel = has_selective(r0.model, r0.hw, r0.opts)
    p = predict_grid(r0.model, r0.hw, _mode_grid(grid, sel), r0.opts)
    mode = _inferred_modes(_mode_fits(p, n, sel), r0.model, r0.hw, r0.opts)
    return [_Scored(p, int(k) * n + j, "" if k == 0 else _MODES[k]) for j, k in enumerate(mode)]


def _score(rows: list[_Row]) -> list[_Scored | Exception]:
    """Every parsed row's prediction, in input order; one predict_grid per group. A group whose
    prediction raises falls back to one row at a time, so the error lands on the rows that cause it."""
    groups: dict[tuple, list[int]] = {}
    for j, r in enumerate(rows):
        groups.setdefault((id(r.model), id(r.hw), r.opts, r.published), []).append(j)
    out: list[_Scored | Exception] = [ValueError("not predicted")] * len(rows)
    for idx in groups.values():
        scored: list[_Scored | Exception]
        try:
            scored = list(_score_group([rows[j] for j in idx]))
        except (InputError, ValueError, KeyError):
            scored = []
            for j in idx:
                r = rows[j]
                try:
                    one, inferred = predict_row(r.model, r.hw, r.lay, r.opts, r.published)
                    scored.append(_Scored(one, 0, inferred))
                except (InputError, ValueError, KeyError) as exc:
                    scored.append(exc)
        for j, s in zip(idx, scored):
            out[j] = s
    return out


def memory_contradiction(r: _Row, s: _Scored) -> str | None:
    """A measured run is data: it ran, so a layout the memory model cannot place in HBM with any recompute mode
    is not refused but predicted as stated, and this says what disagrees (None when it fits). Within the memory
    model's measured error (MEMORY_TOLERANCE) a layout counts as fitting."""
    if bool(_could_fit(s.p)[s.i]):
        return None
    p, i = s.p, s.i
    if r.lay.recompute != "full" and s.inferred != "full":  # published lighter mode: does full fit?
        p, i = predict_grid(r.model, r.hw, LayoutGrid.of(replace(r.lay, recompute="full")), r.opts), 0
        if bool(_could_fit(p)[0]):
            return None
    need, hbm = float(p.memory_bytes_per_gpu[i]), float(p.hbm_bytes)
    return (
        f"perfmodel needs {need / 1e9:.0f} GB of {hbm / 1e9:.0f} GB per GPU on {r.hw.id} with any recompute mode "
        "(full recompute included): the run must shard, offload or recompute what perfmodel does not know"
    )


SLOW_ERROR = 0.25  # predicted this much above measured: the row "underperforms" and gets ranked causes
CAUSES_SHOWN = 3  # in the verdict text (all in RowResult.causes / --json)
# stack variants that explain a slow run: communication not overlapped (the row's stack with every overlap
# switch off), and, for a Megatron-family stack, an early-2024 one (the NeMo-Megatron 24.05 preset); each
# (text, stack or None = the row's own, --stack-set overrides appended to the row's)
NO_OVERLAP = (
    "tp_overlap=none",
    "dp_grad_reduce_overlap=false",
    "dp_param_gather_overlap=false",
    "moe_a2a_overlap=false",
)
EARLY_STACK = "nemo-megatron-24.05"
CAUSE_STACKS: tuple[tuple[str, str | None, tuple[str, ...]], ...] = (
    ("communication overlap off (the row's stack, every overlap switch off)", None, NO_OVERLAP),
    (f"an older software stack ({EARLY_STACK}, early 2024)", EARLY_STACK, ()),
)
MBS_TRY = (2, 4, 8)  # unpublished micro-batch: larger ones mean fewer micro-batches, a larger bubble


def _variants(r: _Row, used: str) -> list[tuple[str, Layout, Options]]:
    """The changes of a slow row that perfmodel can predict: each (text, layout, options)."""
    out: list[tuple[str, Layout, Options]] = []
    if not r.published:  # recompute unpublished: the heavier modes
        for mode in _MODES[_MODES.index(used or "none") + 1 :]:
            if mode == "selective" and not has_selective(r.model, r.hw, r.opts):
                continue
            out.append(
                (f"recompute={mode} (not published; {used or 'none'} inferred)", replace(r.lay, recompute=mode), r.opts)
            )
    lay0 = replace(r.lay, recompute=used or r.lay.recompute)
    for text, stack, sets in CAUSE_STACKS:
        if stack is not None and (stack == r.opts.stack or load_stack(r.opts.stack).family != "megatron-core"):
            continue  # the row already ran it, or another framework
        opts = (
            replace(r.opts, stack=stack, stack_set=())
            if stack is not None
            else replace(r.opts, stack_set=tuple(r.opts.stack_set) + sets)
        )
        out.append((text, lay0, opts))
    if not r.mbs_published and r.lay.pp > 1:  # the bubble with the real micro-batch count
        for mbs in MBS_TRY:
            cand = replace(lay0, mbs=mbs)
            if r.lay.gbs % (cand.dp * mbs) == 0:
                micro = r.lay.gbs // (cand.dp * mbs)
                out.append(
                    (
                        f"micro-batch {mbs} (not published; 1 assumed): {micro} micro-batches per step, a larger "
                        "pipeline bubble",
                        cand,
                        r.opts,
                    )
                )
    return out


def explain_slow(slow: list[tuple[_Row, RowResult]]) -> None:
    """Rank the likely explanations of runs measured far below their prediction, with the numbers perfmodel
    computes anyway: each variant (_variants) predicted, and how close it comes to the measurement
    ((predicted - measured) / measured; the smallest |closeness| first). Fills RowResult.causes and puts the
    closest CAUSES_SHOWN in the verdict. Variants sharing model, hardware and options are one predict_grid."""
    buckets: dict[tuple, list[tuple[int, str, Layout]]] = {}
    models: dict[tuple, _Row] = {}
    for j, (r, res) in enumerate(slow):
        used = res.verdict.split("recompute=", 1)[1].split(" ", 1)[0] if "inferred" in res.verdict else ""
        for text, lay, opts in _variants(r, used):
            try:
                check_layout(
                    lay,
                    r.model.num_layers,
                    r.model.attention.num_heads,
                    r.model.attention.num_kv_heads,
                    r.model.moe.num_experts if r.model.moe else None,
                )
            except InputError:
                continue
            key = (id(r.model), id(r.hw), opts)
            buckets.setdefault(key, []).append((j, text, lay))
            models[key] = r
    causes: list[list[dict]] = [[] for _ in slow]
    for key, items in buckets.items():
        r0 = models[key]
        try:
            p = predict_grid(r0.model, r0.hw, LayoutGrid.from_layouts([lay for _, _, lay in items]), key[2])
        except (InputError, ValueError):
            continue
        tps, fits = p.tokens_per_s_per_gpu.tolist(), p.fits.tolist()
        for (j, text, _), t, ok in zip(items, tps, fits):
            if ok:
                m = slow[j][0].measured
                causes[j].append({"cause": text, "predicted": t, "closeness": (t - m) / m})
    for (_, res), cs in zip(slow, causes):
        cs.sort(key=lambda c: abs(c["closeness"]))
        res.causes = cs
        if cs:
            top = "; ".join(
                f"{c['cause']}: {c['predicted']:,.0f} tok/s/GPU ({c['closeness']:+.0%} vs measured)"
                for c in cs[:CAUSES_SHOWN]
            )
            res.verdict = f"{res.verdict}; closest explanations: {top}"


def _result(
    r: _Row, s: _Scored, columns: dict[int, dict[str, list]], dataset: str = "", memory: str | None = None
) -> RowResult:
    """RowResult of one scored row; `columns` caches each prediction's arrays as Python lists (what
    float(array[i]) gives, without a numpy scalar per value)."""
    c = columns.get(id(s.p))
    if c is None:
        c = columns[id(s.p)] = {
            "tps": s.p.tokens_per_s_per_gpu.tolist(),
            "step": s.p.step_time_s.tolist(),
            "mfu": s.p.mfu.tolist(),
            "fits": s.p.fits.tolist(),
            "mem": s.p.memory_bytes_per_gpu.tolist(),
            # what PyTorch's max_memory_allocated counts: not the CUDA context, NCCL
            # buffers and allocator slack (the `reserved` part)
            "mem_alloc": (s.p.memory_bytes_per_gpu - s.p.memory_parts["reserved"]).tolist(),
            "breakdown": {k: v.tolist() for k, v in s.p.breakdown_s.items()},
        }
    i = s.i
    breakdown = {k: v[i] for k, v in c["breakdown"].items()}
    pred = c["tps"][i]
    err = (pred - r.measured) / r.measured
    verdict = "ok" if not s.inferred else f"recompute={s.inferred} inferred (no-recompute layout does not fit in HBM)"
    note = f"; {verdict}" if s.inferred else ""
    if err > 0.25:
        verdict = "underperforms prediction; " + explain.likely_cause(breakdown, c["step"][i]) + note
    elif err < -0.25:
        verdict = "faster than predicted" + note
    mem = c["mem_alloc"][i]
    mem_err = None if r.mem_measured is None else (mem - r.mem_measured) / r.mem_measured
    pow_pred = pow_err = None
    if r.power_measured is not None and r.hw.power.drawn:
        pow_pred = predicted_node_power(r, breakdown)
        pow_err = (pow_pred - r.power_measured[0]) / r.power_measured[0]
    return RowResult(
        r.rid,
        r.model.id,
        r.hw.id,
        r.opts.precision,
        r.source,
        r.lay.gpus,
        r.measured,
        pred,
        err,
        calibration_split(r.rid),
        r.model.is_moe,
        sys.intern(verdict),
        breakdown,
        c["mfu"][i],
        c["fits"][i],
        r.stack,
        dataset,
        r.mem_measured,
        mem if r.mem_measured is not None else None,
        mem_err,
        memory_contradiction=memory,
        stack_why=r.stack_why,
        stack_basis=r.stack_basis,
        power_measured=None if r.power_measured is None else r.power_measured[0],
        power_predicted=pow_pred,
        power_error=pow_err,
        not_read=[dict(g) for g in r.not_read],
    )


def predicted_node_power(r: _Row, breakdown: dict[str, float]) -> float:
    """A node's mean wall power over the row's predicted step (economics/power.py; the stack's power limit), plus
    the scale-out network's share per node where the row's energy_scope is `cluster`."""
    lv = pw.levels(r.hw, power_limit_w(r.model, r.hw, r.opts))
    per_gpu = lv.node_w(pw.step_power(lv, breakdown).gpu_avg_w)
    if r.power_measured is not None and r.power_measured[1] == "cluster":
        per_gpu += priced_tco(r.hw, "hyperscaler")[0].inputs.network_storage_w_per_gpu
    return r.hw.gpus_per_node * per_gpu


def not_read(opts: Options, model: ModelSpec, hw: HardwareSpec) -> tuple:
    """The secondary / inferred statements the stack of `opts` rests on for this model, system and precision (the
    preset's per-model rules, then the row's stack_set, as the cost model resolves it)."""
    spec = load_stack(opts.stack).for_model(model.id, model.is_moe, hw.id, opts.precision)
    return tuple(apply_overrides(spec, list(opts.stack_set)).not_read())


def _read_only_pass(done: list[tuple[int, _Row]], results: list[RowResult]) -> None:
    """Predict the rows of this chunk (`done`: result index, parsed row) that rest on secondary / inferred stack
    statements again with their preset as `ID#read` (those statements switched off), into predicted_read_only /
    error_read_only; a row the read-only preset cannot predict keeps None there."""
    marked = [(k, r) for k, r in done if r.not_read]
    if not marked:
        return
    idx = [k for k, _ in marked]
    rows = [r._replace(opts=replace(r.opts, stack=r.opts.stack + READ_ONLY)) for _, r in marked]
    columns: dict[int, dict[str, list]] = {}
    for k, r, s in zip(idx, rows, _score(rows)):
        if isinstance(s, Exception):
            continue
        res = _result(r, s, columns)
        results[k].predicted_read_only, results[k].error_read_only = res.predicted, res.error


def row_stack(row: dict, base: Path | None = None) -> str:
    """The row's software-stack preset: its `stack` cell (a preset id or a stack file relative to the CSV,
    checked), else the preset perfmodel.specs.stack.stack_for_row maps its `framework` and `software` cells to.
    A `stack_set` cell (`feature=value; feature=value`) is checked against the schema here; the resolved
    spec of a row is `row_stack_spec`."""
    cell = _cell(row, "stack")
    sid = load_stack(_resolve_ref(cell, base) if base else cell).id if cell else row_stack_choice(row).stack
    sets = _stack_sets(row)
    if sets:
        apply_overrides(load_stack(_resolve_ref(cell, base) if (cell and base) else (cell or sid)), sets)
    return sid


def row_stack_choice(row: dict) -> StackChoice:
    """The preset a row's own words describe (specs/stack.infer_stack: its framework, software and date cells),
    with why; a `stack` cell overrides it (row_stack). A row with Megatron-LM flags (megatron_args) and no stack
    cell runs Megatron-LM's library defaults (megatron-core) with every feature its command line states."""
    margs = row_megatron(row)
    if margs is not None and not _cell(row, "stack"):
        return StackChoice("megatron-core", margs.sets, margs.why, "megatron args")
    c = infer_stack(_cell(row, "framework"), _cell(row, "software"), _cell(row, "date"))
    flags = software_flags(_cell(row, "software"))
    # the flag table is Megatron-LM's (megatron_args.SOURCE); Megatron-DeepSpeed's runs take DeepSpeed's optimizer
    if not flags or load_stack(c.stack).family != "megatron-core" or c.stack.startswith("megatron-deepspeed"):
        return c
    m = _megatron(flags, True, _int(row, "tp", 1) or 1)
    said = m.why.removeprefix("megatron_args over the stack cell's preset")
    why = f"{c.why}; Megatron-LM flags in its software text, over preset {c.stack}{said}"
    return StackChoice(c.stack, tuple(dict.fromkeys((*c.sets, *m.sets))), why, c.basis)


def software_flags(text: str) -> str:
    """The Megatron-LM flags of analysis/megatron_args.FLAGS a free-text software cell names ('Megatron-LM core_r0.12,
    --use-distributed-optimizer --overlap-grad-reduce, TE 2.1'), each with the one value a value flag takes, as a
    command line (megatron_args.parse); '' when it names none. Other words are prose, not flags."""
    from perfmodel.analysis import megatron_args as ma

    words = [w for w in re.split(r"[\s,;()]+", text or "") if w]
    out: list[str] = []
    for i, w in enumerate(words):
        name = w.split("=", 1)[0]
        spec = ma.FLAGS.get(name)
        if spec is None:
            continue
        if spec.kind in ("true", "false") or "=" in w:
            out.append(w)
        elif i + 1 < len(words) and not words[i + 1].startswith("--"):
            out.append(f"{w}={words[i + 1]}")
        else:
            out.append(w)  # a value flag without its value: megatron_args.parse says so
    return " ".join(out)


@dataclass(frozen=True)
class MegatronRow:
    """What a row's megatron_args cell states (analysis/megatron_args.py, mapped by logrun.megatron_stack_sets):
    --stack-set items, why (each feature with the flags and Megatron-LM source), the recompute mode, precision and
    layout flags."""

    sets: tuple[str, ...]
    why: str
    recompute: str | None
    precision: str | None
    layout: dict[str, tuple[str, int]]  # validate column -> (flag, value)


def row_megatron(row: dict) -> MegatronRow | None:
    """The row's megatron_args cell read (None without one); a bad flag is an InputError naming megatron_args."""
    cell = _cell(row, "megatron_args")
    return _megatron(cell, bool(_cell(row, "stack")), _int(row, "tp", 1) or 1) if cell else None


@lru_cache(maxsize=4096)
def _megatron(cell: str, over_preset: bool, tp: int) -> MegatronRow:
    from perfmodel.analysis import megatron_args as ma
    from perfmodel.analysis.logrun import Fields, megatron_stack_sets

    p = ma.parse(cell)
    full = not over_preset  # a command line over the library defaults states every flag of the table
    recompute = ma.recompute_of(p, full)
    notes: list[str] = []
    read: list[str] = []
    f = Fields(ma.validated(p.dump(full), tp), {})
    prec = ma.precision_of(p)
    stated = megatron_stack_sets(f, recompute or "none", prec, notes, read)
    if not full:  # over a preset: only the features whose flags the row gives
        stated = {k: v for k, v in stated.items() if any(d in p.given for d in _dests(v.how))}
    sets = tuple(f"{k}={v.value}" for k, v in stated.items())
    dump = f.args
    defaults = {fl.dest: fl.default for fl in ma.FLAGS.values()}
    said = lambda d: d in p.given or dump.get(d) != defaults.get(d)  # noqa: E731  given, or set by validate_args
    src = lambda d: ma.FLAGS[p.flags[d]].source(p.flags[d]) if d in p.flags else f"{d} set by validate_args"  # noqa: E731
    parts, kept = [], []
    for k, v in stated.items():
        ds = _dests(v.how)
        if any(said(d) for d in ds):
            parts.append(f"{k}={v.value} ({'; '.join(src(d) for d in ds if said(d))})")
        else:
            kept.append(f"{k}={v.value}")
    base = "over the stack cell's preset" if over_preset else "over Megatron-LM's library defaults (megatron-core)"
    why = f"megatron_args {base}: " + ("; ".join(parts) if parts else "no stack feature stated by a flag")
    if kept:
        why += f"; flags at their defaults ({ma.SOURCE}): {', '.join(kept)}"
    if p.ignored:
        why += f"; flags that set no stack feature: {' '.join(p.ignored)}"
    read = [r for r in read if any(r.startswith(d + "=") for d in p.given)]  # about the flags the row gave
    if notes or read:
        why += "; " + "; ".join(notes + read)
    layout = {col: (p.flags[d], int(p.given[d])) for d, col in ma.LAYOUT_COLUMNS.items() if d in p.given}
    return MegatronRow(sets, why, recompute, prec, layout)


def _dests(how: str) -> list[str]:
    """The argument-dump fields a Stated.how names ('overlap_grad_reduce=True, ...')."""
    from perfmodel.analysis import megatron_args as ma

    known = {fl.dest for fl in ma.FLAGS.values()}
    return [w for w in (t.strip().split("=")[0] for t in how.replace(";", ",").split(",")) if w in known]


def _check_megatron_columns(row: dict, m: MegatronRow) -> None:
    """The row's columns and its Megatron-LM flags describe one run: layout, recompute and precision agree."""
    for col, (flag, v) in m.layout.items():
        have = _cell(row, col)
        if have and _int(row, col) != v:
            raise InputError("megatron_args", flag, f"{v}, but the row's {col} is {have}")
    rec = _cell(row, "recompute")
    if rec and m.recompute and rec != m.recompute:
        raise InputError("megatron_args", "--recompute-granularity", f"{m.recompute}, but the row's recompute is {rec}")
    prec = _cell(row, "precision")
    family = "fp8" if prec in ("fp8", "fp8-block", "mxfp8") else prec
    if m.precision and prec and family != m.precision:
        raise InputError(
            "megatron_args", f"--{m.precision}", f"states {m.precision}, but the row's precision is {prec}"
        )


def stack_why(row: dict) -> tuple[str, str]:
    """(why the row runs its preset, the basis: "stack cell" or infer_stack's)."""
    if _cell(row, "stack"):
        return f"the row's stack cell '{_cell(row, 'stack')}'", "stack cell"
    c = row_stack_choice(row)
    return c.why, c.basis


def _stack_sets(row: dict) -> list[str]:
    """The row's stack_set cell, after what its megatron_args state over a stack cell's preset (without a stack cell
    they are the preset choice's own sets, row_stack_choice)."""
    cell = [s.strip() for s in _cell(row, "stack_set").split(";") if s.strip()]
    margs = row_megatron(row) if _cell(row, "stack") else None
    return [*(margs.sets if margs is not None else ()), *cell]


def row_stack_spec(row: dict, base: Path, model: ModelSpec, hw: HardwareSpec, precision: str) -> StackSpec:
    """The stack a row ran: its preset (row_stack), the `stack_set` overrides, and the preset's per-model
    rules for this model, system and precision."""
    cell = _cell(row, "stack")
    spec = load_stack(_resolve_ref(cell, base)) if cell else load_stack(row_stack(row))
    words = () if cell else row_stack_choice(row).sets
    return apply_overrides(spec.for_model(model.id, model.is_moe, hw.id, precision), [*words, *_stack_sets(row)])


POWER_PLAUSIBLE = (0.05, 2.0)  # measured node power outside these multiples of the node's rating: a unit slip


def _power(row: dict, lay: Layout, hw: HardwareSpec) -> tuple[float, str] | None:
    """Measured mean power per node (W) and its scope, from avg_node_power_w, or energy_j / duration_s / nodes
    (nodes: gpus over the system's gpus_per_node, rounded up); None where the row measured neither."""
    scope = _cell(row, "energy_scope") or "nodes"
    if scope not in ("nodes", "cluster"):
        raise ValueError(f"energy_scope: must be nodes or cluster (got {_short(scope)})")
    if _cell(row, "avg_node_power_w"):
        col, w = "avg_node_power_w", _float(row, "avg_node_power_w")
    elif not _cell(row, "energy_j"):
        return None
    elif not _cell(row, "duration_s"):
        raise ValueError("energy_j: needs duration_s (s), the time it was measured over, to give a power")
    else:
        nodes = -(-lay.gpus // hw.gpus_per_node)
        col, w = "energy_j", _float(row, "energy_j") / _float(row, "duration_s") / nodes
    rating = hw.gpus_per_node * hw.power.allin_w_per_gpu
    if not POWER_PLAUSIBLE[0] * rating <= w <= POWER_PLAUSIBLE[1] * rating:
        raise ValueError(
            f"{col}: {w:,.0f} W per node is outside {POWER_PLAUSIBLE[0]:g}-{POWER_PLAUSIBLE[1]:g}x the node's "
            f"{rating:,.0f} W rating: W per node expected (energy_j in J over duration_s in s), a unit slip?"
        )
    return w, scope


def _mem(row: dict) -> float | None:
    """Measured peak allocated memory per GPU (bytes), where the file has the column and the row a value."""
    return _float(row, "peak_mem_allocated_bytes") if _cell(row, "peak_mem_allocated_bytes") else None


def validate_rows(
    rows: Iterable[dict],
    base: Path,
    consts=None,
    progress: Callable[[int], None] | None = None,
    chunk_rows: int = CHUNK_ROWS,
    dataset: str = "",
) -> Report:
    """Predict every row (a list, or a stream such as `iter_csv`), `chunk_rows` at a time: rows of a
    chunk sharing model, hardware and options are scored by one predict_grid call. `progress(n)` is
    called with the number of rows read so far (every PROGRESS_EVERY rows and after each chunk's
    predictions). Bad rows go to `unsupported` with their
    line and reason; the others go on."""
    results: list[RowResult] = []
    unsupported: list[dict] = []
    specs: SpecCache = {}
    plausible: dict[tuple, float] = {}  # (model, hardware, precision, seq) -> tokens/s/GPU at 100% MFU
    marks: dict[tuple, tuple] = {}  # (stack, stack_set, model, hardware, precision) -> not_read
    it = iter(rows)
    given = 0
    while True:
        parsed: list[_Row] = []
        lines: list[int] = []
        start = given
        # rows are parsed as they stream in; only the small parsed tuples of one chunk are held
        for i, row in enumerate(islice(it, chunk_rows), start=given):
            given = i + 1
            if progress and given % PROGRESS_EVERY == 0:
                progress(given)
            rid = (row.get("run_id") or f"row{i + 2}").strip()
            try:
                model, hw, lay, opts = row_inputs(row, base, specs)
                if consts is not None:  # every other option (precision, routing, stack, ...) as the row gives it
                    opts = replace(opts, consts=consts)
                measured = measured_throughput(row, lay)
                key = (id(model), id(hw), opts.precision, lay.seq)
                if key not in plausible:  # implied MFU at most 100%: the fastest plausible throughput
                    plausible[key] = hw.peak(opts.precision) / min_flops_per_token(model, lay.seq)
                if measured > plausible[key]:
                    raise ValueError(
                        "tokens_per_s_per_gpu: impossible: "
                        + (implausible_throughput(model, hw, measured, lay.seq, opts.precision) or "")
                    )
                stack = sys.intern(row_stack(row, base))
                why, basis = stack_why(row)
                mem_measured = _mem(row)
                power_measured = _power(row, lay, hw)
                mkey = (opts.stack, opts.stack_set, id(model), id(hw), opts.precision)
                if mkey not in marks:
                    marks[mkey] = not_read(opts, model, hw)
            except (InputError, ValueError, KeyError) as exc:
                unsupported.append({"run_id": rid, "row": i + 2, "reason": str(exc)})
                continue
            # interned: 100,000 rows share a few hundred sources, stored once
            parsed.append(
                _Row(
                    rid,
                    sys.intern((row.get("source") or "").split(" (")[0]),
                    model,
                    hw,
                    lay,
                    opts,
                    measured,
                    bool((row.get("recompute") or "").strip()) or _megatron_recompute(row),
                    stack,
                    mem_measured,
                    bool((row.get("micro_batch") or "").strip()),
                    sys.intern(why),
                    sys.intern(basis),
                    power_measured,
                    marks[mkey],
                )
            )
            lines.append(i + 2)
        if given == start:
            break
        columns: dict[int, dict[str, list]] = {}
        bad: list[dict] = []
        slow: list[tuple[_Row, RowResult]] = []
        done: list[tuple[int, _Row]] = []
        for r, line, s in zip(parsed, lines, _score(parsed)):
            if isinstance(s, Exception):
                bad.append({"run_id": r.rid, "row": line, "reason": str(s)})
            else:  # predicted as stated even where the memory model cannot place it: the run happened
                results.append(_result(r, s, columns, dataset, memory_contradiction(r, s)))
                done.append((len(results) - 1, r))
                if results[-1].error > SLOW_ERROR:
                    slow.append((r, results[-1]))
        explain_slow(slow)
        _read_only_pass(done, results)
        if bad:  # keep `unsupported` in file order
            unsupported = sorted(unsupported + bad, key=lambda u: u["row"])
        if progress:
            progress(given)
    return Report(given, results, unsupported)


def _megatron_recompute(row: dict) -> bool:
    """The row's megatron_args state its recompute mode (row_inputs takes it as published)."""
    m = row_megatron(row)
    return m is not None and m.recompute is not None


def _csv_rows(path: str | Path, raw: bool) -> Iterator[Any]:
    """The data rows of a measured-runs CSV, read as they are consumed: dicts (header names stripped),
    or with `raw` the bare cell lists (counting). Every problem with the file is an InputError."""
    p = Path(path)
    reader = None
    try:
        if not p.is_file():
            raise InputError(str(p), "", "file not found" if not p.exists() else "not a regular file")
        # utf-8-sig: a byte-order mark (spreadsheet exports) must not hide the first column's name
        with p.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None:
                raise InputError(str(p), "", "file is empty")
            reader.fieldnames = [f.strip() for f in reader.fieldnames]
            missing = [k for k in REQUIRED if k not in reader.fieldnames]
            if not any(k in reader.fieldnames for k in MEASURED):
                missing.append(" or ".join(MEASURED))
            if missing:
                raise InputError(str(p), ", ".join(missing), "required column(s) missing")
            if raw:
                yield reader.fieldnames  # the header first, then the bare cell lists
                yield from (r for r in reader.reader if r)  # DictReader skips blank lines too
            else:
                yield from reader
    except InputError:
        raise
    except UnicodeDecodeError as exc:
        raise InputError(str(p), "", f"not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise InputError(str(p), "", f"not valid CSV (line {reader.line_num if reader else 0}: {exc})") from None
    except (OSError, ValueError) as exc:
        raise InputError(str(p), "", f"cannot read file ({exc})") from None


def read_csv(path: str | Path) -> list[dict]:
    return list(_csv_rows(path, raw=False))


def iter_csv(path: str | Path) -> Iterator[dict]:
    """read_csv as a stream (bounded memory on large files); a broken file raises when reached."""
    return _csv_rows(path, raw=False)


def count_rows(path: str | Path) -> int:
    """Data rows of the file, read once without building dicts; raises read_csv's InputErrors, and one for a
    run_id that appears twice (a row measured twice, or two runs under one name: either corrupts the figures)."""
    it = _csv_rows(path, raw=True)
    header = next(it)
    col = header.index("run_id") if "run_id" in header else None
    seen: dict[str, int] = {}
    n = 0
    for n, cells in enumerate(it, start=1):
        rid = cells[col].strip() if col is not None and col < len(cells) else ""
        if not rid:
            continue
        if rid in seen:
            raise InputError(
                str(path),
                "run_id",
                f"'{rid}' appears on lines {seen[rid]} and {n + 1}: run ids must "
                "be unique (a row measured twice, or two runs under one name?)",
            )
        seen[rid] = n + 1
    return n


def validate_file(path: str | Path, consts=None) -> Report:
    count_rows(path)  # a broken file or a repeated run_id fails before any prediction
    return validate_rows(iter_csv(path), Path(path).resolve().parent, consts, dataset=Path(path).name)


def shipped_sets() -> list[Path]:
    """The measured-run files shipped with perfmodel: validation/runs.csv (NVIDIA's tables) and the
    independent sets in validation/independent/*.csv."""
    from perfmodel.specs.specfile import data_dir

    root = data_dir("validation")
    return [root / "runs.csv", *sorted((root / "independent").glob("*.csv"))]


def merge(reports: list[Report]) -> Report:
    """One report over several files (rows in file order)."""
    return Report(
        sum(r.given for r in reports),
        [x for r in reports for x in r.results],
        [u for r in reports for u in r.unsupported],
        [w for r in reports for w in r.warnings],
    )
