"""The project's own tests (GUT, gdUnit4): which framework it carries and the JUnit report its
runner writes."""

from godot_mcp.godot.testrun.detect import ADDONS, RUNNERS, frameworks
from godot_mcp.godot.testrun.junit import Case, JUnitReport, ReportRefused, parse_report

__all__ = [
    "ADDONS",
    "RUNNERS",
    "Case",
    "JUnitReport",
    "ReportRefused",
    "frameworks",
    "parse_report",
]
