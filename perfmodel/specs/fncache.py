"""sympy formulas as numpy functions without importing sympy at run time.

`numpy_fn(name, key, build)` returns `sympy.lambdify(S, build(), "numpy")`, the formula (counts.py)
staying the single source of truth. The generated source is kept in a user cache directory, so a later
process execs it (tens of microseconds) instead of importing sympy (about 0.2 s) and lambdifying again.

Cache key: sha256 of `name`, `key` (the formula's inputs, e.g. the model spec's JSON), the source of
the modules that define the formulas (counts.py, model.py: any change to a formula or a derived model
property invalidates every entry), the sympy release and the numpy version. Each entry also stores the
function's values at a few sequence lengths, computed by the lambdified function when it was written;
a loaded entry that does not reproduce them bit for bit (edited, truncated, another numpy) is ignored
and rewritten. Directory: $PERFMODEL_CACHE_DIR, else $XDG_CACHE_HOME/perfmodel, else ~/.cache/perfmodel;
PERFMODEL_CACHE_DIR=off (or an unwritable directory) lambdifies in memory every time, with the same
results.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib.util
import json
import os
import tempfile
import types
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:
    import sympy as sp

_PKG = Path(__file__).resolve().parent
_FORMULA_SOURCES = ("counts.py", "model.py")
CHECK_POINTS = (1.0, 2.0, 127.0, 1000.0, 4096.0, 8191.0, 131072.0)  # sequence lengths the check evaluates


def cache_dir() -> Path | None:
    env = os.environ.get("PERFMODEL_CACHE_DIR")
    if env is not None:
        return None if env.lower() in ("", "0", "off", "none") else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "perfmodel"


@lru_cache(maxsize=1)
def _salt() -> str | None:
    """Hash of what the generated code depends on besides its inputs; None (no caching) when the
    formula sources cannot be read (a zipped or byte-code-only install)."""
    h = hashlib.sha256()
    try:
        for name in _FORMULA_SOURCES:
            h.update((_PKG / name).read_bytes())
        spec = importlib.util.find_spec("sympy")  # the sympy release, without importing sympy
        release = Path(spec.origin).with_name("release.py") if spec and spec.origin else None
        h.update(release.read_bytes() if release is not None and release.is_file() else b"?")
    except (OSError, ImportError, ValueError):
        return None
    h.update(np.__version__.encode())
    return h.hexdigest()


def _code_names(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _code_names(c)
    return out


def _exec(source: str, names: list[str]) -> Callable:
    ns: dict = {"__builtins__": builtins, **{n: getattr(np, n) for n in names}}
    exec(compile(source, "<perfmodel.specs.fncache>", "exec"), ns)
    return ns["_lambdifygenerated"]


def _check(fn: Callable) -> list[float]:
    return [float(np.asarray(fn(np.float64(x)), dtype=float)) for x in CHECK_POINTS]


def _load(path: Path, digest: str) -> Callable | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        if entry.get("key") != digest:
            return None
        fn = _exec(entry["source"], entry["names"])
        return fn if _check(fn) == entry["check"] else None
    except Exception:  # unreadable, malformed or stale: ignore it, lambdify instead
        return None


def _store(path: Path, digest: str, fn: Callable) -> None:
    import inspect

    try:
        source = inspect.getsource(fn)
        code = compile(source, "<perfmodel.specs.fncache>", "exec")
    except (OSError, TypeError, SyntaxError):  # no source to keep: stay in memory
        return
    names = sorted(n for n in _code_names(code) - {"_lambdifygenerated"} if not hasattr(builtins, n))
    # only a function that needs nothing but numpy names can be rebuilt from its source faithfully
    if not all(fn.__globals__.get(n) is getattr(np, n, None) for n in names):
        return
    check = _check(fn)
    if _check(_exec(source, names)) != check:
        return
    entry = json.dumps({"key": digest, "source": source, "names": names, "check": check})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    except OSError:  # read-only home, full disk: stay in memory
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(entry)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old entry or the new one
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def numpy_fn(
    name: str, key: str, build: Callable[[], "tuple[sp.Symbol, sp.Expr]"]
) -> Callable[[np.ndarray], np.ndarray]:
    """`lambdify(symbol, expr, "numpy")` of `build() = (symbol, expr)`, the formula `name` with inputs `key` (a
    string that fixes every input of `build`), from the disk cache when an entry checks out."""
    d, salt = cache_dir(), _salt()
    path, digest = None, ""
    if d is not None and salt is not None:
        digest = hashlib.sha256(f"{salt}\0{name}\0{key}".encode()).hexdigest()
        path = d / "lambdify" / f"{digest[:32]}.json"
    if path is not None:
        fn = _load(path, digest)  # None when absent, unreadable or not checking out
        if fn is not None:
            return fn
    import sympy as sp

    symbol, expr = build()
    fn = sp.lambdify(symbol, expr, modules="numpy")
    if path is not None:
        _store(path, digest, fn)
    return fn
