"""project.api: the first dump of the engine's class reference, then a lookup's time.

    python tools/bench_api.py [--rounds 200] [--one]

On Godot 3 (this host) and Godot 4 (the sid root) in one run, side by side (``--one``: the
engine ``GODOT_BIN`` names only; see ``tools/bench_engines.py``).

Through an in-process MCP client on a fresh state dir: the first ``project.api`` call (it
dumps the reference: the compiled-in descriptions read from the binary, ``--doctool``, the
rename, the index), against a bare ``--doctool`` into an empty dir in the same run (report
only). Then lookups of a member along the chain (``Label`` + its own property, one of
``Control``'s and one of ``Node``'s) after the first one of each: the median against a
``server.profile`` call (the MCP round trip that does no work), and against the goal of
5 ms. Exits 1 when a lookup's median is over 5 ms.
"""

from __future__ import annotations

import argparse
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

GOAL_MS = 5.0


def bare_doctool(binary: str, major: int, base: Path) -> float:
    out, cwd = base / "bare-out", base / "bare-cwd"
    out.mkdir()
    cwd.mkdir()
    flags = ["--headless"] if major >= 4 else []
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(cwd)}
    started = time.perf_counter()
    subprocess.run(
        [binary, *flags, "--doctool", str(out)],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        timeout=300,
    )
    return time.perf_counter() - started


async def timed(c: Client, tool: str, args: dict[str, str]) -> float:
    started = time.perf_counter()
    r = await c.call_tool(tool, args)
    wall = time.perf_counter() - started
    assert r.structured_content["outcome"] == "ok", r.structured_content
    return wall


async def measure(args: argparse.Namespace) -> tuple[str, list[Row]]:
    install = locate_godot()
    assert install.headless and install.headless_version, install
    member = "offset_left" if (install.headless_major or 3) >= 4 else "margin_left"
    lookups = [{"class": "Label", "member": m} for m in ("text", member, "add_child")]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        bare = bare_doctool(install.headless, install.headless_major or 3, base)
        project = base / "project"
        project.mkdir()
        (project / "project.godot").write_text("config_version=4\n\n[application]\n")
        settings = Settings(base / "state", None, None, Limits())
        async with open_app(settings, project, "stdio") as app, Client(app.server) as c:
            first = await timed(c, "project_api", lookups[0])
            for a in lookups[1:]:
                await timed(c, "project_api", a)  # each class of the chain parsed once
            walls = [await timed(c, "project_api", lookups[i % 3]) for i in range(args.rounds)]
            floors = [await timed(c, "server_profile", {}) for _ in range(args.rounds)]
    lookup, floor = statistics.median(walls), statistics.median(floors)
    return install.headless_version, [
        Row("first dump (floor: bare --doctool)", first * 1e3, bare * 1e3, None),
        Row("lookup (floor: server.profile)", lookup * 1e3, floor * 1e3, None),
        Row("lookup (floor: the 5 ms goal)", lookup * 1e3, GOAL_MS, 1.0),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    sys.exit(bench_engines.main(measure, parser, "bench_api.py"))
