"""§4's one answer budget, without a server: exact sizes as the SDK sends them, fast list
fitting, the ladder (image, markers, too_large)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from mcp import types

from godot_mcp.app import shipped_tools
from godot_mcp.errors import InvalidArgument
from godot_mcp.features.api.tools import _fit
from godot_mcp.mcp import budget as budget_module
from godot_mcp.mcp.budget import (
    SSE_FRAMING,
    STDIO_FRAMING,
    Budget,
    Framing,
    cost,
    fit_text,
    marker,
)
from godot_mcp.mcp.outcomes import ok, refusal, tool_result

NASTY = 'quote " backslash \\ tab \t newline \n bell \x07 é ü 漢字 🎮 \u2028 end'


def _sent(result: types.CallToolResult, request_id: str | int) -> bytes:
    """The message exactly as the SDK's stdio transport writes it (without the newline)."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    message = types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=dumped)
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")


def _lines(n: int, width: int) -> list[dict[str, Any]]:
    return [
        {"seq": i, "stream": "stdout", "level": "print", "text": (NASTY * width)[:width]}
        for i in range(n)
    ]


def test_wire_size_is_the_message_as_sent_with_its_request_id():
    answer = ok(lines=_lines(3, 100), next_cursor="abc")
    for request_id in (7, "a-long-request-id-" * 10):
        budget = Budget(10_000, request_id)
        assert budget.wire_size(answer) == len(_sent(answer, request_id)) + STDIO_FRAMING
    # A longer request id leaves less room for the rest of the message.
    short, long_ = Budget(10_000, 1), Budget(10_000, "x" * 500)
    assert long_.wire_size(answer) - short.wire_size(answer) == 501  # 500 and quotes, not 1


@pytest.mark.parametrize("text", ["plain ascii", NASTY, "\x00\x01\x1f" * 50, "漢" * 300, ""])
def test_an_items_cost_is_exactly_what_it_adds_to_the_answer(text: str):
    budget = Budget(1 << 30, 1)
    items = [{"text": text, "n": i} for i in range(5)]
    empty = budget.wire_size(ok(items=[]))
    full = budget.wire_size(ok(items=items))
    # One separator fewer than items, in structuredContent and in the mirror.
    assert full - empty == sum(cost(i) for i in items) - 2


def test_a_page_of_long_lines_fits_exactly_and_is_measured_at_most_three_times(monkeypatch):
    lines = _lines(1000, 9_000)
    limit = 200_000
    budget = Budget(limit, 12)
    measured = []
    real = Budget.wire_size

    def counting(self: Budget, result: types.CallToolResult) -> int:
        measured.append(1)
        return real(self, result)

    monkeypatch.setattr(Budget, "wire_size", counting)
    answer, n = budget.fit_list(lines, lambda kept: ok(lines=list(kept), next_cursor="c"))
    assert len(measured) <= 3  # the empty answer, the answer, at most one step down
    monkeypatch.setattr(Budget, "wire_size", real)
    assert 0 < n < 1000 and answer.structured_content["lines"] == lines[:n]
    assert len(_sent(answer, 12)) + STDIO_FRAMING <= limit  # fits, as sent
    bigger = ok(lines=lines[: n + 1], next_cursor="c")
    assert len(_sent(bigger, 12)) + STDIO_FRAMING > limit  # and one more line would not


def test_a_short_estimate_steps_down_until_it_fits(monkeypatch):
    monkeypatch.setattr(budget_module, "cost", lambda value: 10)  # far too optimistic
    lines = _lines(200, 1_000)
    budget = Budget(50_000, 1)
    answer, n = budget.fit_list(lines, lambda kept: ok(lines=list(kept)))
    assert 0 < n < 200 and budget.fits(answer)


