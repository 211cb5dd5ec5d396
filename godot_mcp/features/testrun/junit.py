"""A test runner's JUnit XML report, read safely: counts, each failure with its message and,
where the framework gives it, its ``res://`` path and line, and the report rewritten for the
caller with private paths replaced.

The report is the project's output: its test code wrote it (GUT's and gdUnit4's runners run in
the project), so it is read as hostile:

* It is bounded in size (``MAX_REPORT``; a larger one is neither read nor kept) and read as
  UTF-8 only: a report in UTF-16 or UTF-32 would make the parser follow its declared encoding.
* A JUnit report never needs a document type, so one that declares any (``<!DOCTYPE``,
  ``<!ENTITY``) is refused before the parser sees it: no entity is expanded, no file is read.
* The bodies of failures, errors and skips are taken as text whatever they hold (GUT 7 writes
  messages unescaped, GUT 9 inside CDATA), in one pass, linear in the report's size.
* The parser is fed in pieces and every text is scrubbed on its own, at most ``MAX_TEXT``
  characters each, so no single call holds the interpreter for long.
* Elements nest at most ``MAX_DEPTH`` deep (a JUnit report needs four); a deeper report is
  refused as the parser reads it, so the walks and the rewrite (``ET.tostring`` recurses)
  never come near the interpreter's recursion limit, whatever the report nests.
* Texts are scrubbed after the XML is decoded (character references, CDATA, comments; a body
  taken as text has its references made plain first), and the report the caller gets is the
  parsed tree written out again, so no spelling a reader would decode survives. A report that
  cannot be read is kept as its text, scrubbed piece by piece.

Recorded reports of the real frameworks are in ``tests/data/junit/`` (GUT 7.4.3 on Godot 3.2.3,
GUT 9.6.0 on Godot 4.6.3).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from godot_mcp.engine.process.redact import printable
from godot_mcp.errors import Failed

__all__ = [
    "MAX_CASES",
    "MAX_DEPTH",
    "MAX_REPORT",
    "Case",
    "JUnitReport",
    "ReadReport",
    "ReportRefused",
    "parse_report",
    "read_report",
]

MAX_REPORT = 16 << 20  # bytes of a report read
MAX_CASES = 10_000  # failed and erroring cases kept (the counts cover all)
MAX_MESSAGE = 2000
MAX_NAME = 500
MAX_TEXT = 64 << 10  # characters of one text or attribute of the rewritten report
MAX_DEPTH = 64  # elements nested in one another (a JUnit report needs four)
FEED = 64 << 10  # characters given to the parser at a time

_DECLARATION = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\ufeff?\s*<\?xml[^>]{0,200}\?>")
_OPEN = re.compile(r"<(failure|error|skipped)\b")
_LINE = re.compile(r"\bat line (\d{1,9})\b")
_RES_LINE = re.compile(r"(res://[^\s:()\"']{1,1000}\.(?:gd|cs)):(-?\d{1,9})\b")
_REFERENCE = re.compile(r"&#(0*[0-9]{1,7}|[xX]0*[0-9a-fA-F]{1,6});")
_CUT = re.compile(r"[\s<>\"']")  # where a long line of an unreadable report is cut


class ReportRefused(Failed):
    """The report is not a JUnit report this server reads (too large, a document type, not
    UTF-8, not XML, not ``testsuites``/``testsuite``)."""


@dataclass(frozen=True)
class Case:
    """One test case: ``status`` is ``passed``, ``failed``, ``error`` or ``skipped``."""

    suite: str
    name: str
    status: str
    message: str | None = None
    path: str | None = None
    line: int | None = None
    code: str | None = None  # the line as the project's file is now, set where answered


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


@dataclass
class ReadReport:
    """A report as read: its counts and failures (``None``: it could not be read, ``why``
    says why) and what the caller gets of it (``None``: nothing, it was too large)."""

    report: JUnitReport | None
    kept: bytes | None
    why: str | None = None


def read_report(data: bytes, redact: Callable[[str], str] = str) -> ReadReport:
    """The report in ``data``, with every text ``redact``-ed (blocking; use a thread)."""
    if len(data) > MAX_REPORT:
        why = f"the report is larger than {MAX_REPORT} bytes; it was not read or kept"
        return ReadReport(None, None, why)
    try:
        root = _parse(data)
    except ReportRefused as exc:
        text = data.decode("utf-8", "replace").replace("\0", "")
        return ReadReport(None, _scrubbed_text(text, redact).encode("utf-8"), str(exc))
    _scrub_tree(root, redact)
    return ReadReport(_counted(root), ET.tostring(root, encoding="utf-8", xml_declaration=True))


def parse_report(data: bytes, redact: Callable[[str], str] = str) -> JUnitReport:
    """The counts and failures of the report in ``data``; :class:`ReportRefused` for anything
    that is not a JUnit report read here."""
    read = read_report(data, redact)
    if read.report is None:
        raise ReportRefused(read.why or "the report cannot be read")
    return read.report


def _parse(data: bytes) -> ET.Element:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReportRefused("the report is not UTF-8 text") from None
    if "\0" in text:  # UTF-16 or UTF-32, whose declarations the parser would follow
        raise ReportRefused("the report is not UTF-8 text")
    if _DECLARATION.search(text):
        raise ReportRefused("the report declares a document type; a JUnit report never does")
    text = _bodies_as_text(_XML_DECLARATION.sub("", text, count=1))
    parser = ET.XMLParser(target=_Bounded())
    try:
        for at in range(0, len(text), FEED):
            parser.feed(text[at : at + FEED])
        root = parser.close()
    except ET.ParseError as exc:
        raise ReportRefused(f"the report is not XML: {exc}") from None
    if root.tag not in ("testsuite", "testsuites"):
        tag = printable(str(root.tag))[:40]
        raise ReportRefused(f"the report's root is a {tag!r} element, not testsuites")
    return root


class _Bounded(ET.TreeBuilder):
    """The tree builder that refuses an element nested deeper than ``MAX_DEPTH`` as it comes."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0

    def start(self, tag: str, attrs: dict[str, str]) -> ET.Element:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ReportRefused(f"the report nests elements more than {MAX_DEPTH} deep")
        return super().start(tag, attrs)

    def end(self, tag: str) -> ET.Element:
        self.depth -= 1
        return super().end(tag)


