"""``paths`` of ``project.test``, checked against the project's files before anything runs."""

from __future__ import annotations

import os
from collections.abc import Sequence

from godot_mcp.engine.project import tree
from godot_mcp.errors import InvalidArgument, quoted
from godot_mcp.features.testrun.runner import Selection, refuse_path

__all__ = ["BadTestPath", "select", "suffixes"]


class BadTestPath(InvalidArgument):
    """A ``paths`` entry the runner cannot be given."""


def suffixes(framework: str) -> tuple[str, ...]:
    """The test files each framework runs: GUT GDScript, gdUnit4 GDScript and C#."""
    return (".gd",) if framework == "gut" else (".gd", ".cs")


def select(plan: tree.Plan, paths: Sequence[str] | None, framework: str) -> Selection:
    """The folders and test files ``paths`` name, as ``res://`` paths; an empty selection
    (the framework's own default) for ``None``. Each must be a folder of the project or a
    test file the framework runs, named plainly; otherwise :class:`BadTestPath` says why."""
    if paths is None:
        return Selection()
    files = {e.rel for e in plan.entries if not e.is_dir}
    folders = {e.rel for e in plan.entries if e.is_dir}
    chosen_folders: list[str] = []
    chosen_files: list[str] = []
    for given in paths:
        rel = _relative(given)
        if rel == "" or rel in folders:
            chosen_folders.append(tree.res_path(rel).rstrip("/") if rel else "res://")
        elif rel in files:
            if os.path.splitext(rel)[1].lower() not in suffixes(framework):
                kinds = " or ".join(suffixes(framework))
                raise BadTestPath(f"{quoted(tree.res_path(rel))} is not a test script ({kinds})")
            chosen_files.append(tree.res_path(rel))
        else:
            raise BadTestPath(f"{quoted(given)} is not a file or folder of the project")
    for path in chosen_folders + chosen_files:
        why = refuse_path(framework, path)
        if why is not None:
            raise BadTestPath(f"{path[:300]}: {why}")
    return Selection(tuple(dict.fromkeys(chosen_folders)), tuple(dict.fromkeys(chosen_files)))


def _relative(given: str) -> str:
    """``res://a/b/`` as ``a/b``; refuses anything that is not a plain project path."""
    try:
        rel = tree.relative(given)
    except ValueError as exc:
        raise BadTestPath(str(exc)) from None
    if not rel.isprintable():
        raise BadTestPath(f"{quoted(given)!r} holds control characters")
    return rel
