"""Tools as hosts see them: names they accept, metadata that tells the truth, strict schemas."""

from __future__ import annotations

import re

import anyio
import pytest
from jsonschema import Draft202012Validator

from godot_mcp.app import shipped_tools
from tests.mcp.conftest import Connect
from tests.support.projects import make_project
from tests.support.servers import stdio_client

pytestmark = pytest.mark.anyio

HOST_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
READ_ONLY = {
    "server.profile",
    "project.info",
    "project.source",
    "runtime.session.list",
    "project.export.status",
    "artifacts.read",
    "runtime.log.read",
    "runtime.scene.tree",
    "runtime.node.get",
    "runtime.wait",
    "runtime.perf.read",
    "runtime.node.inspect",
    "project.check",
    "project.test",
    "project.api",
    "runtime.debug.state",
    "runtime.debug.variables",
    "runtime.profile.capture",
}
DESTRUCTIVE = {
    "project.reload",
    "runtime.session.stop",
    "project.export.cancel",
    "runtime.node.call",
    "runtime.debug.evaluate",
}


async def test_names_on_the_wire_are_what_every_host_accepts(connect: Connect) -> None:
    with anyio.fail_after(60):
        async with connect() as c:
            tools = (await c.list_tools()).tools
    names = [t.name for t in tools]
    assert all(HOST_NAME.match(n) for n in names), names
    assert "runtime_screenshot_capture" in names and "server_profile" in names
    assert not any("." in n for n in names)


@pytest.mark.slow  # starts servers
async def test_dotted_names_are_listed_on_request_and_both_spellings_call(tmp_path) -> None:
    project = make_project(tmp_path / "p")
    with anyio.fail_after(60):
        async with stdio_client(project, tmp_path / "s", "--tool-names", "dotted") as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert {t.name for t in shipped_tools()} <= names
            profile = await c.call_tool("server.profile", {})
            assert profile.structured_content["outcome"] == "ok"
            keys = set(profile.structured_content["availability"])
            assert "runtime.screenshot.capture" in keys and "server_profile" not in keys
            other = await c.call_tool("server_profile", {})
            assert other.structured_content["outcome"] == "ok"
        async with stdio_client(project, tmp_path / "s") as c:
            profile = await c.call_tool("server.profile", {})
            keys = set(profile.structured_content["availability"])
            assert "runtime_screenshot_capture" in keys and "runtime.screenshot.capture" not in keys


async def test_every_tool_describes_itself_truthfully(connect: Connect) -> None:
    with anyio.fail_after(60):
        async with connect() as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
    for spec in shipped_tools():
        tool = listed[spec.name.replace(".", "_")]
        assert tool.title and tool.description and len(tool.description) > 40, spec.name
        a = tool.annotations
        assert a is not None and a.open_world_hint is False, spec.name
        assert a.read_only_hint is (spec.name in READ_ONLY), spec.name
        assert a.destructive_hint is (spec.name in DESTRUCTIVE), spec.name
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        Draft202012Validator.check_schema(schema)
        out = tool.output_schema
        assert out is not None and out["type"] == "object", spec.name
        Draft202012Validator.check_schema(out)
        refusal = {"outcome": "invalid_argument", "message": "x"}
        assert Draft202012Validator(out).is_valid(refusal), spec.name
        if spec.required:
            assert not Draft202012Validator(out).is_valid({"outcome": "ok"}), spec.name
    # Other tools are named as listed.
    assert "project_export_status" in listed["project_export"].description
    export_id = listed["project_export_status"].input_schema["properties"]["export_id"]
    assert export_id["description"] == "an id from project_export"


async def test_declared_ranges_are_the_ones_enforced(connect: Connect) -> None:
    with anyio.fail_after(60):
        async with connect() as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
            rec = listed["runtime_recording_capture"]
            frames = rec.input_schema["properties"]["frames"]  # optional: null means absent
            assert frames["anyOf"][1] == {"type": "null"} and frames["default"] == 30
            assert (frames["anyOf"][0]["minimum"], frames["anyOf"][0]["maximum"]) == (2, 300)
            assert "default 30" not in rec.description  # said once, in the schema
            wait = listed["project_export_status"].input_schema["properties"]["wait_seconds"]
            assert (wait["anyOf"][0]["minimum"], wait["anyOf"][0]["maximum"]) == (0, 50)
            cases = [
                ("runtime_recording_capture", {"session_id": "x", "frames": 301}, "frames"),
                ("runtime_recording_capture", {"session_id": "x", "fps": 0}, "fps"),
                ("project_export_status", {"export_id": "x", "wait_seconds": 51}, "wait_seconds"),
                ("project_export", {"preset": "P", "kind": "zip"}, "kind"),
                ("server_profile", {"extra": 1}, "unknown argument"),
                ("artifacts_read", {}, "uri is required"),
            ]
            for name, args, said in cases:
                r = await c.call_tool(name, args)
                body = r.structured_content
                assert r.is_error and body["outcome"] == "invalid_argument", (name, body)
                assert said in body["message"], (name, body)
                # The refusal validates against the tool's own outputSchema.
                Draft202012Validator(listed[name].output_schema).validate(body)


@pytest.mark.slow  # starts a server
async def test_a_refusal_never_echoes_more_than_max_output_bytes(tmp_path) -> None:
    import json

    project = make_project(tmp_path / "p")
    with anyio.fail_after(60):
        async with stdio_client(project, tmp_path / "s", "--max-output-bytes", "4096") as c:
            r = await c.call_tool("server_profile", {"x" * 3_000_000 + "\r\nSECOND": 1})
            body = r.structured_content
            assert body["outcome"] == "invalid_argument", body
            assert len(json.dumps(body)) <= 4096 and "\n" not in body["message"]
