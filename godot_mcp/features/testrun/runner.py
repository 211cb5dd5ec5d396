"""How each framework's own command-line runner is started, and what its output says as it runs.

Each runner is run as its README shows, headless, with the JUnit option pointing into the run's
work dir, and never with ``-d``: GUT's documented ``-d`` stops at the engine's ``debug>`` prompt
on the first script error and waits for input forever on Godot 3 (docs/testing-games.md).
Its standard input is empty as well.

As observed (GUT 7.4.3 on Godot 3.2.3, GUT 9.6.0 on Godot 4.6.3)::

    godot [--headless] --path P -s res://addons/gut/gut_cmdln.gd -gexit
          -gjunit_xml_file=W/report.xml [-gdir=a,b -ginclude_subdirs] [-gtest=x.gd,y.gd]
          [-gconfig=W/gutconfig.json]

    res://test/test_sample.gd          a script starts
    * test_passes                      a test starts (one line a test, both versions)

GUT reads ``res://.gutconfig.json`` by default (its ``dirs`` are the project's tests); options
given on the command line win over it. When ``paths`` are given, the project's config is
given to GUT without its ``dirs`` and ``tests`` (a copy in the work dir), so only ``paths``
run. GUT splits list options at ``,`` and options at ``=``, so a path holding either cannot be
given to it.

gdUnit4 (its ``runtest.sh`` runs ``GdUnitCmdTool.gd``; no release runs on the Godot 4.6.3
here, so this follows its source, v4.5 to v6.0.3)::

    godot --headless --path P -s res://addons/gdUnit4/bin/GdUnitCmdTool.gd
          --ignoreHeadlessMode -rd res://R -a res://test [-a …]

    P/R/report_1/results.xml                        its JUnit report (``-rd`` is always
                                                     taken inside the project)
    res://test/x_test.gd > test_y PASSED 5ms        a test ended (v5, v6; FAILED, SKIPPED…)
    Run Test: res://test/x_test.gd > test_y :PASSED  (v4)
    No test cases found, abort test run!            nothing to run (exit code 0, no report)

``runtest.sh`` passes ``-d``, which stops at the engine's prompt on a script that does not
parse; it is left out here, as for GUT. ``--ignoreHeadlessMode`` is needed since gdUnit4 4.x
refuses a headless engine without it (exit code 103).
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from godot_mcp.engine.process.engine_lines import SCRIPT_PARSE_ERROR, script_place
from godot_mcp.engine.process.redact import printable
from godot_mcp.engine.profile import EngineProfile
from godot_mcp.engine.project import tree
from godot_mcp.features.testrun.detect import ADDONS, RUNNERS

__all__ = [
    "GDUNIT_ROOT",
    "Invocation",
    "Selection",
    "TestCount",
    "gut_config",
    "invocation",
    "nothing_to_run",
]

GUT_CONFIG = ".gutconfig.json"
MAX_CONFIG = 1 << 20  # bytes of a .gutconfig.json read
GDUNIT_ROOT = "res://test"  # gdUnit4's default test folder (its settings' test root)

# A test starting (GUT's ``* name``) or ending (gdUnit4's ``res://x.gd > name PASSED``)
_GUT_TEST = re.compile(r"^\* (\w+)\s*$")
_GDUNIT_TEST = re.compile(
    r"^\s*(?:Run Test: )?res://\S+ > (.+?)\s*:?(?:PASSED|FAILED|SKIPPED|FLAKY|WARNING)\b"
)
_GDUNIT_STARTED = re.compile(r"^\s*(?:Run Test: )?res://\S+ > .+? :?STARTED\b")
_GDUNIT_NONE = re.compile(r"^No test (?:cases|suites) found, abort test run")


@dataclass(frozen=True)
class Selection:
    """What ``paths`` selected: ``res://`` folders and files (empty: the framework's default)."""

    folders: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.folders and not self.files


@dataclass(frozen=True)
class Invocation:
    """One runner's command line (after the engine), where its report will be, and files to
    write into the work dir before it starts."""

    args: list[str]
    report_root: Path  # the report is report_root/report_rel, read without following links
    report_rel: tuple[str, ...]
    files: dict[Path, bytes] = field(default_factory=dict)
    note: str | None = None  # what the answer should say of how the runner was started


def invocation(
    framework: str,
    engine: EngineProfile,
    copy: Path,
    work: Path,
    selection: Selection,
    gut_config: bytes | None = None,
) -> Invocation:
    """The runner's command line. ``gut_config``: the bytes of the project's
    ``.gutconfig.json`` (``None``: it has none)."""
    script = ["--path", str(copy), "-s", "res://" + RUNNERS[framework]]
    if framework == "gut":
        return _gut([*engine.headless_flags, *script], work, selection, gut_config)
    reports = "godot-mcp-reports-" + secrets.token_hex(6)  # a folder new to the copy
    adds = [a for p in (*selection.folders, *selection.files) for a in ("-a", p)]
    args = [*engine.headless_flags, *script, "--ignoreHeadlessMode", "-rd", "res://" + reports]
    rel = (reports, "report_1", "results.xml")
    return Invocation([*args, *(adds or ["-a", GDUNIT_ROOT])], copy, rel)


