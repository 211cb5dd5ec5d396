"""A second project.test is fast: its copy gets what an earlier import of the same files wrote,
with a real headless Godot and the stand-in GUT of ``tests/fixtures/testrun``.

The server runs in process, so whether a run's copy was imported by the engine or given an
earlier import is read from the test service's own counts; what the runner's copy held is read
by the tests themselves, which print the SHA-256 of every file of the copy's import folder and
sidecars before a second test scribbles over them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client

from godot_mcp.app import App, open_app
from godot_mcp.config import Settings
from godot_mcp.runtime.import_cache import ImportCache
from godot_mcp.store.values import Limits
from tests.runtime.conftest import require_godot
from tests.runtime.test_check import tree_hash
from tests.runtime.test_project_test import gut_project
from tests.support import engines
from tests.support.fake_godot import png

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

THING = "extends Node\nclass_name Thing\n\nfunc value():\n\treturn 7\n"
_LISTED = re.compile(r"^IMPORTED (res://\S+) ([0-9a-f]{64})$")

# The engine's own file API, per engine: list a folder (hidden files too), hash, write.
FILE_API = {
    3: """
func _sha(path):
\treturn File.new().get_sha256(path)


func _write(path, text):
\tvar f = File.new()
\tf.open(path, File.WRITE)
\tf.store_string(text)
\tf.close()


func _files(folder):
\tvar out = []
\tvar d = Directory.new()
\tif d.open(folder) != OK:
\t\treturn out
\td.list_dir_begin(true, false)
\tvar name = d.get_next()
\twhile name != "":
\t\tif d.current_is_dir():
\t\t\tout += _files(folder.plus_file(name))
\t\telse:
\t\t\tout.append(folder.plus_file(name))
\t\tname = d.get_next()
\treturn out
""",
    4: """
func _sha(path):
\treturn FileAccess.get_sha256(path)


func _write(path, text):
\tvar f = FileAccess.open(path, FileAccess.WRITE)
\tf.store_string(text)
\tf.close()


func _files(folder):
\tvar out = []
\tvar d = DirAccess.open(folder)
\tif d == null:
\t\treturn out
\td.include_hidden = true
\td.list_dir_begin()
\tvar name = d.get_next()
\twhile name != "":
\t\tif d.current_is_dir():
\t\t\tout += _files(folder + "/" + name)
\t\telse:
\t\t\tout.append(folder + "/" + name)
\t\tname = d.get_next()
\treturn out
""",
}
# test_a runs first (the runner sorts): it lists what the copy holds, then test_b scribbles.
LOOKS = """extends "res://addons/gut/test.gd"

const FOLDER = "{folder}"
const SIDECARS = {sidecars}


func test_a_sees_its_import():
\tfor path in _files(FOLDER) + SIDECARS:
\t\tprint("IMPORTED ", path, " ", _sha(path))
\tassert_true(load("res://icon.png") != null, "the imported texture loads")


func test_b_scribbles_over_it():
\tfor path in _files(FOLDER) + ["res://icon.png.import"]:
\t\t_write(path, "scribbled")
\t_write(FOLDER + "/scribble.txt", "scribbled")
\tassert_true(true)
"""


def folder() -> str:
    """The running engine's import folder, as ``res://`` sees it."""
    return "res://" + engines.current().profile.import_folder.rstrip("/")


def sidecars() -> list[str]:
    """The files beside the assets an import writes (or rewrites) that the tests list."""
    if engines.current().major == 3:
        return ["res://icon.png.import", "res://project.godot"]
    return ["res://icon.png.import", "res://lib/thing.gd.uid", "res://project.godot"]


def project(root: Path) -> Path:
    """A never-imported project: an image, a global class, the stand-in GUT and the tests."""
    engine = engines.current()
    looks = LOOKS.format(folder=folder(), sidecars=json.dumps(sidecars())) + FILE_API[engine.major]
    root = gut_project(root, **{"test/test_looks.gd": looks, "lib/thing.gd": THING})
    (root / "icon.png").write_bytes(png(16, 16, (200, 10, 10)))
    return root


@asynccontextmanager
async def served(root: Path, state: Path) -> AsyncIterator[tuple[App, Client]]:
    """The real server in this process, over an in-process client."""
    settings = Settings(state, None, None, Limits())
    async with open_app(settings, root, "stdio") as app, Client(app.server) as c:
        yield app, c


async def run(app: App, c: Client) -> tuple[dict, str]:
    """One ``project.test``: its answer, and whether its copy was ``imported`` by the engine
    or ``reused`` an earlier import (exactly one of the two, by the service's counts)."""
    tests = app.deps.tests
    before = (tests.copies_imported, tests.copies_reused)
    r = await c.call_tool("project_test", {})
    answer = r.structured_content
    assert answer is not None and answer["outcome"] == "ok", answer
    assert answer["counts"] == {"tests": 2, "passed": 2, "failed": 0, "errors": 0, "skipped": 0}
    counted = (tests.copies_imported - before[0], tests.copies_reused - before[1])
    assert counted in ((1, 0), (0, 1)), counted
    return answer, "imported" if counted == (1, 0) else "reused"


def listed(answer: dict) -> dict[str, str]:
    """What the run's first test printed: each file of its copy's import folder and sidecars,
    with the SHA-256 of its bytes as the runner found them."""
    out = {}
    for line in answer["log_tail"]:
        match = _LISTED.match(line)
        if match:
            out[match.group(1)] = match.group(2)
    assert out, answer["log_tail"]
    return out


