"""project.test with a real headless Godot and the stand-in runners of ``tests/fixtures/testrun``
(GUT's and gdUnit4's command lines, output and reports, as observed; not the frameworks): counts
and failures as the report says, the report as an artifact, the project unchanged, and every
way a runner can fail or lie."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from mcp import MCPError

from godot_mcp.features.testrun import parse_report
from tests.runtime.conftest import require_godot
from tests.runtime.test_captures import fetch, ok
from tests.runtime.test_check import tree_hash
from tests.support import engines
from tests.support.procs import cmdline
from tests.support.rawstdio import raw_stdio
from tests.support.servers import serve_project, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

FIXTURES = Path(__file__).parent.parent / "fixtures" / "testrun"
GUT_BASE = 'extends "res://addons/gut/test.gd"\n\n'
SAMPLE = GUT_BASE + (
    "func test_passes():\n\tassert_eq(1 + 1, 2, 'one and one make two')\n\n"
    "func test_fails():\n\tassert_eq(2 + 2, 5, 'two and two make five')\n\n"
    "func test_errors():\n\tvar nothing = null\n\tnothing.explode()\n"
)
MORE = GUT_BASE + "func test_a():\n\tassert_true(true)\n\nfunc test_b():\n\tpending('later')\n"
DEEP = GUT_BASE + "func test_deep():\n\tassert_eq(1, 1)\n"
PROJECT = 'config_version=4\n\n[application]\n\nconfig/name="tested"\n'


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def gut_project(root: Path, config: bool = True, **tests: str) -> Path:
    """A project with the stand-in GUT of this lane's engine and ``tests`` (path: source)."""
    engine = engines.current()
    files = {
        "project.godot": engine.port(PROJECT),
        "addons/gut/gut_cmdln.gd": (FIXTURES / f"gut_cmdln{engine.major}.gd").read_text(),
        "addons/gut/test.gd": (FIXTURES / f"gut_test{engine.major}.gd").read_text(),
        **tests,
    }
    if config:
        files[".gutconfig.json"] = json.dumps({"dirs": ["res://test"]})
    return write_tree(root, files)


def sample(root: Path, **more: str) -> Path:
    return gut_project(
        root,
        **{"test/test_sample.gd": SAMPLE, "test/test_more.gd": MORE, "test/sub/test_deep.gd": DEEP},
        **more,
    )


def runner_processes(state: Path) -> list[int]:
    marker = str(state / "scratch")
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and marker in cmdline(int(p))]


def private_free(answer: dict, *paths: Path) -> None:
    text = json.dumps(answer)
    for path in paths:
        assert str(path) not in text, path


async def test_counts_failures_and_the_report_are_the_frameworks(tmp_path):
    require_godot("godot3-server", "bwrap")
    project = sample(tmp_path / "p")
    before = tree_hash(project)
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            r = await c.call_tool("project_test", {})
            answer = r.structured_content
            assert answer["outcome"] == "ok", answer
            report = await fetch(c, answer["report"])
            narrowed = await ok(c, "project.test", {"paths": ["res://test/test_more.gd"]})
            folder = await ok(c, "project.test", {"paths": ["res://test/sub/"]})
    # As GUT does: .gutconfig.json's dirs without their subfolders; an erroring test that
    # asserted nothing is not failed
    assert answer["framework"] == "gut"
    assert answer["counts"] == {"tests": 5, "passed": 3, "failed": 1, "errors": 0, "skipped": 1}
    line = {3: None, 4: 7}[engines.current().major]  # GUT 7 on Godot 3 has no line
    expected = {"suite": "res://test/test_sample.gd", "test": "test_fails"}
    expected["suite"] = expected["suite"].removeprefix("res://" if line else "")
    expected |= {"path": "res://test/test_sample.gd"} | ({"line": line} if line else {})
    if line:
        expected["code"] = "assert_eq(2 + 2, 5, 'two and two make five')"
    expected["message"] = f"[4] expected to equal [5]: two and two make five at line {line or -1}"
    assert answer["failures"] == [expected] and answer["truncated"] is False
    parsed = parse_report(report)
    assert (parsed.tests, parsed.failures, parsed.skipped) == (5, 1, 1)
    assert answer["report"]["mime_type"] == "application/xml"
    assert answer["report"]["size"] == len(report)
    assert r.content[-1].type == "resource_link" and r.content[-1].uri == answer["report"]["uri"]
    assert "Results saved to <scratch>/report.xml" in answer["log_tail"]
    assert "* test_fails" in answer["log_tail"]
    private_free(answer, tmp_path)
    assert tree_hash(project) == before  # nothing written, not even an import
    assert narrowed["counts"] == {"tests": 2, "passed": 1, "failed": 0, "errors": 0, "skipped": 1}
    assert folder["counts"]["tests"] == 1 and folder["failures"] == []


