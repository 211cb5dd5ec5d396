"""The server's side of one game's debugger connection: breaks, stacks, variables, stepping.

One task reads the connection (:meth:`Debugger.run`) and keeps the state; the tools' calls send
a command and wait, bounded, for the message that answers it. What the engines send (recorded
in ``tests/data/debugger``):

* a break: ``debug_enter [can_continue, error, …]`` (``error`` is ``"Breakpoint"`` for a
  breakpoint, a step and Godot 3's ``break``, empty for Godot 4's ``break``, the engine's
  message for a script error); the server then asks for the stack at once, and the break is
  known once ``stack_dump`` answers. ``debug_exit`` ends it.
* ``stack_dump``: Godot 3 a Dictionary a frame (``file``, ``line``, ``function``); Godot 4 a
  flat list, its length first, then path, line, function for each frame.
* ``stack_frame_vars``: Godot 3 in one message (a count, then name and value pairs, for the
  locals, the members and the globals in turn); Godot 4 the count of variables, then one
  ``stack_frame_var [name, scope, type, value]`` message each (scope 0 local, 1 member, 2
  global).
* ``evaluation_return`` (Godot 4): ``[expression, scope, type, value]``.

Frames that are not the project's (the server's own bridge script, which is not under
``res://``) are left out of every stack; their engine index is kept for the variables.
"""

from __future__ import annotations

import collections
import contextlib
import math
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from godot_mcp.engine.debugger.variant import Dictionary
from godot_mcp.engine.debugger.wire import Framer, Message
from godot_mcp.engine.process.redact import Scrubber
from godot_mcp.engine.profile import EngineProfile
from godot_mcp.errors import InvalidArgument, Malformed, Remedy, Timeout, Unavailable

__all__ = [
    "AtBreak",
    "Break",
    "Debugger",
    "DebuggerLost",
    "Evaluated",
    "EvaluationFailed",
    "Frame",
    "Measured",
    "NoSelf",
    "NotStopped",
    "Profile",
    "Profiled",
    "Variables",
]

# What debug_enter says for a stop that is no error: a breakpoint or step (both engines), a
# `breakpoint` statement (Godot 3), a break on request (Godot 4: nothing).
_NOT_ERRORS = frozenset({"", "Breakpoint", "Breakpoint Statement"})
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)
EVAL_ERROR_WAIT = 0.5  # how long a null answer waits for the engine's error that may follow
OFF_LOOP_BYTES = 256 << 10  # a message this large is decoded on a worker thread
FLOOD_BYTES = 32 << 20  # a second's bytes from one game, at most
FLOOD_MESSAGES = 20_000  # a second's messages from one game, at most
MAX_VARIABLES = 200  # of each group a frame answers
MAX_SAFE = 2**53 - 1  # the largest integer every JSON reader holds exactly
PROFILED_FUNCTIONS = 512  # the engines' own most (they keep the cheapest when there are more)
MAX_SKIPS = 500  # steps taken out of the server's own script before the game just runs on
MAX_SAID = 1000  # characters of the engine's own words on an expression a refusal repeats


class NotStopped(Unavailable):
    """The call needs a break and the game is not stopped at one (or stopped being, while the
    call waited)."""


class DebuggerLost(NotStopped):
    """The debugger connection is lost (``Debugger.lost`` says why): no break can be had."""


class AtBreak(Unavailable):
    """The call needs the game running and it is stopped at a break."""


class Flooded(Exception):
    """More came in one second than any engine sends."""


