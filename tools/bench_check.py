"""project.check against a bare Godot loading the same scripts, measured in one run.

    python tools/bench_check.py [--scripts 500] [--rounds 5]

A generated project of ``--scripts`` GDScript files (each a class of a few functions that
uses the one before it) checked through an in-process MCP client. Floor, on the same files
in the same run: one bare headless Godot start (``godot3-server --path P --script L``, no
copy, no sandbox) whose script loads every file in one process. Goal: ``project.check``
<= 1.5x the floor (one Godot process for the whole check, not one per file). Medians of
``--rounds`` runs after one warm-up each. Exits 1 when the goal is missed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from godot_mcp.app import open_app  # noqa: E402
from godot_mcp.config import Settings  # noqa: E402
from godot_mcp.store.values import Limits  # noqa: E402

GOAL = 1.5
PROJECT = 'config_version=4\n\n[application]\n\nconfig/name="bench-check"\n'
SCRIPT = """\
extends Reference

const NEXT = preload("res://scripts/s{prev:04d}.gd")

var total := 0
var names := []


func add(x: int) -> int:
\ttotal += x
\treturn total


func label(i: int) -> String:
\tif i % 2 == 0:
\t\treturn "even %d" % i
\treturn "odd %d" % i


func fold(items: Array) -> int:
\tvar out := 0
\tfor item in items:
\t\tout += int(item)
\treturn out
"""
LOADER = """\
extends SceneTree

func _init():
\tvar kept = []
\tfor i in range({count}):
\t\tvar r = ResourceLoader.load("res://scripts/s%04d.gd" % i)
\t\tif r == null:
\t\t\tprinterr("failed %d" % i)
\t\tkept.append(r)
\tquit()
"""


def make_project(root: Path, count: int) -> Path:
    (root / "scripts").mkdir(parents=True)
    (root / "project.godot").write_text(PROJECT)
    for i in range(count):
        text = SCRIPT.format(prev=max(i - 1, 0))
        if i == 0:
            text = text.replace('const NEXT = preload("res://scripts/s0000.gd")\n', "")
        (root / "scripts" / f"s{i:04d}.gd").write_text(text)
    return root


def floor_once(binary: str, project: Path, loader: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [binary, "--path", str(project), "--script", str(loader)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=600,
    )
    return time.perf_counter() - started


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scripts", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    binary = shutil.which("godot3-server")
    if binary is None:
        print("godot3-server not installed: nothing to measure", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        project = make_project(Path(tmp) / "bench", args.scripts)
        loader = Path(tmp) / "loader.gd"
        loader.write_text(LOADER.format(count=args.scripts))
        floors = [floor_once(binary, project, loader) for _ in range(args.rounds + 1)][1:]
        settings = Settings(Path(tmp) / "state", None, None, Limits())
        async with open_app(settings, project, "stdio") as app, Client(app.server) as c:
            walls = []
            for i in range(args.rounds + 1):
                started = time.perf_counter()
                r = await c.call_tool("project_check", {})
                wall = time.perf_counter() - started
                answer = r.structured_content
                assert answer["outcome"] == "ok" and answer["errors"] == [], answer
                assert answer["checked"]["scripts"] == args.scripts, answer
                if i:
                    walls.append(wall)
    floor, wall = statistics.median(floors), statistics.median(walls)
    ratio = wall / floor
    print(
        f"{args.scripts} scripts: floor (bare Godot loading them) {floor * 1e3:.0f} ms; "
        f"project.check {wall * 1e3:.0f} ms; ratio {ratio:.2f} (goal <= {GOAL})"
    )
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