async def test_which_framework_runs_is_decided_by_the_addon_folders(tmp_path):
    require_godot("godot3-server", "bwrap")
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "project.godot").write_text(engines.current().port(PROJECT))
    both = sample(tmp_path / "both")
    (both / "addons" / "gdUnit4").mkdir()
    unconfigured = sample(tmp_path / "unconfigured")
    (unconfigured / ".gutconfig.json").unlink()
    with anyio.fail_after(120):
        async with stdio_client(bare, tmp_path / "s1") as c:
            none = (await c.call_tool("project_test", {})).structured_content
            gut = (await c.call_tool("project_test", {"framework": "gut"})).structured_content
        async with stdio_client(both, tmp_path / "s2") as c:
            two = (await c.call_tool("project_test", {})).structured_content
            bad = [
                (
                    await c.call_tool("project_test", {"paths": [p], "framework": "gut"})
                ).structured_content
                for p in ("res://nope", "res://../x", "/etc", "res://project.godot", "res://a,b")
            ]
        async with stdio_client(unconfigured, tmp_path / "s3") as c:
            empty = await ok(c, "project.test")
    assert none == {
        "outcome": "unavailable",
        "message": "the project has no test framework: looked for GUT (res://addons/gut) "
        "and gdUnit4 (res://addons/gdUnit4)",
    }
    assert gut == {
        "outcome": "unavailable",
        "message": "the project has no GUT: looked for res://addons/gut",
    }
    assert two["outcome"] == "invalid_argument" and "say which to run" in two["message"]
    assert [b["outcome"] for b in bad] == ["invalid_argument"] * 5
    assert bad[0]["message"] == "res://nope is not a file or folder of the project"
    assert bad[3]["message"] == "res://project.godot is not a test script (.gd)"
    assert empty["counts"]["tests"] == 0 and empty["report"] is None
    assert empty["message"].startswith("GUT has no tests to run: the project has no res://.gut")


async def test_a_runner_past_its_time_is_ended_and_says_how_far_it_got(tmp_path):
    require_godot("godot3-server", "bwrap")
    hangs = GUT_BASE + "func test_hangs():\n\twhile true:\n\t\tOS.delay_msec(50)\n"
    project = gut_project(tmp_path / "p", **{"test/test_hangs.gd": hangs})
    state = tmp_path / "state"
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    with anyio.fail_after(120):
        async with stdio_client(project, state) as c:
            r = await c.call_tool(
                "project_test", {"timeout_seconds": 12}, progress_callback=progress
            )
            after = runner_processes(state)
    answer = r.structured_content
    assert answer["outcome"] == "timeout", answer
    assert answer["message"] == (
        "the tests did not finish within 12 s (1 started) and wrote no report"
    )
    assert "* test_hangs" in answer["log_tail"]
    assert after == []
    values = [v for v, _, _ in seen]
    assert len(seen) >= 12 and values == sorted(set(values))  # at least once a second
    assert "1 tests run so far (last: test_hangs)" in {m for _, _, m in seen}


