"""The documentation (issue 24): README.md is a front door of at most 250 lines whose links resolve, docs/README.md
indexes every page, and every `$ perfmodel` example of README.md and docs/*.md names a subcommand that `perfmodel
--help` lists, with options that subcommand has. The examples are not run here (too slow): their output is
regenerated and compared by hand with `python3 docs/run_examples.py [--check]`, whose parser this test uses."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

_spec = importlib.util.spec_from_file_location("run_examples", DOCS / "run_examples.py")
run_examples = importlib.util.module_from_spec(_spec)
sys.modules["run_examples"] = run_examples  # dataclasses look their module up while the class is built
_spec.loader.exec_module(run_examples)

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation other than - and _ dropped, spaces to -."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out, in_fence = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (m := re.match(r"#{1,6}\s+(.*)", line)):
            out.add(slug(m.group(1)))
    return out


def local_links(path: Path) -> list[tuple[Path, str]]:
    """(target file, anchor or '') of every relative link of a Markdown file, outside fenced blocks."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    found = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        found.append(((path.parent / file).resolve() if file else path, anchor))
    return found


def test_readme_is_at_most_250_lines():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= 250, f"README.md has {n} lines; detail belongs in docs/"


def test_readme_links_resolve():
    links = local_links(README)
    linked_docs = {p for p, _ in links if p.parent == DOCS and p.suffix == ".md"}
    assert len(linked_docs) >= 10, "README.md should link every docs page"
    for target, anchor in links:
        assert target.exists(), f"README.md links {target.relative_to(ROOT)}, which does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target), f"README.md links {target.relative_to(ROOT)}#{anchor}: no such heading"


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_docs_links_resolve(page):
    for target, anchor in local_links(page):
        assert target.exists(), f"{page.name} links {target}, which does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target), f"{page.name} links {target.name}#{anchor}: no such heading"


def test_docs_index_lists_every_page():
    indexed = {p for p, _ in local_links(DOCS / "README.md")}
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "README.md" and p.resolve() not in indexed]
    assert not missing, f"docs/README.md does not link {missing}"


def listed_subcommands() -> set[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    out = subprocess.run(
        [sys.executable, "-m", "perfmodel", "--help"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    body = out.split("Commands:", 1)[1]
    return {m.group(1) for m in re.finditer(r"^  (\S+)\s", body, flags=re.M)}


def option_names(cmd: click.Command) -> set[str]:
    names = {"--help", "-h"}
    for p in cmd.params:
        names.update(getattr(p, "opts", []))
        names.update(getattr(p, "secondary_opts", []))
    return names


def test_examples_name_real_subcommands():
    from perfmodel.cli import cli

    subcommands = listed_subcommands()
    examples = [ex for page in pages() for ex in run_examples.find_examples(page)]
    assert len(examples) >= 30, "the example parser found too few `$ perfmodel` blocks"
    ctx = click.Context(cli)
    for ex in examples:
        head, _ = run_examples.split_pipe(ex.command)
        argv = shlex.split(head)
        assert argv[0] == "perfmodel" and len(argv) > 1, ex.where
        assert argv[1] in subcommands, f"{ex.where}: `perfmodel {argv[1]}` is not listed by perfmodel --help"
        cmd = cli.get_command(ctx, argv[1])
        rest = argv[2:]
        if isinstance(cmd, click.Group):
            assert rest and rest[0] in cmd.list_commands(ctx), f"{ex.where}: no `perfmodel {argv[1]} {rest[:1]}`"
            cmd, rest = cmd.get_command(ctx, rest[0]), rest[1:]
        known = option_names(cmd)
        for word in rest:
            if word.startswith("--"):
                assert word.split("=", 1)[0] in known, f"{ex.where}: `perfmodel {argv[1]}` has no option {word}"


def test_example_output_is_filled():
    """run_examples.py has been run: no example block is left without output."""
    empty = [ex.where for page in pages() for ex in run_examples.find_examples(page) if ex.out_start == ex.end]
    assert not empty, f"examples without output (run python3 docs/run_examples.py): {empty}"
