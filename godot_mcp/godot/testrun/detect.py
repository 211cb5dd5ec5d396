"""Which test framework a project carries, by its addon folder, on either engine, never by
whether it runs (interface §11): GUT (``addons/gut``) or gdUnit4 (``addons/gdUnit4``). Each
has its command-line runner inside (``gut_cmdln.gd``; ``bin/GdUnitCmdTool.gd``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ADDONS", "RUNNERS", "frameworks"]

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
