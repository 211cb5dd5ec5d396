"""The JUnit reports test runners write, read safely: the real frameworks' own reports
(``tests/data/junit``: GUT 7.4.3 on Godot 3.2.3, GUT 9.6.0 on Godot 4.6.3, on a fixture of one
passing, one failing and one erroring test) and hostile ones."""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from godot_mcp.features.testrun import Case, ReportRefused, frameworks, parse_report, read_report
from godot_mcp.features.testrun.junit import MAX_CASES, MAX_DEPTH, MAX_REPORT

DATA = Path(__file__).parent.parent / "data" / "junit"


def test_gut7_on_godot3_reads_as_gut_counts_it() -> None:
    report = parse_report((DATA / "gut-7.4.3-godot-3.2.3.xml").read_bytes())
    assert (report.tests, report.failures, report.errors, report.skipped) == (3, 1, 0, 0)
    assert report.passed == 2  # GUT 7 counts the erroring test as "did not assert", not failed
    (failed,) = [c for c in report.cases if c.status != "passed"]
    assert failed == Case(
        "res://test/test_sample.gd",
        "test_fails",
        "failed",
        "[4] expected to equal [5]: two and two make five at line -1",
        "res://test/test_sample.gd",
        None,  # GUT 7 says "at line -1"
    )


def test_gut9_on_godot4_names_the_failing_line() -> None:
    report = parse_report((DATA / "gut-9.6.0-godot-4.6.3.xml").read_bytes())
    assert (report.tests, report.failures, report.passed) == (3, 2, 1)
    by_name = {c.name: c for c in report.cases}
    assert by_name["test_fails"].path == "res://test/test_sample.gd"  # GUT 9 drops res://
    assert by_name["test_fails"].line == 7
    assert by_name["test_fails"].message is not None
    assert by_name["test_fails"].message.startswith("[4] expected to equal [5]")
    assert "Nonexistent function 'explode'" in (by_name["test_errors"].message or "")
    assert set(by_name) == {"test_fails", "test_errors"}  # only the failed ones are kept


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (
            b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
            b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><testsuites>&lol2;</testsuites>',
            "declares a document type",
        ),
        (
            b'<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuites>&x;</testsuites>',
            "declares a document type",
        ),
        (b"<!entity x 'y'><testsuites/>", "declares a document type"),
        (b"<testsuites><testsuite>", "not XML"),
        (b"<html><body/></html>", "root is a 'html' element"),
        (b" " * (MAX_REPORT + 1), "larger than"),
    ],
)
def test_a_hostile_report_is_refused_unread(data: bytes, why: str) -> None:
    with pytest.raises(ReportRefused, match=why):
        parse_report(data)


def test_counts_cover_every_case_and_the_kept_ones_are_bounded() -> None:
    cases = "".join(f'<testcase name="t{i}"/>' for i in range(MAX_CASES + 5))
    failing = '<testcase name="bad"><failure message="m">res://a.gd:12: boom</failure></testcase>'
    data = f'<testsuite name="res://a.gd">{cases}{failing}</testsuite>'.encode()
    report = parse_report(data)
    # passing cases never crowd a failure out
    assert (report.tests, report.failures, report.truncated) == (MAX_CASES + 6, 1, False)
    assert [(c.name, c.line) for c in report.cases] == [("bad", 12)]
    many = "".join(f'<testcase name="f{i}"><error/></testcase>' for i in range(MAX_CASES + 1))
    report = parse_report(f"<testsuite>{many}</testsuite>".encode())
    assert (report.errors, len(report.cases), report.truncated) == (MAX_CASES + 1, MAX_CASES, True)


def test_a_report_made_to_be_slow_reads_in_linear_time() -> None:
    # Unclosed bodies, heads without an end, CDATA without an end: each once, never rescanned
    for piece in (b"<failure>", b"<failure ", b"<failure><![CDATA[", b"<skipped/>"):
        data = b"<testsuites>" + piece * 400_000
        started = time.process_time()
        with pytest.raises(ReportRefused, match=r"not XML|nests elements more than"):
            parse_report(data)
        assert time.process_time() - started < 5, piece  # quadratic would be hours


