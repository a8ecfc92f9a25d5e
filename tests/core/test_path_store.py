"""The disk store of group placements (topology.group_path): what a later process reads back is what the
graph gives, a damaged line is placed again, and PERFMODEL_CACHE_DIR=off stores nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from perfmodel.api import load_hardware
from perfmodel.core import topology as T

ROOT = Path(__file__).resolve().parents[2]
SHAPES = [(96, 1), (64, 8), (256, 4), (2048, 1), (128, 16)]  # all leave one NVLink domain of GB200 / H100


def _fresh(monkeypatch, d):
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(d))
    for f in (T._path_file, T._stored_paths, T.group_path):
        f.cache_clear()


def test_stored_paths_equal_placed_ones(tmp_path, monkeypatch):
    _fresh(monkeypatch, tmp_path)
    try:
        for hid in ("gb200-nvl72", "h100-sxm"):
            hw = load_hardware(hid)
            placed = [T.group_path(hw, s, t) for s, t in SHAPES]  # computed, written
            assert placed == [T.place_group(hw, s, t) for s, t in SHAPES]
            f = T._path_file(hw)
            assert f is not None and len(f.read_text().splitlines()) == len(SHAPES)
            T._stored_paths.cache_clear()
            T.group_path.cache_clear()
            assert [T.group_path(hw, s, t) for s, t in SHAPES] == placed  # read back
            assert T._stored_paths(hw).keys() == set(SHAPES)
        # a cut-short line is skipped and that shape placed again
        hw = load_hardware("h100-sxm")
        f = T._path_file(hw)
        lines = f.read_text().splitlines()
        f.write_text("\n".join(lines[:-1] + [lines[-1][:7]]) + "\n")
        T._stored_paths.cache_clear()
        T.group_path.cache_clear()
        assert len(T._stored_paths(hw)) == len(SHAPES) - 1
        assert T.group_path(hw, *SHAPES[-1]) == T.place_group(hw, *SHAPES[-1])
    finally:
        for fn in (T._path_file, T._stored_paths, T.group_path):
            fn.cache_clear()


def test_store_off_writes_nothing(tmp_path, monkeypatch):
    # the default store would be under tmp_path ($XDG_CACHE_HOME): 'off' must write nothing there
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    _fresh(monkeypatch, "off")
    try:
        hw = load_hardware("h100-sxm")
        assert T.group_path(hw, 64, 8) == T.place_group(hw, 64, 8)
        assert T._path_file(hw) is None and not any(tmp_path.iterdir())
    finally:
        for fn in (T._path_file, T._stored_paths, T.group_path):
            fn.cache_clear()


def test_warm_store_places_without_networkx(tmp_path):
    code = (
        "import sys\nfrom perfmodel.api import load_hardware\nfrom perfmodel.core.topology import group_path\n"
        "print(group_path(load_hardware('gb200-nvl72'), 2048, 1), 'networkx' in sys.modules)"
    )
    run = lambda: subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PERFMODEL_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(ROOT), "PATH": ""},
    )
    cold, warm = run(), run()
    assert cold.returncode == 0 and warm.returncode == 0, cold.stderr + warm.stderr
    assert cold.stdout.split()[-1] == "True" and warm.stdout.split()[-1] == "False"
    assert cold.stdout.rsplit(" ", 1)[0] == warm.stdout.rsplit(" ", 1)[0]
