"""The parallelism planner (perfmodel/analysis/search.py, `perfmodel search`, `perfmodel recipes`)."""

from __future__ import annotations

import itertools
import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from perfmodel.analysis import search as S
from perfmodel.api import check, load_hardware, load_model
from perfmodel.cli import main
from perfmodel.commands.search import command as search_cmd
from perfmodel.core.predict import Options, predict_grid
from perfmodel.errors import InputError
from perfmodel.specs.layout import RECOMPUTE, Layout, LayoutGrid

ROOT = Path(__file__).resolve().parents[2]
OPTS = Options("bf16")


@pytest.fixture(scope="module")
def small():
    m, hw = load_model("llama3-8b"), load_hardware("h100-sxm")
    return m, hw, S.search(m, hw, 8, 128, 8192, OPTS, top_k=10)


@pytest.fixture(scope="module")
def moe():
    m, hw = load_model("mixtral-8x7b"), load_hardware("h100-sxm")
    return m, hw, S.search(m, hw, 16, 256, 4096, OPTS, top_k=10, keep_scores=True)


def _layouts(p):
    return [p.layouts.layout(i) for i in range(p.layouts.n)]


@pytest.mark.parametrize("case", ["small", "moe"])
def test_returned_layouts_are_legal_and_fit(case, request):
    m, hw, r = request.getfixturevalue(case)
    assert r.top is not None and r.pareto is not None
    for p in (r.top, r.pareto):
        assert p.fits.all()
        assert not S.illegal(m, p.layouts).any()
        for lay in _layouts(p):
            check(m, lay)  # raises on any broken rule
            assert lay.gpus * 0 + lay.tp * lay.pp * lay.cp * lay.dp == lay.gpus
    assert np.all(np.diff(r.top_values) <= 0)  # best first
    assert r.evaluated >= r.legal >= r.fits >= r.top.layouts.n


def test_best_beats_hand_picked_layouts(small):
    m, hw, r = small
    best = float(r.top.tokens_per_s_per_gpu[0])
    hand = [
        Layout(8, 128, 8192, tp=8),
        Layout(8, 128, 8192, tp=4, pp=2),
        Layout(8, 128, 8192, tp=2, mbs=1),
        Layout(8, 128, 8192, tp=1, pp=2, vp=4, recompute="selective"),
        Layout(8, 128, 8192, tp=2, cp=2, mbs=2),
        Layout(8, 128, 8192, tp=1, fsdp=True, recompute="full"),
        Layout(8, 128, 8192, tp=4, pp=2, vp=2, mbs=2),
    ]
    p = predict_grid(m, hw, LayoutGrid.from_layouts(hand), OPTS)
    assert p.fits.any()
    assert best >= p.tokens_per_s_per_gpu[p.fits].max() * (1 - 1e-12)


def test_best_beats_random_legal_layouts(moe):
    m, hw, r = moe
    base = S.structural(m, r.space)
    pick = np.random.default_rng(0).permutation(len(base["tp"]))[:400]
    grid = next(S.chunks(r.space, {k: v[pick] for k, v in base.items()}))
    p = predict_grid(m, hw, grid, OPTS)
    assert float(r.top.tokens_per_s_per_gpu[0]) >= p.tokens_per_s_per_gpu[p.fits].max() * (1 - 1e-12)
    assert r.rank_of(float(r.top_values[0])) == 1


def test_staged_enumeration_equals_filtered_product(moe):
    """Pruning stage by stage keeps exactly the legal layouts of the full cartesian product."""
    m, _, r = moe
    s = r.space
    axes = [s.tp, s.pp, s.vp, s.cp, s.ep, s.etp, s.mbs, s.fsdp, s.recompute]
    prod = np.array(list(itertools.product(*axes)), dtype=np.int64)
    assert len(prod) == r.evaluated
    n = len(prod)
    g = LayoutGrid(
        np.full(n, s.gpus),
        np.full(n, s.gbs),
        np.full(n, s.seq),
        *[prod[:, i] for i in range(7)],
        prod[:, 7].astype(bool),
        prod[:, 8],
    )
    ok = ~S.illegal(m, g) & ((g.vp == 1) | S._balanced_chunks(m, g.pp * g.vp))
    assert int(ok.sum()) == r.legal


def test_fix_and_max_are_honoured():
    m, hw = load_model("mixtral-8x7b"), load_hardware("h100-sxm")
    c = S.parse_constraints(["tp=2", "recompute=selective"], ["pp=2", "ep=4"])
    r = S.search(m, hw, 16, 256, 4096, OPTS, top_k=5, constraints=c)
    for lay in _layouts(r.top) + _layouts(r.pareto):
        assert lay.tp == 2 and lay.pp <= 2 and lay.ep <= 4 and lay.recompute == "selective"


