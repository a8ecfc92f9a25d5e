"""The console script `perfmodel` and `python -m perfmodel`: perfmodel.cli.run behind a guard that makes
Ctrl-C clean from perfmodel's first line on, its start-up imports included (click, then each command's
numpy / sympy / pydantic: a visible share of a second on a cold or loaded machine). An interrupt at any
moment ends with one line on stderr and exit status 130, never a traceback. Nothing but os and sys (loaded
with the interpreter) is imported before the guard."""

import os
import sys


def run() -> None:
    try:
        from perfmodel.cli import run as cli_run  # the slow part of start-up

        cli_run()  # main, then os._exit with its status
    except KeyboardInterrupt as exc:  # during the imports, or outside main's own handler
        try:
            sys.stderr.write(f"{str(exc) or 'interrupted'}\n")
            sys.stderr.flush()
        finally:
            os._exit(130)


if __name__ == "__main__":
    run()
