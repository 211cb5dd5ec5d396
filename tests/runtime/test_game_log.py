"""Hearing a game: its own output, with levels and sources, paged, bounded, captured."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator

import anyio
import pytest

from tests.mcp.conftest import Connect, transport_factory
from tests.runtime.conftest import require_godot
from tests.runtime.test_captures import fetch, ok
from tests.support import engines
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

LAB_GD = """\
extends Node2D

func _ready():
\tprint("hello from the game")
\tprinterr("this goes to stderr")
\tpush_warning("careful now")
\tcall_deferred("_boom")

func _boom():
\tvar nothing = null
\tnothing.explode()
"""

FLOOD_GD = """\
extends Node2D

func _ready():
\tfor i in range(30000):
\t\tprint("flood line %d %s" % [i, "x".repeat(60)])
\tprint("flood done")
"""


@pytest.fixture(scope="module")
def log_env(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[ServedProject]:
    base = tmp_path_factory.mktemp(f"log-{engine.name}")
    project = engine.copy_demo(base / "demo")
    for name, source in (("lab", LAB_GD), ("flood", FLOOD_GD)):
        (project / f"{name}.gd").write_text(source)
        (project / f"{name}.tscn").write_text(engine.scene(f"{name}.gd"))
    served = serve_project(project, base / "state")
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def log_connect(request: pytest.FixtureRequest, log_env: ServedProject) -> Connect:
    return transport_factory(request.param, log_env)


async def _read_all(c, sid: str, **args) -> list[dict]:
    lines: list[dict] = []
    cursor = None
    while True:
        page = await ok(
            c,
            "runtime.log.read",
            {"session_id": sid, **({"cursor": cursor} if cursor else {}), **args},
        )
        lines += page["lines"]
        if not page["lines"]:
            return lines
        cursor = page["next_cursor"]


async def _start(c, scene: str, mode: str = "headless") -> str:
    answer = await ok(c, "runtime.session.start", {"mode": mode, "scene": scene})
    return answer["session"]["id"]


@pytest.mark.parametrize("mode", ["headless", "windowed"])
async def test_the_log_has_levels_streams_and_the_source_of_a_runtime_error(log_connect, mode):
    if mode == "windowed":
        require_godot("godot3", "Xvfb")
    with anyio.fail_after(90):
        async with log_connect() as c:
            sid = await _start(c, "res://lab.tscn", mode)
            errors = await ok(
                c,
                "runtime.log.read",
                {"session_id": sid, "min_level": "error", "wait_seconds": 20},
            )
            (boom,) = errors["lines"]
            assert boom["level"] == "error" and boom["stream"] == "stderr"
            assert "explode" in boom["text"]
            assert boom["source"] == {
                "path": "res://lab.gd",
                "line": 11,
                "code": "nothing.explode()",
            }
            every = await _read_all(c, sid, max_lines=2)  # pages of two, no line twice
            seqs = [line["seq"] for line in every]
            assert seqs == sorted(set(seqs))
            texts = {line["text"]: line for line in every}
            hello = texts["hello from the game"]
            assert (hello["level"], hello["stream"]) == ("print", "stdout")
            assert texts["this goes to stderr"]["stream"] == "stderr"
            warning = next(line for line in every if "careful now" in line["text"])
            assert warning["level"] == "warning"
            assert not any(line["text"].strip().startswith("At:") for line in every)
            # The engine's start-up lines are kept and marked, and only they are.
            banner = next(line for line in every if line["text"].startswith("Godot Engine v"))
            assert (banner["level"], banner.get("startup")) == ("print", True)
            marked = [line for line in every if line.get("startup")]
            kinds = ("Godot Engine v", "locale", "OpenGL", "Vulkan", "VK_KHR", "V-Sync", "audio")
            odd = [ln["text"] for ln in marked if not any(k in ln["text"] for k in kinds)]
            assert not odd, odd
            assert not hello.get("startup") and not boom.get("startup")
            shot = (await ok(c, "runtime.log.capture", {"session_id": sid}))["artifact"]
            assert shot["mime_type"] == "text/plain; charset=utf-8"
            text = (await fetch(c, shot)).decode()
            assert "hello from the game" in text and "(res://lab.gd:11)" in text
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_a_flood_of_output_is_bounded_counted_and_keeps_the_server_answering(log_connect):
    with anyio.fail_after(120):
        async with log_connect() as c:
            sid = await _start(c, "res://flood.tscn")
            started = time.monotonic()
            while time.monotonic() - started < 60:
                page = await ok(c, "runtime.log.read", {"session_id": sid, "max_lines": 1000})
                if any(line["text"] == "flood done" for line in page["lines"]) or page["dropped"]:
                    break
                await ok(c, "server.profile")
            first = await ok(c, "runtime.log.read", {"session_id": sid, "max_lines": 1000})
            assert first["dropped"] > 0  # more than the buffer keeps: counted, not lost silently
            assert len(first["lines"]) <= 1000
            # An answer never passes max_output_bytes, and a cursor from the start says how
            # many lines fell out before it: exactly those before the first line it answers.
            assert len(json.dumps(first)) <= 512 * 1024
            start_cursor = base64.urlsafe_b64encode(b"log:0").decode().rstrip("=")
            old = await ok(c, "runtime.log.read", {"session_id": sid, "cursor": start_cursor})
            assert old["lines"] and old["dropped"] == old["lines"][0]["seq"] > 0
            await ok(c, "runtime.session.stop", {"session_id": sid})


async def test_log_refusals(log_connect, log_env):
    with anyio.fail_after(60):
        async with log_connect() as c:
            r = await c.call_tool("runtime_log_read", {"session_id": "A" * 22})
            assert r.structured_content["outcome"] == "not_found"
            sid = (await ok(c, "runtime.session.start", {"mode": "headless"}))["session"]["id"]
            r = await c.call_tool("runtime_log_read", {"session_id": sid, "cursor": "bogus"})
            assert r.structured_content["outcome"] == "invalid_argument"
            r = await c.call_tool("runtime_log_read", {"session_id": sid, "max_lines": 0})
            assert r.structured_content["outcome"] == "invalid_argument"
            if log_connect.transport == "http":  # another principal: the uniform refusal
                async with log_env.connect("http", "bob") as other:
                    r = await other.call_tool("runtime_log_read", {"session_id": sid})
                    assert r.structured_content == {
                        "outcome": "not_found",
                        "message": "no such game session",
                    }
            await ok(c, "runtime.session.stop", {"session_id": sid})


ENV_GD = """\
extends Node2D

