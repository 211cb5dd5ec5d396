"""An export's end survives a database that refuses to record it (pure logic, on top of the
real full-disk tests in test_export_safety and test_faults)."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process.locate import locate_godot
from godot_mcp.errors import StorageError
from godot_mcp.features.export.service import ExportService
from godot_mcp.runtime.context import Runtime
from godot_mcp.store.db import read_session, write_session
from godot_mcp.store.models import Export
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller
from tests.support.projects import make_project


def _running_export(tmp_path: Path) -> tuple[ArtifactStore, Caller, ExportService]:
    """A store holding one running export, ``e`` * 22, and a service over it."""
    store = ArtifactStore(tmp_path / "state")
    project = make_project(tmp_path / "project")
    state = store.projects.observe(project)
    caller = Caller("local", None, None, state.id)
    service = ExportService(Runtime(store, project, locate_godot()))
    with write_session(store.engine) as s:
        s.add(
            Export(
                id="e" * 22,
                project_id=state.id,
                generation=state.generation,
                principal="local",
                session_id=None,
                launch_id=None,
                preset="Pack",
                kind="pack",
                state="running",
                owner_pid=1,
                owner_start="0",
                created_us=1,
            )
        )
    return store, caller, service


@pytest.mark.anyio
async def test_an_end_the_database_refuses_is_answered_from_memory_then_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, caller, service = _running_export(tmp_path)

    def refuse(*_args):  # what a full disk does to SQLite's write
        raise StorageError("the store's database refused the operation: database or disk is full")

    monkeypatch.setattr(service.records, "finish", refuse)
    await service._settle("e" * 22, "failed", "the outputs could not be stored", None)  # no raise
    assert await service.settled("e" * 22)
    view = await service.view(caller, "e" * 22)
    assert (view.state, view.error) == ("failed", "the outputs could not be stored")
    monkeypatch.undo()
    assert (await service.view(caller, "e" * 22)).state == "failed"  # flushed now
    assert service._unsettled == {}
    with read_session(store.engine) as s:
        row = s.get(Export, "e" * 22)
        assert row is not None
        assert (row.state, row.error) == ("failed", "the outputs could not be stored")
    store.close()


@pytest.mark.anyio
async def test_a_cancel_answers_the_end_its_watcher_is_still_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher of an export cancelled while its copy is imported ends it at once; its
    end may still be on its way to the database when the cancel answers: it says cancelled."""
    store, caller, service = _running_export(tmp_path)
    written = threading.Event()
    release = threading.Event()
    finish = service.records.finish

    def slow_finish(*args):  # the watcher's write, held until the cancel has answered
        if not written.is_set():
            written.set()
            release.wait(10)
        finish(*args)

    monkeypatch.setattr(service.records, "finish", slow_finish)

    class Pending:  # an export importing its copy: the cancel ends its watcher
        state = "pending"

        async def cancel(self) -> str:
            self.state = "cancelled"
            group.start_soon(service._settle, "e" * 22, "cancelled", None, None)
            await anyio.to_thread.run_sync(written.wait, 10)
            return self.state

    service.jobs["e" * 22] = Pending()  # type: ignore[assignment]
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            answered = await service.cancel(caller, "e" * 22)
            release.set()
    assert answered == "cancelled"
    assert (await service.view(caller, "e" * 22)).state == "cancelled"
    store.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
