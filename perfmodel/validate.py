"""Hold predictions against measured runs (CSV schema of validation/README.md).

For each row: predicted vs measured tokens/s/GPU and the signed error (pred - meas) / meas. Summary:
MAPE, median and p90 absolute error, worst rows, bias per group, coverage with every unsupported row
and its reason. Rows measured far below their prediction get the most likely cause from the breakdown.
"""
from __future__ import annotations

import csv
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from .errors import InputError, did_you_mean
from .hardware import PRECISIONS, HardwareSpec, load_hardware
from .layout import Layout, LayoutGrid, check_layout
from .model import ModelSpec, load_model
from .predict import Options, Prediction, predict_grid

REQUIRED = ("model", "hardware", "gpus", "precision", "seq_len", "global_batch", "tokens_per_s_per_gpu")
CALIBRATION_SPLITS = 4


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
    error: float            # signed relative error of the prediction
    calibration: bool
    moe: bool
    verdict: str
    breakdown: dict[str, float]
    mfu: float
    fits: bool


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
        return {"rows": len(rs), "mape": float(ape.mean()), "median_ape": float(np.median(ape)),
                "p90_ape": float(np.percentile(ape, 90)), "bias": float(np.mean([r.error for r in rs]))}

    def by(self, key: str) -> dict[str, dict]:
        groups: dict[str, list[RowResult]] = {}
        for r in self.results:
            k = {"hardware": r.hardware, "model": r.model, "source": r.source, "precision": r.precision,
                 "kind": "moe" if r.moe else "dense", "split": "calibration" if r.calibration else "held-out"}[key]
            groups.setdefault(k, []).append(r)
        return {k: self.stats(v) for k, v in sorted(groups.items())}


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
    except (OSError, ValueError):        # a name the filesystem can't take: resolve() reports it
        pass
    return ref


_COLUMN_OF = {"gbs": "global_batch", "seq": "seq_len", "mbs": "micro_batch"}   # layout field -> CSV column


def row_inputs(row: dict, base: Path) -> tuple[ModelSpec, HardwareSpec, Layout, Options]:
    """One CSV row -> (model, hardware, layout, options); raises ValueError/InputError with the reason."""
    for k in REQUIRED:
        if not _cell(row, k):
            raise ValueError(f"{k}: empty")
    _float(row, "tokens_per_s_per_gpu")      # named here, so the caller's float() can't fail unexplained
    model = load_model(_resolve_ref(_cell(row, "model"), base))
    hw = load_hardware(_resolve_ref(_cell(row, "hardware"), base))
    prec = _cell(row, "precision")
    if prec not in PRECISIONS:
        raise ValueError(f"precision: unknown precision {_short(prec)}{did_you_mean(prec, PRECISIONS)}; "
                         f"one of {', '.join(PRECISIONS)}")
    tp = _int(row, "tp", 1)
    etp_default = tp if model.is_moe else 1      # Megatron-Core: expert TP defaults to TP
    rec = _cell(row, "recompute") or "none"
    lay = Layout(gpus=_int(row, "gpus"), gbs=_int(row, "global_batch"), seq=_int(row, "seq_len"),
                 tp=tp, pp=_int(row, "pp", 1), vp=_int(row, "vp", 1), cp=_int(row, "cp", 1),
                 ep=_int(row, "ep", 1), etp=_int(row, "etp", etp_default) if model.is_moe else 1,
                 mbs=_int(row, "micro_batch", 1), fsdp=bool(_int(row, "fsdp", 0)),
                 recompute=rec)  # type: ignore[arg-type]
    positive = all(getattr(lay, f) >= 1 for f in ("gpus", "tp", "pp", "cp", "ep", "etp"))   # else check_layout says
    if model.is_moe and positive and (lay.tp * lay.cp * lay.dp) % (lay.ep * lay.etp):
        lay = Layout(**{**lay.__dict__, "etp": 1})
    a = model.attention
    try:
        check_layout(lay, model.num_layers, a.num_heads, a.num_kv_heads, model.moe.num_experts if model.moe else None)
    except InputError as exc:            # name the CSV column where it differs from the layout field
        if exc.where == "layout" and exc.field in _COLUMN_OF:
            raise InputError("layout", f"{exc.field} (column {_COLUMN_OF[exc.field]})", exc.reason) from None
        raise
    routing = _cell(row, "moe_routing")
    opts = Options(precision=prec, routing="balanced" if routing in ("balanced-dropless", "token-drop") else "real")
    hw.peak(prec)
    return model, hw, lay, opts


