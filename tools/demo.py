"""The godot-mcp demo: a real MCP client session against examples/demo (Godot 4).

    python tools/demo.py [--out demo-output] [--godot 4|3]

``--godot 3`` runs the Godot 3 example, examples/demo3, instead.

Starts ``godot-mcp serve`` over stdio with the official MCP SDK client, starts a
windowed game session, captures a screenshot and a recording, exports the
project (a pack, and a full Linux build when export templates exist), reads
every artifact back through ``resources/read`` in byte ranges, checks each
SHA-256 and saves the files under ``--out``. Then it serves the same project over
authenticated HTTP and shows that a pack export reads back byte-identical.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from debian_templates import install_debian_templates
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.tokens import add_token

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = {4: ROOT / "examples" / "demo", 3: ROOT / "examples" / "demo3"}
PROJECT = PROJECTS[4]
# Debian's own Godot 4 templates, and where Godot 4.6.3 looks for them under XDG_DATA_HOME.
GODOT4_TEMPLATES = {
    "linux_release.x86_64": "godot-template-release",
    "linux_debug.x86_64": "godot-template-debug",
}
GODOT4_TEMPLATE_DIR = Path("godot") / "export_templates" / "4.6.3.stable"


def link_godot4_templates(data_home: Path) -> bool:
    """Link Debian's Godot 4 templates where Godot 4.6.3 looks for them (False if absent)."""
    found = {name: shutil.which(binary) for name, binary in GODOT4_TEMPLATES.items()}
    if not all(found.values()):
        return False
    target = data_home / GODOT4_TEMPLATE_DIR
    target.mkdir(parents=True, exist_ok=True)
    for name, binary in found.items():
        (target / name).symlink_to(str(binary))
    return True


def serve_argv(state: Path, *extra: str) -> list[str]:
    """``godot-mcp serve`` for the demo project and state dir."""
    return [
        sys.executable,
        "-m",
        "godot_mcp.cli.serve",
        "serve",
        "--project",
        str(PROJECT),
        "--state-dir",
        str(state),
        *extra,
    ]


def say(text: str) -> None:
    print(text, flush=True)


async def answer(
    client: Client, tool: str, args: dict[str, Any] | None = None, **kw: Any
) -> CallToolResult:
    """A tool's whole answer (its content blocks too), refused unless ``ok``."""
    # Tools are listed with "_" for "."; the listed name lets the client check the answer
    # against the tool's outputSchema.
    result = await client.call_tool(tool.replace(".", "_"), args or {}, **kw)
    body = result.structured_content or {}
    if body.get("outcome") != "ok":
        raise SystemExit(f"demo: {tool} answered {body.get('outcome')}: {body.get('message')}")
    return result


async def call(client: Client, tool: str, args: dict[str, Any] | None = None, **kw: Any) -> dict:
    return (await answer(client, tool, args, **kw)).structured_content or {}


def save_preview(result: CallToolResult, dest: Path) -> None:
    """Save the image a capture answered (what the model saw), and say what it shows."""
    preview = (result.structured_content or {}).get("preview")
    images = [base64.b64decode(b.data) for b in result.content if b.type == "image"]
    if not images or preview is None:
        raise SystemExit(f"demo: {dest.stem}: the capture answered no preview image")
    dest.write_bytes(images[0])
    shown = f", frames {preview['frames']}" if "frames" in preview else ""
    say(f"  {dest.name}: {preview['width']}x{preview['height']} in the answer itself{shown}")


async def download(client: Client, artifact: dict, dest: Path) -> None:
    """Read an artifact in ranges through resources/read, check its SHA-256, save it."""
    data = bytearray()
    reads = 0
    while len(data) < artifact["size"] or reads == 0:
        r = await client.read_resource(
            f"{artifact['uri']}?offset={len(data)}" if data else artifact["uri"]
        )
        data += base64.b64decode(r.contents[0].blob)
        reads += 1
    digest = hashlib.sha256(data).hexdigest()
    if digest != artifact["sha256"] or len(data) != artifact["size"]:
        raise SystemExit(f"demo: {dest.name} does not match its SHA-256")
    dest.write_bytes(data)
    extra = ""
    if "frames" in artifact:
        extra = f", {artifact['width']}x{artifact['height']}, {artifact['frames']} frame(s)"
    say(
        f"  saved {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}: "
        f"{len(data)} bytes in {reads} read(s){extra}, sha256 {digest[:16]}… verified"
    )


