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

from .errors import InputError, did_you_mean

M = TypeVar("M", bound=BaseModel)

PACKAGE_DIR = Path(__file__).resolve().parent


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
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(where, "", "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(where, "", f"cannot read file ({exc})") from None
    if not text.strip():
        raise InputError(where, "", "file is empty")
    try:
        if path.suffix.lower() == ".json":
            doc = json.loads(text)
        else:
            doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise InputError(where, "", f"not valid {'JSON' if path.suffix.lower() == '.json' else 'TOML'}: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(where, "", "top level must be a table/object")
    return doc


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
        err = exc.errors()[0]
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
            reason = err.get("msg", "invalid value")
            if "input" in err and not isinstance(err["input"], (dict, list)):
                reason += f" (got {err['input']!r})"
        raise InputError(where, field, reason) from None


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
    if p.suffix.lower() in (".toml", ".json") or "/" in ref or p.exists():
        if not p.exists():
            raise InputError(ref, "", "file not found")
        return p
    folder = data_dir(kind)
    for suf in suffixes:
        cand = folder / f"{ref}{suf}"
        if cand.exists():
            return cand
    ids = sorted(f.stem for f in folder.glob("*.toml"))
    raise InputError(kind, ref, f"unknown {kind} id{did_you_mean(ref, ids)}; known: {', '.join(ids)}")


def catalog_ids(kind: str) -> list[str]:
    return sorted(f.stem for f in data_dir(kind).glob("*.toml"))