def _predict_row(model, hw, lay: Layout, opts: Options, recompute_published: bool) -> tuple[Prediction, str]:
    """Predict a measured row. When the source does not say which recompute it used, the run must have
    fit in HBM: take the lightest recompute mode (none, selective, full) whose predicted memory fits."""
    if recompute_published:
        return predict_grid(model, hw, LayoutGrid.of(lay), opts), ""
    modes = ("none", "selective", "full")
    grid = LayoutGrid.from_layouts([Layout(**{**lay.__dict__, "recompute": r}) for r in modes])  # type: ignore[arg-type]
    p = predict_grid(model, hw, grid, opts)
    fits = [i for i in range(3) if p.fits[i]]
    i = fits[0] if fits else 2
    one = predict_grid(model, hw, grid.take(np.array([i])), opts)
    return one, ("" if i == 0 else modes[i])


def likely_cause(p: Prediction) -> str:
    """The largest non-compute term of the breakdown: where a slow real run most likely lost time."""
    b = p.row(0)["breakdown_s"]
    comm = {k: v for k, v in b.items() if k not in ("gemm", "attention", "memory_bound")}
    k = max(comm, key=comm.get)
    return f"largest overhead in the prediction: {k} ({comm[k] / p.step_time_s[0]:.0%} of the step)"


def validate_rows(rows: list[dict], base: Path, consts=None, progress: Callable[[int], None] | None = None) -> Report:
    results, unsupported = [], []
    for i, row in enumerate(rows):
        rid = (row.get("run_id") or f"row{i + 2}").strip()
        try:
            model, hw, lay, opts = row_inputs(row, base)
            if consts is not None:
                opts = Options(opts.precision, opts.attention, opts.routing, consts)
            measured = float(row["tokens_per_s_per_gpu"])
            if not math.isfinite(measured) or measured <= 0:
                raise ValueError("tokens_per_s_per_gpu: must be a positive number")
            p, inferred = _predict_row(model, hw, lay, opts, recompute_published=bool((row.get("recompute") or "").strip()))
        except (InputError, ValueError, KeyError) as exc:
            unsupported.append({"run_id": rid, "row": i + 2, "reason": str(exc)})
            continue
        pred = float(p.tokens_per_s_per_gpu[0])
        err = (pred - measured) / measured
        verdict = "ok" if not inferred else f"recompute={inferred} inferred (no-recompute layout does not fit in HBM)"
        note = f"; {verdict}" if inferred else ""
        if err > 0.25:
            verdict = "underperforms prediction; " + likely_cause(p) + note
        elif err < -0.25:
            verdict = "faster than predicted" + note
        results.append(RowResult(rid, model.id, hw.id, opts.precision, (row.get("source") or "").split(" (")[0],
                                 lay.gpus, measured, pred, err, calibration_split(rid), model.is_moe, verdict,
                                 p.row(0)["breakdown_s"], float(p.mfu[0]), bool(p.fits[0])))
        if progress:
            progress(i)
    return Report(len(rows), results, unsupported)


def read_csv(path: str | Path) -> list[dict]:
    p = Path(path)
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
            if missing:
                raise InputError(str(p), ", ".join(missing), "required column(s) missing")
            return list(reader)
    except InputError:
        raise
    except UnicodeDecodeError as exc:
        raise InputError(str(p), "", f"not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise InputError(str(p), "", f"not valid CSV (line {reader.line_num}: {exc})") from None
    except (OSError, ValueError) as exc:
        raise InputError(str(p), "", f"cannot read file ({exc})") from None


def validate_file(path: str | Path, consts=None) -> Report:
    return validate_rows(read_csv(path), Path(path).resolve().parent, consts)
