"""Which test framework a project carries, by its addon folder, on either engine, never by
whether it runs (docs/testing-games.md): GUT (``addons/gut``) or gdUnit4 (``addons/gdUnit4``). Each
has its command-line runner inside (``gut_cmdln.gd``; ``bin/GdUnitCmdTool.gd``)."""

from __future__ import annotations

from pathlib import Path

from godot_mcp.engine.project import tree
from godot_mcp.errors import InvalidArgument, Unavailable

__all__ = ["ADDONS", "NAMES", "RUNNERS", "choose", "frameworks", "refuse_without_runner"]

NAMES = {"gut": "GUT", "gdunit4": "gdUnit4"}
ADDONS = {"gut": "addons/gut", "gdunit4": "addons/gdUnit4"}
RUNNERS = {
    "gut": "addons/gut/gut_cmdln.gd",
    "gdunit4": "addons/gdUnit4/bin/GdUnitCmdTool.gd",
}


def frameworks(project: Path) -> list[str]:
    """The frameworks whose addon folder the project holds, a folder inside it (a link out of
    the project is none). Blocking."""
    root = project.resolve()
    found = []
    for name, rel in ADDONS.items():
        path = project / rel
        if path.is_dir() and not path.is_symlink() and path.resolve().is_relative_to(root):
            found.append(name)
    return found


def choose(found: list[str], framework: str) -> str:
    """The framework to run: ``framework`` (``auto``, ``gut``, ``gdunit4``) among ``found``
    (:func:`frameworks`). ``auto`` with none is ``Unavailable`` naming both folders, with both
    ``InvalidArgument`` asking for ``framework``; one the project lacks is ``Unavailable``."""
    if framework == "auto":
        if not found:
            raise Unavailable(
                "the project has no test framework: looked for GUT (res://addons/gut) and "
                "gdUnit4 (res://addons/gdUnit4)"
            )
        if len(found) > 1:
            raise InvalidArgument(
                "the project has both GUT (res://addons/gut) and gdUnit4 (res://addons/gdUnit4): "
                "say which to run with framework (gut or gdunit4)"
            )
        return found[0]
    if framework not in found:
        name = NAMES[framework]
        raise Unavailable(f"the project has no {name}: looked for res://{ADDONS[framework]}")
    return framework


def refuse_without_runner(plan: tree.Plan, framework: str) -> None:
    """``Unavailable`` when the addon folder is there but its command-line runner is not (a
    git submodule that was never checked out leaves an empty folder)."""
    if not any(e.rel == RUNNERS[framework] and not e.is_dir for e in plan.entries):
        raise Unavailable(
            f"the project's res://{ADDONS[framework]} has no res://{RUNNERS[framework]}, "
            f"{NAMES[framework]}'s command-line runner: is the addon there whole? (a git "
            "submodule that was never checked out leaves an empty folder)"
        )