def _gut(base: list[str], work: Path, selection: Selection, config: bytes | None) -> Invocation:
    report = work / "report.xml"
    args = [*base, "-gexit", f"-gjunit_xml_file={report}"]
    if selection.empty:  # GUT decides from the project's config (its dirs)
        return Invocation(args, work, ("report.xml",))
    files: dict[Path, bytes] = {}
    if selection.folders:
        args += ["-gdir=" + ",".join(selection.folders), "-ginclude_subdirs"]
    if selection.files:
        args.append("-gtest=" + ",".join(selection.files))
    own = _config_without_tests(config)
    note = None
    if config is not None and own is None:  # GUT would add the config's dirs to paths
        own = b"{}"
        note = (
            "the project's .gutconfig.json is not a JSON object this server reads, so with "
            "paths its other settings (prefix, hooks) were not used"
        )
    if own is not None:  # the project's other settings (prefix, hooks) still apply
        path = work / "gutconfig.json"
        files[path] = own
        args.append(f"-gconfig={path}")
    return Invocation(args, work, ("report.xml",), files, note=note)


def gut_config(project: Path) -> bytes | None:
    """The project's ``.gutconfig.json`` (``tree.read_file``'s rules; blocking): ``None`` when
    it has none, ``b""`` when it has one this server does not read (larger than
    ``MAX_CONFIG``, not a regular file), which GUT then reads itself."""
    try:
        return tree.read_file(project, GUT_CONFIG, MAX_CONFIG, "test runs")
    except FileNotFoundError:
        return None
    except OSError:
        return b""


def _config_without_tests(config: bytes | None) -> bytes | None:
    """The project's GUT config without ``dirs`` and ``tests``; ``None`` when it has none or
    it is not a JSON object this server reads (too large, or JSON only Godot accepts)."""
    if config is None:
        return None
    try:
        value = json.loads(config)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    value.pop("dirs", None)
    value.pop("tests", None)
    return json.dumps(value).encode()


def nothing_to_run(
    plan: tree.Plan, framework: str, selection: Selection, config: bytes | None
) -> str | None:
    """Why the runner would run no test, known before it starts, or None."""
    if not selection.empty:
        return None
    if framework == "gut" and config is None:
        return (
            "GUT has no tests to run: the project has no res://.gutconfig.json naming its test "
            "folders and no paths were given (give paths, such as res://test)"
        )
    default = GDUNIT_ROOT.removeprefix("res://")
    if framework == "gdunit4" and not any(e.rel == default and e.is_dir for e in plan.entries):
        return (
            f"gdUnit4 has no tests to run: its default folder, {GDUNIT_ROOT}, is not in the "
            "project and no paths were given (give paths, such as the folder of your tests)"
        )
    return None


def refuse_path(framework: str, path: str) -> str | None:
    """Why the runner cannot be given ``path``, or None."""
    if framework == "gut" and ("," in path or "=" in path):
        return "GUT cannot be given a path holding ',' or '='"
    if any(c.isspace() for c in path) and framework == "gdunit4":
        return "gdUnit4 cannot be given a path holding spaces"
    return None


@dataclass
class TestCount:
    """What the runner's output says as it comes: the tests started so far, whether it found
    none, and whether the framework itself does not compile on this engine (a parse error in
    one of its own scripts: GUT 9.2 on Godot 4.5 and later, where ``Logger`` became a class)."""

    __test__ = False  # not a pytest class, whatever its name

    framework: str
    started: int = 0
    last: str | None = None  # the test seen last
    none_found: bool = False  # the runner said it found no test (gdUnit4)
    begun: bool = False  # a test began (gdUnit4 counts tests as they end, and says so)
    broken: str | None = None  # "res://addons/…:N: message": the framework does not compile
    refused: str | None = None  # the runner refused its options ("Unrecognized options: …")
    _parse_error: str | None = None  # a parse error waiting for the line naming its place

    def see(self, line: str) -> None:
        line = printable(line)
        found = (_GUT_TEST if self.framework == "gut" else _GDUNIT_TEST).match(line)
        if found is not None:
            self.started += 1
            self.begun = True
            self.last = found.group(1)[:200]
        elif self.framework == "gdunit4" and _GDUNIT_STARTED.match(line):
            self.begun = True
        elif self.framework == "gdunit4" and _GDUNIT_NONE.match(line):
            self.none_found = True
        elif self.refused is None and line.startswith("Unrecognized options:"):
            self.refused = line[:300]
        self._compiles(line)

    def _compiles(self, line: str) -> None:
        pending, self._parse_error = self._parse_error, None
        error = SCRIPT_PARSE_ERROR.match(line)
        if error is not None:
            self._parse_error = error.group(1).strip()
            return
        place = script_place(line)
        if pending is None or place is None or self.broken is not None:
            return
        if place[0].startswith("res://" + ADDONS[self.framework] + "/"):
            self.broken = f"{place[0]}:{place[1]}: {pending}"[:500]

    def words(self) -> str:
        if self.started == 0:
            return "running the tests"
        return f"{self.started} tests run so far (last: {self.last})"
