"""Scale (issue 7): batched, chunked validation; streamed, bounded-memory search; Ctrl-C.

- Batched validation gives bit-identical numbers to predicting each row alone.
- The planner streams its enumeration and keeps only a running top K and Pareto front: tiny chunk
  sizes (many chunks, many re-prunings) give exactly the result of the default ones.
- Ctrl-C during a long search or validation: exit 130, one "interrupted ..." line, no traceback
  (in-process with a simulated interrupt, and in a subprocess with a real SIGINT sent once the child is
  inside the command's work, ~2 s each); and during the start-up imports, from every entry point.

The two measurements at full scale (a 100,000-row CSV and a 10.8M-layout search, ~10 s each, with a
peak-memory bound) are slow and opt-in: set PERFMODEL_SCALE_TEST=1 to run them. Figures:
benchmarks/README.md.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_json

from perfmodel.analysis import search as S
from perfmodel.analysis import validate as V
from perfmodel.api import load_hardware, load_model
from perfmodel.cli import main
from perfmodel.core.predict import Options
from perfmodel.errors import InputError
from perfmodel.specs.specfile import data_dir

ROOT = Path(__file__).resolve().parents[2]
RUNS = data_dir("validation") / "runs.csv"
SCALE = pytest.mark.skipif(
    not os.environ.get("PERFMODEL_SCALE_TEST"),
    reason="full-scale measurement (~10 s); set PERFMODEL_SCALE_TEST=1 to run",
)
# a 10.8M-layout search: ~8 s on one core, long enough to interrupt
BIG_SEARCH = [
    "search",
    "--model",
    "qwen3-235b-a22b",
    "--hardware",
    "gb200-nvl72",
    "--gpus",
    "24576",
    "--gbs",
    "24576",
    "--seq",
    "32768",
]


def _bits(x: float) -> str:
    return float(x).hex()


def _per_row_reference(rows: list[dict], base: Path) -> tuple[list[tuple], list[dict]]:
    """The pre-batching validate loop: every row predicted alone (V.predict_row, one-layout grids)."""
    out, unsupported = [], []
    for i, row in enumerate(rows):
        rid = (row.get("run_id") or f"row{i + 2}").strip()
        try:
            model, hw, lay, opts = V.row_inputs(row, base)
            published = bool((row.get("recompute") or "").strip())
            p, inferred = V.predict_row(model, hw, lay, opts, published)
        except (InputError, ValueError, KeyError) as exc:
            unsupported.append({"run_id": rid, "row": i + 2, "reason": str(exc)})
            continue
        err = (float(p.tokens_per_s_per_gpu[0]) - float(row["tokens_per_s_per_gpu"])) / float(
            row["tokens_per_s_per_gpu"]
        )
        cause = V.likely_cause(p) if err > 0.25 else ""
        out.append(
            (
                rid,
                _bits(p.tokens_per_s_per_gpu[0]),
                _bits(p.mfu[0]),
                bool(p.fits[0]),
                {k: _bits(v[0]) for k, v in p.breakdown_s.items()},
                inferred,
                cause,
            )
        )
    return out, unsupported


def _summary(rep: V.Report) -> list[tuple]:
    return [
        (r.run_id, _bits(r.predicted), _bits(r.mfu), r.fits, {k: _bits(v) for k, v in r.breakdown.items()})
        for r in rep.results
    ]


def _write_big_csv(path: Path, n: int) -> None:
    rows = V.read_csv(RUNS)
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for i in range(n):
            w.writerow({**rows[i % len(rows)], "run_id": f"r{i}"})


# ---- validation ---------------------------------------------------------------------------------------


def test_batched_validation_is_bit_identical_to_per_row():
    rows = V.read_csv(RUNS)
    ref, ref_unsupported = _per_row_reference(rows, RUNS.parent)
    rep = V.validate_file(RUNS)
    assert rep.given == len(rows) and rep.unsupported == ref_unsupported
    assert [r.run_id for r in rep.results] == [x[0] for x in ref]  # row order kept
    assert _summary(rep) == [x[:5] for x in ref]
    for r, (_, _, _, _, _, inferred, cause) in zip(rep.results, ref):
        assert (f"recompute={inferred} inferred" in r.verdict) == bool(inferred), r.verdict
        assert cause in r.verdict
    assert any("inferred" in r.verdict for r in rep.results)  # the recompute path is exercised


def test_chunk_size_does_not_change_results():
    rows = V.read_csv(RUNS)
    seen: list[int] = []
    small = V.validate_rows(iter(rows), RUNS.parent, chunk_rows=7, progress=seen.append)
    assert _summary(small) == _summary(V.validate_rows(rows, RUNS.parent))
    assert seen == sorted(seen) and seen[-1] == len(rows) and len(seen) >= len(rows) // 7


def test_group_failure_falls_back_to_rows(monkeypatch):
    """A prediction error in a batched group lands on the row that causes it; the others go on."""
    rows = [r for r in V.read_csv(RUNS) if r["model"] == "llama3-70b" and r["hardware"] == "h100-sxm"][:6]
    assert len(rows) >= 3
    bad_id = rows[1]["run_id"]
    rows[1] = {**rows[1], "global_batch": str(int(rows[1]["global_batch"]) * 1024)}  # a gbs no other row has
    bad_gbs = int(rows[1]["global_batch"])
    real = V.predict_grid

    def flaky(model, hw, grid, opts):
        if (grid.gbs == bad_gbs).any():
            raise ValueError("boom")
        return real(model, hw, grid, opts)

    monkeypatch.setattr(V, "predict_grid", flaky)
    rep = V.validate_rows(rows, RUNS.parent)
    assert [u["run_id"] for u in rep.unsupported] == [bad_id] and rep.unsupported[0]["row"] == 3
    assert "boom" in rep.unsupported[0]["reason"] and len(rep.results) == len(rows) - 1


def test_spec_cells_loaded_once(monkeypatch):
    calls: list[str] = []
    real = V.load_model
    monkeypatch.setattr(V, "load_model", lambda ref: calls.append(ref) or real(ref))
    rows = V.read_csv(RUNS)
    V.validate_rows(rows, RUNS.parent)
    assert calls and len(calls) == len(set(calls))  # each distinct model cell loaded once


def test_streamed_csv_matches_read_csv(tmp_path):
    p = tmp_path / "runs.csv"
    text = RUNS.read_text(encoding="utf-8").replace("\n", "\n\n", 5)  # blank lines are skipped
    p.write_text(text, encoding="utf-8")
    assert V.count_rows(p) == len(V.read_csv(p)) == len(list(V.iter_csv(p))) == len(V.read_csv(RUNS))


def test_validate_json_per_row_streamed(capsys):
    d = run_json(capsys, ["validate", str(RUNS)])
    rep = V.validate_file(RUNS)
    assert [r["run_id"] for r in d["per_row"]] == [r.run_id for r in rep.results]
    assert d["per_row"][0]["breakdown"] == rep.results[0].breakdown
    assert list(d)[-1] == "per_row" and d["rows"] == rep.given


# ---- search -------------------------------------------------------------------------------------------

CASES = [("deepseek-v3", "gb200-nvl72", 256, 1024, 4096), ("llama3-8b", "h100-sxm", 64, 512, 8192)]


@pytest.mark.parametrize("mid,hid,gpus,gbs,seq", CASES)
def test_streamed_enumeration_matches_materialised(mid, hid, gpus, gbs, seq):
    m = load_model(mid)
    s = S.space(m, gpus, gbs, seq)
    whole = S.structural(m, s)
    blocks = list(S.structural_blocks(m, s, rows=500))
    assert len(blocks) > 1
    for k in whole:
        assert np.array_equal(np.concatenate([b[k] for b in blocks]), whole[k])
    for step in (1, 13, 4096):
        pieces = list(S._rechunk(iter(blocks), step))
        assert all(len(p["tp"]) == step for p in pieces[:-1]) and 0 < len(pieces[-1]["tp"]) <= step
        for k in whole:
            assert np.array_equal(np.concatenate([p[k] for p in pieces]), whole[k])


@pytest.mark.parametrize("mid,hid,gpus,gbs,seq", CASES)
def test_small_chunks_give_the_same_search(monkeypatch, mid, hid, gpus, gbs, seq):
    """Many chunks: the running top K and Pareto front are re-pruned many times; the result is the same."""
    m, hw, opts = load_model(mid), load_hardware(hid), Options("bf16")
    ref = S.search(m, hw, gpus, gbs, seq, opts, keep_scores=True)
    monkeypatch.setattr(S, "ENUM_ROWS", 300)
    monkeypatch.setattr(S, "SCORE_CHUNK", 600)  # > 8 chunks: top K and front re-pruned
    calls: list[tuple[int, int]] = []
    got = S.search(m, hw, gpus, gbs, seq, opts, keep_scores=True, on_chunk=lambda d, t: calls.append((d, t)))
    assert (got.legal, got.fits) == (ref.legal, ref.fits)
    assert len(calls) > 9 and [d for d, _ in calls] == list(range(1, len(calls) + 1))
    assert {t for _, t in calls} == {len(calls)}
    for a, b in ((got.top, ref.top), (got.pareto, ref.pareto)):
        assert a is not None and b is not None
        assert [a.layouts.layout(i) for i in range(a.layouts.n)] == [b.layouts.layout(i) for i in range(b.layouts.n)]
        assert np.array_equal(a.tokens_per_s_per_gpu, b.tokens_per_s_per_gpu)
    assert np.array_equal(np.sort(got.scores), np.sort(ref.scores))


# ---- Ctrl-C -------------------------------------------------------------------------------------------


def _assert_clean_interrupt(rc: int, out: str, err: str) -> str:
    assert rc == 130, (rc, err[-2000:])
    assert "Traceback" not in out + err, err[-2000:]
    assert out == ""
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("interrupted"), err
    return lines[0]


def test_search_interrupt_message(capsys, monkeypatch):
    import perfmodel.analysis.search as lib  # search_sizes calls it for the command

    real = lib.search

    def interrupted_at_2(*a, on_chunk=None, **kw):
        def cb(done: int, total: int) -> None:
            on_chunk(done, total)
            if done == 2:
                raise KeyboardInterrupt

        return real(*a, on_chunk=cb, **kw)

    monkeypatch.setattr(lib, "search", interrupted_at_2)
    rc = main(
        [
            "search",
            "--model",
            "deepseek-v3",
            "--hardware",
            "gb200-nvl72",
            "--gpus",
            "256",
            "--gbs",
            "1024",
            "--seq",
            "4096",
            "--json",
        ]
    )
    out = capsys.readouterr()
    line = _assert_clean_interrupt(rc, out.out, out.err)
    assert line.startswith("interrupted after 2 of ") and line.endswith("chunks; no results written"), line


def test_validate_interrupt_message(capsys, monkeypatch, tmp_path):
    import perfmodel.commands.validate as cmd

    path = tmp_path / "big.csv"
    _write_big_csv(path, 2500)
    real = cmd.validate_rows

    def interrupted(rows, base, progress=None, **kw):
        def cb(n: int) -> None:
            progress(n)
            raise KeyboardInterrupt

        return real(rows, base, progress=cb, **kw)

    monkeypatch.setattr(cmd, "validate_rows", interrupted)
    rc = main(["validate", str(path), "--json"])
    out = capsys.readouterr()
    line = _assert_clean_interrupt(rc, out.out, out.err)
    assert line == "interrupted after 1,000 of 2,500 rows; no results written", line


def _child_env(**extra: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}


def _sigint_while_working(args: list[str], tmp: Path) -> tuple[int, str, str]:
    """Run the CLI in a child (`python -m perfmodel`, the console script's entry) and send it a real SIGINT
    once it is inside the command's work: the child starts with an empty lambdify cache
    (PERFMODEL_CACHE_DIR, perfmodel/specs/fncache.py), whose first entry it writes while predicting, after
    start-up and the command's imports. The signal follows an event, never a timer, so a slow, cold or
    loaded machine (start-up of seconds) and a fast one (a command over in a second) send it at the same
    point. SIGINT is reset to its default in the child, since a shell running the tests in the background
    would hand it down ignored."""
    cache = tmp / "cache"
    cache.mkdir()
    p = subprocess.Popen(
        [sys.executable, "-m", "perfmodel", *args],
        cwd=ROOT,
        env=_child_env(PERFMODEL_CACHE_DIR=str(cache)),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 300  # a bound on waiting, not a speed target: the asserts then fail
    while p.poll() is None and not any(cache.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.002)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=300)
    return p.returncode, out, err


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_during_search(tmp_path):
    rc, out, err = _sigint_while_working([*BIG_SEARCH, "--json"], tmp_path)
    line = _assert_clean_interrupt(rc, out, err)
    # the search's own line: the interrupt landed in its work, and it says so
    assert line.endswith("; no results written"), line


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_during_validate(tmp_path):
    path = tmp_path / "big.csv"
    _write_big_csv(path, 20_000)
    rc, out, err = _sigint_while_working(["validate", str(path), "--json"], tmp_path)
    line = _assert_clean_interrupt(rc, out, err)
    assert line.startswith("interrupted after ") and line.endswith(" of 20,000 rows; no results written"), line


# A real SIGINT that the child sends itself the moment it starts importing `module` (an import hook: exact,
# not a race): click is the CLI's first import, before main's handler; numpy comes with the command's module,
# inside main (click's Abort)
_INTERRUPT_ON_IMPORT = """
import os, signal, sys
class _InterruptOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, _InterruptOnImport())
sys.argv = ["perfmodel", "predict", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--gbs", "8",
            "--seq", "4096"]