def test_a_first_line_too_long_alone_is_shrunk_so_the_reader_moves_on():
    line = _lines(1, 9_000)[0]
    budget = Budget(4_096, 1)

    def shorter(item: dict[str, Any], room: int) -> dict[str, Any]:
        rest = {**item, "text": "", "truncated": True}
        return {**rest, "text": fit_text(item["text"], room - cost(rest))}

    answer, n = budget.fit_list([line], lambda kept: ok(lines=list(kept)), shrink=shorter)
    assert n == 1 and budget.fits(answer)
    (kept,) = answer.structured_content["lines"]
    assert kept["truncated"] is True and line["text"].startswith(kept["text"])
    assert len(kept["text"]) > 500  # most of the room is used
    assert fit_text("abcdef", cost("cdef"), keep="end") == "cdef"


def _image_answer(png: bytes) -> types.CallToolResult:
    image = types.ImageContent(data=base64.b64encode(png).decode(), mime_type="image/png")
    link = types.ResourceLink(
        uri="godot-mcp://artifacts/" + "a" * 26, name="screenshot.png", mime_type="image/png"
    )
    artifact = {
        "uri": "godot-mcp://artifacts/" + "a" * 26,
        "mime_type": "image/png",
        "size": 123456,
        "sha256": "f" * 64,
        "expires_at": "2030-01-01T00:00:00Z",
        "frames": 1,
        "width": 1280,
        "height": 720,
    }
    return ok([link, image], artifact=artifact, preview={"width": 640, "height": 360})


