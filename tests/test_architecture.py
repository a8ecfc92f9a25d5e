"""The package's shape (issue 24): layers that import only downwards, no import circle, commands that only
parse, call the library and render, and no function with more than 16 positional parameters.

Layers, lowest first: errors; specs (what goes in); core (the performance model) and economics (dollars and
joules, which read no prediction); api (the Python facade over core) and analysis (what reads predictions);
report (the HTML report) and render (the commands' text, one module per command group); commands and the CLI
on top. An import under `if TYPE_CHECKING:` is for annotations only and not an edge."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PKG = Path(__file__).resolve().parents[1] / "perfmodel"
LAYER = {
    "errors": 0,
    "jsonable": 0,
    "specs": 1,
    "core": 2,
    "economics": 2,
    "api": 3,
    "analysis": 3,
    "report": 4,
    "render": 4,
    "commands": 5,
    "cli": 5,
    "__main__": 6,
}


def _modules() -> dict[str, Path]:
    out = {}
    for f in PKG.rglob("*.py"):
        parts = f.relative_to(PKG).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(("perfmodel",) + parts)] = f
    return out


def import_graph() -> nx.DiGraph:
    """Module -> module it imports (at any depth: lazy imports inside functions count)."""
    mods = _modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, f in mods.items():
        is_pkg = f.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        tree = ast.parse(f.read_text())
        typing_only = {
            id(n)
            for b in ast.walk(tree)
            if isinstance(b, ast.If) and _is_type_checking(b.test)
            for stmt in b.body
            for n in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:  # `if TYPE_CHECKING:` imports exist for annotations only
                continue
            targets = []
            if isinstance(node, ast.ImportFrom):
                mod = (
                    ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
                    if node.level
                    else (node.module or "")
                )
                targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in mods and t != name:
                    g.add_edge(name, t)
    return g


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _layer(mod: str) -> int:
    parts = mod.split(".")
    return LAYER.get(parts[1], -1) if len(parts) > 1 else -1


def test_no_import_circle():
    g = import_graph()
    # a package's __init__ importing nothing, every cycle is a real circle between modules
    cycles = list(nx.simple_cycles(g))
    assert not cycles, cycles[:5]


def test_layers_import_only_downwards():
    bad = [(a, b) for a, b in import_graph().edges if _layer(a) >= 0 and _layer(b) >= 0 and _layer(b) > _layer(a)]
    assert not bad, bad


def test_no_function_takes_more_than_16_positional_parameters():
    wide = []
    for f in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = len(node.args.posonlyargs) + len(node.args.args)
                if n > 16:
                    wide.append(f"{f.relative_to(PKG)}:{node.lineno} {node.name} ({n})")
    assert not wide, wide
