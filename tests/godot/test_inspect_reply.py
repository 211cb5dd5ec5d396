"""The bridge's ``inspect`` reply read field by field (pure logic): the parts asked for, every
list cut to 200 and named, every text bounded; what the bridge never sends is a typed failure
naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from godot_mcp.errors import Failed
from godot_mcp.features.game.protocol import Inspected, Malformed

ALL = ("script", "methods", "signals", "groups", "properties")
METHOD = {"name": "_ready", "args": [], "path": "res://a.gd", "line": 3}
REPLY: dict[str, Any] = {
    "id": 4,
    "ok": True,
    "class": "Node2D",
    "script": {"path": "res://a.gd", "class_name": "A", "extends": "Node2D"},
    "methods": [METHOD],
    "signals": [{"name": "hit", "connections": [{"node": "/root/B", "method": "on_hit"}]}],
    "connected_in": [{"node": "/root/C", "signal": "timeout", "method": "_ready"}],
    "groups": ["players"],
    "properties": [{"name": "hp", "type": "int", "exported": True, "value": 3}],
    "truncated": ["groups"],
}


def test_the_parts_asked_for_are_read_and_the_others_left_out() -> None:
    read = Inspected.parse(REPLY, ALL)
    assert read.class_name == "Node2D"
    assert read.parts == {k: REPLY[k] for k in (*ALL, "connected_in")}
    assert read.truncated == ["groups"]
    only = Inspected.parse({**REPLY, "methods": "ignored"}, ("signals",))
    assert only.parts == {"signals": REPLY["signals"], "connected_in": REPLY["connected_in"]}
    assert only.truncated == []  # the groups it says were cut were not asked for
    assert Inspected.parse({**REPLY, "script": None}, ("script",)).parts == {"script": None}
    unknown_line = {**METHOD, "line": None}  # a script without source: no line
    assert Inspected.parse({**REPLY, "methods": [unknown_line]}, ("methods",)).parts == {
        "methods": [unknown_line]
    }


def test_lists_past_200_are_cut_and_named_in_order() -> None:
    many = {
        **REPLY,
        "groups": [f"g{i}" for i in range(201)],
        "signals": [{"name": "s", "connections": [{"node": "/root/B", "method": "m"}] * 300}],
        "truncated": [],
    }
    read = Inspected.parse(many, ALL)
    assert read.truncated == ["signals", "groups"]
    assert read.parts["groups"] == [f"g{i}" for i in range(200)]
    assert len(read.parts["signals"][0]["connections"]) == 200


@pytest.mark.parametrize(
    ("change", "include", "message"),
    [
        ({"truncated": ["secrets"]}, ALL, "truncated names something other than its lists"),
        ({"truncated": "all"}, ALL, "truncated is not a list"),
        ({"class": 7}, ALL, "class is not a string"),
        ({"class": "N" * 4097}, ALL, "class is longer than 4096 characters"),
        ({"script": {"path": "res://a.gd"}}, ALL, "script.extends is not a string"),
        ({"script": ["res://a.gd"]}, ALL, "script holds something other than objects"),
        ({"methods": [{**METHOD, "name": 5}]}, ALL, "methods.name is not a string"),
        ({"methods": [{**METHOD, "args": [None]}]}, ALL, "methods.args is not a string"),
        ({"methods": [{**METHOD, "args": "a, b"}]}, ALL, "methods.args is not a list"),
        ({"methods": [{**METHOD, "line": 0}]}, ALL, "methods.line is not a line number"),
        ({"methods": [{**METHOD, "line": "3"}]}, ALL, "line is not an integer"),
        ({"signals": [{"name": "s"}]}, ALL, "signals.connections is not a list"),
        (
            {"signals": [{"name": "s", "connections": [{"node": 1}]}]},
            ALL,
            "signals.connections.node is not a string",
        ),
        ({"connected_in": ["x"]}, ("signals",), "connected_in holds something other than objects"),
        ({"groups": [["g"]]}, ("groups",), "groups is not a string"),
        ({"groups": None}, ("groups",), "groups is not a list"),
        (
            {"properties": [{"name": "a", "type": "int", "exported": 1, "value": 1}]},
            ALL,
            "properties.exported is not true or false",
        ),
        (
            {"properties": [{"name": "a", "type": "int", "exported": True}]},
            ALL,
            "properties.value is missing",
        ),
        ({"properties": "junk", "methods": 3}, ("groups",), None),
    ],
)
def test_a_reply_the_bridge_never_sends_is_a_typed_failure(
    change: dict[str, Any], include: tuple[str, ...], message: str | None
) -> None:
    if message is None:  # a part not asked for is not read
        Inspected.parse({**REPLY, **change}, include)
        return
    with pytest.raises(Malformed) as refused:
        Inspected.parse({**REPLY, **change}, include)
    assert isinstance(refused.value, Failed)
    assert refused.value.message == f"the game's answer to inspect is malformed: {message}"


def test_a_value_nested_past_any_the_bridge_sends_is_refused() -> None:
    deep: Any = 1
    for _ in range(100):
        deep = [deep]
    prop = {"name": "a", "type": "Array", "exported": False, "value": deep}
    with pytest.raises(Malformed) as refused:
        Inspected.parse({**REPLY, "properties": [prop]}, ("properties",))
    assert refused.value.message == (
        "the game's answer to inspect is malformed: properties.value nests deeper than 64 levels"
    )
