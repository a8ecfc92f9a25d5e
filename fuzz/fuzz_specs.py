"""Fuzz the spec loaders: random bytes / text and mutations of real catalog TOML and HF config.json files
go through perfmodel.specs.specfile.read_document, perfmodel.specs.model.load_model and perfmodel.specs.hardware.load_hardware.

Contract: every bad file raises perfmodel.errors.InputError (the CLI turns it into one 'error:' line,
exit 2); any other exception is a crash. A loaded spec must also be usable: predicting one small legal
layout on it must not raise anything but InputError.

Run standalone (longer than the test suite does):
    python fuzz/fuzz_specs.py                  # hypothesis, 2000 examples per target
    python fuzz/fuzz_specs.py --examples 20000
    python fuzz/fuzz_specs.py --atheris [atheris args]     # coverage-guided, needs `pip install atheris`
tests/cli/test_fuzz.py runs the same targets with a small bounded number of examples.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from perfmodel.core.predict import Options, predict_grid  # noqa: E402
from perfmodel.errors import InputError  # noqa: E402
from perfmodel.specs.hardware import load_hardware  # noqa: E402
from perfmodel.specs.layout import Layout, LayoutGrid  # noqa: E402
from perfmodel.specs.model import load_model  # noqa: E402
from perfmodel.specs.specfile import data_dir, read_document  # noqa: E402

HF_FIXTURES = ROOT / "tests" / "fixtures" / "hf"
SEED_MODELS = ("llama3-8b", "mixtral-8x7b", "deepseek-v3", "llama4-scout", "gpt-oss-120b")
SEED_HARDWARE = ("h100-sxm", "gb200-nvl72", "a100-sxm-80gb")

_counter = itertools.count()
_TMP: Path | None = None


def tmp_dir() -> Path:
    global _TMP
    if _TMP is None:
        _TMP = Path(tempfile.mkdtemp(prefix="perfmodel-fuzz-"))
    return _TMP


def fresh_path(suffix: str, folder: Path | None = None) -> Path:
    """A new file name per example: the loaders cache by path."""
    return (folder or tmp_dir()) / f"f{next(_counter)}{suffix}"


# ---- the contract ---------------------------------------------------------------------------------------


def _smoke_predict(model=None, hw=None) -> None:
    """A loaded spec must be usable: one small layout through the predictor, only InputError allowed."""
    m = model or load_model("llama3-8b")
    h = hw or load_hardware("h100-sxm")
    lay = Layout(gpus=8, gbs=8, seq=1024)
    a = m.attention
    from perfmodel.specs.layout import check_layout

    check_layout(lay, m.num_layers, a.num_heads, a.num_kv_heads, m.moe.num_experts if m.moe else None)
    with np.errstate(all="ignore"):
        p = predict_grid(m, h, LayoutGrid.of(lay), Options("bf16"))
    if not (np.isfinite(p.step_time_s).all() and np.isfinite(p.memory_bytes_per_gpu).all()):
        NONFINITE.append(f"{m.path or m.id} on {h.path or h.id}")


# specs that loaded but gave a non-finite prediction (absurd values the schema lets through); the
# standalone runner reports them, the contract above does not fail on them
NONFINITE: list[str] = []


def check_spec_file(path: Path) -> None:
    """Load `path` every way a user can; raise AssertionError (with the cause) on any non-InputError."""
    for name, load in (
        ("read_document", lambda: read_document(path)),
        ("load_model", lambda: _smoke_predict(model=load_model(str(path)))),
        ("load_hardware", lambda: _smoke_predict(hw=load_hardware(str(path)))),
    ):
        try:
            load()
        except InputError as exc:
            assert str(exc).strip() and "\n" not in str(exc).strip(), f"{name}: message not one line: {exc!r}"
        except Exception as exc:  # noqa: BLE001 - that is the point
            raise AssertionError(
                f"{name}({path.name}) crashed with {type(exc).__name__}: {exc}\n--- file ---\n{_preview(path)}"
            ) from exc


def _preview(path: Path) -> str:
    data = path.read_bytes()
    return repr(data[:2000]) + (" ..." if len(data) > 2000 else "")


def check_spec_bytes(data: bytes, suffix: str) -> None:
    p = fresh_path(suffix)
    p.write_bytes(data)
    check_spec_file(p)


# ---- a tiny TOML writer (tomllib only reads) ------------------------------------------------------------


def _key(k: str) -> str:
    return k if k and all(c.isalnum() or c in "-_" for c in k) else json.dumps(k)


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string (\uXXXX escapes included)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def toml_dumps(doc: dict) -> str:
    return "".join(f"{_key(str(k))} = {toml_value(v)}\n" for k, v in doc.items())


# ---- strategies -----------------------------------------------------------------------------------------


def seed_docs() -> list[tuple[str, dict, str]]:
    """(kind, parsed document, suffix) of real spec files to mutate."""
    out = [("models", tomllib.loads((data_dir("models") / f"{m}.toml").read_text()), ".toml") for m in SEED_MODELS]
    out += [
        ("hardware", tomllib.loads((data_dir("hardware") / f"{h}.toml").read_text()), ".toml") for h in SEED_HARDWARE
    ]
    if HF_FIXTURES.is_dir():
        out += [("hf", json.loads(p.read_text()), ".json") for p in sorted(HF_FIXTURES.glob("*/config.json"))]
    return out


SEEDS = seed_docs()

text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)  # no lone surrogates
scalars = st.one_of(
    st.integers(-3, 3),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, 2, 10**8, 10**8 + 1, 2**63, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-300, 1e300, 0.5, 1.5]),
    st.booleans(),
    text,
    st.sampled_from(["", "mla", "gqa", "swiglu", "hopper", "none"]),
)
values = st.recursive(
    scalars, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(text, c, max_size=3)), max_leaves=6
)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    return out


def _set(doc: dict, path: tuple, value: Any, op: str) -> None:
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    last = path[-1]
    if op == "delete":
        cur.pop(last, None)
    elif op == "rename":
        cur[value if isinstance(value, str) and value else last + "x"] = cur.pop(last)
    elif op == "add":
        target = cur[last] if isinstance(cur.get(last), dict) else cur
        target[str(value)[:20] or "extra"] = 1
    elif op == "scale" and isinstance(cur[last], (int, float)) and not isinstance(cur[last], bool):
        factor = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
        try:
            new = cur[last] * factor
        except OverflowError:
            new = math.inf
        cur[last] = int(new) if isinstance(cur[last], int) and isinstance(factor, int) else new
    else:
        cur[last] = value


FACTORS = st.sampled_from([0, -1, 2, 3, 1000, 10**12, 0.5, 1e-30, 1e30, math.nan, math.inf])


@st.composite
def mutated_doc(draw) -> tuple[str, bytes]:
    """A real spec (catalog TOML or HF config.json) with 1-4 random edits, serialised back to bytes."""
    kind, doc, suffix = draw(st.sampled_from(SEEDS))
    doc = json.loads(json.dumps(doc))  # deep copy
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["scale", "scale", "scale", "set", "set", "delete", "rename", "add"]))
        _set(doc, path, draw(FACTORS if op == "scale" else values), op)
    if suffix == ".json":
        text = json.dumps(doc, allow_nan=True)
    else:
        text = toml_dumps(doc)
    return suffix, text.encode("utf-8", "surrogatepass")


@st.composite
def mutated_text(draw) -> tuple[str, bytes]:
    """Line-level edits of a real spec file's text: drop, duplicate, truncate, splice in random text."""
    kind, _, suffix = draw(st.sampled_from(SEEDS))
    if kind == "hf":
        src = sorted(HF_FIXTURES.glob("*/config.json"))[0]
    else:
        src = data_dir(kind) / f"{draw(st.sampled_from(SEED_MODELS if kind == 'models' else SEED_HARDWARE))}.toml"
        suffix = ".toml"
    lines = src.read_text().splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "cut", "splice"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, max(0, len(lines[i]) - 1)))]
        else:
            j = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + draw(text) + lines[i][j:]
    return suffix, "".join(lines).encode("utf-8", "surrogatepass")


