"""Software profiles: a named software stack as a few overrides of the global constants.

The cost model's global constants (perfmodel/calibration.toml) describe "the" software: how much of the
best-shape tensor-core rate kernels sustain (tensor_sustained), how much TP / EP communication is hidden
(tp_overlap, ep_overlap), the fixed cost per kernel (kernel_fixed_s, which CUDA graphs cut), the FP8
cast traffic (fp8_cast_bytes) and the per-step overhead. A profile (perfmodel/profiles.toml) overrides a
few of them: `Constants.with_(**overrides)`. The profile `default` overrides nothing, so it is exactly
the calibrated constants, and `validate` and the accuracy figure always use it. Profiles are a what-if
tool ("what if the NeMo 25.11 stack ran this layout"), never a per-row correction.

Two kinds besides `default`:
- release profiles: ONE constant (tensor_sustained) fitted on every measured row of one software release
  in validation/runs.csv (`software` column), by least squares on log(predicted / measured) over a
  bounded golden-section search (Kiefer 1953). The fit is in-sample on that release's rows and is
  reported with the MAPE of the default and of the release's own profile; validation/fit_profiles.py
  recomputes every stored figure.
- what-if profiles: a physical bound or a switch (CUDA graphs, overlap off, fused FP8 casts) with its
  source; no measured row behind them, and they say so.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from .calibration import Constants, constants
from .errors import InputError, did_you_mean

PROFILES_FILE = Path(__file__).with_name("profiles.toml")
DEFAULT = "default"
KINDS = ("calibrated", "release", "what-if")
FIT_PARAM = "tensor_sustained"
FIT_BOUNDS = (0.40, 1.15)        # tensor_sustained x MAMF efficiency stays below peak (MAMF <= ~0.87)
# constants that are fractions of something and must stay in [0, 1]
_FRACTIONS = ("tp_overlap", "ep_overlap", "cp_overlap", "dp_overlap", "pp_overlap")


@dataclass(frozen=True)
class Profile:
    name: str
    kind: str
    description: str
    overrides: dict[str, float]
    evidence: dict[str, Any] = field(default_factory=dict)
    series: str = ""
    release: str = ""            # the `software` label (before " (") of its rows in runs.csv
    date: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def consts(self) -> Constants:
        """The calibrated constants with this profile's overrides (default: the very same object)."""
        return constants().with_(**self.overrides) if self.overrides else constants()

    def to_dict(self) -> dict[str, Any]:
        base = constants()
        return {"name": self.name, "kind": self.kind, "description": self.description, "series": self.series,
                "release": self.release, "date": self.date, "aliases": list(self.aliases),
                "overrides": {k: {"value": v, "calibrated": getattr(base, k)} for k, v in self.overrides.items()},
                "evidence": self.evidence}