"""
ENTRIES = {
    "console script": "from perfmodel.__main__ import run\nsys.exit(run())",  # pyproject.toml [project.scripts]
    "python -m perfmodel": "import runpy\nrunpy.run_module('perfmodel', run_name='__main__', alter_sys=True)",
}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("module", ["click", "numpy"])
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_sigint_during_start_up_imports(entry, module):
    """Ctrl-C while the CLI is still importing: one line, exit 130, no traceback, from every entry point."""
    r = subprocess.run(
        [sys.executable, "-c", _INTERRUPT_ON_IMPORT.format(module=module) + ENTRIES[entry]],
        cwd=ROOT,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert _assert_clean_interrupt(r.returncode, r.stdout, r.stderr) == "interrupted"


# ---- full scale (opt-in) ------------------------------------------------------------------------------


def _child_stats(code: str) -> dict:
    """Run `code` in a fresh interpreter that prints a JSON dict; add its peak RSS in MB."""
    wrapped = (
        code + "\nimport resource, json as _j\nprint(_j.dumps({**STATS, 'rss_mb': "
        "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))"
    )
    r = subprocess.run(
        [sys.executable, "-c", wrapped],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@SCALE
def test_validate_100k_rows_bounded_memory(tmp_path):
    path = tmp_path / "big.csv"
    _write_big_csv(path, 100_000)
    st = _child_stats(f"""
import time
from perfmodel.analysis.validate import validate_file
t = time.perf_counter(); rep = validate_file({str(path)!r}); dt = time.perf_counter() - t
STATS = {{"seconds": dt, "given": rep.given, "results": len(rep.results), "unsupported": len(rep.unsupported)}}
""")
    # its seconds are benchmarks/README.md's figure, not asserted (no timed tests)
    assert st["given"] == 100_000 and st["results"] + st["unsupported"] == 100_000
    assert st["rss_mb"] < 600, st  # ~1.7 kB of results per row; the CSV itself is never held


@SCALE
def test_10m_layout_search_bounded_memory():
    st = _child_stats("""
import time
from perfmodel.api import load_hardware, load_model
from perfmodel.core.predict import Options
from perfmodel.analysis.search import search
m, hw = load_model("qwen3-235b-a22b"), load_hardware("gb200-nvl72")
t = time.perf_counter(); r = search(m, hw, 24576, 24576, 32768, Options("bf16")); dt = time.perf_counter() - t
STATS = {"seconds": dt, "legal": r.legal}
""")
    assert st["legal"] >= 10_000_000, st
    assert st["rss_mb"] < 300, st  # ~190 MB measured; the space held at once took 335 MB
