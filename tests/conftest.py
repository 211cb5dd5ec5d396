"""Suite-wide settings."""

from hypothesis import settings

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


import warnings  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

from tests.support import postgres  # noqa: E402


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
