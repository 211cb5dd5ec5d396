"""Recovery evidence is never dropped without a word (a real state dir and files)."""

from __future__ import annotations

from pathlib import Path

from godot_mcp.features.export.recovery import keep_evidence
from godot_mcp.runtime.dirs import RuntimeDirs
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Limits


def test_a_leftover_that_cannot_be_kept_is_counted_and_said(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path / "state", Limits())
    try:
        work = RuntimeDirs(store.layout.state_dir).exports_dir / "e1"
        (work / "out").mkdir(parents=True)
        (work / "out" / "game.pck-aB3dE9").write_bytes(b"partial pack")
        (work / "out" / "game.x86_64-Qw8rT2").write_bytes(b"partial binary")
        (work / "log.txt").write_text("Godot said things\n")
        # Where one file would go is taken (by a folder holding something): neither a move
        # nor a copy can put it there.
        evidence_dir = RuntimeDirs(store.layout.state_dir).evidence_dir
        blocked = evidence_dir / "e1" / "out" / "game.x86_64-Qw8rT2"
        blocked.mkdir(parents=True)
        (blocked / "x").write_text("in the way")
        kept = keep_evidence(store, "e1")
        assert (kept.files, kept.bytes, kept.lost) == (2, 12 + 18, 1)
        assert kept.why == "Is a directory"
        evidence = RuntimeDirs(store.layout.state_dir).evidence_dir / "e1"
        assert (evidence / "out" / "game.pck-aB3dE9").read_bytes() == b"partial pack"
        assert (evidence / "log.txt").read_text() == "Godot said things\n"
        assert not work.exists()
    finally:
        store.close()


def test_leases_not_given_back_are_said(tmp_path: Path, monkeypatch, caplog) -> None:
    """A failed registration whose leases the database will not end now leaves a warning
    (its uploads wait for the leases to expire), never silence."""
    from godot_mcp.errors import DatabaseUnavailable
    from godot_mcp.store import leases
    from godot_mcp.store.guard import LeaseGuard

    store = ArtifactStore(tmp_path / "state", Limits())
    try:

        def refuse(engine, holder):  # type: ignore[no-untyped-def]
            raise DatabaseUnavailable("the store's database cannot be reached")

        monkeypatch.setattr(leases, "give_back", refuse)
        guard = LeaseGuard(store.engine, store.blobs, store.now_us)
        with caplog.at_level("WARNING", logger="godot_mcp.store.guard"):
            guard.give_back("holder-1")
        (record,) = caplog.records
        assert record.getMessage() == (
            "the leases of a failed registration were not given back (the store's database "
            "cannot be reached); their uploads are kept until the leases expire in 3600 s"
        )
    finally:
        store.close()
