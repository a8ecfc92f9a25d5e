"""Mutation check of the cost model (issue #12): perturb each cost formula once, run the tests that cover
its module, and report whether some test fails ("caught") or none does ("survived").

    python3 benchmarks/mutation_check.py                  # all mutations, 2 workers
    python3 benchmarks/mutation_check.py --list           # enumerate only
    python3 benchmarks/mutation_check.py --only comm.py   # one module (a substring of its path)

Mutations, found by walking the AST of every function in the cost modules (never editing the real files:
each runs against a copy of the checkout in a temporary folder, first on the path):
  term   each operand of every + / - (a term of a sum) scaled by 1.1 (a list operand -- a record list being
         concatenated -- loses its last record instead: "drop a term"); an augmented `x += y` scales y
  scale  the result of every *, /, **, //, % scaled by 1.1 (integers: + 1)
  cmp    every <, <=, >, >= made strict / non-strict (the boundary of a branch: a group of exactly the
         NVLink domain's size, a stage that holds exactly one layer)
  minmax np.maximum <-> np.minimum (the roofline's max, the bottleneck's min)
  const  every named module-level number (constants.py, compute.BF16) scaled by 1.1
Skipped: `0 * x` (a broadcast helper, not a formula). The tests run for each module are listed in TARGETS;
snapshot-style tests (none in tests/ today; benchmarks/snapshot.py is not a test) are never run.
"""
from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> the test files run for each of its mutations
T_CORE = ["tests/test_cost_compute.py", "tests/test_cost_comm.py", "tests/test_cost_overlap.py", "tests/test_cost_cost.py"]
T_PAR = ["tests/test_cost_parallel.py"]
T_MEM = ["tests/test_cost_memory.py", "tests/test_memory.py"]
T_WL = ["tests/test_cost_workload.py"]
T_PRED = ["tests/test_cost_predict.py", "tests/test_predict.py"]
TARGETS: dict[str, list[str]] = {
    "perfmodel/compute.py": ["tests/test_cost_compute.py", "tests/test_cost_cost.py", "tests/test_cost_predict.py"],
    "perfmodel/comm.py": ["tests/test_cost_comm.py", "tests/test_cost_parallel.py"],
    "perfmodel/topology.py": ["tests/test_cost_comm.py"],
    "perfmodel/overlap.py": ["tests/test_cost_overlap.py", "tests/test_cost_parallel.py"],
    "perfmodel/cost.py": ["tests/test_cost_cost.py", "tests/test_cost_predict.py"],
    "perfmodel/constants.py": T_WL + T_MEM + T_PRED + T_PAR,
    "perfmodel/parallel/tp.py": T_PAR,
    "perfmodel/parallel/cp.py": T_PAR,
    "perfmodel/parallel/ep.py": T_PAR,
    "perfmodel/parallel/dp.py": T_PAR + T_PRED,
    "perfmodel/parallel/recompute.py": T_PAR + T_PRED,
    "perfmodel/parallel/pp.py": ["tests/test_pp.py", "tests/test_cost_predict.py", "tests/test_memory.py"],
    "perfmodel/memory.py": T_MEM + T_PRED,
    "perfmodel/workload.py": T_WL + T_MEM,
    "perfmodel/predict.py": T_PRED + T_MEM,
}
# copied into the sandbox (data folders are linked: read only)
COPY = ("perfmodel", "tests")
LINK = ("hardware", "models", "stacks", "validation", "pyproject.toml")

HELPER = ("\ndef _mut_(x):\n"
          "    import numpy as _np\n"
          "    if isinstance(x, (list, tuple)):\n"
          "        return x[:-1]\n"
          "    if isinstance(x, (bool, _np.bool_)):\n"
          "        return x\n"
          "    if isinstance(x, int) or (isinstance(x, _np.ndarray) and x.dtype.kind in 'iu'):\n"
          "        return x + 1\n"
          "    return x * 1.1\n")


@dataclass(frozen=True)
class Mutation:
    path: str
    kind: str
    line: int
    col: int
    what: str          # the source text perturbed
    index: int         # which node of its kind in the file (stable enumeration)


def _wrap(node: ast.expr) -> ast.expr:
    return ast.Call(func=ast.Name("_mut_", ast.Load()), args=[node], keywords=[])


def _is_zero(n: ast.expr) -> bool:
    """0, or the broadcast helpers `zero` / `one` (= 0 * tp, an array of zeros shaped like the layouts)."""
    return (isinstance(n, ast.Constant) and n.value == 0) or (isinstance(n, ast.Name) and n.id in ("zero", "one"))


