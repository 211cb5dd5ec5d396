"""Each engine line's profile (``engine/profile.py``), and no comparison of engine versions
anywhere else in the package but the wire codecs (read from the source, with cases the reader
must refuse)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from godot_mcp.engine.profile import (
    GODOT_3,
    GODOT_3_2,
    GODOT_3_3,
    GODOT_3_5,
    GODOT_4,
    GODOT_4_0,
    EngineProfile,
    profile_of,
    saved_by_newer,
)
from godot_mcp.engine.project.presets import KINDS, PLATFORMS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "godot_mcp"
# The files that may compare engine versions: the profile, the parsing of versions, and the
# wire codecs (the debugger's Variants and framing, the bridge's protocol).
MAY_COMPARE = {
    "godot_mcp/engine/profile.py",
    "godot_mcp/engine/process/locate.py",
    "godot_mcp/engine/debugger/variant.py",
    "godot_mcp/engine/debugger/wire.py",
    "godot_mcp/features/game/protocol.py",
}
LINES = (GODOT_3, GODOT_3_2, GODOT_3_3, GODOT_3_5, GODOT_4_0, GODOT_4)
_VERSIONED = re.compile(r"major|minor", re.IGNORECASE)
_PARSERS = {"major_of", "major_minor", "version_of"}
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


def _speaks_of_a_version(node: ast.AST) -> bool:
    """A name or attribute of a major or minor version, or a parser of versions, in ``node``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and _VERSIONED.search(sub.id):
            return True
        if isinstance(sub, ast.Attribute) and _VERSIONED.search(sub.attr):
            return True
        called = sub.func if isinstance(sub, ast.Call) else None
        if isinstance(called, ast.Name) and called.id in _PARSERS:
            return True
    return False


def _numbers(node: ast.AST) -> bool:
    """A tuple of version numbers: ``(3, 5)``, ``(int(a), int(b))``."""
    if not isinstance(node, ast.Tuple) or len(node.elts) < 2:
        return False
    return all(
        (isinstance(e, ast.Constant) and type(e.value) is int)
        or (isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "int")
        for e in node.elts
    )


