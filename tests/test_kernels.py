"""The component tables per GPU generation (hardware/kernels/, perfmodel/specs/kernels.py): measurements with
their sources, the GEMM shape fitted to each table reproducibly, and `show hardware ID --kernels`."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_err, run_json

from perfmodel.specs import kernels as KT
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.specfile import catalog_ids


@pytest.mark.parametrize("gen", KT.GENERATIONS)
def test_every_generation_states_its_tables_and_sources(gen):
    t = KT.tables(gen)
    for fit in (t.gemm, t.grouped_gemm):
        assert len(fit.source) > 60 and fit.points >= 20
        for p in (fit.k_half, fit.mn_half):
            assert p.low <= p.value <= p.high
        # the roofline shape reproduces its own table: mean |ln error| well under a factor 1.2
        assert fit.error < 0.18
    for name, cost in t.launch.items():
        assert cost.low <= cost.value <= cost.high and len(cost.source) > 60, name
    for name, why in t.notes.items():  # a borrowed table says from where and why
        assert why.startswith("from ") and len(why) > 30, name


def test_the_cached_fits_are_the_fits_of_the_tables_as_shipped():
    """hardware/kernels/fitted.json is what a fresh fit of today's tables gives (python -m perfmodel.specs.kernels
    rewrites it): a changed table or fit input without a refit is caught here."""
    cached = json.loads((KT._dir() / KT.FITTED).read_text())
    fresh = KT.fresh_fits()
    assert set(cached) == set(fresh)
    for k, v in fresh.items():
        for field in ("k_half", "mn_half", "t0_s", "error"):
            assert cached[k][field] == pytest.approx(v[field], rel=1e-9, abs=1e-15), (v["table"], field)


def test_a_fit_finds_the_shape_it_was_made_from():
    """fit_shape recovers k_half, mn_half and the floor of a synthetic table built with them (the grid's spacing)."""
    import numpy as np

    M, N, K = (np.array(v, dtype=float) for v in np.meshgrid([256, 1024, 4096], [256, 1024, 4096], [256, 1024, 4096]))
    M, N, K = M.ravel(), N.ravel(), K.ravel()
    peak, plateau, kh, mh, t0 = 1e15, 0.8, 150.0, 40.0, 5e-6
    t = 2 * M * N * K / (peak * plateau * K / (K + kh) * M / (M + mh) * N / (N + mh)) + t0
    eff = 2 * M * N * K / (peak * t)
    got = KT.fit_shape(M, N, K, eff, plateau, peak, True)
    assert got[0] == pytest.approx(kh, rel=0.1) and got[1] == pytest.approx(mh, rel=0.1)
    assert got[2] == pytest.approx(t0, rel=0.2) and got[3] < 0.01


@pytest.mark.parametrize("hid", catalog_ids("hardware"))
def test_show_hardware_kernels_prints_every_part(hid, capsys):
    out = run_json(capsys, ["show", "hardware", hid, "--kernels", "--json"])
    hw = load_hardware(hid)
    assert out["generation"] == hw.generation and out["gemm"]["rows"][0][0] == "k_half"
    assert out["launch"] and out["gemm"]["source"]


def test_kernels_is_for_hardware_only(capsys):
    err = run_err(capsys, ["show", "model", "llama3-8b", "--kernels"])
    assert "--kernels" in err and "only for `show hardware`" in err
