"""Start-up: lazy command loading, the on-disk lambdify cache and the console script's fast exit.
(The timings themselves live in benchmarks/README.md; these tests check the properties behind them.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import numpy as np
import pytest
from cli_helpers import PREDICT

from perfmodel import cli
from perfmodel.specs import counts, fncache
from perfmodel.specs.model import load_model
from perfmodel.specs.specfile import catalog_ids

ROOT = Path(__file__).resolve().parents[2]


def _py(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def test_help_table_matches_the_commands():
    """cli.HELP (the `--help` listing without imports) names every command of every module in COMMANDS,
    in the right module, with the first paragraph of its real help."""
    real = {
        c.name: (mod, " ".join(c.help.split("\n\n")[0].split()))
        for mod in cli.COMMANDS
        for c in cli.module_commands(mod)
    }
    assert cli.HELP == real, (
        f"perfmodel/cli.py HELP is out of date (a command added, renamed or its help changed): it should be {real}"
    )


def test_help_listing_equals_the_eager_one():
    """`perfmodel --help` from the static table is the listing click prints with every command imported."""
    eager = click.Group(
        "perfmodel", help=cli.cli.help, params=cli.cli.params, context_settings=cli.cli.context_settings
    )
    for mod in cli.COMMANDS:
        for c in cli.module_commands(mod):
            eager.add_command(c)
    lazy = cli.LazyGroup(
        "perfmodel", help=cli.cli.help, params=cli.cli.params, context_settings=cli.cli.context_settings
    )
    texts = [g.get_help(click.Context(g, info_name="perfmodel")) for g in (eager, lazy)]
    assert texts[0] == texts[1] and "validate" in texts[1]


def test_help_imports_no_command_and_no_numpy():
    r = _py(
        "import sys\nfrom perfmodel.cli import main\nrc = main(['--help'])\n"
        "print(rc, sorted(m for m in sys.modules if m.startswith('perfmodel.commands.') "
        "or m.split('.')[0] in ('numpy', 'sympy', 'networkx', 'pydantic', 'rich', 'matplotlib')))"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "0 []"


def test_command_loads_only_its_module(capsys):
    r = _py(
        "import sys\nfrom perfmodel.cli import main\nrc = main(['list', 'hardware', '--json'])\n"
        "print(rc, sorted(m for m in sys.modules if m.startswith('perfmodel.commands.')))"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "0 ['perfmodel.commands.catalog', 'perfmodel.commands.common']"


def test_unknown_command_is_a_usage_error(capsys):
    assert cli.main(["predcit"]) == 2
    err = capsys.readouterr().err
    assert "No such command 'predcit'" in err and "Traceback" not in err


def test_cached_functions_equal_lambdify(tmp_path, monkeypatch):
    """Every catalog model, both conventions: the function exec'd from the cache file gives bit-identical
    FLOPs per token to sympy's lambdify of the formula (the fallback when no cache is usable)."""
    import sympy as sp

    seq = np.array([1.0, 7.0, 128.0, 129.0, 2048.0, 4096.0, 8191.0, 8192.0, 8193.0, 131072.0])
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    for mid in catalog_ids("models"):
        m = load_model(mid)
        for conv in ("causal", "full"):
            expr = counts.flops_per_token_expr(m, conv)
            ref = sp.lambdify(counts.S, expr, modules="numpy")(seq)
            key = f"{m.model_dump_json()}|{conv}|True"
            fncache.numpy_fn("flops_per_token", key, lambda: (counts.S, expr))  # writes the entry
            again = fncache.numpy_fn("flops_per_token", key, lambda: pytest.fail("not read from the cache"))
            assert np.array_equal(again(seq), ref), (mid, conv)
    assert len(list((tmp_path / "lambdify").iterdir())) == 2 * len(catalog_ids("models"))


def test_windowed_mean_keys_cached(tmp_path, monkeypatch):
    """Sliding and chunked windows (Piecewise, floor) survive the cache bit for bit."""
    import sympy as sp

    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    seq = np.arange(1.0, 20000.0, 37.0)
    for kind, win in (("sliding", 128), ("chunked", 8192), ("global", 0)):
        ref = sp.lambdify(counts.S, counts.mean_keys(kind, win, "causal"), modules="numpy")(seq)
        for _ in range(2):
            f = fncache.numpy_fn(
                "mean_keys", f"{kind}|{win}|causal", lambda: (counts.S, counts.mean_keys(kind, win, "causal"))
            )
            assert np.array_equal(np.broadcast_to(f(seq), seq.shape), ref), kind


