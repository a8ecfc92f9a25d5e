"""Shared CLI plumbing: the flags several commands take, --json output, progress bars on stderr. The commands'
text is perfmodel/render/."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Callable

import click
from rich.console import Console

from perfmodel.analysis.checks import warn_context
from perfmodel.core.predict import Options
from perfmodel.economics.tco import BUYERS
from perfmodel.jsonable import to_jsonable
from perfmodel.specs.hardware import PRECISIONS, HardwareSpec, resolve_hardware
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import ModelSpec, load_model
from perfmodel.specs.stack import check_stack

if TYPE_CHECKING:
    from rich.progress import Progress


def stderr_progress(label: str, count: str, show: bool = True) -> Progress:
    """A transient progress bar (label, bar, count, elapsed time) on stderr, drawn only when `show` and
    stderr is a terminal: never mixed into --json output, never written into a log file. `label` and
    `count` are rich TextColumn formats, e.g. "{task.description}", "{task.completed}/{task.total} rows"."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    return Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn(count),
        TimeElapsedColumn(),
        console=err,
        disable=not (show and err.is_terminal),
        transient=True,
    )


class PlannerProgress:
    """The planner's progress on a terminal's stderr (stderr_progress), one bar per GPU count, and how far it got:
    the one line a Ctrl-C prints (perfmodel.cli, exit 130)."""

    def __init__(self, gpus: int, show: bool) -> None:
        self.bar = stderr_progress("{task.description}", "{task.completed}/{task.total} chunks", show)
        self.tasks: dict[int, Any] = {}
        self.gpus, self.done, self.total = gpus, 0, 0

    def on_size(self, n: int) -> Callable[[int, int], None]:
        """search_sizes' callback: the search at `n` GPUs starts, and reports (done, total) chunks."""
        self.gpus, self.done, self.total = n, 0, 0
        self.tasks[n] = self.bar.add_task(f"{n:,} GPUs", total=None)
        return lambda done, total: self.step(n, done, total, visible=total > 1)

    def step(self, n: int, done: int, total: int, visible: bool = True) -> None:
        """`done` of `total` chunks scored at `n` GPUs (scaling's on_chunk)."""
        self.gpus, self.done, self.total = n, done, total
        if n not in self.tasks:
            self.tasks[n] = self.bar.add_task(f"{n:,} GPUs", total=total)
        self.bar.update(self.tasks[n], completed=done, total=total, visible=visible)

    def interrupted(self, where: bool = True) -> KeyboardInterrupt:
        got = f"after {self.done} of {self.total} chunks" if self.total else "before the first chunk was scored"
        of = f" of the {self.gpus:,}-GPU search" if where else ""
        return KeyboardInterrupt(f"interrupted {got}{of}; no results written")


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(to_jsonable(obj), indent=2))


_precision = click.option(
    "--precision",
    default="bf16",
    show_default=True,
    type=click.Choice(PRECISIONS),
    help="number format of the GEMMs",
)

_attention = click.option(
    "--attention",
    "attention",
    default="causal",
    show_default=True,
    type=click.Choice(["causal", "full"]),
    help="attention-FLOPs convention for MFU (DGXC recipes count full)",
)

_routing = click.option(
    "--routing",
    default="real",
    show_default=True,
    type=click.Choice(["real", "balanced"]),
    help="MoE routing: real (load imbalance) or force-balanced",
)


