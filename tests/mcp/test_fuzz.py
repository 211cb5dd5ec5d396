"""Fuzzing resource URIs and tool arguments against the in-process server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, MCPError

from godot_mcp.app import open_app
from godot_mcp.config import Settings
from godot_mcp.mcp.outcomes import TOOL_OUTCOMES
from godot_mcp.store.values import Limits
from tests.mcp.conftest import make_project
from tests.mcp.test_resources import refusal_message
from tests.support.producer import PRODUCER

TOOLS = [
    "server.profile",
    "project.info",
    "artifacts.read",
    "runtime.session.list",
    "runtime.session.stop",
    "runtime.screenshot.capture",
    "runtime.recording.capture",
    "project.export.status",
    "project.export.cancel",
    "test.produce",
    "no.such.tool",
]


class Harness:
    def __init__(self, portal: BlockingPortal, client: Client, uri: str) -> None:
        self.portal, self.client, self.uri = portal, client, uri


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Iterator[Harness]:
    base: Path = tmp_path_factory.mktemp("fuzz")
    project = make_project(base / "p")
    settings_ = Settings(base / "state", None, None, Limits())
    with start_blocking_portal() as portal:
        app_cm = portal.wrap_async_context_manager(
            open_app(settings_, project, "stdio", [PRODUCER])
        )
        app = app_cm.__enter__()
        client_cm = portal.wrap_async_context_manager(Client(app.server))
        client = client_cm.__enter__()
        r = portal.call(client.call_tool, "test.produce", {"size": 700_000, "seed": 1})
        yield Harness(portal, client, r.structured_content["artifact"]["uri"])
        client_cm.__exit__(None, None, None)
        app_cm.__exit__(None, None, None)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(suffix=st.text(max_size=40))
def test_any_resource_uri_gives_bytes_or_a_typed_refusal(harness, suffix) -> None:
    for uri in (harness.uri + suffix, "godot-mcp://artifacts/" + suffix, suffix):
        try:
            r = harness.portal.call(harness.client.read_resource, uri)
        except MCPError as exc:
            assert exc.code == -32602
            assert exc.data["outcome"] in {"not_found", "permission_denied", "out_of_range"}
            assert exc.message == refusal_message("stdio", exc.data)
            continue
        assert len(r.contents) == 1 and r.contents[0].meta["length"] >= 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tool=st.sampled_from(TOOLS),
    arguments=st.dictionaries(
        st.sampled_from(
            [
                "uri",
                "session_id",
                "frames",
                "fps",
                "export_id",
                "wait_seconds",
                "size",
                "seed",
                "mode",
                "scene",
                "x",
            ]
        ),
        json_values,
        max_size=4,
    ),
)
def test_any_tool_arguments_give_a_typed_outcome(harness, tool, arguments) -> None:
    if tool == "test.produce":
        arguments.pop("size", None)
    r = harness.portal.call(harness.client.call_tool, tool, arguments)
    outcome = r.structured_content["outcome"]
    assert outcome in TOOL_OUTCOMES
    assert r.is_error == (outcome != "ok")
    assert r.structured_content.get("message") != "internal error"
    text = r.content[0].text
    assert "/tmp" not in text and str(Path.home()) + "/" not in text
