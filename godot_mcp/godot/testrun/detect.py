"""Which test framework a project carries: GUT (its command-line runner,
``addons/gut/gut_cmdln.gd``) or gdUnit4 (its command-line tool,
``addons/gdUnit4/bin/GdUnitCmdTool.gd``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["RUNNERS", "frameworks"]

RUNNERS = {
    "gut": "addons/gut/gut_cmdln.gd",
    "gdunit4": "addons/gdUnit4/bin/GdUnitCmdTool.gd",
}


def frameworks(project: Path) -> list[str]:
    """The frameworks whose runner the project holds, as regular files inside it. Blocking."""
    found = []
    for name, rel in RUNNERS.items():
        path = project / rel
        if (
            path.is_file()
            and not path.is_symlink()
            and path.resolve().is_relative_to(project.resolve())
        ):
            found.append(name)
    return found
