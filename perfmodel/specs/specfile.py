"""Reading spec files: TOML (or JSON) -> validated, frozen pydantic models.

Every number in a catalog file may be written either bare (`x = 1.0`) or with its source
(`x = {value = 1.0, source = "..."}`); the loader keeps the values and collects the sources
into a flat `{dotted.field: source}` map so `perfmodel show` can print them.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from perfmodel.errors import InputError, did_you_mean

M = TypeVar("M", bound=BaseModel)

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # perfmodel/


def display_path(path: str | Path) -> str:
    """A spec file's path as the text commands print it: a file of a shipped catalog folder by its place in
    the catalog (`hardware/h100-sxm.toml`, in a checkout or an installed wheel alike), else relative to the
    working directory where it lies below it, else as given. (The --json outputs keep the absolute path.)"""
    if not str(path):
        return str(path)
    try:
        r = Path(path).resolve()
    except OSError:
        return str(path)
    for kind in CATALOG_KINDS:
        try:
            root = data_dir(kind).resolve()
        except InputError:
            continue
        if r.is_relative_to(root) and r != root:
            return str(Path(kind) / r.relative_to(root))
    cwd = Path.cwd().resolve()
    if r.is_relative_to(cwd) and r != cwd:
        return str(r.relative_to(cwd))
    return str(path)


CATALOG_KINDS = ("hardware", "models", "stacks", "validation")


def data_dir(kind: str) -> Path:
    """Catalog folder `kind` (hardware, models, validation): the repo's top level in a
    checkout or editable install, `perfmodel/_data/` inside an installed wheel."""
    for cand in (PACKAGE_DIR.parent / kind, PACKAGE_DIR / "_data" / kind):
        if cand.is_dir():
            return cand
    raise InputError(kind, "", f"catalog folder '{kind}' not found next to the package")


def read_document(path: Path) -> dict[str, Any]:
    """Parse a TOML or JSON file into a dict; syntax errors name the file and line."""
    where = str(path)
    try:
        with path.open("rb") as fh:  # at most MAX_SPEC_BYTES + 1: a huge file or /dev/zero is refused, not read
            data = fh.read(MAX_SPEC_BYTES + 1)
    except FileNotFoundError:
        raise InputError(where, "", "file not found") from None
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL byte
        raise InputError(where, "", f"cannot read file ({exc})") from None
    if len(data) > MAX_SPEC_BYTES:
        raise InputError(where, "", f"larger than {MAX_SPEC_BYTES // 2**20} MiB: not a spec file (specs are a few kB)")
    try:
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # universal newlines, as read_text
    except UnicodeDecodeError as exc:
        raise InputError(where, "", f"not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise InputError(where, "", "file is empty")
    kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
    try:
        doc = json.loads(text) if kind == "JSON" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise InputError(where, "", f"not valid {kind}: {exc}") from None
    except RecursionError:
        raise InputError(where, "", f"not valid {kind}: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python's 4300-digit limit
        raise InputError(where, "", f"not valid {kind}: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(where, "", "top level must be a table/object")
    if _depth(doc) > MAX_DEPTH:
        raise InputError(where, "", f"nested deeper than {MAX_DEPTH} levels")
    return doc


MAX_SPEC_BYTES = 16 * 2**20  # spec files and HF config.json files are a few kB
MAX_DEPTH = 32  # spec files nest 3 levels; the limit keeps the recursive walks below far from Python's


def _depth(doc: Any) -> int:
    """Nesting depth of tables/arrays, iteratively (no recursion limit to hit)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, list):
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:
                stack.extend((v, d + 1) for v in node if isinstance(v, (dict, list)))
    return deepest


def split_sources(doc: Any, prefix: str = "") -> tuple[Any, dict[str, str]]:
    """Replace `{value=..., source=...}` leaves by their value; return (plain doc, sources)."""
    sources: dict[str, str] = {}
    if isinstance(doc, dict):
        if "value" in doc and set(doc) <= {"value", "source", "note"}:
            if "source" in doc:
                sources[prefix] = str(doc["source"]) + (f" — {doc['note']}" if "note" in doc else "")
            return doc["value"], sources
        out = {}
        for key, val in doc.items():
            plain, sub = split_sources(val, f"{prefix}.{key}" if prefix else key)
            out[key] = plain
            sources.update(sub)
        return out, sources
    return doc, sources


def _field_path(loc: tuple) -> str:
    return ".".join(str(p) for p in loc if not isinstance(p, int) or True)


