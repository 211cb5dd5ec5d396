"""§4 on real servers and a real game: no tool answer is larger than max_output_bytes as sent,
the whole JSON-RPC message measured on the wire, over stdio (the line the server writes) and
over HTTP (the SSE event, framing included). Lists shrink and say so; values too large for any
answer become ``{"type": "truncated", "bytes": N}``; previews shrink or drop.

Replays issue 25's failures: a full ``runtime.log.read`` page over HTTP at the default limit
(1,281,238 bytes sent), and ``project.api`` on ``@GlobalScope`` at 9,000 (15,350 sent)."""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from PIL import Image

from godot_mcp.features.game.log import encode_cursor
from godot_mcp.mcp.budget import Budget, Framing
from tests.support import engines
from tests.support.engines import Engine
from tests.support.rawmcp import HANDSHAKE, raw_session
from tests.support.rawstdio import raw_stdio
from tests.support.servers import make_tokens, start_http

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.slow]

SMALL = 9_000
DEFAULT = 512 * 1024
CHUNK = 'q"b\\é漢 '  # escaped once in structuredContent, twice in the text mirror
FLOOD = """extends Node

var long_text = ""

func _ready():
	var chunk = ""
	for i in range(100):
		chunk += "q\\"b\\\\é漢 "
	for i in range(120):
		long_text += chunk
	for i in range(400):
		var n = Node.new()
		n.name = "child_%d" % i
		add_child(n)
	for i in range(1500):
		print("FLOOD %d " % i + chunk.substr(0, 600))
	print("FLOOD_DONE")

func big(n):
	var piece = ""
	for i in range(100):
		piece += "0123456789"
	var out = []
	for i in range(n):
		out.append(piece)
	return out
"""
BROKEN = 60  # scripts that do not compile: project.check's list of errors
LONG_TEXT = CHUNK * 100 * 120
# The bridge's own bound on a string (MAX_STRING in bridge3.gd and bridge4.gd).
SHOWN_TEXT = {
    "type": "String",
    "truncated": True,
    "length": len(LONG_TEXT),
    "head": LONG_TEXT[:10_000],
}
PIECE = "0123456789" * 100


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