class FloodGate:
    """Bytes and messages a second: a game past either bound loses its debugger (the
    engines' own defaults send at most 2,048 messages a flush, 32,768 characters of output a
    second and 400 errors a second)."""

    def __init__(
        self,
        max_bytes: int = FLOOD_BYTES,
        max_messages: int = FLOOD_MESSAGES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_bytes, self.max_messages = max_bytes, max_messages
        self._clock = clock
        self._window = -math.inf
        self._bytes = 0
        self._messages = 0

    def count(self, size: int, messages: int) -> None:
        now = self._clock()
        if now - self._window >= 1.0:
            self._window, self._bytes, self._messages = now, 0, 0
        self._bytes += size
        self._messages += messages
        if self._bytes > self.max_bytes:
            raise Flooded(f"more than {self.max_bytes} bytes in a second")
        if self._messages > self.max_messages:
            raise Flooded(f"more than {self.max_messages} messages in a second")


@dataclass(frozen=True)
class Evaluated:
    """The engine's answer to an expression: its value, or (``error``) the engine's own words
    on why it could not parse or run it, printable and scrubbed, at most ``MAX_SAID``
    characters."""

    value: Any
    error: str | None = None


class EvaluationFailed(InvalidArgument):
    """The engine could not parse or run an expression; its own message."""


class NoSelf(InvalidArgument):
    """The frame has no ``self``: Godot 4 would resume the game on an evaluation there."""


def _at_break(where: str) -> AtBreak:
    """A call that needs the game running, refused in the words a game's own commands are
    (``godot.game.gate.stopped_error``)."""
    return AtBreak(f"the game is stopped at {where}", remedy=Remedy.RESUME)


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str
    index: int  # the engine's own index of the frame
    code: str | None = None  # its line as the project's file is now, set where answered


@dataclass(frozen=True)
class Break:
    """Where and why the game stopped."""

    reason: str  # breakpoint | error | step | break
    error: str | None
    stack: list[Frame]

    @property
    def where(self) -> str:
        """``res://a.gd:3 (breakpoint)``; ``a break between frames`` with no stack."""
        if not self.stack:
            return "a break between frames"
        return f"{self.stack[0].path}:{self.stack[0].line} ({self.reason})"


@dataclass
class Variables:
    locals: dict[str, Any] = field(default_factory=dict)
    members: dict[str, Any] = field(default_factory=dict)
    truncated: bool = False

    def add(self, scope: int, name: str, value: Any) -> None:
        group = self.locals if scope == 0 else self.members if scope == 1 else None
        if group is None:
            return
        if len(group) >= MAX_VARIABLES:
            self.truncated = True
        else:
            group[name] = value


class Debugger:
    """One attached game's debugger connection (``engine``: its engine's profile)."""

    def __init__(
        self,
        stream: anyio.abc.ByteStream,
        engine: EngineProfile,
        breakpoints: dict[str, set[int]] | None = None,
        on_message: Callable[[Message], None] | None = None,
        on_break: Callable[[Break], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        scrub: Scrubber | None = None,
    ) -> None:
        """``clock``: the flood gate's seconds; ``scrub`` makes the game's texts in the
        refusals what a client may read."""
        self._stream = stream
        self._raw: socket.socket | None = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
        if self._raw is not None:
            with contextlib.suppress(OSError):
                self._raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.engine = engine
        self._framer = Framer(engine.major)
        self.breakpoints: dict[str, set[int]] = breakpoints or {}
        self._on_message = on_message
        self._on_break = on_break
        self.stopped: Break | None = None
        self.lost: str | None = None  # why the connection ended, once it did
        self.lost_at_break = False  # it ended while the game was stopped (it stays stopped)
        self._entered: str | None = None  # debug_enter's error, until the stack comes
        self._last_action: str | None = None
        self._skips = 0
        self._profile: Profile | None = None
        self._profiler_left_on = False  # a capture cut short at a break: stopped on resume
        self._evaluating: str | None = None
        self._eval_errors: list[str] = []
        self._evaluated = False  # an evaluation was sent during this break
        self._thread = 1
        self._changed = anyio.Event()
        self._waiters: dict[str, list[list[Message]]] = {}
        self._vars: Variables | None = None  # Godot 4: the variables arriving one by one
        self._vars_left = 0
        # A stopped game's values cannot change (but by an evaluation): each frame's are asked
        # once a break, the top frame's as soon as the break is known. The engine answers
        # its requests in order and drops those a resume overtakes.
        self._asked: collections.deque[int] = collections.deque()
        self._known: dict[int, Variables] = {}
        self._send_lock = anyio.Lock()
        self._flood = FloodGate(clock=clock)
        self._scrub = scrub if scrub is not None else Scrubber([], secrets=())

    # --- reading --------------------------------------------------------------------------

    async def run(self) -> None:
        """Read the connection until it ends or breaks; then ``lost`` says why."""
        try:
            while True:
                try:
                    chunk = await self._stream.receive(1 << 16)
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    self._lose("the game closed the debugger connection")
                    return
                self._ack_at_once()
                self._flood.count(len(chunk), 0)
                if self._framer.pending + len(chunk) > OFF_LOOP_BYTES:  # decoded on a thread
                    messages = await anyio.to_thread.run_sync(self._framer.feed, chunk)
                else:
                    messages = self._framer.feed(chunk)
                self._flood.count(0, len(messages))
                for message in messages:
                    await self._dispatch(message)
                self._framer.feed(b"")  # a break found after those messages is raised now
        except Malformed as exc:
            self._lose(f"the game sent what is not the debugger's protocol: {exc}")
        except Flooded as exc:
            self._lose(f"the game flooded the debugger connection: {exc}")
        except NotStopped:
            pass  # a send failed: already lost, and why
        except Exception as exc:  # a message of the right shape holding what no engine sends
            what = type(exc).__name__
            self._lose(f"the game sent a message the server could not read ({what})")
        finally:
            with contextlib.suppress(Exception):
                await self._stream.aclose()

    def _ack_at_once(self) -> None:
        """Acknowledge what came without delay. The engines send a message as many small
        packets (Godot 3: one a value) with Nagle's algorithm on, so each waits for the
        acknowledgement of the one before; Linux delays those by up to 40 ms unless told
        otherwise after every read (``TCP_QUICKACK`` does not stay set)."""
        if self._raw is not None and _QUICKACK is not None:
            with contextlib.suppress(OSError):
                self._raw.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)

    def _lose(self, why: str) -> None:
        if self.lost is None:
            self.lost = why
            self.lost_at_break = self.stopped is not None
        self.stopped = None
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _dispatch(self, m: Message) -> None:
        if self._on_message is not None:
            self._on_message(m)
        if m.name == "debug_enter":
            self._thread = m.thread
            error = m.args[1] if len(m.args) > 1 and isinstance(m.args[1], str) else ""
            self._entered = error
            await self._send("get_stack_dump", [])
            if self.engine.enter_says_stack and len(m.args) > 2 and m.args[2] is True:
                # Godot 4 says it has a stack: the top frame's variables in the same poll
                # (asked of an empty stack, the engine would log errors of its own).
                await self._request_vars(0)
        elif m.name == "debug_exit":
            self._entered = None
            self.stopped = None
            self._evaluated = False
            self._asked.clear()
            self._known.clear()
            self._notify()
            if self._profiler_left_on:
                self._profiler_left_on = False
                await self._stop_profiler()
        elif m.name == "stack_dump":
            raw = self._frames(m.args)
            stack = [f for f in raw if project_path(f.path)]
            if self._entered is not None and self.stopped is None and await self._stepped_past(raw):
                return
            if self._entered is not None and self.stopped is None:
                self.stopped = Break(self._reason(self._entered, stack), self._error(), stack)
                if self._on_break is not None:
                    self._on_break(self.stopped)
                self._notify()
                if stack:  # the top frame may be deeper than the server's own script's
                    await self._request_vars(stack[0].index)
            self._answer(m)
        elif m.name == "error" and self._evaluating is not None and self.engine.can_evaluate:
            # Godot 4: [h, m, s, ms, file, function, line, error, description, warning, …]
            said = [a for a in m.args[7:9] if isinstance(a, str) and a]
            if said and not (len(m.args) > 9 and m.args[9] is True):
                self._eval_errors.append(said[-1])
                self._notify()
        elif m.name == "evaluation_return":
            if m.args and m.args[0] == self._evaluating:
                self._answer(m)
        elif self._profile is not None and self._profile.take(m):
            if m.name in ("profile_total", "servers:profile_total"):
                self._answer(m, "profile_total")
        elif m.name == "stack_frame_vars":
            if not self.engine.variables_one_by_one:
                self._got_vars(_godot3_vars(m.args))
            else:
                self._vars = Variables()
                self._vars_left = _int(m.args[0]) if m.args else 0
                if self._vars_left <= 0:
                    self._got_vars(self._vars)
        elif m.name == "stack_frame_var":
            if self._vars is not None and len(m.args) >= 4:
                self._vars.add(m.args[1], str(m.args[0]), m.args[3])
            self._vars_left -= 1
            if self._vars_left == 0 and self._vars is not None:
                self._got_vars(self._vars)
        else:
            self._answer(m)

    def _answer(self, m: Message, name: str | None = None) -> None:
        waiting = self._waiters.get(name or m.name)
        if waiting:
            waiting[0].append(m)
            self._notify()

    def _error(self) -> str | None:
        error = self._entered or ""
        return None if error in _NOT_ERRORS else error

    def _reason(self, error: str, stack: list[Frame]) -> str:
        """The account docs/debugging.md gives: an error, else a breakpoint in force at the top
        frame, else a step after a step, else a break."""
        if error not in _NOT_ERRORS:
            return "error"
        top = stack[0] if stack else None
        if top is not None and top.line in self.breakpoints.get(top.path, set()):
            return "breakpoint"
        return "step" if self._last_action in ("step", "next", "out") else "break"

    async def _stepped_past(self, raw: list[Frame]) -> bool:
        """A step that landed in the server's own script (the bridge, not under ``res://``)
        goes on, a line at a time, until it is back in the project's code (at most ``MAX_SKIPS``
        times, then the game just runs on): the server's own code is never shown."""
        stepping = self._last_action in ("step", "next", "out")
        if not stepping or not raw or project_path(raw[0].path):
            self._skips = 0
            return False
        self._skips += 1
        self._entered = None
        if self._skips > MAX_SKIPS:
            self._skips = 0
            await self._send("continue", [])
        else:
            await self._send("step", [])  # the next line run anywhere: soon the project's
        return True

    def _frames(self, args: list[Any]) -> list[Frame]:
        frames: list[Frame] = []
        if not self.engine.flat_stack:
            for i, d in enumerate(args):
                f = (
                    {k: v for k, v in d.items if isinstance(k, str)}
                    if isinstance(d, Dictionary)
                    else {}
                )
                frames.append(
                    Frame(
                        str(f.get("file", "")), _line(f.get("line")), str(f.get("function", "")), i
                    )
                )
        else:
            flat = args[1:] if args else []
            for i in range(len(flat) // 3):
                path, line, function = flat[3 * i : 3 * i + 3]
                frames.append(Frame(str(path), _line(line), str(function), i))
        return frames

    # --- asking ---------------------------------------------------------------------------

    async def _send(self, name: str, args: list[Any]) -> None:
        if self.lost is not None:
            raise self.not_stopped()
        packet = self._framer.command(name, args, self._thread)
        async with self._send_lock:
            try:
                with anyio.fail_after(5):
                    await self._stream.send(packet)
            except (TimeoutError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self._lose("the game stopped reading the debugger connection")
                raise self.not_stopped() from None

    async def _ask(self, name: str, args: list[Any], answer: str, timeout: float) -> Message:
        """Send ``name`` and wait for the ``answer`` message; NotStopped if the break ends or
        the connection is lost meanwhile; TimeoutError past ``timeout``."""
        got: list[Message] = []
        self._waiters.setdefault(answer, []).append(got)
        try:
            await self._send(name, args)
            with anyio.fail_after(timeout):
                while not got:
                    if self.stopped is None:
                        raise self.not_stopped()
                    await self._changed.wait()
            return got[0]
        finally:
            self._waiters[answer].remove(got)

    # --- the game session's gate (features/game/gate.py) ----------------------------------

    def quiet(self) -> bool:
        """Whether what the engine prints now is the server's own doing: the game is stopped
        (its code runs no more) and an evaluation was sent during this break."""
        return self.stopped is not None and self._evaluated

    def stopped_at(self) -> str | None:
        return self.stopped.where if self.stopped is not None else None

    async def until_stopped(self) -> None:
        while self.stopped is None:
            await self._changed.wait()

    async def wait_for_change(self, timeout: float) -> None:
        """Until the state changes (a break begins or ends, the connection is lost)."""
        with anyio.move_on_after(timeout):
            await self._changed.wait()

    async def wait_stopped(self, timeout: float) -> Break | None:
        """The break the game is at, waiting at most ``timeout`` s for one."""
        with anyio.move_on_after(timeout):
            while self.stopped is None and self.lost is None:
                await self._changed.wait()
        return self.stopped

    async def _request_vars(self, index: int) -> None:
        if index not in self._asked and index not in self._known:
            self._asked.append(index)
            await self._send("get_stack_frame_vars", [index])

    def _got_vars(self, got: Variables) -> None:
        self._vars = None
        index = self._asked.popleft() if self._asked else None
        if index is not None and (self.stopped is not None or self._entered is not None):
            self._known[index] = got
            self._notify()

    async def variables(self, frame: int, timeout: float = 5) -> Variables:
        """The locals and members of ``frame`` (an index into the break's stack); asked of
        the game once a break. NotStopped if the break ends meanwhile; Timeout."""
        try:
            return await self._variables(frame, timeout)
        except TimeoutError:
            raise Timeout(
                f"the game did not answer with the frame's variables within {timeout:g} s"
            ) from None

    async def _variables(self, frame: int, timeout: float) -> Variables:
        brk = self._need_stop()
        if not 0 <= frame < len(brk.stack):
            raise IndexError(frame)
        index = brk.stack[frame].index
        await self._request_vars(index)
        with anyio.fail_after(timeout):
            while index not in self._known:
                if self.stopped is not brk:
                    raise self.not_stopped()
                await self._changed.wait()
        return self._known[index]

    async def evaluate(self, expression: str, frame: int, timeout: float = 5) -> Any:
        """The value of ``expression`` in ``frame``: NoSelf, EvaluationFailed (the engine's
        words), NotStopped, Timeout."""
        got = await self.evaluation(expression, frame, timeout)
        if got.error is not None:
            raise EvaluationFailed(got.error)
        return got.value

    async def evaluation(self, expression: str, frame: int, timeout: float = 5) -> Evaluated:
        """What the engine answered ``expression`` in ``frame``: its value, or its words on
        why it could not parse or run it; NoSelf, NotStopped, Timeout."""
        try:
            return await self._evaluate(expression, frame, timeout)
        except TimeoutError:
            raise Timeout(f"the game did not answer the evaluation within {timeout:g} s") from None

    async def _evaluate(self, expression: str, frame: int, timeout: float) -> Evaluated:
        brk = self._need_stop()
        if not 0 <= frame < len(brk.stack):
            raise IndexError(frame)
        if "self" not in (await self._variables(frame, timeout)).members:
            raise NoSelf(f"frame {frame} has no self to evaluate in")
        self._known.clear()  # an expression can change what the frames hold
        self._evaluated = True
        self._evaluating = expression  # a late answer to an earlier one is not this one's
        self._eval_errors = []
        try:
            m = await self._ask(
                "evaluate", [expression, brk.stack[frame].index], "evaluation_return", timeout
            )
            value = m.args[3] if len(m.args) >= 4 else None
            if value is None:  # null, or the expression failed: the engine then says why
                with anyio.move_on_after(EVAL_ERROR_WAIT):
                    while not self._eval_errors and self.stopped is brk:
                        await self._changed.wait()
                if self._eval_errors:
                    return Evaluated(None, self._scrub.game(self._eval_errors[0])[:MAX_SAID])
            return Evaluated(value)
        finally:
            self._evaluating = None

    async def control(self, action: str, timeout: float) -> Break | None:
        """Send ``action``; for a step, wait (bounded) for the break it leads to."""
        if action == "break":
            if self.stopped is not None:
                return self.stopped  # a second break would resume the game
            self._last_action = "break"
            await self._send("break", [])
            return await self.wait_stopped(timeout)
        brk = self._need_stop()
        self._last_action = action
        await self._send(action, [])
        if action == "continue":  # answered once the engine says it left the break
            with anyio.move_on_after(timeout):
                while self.stopped is brk and self.lost is None:
                    await self._changed.wait()
            return None
        deadline = anyio.current_time() + timeout
        while (self.stopped is None or self.stopped is brk) and self.lost is None:
            left = deadline - anyio.current_time()
            if left <= 0:
                break
            await self.wait_for_change(left)
        return self.stopped if self.stopped is not brk else None

    async def profile(self, seconds: float, timeout: float = 5) -> Profiled:
        """The engine's script profiler on for ``seconds`` of a running game: what it measured.
        ``AtBreak`` if the game is or becomes stopped at a break meanwhile; the
        profiler is then stopped when the game resumes (the engines take it only running)."""
        if self.lost is not None:
            raise self.not_stopped()
        if self.stopped is not None:
            raise _at_break(self._scrub.game(self.stopped.where))
        profile = Profile(self.engine)
        self._profile = profile
        got: list[Message] = []
        self._waiters.setdefault("profile_total", []).append(got)
        stopped_it = False
        try:
            if self.engine.servers_profiler:
                await self._send("profiler:servers", [True, [PROFILED_FUNCTIONS, False]])
            else:
                await self._send("start_profiling", [PROFILED_FUNCTIONS])
            with anyio.move_on_after(seconds):
                await self.until_stopped()
            if self.stopped is not None:
                raise _at_break(self._scrub.game(self.stopped.where))
            stopped_it = True
            await self._stop_profiler()
            with anyio.move_on_after(timeout):
                while not got and self.lost is None and self.stopped is None:
                    await self._changed.wait()
            return profile.result()
        finally:
            self._profile = None
            self._waiters["profile_total"].remove(got)
            if not stopped_it and self.lost is None:
                self._profiler_left_on = True
                if self.stopped is None:  # cancelled while running: stop it now
                    with anyio.CancelScope(shield=True), anyio.move_on_after(timeout):
                        self._profiler_left_on = False
                        await self._stop_profiler()

    async def _stop_profiler(self) -> None:
        if self.engine.servers_profiler:
            await self._send("profiler:servers", [False])
        else:
            await self._send("stop_profiling", [])

    async def set_breakpoint(self, path: str, line: int, on: bool) -> None:
        lines = self.breakpoints.setdefault(path, set())
        (lines.add if on else lines.discard)(line)
        if not lines:
            del self.breakpoints[path]
        await self._send("breakpoint", [path, line, on])

    async def reload_scripts(self, paths: list[str]) -> None:
        """Ask for a reload at the engine's next idle poll (Godot 3: of every script, it
        takes no list; Godot 4: of ``paths``)."""
        await self._send("reload_scripts", list(paths) if self.engine.reloads_named_scripts else [])

    def _need_stop(self) -> Break:
        if self.lost is not None or self.stopped is None:
            raise self.not_stopped()
        return self.stopped

    def not_stopped(self) -> NotStopped:
        """Why a call that needs a break cannot have one: the connection's loss, else that
        the game is not stopped; in the words a client reads."""
        if self.lost is not None:
            return DebuggerLost(f"the debugger connection was lost: {self._scrub(self.lost)}")
        return NotStopped("the game is not stopped")

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._stream.aclose()


@dataclass(frozen=True)
class Measured:
    """One function as the profiler measured it, as answered: its figures finite numbers, its
    times in ms to the µs."""

    path: str
    line: int
    function: str
    calls: int
    self_ms: float
    total_ms: float
    code: str | None = None  # its line as the project's file is now, set where answered


@dataclass(frozen=True)
class Profiled:
    """What one profile measured: ``functions`` busiest (self time) first, and how many of
    the project's functions were ``dropped`` for figures that are no finite numbers."""

    frames: int
    functions: list[Measured]
    dropped: int


@dataclass
class _Sum:
    """One function's figures over the messages that name it (seconds)."""

    calls: int = 0
    self_s: float = 0.0
    total_s: float = 0.0
    broken: bool = False  # a figure was no finite number of its kind


class Profile:
    """The profiler's messages, gathered: signatures, frames, and the engine's own total.

    Godot 3: ``profile_sig [signature, id]``, ``profile_frame`` (8 values: frame, its times,
    script time, D, F; D categories; F × (id, calls, total, self)) and ``profile_total`` (the
    same, D = 0). Godot 4: ``servers:function_signature``, ``servers:profile_frame`` (6 values,
    S servers each with a count of the values that follow, the count of the function values,
    then id, calls, self, total and, since 4.3, internal time each) and
    ``servers:profile_total``. Signatures are ``path::line::function``.

    A game can send these messages itself: a function with a figure that is no finite number
    (or a count below zero), or one that stops being finite once summed or in ms, or a count
    past what every JSON reader holds exactly, is dropped and counted, never answered.
    """

    def __init__(self, engine: EngineProfile) -> None:
        self.engine = engine
        self.signatures: dict[int, tuple[str, int, str]] = {}
        self.frames = 0
        self._sum: dict[int, _Sum] = {}
        self.total: dict[int, _Sum] | None = None

    def take(self, m: Message) -> bool:
        """Keep ``m`` if it is the profiler's; whether it was."""
        if m.name in ("profile_sig", "servers:function_signature"):
            if len(m.args) >= 2 and isinstance(m.args[0], str) and _whole(m.args[1]):
                self.signatures[m.args[1]] = _signature(m.args[0])
            return True
        if m.name in ("profile_frame", "servers:profile_frame"):
            self.frames += 1
            _add(self._sum, self._functions(m.args))
            return True
        if m.name in ("profile_total", "servers:profile_total"):
            self.total = {}
            _add(self.total, self._functions(m.args))
            return True
        return False

    def _functions(self, a: list[Any]) -> list[list[Any]]:
        """[id, calls, self, total] of each function of one profile message, as sent; what
        does not read as the engine sends it (counts past the message, an id that is no
        integer) counts for nothing."""
        if not self.engine.servers_profiler:
            d, f = _count(a, 6), _count(a, 7)
            start = 8 + 2 * d
            if d < 0 or f < 0 or start + 4 * f > len(a):
                return []
            rows = [[r[0], r[1], r[3], r[2]] for r in _chunks(a[start : start + 4 * f], 4)]
        else:
            servers, pos = _count(a, 6), 7
            if servers < 0 or servers > len(a):
                return []
            for _ in range(servers):
                values = _count(a, pos + 1)
                if values < 0:
                    return []
                pos += 2 + values
                if pos >= len(a):
                    return []
            count = _count(a, pos)
            if count < 0 or pos + 1 + count > len(a):
                return []
            found = a[pos + 1 : pos + 1 + count]
            stride = 5 if count % 5 == 0 and _typed(found, 5) else 4
            rows = [r[:4] for r in _chunks(found, stride)]
        return [r for r in rows if _whole(r[0])]

    def result(self) -> Profiled:
        """The project's functions measured (the engine's total, else the frames summed)."""
        source = self.total if self.total else self._sum
        out: list[Measured] = []
        dropped = 0
        for sig, got in source.items():
            known = self.signatures.get(sig)
            if known is None or not project_path(known[0]):
                continue
            if got.broken:
                dropped += 1
                continue
            if got.calls <= 0:
                continue
            self_ms, total_ms = round(got.self_s * 1000, 3), round(got.total_s * 1000, 3)
            if not (math.isfinite(self_ms) and math.isfinite(total_ms)) or got.calls > MAX_SAFE:
                dropped += 1
                continue
            out.append(Measured(*known, got.calls, self_ms, total_ms))
        out.sort(key=lambda m: (-m.self_ms, -m.total_ms, m.path, m.line))
        return Profiled(self.frames, out, dropped)


def _add(into: dict[int, _Sum], rows: list[list[Any]]) -> None:
    for sig, calls, own, total in rows:
        got = into.setdefault(sig, _Sum())
        if not (_whole(calls) and calls >= 0 and _finite(own) and _finite(total)):
            got.broken = True
            continue
        got.calls += calls
        got.self_s += float(own)
        got.total_s += float(total)


def _signature(text: str) -> tuple[str, int, str]:
    parts = text.rsplit("::", 2)
    if len(parts) != 3:
        return text, 0, ""
    path, line, function = parts
    return path, int(line) if line.isdigit() and len(line) < 10 else 0, function


def _chunks(rows: list[Any], size: int) -> list[list[Any]]:
    return [rows[i : i + size] for i in range(0, len(rows) - size + 1, size)]


def _typed(rows: list[Any], stride: int) -> bool:
    """Rows of (int id, int calls, then floats) at this stride."""
    for r in _chunks(rows, stride):
        if not (isinstance(r[0], int) and isinstance(r[1], int)):
            return False
        if not all(isinstance(x, float | int) and not isinstance(x, bool) for x in r[2:]):
            return False
        if any(isinstance(x, int) for x in r[2:]):
            return False
    return True


def project_path(path: str) -> bool:
    """A clean ``res://`` path: the project's own code (the server's bridge and anything a
    game names outside the project, ``res:///abs/path`` or ``res://../x``, is not)."""
    if not path.startswith("res://") or "\\" in path or not path.isprintable():
        return False
    return not any(part in ("", ".", "..") for part in path[len("res://") :].split("/"))


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return (_whole(value) or isinstance(value, float)) and math.isfinite(value) and value >= 0


def _count(values: list[Any], at: int) -> int:
    """The count at ``values[at]``, or -1 when there is none."""
    value: Any = values[at] if 0 <= at < len(values) else None
    return int(value) if _whole(value) and value >= 0 else -1


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _line(value: Any) -> int:
    """A frame's line as answered: 0 when the game sent none a JSON reader holds exactly."""
    return value if _whole(value) and 0 <= value <= MAX_SAFE else 0


def _godot3_vars(args: list[Any]) -> Variables:
    """Godot 3's one message: locals, members and globals, each a count then name, value."""
    out = Variables()
    pos = 0
    for scope in (0, 1, 2):
        if pos >= len(args) or not isinstance(args[pos], int):
            break
        count = args[pos]
        pairs = args[pos + 1 : pos + 1 + 2 * count]
        for i in range(0, len(pairs) - 1, 2):
            out.add(scope, str(pairs[i]), pairs[i + 1])
        pos += 1 + 2 * count
    return out
