from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from godot_mcp.errors import TooLarge
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Limits, NewArtifact
from tests.store.conftest import make_project, stdio_caller

ROOT = Path(__file__).resolve().parents[2]
SIZE = 100_000


def _try_register(store: ArtifactStore, caller, gen: int) -> bool:
    try:
        store.register(caller, gen, NewArtifact("image/png", os.urandom(SIZE)))
        return True
    except TooLarge:
        return False


def test_many_threads_never_push_the_store_over_its_budget(tmp_path, backend) -> None:
    budget = 20 * SIZE + SIZE // 2
    store = ArtifactStore(tmp_path / "state", Limits(store_budget_bytes=budget), **backend.options)
    caller, gen = stdio_caller(store, make_project(tmp_path / "p"))

    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(lambda _: _try_register(store, caller, gen), range(48)))
    assert sum(results) == 20
    assert store.bytes_in_use() == 20 * SIZE <= budget
    assert len(store.list(caller, limit=100).items) == 20


@pytest.mark.slow  # starts store processes
def test_separate_processes_and_threads_together_never_exceed_the_budget(tmp_path, backend) -> None:
    budget = 30 * SIZE + SIZE - 1
    state, project = tmp_path / "state", make_project(tmp_path / "p")
    store = ArtifactStore(state, Limits(store_budget_bytes=budget), **backend.options)
    caller, gen = stdio_caller(store, project)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # On one host they share the state dir; on a shared store each is another host's.
    shared = backend.name != "sqlite+directory"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.store.concurrent_child",
                str(tmp_path / f"host{i}" if shared else state),
                str(project),
                str(budget),
                str(SIZE),
                "20",
                backend.options.get("database_url", ""),
                backend.options.get("blob_store_url", ""),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]

    with ThreadPoolExecutor(max_workers=4) as pool:
        mine = sum(pool.map(lambda _: _try_register(store, caller, gen), range(20)))
    theirs = 0
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        theirs += int(out.strip())
    assert mine + theirs == 30
    assert store.bytes_in_use() == 30 * SIZE <= budget
    report = reconcile(store)
    assert report.artifacts_kept == 30 and report.missing_dropped == 0
    assert len(set(store.blobs.iter_blobs())) == 30