def test_only_utf8_is_read_so_no_declared_encoding_smuggles_a_document_type() -> None:
    doc = '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE t [<!ENTITY a "AAAA">]>'
    doc += '<testsuites><testsuite><testcase name="&a;"/></testsuite></testsuites>'
    for data in (doc.encode("utf-16-le"), doc.encode("utf-16"), doc.encode("utf-32")):
        with pytest.raises(ReportRefused, match="not UTF-8 text"):
            parse_report(data)
    latin = '<?xml version="1.0" encoding="ISO-8859-1"?><testsuite><testcase name="é"/></testsuite>'
    assert parse_report(latin.encode()).tests == 1  # read as the UTF-8 it is


def test_every_text_taken_from_the_report_is_redacted_after_decoding() -> None:
    data = (
        b'<testsuite name="&#47;srv&#47;state&#47;x.gd"><testcase name="&#47;srv&#47;state">'
        b'<failure message="FAILED: &#47;srv&#47;state/a.gd:3">at /srv/state</failure>'
        b"</testcase></testsuite>"
    )
    (case,) = parse_report(data, lambda t: t.replace("/srv/state", "<state>")).cases
    assert (case.suite, case.name, case.message) == ("<state>/x.gd", "<state>", "at <state>")


def test_frameworks_are_found_by_their_addon_folder_inside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "addons").mkdir(parents=True)
    assert frameworks(project) == []
    (project / "addons/gut").mkdir()
    assert frameworks(project) == ["gut"]  # by its folder, never by whether it runs
    elsewhere = tmp_path / "gdUnit4"
    elsewhere.mkdir()
    os.symlink(elsewhere, project / "addons/gdUnit4")
    assert frameworks(project) == ["gut"]  # a link out of the project is no addon
    (project / "addons/gdUnit4").unlink()
    (project / "addons/gdUnit4").mkdir()
    assert frameworks(project) == ["gut", "gdunit4"]


def test_unescaped_messages_still_read_as_text() -> None:
    data = (
        b'<testsuites><testsuite name="res://t.gd">'
        b'<testcase name="a"><failure message="failed">[<Node#1>] expected & got'
        b" at line 4</failure></testcase>"
        b'<testcase name="b"><failure><![CDATA[x < y]]></failure></testcase>'
        b'<testcase name="c"><skipped>not <ready></skipped></testcase>'
        b"</testsuite></testsuites>"
    )
    report = parse_report(data)
    assert (report.tests, report.failures, report.skipped) == (3, 2, 1)
    messages = [c.message for c in report.cases]
    assert messages == ["[<Node#1>] expected & got at line 4", "x < y"]
    assert report.cases[0].line == 4 and report.cases[0].path == "res://t.gd"


# gdUnit4's shape, as its JUnitXmlReportWriter.gd writes it (v4.5 to v6.0.3): no gdUnit4 release
# runs on the Godot 4.6.3 here, so the file is written from its source, not recorded.
GDUNIT4 = (Path(__file__).parent.parent / "data" / "junit" / "gdunit4-shape.xml").read_bytes()


def test_gdunit4_names_path_and_line_in_its_message_attribute() -> None:
    report = parse_report(GDUNIT4)
    assert (report.tests, report.passed, report.failures, report.errors, report.skipped) == (
        4,
        1,
        1,
        1,
        1,
    )
    bad, crash = report.cases
    assert bad == Case(
        "player_test",
        "test_bad",
        "failed",
        "Expecting: '2' but was '1'",
        "res://test/player_test.gd",
        12,
    )
    assert (crash.status, crash.line, crash.path) == ("error", 20, "res://test/player_test.gd")


STATE = "/srv/gmcp-state"


def scrub(text: str) -> str:
    return text.replace(STATE, "<state>")


@pytest.mark.parametrize(
    "spelled",
    [
        "&#00000000047;srv&#00000000047;gmcp-state&#x000002F;x",  # references, leading zeros
        "<![CDATA[/srv/gmcp-st]]><![CDATA[ate/x]]>",  # split across CDATA sections
        "/srv/gmcp-st<!-- -->ate/x",  # split by a comment
    ],
)
def test_the_kept_report_is_the_tree_rewritten_so_no_spelling_survives(spelled: str) -> None:
    data = (
        '<testsuites><testsuite name="s"><testcase name="t"><system-out>'
        f'{spelled}</system-out><failure message="at {STATE}/y">{STATE}/x</failure>'
        "</testcase></testsuite></testsuites>"
    ).encode()
    read = read_report(data, scrub)
    assert read.report is not None and read.kept is not None
    back = ET.fromstring(read.kept)  # what any XML reader makes of it
    texts = [t for el in back.iter() for t in (el.text, *el.attrib.values()) if t]
    assert STATE not in " ".join(texts) and "/srv/gmcp" not in " ".join(texts)
    assert "<state>/x" in back.find(".//system-out").text  # placeholders escaped, still XML
    assert read.report.cases[0].message == "<state>/x"