def validate(model: type[M], doc: dict[str, Any], where: str) -> M:
    """Validate `doc` against `model`; the first problem becomes one clear InputError."""
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        errors = exc.errors()
        # a misspelled field also shows up as its correct name "missing": report the misspelling (with
        # its did-you-mean) rather than the consequence
        err = next((e for e in errors if e.get("type") == "extra_forbidden"), errors[0])
        loc = tuple(err.get("loc", ()))
        field = _field_path(loc)
        kind = err.get("type", "")
        if kind == "extra_forbidden":
            parent = _lookup_model(model, loc[:-1])
            hint = did_you_mean(str(loc[-1]), parent.model_fields) if parent else ""
            reason = f"unknown field{hint}"
        elif kind == "missing":
            reason = "required field is missing"
        else:
            reason = plain_reason(err)
            if "input" in err and not isinstance(err["input"], (dict, list)):
                got = repr(err["input"])
                reason += f" (got {got if len(got) <= 80 else got[:77] + '...'})"
        raise InputError(where, field, reason, {"bound": _bound(err)} if _bound(err) else None) from None


# pydantic's bound checks: error type -> (ctx key, words)
_BOUNDS = {
    "greater_than_equal": ("ge", "at least"),
    "greater_than": ("gt", "more than"),
    "less_than_equal": ("le", "at most"),
    "less_than": ("lt", "less than"),
}


def _bound(err: dict) -> tuple[str, float] | None:
    """(words, bound) of a bound-check error ('at least', 1e8), else None."""
    kind = err.get("type", "")
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        v = (err.get("ctx") or {}).get(key)
        if isinstance(v, (int, float)):
            return words, float(v)
    return None


def plain_reason(err: dict) -> str:
    """A pydantic error in words of the field's own unit (the spec files' SI units), never pydantic's phrasing:
    'must be at least 1' rather than 'Input should be greater than or equal to 1'."""
    kind = err.get("type", "")
    b = _bound(err)
    if b:
        return f"must be {b[0]} {b[1]:g}"
    if kind in ("float_parsing", "float_type"):
        return "must be a number"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "must be a whole number"
    if kind in ("bool_parsing", "bool_type"):
        return "must be true or false"
    if kind == "finite_number":
        return "must be a finite number"
    if kind == "literal_error":
        return f"must be one of {(err.get('ctx') or {}).get('expected', '')}".rstrip()
    if kind in ("string_type",):
        return "must be text"
    msg = str(err.get("msg", "invalid value"))
    return msg.removeprefix("Value error, ")


def _lookup_model(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    cur: Any = model
    for part in loc:
        if not (isinstance(cur, type) and issubclass(cur, BaseModel)):
            return None
        fld = cur.model_fields.get(str(part))
        if fld is None:
            return None
        ann = fld.annotation
        args = getattr(ann, "__args__", ())
        cand = [a for a in (ann, *args) if isinstance(a, type) and issubclass(a, BaseModel)]
        cur = cand[0] if cand else None
    return cur if isinstance(cur, type) and issubclass(cur, BaseModel) else None


def finite_positive(value: float, name: str) -> float:
    """Pydantic validator helper: reject NaN, infinities, zero and negatives."""
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0")
    return value


def resolve(ref: str, kind: str, suffixes: tuple[str, ...] = (".toml",)) -> Path:
    """A catalog id or a path to a spec file -> the file's path, with a close-match hint."""
    p = Path(ref)
    if p.suffix.lower() in (".toml", ".json") or "/" in ref or _exists(p, ref):
        if not _exists(p, ref):
            raise InputError(ref, "", "file not found")
        return p
    folder = data_dir(kind)
    for suf in suffixes:
        cand = folder / f"{ref}{suf}"
        if _exists(cand, ref):
            return cand
    ids = sorted(f.stem for f in folder.glob("*.toml"))
    raise InputError(kind, ref, f"unknown {kind} id{did_you_mean(ref, ids)}; known: {', '.join(ids)}")


def _exists(p: Path, ref: str) -> bool:
    """Path.exists, with an unusable name (too long, NUL byte) an InputError instead of an OSError."""
    try:
        return p.exists()
    except (OSError, ValueError) as exc:
        shown = ref if len(ref) <= 80 else ref[:77] + "..."
        raise InputError(
            shown, "", f"not a usable file name ({type(exc).__name__}: {getattr(exc, 'strerror', None) or exc})"
        ) from None


def catalog_ids(kind: str) -> list[str]:
    return sorted(f.stem for f in data_dir(kind).glob("*.toml"))
