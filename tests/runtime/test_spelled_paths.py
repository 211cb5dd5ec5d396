"""A real game prints its own scratch and state paths spelled every way it can (percent-encoded
wholly or in part, in either case, twice, with ``//``, ``/./`` and ``x/../``): the log a client
reads names none of them, on both engines and both transports. The game learns the paths as any
game would: its user data dir, and its environment (``XAUTHORITY``, the XDG dirs)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.godot.test_redact_spellings import decoded
from tests.mcp.conftest import Connect, transport_factory
from tests.runtime.conftest import require_godot
from tests.runtime.test_captures import fetch, ok
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

SPELL = """extends Node2D

func enc_all(s, lower):
\tvar out = ""
\tfor b in s.__UTF8__():
\t\tvar h = "%02X" % b
\t\tif lower:
\t\t\th = h.to_lower()
\t\tout += "%" + h
\treturn out

func spellings(d):
\tvar half = d.length() / 2
\treturn [
\t\td,
\t\td.replace("/", "%2F"),
\t\td.replace("/", "%2f"),
\t\td.__ENCODE__(),
\t\tenc_all(d, false),
\t\tenc_all(d, true),
\t\td.substr(0, half) + enc_all(d.substr(half, d.length() - half), true),
\t\td.replace("/", "%252F"),
\t\td.replace("/", "/./"),
\t\td.replace("/", "//"),
\t\td.replace("/", "/x/../"),
\t\t"/.." + d,
\t\td.get_base_dir() + "/../" + d.get_base_dir().get_file() + "/" + d.get_file(),
\t\td.replace("/", "/./").replace("/", "%2F"),
\t]

func _ready():
\tvar dirs = []
\tvar d = OS.get_user_data_dir()
\twhile d != "/" and d != "":
\t\tdirs.append(d)
\t\td = d.get_base_dir()
\tfor name in ["XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "HOME", "TMPDIR"]:
\t\tif OS.get_environment(name) != "":
\t\t\tdirs.append(OS.get_environment(name))
\tvar n = 0
\tfor dir in dirs:
\t\tfor s in spellings(dir):
\t\t\tprint("spelled: [" + s + "]/user.cfg")
\t\t\tn += 1
\tprinterr("spelled on stderr: " + OS.get_user_data_dir().replace("/", "%2f"))
\tprint("spellings done %d" % (n + 1))
"""


def spell_script(major: int) -> str:
    utf8, encode = ("to_utf8", "percent_encode") if major == 3 else ("to_utf8_buffer", "uri_encode")
    return SPELL.replace("__UTF8__", utf8).replace("__ENCODE__", encode)


@pytest.fixture(scope="module")
def spelled(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[ServedProject]:
    base = tmp_path_factory.mktemp(f"spelled-{engine.name}")
    project = engine.copy_demo(base / "demo")
    (project / "spell.gd").write_text(spell_script(engine.major))
    (project / "spell.tscn").write_text(engine.scene("spell.gd"))
    state = base / "state"
    # What the game can learn of the server's dirs: its user data dir (XDG_DATA_HOME) in the
    # state dir's scratch, its config dir beside the state dir (and, windowed, an XAUTHORITY).
    env = {
        "DISPLAY": "",
        "XDG_DATA_HOME": str(state / "scratch" / "xdg-data"),
        "XDG_CONFIG_HOME": str(base / "xdg-config"),
    }
    served = serve_project(project, state, env=env)
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, spelled: ServedProject) -> Connect:
    return transport_factory(request.param, spelled)


def private_paths(served: ServedProject) -> list[str]:
    state = Path(served.state_dir)
    found = {str(state), str(state.parent)}
    found |= {os.path.realpath(p) for p in list(found)}
    return sorted(found)


async def read_all(c, sid: str) -> list[dict]:
    lines: list[dict] = []
    cursor = None
    while True:
        args = {"session_id": sid, **({"cursor": cursor} if cursor else {})}
        page = await ok(c, "runtime.log.read", args)
        lines += page["lines"]
        if not page["lines"]:
            return lines
        cursor = page["next_cursor"]


async def test_a_game_printing_its_paths_spelled_every_way_names_none_of_them(spelled, connect):
    require_godot("Xvfb")
    with anyio.fail_after(120):
        async with connect() as c:
            started = await ok(
                c, "runtime.session.start", {"mode": "windowed", "scene": "res://spell.tscn"}
            )
            sid = started["session"]["id"]
            lines = await read_all(c, sid)
            while not any(line["text"].startswith("spellings done") for line in lines):
                await anyio.sleep(0.3)
                lines = await read_all(c, sid)
            shot = (await ok(c, "runtime.log.capture", {"session_id": sid}))["artifact"]
            captured = (await fetch(c, shot)).decode()
            await ok(c, "runtime.session.stop", {"session_id": sid})
    texts = [line["text"] for line in lines]
    (last,) = [t for t in texts if t.startswith("spellings done")]
    spelled_lines = [t for t in texts if t.startswith("spelled")]
    assert len(spelled_lines) == int(last.split()[-1]), texts  # none lost
    assert len(spelled_lines) >= 14 * 4
    private = private_paths(spelled)
    for text in [*texts, *captured.splitlines()]:
        for form in (text, decoded(text)):
            for path in private:
                hit = re.search(re.escape(path) + r"(?![A-Za-z0-9._-])", form)
                assert hit is None, (path, text)
    # The paths were there to find: their placeholders stand in every spelling.
    for placeholder in ("<state>", "<private>"):
        found = [t for t in spelled_lines if placeholder in t]
        assert len(found) >= 14, (placeholder, sorted({t[:60] for t in spelled_lines}))
    encoded = [t for t in spelled_lines if re.search(r"<state>%2[fF]", t)]
    assert encoded, spelled_lines