def _np_call(n: ast.AST, name: str) -> bool:
    f = getattr(n, "func", None)
    return isinstance(n, ast.Call) and isinstance(f, ast.Attribute) and f.attr == name \
        and isinstance(f.value, ast.Name) and f.value.id == "np"


ARITH = (ast.Mult, ast.Div, ast.Pow, ast.FloorDiv, ast.Mod)


def _sum_terms(n: ast.expr) -> list[tuple[ast.BinOp, str]]:
    """The leaf terms of a chain of + / -, as (parent BinOp, 'left' | 'right')."""
    out = []
    for side in ("left", "right"):
        child = getattr(n, side)
        if isinstance(child, ast.BinOp) and isinstance(child.op, (ast.Add, ast.Sub)):
            out += _sum_terms(child)
        else:
            out.append((n, side))
    return out


def _sites(tree: ast.Module, skip: tuple[str, ...] = ()):
    """(node, kind, tag) of every mutation site, in a fixed order. Equivalent perturbations are listed once:
    scaling a*b*c is the same whichever of its Mult nodes is scaled, so a chain of * and / is one site; a
    chain of + and - gives one site per term (a term that is a product is that product's site)."""
    out = []
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda))
             and getattr(n, "name", "") not in skip]
    seen: set[int] = set()
    for f in funcs:
        parents = {id(c): p for p in ast.walk(f) for c in ast.iter_child_nodes(p)}
        for n in ast.walk(f):
            if id(n) in seen:
                continue
            seen.add(id(n))
            par = parents.get(id(n))
            if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)):
                if isinstance(par, ast.BinOp) and isinstance(par.op, (ast.Add, ast.Sub)):
                    continue                     # an inner node of a sum: its terms belong to the outer sum
                out += [(p, "term", side) for p, side in _sum_terms(n)
                        if not _is_zero(getattr(p, side))]
            elif isinstance(n, ast.BinOp) and isinstance(n.op, ARITH):
                if _is_zero(n.left) or _is_zero(n.right):
                    continue                     # 0 * x: a broadcast helper
                if isinstance(par, ast.BinOp) and isinstance(par.op, (ast.Mult, ast.Div)) and isinstance(n.op, (ast.Mult, ast.Div)):
                    continue                     # inside a product: the outer product is the site
                if isinstance(par, ast.BinOp) and isinstance(par.op, (ast.Add, ast.Sub)):
                    continue                     # a term of a sum: the term's site scales it
                out.append((n, "scale", ""))
            elif isinstance(n, ast.AugAssign) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                out.append((n, "term", "aug"))
            elif isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                out.append((n, "cmp", ""))
            elif _np_call(n, "maximum") or _np_call(n, "minimum"):
                out.append((n, "minmax", ""))
    if not skip or "<module>" not in skip:
        for n in tree.body:          # named module-level numbers
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and n.targets[0].id.isupper():
                v = n.value
                if (isinstance(v, ast.Constant) and isinstance(v.value, (int, float)) and not isinstance(v.value, bool)) \
                        or isinstance(v, ast.BinOp):
                    out.append((n, "const", ""))
    out.sort(key=lambda s: (s[0].lineno, s[0].col_offset, s[1], s[2]))
    return out


def enumerate_mutations(path: str) -> list[Mutation]:
    src = (ROOT / path).read_text()
    tree = ast.parse(src)
    muts = []
    for i, (n, kind, tag) in enumerate(_sites(tree)):
        seg = ast.get_source_segment(src, n) or ""
        if kind == "term":
            part = {"left": getattr(n, "left", None), "right": getattr(n, "right", None), "aug": getattr(n, "value", None)}[tag]
            seg = f"{tag} term {ast.get_source_segment(src, part)!s} of {seg}"
        seg = " ".join(seg.split())
        muts.append(Mutation(path, kind, n.lineno, n.col_offset, seg[:110], i))
    return muts