def test_a_preview_of_image_bytes_fits_and_a_larger_one_is_dropped_first():
    limit = 20_000
    budget = Budget(limit, "x" * 64)
    fitting = _image_answer(b"\x89" * budget.image_bytes())
    assert budget.bounded(fitting) is fitting  # the capture's preview budget leaves room
    too_big = _image_answer(b"\x89" * (limit * 3 // 4))
    shown = budget.bounded(too_big, _ok_shape("runtime.screenshot.capture"))
    assert shown.structured_content["outcome"] == "ok"
    assert shown.structured_content["preview"] is None
    assert [b.type for b in shown.content] == ["text", "resource_link"]
    assert len(_sent(shown, "x" * 64)) + STDIO_FRAMING <= limit
    assert json.loads(shown.content[0].text) == shown.structured_content


def _ok_shape(name: str) -> dict[str, Any]:
    return next(t for t in shipped_tools() if t.name == name).ok_schema()


def test_values_the_schema_lets_be_anything_become_markers_then_too_large():
    budget = Budget(6_000, 1)
    big = "y" * 50_000
    answer = budget.bounded(ok(result={"small": 1, "big": big}), _ok_shape("runtime.node.call"))
    body = answer.structured_content
    # The smallest value whose marker alone is enough: the big string, not the whole result.
    assert body == {"outcome": "ok", "result": {"small": 1, "big": marker(50_002)}}
    assert budget.fits(answer)
    # A string the schema types as a string cannot be a marker: too_large, saying the size.
    api = ok(**{"class": "X", "inherits": [], "member": {"description": big}})
    refused = budget.bounded(api, _ok_shape("project.api")).structured_content
    assert refused["outcome"] == "too_large"
    assert f"over max_output_bytes ({6_000} bytes as sent)" in refused["message"]
    # A refusal keeps its outcome and message; its details may be anything: a marker.
    wide = refusal(InvalidArgument("no"), close_names=["n" * 1000] * 50)
    kept = budget.bounded(wide)
    assert kept.structured_content == {
        "outcome": "invalid_argument",
        "message": "no",
        "close_names": marker(50 * 1003 + 1),
    }
    assert budget.fits(kept)


def test_the_members_of_a_class_share_the_budget_and_fit_exactly():
    members = {
        "methods": [f"method_{i:04d}" for i in range(2000)],
        "properties": [f"prop_{i}" for i in range(5)],
        "signals": [],
        "constants": [f"CONSTANT_{'X' * 20}_{i}" for i in range(3000)],
        "theme_items": [],
    }
    budget = Budget(9_000, 3)

    def build(kept: dict[str, list[str]]) -> types.CallToolResult:
        truncated = any(len(kept[k]) < len(v) for k, v in members.items())
        return tool_result(
            {"outcome": "ok", "class": "@GlobalScope", "inherits": [], "members": kept}
            | {"truncated": truncated}
        )

    answer = _fit(members, build, budget)
    body = answer.structured_content
    assert len(_sent(answer, 3)) + STDIO_FRAMING <= 9_000 and body["truncated"] is True
    assert body["members"]["properties"] == members["properties"]  # small lists whole
    assert len(body["members"]["methods"]) > 50 and len(body["members"]["constants"]) > 50
    assert len(_sent(answer, 3)) > 9_000 - STDIO_FRAMING - 400  # and the room is used


def test_artifacts_read_is_bounded_by_its_raw_bytes_not_by_the_message(tmp_path):
    """§4's exception: a read answers up to max_output_bytes of raw bytes, whose base64
    makes the message larger; every other answer stays under the limit."""
    from anyio.from_thread import start_blocking_portal
    from mcp import Client

    from godot_mcp.app import open_app
    from godot_mcp.config import Settings
    from godot_mcp.store.values import Limits
    from tests.support.producer import PRODUCER
    from tests.support.projects import make_project

    limit = 64 * 1024
    settings = Settings(tmp_path / "state", None, None, Limits(max_output_bytes=limit))
    with start_blocking_portal() as portal:
        app_cm = portal.wrap_async_context_manager(
            open_app(settings, make_project(tmp_path / "p"), "stdio", [PRODUCER])
        )
        app = app_cm.__enter__()
        try:
            with portal.wrap_async_context_manager(Client(app.server)) as client:
                made = portal.call(client.call_tool, "test.produce", {"size": 100_000})
                uri = made.structured_content["artifact"]["uri"]
                read = portal.call(client.call_tool, "artifacts.read", {"uri": uri})
                assert read.structured_content["outcome"] == "ok", read.structured_content
                assert read.structured_content["length"] == limit
                assert Budget(limit, 1).wire_size(read) > limit  # its base64: the exception
        finally:
            app_cm.__exit__(None, None, None)


def test_each_transport_and_protocol_version_is_measured_as_the_sdk_sends_it():
    """The framing a transport adds, and the fields a protocol version drops or stamps, are
    counted exactly: stdio's newline, an SSE event's two lines and blank line; ``resultType``
    is not sent before 2026, and a 2026-era result carries it with the ``serverInfo`` stamp."""
    answer = ok(lines=_lines(2, 50))
    plain = len(_sent(answer, 5))  # as dumped: resultType included
    info = {"name": "godot-mcp", "version": "9.9.9"}
    stdio = Budget(4096, 5, Framing.of("stdio", "2025-11-25", info))
    http = Budget(4096, 5, Framing.of("http", "2025-11-25", info))
    modern = Budget(4096, 5, Framing.of("http", "2026-07-28", info))
    result_type = len(',"resultType":"complete"')
    assert stdio.wire_size(answer) == plain - result_type + 1
    assert http.wire_size(answer) == plain - result_type + len("event: message\r\ndata: \r\n\r\n")
    stamp = (
        len(',"_meta":{"io.modelcontextprotocol/serverInfo":')
        + len(json.dumps(info, separators=(",", ":")))
        + 1
    )
    assert modern.wire_size(answer) == plain + stamp + SSE_FRAMING
    # What a refusal compares is what it says: the size as sent, and the limit.
    tight = Budget(plain - result_type + 1, 5, Framing.of("stdio", "2025-11-25", info))
    assert tight.bounded(answer) is answer  # fits to the byte
    tighter = Budget(plain - result_type, 5, Framing.of("stdio", "2025-11-25", info))
    refused = tighter.bounded(answer).structured_content  # no schema: nothing may be marked
    assert refused == {
        "outcome": "too_large",
        "message": f"the answer would be {plain - result_type + 1} bytes as sent, over "
        f"max_output_bytes ({plain - result_type} bytes as sent); ask for less",
    }
