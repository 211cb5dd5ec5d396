"""The debug feature's service: a game's debugger for the ``runtime.debug.*`` and profile
tools (:class:`DebugService`), and ``runtime.scripts.reload``: a running game takes the
project's scripts as they are now.

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

import contextlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from godot_mcp.engine.debugger import (
    Break,
    Evaluated,
    EvaluationFailed,
    Frame,
    Profiled,
    to_json,
)
from godot_mcp.engine.process.availability import Availability, unavailable
from godot_mcp.engine.process.locate import engine_name
from godot_mcp.engine.process.redact import Scrubber
from godot_mcp.engine.project import reach, tree
from godot_mcp.engine.project.source import code_at
from godot_mcp.errors import InvalidArgument, Remedy, Timeout, Unavailable, quoted
from godot_mcp.features import check
from godot_mcp.features.check.service import CheckService
from godot_mcp.features.debug.expression import (
    SELF_PROBE,
    explain,
    failed_node_call,
    outside_node,
    rewrite,
)
from godot_mcp.features.game.debugging import MAX_BREAKPOINTS, parse_breakpoints, project_script
from godot_mcp.features.game.service import GameService, Managed
from godot_mcp.store.values import Caller

__all__ = ["MAX_PATHS", "DebugService", "reload_scripts"]

MAX_PATHS = 200
PROBE_TIMEOUT = 2  # seconds a failed get_node waits to learn whether the frame's self is a Node
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
        if not debug.engine.reloads_named_scripts:
            await debug.reload_scripts([])
            return await rt.disk(_all_scripts, rt.project)  # Godot 3 reloads them all
        await debug.reload_scripts(targets)
        return targets
    return await managed.game.reload(targets)


def _coded(frame: Frame, code: str | None) -> Frame:
    return frame if code is None else replace(frame, code=code)


def _frame(brk: Break | None, frame: int) -> None:
    if brk is None:
        raise Unavailable("the game is not stopped", remedy=Remedy.BREAK)
    if frame >= len(brk.stack):
        raise InvalidArgument(f"frame {frame} is not in the stack ({len(brk.stack)} frames)")


class DebugService:
    """The debuggers of the games a server started with ``debug``, bound to their callers;
    each answer that carries the game's own texts comes with the game's scrubber."""

    def __init__(self, games: GameService, checks: CheckService) -> None:
        self.games = games
        self.checks = checks

    def _managed(self, caller: Caller, session_id: str) -> Managed:
        managed = self.games.get(caller, session_id)
        managed.debugger()  # none, or lost: said as such
        return managed

    async def breakpoints(
        self, caller: Caller, session_id: str, add: Sequence[str], drop: Sequence[str]
    ) -> list[str]:
        """Set ``add`` and clear ``drop`` (``res://path.gd:line``); those now in force."""
        debugger = self._managed(caller, session_id).debugger()
        rt = self.games.rt
        adding = await rt.disk(parse_breakpoints, rt.project, add)
        dropping = await rt.disk(parse_breakpoints, rt.project, drop)
        future = {p: set(lines) for p, lines in debugger.breakpoints.items()}
        for path, lines in dropping.items():
            future.get(path, set()).difference_update(lines)
        for path, lines in adding.items():
            future.setdefault(path, set()).update(lines)
        if sum(len(lines) for lines in future.values()) > MAX_BREAKPOINTS:
            raise InvalidArgument(f"at most {MAX_BREAKPOINTS} breakpoints are in force at a time")
        for path, lines in dropping.items():
            for line in sorted(lines):
                await debugger.set_breakpoint(path, line, False)
        for path, lines in adding.items():
            for line in sorted(lines):
                await debugger.set_breakpoint(path, line, True)
        held = debugger.breakpoints
        return [f"{p}:{n}" for p in sorted(held) for n in sorted(held[p])]

    async def state(
        self, caller: Caller, session_id: str, wait_seconds: float
    ) -> tuple[Break | None, Scrubber]:
        """Where the game is stopped (None: running), after waiting up to ``wait_seconds``
        for a stop when it runs."""
        managed = self._managed(caller, session_id)
        debugger = managed.debugger()
        brk = debugger.stopped
        if brk is None and wait_seconds > 0:
            brk = await debugger.wait_stopped(wait_seconds)
        managed.debugger()  # lost while waiting: said as such
        return await self._with_code(brk), managed.game.scrub

    async def variables(self, caller: Caller, session_id: str, frame: int) -> dict[str, Any]:
        """A stopped frame's locals and members as JSON values, the game's texts scrubbed."""
        managed = self._managed(caller, session_id)
        debugger = managed.debugger()
        _frame(debugger.stopped, frame)
        got = await debugger.variables(frame)
        scrub = managed.game.scrub
        return {
            "locals": scrub.game_json({k: to_json(v) for k, v in got.locals.items()}),
            "members": scrub.game_json({k: to_json(v) for k, v in got.members.items()}),
            "truncated": got.truncated,
        }

    async def evaluate(self, caller: Caller, session_id: str, expression: str, frame: int) -> Any:
        """``expression`` (node shorthands as a script writes them: ``expression.rewrite``)
        evaluated in a stopped frame, as a JSON value; the engine's words on an expression it
        could not parse or run, with what to write instead where the cause is known."""
        sent = rewrite(expression)
        managed = self._managed(caller, session_id)
        debugger = managed.debugger()
        if not debugger.engine.can_evaluate:
            version = engine_name(managed.game.engine_version)
            raise Unavailable(f"{version}'s debugger has no evaluation")
        _frame(debugger.stopped, frame)
        got = await debugger.evaluation(sent.text, frame)
        if got.error is None:
            return managed.game.scrub.game_json(to_json(got.value))
        explained = explain(sent, got.error)
        if explained is not None:
            words, names = explained
            raise EvaluationFailed(words, remedy=Remedy.VARIABLES if names else None)
        if failed_node_call(sent, got.error):  # is the frame's self a Node at all?
            probed = Evaluated(None, "")
            with contextlib.suppress(Timeout):  # no answer: the engine's words alone
                probed = await debugger.evaluation(SELF_PROBE, frame, PROBE_TIMEOUT)
            if probed.error is None:
                value = managed.game.scrub.game_json(to_json(probed.value))
                raise EvaluationFailed(outside_node(sent, got.error, value) or got.error)
        raise EvaluationFailed(got.error)

    async def control(
        self, caller: Caller, session_id: str, action: str, timeout: float
    ) -> tuple[Break | None, Scrubber]:
        """Continue, step, step over, step out or break; where the game stopped (None:
        running, after ``continue``)."""
        managed = self._managed(caller, session_id)
        debugger = managed.debugger()
        if action == "out" and not debugger.engine.steps_out:
            version = engine_name(managed.game.engine_version)
            raise Unavailable(f"{version}'s debugger has no step out")
        if action in ("step", "next", "out") and debugger.stopped is None:
            raise InvalidArgument("the game is not stopped")
        if action == "continue" and debugger.stopped is None:
            return None, managed.game.scrub
        brk = await debugger.control(action, timeout)
        managed.debugger()
        if action == "continue":
            return None, managed.game.scrub
        if brk is None:
            raise Timeout(f"the game did not stop within {timeout:g} s", state="running")
        return await self._with_code(brk), managed.game.scrub

    async def profile(
        self, caller: Caller, session_id: str, seconds: float
    ) -> tuple[Profiled, Scrubber]:
        """The engine's script profiler over ``seconds`` of the game's run."""
        managed = self._managed(caller, session_id)
        got = await managed.debugger().profile(seconds)
        rt = self.games.rt
        codes = await rt.disk(code_at, rt.project, [(m.path, m.line) for m in got.functions])
        functions = [replace(m, code=codes.get((m.path, m.line))) for m in got.functions]
        return replace(got, functions=functions), managed.game.scrub

    async def _with_code(self, brk: Break | None) -> Break | None:
        """``brk`` with each frame's ``code`` as the project's file is now (a copy)."""
        if brk is None or not brk.stack:
            return brk
        rt = self.games.rt
        codes = await rt.disk(code_at, rt.project, [(f.path, f.line) for f in brk.stack])
        if not codes:
            return brk
        stack = [_coded(f, codes.get((f.path, f.line))) for f in brk.stack]
        return replace(brk, stack=stack)

    async def reload(self, caller: Caller, session_id: str, paths: list[str]) -> list[str]:
        """:func:`reload_scripts` in the caller's game."""
        return await reload_scripts(self.games, self.checks, caller, session_id, paths)

    def reload_availability(self) -> Availability:
        why = self.checks.availability()
        if not why.ok:
            return why
        return self.games.any_availability()

    def evaluate_availability(self) -> Availability | None:
        """Why no engine here evaluates (all whose version is known are Godot 3), or None."""
        install = self.games.rt.godot
        engines = [
            (install.major, install.profile),
            (install.headless_major, install.headless_profile),
        ]
        known = [profile for major, profile in engines if major is not None]
        if known and not any(profile.can_evaluate for profile in known):
            return unavailable(f"{engine_name(install.version)}'s debugger has no evaluation")
        return None
