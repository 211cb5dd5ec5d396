"""project.export of a small project's pack against the engine's own --export-pack, in one run.

    python tools/bench_export.py [--rounds 5] [--one]

On Godot 3 (this host) and Godot 4 (the sid root) in one run, side by side (``--one``: the
engine ``GODOT_BIN`` names only; see ``tools/bench_engines.py``).

The engine's demo project (``examples/demo`` or ``examples/demo3``, about 4 KB of text, with
its presets), copied once and imported once by a first export. Floor, on that same imported
copy in the same run: the engine's own ``--export-pack Pack OUT`` (``--headless`` on Godot 4),
no server, no copy, no sandbox, its XDG dirs private and kept between rounds. Then through an
in-process MCP client on the same copy: ``project.export`` of the ``Pack`` preset, from the
call to ``project.export.status`` (``wait_seconds``) answering ``succeeded``; and the same
by ``platform: linux`` (report only). Medians of ``--rounds`` runs after one warm-up each.
Goal: the preset's pack <= 1.3x the floor. Exits 1 when the goal is missed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from godot_mcp.app import open_app  # noqa: E402
from godot_mcp.config import Settings  # noqa: E402
from godot_mcp.engine.process.locate import locate_godot  # noqa: E402
from godot_mcp.store.values import Limits  # noqa: E402
from tools import bench_engines  # noqa: E402
from tools.bench_engines import Row  # noqa: E402

GOAL = 1.3


def bare_pack(binary: str, major: int, project: Path, base: Path) -> float:
    """One ``--export-pack`` of the project's ``Pack`` preset by the engine alone."""
    out = base / "bare-out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    xdg = base / "bare-xdg"
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(xdg),
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_CACHE_HOME": str(xdg / "cache"),
        "XDG_DATA_HOME": str(xdg / "data"),
    }
    flags = ["--headless"] if major >= 4 else []
    started = time.perf_counter()
    subprocess.run(
        [binary, *flags, "--path", str(project), "--export-pack", "Pack", str(out / "demo.pck")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=300,
    )
    wall = time.perf_counter() - started
    assert (out / "demo.pck").stat().st_size > 0
    return wall


async def served_pack(c: Client, args: dict[str, str]) -> float:
    """From ``project.export`` to ``project.export.status`` answering ``succeeded``."""
    started = time.perf_counter()
    r = await c.call_tool("project_export", {**args, "kind": "pack"})
    assert r.structured_content["outcome"] == "ok", r.structured_content
    export_id = r.structured_content["export"]["id"]
    r = await c.call_tool("project_export_status", {"export_id": export_id, "wait_seconds": 50})
    wall = time.perf_counter() - started
    body = r.structured_content["export"]
    assert body["state"] == "succeeded", body
    return wall


async def measure(args: argparse.Namespace) -> tuple[str, list[Row]]:
    install = locate_godot()
    assert install.headless and install.headless_version, install
    major = install.headless_major or 3
    demo = ROOT / "examples" / ("demo" if major >= 4 else "demo3")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = base / "project"
        shutil.copytree(demo, project)
        size = sum(p.stat().st_size for p in project.rglob("*") if p.is_file())
        bare_pack(install.headless, major, project, base)  # imports the copy once
        imported = sum(p.stat().st_size for p in project.rglob("*") if p.is_file())
        floors = [bare_pack(install.headless, major, project, base) for _ in range(args.rounds)]
        settings = Settings(base / "state", None, None, Limits())
        async with open_app(settings, project, "stdio") as app, Client(app.server) as c:
            walls, platform = [], []
            for i in range(args.rounds + 1):
                wall = await served_pack(c, {"preset": "Pack"})
                other = await served_pack(c, {"platform": "linux"})
                if i:
                    walls.append(wall)
                    platform.append(other)
    floor = statistics.median(floors)
    print(f"project: {size} bytes, {imported} once imported; median of {args.rounds} rounds")
    if os.environ.get("BENCH_EXPORT_ALL"):
        print("floors:", " ".join(f"{f:.2f}" for f in floors))
        print("preset:", " ".join(f"{w:.2f}" for w in walls))
        print("platform:", " ".join(f"{w:.2f}" for w in platform))
    return install.headless_version, [
        Row("pack by preset", statistics.median(walls) * 1e3, floor * 1e3, GOAL),
        Row("pack by platform", statistics.median(platform) * 1e3, floor * 1e3, None),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    sys.exit(bench_engines.main(measure, parser, "bench_export.py"))
