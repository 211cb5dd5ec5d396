"""The import cache (``runtime/import_cache.py``) on its own, with imports played by the test:
keyed by every file's bytes and the engine, given whole to a later copy or not at all, never
reached by what runs in a copy after the import, never followed through a link, bounded, and
whole across a kill -9; then project.test's reuse through the fake engine, on both engines.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from godot_mcp.app import open_app
from godot_mcp.config import Settings
from godot_mcp.engine.project import tree
from godot_mcp.runtime import import_cache
from godot_mcp.runtime.import_cache import ImportCache, Snapshot, sweep
from godot_mcp.store.values import Limits
from tests.support import fake_godot
from tests.support.projects import make_project
from tests.support.servers import ROOT

ENGINE = "godot 4.6.3 --headless --import"


def project(root: Path) -> Path:
    """A small project as a copy would hold it before its import."""
    files = {
        "project.godot": b'config_version=5\n\n[application]\n\nconfig/name="x"\n',
        "icon.png": fake_godot.png(4, 4, (1, 2, 3)),
        "lib/thing.gd": b"extends Node\nclass_name Thing\n",
        "stale.txt": b"removed by the import\n",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "empty").mkdir()
    return root


def imports(copy: Path) -> None:
    """What an import does to a copy, played: new files in its import folder (one empty
    folder too), a sidecar, a rewritten project file, a file removed."""
    (copy / ".godot" / "imported").mkdir(parents=True)
    (copy / ".godot" / "editor").mkdir()
    (copy / ".godot" / "imported" / "icon.ctex").write_bytes(b"GST2" + os.urandom(300))
    (copy / ".godot" / "uid_cache.bin").write_bytes(os.urandom(40))
    (copy / "icon.png.import").write_text('[remap]\n\npath="res://.godot/imported/icon.ctex"\n')
    with open(copy / "project.godot", "a") as f:
        f.write("\n[editor]\n")
    (copy / "stale.txt").unlink()
    os.chmod(copy / ".godot" / "uid_cache.bin", 0o640)


def tree_state(root: Path) -> dict[str, object]:
    """Every folder and file below ``root``: a file's bytes' SHA-256 and its permission bits."""
    out: dict[str, object] = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top) / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if path.is_symlink():
                out[rel] = "link"
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mode & 0o777)
    return out


def copy_of(source: Path, target: Path) -> Path:
    """A copy as a run makes one (``tree.copy``)."""
    tree.copy(tree.plan(source), target)
    return target


def imported_once(tmp_path: Path, cache: ImportCache) -> tuple[Path, Snapshot, dict[str, object]]:
    """A project, one copy imported and kept: the project, the copy's snapshot and what the
    import left in the copy."""
    source = project(tmp_path / "project")
    first = copy_of(source, tmp_path / "first")
    snap = cache.snapshot(first, ENGINE)
    assert snap is not None
    imports(first)
    after = tree_state(first)
    assert cache.capture(snap, first)
    return source, snap, after


def test_the_key_is_every_files_bytes_and_the_engine_never_their_times(tmp_path: Path) -> None:
    cache = ImportCache(tmp_path / "imports")
    source = project(tmp_path / "project")

    def key(engine: str = ENGINE) -> str:
        snap = cache.snapshot(source, engine)
        assert snap is not None
        return snap.key

    base = key()
    os.utime(source / "icon.png", ns=(1, 1))  # touched, same bytes
    assert key() == base
    assert key("godot 4.6.2 --headless --import") != base
    keys = {base}
    for change in (
        lambda: (source / "icon.png").write_bytes(fake_godot.png(4, 4, (1, 2, 4))),
        lambda: (source / "more.wav").write_bytes(b""),
        lambda: (source / "lib" / "thing.gd").rename(source / "lib" / "other.gd"),
        lambda: (source / "new").mkdir(),
        lambda: (source / "empty").rmdir(),
    ):
        change()
        keys.add(key())
    assert len(keys) == 6
    (source / "fifo").unlink(missing_ok=True)
    os.mkfifo(source / "fifo")
    assert cache.snapshot(source, ENGINE) is None  # a copy never holds one: nothing is keyed


def test_a_later_copy_of_the_same_files_gets_exactly_what_the_import_wrote(
    tmp_path: Path,
) -> None:
    cache = ImportCache(tmp_path / "imports")
    source, snap, after = imported_once(tmp_path, cache)
    second = copy_of(source, tmp_path / "second")
    again = cache.snapshot(second, ENGINE)
    assert again is not None and again.key == snap.key
    assert cache.apply(again, second) == "reused"
    assert tree_state(second) == after
    assert (cache.stats.reused, cache.stats.kept, cache.stats.absent) == (1, 1, 0)
    # Another project's copy finds nothing and is left as it was.
    (source / "icon.png").write_bytes(b"other")
    third = copy_of(source, tmp_path / "third")
    before = tree_state(third)
    other = cache.snapshot(third, ENGINE)
    assert other is not None and cache.apply(other, third) == "absent"
    assert tree_state(third) == before


def test_what_runs_in_a_copy_after_its_import_never_reaches_the_cache(tmp_path: Path) -> None:
    cache = ImportCache(tmp_path / "imports")
    source, snap, after = imported_once(tmp_path, cache)
    first = tmp_path / "first"
    (first / ".godot" / "imported" / "icon.ctex").write_bytes(b"scribbled")
    (first / ".godot" / "scribble.txt").write_bytes(b"scribbled")
    (first / "icon.png.import").write_bytes(b"scribbled")
    second = copy_of(source, tmp_path / "second")
    assert cache.apply(snap, second) == "reused"
    assert tree_state(second) == after
    assert cache.capture(snap, first) is False  # published once: the key is taken


def test_an_import_that_leaves_a_link_or_a_fifo_is_not_kept(tmp_path: Path) -> None:
    cache = ImportCache(tmp_path / "imports")
    source = project(tmp_path / "project")
    for n, make in enumerate(
        (
            lambda p: (p / ".godot").symlink_to("/etc"),
            lambda p: os.mkfifo(p / "icon.png.import"),
        )
    ):
        copy = copy_of(source, tmp_path / f"copy{n}")
        snap = cache.snapshot(copy, ENGINE)
        assert snap is not None
        make(copy)
        assert cache.capture(snap, copy) is False
    assert cache.entries() == []


def test_an_entry_is_used_only_as_its_manifest_says(tmp_path: Path) -> None:
    """Each way an entry can be bad: the copy is left as it was or made again, the entry is
    removed, and nothing outside the copy is written."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bait").write_bytes(b"bait")

    def link_a_file(entry: Path) -> None:
        kept = entry / "files" / ".godot" / "imported" / "icon.ctex"
        kept.unlink()
        kept.symlink_to(outside / "bait")

    def link_the_files(entry: Path) -> None:
        shutil.rmtree(entry / "files")
        (entry / "files").symlink_to(outside)

    def truncate(entry: Path) -> None:
        (entry / "files" / ".godot" / "uid_cache.bin").write_bytes(b"")

    def same_size_other_bytes(entry: Path) -> None:
        kept = entry / "files" / ".godot" / "imported" / "icon.ctex"
        kept.write_bytes(b"X" * kept.stat().st_size)

    def escape(entry: Path) -> None:
        manifest = json.loads((entry / "manifest.json").read_bytes())
        manifest["removed"] = ["../outside"]
        (entry / "manifest.json").write_text(json.dumps(manifest))

    def no_manifest(entry: Path) -> None:
        (entry / "manifest.json").unlink()

    def link_the_manifest(entry: Path) -> None:
        (outside / "manifest.json").write_bytes((entry / "manifest.json").read_bytes())
        (entry / "manifest.json").unlink()
        (entry / "manifest.json").symlink_to(outside / "manifest.json")

    def link_the_entry(entry: Path) -> None:
        shutil.copytree(entry, outside / "entry")
        shutil.rmtree(entry)
        entry.symlink_to(outside / "entry")

    cases = {
        link_a_file: "spoiled",
        link_the_files: "absent",
        truncate: "spoiled",
        same_size_other_bytes: "spoiled",
        escape: "absent",
        no_manifest: "absent",
        link_the_manifest: "absent",
        link_the_entry: "absent",
    }
    for n, (spoil, outcome) in enumerate(cases.items()):
        base = tmp_path / f"case{n}"
        base.mkdir()
        cache = ImportCache(base / "imports")
        source, snap, _ = imported_once(base, cache)
        spoil(base / "imports" / snap.key)
        outside_before = tree_state(outside)
        second = copy_of(source, base / "second")
        before = tree_state(second)
        assert cache.apply(snap, second) == outcome, spoil.__name__
        if outcome == "absent":
            assert tree_state(second) == before, spoil.__name__
        assert cache.entries() == [] and not os.path.lexists(base / "imports" / snap.key)
        assert cache.stats.dropped == 1, spoil.__name__
        assert tree_state(outside) == outside_before, spoil.__name__


