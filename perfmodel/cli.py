"""The `perfmodel` command line. Each command lives in perfmodel/commands/<name>.py and exposes a
click command named `command`; this module only collects them and turns InputError into one clear
message with exit status 2 (never a traceback).

Commands load lazily: `perfmodel predict ...` imports perfmodel.commands.predict only, and `perfmodel
--help` none of them (its listing comes from HELP below, which tests/cli/test_startup.py checks against the
commands themselves). The console script is perfmodel/__main__.py's `run`: this module's `run` (`main`
plus a fast exit) behind a guard that keeps Ctrl-C clean during the start-up imports too."""

from __future__ import annotations

import errno
import importlib
import json
import os
import sys

import click

from perfmodel.errors import FLAGS, InputError, cli_message

# one module per command; a module that fails to import is reported, not fatal for the others
COMMANDS = [
    "catalog",
    "predict",
    "validate",
    "economics",
    "search",
    "recipes",
    "sensitivity",
    "releases",
    "scaling",
    "report",
    "size",
    "calibrate",
    "check",
]

# command name -> (module in COMMANDS, first paragraph of its help): the `--help` listing without importing
# any command. A module in COMMANDS with no entry here still works (it is imported to list its commands).
HELP: dict[str, tuple[str, str]] = {
    "calibrate": (
        "calibrate",
        "Fit the global constants to measured runs (validation/README.md CSV schema) and write a calibration file. Fits on every row, reports each row out of sample by cross-validation. --calibration FILE starts from that file instead of the shipped constants.",
    ),
    "check": (
        "check",
        "Read a Megatron-LM / Megatron-Bridge / NeMo, torchtitan, MaxText, llm-foundry, DeepSpeed, Hugging Face Trainer, nanotron, OLMo or nanoGPT (and modded-nanogpt) training LOG: what it measured, and where the log states the whole run, the same run predicted with the gap explained (ranked what-ifs, overheads).",
    ),
    "compare": (
        "economics",
        "Systems side by side: best layout, tokens/s/GPU, MFU, $/GPU-h, $/1M tokens, J/token, goodput, perf/TCO.",
    ),
    "cost": (
        "economics",
        "Cost, energy and time of training TOKENS: per 1M tokens, whole run, households; nominal and after reliability.",
    ),
    "explain": (
        "catalog",
        "Show how a count is derived: the general sympy formula, the model's expression of S, its value.",
    ),
    "list": ("catalog", "List the catalog: hardware, models or software stacks, with key figures."),
    "predict": ("predict", "Predict one training step of MODEL on HARDWARE with a parallel layout."),
    "recipes": ("recipes", "Rank each published recipe's layout among the planner's candidates."),
    "releases": (
        "releases",
        "The release series: per software release, its measured rows vs the prediction with that release's own stack preset.",
    ),
    "report": (
        "report",
        "Write an HTML report (index.html + PNGs): breakdown, roofline, top layouts, scaling, validation scatter and the H100 vs GB200 NVL72 cost/energy comparison.",
    ),
    "scaling": (
        "scaling",
        "Weak or strong scaling over GPU counts: step time, tokens/s/GPU, MFU, $/1M tokens, J/token, what grows (DP communication, bubble, all-to-all) and goodput (failures dominate at 100,000 GPUs).",
    ),
    "search": ("search", "Enumerate every legal layout, score them all, print the best and the Pareto fronts."),
    "sensitivity": (
        "sensitivity",
        "Elasticity of step time and cost per token to each hardware parameter, ranked (which knob matters), or --sweep tables.",
    ),
    "show": ("catalog", "Every field of a hardware, model or stack spec (catalog id or file), with units and sources."),
    "size": ("size", "Size a cluster for TOKENS of training: by deadline, budget or GPU count, per system."),
    "tco": (
        "economics",
        "Total cost of ownership: $ per GPU-hour with its breakdown (capital, power, colocation, support).",
    ),
    "validate": (
        "validate",
        "Predict every measured run of FILE.csv (validation/README.md schema) and report the errors. Without FILE: every measured set shipped with perfmodel (validation/runs.csv and validation/independent/*.csv), with a per-set table. Rows that cannot be scored (a bad cell, an implied MFU above 100%, a layout that fits with no recompute mode) are listed as unsupported with the reason; a repeated run_id is an error, and so is a file with no row predicted (exit 2).",
    ),
}