def settled(files: dict[str, str]) -> dict[str, str]:
    """``files`` but the editor's own state, which a new import writes anew (Godot 4's
    ``.godot/editor/filesystem_cache10`` holds the time of the import)."""
    return {p: d for p, d in files.items() if not p.startswith("res://.godot/editor/")}


def entries(state: Path) -> list[str]:
    return ImportCache(state / "imports").entries()


def cached(state: Path, key: str) -> dict[str, str]:
    """The files of the cache's entry ``key``, each as ``res://`` path and the SHA-256 of its
    bytes as kept (read from the entry's own files, not from its manifest)."""
    entry = state / "imports" / key
    manifest = json.loads((entry / "manifest.json").read_bytes())
    out = {}
    for rel, size, digest, _mode, _mtime in manifest["files"]:
        data = (entry / "files" / rel).read_bytes()
        assert len(data) == size and hashlib.sha256(data).hexdigest() == digest
        out["res://" + rel] = digest
    return out


def in_folder(files: dict[str, str]) -> dict[str, str]:
    return {p: d for p, d in files.items() if p.startswith(folder() + "/")}


async def test_a_second_run_reuses_the_import_and_its_tests_cannot_change_it(tmp_path):
    require_godot("godot3-server", "bwrap")
    root = project(tmp_path / "p")
    state = tmp_path / "state"
    before = tree_hash(root)
    with anyio.fail_after(300):
        async with served(root, state) as (app, c):
            first, how1 = await run(app, c)
            kept = entries(state)
            second, how2 = await run(app, c)
            third, how3 = await run(app, c)
            stats = app.deps.tests.imports.stats
    assert (how1, how2, how3) == ("imported", "reused", "reused")
    assert (stats.absent, stats.kept, stats.reused, stats.dropped) == (1, 1, 2, 0)
    assert len(kept) == 1 and entries(state) == kept
    entry = cached(state, kept[0])
    seen1, seen2, seen3 = listed(first), listed(second), listed(third)
    # The runner's copy held exactly what the import wrote, byte for byte, on every run: the
    # first run's test_b scribbled over its copy's import folder and its sidecar after the
    # cache took them, and neither the cache nor the next copies saw it.
    assert in_folder(seen2) == in_folder(entry) and in_folder(entry)
    assert seen1 == seen2 == seen3
    assert seen2["res://icon.png.import"] == entry["res://icon.png.import"]
    assert f"{folder()}/scribble.txt" not in seen2
    assert "scribbled" not in json.dumps(second)
    for key in ("counts", "failures", "framework"):
        assert first[key] == second[key] == third[key]
    assert tree_hash(root) == before  # the project itself is never imported


async def test_changing_or_adding_an_asset_imports_again(tmp_path):
    require_godot("godot3-server", "bwrap")
    root = project(tmp_path / "p")
    state = tmp_path / "state"
    with anyio.fail_after(300):
        async with served(root, state) as (app, c):
            first, how1 = await run(app, c)
            (root / "icon.png").write_bytes(png(16, 16, (10, 200, 10)))  # same size, new bytes
            changed, how2 = await run(app, c)
            (root / "more.png").write_bytes(png(8, 8, (1, 2, 3)))
            added, how3 = await run(app, c)
            again, how4 = await run(app, c)
    assert [how1, how2, how3, how4] == ["imported", "imported", "imported", "reused"]
    assert len(entries(state)) == 3
    texture = {k: v for k, v in in_folder(listed(first)).items() if "/icon.png-" in k}
    assert texture and all(listed(changed)[k] != v for k, v in texture.items())
    assert any("/more.png-" in k for k in listed(added))
    assert listed(again) == listed(added)


async def test_a_link_in_the_cache_is_not_followed(tmp_path):
    require_godot("godot3-server", "bwrap")
    root = project(tmp_path / "p")
    state = tmp_path / "state"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bait").write_bytes(b"not an import\n")
    with anyio.fail_after(300):
        async with served(root, state) as (app, c):
            first, _ = await run(app, c)
            (key,) = entries(state)
            entry = state / "imports" / key
            # One of the entry's files becomes a link to a file outside the cache.
            files = cached(state, key)
            victim = next(p for p in in_folder(files) if "/icon.png-" in p)
            kept = entry / "files" / victim.removeprefix("res://")
            kept.unlink()
            kept.symlink_to(outside / "bait")
            linked_file, how2 = await run(app, c)
            # The whole entry becomes a link to a folder outside that holds a good copy of it.
            shutil.copytree(entry, outside / "entry")
            shutil.rmtree(entry)
            entry.symlink_to(outside / "entry")
            linked_entry, how3 = await run(app, c)
            after, how4 = await run(app, c)
            stats = app.deps.tests.imports.stats
    assert (how2, how3, how4) == ("imported", "imported", "reused")
    assert stats.dropped == 2 and stats.kept == 3
    # Each bad entry was dropped and the copy imported anew, as the first run's was (but for
    # the editor's file-system cache, which records when it imported: Godot 4's); the
    # entry kept then is what the last run reused.
    assert settled(listed(linked_file)) == settled(listed(linked_entry)) == settled(listed(first))
    assert listed(after) == listed(linked_entry)
    bait = hashlib.sha256(b"not an import\n").hexdigest()
    assert bait not in {*listed(linked_file).values(), *listed(linked_entry).values()}
    assert (outside / "bait").read_bytes() == b"not an import\n"
    assert (outside / "entry" / "manifest.json").is_file()  # the link was removed, not its target
    assert entries(state) == [key] and not (state / "imports" / key).is_symlink()
    assert sorted(os.listdir(state / "imports")) == [key]
