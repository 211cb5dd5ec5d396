"""The project's own tests (GUT, gdUnit4): which framework it carries, its runner's command line,
one run of it on a private copy, and the JUnit report it writes."""

from godot_mcp.features.testrun.detect import (
    ADDONS,
    NAMES,
    RUNNERS,
    choose,
    frameworks,
    refuse_without_runner,
)
from godot_mcp.features.testrun.job import Ran, TestJob, TestRunFailed, TestRunTimeout
from godot_mcp.features.testrun.junit import (
    MAX_REPORT,
    Case,
    JUnitReport,
    ReadReport,
    ReportRefused,
    parse_report,
    read_report,
)
from godot_mcp.features.testrun.runner import (
    GDUNIT_ROOT,
    Invocation,
    Selection,
    gut_config,
    invocation,
    nothing_to_run,
)
from godot_mcp.features.testrun.selection import BadTestPath, select

__all__ = [
    "ADDONS",
    "GDUNIT_ROOT",
    "MAX_REPORT",
    "NAMES",
    "RUNNERS",
    "BadTestPath",
    "Case",
    "Invocation",
    "JUnitReport",
    "Ran",
    "ReadReport",
    "ReportRefused",
    "Selection",
    "TestJob",
    "TestRunFailed",
    "TestRunTimeout",
    "choose",
    "frameworks",
    "gut_config",
    "invocation",
    "nothing_to_run",
    "parse_report",
    "read_report",
    "refuse_without_runner",
    "select",
]
