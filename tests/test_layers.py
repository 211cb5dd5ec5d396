"""The layers of docs/architecture.md, read from the source (every import of a module,
functions included), each rule with a case it must refuse:

- a lower layer never imports a higher one (store, engine, runtime, mcp, features, then the
  transports, the app and the commands);
- the engine's floors stack: its profile (``engine/profile.py``), process, then project and the
  debugger protocol;
- the features form a DAG (debug on game and check; check, export and testrun on importer);
- inside a feature, tools stand on the service, the service on the engine modules: only tools
  touch ``mcp/``, only services touch the store, and no engine module reaches up;
- the typed object the tools are handed (``features/services.py``) is named by tools for
  typing only;
- no modules import each other in a circle at import time, and the wheel ships every package.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "godot_mcp"
# What each layer may import of the package, besides itself, errors.py and the migrations.
ALLOWED = {
    "store": set(),
    "engine": set(),
    "runtime": {"store", "engine"},
    "mcp": {"store", "engine", "runtime"},
    "features": {"store", "engine", "runtime", "mcp"},
    "transports": {"store", "engine", "runtime", "mcp"},
}
# The engine's floors: its folders, and profile.py (what each engine line does differently).
FLOORS = {
    "profile": set(),
    "process": {"profile"},
    "project": {"process", "profile"},
    "debugger": {"process", "profile"},
}
FEATURES = {
    "core": set(),
    "game": set(),
    "debug": {"game", "check"},
    "check": {"importer"},
    "export": {"importer"},
    "testrun": {"importer"},
    "importer": set(),
    "api": set(),
}
ASSEMBLY = "godot_mcp.features.services"  # the features' services, for the tools' types
# A feature's modules that work on the store besides its service.py: the export's recovery
# settles, in the store, the exports a killed server left behind.
SERVICES = {"service", "recovery"}
VALUES = "godot_mcp.store.values"  # the store's plain values (a caller, limits) go anywhere


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _typing_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            out |= {id(n) for b in node.body for n in ast.walk(b)}
    return out


def _imports(path: Path, top_level_only: bool = False, typing: bool = True) -> set[str]:
    package = ".".join(path.relative_to(ROOT).parts[:-1])
    return imported(path.read_text(), package, top_level_only, typing)


def imported(
    source: str, package: str, top_level_only: bool = False, typing: bool = True
) -> set[str]:
    """The package's modules (and names) ``source``, a module of ``package``, imports;
    a relative import read as the absolute one it stands for."""
    tree = ast.parse(source)
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    skip = set() if typing else _typing_only(tree)
    found = set()
    for node in nodes:
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}
    return {n for n in found if n.startswith("godot_mcp")}


def _kind(parts: list[str]) -> str:
    """A feature module's kind: ``tools``, ``service`` or ``engine`` (its engine modules)."""
    name = parts[3] if len(parts) > 3 else "__init__"
    if name.startswith("tools"):
        return "tools"
    return "service" if name in SERVICES else "engine"


def wrong_import(module: str, target: str, typing_only: bool = False) -> str | None:
    """Why ``module`` may not import ``target`` (dotted names), or None."""
    m, t = module.split("."), target.split(".")
    own = m[1] if len(m) > 1 else ""
    other = t[1] if len(t) > 1 else ""
    if other in ("", "errors", "schema", own):
        pass
    elif own in ALLOWED and other not in ALLOWED[own]:
        return f"the {own} layer imports {target}"
    runs_it = not typing_only and module != ASSEMBLY
    if target.startswith(ASSEMBLY) and own == "features" and runs_it:
        return f"imports {ASSEMBLY} at run time (tools name it for typing only)"
    floors = own == other == "engine" and len(m) > 2 and len(t) > 2 and m[2] in FLOORS
    if floors and m[2] != t[2] and t[2] not in FLOORS[m[2]]:
        return f"the engine's {m[2]} floor imports {target}"
    if own != "features" or len(m) < 3 or m[2] not in FEATURES:
        return None
    kind = _kind(m)
    if other == "mcp" and kind != "tools":
        return f"a feature's {kind} imports {target} (only tools touch mcp/)"
    if other == "store" and kind != "service" and not target.startswith(VALUES):
        return f"a feature's {kind} imports {target} (only services touch the store)"
    if other != "features" or len(t) < 3 or t[2] not in FEATURES:
        return None
    if t[2] != m[2] and t[2] not in FEATURES[m[2]]:
        return f"the feature {m[2]} imports the feature {t[2]} ({target})"
    rank = {"engine": 0, "service": 1, "tools": 2}
    if t[2] == m[2] and rank[_kind(t)] > rank[kind]:
        return f"a feature's {kind} imports its {_kind(t)} ({target})"
    return None


def test_every_import_keeps_to_the_layers() -> None:
    wrong = []
    for name, path in _modules().items():
        typed = _imports(path)
        at_run_time = _imports(path, typing=False)
        for target in sorted(typed):
            if (why := wrong_import(name, target, target not in at_run_time)) is not None:
                wrong.append(f"{name}: {why}")
    assert wrong == []


def test_the_folders_are_the_layers() -> None:
    top = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name[0] != "_"}
    assert top == {*ALLOWED, "cli"}
    engine = {
        p.stem
        for p in (PACKAGE / "engine").iterdir()
        if (p.is_dir() or p.suffix == ".py") and p.name[0] != "_"
    }
    assert engine == set(FLOORS)
    features = PACKAGE / "features"
    assert {p.name for p in features.iterdir() if p.is_dir() and p.name[0] != "_"} == set(FEATURES)
    for name in FEATURES:  # each feature: its tools (and a service where it has one)
        assert (features / name / "tools.py").is_file(), name


