"""A second project.test against the test runner alone on an imported copy, in one run.

    python tools/bench_testrun.py [--rounds 5] [--assets 40] [--one]

On Godot 3 (this host) and Godot 4 (the sid root) in one run, side by side (``--one``: the
engine ``GODOT_BIN`` names only; see ``tools/bench_engines.py``).

A generated project that was never imported: ``--assets`` PNG images, ten scripts declaring a
``class_name``, the stand-in GUT runner of ``tests/fixtures/testrun`` and five test scripts of
eight tests each. Floor, in the same run: that runner alone, run directly with the engine
(``godot [--headless] --path COPY -s res://addons/gut/gut_cmdln.gd -gexit
-gjunit_xml_file=OUT``, no server, no copy, no sandbox, private XDG dirs) on a copy imported
once beforehand. Measured through an in-process MCP client on a fresh state dir: the first
``project.test`` (its copy imported by the engine, and the import kept), reported; then the
second and later ones (their copies given the kept import), each checked to have reused it.
Floor and second runs alternate, medians of ``--rounds`` each. Goal: the second run <= 1.5x
the floor. Exits 1 when the goal is missed.
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

from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from godot_mcp.app import App, open_app  # noqa: E402
from godot_mcp.config import Settings  # noqa: E402
from godot_mcp.engine.process.locate import GodotInstall, locate_godot  # noqa: E402
from godot_mcp.features.importer import Importer  # noqa: E402
from godot_mcp.store.values import Limits  # noqa: E402
from tests.support.fake_godot import png  # noqa: E402
from tools import bench_engines  # noqa: E402
from tools.bench_engines import Row  # noqa: E402

GOAL = 1.5
FIXTURES = ROOT / "tests" / "fixtures" / "testrun"
PROJECT = {3: "config_version=4\n", 4: "config_version=5\n"}
TESTS = 5  # test scripts
CASES = 8  # tests in each
BASE = 'extends "res://addons/gut/test.gd"\n\n'
CASE = """
func test_case_{n}():
\tvar total = 0
\tfor i in range(1000):
\t\ttotal += i
\tassert_eq(total, 499500, "sums")
"""


def make_project(root: Path, major: int, assets: int) -> Path:
    """The benchmark's project, never imported."""
    (root / "addons" / "gut").mkdir(parents=True)
    (root / "project.godot").write_text(
        PROJECT[major] + '\n[application]\n\nconfig/name="bench-testrun"\n'
    )
    (root / "addons" / "gut" / "gut_cmdln.gd").write_bytes(
        (FIXTURES / f"gut_cmdln{major}.gd").read_bytes()
    )
    (root / "addons" / "gut" / "test.gd").write_bytes(
        (FIXTURES / f"gut_test{major}.gd").read_bytes()
    )
    (root / ".gutconfig.json").write_text('{"dirs": ["res://test"]}')
    (root / "art").mkdir()
    for i in range(assets):
        (root / "art" / f"a{i:03d}.png").write_bytes(png(64, 64, (i % 256, 80, 160)))
    (root / "lib").mkdir()
    for i in range(10):
        (root / "lib" / f"c{i}.gd").write_text(f"extends Node\nclass_name Bench{i}\n")
    (root / "test").mkdir()
    for t in range(TESTS):
        body = BASE + "".join(CASE.format(n=n) for n in range(CASES))
        (root / "test" / f"test_{t}.gd").write_text(body)
    return root


async def import_once(install: GodotInstall, copy: Path, work: Path) -> None:
    """Import ``copy`` in place with the engine, as the floor's copy needs."""
    assert install.headless is not None
    job = Importer(install.headless, install.headless_version, work, copy)
    job.prepare()
    job.launch()
    await job.run(600)


def runner_alone(binary: str, major: int, copy: Path, base: Path) -> float:
    """One run of the test runner by the engine alone, on the imported copy."""
    xdg = base / "floor-xdg"
    report = base / "floor-report.xml"
    report.unlink(missing_ok=True)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(xdg),
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_CACHE_HOME": str(xdg / "cache"),
        "XDG_DATA_HOME": str(xdg / "data"),
    }
    flags = ["--headless"] if major >= 4 else []
    argv = [binary, *flags, "--path", str(copy), "-s", "res://addons/gut/gut_cmdln.gd"]
    argv += ["-gexit", f"-gjunit_xml_file={report}"]
    started = time.perf_counter()
    subprocess.run(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
        timeout=300,
    )
    wall = time.perf_counter() - started
    assert report.read_text().count("<testcase ") == TESTS * CASES
    return wall


async def served(app: App, c: Client, reused: bool) -> float:
    """One ``project.test`` through the server; its copy reused an import or not, as said."""
    tests = app.deps.tests
    before = tests.copies_reused
    started = time.perf_counter()
    r = await c.call_tool("project_test", {})
    wall = time.perf_counter() - started
    answer = r.structured_content
    assert answer is not None and answer["outcome"] == "ok", answer
    assert answer["counts"]["passed"] == TESTS * CASES, answer
    assert (tests.copies_reused == before + 1) is reused, (reused, tests.copies_reused)
    return wall


async def measure(args: argparse.Namespace) -> tuple[str, list[Row]]:
    install = locate_godot()
    assert install.headless and install.headless_version, install
    major = install.headless_major or 3
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = make_project(base / "project", major, args.assets)
        copy = base / "imported"
        shutil.copytree(project, copy)
        await import_once(install, copy, base / "import-work")
        runner_alone(install.headless, major, copy, base)  # warm-up
        settings = Settings(base / "state", None, None, Limits())
        floors, seconds = [], []
        async with open_app(settings, project, "stdio") as app, Client(app.server) as c:
            first = await served(app, c, reused=False)
            await served(app, c, reused=True)  # warm-up
            for _ in range(args.rounds):
                floors.append(runner_alone(install.headless, major, copy, base))
                seconds.append(await served(app, c, reused=True))
    floor = statistics.median(floors)
    print(
        f"project: {args.assets} images, 10 global classes, {TESTS * CASES} tests; "
        f"median of {args.rounds} rounds"
    )
    print("floors:", " ".join(f"{f * 1e3:.0f}" for f in floors))
    print("second runs:", " ".join(f"{s * 1e3:.0f}" for s in seconds))
    return install.headless_version, [
        Row("second project.test (reused)", statistics.median(seconds) * 1e3, floor * 1e3, GOAL),
        Row("first project.test (imports)", first * 1e3, floor * 1e3, None),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--assets", type=int, default=40)
    sys.exit(bench_engines.main(measure, parser, "bench_testrun.py"))