async def test_a_runner_that_dies_or_lies_answers_failed(tmp_path):
    require_godot("godot3-server", "bwrap")
    crash = GUT_BASE + "func test_dies():\n\tOS.kill(OS.get_process_id())\n"
    secret = tmp_path / "secret.txt"
    secret.write_text("the server's own file\n")
    crashing = gut_project(tmp_path / "crash", **{"test/test_dies.gd": crash})
    # Runners of the project's own writing: a report with a document type, a report that is
    # a link to a file outside, a report that never ends.
    runner = "extends SceneTree\n\nfunc _init():\n\tvar path = ''\n"
    runner += "\tfor a in OS.get_cmdline_args():\n\t\tif a.begins_with('-gjunit_xml_file='):\n"
    runner += "\t\t\tpath = a.split('=')[1]\n{body}\tquit(0)\n"
    write = "\tvar f = {open}\n\tf.store_string({text})\n\tf.close()\n"
    major = engines.current().major
    opener = {3: "File.new()\n\tf.open(path, File.WRITE)", 4: "FileAccess.open(path, 2)"}
    write = write.replace("{open}", opener[major])
    doctype = '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    doctype += "<testsuites><testsuite><testcase name='&x;'/></testsuite></testsuites>"
    link = f"\tOS.execute('ln', ['-s', '{secret}', path]{', true' * (major == 3)})\n"
    link += f"\tvar out = []\n\tOS.execute('readlink', [path]{', true' * (major == 3)}, out)\n"
    link += "\tprint('LINK ', out[0].strip_edges())\n"
    # A report naming the copy's own path with every '/' a character reference, and one in
    # UTF-16 that declares an entity (the parser would follow its declared encoding).
    spelled = "\tvar here = ProjectSettings.globalize_path('res://').replace('/', '&#47;')\n"
    spelled += write.replace(
        "{text}",
        '\'<testsuites><testsuite name="s"><testcase name="t"><failure message="m">\' '
        "+ here + '</failure></testcase></testsuite></testsuites>'",
    )
    utf16 = '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE t [<!ENTITY a "AAAA">]>'
    utf16 += '<testsuites><testsuite><testcase name="&a;"/></testsuite></testsuites>'
    array, code = {
        3: ("PoolByteArray", "text.ord_at(i)"),
        4: ("PackedByteArray", "text.unicode_at(i)"),
    }[major]
    widened = f"\tvar text = {utf16!r}\n\tvar b = {array}()\n\tfor i in range(text.length()):\n"
    widened += f"\t\tb.append({code})\n\t\tb.append(0)\n"
    widened += write.replace("f.store_string({text})", "f.store_buffer(b)")
    # The framework's own code does not compile here, and the runner never quits.
    stuck = "\tload('res://addons/gut/broken.gd')\n\twhile true:\n\t\tOS.delay_msec(100)\n"
    # A report nested 200,000 elements deep, written a piece at a time.
    deep = write.replace(
        "\tf.store_string({text})\n",
        "\tf.store_string('<testsuites>')\n\tfor i in range(200000):\n\t\tf.store_string('<x>')\n"
        "\tfor i in range(200000):\n\t\tf.store_string('</x>')\n"
        "\tf.store_string('</testsuites>')\n\tprint('DEEP REPORT WRITTEN')\n",
    )
    lying = {
        "deep": runner.format(body=deep),
        "doctype": runner.format(body=write.replace("{text}", repr(doctype))),
        "link": runner.format(body=link),
        "spelled": runner.format(body=spelled),
        "utf16": runner.format(body=widened),
        "broken": runner.format(body=stuck),
    }
    answers = {}
    with anyio.fail_after(240):
        async with stdio_client(crashing, tmp_path / "s0") as c:
            answers["crash"] = (await c.call_tool("project_test", {})).structured_content
        for name, source in lying.items():
            project = gut_project(tmp_path / name)
            (project / "addons/gut/gut_cmdln.gd").write_text(source)
            (project / "addons/gut/broken.gd").write_text("extends Node\nfunc f(:\n\tpass\n")
            async with stdio_client(project, tmp_path / f"s-{name}") as c:
                r = await c.call_tool("project_test", {})
                answers[name] = r.structured_content
                if name == "doctype":
                    kept = await fetch(c, r.structured_content["report"])
                if name == "deep":
                    kept_deep = await fetch(c, r.structured_content["report"], 300_000)
    crashed = answers["crash"]
    assert crashed["outcome"] == "failed", crashed
    assert crashed["message"].startswith("the test runner exited with code ")
    assert crashed["message"].endswith(" without writing its report")
    assert "* test_dies" in crashed["log_tail"]
    refused = answers["doctype"]
    assert refused["outcome"] == "failed"
    assert refused["message"] == (
        "the GUT report could not be read: the report declares a document type; "
        "a JUnit report never does"
    )
    assert kept == doctype.encode()  # registered all the same, as written
    deep_answer = answers["deep"]
    assert (deep_answer["outcome"], deep_answer["framework"]) == ("failed", "gut"), deep_answer
    assert deep_answer["message"] == (
        "the GUT report could not be read: the report nests elements more than 64 deep"
    )
    assert "DEEP REPORT WRITTEN" in deep_answer["log_tail"]
    assert kept_deep == b"<testsuites>" + b"<x>" * 200_000 + b"</x>" * 200_000 + b"</testsuites>"
    assert deep_answer["report"]["size"] == len(kept_deep)
    linked = answers["link"]
    assert linked["outcome"] == "failed", linked
    assert linked["message"] == "the test runner exited with code 0 without writing its report"
    assert "LINK <private>/secret.txt" in linked["log_tail"]  # it was there, not followed
    assert answers["spelled"]["failures"][0]["message"] == "res://"  # the copy, scrubbed
    wide = answers["utf16"]
    assert (wide["outcome"], wide["framework"]) == ("failed", "gut")
    assert wide["message"] == "the GUT report could not be read: the report is not UTF-8 text"
    broken = answers["broken"]
    assert broken["outcome"] == "failed" and broken["framework"] == "gut"
    version = engines.current().version.rstrip(".")
    assert broken["message"].startswith(f"GUT does not run on Godot {version}"), broken
    assert "its own script res://addons/gut/broken.gd:2: " in broken["message"]
    assert "the server's own file" not in json.dumps(answers)
    private_free(answers, tmp_path)


GDUNIT_SAMPLE = """\
extends GdUnitTestSuite

func test_passes():
\tassert_int(1 + 1).is_equal(2)

func test_fails():
\tassert_int(2 + 2).is_equal(5)

func test_errors():
\tvar nothing = null
\tnothing.explode()

func test_skipped():
\tskip("later")
"""


