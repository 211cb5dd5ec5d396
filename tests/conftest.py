"""Suite-wide settings."""

from hypothesis import settings

# The machine is shared and noisy: property tests judge outcomes, never timings.
settings.register_profile("godot-mcp", deadline=None)
settings.load_profile("godot-mcp")


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """Report how many real kill -9 points the crash tests ran."""
    import sys

    crash = sys.modules.get("tests.store.test_crash")
    if crash is not None and crash.ran:
        named = sum(1 for p in crash.ran if not p.startswith("random:"))
        terminalreporter.write_line(
            f"crash tests: kill -9 at {named} named points and {len(crash.ran) - named} "
            "random moments"
        )