def _scrub_tree(root: ET.Element, redact: Callable[[str], str]) -> None:
    """Every text, tail, attribute name and value of the tree scrubbed, each cut to
    ``MAX_TEXT`` characters (a longer one ends in a mark of how much was cut)."""

    def clean(text: str | None) -> str | None:
        if not text:
            return text
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT] + f" [{len(text) - MAX_TEXT} characters cut]"
        # A body taken as text keeps references as written: plain, a path is a path to redact
        return redact(_REFERENCE.sub(_plain_reference, text))

    for el in root.iter():  # the builder bounded the depth: nothing here recurses far
        el.text, el.tail = clean(el.text), clean(el.tail)
        if el.attrib:
            el.attrib = {clean(k) or "": clean(v) or "" for k, v in el.attrib.items()}


def _counted(root: ET.Element) -> JUnitReport:
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    report = JUnitReport()
    for suite in suites:
        name = suite.get("name", "")
        for el in suite.iter("testcase"):
            case = _case(name, el)
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


def _res(name: str) -> str | None:
    """A suite or class name as a ``res://`` script path, where it is one (GUT 9 drops the
    scheme: ``test/test_x.gd``)."""
    if not name.endswith(".gd") or ".." in name.split("/"):
        return None
    return name if name.startswith("res://") else "res://" + name.lstrip("/")


def _name(text: str) -> str:
    return printable(text)[:MAX_NAME]


def _case(suite: str, el: ET.Element) -> Case:
    suite = _name(suite)
    name = _name(el.get("name", ""))
    path = _res(_name(el.get("classname", suite))) or _res(suite)
    for kind, status in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        found = el.find(kind)
        if found is None:
            continue
        attribute = found.get("message", "")
        text = ((found.text or "") or attribute).strip()
        message = printable(re.sub(r"\s+", " ", text[: 4 * MAX_MESSAGE]))[:MAX_MESSAGE]
        line = None
        # GUT: "… at line N" in the body; gdUnit4: message="FAILED: res://x.gd:N"
        at = _RES_LINE.search(attribute) or _RES_LINE.search(text)
        if at is not None:
            path = _name(at.group(1))
            line = int(at.group(2)) if int(at.group(2)) > 0 else None
        elif (m := _LINE.search(text)) is not None and int(m.group(1)) > 0:
            line = int(m.group(1))
        return Case(suite, name, status, message or None, path, line)
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
        close = _closing(data, head + 1, "</" + start.group(1))
        if close == -1:
            break
        out.append(data[at : head + 1])
        out.append(_escaped(_cdata_opened(data[head + 1 : close])))
        at = close
    out.append(data[at:])
    return "".join(out)


def _closing(data: str, at: int, tag: str) -> int:
    """Where ``tag`` (``</failure``) next closes the body from ``at``, outside CDATA; -1 for
    none. Each character is looked at a bounded number of times."""
    close = data.find(tag, at)
    while True:
        cdata = data.find("<![CDATA[", at, close if close != -1 else len(data))
        if cdata == -1:
            return close
        end = data.find("]]>", cdata + 9)
        if end == -1:
            return -1
        at = end + 3
        if close != -1 and close < at:  # it was inside the CDATA: look past it
            close = data.find(tag, at)


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


def _scrubbed_text(text: str, redact: Callable[[str], str]) -> str:
    """An unreadable report's text, its printable character references plain first (a path
    spelled ``&#47;srv…`` is a path then), scrubbed a line at a time; a line longer than
    ``MAX_TEXT`` is scrubbed in pieces cut where no path goes on (white space, a quote, ``<``
    or ``>``) where it can be."""
    text = _REFERENCE.sub(_plain_reference, text)
    return "".join(redact(piece) for piece in _pieces(text))


def _pieces(text: str) -> Iterator[str]:
    for line in text.splitlines(keepends=True):
        while len(line) > MAX_TEXT:
            cuts = [m.end() for m in _CUT.finditer(line, MAX_TEXT // 2, MAX_TEXT)]
            cut = cuts[-1] if cuts else MAX_TEXT
            yield line[:cut]
            line = line[cut:]
        yield line


def _plain_reference(match: re.Match[str]) -> str:
    """A numeric character reference as its character, where that changes nothing of the XML."""
    digits = match.group(1)
    try:
        code = int(digits[1:], 16) if digits[0] in "xX" else int(digits)
        char = chr(code)
    except (ValueError, OverflowError):
        return match.group(0)
    return char if char.isprintable() and char not in "<>&\"'" else match.group(0)
