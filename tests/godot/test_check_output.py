"""The check's output reader: Godot 3 and Godot 4 error formats, noise, each problem once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gdtoolkit.parser import parser

from godot_mcp.engine.project import tree
from godot_mcp.features.check import job as check
from tests.godot.test_bridge4 import GODOT3_ONLY, _code, typing_problems

M = "@@godot-mcp-check-0123456789abcdef"
KNOWN = frozenset({"res://a.gd", "res://s.tscn", "res://icon.png", "res://t.tscn"})


def read(
    text: str, known: frozenset[str] = KNOWN, expected: list[str] | None = None
) -> check.OutputReader:
    """Feed ``text``; the files Godot was given are the ones it begins, unless told."""
    if expected is None:
        begun = [ln.split(" BEGIN ", 1)[1] for ln in text.splitlines() if f"{M} BEGIN " in ln]
        expected = list(dict.fromkeys(begun))
    reader = check.OutputReader(M, known, expected=expected)
    for line in text.splitlines():
        reader.feed(line)
    return reader


def found(reader: check.OutputReader) -> list[tuple[str, str, int | None, str]]:
    return [(p.kind, p.path, p.line, p.message) for p in reader.problems]


GODOT3 = f"""\
ERROR: make_dir_recursive: Method failed. Returning: err
   At: core/os/dir_access.cpp:185.
ERROR: get_language_code: Invalid locale 'C'.
   At: core/translation.cpp:945.
SCRIPT ERROR: GDScript::reload: Parse Error: autoload noise before the check
   At: res://a.gd:1.
{M} START 3
{M} BEGIN res://a.gd
SCRIPT ERROR: GDScript::reload: Parse Error: The identifier "x" isn't declared in the current scope.
   At: res://a.gd:7.
ERROR: reload: Method failed. Returning: ERR_PARSE_ERROR
   At: modules/gdscript/gdscript.cpp:599.
{M} END failed res://a.gd
{M} BEGIN res://s.tscn
ERROR: load_source_code: Condition "err" is true. Returned: err
   At: modules/gdscript/gdscript.cpp:829.
ERROR: load: Cannot load source code from file 'res://gone.gd'.
   At: modules/gdscript/gdscript.cpp:2286.
ERROR: poll: res://s.tscn:3 - Parse Error: [ext_resource] referenced nonexistent resource at: res://gone.gd
   At: scene/resources/resource_format_text.cpp:440.
