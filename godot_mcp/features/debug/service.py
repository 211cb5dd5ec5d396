"""``runtime.scripts.reload``: a running game takes the project's scripts as they are now.

The scripts are checked first with ``project.check``'s own run (the project's headless Godot,
sandboxed): one that does not parse is refused with its place and the engine's message, and
the game keeps its old code. A running game then recompiles them through its bridge, in place
(instances keep their members), and answers once that is done; a game stopped at a break
(whose bridge cannot answer) is told by its debugger, which applies it on continue: Godot 3
reloads every script whatever is asked, Godot 4 the ones named.

A reload reads the project only: a script named that leads out of it through a symbolic
link, or loads one that does (``preload``, ``extends "…"``, a scene's ``ext_resource``:
``reach.walk``), is refused, naming both; the default list leaves such scripts out. Links out
elsewhere in the project refuse nothing: the check leaves them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from godot_mcp.engine.project import reach, tree
from godot_mcp.errors import InvalidArgument, quoted
from godot_mcp.features import check
from godot_mcp.features.check.service import CheckService
from godot_mcp.features.game.debugging import project_script
from godot_mcp.features.game.service import GameService
from godot_mcp.store.values import Caller

__all__ = ["MAX_PATHS", "reload_scripts"]

MAX_PATHS = 200
READER = "reloads"  # a refusal's words: "reloads read the project only"


def _scripts(project: Path, paths: Sequence[str]) -> list[str]:
    """``paths`` checked as scripts of the project, each once, sorted."""
    return sorted({project_script(project, p if isinstance(p, str) else "") for p in paths})


def _all_scripts(project: Path) -> list[str]:
    """Every GDScript file of the project, as Godot's file system sees them."""
    plan = tree.plan(project, READER, leave_out=True)
    return [p for p in check.select(plan, None) if p.endswith(".gd")]


def leading_out(project: Path, scripts: Sequence[str]) -> set[str]:
    """The ``scripts`` that are, or load, a path leading out of the project through a
    symbolic link (blocking: reads what they load, once)."""
    reached = reach.walk(project, scripts)
    return reached.reaching(reached.outside) & set(scripts) if reached.outside else set()


def refuse_links_out(project: Path, scripts: Sequence[str]) -> None:
    """``InvalidArgument`` for a script of ``scripts`` that is, or loads, a path leading out
    of the project through a symbolic link (blocking: reads what they load, once)."""
    reached = reach.walk(project, scripts)
    if not reached.outside:
        return
    leaf = reached.outside[0]
    script = reached.chain(leaf)[0]  # the script of ``scripts`` that first loaded it
    how = "leads" if leaf == script else f"loads {quoted(leaf)}, which leads"
    raise InvalidArgument(
        f"{quoted(script)} {how} out of the project through a symbolic link; {READER} "
        "read the project only, and the game keeps its old code"
    )


async def reload_scripts(
    games: GameService, checks: CheckService, caller: Caller, session_id: str, paths: list[str]
) -> list[str]:
    """Reload ``paths`` (default: every script the game uses) in the caller's game; the
    paths reloaded."""
    managed = games.get(caller, session_id)
    rt = games.rt
    named = await rt.disk(_scripts, rt.project, paths) if paths else []
    debug = managed.debug.debugger if managed.debug is not None else None
    stopped = debug is not None and debug.lost is None and debug.stopped is not None
    if named:
        await rt.disk(refuse_links_out, rt.project, named)
        targets = named
    else:
        used = await (
            rt.disk(_all_scripts, rt.project) if stopped else managed.game.loaded_scripts()
        )
        out = await rt.disk(leading_out, rt.project, used)
        targets = [t for t in used if t not in out]
    if not targets:
        return []
    report = await checks.run(targets, reader=READER, leave_out=True)
    for problem in report.problems:
        if problem.kind in ("parse", "load") and problem.path in targets:
            at = f"{problem.path}:{problem.line}" if problem.line else problem.path
            raise InvalidArgument(f"{at}: {problem.message}; the game keeps its old code")
    if stopped and debug is not None:
        if debug.major < 4:
            await debug.reload_scripts([])
            return await rt.disk(_all_scripts, rt.project)  # Godot 3 reloads them all
        await debug.reload_scripts(targets)
        return targets
    return await managed.game.reload(targets)
