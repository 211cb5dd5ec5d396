"""Capture latency: the screenshot tool's wall time against what it cannot avoid.

    python tools/bench_capture.py [--rounds 15] [--one]

On Godot 3 (this host) and Godot 4 (the sid root) in one run, side by side (``--one``: the
engine ``GODOT_BIN`` names only; see ``tools/bench_engines.py``).

For 320x240 and 1280x720 windows of the engine's demo project, in one run: the
``runtime.screenshot.capture`` tool's wall time through an in-process MCP
client, next to the engine's own grab-and-save time (reported by the bridge)
plus the store's registration floor for the same PNG (write + fsync + SHA-256
+ rename). Goal: tool <= 2x that sum (without a preview, ``preview_px: 0``).

The preview (the frame downscaled into the answer): at 1280x720 the same tool with
``preview_px`` 640 and 0 in alternation, the median wall-time difference against a 10 ms
budget (goal: ratio <= 1); and the preview's own making from the frame's pixels (unpack,
downscale, encode) against Pillow decoding the same PNG, which the pixels spare (reported).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from godot_mcp.app import open_app  # noqa: E402
from godot_mcp.config import Settings  # noqa: E402
from godot_mcp.engine.process.locate import locate_godot  # noqa: E402
from godot_mcp.features.game import session as session_module  # noqa: E402
from godot_mcp.features.game.preview import RawFrame, downscale  # noqa: E402
from godot_mcp.store.values import Limits  # noqa: E402
from tools import bench_engines  # noqa: E402
from tools.bench_engines import Row  # noqa: E402

ENGINE_MS: list[float] = []
_original = session_module.GameSession.screenshot


async def _recording_screenshot(self, timeout: float = 15, **kw):  # type: ignore[no-untyped-def]
    capture = await _original(self, timeout, **kw)
    ENGINE_MS.append(capture.engine_ms)
    return capture


def register_floor(dir_: Path, data: bytes) -> float:
    t = time.perf_counter()
    tmp = dir_ / "floor.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, dir_ / hashlib.sha256(data).hexdigest())
    elapsed = time.perf_counter() - t
    for p in dir_.iterdir():
        p.unlink()
    return elapsed


def preview_cost(png: Path, rounds: int) -> tuple[float, float]:
    """Median seconds to make a 640 px preview from a frame's raw pixels (as the bridge
    writes them beside the PNG), and to decode the PNG alone (what the pixels spare)."""
    with Image.open(png) as image:
        pixels = image.convert("RGBA")
    raw = png.with_suffix(".raw")
    raw.write_bytes(pixels.tobytes())
    frame = RawFrame(raw, "RGBA", pixels.width, pixels.height)
    made, decoded = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        with Image.open(png) as image:
            image.load()
        decoded.append(time.perf_counter() - t)
        t = time.perf_counter()
        downscale(png, 640, 1 << 20, frame)
        made.append(time.perf_counter() - t)
    return statistics.median(made), statistics.median(decoded)


async def one_size(
    base: Path, width: int, height: int, rounds: int
) -> tuple[str, float, float, list[Row]]:
    project = base / f"demo{width}"
    demo = "demo" if (locate_godot().major or 3) >= 4 else "demo3"
    shutil.copytree(ROOT / "examples" / demo, project)
    godot = project / "project.godot"
    godot.write_text(
        godot.read_text()
        .replace("width=1280", f"width={width}")
        .replace("height=720", f"height={height}")
    )
    settings = Settings(base / f"state{width}", None, None, Limits())
    floor_dir = base / f"floor{width}"
    floor_dir.mkdir()
    walls, sums = [], []
    version = ""
    async with open_app(settings, project, "stdio") as app, Client(app.server) as c:
        started = await c.call_tool("runtime.session.start", {})
        sid = started.structured_content["session"]["id"]
        version = app.deps.games.sessions[sid].game.engine_version or "?"
        for i in range(rounds + 2):
            ENGINE_MS.clear()
            t = time.perf_counter()
            r = await c.call_tool(
                "runtime.screenshot.capture", {"session_id": sid, "preview_px": 0}
            )
            wall = time.perf_counter() - t
            art = r.structured_content["artifact"]
            assert (art["width"], art["height"]) == (width, height), art
            data = os.urandom(art["size"])
            floor = ENGINE_MS[0] / 1000 + register_floor(floor_dir, data)
            if i >= 2:  # the first frames warm up shaders and caches
                walls.append(wall)
                sums.append(floor)
        extra: list[Row] = []
        if width >= 1280:
            extra = await preview_rows(c, sid, base, rounds)
        await c.call_tool("runtime.session.stop", {"session_id": sid})
    return version, statistics.median(sums), statistics.median(walls), extra


async def preview_rows(c: Client, sid: str, base: Path, rounds: int) -> list[Row]:
    """The preview's added wall time (640 vs 0 in alternation) and its own cost."""
    walls: dict[int, list[float]] = {0: [], 640: []}
    for i in range(2 * rounds + 2):
        px = 640 if i % 2 else 0
        t = time.perf_counter()
        r = await c.call_tool("runtime.screenshot.capture", {"session_id": sid, "preview_px": px})
        wall = time.perf_counter() - t
        assert (r.structured_content["preview"] is None) == (px == 0), r.structured_content
        if i >= 2:
            walls[px].append(wall)
    added = statistics.median(walls[640]) - statistics.median(walls[0])
    frame = base / "frame.png"
    shot = await c.call_tool("runtime.screenshot.capture", {"session_id": sid, "preview_px": 0})
    uri = shot.structured_content["artifact"]["uri"]
    size = shot.structured_content["artifact"]["size"]
    data = bytearray()
    while len(data) < size:
        part = await c.read_resource(f"{uri}?offset={len(data)}")
        data += base64.b64decode(part.contents[0].blob)  # type: ignore[union-attr]
    frame.write_bytes(bytes(data))
    made, decoded = preview_cost(frame, rounds)
    return [
        Row("preview added 1280x720 (vs 10 ms)", max(added, 0.0) * 1e3, 10.0, 1.0),
        Row("preview made from pixels, vs PNG decode", made * 1e3, decoded * 1e3, None),
    ]


async def measure(args: argparse.Namespace) -> tuple[str, list[Row]]:
    session_module.GameSession.screenshot = _recording_screenshot  # type: ignore[method-assign]
    rows = []
    version = ""
    with tempfile.TemporaryDirectory() as tmp:
        for width, height in ((320, 240), (1280, 720)):
            version, floor, wall, extra = await one_size(Path(tmp), width, height, args.rounds)
            rows.append(Row(f"screenshot {width}x{height}", wall * 1e3, floor * 1e3, 2.0))
            rows.extend(extra)
    return version, rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    sys.exit(bench_engines.main(measure, parser, "bench_capture.py"))
