"""Mutation check of the cost model (issue #12): perturb each cost formula once, run the tests that cover
its module, and report whether some test fails ("caught") or none does ("survived").

    python3 benchmarks/mutation_check.py                  # all mutations, 2 workers
    python3 benchmarks/mutation_check.py --list           # enumerate only
    python3 benchmarks/mutation_check.py --only comm.py   # one module (a substring of its path)
    python3 benchmarks/mutation_check.py --check-equivalent   # each EQUIVALENT mutation changes no prediction (~5 min)

Mutations, found by walking the AST of every function in the cost modules (never editing the real files:
each runs against a copy of the checkout in a temporary folder, first on the path):
  term   each operand of every + / - (a term of a sum) scaled by 1.1 (a list operand -- a record list being
         concatenated -- loses its last record instead: "drop a term"); an augmented `x += y` scales y
  scale  the result of every *, /, **, //, % scaled by 1.1 (integers: + 1)
  cmp    every <, <=, >, >= made strict / non-strict (the boundary of a branch: a group of exactly the
         NVLink domain's size, a stage that holds exactly one layer)
  minmax np.maximum <-> np.minimum (the roofline's max, the bottleneck's min)
  const  every named module-level number (constants.py, compute.BF16) scaled by 1.1
Skipped: `0 * x` (a broadcast helper, not a formula). Perturbing a*b*c is the same whichever * is scaled, so a
product is one site; a sum gives one site per term.

The tests run for each module are listed in TARGETS (its worked cases, tests/core/test_<module>.py or
tests/core/parallel/, and the topic files with hand cases for it); snapshot-style tests (none in tests/ today;
benchmarks/snapshot.py is not a test) are never run. A mutation is caught when a test fails or the mutated
module no longer imports; one that cannot change any number the package produces is listed in EQUIVALENT with
the reason, and counted apart. Each mutation runs in a forked child of this process (numpy, sympy, pydantic,
pytest imported once, before forking; the child imports the sandbox's perfmodel and runs pytest -x), two at a
time: ~580 mutations in ~8 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> the test files run for each of its mutations
T_PAR = ["tests/core/parallel/test_parallel.py"]
T_MEM = ["tests/core/test_memory.py"]
T_WL = ["tests/core/test_workload.py"]
T_PRED = ["tests/core/test_predict.py"]
# the worked cases of the stacks read in session 8 (torchtitan's SAC / AsyncTP / CP allgather / float8, DeepSpeed's
# engines) and of the measured component tables (grouped GEMM, attention occupancy, routing imbalance)
T_STK = ["tests/core/test_torchtitan.py", "tests/core/test_deepspeed.py"]
T_KRN = ["tests/specs/test_kernels.py"]
TARGETS: dict[str, list[str]] = {
    "perfmodel/core/compute.py": ["tests/core/test_compute.py", "tests/core/test_price.py", *T_PRED, *T_KRN],
    "perfmodel/core/comm.py": ["tests/core/test_comm.py", *T_PAR],
    "perfmodel/core/topology.py": [
        "tests/core/test_comm.py",
        "tests/core/test_topology.py",
        "tests/core/test_path_store.py",
    ],
    "perfmodel/core/overlap.py": ["tests/core/test_overlap.py", *T_PAR],
    "perfmodel/core/price.py": ["tests/core/test_price.py", *T_PRED, "tests/core/test_dense_rows.py"],
    "perfmodel/core/constants.py": T_WL
    + T_MEM
    + T_PRED
    + T_PAR
    + T_STK
    + T_KRN
    + ["tests/specs/test_moe_rows.py", "tests/core/test_software.py"],
    "perfmodel/core/parallel/tp.py": ["tests/core/parallel/test_tp.py", *T_PAR, *T_WL, *T_PRED, *T_STK],
    "perfmodel/core/parallel/cp.py": ["tests/core/parallel/test_cp.py", *T_PAR, *T_STK],
    "perfmodel/core/parallel/ep.py": T_PAR + T_KRN + ["tests/core/parallel/test_a2a_overlap.py"],
    "perfmodel/core/parallel/dp.py": T_PAR + T_PRED + T_STK,
    "perfmodel/core/parallel/recompute.py": T_PAR + T_PRED + T_STK,
    "perfmodel/core/parallel/pp.py": ["tests/core/parallel/test_pp.py", *T_MEM, *T_PRED],
    "perfmodel/core/memory.py": T_MEM + T_PRED + T_STK + ["tests/core/test_dense_rows.py", "tests/core/test_forks.py"],
    "perfmodel/core/workload.py": T_WL
    + T_MEM
    + T_STK
    + T_KRN
    + ["tests/core/test_forks.py", "tests/core/test_dense_rows.py", "tests/specs/test_moe_rows.py"],
    "perfmodel/core/predict.py": T_PRED
    + T_MEM
    + T_STK
    + ["tests/core/parallel/test_a2a_overlap.py", "tests/core/test_forks.py", "tests/core/test_dense_rows.py"],
}
# copied into the sandbox (data folders are linked: read only)
COPY = ("perfmodel", "tests")
LINK = ("hardware", "models", "stacks", "validation", "pyproject.toml")

HELPER = (
    "\ndef _mut_(x):\n"
    "    import numpy as _np\n"
    "    if isinstance(x, (list, tuple)):\n"
    "        return x[:-1]\n"
    "    if isinstance(x, (bool, _np.bool_)):\n"
    "        return x\n"
    "    if isinstance(x, int) or (isinstance(x, _np.ndarray) and x.dtype.kind in 'iu'):\n"
    "        return x + 1\n"
    "    return x * 1.1\n"
)


@dataclass(frozen=True)
class Mutation:
    path: str
    func: str  # the enclosing function
    kind: str
    line: int
    col: int
    what: str  # the source text perturbed
    index: int  # which node of its kind in the file (stable enumeration)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.path, self.func, self.what


def _wrap(node: ast.expr) -> ast.expr:
    return ast.Call(func=ast.Name("_mut_", ast.Load()), args=[node], keywords=[])


def _is_zero(n: ast.expr) -> bool:
    """0, or the broadcast helpers `zero` / `one` (= 0 * tp, an array of zeros shaped like the layouts)."""
    if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
        return _is_zero(n.left) or _is_zero(n.right)
    return (isinstance(n, ast.Constant) and n.value == 0) or (isinstance(n, ast.Name) and n.id in ("zero", "one"))


def _np_call(n: ast.AST, name: str) -> bool:
    f = getattr(n, "func", None)
    return (
        isinstance(n, ast.Call)
        and isinstance(f, ast.Attribute)
        and f.attr == name
        and isinstance(f.value, ast.Name)
        and f.value.id == "np"
    )


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
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name not in skip]
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
                    continue  # an inner node of a sum: its terms belong to the outer sum
                out += [(p, "term", side, f.name) for p, side in _sum_terms(n) if not _is_zero(getattr(p, side))]
            elif isinstance(n, ast.BinOp) and isinstance(n.op, ARITH):
                if _is_zero(n.left) or _is_zero(n.right):
                    continue  # 0 * x: a broadcast helper
                if (
                    isinstance(par, ast.BinOp)
                    and isinstance(par.op, (ast.Mult, ast.Div))
                    and isinstance(n.op, (ast.Mult, ast.Div))
                ):
                    continue  # inside a product: the outer product is the site
                if isinstance(par, ast.BinOp) and isinstance(par.op, (ast.Add, ast.Sub)):
                    continue  # a term of a sum: the term's site scales it
                out.append((n, "scale", "", f.name))
            elif isinstance(n, ast.AugAssign) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
                out.append((n, "term", "aug", f.name))
            elif (
                isinstance(n, ast.Compare)
                and len(n.ops) == 1
                and isinstance(n.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE))
            ):
                out.append((n, "cmp", "", f.name))
            elif _np_call(n, "maximum") or _np_call(n, "minimum"):
                out.append((n, "minmax", "", f.name))
    if not skip or "<module>" not in skip:
        for n in tree.body:  # named module-level numbers
            if (
                isinstance(n, ast.Assign)
                and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id.isupper()
            ):
                v = n.value
                if (
                    isinstance(v, ast.Constant) and isinstance(v.value, (int, float)) and not isinstance(v.value, bool)
                ) or isinstance(v, ast.BinOp):
                    out.append((n, "const", "", "<module>"))
    out.sort(key=lambda s: (s[0].lineno, s[0].col_offset, s[1], s[2]))
    return out


def enumerate_mutations(path: str) -> list[Mutation]:
    src = (ROOT / path).read_text()
    tree = ast.parse(src)
    muts = []
    seen: dict[tuple[str, str], int] = {}
    for i, (n, kind, tag, func) in enumerate(_sites(tree)):
        seg = ast.get_source_segment(src, n) or ""
        if kind == "term":
            part = {
                "left": getattr(n, "left", None),
                "right": getattr(n, "right", None),
                "aug": getattr(n, "value", None),
            }[tag]
            seg = f"{tag} term {ast.get_source_segment(src, part)!s} of {seg}"
        seg = " ".join(seg.split())[:110]
        seen[(func, seg)] = seen.get((func, seg), 0) + 1
        if seen[(func, seg)] > 1:  # the same text again in the function: "#2", "#3", ... (its own key)
            seg = f"{seg} #{seen[(func, seg)]}"
        muts.append(Mutation(path, func, kind, n.lineno, n.col_offset, seg, i))
    return muts


def mutate(path: str, index: int) -> str:
    """The source of `path` with mutation `index` applied."""
    src = (ROOT / path).read_text()
    tree = ast.parse(src)
    n, kind, tag, _ = _sites(tree)[index]
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


SIZE_ONE = (
    "size >= 1 differs only at size = 1, where the bandwidth term has a factor (size - 1) or (k - 1) = 0 and "
    "the latency term _latency(k, 1) is 0: the same 0 either way"
)
PP_ONE = (
    "at pp = 1 both branches agree: pipeline_seconds has t_sum = t_max and max(0, 1 - m) = 0 for m >= 1 (predict "
    "floors m at 1), so m t_max; in_flight's interleaved count is (0 + (vp - 1) + 1) / vp = 1 = pp - rank"
)
CHUNK_RULES = (
    "chunk_layers gives the remainder (at most C - 1 layers) one each to the chunks in the order 1 .. C-2, "
    "0, C - 1: the C-th entry of that order, chunk C - 1, is never reached, so dropping it or changing "
    "its index changes nothing"
)
MULT_PAD = (
    "mult >= 0 also admits the padding signatures (mult = 0) of layouts with fewer distinct stages: in t_sum "
    "they are multiplied by mult = 0, and in t_max their time (no layers: only the exposed p2p, "
    "exposed(p2p, 0) = p2p) never exceeds a real stage's, which is parts + exposed(p2p, parts) >= p2p"
)
# Mutations that change no number the package can produce, each with the reason; counted apart, not as caught.
# Key: (path, enclosing function, the mutation's text as --list prints it).
EQUIVALENT: dict[tuple[str, str, str], str] = {
    **{
        ("perfmodel/core/comm.py", f, "size > 1"): SIZE_ONE
        for f in ("all_gather_from_terms", "all_reduce_time", "all_to_all_time", "moe_dispatch_time")
    },
    **{
        ("perfmodel/core/topology.py", "_codes", w): "a lookup table one entry longer than the largest code: the extra "
        "entry is never read"
        for w in (
            "right term 1 of hi + 1",
            "left term hi of hi + 1",
            "right term 1 of hi + 1 #2",
            "left term hi of hi + 1 #2",
        )
    },
    (
        "perfmodel/core/topology.py",
        "_codes",
        "hi >= 1 << 22",
    ): "both branches return the same (sorted unique values, inverse); the threshold only picks the faster one",
    (
        "perfmodel/core/topology.py",
        "_worst_offset",
        "U // math.gcd(span, U)",
    ): "the one extra block start, U / gcd(span, U) blocks = lcm(span, U) ranks, is a whole number of units past "
    "start 0: the same parts, the same share, a tie, and a tie keeps the earlier offset",
    (
        "perfmodel/core/topology.py",
        "_worst_offset",
        "stride >= D",
    ): "at stride == D the interleaved offsets j < stride = D move members inside their domains, and a unit is "
    "a whole number of domains (hardware.py checks scalable_unit_gpus): no member changes unit, every j ties "
    "with j = 0, the block start the other branch tries",
    (
        "perfmodel/core/topology.py",
        "_worst_offset",
        "(ranks[None, :] + offs[:, None]) // U",
    ): "adding 1 to every unit index relabels the units; the parts' sizes are unchanged",
    **{
        (
            "perfmodel/core/topology.py",
            "_worst_offset",
            w,
        ): "shares are multiples of 1 / size, so share - worst is 0 or at "
        "least 1 / size: strict or not, and 1e-12 or 1.1e-12 of slack, decide every comparison the same way"
        for w in ("share > worst + 1e-12", "right term 1e-12 of worst + 1e-12")
    },
    (
        "perfmodel/core/topology.py",
        "_placement",
        "stride >= D",
    ): "at stride == D, k = members_per_domain = 1, so (i // k) * D + (i % k) * stride = i * D = i * stride",
    **{
        (
            "perfmodel/core/parallel/pp.py",
            "_pairs",
            w,
        ): "any radix above the largest vp keeps the small keys p * radix + v "
        "injective and decoded exactly (k // radix, k % radix), and the branch test only chooses between two paths "
        "that return the same pairs"
        for w in (
            "left term int(v.max()) of int(v.max()) + 1",
            "right term 1 of int(v.max()) + 1",
            "int(p.max()) * radix < 1 << 22",
            "int(p.max()) * radix",
        )
    },
    (
        "perfmodel/core/parallel/pp.py",
        "in_flight",
        "left term np.maximum(nmb, 1) of np.maximum(nmb, 1) + 0 * sched",
    ): "+ 0 * sched only broadcasts GPipe's count to the ranks' shape; np.where broadcasts it the same way",
    (
        "perfmodel/core/predict.py",
        "price_kind",
        "sw.ep_share > 0",
    ): "at ep_share == 0 the overlap hides nothing: the EP-free budget equals the stack's own, so the solo "
    "difference computed under >= is exactly 0, as under >",
    (
        "perfmodel/core/topology.py",
        "group_path",
        "size <= 1",
    ): "only decides whether the disk store is consulted: place_group returns the same GroupPath either way",
    (
        "perfmodel/core/topology.py",
        "group_path",
        "members_per_domain(size, stride, hw.scale_up.domain_size) >= size",
    ): "only decides whether the disk store is consulted: place_group returns the same GroupPath either way",
    (
        "perfmodel/core/topology.py",
        "place_group",
        "size <= 1",
    ): "at size == 1, k = min(1, ...) = 1 >= size: the same early return through `k >= size`",
    (
        "perfmodel/core/topology.py",
        "place_group",
        "hw.scale_out.bandwidth / hw.scale_out.spine_oversubscription",
    ): "the early return's group never leaves one NVLink domain: spine_share = 0, and uplink_bw only divides "
    "spine_share x bytes = 0 (comm._remote_time)",
    (
        "perfmodel/core/topology.py",
        "place_group",
        "2 * D",
    ): "without scalable units the placement renumbers the group onto ranks 0 .. 2D - 1: r // (2D + 1) = "
    "r // 2D = 0 for all of them, and the leaves' GPU count cancels in _hop's uplink share and in `up` "
    "(capacity n x NIC / oversubscription divided by n)",
    (
        "perfmodel/core/topology.py",
        "place_group",
        "r // D",
    ): "adding 1 to every domain index relabels the domains: by_dom's member lists and their order are unchanged",
    (
        "perfmodel/core/topology.py",
        "place_group",
        "r // U",
    ): "unit_of is only compared for equality: adding 1 to both sides changes no comparison",
    **{
        (
            "perfmodel/core/workload.py",
            "unique_layer_axes",
            w,
        ): "the key stays injective and in the lexicographic order "
        "of the axis tuples (a larger radix, or a constant added at every digit, shifts every key by the same "
        "amount; keys stay below 2^63), so np.unique returns the same first indices and inverse"
        for w in (
            "left term int(c.max()) of int(c.max()) + 1",
            "right term 1 of int(c.max()) + 1",
            "left term key * r of key * r + c",
            "right term c of key * r + c",
            "left term key * len(u) of key * len(u) + code.reshape(-1)",
            "right term code.reshape(-1) of key * len(u) + code.reshape(-1)",
        )
    },
    **{
        ("perfmodel/core/workload.py", "unique_layer_axes", w): "the overflow guard: both branches give keys in the "
        "same order (the values, or their codes, in mixed radix), and a product of radices up to 1.1 x 2^62 still "
        "fits int64, so either branch gives the same first indices and inverse"
        for w in ("float(np.prod(np.array(radix, dtype=float))) < 2.0**62", "2.0**62")
    },
    (
        "perfmodel/core/predict.py",
        "predict_grid",
        "left term x of x + zero",
    ): "the only scalars g receives are the 0.0 start values of cost.price_layer's accumulators for a layer with "
    "no record of that kind (every priced term is an array over the layer-axis combinations; checked on all "
    "617 rows of `perfmodel validate`): 1.1 x 0 = 0",
    (
        "perfmodel/core/comm.py",
        "domains_reached",
        "G >= groups",
    ): "at G == groups both branches give R = group_topk: group_topk G / groups = group_topk, and "
    "G (1 - C(G - 1, t) / C(G, t)) = G t / G = group_topk",
    (
        "perfmodel/core/parallel/cp.py",
        "exchange",
        "np.asarray(cp) > 1",
    ): "cp >= 1 differs only at cp = 1, where the all-to-all / all-gather over one rank is 0 anyway",
    (
        "perfmodel/core/parallel/cp.py",
        "ring_exchange",
        "np.asarray(cp) > 1",
    ): "cp >= 1 differs only at cp = 1, where the ring's (cp - 1) steps are 0 anyway",
    (
        "perfmodel/core/parallel/cp.py",
        "torch_allgather_exposed",
        "cp > 1",
    ): "cp >= 1 differs only at cp = 1, where every torch_allgather record is inactive (active = cp > 1, "
    "tests/core/parallel/test_cp.py) and prices 0: np.where picks 0 either way",
    (
        "perfmodel/core/parallel/tp.py",
        "async_tp_exposed",
        "tp > 1 #2",
    ): "the raw seconds: tp >= 1 differs only at tp = 1, where split_pair's records are groups of tp = 1 rank "
    "and an all-gather / reduce-scatter over one rank costs 0 (comm.py's size > 1 guards): np.where picks 0 "
    "either way (the exposed seconds' guard, tp > 1, is not equivalent: a reduce-scatter's memory pass is not 0)",
    (
        "perfmodel/core/parallel/dp.py",
        "grad_and_param_times",
        "reps > 1",
    ): "reps = dp*cp / gcd(dp*cp, hsg) >= 1, so >= differs only at reps = 1, where comm.all_reduce_time over one "
    "member is exactly 0 (its own size > 1 guard) for the latency and the unit-byte call alike: lat = 0, "
    "per_byte = 0 - 0 = 0, and the added term is 0 as under >",
    (
        "perfmodel/core/parallel/dp.py",
        "rank_params",
        "left term expert of expert + cnt[k] * e",
    ): "only the last layer kind (moe: workload.build lists dense first) has expert parameters, so `expert` is "
    "still 0 whenever a non-zero term is added to it",
    (
        "perfmodel/core/parallel/ep.py",
        "_expected_max",
        "n > 1",
    ): "n >= 1 differs only at n = 1 (ep is a whole number >= 1), where Blom's fraction (1 - 0.375) / (1 + 0.25) = "
    "0.5 exactly and Phi^-1(0.5) = 0.0 exactly (statistics.NormalDist: q = p - 0.5 = 0 scales the rational "
    "approximation), the 0.0 of the other branch",
    (
        "perfmodel/core/workload.py",
        "op_sac",
        "aug term mm of count += mm",
    ): "mm is a Python bool (`not (...) and g.module != ...`), and the mutation helper leaves booleans unchanged "
    "(_mut_ returns a bool as is): the mutant is the same program",
    **{("perfmodel/core/parallel/pp.py", f, "pp > 1"): PP_ONE for f in ("pipeline_seconds", "in_flight")},
    (
        "perfmodel/core/parallel/pp.py",
        "legal_interleaving",
        "pp <= 1",
    ): "pp < 1 differs only at pp = 1, where the next clause holds anyway: every (integer) micro-batch count is a "
    "multiple of 1",
    **{("perfmodel/core/predict.py", "_stages", w): MULT_PAD for w in ("mult > 0", "mult > 0 #3")},
    **{
        ("perfmodel/core/parallel/pp.py", "chunk_layers", w): CHUNK_RULES
        for w in (
            "right term [0, C - 1] of list(range(1, C - 1)) + [0, C - 1]",
            "left term C of C - 1 #3",
            "right term 1 of C - 1 #3",
        )
    },
}


def _sandbox() -> Path:
    d = Path(tempfile.mkdtemp(prefix="perfmodel-mut-"))
    for name in COPY:
        shutil.copytree(ROOT / name, d / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in LINK:
        if (ROOT / name).exists():
            os.symlink(ROOT / name, d / name)
    return d


def _child(box: Path, files: list[str], log: Path) -> None:
    """In a forked child: import the sandbox's perfmodel (never imported by the parent) and run pytest."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.chdir(box)
    sys.path[:] = [str(box)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT]
    import pytest

    rc = pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark", *files])
    sys.stdout.flush()
    os._exit(int(rc))


