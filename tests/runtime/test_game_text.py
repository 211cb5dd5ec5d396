"""What a real game hands back (a property read, written or waited for, a method's result, a
refusal's words, a log line) reaches the client as the debugger's texts do: without escape
sequences or control characters (a value's own newlines and tabs stay) and naming no private
path, on every engine, through the official SDK client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.servers import stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot]

PROJECT = """config_version=4

[application]

config/name="game text"
run/main_scene="res://text.tscn"
"""

ESC, BEL = "char(27)", "char(7)"
# "a", an OSC title change, a screen clear, "b", a newline, "c", a tab, "d", a control.
ODD = (
    f'"a" + {ESC} + "]0;pwned" + {BEL} + {ESC} + "[2Jb" + char(10) + "c" + char(9) + "d" + char(1)'
)
TEXT_GD = f"""extends Node2D

var odd = {ODD}
var where = ""
SETTER

func echo(value):
\treturn value

# Replies to the next ids, ahead of the bridge's own: numbers JSON has none for.
func forge():
\tfor i in range(1, 200):
\t\tvar line = '{{"id":%d,"ok":true,"result":[NaN,1e400,{{"k":-Infinity}},-1e999,2.5]}}\\n' % i
\t\tget_tree().get("_peer").put_data(UTF8(line))
\treturn 1

func _ready():
\tprint("TEXT [" + {BEL} + {ESC} + "[31mx" + char(1) + char(0x9b) + "]")
"""
# A setter that keeps something else than it was given: the refusal quotes the game's value.
SETTER3 = """var echoed = "" setget _set_echoed

func _set_echoed(value):
\techoed = str(value) + odd
"""
SETTER4 = """var echoed = "":
\tset(value):
\t\techoed = str(value) + odd
"""


@pytest.fixture(scope="module")
def text_project(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[Path]:
    project = tmp_path_factory.mktemp(f"text-{engine.name}") / "project"
    project.mkdir()
    (project / "project.godot").write_text(engine.port(PROJECT))
    script = TEXT_GD.replace("SETTER", SETTER3 if engine.major == 3 else SETTER4)
    script = script.replace(
        "UTF8(line)", "line.to_utf8()" if engine.major == 3 else "line.to_utf8_buffer()"
    )
    (project / "text.gd").write_text(script)
    (project / "text.tscn").write_text(engine.scene("text.gd"))
    yield project


def plain(text: str) -> bool:
    """No escape, no control character but newline and tab."""
    return all(c in "\n\t" or (c >= " " and not "\x7f" <= c <= "\x9f") for c in text)


async def test_a_games_values_and_words_reach_the_client_printable_and_scrubbed(
    text_project: Path, tmp_path: Path
):
    state = tmp_path / "state"
    with anyio.fail_after(120):
        async with stdio_client(text_project, state) as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            root = {"session_id": sid, "path": "/root/Root"}
            read = await ok(c, "runtime.node.get", {**root, "properties": ["odd"]})
            assert read["values"] == {"odd": "ab\nc\td"}

            stored = f"{state}/saves/x\x1b[31m"
            written = await ok(c, "runtime.node.set", {**root, "values": {"where": stored}})
            assert written["values"] == {"where": "<state>/saves/x"}
            again = await ok(c, "runtime.node.get", {**root, "properties": ["where"]})
            assert again["values"] == {"where": "<state>/saves/x"}
            called = await ok(
                c, "runtime.node.call", {**root, "method": "echo", "args": [f"{state}/y\x1b[2J"]}
            )
            assert called["result"] == "<state>/y"
            until = {"node": "/root/Root", "property": "where", "equals": "<state>/saves/x"}
            waited = await ok(c, "runtime.wait", {"session_id": sid, "until": until})
            assert waited["value"] == "<state>/saves/x"

            refused = await c.call_tool(
                "runtime_node_set", {**root, "values": {"echoed": f"{state}/z"}}
            )
            body = refused.structured_content
            assert body["outcome"] == "invalid_argument", body
            assert body["message"].startswith('echoed did not take "<state>/z": it reads back '), (
                body
            )
            assert plain(body["message"]) and str(state) not in body["message"], body

            log = await ok(c, "runtime.log.read", {"session_id": sid, "max_lines": 1000})
            texts = [line["text"] for line in log["lines"]]
            assert "TEXT [x]" in texts, texts
            assert all(plain(t) for t in texts), [t for t in texts if not plain(t)]
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_numbers_a_game_forges_and_characters_past_the_first_plane_reach_the_client_as_json(
    text_project: Path, tmp_path: Path
):
    """``NaN``, ``Infinity`` and ``1e400`` in a game's reply are no JSON numbers: they answer
    as a Godot value says them, never as ``null`` or as text a JSON reader refuses. A
    character past U+FFFF reaches the game and comes back whole (Godot 3 did not join the two
    escapes it was sent as), and a refusal repeating a long one is cut like any other."""
    with anyio.fail_after(120):
        async with stdio_client(text_project, tmp_path / "state") as c:
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            root = {"session_id": sid, "path": "/root/Root"}
            smile = "\U0001f600abc"
            called = await ok(c, "runtime.node.call", {**root, "method": "echo", "args": [smile]})
            assert called["result"] == smile
            long = "\U0001f600" + "x" * 3000
            refused = await c.call_tool("runtime_node_set", {**root, "values": {long: 1}})
            message = refused.structured_content["message"]
            assert long[:200] + "…" in message and long[:201] not in message, message
            result = await c.call_tool("runtime_node_call", {**root, "method": "forge"})
            nan, inf, ninf = ({"type": "float", "value": v} for v in ("nan", "inf", "-inf"))
            assert result.structured_content["result"] == [nan, inf, {"k": ninf}, ninf, 2.5]
            assert (
                json.loads(result.content[0].text, parse_constant=strict)
                == result.structured_content
            )
            # (the game answered ids ahead of the server: this session's later replies are
            # forged ones; a new session would start clean)
            await ok(c, "runtime.session.stop", {"session_id": sid})


def strict(word: str) -> None:
    raise AssertionError(f"{word} is no JSON number")
