"""The Python API in one place: load specs, check a layout, predict.

from perfmodel.api import predict, Layout
p = predict("llama3-70b", "h100-sxm", Layout(gpus=64, gbs=128, seq=8192, tp=4, pp=4), precision="bf16")
p.row(0)["tokens_per_s_per_gpu"]
"""

from __future__ import annotations

import os

from perfmodel.core.calibration import Constants, constants
from perfmodel.core.predict import Options, Prediction, predict_grid
from perfmodel.errors import InputError, did_you_mean
from perfmodel.specs.hardware import PRECISIONS, HardwareSpec, load_hardware
from perfmodel.specs.layout import Layout, LayoutGrid, check_layout
from perfmodel.specs.model import ModelSpec, load_model

__all__ = ["Layout", "LayoutGrid", "Options", "Prediction", "load_model", "load_hardware", "predict", "predict_many"]


CHOICES = {"precision": PRECISIONS, "attention": ("causal", "full"), "routing": ("real", "balanced")}


def _spec_ref(value: object, kind: str, cls: type) -> None:
    if not isinstance(value, (str, os.PathLike, cls)):
        raise InputError(
            kind, "", f"expected a catalog id, a spec file path or a {cls.__name__} (got {type(value).__name__})"
        )


def check_args(
    model: object, hardware: object, precision: object, attention: object, routing: object, consts: object
) -> None:
    """The Python API's arguments other than the layout: one InputError naming the bad one."""
    _spec_ref(model, "model", ModelSpec)
    _spec_ref(hardware, "hardware", HardwareSpec)
    for name, value in (("precision", precision), ("attention", attention), ("routing", routing)):
        if value not in CHOICES[name]:
            hint = did_you_mean(value, CHOICES[name]) if isinstance(value, str) else ""
            raise InputError(name, repr(value), f"unknown {name}{hint}; one of {', '.join(CHOICES[name])}")
    if consts is not None and not isinstance(consts, Constants):
        raise InputError("consts", "", f"expected a calibration.Constants or None (got {type(consts).__name__})")


def check(model: ModelSpec, layout: Layout) -> None:
    if not isinstance(layout, Layout):
        raise InputError("layout", "", f"expected a perfmodel.api.Layout (got {type(layout).__name__})")
    a = model.attention
    check_layout(layout, model.num_layers, a.num_heads, a.num_kv_heads, model.moe.num_experts if model.moe else None)


def predict(
    model: str | ModelSpec,
    hardware: str | HardwareSpec,
    layout: Layout,
    precision: str = "bf16",
    attention: str = "causal",
    routing: str = "real",
    consts: Constants | None = None,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> Prediction:
    """Predict one layout (validated first: a clear InputError names the broken rule). `consts`: the
    global constants to use (a calibration file's); default the calibrated ones. `stack`: a stack preset id
    or file (None: the default stack), `stack_set`: its feature=value overrides."""
    check_args(model, hardware, precision, attention, routing, consts)
    m, hw = load_model(model), load_hardware(hardware)  # type: ignore[arg-type]
    check(m, layout)
    return predict_grid(
        m,
        hw,
        LayoutGrid.of(layout),
        Options(
            precision,
            attention,
            routing,
            consts or constants(),  # type: ignore[arg-type]
            stack,
            tuple(stack_set),
        ),
    )


def predict_many(
    model: str | ModelSpec,
    hardware: str | HardwareSpec,
    grid: LayoutGrid,
    precision: str = "bf16",
    attention: str = "causal",
    routing: str = "real",
    consts: Constants | None = None,
    stack: str | None = None,
    stack_set: tuple[str, ...] = (),
) -> Prediction:
    """Vectorised: score every layout of `grid` at once (legality is the caller's job, see layout.legality)."""
    check_args(model, hardware, precision, attention, routing, consts)
    if not isinstance(grid, LayoutGrid):
        raise InputError("grid", "", f"expected a perfmodel.api.LayoutGrid (got {type(grid).__name__})")
    m, hw = load_model(model), load_hardware(hardware)  # type: ignore[arg-type]
    return predict_grid(
        m,
        hw,
        grid,
        Options(
            precision,
            attention,
            routing,
            consts or constants(),  # type: ignore[arg-type]
            stack,
            tuple(stack_set),
        ),
    )
