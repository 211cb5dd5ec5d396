"""The one table of foreign failures (pure logic)."""

from __future__ import annotations

import errno

import pytest
from sqlalchemy.exc import OperationalError, ProgrammingError

from godot_mcp.errors import DatabaseBusy, NotFound, StorageError
from godot_mcp.store.failures import mapped, os_error, os_errors


def test_a_file_system_failure_says_what_was_done_and_why() -> None:
    full = os_error("cannot publish a blob", OSError(errno.ENOSPC, "No space left on device"))
    assert (type(full), full.message) == (StorageError, "cannot publish a blob: the disk is full")
    with pytest.raises(StorageError) as denied, os_errors("cannot read a blob"):
        raise PermissionError(errno.EACCES, "Permission denied")
    assert denied.value.message == "cannot read a blob: Permission denied"


def test_the_boundary_maps_drivers_and_files_and_passes_the_tree_through() -> None:
    with pytest.raises(StorageError) as refused, mapped("cannot use the state dir"):
        raise ProgrammingError("SELECT", {}, Exception("no such table: tokens"))
    assert (
        refused.value.message == "the store's database refused the operation: no such table: tokens"
    )
    with pytest.raises(DatabaseBusy), mapped("x"):
        raise OperationalError("UPDATE", {}, Exception("database is locked"))
    with pytest.raises(StorageError) as quota, mapped("cannot use the state dir"):
        raise OSError(errno.EDQUOT, "Disk quota exceeded")
    assert quota.value.message == "cannot use the state dir: the disk is full"
    with pytest.raises(NotFound), mapped("x"):
        raise NotFound("artifact not found")
