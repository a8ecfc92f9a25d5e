"""Run the CLI in-process for tests: one helper for success (JSON) and one for input errors."""

from __future__ import annotations

import json

from perfmodel.cli import main

# the README's first command: Llama 3 70B on 64 H100, tp 8, pp 4, vp 5 (the layout most CLI tests start from)
PREDICT = "predict --model llama3-70b --hardware h100-sxm --gpus 64 --tp 8 --pp 4 --vp 5 --gbs 128 --seq 8192".split()


def run_json(capsys, args: list[str]) -> dict:
    """Run with --json, expect exit 0, return the parsed output."""
    rc = main([*args, "--json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def run_err(capsys, args: list[str]) -> str:
    """Run, expect exit 2 with exactly one 'error: ' line and no traceback; return that line."""
    rc = main(args)
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    assert rc == 2, (rc, out.out[-500:], out.err[-500:])
    lines = [l for l in out.err.splitlines() if l.strip()]
    assert len(lines) == 1, out.err
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]