@pytest.fixture(scope="module")
def flood_project(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Path:
    base = tmp_path_factory.mktemp(f"size-{engine.name}")
    project = engine.copy_demo(base / "demo")
    (project / "flood.gd").write_text(FLOOD)
    (project / "flood.tscn").write_text(engine.scene("flood.gd", "Node").replace("Root", "Flood"))
    broken = project / "broken"
    broken.mkdir()
    for i in range(BROKEN):
        (broken / f"broken_{i:02d}.gd").write_text(f"extends Node\nfunc f_{i}(:\n\tpass\n")
    return project


Call = Callable[[str, dict[str, Any]], Awaitable[tuple[int, dict[str, Any]]]]


@asynccontextmanager
async def wire(transport: str, project: Path, state: Path, limit: int) -> AsyncIterator[Call]:
    """``call(tool, args)`` answering (bytes as sent, the JSON-RPC message)."""
    extra = ("--max-output-bytes", str(limit), "--allow-runtime-writes")
    if transport == "stdio":
        async with raw_stdio(project, state, *extra) as session:

            async def call(tool: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
                line = await session.call(tool, args)
                return len(line), json.loads(line)

            yield call
        return
    tokens = make_tokens(state, ["alice"])
    server = start_http(project, state, *extra, tokens=tokens, test_tools=False)
    try:
        async with raw_session(server.url, tokens["alice"]) as session:

            async def call(tool: str, args: dict[str, Any]) -> tuple[int, dict[str, Any]]:
                response = await session.post("tools/call", {"name": tool, "arguments": args})
                assert response.status_code == 200, response.status_code
                assert response.headers["content-type"].startswith("text/event-stream")
                for event in response.content.split(b"\r\n\r\n"):
                    for row in event.split(b"\r\n"):
                        if row.startswith(b"data:") and b'"result"' in row:
                            sent = len(event) + 4  # the event, its blank line included
                            return sent, json.loads(row[5:])
                raise AssertionError(response.content[:300])

            yield call
    finally:
        server.stop()


@pytest.mark.parametrize("limit", [SMALL, DEFAULT])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_every_answer_fits_max_output_bytes_as_sent(
    flood_project: Path, tmp_path: Path, transport: str, limit: int
):
    sizes: dict[str, int] = {}

    async with wire(transport, flood_project, tmp_path / "state", limit) as call:

        async def answer(tool: str, args: dict[str, Any], outcome: str = "ok") -> dict[str, Any]:
            sent, message = await call(tool, args)
            body = message["result"]["structuredContent"]
            assert body["outcome"] == outcome, (tool, body)
            assert sent <= limit, (tool, sent, limit)  # the guarantee, as sent
            text = message["result"]["content"][0]["text"]
            assert json.loads(text) == body  # the mirror is whole, never cut
            sizes[tool] = max(sizes.get(tool, 0), sent)
            return dict(message["result"])

        with anyio.fail_after(300):
            await answer("server_profile", {})
            await answer("project_info", {})
            start = await answer(
                "runtime_session_start", {"scene": "res://flood.tscn", "mode": "windowed"}
            )
            sid = start["structuredContent"]["session"]["id"]
            await answer(
                "runtime_wait",
                {"session_id": sid, "until": {"log": "FLOOD_DONE", "cursor": encode_cursor(0)}},
            )
            await answer("runtime_session_list", {})
            await answer("runtime_perf_read", {"session_id": sid})

            # The log: a page as full as fits, and the next page goes on where it stopped.
            page = (await answer("runtime_log_read", {"session_id": sid, "max_lines": 1000}))[
                "structuredContent"
            ]
            lines = page["lines"]
            assert 1 <= len(lines) < 1000
            assert [x["seq"] for x in lines] == list(range(lines[0]["seq"], lines[-1]["seq"] + 1))
            if limit == DEFAULT:  # the replay: 1,281,238 bytes before; now full to the limit
                assert sizes["runtime_log_read"] > limit - 4_000, sizes
            nxt = (
                await answer(
                    "runtime_log_read",
                    {"session_id": sid, "cursor": page["next_cursor"], "max_lines": 1000},
                )
            )["structuredContent"]["lines"]
            assert nxt[0]["seq"] == lines[-1]["seq"] + 1

            tree = (
                await answer(
                    "runtime_scene_tree",
                    {"session_id": sid, "max_nodes": 5000, "depth": 4, "collapse": False},
                )
            )["structuredContent"]
            assert tree["total"] >= 400 and tree["nodes"]
            assert tree["truncated"] is (limit == SMALL)

            # A value larger than the answer stands as a marker of its size; others whole.
            values = (await answer("runtime_node_get", {"session_id": sid, "path": "/root/Flood"}))[
                "structuredContent"
            ]["values"]
            if limit == SMALL:
                assert values["long_text"] == {
                    "type": "truncated",
                    "bytes": _json_bytes(SHOWN_TEXT),
                }
            else:
                assert values["long_text"] == SHOWN_TEXT
            small = await answer(
                "runtime_node_call",
                {"session_id": sid, "path": "/root/Flood", "method": "big", "args": [2]},
            )
            assert small["structuredContent"]["result"] == [PIECE, PIECE]
            huge = await answer(
                "runtime_node_call",
                {"session_id": sid, "path": "/root/Flood", "method": "big", "args": [600]},
            )
            assert huge["structuredContent"]["result"] == {
                "type": "truncated",
                "bytes": _json_bytes([PIECE] * 600),
            }
            # A refusal keeps its outcome; the last value seen, too large, is a marker.
            timeout = await answer(
                "runtime_wait",
                {
                    "session_id": sid,
                    "until": {"node": "/root/Flood", "property": "long_text", "equals": "no"},
                    "timeout_seconds": 0.5,
                },
                outcome="timeout",
            )
            if limit == SMALL:
                # The smallest value whose marker is enough: the string's head, not the whole.
                head = {"type": "truncated", "bytes": _json_bytes(SHOWN_TEXT["head"])}
                assert timeout["structuredContent"]["value"] == {**SHOWN_TEXT, "head": head}

            # Previews: shrunk to the one budget, never past it.
            for tool, args in (
                ("runtime_screenshot_capture", {"preview_px": 1280}),
                ("runtime_recording_capture", {"frames": 10, "fps": 10}),
            ):
                shot = await answer(tool, {"session_id": sid, **args})
                images = [b for b in shot["content"] if b["type"] == "image"]
                preview = shot["structuredContent"]["preview"]
                assert len(images) == (preview is not None), tool
                for block in images:
                    image = Image.open(io.BytesIO(base64.b64decode(block["data"])))
                    assert image.size == (preview["width"], preview["height"])
                if limit == DEFAULT:
                    assert images, tool

            await answer("runtime_session_stop", {"session_id": sid})

            # The debugger: a break where the members hold the long text, every debug tool.
            where = "res://flood.gd:17"  # print("FLOOD_DONE")
            debugged = await answer(
                "runtime_session_start",
                {
                    "scene": "res://flood.tscn",
                    "mode": "headless",
                    "debug": True,
                    "breakpoints": [where],
                },
            )
            d = {"session_id": debugged["structuredContent"]["session"]["id"]}
            state = await answer("runtime_debug_state", {**d, "wait_seconds": 20})
            assert state["structuredContent"]["state"] == "break", state["structuredContent"]
            await answer("runtime_debug_variables", d)
            evaluate = "ok" if engines.current().major == 4 else "unavailable"
            await answer("runtime_debug_evaluate", {**d, "expression": "long_text"}, evaluate)
            await answer("runtime_debug_breakpoints", {**d, "clear": [where]})
            await answer("runtime_debug_control", {**d, "action": "continue"})
            await answer("runtime_scripts_reload", {**d, "paths": ["res://flood.gd"]})
            await answer("runtime_profile_capture", {**d, "seconds": 0.5})
            await answer("runtime_session_stop", d)

            api = (await answer("project_api", {"class": "@GlobalScope"}))["structuredContent"]
            assert api["truncated"] is (limit == SMALL)  # the replay: 15,350 bytes before
            assert sum(len(v) for v in api["members"].values()) > 20

            check = (await answer("project_check", {}))["structuredContent"]
            assert len(check["errors"]) >= (BROKEN if limit == DEFAULT else 1)
            assert check["truncated"] is (limit == SMALL)
    assert set(sizes) >= {"runtime_log_read", "project_api", "runtime_screenshot_capture"}
    assert {"runtime_debug_variables", "runtime_debug_evaluate"} <= set(sizes)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_answers_are_measured_to_the_byte_and_fit_the_smallest_limit(
    flood_project: Path, tmp_path: Path, transport: str
):
    """At the smallest ``--max-output-bytes`` a screenshot's answer (about 900 bytes) is sent,
    its preview left out; every answer's size as the server measured it is the size sent, and
    a refusal names the figure it compared and the limit, both as sent."""
    limit = 1024
    async with wire(transport, flood_project, tmp_path / "state", limit) as call:

        async def answer(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            sent, message = await call(tool, args)
            framing = Framing.of(transport, HANDSHAKE, {})
            result = types.CallToolResult.model_validate(message["result"])
            assert Budget(limit, message["id"], framing).wire_size(result) == sent, tool
            assert sent <= limit, (tool, sent)
            return dict(message["result"]["structuredContent"])

        with anyio.fail_after(120):
            assert (await answer("project_info", {}))["outcome"] == "ok"
            start = await answer("runtime_session_start", {"scene": "res://flood.tscn"})
            sid = start["session"]["id"]
            shot = await answer("runtime_screenshot_capture", {"session_id": sid})
            assert shot["outcome"] == "ok" and shot["preview"] is None, shot
            listed = await answer("runtime_session_list", {})
            assert [s["id"] for s in listed["sessions"]] == [sid]
            big = await answer("server_profile", {})  # 33 tools' availability: no room
            said = re.fullmatch(
                r"the answer would be (\d+) bytes as sent, over max_output_bytes "
                r"\(1024 bytes as sent\); ask for less",
                big["message"],
            )
            assert big["outcome"] == "too_large" and said and int(said[1]) > limit, big
            await answer("runtime_session_stop", {"session_id": sid})