def test_the_cache_keeps_its_bounds_least_recently_used_first(tmp_path: Path) -> None:
    cache = ImportCache(tmp_path / "imports", max_entries=2)
    source = project(tmp_path / "project")
    keys = []
    for n in range(3):
        (source / "icon.png").write_bytes(fake_godot.png(4, 4, (n, 0, 0)))
        copy = copy_of(source, tmp_path / f"copy{n}")
        snap = cache.snapshot(copy, ENGINE)
        assert snap is not None
        if n == 2:  # the first entry was used since the second was kept
            os.utime(tmp_path / "imports" / keys[0], ns=(2_000_000_000, 2_000_000_000))
            os.utime(tmp_path / "imports" / keys[1], ns=(1_000_000_000, 1_000_000_000))
        imports(copy)
        assert cache.capture(snap, copy)
        keys.append(snap.key)
    assert cache.entries() == sorted([keys[0], keys[2]])
    # Bytes: an import larger than the whole cache is not kept; a new one pushes out the rest.
    entry_bytes = json.loads((tmp_path / "imports" / keys[2] / "manifest.json").read_bytes())
    small = ImportCache(tmp_path / "imports", max_entries=9, max_bytes=entry_bytes["bytes"])
    (source / "icon.png").write_bytes(b"four")
    copy = copy_of(source, tmp_path / "copy-bytes")
    snap = small.snapshot(copy, ENGINE)
    assert snap is not None
    imports(copy)
    assert small.capture(snap, copy) is True
    assert small.entries() == [snap.key]
    (source / "icon.png").write_bytes(b"five")
    copy = copy_of(source, tmp_path / "copy-big")
    big = small.snapshot(copy, ENGINE)
    assert big is not None
    imports(copy)
    (copy / ".godot" / "big.bin").write_bytes(b"x" * 10_000)
    assert small.capture(big, copy) is False and small.entries() == [snap.key]


