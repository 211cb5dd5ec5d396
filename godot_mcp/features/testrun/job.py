"""One run of a project's own test runner, headless, on a private copy, in the exports' sandbox.

The tests are the project's code and write what they like, so they run on a copy (made and,
on Godot 4, imported by the caller) inside the sandbox, which sees the copy and the run's work
dir read-write and nothing private::

    <work_dir>/
        project/       the copy
        xdg/           the run's XDG dirs and home (``user://`` is under it)
        report.xml     GUT's report; gdUnit4's is reports/report_1/results.xml

The runner's output is read as it comes (:class:`~godot_mcp.engine.process.output.PipeLines`):
the tests started so far (for progress) and its last lines (``log_tail``) are kept, nothing
more. The run ends when the runner exits or its time is up; either way its process group is
ended. What the runner wrote is then read from the work dir, no further than ``MAX_REPORT``
bytes and never through a link (the tests could have put one there).

Errors::

    TestRunFailed(Failed)     the runner could not start, or exited without a report
    TestRunTimeout(Timeout)   it did not end within its time, and left no report
    (both carry ``log_tail``: the runner's last lines, private paths replaced)
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from godot_mcp.engine.process.engine_lines import is_startup
from godot_mcp.engine.process.redact import PathPair, Scrubber, as_res, printable
from godot_mcp.engine.process.run import GodotRun, on_copy
from godot_mcp.engine.process.supervisor import Supervisor
from godot_mcp.engine.project import tree
from godot_mcp.errors import Failed, Timeout
from godot_mcp.features.testrun.detect import NAMES
from godot_mcp.features.testrun.junit import MAX_REPORT
from godot_mcp.features.testrun.runner import Invocation, TestCount

__all__ = ["TAIL_LINES", "Ran", "TestJob", "TestRunFailed", "TestRunTimeout"]

TAIL_LINES = 40  # lines of the runner's output an answer carries
MAX_TAIL_LINE = 500  # characters kept of each
TMP_BYTES = 256 << 20  # what the tests may write to /tmp and /dev/shm in the sandbox
EXIT_GRACE_S = 5.0  # after the output closed, the runner's own exit

BROKEN_GRACE_S = 10.0  # a framework that does not compile: how long a first test may still take

Progress = Callable[[str], Awaitable[None]]


class TestRunFailed(Failed):
    """The runner could not run, or exited without writing its report."""


class TestRunTimeout(Timeout):
    """The runner did not end within its time and wrote no report."""


@dataclass(frozen=True)
class Ran:
    """What a run left: the report's bytes as written (``None``: the runner found no test and
    said so), the runner's exit code (``None``: stopped at its time limit), its last lines."""

    report: bytes | None
    exit_code: int | None
    log_tail: list[str]


