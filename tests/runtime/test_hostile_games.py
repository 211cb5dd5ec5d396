"""Attacks on a real game over both transports, replayed: game arguments that once steered the
bridge or the engine, and a project reading the server's environment and memory."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import anyio
import pytest

from godot_mcp.engine.process.redact import printable
from tests.mcp.conftest import Connect, transport_factory
from tests.runtime.test_captures import ok
from tests.runtime.test_see_in_one_call import PROBE
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

SECRET = "hostile-test-" + secrets.token_hex(12)

# A project that prints what it can read of its parent (the server): the environment's size and
# how often the server's secret shows in it, how many bytes of its first mapping it reads from
# its memory, and, as a control, how often the bridge's secret shows in its own environment.
SPY = """extends Node

func _ready():
	var me = OS.get_process_id()
	var script = "p=$(cut -d' ' -f4 /proc/%d/stat); " % me
	script += "echo SPY_PARENT_ENV $(cat /proc/$p/environ 2>/dev/null | wc -c) "
	script += "$(cat /proc/$p/environ 2>/dev/null | tr '\\\\0' '\\\\n' | grep -c %s); "
	script += "a=$(head -1 /proc/$p/maps 2>/dev/null | cut -d- -f1); "
	script += "echo SPY_MEM $(dd if=/proc/$p/mem bs=64 count=1 iflag=skip_bytes "
	script += "skip=$((0x${a:-0})) 2>/dev/null | wc -c); "
	script += "echo SPY_OWN_ENV $(tr '\\\\0' '\\\\n' < /proc/%d/environ | grep -c GODOT_MCP_SECRET)"
	script = script % [MARK, me]
	if not OS.has_method("get_cmdline_user_args"):  # Godot 3 runs it through sh -c "…" first
		script = script.replace("$", "\\\\$")
	var out = []
	OS.execute("/bin/sh", ["-c", script]__BLOCKING__, out)
	for chunk in out:
		for line in str(chunk).split("\\n"):
			if line.begins_with("SPY_"):
				print(line)
""".replace("MARK", '"' + SECRET + '"')


CONTROL = """extends Node

func _ready():
	var odd = Node.new()
	odd.name = "a" + char(1) + "b" + char(31)
	add_child(odd)
"""


@pytest.fixture(scope="module")
def hostile_env(
    tmp_path_factory: pytest.TempPathFactory, engine: Engine
) -> Iterator[ServedProject]:
    """The demo with a spying scene and an argument probe, served with a secret in the
    server's environment."""
    base = tmp_path_factory.mktemp(f"hostile-{engine.name}")
    project = engine.copy_demo(base / "demo")
    spy = SPY.replace("__BLOCKING__", ", true" if engine.major == 3 else "")
    (project / "spy.gd").write_text(spy)
    (project / "spy.tscn").write_text(engine.scene("spy.gd", "Node"))
    (project / "control.gd").write_text(CONTROL)
    (project / "control.tscn").write_text(engine.scene("control.gd", "Node"))
    (project / "probe.gd").write_text(PROBE)
    (project / "probe.tscn").write_text(engine.scene("probe.gd", "Node"))
    served = serve_project(project, base / "state", env={"GODOT_MCP_TEST_TOKEN": SECRET})
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, hostile_env: ServedProject) -> Connect:
    return transport_factory(request.param, hostile_env)


async def _lines(c, sid: str, prefix: str, count: int) -> list[str]:
    """The first ``count`` log lines beginning with ``prefix``."""
    with anyio.fail_after(30):
        while True:
            page = await ok(c, "runtime.log.read", {"session_id": sid, "max_lines": 1000})
            found = [ln["text"] for ln in page["lines"] if ln["text"].startswith(prefix)]
            if len(found) >= count:
                return found[:count]
            await anyio.sleep(0.2)


async def test_a_game_cannot_read_the_servers_environment_or_memory(connect: Connect):
    with anyio.fail_after(120):
        async with connect() as c:
            sid = (await ok(c, "runtime.session.start", {"scene": "res://spy.tscn"}))["session"]
            parent, memory, own = await _lines(c, sid["id"], "SPY_", 3)
            assert own == "SPY_OWN_ENV 1"  # the game reads its own environment: the probe works
            assert parent == "SPY_PARENT_ENV 0 0"  # and nothing of the server's
            assert memory == "SPY_MEM 0"
            await ok(c, "runtime.session.stop", {"session_id": sid["id"]})


