"""One error type for every bad input: it names the input, the field and the reason.

The CLI catches `InputError` and prints its message with a non-zero exit, never a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class InputError(ValueError):
    """A user-facing error: `where` (file or flag), `field`, `reason`."""

    def __init__(self, where: str, field: str, reason: str, details: dict | None = None):
        self.where, self.field, self.reason = where, field, reason
        self.details = details or {}  # extra JSON for --json error output (e.g. the unsupported rows)
        loc = f"{where}: " if where else ""
        fld = f"{field}: " if field else ""
        super().__init__(f"{loc}{fld}{reason}")


# The library names the input an error is about by its own name (`gpus`, `stack_set`, `set` for a hardware or
# cost override); the command line shows the flag that carries it. An input with no flag (a file path, "layout",
# "hardware h100-sxm") is shown as it is.
FLAGS = {
    "gpus": "--gpus",
    "gbs": "--gbs",
    "seq": "--seq",
    "tokens": "--tokens",
    "tokens_per_s_per_gpu": "--tokens-per-s-per-gpu",
    "days": "--days",
    "budget": "--budget",
    "set": "--set",
    "stack": "--stack",
    "stack_set": "--stack-set",
    "fix": "--fix",
    "max": "--max",
    "fix / max": "--fix / --max",
    "top": "--top",
    "sweep": "--sweep",
    "plot": "--plot",
    "out": "--out",
    "mode": "--mode",
    "rel": "--rel",
    "recompute": "--recompute",
    "precision": "--precision",
    "objective": "--objective",
    "buyer": "--buyer",
    "scaling_max_gpus": "--scaling-max-gpus",
    "arg": "--arg",
}


def cli_message(exc: InputError) -> str:
    """The error as the command line prints it: the input named by its flag (FLAGS)."""
    loc = FLAGS.get(exc.where, exc.where)
    return (f"{loc}: " if loc else "") + (f"{exc.field}: " if exc.field else "") + exc.reason


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """' (did you mean X?)' when a close match exists, else ''. A choice that starts with the name (a short
    form: 'gb200' for 'gb200-nvl72', 'h100' for 'h100-sxm') comes before an edit-distance neighbour ('b200'),
    the closest of them when several do."""
    options = [c for c in choices if c != name]
    lead = [c for c in options if len(name) >= 3 and c.startswith(name)]
    match = (
        difflib.get_close_matches(name, lead, n=1, cutoff=0.0)
        if lead
        else difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    )
    return f" (did you mean '{match[0]}'?)" if match else ""


# warnings a command raises while it runs, printed on stderr after its output (perfmodel.cli.main)
WARNINGS: list[str] = []


def warn(message: str | None) -> None:
    """A warning for the command line to print on stderr after the output (once, however often raised)."""
    if message and message not in WARNINGS:
        WARNINGS.append(message)
