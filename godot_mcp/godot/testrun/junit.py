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
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["MAX_CASES", "MAX_REPORT", "Case", "JUnitReport", "ReportRefused", "parse_report"]

MAX_REPORT = 16 << 20  # bytes of a report read
MAX_CASES = 10_000  # cases kept (the counts cover all)
MAX_MESSAGE = 2000

_DECLARATION = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\ufeff?\s*<\?xml[^>]{0,200}\?>")
# A failure's, error's or skip's body is taken as text whatever it holds: GUT 7 writes messages
# unescaped (a `<` or `&` of an assertion breaks the XML), GUT 9 inside CDATA.
_OPEN = re.compile(r"<(failure|error|skipped)\b")
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
    cases: list[Case] = field(default_factory=list)  # the failed and erroring ones
    truncated: bool = False  # more failed or erroring cases than MAX_CASES

    @property
    def passed(self) -> int:
        return max(0, self.tests - self.failures - self.errors - self.skipped)


def _res(name: str) -> str | None:
    """A suite or class name as a ``res://`` script path, where it is one (GUT 9 drops the
    scheme: ``test/test_x.gd``)."""
    if not name.endswith(".gd") or ".." in name.split("/"):
        return None
    return name if name.startswith("res://") else "res://" + name.lstrip("/")


def _case(suite: str, el: ET.Element, redact: Callable[[str], str]) -> Case:
    suite = redact(suite)
    name = redact(el.get("name", ""))
    cls = redact(el.get("classname", suite))
    path = _res(cls) or _res(suite)
    for kind, status in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        found = el.find(kind)
        if found is None:
            continue
        attribute = redact(found.get("message", ""))
        text = redact(((found.text or "") or attribute).strip())
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


def _bodies_as_text(data: str) -> str:
    """``data`` with each failure's, error's and skip's body as escaped text: CDATA sections
    opened, every ``&``, ``<`` and ``>`` escaped. One pass, linear in the report's size
    whatever it holds (an unclosed body stops it: the parser then says what is wrong)."""
    out: list[str] = []
    at = 0
    while (start := _OPEN.search(data, at)) is not None:
        head = data.find(">", start.end())
        if head == -1:
            break
        if data[head - 1] == "/":  # <failure … />: no body
            out.append(data[at : head + 1])
            at = head + 1
            continue
        close = data.find("</" + start.group(1), head + 1)
        if close == -1:
            break
        out.append(data[at : head + 1])
        out.append(_escaped(_cdata_opened(data[head + 1 : close])))
        at = close
    out.append(data[at:])
    return "".join(out)


def _cdata_opened(body: str) -> str:
    """``body`` with its CDATA sections replaced by what they hold (one pass)."""
    out: list[str] = []
    at = 0
    while (start := body.find("<![CDATA[", at)) != -1:
        end = body.find("]]>", start + 9)
        if end == -1:
            break
        out.append(body[at:start])
        out.append(body[start + 9 : end])
        at = end + 3
    out.append(body[at:])
    return "".join(out)


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def parse_report(data: bytes, redact: Callable[[str], str] = str) -> JUnitReport:
    """The report in ``data``; :class:`ReportRefused` for anything else. ``redact`` is applied
    to every text taken from it (names a character reference spelled are plain by then)."""
    if len(data) > MAX_REPORT:
        raise ReportRefused(f"the report is larger than {MAX_REPORT} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReportRefused("the report is not UTF-8 text") from None
    if "\0" in text:  # UTF-16 or UTF-32, whose declarations the parser would follow
        raise ReportRefused("the report is not UTF-8 text")
    if _DECLARATION.search(text):
        raise ReportRefused("the report declares a document type; a JUnit report never does")
    text = _XML_DECLARATION.sub("", text, count=1)  # read as the UTF-8 it is, whatever it says
    try:
        root = ET.fromstring(_bodies_as_text(text))
    except ET.ParseError as exc:
        raise ReportRefused(f"the report is not XML: {exc}") from None
    if root.tag == "testsuite":
        suites = [root]
    elif root.tag == "testsuites":
        suites = root.findall("testsuite")
    else:
        raise ReportRefused(f"the report's root is <{redact(root.tag)[:40]}>, not <testsuites>")
    report = JUnitReport()
    for suite in suites:
        name = suite.get("name", "")
        for el in suite.iter("testcase"):
            case = _case(name, el, redact)
            report.tests += 1
            report.failures += case.status == "failed"
            report.errors += case.status == "error"
            report.skipped += case.status == "skipped"
            if case.status in ("failed", "error"):
                if len(report.cases) < MAX_CASES:
                    report.cases.append(case)
                else:
                    report.truncated = True
    return report
