"""Re-run the command examples of README.md and docs/*.md and write their output back in place.

    python3 docs/run_examples.py                  # run every example, rewrite its output
    python3 docs/run_examples.py --check          # run every example, exit 1 listing those whose output differs
    python3 docs/run_examples.py docs/check.md    # only these files (either mode)
    python3 docs/run_examples.py --list           # list the examples, run nothing

An example is a fenced block whose first line starts with "$ perfmodel":

    ```sh
    $ perfmodel predict --model llama3-70b ... \\
        --seq 8192                     (a line ending in a backslash continues the command)
    <output: everything up to the closing fence is replaced>
    ```

How a command runs: `perfmodel` becomes `<this interpreter> -m perfmodel`, so the package of this checkout runs
(cwd = the repository root, which `-m` puts first on sys.path); environment COLUMNS=100, NO_COLOR=1, TERM=dumb,
so rich prints plain text wrapped at 100 columns whatever the terminal; stdout and stderr together (an error line
is part of the example). A pipe into a filter, `$ perfmodel search ... | head -20` (head, tail, grep, sed), runs
through bash, perfmodel's stderr going into the pipe too. A command that exits non-zero without a pipe gets a last
line `[exit status N]`. Trailing spaces and trailing blank lines are dropped.

--check: a block differs when its new output, masked, differs from the written one, masked. Masking (MASKS below)
collapses every run of whitespace to one space (so a wrap that moves by a word is not a difference) and replaces
what changes from run to run: the planner's "scored in 0.02 s (500 klayouts/s)", elapsed times "in 26.9 s" and
size's "...GPUs; 1.8 s". A block preceded (on the line before its fence) by

    <!-- example: volatile -->    is re-run and rewritten but never compared;
    <!-- example: skip -->        is left as written and never run.

Examples run in file order, so one may use a file an earlier one wrote (write such files under /tmp, never in the
checkout). tests/cli/test_docs.py checks, without running them, that every example names a perfmodel subcommand.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
TIMEOUT_S = 600

# (pattern, replacement) applied in --check to both outputs after whitespace is collapsed to single spaces
MASKS: list[tuple[str, str]] = [
    (r"scored in [0-9.]+ s \([0-9.]+ [kMG]?layouts/s\)", "scored in <t> s (<n> layouts/s)"),  # search, size
    (r"\bin [0-9]+(?:\.[0-9]+)? s\b", "in <t> s"),  # recipes "checked ... in 26.9 s", report "in 2.2 s"
    (r"GPUs; [0-9]+(?:\.[0-9]+)? s\b", "GPUs; <t> s"),  # size: "... up to 1,048,576 GPUs; 1.8 s"
]

FENCE = re.compile(r"^(\s*)```")
MARKER = re.compile(r"<!--\s*example:\s*(volatile|skip)\s*-->")


@dataclass
class Example:
    path: Path
    start: int  # index of the opening fence line
    cmd_lines: list[str]  # "$ perfmodel ..." and its continuation lines, as written
    out_start: int  # index of the first output line
    end: int  # index of the closing fence line
    marker: str | None  # "volatile", "skip" or None

    @property
    def command(self) -> str:
        """The command as bash reads it (continuations joined), without the leading "$ "."""
        text = "\n".join(self.cmd_lines)[2:]
        return re.sub(r"\\\n\s*", " ", text)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.start + 1}"


def find_examples(path: Path) -> list[Example]:
    lines = path.read_text(encoding="utf-8").split("\n")
    found, i = [], 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            close = next((j for j in range(i + 1, len(lines)) if FENCE.match(lines[j])), None)
            if close is None:
                break
            if i + 1 < close and lines[i + 1].startswith("$ perfmodel"):
                k = i + 1
                while lines[k].endswith("\\") and k + 1 < close:
                    k += 1
                prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
                m = MARKER.search(prev)
                found.append(Example(path, i, lines[i + 1 : k + 1], k + 1, close, m.group(1) if m else None))
            i = close + 1
        else:
            i += 1
    return found


def split_pipe(command: str) -> tuple[str, str]:
    """The command before its first unquoted `|`, and the rest from that `|` on ('' without a pipe)."""
    quote = None
    for n, ch in enumerate(command):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "|":
            return command[:n].rstrip(), command[n:]
    return command, ""


def run(example: Example) -> str:
    head, pipe = split_pipe(example.command)
    words = shlex.split(head)
    if words[:1] != ["perfmodel"]:
        raise SystemExit(f"{example.where}: not a perfmodel command: {head}")
    script = " ".join([shlex.quote(sys.executable), "-m", head]) + " 2>&1" + (" " + pipe if pipe else "")
    env = {**os.environ, **ENV}
    proc = subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT_S
    )
    out = proc.stdout.decode("utf-8", errors="replace").split("\n")
    out = [line.rstrip() for line in out]
    while out and not out[-1]:
        out.pop()
    if proc.returncode and not pipe:
        out.append(f"[exit status {proc.returncode}]")
    return "\n".join(out)


def masked(text: str) -> str:
    text = " ".join(text.split())
    for pattern, repl in MASKS:
        text = re.sub(pattern, repl, text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="Markdown files (default: README.md and docs/*.md)")
    ap.add_argument("--check", action="store_true", help="compare instead of rewriting; exit 1 if any differs")
    ap.add_argument("--list", action="store_true", help="list the examples and run nothing")
    args = ap.parse_args(argv)
    files = [p.resolve() for p in args.files] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    differ: list[str] = []
    total = 0
    for path in files:
        examples = find_examples(path)
        if args.list:
            for ex in examples:
                print(f"{ex.where}: {ex.command}" + (f"  [{ex.marker}]" if ex.marker else ""))
            continue
        lines = path.read_text(encoding="utf-8").split("\n")
        new_outputs: dict[int, str] = {}
        for ex in examples:  # in file order: a later example may read what an earlier one wrote
            if ex.marker == "skip":
                continue
            total += 1
            print(f"{ex.where}: {ex.command}", file=sys.stderr)
            new_outputs[ex.start] = run(ex)
        if args.check:
            for ex in examples:
                if ex.start not in new_outputs or ex.marker == "volatile":
                    continue
                old = "\n".join(lines[ex.out_start : ex.end])
                if masked(old) != masked(new_outputs[ex.start]):
                    differ.append(f"{ex.where}: {ex.command}")
            continue
        for ex in reversed(examples):  # from the end, so earlier indices stay valid while rewriting
            if ex.start in new_outputs:
                lines[ex.out_start : ex.end] = new_outputs[ex.start].split("\n") if new_outputs[ex.start] else []
        path.write_text("\n".join(lines), encoding="utf-8")
    if args.list:
        return 0
    if args.check:
        if differ:
            print(f"{len(differ)} of {total} examples differ from their written output:")
            print("\n".join(f"  {d}" for d in differ))
            return 1
        print(f"all {total} examples match their written output (after MASKS)")
        return 0
    print(f"rewrote the output of {total} examples", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