def gdunit_project(root: Path) -> Path:
    """A project with the stand-in gdUnit4 (its suite base is a global class: the copy must
    be imported for it to run) and one suite of four tests."""
    files = {
        "project.godot": engines.current().port(PROJECT),
        "addons/gdUnit4/bin/GdUnitCmdTool.gd": (FIXTURES / "GdUnitCmdTool.gd").read_text(),
        "addons/gdUnit4/src/GdUnitTestSuite.gd": (FIXTURES / "GdUnitTestSuite.gd").read_text(),
        "test/sample_test.gd": GDUNIT_SAMPLE,
    }
    return write_tree(root, files)


async def test_gdunit4_runs_on_godot_4_with_its_errors_apart(tmp_path):
    require_godot("godot3-server", "bwrap")
    project = gdunit_project(tmp_path / "p")
    before = tree_hash(project)
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            r = await c.call_tool("project_test", {})
            answer = r.structured_content
            if engines.current().major == 3:
                assert answer["outcome"] == "unavailable"
                assert answer["message"].startswith("gdUnit4 runs on Godot 4 only; this server")
                return
            assert answer["outcome"] == "ok", answer
            report = await fetch(c, answer["report"])
            empty = await ok(c, "project.test", {"paths": ["res://addons/gdUnit4/bin"]})
    assert answer["framework"] == "gdunit4"
    assert answer["counts"] == {"tests": 4, "passed": 1, "failed": 1, "errors": 1, "skipped": 1}
    assert answer["failures"] == [
        {
            "suite": "sample_test",
            "test": "test_errors",
            "path": "res://test/sample_test.gd",
            "line": 11,
            "code": "nothing.explode()",
            "message": "Invalid call. Nonexistent function 'explode' in base 'Nil'.",
        },
        {
            "suite": "sample_test",
            "test": "test_fails",
            "path": "res://test/sample_test.gd",
            "line": 7,
            "code": "assert_int(2 + 2).is_equal(5)",
            "message": "Expecting: '5' but was '4'",
        },
    ]
    parsed = parse_report(report)
    assert (parsed.tests, parsed.failures, parsed.errors, parsed.skipped) == (4, 1, 1, 1)
    assert b"godot-mcp-reports-" not in report and str(tmp_path).encode() not in report
    assert "  res://test/sample_test.gd > test_fails FAILED 0ms" in answer["log_tail"]
    assert tree_hash(project) == before  # the copy was imported and written, not the project
    assert empty["counts"]["tests"] == 0 and empty["report"] is None
    assert empty["message"] == "gdUnit4 found no tests to run"


async def test_many_failures_fit_the_answer_as_sent(tmp_path):
    require_godot("godot3-server", "bwrap")
    body = "".join(
        f"func test_f{i:03d}():\n\tassert_eq(1, 2, '{'why ' * 50}{i}')\n\n" for i in range(250)
    )
    project = gut_project(tmp_path / "p", **{"test/test_many.gd": GUT_BASE + body})
    answers = {}
    with anyio.fail_after(120):
        for limit in (9_000, 512 * 1024):
            async with raw_stdio(
                project, tmp_path / f"s{limit}", "--max-output-bytes", str(limit)
            ) as s:
                line = await s.call("project_test", {})
            assert len(line) <= limit, (limit, len(line))
            answers[limit] = json.loads(line)["result"]["structuredContent"]
    small, large = answers[9_000], answers[512 * 1024]
    for answer in (small, large):
        assert answer["outcome"] == "ok" and answer["truncated"] is True
        assert answer["counts"]["tests"] == 250 and answer["counts"]["failed"] == 250
        assert answer["log_tail"][-1] == "Results saved to <scratch>/report.xml"
    assert len(large["failures"]) == 200  # at most 200, whatever the room
    assert 1 <= len(small["failures"]) < 200
    assert [f["test"] for f in large["failures"][:3]] == ["test_f000", "test_f001", "test_f002"]


async def test_over_http_any_caller_may_run_the_tests_and_the_report_is_theirs(tmp_path):
    require_godot("godot3-server", "bwrap")
    served = serve_project(sample(tmp_path / "p"), tmp_path / "state")
    try:
        with anyio.fail_after(120):
            async with served.connect("http", "bob") as bob:
                answer = await ok(bob, "project.test", {"paths": ["res://test/test_more.gd"]})
                assert (await fetch(bob, answer["report"])).count(b"<testcase ") == 2
            async with served.connect("http", "alice") as alice:
                with pytest.raises(MCPError) as caught:
                    await alice.read_resource(answer["report"]["uri"])
                assert caught.value.error.message == "Resource not found"  # as an unknown one
                assert caught.value.error.data["outcome"] == "not_found"
    finally:
        served.http.stop()