def _check_overrides(name: str, over: dict[str, Any]) -> dict[str, float]:
    known = [f.name for f in fields(Constants)]
    out: dict[str, float] = {}
    for k, v in over.items():
        if k not in known:
            raise InputError(str(PROFILES_FILE), f"{name}.overrides.{k}", f"unknown constant{did_you_mean(k, known)}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise InputError(str(PROFILES_FILE), f"{name}.overrides.{k}", f"must be a finite number >= 0 (got {v!r})")
        if k in _FRACTIONS and v > 1:
            raise InputError(str(PROFILES_FILE), f"{name}.overrides.{k}", f"is a fraction, must be <= 1 (got {v})")
        out[k] = float(v)
    return out


@lru_cache(maxsize=4)
def load_profiles(path: str = str(PROFILES_FILE)) -> dict[str, Profile]:
    """profiles.toml -> {name: Profile}, in file order; `default` must exist and override nothing."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(str(p), "", f"cannot read profiles ({exc})") from None
    out: dict[str, Profile] = {}
    for name, t in doc.items():
        if not isinstance(t, dict):
            raise InputError(str(p), name, "each profile is a table")
        kind = t.get("kind", "what-if")
        if kind not in KINDS:
            raise InputError(str(p), f"{name}.kind", f"one of {', '.join(KINDS)} (got {kind!r})")
        out[name] = Profile(name=name, kind=kind, description=str(t.get("description", "")),
                            overrides=_check_overrides(name, dict(t.get("overrides", {}))),
                            evidence=dict(t.get("evidence", {})), series=str(t.get("series", "")),
                            release=str(t.get("release", "")), date=str(t.get("date", "")),
                            aliases=tuple(t.get("aliases", ())))
    if DEFAULT not in out or out[DEFAULT].overrides:
        raise InputError(str(p), DEFAULT, "the default profile must exist and override nothing")
    return out


def profile_names() -> list[str]:
    return list(load_profiles())


def get_profile(name: str | None) -> Profile:
    """A profile by name or alias; an unknown name is an InputError with the closest match."""
    profs = load_profiles()
    if name is None or name == "":
        return profs[DEFAULT]
    if name in profs:
        return profs[name]
    for p in profs.values():
        if name in p.aliases:
            return p
    choices = list(profs) + [a for p in profs.values() for a in p.aliases]
    raise InputError("--profile", name, f"unknown profile{did_you_mean(name, choices)}; "
                                        f"`perfmodel profiles` lists them ({', '.join(profs)})")


def release_profiles(series: str | None = None) -> list[Profile]:
    """Release profiles by date (optionally of one series)."""
    ps = [p for p in load_profiles().values() if p.kind == "release" and (series is None or p.series == series)]
    return sorted(ps, key=lambda p: (p.date, p.release))


# ---- releases in the measured rows --------------------------------------------------------------------

def release_of(row: dict) -> str:
    """`software` column up to the container note: 'DGXC v24.11.1 (NeMo 24.09)' -> 'DGXC v24.11.1'."""
    return (row.get("software") or "").split(" (")[0].strip()


def rows_of_release(rows: Iterable[dict], release: str) -> list[dict]:
    return [r for r in rows if release_of(r) == release]


CONFIG_COLUMNS = ("model", "hardware", "gpus", "precision", "seq_len", "global_batch", "micro_batch", "tp", "pp",
                  "vp", "cp", "ep", "etp", "fsdp", "recompute", "moe_routing")


def config_key(row: dict) -> tuple:
    """The run's configuration without its software: rows with equal keys are like-for-like."""
    # fsdp: empty = not published; FSDP is opt-in in Megatron/NeMo, so empty means 0 (validation/README.md)
    return tuple((row.get(k) or "").strip() or ("0" if k == "fsdp" else "") for k in CONFIG_COLUMNS)


# ---- fitting one constant on one release -----------------------------------------------------------

def log_errors(rows: list[dict], base: Path, consts: Constants) -> tuple[np.ndarray, list]:
    """log(predicted / measured) of every predictable row, and the validate results."""
    from .validate import validate_rows
    rep = validate_rows(rows, base, consts)
    return np.log(np.array([r.predicted / r.measured for r in rep.results])), rep.results


def golden_min(f: Callable[[float], float], lo: float, hi: float, tol: float = 1e-4) -> float:
    """Minimise a unimodal f on [lo, hi] (golden-section search, Kiefer 1953)."""
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (a + b) / 2


def fit_release(rows: list[dict], base: Path, param: str = FIT_PARAM,
                bounds: tuple[float, float] = FIT_BOUNDS) -> dict[str, Any]:
    """Fit `param` on these rows: minimise the mean squared log(predicted / measured). Returns the value
    and the default vs own-profile errors (in-sample)."""
    c0 = constants()
    loss = lambda v: float(np.mean(log_errors(rows, base, c0.with_(**{param: v}))[0] ** 2))
    v = round(golden_min(loss, *bounds), 4)
    e0, res0 = log_errors(rows, base, c0)
    e1, _ = log_errors(rows, base, c0.with_(**{param: v}))
    ape = lambda e: float(np.mean(np.abs(np.expm1(e))))
    return {"fitted": param, "value": v, "calibrated": getattr(c0, param), "rows": len(res0),
            "at_bound": bool(min(abs(v - bounds[0]), abs(v - bounds[1])) < 1e-3),
            "mape_default": ape(e0), "mape_own": ape(e1),
            "measured_over_default": float(np.exp(-np.mean(e0))),
            "hardware": sorted({r.hardware for r in res0})}


# ---- the release series ----------------------------------------------------------------------------

def _filter(rows: list[dict], model: str | None, hardware: str | None, precision: str | None,
            gpus: int | None) -> list[dict]:
    out = []
    for r in rows:
        if model and (r.get("model") or "").strip() != model:
            continue
        if hardware and (r.get("hardware") or "").strip() != hardware:
            continue
        if precision and (r.get("precision") or "").strip() != precision:
            continue
        if gpus and (r.get("gpus") or "").strip() != str(gpus):
            continue
        out.append(r)
    return out


SERIES_PREFIX = {"DGXC": "dgxc", "NeMo": "nemo"}      # release label prefix -> series name


def release_profile_name(release: str) -> str | None:
    """'DGXC v24.11.1' -> 'dgxc-24.11.1', 'NeMo 26.02.01' -> 'nemo-26.02.01'; papers, reports -> None."""
    head, _, ver = release.partition(" ")
    if head not in SERIES_PREFIX or not ver or not ver.lstrip("v")[:1].isdigit():
        return None
    return f"{SERIES_PREFIX[head]}-{ver.lstrip('v')}"


def release_series(rows: list[dict], base: Path, series: str | None = None, model: str | None = None,
                   hardware: str | None = None, precision: str | None = None,
                   gpus: int | None = None) -> dict[str, Any]:
    """Per software release of a series (DGXC recipes, NeMo containers), by date: its rows (after the
    filters), measured / default-predicted tokens/s/GPU (geometric mean), MAPE with the default and with
    the release's own profile (where it has one), the like-for-like measured speedup over the previous
    release of the series that ran the same configuration (model, hardware, GPUs, precision, batch,
    layout), and every row (release, layout, measured, both predictions, MFU in the full-attention
    convention the DGXC recipes use)."""
    from .validate import validate_rows
    sel = _filter(rows, model, hardware, precision, gpus)
    profs = load_profiles()
    c0 = constants()
    groups: dict[str, list[dict]] = {}
    for r in sel:
        rel = release_of(r)
        name = release_profile_name(rel)
        if name is not None and (series is None or name.split("-")[0] == series):
            groups.setdefault(rel, []).append(r)
    order = sorted(groups, key=lambda k: (min((r.get("date") or "").strip() for r in groups[k]), k))
    out_rel: list[dict[str, Any]] = []
    out_rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, tuple], tuple[str, float]] = {}      # (series, config) -> (release, measured)
    for rel in order:
        rr = groups[rel]
        name = release_profile_name(rel) or ""
        ser = name.split("-")[0]
        prof = profs.get(name)
        d = validate_rows(rr, base, c0).results
        o = {r.run_id: r for r in validate_rows(rr, base, prof.consts).results} if prof else {}
        ratios = [r.measured / r.predicted for r in d]
        like: list[float] = []
        by_id = {(row.get("run_id") or "").strip(): row for row in rr}
        for r in d:
            row = by_id.get(r.run_id, {})
            prev = seen.get((ser, config_key(row)))
            if prev is not None and prev[0] != rel:
                like.append(r.measured / prev[1])
            own = o.get(r.run_id)
            full = _full_over_causal(r.model, int((row.get("seq_len") or "0").strip() or 0))
            out_rows.append({"release": rel, "profile": name if prof else None, "date": (row.get("date") or "").strip(),
                             "run_id": r.run_id, "model": r.model, "hardware": r.hardware, "gpus": r.gpus,
                             "precision": r.precision, "layout": _layout_text(row), "measured": r.measured,
                             "source_mfu": _float_or_none(row.get("source_mfu")),
                             "measured_mfu_full": r.mfu * r.measured / r.predicted * full,
                             "predicted_default": r.predicted, "predicted_own": own.predicted if own else None,
                             "mfu_full_default": r.mfu * full, "mfu_full_own": own.mfu * full if own else None})
        for r in d:
            seen[(ser, config_key(by_id.get(r.run_id, {})))] = (rel, r.measured)
        ape = lambda xs: float(np.mean(np.abs(xs))) if len(xs) else None
        out_rel.append({
            "release": rel, "profile": name if prof else None, "series": ser,
            "date": min((r.get("date") or "").strip() for r in rr),
            "rows": len(d), "hardware": sorted({r.hardware for r in d}),
            "measured_over_default": float(np.exp(np.mean(np.log(ratios)))) if ratios else None,
            "mape_default": ape([r.error for r in d]),
            "mape_own": ape([(o[r.run_id].predicted - r.measured) / r.measured for r in d if r.run_id in o]) if o else None,
            "fitted": dict(prof.overrides) if prof else {},
            "like_for_like_pairs": len(like),
            "like_for_like_speedup": float(np.exp(np.mean(np.log(like)))) if like else None,
        })
    return {"filters": {"series": series, "model": model, "hardware": hardware, "precision": precision, "gpus": gpus},
            "releases": out_rel, "rows": out_rows,
            "report_points": report_points(series, model, hardware, precision, gpus)}