def mutate(path: str, index: int) -> str:
    """The source of `path` with mutation `index` applied."""
    src = (ROOT / path).read_text()
    tree = ast.parse(src)
    n, kind, tag = _sites(tree)[index]
    if kind == "term":
        if tag == "aug":
            n.value = _wrap(n.value)
        elif tag == "left":
            n.left = _wrap(n.left)
        else:
            n.right = _wrap(n.right)
    elif kind == "scale" or kind == "const":
        target = n if kind == "scale" else n.value
        new = _wrap(target if kind == "scale" else n.value)
        if kind == "scale":
            _replace(tree, n, new)
        else:
            n.value = new
    elif kind == "cmp":
        swap = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
        n.ops = [swap[type(n.ops[0])]()]
    elif kind == "minmax":
        n.func.attr = "minimum" if n.func.attr == "maximum" else "maximum"
    ast.fix_missing_locations(tree)
    body = ast.unparse(tree)
    # the helper goes after the `from __future__` import and the docstring
    lines = body.split("\n")
    at = next((i + 1 for i, l in enumerate(lines) if l.startswith("from __future__")), 0)
    return "\n".join(lines[:at] + HELPER.split("\n") + lines[at:]) + "\n"


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list):
                for i, v in enumerate(value):
                    if v is old:
                        value[i] = new
                        return
    raise RuntimeError("node not found")


def _sandbox() -> Path:
    d = Path(tempfile.mkdtemp(prefix="perfmodel-mut-"))
    for name in COPY:
        shutil.copytree(ROOT / name, d / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in LINK:
        if (ROOT / name).exists():
            os.symlink(ROOT / name, d / name)
    return d


def run_one(box: Path, m: Mutation, timeout: float) -> tuple[str, float, str]:
    """('caught' | 'survived' | 'timeout', seconds, first failing test) of mutation m in sandbox `box`."""
    target = box / m.path
    original = target.read_text()
    target.write_text(mutate(m.path, m.index))
    env = {**os.environ, "PYTHONPATH": str(box), "PYTHONDONTWRITEBYTECODE": "1"}
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                            *TARGETS[m.path]], cwd=box, env=env, capture_output=True, text=True, timeout=timeout)
        # 1: a test failed; 2: the mutated module no longer imports (collection error); 0: all passed
        status = {0: "survived", 1: "caught", 2: "caught"}.get(r.returncode, "error")
        failed = next((l.split(" ")[1] for l in r.stdout.splitlines() if l.startswith("FAILED ")), "")
        if r.returncode not in (0, 1):
            failed = failed or f"pytest exit {r.returncode}"
    except subprocess.TimeoutExpired:
        status, failed = "caught", "timeout"
    finally:
        target.write_text(original)
    return status, time.perf_counter() - t0, failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="enumerate the mutations only")
    ap.add_argument("--only", default="", help="only modules whose path contains this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per mutation run")
    ap.add_argument("--verbose", action="store_true", help="print every mutation, not only survivors")
    a = ap.parse_args(argv)
    missing = sorted({f for p in TARGETS if a.only in p for f in TARGETS[p] if not (ROOT / f).exists()})
    if missing:
        print(f"test files missing: {', '.join(missing)}", file=sys.stderr)
        return 2
    muts = [m for p in TARGETS if a.only in p for m in enumerate_mutations(p)]
    if a.list:
        for m in muts:
            print(f"{m.path}:{m.line}:{m.col} {m.kind:6} {m.what}")
        print(f"{len(muts)} mutations")
        return 0
    # the unmutated tests must pass first, or every mutation would look caught
    box = _sandbox()
    files = sorted({f for p in TARGETS if a.only in p for f in TARGETS[p]})
    env = {**os.environ, "PYTHONPATH": str(box), "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files], cwd=box, env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-2000:])
        print("the unmutated tests fail: fix them first", file=sys.stderr)
        return 1
    boxes = [box] + [_sandbox() for _ in range(a.jobs - 1)]
    free = list(boxes)
    t0 = time.perf_counter()
    results: list[tuple[Mutation, str, float, str]] = []

    def work(m: Mutation):
        b = free.pop()
        try:
            return m, *run_one(b, m, a.timeout)
        finally:
            free.append(b)

    try:
        with ThreadPoolExecutor(a.jobs) as ex:
            for m, status, secs, failed in ex.map(work, muts):
                results.append((m, status, secs, failed))
                if status != "caught" or a.verbose:
                    print(f"{status:8} {m.path}:{m.line}:{m.col} {m.kind:6} {m.what}  {failed}", flush=True)
    finally:
        for b in boxes:
            shutil.rmtree(b, ignore_errors=True)
    print()
    print(f"{'module':34} {'mutations':>9} {'caught':>7}")
    for p in TARGETS:
        rs = [r for r in results if r[0].path == p]
        if rs:
            print(f"{p:34} {len(rs):9d} {sum(r[1] == 'caught' for r in rs):7d}")
    caught = sum(r[1] == "caught" for r in results)
    print(f"{len(results)} mutations, {caught} caught, {len(results) - caught} survived "
          f"({time.perf_counter() - t0:.0f} s, {a.jobs} workers)")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