def _drop_pyc(source: Path) -> None:
    """Remove the cached bytecode of `source` (the other modules' and the tests' caches are kept: they never
    change), so a mutant is never run from the bytecode of another with the same size and mtime."""
    for pyc in (source.parent / "__pycache__").glob(f"{source.stem}.*.pyc"):
        pyc.unlink()


def run_all(muts: list[Mutation], boxes: list[Path], timeout: float, report) -> list[tuple]:
    """Run every mutation, len(boxes) at a time, each in a forked child of this process (numpy, sympy,
    pydantic and pytest already imported: the child only imports perfmodel and runs the tests)."""
    assert "perfmodel" not in sys.modules
    import sympy  # noqa: F401  (paid once, before forking)

    todo = list(reversed(muts))
    running: dict[int, tuple] = {}  # pid -> (mutation, box, original source, start)
    free = list(boxes)
    results = []
    while todo or running:
        while todo and free:
            m, box = todo.pop(), free.pop()
            target = box / m.path
            original = target.read_text()
            target.write_text(mutate(m.path, m.index))
            _drop_pyc(target)
            log = box / "mutation.log"
            pid = os.fork()
            if pid == 0:
                try:
                    _child(box, TARGETS[m.path], log)
                finally:
                    os._exit(3)
            running[pid] = (m, box, original, time.perf_counter())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for p, (m, box, original, t0) in list(running.items()):
                if time.perf_counter() - t0 > timeout:
                    os.kill(p, 9)
            time.sleep(0.01)
            continue
        m, box, original, t0 = running.pop(pid)
        (box / m.path).write_text(original)
        _drop_pyc(box / m.path)
        free.append(box)
        rc = os.waitstatus_to_exitcode(status)
        out = (box / "mutation.log").read_text(errors="replace")
        failed = next((l.split(" ")[1] for l in out.splitlines() if l.startswith("FAILED ")), "")
        # 1: a test failed; 2: the mutated module no longer imports (collection error); 0: all passed
        verdict = {0: "survived", 1: "caught", 2: "caught"}.get(rc, "caught" if rc == -9 else "error")
        if rc == -9:
            failed = "timeout"
        elif rc not in (0, 1):
            failed = failed or f"pytest exit {rc}"
        results.append((m, verdict, time.perf_counter() - t0, failed))
        report(results[-1])
    return results