def test_each_rule_refuses_a_wrong_import() -> None:
    cases = {
        ("godot_mcp.store.store", "godot_mcp.runtime.context"): (
            "the store layer imports godot_mcp.runtime.context"
        ),
        ("godot_mcp.engine.project.tree", "godot_mcp.store.blobs"): (
            "the engine layer imports godot_mcp.store.blobs"
        ),
        ("godot_mcp.mcp.server", "godot_mcp.features.game.service"): (
            "the mcp layer imports godot_mcp.features.game.service"
        ),
        ("godot_mcp.runtime.headless", "godot_mcp.features.export.service"): (
            "the runtime layer imports godot_mcp.features.export.service"
        ),
        ("godot_mcp.features.game.tools", "godot_mcp.transports.http"): (
            "the features layer imports godot_mcp.transports.http"
        ),
        ("godot_mcp.engine.process.run", "godot_mcp.engine.project.tree"): (
            "the engine's process floor imports godot_mcp.engine.project.tree"
        ),
        ("godot_mcp.engine.profile", "godot_mcp.engine.process.locate"): (
            "the engine's profile floor imports godot_mcp.engine.process.locate"
        ),
        ("godot_mcp.features.game.service", "godot_mcp.features.debug.tools"): (
            "the feature game imports the feature debug (godot_mcp.features.debug.tools)"
        ),
        ("godot_mcp.features.importer.service", "godot_mcp.features.export.service"): (
            "the feature importer imports the feature export (godot_mcp.features.export.service)"
        ),
        ("godot_mcp.features.game.service", "godot_mcp.mcp.budget"): (
            "a feature's service imports godot_mcp.mcp.budget (only tools touch mcp/)"
        ),
        ("godot_mcp.features.game.tools", "godot_mcp.store.store"): (
            "a feature's tools imports godot_mcp.store.store (only services touch the store)"
        ),
        ("godot_mcp.features.game.session", "godot_mcp.features.game.service"): (
            "a feature's engine imports its service (godot_mcp.features.game.service)"
        ),
        ("godot_mcp.features.export.service", "godot_mcp.features.export.tools"): (
            "a feature's service imports its tools (godot_mcp.features.export.tools)"
        ),
        ("godot_mcp.features.game.tools", ASSEMBLY): (
            f"imports {ASSEMBLY} at run time (tools name it for typing only)"
        ),
        ("godot_mcp.features.game.tools", "godot_mcp.features.game.service"): None,
        ("godot_mcp.features.debug.tools", "godot_mcp.features.game.tools"): None,
        ("godot_mcp.features.export.service", "godot_mcp.features.importer.copies"): None,
        ("godot_mcp.features.game.service", "godot_mcp.store.store"): None,
        ("godot_mcp.engine.debugger.session", "godot_mcp.engine.process.redact"): None,
        ("godot_mcp.engine.process.locate", "godot_mcp.engine.profile"): None,
        ("godot_mcp.app", "godot_mcp.features.game.tools"): None,
        ("godot_mcp.app", ASSEMBLY): None,
    }
    for (module, target), why in cases.items():
        assert wrong_import(module, target) == why, (module, target)
    assert wrong_import("godot_mcp.features.game.tools", ASSEMBLY, typing_only=True) is None
    assert wrong_import("godot_mcp.features.game.tools", f"{VALUES}.Caller") is None
    relative = "from ..store import db\nfrom . import log\nfrom .marks import CallMarks\n"
    assert imported(relative, "godot_mcp.features.game") >= {
        "godot_mcp.features.store.db",
        "godot_mcp.features.game.log",
        "godot_mcp.features.game.marks.CallMarks",
    }
    assert "godot_mcp.store.db" in imported("from ...store import db\n", "godot_mcp.features.game")


def test_the_features_form_a_dag() -> None:
    seen: set[str] = set()

    def visit(name: str, trail: tuple[str, ...]) -> None:
        assert name not in trail, " -> ".join([*trail, name])
        for dep in FEATURES[name]:
            visit(dep, (*trail, name))
        seen.add(name)

    for name in FEATURES:
        visit(name, ())
    assert seen == set(FEATURES)


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


def test_the_wheel_lists_every_package() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    listed = {p for p in declared["packages"] if not p.startswith("godot_mcp.schema")}
    assert listed == found


# What a tool handler may not reach past its service: the runtime and the store (which only
# services hold), a session's game or debugger (engine objects the service works on).
PAST_THE_SERVICE = {"runtime", "store", "rt", "game", "debugger"}


def reached_past_the_service(source: str) -> list[str]:
    """The attributes of ``source`` (a tools module) that reach past a service."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or node.attr not in PAST_THE_SERVICE:
            continue
        if isinstance(node.value, ast.Name) and node.value.id == "scrub":
            continue  # Scrubber.game: the scrub of a game's text
        found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_a_tool_handler_calls_its_service_never_an_engine_object() -> None:
    wrong = []
    tools = sorted((PACKAGE / "features").glob("*/tools*.py"))
    assert len(tools) >= len(FEATURES)
    for path in tools:
        wrong += [
            f"{path.relative_to(PACKAGE)} {w}" for w in reached_past_the_service(path.read_text())
        ]
    assert wrong == []
    caught = reached_past_the_service(
        "async def h(call):\n"
        "    call.deps.games.get(call.caller, 'x').game.poll()\n"
        "    await call.deps.runtime.disk(print)\n"
        "    scrub.game('said')\n"
    )
    assert caught == [
        "line 2: call.deps.games.get(call.caller, 'x').game",
        "line 3: call.deps.runtime",
    ]
