"""The layers of docs/architecture.md, read from the source: a lower layer never imports a
higher one (anywhere in a module, functions included), and no modules import each other in
a circle at import time."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "godot_mcp"
# What each layer may import of the package, besides itself, errors.py and the migrations.
ALLOWED = {
    "store": set(),
    "godot": set(),
    "runtime": {"store", "godot"},
    "edge": {"store", "godot", "runtime"},
    "transports": {"store", "godot", "runtime", "edge"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(path: Path, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {n for n in found if n.startswith("godot_mcp")}


def test_no_layer_imports_a_higher_one() -> None:
    wrong = []
    for name, path in _modules().items():
        layer = name.split(".")[1] if "." in name else ""
        if layer not in ALLOWED:
            continue
        for target in _imports(path, top_level_only=False):
            parts = target.split(".")
            other = parts[1] if len(parts) > 1 else ""
            if other in ("", "errors", "schema", layer) or other in ALLOWED[layer]:
                continue
            wrong.append(f"{name} imports {target}")
    assert wrong == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    modules = _modules()
    graph = {
        name: {t for t in _imports(path, top_level_only=True) if t in modules and t != name}
        for name, path in modules.items()
    }
    circles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    circles.append(" -> ".join([*trail, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
    assert circles == []