class TestJob:
    """One runner: started on the copy, followed to its end, its report read."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(
        self,
        binary: str,
        framework: str,
        invocation: Invocation,
        work_dir: Path,
        copy: Path,
        env: Mapping[str, str] | None = None,
        private: Iterable[PathPair] = (),
        names: Iterable[PathPair] = (),
        engine: str = "Godot",
    ) -> None:
        """``names``: more paths that name the project (the original, as the user gave it);
        ``engine``: how failures name the engine (``Godot 4.6.3``)."""
        self.binary = binary
        self.framework = framework
        self.invocation = invocation
        self.work_dir = Path(work_dir)
        self.copy = Path(copy)
        self.env = dict(os.environ if env is None else env)  # the run's policy filters it
        self.engine = engine
        self.count = TestCount(framework)
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._run = Supervisor(lambda message: TestRunFailed(message, log_tail=[]))
        self.redact = Scrubber.for_run(
            [*as_res(self.copy), *names, (self.work_dir, "<scratch>")], list(private)
        )

    def prepare(self) -> None:
        """The runner's own files in the work dir (blocking). The copy must be there."""
        (self.work_dir / "xdg").mkdir(parents=True, mode=0o700, exist_ok=True)
        for path, data in self.invocation.files.items():
            path.write_bytes(data)

    def godot_run(self) -> GodotRun:
        """The runner as a Godot run in the project's copy, writing only it and the work dir."""
        args = self.invocation.args
        return on_copy(self.binary, args, self.copy, self.env, self.work_dir, self.copy, TMP_BYTES)

    def launch(self) -> None:
        """Spawn the runner; call from the event loop's thread."""
        self._run.start(self.godot_run())

    async def run(
        self, timeout: float, progress: Progress | None = None, said: float | None = None
    ) -> Ran:
        """Follow the runner to its end (or ``timeout`` s); no process of it is left after.
        ``said``: the time limit a timeout names (the whole run's, when an import took part).

        A report is what counts: a runner that wrote one ran, whatever its exit code (GUT
        exits 1 when a test fails); one stopped at its time limit after writing a complete
        report ran too. With no report the run failed, or timed out."""
        assert self._run.child is not None, "launch() first"
        deadline = time.monotonic() + timeout
        out = self._run.output()
        late = False
        broken_at: float | None = None  # when the framework was seen not to compile
        try:
            while not out.ended:
                now = time.monotonic()
                if broken_at is not None and not self.count.begun:
                    if now >= broken_at + BROKEN_GRACE_S:
                        break  # the framework does not compile here and runs nothing
                    wait = min(deadline, broken_at + BROKEN_GRACE_S) - now
                else:
                    wait = deadline - now
                lines = await out.next(wait)
                if lines is None:
                    if time.monotonic() >= deadline:
                        late = True
                        break
                    continue  # the framework's grace is over: seen at the top
                for line in lines:
                    self.count.see(line)
                    if line.strip() and not is_startup(line):
                        self.tail.append(printable(line)[:MAX_TAIL_LINE])
                if self.count.broken is not None and broken_at is None:
                    broken_at = time.monotonic()
                if progress is not None:
                    await progress(self.redact(self.count.words()))
            if not late and out.ended:
                left = max(0.0, min(EXIT_GRACE_S, deadline - time.monotonic()))
                late = await self._run.wait(left) is None
        finally:
            await self.stop()
            out.close()
        code = None if late or not out.ended else self._run.returncode
        report = await anyio.to_thread.run_sync(self._read_report)
        tail = self.log_tail()
        if report is None and code == 0 and self.count.none_found:
            return Ran(None, code, tail)  # nothing to run
        if report is None:
            name = NAMES[self.framework]
            if self.count.broken is not None:
                raise TestRunFailed(
                    f"{name} does not run on {self.engine}: its own script "
                    f"{self.redact(self.count.broken)} (a parse error); a version of {name} "
                    "made for this engine is needed",
                    log_tail=tail,
                )
            if late:
                raise TestRunTimeout(
                    f"the tests did not finish within {said or timeout:.0f} s "
                    f"({self.count.started} started) and wrote no report",
                    log_tail=tail,
                )
            refused = (
                f"; {name} said: {self.redact(self.count.refused)}" if self.count.refused else ""
            )
            raise TestRunFailed(
                f"the test runner exited with code {code} without writing its report{refused}",
                log_tail=tail,
            )
        return Ran(report, code, tail)

    def log_tail(self) -> list[str]:
        """The runner's last lines, private paths replaced."""
        return [self.redact(line) for line in self.tail]

    def _read_report(self) -> bytes | None:
        """The report's bytes as the runner wrote them (blocking); ``None`` when it wrote none.
        Read without following a link, at most ``MAX_REPORT`` + 1 bytes (more is not read)."""
        run = self.invocation
        data = tree.read_below(run.report_root, run.report_rel, MAX_REPORT + 1)
        return data

    async def stop(self) -> None:
        """Kill what is left of the process group and reap it (bounded, shielded)."""
        await self._run.stop()