raw_files = st.tuples(
    st.sampled_from([".toml", ".json", ".txt"]),
    st.one_of(
        st.binary(max_size=300),
        st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=300).map(
            lambda t: t.encode("utf-8", "surrogatepass")
        ),
    ),
)

spec_inputs = st.one_of(raw_files, mutated_doc(), mutated_text())


# ---- standalone runner ----------------------------------------------------------------------------------


def _run_hypothesis(examples: int) -> None:
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(spec_inputs)
    def target(inp):
        check_spec_bytes(inp[1], inp[0])

    target()
    print(f"fuzz_specs: {examples} examples, no crash")
    if NONFINITE:
        print(f"  {len(NONFINITE)} loaded spec(s) gave a non-finite prediction, e.g. {NONFINITE[0]}")


def _run_atheris(argv: list[str]) -> None:
    import atheris  # type: ignore[import-not-found]

    def one(data: bytes) -> None:
        fdp = atheris.FuzzedDataProvider(data)
        suffix = [".toml", ".json"][fdp.ConsumeIntInRange(0, 1)]
        check_spec_bytes(fdp.ConsumeBytes(fdp.remaining_bytes()), suffix)

    atheris.Setup(argv, one)
    atheris.Fuzz()


def main(argv: list[str]) -> None:
    if "--atheris" in argv:
        _run_atheris([a for a in argv if a != "--atheris"])
        return
    n = int(argv[argv.index("--examples") + 1]) if "--examples" in argv else 2000
    _run_hypothesis(n)


if __name__ == "__main__":
    main(sys.argv)
