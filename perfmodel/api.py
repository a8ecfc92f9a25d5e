"""The Python API in one place: load specs, check a layout, predict.

    from perfmodel.api import predict, Layout
    p = predict("llama3-70b", "h100-sxm", Layout(gpus=64, gbs=128, seq=8192, tp=4, pp=4), precision="bf16")
    p.row(0)["tokens_per_s_per_gpu"]
"""
from __future__ import annotations

from .calibration import Constants, constants
from .hardware import HardwareSpec, load_hardware
from .layout import Layout, LayoutGrid, check_layout
from .model import ModelSpec, load_model
from .predict import Options, Prediction, predict_grid

__all__ = ["Layout", "LayoutGrid", "Options", "Prediction", "load_model", "load_hardware", "predict", "predict_many"]


def check(model: ModelSpec, layout: Layout) -> None:
    a = model.attention
    check_layout(layout, model.num_layers, a.num_heads, a.num_kv_heads, model.moe.num_experts if model.moe else None)


def predict(model: str | ModelSpec, hardware: str | HardwareSpec, layout: Layout, precision: str = "bf16",
            attention: str = "causal", routing: str = "real", consts: Constants | None = None) -> Prediction:
    """Predict one layout (validated first: a clear InputError names the broken rule). `consts`: the
    global constants to use (a software profile's, perfmodel/profiles.py); default the calibrated ones."""
    m, hw = load_model(model), load_hardware(hardware)
    check(m, layout)
    return predict_grid(m, hw, LayoutGrid.of(layout), Options(precision, attention, routing, consts or constants()))  # type: ignore[arg-type]


def predict_many(model: str | ModelSpec, hardware: str | HardwareSpec, grid: LayoutGrid, precision: str = "bf16",
                 attention: str = "causal", routing: str = "real", consts: Constants | None = None) -> Prediction:
    """Vectorised: score every layout of `grid` at once (legality is the caller's job, see layout.legality)."""
    m, hw = load_model(model), load_hardware(hardware)
    return predict_grid(m, hw, grid, Options(precision, attention, routing, consts or constants()))  # type: ignore[arg-type]
