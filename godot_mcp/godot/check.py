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
    load                END failed, none of the above for the file (the first error line is why)

A dependency that exists in the project but does not load (an image never imported) is a
``load`` problem of the scene, not a missing one. Each problem is reported once.

Errors::

    CheckError(Exception)
     ├── BadPaths      a ``paths`` entry is not a res:// file or folder of the project, or
     │                 names a file that is not a script, scene or resource
     ├── CheckFailed   Godot could not run the check to its end (it exited, or the copy failed)
     └── CheckTimeout  the check did not end within its time limit
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from godot_mcp.godot import sandbox, tree
from godot_mcp.godot.child import Child
from godot_mcp.godot.redact import PathPair, Scrubber

SCRIPTS = frozenset({".gd"})
SCENES = frozenset({".tscn", ".scn", ".tres", ".res"})  # counted as scenes: scenes, resources
CACHES = frozenset({".import", ".godot"})  # Godot's own, never checked
MAX_MESSAGE = 1000
MAX_LINE = 10_000
_SCRIPT = {3: "check3.gd", 4: "check4.gd"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SCRIPT_ERROR = re.compile(r"^SCRIPT ERROR: (?:[\w:]+: )?(?:Parse|Compile) Error: (.*)$")
_AT = re.compile(r"^\s+(?:At: (res://.+):(\d+)\.?|at: .*\((res://.+):(\d+)\))\s*$")
_FORMAT = re.compile(r"^ERROR: (?:\w+: )?(res://.+?):(\d+) - Parse Error: (.*?)\.?\s*$")
_MISSING = re.compile(r"\[ext_resource\] referenced non-?existent resource at: (res://.+)$")
_CONSEQUENCE = re.compile(r"Failed to compile depended scripts")
_ERROR = re.compile(r"^(?:SCRIPT )?ERROR: (?:[\w:]+: )?(.*)$")
_NOISE = re.compile(
    r"make_dir_recursive|Invalid locale '|Unsupported locale '|Method failed|Condition \""
)


class CheckError(Exception):
    """Base of the check's errors; ``message`` names no private path."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadPaths(CheckError):
    """A ``paths`` entry the check cannot take."""


class CheckFailed(CheckError):
    """Godot could not run the check to its end."""


class CheckTimeout(CheckError):
    """The check did not end within its time limit."""


@dataclass(frozen=True)
class Problem:
    """One error found: ``path`` is the file it is in (for a missing dependency, the scene)."""

    kind: str
    path: str
    message: str
    line: int | None = None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"path": self.path, "kind": self.kind, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        return out


@dataclass
class Report:
    """What a check found, and how many files of each sort it loaded."""

    problems: list[Problem]
    scripts: int
    scenes: int


def time_limit(files: int) -> float:
    """Seconds a check of ``files`` files may take: a start-up allowance plus 0.1 s a file."""
    return 30.0 + 0.1 * files


def select(plan: tree.Plan, paths: Sequence[str] | None) -> list[str]:
    """The ``res://`` files to check, scripts first, each sort in path order.

    ``paths`` (files or folders, ``res://`` or ``res://sub/``) narrow the project; ``None``
    takes it all. Godot's caches and folders holding a ``.gdignore`` are left out; a file
    named whose sort the check does not load is refused, like one that does not exist.
    """
    files = {e.rel for e in plan.entries if not e.is_dir}
    folders = {e.rel for e in plan.entries if e.is_dir}
    ignored = {os.path.dirname(rel) for rel in files if os.path.basename(rel) == ".gdignore"}
    candidates = sorted(rel for rel in files if _checkable(rel) and not _ignored(rel, ignored))
    if paths is None:
        chosen = candidates
    else:
        chosen_set: set[str] = set()
        for given in paths:
            rel = _relative(given)
            if rel == "" or rel in folders:
                prefix = rel + "/" if rel else ""
                chosen_set.update(c for c in candidates if c.startswith(prefix))
            elif rel in files:
                if not _checkable(rel):
                    raise BadPaths(
                        f"{given} is not a script, scene or resource "
                        "(.gd, .tscn, .scn, .tres, .res)"
                    )
                if not _ignored(rel, ignored):
                    chosen_set.add(rel)
            else:
                raise BadPaths(f"{given} is not a file or folder of the project")
        chosen = sorted(chosen_set)
    scripts = [c for c in chosen if _suffix(c) in SCRIPTS]
    others = [c for c in chosen if _suffix(c) not in SCRIPTS]
    return ["res://" + c for c in scripts + others]


def _relative(given: str) -> str:
    """``res://a/b/`` as ``a/b``; refuses anything that is not a plain project path."""
    if not isinstance(given, str) or not given.startswith("res://"):
        raise BadPaths(f"{str(given)[:200]!r} is not a res:// path")
    rel = given[len("res://") :].strip("/")
    parts = rel.split("/") if rel else []
    if any(p in ("", ".", "..") for p in parts) or "\\" in rel or "\0" in rel:
        raise BadPaths(f"{given[:200]!r} is not a plain res:// path")
    return rel


def _suffix(rel: str) -> str:
    return os.path.splitext(rel)[1].lower()


def _checkable(rel: str) -> bool:
    """A script, scene or resource with a name Godot and the list file can carry."""
    if _suffix(rel) not in SCRIPTS | SCENES or rel.split("/", 1)[0] in CACHES:
        return False
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return rel.isprintable()


def _ignored(rel: str, ignored: set[str]) -> bool:
    parts = rel.split("/")
    return any("/".join(parts[:i]) in ignored for i in range(len(parts)))


@dataclass
class OutputReader:
    """Turns the check's output, line by line, into problems (bounded: only problems are kept)."""

    mark: str
    known: frozenset[str]  # every file of the project, as res:// paths
    redact: Callable[[str], str] = str
    problems: list[Problem] = field(default_factory=list)
    done: int = 0
    finished: bool = False
    _seen: set[Problem] = field(default_factory=set)
    _reported: set[str] = field(default_factory=set)  # paths with a problem already
    _current: str | None = None
    _own: bool = False  # a problem of the current file itself was recorded
    _first_error: str | None = None  # the first error line naming the current file
    _any_error: str | None = None  # else the first error line of its block
    _pending: str | None = None  # a script error waiting for its At: line

    def feed(self, raw: str) -> None:
        line = _ANSI.sub("", raw).rstrip("\r\n")[:MAX_LINE]
        if self._pending is not None:
            message, self._pending = self._pending, None
            at = _AT.match(line)
            if at:
                path, number = at.group(1) or at.group(3), at.group(2) or at.group(4)
                self._add(Problem("parse", path, message, int(number)))
                return
            if self._current is not None:
                self._add(Problem("parse", self._current, message))
        if line.startswith(self.mark + " "):
            self._marker(line[len(self.mark) + 1 :])
        elif self._current is not None:
            self._inside(line)

    def _marker(self, rest: str) -> None:
        verb, _, arg = rest.partition(" ")
        if verb == "BEGIN":
            self._current, self._own = arg, False
            self._first_error = self._any_error = None
        elif verb == "END":
            state, _, path = arg.partition(" ")
            if state == "failed" and not self._own and path not in self._reported:
                why = self._first_error or self._any_error or "Godot could not load it"
                self._add(Problem("load", path, why))
            self._current = None
            self.done += 1
        elif verb == "DONE":
            self.finished = True

    def _inside(self, line: str) -> None:
        script = _SCRIPT_ERROR.match(line)
        if script:
            if not _CONSEQUENCE.search(script.group(1)):
                self._pending = script.group(1).strip()
            return
        fmt = _FORMAT.match(line)
        if fmt:
            path, number, message = fmt.group(1), int(fmt.group(2)), fmt.group(3)
            missing = _MISSING.search(message)
            if missing is None:
                self._add(Problem("load", path, message, number))
            elif missing.group(1).rstrip(".") in self.known:
                dep = missing.group(1).rstrip(".")
                why = f"{dep} exists but does not load (is the project imported?)"
                self._add(Problem("load", path, why, number))
            else:
                dep = missing.group(1).rstrip(".")
                self._add(Problem("missing_dependency", path, f"missing file: {dep}", number))
            return
        error = _ERROR.match(line)
        if error is None or _NOISE.search(line):
            return
        text = self.redact(error.group(1).strip())[:MAX_MESSAGE]
        if self._first_error is None and self._current and self._current in line:
            self._first_error = text
        elif self._any_error is None:
            self._any_error = text

    def _add(self, problem: Problem) -> None:
        problem = Problem(
            problem.kind, problem.path, self.redact(problem.message)[:MAX_MESSAGE], problem.line
        )
        if problem.path == self._current:
            self._own = True
        self._reported.add(problem.path)
        if problem not in self._seen:
            self._seen.add(problem)
            self.problems.append(problem)


Progress = Callable[[int, int], Awaitable[None]]


class Check:
    """One check: its private work dir, its Godot process, what it found."""

    def __init__(
        self,
        binary: str,
        major: int,
        work_dir: Path,
        project: Path,
        env: Mapping[str, str] | None = None,
        private: Iterable[PathPair] = (),
        sandboxed: bool = True,
    ) -> None:
        self.binary = binary
        self.major = 4 if major >= 4 else 3
        self.work_dir = Path(work_dir)
        self.snapshot = self.work_dir / "snapshot"
        self.root = self.snapshot  # what Godot's --path names: the project, or its copy
        self._root_id = (0, 0)
        self.env = dict(os.environ if env is None else env)
        self.sandboxed = sandboxed
        self.mark = "@@godot-mcp-check-" + secrets.token_hex(8)
        self.files: list[str] = []
        self.known: frozenset[str] = frozenset()
        self._proc: Child | None = None
        home = self.env.get("HOME") or os.path.expanduser("~")
        pairs: list[PathPair] = [
            (str(self.snapshot) + "/", "res://"),
            (self.snapshot, "res://"),
            (str(project).rstrip("/") + "/", "res://"),
            (project, "res://"),
            (self.work_dir, "<scratch>"),
            (Path(__file__).resolve().parent, "<godot_mcp>"),
            *private,
        ]
        if home not in ("", "/"):
            pairs.append((home, "~"))
        self.redact = Scrubber(pairs)

    def prepare(self, plan: tree.Plan, files: list[str]) -> None:
        """Write the list and the check script, and copy the project when not sandboxed
        (blocking: use a thread)."""
        self.files = files
        self.known = frozenset(tree.res_path(e.rel) for e in plan.entries if not e.is_dir)
        self.work_dir.mkdir(parents=True, mode=0o700)
        if self.sandboxed:
            self.root, self._root_id = plan.root, plan.root_id
        else:
            tree.copy(plan, self.snapshot)
        for sub in ("xdg/config", "xdg/cache", "xdg/data"):
            (self.work_dir / sub).mkdir(parents=True)
        listing = self.work_dir / "list.txt"
        listing.write_text("".join(f + "\n" for f in files), encoding="utf-8")
        source = (Path(__file__).parent / _SCRIPT[self.major]).read_text(encoding="utf-8")
        source = source.replace("__LIST__", _gd_string(str(listing))).replace("__MARK__", self.mark)
        (self.work_dir / "check.gd").write_text(source, encoding="utf-8")

    def command(self, root_fd: int | None = None) -> list[str]:
        """Godot's command line (inside the sandbox, the project bound from ``root_fd``)."""
        flags = ["--headless"] if self.major >= 4 else []
        script = str(self.work_dir / "check.gd")
        godot = [self.binary, *flags, "--path", str(self.root), "--script", script]
        if not self.sandboxed:
            return godot
        assert root_fd is not None
        binary = shutil.which(self.binary) or self.binary
        seen = [Path(os.path.realpath(binary)).parent]
        return sandbox.wrap(
            godot,
            rw=[self.work_dir],
            ro=seen,
            cwd=self.work_dir,
            home=self.work_dir / "xdg",
            ro_fds=[(root_fd, self.root)],
        )

    def launch(self) -> None:
        """Spawn Godot; call from the event loop's thread (the child dies with it)."""
        env = {k: v for k, v in self.env.items() if k not in ("PWD", "OLDPWD")}
        for name, sub in (("CONFIG", "config"), ("CACHE", "cache"), ("DATA", "data")):
            env[f"XDG_{name}_HOME"] = str(self.work_dir / "xdg" / sub)
        root_fd = None
        try:
            if self.sandboxed:
                root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                st = os.fstat(root_fd)
                if (st.st_dev, st.st_ino) != self._root_id:
                    raise CheckFailed("the project folder was replaced while it was checked")
            self._proc = Child.spawn(
                self.command(root_fd),
                env=env,
                stdout=subprocess.PIPE,
                cwd=str(self.work_dir),
                pass_fds=() if root_fd is None else (root_fd,),
            )
        except OSError as exc:
            raise CheckFailed(f"cannot start Godot: {exc.strerror or exc}") from None
        finally:
            if root_fd is not None:
                os.close(root_fd)

    async def run(self, timeout: float, progress: Progress | None = None) -> Report:
        """Follow the check to its end; the process is always gone when this returns.

        Godot's output is read from a pipe as it comes and only problems are kept, so a
        project that prints without end costs neither memory nor the state dir's disk.
        """
        assert self._proc is not None and self._proc.stdout is not None, "launch() first"
        reader = OutputReader(self.mark, self.known, self.redact)
        lines = _Lines()
        fd = self._proc.stdout.fileno()
        os.set_blocking(fd, False)
        told = 0.0
        try:
            with anyio.move_on_after(timeout) as scope:
                while True:
                    await anyio.wait_readable(fd)
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    for line in lines.push(chunk):
                        reader.feed(line)
                    if not chunk:  # end of output: Godot and all of the sandbox are done
                        break
                    if progress is not None and time.monotonic() - told >= 0.25:
                        told = time.monotonic()
                        await progress(reader.done, len(self.files))
            if scope.cancelled_caught:
                raise CheckTimeout(
                    f"the check did not finish within {timeout:.0f} s "
                    f"({reader.done} of {len(self.files)} files checked)"
                )
            await self._proc.wait_for(5)
        finally:
            await self.stop()
            self._proc.stdout.close()
        if not reader.finished:
            code = self._proc.returncode
            last = f": {lines.last_error}" if lines.last_error else ""
            raise CheckFailed(
                f"Godot exited with code {code} after checking {reader.done} of "
                f"{len(self.files)} files{self.redact(last)[:MAX_MESSAGE]}"
            )
        scripts = sum(1 for f in self.files if _suffix(f) in SCRIPTS)
        return Report(reader.problems, scripts, len(self.files) - scripts)

    async def stop(self) -> None:
        """Kill what is left of the process group and reap it (bounded, shielded)."""
        if self._proc is not None:
            await self._proc.kill_all()

    def cleanup(self) -> None:
        """Remove the work dir (blocking)."""
        shutil.rmtree(self.work_dir, ignore_errors=True)


class _Lines:
    """Whole lines out of a byte stream (a line without end is cut at 4 * MAX_LINE)."""

    def __init__(self) -> None:
        self._rest = b""
        self.last_error = ""  # the last ERROR line seen, for a run that did not finish

    def push(self, chunk: bytes) -> list[str]:
        """The lines ``chunk`` completes; an empty chunk (end of stream) flushes the rest."""
        data = self._rest + chunk
        *whole, self._rest = data.split(b"\n")
        if (not chunk or len(self._rest) > 4 * MAX_LINE) and self._rest:
            whole.append(self._rest[: 4 * MAX_LINE])
            self._rest = b""
        out = [w.decode("utf-8", "replace") for w in whole]
        for line in out:
            clean = _ANSI.sub("", line)
            if clean.startswith("ERROR") and not _NOISE.search(clean):
                self.last_error = clean[:MAX_MESSAGE]
        return out


def _gd_string(text: str) -> str:
    """``text`` inside a GDScript double-quoted string literal."""
    return text.replace("\\", "\\\\").replace('"', '\\"')
