"""Real ``kill -9`` of a child process at many points of the write paths.

A fork server (``crash_child serve``, one interpreter for the whole file) forks
one worker process per kill, so a kill costs a fork, not an interpreter start.

Named points: the worker kills itself at one ``checkpoint(...)`` of the store.
Random moments: the worker runs one workload's operations and the test SIGKILLs
it at a random delay after an operation started, drawn across how long that
workload's operations take (measured before the batch and as it goes). A kill
counts only when it landed inside the work (the operation never reported its
end). Every kill, landed or not, is followed by the full invariant check; one
state dir serves a whole batch, since the check leaves it as consistent as a
fresh one. ``GODOT_MCP_CRASH_SEED`` fixes the draws, ``GODOT_MCP_CRASH_KILLS``
how many landed random kills to aim for.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select as sql_select

from godot_mcp.store.db import read_session
from godot_mcp.store.models import Artifact, Blob, BlobUpload
from godot_mcp.store.reconcile import ReconcileReport, reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Limits, NewArtifact, utc_now
from tests.conftest import Backend
from tests.store.conftest import make_project, read_all, stdio_caller
from tests.store.crash_child import BUDGET, CAPTURE_MAGIC, EXPORT_BUDGET, capture_header
from tests.support.rawblobs import RawBlobs

# slow: kills real child processes with kill -9.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

POINTS = {
    "register": [
        "stage.chunk:1",
        "stage.chunk:3",
        "stage.done:1",
        "stage.done:2",
        "register.staged:1",
        "publish.renamed:1",
        "publish.renamed:2",
        "register.published:1",
        "register.before_commit:1",
        "register.before_commit:3",
        "register.committed:1",
        "register.committed:2",
        "collect.deleted:1",
    ],
    "group": [
        "stage.done:2",
        "register.staged:1",
        "publish.renamed:1",
        "publish.renamed:3",
        "register.published:1",
        "register.before_commit:1",
        "register.committed:1",
        "collect.deleted:1",
    ],
    "reconcile": [
        "reconcile.released:1",
        "reconcile.dropped:1",
        "reconcile.orphan:1",
        "reconcile.temp:1",
        "reconcile.temp:2",
    ],
}

SEED = int(os.environ.get("GODOT_MCP_CRASH_SEED", "20240611"))
MIN_RANDOM_KILLS = 200  # landed random kills the suite must really do (one host's store)
TARGET_RANDOM_KILLS = int(os.environ.get("GODOT_MCP_CRASH_KILLS", "220"))
# A shared store's operations go over two networks (each check ~0.5 s): half as many there.
SHARED_SHARE = 0.5
WORKLOADS = ("single", "group", "capture", "export", "reconcile")


def _quota(backend: str) -> int:
    """Landed kills to aim for per workload on ``backend``."""
    share = 1.0 if backend == "sqlite+directory" else SHARED_SHARE
    return math.ceil(share * TARGET_RANDOM_KILLS / len(WORKLOADS))


CALIBRATION_OPS = 3  # one worker's run, uninterrupted: first durations of the window
STEP_S = 10_000.0  # clock offset between workers: each sees the previous ones' artifacts expired


@dataclass
class KillRecord:
    """Random kills of one workload: landed inside an operation, or missed (it had returned)."""

    landed: int = 0
    missed: int = 0
    phases: Counter[str] = field(default_factory=Counter)  # where the landed ones hit


ran: list[str] = []  # named kill points that really killed the child; reported in the summary
random_kills: dict[str, KillRecord] = {}  # per workload; reported in the summary


def _seed(state: Path, project: Path, backend: Backend, budget: int = BUDGET) -> None:
    """Leave work for the child: live and soon-expired artifacts, an orphan, a temp file."""
    store = ArtifactStore(state, Limits(store_budget_bytes=budget), **backend.options)
    caller, gen = stdio_caller(store, project)
    for i in range(3):
        store.register(caller, gen, NewArtifact("image/png", bytes([i]) * 100_000))
    RawBlobs(store).plant_orphan(b"orphan")
    for n in range(2):
        (store.layout.blob_dir / ".tmp" / f"stage-left{n}").write_bytes(b"partial")
    store.close()


@dataclass
class Checked:
    """What the invariant check saw after a kill."""

    ids: set[str]  # artifact rows left by the killed process (before the check's reconcile)
    report: ReconcileReport  # what the check's reconcile had to clean up


def _check_invariants(
    state: Path,
    project: Path,
    backend: Backend,
    budget: int = BUDGET,
    offset: float = 0.0,
    committed: tuple[str, ...] = (),
) -> Checked:
    """The store after a kill is consistent; ``committed`` artifacts (their call returned) kept.

    Leaves the store as it found it but for what reconcile cleans: the artifact
    that fills the remaining budget is released again, so a batch can go on.
    """
    shift = timedelta(seconds=offset)
    store = ArtifactStore(
        state,
        Limits(store_budget_bytes=budget),
        clock=lambda: utc_now() + shift,
        **backend.options,
    )
    caller, _ = stdio_caller(store, project)
    with read_session(store.engine) as s:
        rows = list(s.scalars(sql_select(Artifact)))
    for row in rows:  # no row without bytes, no row with wrong bytes
        got = store.blobs.hash_blob(row.sha256)
        assert got == (row.sha256, row.size), f"row {row.id} has no intact bytes"
    groups = Counter(r.export_id for r in rows if r.export_id)
    for export_id, n in groups.items():  # a group commits whole or not at all
        want = re.search(r"-n(\d+)$", export_id)
        assert want is None or n == int(want[1]), f"group {export_id} has {n} artifacts"
    listed = store.list(caller, limit=1000).items
    for item in listed:
        data = read_all(store, caller, item.uri)
        assert hashlib.sha256(data).hexdigest() == item.sha256
        if item.frames is not None or data.startswith(CAPTURE_MAGIC):  # capture metadata
            assert data[:16] == capture_header(item.frames or 0, item.width or 0, item.height or 0)
    lost = set(committed) - {i.id for i in listed}
    assert not lost, f"registrations that returned were lost: {sorted(lost)}"
    report = reconcile(store, orphan_grace_s=0)
    assert report.missing_dropped == 0 and report.mismatched_dropped == 0
    now = store.now_us()
    with read_session(store.engine) as s:
        after = list(s.scalars(sql_select(Artifact)))
        blob_rows = set(s.scalars(sql_select(Blob.sha256)))
        leased = set(s.scalars(sql_select(BlobUpload.sha256).where(BlobUpload.expires_us > now)))
    objects = set(store.blobs.iter_blobs())
    assert blob_rows <= objects, "a blob row without its bytes after reconcile"
    # An object without a row is explained only by a live lease: an upload the kill cut
    # short on a shared store, removed once its lease expires (the next worker's clock).
    assert objects - blob_rows <= (leased if store.blobs.objects.shared else set()), "orphan blob"
    assert list(store.blobs.iter_temp()) == []
    used = sum(r.size for r in after)
    assert store.bytes_in_use() == used <= budget
    if budget - used:  # the whole remaining budget is usable: nothing leaked
        filler = store.register(
            caller,
            store.projects.observe(project).generation,
            NewArtifact(
                "image/png", os.urandom(min(32, budget - used)).ljust(budget - used, b"\0")
            ),
        )
        assert store.bytes_in_use() == budget
        assert store.release_where(Artifact.id == filler.id) == 1
        assert store.bytes_in_use() == used
        assert not store.blobs.exists(filler.sha256, filler.size)
    store.close()
    return Checked({r.id for r in rows}, report)


@dataclass
class Outcome:
    """One worker's life: what it reported before the SIGKILL."""

    landed: bool  # the kill hit operation J while it ran
    finished: bool  # every operation returned before the kill
    offset: float  # clock offset in force when the last operation started
    durations: list[tuple[int, float]]  # (operation, seconds) of the operations that returned
    committed: tuple[str, ...]  # artifacts of the operations that returned


