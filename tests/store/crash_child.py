"""Processes that work on a store until they are killed (crash tests).

A fork server::

    python -m tests.store.crash_child serve

imports the store once, then reads one JSON job a line from stdin and forks a
worker for it: a real process that opens the store anew and runs ``ops``
operations of one workload (see ``WORKLOADS``), then waits to be killed. With
``kill_at`` in the job the worker sets ``GODOT_MCP_KILL_AT`` and reloads
``godot_mcp.store.faults`` first, so it kills itself at that named point (see
``faults.py``); otherwise the test SIGKILLs it at a random moment. A worker never
ends on its own (but for a safety timeout). Lines on stdout, each written by
one ``os.write``:

    forked PID                       worker: started (its pid, for the kill)
    B J OFFSET_S                     worker: operation J starts now (clock offset in force)
    E J SECONDS IDS_JSON             worker: operation J returned (artifacts it registered)
    done                             worker: every operation returned
    ERR JSON                         worker: an operation raised
    exit PID CODE                    server: the worker is reaped (CODE -9: killed by SIGKILL)

A kill lands inside operation J when ``B J`` came and ``E J`` never did.

By hand, one job in this process (to reproduce a named point)::

    GODOT_MCP_KILL_AT=point:N python -m tests.store.crash_child STATE PROJECT WORKLOAD \
        CLOCK_OFFSET_S SEED
"""

from __future__ import annotations

import importlib
import json
import os
import random
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from godot_mcp.store import faults
from godot_mcp.store.reconcile import reconcile
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, Limits, NewArtifact, utc_now
from tests.support.rawblobs import RawBlobs

BUDGET = 8 * 1024 * 1024
EXPORT_BUDGET = 24 * 1024 * 1024  # up to 3 exports of 3 outputs of up to 2.5 MiB
CAPTURE_MAGIC = b"CAPT"  # a fake capture starts with MAGIC + frames, width, height
WORKER_LIFETIME_S = 60.0  # a worker nobody kills gives up after this


def capture_header(frames: int, width: int, height: int) -> bytes:
    """The first bytes of a fake capture, so a check can tie its metadata to its bytes."""
    return CAPTURE_MAGIC + struct.pack(">III", frames, width, height)


def group_export_id(tag: str, size: int) -> str:
    """An export id that records how many artifacts its group has (checked after a kill)."""
    return f"{tag}-n{size}"


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


@dataclass
class Worker:
    """What one workload's operations work with."""

    store: ArtifactStore
    caller: Caller
    generation: int
    rng: random.Random
    src: Path
    tag: str
    shift: list[float]  # seconds added to the wall clock; the reconcile workload moves it
    recent: list[bytes]

    def payload(self, sizes: tuple[int, ...] = (1, 4096, 70_000, 300_000, 700_000)) -> bytes:
        """Fresh random bytes, or (one time in five) bytes registered before: dedup paths."""
        if self.recent and self.rng.random() < 0.2:
            return self.rng.choice(self.recent)
        data = self.rng.randbytes(self.rng.choice(sizes))
        self.recent = [*self.recent[-3:], data]
        return data


Op = Callable[[], list[str]]  # one operation, prepared; returns the ids it registered


def single(w: Worker, j: int) -> Op:
    """One artifact from bytes in memory."""
    item = NewArtifact("image/png", w.payload())
    return lambda: [w.store.register(w.caller, w.generation, item).id]


def group(w: Worker, j: int) -> Op:
    """Several artifacts that commit together or not at all."""
    n = w.rng.randint(2, 4)
    items = [NewArtifact("application/octet-stream", w.payload(), name=f"o{i}") for i in range(n)]
    export_id = group_export_id(f"group-{w.tag}-{j}", n)
    return lambda: [i.id for i in w.store.register_group(w.caller, w.generation, items, export_id)]


def capture(w: Worker, j: int) -> Op:
    """A capture file registered by path with its metadata, then removed (as games do)."""
    frames = w.rng.choice([1, 1, 12, 60])
    width, height = w.rng.choice([(64, 64), (320, 240), (640, 360)])
    path = w.src / f"capture-{w.tag}-{j}.png"
    body = w.rng.randbytes(w.rng.choice([2_000, 150_000, 600_000]))
    path.write_bytes(capture_header(frames, width, height) + body)
    item = NewArtifact(
        "image/png" if frames == 1 else "image/apng",
        path,
        frames=frames,
        width=width,
        height=height,
    )

    def op() -> list[str]:
        try:
            return [w.store.register(w.caller, w.generation, item).id]
        finally:
            path.unlink(missing_ok=True)

    return op


EXPORT_OUTPUTS = ("game.pck", "game.x86_64", "game.zip")


def export(w: Worker, j: int) -> Op:
    """An export finishing: its output files, a few MiB each, as one group with its id."""
    out = w.src / f"export-{w.tag}-{j}"
    out.mkdir()
    outputs = []
    for name in EXPORT_OUTPUTS:
        (out / name).write_bytes(w.rng.randbytes(w.rng.randint(1 << 20, 5 << 19)))
        outputs.append((name, out / name))
    items = [NewArtifact("application/octet-stream", path, name=name) for name, path in outputs]
    export_id = group_export_id(f"export-{w.tag}-{j}", len(items))
    return lambda: [i.id for i in w.store.register_group(w.caller, w.generation, items, export_id)]