def report_points(series: str | None = None, model: str | None = None, hardware: str | None = None,
                  precision: str | None = None, gpus: int | None = None) -> list[dict[str, Any]]:
    """Figures of the report's text with no row in runs.csv but a what-if profile solved for them
    (`evidence.target` in profiles.toml, e.g. GPT-3 175B on 128 H100 at 34% MFU in Jan 2024), matching the
    filters: the figure, and the default's and the profile's prediction of that layout (MFU in the
    full-attention convention the report uses)."""
    from .hardware import load_hardware
    from .layout import Layout, LayoutGrid
    from .model import load_model
    from .predict import Options, predict_grid
    out = []
    for p in load_profiles().values():
        t = p.evidence.get("target")
        if not isinstance(t, dict):
            continue
        if ((series and not p.name.startswith(series + "-")) or (model and t["model"] != model)
                or (hardware and t["hardware"] != hardware) or (precision and t["precision"] != precision)
                or (gpus and int(t["gpus"]) != gpus)):
            continue
        m, hw = load_model(t["model"]), load_hardware(t["hardware"])
        lay = Layout(gpus=int(t["gpus"]), gbs=int(t["gbs"]), seq=int(t["seq"]), tp=int(t.get("tp", 1)),
                     pp=int(t.get("pp", 1)), vp=int(t.get("vp", 1)), cp=int(t.get("cp", 1)))
        pred = {k: predict_grid(m, hw, LayoutGrid.of(lay), Options(t["precision"], "full", consts=c))
                for k, c in (("default", constants()), ("own", p.consts))}
        out.append({"label": t["label"], "profile": p.name, "date": t["date"], "model": m.id, "hardware": hw.id,
                    "gpus": lay.gpus, "precision": t["precision"],
                    "layout": f"tp{lay.tp} pp{lay.pp} vp{lay.vp} gbs{lay.gbs}", "measured_mfu_full": float(t["mfu_full"]),
                    **{f"predicted_{k}": float(v.tokens_per_s_per_gpu[0]) for k, v in pred.items()},
                    **{f"mfu_full_{k}": float(v.mfu[0]) for k, v in pred.items()}})
    return out


def _full_over_causal(model_id: str, seq: int) -> float:
    """MFU in the full-attention convention (DGXC recipes, older NeMo pages) over the causal one that
    validate computes: the ratio of model FLOPs per token (counts.flops_per_token)."""
    from .counts import flops_per_token
    from .model import load_model
    m = load_model(model_id)
    return float(flops_per_token(m, seq, "full")) / float(flops_per_token(m, seq, "causal"))


def _float_or_none(v: Any) -> float | None:
    try:
        return float(str(v).strip())
    except (TypeError, ValueError):
        return None


def _layout_text(row: dict) -> str:
    parts = []
    for k in ("tp", "pp", "vp", "cp", "ep"):
        v = (row.get(k) or "").strip()
        if v and v != "1":
            parts.append(f"{k}{v}")
    mbs = (row.get("micro_batch") or "").strip()
    parts.append(f"gbs{(row.get('global_batch') or '').strip()}" + (f" mbs{mbs}" if mbs else ""))
    return " ".join(parts)
