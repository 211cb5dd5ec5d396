"""The layers of docs/architecture.md, read from the source: a lower layer never imports a
higher one (anywhere in a module, functions included), the Godot layer is features over two
floors, and no modules import each other in a circle at import time."""

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


# The Godot layer: two floors, then features. A floor imports only itself and the floors
# below it; a feature imports the floors and itself, never another feature.
FLOORS = {"process": set(), "project": {"process"}}
FEATURES = {"game", "export", "check", "api", "importer", "debug", "testrun"}


def wrong_godot_import(module: str, target: str) -> str | None:
    """Why ``module`` may not import ``target`` (both dotted names), or None."""
    if not target.startswith("godot_mcp.godot."):
        return None
    part = target.split(".")[2]
    if not module.startswith("godot_mcp.godot."):  # the layers above see a feature's face
        if part in FEATURES and len(target.split(".")) > 4:
            return f"imports {target} past the face of godot.{part}"
        return None
    own = module.split(".")[2]
    if own in FLOORS and part != own and part not in FLOORS[own]:
        return f"the {own} floor imports {target}"
    if own in FEATURES and part in FEATURES and part != own:
        return f"the feature {own} imports the feature {part} ({target})"
    return None


def test_the_godot_layer_is_features_over_two_floors() -> None:
    parts = {p.name for p in (PACKAGE / "godot").iterdir() if p.is_dir() and p.name[0] != "_"}
    assert parts == set(FLOORS) | FEATURES
    assert sorted(p.name for p in (PACKAGE / "godot").glob("*.py")) == ["__init__.py"]
    wrong = []
    for name, path in _modules().items():
        for target in _imports(path, top_level_only=False):
            if (why := wrong_godot_import(name, target)) is not None:
                wrong.append(f"{name}: {why}")
    assert wrong == []


def test_the_godot_rules_catch_a_wrong_import() -> None:
    face = "godot_mcp.godot.game"
    cases = {
        ("godot_mcp.godot.process.display", "godot_mcp.godot.game.errors.GameFailed"): (
            "the process floor imports godot_mcp.godot.game.errors.GameFailed"
        ),
        ("godot_mcp.godot.process.run", "godot_mcp.godot.project.tree"): (
            "the process floor imports godot_mcp.godot.project.tree"
        ),
        ("godot_mcp.godot.check.job", "godot_mcp.godot.export.verify"): (
            "the feature check imports the feature export (godot_mcp.godot.export.verify)"
        ),
        ("godot_mcp.runtime.games", "godot_mcp.godot.game.session.GameSession"): (
            "imports godot_mcp.godot.game.session.GameSession past the face of godot.game"
        ),
        ("godot_mcp.godot.project.facts", "godot_mcp.godot.process.locate"): None,
        ("godot_mcp.godot.export.job", "godot_mcp.godot.project.tree"): None,
        ("godot_mcp.runtime.games", f"{face}.GameSession"): None,
        ("godot_mcp.runtime.games", "godot_mcp.godot.project.tree.plan"): None,
    }
    for (module, target), why in cases.items():
        assert wrong_godot_import(module, target) == why, (module, target)


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
