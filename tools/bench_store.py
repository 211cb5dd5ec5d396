"""Store benchmark: the store against a floor measured in the same run.

    python tools/bench_store.py [--quick]

Floors: registering = plain write + fsync + SHA-256 + rename of the same bytes;
reconciling = plain hashlib over the same blob files; a range read = plain
pread of the same bytes. Prints medians and ratios (store / floor).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits, NewArtifact

MiB = 1024 * 1024


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def floor_register(dir_: Path, data: bytes) -> float:
    t = time.perf_counter()
    tmp = dir_ / f"t{os.getpid()}-{time.perf_counter_ns()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    digest = hashlib.sha256(data).hexdigest()
    os.replace(tmp, dir_ / digest)
    elapsed = time.perf_counter() - t
    (dir_ / digest).unlink()
    return elapsed


def floor_hash(paths: list[Path]) -> float:
    t = time.perf_counter()
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            hashlib.file_digest(f, "sha256")
    return time.perf_counter() - t


def floor_pread(path: Path, offset: int, length: int) -> float:
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        os.pread(f.fileno(), length, offset)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer rounds, a 64 MiB store")
    args = ap.parse_args()
    rounds = 3 if args.quick else 15
    store_mib = 64 if args.quick else 256
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        (project / "project.godot").write_text("config_version=4\n")
        store = ArtifactStore(root / "state", Limits(store_budget_bytes=store_mib * MiB))
        ps = store.projects.observe(project)
        caller = Caller("local", None, None, ps.id)
        floor_dir = root / "state" / "blobs" / ".tmp"

        reg_floor, reg_store = [], []
        for _ in range(rounds):
            data = os.urandom(16 * MiB)
            reg_floor.append(floor_register(floor_dir, data))
            data = os.urandom(16 * MiB)
            t = time.perf_counter()
            info = store.register(caller, ps.generation, NewArtifact("image/png", data))
            reg_store.append(time.perf_counter() - t)
            _drop(store, info.id)

        for _ in range(store_mib // 16):
            store.register(caller, ps.generation, NewArtifact("image/png", os.urandom(16 * MiB)))
        paths = [store.blobs.objects.path_of(sha) for sha in store.blobs.iter_blobs()]
        rec_floor = [floor_hash(paths) for _ in range(max(3, rounds // 2))]
        rec_store = []
        for _ in range(max(3, rounds // 2)):
            t = time.perf_counter()
            reconcile(store)
            rec_store.append(time.perf_counter() - t)

        uri = store.list(caller).items[0].uri
        sha = store.list(caller).items[0].sha256
        read_floor = [
            floor_pread(store.blobs.objects.path_of(sha), MiB, 512 * 1024) for _ in range(50)
        ]
        read_store = []
        for _ in range(50):
            t = time.perf_counter()
            store.read(caller, f"{uri}?offset={MiB}&length={512 * 1024}")
            read_store.append(time.perf_counter() - t)
        store.close()

    rows = [
        ("register 16 MiB", _median(reg_floor), _median(reg_store), 1.25),
        (f"reconcile {store_mib} MiB", _median(rec_floor), _median(rec_store), 1.3),
        ("read 512 KiB range", _median(read_floor), _median(read_store), None),
    ]
    print(f"{'case':<22}{'floor ms':>10}{'store ms':>10}{'ratio':>8}  goal")
    worst = 0.0
    for name, floor, got, goal in rows:
        ratio = got / floor
        print(
            f"{name:<22}{floor * 1e3:>10.2f}{got * 1e3:>10.2f}{ratio:>8.2f}  "
            f"{'<= ' + str(goal) if goal else 'report'}"
        )
        if goal:
            worst = max(worst, ratio / goal)
    return 0 if worst <= 1.0 else 1


def _drop(store: ArtifactStore, artifact_id: str) -> None:
    """Release one artifact and its blob (keeps the disk from filling across rounds)."""
    from godot_mcp.store.models import Artifact

    store.release_where(Artifact.id == artifact_id)


if __name__ == "__main__":
    sys.exit(main())
