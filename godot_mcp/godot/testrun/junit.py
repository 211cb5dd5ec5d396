"""A test runner's JUnit XML report, read safely: counts, and each failure with its message and,
where the framework gives it, its ``res://`` path and line.

The report is the project's output: its test code wrote it (GUT's and gdUnit4's runners run in
the project), so it is read as hostile. A JUnit report never needs a document type, so one that
declares any (``<!DOCTYPE``, ``<!ENTITY``) is refused before the parser sees it: no entity is
expanded and no external file is read. The report is bounded in size, and its cases in number.

Recorded reports of the real frameworks are in ``tests/data/junit/`` (GUT 7.4.3 on Godot 3.2.3,
GUT 9.6.0 on Godot 4.6.3). The bodies of failures, errors and skips are taken as text whatever
they hold, so a report whose messages are not escaped still reads (interface §11).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

__all__ = ["MAX_CASES", "MAX_REPORT", "Case", "JUnitReport", "ReportRefused", "parse_report"]

MAX_REPORT = 16 << 20  # bytes of a report read
MAX_CASES = 10_000  # cases kept (the counts cover all)
MAX_MESSAGE = 2000

_DECLARATION = re.compile(rb"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
# A failure's, error's or skip's body, taken as text whatever it holds: GUT 7 writes messages
# unescaped (a `<` or `&` of an assertion breaks the XML), GUT 9 inside CDATA.
_BODY = re.compile(rb"(<(failure|error|skipped)\b[^>]*>)(.*?)(</\2\s*>)", re.DOTALL)
_CDATA = re.compile(rb"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)
_LINE = re.compile(r"\bat line (\d+)")
_RES_LINE = re.compile(r"(res://[^\s:()\"']+\.(?:gd|cs)):(-?\d+)")


class ReportRefused(ValueError):
    """The report is not a JUnit report this server reads (too large, a document type, not
    XML, not ``testsuites``/``testsuite``)."""


@dataclass(frozen=True)
class Case:
    """One test case: ``status`` is ``passed``, ``failed``, ``error`` or ``skipped``."""

    suite: str
    name: str
    status: str
    message: str | None = None
    path: str | None = None
    line: int | None = None


@dataclass
class JUnitReport:
    tests: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0
    cases: list[Case] = field(default_factory=list)
    truncated: bool = False

    @property
    def passed(self) -> int:
        return max(0, self.tests - self.failures - self.errors - self.skipped)


def _res(name: str) -> str | None:
    """A suite or class name as a ``res://`` script path, where it is one (GUT 9 drops the
    scheme: ``test/test_x.gd``)."""
    if not name.endswith(".gd") or ".." in name.split("/"):
        return None
    return name if name.startswith("res://") else "res://" + name.lstrip("/")


def _case(suite: str, el: ET.Element) -> Case:
    name = el.get("name", "")
    cls = el.get("classname", suite)
    path = _res(cls) or _res(suite)
    for kind, status in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        found = el.find(kind)
        if found is None:
            continue
        attribute = found.get("message", "")
        text = ((found.text or "") or attribute).strip()
        message = re.sub(r"\s+", " ", text)[:MAX_MESSAGE] or None
        line = None
        # GUT: "… at line N" in the body; gdUnit4: message="FAILED: res://x.gd:N"
        at = _RES_LINE.search(attribute) or _RES_LINE.search(text)
        if at is not None:
            path = at.group(1)
            line = int(at.group(2)) if int(at.group(2)) > 0 else None
        elif (m := _LINE.search(text)) is not None and int(m.group(1)) > 0:
            line = int(m.group(1))
        return Case(suite, name, status, message, path, line)
    return Case(suite, name, "passed", None, path, None)


def _as_text(match: re.Match[bytes]) -> bytes:
    """A body as escaped text: CDATA sections opened, every ``&``, ``<`` and ``>`` escaped."""
    body = _CDATA.sub(lambda m: m.group(1), match.group(3))
    body = body.replace(b"&", b"&amp;").replace(b"<", b"&lt;").replace(b">", b"&gt;")
    return match.group(1) + body + match.group(4)


def parse_report(data: bytes) -> JUnitReport:
    """The report in ``data``; :class:`ReportRefused` for anything else."""
    if len(data) > MAX_REPORT:
        raise ReportRefused(f"the report is larger than {MAX_REPORT} bytes")
    if _DECLARATION.search(data):
        raise ReportRefused("the report declares a document type; a JUnit report never does")
    try:
        root = ET.fromstring(_BODY.sub(_as_text, data))
    except ET.ParseError as exc:
        raise ReportRefused(f"the report is not XML: {exc}") from None
    if root.tag == "testsuite":
        suites = [root]
    elif root.tag == "testsuites":
        suites = root.findall("testsuite")
    else:
        raise ReportRefused(f"the report's root is <{root.tag[:40]}>, not <testsuites>")
    report = JUnitReport()
    for suite in suites:
        name = suite.get("name", "")
        for el in suite.iter("testcase"):
            case = _case(name, el)
            report.tests += 1
            report.failures += case.status == "failed"
            report.errors += case.status == "error"
            report.skipped += case.status == "skipped"
            if case.status != "passed" or len(report.cases) < MAX_CASES:
                if len(report.cases) < MAX_CASES:
                    report.cases.append(case)
                else:
                    report.truncated = True
    return report