def test_an_entry_being_read_is_never_evicted_under_its_reader(tmp_path: Path) -> None:
    cache = ImportCache(tmp_path / "imports", max_entries=1)
    source, snap, _ = imported_once(tmp_path, cache)
    held = os.open(tmp_path / "imports" / snap.key, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_SH)  # as apply holds it while it copies
        os.utime(tmp_path / "imports" / snap.key, ns=(1, 1))  # the oldest
        (source / "icon.png").write_bytes(b"other")
        copy = copy_of(source, tmp_path / "other")
        other = cache.snapshot(copy, ENGINE)
        assert other is not None
        imports(copy)
        assert cache.capture(other, copy)
        assert cache.entries() == sorted([snap.key, other.key])  # over its bound, for now
    finally:
        os.close(held)
    (source / "icon.png").write_bytes(b"third")
    copy = copy_of(source, tmp_path / "third")
    third = cache.snapshot(copy, ENGINE)
    assert third is not None
    imports(copy)
    assert cache.capture(third, copy)
    assert cache.entries() == [third.key]


def test_two_runs_publishing_one_key_keep_one_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ImportCache(tmp_path / "imports")
    source, snap, after = imported_once(tmp_path, cache)
    late = copy_of(source, tmp_path / "late")
    imports(late)  # its own import: other random bytes
    monkeypatch.setattr(import_cache, "_exists", lambda root, name: False)  # it looked first
    assert cache.capture(snap, late) is False
    assert sorted(os.listdir(tmp_path / "imports")) == [snap.key]  # no partial left
    second = copy_of(source, tmp_path / "second")
    assert cache.apply(snap, second) == "reused" and tree_state(second) == after


def test_the_sweep_removes_what_dead_servers_left_and_what_is_not_an_entry(
    tmp_path: Path,
) -> None:
    cache = ImportCache(tmp_path / "imports")
    _, snap, _ = imported_once(tmp_path, cache)
    root = tmp_path / "imports"
    pid = os.getpid()
    mine = root / f".partial-{pid}-{import_cache.me()[1]}-aaaa"
    mine.mkdir()
    dead = root / ".partial-999999999-1-bbbb"
    (dead / "files").mkdir(parents=True)
    (root / ".trash-999999999-1-cccc").mkdir()
    (root / "stray").write_bytes(b"x")
    (root / "link").symlink_to(tmp_path)
    (root / ("0" * 64)).symlink_to(root / snap.key)
    assert sweep(root) == 5
    assert sorted(os.listdir(root)) == sorted([snap.key, mine.name])
    assert sweep(tmp_path / "nowhere") == 0


