"""The `perfmodel` command line. Each command lives in perfmodel/commands/<name>.py and exposes a
click command named `command`; this module only collects them and turns InputError into one clear
message with exit status 2 (never a traceback)."""
from __future__ import annotations

import errno
import importlib
import sys

import click

from .errors import InputError

# one module per command; a module that fails to import is reported, not fatal for the others
COMMANDS = ["catalog", "predict", "validate", "economics", "search", "recipes", "sensitivity", "profiles", "scaling",
            "report", "size", "check"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="perfmodel")
def cli() -> None:
    """Analytic performance, memory and cost model for LLM training on GPU clusters."""


try:
    for _name in COMMANDS:
        _mod = importlib.import_module(f"perfmodel.commands.{_name}")
        for _cmd in getattr(_mod, "COMMANDS", [getattr(_mod, "command", None)]):
            if _cmd is not None:
                cli.add_command(_cmd)
except KeyboardInterrupt:        # Ctrl-C while numpy / sympy load (about a second): no traceback either
    click.echo("interrupted", err=True)
    sys.exit(130)


def main(argv: list[str] | None = None) -> int:
    stdout = sys.stdout
    try:
        cli.main(args=argv, standalone_mode=False)
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
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
    except click.UsageError as exc:         # a bad flag or flag value: one line, like InputError
        cmd = exc.ctx.command_path if exc.ctx else "perfmodel"
        click.echo(f"error: {exc.format_message()} (see `{cmd} --help`)", err=True)
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


if __name__ == "__main__":
    sys.exit(main())
