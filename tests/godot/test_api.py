"""The class reference reader, on small samples of both engines' XML: no Godot runs."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from godot_mcp.engine.profile import profile_of
from godot_mcp.errors import GodotMcpError, InvalidArgument, NotFound
from godot_mcp.features.api import reference as api

GODOT3_CONTROL = """<?xml version="1.0" encoding="UTF-8" ?>
<class name="Control" inherits="CanvasItem" version="3.2">
\t<brief_description>
\t\tAll user interface nodes inherit from Control.
\t</brief_description>
\t<description>
\t</description>
\t<methods>
\t\t<method name="get_font" qualifiers="const">
\t\t\t<return type="Font">
\t\t\t</return>
\t\t\t<argument index="0" name="name" type="String">
\t\t\t</argument>
\t\t\t<argument index="1" name="type" type="String" default="&quot;&quot;">
\t\t\t</argument>
\t\t\t<description>
\t\t\t\tReturns a [Font] from assigned [Theme] with given [code]name[/code].
\t\t\t\tSecond paragraph.
\t\t\t</description>
\t\t</method>
\t</methods>
\t<members>
\t\t<member name="margin_left" type="float" setter="set_margin" getter="get_margin" default="0.0">
\t\t\tDistance to the parent, based on [member anchor_left].
\t\t</member>
\t\t<member name="anchor_left" type="float" setter="set_anchor" getter="get_anchor" default="0.0">
\t\t</member>
\t\t<member name="mouse_filter" type="int" enum="Control.MouseFilter" default="0">
\t\t</member>
\t</members>
\t<signals>
\t\t<signal name="gui_input">
\t\t\t<argument index="0" name="event" type="InputEvent">
\t\t\t</argument>
\t\t\t<description>
\t\t\t\tEmitted when the node receives an [InputEvent].
\t\t\t</description>
\t\t</signal>
\t</signals>
\t<constants>
\t\t<constant name="MOUSE_FILTER_STOP" value="0" enum="MouseFilter">
\t\t</constant>
\t</constants>
</class>
"""
GODOT3_LABEL = """<?xml version="1.0" encoding="UTF-8" ?>
<class name="Label" inherits="Control" version="3.2">
\t<brief_description>
\t</brief_description>
\t<members>
\t\t<member name="text" type="String" setter="set_text" getter="get_text" default="&quot;&quot;">
\t\t</member>
\t</members>
\t<theme_items>
\t\t<theme_item name="font_color" type="Color" default="Color( 1, 1, 1, 1 )">
\t\t</theme_item>
\t</theme_items>
</class>
"""
GODOT4_NODE = """<?xml version="1.0" encoding="UTF-8" ?>
<class name="Node" inherits="Object" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
\t<brief_description>
\t</brief_description>
\t<methods>
\t\t<method name="add_child">
\t\t\t<return type="void" />
\t\t\t<param index="1" name="force_readable_name" type="bool" default="false" />
\t\t\t<param index="0" name="node" type="Node" />
\t\t\t<param index="2" name="internal" type="int" enum="Node.InternalMode" default="0" />
\t\t\t<description>
\t\t\t</description>
\t\t</method>
\t\t<method name="rpc" qualifiers="vararg">
\t\t\t<return type="int" enum="Error" />
\t\t\t<param index="0" name="method" type="StringName" />
\t\t\t<description>
\t\t\t</description>
\t\t</method>
\t</methods>
</class>
"""


def reference(tmp_path: Path) -> api.ApiIndex:
    classes = tmp_path / "doc" / "classes"
    classes.mkdir(parents=True)
    (classes / "Control.xml").write_text(GODOT3_CONTROL)
    (classes / "Label.xml").write_text(GODOT3_LABEL)
    (classes / "Node.xml").write_text(GODOT4_NODE)
    return api.ApiIndex(tmp_path, "Godot 3.2.3")


def test_signatures_are_written_as_the_reference_writes_them(tmp_path):
    index = reference(tmp_path)
    control = index.get("Control")
    assert (
        control.find("get_font").signature == 'Font get_font(name: String, type: String = "") const'
    )
    assert control.find("margin_left").signature == "margin_left: float = 0.0"
    assert control.find("mouse_filter").signature == "mouse_filter: Control.MouseFilter = 0"
    assert control.find("gui_input").signature == "gui_input(event: InputEvent)"
    assert control.find("MOUSE_FILTER_STOP").signature == "MouseFilter.MOUSE_FILTER_STOP = 0"
    assert index.get("Label").find("font_color").signature == (
        "font_color: Color = Color( 1, 1, 1, 1 )"
    )
    node = index.get("Node")
    assert node.find("add_child").signature == (
        "void add_child(node: Node, force_readable_name: bool = false, "
        "internal: Node.InternalMode = 0)"
    )
    assert node.find("rpc").signature == "Error rpc(method: StringName, ...) vararg"


def test_descriptions_are_the_first_paragraph_in_plain_text(tmp_path):
    control = reference(tmp_path).get("Control")
    assert control.description == "All user interface nodes inherit from Control."
    assert control.find("get_font").description == (
        "Returns a Font from assigned Theme with given name."
    )
    assert (
        control.find("margin_left").description == "Distance to the parent, based on anchor_left."
    )
    assert control.find("anchor_left").description is None  # the engine has none


def test_members_are_found_along_the_inheritance_chain(tmp_path):
    answer = reference(tmp_path).lookup("Label", "margin_left")
    assert answer["inherits"] == ["Control"]  # CanvasItem is not in this sample: the chain ends
    assert answer["member"]["defined_in"] == "Control"
    assert answer["member"]["kind"] == "property"
    own = reference(tmp_path / "again").lookup("Label")
    assert own["members"] == {
        "methods": [],
        "properties": ["text"],
        "signals": [],
        "constants": [],
        "theme_items": ["font_color"],
    }


def test_an_unknown_member_names_close_names_of_the_whole_chain(tmp_path):
    with pytest.raises(NotFound) as caught:
        reference(tmp_path).lookup("Label", "offset_left")
    near = caught.value.details["close_names"]
    assert "margin_left" in near and "anchor_left" in near
    assert "did you mean" in caught.value.message
    with pytest.raises(NotFound) as caught:
        reference(tmp_path / "b").lookup("Lable")
    assert caught.value.details["close_names"][0] == "Label"


@pytest.mark.parametrize(
    ("name", "near"),
    [
        ("offset_left", "margin_left"),
        ("margin_left", "offset_left"),
        ("TEXT", "text"),
        ("get_fnt", "get_font"),
        ("Lable", "Label"),
    ],
)
def test_close_names(name, near):
    pool = ["margin_left", "offset_left", "text", "get_font", "Label", "PRESET_TOP_LEFT", "set"]
    assert near in api.close_names(name, pool)
    assert len(api.close_names("x", [f"x{i}" for i in range(50)])) <= 5


@pytest.mark.parametrize("bad", ["", "a b", "../etc", "x" * 129, "Label;", "1abc", "Label\n"])
def test_bad_names_are_refused(bad):
    with pytest.raises(InvalidArgument):
        api.check_class(bad)


def test_the_compiled_reference_is_read_from_the_binary(tmp_path):
    docs = GODOT3_CONTROL + GODOT3_LABEL
    binary = tmp_path / "engine"
    binary.write_bytes(b"\x7fELF" + b"\x78\x9c junk" + zlib.compress(docs.encode()) + b"\0" * 9)
    found = api.compiled_reference(binary)
    assert [d.split(b'name="')[1].split(b'"')[0] for d in found] == [b"Control", b"Label"]
    assert api.prime(tmp_path / "out", found) == 2
    assert (tmp_path / "out" / "doc" / "classes" / "Label.xml").read_bytes() == found[1]
    (tmp_path / "bare").write_bytes(b"\x7fELF no reference")
    assert api.compiled_reference(tmp_path / "bare") == []


def test_version_slugs_are_one_dir_name():
    assert api.slug("4.6.3.stable.debian4.6.3+ds-3") == "4.6.3.stable.debian4.6.3+ds-3"
    assert "/" not in api.slug("../../x y")
    assert not api.slug("..").startswith(".")


FAKE = """#!/bin/sh
# a fake engine: $1 is --doctool (Godot 3's form), $2 the dir
case "$MODE" in
  sleep) sleep 30 ;;
  fail) exit 3 ;;