def test_bad_cache_entries_are_ignored(tmp_path, monkeypatch):
    """A tampered entry (wrong formula, same key) fails its check values and is rewritten; garbage too."""
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    m = load_model("llama3-8b")
    build = lambda: (counts.S, counts.flops_per_token_expr(m, "causal"))
    key = f"{m.model_dump_json()}|causal|True"
    ref = fncache.numpy_fn("flops_per_token", key, build)(4096.0)
    (path,) = (tmp_path / "lambdify").iterdir()
    entry = json.loads(path.read_text())
    entry["source"] = entry["source"].replace("return ", "return 1.01 * ")
    path.write_text(json.dumps(entry))
    assert fncache.numpy_fn("flops_per_token", key, build)(4096.0) == ref
    assert json.loads(path.read_text())["source"] != entry["source"]  # rewritten
    path.write_text("{not json")
    assert fncache.numpy_fn("flops_per_token", key, build)(4096.0) == ref


def test_unwritable_or_disabled_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    m = load_model("llama3-8b")
    build = lambda: (counts.S, counts.flops_per_token_expr(m, "causal"))
    ref = float(build()[1].subs(counts.S, 4096))
    for d in (str(blocker / "sub"), "off"):  # a path under a file cannot be created
        monkeypatch.setenv("PERFMODEL_CACHE_DIR", d)
        assert fncache.numpy_fn("flops_per_token", "x", build)(4096.0) == pytest.approx(ref, rel=1e-15)
    assert fncache.cache_dir() is None


def test_warm_cache_scores_without_sympy(tmp_path):
    """With the cache warm, FLOPs per token need no sympy in the process (networkx is on the prediction path:
    topology.py prices each collective's group on the cluster graph)."""
    code = (
        "import sys\nfrom perfmodel.specs.counts import flops_per_token\nfrom perfmodel.specs.model import load_model\n"
        "print(float(flops_per_token(load_model('gpt-oss-120b'), 4096)), 'sympy' in sys.modules, "
        "'networkx' in sys.modules)"
    )
    env = {"PERFMODEL_CACHE_DIR": str(tmp_path)}
    cold, warm = _py(code, env), _py(code, env)
    assert cold.returncode == 0 and warm.returncode == 0, cold.stderr + warm.stderr
    value, had_sympy, had_nx = cold.stdout.split()
    assert had_sympy == "True" and had_nx == "False"
    assert warm.stdout.split() == [value, "False", "False"]


def test_console_script_flushes_before_exiting():
    """`run` (the console script, os._exit at the end) writes everything and keeps the exit status."""
    r = subprocess.run(
        [sys.executable, "-m", "perfmodel", *PREDICT, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["layout"]["tp"] == 8
    bad = subprocess.run(
        [sys.executable, "-m", "perfmodel", *PREDICT, "--tp", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr


def test_unreadable_formula_sources_disable_the_cache(tmp_path, monkeypatch):
    """No source to hash (a byte-code-only install): nothing is cached, the value is still right."""
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fncache, "_FORMULA_SOURCES", ("no_such_module.py",))
    fncache._salt.cache_clear()
    try:
        m = load_model("llama3-8b")
        f = fncache.numpy_fn("flops_per_token", "y", lambda: (counts.S, counts.flops_per_token_expr(m, "causal")))
        import sympy as sp

        assert f(4096.0) == sp.lambdify(counts.S, counts.flops_per_token_expr(m, "causal"), "numpy")(4096.0)
        assert not (tmp_path / "lambdify").exists()
    finally:
        fncache._salt.cache_clear()


def test_module_missing_from_help_still_works(monkeypatch, capsys):
    """A command module in COMMANDS without HELP entries (a new command) is imported when asked for."""
    monkeypatch.setattr(cli, "HELP", {k: v for k, v in cli.HELP.items() if v[0] != "releases"})
    group = cli.LazyGroup("perfmodel", help=cli.cli.help, params=cli.cli.params)
    ctx = click.Context(group, info_name="perfmodel")
    assert group.get_command(ctx, "releases") is not None
    assert group.get_command(ctx, "nosuch") is None
    assert {"releases", "predict"} <= set(group.list_commands(ctx))