CRASH = """
import sys
from pathlib import Path
from godot_mcp.runtime.import_cache import ImportCache, Snapshot
import json
cache = ImportCache(Path(sys.argv[1]))
snap = cache.snapshot(Path(sys.argv[2]), sys.argv[4])
Path(sys.argv[3]).write_text(snap.key)
sys.argv[5:] and exec(sys.argv[5])
cache.capture(snap, Path(sys.argv[2]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("point", ["import-cache-file:2", "import-cache-publish"])
def test_a_kill_9_while_an_entry_is_written_leaves_no_entry(tmp_path: Path, point: str) -> None:
    source = project(tmp_path / "project")
    copy = copy_of(source, tmp_path / "copy")
    root = tmp_path / "imports"
    play = f"from tests.runtime.test_import_cache import imports; imports(Path({str(copy)!r}))"
    env = {**os.environ, "GODOT_MCP_KILL_AT": point, "PYTHONPATH": str(ROOT)}
    args = [str(root), str(copy), str(tmp_path / "key"), ENGINE, play]
    done = subprocess.run(
        [sys.executable, "-c", CRASH, *args], env=env, cwd=ROOT, timeout=60, check=False
    )
    assert done.returncode == -9
    key = (tmp_path / "key").read_text()
    cache = ImportCache(root)
    assert cache.entries() == [] and [n[:9] for n in os.listdir(root)] == [".partial-"]
    second = copy_of(source, tmp_path / "second")
    snap = cache.snapshot(second, ENGINE)
    assert snap is not None and snap.key == key
    assert cache.apply(snap, second) == "absent"
    assert sweep(root) == 1 and os.listdir(root) == []
    # The next run imports and keeps the whole entry.
    imports(second)
    after = tree_state(second)
    assert cache.capture(snap, second)
    third = copy_of(source, tmp_path / "third")
    assert cache.apply(snap, third) == "reused" and tree_state(third) == after


# -- project.test through the fake engine ----------------------------------------------------


@pytest.mark.anyio
@pytest.mark.usefixtures("fake_display")
async def test_a_second_test_run_reuses_its_copys_import(tmp_path: Path, fake_major: int) -> None:
    fake = fake_godot.script(tmp_path / "engine", fake_major)
    headless = fake if fake_major >= 4 else fake_godot.script(tmp_path / "engine", 3, server=True)
    settings = Settings(tmp_path / "state", str(fake), str(headless), Limits())
    root = make_project(tmp_path / "project")
    (root / "icon.png").write_bytes(fake_godot.png(4, 4, (9, 9, 9)))
    (root / "addons" / "gut").mkdir(parents=True)
    (root / "addons" / "gut" / "gut_cmdln.gd").write_text("# the fake engine is the runner\n")
    (root / "test").mkdir()
    (root / "test" / "test_a.gd").write_text("func test_one():\n\tpass\n")
    (root / ".gutconfig.json").write_text('{"dirs": ["res://test"]}')
    counts = {"tests": 1, "passed": 1, "failed": 0, "errors": 0, "skipped": 0}
    with anyio.fail_after(60):
        async with open_app(settings, root, "stdio") as app, Client(app.server) as c:
            tests = app.deps.tests
            seen = []
            for change in (None, None, "icon", None):
                if change == "icon":
                    (root / "icon.png").write_bytes(fake_godot.png(4, 4, (8, 8, 8)))
                r = await c.call_tool("project_test", {})
                answer = r.structured_content
                assert answer is not None and answer["counts"] == counts, answer
                seen.append((tests.copies_imported, tests.copies_reused))
            kept = tests.imports.entries()
            # Two runs at once of a project no import was kept for: the first imports, the
            # other too unless the first kept its import before the other looked (either way
            # one entry is kept and nothing half-written is left), and the next run reuses it.
            (root / "icon.png").write_bytes(fake_godot.png(4, 4, (7, 7, 7)))
            answers: list[dict[str, Any]] = []

            async def one() -> None:
                r = await c.call_tool("project_test", {})
                assert r.structured_content is not None
                answers.append(r.structured_content)

            async with anyio.create_task_group() as tg:
                tg.start_soon(one)
                tg.start_soon(one)
            assert [a["counts"] for a in answers] == [counts, counts]
            both = (tests.copies_imported, tests.copies_reused)
            assert both in ((4, 2), (3, 3)), both
            await c.call_tool("project_test", {})
            assert (tests.copies_imported, tests.copies_reused) == (both[0], both[1] + 1)
            assert len(tests.imports.entries()) == 3
            assert sorted(os.listdir(tmp_path / "state" / "imports")) == tests.imports.entries()
    assert seen == [(1, 0), (1, 1), (2, 1), (2, 2)]
    assert len(kept) == 2
    assert not any(os.path.lexists(root / n) for n in (".import", ".godot", "icon.png.import"))