async def export(client: Client, preset: str, kind: str, out: Path) -> list[dict]:
    started = await call(client, "project.export", {"preset": preset, "kind": kind})
    export_id = started["export"]["id"]
    seen: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)

    t = time.monotonic()
    body = await call(
        client,
        "project.export.status",
        {"export_id": export_id, "wait_seconds": 50},
        progress_callback=progress,
    )
    state = body["export"]["state"]
    say(
        f"  export {preset!r} ({kind}): {state} in {time.monotonic() - t:.1f} s, "
        f"{len(seen)} progress notification(s)"
    )
    if state != "succeeded":
        say(f"    error: {body['export'].get('error')}")
        return []
    for artifact in body["export"]["outputs"]:
        await download(client, artifact, out / artifact["name"])
    return body["export"]["outputs"]


async def stdio_part(out: Path, state: Path, env: dict[str, str]) -> dict[str, str]:
    argv = serve_argv(state)
    params = StdioServerParameters(
        command=argv[0],
        args=argv[1:],
        env=env,
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        profile = await call(client, "server.profile")
        info = await call(client, "project.info")
        say(
            f"connected over stdio: Godot {profile['godot']['version']}, project "
            f"{info['name']!r} (generation {info['generation']}, main scene {info['main_scene']}, "
            f"presets {info['export_presets']})"
        )
        unavailable = {k: v for k, v in profile["availability"].items() if v != "available"}
        say(f"  tools: {len(profile['availability'])}, unavailable: {unavailable or 'none'}")

        checked = await call(client, "project.check")
        counts = checked["checked"]
        say(
            f"project check: {counts['scripts']} script(s), {counts['scenes']} scene(s), "
            f"errors: {checked['errors'] or 'none'}"
        )
        if checked["errors"]:
            raise SystemExit("the demo project should check clean")

        session = (await call(client, "runtime.session.start"))["session"]
        say(f"game session {session['id'][:8]}… {session['state']} ({session['mode']})")
        sid = session["id"]
        shot = await answer(client, "runtime.screenshot.capture", {"session_id": sid})
        await download(client, (shot.structured_content or {})["artifact"], out / "screenshot.png")
        save_preview(shot, out / "screenshot-preview.png")
        rec = await answer(
            client, "runtime.recording.capture", {"session_id": sid, "frames": 20, "fps": 10}
        )
        await download(client, (rec.structured_content or {})["artifact"], out / "recording.png")
        save_preview(rec, out / "contact-sheet.png")
        await runtime_loop(client, session["id"], out)
        stopped = await call(client, "runtime.session.stop", {"session_id": session["id"]})
        say(f"  session stopped: exit code {stopped['exit_code']}")

        await debug_step(client)

        say("exports:")
        packs = await export(client, "Pack", "pack", out)
        linux = out / "linux"
        linux.mkdir(exist_ok=True)
        await export(client, "Linux/X11", "release", linux)
        listed = (await client.list_resources()).resources
        say(f"resources/list shows {len(listed)} artifact(s) for this client")
        return {a["name"]: a["sha256"] for a in packs}


async def debug_step(client: Client) -> None:
    """The engine's own debugger: stop the spinner at a breakpoint, show where and one local,
    then let it run on."""
    where = "res://spinner.gd:20"  # t += -delta if reversed else delta
    args = {"mode": "headless", "debug": True, "breakpoints": [where]}
    sid = (await call(client, "runtime.session.start", args))["session"]["id"]
    at = await call(client, "runtime.debug.state", {"session_id": sid, "wait_seconds": 10})
    stack = " <- ".join(f"{f['function']} {f['path']}:{f['line']}" for f in at["stack"])
    values = await call(client, "runtime.debug.variables", {"session_id": sid})
    say(f"debugger: stopped at a {at['reason']}: {stack}; delta = {values['locals']['delta']}")
    await call(client, "runtime.debug.breakpoints", {"session_id": sid, "clear": [where]})
    going = await call(client, "runtime.debug.control", {"session_id": sid, "action": "continue"})
    waited = await call(client, "runtime.wait", {"session_id": sid, "until": {"frames": 10}})
    say(f"  continued: {going['state']}, frame {waited['frame']} reached")
    await call(client, "runtime.session.stop", {"session_id": sid})


async def runtime_loop(client: Client, sid: str, out: Path) -> None:
    """Hear, touch and inspect the game: its log, an action, a wait, its tree, a picture."""
    log = await call(client, "runtime.log.read", {"session_id": sid})
    texts = [line["text"] for line in log["lines"]]
    say(
        f"  log: {len(texts)} line(s) so far, the game said {texts[-1]!r}"
        if texts
        else "  log: empty"
    )
    sent = await call(
        client,
        "runtime.input.send",
        {"session_id": sid, "events": [{"type": "action", "action": "flip"}]},
    )
    until = {"node": "/root/Main/Spinner", "property": "reversed", "equals": True}
    reached = await call(client, "runtime.wait", {"session_id": sid, "until": until})
    heard = await call(
        client,
        "runtime.log.read",
        {"session_id": sid, "cursor": log["next_cursor"], "min_level": "print"},
    )
    said = [line["text"] for line in heard["lines"]]
    say(
        f"  pressed 'flip' (frame {sent['frame']}); the spinner reversed by frame "
        f"{reached['frame']}; the game said {said[-1]!r}"
        if said
        else "  pressed 'flip'"
    )
    tree = await call(client, "runtime.scene.tree", {"session_id": sid, "root": "/root/Main"})
    shown = ", ".join(f"{n['path']} ({n['class']})" for n in tree["nodes"])
    say(f"  scene tree: {tree['total']} node(s): {shown}")
    after = (await call(client, "runtime.screenshot.capture", {"session_id": sid}))["artifact"]
    await download(client, after, out / "after-input.png")


async def http_part(out: Path, state: Path, env: dict[str, str], stdio_packs: dict[str, str]):
    store = ArtifactStore(state)
    token = add_token(store.engine, "demo")
    store.close()
    log = open(out / "http-server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        serve_argv(state, "--transport", "http", "--port", "0"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=env,
        cwd=ROOT,
    )
    try:
        url = None
        with anyio.fail_after(60):
            while url is None:
                for line in (out / "http-server.log").read_text().splitlines():
                    if "listening on " in line:
                        url = line.split("listening on ", 1)[1].strip()
                if proc.poll() is not None:
                    raise SystemExit("demo: the HTTP server exited")
                await anyio.sleep(0.05)
        say(f"HTTP server at {url} (bearer token of principal 'demo')")
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            http_dir = out / "http"
            http_dir.mkdir(exist_ok=True)
            packs = await export(client, "Pack", "pack", http_dir)
            same = {a["name"]: a["sha256"] for a in packs} == stdio_packs
            say(f"  pack over HTTP is byte-identical to the one over stdio: {same}")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "demo-output"))
    ap.add_argument("--godot", type=int, choices=(4, 3), default=4, help="the engine (default 4)")
    args = ap.parse_args()
    global PROJECT
    PROJECT = PROJECTS[args.godot]
    out = Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    state = out / "state"
    env = dict(os.environ)
    data_home = out / "xdg-data"
    if args.godot == 4:
        env.setdefault("GODOT_BIN", "godot")
        if link_godot4_templates(data_home):
            env["XDG_DATA_HOME"] = str(data_home)
            say("export templates: Debian's godot-template-release/-debug linked for Godot 4.6.3")
    else:
        env.setdefault("GODOT_BIN", "godot3")
        if install_debian_templates(data_home):
            env["XDG_DATA_HOME"] = str(data_home)
            say("export templates: Debian's godot3-runner linked as the Linux templates")
    stdio_packs = await stdio_part(out, state, env)
    await http_part(out, state, env, stdio_packs)
    say("")
    say("Use it from an MCP client:")
    say(
        f'  stdio: {{"command": "{ROOT}/.venv/bin/godot-mcp", "args": ["serve", "--project", '
        f'"{PROJECT}"]}}'
    )
    say("  http:  .venv/bin/godot-mcp-admin token add me   # prints TOKEN once")
    say(f"         .venv/bin/godot-mcp serve --project {PROJECT} --transport http")
    say(
        '         {"url": "http://127.0.0.1:8765/mcp", '
        '"headers": {"Authorization": "Bearer TOKEN"}}'
    )
    say(f"\nfiles saved in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