def version_comparisons(source: str) -> list[int]:
    """The lines of ``source`` that compare engine versions or pick by one: an ordering or an
    equality with a major or minor number, a tuple of version numbers compared, a table
    looked up by a major, a table keyed by the majors 3 and 4."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and all(isinstance(op, _ORDER) for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(_speaks_of_a_version(s) or _numbers(s) for s in sides):
                found.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _speaks_of_a_version(node.slice):
            found.append(node.lineno)
        elif isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if {3, 4} <= keys:
                found.append(node.lineno)
    return sorted(set(found))


def test_only_the_profile_and_the_wire_codecs_compare_engine_versions() -> None:
    assert len(MAY_COMPARE) <= 5
    comparing = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = version_comparisons(path.read_text(encoding="utf-8"))
        if lines:
            comparing[path.relative_to(ROOT).as_posix()] = lines
    assert set(comparing) - MAY_COMPARE == set(), comparing
    assert "godot_mcp/engine/profile.py" in comparing  # the reader finds what is there


@pytest.mark.parametrize(
    "source",
    [
        "if self.major < 4:\n    pass",
        "flags = ['--headless'] if major >= 4 else []",
        "x = (install.headless_major or 3) >= 4",
        "ok = godot_major == 4 and family == 'desktop'",
        "old = number < (3, 5)",
        "if minor <= 2:\n    pass",
        "newer = (int(a.group(1)), int(a.group(2))) <= (int(b.group(1)), int(b.group(2)))",
        "late = max(m for m in majors if m is not None) < 4",
        "name = _SCRIPT[self.major]",
        "flags = _FLAGS[runner.godot_major][kind]",
        "_BRIDGES = {3: 'bridge3.gd', 4: 'bridge4.gd'}",
        "three = major_minor(version) < (3, 5)",
    ],
)
def test_the_reader_finds_a_comparison_of_versions(source: str) -> None:
    assert version_comparisons(source) == [1]


@pytest.mark.parametrize(
    "source",
    [
        "if install.major is not None:\n    pass",
        "if len(m.args) > 2 and m.args[2] is True:\n    pass",
        "flags = list(engine.headless_flags)",
        "if not debugger.engine.can_evaluate:\n    pass",
        "sizes = {1: 'a', 2: 'b'}",
        "if version == '3.2':\n    pass",  # a version as text: the reader looks for numbers
    ],
)
def test_the_reader_leaves_other_comparisons_alone(source: str) -> None:
    assert version_comparisons(source) == []


@pytest.mark.parametrize(
    ("version", "line"),
    [
        ("3.2.3.stable.custom_build", GODOT_3_2),
        ("3.1.stable", GODOT_3_2),
        ("3.3.4.stable", GODOT_3_3),
        ("3.4.5.stable.official", GODOT_3_3),
        ("3.5.stable.official", GODOT_3_5),
        ("3.6.2.stable.debian3.6.2+ds-1+b1", GODOT_3_5),
        ("4.0.stable", GODOT_4_0),
        ("4.3.stable.mono.official.77dcf97d8", GODOT_4_0),
        ("4.4.stable", GODOT_4),
        ("4.6.3.stable.debian4.6.3+ds-3", GODOT_4),
        ("4.10.1.stable", GODOT_4),
        ("5.0.stable", GODOT_4),  # a later engine: the newest line known
        (None, GODOT_3),
        ("", GODOT_3),
        ("garbage", GODOT_3),
    ],
)
def test_a_version_gives_its_line(version: str | None, line: EngineProfile) -> None:
    assert profile_of(version) is line


def test_numbers_give_their_line() -> None:
    assert profile_of(3) is GODOT_3 and profile_of(4) is GODOT_4
    assert profile_of(3, 2) is GODOT_3_2 and profile_of(3, 4) is GODOT_3_3
    assert profile_of(3, 6) is GODOT_3_5 and profile_of(4, 3) is GODOT_4_0
    assert profile_of(4, 6) is GODOT_4
    for major in (2, 5):
        with pytest.raises(ValueError, match=f"unsupported Godot major version {major}"):
            profile_of(major)


def _differences(a: EngineProfile, b: EngineProfile) -> set[str]:
    return {
        f.name
        for f in dataclasses.fields(EngineProfile)
        if getattr(a, f.name) != getattr(b, f.name)
    }


def test_the_lines_of_one_major_differ_only_where_their_engines_do() -> None:
    for line in (GODOT_3_2, GODOT_3_3, GODOT_3_5):
        assert _differences(line, GODOT_3) <= {
            "name",
            "imports",
            "unnamed_user_dir_in_project",
            "key_codes",
        }
    assert _differences(GODOT_4_0, GODOT_4) == {"name", "windowed_flags"}
    assert GODOT_4_0.windowed_flags == ("--rendering-driver", "opengl3")
    assert [line.unnamed_user_dir_in_project for line in LINES] == [
        False,
        True,
        True,
        False,
        False,
        False,
    ]
    assert len({line.name for line in LINES}) == len(LINES)


def test_a_key_of_the_input_map_matches_by_its_engines_own_codes() -> None:
    assert [line.key_codes for line in LINES] == [
        ("scancode", "physical_scancode"),
        ("scancode",),  # physical_scancode is 3.3's
        ("scancode", "physical_scancode"),
        ("scancode", "physical_scancode"),
        ("keycode", "physical_keycode", "key_label"),
        ("keycode", "physical_keycode", "key_label"),
    ]


def test_godot_3_imports_svgz_before_3_3_and_mp3_from_it() -> None:
    assert "svgz" in GODOT_3_2.imports and "mp3" not in GODOT_3_2.imports
    for line in (GODOT_3_3, GODOT_3_5):
        assert "mp3" in line.imports and "svgz" not in line.imports
    for line in (GODOT_3, GODOT_3_2, GODOT_3_3, GODOT_3_5):
        assert line.major_imports == GODOT_3.imports == GODOT_3_2.imports | GODOT_3_5.imports
    assert GODOT_4.major_imports == GODOT_4.imports >= {"ttf", "glsl", "mp3", "png"}
    assert not GODOT_3.imports & {"ttf", "glsl"}


def test_godot_3_and_godot_4_as_the_server_drives_them() -> None:
    three, four = GODOT_3_5, GODOT_4
    assert (three.major, four.major) == (3, 4)
    assert (three.headless_flags, four.headless_flags) == ((), ("--headless",))
    assert (three.script("bridge"), four.script("check")) == ("bridge3.gd", "check4.gd")
    assert three.remote_debug("127.0.0.1:6007") == "127.0.0.1:6007"
    assert four.remote_debug("127.0.0.1:6007") == "tcp://127.0.0.1:6007"
    assert three.reads_args_after_dashes and not four.reads_args_after_dashes
    debugger = (
        "can_evaluate",
        "steps_out",
        "reloads_named_scripts",
        "logs_errors_when_debugged",
        "enter_says_stack",
        "flat_stack",
        "variables_one_by_one",
        "servers_profiler",
    )
    assert not any(getattr(three, name) for name in debugger)
    assert all(getattr(four, name) for name in debugger)
    assert (three.import_folder, three.import_records) == (".import/", ".import")
    assert (four.import_folder, four.import_records) == (".godot/", ".godot/imported")
    assert (three.import_flags, four.import_flags) == (("--editor",), ("--headless", "--import"))
    assert not three.import_exits and four.import_exits
    assert not three.class_names_need_import and four.class_names_need_import
    assert not three.runs_gdunit4 and four.runs_gdunit4
    assert not three.imports_before_tests and four.imports_before_tests
    for line in LINES:
        assert set(line.export_flags) == set(KINDS)
        assert set(line.platform_names) == set(PLATFORMS)
    assert three.export_flags["release"] == ("--export",)
    assert four.export_flags["release"] == ("--headless", "--export-release")
    assert (three.platform_names["linux"], four.platform_names["linux"]) == ("Linux/X11", "Linux")
    assert ("script_export_mode", "1") in three.preset_keys
    assert ("dedicated_server", "false") in four.preset_keys
    assert not three.console_wrapper and four.console_wrapper


def test_a_project_saved_by_a_newer_engine() -> None:
    assert saved_by_newer((4, 7), (4, 6)) and saved_by_newer((4, 0), (3, 6))
    assert not saved_by_newer((4, 6), (4, 6)) and not saved_by_newer((3, 6), (4, 0))