def _job(
    workload: str,
    state: Path,
    project: Path,
    src: Path,
    seed: int,
    offset: float,
    ops: int,
    budget: int,
    backend: Backend,
) -> dict[str, object]:
    """One job line for the fork server (see ``crash_child``)."""
    return {
        "workload": workload,
        "state": str(state),
        "project": str(project),
        "src": str(src),
        "seed": seed,
        "offset": offset,
        "ops": ops,
        "budget": budget,
        "options": backend.options,
    }


class ForkServer:
    """``crash_child serve`` with its stdout read line by line (no thread, no buffering)."""

    def __init__(self, stderr: Path) -> None:
        self.stderr_path = stderr
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("GODOT_MCP_KILL_AT", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.store.crash_child", "serve"],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr.open("wb"),
        )
        self.fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self.buf = b""
        assert self.line() == "ready"

    def line(self, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise AssertionError(f"the fork server said nothing for {timeout} s")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                err = self.stderr_path.read_text(errors="replace")[-2000:]
                raise AssertionError(f"the fork server died: {err}")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode()

    def run(self, job: dict[str, object], kill: tuple[int, float] | None = None) -> Outcome:
        """Fork a worker for ``job``; see it die by SIGKILL.

        ``kill`` (J, DELAY): SIGKILL it DELAY s after operation J starts. Otherwise it
        is killed once every operation returned, unless it kills itself before
        (a named point, ``kill_at`` in the job).
        """
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.flush()
        first = self.line()
        assert first.startswith("forked "), first
        pid = int(first.split()[1])
        offset, durations, committed, error = float(str(job["offset"])), [], [], None
        finished = killed = False
        while True:
            line = self.line()
            if line.startswith("exit "):
                break
            kind, _, rest = line.partition(" ")
            if kind == "B":
                j, offset_s = rest.split()
                offset = float(offset_s)
                if kill is not None and int(j) == kill[0]:
                    time.sleep(kill[1])
                    os.kill(pid, signal.SIGKILL)
                    killed = True
            elif kind == "E":
                j, seconds, ids = rest.split(" ", 2)
                durations.append((int(j), float(seconds)))
                committed += json.loads(ids)
            elif kind == "ERR":
                error = json.loads(rest)
            finished = finished or kind == "done"
            if kind in ("done", "ERR") and not killed:
                os.kill(pid, signal.SIGKILL)
                killed = True
        assert line == f"exit {pid} {-signal.SIGKILL}", (line, error)  # a real kill -9
        assert error is None, error
        landed = kill is not None and kill[0] not in {j for j, _ in durations}
        return Outcome(landed, finished, offset, durations, tuple(committed))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    server = ForkServer(tmp_path_factory.mktemp("fork-server") / "stderr")
    yield server
    server.close()


@pytest.mark.parametrize(
    ("op", "point"), [(op, p) for op, points in POINTS.items() for p in points]
)
def test_kill_at_a_named_point_leaves_a_consistent_store(
    tmp_path: Path, fork_server: ForkServer, op: str, point: str, backend: Backend
) -> None:
    state, project = tmp_path / "state", make_project(tmp_path / "p")
    _seed(state, project, backend)
    offset = 3600.0 if point.startswith(("collect", "reconcile.released")) else 0.0
    job = _job(f"point-{op}", state, project, tmp_path, 7, offset, 1, BUDGET, backend)
    out = fork_server.run(job | {"kill_at": point})
    assert not out.finished, f"the worker never passed {point}"
    ran.append(f"{backend.name} {point}")
    _check_invariants(state, project, backend)


# -- random moments -----------------------------------------------------------


class Window:
    """How long a workload's operations take: first of a worker (cold) and later ones."""

    def __init__(self) -> None:
        self.seen: dict[bool, list[float]] = {True: [], False: []}

    def add(self, durations: list[tuple[int, float]]) -> None:
        for j, seconds in durations:
            self.seen[j == 0].append(seconds)

    def width(self, cold: bool) -> float:
        """The 75th percentile of recent durations: most operations outlast a draw in it."""
        recent = sorted(self.seen[cold][-40:] or self.seen[not cold][-40:])
        return recent[int(0.75 * (len(recent) - 1))]


def _phase(workload: str, checked: Checked, known: set[str], committed: tuple[str, ...]) -> str:
    """Where a landed kill hit, told by what it left for reconcile."""
    r = checked.report
    if workload == "reconcile":
        if r.expired_released:
            return "before release"
        if r.orphan_blobs_removed:
            return "before orphan sweep"
        return "before temp sweep" if r.temp_files_removed else "after the sweeps"
    if checked.ids - known - set(committed):
        return "committed"
    if r.orphan_blobs_removed:
        return "published"
    return "staging" if r.temp_files_removed else "left nothing"


@pytest.mark.parametrize("workload", WORKLOADS)
def test_random_kills_inside_the_work_leave_a_consistent_store(
    tmp_path: Path, fork_server: ForkServer, workload: str, backend: Backend
) -> None:
    rng = random.Random(f"{SEED}:{workload}")
    budget = EXPORT_BUDGET if workload == "export" else BUDGET
    state, project, src = tmp_path / "state", make_project(tmp_path / "p"), tmp_path / "src"
    _seed(state, project, backend, budget)
    record = random_kills.setdefault(f"{backend.name} {workload}", KillRecord())
    window, workers = Window(), 0

    def kill(ops: int, at: tuple[int, float] | None) -> tuple[Outcome, Checked]:
        nonlocal workers
        workers += 1  # each worker's clock runs STEP_S past the one before
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir()
        job = _job(
            workload,
            state,
            project,
            src,
            rng.getrandbits(32),
            workers * STEP_S,
            ops,
            budget,
            backend,
        )
        out = fork_server.run(job, at)
        window.add(out.durations)
        return out, _check_invariants(state, project, backend, budget, out.offset, out.committed)

    _, checked = kill(CALIBRATION_OPS, None)  # calibration: every operation returns
    attempts = 0
    quota = _quota(backend.name)
    while record.landed < quota and attempts < 2 * quota:  # past that, too many missed
        attempts += 1
        target = rng.randrange(3)  # kill in the first, second or third operation of a worker
        delay = rng.uniform(0.0, window.width(cold=target == 0))
        known = checked.ids
        try:
            out, checked = kill(target + 1, (target, delay))
        except AssertionError as exc:
            raise AssertionError(
                f"seed {SEED}, workload {workload}, kill {attempts}: operation {target} "
                f"+{delay:.4f} s: {exc}"
            ) from exc
        if out.landed:
            record.landed += 1
            record.phases[_phase(workload, checked, known, out.committed)] += 1
        else:
            record.missed += 1
    assert record.landed >= quota, (
        f"only {record.landed} of {attempts} random kills of {workload} landed inside the work "
        f"(seed {SEED})"
    )


def test_at_least_200_random_kills_landed_inside_the_work() -> None:
    """On each backend: both run in CI (PostgreSQL and SeaweedFS are started by the tests)."""
    for name in ("sqlite+directory", "postgresql+s3"):
        missing = [w for w in WORKLOADS if f"{name} {w}" not in random_kills]
        if missing:
            pytest.skip(f"workloads not run on {name}: {missing}")
        landed = {w: random_kills[f"{name} {w}"].landed for w in WORKLOADS}
        need = MIN_RANDOM_KILLS * (1.0 if name == "sqlite+directory" else SHARED_SHARE)
        assert sum(landed.values()) >= need, (
            f"only {sum(landed.values())} random kills landed inside the work on {name}: "
            f"{landed} (seed {SEED})"
        )