async def test_game_arguments_reach_the_game_exactly_or_are_refused(
    connect: Connect, engine: Engine
):
    """What once reached the bridge (a leading space, ``%20``) is refused; arguments spelled
    like the bridge's old ones reach the game as they are and change nothing."""
    refused = {
        " --mcp-scene=/tmp/x/evil.tscn": "begins or ends with a space or control character",
        "--mcp-port=1\t": "begins or ends with a space or control character",
        "%20--mcp-port=1": "holds a %XX sequence",
        "a%2fb": "holds a %XX sequence",
        "\ufeff--path": "begins with a byte-order mark",
        "\ufeff--script": "begins with a byte-order mark",
    }
    passed = ["--mcp-scene=/tmp/x/evil.tscn/", "--mcp-port=1", "100%", "50%-off", "a b", "a\ufeffb"]
    with anyio.fail_after(120):
        async with connect() as c:
            for arg, why in refused.items():
                r = await c.call_tool("runtime_session_start", {"args": ["ok", arg]})
                assert r.structured_content["outcome"] == "invalid_argument", arg
                assert r.structured_content["message"].startswith(f"args[1] {why}"), arg
            start = {"scene": "res://probe.tscn", "args": passed}
            sid = (await ok(c, "runtime.session.start", start))["session"]["id"]
            (line,) = await _lines(c, sid, "GAME_ARGS ", 1)
            got = line.removeprefix("GAME_ARGS <").removesuffix(">").split("><")
            # The log shows a game's text without invisible characters (the BOM inside
            # "a\ufeffb"); the lengths the game counted say it got each one whole.
            shown = [printable(p) for p in passed]
            assert got == shown if engine.major >= 4 else got[-len(passed) :] == shown
            (counted,) = await _lines(c, sid, "GAME_ARG_LENGTHS ", 1)
            lengths = counted.removeprefix("GAME_ARG_LENGTHS <").removesuffix(">").split("><")
            assert lengths[-len(passed) :] == [str(len(p)) for p in passed]
            tree = await ok(c, "runtime.scene.tree", {"session_id": sid, "depth": 2})
            assert tree["current_scene"] == "/root/Root"
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_options_godot3_reads_itself_are_refused_there(connect: Connect, engine: Engine):
    """``/?`` is in Godot 3's option table but not in its --help: it printed the help and the
    game exited 255. Refused by name there; an ordinary argument on Godot 4."""
    with anyio.fail_after(120):
        async with connect() as c:
            r = await c.call_tool(
                "runtime_session_start", {"scene": "res://probe.tscn", "args": ["/?"]}
            )
            if engine.major == 3:
                assert r.structured_content == {
                    "outcome": "invalid_argument",
                    "message": "args[0] '/?' is an option Godot 3 reads itself, even after --; "
                    "spell it another way (e.g. with =value)",
                }
                return
            sid = r.structured_content["session"]["id"]
            assert await _lines(c, sid, "GAME_ARGS ", 1) == ["GAME_ARGS </?>"]
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_control_characters_in_a_games_strings_keep_its_session(connect: Connect):
    """Godot 3 writes a string's control characters raw in its JSON: the session reads them
    and goes on, instead of losing its bridge over a node's name; the client gets the name
    without them."""
    with anyio.fail_after(120):
        async with connect() as c:
            start = {"mode": "headless", "scene": "res://control.tscn"}
            sid = (await ok(c, "runtime.session.start", start))["session"]["id"]
            whole = {"session_id": sid, "depth": 2, "collapse": False}  # every node named
            tree = await ok(c, "runtime.scene.tree", whole)
            names = [n["name"] for n in tree["nodes"]]
            assert "ab" in names and not any("\x01" in n for n in names), names
            perf = await ok(c, "runtime.perf.read", {"session_id": sid})
            assert perf["nodes"] == tree["total"]
            await ok(c, "runtime.session.stop", {"session_id": sid})
