"""Suite-wide settings."""

from hypothesis import settings


def _sign_s3_requests_with_the_real_time() -> None:
    """A frozen clock is the store's, not the S3 server's: requests are still signed with the
    real time (a server refuses a signature minutes off). freezegun swaps ``datetime`` in every
    module and its ignore list does not cover ``datetime.now``; a closure keeps the real one."""
    import datetime

    import botocore.auth
    import botocore.compat
    import botocore.endpoint
    import botocore.signers

    real = datetime.datetime

    def now(remove_tzinfo: bool = True) -> datetime.datetime:
        current = real.now(datetime.UTC)
        return current.replace(tzinfo=None) if remove_tzinfo else current

    for module in (botocore.compat, botocore.auth, botocore.endpoint, botocore.signers):
        module.get_current_datetime = now  # type: ignore[attr-defined]


_sign_s3_requests_with_the_real_time()

# The machine is shared and noisy: property tests judge outcomes, never timings.
settings.register_profile("godot-mcp", deadline=None)
settings.load_profile("godot-mcp")


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """Report how many real kill -9 the crash tests did: named points, random moments."""
    import sys

    crash = sys.modules.get("tests.store.test_crash")
    if crash is None or not (crash.ran or crash.random_kills):
        return
    landed = sum(r.landed for r in crash.random_kills.values())
    terminalreporter.write_line(
        f"crash tests (GODOT_MCP_CRASH_SEED={crash.SEED}): kill -9 at {len(crash.ran)} named "
        f"points and {landed} random moments inside the work"
    )
    for workload, r in crash.random_kills.items():
        phases = ", ".join(f"{p} {n}" for p, n in sorted(r.phases.items()))
        terminalreporter.write_line(
            f"  {workload}: {r.landed} landed, {r.missed} missed (the operation had returned); "
            f"hit: {phases}"
        )


import os  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

from tests.support import postgres, seaweed  # noqa: E402


@pytest.fixture(scope="session")
def pg_server() -> Iterator[postgres.Postgres]:
    """One real PostgreSQL server for the whole run (skipped loudly when not installed)."""
    if postgres.binaries() is None:
        reason = "SKIPPED LOUDLY: PostgreSQL is not installed; PostgreSQL tests not run"
        warnings.warn(reason, stacklevel=2)
        pytest.skip(reason)
    server = postgres.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> str | None:
    """The store's database: None (the state dir's SQLite file) or a fresh PostgreSQL one."""
    if request.param == "sqlite":
        return None
    server: postgres.Postgres = request.getfixturevalue("pg_server")
    return server.create_database()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[seaweed.Seaweed]:
    """One real SeaweedFS (S3 on loopback) for the whole run (skipped loudly when absent)."""
    if seaweed.binary() is None:
        reason = "SKIPPED LOUDLY: SeaweedFS (weed) is not installed; S3 tests not run"
        warnings.warn(reason, stacklevel=2)
        pytest.skip(reason)
    server = seaweed.start()
    try:
        yield server
    finally:
        server.stop()


# The test SeaweedFS's one identity, for every store the tests open and every child they start
# (servers, fork servers): set before any starts.
os.environ.update(seaweed.CREDENTIALS, AWS_EC2_METADATA_DISABLED="true")


@dataclass(frozen=True)
class Backend:
    """Where a store keeps its metadata and its bytes, as ``ArtifactStore`` options."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    s3: seaweed.Seaweed | None = None
    bucket: str | None = None

    @property
    def argv(self) -> list[str]:
        """The same as command-line options."""
        out: list[str] = []
        if self.options.get("database_url"):
            out += ["--database-url", self.options["database_url"]]
        if self.options.get("blob_store_url"):
            out += ["--blob-store", self.options["blob_store_url"]]
        return out

    def objects(self) -> list[str]:
        """Every key in the backend's bucket (S3 only)."""
        assert self.s3 is not None and self.bucket is not None
        pages = self.s3.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]


@pytest.fixture(params=["sqlite+directory", "postgresql+s3"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """The store's two deployments, same test bodies: SQLite and the blob directory in the
    state dir (one host), PostgreSQL and an S3 bucket (many hosts)."""
    if request.param == "sqlite+directory":
        return Backend(request.param)
    pg: postgres.Postgres = request.getfixturevalue("pg_server")
    s3: seaweed.Seaweed = request.getfixturevalue("s3_server")
    bucket = s3.create_bucket()
    options = {"database_url": pg.create_database(), "blob_store_url": s3.url(bucket)}
    return Backend(request.param, options, s3, bucket)


from tests.support.engines import (  # noqa: E402
    ENGINES,
    Engine,
    lane_engines,
    only_engine_tests,
    set_current,
)


@pytest.fixture(scope="session", params=sorted(ENGINES), ids=lambda lane: f"godot{lane}")
def engine(request: pytest.FixtureRequest) -> Engine:
    """The Godot engine a real test runs on: every such test runs on Godot 3.2, 4.6 and 3.6."""
    chosen = ENGINES[request.param]
    chosen.require()
    return chosen


FAST_LANE = "not godot and not slow"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The fast lane runs on every core (pytest-xdist's ``-n auto``) unless told how many
    workers (``-n``) or debugging (``--pdb``, ``--trace``): its tests are CPU-bound, each on its own
    server, temp dirs and ports."""
    fast = config.option.markexpr == FAST_LANE and config.pluginmanager.hasplugin("xdist")
    worker = "PYTEST_XDIST_WORKER" in os.environ  # a worker runs what it is given
    debugging = config.option.usepdb or config.option.trace
    if fast and not worker and config.option.numprocesses is None and not debugging:
        workers = len(os.sched_getaffinity(0))
        config.option.numprocesses = workers  # what xdist's own ``-n`` sets, said in full:
        config.option.dist = "load"  # this hook may run after xdist's reading of ``-n``
        config.option.tx = ["popen"] * workers


# What makes a test ``slow``: it starts a real server process (the MCP server over stdio or HTTP,
# PostgreSQL, SeaweedFS). Modules that start other processes (kill -9 children, Node clients,
# the CLI) or run hundreds of property examples say so themselves. ``-m "not godot and not
# slow"`` is the fast lane a developer runs between edits; CI runs everything.
_SERVERS = {"pg_server", "s3_server", "mcp_env", "game_env"}
_SHARED = {("backend", "postgresql+s3"), ("database", "postgresql")}


def _starts_a_server(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec else {}
    shared = any(params.get(name) == value for name, value in _SHARED)
    return shared or bool(_SERVERS & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tests; keep the tests of this lane's engines (tests/support/engines.py)."""
    wanted = lane_engines()
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if _starts_a_server(item):
            item.add_marker(pytest.mark.slow)
        callspec = getattr(item, "callspec", None)
        major = callspec.params.get("engine") if callspec else None
        if major is None:
            (dropped if only_engine_tests() else keep).append(item)
        else:
            item.add_marker(pytest.mark.godot)  # it runs on a real engine, marked or not
            (keep if major in wanted else dropped).append(item)
            gap = item.get_closest_marker("godot4_gap")
            if gap is not None and ENGINES[major].major == 4:
                # Runs, and must fail: a known gap that starts passing is reported too.
                reason = f"known Godot 4 gap: {gap.args[0]}"
                item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(autouse=True)
def _current_engine(request: pytest.FixtureRequest) -> Iterator[None]:
    callspec = getattr(request.node, "callspec", None)
    major = callspec.params.get("engine") if callspec else None
    set_current(ENGINES[major] if major is not None else None)
    yield
    set_current(None)
