"""Check a project's scripts, scenes and resources with its own Godot, headless, in one process.

The project is planned like an export's (``tree.plan``: a link out of the project refuses
the check) and then checked read-only, in place: Godot runs in the exports' sandbox, where
the project is bound read-only from a descriptor of the planned root (its identity checked),
so nothing can be written into it and nothing outside it (the state dir, the user's files)
is there to be read, whatever its links name by then; it matters because Godot instances
the project's autoloads before any script given with ``--script`` runs. Without the
sandbox (tests only) the check runs on a private copy (``tree.copy``) instead.

One Godot process loads every selected file in turn (``check3.gd`` / ``check4.gd``), each
between a ``BEGIN`` and an ``END`` line carrying a nonce, on stderr, where Godot prints its
own errors; :class:`OutputReader` turns that stream into problems as it arrives, so memory
stays bounded and progress is known. Scripts stay loaded, so each is parsed once.

What counts, inside a file's BEGIN/END only (engine start-up and the autoloads' own output
are never a project error)::

    kind                Godot 3 (checked)                    Godot 4 (written to its format)
    ──────────────────  ───────────────────────────────────  ────────────────────────────────
    parse               SCRIPT ERROR: GDScript::reload:      SCRIPT ERROR: Parse Error: m
                          Parse Error: m                       at: GDScript::reload (res://x.gd:7)
                          At: res://x.gd:7.
    missing_dependency  ERROR: poll: res://s.tscn:3 -        ERROR: res://s.tscn:3 - Parse Error:
                          Parse Error: [ext_resource]          [ext_resource] referenced non-
                          referenced nonexistent resource      existent resource at: res://g.gd.
                          at: res://g.gd
    load                ERROR: open: res://s.tscn:4 -        ERROR: res://s.tscn:4 - Parse Error: m
                          Parse Error: m
    load                SCRIPT ERROR: f: m                   SCRIPT ERROR: m
                          At: res://g.gd:3.                    at: f (res://g.gd:3)
                        a script error while the file loads (its scripts' ``_init``, ``setget``
                        or setters ran and failed): "m (at res://g.gd:3)"
    load                END failed, none of the above for the file (the first error line is why)
    load                an error line while a scene is instantiated (after its INSTANCE line):
                        a class the engine lacks, a script that cannot attach to its node

Each scene that loads is also instantiated (never added to a tree) and freed, as a game would
instantiate it: its nodes' classes are created and their scripts attached, their ``_init`` and
setters run. A scene whose instantiation never ends is a stuck file like any other.

A C# project on an engine without .NET (``Check(dotnet=False)``): its C# scripts cannot load.
When the game needs them (``facts.csharp_fit``: its main scene or an autoload attaches one, at
load time) that is reported once, as ``load`` on the first ``.cs`` file ("this Godot is not a
.NET build"); when it only carries them (they load at run time behind a guard, or nothing
loads them) the report's ``warnings`` name them and no problem is reported. Either way a scene
or resource whose only failure is a ``.cs`` script it names is not reported, nor are the files
that fail because it does not load.

A dependency that exists in the project but does not load (an image never imported) is a
``load`` problem of the scene, not a missing one; Godot 4 says so twice (the imported copy it
cannot open, then the dependency), reported once. Each problem is reported once.

Errors::

    CheckError(GodotMcpError)
     ├── BadPaths      a ``paths`` entry is not a res:// file or folder of the project, or
     │                 names a file that is not a script, scene or resource
     ├── CheckFailed   Godot could not run the check to its end (it exited, or the copy failed)
     └── CheckTimeout  the check did not end within its time limit
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from godot_mcp.engine.process.engine_lines import (
    SCRIPT_PARSE_ERROR,
    Reason,
    is_startup,
    script_place,
)
from godot_mcp.engine.process.output import plain
from godot_mcp.engine.process.redact import PathPair, Scrubber, as_res
from godot_mcp.engine.process.run import Confinement, GodotRun, xdg_homes
from godot_mcp.engine.process.supervisor import Supervisor
from godot_mcp.engine.profile import EngineProfile
from godot_mcp.engine.project import reach, tree
from godot_mcp.engine.project.facts import (
    Facts,
    csharp_carried,
    csharp_fit,
    csharp_reason,
    first_csharp,
    read_facts,
)
from godot_mcp.errors import Failed, GodotMcpError, InvalidArgument, Timeout, quoted

SCRIPTS = frozenset({".gd"})
SCENES = frozenset({".tscn", ".scn", ".tres", ".res"})  # counted as scenes: scenes, resources
CACHES = frozenset({".import", ".godot"})  # Godot's own, never checked
MAX_MESSAGE = 1000
MAX_PROBLEMS = 1000  # kept; more are counted (the answer says truncated)
FILE_LIMIT_S = 20.0  # one file that loads longer is reported and skipped
MAX_RESTARTS = 10  # Godot started again after a crash or a stuck file, at most
RESTART_S = 5.0  # time a restart adds to the check's limit
TMP_BYTES = 256 << 20  # what Godot may write (/tmp, /dev/shm) in the sandbox
# Any other script error: Godot 3 names the function first ("_init: m"), Godot 4 does not.
_RUNTIME_ERROR = re.compile(r"^SCRIPT ERROR: (?:[\w:]+: )?(.*)$")
_FORMAT = re.compile(r"^ERROR: (?:\w+: )?(res://.+?):(\d+) - Parse Error: (.*?)\.?\s*$")
_LINE_AND_MESSAGE = re.compile(r"(\d+) - Parse Error: (.*?)\.?\s*$")
_MISSING = re.compile(r"\[ext_resource\] referenced non-?existent resource at: (res://.+)$")
# An imported copy Godot looks for and cannot open (Godot 3 .import/, Godot 4 .godot/imported/)
_IMPORTED = re.compile(
    r"Failed loading resource: (res://\.(?:import|godot/imported)/[^\s]+?)\.?(?: |$)"
)
_CONSEQUENCE = re.compile(r"Failed to compile depended scripts")
# A script's preload that failed: Godot 3 "Can't preload resource at path: res://a.cs",
# Godot 4 "Could not preload resource file \"res://a.cs\"."
_PRELOADS = re.compile(r"preload\b.*?(res://[^\s\"']+?)\.?(?:[\s\"']|$)", re.IGNORECASE)
_ERROR = re.compile(r"^(?:SCRIPT )?ERROR: (?:[\w:]+: )?(.*)$")
# Error lines that say nothing about a file (the engine's start-up lines aside, which
# engine_lines knows): the failed directory writes of a read-only sandbox and their echoes.
_NOISE = re.compile(r"make_dir_recursive|Method failed|Condition \"")


class CheckError(GodotMcpError):
    """Base of the check's errors (each the error tree's type for its outcome); ``message``
    names no private path."""


class BadPaths(CheckError, InvalidArgument):
    """A ``paths`` entry the check cannot take."""


class CheckFailed(CheckError, Failed):
    """Godot could not run the check to its end."""


class CheckTimeout(CheckError, Timeout):
    """The check did not end within its time limit."""


@dataclass(frozen=True)
class Problem:
    """One error found: ``path`` is the file it is in (for a missing dependency, the scene)."""

    kind: str
    path: str
    message: str
    line: int | None = None
    code: str | None = None  # the line as the project's file is now, set where answered

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "kind": self.kind, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        if self.code is not None:
            out["code"] = self.code
        return out


@dataclass
class Report:
    """What a check found, and how many files of each sort it loaded."""

    problems: list[Problem]
    scripts: int
    scenes: int
    more: int = 0  # problems found past the ones kept
    warnings: list[str] = field(default_factory=list)  # what the answer says besides problems


def time_limit(files: int) -> float:
    """Seconds a check of ``files`` files may take: a start-up allowance plus 0.1 s a file."""
    return 30.0 + 0.1 * files


def select(plan: tree.Plan, paths: Sequence[str] | None) -> list[str]:
    """The ``res://`` files to check, scripts first, each sort in path order.

    ``paths`` (files or folders, ``res://`` or ``res://sub/``) narrow the project; ``None``
    takes it all. Left out as Godot's file system leaves them out: its caches, hidden
    files and folders, folders holding a ``.gdignore``. A file reached through several
    names (links inside the project) is checked once, under its own name. A file named in
    ``paths`` that cannot be checked is refused, saying why.
    """
    files = {e.rel: e.source for e in plan.entries if not e.is_dir}
    folders = {e.rel for e in plan.entries if e.is_dir}
    ignored = {os.path.dirname(rel) for rel in files if os.path.basename(rel) == ".gdignore"}
    own = _own_names(plan)
    owner = {source: own[rel] for rel, source in files.items()}
    checkable = {rel for rel in files if _why_not(rel, ignored) is None}
    if paths is None:
        chosen = sorted({owner[files[rel]] for rel in checkable})
    else:
        chosen_set: set[str] = set()
        for given in paths:
            rel = _relative(given)
            if rel == "" or rel in folders:
                prefix = rel + "/" if rel else ""
                chosen_set.update(owner[files[c]] for c in checkable if c.startswith(prefix))
            elif rel in files:
                why = _why_not(rel, ignored)
                if why is not None:
                    raise BadPaths(f"{quoted(tree.res_path(rel))} cannot be checked: {why}")
                chosen_set.add(owner[files[rel]])
            else:
                raise BadPaths(f"{quoted(given)} is not a file or folder of the project")
        chosen = sorted(chosen_set)
    scripts = [c for c in chosen if _suffix(c) in SCRIPTS]
    others = [c for c in chosen if _suffix(c) not in SCRIPTS]
    return ["res://" + c for c in scripts + others]


def seen_files(plan: tree.Plan) -> list[str]:
    """The plan's files Godot's file system sees (not hidden, not under a ``.gdignore``)."""
    files = [e.rel for e in plan.entries if not e.is_dir]
    ignored = {os.path.dirname(rel) for rel in files if os.path.basename(rel) == ".gdignore"}
    return [rel for rel in files if _unseen(rel, ignored) is None]


def csharp_file(plan: tree.Plan) -> str:
    """The file a C# project's problem is reported on: its first ``.cs`` file Godot sees, else
    its first ``.csproj``, else ``project.godot``."""
    seen = seen_files(plan)
    found = first_csharp(seen)
    if found is not None:
        return found
    projects = sorted(rel for rel in seen if "/" not in rel and rel.endswith(".csproj"))
    return tree.res_path(projects[0]) if projects else "res://project.godot"


def _own_names(plan: tree.Plan) -> dict[str, str]:
    """Each file's one name (project-relative): a file reached through links inside the
    project is known by its own path when that is in the project, else its first name."""
    files = {e.rel: e.source for e in plan.entries if not e.is_dir}
    first: dict[str, str] = {}
    for rel in sorted(files, key=lambda r: (r != files[r], r)):
        first.setdefault(files[rel], rel)
    return {rel: first[source] for rel, source in files.items()}


def aliases(plan: tree.Plan) -> dict[str, str]:
    """``res://`` name -> the file's own ``res://`` name, for every name that differs."""
    return {
        tree.res_path(rel): tree.res_path(own)
        for rel, own in _own_names(plan).items()
        if rel != own
    }


def _relative(given: str) -> str:
    """``res://a/b/`` as ``a/b``; refuses anything that is not a plain project path."""
    try:
        return tree.relative(given)
    except ValueError as exc:
        raise BadPaths(str(exc)) from None


def _suffix(rel: str) -> str:
    return os.path.splitext(rel)[1].lower()


def _why_not(rel: str, ignored: set[str]) -> str | None:
    """Why ``rel`` is not checked, or None when it is."""
    if _suffix(rel) not in SCRIPTS | SCENES:
        return "not a script, scene or resource (.gd, .tscn, .scn, .tres, .res)"
    return _unseen(rel, ignored)


def _unseen(rel: str, ignored: set[str]) -> str | None:
    """Why Godot's file system does not see ``rel``, or None when it does."""
    parts = rel.split("/")
    if parts[0] in CACHES:
        return "it is in Godot's own cache"
    if any(part.startswith(".") for part in parts):
        return "Godot leaves hidden files and folders out"
    if any("/".join(parts[:i]) in ignored for i in range(len(parts))):
        return "its folder holds a .gdignore"
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not UTF-8"
    if not rel.isprintable():
        return "its name holds control characters"
    return None


@dataclass
class OutputReader:
    """Turns the check's output, line by line, into problems.

    Bounded: at most ``MAX_PROBLEMS`` are kept (``more`` counts the rest), each names a
    file of the project (``known``; a place Godot names outside it is the file being
    loaded), and its message is redacted and cut to ``MAX_MESSAGE``.
    """

    mark: str
    known: frozenset[str]  # every file of the project, as res:// paths
    redact: Callable[[str], str] = str
    expected: Sequence[str] = ()  # the files, in the order Godot is given them
    aliases: Mapping[str, str] = field(default_factory=dict)  # a file's other names
    csharp: bool = False  # the project's C# scripts cannot load (said once, elsewhere)
    csharp_only: set[str] = field(default_factory=set)  # files that fail for C# scripts only
    problems: list[Problem] = field(default_factory=list)
    more: int = 0  # problems past MAX_PROBLEMS, counted and not kept
    done: int = 0
    finished: bool = False
    current: str | None = None  # the file being loaded
    next: int = 0  # index in expected of the next file Godot will load
    _seen: set[Problem] = field(default_factory=set)
    _reported: set[str] = field(default_factory=set)  # paths with a problem already
    _missing: set[tuple[str, str]] = field(default_factory=set)  # (owner, dependency)
    _followups: list[tuple[Problem, str]] = field(default_factory=list)
    _own: bool = False  # a problem of the current file itself was recorded
    _first_error: str | None = None  # the first error line naming the current file
    _any_error: str | None = None  # else the first error line of its block
    _pending: str | None = None  # a script error waiting for its At: line
    _running: str | None = None  # a runtime script error waiting for its At: line
    _unimported: set[str] = field(default_factory=set)  # files with an imported copy missing
    _instancing: bool = False  # the current file loaded and is being instantiated

    def feed(self, raw: str) -> None:
        line = plain(raw.rstrip("\r\n"))
        if self._pending is not None:
            message, self._pending = self._pending, None
            at = script_place(line)
            if at is not None:
                self._add(Problem("parse", at[0], message, at[1]))
                return
            if self.current is not None:
                self._add(Problem("parse", self.current, message))
        if self._running is not None:
            message, self._running = self._running, None
            at = script_place(line)
            if at is not None and self.current is not None:
                self._add(Problem("load", self.current, f"{message} (at {at[0]}:{at[1]})"))
                return
        if line.startswith(self.mark + " "):
            self._marker(line[len(self.mark) + 1 :])
        elif self.current is not None:
            self._inside(line)

    def finish(self) -> None:
        """Add the follow-on problems no problem of their own file explains."""
        for problem, dep in self._followups:
            if dep not in self._reported and not (self.csharp and dep in self.csharp_only):
                self._add(problem)
        self._followups.clear()

    def _marker(self, rest: str) -> None:
        verb, _, arg = rest.partition(" ")
        if verb == "BEGIN":
            # Only the file Godot was given next: project code can print marker lines too.
            if self.next >= len(self.expected) or arg != self.expected[self.next]:
                return
            self.current, self._own, self._instancing = arg, False, False
            self.next += 1
            self._first_error = self._any_error = None
        elif verb == "INSTANCE":
            self._instancing = arg == self.current and self.current is not None
        elif verb == "END":
            state, _, path = arg.partition(" ")
            if path != self.current:
                return
            explained = path in self._reported or (self.csharp and path in self.csharp_only)
            if state == "failed" and not self._own and not explained:
                why = self._first_error or self._any_error or "Godot could not load it"
                self._add(Problem("load", path, why))
            self.current, self._instancing = None, False
            self.done += 1
        elif verb == "MISSING":
            owner, _, dep = arg.partition(" ")
            self._dependency(owner, dep, None)
        elif verb == "DONE":
            self.finished = self.current is None and self.next == len(self.expected)

    def _inside(self, line: str) -> None:
        script = SCRIPT_PARSE_ERROR.match(line)
        if script:
            if not _CONSEQUENCE.search(script.group(1)):
                self._pending = script.group(1).strip()
            return
        running = _RUNTIME_ERROR.match(line)
        if running:
            self._running = running.group(1).strip().rstrip(".") or None
            return
        fmt = self._format_error(line)
        if fmt is not None:
            path, number, message = fmt
            missing = _MISSING.search(message)
            if missing is None:
                self._add(Problem("load", path, message, number))
            else:
                self._dependency(path, missing.group(1).rstrip("."), number)
            return
        imported = _IMPORTED.search(line)
        if imported and self.current is not None:
            why = f"Godot could not load {imported.group(1)} (is the project imported?)"
            self._add(Problem("load", self.current, why))
            self._unimported.add(self.current)
            return
        error = _ERROR.match(line)
        if error is None or _NOISE.search(line) or is_startup(line):
            return
        text = self.redact(error.group(1).strip())[:MAX_MESSAGE]
        if self._instancing and self.current is not None and not self._own:
            why = text.rstrip(".") + " (when the scene is instantiated)"
            self._add(Problem("load", self.current, why))
            return
        if self._first_error is None and self.current and self.current in line:
            self._first_error = text
        elif self._any_error is None:
            self._any_error = text

    def _format_error(self, line: str) -> tuple[str, int, str] | None:
        """``ERROR: f: res://s.tscn:N - Parse Error: m``, naming the current file first."""
        if self.current:
            at = line.find(self.current + ":")
            if line.startswith("ERROR: ") and at != -1:
                tail = _LINE_AND_MESSAGE.match(line, at + len(self.current) + 1)
                if tail:
                    return self.current, int(tail.group(1)), tail.group(2)
        fmt = _FORMAT.match(line)
        return (fmt.group(1), int(fmt.group(2)), fmt.group(3)) if fmt else None

    def _dependency(self, owner: str, dep: str, line: int | None) -> None:
        """``owner`` names ``dep``, which does not exist or does not load."""
        if (owner, dep) in self._missing:
            return
        if self.csharp and _suffix(dep) == ".cs" and dep in self.known:
            self._for_csharp(self.aliases.get(owner, owner))  # its C# script: said once
            return
        if len(self._missing) < 10 * MAX_PROBLEMS:  # bounded: past it, repeats are dropped
            self._missing.add((owner, dep))  # by the problems' own de-duplication
        if dep not in self.known:
            self._add(Problem("missing_dependency", owner, f"missing file: {dep}", line))
        elif _suffix(dep) in SCRIPTS | SCENES:  # explained by dep's own problem, if it has one
            why = f"{dep} does not load"
            if len(self._followups) < MAX_PROBLEMS:
                self._followups.append((Problem("load", owner, why, line), dep))
            self._own = self._own or owner == self.current
        elif owner not in self._unimported:  # Godot 4 said so already: its imported copy
            why = f"{dep} exists but does not load (is the project imported?)"
            self._add(Problem("load", owner, why, line))

    def _csharp(self, path: str) -> bool:
        """``path`` is a C# script of the project, or fails only because of one."""
        named = self.aliases.get(path, path)
        return named in self.csharp_only or (_suffix(named) == ".cs" and named in self.known)

    def _for_csharp(self, path: str) -> None:
        """``path`` fails only because a C# script does not load (said once, elsewhere); so
        does the file being loaded, when that failure is what it met."""
        for failed in (path, self.current):
            if failed is not None and len(self.csharp_only) < 10 * MAX_PROBLEMS:
                self.csharp_only.add(failed)
                self._reported.add(failed)
        self._own = self._own or self.current is not None

    def report(self, problem: Problem) -> None:
        """Record a problem found outside Godot's output (a crash, a stuck file)."""
        self._add(problem)

    def _add(self, problem: Problem) -> None:
        named = self.aliases.get(problem.path, problem.path)
        path = named if named in self.known else self.current
        if path is None:
            return  # a place outside the project, and no file being loaded: not ours
        preloaded = _PRELOADS.search(problem.message) if problem.kind == "parse" else None
        if self.csharp and (
            (preloaded is not None and self._csharp(preloaded.group(1)))
            or (path in self.csharp_only and "preload" in problem.message.lower())
        ):
            self._for_csharp(path)  # it preloads what fails only for C#
            return
        problem = Problem(
            problem.kind, path, self.redact(problem.message)[:MAX_MESSAGE], problem.line
        )
        if path == self.current:
            self._own = True
        self._reported.add(path)
        if problem in self._seen:
            return
        if len(self.problems) >= MAX_PROBLEMS:
            self.more += 1
            return
        self._seen.add(problem)
        self.problems.append(problem)


Progress = Callable[[int, int], Awaitable[None]]


class Check:
    """One check: its private work dir, its Godot processes, what they found.

    Godot runs once for all files; if it crashes, or one file does not finish loading
    within ``FILE_LIMIT_S``, that file is reported and Godot starts again on the rest (at
    most ``MAX_RESTARTS`` times).
    """

    def __init__(
        self,
        binary: str,
        profile: EngineProfile,
        work_dir: Path,
        project: Path,
        env: Mapping[str, str] | None = None,
        private: Iterable[PathPair] = (),
        engine: str = "Godot",
        dotnet: bool | None = None,
    ) -> None:
        """``engine``: how failures name the engine (``Godot 4.6.3``); ``dotnet``: whether it
        is a .NET build (``False``: a C# project's scripts cannot load)."""
        self.binary = binary
        self.engine = engine
        self.dotnet = dotnet
        self.csharp: str | None = None  # the file a C# project's problem is reported on
        self.carried: list[str] = []  # warnings: C# the game does not need will not load
        self.csharp_only: set[str] = set()  # files that load a C# script, at any remove
        self.facts = Facts([], False)  # what project.godot declares; ``prepare`` reads it
        self.profile = profile
        self.work_dir = Path(work_dir)
        self.project = Path(project)
        self._root_id = (0, 0)
        self.env = dict(os.environ if env is None else env)  # the run's policy filters it
        self.mark = "@@godot-mcp-check-" + secrets.token_hex(8)
        self.files: list[str] = []
        self.known: frozenset[str] = frozenset()
        self.aliases: dict[str, str] = {}
        self._run = Supervisor(CheckFailed)
        self._reason = ""  # why the last Godot run failed, from its output
        self._private = list(private)
        self._given = self.project  # the project as named; ``prepare`` resolves it
        self.redact = self._scrubber(self.project)

    def prepare(self, plan: tree.Plan, files: list[str]) -> None:
        """Make the work dir with the check script (blocking: use a thread)."""
        self.files = files
        self.known = frozenset(tree.res_path(e.rel) for e in plan.entries if not e.is_dir)
        self.aliases = aliases(plan)
        self.project, self._root_id = plan.root, plan.root_id
        self.redact = self._scrubber(plan.root)
        self.facts = read_facts(plan.root)
        if self.dotnet is False and self.facts.dotnet:
            reached = reach.walk(plan.root, files)
            self.csharp_only = reached.reaching(p for p in reached.by if _suffix(p) == ".cs")
            fit = csharp_fit(plan.root, seen=seen_files(plan))
            if fit.needed is not None:
                self.csharp = csharp_file(plan)
            else:
                self.carried = [csharp_carried(self.engine, fit.files)] if fit.files else []
        self.work_dir.mkdir(parents=True, mode=0o700)
        listing = self.work_dir / "list.txt"
        source = (Path(__file__).parent / self.profile.script("check")).read_text(encoding="utf-8")
        source = source.replace("__LIST__", _gd_string(str(listing))).replace("__MARK__", self.mark)
        (self.work_dir / "check.gd").write_text(source, encoding="utf-8")

    def _scrubber(self, root: Path) -> Scrubber:
        """The project as given and as resolved both read ``res://``; the work dir is
        ``<scratch>``."""
        pairs = [*as_res(root), *as_res(self._given), (self.work_dir, "<scratch>")]
        return Scrubber.for_run(pairs, self._private)

    def godot_run(self, root_fd: int) -> GodotRun:
        """The check as a Godot run: sandboxed, the project bound from ``root_fd``, its
        output piped to the reader.

        Godot writes only to a size-bounded ``/tmp`` (its XDG dirs are there); the work
        dir (the list, the script) and the project are read-only.
        """
        script = str(self.work_dir / "check.gd")
        return GodotRun(
            self.binary,
            [*self.profile.headless_flags, "--path", str(self.project), "--script", script],
            self.work_dir,
            base_env=self.env,
            extra_env=xdg_homes("/tmp/xdg"),
            confinement=Confinement(
                home=Path("/tmp/home"),
                ro=[self.work_dir],
                ro_fds=[(root_fd, self.project)],
                tmp_size=TMP_BYTES,
            ),
            stdout=subprocess.PIPE,
        )

    def launch(self, files: Sequence[str] | None = None) -> None:
        """Spawn Godot on ``files`` (default all); call from the event loop's thread."""
        listing = self.work_dir / "list.txt"
        listing.write_text("".join(f + "\n" for f in (self.files if files is None else files)))
        root_fd = None
        try:
            root_fd = os.open(self.project, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            st = os.fstat(root_fd)
            if (st.st_dev, st.st_ino) != self._root_id:
                raise CheckFailed("the project folder was replaced while it was checked")
            self._run.start(self.godot_run(root_fd))
        except OSError as exc:  # the project folder cannot be opened
            raise CheckFailed(f"cannot start Godot: {exc.strerror or exc}") from None
        finally:
            if root_fd is not None:
                os.close(root_fd)

    async def run(self, timeout: float, progress: Progress | None = None) -> Report:
        """Follow the check to its end; no process of it is left when this returns.

        Godot's output is read from a pipe as it comes and only problems are kept, so a
        project that prints without end costs neither memory nor the state dir's disk.
        The check is complete when Godot said DONE after the last file and exited 0.
        """
        assert self._run.child is not None, "launch() first"
        reader = OutputReader(
            self.mark,
            self.known,
            self.redact.game,  # the engine's words on the project's code: the project's text
            expected=self.files,
            aliases=self.aliases,
            csharp=self.dotnet is False and self.facts.dotnet,
            csharp_only=set(self.csharp_only),
        )
        if self.csharp is not None:
            reader.report(Problem("load", self.csharp, csharp_reason(self.engine)))
        deadline = time.monotonic() + timeout
        restarts = 0
        while True:
            ended = await self._follow(reader, deadline, progress)
            code = self._run.returncode
            if reader.finished and code == 0:
                break
            reader.finished = False
            stuck = reader.current
            started = stuck is not None or reader.next > 0
            if ended == "timeout" or not started or restarts >= MAX_RESTARTS:
                if ended == "timeout":
                    raise CheckTimeout(
                        f"the check did not finish within {timeout:.0f} s "
                        f"({reader.done} of {len(self.files)} files checked)"
                    )
                raise CheckFailed(
                    f"{self.engine} exited with code {code} after checking {reader.done} of "
                    f"{len(self.files)} files{self._why()}"
                )
            if stuck is not None:
                if ended == "stuck":
                    why = f"did not finish loading within {FILE_LIMIT_S:.0f} s"
                    deadline += FILE_LIMIT_S  # a stuck file does not eat the others' time
                else:
                    why = f"Godot crashed loading it (exit code {code})"
                reader.report(Problem("load", stuck, why))
                reader.feed(f"{self.mark} END failed {stuck}")
            rest = list(self.files[reader.next :])
            if not rest:
                break
            restarts += 1
            deadline += RESTART_S
            self.launch(rest)
        reader.finish()
        scripts = sum(1 for f in self.files if _suffix(f) in SCRIPTS)
        return Report(
            reader.problems, scripts, len(self.files) - scripts, reader.more, list(self.carried)
        )

    async def _follow(
        self, reader: OutputReader, deadline: float, progress: Progress | None
    ) -> str:
        """Read one Godot run to its end: ``ended`` (its output closed), ``stuck`` (one file
        took longer than FILE_LIMIT_S) or ``timeout``; the process is gone afterwards."""
        out = self._run.output()
        reason = Reason(_NOISE)  # the engine's first error, for a run that did not finish
        told = 0.0
        began: tuple[str | None, float] = (None, time.monotonic())
        how = "ended"
        try:
            while not out.ended:
                now = time.monotonic()
                if reader.current != began[0]:
                    began = (reader.current, now)
                limit = deadline - now
                if reader.current is not None:
                    limit = min(limit, began[1] + FILE_LIMIT_S - now)
                lines = await out.next(limit)
                if lines is None:
                    how = "timeout" if time.monotonic() >= deadline else "stuck"
                    break
                for line in lines:
                    reason.see(line)
                    reader.feed(line)
                if progress is not None and time.monotonic() - told >= 0.25:
                    told = time.monotonic()
                    await progress(reader.done, len(self.files))
            if how == "ended":
                await self._run.wait(5)
        finally:
            await self.stop()
            out.close()
            self._reason = reason.text[:MAX_MESSAGE]
        return how

    def _why(self) -> str:
        why = self._reason
        return f": {self.redact.game(why)}"[:MAX_MESSAGE] if why else ""

    async def stop(self) -> None:
        """Kill what is left of the process group and reap it (bounded, shielded)."""
        await self._run.stop()

    def cleanup(self) -> None:
        """Remove the work dir (blocking)."""
        tree.remove(self.work_dir)


def _gd_string(text: str) -> str:
    """``text`` inside a GDScript double-quoted string literal."""
    return text.replace("\\", "\\\\").replace('"', '\\"')