def _use_calibration(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """--calibration FILE: its constants for this command (perfmodel.core.calibration.use), restored after it."""
    if value is not None:
        from perfmodel.core import calibration

        before = calibration.use(value)
        ctx.call_on_close(lambda: calibration.use(before))


def calibration_option(f: Callable) -> Callable:
    """--calibration FILE (a file written by `perfmodel calibrate`), as every predicting command takes it."""
    if any(p.name == "calibration_file" for p in getattr(f, "__click_params__", [])):
        return f
    return click.option(
        "--calibration",
        "calibration_file",
        metavar="FILE",
        default=None,
        expose_value=False,
        is_eager=True,
        callback=_use_calibration,
        help="global constants from a calibration file written by `perfmodel calibrate` "
        "[default: the shipped perfmodel/calibration.toml]",
    )(f)


buyer_option = click.option(
    "--buyer",
    default="hyperscaler",
    show_default=True,
    type=click.Choice(BUYERS),
    help="buyer type whose cost assumptions apply (perfmodel/costs.toml)",
)


def spares_option(f: Callable) -> Callable:
    """--spares charged|excluded: one flag on every economics command (perfmodel/economics/reliability.py)."""
    return click.option(
        "--spares",
        default="charged",
        show_default=True,
        type=click.Choice(["charged", "excluded"]),
        help="in-rack hot spares (NVL72: 8 of 72 GPUs per rack): charged to training as installed "
        "hardware, or excluded",
    )(f)


def precision_option(f: Callable) -> Callable:
    """--precision and --calibration FILE, as every predicting command takes them."""
    return calibration_option(_precision(f))


def convention_options(f: Callable) -> Callable:
    """--attention (the MFU convention) and --routing (MoE), as every predicting command takes them."""
    return _attention(_routing(f))


recompute_option = click.option(
    "--recompute", default="none", show_default=True, type=click.Choice(["none", "selective", "full"])
)
AXES = ("tp", "pp", "vp", "cp", "ep", "etp", "fsdp", "mbs")  # the parallel axes of a layout, as flags


def _axes(etp: Callable) -> list[Callable]:
    """--tp --pp --vp --cp --ep, then `etp` (--etp, whose default differs by command), --fsdp and --mbs."""
    return [
        click.option("--tp", type=int, default=1, show_default=True, help="tensor parallel (+ sequence parallel)"),
        click.option("--pp", type=int, default=1, show_default=True, help="pipeline parallel"),
        click.option("--vp", type=int, default=1, show_default=True, help="virtual stages per pipeline rank"),
        click.option("--cp", type=int, default=1, show_default=True, help="context parallel"),
        click.option("--ep", type=int, default=1, show_default=True, help="expert parallel"),
        etp,
        click.option("--fsdp", is_flag=True, help="shard parameters, grads and optimizer over dp (ZeRO-3)"),
        click.option("--mbs", type=int, default=1, show_default=True, help="micro-batch size (sequences)"),
    ]


def axis_options(f: Callable) -> Callable:
    """The parallel axes of a fixed layout (--etp default 1), passed to the command as `axes`: Layout's keyword
    arguments."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kw: Any) -> Any:
        return f(*args, axes={k: kw.pop(k) for k in AXES}, **kw)

    etp = click.option("--etp", type=int, default=1, show_default=True, help="expert tensor parallel")
    for o in reversed(_axes(etp)):
        wrapper = o(wrapper)
    return wrapper


@dataclass(frozen=True)
class LayoutFlags:
    """What layout_options parsed, passed to the command as one `flags` argument: the model and hardware as
    given, the layout and the conventions of the prediction."""

    model_ref: str
    hardware_ref: str
    gpus: int
    tp: int
    pp: int
    vp: int
    cp: int
    ep: int
    etp: int | None
    fsdp: bool
    mbs: int
    gbs: int | None
    seq: int | None
    precision: str
    recompute: str
    attention: str
    routing: str

    def specs(self, sets: tuple[str, ...] | list[str] = ()) -> tuple[ModelSpec, HardwareSpec]:
        """The model and the (what-if) hardware; warns where --seq exceeds the model's context."""
        m, hw = load_model(self.model_ref), resolve_hardware(self.hardware_ref, sets)
        warn_context(m, self.seq)
        return m, hw

    def layout(self, etp: int = 1) -> Layout:
        """The layout, with `etp` where --etp is not given."""
        kw = {k: getattr(self, k) for k in ("gpus", "gbs", "seq", *AXES, "recompute")}
        return Layout(**{**kw, "etp": etp if self.etp is None else self.etp})

    def options(self, stack: str | None, stack_set: tuple[str, ...]) -> Options:
        """The prediction options (the active calibration's constants)."""
        return Options(self.precision, self.attention, self.routing, stack=stack, stack_set=stack_set)  # type: ignore[arg-type]


def layout_options(f: Callable) -> Callable:
    """The layout flags shared by predict, cost and sensitivity, passed to the command as `flags` (LayoutFlags)."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kw: Any) -> Any:
        return f(*args, flags=LayoutFlags(**{k.name: kw.pop(k.name) for k in fields(LayoutFlags)}), **kw)

    opts = [
        click.option("--model", "model_ref", required=True, help="catalog id or spec file (TOML / HF config.json)"),
        click.option("--hardware", "hardware_ref", required=True, help="catalog id or TOML spec file"),
        click.option("--gpus", type=int, required=True, help="number of GPUs"),
        *_axes(
            click.option(
                "--etp",
                type=int,
                default=None,
                help="expert tensor parallel [default: tp, as Megatron-Core; 1 for a dense model or where ep*tp does not divide tp*cp*dp]",
            )
        ),
        click.option("--gbs", type=int, required=True, help="global batch (sequences)"),
        click.option("--seq", type=int, required=True, help="sequence length (tokens)"),
        _precision,
        recompute_option,
        _attention,
        _routing,
    ]
    if not any(p.name == "sets" for p in getattr(f, "__click_params__", [])):  # a command's own --set wins
        opts.append(
            click.option(
                "--set",
                "sets",
                multiple=True,
                metavar="FIELD=VALUE",
                help="what-if hardware: override a spec field (repeatable), e.g. "
                "scale_up.domain_size=144, nvlink_domain=144, nic_gbit_s=800, hbm_gb=288",
            )
        )
    for o in reversed(opts):
        wrapper = o(wrapper)
    return calibration_option(wrapper)


# ---- the software stack: --stack ID|FILE, --stack-set FEATURE=VALUE ----------------------------------------


def stack_options(f: Callable) -> Callable:
    """--stack ID|FILE and --stack-set FEATURE=VALUE (repeatable), as every predicting command takes them: the
    command receives `stack` (preset id or file, None = the `default` stack) and `stack_set` (a tuple),
    checked, for perfmodel.core.predict.Options."""
    if any(p.name == "stack_set" for p in getattr(f, "__click_params__", [])):
        return f

    @functools.wraps(f)
    def wrapper(*args: Any, stack: str | None = None, stack_set: tuple[str, ...] = (), **kw: Any) -> Any:
        stack_set = tuple(stack_set)
        check_stack(stack, stack_set)
        return f(*args, stack=stack, stack_set=stack_set, **kw)

    for o in reversed(
        [
            click.option(
                "--stack",
                "stack",
                default=None,
                metavar="ID|FILE",
                help="software stack: a preset id (`perfmodel list stacks`) or a stack TOML file [default: default]",
            ),
            click.option(
                "--stack-set",
                "stack_set",
                multiple=True,
                metavar="FEATURE=VALUE",
                help="override a stack feature (repeatable), e.g. tp_overlap=none, cuda_graphs=per_layer "
                "(`perfmodel show stack default` lists them)",
            ),
        ]
    ):
        wrapper = o(wrapper)
    return wrapper
