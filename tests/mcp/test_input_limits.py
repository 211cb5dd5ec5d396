"""Every limit a tool's inputSchema declares is the one the server enforces (§4): each one
passed by one is refused with invalid_argument naming the argument, before the handler runs;
an optional argument given as null is absent, a required one is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from jsonschema import Draft202012Validator
from mcp import Client

from godot_mcp.app import open_app, shipped_tools
from godot_mcp.config import Settings
from godot_mcp.engine.project.presets import UnknownPreset
from godot_mcp.mcp.spec import Arg, Tool
from godot_mcp.store.values import Limits
from tests.support.projects import make_project

TOOLS = shipped_tools()
LIMITS = ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties")
BOUNDS = ("maximum", "minimum")


class Harness:
    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal, self.client = portal, client

    def call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = self.portal.call(self.client.call_tool, name, args)
        return dict(result.structured_content or {})


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    base: Path = tmp_path_factory.mktemp("limits")
    project = make_project(base / "p")
    settings = Settings(base / "state", None, None, Limits(), allow_runtime_writes=True)
    with start_blocking_portal() as portal:
        app_cm = portal.wrap_async_context_manager(open_app(settings, project, "stdio"))
        app = app_cm.__enter__()
        client_cm = portal.wrap_async_context_manager(Client(app.server))
        yield Harness(portal, client_cm.__enter__())
        client_cm.__exit__(None, None, None)
        app_cm.__exit__(None, None, None)


# -- values: a valid one for a schema, and each declared limit passed by one ----------------


def minimal(schema: dict[str, Any]) -> Any:
    """A small valid value of ``schema``."""
    if "oneOf" in schema or "anyOf" in schema:
        return minimal((schema.get("oneOf") or schema["anyOf"])[0] | _outer(schema))
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "string":
        return "a" * max(1, schema.get("minLength", 1))
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    if kind == "array":
        return [minimal(schema.get("items", {"type": "integer"}))] * schema.get("minItems", 1)
    if kind == "object":
        props = schema.get("properties", {})
        out = {k: minimal(props[k]) for k in schema.get("required", [])}
        while len(out) < schema.get("minProperties", 0):
            out[f"k{len(out)}"] = 1
        return out
    return 1


def _outer(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}


def past_limits(schema: dict[str, Any], path: str) -> Iterator[tuple[str, Any]]:
    """(what, value): ``schema``'s value with one declared limit passed by one, at every
    depth (an array's items, an object's properties, each branch of a oneOf)."""
    for branch in schema.get("oneOf", []):
        shape = branch | _outer(schema)
        base = minimal(shape)
        for key, sub in shape.get("properties", {}).items():
            for what, bad in past_limits(sub, f"{path}.{key}"):
                yield what, {**base, key: bad}
    kind = schema.get("type")
    for rule in LIMITS:
        if rule not in schema:
            continue
        n = schema[rule]
        more = n + 1 if rule.startswith("max") else n - 1
        if more < 0:
            continue
        if kind == "string":
            yield f"{path} {rule}", "a" * more
        elif kind == "array":
            yield f"{path} {rule}", [minimal(schema.get("items", {"type": "integer"}))] * more
        elif kind == "object":
            yield f"{path} {rule}", {f"k{i}": 1 for i in range(more)}
    for rule in BOUNDS:
        if rule in schema and kind in ("integer", "number"):
            yield f"{path} {rule}", schema[rule] + (1 if rule == "maximum" else -1)
    if kind == "array" and "items" in schema:
        for what, bad in past_limits(schema["items"], f"{path}[0]"):
            yield what, [bad]
    if kind == "object" and "oneOf" not in schema:
        base = minimal(schema)
        for key, sub in schema.get("properties", {}).items():
            for what, bad in past_limits(sub, f"{path}.{key}"):
                yield what, {**base, key: bad}


def required_args(tool: Tool) -> dict[str, Any]:
    return {a.name: minimal(a.value_schema()) for a in tool.args if a.required}


CASES = [
    pytest.param(tool, arg, what, bad, id=f"{tool.name}:{what}")
    for tool in TOOLS
    for arg in tool.args
    for what, bad in past_limits(arg.value_schema(), arg.name)
]


def test_every_declared_limit_has_a_case():
    """The generator reaches every limit declared: nested items, properties and branches."""
    seen = {(tool.name, what.split()[0]) for tool, _arg, what, _bad in (c.values for c in CASES)}
    for tool in TOOLS:
        for arg in tool.args:
            text = str(arg.value_schema())
            if any(rule in text for rule in (*LIMITS, *BOUNDS)):
                assert any(t == tool.name and w.startswith(arg.name) for t, w in seen), (
                    tool.name,
                    arg.name,
                )
    names = {what for *_, what, _bad in (c.values for c in CASES)}
    for expected in (
        "args[0] maxLength",
        "args maxItems",
        "properties[0] maxLength",
        "values maxProperties",
        "values minProperties",
        "until.node maxLength",
        "until.cursor maxLength",
        "until.frames maximum",
        "events[0].text maxLength",
        "events maxItems",
        "paths[0] maxLength",
        "class maxLength",
        "member maxLength",
        "uri maxLength",
        "method maxLength",
        "cursor maxLength",
        "scene maxLength",
        "root maxLength",
    ):
        assert expected in names, expected


@pytest.mark.parametrize(("tool", "arg", "what", "bad"), CASES)
def test_each_declared_limit_passed_by_one_is_refused_naming_the_argument(
    harness: Harness, tool: Tool, arg: Arg, what: str, bad: Any
):
    assert not Draft202012Validator(tool.input_schema()).is_valid(
        {**required_args(tool), arg.name: bad}
    ), what  # the case breaks the declared schema...
    body = harness.call(tool.name, {**required_args(tool), arg.name: bad})
    assert body["outcome"] == "invalid_argument", (what, body)  # ... and the server says so
    message = body["message"]
    assert message.startswith(arg.name) or f" {arg.name}" in message, (what, message)
    assert "\n" not in message and len(message) < 300, (what, message)  # one line, no echo


def test_no_item_is_turned_into_a_string(harness: Harness):
    for bad in ([3], [None], [{"a": 1}], [["x"]]):
        body = harness.call(
            "runtime.node.get", {"session_id": "x", "path": "/root", "properties": bad}
        )
        assert body == {
            "outcome": "invalid_argument",
            "message": "properties[0] must be a string",
        }, bad


def test_messages_name_where_the_value_is_and_never_echo_it(harness: Harness):
    huge = "Z" * 100_000
    body = harness.call("runtime.node.set", {"session_id": "x", "path": "/root", "values": {}})
    assert body["message"] == "values has fewer than 1 property"
    body = harness.call("runtime.session.start", {"args": ["ok", "b" * 257]})
    assert body["outcome"] == "invalid_argument" and body["message"].startswith("args[1] ")
    body = harness.call("project.api", {"class": huge})
    assert body["outcome"] == "invalid_argument" and "ZZZZ" not in body["message"]
    body = harness.call(
        "runtime.node.call", {"session_id": "x", "path": "/root", "method": "m", "args": [0] * 101}
    )
    assert body["message"] == "args must hold 0 to 100 items"


def test_optional_arguments_may_be_null_and_say_so(harness: Harness):
    for tool in TOOLS:
        for arg in tool.args:
            schema = tool.input_schema()["properties"][arg.name]
            if arg.required:
                assert "anyOf" not in schema or {"type": "null"} not in schema["anyOf"], arg.name
                assert not Draft202012Validator(schema).is_valid(None), (tool.name, arg.name)
            else:
                assert {"type": "null"} in schema["anyOf"], (tool.name, arg.name)
                assert Draft202012Validator(schema).is_valid(None), (tool.name, arg.name)
    # null is absent: the defaults apply and the call goes on (to the unknown session).
    body = harness.call(
        "runtime.log.read",
        {"session_id": "x", "cursor": None, "max_lines": None, "min_level": None},
    )
    assert body["outcome"] == "not_found", body
    assert harness.call("project.info", {})["outcome"] == "ok"
    body = harness.call("runtime.session.stop", {"session_id": None})
    assert body == {"outcome": "invalid_argument", "message": "session_id is required"}
    body = harness.call("project.api", {"class": None, "member": None})
    assert body == {"outcome": "invalid_argument", "message": "class is required"}


def long_strings(schema: dict[str, Any], path: str) -> Iterator[tuple[str, Any]]:
    """(what, value): ``schema``'s value with one string that may hold more than 200
    characters at its longest (100,000 where it has no bound), at every depth."""
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
        shape = branch | _outer(schema)
        yield from long_strings(shape, path)
    kind = schema.get("type")
    if kind == "string" and "enum" not in schema and schema.get("maxLength", 100_000) > 200:
        size = schema.get("maxLength", 100_000)
        yield path, "res://" + "Q" * (size - 9) + ".gd"
    if kind == "array" and "items" in schema:
        for what, long in long_strings(schema["items"], f"{path}[0]"):
            yield what, [long]
    if kind == "object":
        base = minimal(schema)
        for key, sub in schema.get("properties", {}).items():
            for what, long in long_strings(sub, f"{path}.{key}"):
                yield what, {**base, key: long}


LONG = [
    pytest.param(tool, arg, long, id=f"{tool.name}:{what}")
    for tool in TOOLS
    for arg in tool.args
    for what, long in long_strings(arg.value_schema(), arg.name)
]


@pytest.mark.parametrize(("tool", "arg", "long"), LONG)
def test_no_answer_repeats_more_than_200_characters_of_what_a_caller_sent(
    harness: Harness, tool: Tool, arg: Arg, long: Any
):
    body = harness.call(tool.name, {**required_args(tool), arg.name: long})
    assert "Q" * 201 not in json.dumps(body), (tool.name, arg.name, body)


def test_the_long_values_reach_the_server_and_the_unknown_names_too(harness: Harness):
    assert len(LONG) >= 20  # every unbounded or long string of every tool, nested ones too
    refused = UnknownPreset("Q" * 100_000, ["Linux"])
    assert refused.message == f"unknown export preset '{'Q' * 200}…'; known presets: 'Linux'"
    body = harness.call("project.check", {"paths": ["res://" + "Q" * 4000]})
    assert body == {
        "outcome": "invalid_argument",
        "message": "res://" + "Q" * 194 + "… is not a file or folder of the project",
    }
    with pytest.raises(Exception) as exc:  # an unknown tool is refused by the client's call
        body = harness.call("Q" * 100_000, {})
        raise AssertionError(body["message"])
    assert "Q" * 201 not in str(exc.value)
