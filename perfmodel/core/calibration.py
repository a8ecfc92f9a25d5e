"""The cost model's few global constants (perfmodel/calibration.toml), with their meaning and source.

The constants in use come from the shipped file unless a calibration file made by `perfmodel calibrate`
is active (`use(path)`: every predicting command's `--calibration FILE`). A calibration file has the
shape of calibration.toml (one table per constant: value, prior, fit, unit, meaning, source) plus a
`[provenance]` table; loading one checks every constant is present, finite and inside its BOUNDS.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path

from perfmodel.errors import InputError

_FILE = Path(__file__).resolve().parents[1] / "calibration.toml"  # perfmodel/calibration.toml

# Physical bounds of the fitted constants (validation/calibrate.py and `perfmodel calibrate` search inside
# them; a calibration file with a value outside is refused): fractions in [0, 1], the sustained tensor
# fraction no lower than 0.3 of MAMF, load imbalance >= 1 (max/mean), sizes and times positive and below
# where they would dominate every kernel or step.
BOUNDS: dict[str, tuple[float, float]] = {
    "tensor_sustained": (0.3, 1.0),
    "tp_overlap": (0.0, 1.0),
    "ep_overlap": (0.0, 1.0),
    "kernel_fixed_s": (5e-7, 5e-5),
    "graphed_kernel_s": (1e-6, 5e-5),
    "step_host_s": (1e-3, 0.5),
    "moe_layer_overhead_s": (0.0, 0.01),
    "moe_permute_bytes": (2.0, 24.0),
}
# constants an older calibration file may still carry, and where the quantity lives now
RETIRED = {
    "gemm_k_half": "the GEMM efficiency shape is measured per GPU generation (hardware/kernels/, efficiency.gemm_k_half)",
    "gemm_mn_half": "the GEMM efficiency shape is measured per GPU generation (hardware/kernels/, efficiency.gemm_mn_half)",
    "step_overhead_s": "the per-step overhead is the wait for the slowest rank's host work, step_host_s x H_N over the "
    "job's N GPUs (core/predict.py step_overhead), no longer one constant a step",
    "moe_imbalance": "real routing's imbalance follows from the stack's moe_load_balancing and the layout's ep "
    "(parallel/ep.py routing_imbalance)",
}
# not fitted, but fractions all the same
_FRACTIONS = ("tp_overlap", "ep_overlap", "cp_overlap", "dp_overlap", "pp_overlap")
PROVENANCE = "provenance"
BANDS = "bands"  # a calibrate file's own 80% bands (perfmodel/analysis/uncertainty.py groups)


@dataclass(frozen=True)
class Constants:
    tensor_sustained: float
    kernel_fixed_s: float
    graphed_kernel_s: float
    attention_keys_half: float
    step_host_s: float
    tp_overlap: float
    ep_overlap: float
    cp_overlap: float
    dp_overlap: float
    pp_overlap: float
    moe_layer_overhead_s: float
    moe_permute_bytes: float
    fp8_cast_bytes: float
    reserved_bytes: float

    def with_(self, **kw: float) -> "Constants":
        return replace(self, **kw)


def names() -> list[str]:
    return [f.name for f in fields(Constants)]


def bounds(name: str) -> tuple[float, float]:
    """The search / acceptance interval of a constant (fractions [0, 1]; others [0, inf) unless BOUNDS says)."""
    return BOUNDS.get(name, (0.0, 1.0) if name in _FRACTIONS else (0.0, math.inf))


_active: Path | None = None


def use(path: str | Path | None) -> Path | None:
    """Make a calibration file the source of `constants()` for every prediction that follows (None: the
    shipped calibration.toml); returns the one in use before. The file is checked first: a bad one raises
    InputError and changes nothing."""
    global _active
    before = _active
    p = None if path is None else Path(path).resolve()
    if p is not None:
        load_table(str(p))
    _active = p
    return before


def active_file() -> Path:
    return _active or _FILE


def shipped_file() -> Path:
    return _FILE


@lru_cache(maxsize=16)
def load_table(path: str) -> dict[str, dict]:
    """A calibration file as {constant: table} (plus `provenance`), every constant checked."""
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "", "calibration file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, "", f"cannot read calibration file ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, "", f"not valid TOML ({exc})") from None
    for n, why in RETIRED.items():
        if n in doc:
            raise InputError(path, n, f"no longer a constant: {why}; run `perfmodel calibrate` again")
    for n in names():
        t = doc.get(n)
        if not isinstance(t, dict) or "value" not in t:
            raise InputError(path, n, "missing (a calibration file lists every constant with its value)")
        v = t["value"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InputError(path, f"{n}.value", f"must be a finite number (got {v!r})")
        lo, hi = bounds(n)
        if not lo <= v <= hi:
            raise InputError(path, f"{n}.value", f"outside its bounds [{lo:g}, {hi:g}] (got {v:g})")
    bands = doc.get(BANDS)
    if bands is not None:
        if not isinstance(bands, dict) or "all" not in bands:
            raise InputError(path, BANDS, 'needs an "all" group (uncertainty.fit writes one)')
        for g, d in bands.items():
            lo, hi = (d.get("low"), d.get("high")) if isinstance(d, dict) else (None, None)
            ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (lo, hi))
            if not ok or not 0 < lo <= 1 <= hi or not isinstance(d.get("rows"), int):  # type: ignore[operator]
                raise InputError(path, f"{BANDS}.{g}", "needs rows (integer) and low <= 1 <= high (positive numbers)")
    return doc


def forget() -> None:
    """Drop the cached calibration files (one was just written or edited)."""
    load_table.cache_clear()
    _constants.cache_clear()


def table() -> dict[str, dict]:
    """The active calibration file's tables (shipped calibration.toml unless `use` chose another)."""
    return load_table(str(active_file()))


def shipped_table() -> dict[str, dict]:
    return load_table(str(_FILE))


@lru_cache(maxsize=16)
def _constants(path: str) -> Constants:
    t = load_table(path)
    return Constants(**{n: float(t[n]["value"]) for n in names()})


def constants() -> Constants:
    """The constants every prediction uses by default: the active calibration file's values."""
    return _constants(str(active_file()))


def load_constants(path: str | Path) -> Constants:
    """The constants of a calibration file (checked)."""
    return _constants(str(Path(path).resolve()))


def priors() -> Constants:
    """Every constant at its physically motivated prior (calibration.toml `prior`), the fit's neutral start."""
    t = shipped_table()
    return Constants(**{n: float(t[n].get("prior", t[n]["value"])) for n in names()})


def fitted_names() -> list[str]:
    return [k for k in names() if table()[k].get("fit")]
