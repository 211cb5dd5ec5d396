"""project.test's pure parts: which framework, the runner's command line, what its output says,
which paths it takes, and how the report is read from a folder the tests could write."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from godot_mcp.engine.profile import profile_of
from godot_mcp.engine.project import tree
from godot_mcp.errors import InvalidArgument, Unavailable
from godot_mcp.features.testrun import (
    BadTestPath,
    Selection,
    choose,
    gut_config,
    invocation,
    nothing_to_run,
    refuse_without_runner,
    select,
)
from godot_mcp.features.testrun.runner import TestCount


def test_auto_picks_the_one_framework_and_refuses_none_or_both():
    assert choose(["gut"], "auto") == "gut"
    assert choose(["gdunit4"], "auto") == "gdunit4"
    assert choose(["gut", "gdunit4"], "gdunit4") == "gdunit4"
    with pytest.raises(Unavailable, match=r"looked for GUT \(res://addons/gut\) and gdUnit4"):
        choose([], "auto")
    with pytest.raises(InvalidArgument, match="say which to run with framework"):
        choose(["gut", "gdunit4"], "auto")
    with pytest.raises(
        Unavailable, match=r"^the project has no gdUnit4: looked for res://addons/gdUnit4$"
    ):
        choose(["gut"], "gdunit4")


def test_gut_runs_as_its_readme_shows_and_paths_replace_the_configs_tests(tmp_path):
    copy, work = tmp_path / "copy", tmp_path / "work"
    base = ["--path", str(copy), "-s", "res://addons/gut/gut_cmdln.gd", "-gexit"]
    report = f"-gjunit_xml_file={work / 'report.xml'}"
    config = json.dumps({"dirs": ["res://test"], "prefix": "t_", "tests": ["res://x.gd"]}).encode()
    default = invocation("gut", profile_of(4), copy, work, Selection(), config)
    assert default.args == ["--headless", *base, report] and default.files == {}
    assert (default.report_root, default.report_rel) == (work, ("report.xml",))
    chosen = invocation(
        "gut", profile_of(3), copy, work, Selection(("res://a",), ("res://b/test_c.gd",)), config
    )
    assert chosen.args == [
        *base,
        report,
        "-gdir=res://a",
        "-ginclude_subdirs",
        "-gtest=res://b/test_c.gd",
        f"-gconfig={work / 'gutconfig.json'}",
    ]
    assert json.loads(chosen.files[work / "gutconfig.json"]) == {"prefix": "t_"}
    # JSON Godot reads and Python does not (a trailing comma): GUT would add its dirs to paths
    unreadable = invocation(
        "gut", profile_of(3), copy, work, Selection(("res://a",)), b'{"dirs": [],}'
    )
    assert unreadable.files == {work / "gutconfig.json": b"{}"}
    assert unreadable.args[-1] == f"-gconfig={work / 'gutconfig.json'}"
    assert unreadable.note is not None and "its other settings" in unreadable.note


def test_gdunit4_gets_its_own_options_and_a_report_folder_new_to_the_copy(tmp_path):
    copy, work = tmp_path / "copy", tmp_path / "work"
    run = invocation("gdunit4", profile_of(4), copy, work, Selection(), None)
    folder = run.args[run.args.index("-rd") + 1]
    assert folder.startswith("res://godot-mcp-reports-")
    assert run.args[:6] == [
        "--headless",
        "--path",
        str(copy),
        "-s",
        "res://addons/gdUnit4/bin/GdUnitCmdTool.gd",
        "--ignoreHeadlessMode",
    ]
    assert run.args[-2:] == ["-a", "res://test"] and "-d" not in run.args
    assert run.report_root == copy
    assert run.report_rel == (folder.removeprefix("res://"), "report_1", "results.xml")
    two = invocation(
        "gdunit4", profile_of(4), copy, work, Selection(("res://t",), ("res://u_test.gd",)), None
    )
    assert two.args[-4:] == ["-a", "res://t", "-a", "res://u_test.gd"]


@pytest.mark.parametrize(
    ("framework", "lines", "started", "none"),
    [
        (
            "gut",
            ["res://test/test_a.gd", "* test_one", "* test_two", "- test_two", "* 1 Warnings."],
            2,
            False,
        ),
        (
            "gdunit4",
            [
                "  res://t/a_test.gd > test_one STARTED",
                "  res://t/a_test.gd > test_one PASSED 5ms",
                "  res://t/a_test.gd > test_two FAILED 12ms",
                "\tRun Test: res://t/a_test.gd > test_three :SKIPPED 0ms",  # gdUnit4 4.x
            ],
            3,
            False,
        ),
        ("gdunit4", ["No test cases found, abort test run!"], 0, True),
    ],
)
def test_the_tests_run_so_far_are_read_from_the_runners_lines(framework, lines, started, none):
    count = TestCount(framework)
    for line in lines:
        count.see(line)
    assert (count.started, count.none_found) == (started, none)
    assert count.begun is (started > 0)
    gdunit = TestCount("gdunit4")
    gdunit.see("  res://t/a_test.gd > test_slow STARTED")  # begun, not yet counted
    assert (gdunit.begun, gdunit.started) == (True, 0)


def test_paths_must_be_test_scripts_or_folders_of_the_project(tmp_path):
    (tmp_path / "test" / "sub").mkdir(parents=True)
    (tmp_path / "test" / "test_a.gd").write_text("")
    (tmp_path / "test" / "a,b.gd").write_text("")
    (tmp_path / "Cs.cs").write_text("")
    plan = tree.plan(tmp_path)
    assert select(plan, None, "gut") == Selection()
    got = select(plan, ["res://test/", "res://test/test_a.gd", "res://", "res://test"], "gut")
    assert got == Selection(("res://test", "res://"), ("res://test/test_a.gd",))
    assert select(plan, ["res://Cs.cs"], "gdunit4").files == ("res://Cs.cs",)
    for given, why in [
        ("res://nope", "res://nope is not a file or folder of the project"),
        ("res://Cs.cs", "res://Cs.cs is not a test script (.gd)"),
        ("res://test/a,b.gd", "res://test/a,b.gd: GUT cannot be given a path holding ',' or '='"),
        ("res://../x", "'res://../x' is not a plain res:// path"),
        ("user://x", "'user://x' is not a res:// path"),
        ("res://te\x1bst", "'res://te\\x1bst' holds control characters"),
    ]:
        with pytest.raises(BadTestPath) as caught:
            select(plan, [given], "gut")
        assert caught.value.message == why


def test_the_report_is_read_without_following_links_or_waiting_on_a_fifo(tmp_path):
    work = tmp_path / "work"
    (work / "reports" / "report_1").mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.write_text("private")
    (work / "report.xml").write_text("<testsuites/>")
    assert tree.read_below(work, ["report.xml"], 100) == b"<testsuites/>"
    assert tree.read_below(work, ["report.xml"], 5) == b"<test"
    (work / "link.xml").symlink_to(secret)
    assert tree.read_below(work, ["link.xml"], 100) is None
    os.mkfifo(work / "fifo.xml")
    assert tree.read_below(work, ["fifo.xml"], 100) is None  # not opened for a writer to come
    (work / "hop").symlink_to(tmp_path)  # a link on the way
    assert tree.read_below(work, ["hop", "secret"], 100) is None
    assert tree.read_below(work, ["missing.xml"], 100) is None
    (work / "reports" / "report_1" / "results.xml").write_text("x")
    assert tree.read_below(work, ["reports", "report_1", "results.xml"], 100) == b"x"
    assert tree.read_below(Path("/nonexistent"), ["x"], 10) is None


def test_a_framework_that_does_not_compile_here_or_refuses_its_options_is_named():
    gut4 = TestCount("gut")
    for line in (
        'SCRIPT ERROR: Parse Error: The member "Logger" shadows a native class.',
        "          at: GDScript::reload (res://addons/gut/logger.gd:12)",
    ):
        gut4.see(line)
    assert (
        gut4.broken == 'res://addons/gut/logger.gd:12: The member "Logger" shadows a native class.'
    )
    gut3 = TestCount("gut")
    for line in (
        "SCRIPT ERROR: GDScript::reload: Parse Error: bad",
        "   At: res://addons/gut/x.gd:5.",
    ):
        gut3.see(line)
    assert gut3.broken == "res://addons/gut/x.gd:5: bad"
    tests = TestCount("gut")  # a test of the project's that does not compile is the project's
    for line in (
        "SCRIPT ERROR: GDScript::reload: Parse Error: bad",
        "   At: res://test/test_a.gd:5.",
    ):
        tests.see(line)
    assert tests.broken is None
    old = TestCount("gut")
    old.see("Unrecognized options:  [-gjunit_xml_file]")
    assert old.refused == "Unrecognized options:  [-gjunit_xml_file]"
    noisy = TestCount("gdunit4")
    noisy.see("  res://t/a_test.gd > test_\x1b]0;evil\x07x PASSED 1ms")
    assert noisy.last == "test_x"  # no escape or control character reaches a progress message


def test_what_would_run_nothing_is_said_before_anything_starts(tmp_path):
    (tmp_path / "addons" / "gut").mkdir(parents=True)
    (tmp_path / "spec").mkdir()
    plan = tree.plan(tmp_path)
    assert "no res://.gutconfig.json" in (nothing_to_run(plan, "gut", Selection(), None) or "")
    assert nothing_to_run(plan, "gut", Selection(), b"{}") is None
    assert nothing_to_run(plan, "gut", Selection(("res://spec",)), None) is None
    why = nothing_to_run(plan, "gdunit4", Selection(), None) or ""
    assert "its default folder, res://test, is not in the project" in why
    assert nothing_to_run(plan, "gdunit4", Selection(("res://spec",)), None) is None
    with pytest.raises(Unavailable, match=r"has no res://addons/gut/gut_cmdln\.gd"):
        refuse_without_runner(plan, "gut")  # an empty folder: a submodule never checked out
    (tmp_path / "addons" / "gut" / "gut_cmdln.gd").write_text("")
    refuse_without_runner(tree.plan(tmp_path), "gut")


def test_the_gut_config_is_read_as_every_small_project_file_is(tmp_path):
    assert gut_config(tmp_path) is None
    (tmp_path / ".gutconfig.json").write_text('{"dirs": ["res://test"]}')
    assert gut_config(tmp_path) == b'{"dirs": ["res://test"]}'
    (tmp_path / ".gutconfig.json").unlink()
    os.mkfifo(tmp_path / ".gutconfig.json")  # there, but not read: GUT reads it itself
    assert gut_config(tmp_path) == b""