esac
sleep 0.3
test -f "$2/doc/classes/Label.xml" || exit 4  # the compiled reference was primed
mkdir -p "$2/doc/classes" && echo "$$" > "$2/doc/classes/pid.txt"
ls "$PWD" | grep -q . && exit 5  # its cwd is an empty dir
exit 0
"""


def fake_engine(tmp_path: Path, mode: str) -> str:
    engine = tmp_path / f"engine-{mode}"
    docs = (GODOT3_CONTROL + GODOT3_LABEL).encode()
    engine.write_bytes(FAKE.replace("$MODE", mode).encode() + b"\n# " + zlib.compress(docs))
    engine.chmod(0o755)
    return str(engine)


@pytest.mark.anyio
async def test_a_dump_is_renamed_into_place_once_even_when_two_race(tmp_path):
    import anyio

    engine = fake_engine(tmp_path, "ok")
    reports: list[api.DumpReport] = []

    async def one() -> None:
        reports.append(await api.dump(engine, profile_of(3), tmp_path / "api", "3.2.3.stable"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(one)
        tg.start_soon(one)
    assert sorted(r.path.name for r in reports) == ["3.2.3.stable"] * 2
    assert sorted(r.dumped for r in reports) == [False, True]  # one landed, one lost the rename
    assert [p.name for p in (tmp_path / "api").iterdir()] == ["3.2.3.stable"]  # no partials
    assert (tmp_path / "api" / "3.2.3.stable" / "doc" / "classes" / "Label.xml").is_file()
    again = await api.dump(engine, profile_of(3), tmp_path / "api", "3.2.3.stable")
    assert not again.dumped and again.seconds == 0.0


@pytest.mark.anyio
@pytest.mark.parametrize(("mode", "error"), [("sleep", "Timeout"), ("fail", "Unavailable")])
async def test_a_dump_that_fails_or_hangs_is_a_typed_refusal(tmp_path, mode, error):
    with pytest.raises(GodotMcpError) as caught:
        await api.dump(
            fake_engine(tmp_path, mode), profile_of(3), tmp_path / "api", "3", timeout=1.0
        )
    assert type(caught.value).__name__ == error
    assert str(tmp_path) not in caught.value.message
    assert [p.name for p in (tmp_path / "api").iterdir()] == []  # nothing half-written