def module_commands(module: str) -> list[click.Command]:
    """The click commands of perfmodel.commands.<module> (its COMMANDS list, else its `command`)."""
    mod = importlib.import_module(f"perfmodel.commands.{module}")
    return [c for c in getattr(mod, "COMMANDS", [getattr(mod, "command", None)]) if c is not None]


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command runs (or is asked for)."""

    def _load(self, module: str) -> None:
        for cmd in module_commands(module):
            if cmd.name not in self.commands:
                self.add_command(cmd)

    def _unlisted(self) -> list[str]:
        listed = {mod for mod, _ in HELP.values()}
        return [mod for mod in COMMANDS if mod not in listed]

    def list_commands(self, ctx: click.Context) -> list[str]:
        for mod in self._unlisted():
            self._load(mod)
        return sorted({*HELP, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            for mod in [HELP[cmd_name][0]] if cmd_name in HELP else self._unlisted():
                self._load(mod)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click.Group.format_commands with the short help of a command not yet imported taken from HELP
        names = self.list_commands(ctx)
        cmds = [(n, self.commands.get(n) or click.Command(n, help=HELP[n][1])) for n in names]
        cmds = [(n, c) for n, c in cmds if not c.hidden]
        if cmds:
            limit = formatter.width - 6 - max(len(n) for n, _ in cmds)
            with formatter.section("Commands"):
                formatter.write_dl([(n, c.get_short_help_str(limit)) for n, c in cmds])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="perfmodel")
def cli() -> None:
    """Analytic performance, memory and cost model for LLM training on GPU clusters."""


def _json_error(argv: list[str], status: int, message: str, exc: InputError | None = None) -> None:
    """With --json, an error is also a JSON object on stdout (a script reads one document either way):
    {"error": {"message", "where", "field", "reason", ...details}, "exit_status": N}."""
    if "--json" not in argv:
        return
    err: dict = {"message": message}
    if exc is not None:
        err.update({"where": FLAGS.get(exc.where, exc.where), "field": exc.field, "reason": exc.reason, **exc.details})
    from perfmodel.jsonable import to_jsonable

    click.echo(json.dumps(to_jsonable({"error": err, "exit_status": status}), indent=2))


def main(argv: list[str] | None = None) -> int:
    stdout = sys.stdout
    args = list(sys.argv[1:] if argv is None else argv)
    from perfmodel.errors import WARNINGS

    WARNINGS.clear()
    try:
        cli.main(args=argv, standalone_mode=False)
        for w in WARNINGS:
            click.echo(f"warning: {w}", err=True)
    except InputError as exc:
        click.echo(f"error: {cli_message(exc)}", err=True)
        _json_error(args, 2, cli_message(exc), exc)
        return 2
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C into Abort; keep the message a long command put on the KeyboardInterrupt
        ki = exc.__cause__ or exc.__context__
        click.echo(str(ki) if isinstance(ki, KeyboardInterrupt) and str(ki) else "interrupted", err=True)
        return 130
    except KeyboardInterrupt as exc:
        # a long command re-raises Ctrl-C with how far it got ("interrupted after 3 of 12 chunks; ...")
        click.echo(str(exc) or "interrupted", err=True)
        return 130
    except click.UsageError as exc:  # a bad flag or flag value: one line, like InputError
        cmd = exc.ctx.command_path if exc.ctx else "perfmodel"
        click.echo(f"error: {exc.format_message()} (see `{cmd} --help`)", err=True)
        _json_error(args, exc.exit_code, exc.format_message())
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except SystemExit as exc:
        # a closed stdout (`perfmodel ... | head`): click (click.echo, sys.stdout.write: its `except OSError`)
        # and rich (console.print: Console.on_broken_pipe, stdout pointed at devnull) both turn the EPIPE into
        # sys.exit(1); a reader that stopped reading is not an error
        # (click >= 8.5 exits after its handler, so the EPIPE is no longer the context; it still swaps
        # sys.stdout for a wrapper that swallows the final flush, which marks the case)
        ctx = exc.__context__
        if (isinstance(ctx, OSError) and ctx.errno == errno.EPIPE) or sys.stdout is not stdout:
            return 0
        raise
    return 0


def run() -> None:
    """The console script: `main`, then stdout and stderr flushed and the process ended with os._exit,
    skipping the interpreter's teardown (about 0.1-0.2 s of freeing numpy / sympy / pydantic objects).
    Nothing is lost: every command writes through sys.stdout / sys.stderr or closes its files. Never
    used in-process (tests call `main`)."""
    try:
        rc = main()
    except SystemExit as exc:  # sys.exit inside a command: same status as Python would give
        if exc.code is None or isinstance(exc.code, int):
            rc = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            rc = 1
    except KeyboardInterrupt as exc:  # Ctrl-C outside main's own handler (its first lines): the same line
        print(str(exc) or "interrupted", file=sys.stderr)
        rc = 130
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that closed the pipe, or a closed stream: nothing to add
            pass
    os._exit(rc)
