"""Shared-store benchmark: PostgreSQL + S3 against floors measured in the same run.

    python tools/bench_scale.py [--quick]

Starts a throw-away PostgreSQL and SeaweedFS on loopback (as the tests do) and prints medians
and ratios (store / floor):

- registering 16 MiB; floor: a plain boto3 ``put_object`` of the same bytes plus one SQL
  insert on the same database;
- a 512 KiB range read of a registered artifact; floor: a plain ranged ``get_object``;
- captures per second (64 KiB registrations through MCP over HTTP, 4 clients a server):
  three servers on the shared store against one server on SQLite and its blob directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import sqlalchemy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from godot_mcp.store.store import ArtifactStore  # noqa: E402
from godot_mcp.store.values import Caller, Limits, NewArtifact  # noqa: E402
from tests.support import postgres, seaweed  # noqa: E402
from tests.support.projects import make_project  # noqa: E402
from tests.support.rawmcp import raw_session  # noqa: E402
from tests.support.servers import run_admin, start_http  # noqa: E402

MiB = 1024 * 1024


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def bench_register(store: ArtifactStore, caller: Caller, gen: int, s3, url, rounds: int):
    client = s3.client()
    bucket = store.blobs.objects.where.bucket  # type: ignore[attr-defined]
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as c:
        c.execute(sqlalchemy.text("CREATE TABLE floor_rows (id text PRIMARY KEY, size bigint)"))
    ours, floor = [], []
    for i in range(rounds):
        data = os.urandom(16 * MiB)
        t = time.perf_counter()
        client.put_object(Bucket=bucket, Key=f"floor/{i}", Body=data)
        with engine.begin() as c:
            c.execute(
                sqlalchemy.text("INSERT INTO floor_rows VALUES (:id, :size)"),
                {"id": f"r{i}", "size": len(data)},
            )
        floor.append(time.perf_counter() - t)
        t = time.perf_counter()
        info = store.register(caller, gen, NewArtifact("application/octet-stream", data))
        ours.append(time.perf_counter() - t)
        store.release_where()  # keep the budget free
        del info
    engine.dispose()
    return _median(ours), _median(floor)


def bench_range(store: ArtifactStore, caller: Caller, gen: int, s3, rounds: int):
    data = os.urandom(8 * MiB)
    info = store.register(caller, gen, NewArtifact("application/octet-stream", data))
    client = s3.client()
    bucket = store.blobs.objects.where.bucket  # type: ignore[attr-defined]
    key = store.blobs.objects.where.key("blobs", info.sha256)  # type: ignore[attr-defined]
    length = 512 * 1024
    store.read(caller, f"{info.uri}?offset=0&length=1")  # verified in full once, as in service
    ours, floor = [], []
    for i in range(rounds):
        offset = (i * 777_777) % (len(data) - length)
        t = time.perf_counter()
        client.get_object(Bucket=bucket, Key=key, Range=f"bytes={offset}-{offset + length - 1}")[
            "Body"
        ].read()
        floor.append(time.perf_counter() - t)
        t = time.perf_counter()
        got = store.read(caller, f"{info.uri}?offset={offset}&length={length}")
        ours.append(time.perf_counter() - t)
        assert got.data == data[offset : offset + length]
    return _median(ours), _median(floor)


async def _captures_per_second(urls: list[str], token: str, seconds: float) -> float:
    done = 0
    deadline = time.monotonic() + seconds

    async def client(url: str, seed: int) -> None:
        nonlocal done
        async with raw_session(url, token) as s:
            k = 0
            while time.monotonic() < deadline:
                got = await s.call("test_produce", {"size": 64 * 1024, "seed": seed * 10_000 + k})
                assert got["outcome"] == "ok", got
                done += 1
                k += 1

    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        for i, url in enumerate(urls):
            for j in range(4):
                tg.start_soon(client, url, 10 * i + j)
    return done / (time.monotonic() - start)


def bench_captures(tmp: Path, pg, s3, seconds: float) -> tuple[float, float]:
    project = make_project(tmp / "game")
    budget = ["--store-budget-bytes", str(4096 * MiB), "--retention-seconds", "60"]
    one_state = tmp / "single"
    token = run_admin("token", "add", "bench", "--state-dir", str(one_state)).stdout.strip()
    single = start_http(project, one_state, *budget, tokens={})
    try:
        one = anyio.run(_captures_per_second, [single.url], token, seconds)
    finally:
        single.stop()
    both = ["--database-url", pg.create_database(), "--blob-store", s3.url(s3.create_bucket())]
    shared_token = run_admin(
        "token", "add", "bench", "--state-dir", str(tmp / "host0"), *both
    ).stdout.strip()
    servers = [start_http(project, tmp / f"host{i}", *both, *budget, tokens={}) for i in range(3)]
    try:
        three = anyio.run(_captures_per_second, [s.url for s in servers], shared_token, seconds)
    finally:
        for s in servers:
            s.stop()
    return three, one


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    rounds = 3 if args.quick else 7
    os.environ.update(seaweed.CREDENTIALS)
    pg, s3 = postgres.start(), seaweed.start()
    try:
        with tempfile.TemporaryDirectory() as tmp_dir:
            tmp = Path(tmp_dir)
            url = pg.create_database()
            store = ArtifactStore(
                tmp / "state",
                Limits(store_budget_bytes=1024 * MiB),
                database_url=url,
                blob_store_url=s3.url(s3.create_bucket()),
            )
            state = store.projects.observe(make_project(tmp / "p"))
            caller = Caller("local", None, None, state.id)
            reg, reg_floor = bench_register(store, caller, state.generation, s3, url, rounds)
            rng, rng_floor = bench_range(store, caller, state.generation, s3, 10 * rounds)
            store.close()
            three, one = bench_captures(tmp, pg, s3, 3.0 if args.quick else 8.0)
    finally:
        s3.stop()
        pg.stop()
    print(
        f"register 16 MiB   store {reg * 1e3:8.1f} ms  floor {reg_floor * 1e3:8.1f} ms  "
        f"ratio {reg / reg_floor:5.2f}"
    )
    print(
        f"range read 512 KiB store {rng * 1e3:7.1f} ms  floor {rng_floor * 1e3:8.1f} ms  "
        f"ratio {rng / rng_floor:5.2f}"
    )
    print(
        f"captures/s        3 shared servers {three:7.1f}  1 server on SQLite {one:7.1f}  "
        f"ratio {three / one:5.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