VALIDATE = (
    "import json; from perfmodel.analysis.validate import shipped_sets, validate_file\n"
    "print(json.dumps([[r.run_id, r.predicted, r.mem_predicted] for p in shipped_sets() "
    "for r in validate_file(p).results]))"
)


def check_equivalent(muts: list[Mutation]) -> int:
    """Apply each mutation listed in EQUIVALENT and confirm that no number changes where the package makes
    them: benchmarks/snapshot.py's 12,707 predictions (every field, 1e-9) and every `validate` row of the
    shipped sets (throughput and memory, 1e-12). Returns the number of mutations that changed something."""
    box = _sandbox()
    shutil.copytree(ROOT / "benchmarks", box / "benchmarks", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(box), "PERFMODEL_CACHE_DIR": "off"}
    run = lambda *cmd: subprocess.run([sys.executable, *cmd], cwd=box, env=env, capture_output=True, text=True)
    snap = box / "snapshot.npz"
    base = run("-c", VALIDATE).stdout
    run("benchmarks/snapshot.py", "save", str(snap))
    bad = 0
    try:
        for m in (m for m in muts if m.key in EQUIVALENT):
            target = box / m.path
            original = target.read_text()
            target.write_text(mutate(m.path, m.index))
            _drop_pyc(target)
            try:
                v = run("-c", VALIDATE)
                rows, ref = (json.loads(v.stdout) if v.returncode == 0 else []), json.loads(base)
                same = len(rows) == len(ref) and all(
                    a[0] == b[0] and a[2] == b[2] and abs(a[1] - b[1]) <= 1e-12 * abs(b[1]) for a, b in zip(rows, ref)
                )
                same = same and run("benchmarks/snapshot.py", "diff", str(snap)).returncode == 0
            finally:
                target.write_text(original)
                _drop_pyc(target)
            bad += not same
            print(
                f"{'same' if same else 'CHANGED':8} {m.path}:{m.line}:{m.col} {m.func} {m.kind:6} {m.what}", flush=True
            )
    finally:
        shutil.rmtree(box, ignore_errors=True)
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="enumerate the mutations only")
    ap.add_argument("--only", default="", help="only modules whose path contains this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per mutation run")
    ap.add_argument("--verbose", action="store_true", help="print every mutation, not only survivors")
    ap.add_argument(
        "--check-equivalent",
        action="store_true",
        help="apply each EQUIVALENT mutation and confirm the snapshot and validate rows do not change",
    )
    a = ap.parse_args(argv)
    missing = sorted({f for p in TARGETS if a.only in p for f in TARGETS[p] if not (ROOT / f).exists()})
    if missing:
        print(f"test files missing: {', '.join(missing)}", file=sys.stderr)
        return 2
    muts = [m for p in TARGETS if a.only in p for m in enumerate_mutations(p)]
    stale = sorted(k for k in EQUIVALENT if a.only in k[0] and k not in {m.key for m in muts})
    for k in stale:  # a reason kept for a formula that is no longer there would mislead the reader
        print(f"EQUIVALENT entry matches no mutation (remove it): {k}", file=sys.stderr)
    if a.check_equivalent:
        bad = check_equivalent(muts)
        print(f"{bad} EQUIVALENT mutation(s) changed a prediction")
        return 0 if bad == 0 else 1
    if a.list:
        for m in muts:
            print(f"{m.path}:{m.line}:{m.col} {m.func} {m.kind:6} {m.what}")
        print(f"{len(muts)} mutations")
        return 0
    # the unmutated tests must pass first, or every mutation would look caught
    box = _sandbox()
    files = sorted({f for p in TARGETS if a.only in p for f in TARGETS[p]})
    env = {**os.environ, "PYTHONPATH": str(box)}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        cwd=box,
        env=env,
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        print(r.stdout[-3000:], r.stderr[-2000:])
        print("the unmutated tests fail: fix them first", file=sys.stderr)
        shutil.rmtree(box, ignore_errors=True)
        return 1
    boxes = [box] + [_sandbox() for _ in range(a.jobs - 1)]
    t0 = time.perf_counter()

    def report(r):
        m, status, secs, failed = r
        if status != "caught" or a.verbose:
            tag = "equiv" if m.key in EQUIVALENT and status == "survived" else status
            print(f"{tag:8} {m.path}:{m.line}:{m.col} {m.func} {m.kind:6} {m.what}  {failed}", flush=True)

    try:
        results = run_all(muts, boxes, a.timeout, report)
    finally:
        for b in boxes:
            shutil.rmtree(b, ignore_errors=True)
    equiv = [r for r in results if r[1] == "survived" and r[0].key in EQUIVALENT]
    for r in results:  # a test tells it apart after all: the reason is wrong
        if r[1] == "caught" and r[0].key in EQUIVALENT and not any(q[0].key == r[0].key and q in equiv for q in equiv):
            print(f"EQUIVALENT entry caught by a test (remove it): {r[0].key}", file=sys.stderr)
    print()
    print(f"{'module':34} {'mutations':>9} {'caught':>7} {'equivalent':>10}")
    for p in TARGETS:
        rs = [r for r in results if r[0].path == p]
        if rs:
            print(f"{p:34} {len(rs):9d} {sum(r[1] == 'caught' for r in rs):7d} {sum(r in equiv for r in rs):10d}")
    caught = sum(r[1] == "caught" for r in results)
    left = len(results) - caught - len(equiv)
    print(
        f"{len(results)} mutations: {caught} caught, {len(equiv)} equivalent (listed in EQUIVALENT with the "
        f"reason no test can tell them apart), {left} survived ({time.perf_counter() - t0:.0f} s, {a.jobs} workers)"
    )
    return 0 if left == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