def reconcile_op(w: Worker, j: int) -> Op:
    """Reconcile a store with work to do: expired rows, orphan blobs, temp files, blobs to hash."""
    half = w.store.limits.retention_seconds // 2
    for later in (half, half + 1):  # 2 registered now, 2 later; then the first 2 have expired
        for _ in range(2):
            w.store.register(w.caller, w.generation, NewArtifact("image/png", w.payload()))
        w.shift[0] += later
    for n in range(2):
        data = w.rng.randbytes(w.rng.choice([1, 50_000]))
        RawBlobs(w.store).plant_orphan(data)
        (w.store.layout.blob_dir / ".tmp" / f"stage-left-{w.tag}-{j}-{n}").write_bytes(data)

    def op() -> list[str]:
        reconcile(w.store)
        return []

    return op


WORKLOADS: dict[str, Callable[[Worker, int], Op]] = {
    "single": single,
    "group": group,
    "capture": capture,
    "export": export,
    "reconcile": reconcile_op,
}


# The operations the named crash points are passed in (point:N counts passes).


def _named_payload(rng: random.Random) -> bytes:
    return rng.randbytes(rng.choice([1, 70_000, 300_000, 700_000]))


def named_register(w: Worker, j: int) -> Op:
    """Three registrations in a row."""
    return lambda: [
        w.store.register(w.caller, w.generation, NewArtifact("image/png", _named_payload(w.rng))).id
        for _ in range(3)
    ]


def named_group(w: Worker, j: int) -> Op:
    """One group of three."""
    items = [
        NewArtifact("application/octet-stream", _named_payload(w.rng), name=f"o{i}")
        for i in range(3)
    ]
    export_id = group_export_id(f"x{w.tag}", 3)
    return lambda: [i.id for i in w.store.register_group(w.caller, w.generation, items, export_id)]


def named_reconcile(w: Worker, j: int) -> Op:
    """One reconciliation of whatever the test left."""

    def op() -> list[str]:
        reconcile(w.store)
        return []

    return op


NAMED: dict[str, Callable[[Worker, int], Op]] = {
    "point-register": named_register,
    "point-group": named_group,
    "point-reconcile": named_reconcile,
}
assert not WORKLOADS.keys() & NAMED.keys()


def work(job: dict[str, object]) -> None:
    """The body of one worker: open the store, run the operations (then wait for the kill)."""
    if job.get("kill_at"):
        os.environ["GODOT_MCP_KILL_AT"] = str(job["kill_at"])
        importlib.reload(faults)  # it reads the variable at import; checkpoint() sees the new one
    shift = [float(job["offset"])]  # type: ignore[arg-type]
    store = ArtifactStore(
        Path(str(job["state"])),
        Limits(store_budget_bytes=int(job["budget"])),  # type: ignore[call-overload]
        clock=lambda: utc_now() + timedelta(seconds=shift[0]),
        **job.get("options", {}),  # type: ignore[arg-type]
    )
    ps = store.projects.observe(Path(str(job["project"])))
    w = Worker(
        store,
        Caller("local", None, None, ps.id),
        ps.generation,
        random.Random(int(job["seed"])),  # type: ignore[call-overload]
        Path(str(job["src"])),
        str(job["seed"]),
        shift,
        [],
    )
    make = {**WORKLOADS, **NAMED}[str(job["workload"])]
    for j in range(int(job["ops"])):  # type: ignore[call-overload]
        op = make(w, j)  # preparing (writing source files, making dirt) is not the work
        _say(f"B {j} {shift[0]}")
        start = time.perf_counter()
        ids = op()
        _say(f"E {j} {time.perf_counter() - start:.6f} {json.dumps(ids)}")
    _say("done")


def serve() -> None:
    """The fork server: one worker per job line, each reaped before the next job."""
    me = os.getpid()
    with tempfile.TemporaryDirectory() as scratch:  # load what opening a store loads, once
        warm = ArtifactStore(Path(scratch))  # (nothing staged: no hashing thread may start)
        warm.bytes_in_use()
        warm.release_expired()
        warm.close()
    import boto3  # what a shared store's workers load: the S3 model parsed once, before forks
    import psycopg

    from godot_mcp.store import s3

    s3._SESSION = boto3.session.Session()
    s3._SESSION.client("s3", region_name="us-east-1").close()
    del psycopg
    _say("ready")
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _say(f"forked {os.getpid()}")
            try:
                work(job)
            except BaseException:
                _say("ERR " + json.dumps(traceback.format_exc()))
            deadline = time.monotonic() + WORKER_LIFETIME_S
            while os.getppid() == me and time.monotonic() < deadline:
                time.sleep(0.02)  # wait for the kill
            os._exit(3)
        _, status = os.waitpid(pid, 0)
        _say(f"exit {pid} {os.waitstatus_to_exitcode(status)}")


def main() -> None:
    """One job in this process, from the command line (GODOT_MCP_KILL_AT from the env)."""
    state, project, workload, offset, seed = sys.argv[1:6]
    with tempfile.TemporaryDirectory() as src:
        work(
            {
                "workload": workload,
                "state": state,
                "project": project,
                "src": src,
                "seed": int(seed),
                "offset": float(offset),
                "ops": 1,
                "budget": EXPORT_BUDGET if workload == "export" else BUDGET,
            }
        )


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve()
    else:
        main()
