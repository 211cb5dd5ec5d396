"""Real ``kill -9`` of a child process at many points of the write paths."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from godot_mcp.store.db import read_session
from godot_mcp.store.models import Artifact, Blob
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Limits, NewArtifact
from tests.store.conftest import make_project, read_all, stdio_caller
from tests.store.crash_child import BUDGET

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
RANDOM_KILLS = 12
ran: list[str] = []  # kill points that really killed the child; reported in the summary


def _child(
    state: Path, project: Path, op: str, offset: float, seed: int, kill_at: str | None
) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("GODOT_MCP_KILL_AT", None)
    if kill_at:
        env["GODOT_MCP_KILL_AT"] = kill_at
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.store.crash_child",
            str(state),
            str(project),
            op,
            str(offset),
            str(seed),
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _seed(state: Path, project: Path) -> None:
    """Leave work for the child: live and soon-expired artifacts, an orphan, a temp file."""
    store = ArtifactStore(state, Limits(store_budget_bytes=BUDGET))
    caller, gen = stdio_caller(store, project)
    for i in range(3):
        store.register(caller, gen, NewArtifact("image/png", bytes([i]) * 100_000))
    orphan = store.blobs.path_of(hashlib.sha256(b"orphan").hexdigest())
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"orphan")
    for n in range(2):
        (store.blobs.tmp_dir / f"stage-left{n}").write_bytes(b"partial")
    store.close()


def _check_invariants(state: Path, project: Path) -> None:
    store = ArtifactStore(state, Limits(store_budget_bytes=BUDGET))
    caller, _ = stdio_caller(store, project)
    with read_session(store.engine) as s:
        rows = list(s.scalars(select(Artifact)))
    for row in rows:  # no row without bytes, no row with wrong bytes
        got = store.blobs.hash_blob(row.sha256)
        assert got == (row.sha256, row.size), f"row {row.id} has no intact bytes"
    for item in store.list(caller, limit=1000).items:
        assert hashlib.sha256(read_all(store, caller, item.uri)).hexdigest() == item.sha256
    report = reconcile(store)
    assert report.missing_dropped == 0 and report.mismatched_dropped == 0
    with read_session(store.engine) as s:
        rows = list(s.scalars(select(Artifact)))
        blob_rows = set(s.scalars(select(Blob.sha256)))
    assert set(store.blobs.iter_blobs()) == blob_rows, "orphan or missing blob after reconcile"
    assert list(store.blobs.iter_temp()) == []
    used = sum(r.size for r in rows)
    assert store.bytes_in_use() == used <= BUDGET
    if BUDGET - used:  # the whole remaining budget is usable: nothing leaked
        store.register(
            caller,
            store.projects.observe(project).generation,
            NewArtifact("image/png", os.urandom(BUDGET - used)),
        )
        assert store.bytes_in_use() == BUDGET
    store.close()


@pytest.mark.parametrize(
    ("op", "point"), [(op, p) for op, points in POINTS.items() for p in points]
)
def test_kill_at_a_named_point_leaves_a_consistent_store(tmp_path, op, point) -> None:
    state, project = tmp_path / "state", make_project(tmp_path / "p")
    _seed(state, project)
    offset = 3600.0 if point.startswith(("collect", "reconcile.released")) else 0.0
    child = _child(state, project, op, offset, 7, point)
    out, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, (point, out, err[-2000:])
    ran.append(point)
    _check_invariants(state, project)


@pytest.mark.parametrize("seed", range(RANDOM_KILLS))
def test_kill_at_a_random_moment_leaves_a_consistent_store(tmp_path, seed) -> None:
    state, project = tmp_path / "state", make_project(tmp_path / "p")
    _seed(state, project)
    child = _child(state, project, "loop", 0.0, seed, None)
    time.sleep(random.Random(seed).uniform(0.6, 1.6))  # imports take ~0.5 s
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    ran.append(f"random:{seed}")
    _check_invariants(state, project)
