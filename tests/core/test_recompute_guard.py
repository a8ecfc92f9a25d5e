"""Selective recompute on a stack that names no recompute modules and no other selective policy (Composer's block
checkpointing): refused by predict, skipped by the planner, never inferred by validate. torchtitan's selective
policies (op-level and per-layer SAC) are predicted (test_torchtitan.py)."""

import pytest

from perfmodel.analysis.search import search
from perfmodel.analysis.validate import _mode_fits, _mode_grid, predict_row
from perfmodel.core.predict import Options, predict_grid
from perfmodel.errors import InputError
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.layout import Layout, LayoutGrid
from perfmodel.specs.model import load_model


def _setup():
    return load_model("llama3-8b"), load_hardware("h100-sxm")


def test_predict_refuses_selective_without_modules():
    m, hw = _setup()
    lay = Layout(gpus=8, gbs=64, seq=4096, tp=1, recompute="selective")
    with pytest.raises(InputError, match="names no selective-recompute modules"):
        predict_grid(m, hw, LayoutGrid.of(lay), Options(stack="llm-foundry-2023"))
    # with modules given, selective keeps less than none and recomputes something
    opts = Options(stack="llm-foundry-2023", stack_set=("recompute_modules=core_attn,mlp",))
    sel = predict_grid(m, hw, LayoutGrid.of(lay), opts)
    none = predict_grid(m, hw, LayoutGrid.of(Layout(gpus=8, gbs=64, seq=4096, tp=1)), opts)
    assert sel.memory_parts["activations"][0] < none.memory_parts["activations"][0]
    assert sel.breakdown_s["recompute"][0] > 0.0 == none.breakdown_s["recompute"][0]


def test_search_skips_selective_without_modules():
    m, hw = _setup()
    res = search(m, hw, 8, 64, 4096, Options(stack="llm-foundry-2023"))
    assert res.top is not None and 1 not in set(res.top.layouts.recompute.tolist())
    assert set(res.space.recompute.tolist()) == {0, 2}
    with_mods = search(
        m, hw, 8, 64, 4096, Options(stack="llm-foundry-2023", stack_set=("recompute_modules=core_attn",))
    )
    assert with_mods.legal == res.legal * 3 // 2  # none / full -> none / selective / full


def test_validate_never_infers_selective_without_modules():
    m, hw = _setup()
    opts = Options(stack="llm-foundry-2023")
    grid = _mode_grid(LayoutGrid.of(Layout(gpus=8, gbs=64, seq=4096, tp=1)), selective=False)
    assert grid.recompute.tolist() == [0, 0, 2]
    p = predict_grid(m, hw, grid, opts)
    assert _mode_fits(p, 1, selective=False)[1].tolist() == [False]
    _, used = predict_row(m, hw, Layout(gpus=8, gbs=64, seq=4096, tp=1), opts, recompute_published=False)
    assert used in ("", "full")