func _ready():
\tfor key in ["AWS_SECRET_ACCESS_KEY", "SOME_DATABASE_URL", "GITHUB_TOKEN", "MY_APP_SETTING",
\t\t\t"PWD", "LANG", "PATH"]:
\t\tprint("ENV %s=[%s]" % [key, OS.get_environment(key)])
\tprint("LEAK {leak}")
\tprint("DONE")
"""


async def test_a_game_sees_none_of_the_servers_secrets_and_its_log_shows_none(tmp_path):
    """The server's tokens and credentials never reach a game; a secret the project brings in
    some other way (here: written into its script) is scrubbed from its log."""
    require_godot("godot3", "Xvfb")
    engine = engines.current()
    password = "hunter2-db-password"
    secrets = {
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-K7MDENG-bPxRfiCY",
        "SOME_DATABASE_URL": f"postgresql://mcp:{password}@db.internal/mcp",
        "GITHUB_TOKEN": "ghp_0123456789abcdefABCDEF",
    }
    project = engine.copy_demo(tmp_path / "demo")
    leak = f"db {password} gh {secrets['GITHUB_TOKEN']}"
    (project / "env.gd").write_text(ENV_GD.replace("{leak}", leak))
    (project / "env.tscn").write_text(engine.scene("env.gd"))
    env = {**secrets, "MY_APP_SETTING": "harmless"}
    with anyio.fail_after(90):
        async with stdio_client(project, tmp_path / "state", env=env) as c:
            sid = await _start(c, "res://env.tscn")
            texts: list[str] = []
            while "DONE" not in texts:
                await anyio.sleep(0.1)
                texts = [line["text"] for line in await _read_all(c, sid)]
            await ok(c, "runtime.session.stop", {"session_id": sid})
    seen = {t.split("=", 1)[0][4:]: t.split("=", 1)[1] for t in texts if t.startswith("ENV ")}
    for name in ("AWS_SECRET_ACCESS_KEY", "SOME_DATABASE_URL", "GITHUB_TOKEN", "PWD"):
        assert seen[name] == "[]", (name, seen)
    assert seen["MY_APP_SETTING"] == "[]"  # not something Godot needs: not passed on
    assert seen["LANG"] != "[]" and seen["PATH"] != "[]"
    assert "LEAK db <secret> gh <secret>" in texts
    every = "\n".join(texts)
    assert all(value not in every for value in [*secrets.values(), password])