@pytest.mark.parametrize(
    "fix,cap",
    [(["tpp=2"], []), ([], ["ppx=4"]), (["tp"], []), (["tp=x"], []), (["recompute=partial"], []), ([], ["fsdp=1"])],
)
def test_bad_constraints_raise_input_error(fix, cap):
    with pytest.raises(InputError):
        S.parse_constraints(fix, cap)


def test_unknown_axis_suggests_close_match():
    with pytest.raises(InputError, match="did you mean 'tp'"):
        S.parse_constraints(["tpp=2"])


def test_cli_bad_input_exits_2(capsys):
    base = ["search", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gbs", "128", "--seq", "8192"]
    assert main(base + ["--gpus", "8", "--fix", "tpp=2"]) == 2
    assert main(base + ["--gpus", "8,x"]) == 2
    assert "did you mean" in capsys.readouterr().err


def test_json_output_keys():
    res = CliRunner().invoke(
        search_cmd,
        [
            "--model",
            "llama3-8b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "8",
            "--gbs",
            "128",
            "--seq",
            "8192",
            "--top",
            "3",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    for k in ("evaluated", "legal", "seconds", "top", "pareto_memory", "why_winner"):
        assert k in d
    assert len(d["top"]) == 3
    for t in d["top"]:
        assert {"layout", "prediction"} <= set(t)
        assert t["prediction"]["fits"] and t["layout"]["gpus"] == 8
    assert d["top"][0]["prediction"]["tokens_per_s_per_gpu"] >= d["top"][1]["prediction"]["tokens_per_s_per_gpu"]


def test_gpu_list_front_and_objectives():
    args = [
        "--model",
        "llama3-8b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "8,16",
        "--gbs",
        "128",
        "--seq",
        "8192",
        "--top",
        "2",
        "--json",
    ]
    d = json.loads(CliRunner().invoke(search_cmd, args).output)
    assert [r["gpus"] for r in d["pareto_gpus"]] == [8, 16] and d["pareto_gpus"][0]["pareto"]
    for obj in ("cost", "energy"):
        e = json.loads(CliRunner().invoke(search_cmd, args + ["--objective", obj]).output)
        # for one hardware type the objectives rank layouts the same way (per-GPU price and power are constants)
        assert e["top"][0]["layout"] == d["top"][0]["layout"] and e["top"][0]["objective_value"] > 0


def test_pareto_front_is_non_dominated(small):
    _, _, r = small
    t = r.pareto.tokens_per_s_per_gpu
    h = r.pareto.hbm_bytes - r.pareto.memory_bytes_per_gpu
    for i in range(len(t)):
        assert not np.any((t >= t[i]) & (h >= h[i]) & ((t > t[i]) | (h > h[i])))
    assert t[0] == pytest.approx(float(r.top.tokens_per_s_per_gpu[0]))


def test_recipes_rank_and_compare():
    from perfmodel.analysis.recipes import check_rows, summary
    from perfmodel.analysis.validate import read_csv

    rows = [
        r
        for r in read_csv(ROOT / "validation" / "runs.csv")
        if r["model"] in ("llama3-8b", "qwen3-30b-a3b") and int(r["gpus"]) <= 16
    ][:4]
    assert rows
    checks, _, _ = check_rows(rows, ROOT / "validation", top_k=10)
    for c in checks:
        assert c.rank >= 1 and c.candidates >= 1
        if c.in_space and c.recipe_fits:
            assert c.best_tps >= c.recipe_tps * (1 - 1e-9) and c.contained_or_beaten
    s = summary(checks, 10, 0.10)
    assert s["rows"] == len(checks) and 0 <= s["share_contained_or_beaten"] <= 1


def test_recipes_fill_an_unpublished_recompute_without_selective_on_a_stack_that_names_no_modules():
    """`perfmodel recipes` with no arguments stopped at the AutoModel rows: their recompute cell is empty, and
    filling it tried selective on automodel-2025, whose stack names no selective modules, which predict refuses
    (check_recompute). The fill now tries only the modes the stack can run, and the row is compared."""
    from perfmodel.analysis.recipes import check_rows
    from perfmodel.analysis.validate import read_csv

    rows = [r for r in read_csv(ROOT / "validation" / "runs.csv") if r["run_id"] == "am-l3-70b-h100-64-bf16"]
    assert rows and not rows[0]["recompute"].strip()
    checks, skipped, _ = check_rows(rows, ROOT / "validation", top_k=10)
    assert len(checks) == 1 and not skipped
    assert checks[0].recipe_tps > 0


def test_space_rejects_bad_sizes():
    m = load_model("llama3-8b")
    with pytest.raises(InputError):
        S.space(m, 0, 128, 8192)
    assert RECOMPUTE["full"] in S.space(m, 8, 128, 8192).recompute


def test_uneven_vp_adds_the_interleavings_whose_chunks_are_not_evenly_filled():
    """Llama 3 8B (32 layers) on 64 GPUs: with --uneven-vp the planner also scores pp x vp splits such as pp 4
    vp 3 (12 chunks; 32 + e for e <= 3 slots is never a multiple of 12), legal in Megatron-Core with an
    explicit layout; every default layout is still among them, and each added one has vp > 1."""
    from perfmodel.analysis.search import Constraints, space, structural

    m = load_model("llama3-8b")
    even = structural(m, space(m, 64, 512, 4096))
    every = structural(m, space(m, 64, 512, 4096, Constraints(uneven_vp=True)))
    key = lambda b: set(zip(*(b[k].tolist() for k in ("tp", "cp", "pp", "vp", "ep", "etp", "mbs"))))
    a, b = key(even), key(every)
    assert a < b and all(row[3] > 1 for row in b - a)
    assert (1, 1, 4, 3, 1, 1, 1) in b - a


# The planner's streaming selection (search._top, search._undominated): the running top K and Pareto
# front equal those of one pass over every scored layout, whatever the chunking.


def test_top_breaks_ties_by_position():
    v = np.array([5.0, 3.0, 5.0, 5.0, 1.0, 7.0])
    assert S._top(v, 1).tolist() == [5]
    assert S._top(v, 2).tolist() == [5, 0]  # three 5s tie for second place: the earliest wins
    assert S._top(v, 3).tolist() == [5, 0, 2]
    assert S._top(v, 10).tolist() == [5, 0, 2, 3, 1, 4]


def test_undominated_against_a_hand_front():
    # front by throughput descending, headroom ascending: (10, 1), (8, 3), (5, 6)
    ft, fh = np.array([10.0, 8.0, 5.0]), np.array([1.0, 3.0, 6.0])
    cases = [
        ((11, 0), True),  # faster than every front point
        ((10, 1), False),  # equal to a front point
        ((10, 2), True),  # as fast as (10, 1), more headroom
        ((8, 2), False),  # dominated by (8, 3)
        ((9, 2), True),  # (10, 1) has less headroom, (8, 3) is slower
        ((8, 3), False),  # equal
        ((4, 6), False),  # dominated by (5, 6)
        ((4, 7), True),  # more headroom than any front point
        ((6, 4), True),
    ]  # (8, 3) has less headroom, (5, 6) is slower
    t, h = (np.array([c[0][i] for c in cases], dtype=float) for i in (0, 1))
    assert S._undominated(ft, fh, t, h).tolist() == [c[1] for c in cases]
    assert S._undominated(np.zeros(0), np.zeros(0), t, h).all()


def _one_pass(m, hw, gpus, gbs, seq, objective, top_k):
    """Reference: every legal layout scored at once, sorted (stable: enumeration order breaks ties)."""
    s = S.space(m, gpus, gbs, seq)
    grid = LayoutGrid.concat(list(S.chunks(s, S.structural(m, s), size=1 << 30)))
    grid = grid.take(~S._fsdp_duplicate(grid))
    p = predict_grid(m, hw, grid, OPTS)
    idx = np.flatnonzero(p.fits)
    thr = p.tokens_per_s_per_gpu[idx]
    val = thr * S.objective_scale(hw, objective)
    top = idx[np.argsort(-val, kind="stable")[:top_k]]
    front = idx[S._pareto_idx(thr, (p.hbm_bytes - p.memory_bytes_per_gpu)[idx])]
    return grid.take(top), grid.take(front)


def _same(a: LayoutGrid, b: LayoutGrid) -> bool:
    return all(np.array_equal(getattr(a, f.name), getattr(b, f.name)) for f in fields(LayoutGrid))


@pytest.mark.parametrize("chunk", [700, S.SCORE_CHUNK])
@pytest.mark.parametrize(
    "job",
    [
        ("mixtral-8x7b", "h100-sxm", 16, 256, 4096, "throughput", 10),
        ("llama3-70b", "h100-sxm", 64, 128, 8192, "cost", 3000),
        ("gpt-oss-120b", "b200", 64, 256, 4096, "energy", 1),
    ],
)
def test_streamed_selection_equals_one_pass(job, chunk, monkeypatch):
    mid, hid, gpus, gbs, seq, objective, top_k = job
    m, hw = load_model(mid), load_hardware(hid)
    monkeypatch.setattr(S, "SCORE_CHUNK", chunk)  # many chunks: the merge across chunks is exercised
    r = S.search(m, hw, gpus, gbs, seq, OPTS, objective, top_k)
    top, front = _one_pass(m, hw, gpus, gbs, seq, objective, top_k)
    assert r.top is not None and r.pareto is not None
    assert r.top.layouts.n == min(top_k, r.fits) and _same(r.top.layouts, top)
    assert _same(r.pareto.layouts, front)
