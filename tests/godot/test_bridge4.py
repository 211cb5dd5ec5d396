"""bridge4.gd, the Godot 4 bridge, checked as far as a machine without Godot 4 can check it.

No Godot 4 runs here, so nothing executes the script. What is checked instead: it parses as
Godot 4 GDScript (gdtoolkit's parser); it handles every command bridge3.gd handles, so the one
protocol cannot drift between the two; it names no Godot 3-only API; it is typed throughout, so a
project that sets GDScript's typing warnings to Error still loads it; and its error words are the
protocol's. The Godot 4 API it does use is checked against the class reference in docs/godot.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gdtoolkit.parser import parser

GODOT_DIR = Path(__file__).resolve().parents[2] / "godot_mcp" / "features" / "game"
BRIDGE4 = GODOT_DIR / "bridge4.gd"
BRIDGE3 = GODOT_DIR / "bridge3.gd"

# The commands of the interface (§5): each bridge handles at least these.
PROTOCOL = {"quit", "ping", "screenshot", "record", "tree", "time", "input", "get", "set", "call"}
OUTCOMES = {"invalid_argument", "not_found", "unavailable", "failed", "timeout"}


def _code(text: str) -> str:
    """The script without its comments (string literals are kept as they are)."""
    out = []
    for line in text.splitlines():
        quote = ""
        cut = len(line)
        i = 0
        while i < len(line):
            ch = line[i]
            if quote:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == "#":
                cut = i
                break
            i += 1
        out.append(line[:cut].rstrip())
    return "\n".join(out)


def _function(text: str, name: str) -> str:
    match = re.search(rf"^func {re.escape(name)}\(.*?(?=^func |\Z)", text, re.S | re.M)
    assert match, f"no func {name} in the script"
    return match.group(0)


def _commands(path: Path) -> set[str]:
    body = _function(_code(path.read_text(encoding="utf-8")), "_handle")
    return set(re.findall(r'\bname == "([a-z_]+)"', body))


@pytest.fixture(scope="module")
def source() -> str:
    return BRIDGE4.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def code(source: str) -> str:
    return _code(source)


def test_bridge4_parses_as_godot4_gdscript(source: str) -> None:
    tree = parser.parse(source)
    assert tree.data == "start"
    functions = {
        str(node.children[0].children[0])
        for node in tree.find_data("func_def")
        if node.children and node.children[0].children
    }
    assert {"_initialize", "_process", "_handle"} <= functions, functions


def test_bridge4_handles_every_command_bridge3_handles() -> None:
    godot3 = _commands(BRIDGE3)
    godot4 = _commands(BRIDGE4)
    assert godot3, "no commands found in bridge3.gd's _handle"
    assert godot3 <= godot4, f"bridge4.gd lacks {sorted(godot3 - godot4)}"
    assert godot4 <= godot3 | PROTOCOL, f"bridge4.gd only: {sorted(godot4 - godot3 - PROTOCOL)}"
    assert godot4 >= PROTOCOL, f"bridge4.gd lacks {sorted(PROTOCOL - godot4)}"


# Godot 3 names that do not exist (or mean something else) in Godot 4.
GODOT3_ONLY = [
    r"\bget_idle_frames\b",
    r"\bchange_scene\(",
    r"\bVisualServer\b",
    r"\bfind_scancode_from_string\b",
    r"scancode",
    r"\bPool(Byte|Int|Real|String|Vector2|Vector3|Color)Array\b",
    r"\bto_json\(",
    r"\bparse_json\(",
    r"\bJSON\.parse\(",
    r"\bJSON\.print\(",
    r"get_texture\(\)\.get_data\(",
    r"\btexture\.get_data\(",
    r"\bQuat\(",
    r"\bTransform\(",
    r"\bTYPE_(REAL|QUAT|TRANSFORM|RECT3|INT_ARRAY|REAL_ARRAY|STRING_ARRAY|RAW_ARRAY)\b",
    r"\bOS\.get_ticks_(msec|usec)\b",
    r"\bOS\.can_draw\b",
    r"\bEngine\.target_fps\b",
    r"\bis_abs_path\b",
    r"\.empty\(\)",
    r"\bord_at\b",
    r"\bsubarray\(",
    r"\.to_utf8\(\)",
    r"\bdoubleclick\b",
    r"(?<!MOUSE_)\bBUTTON_(LEFT|RIGHT|MIDDLE|WHEEL_UP|WHEEL_DOWN)\b",
    r"\.(shift|control|alt|meta)\s*=",
    r"\bfunc _idle\(",
    r"\bfunc _iteration\(",
    r'\.connect\("',
    r'\.is_connected\("',
    r'\.disconnect\("',
    r"\byield\(",
    r"\.instance\(\)",
    r"\bReference\b",
    r"\bfuncref\(",
    r"\bstr2var\(|\bvar2str\(",
    r"\bexport\b(?!_)",
    r"\bonready\b",
]


@pytest.mark.parametrize("pattern", GODOT3_ONLY)
def test_bridge4_uses_no_godot3_only_api(code: str, pattern: str) -> None:
    found = [line.strip() for line in code.splitlines() if re.search(pattern, line)]
    assert not found, f"{pattern} in bridge4.gd: {found}"


def typing_problems(code: str) -> list[tuple[object, str, str]]:
    """What a project that sets untyped_declaration, inferred_declaration or
    inference_on_variant to Error would refuse: `:=`, an untyped var/const, parameter or
    return type, and `for` (its iterator cannot be typed before Godot 4.2)."""
    problems: list[tuple[object, str, str]] = []
    for number, line in enumerate(code.splitlines(), 1):
        stripped = line.strip()
        if ":=" in stripped:
            problems.append((number, "inferred with :=", stripped))
        if re.match(r"(var|const)\s+\w+\s*(=|$)", stripped):
            problems.append((number, "untyped declaration", stripped))
        if re.match(r"for\s", stripped):
            problems.append((number, "for loop", stripped))
    for match in re.finditer(r"^\s*func (\w+)\((.*?)\)(.*?):\s*$", code, re.M | re.S):
        name, params, tail = match.groups()
        if "->" not in tail:
            problems.append((name, "no return type", tail))
        for param in filter(None, (p.strip() for p in params.split(","))):
            if not re.match(r"\w+\s*:\s*\w", param):
                problems.append((name, "untyped parameter", param))
    return problems


def test_bridge4_is_typed_throughout(code: str) -> None:
    """A project whose typing warnings are errors must still load the bridge."""
    assert not typing_problems(code)


def test_bridge4_casts_no_variant_and_ignores_no_warning(code: str) -> None:
    # `as` on a Variant is an unsafe cast; a @warning_ignore naming a warning older versions do
    # not know is itself an error there.
    assert not re.search(r"\bas\s+[A-Z]\w*", code)
    assert "@warning_ignore" not in code


def test_bridge4_answers_with_the_protocol_outcomes(code: str) -> None:
    words = set(re.findall(r'_fail\(\w+, "(\w+)"', code))
    words |= set(re.findall(r'"error": "(\w+)"', code))
    assert words, "no outcomes found"
    assert words <= OUTCOMES, sorted(words - OUTCOMES)


def test_bridge4_stops_reading_once_closing(code: str) -> None:
    body = _function(code, "_read_commands")
    assert re.search(r'while _phase != "closing"', body), body
    assert re.search(r'if _phase == "closing":\s*\n\s*return false', _function(code, "_process"))


def test_bridge4_forces_a_draw_for_screenshots_and_converts_hdr(code: str) -> None:
    assert "RenderingServer.force_draw(" in _function(code, "_begin_capture")
    capture = _function(code, "_on_frame_post_draw")
    assert "_linear_to_srgb(image)" in capture
    convert = _function(code, "_linear_to_srgb")
    assert convert.index("FORMAT_RGBA8") < convert.index('"linear_to_srgb"')


def test_bridge4_lists_internal_children(code: str) -> None:
    body = _function(code, "_cmd_tree")
    assert "get_child_count(true)" in body
    assert "get_child(i, true)" in body
