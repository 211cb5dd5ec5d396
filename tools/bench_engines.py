"""Run one benchmark on each engine and print their ratios side by side.

A bench script calls :func:`main` with its own measuring coroutine. Without ``--one`` it runs
itself twice, as children: on Godot 3 on this host (``godot3``), and on Godot 4 inside the
Debian sid root (``tools/godot4-root.sh``; see ``docs/godot.md``), each printing its own
table and then one ``BENCH-ROWS`` line of JSON. The parent prints both tables side by side;
an engine that cannot run here is named, never silently left out. ``--one`` measures the
engine found (``GODOT_BIN``) only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
MARK = "BENCH-ROWS "


@dataclass(frozen=True)
class Row:
    """One measured case: its time against its floor, and the goal for the ratio."""

    name: str
    ms: float
    floor_ms: float
    goal: float | None  # None: reported, no goal

    @property
    def ratio(self) -> float:
        return self.ms / self.floor_ms if self.floor_ms else float("inf")

    @property
    def missed(self) -> bool:
        return self.goal is not None and self.ratio > self.goal


Measure = Callable[[argparse.Namespace], Awaitable[tuple[str, list[Row]]]]


def main(measure: Measure, parser: argparse.ArgumentParser, script: str) -> int:
    """Entry point of a bench: ``measure`` answers the engine's version and its rows."""
    parser.add_argument("--one", action="store_true", help="measure the engine found only")
    args = parser.parse_args()
    if args.one or os.environ.get("GODOT_MCP_IN_SID"):
        version, rows = anyio.run(measure, args)
        print(f"engine: {version}")
        _table(rows)
        print(MARK + json.dumps({"version": version, "rows": [asdict(r) for r in rows]}))
        return 1 if any(r.missed for r in rows) else 0
    return _both(script, [a for a in sys.argv[1:] if a != "--one"])


def _both(script: str, argv: list[str]) -> int:
    path = str(ROOT / "tools" / script)
    runs: list[tuple[str, list[str], dict[str, str]]] = []
    host = {**os.environ, "GODOT_BIN": "godot3", "GODOT_HEADLESS_BIN": "godot3-server"}
    runs.append(("Godot 3", [sys.executable, path, "--one", *argv], host))
    venv4 = ROOT / ".venv4" / "bin" / "python"
    root = ROOT / "tools" / "godot4-root.sh"
    four = [
        "bash",
        str(root),
        "run",
        "env",
        "GODOT_BIN=godot",
        "GODOT_HEADLESS_BIN=godot",
        str(venv4),
        path,
        "--one",
        *argv,
    ]
    runs.append(("Godot 4", four, dict(os.environ)))
    results: dict[str, tuple[str, list[Row]] | str] = {}
    failed = False
    for label, cmd, env in runs:
        why = _cannot(label, venv4)
        if why:
            print(f"== {label}: NOT MEASURED: {why}", flush=True)
            results[label] = why
            failed = True
            continue
        print(f"== {label}", flush=True)
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
        sys.stdout.write("".join(f"   {ln}\n" for ln in done.stdout.splitlines() if MARK not in ln))
        found = [ln for ln in done.stdout.splitlines() if ln.startswith(MARK)]
        if not found:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            results[label] = f"the bench failed (exit {done.returncode}): " + " | ".join(tail)
            print(f"   {results[label]}")
            failed = True
            continue
        data = json.loads(found[-1][len(MARK) :])
        results[label] = (data["version"], [Row(**r) for r in data["rows"]])
        failed |= done.returncode != 0
    _side_by_side(results)
    return 1 if failed else 0


def _cannot(label: str, venv4: Path) -> str:
    """Why ``label`` cannot be measured on this machine, or ``""``."""
    if label == "Godot 3":
        return "" if shutil.which("godot3-server") else "godot3-server is not installed"
    if not venv4.exists():
        return "no Godot 4 root here (bash tools/godot4-root.sh ensure)"
    return ""


def _table(rows: list[Row]) -> None:
    print(f"{'case':<34}{'time':>10}{'floor':>10}{'ratio':>8}  goal")
    for r in rows:
        goal = f"<= {r.goal}" if r.goal is not None else "report"
        flag = "  MISSED" if r.missed else ""
        print(f"{r.name:<34}{r.ms:>8.2f}ms{r.floor_ms:>8.2f}ms{r.ratio:>8.2f}  {goal}{flag}")


def _side_by_side(results: dict[str, tuple[str, list[Row]] | str]) -> None:
    labels = list(results)
    print()
    head = "".join(f"{label + ' ratio':>16}" for label in labels)
    print(f"{'case':<34}{head}  goal")
    names: list[str] = []
    for value in results.values():
        if not isinstance(value, str):
            names += [r.name for r in value[1] if r.name not in names]
    for name in names:
        cells, goal = [], None
        for label in labels:
            value = results[label]
            rows = [] if isinstance(value, str) else value[1]
            row = next((r for r in rows if r.name == name), None)
            if row is None:
                cells.append(f"{'-':>16}")
                continue
            goal = row.goal
            cells.append(f"{row.ratio:>14.2f}{'!' if row.missed else ' ':>2}")
        print(f"{name:<34}{''.join(cells)}  {'<= ' + str(goal) if goal is not None else 'report'}")
    for label, value in results.items():
        print(f"{label}: " + (value if isinstance(value, str) else value[0]))
