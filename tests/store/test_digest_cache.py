"""The block-digest cache is shared by the event loop and worker threads."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

import godot_mcp.store.store as store_module
from godot_mcp.errors import NotFound
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.values import NewArtifact
from tests.store.conftest import Env

READERS = 8
ARTIFACTS = 24
SECONDS = 3.0


def _pause_before_lru_moves(frame: FrameType, event: str, arg: Any) -> None:
    """Profile hook: yield the GIL just before ``OrderedDict.move_to_end``/``popitem``.

    This forces the interleaving a lock-free LRU loses: a reader found a digest, another
    thread evicts it, then the reader's ``move_to_end`` raises ``KeyError`` (or a second
    ``popitem`` finds the dict empty).
    """
    if (
        event == "c_call"
        and getattr(arg, "__name__", None) in ("move_to_end", "popitem")
        and isinstance(getattr(arg, "__self__", None), OrderedDict)
    ):
        time.sleep(0.0002)


@pytest.fixture
def tiny_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two cached blobs, and threads (started from now on) pausing inside the LRU."""
    monkeypatch.setattr(store_module, "_DIGEST_CACHE", 2)
    threading.setprofile(_pause_before_lru_moves)
    try:
        yield
    finally:
        threading.setprofile(None)


def test_concurrent_reads_evictions_and_withdrawals_never_raise(env: Env, tiny_cache: None):
    store, caller = env.store, env.caller
    infos = [
        store.register(caller, env.generation, NewArtifact("text/plain", b"%03d" % i * 100))
        for i in range(ARTIFACTS)
    ]
    doomed = infos[-4:]  # withdrawn while the readers run
    gone: set[str] = set()
    errors: list[BaseException] = []
    stop = threading.Event()
    start = threading.Barrier(READERS + 1)

    def reader(k: int) -> None:
        start.wait()
        i = k
        while not stop.is_set():
            info = infos[i % ARTIFACTS]
            i += 1
            try:
                got = store.read(caller, info.uri)
                assert got.sha256 == info.sha256
            except NotFound:
                if info.sha256 not in gone:
                    errors.append(AssertionError(f"{info.uri} vanished"))
            except BaseException as exc:
                errors.append(exc)
                return

    def withdrawer() -> None:
        start.wait()
        try:
            for info in doomed:
                time.sleep(SECONDS / 8)
                gone.add(info.sha256)
                store.withdraw(info.sha256)
                store.read(caller, infos[0].uri)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(READERS)]
    threads.append(threading.Thread(target=withdrawer))
    for t in threads:
        t.start()
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline and not errors:
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert len(store._digests) <= 2


def test_reconcile_still_clears_the_cache(env: Env, tiny_cache: None):
    store, caller = env.store, env.caller
    info = store.register(caller, env.generation, NewArtifact("text/plain", b"x" * 10))
    store.read(caller, info.uri)
    assert len(store._digests) == 1
    reconcile(store)
    assert len(store._digests) == 0
    assert store.read(caller, info.uri).data == b"x" * 10