def test_a_report_too_large_is_neither_read_nor_kept_and_an_unreadable_one_is_kept_scrubbed():
    over = b"<testsuites>" + b"&#65;" * (MAX_REPORT // 5)
    read = read_report(over, scrub)
    assert (read.report, read.kept) == (None, None) and "larger than" in (read.why or "")
    broken = f"<testsuites><testsuite>{STATE}/a &#47;srv&#47;gmcp-state/b".encode()
    read = read_report(broken, scrub)
    assert (
        read.report is None
        and read.why is not None
        and read.why.startswith("the report is not XML")
    )
    assert read.kept == b"<testsuites><testsuite><state>/a <state>/b"


def test_odd_but_valid_reports_read_and_nothing_in_them_raises() -> None:
    cdata = (
        '<testsuite><testcase name="t"><failure><![CDATA[expected "</failure>"]]></failure>'
        "</testcase></testsuite>"
    )
    (case,) = parse_report(cdata.encode()).cases
    assert case.message == 'expected "</failure>"'
    digits = "9" * 5000
    huge = (
        f'<testsuite><testcase name="t"><failure>res://a.gd:{digits} at line {digits}</failure>'
        "</testcase></testsuite>"
    )
    (case,) = parse_report(huge.encode()).cases
    assert case.line is None  # not a line anyone wrote
    named = (
        f'<testsuite name="{"s" * 5000}"><testcase name="a\u202eb&#x85;c"><error/></testcase>'
        "</testsuite>"
    )
    (case,) = parse_report(named.encode()).cases
    assert len(case.suite) == 500 and case.name == "abc"
    long_body = "x" * (200 << 10)
    read = read_report(
        f"<testsuite><testcase><failure>{long_body}</failure></testcase></testsuite>".encode()
    )
    assert (
        read.kept is not None
        and b"[" + str(len(long_body) - (64 << 10)).encode() + b" characters cut]" in read.kept
    )


def nested(depth: int) -> bytes:
    """A report whose elements nest ``depth`` deep, the root counted."""
    inner = depth - 2
    body = "<testcase name='t'>" + "<x>" * inner + "</x>" * inner + "</testcase>"
    return f"<testsuite name='s'>{body}</testsuite>".encode()


def test_a_report_nested_deeper_than_allowed_is_refused_as_read_and_kept_as_text() -> None:
    deep = b"<testsuites>" + b"<x>" * 200_000 + b"</x>" * 200_000 + b"</testsuites>"
    for data in (deep, nested(MAX_DEPTH + 1)):
        read = read_report(data, scrub)
        why = f"the report nests elements more than {MAX_DEPTH} deep"
        assert (read.report, read.why, read.kept) == (None, why, data)
    read = read_report(nested(MAX_DEPTH), scrub)
    assert read.report is not None and read.report.tests == 1
    assert read.kept is not None and ET.fromstring(read.kept).find(".//x") is not None


def test_the_rewritten_report_is_written_as_elementtree_writes_it() -> None:
    odd = (
        b'<testsuites xmlns:q="urn:q" q:at="a&quot;&#10;&#9;b" xml:lang="en"><q:s>t&amp;&lt;'
        b'</q:s>tail<e/><testsuite name="s"><testcase name="t"/></testsuite></testsuites>'
    )
    for data in [*(p.read_bytes() for p in sorted(DATA.glob("*.xml"))), odd]:
        read = read_report(data)
        assert read.kept is not None
        assert read.kept == ET.tostring(ET.fromstring(read.kept), "utf-8", xml_declaration=True)
        assert read.kept == ET.tostring(ET.fromstring(data), "utf-8", xml_declaration=True)
