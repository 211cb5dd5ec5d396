"""The project's own tests (GUT, gdUnit4): which framework it carries, its runner's command line,
one run of it on a private copy, and the JUnit report it writes."""

from godot_mcp.godot.testrun.detect import ADDONS, RUNNERS, choose, frameworks
from godot_mcp.godot.testrun.job import Ran, TestJob, TestRunFailed, TestRunTimeout, read_inside
from godot_mcp.godot.testrun.junit import (
    MAX_REPORT,
    Case,
    JUnitReport,
    ReadReport,
    ReportRefused,
    parse_report,
    read_report,
)
from godot_mcp.godot.testrun.runner import (
    GDUNIT_ROOT,
    GUT_CONFIG,
    MAX_CONFIG,
    NAMES,
    Invocation,
    Selection,
    invocation,
)
from godot_mcp.godot.testrun.selection import BadTestPath, select

__all__ = [
    "ADDONS",
    "GDUNIT_ROOT",
    "GUT_CONFIG",
    "MAX_CONFIG",
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
    "invocation",
    "parse_report",
    "read_inside",
    "read_report",
    "select",
]