ERROR: load: Failed to load resource 'res://s.tscn'.
   At: core/io/resource_loader.cpp:208.
{M} END failed res://s.tscn
{M} BEGIN res://t.tscn
SCRIPT ERROR: GDScript::reload: Parse Error: The identifier "x" isn't declared in the current scope.
   At: res://a.gd:7.
{M} END ok res://t.tscn
{M} DONE
"""

GODOT4 = f"""\
\x1b[1;31mERROR:\x1b[0;91m Invalid locale 'C'.\x1b[0m
{M} START 3
{M} BEGIN res://a.gd
SCRIPT ERROR: Parse Error: Identifier "x" not declared in the current scope.
          at: GDScript::reload (res://a.gd:7)
ERROR: Failed to load script "res://a.gd" with error "Parse error".
   at: load (modules/gdscript/gdscript.cpp:2907)
{M} END failed res://a.gd
{M} BEGIN res://s.tscn
ERROR: Resource file not found: res://icon.png (expected type: Texture2D)
\x1b[1;31mERROR:\x1b[0;91m res://s.tscn:13 - Parse Error: [ext_resource] referenced \
non-existent resource at: res://icon.png.\x1b[0m
{M} END failed res://s.tscn
{M} BEGIN res://t.tscn
SCRIPT ERROR: Compile Error: Failed to compile depended scripts.
          at: GDScript::reload (res://t.gd:0)
ERROR: res://t.tscn:4 - Parse Error: [ext_resource] referenced non-existent resource at: res://gone.gd.
{M} END failed res://t.tscn
{M} DONE
"""


def test_godot3_output():
    reader = read(GODOT3)
    assert found(reader) == [
        ("parse", "res://a.gd", 7, 'The identifier "x" isn\'t declared in the current scope.'),
        ("missing_dependency", "res://s.tscn", 3, "missing file: res://gone.gd"),
    ]
    assert reader.done == 3 and reader.finished


def test_godot4_output():
    reader = read(GODOT4)
    assert found(reader) == [
        ("parse", "res://a.gd", 7, 'Identifier "x" not declared in the current scope.'),
        (
            "load",
            "res://s.tscn",
            13,
            "res://icon.png exists but does not load (is the project imported?)",
        ),
        ("missing_dependency", "res://t.tscn", 4, "missing file: res://gone.gd"),
    ]
    assert reader.done == 3 and reader.finished


def test_a_failed_load_with_no_known_error_is_a_load_problem_with_its_first_error():
    reader = read(
        f"{M} BEGIN res://s.tscn\n"
        'ERROR: get_dependencies: Condition "error != OK" is true.\n'
        "ERROR: _load: Failed loading resource: res://s.tscn. Make sure resources have been "
        "imported by opening the project in the editor at least once.\n"
        f"{M} END failed res://s.tscn\n"
        f"{M} BEGIN res://a.gd\n"
        f"{M} END failed res://a.gd\n"
    )
    assert found(reader) == [
        (
            "load",
            "res://s.tscn",
            None,
            "Failed loading resource: res://s.tscn. Make sure resources have been imported by "
            "opening the project in the editor at least once.",
        ),
        ("load", "res://a.gd", None, "Godot could not load it"),
    ]
    assert not reader.finished  # no DONE: the run did not complete


def test_a_script_error_without_its_place_is_the_current_files():
    reader = read(
        f"{M} BEGIN res://a.gd\nSCRIPT ERROR: Parse Error: broken\n{M} END failed res://a.gd\n"
    )
    assert found(reader) == [("parse", "res://a.gd", None, "broken")]


def test_a_script_error_while_a_file_loads_is_its_load_problem():
    """Godot 4.6.3 runs a resource's script ``_init`` while loading it: infinite recursion
    there is a script error (Godot 3.2.3 crashes instead); Godot 3 names the function."""
    known = KNOWN | {"res://deep.tres", "res://rec.gd"}
    reader = read(
        f"{M} BEGIN res://deep.tres\n"
        "SCRIPT ERROR: Stack overflow. Check for infinite recursion in your script.\n"
        "          at: _init (res://rec.gd:3)\n"
        "          GDScript backtrace (most recent call first):\n"
        "              [0] _init (res://rec.gd:4)\n"
        "ERROR: Stack underflow! (Engine Bug)\n"
        "   at: exit_function (modules/gdscript/gdscript.h:530)\n"
        f"{M} END ok res://deep.tres\n"
        f"{M} BEGIN res://s.tscn\n"
        "SCRIPT ERROR: _init: Invalid get index 'x' (on base: 'Nil').\n"
        "   At: res://a.gd:4.\n"
        f"{M} END ok res://s.tscn\n",
        known,
    )
    assert found(reader) == [
        (
            "load",
            "res://deep.tres",
            None,
            "Stack overflow. Check for infinite recursion in your script (at res://rec.gd:3)",
        ),
        ("load", "res://s.tscn", None, "Invalid get index 'x' (on base: 'Nil') (at res://a.gd:4)"),
    ]


def test_godot4s_two_lines_for_an_unimported_texture_are_one_problem():
    reader = read(
        f"{M} BEGIN res://s.tscn\n"
        "ERROR: Failed loading resource: res://.godot/imported/imp.png-0123.ctex.\n"
        "ERROR: res://s.tscn:6 - Parse Error: [ext_resource] referenced non-existent resource "
        "at: res://icon.png.\n"
        f"{M} END failed res://s.tscn\n"
    )
    assert found(reader) == [
        (
            "load",
            "res://s.tscn",
            None,
            "Godot could not load res://.godot/imported/imp.png-0123.ctex "
            "(is the project imported?)",
        )
    ]


def test_forged_markers_need_the_nonce_and_messages_are_redacted_and_bounded():
    reader = check.OutputReader(
        M, KNOWN, lambda s: s.replace("/secret/dir", "<scratch>"), expected=["res://a.gd"]
    )
    for line in (
        "@@godot-mcp-check-ffff BEGIN res://a.gd",
        f"{M} BEGIN res://a.gd",
        "SCRIPT ERROR: Parse Error: cannot open /secret/dir/x " + "y" * 5000,
        "   At: res://a.gd:2.",
        f"{M} END failed res://a.gd",
    ):
        reader.feed(line)
    (problem,) = reader.problems
    assert problem.message.startswith("cannot open <scratch>/x yyy")
    assert len(problem.message) == check.MAX_MESSAGE


def _plan(files: list[str]) -> tree.Plan:
    p = tree.Plan(root=Path("/nonexistent"))
    dirs = sorted({"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 1)})
    p.entries = [tree.Entry(d, d, True) for d in dirs] + [tree.Entry(f, f, False) for f in files]
    return p


def test_select_orders_scripts_first_and_leaves_out_caches_and_ignored_folders():
    plan = _plan(
        [
            "main.tscn",
            "b.gd",
            "a.gd",
            "data/x.tres",
            ".import/icon.png-1.stex",
            ".import/evil.gd",
            "addons/tool/t.gd",
            "raw/.gdignore",
            "raw/skip.gd",
            "icon.png",
            "bad\nname.gd",
        ]
    )
    assert check.select(plan, None) == [
        "res://a.gd",
        "res://addons/tool/t.gd",
        "res://b.gd",
        "res://data/x.tres",
        "res://main.tscn",
    ]
    assert check.select(plan, ["res://addons/", "res://main.tscn"]) == [
        "res://addons/tool/t.gd",
        "res://main.tscn",
    ]
    assert check.select(plan, ["res://"]) == check.select(plan, None)
    assert check.select(plan, ["res://raw"]) == []


CHECK4 = Path(check.__file__).parent / "check4.gd"


def test_the_godot4_check_script_parses_is_typed_and_names_no_godot3_api():
    """check4.gd is held to bridge4.gd's rules in the fast lane (it runs in the Godot 4 lane)."""
    source = CHECK4.read_text(encoding="utf-8")
    assert parser.parse(source).data == "start"
    code = _code(source)
    assert not typing_problems(code)
    assert not re.search(r"\bas\s+[A-Z]\w*", code) and "@warning_ignore" not in code
    used = [p for p in GODOT3_ONLY if re.search(p, code)]
    assert not used, used
    godot3 = _code((CHECK4.parent / "check3.gd").read_text(encoding="utf-8"))
    for word in ("START", "BEGIN", "END ok", "END failed", "DONE", "FATAL", "__LIST__"):
        assert word in code and word in godot3, word


def test_marker_lines_count_only_for_the_file_godot_was_given_next():
    reader = read(
        f"{M} BEGIN res://a.gd\n"
        f"{M} END ok res://a.gd\n"
        f"{M} BEGIN /etc/shadow\n"  # forged by project code: not a file of the list
        "ERROR: poll: /etc/shadow:1 - Parse Error: root:x:0:0\n"
        f"{M} END failed /etc/shadow\n"
        f"{M} DONE\n"  # forged before s.tscn was loaded: not the end
        f"{M} BEGIN res://s.tscn\n"
        f"{M} END failed res://a.gd\n"  # not the file being loaded
        "ERROR: poll: res://s.tscn:2 - Parse Error: real\n"
        f"{M} END failed res://s.tscn\n",
        expected=["res://a.gd", "res://s.tscn"],
    )
    assert found(reader) == [("load", "res://s.tscn", 2, "real")]
    assert reader.done == 2 and not reader.finished
    reader.feed(f"{M} DONE")
    assert reader.finished


def test_a_file_reported_under_another_of_its_names_is_reported_under_its_own():
    reader = check.OutputReader(
        M,
        KNOWN | {"res://real/b.gd"},
        expected=["res://t.tscn"],
        aliases={"res://alias/b.gd": "res://real/b.gd"},
    )
    for line in (
        f"{M} BEGIN res://t.tscn",
        "SCRIPT ERROR: GDScript::reload: Parse Error: broken",
        "   At: res://alias/b.gd:4.",
        "SCRIPT ERROR: GDScript::reload: Parse Error: broken",
        "   At: res://real/b.gd:4.",
        f"{M} END ok res://t.tscn",
    ):
        reader.feed(line)
    assert found(reader) == [("parse", "res://real/b.gd", 4, "broken")]


def test_places_outside_the_project_belong_to_the_file_being_loaded():
    reader = read(
        "SCRIPT ERROR: Parse Error: before any file\n   At: res:///state/x.gd:1.\n"
        f"{M} BEGIN res://a.gd\n"
        "SCRIPT ERROR: Parse Error: forged\n   At: res:///var/state/scratch/check.gd:1.\n"
        "ERROR: poll: res:///var/state/list.txt:2 - Parse Error: forged too\n"
        f"{M} END ok res://a.gd\n"
        f"{M} MISSING res:///var/state/x.tscn res://gone.png\n"
    )
    assert found(reader) == [
        ("parse", "res://a.gd", 1, "forged"),
        ("load", "res://a.gd", 2, "forged too"),
    ]


def test_problems_past_the_bound_are_counted_not_kept():
    text = [f"{M} BEGIN res://s.tscn"]
    text += [f"ERROR: poll: res://s.tscn:{n} - Parse Error: x" for n in range(1, 1501)]
    reader = read("\n".join(text))
    assert len(reader.problems) == check.MAX_PROBLEMS and reader.more == 500


def test_dependencies_missing_unimported_or_broken_in_their_own_right():
    known = KNOWN | {"res://b.tscn", "res://project.godot"}
    reader = read(
        f"{M} BEGIN res://s.tscn\n"
        f"{M} MISSING res://s.tscn res://gone.png\n"
        f"{M} MISSING res://s.tscn res://icon.png\n"
        f"{M} END ok res://s.tscn\n"
        f"{M} BEGIN res://t.tscn\n"
        "ERROR: poll: res://t.tscn:4 - Parse Error: [ext_resource] referenced nonexistent "
        "resource at: res://b.tscn\n"
        "ERROR: poll: res://t.tscn:5 - Parse Error: [ext_resource] referenced nonexistent "
        "resource at: res://a.gd\n"
        "ERROR: _load: Failed loading resource: res://.import/i.png-0123.stex. Make sure "
        "resources have been imported by opening the project in the editor at least once.\n"
        f"{M} END failed res://t.tscn\n"
        f"{M} BEGIN res://b.tscn\n"
        "ERROR: poll: res://b.tscn:3 - Parse Error: [ext_resource] referenced nonexistent "
        "resource at: res://gone.gd\n"
        f"{M} END failed res://b.tscn\n"
        f"{M} MISSING res://project.godot res://gone_global.gd\n"
        f"{M} DONE\n",
        known,
    )
    reader.finish()
    assert found(reader) == [
        ("missing_dependency", "res://s.tscn", None, "missing file: res://gone.png"),
        (
            "load",
            "res://s.tscn",
            None,
            "res://icon.png exists but does not load (is the project imported?)",
        ),
        (
            "load",
            "res://t.tscn",
            None,
            "Godot could not load res://.import/i.png-0123.stex (is the project imported?)",
        ),
        ("missing_dependency", "res://b.tscn", 3, "missing file: res://gone.gd"),
        ("missing_dependency", "res://project.godot", None, "missing file: res://gone_global.gd"),
        # b.tscn's own problem explains t.tscn's; a.gd has none of its own, so it is said
        ("load", "res://t.tscn", 5, "res://a.gd does not load"),
    ]


def test_a_file_name_holding_the_error_pattern_is_read_as_the_current_file():
    name = "res://x:1 - Parse Error: y.tscn"
    reader = read(
        f"{M} BEGIN {name}\n"
        f"ERROR: poll: {name}:3 - Parse Error: [ext_resource] referenced nonexistent "
        "resource at: res://nope.gd\n"
        f"{M} END failed {name}\n",
        KNOWN | {name},
    )
    assert found(reader) == [("missing_dependency", name, 3, "missing file: res://nope.gd")]


def test_one_file_under_many_names_is_checked_once_and_refusals_say_why():
    p = _plan(["sub/b.gd", "sub/s.tscn", ".hidden/h.gd", "tab\tx.gd", "ign/.gdignore", "ign/x.gd"])
    p.entries += [
        tree.Entry("alias.gd", "sub/b.gd", False),
        tree.Entry("linked", "sub", True),
        tree.Entry("linked/b.gd", "sub/b.gd", False),
        tree.Entry("linked/s.tscn", "sub/s.tscn", False),
    ]
    assert check.select(p, None) == ["res://sub/b.gd", "res://sub/s.tscn"]
    assert check.select(p, ["res://alias.gd", "res://linked"]) == [
        "res://sub/b.gd",
        "res://sub/s.tscn",
    ]
    for given, why in (
        ("res://.hidden/h.gd", "Godot leaves hidden files and folders out"),
        ("res://tab\tx.gd", "its name holds control characters"),
        ("res://ign/x.gd", "its folder holds a .gdignore"),
    ):
        with pytest.raises(check.BadPaths) as caught:
            check.select(p, [given])
        assert caught.value.message.endswith(why), caught.value.message
    for given in ("res:///sub", "res://sub//b.gd", "res://sub/./b.gd"):
        with pytest.raises(check.BadPaths):
            check.select(p, [given])
