"""A stand-in for the Godot binary, for the fast lane: it speaks what the server reads of a
real engine (``--version``, the bridge's protocol over its loopback connection, the engine's
output lines) so that every game tool's handler, refusal and answer shape runs through the
real process, bridge and session code without an engine or a display.

It is not Godot: its scene is fixed (``/root/Main`` with a ``Player``), its frames are a
clock (60 a second, scaled and paused as asked), its captures are small solid PNGs. What it
answers follows ``bridge3.gd``'s replies field for field, and its debugger speaks Godot 3's
protocol; made with ``script(folder, 4)`` it is a Godot 4 instead (``Game4`` and
``FakeDebugger4`` at the end: ``bridge4.gd``'s replies, Godot 4's debugger framing and
messages). The real lanes run the real bridge.

Run as ``python fake_godot.py ARGS`` (``script()`` writes a wrapper the server can exec).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import socket
import stat
import struct
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

VERSION = "3.2.3.stable.custom_build.fake"
VERSION4 = "4.6.3.stable.custom_build.fake"
MAJOR_ENV = "FAKE_GODOT_MAJOR"  # set by the wrapper: the engine the fake plays (3 or 4)
SERVER_ENV = "FAKE_GODOT_SERVER"  # set by the wrapper of a Godot 3 server build (headless)
FPS = 60.0


SYSTEM_PYTHON = "/usr/bin/python3"  # what the export sandbox shows of the machine (/usr)


def script(folder: Path, major: int = 3, server: bool = False) -> Path:
    """An executable wrapper running a copy of this file, what ``--godot`` names: in its own
    folder (the sandbox binds the engine's folder) with the system's Python (the sandbox binds
    ``/usr``; this module needs only the standard library), playing Godot ``major`` (its
    headless server build with ``server``; Godot 4 runs headless with ``--headless``)."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / "fake_godot.py"
    copy.write_bytes(Path(__file__).read_bytes())
    python = SYSTEM_PYTHON if os.path.exists(SYSTEM_PYTHON) else sys.executable
    path = folder / ("fake-godot-server" if server else "fake-godot")
    env = f"{MAJOR_ENV}={int(major)} {SERVER_ENV}={int(server)}"
    path.write_text(f'#!/bin/sh\n{env} exec "{python}" "{copy}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def pack(files: dict[str, bytes]) -> bytes:
    """A Godot 3 pack (format version 1) holding ``files`` (``res://`` paths)."""
    entries = []
    for res in files:
        name = res.encode()
        padded = name + b"\0" * (-len(name) % 4)
        entries.append(padded)
    header = 4 * 5 + 64 + 4
    directory = sum(4 + len(e) + 8 + 8 + 16 for e in entries)
    offset = header + directory
    out = struct.pack("<5I", 0x43504447, 1, 3, 2, 3) + b"\0" * 64 + struct.pack("<I", len(files))
    blobs = b""
    for padded, data in zip(entries, files.values(), strict=True):
        digest = hashlib.md5(data, usedforsecurity=False).digest()
        out += struct.pack("<I", len(padded)) + padded + struct.pack("<QQ", offset, len(data))
        out += digest
        offset += len(data)
        blobs += data
    return out + blobs


def export(argv: list[str]) -> int:
    """``--export-pack PRESET OUT``: every visible file of the project, packed. Templates
    are what the fake has none of: ``--export`` and ``--export-debug`` fail as Godot does."""
    project = Path(argv[argv.index("--path") + 1])
    if "--export-pack" not in argv:  # --export, --export-release (4), --export-debug
        print("ERROR: No export template found at the expected path.", file=sys.stderr)
        return 1
    at = argv.index("--export-pack")
    out = Path(argv[at + 2])
    files = {}
    for path in sorted(project.rglob("*")):
        rel = path.relative_to(project).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in rel.split("/")):
            files["res://" + rel] = path.read_bytes()
    out.write_bytes(pack4(files) if _major() >= 4 else pack(files))
    print(f"savepack: packed {len(files)} files", flush=True)
    return 0


CLASSES = {  # --doctool's reference: two classes, in Godot 3's XML
    "Node": (
        '<?xml version="1.0" encoding="UTF-8" ?>\n<class name="Node" inherits="Object" '
        'version="3.2">\n<brief_description>Base class for all scene objects.'
        '</brief_description>\n<methods>\n<method name="get_child_count">\n'
        '<return type="int">\n</return>\n<description>How many children it has.'
        "</description>\n</method>\n</methods>\n</class>\n"
    ),
    "Control": (
        '<?xml version="1.0" encoding="UTF-8" ?>\n<class name="Control" inherits="Node" '
        'version="3.2">\n<brief_description>All user interface nodes inherit from it.'
        '</brief_description>\n<members>\n<member name="margin_left" type="float" '
        'setter="set_margin" getter="get_margin" default="0.0">Distance to the left edge.'
        "</member>\n</members>\n</class>\n"
    ),
}


IMPORTED = (".png", ".wav", ".ogg")  # what the fake imports, as Godot 3 does


def editor(argv: list[str]) -> int:
    """``--editor``: Godot 3's import of every file it imports, written as the editor writes
    it (a ``.import`` sidecar, the imported file and its ``.md5`` record in ``.import/``);
    then the editor stays open, as the real one does, until it is stopped."""
    project = Path(argv[argv.index("--path") + 1])
    folder = project / ".import"
    folder.mkdir(exist_ok=True)
    for path, rel, _digest, stem in _imported(project):
        _write_imported(folder / f"{stem}.stex", b"GDST", path)
        path.with_name(path.name + ".import").write_text(
            '[remap]\n\nimporter="texture"\ntype="StreamTexture"\n'
            f'path="res://.import/{stem}.stex"\n\n[deps]\n\n'
            f'source_file="res://{rel}"\ndest_files=[ "res://.import/{stem}.stex" ]\n'
        )
        print(f"imported res://{rel}", flush=True)
    while True:
        time.sleep(1)


def _imported(project: Path) -> Iterator[tuple[Path, str, str, str]]:
    """Each file the engines import: its path, ``rel``, the md5 of its ``res://`` path and
    the stem of its imported file, as the editors name them."""
    for path in sorted(project.rglob("*")):
        rel = path.relative_to(project).as_posix()
        if rel.startswith(".") or path.suffix not in IMPORTED or not path.is_file():
            continue
        digest = hashlib.md5(("res://" + rel).encode(), usedforsecurity=False).hexdigest()
        yield path, rel, digest, f"{path.name}-{digest}"


def _write_imported(imported: Path, magic: bytes, source: Path) -> None:
    """The imported file (``magic`` then the source's bytes) and its ``.md5`` record."""
    data = source.read_bytes()
    imported.write_bytes(magic + data)
    source_md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
    imported.with_suffix(".md5").write_text(f'source_md5="{source_md5}"\n')


def doctool(argv: list[str]) -> int:
    """``--doctool DIR``: the class reference, one XML file a class."""
    classes = Path(argv[argv.index("--doctool") + 1]) / "doc" / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    for name, xml in (CLASSES4 if _major() >= 4 else CLASSES).items():
        (classes / f"{name}.xml").write_text(xml)
    return 0


def check(argv: list[str]) -> int:
    """The check script's run: each listed file loads, except one holding ``BROKEN``; one
    holding ``HANG`` never finishes loading."""
    project = Path(argv[argv.index("--path") + 1])
    source = Path(argv[argv.index("--script") + 1]).read_text()
    listed = re.search(r'const LIST(?:: String)? = "(.*)"', source)
    marked = re.search(r'const MARK(?:: String)? = "(.*)"', source)
    assert listed is not None and marked is not None
    mark = marked.group(1)
    paths = Path(listed.group(1)).read_text().split()
    err = sys.stderr
    print(f"{mark} START {len(paths)}", file=err)
    for res in paths:
        print(f"{mark} BEGIN {res}", file=err)
        text = (project / res.removeprefix("res://")).read_bytes()
        if b"HANG" in text:
            err.flush()
            time.sleep(3600)
        if b"BROKEN" in text and _major() >= 4:
            print("SCRIPT ERROR: Parse Error: BROKEN is no code", file=err)
            print(f"          at: GDScript::reload ({res}:1)", file=err)
            print(f"{mark} END failed {res}", file=err)
        elif b"BROKEN" in text:
            print("SCRIPT ERROR: GDScript::reload: Parse Error: BROKEN is no code", file=err)
            print(f"   At: {res}:1.", file=err)
            print(f"{mark} END failed {res}", file=err)
        else:
            print(f"{mark} END ok {res}", file=err)
    print(f"{mark} DONE", file=err, flush=True)
    return 0


def gut(argv: list[str]) -> int:
    """GUT's command-line runner as observed (GUT 7): ``-gdir``/``-gtest`` name the scripts, a
    ``* name`` line as each ``test_`` function starts, a GUT 7 JUnit report. A test whose body
    says ``FAIL`` fails, one that says ``HANG`` never ends, one that says ``DIE`` kills the
    runner."""
    project = Path(argv[argv.index("--path") + 1])
    opts = dict(a[2:].partition("=")[::2] for a in argv if a.startswith("-g"))
    config = project / ".gutconfig.json"
    dirs = json.loads(config.read_text()).get("dirs", []) if config.is_file() else []
    dirs = opts["dir"].split(",") if "dir" in opts else dirs
    scripts = [t for t in opts.get("test", "").split(",") if t]
    for folder in dirs:
        found = (project / folder.removeprefix("res://")).glob("test_*.gd")
        scripts += sorted(f"{folder}/{p.name}" for p in found)
    suites = []
    print(" ---  Gut  ---", flush=True)
    for res in scripts:
        print(f"\n{res}", flush=True)
        source = (project / res.removeprefix("res://")).read_text()
        cases = []
        for name, body in re.findall(r"^func (test_\w+)\(\):\n((?:\t.*\n?)*)", source, re.M):
            print(f"* {name}", flush=True)
            if "HANG" in body:
                time.sleep(3600)
            if "DIE" in body:
                os.kill(os.getpid(), 9)
            cases.append((name, "FAIL" in body))
        suites.append((res, cases))
    out = '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="GutTests">\n'
    for res, cases in suites:
        out += f'  <testsuite name="{res}">\n'
        for name, failed in cases:
            out += f'      <testcase name="{name}" classname="{res}" >\n'
            out += '      <failure message="failed">it said FAIL\n at line -1</failure>' * failed
            out += "</testcase>\n"
        out += "  </testsuite>\n"
    Path(opts["junit_xml_file"]).write_text(out + "</testsuites>")
    print(f"Results saved to {opts['junit_xml_file']}", flush=True)
    return 1 if any(f for _, cases in suites for _, f in cases) else 0


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid 8-bit RGB PNG."""
    row = b"\x00" + bytes(rgb) * width
    raw = zlib.compress(row * height)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


class Game:
    """The fake game: a clock, a fixed scene, and the bridge's commands."""

    ROOT, SPRITE, TRANSFORM = "Viewport", "Sprite", "Transform"  # Godot 3's names
    OS = "X11"
    headless = False  # nothing draws: no captures, no draw calls

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.start = time.monotonic()
        self.base = 0.0  # frames counted before the last change of pace
        self.scale = 1.0
        self.paused = False
        self.cancelled: set[int] = set()
        self.nodes: dict[str, dict[str, Any]] = {
            "/root": {"class": self.ROOT, "values": {}},
            "/root/Main": {
                "class": "Node2D",
                "script": "res://main.gd",
                "values": {
                    "visible": True,
                    "position": {"type": "Vector2", "x": 0, "y": 0},
                    "aim": {
                        "type": self.TRANSFORM,
                        "basis": {"type": "Basis", "x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]},
                        "origin": [0, 0, 2],
                    },
                },
            },
            "/root/Main/Player": {
                "class": self.SPRITE,
                "values": {"visible": True, "position": {"type": "Vector2", "x": 10, "y": 20}},
            },
        }

    def frame(self) -> int:
        if self.paused:
            return int(self.base)
        return int(self.base + (time.monotonic() - self.start) * FPS * self.scale)

    def _repace(self) -> None:
        self.base, self.start = float(self.frame()), time.monotonic()

    malformed = False  # the scene res://malformed.tscn: replies the bridge never sends
    forged = False  # the scene res://forged.tscn: inspect replies a hostile game could forge
    deep = False  # the scene res://deep.tscn: values nested past any the bridge sends

    def handle(self, cmd: dict[str, Any]) -> dict[str, Any] | None:
        ident, name = cmd.get("id"), cmd.get("cmd")
        if self.malformed and name in ("tree", "perf"):
            return {"id": ident, "ok": True, "nodes": "all of them", "fps": "fast"}
        if self.deep and name == "perf":  # nested past what Python's json reads
            return {"raw": f'{{"id": {ident}, "ok": true, "fps": {"[" * 5000}{"]" * 5000}}}'}
        if self.deep and name in ("get", "call"):
            nested: Any = "bottom"
            for _ in range(100):
                nested = [nested]
            values = {"class": "Node", "values": {"v": nested}, "truncated": False}
            return {"id": ident, "ok": True, **values, "result": nested}
        if self.forged and name == "inspect":
            return {"id": ident, "ok": True, **forged_inspection(str(cmd.get("path")))}
        if name == "quit":
            sys.exit(0)
        if name == "cancel":
            self.cancelled.add(cmd.get("target"))
            return None
        handler = getattr(self, f"cmd_{name}", None)
        if handler is None:
            return {"id": ident, "ok": False, "error": "invalid_argument", "message": "unknown"}
        return {"id": ident, "ok": True, **handler(ident, cmd)}

    def fail(self, error: str, message: str) -> Exception:
        return _Refused(error, message)

    def node(self, path: Any) -> dict[str, Any]:
        if path not in self.nodes:
            raise self.fail("not_found", f"no node at {path}")
        return self.nodes[path]

    def cmd_ping(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        for mark in cmd.get("marks", []):
            print("godot-mcp-mark " + str(mark), file=sys.stderr, flush=True)
        return {"fps": FPS, "frame": self.frame(), "time": self.frame() / FPS}

    def _sleep_until(self, ident: int, until: float) -> bool:
        """Wait until the game time (frames at FPS) reaches ``until``; False once cancelled."""
        while self.frame() / FPS < until - 1e-6:
            if ident in self.cancelled:
                return False
            time.sleep(0.005)
        return True

    def cmd_after(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        self._sleep_until(ident, self.frame() / FPS + float(cmd["seconds"]))
        return {"frame": self.frame(), "time": self.frame() / FPS}

    def cmd_tree(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        root = cmd.get("root", "/root")
        self.node(root)
        depth, most = int(cmd.get("depth", 64)), int(cmd.get("max_nodes", 500))
        found = []
        for path, node in self.nodes.items():
            inside = path == root or path.startswith(root.rstrip("/") + "/")
            level = path.count("/") - root.count("/")
            if inside and level <= depth and self._tree_filters_match(path, node, cmd):
                children = sum(1 for p in self.nodes if p.rsplit("/", 1)[0] == path)
                entry = {
                    "path": path,
                    "name": path.rsplit("/", 1)[-1],
                    "class": node["class"],
                    "children": children,
                }
                if "script" in node:
                    entry["script"] = node["script"]
                found.append(entry)
        return {
            "nodes": found[:most],
            "total": len(found),
            "truncated": len(found) > most,
            "current_scene": "/root/Main",
        }

    @staticmethod
    def _tree_filters_match(path: str, node: dict[str, Any], cmd: dict[str, Any]) -> bool:
        """The bridge's name glob and script filters (a class, exactly); no groups here."""
        name = path.rsplit("/", 1)[-1]
        if "name" in cmd and not fnmatch.fnmatchcase(name, cmd["name"]):
            return False
        if "class" in cmd and node["class"] != cmd["class"]:
            return False
        if "script" in cmd and node.get("script") != cmd["script"]:
            return False
        return "group" not in cmd

    def cmd_time(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        action = cmd.get("action")
        self._repace()
        if action == "pause":
            self.paused = True
        elif action == "resume":
            self.paused = False
        elif action == "step":
            self.base += int(cmd.get("frames", 1))
            self.paused = True
        elif action == "scale":
            self.scale = float(cmd.get("time_scale", 1.0))
        return {"paused": self.paused, "time_scale": self.scale, "frame": self.frame()}

    def cmd_input(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        applied = 0
        for event in cmd.get("events", []):
            if event.get("type") == "wait" and "seconds" in event:
                if not self._sleep_until(ident, self.frame() / FPS + float(event["seconds"])):
                    return {"applied": applied, "frame": self.frame()}
            elif event.get("type") == "wait":
                until = time.monotonic() + int(event["frames"]) / FPS
                while time.monotonic() < until:
                    if ident in self.cancelled:
                        return {"applied": applied, "frame": self.frame()}
                    time.sleep(0.005)
            elif event.get("type") == "key":
                print(f"key {event.get('key')} pressed={event.get('pressed', True)}", flush=True)
            applied += 1
        return {"applied": applied, "frame": self.frame()}

    def cmd_get(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        node = self.node(cmd.get("path"))
        wanted = cmd.get("properties") or list(node["values"])
        values = {}
        for name in wanted:
            if name not in node["values"]:
                raise self.fail("not_found", f"no property {name}")
            values[name] = node["values"][name]
        return {"class": node["class"], "values": values, "truncated": False}

    def cmd_set(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        node = self.node(cmd.get("path"))
        node["values"].update(cmd.get("values", {}))
        return {"values": {k: node["values"][k] for k in cmd.get("values", {})}}

    def cmd_call(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        self.node(cmd.get("path"))
        marks = cmd.get("marks", [])
        if len(marks) == 2:
            print("godot-mcp-mark " + str(marks[0]), file=sys.stderr, flush=True)
        result: Any = None
        if cmd.get("method") == "get_name":
            result = str(cmd.get("path")).rsplit("/", 1)[-1]
        elif cmd.get("method") == "echo":
            result = (cmd.get("args") or [None])[0]
        elif cmd.get("method") == "explode":
            print("SCRIPT ERROR: explode: it blew up", file=sys.stderr)
            print("   At: res://main.gd:7", file=sys.stderr, flush=True)
        if len(marks) == 2:
            print("godot-mcp-mark " + str(marks[1]), file=sys.stderr, flush=True)
        return {"result": result}

    def cmd_inspect(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        path = cmd.get("path")
        node = self.node(path)
        parts = cmd.get("include", [])
        out: dict[str, Any] = {"class": node["class"], "truncated": []}
        scripted = "script" in node
        if "script" in parts:
            out["script"] = {"path": node["script"], "extends": "Node2D"} if scripted else None
        if "methods" in parts:
            ready = {"name": "_ready", "args": [], "path": "res://main.gd", "line": 3}
            out["methods"] = [ready] if scripted else []
        if "signals" in parts:
            out["signals"] = [{"name": "hit", "connections": []}] if scripted else []
            out["connected_in"] = []
        if "groups" in parts:
            out["groups"] = ["players"] if scripted else []
        if "properties" in parts:
            out["properties"] = [
                {"name": k, "type": "Variant", "exported": False, "value": v}
                for k, v in node["values"].items()
            ]
        return out

    def cmd_scripts(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"scripts": sorted({n["script"] for n in self.nodes.values() if "script" in n})}

    def cmd_reload(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"reloaded": sorted(cmd.get("paths", []))}

    def cmd_perf(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        return {
            "fps": FPS,
            "frame_ms": 1.25,
            "physics_ms": 0.5,
            "memory_static_bytes": 4_000_000,
            "objects": 40,
            "nodes": len(self.nodes),
            "orphan_nodes": 0,
            "draw_calls": None if self.headless else 3,
            "frame": self.frame(),
        }

    def _shot(self, path: str, rgb: tuple[int, int, int], raw_path: str | None) -> dict:
        Path(path).write_bytes(png(self.width, self.height, rgb))
        raw = ""
        if raw_path:
            Path(raw_path).write_bytes(bytes(rgb) * (self.width * self.height))
            raw = "RGB"
        return {
            "width": self.width,
            "height": self.height,
            "grab_ms": 0.5,
            "save_ms": 1.0,
            "raw": raw,
        }

    def cmd_screenshot(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"frames": [self._shot(cmd["path"], (200, 40, 40), cmd.get("raw_path"))]}

    def cmd_record(self, ident: int, cmd: dict[str, Any]) -> dict[str, Any]:
        fps = float(cmd.get("fps", 10))
        frames = []
        for i, path in enumerate(cmd.get("paths", [])):
            if ident in self.cancelled:
                return {"frames": frames}
            frames.append(self._shot(path, (i * 20 % 256, 90, 160), None))
            time.sleep(min(0.01, 1 / fps))
        return {"frames": frames}


def forged_inspection(path: str) -> dict[str, Any]:
    """What a hostile game could answer ``inspect`` with: at ``/root/Huge`` lists far past the
    bridge's 200 (valid items, long texts, a value larger than any answer); elsewhere a
    method named by a number."""
    if path != "/root/Huge":
        return {
            "class": "Node",
            "script": None,
            "methods": [{"name": 5, "args": [], "path": "res://x.gd", "line": 1}],
            "signals": [],
            "connected_in": [],
            "groups": [],
            "properties": [],
            "truncated": [],
        }
    many = range(5000)
    connections = [{"node": f"/root/N{i}", "method": "m"} for i in range(300)]
    return {
        "class": "Node",
        "script": {"path": "res://huge.gd", "extends": "Node"},
        "methods": [
            {"name": f"m{i}", "args": ["a"], "path": "res://huge.gd", "line": i + 1} for i in many
        ],
        "signals": [{"name": "s", "connections": connections}],
        "connected_in": [{"node": f"/root/N{i}", "signal": "s", "method": "m"} for i in many],
        "groups": [f"g{i:04d}" for i in many],
        "properties": [{"name": "big", "type": "String", "exported": False, "value": "é" * 300_000}]
        + [{"name": f"p{i}", "type": "int", "exported": True, "value": i} for i in many],
        "truncated": [],
    }


# --- the engine's remote debugger, as Godot 3 speaks it (tests/data/debugger) --------------


def _var(value: Any) -> bytes:
    """A Godot 3 Variant: the few kinds the fake sends."""
    if value is None:
        return struct.pack("<I", 0)
    if isinstance(value, bool):
        return struct.pack("<II", 1, int(value))
    if isinstance(value, int):
        return struct.pack("<Ii", 2, value)
    if isinstance(value, float):
        return struct.pack("<Id", 3 | 1 << 16, value)
    if isinstance(value, str):
        raw = value.encode()
        return struct.pack("<II", 4, len(raw)) + raw + b"\0" * (-len(raw) % 4)
    if isinstance(value, list):
        return struct.pack("<II", 19, len(value)) + b"".join(_var(v) for v in value)
    if isinstance(value, dict):
        pairs = b"".join(_var(k) + _var(v) for k, v in value.items())
        return struct.pack("<II", 18, len(value)) + pairs
    if isinstance(value, tuple) and value[0] == "object":
        return struct.pack("<IQ", 17 | 1 << 16, value[1])
    if isinstance(value, tuple) and value[0] == "name":  # Godot 3 has no StringName
        return _var(value[1])
    if isinstance(value, tuple) and value[0] == "transform":
        return struct.pack("<I12f", 13, *value[1])
    raise TypeError(type(value))


def _read_var(data: bytes, pos: int = 0, array: int = 19) -> tuple[Any, int]:
    """A Variant the server sends (``array``: the engine's type id of an Array)."""
    (kind,) = struct.unpack_from("<I", data, pos)
    kind &= 0xFF
    pos += 4
    if kind == 0:
        return None, pos
    if kind in (1, 2):
        (n,) = struct.unpack_from("<i", data, pos)
        return (bool(n) if kind == 1 else n), pos + 4
    if kind == 4:
        (n,) = struct.unpack_from("<I", data, pos)
        text = data[pos + 4 : pos + 4 + n].decode()
        return text, pos + 4 + n + (-n % 4)
    if kind == array:
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        out = []
        for _ in range(n):
            item, pos = _read_var(data, pos, array)
            out.append(item)
        return out, pos
    raise ValueError(f"the fake reads no type {kind}")


DEEP = 5_000  # frames of the stop at res://deep.gd
AIM = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.5, 2.0)  # a 3D transform's 12 reals
RED = "\x1b[31m"
TITLE = "\x1b]0;pwned\x07\x1b[2J"  # a terminal's title changed, then its screen cleared
# What the profiler measures a frame (function, calls, total s, self s), and whether the engine's
# total says so too; chosen by a breakpoint set on res://<name>.gd.
PROFILES: dict[str, tuple[list[tuple[str, int, float, float]], bool]] = {
    "plain": ([("res://main.gd::5::_process", 1, 0.002, 0.001)], True),
    "poisoned_profile": (
        [
            ("res://main.gd::5::_process", 1, 0.002, 0.001),
            (f"res://main.gd::9::{TITLE}huge", 1, 1e306, 1e306),  # infinite in ms
            ("res://main.gd::12::summed", 1, 1e308, 1e308),  # infinite summed over frames
            ("res://main.gd::15::nan", 1, float("nan"), float("nan")),
            (f"res://main.gd::18::{RED}red", 1, 0.004, 0.003),
        ],
        False,
    ),
    "huge_profile": (
        [
            (f"res://main.gd::{i + 1}::f{i:03d}_" + "x" * 895, 1, 2e-5 * (i + 1), 1e-5 * (i + 1))
            for i in range(600)
        ],
        True,
    ),
}


class FakeDebugger:
    """The game's side of the debugger: stops where asked, steps a line at a time, and holds
    the bridge while it is stopped (as a stopped main loop answers nothing)."""

    def __init__(self, address: str, breakpoints: str) -> None:
        host, _, port = address.rpartition(":")
        self.sock = socket.create_connection((host, int(port)))
        self.lock = threading.Lock()
        self.running = threading.Event()
        self.running.set()
        self.breakpoints = {
            b.rpartition(":")[0]: int(b.rpartition(":")[2]) for b in breakpoints.split(",") if b
        }
        self.at: tuple[str, int] | None = None
        self.function = "_ready"  # the innermost frame's
        self.depth = 1  # frames of a stop: the innermost at ``at``, then res://main.gd:1, 2, …
        self.locals: list[Any] = []  # besides line and cwd: name, value, name, value…
        self.profile = "plain"

    def send(self, name: str, *args: Any) -> None:
        packets = [name, len(args), *args]
        data = b"".join(struct.pack("<I", len(v)) + v for v in map(_var, packets))
        with self.lock:
            self.sock.sendall(data)

    def stop(self, path: str, line: int, error: str = "Breakpoint") -> None:
        self.at = (path, line)
        self.running.clear()
        self.enter(error)

    def enter(self, error: str) -> None:
        self.send("debug_enter", True, error)

    def enter_break(self) -> None:
        """A break asked for (Godot 3 calls it a breakpoint)."""
        self.send("debug_enter", True, "Breakpoint")

    def start_profile(self) -> None:
        rows, _ = PROFILES[self.profile]
        for i, (function, _calls, _total, _self) in enumerate(rows):
            self.send("profile_sig", function, i)
        for frame in range(3):  # frame, its times, script time, D, F, (id, calls, total, self)
            values = [v for i, row in enumerate(rows) for v in (i, *row[1:])]
            self.send("profile_frame", frame, 0.01, 0.01, 0.0, 0.0166, 0.002, 0, len(rows), *values)

    def stop_profile(self) -> None:
        rows, total = PROFILES[self.profile]
        values = [v for i, row in enumerate(rows) for v in (i, row[1] * 3, row[2] * 3, row[3] * 3)]
        if not total:  # the engine's total says nothing: the server sums the frames
            values = []
        self.send("profile_total", 3, 0.03, 0.03, 0.0, 0.0166, 0.006, 0, len(values) // 4, *values)

    def resume(self) -> None:
        self.at = None
        self.send("debug_exit")
        self.running.set()

    def serve(self) -> None:
        buffer = b""
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                return
            buffer += chunk
            while len(buffer) >= 4:
                (n,) = struct.unpack_from("<I", buffer)
                if len(buffer) < 4 + n:
                    break
                packet = buffer[4 : 4 + n]
                buffer = buffer[4 + n :]
                self.command(*self.read(packet))

    def read(self, packet: bytes) -> tuple[str, list[Any]]:
        """A command's name and arguments: one Array ``[name, arg…]``."""
        command, _ = _read_var(packet)
        return command[0], command[1:]

    def frames(self) -> list[tuple[str, int, str]]:
        """The stack (path, line, function), innermost first; none at a break between frames."""
        if self.at is None or not self.at[0]:
            return []
        outer = (("res://main.gd", i, "f") for i in range(1, self.depth))
        return [(self.at[0], self.at[1], self.function), *outer]

    def variables(self) -> tuple[list[Any], list[Any]]:
        """The top frame's locals and members: name, value, name, value…"""
        line = self.at[1] if self.at else 0
        cwd = os.getcwd()  # the game's scratch: a private path, never shown
        members = ["self", ("object", 1174), "speed", 42, "state", ("name", "idle")]
        return ["line", line, "cwd", cwd, *self.locals], [*members, "aim", ("transform", AIM)]

    def send_stack(self) -> None:  # Godot 3 says 0 for every frame's id
        frames = ({"file": f, "line": n, "function": fn, "id": 0} for f, n, fn in self.frames())
        self.send("stack_dump", *frames)

    def send_variables(self) -> None:
        """Godot 3: one message, each group a count then its pairs (no globals)."""
        local, members = self.variables()
        self.send("stack_frame_vars", len(local) // 2, *local, len(members) // 2, *members, 0)

    def command(self, name: str, args: list[Any]) -> None:
        if name == "get_stack_dump":
            self.send_stack()
        elif name == "get_stack_frame_vars":
            self.send_variables()
        elif name in ("next", "step") and self.at is not None:
            path, line = self.at
            self.send("debug_exit")
            self.stop(path, line + 1)
        elif name == "continue" and self.at is not None:
            self.resume()
        elif name == "break" and self.at is None:
            self.at = ("", 0)
            self.running.clear()
            self.enter_break()
        elif name == "start_profiling" and self.at is None:
            self.start_profile()
        elif name == "stop_profiling":
            self.stop_profile()
        elif name == "breakpoint" and args[0] == "res://drop.gd":  # the connection ends
            self.sock.close()
            raise SystemExit
        elif name == "breakpoint" and args[0] == "res://leak.gd":  # stops in a private path
            self.stop("res://" + os.getcwd() + "/x.gd", 4)
        elif name == "breakpoint" and args[0] == "res://garbage.gd":  # no Variant at all
            with self.lock:
                self.sock.sendall(struct.pack("<II", 4, 250))
        elif name == "breakpoint" and args[0] == "res://deep.gd":  # a stack past any answer
            self.depth = DEEP
            self.stop("res://main.gd", 7)
        elif name == "breakpoint" and args[0] == "res://escapes.gd":  # texts to a terminal
            self.function = f"{RED}red"
            self.locals = [f"{RED}name", f"{TITLE}value"]
            self.stop("res://main.gd", 7, f"forged error {TITLE}")
        elif name == "breakpoint" and args[0].removesuffix(".gd")[6:] in PROFILES:
            self.profile = args[0].removesuffix(".gd")[6:]  # what the next profile holds
        elif name == "breakpoint":
            path, line, on = args
            if on:
                self.breakpoints[path] = line
            else:
                self.breakpoints.pop(path, None)


# --- Godot 4: bridge4.gd's replies, the debugger's framing and messages (tests/data/debugger) ---


def pack4(files: dict[str, bytes]) -> bytes:
    """A Godot 4.4+ pack (format version 3): its files' data, then their directory."""
    header = 4 * 5 + 4 + 8 + 8 + 64
    data = b"".join(files.values())
    directory = struct.pack("<I", len(files))
    offset = 0
    for res, blob in files.items():
        name = res.encode()
        padded = name + b"\0" * (-len(name) % 4)
        digest = hashlib.md5(blob, usedforsecurity=False).digest()
        directory += struct.pack("<I", len(padded)) + padded
        directory += struct.pack("<QQ", offset, len(blob)) + digest + struct.pack("<I", 0)
        offset += len(blob)
    out = struct.pack("<6I", 0x43504447, 3, 4, 6, 3, 1 << 1)  # files counted from the pack
    out += struct.pack("<QQ", header, header + len(data)) + b"\0" * 64
    return out + data + directory


def import4(argv: list[str]) -> int:
    """``--headless --import``: Godot 4's import of every file it imports (a ``.import``
    sidecar, the imported file and its ``.md5`` record in ``.godot/imported/``), then exit."""
    project = Path(argv[argv.index("--path") + 1])
    folder = project / ".godot" / "imported"
    folder.mkdir(parents=True, exist_ok=True)
    for path, rel, digest, stem in _imported(project):
        _write_imported(folder / f"{stem}.ctex", b"GST2", path)
        dest = f"res://.godot/imported/{stem}.ctex"
        path.with_name(path.name + ".import").write_text(
            '[remap]\n\nimporter="texture"\ntype="CompressedTexture2D"\n'
            f'uid="uid://b{digest[:12]}"\npath="{dest}"\n\n[deps]\n\n'
            f'source_file="res://{rel}"\ndest_files=["{dest}"]\n'
        )
        print(f"imported res://{rel}", flush=True)
    return 0


CLASSES4 = {  # --doctool's reference on Godot 4: Control's margins are offsets there
    "Node": CLASSES["Node"].replace('version="3.2"', 'version="4.6"'),
    "Control": CLASSES["Control"]
    .replace('version="3.2"', 'version="4.6"')
    .replace("margin_left", "offset_left")
    .replace("_margin", "_offset"),
}


class Game4(Game):
    """What ``bridge4.gd`` answers differently: Godot 4's names of classes and types."""

    ROOT, SPRITE, TRANSFORM = "Window", "Sprite2D", "Transform3D"
    OS = "Linux"


_TYPES4 = {type(None): 0, bool: 1, int: 2, float: 3, str: 4, dict: 27, list: 28}
_TAGGED4 = {"transform": 18, "name": 21, "object": 24}  # Transform3D, StringName, Object


def _var4(value: Any) -> bytes:
    """A Godot 4 Variant: the few kinds the fake sends (its type ids differ from Godot 3's)."""
    if isinstance(value, tuple) and value[0] == "object":
        return struct.pack("<IQ", 24 | 1 << 16, value[1])
    if isinstance(value, tuple) and value[0] == "name":
        return struct.pack("<I", 21) + _var(value[1])[4:]
    if isinstance(value, tuple) and value[0] == "transform":
        return struct.pack("<I12f", 18, *value[1])
    kind = _TYPES4[type(value)]
    if isinstance(value, bool) or value is None:
        return _var(value)
    if isinstance(value, int):
        return struct.pack("<Iq", kind | 1 << 16, value)
    if isinstance(value, float | str):
        return struct.pack("<I", kind | (1 << 16 if kind == 3 else 0)) + _var(value)[4:]
    if isinstance(value, list):
        return struct.pack("<II", kind, len(value)) + b"".join(_var4(v) for v in value)
    pairs = b"".join(_var4(k) + _var4(v) for k, v in value.items())
    return struct.pack("<II", kind, len(value)) + pairs


class FakeDebugger4(FakeDebugger):
    """Godot 4's ``RemoteDebugger``: a message is one packet ``[name, thread, [arg…]]`` both
    ways; a stop says it has a stack; the stack is one flat list; the variables come one
    message each; it evaluates and steps out; its profiler is the ``servers`` one."""

    THREAD = 1

    def send(self, name: str, *args: Any) -> None:
        data = _var4([name, self.THREAD, list(args)])
        with self.lock:
            self.sock.sendall(struct.pack("<I", len(data)) + data)

    def read(self, packet: bytes) -> tuple[str, list[Any]]:
        (name, _thread, args), _ = _read_var(packet, array=28)
        return name, args

    def enter(self, error: str) -> None:
        if error != "Breakpoint":  # Godot 4 prints a script error with a debugger attached
            assert self.at is not None
            print(f"SCRIPT ERROR: {error}", file=sys.stderr)
            print(f"          at: {self.function} ({self.at[0]}:{self.at[1]})", file=sys.stderr)
            sys.stderr.flush()
        self.send("debug_enter", error == "Breakpoint", error, True, self.THREAD)

    def enter_break(self) -> None:
        self.send("debug_enter", True, "", False, self.THREAD)

    def send_stack(self) -> None:
        flat = [v for frame in self.frames() for v in frame]
        self.send("stack_dump", len(flat), *flat)

    def send_variables(self) -> None:
        local, members = self.variables()
        self.send("stack_frame_vars", (len(local) + len(members)) // 2)
        for scope, pairs in enumerate((local, members)):
            for i in range(0, len(pairs), 2):
                value = pairs[i + 1]
                kind = _TAGGED4[value[0]] if isinstance(value, tuple) else _TYPES4[type(value)]
                self.send("stack_frame_var", pairs[i], scope, kind, value)

    def command(self, name: str, args: list[Any]) -> None:
        if name == "out" and self.at is not None:
            path, line = self.at
            self.send("debug_exit")
            self.stop(path, line + 1)
        elif name == "evaluate" and self.at is not None:
            self.evaluate(str(args[0]))
        elif name == "profiler:servers" and self.at is None:
            (self.start_profile if args and args[0] is True else self.stop_profile)()
        elif name in ("start_profiling", "stop_profiling"):
            return  # Godot 3's names: Godot 4 knows them not
        else:
            super().command(name, args)

    def evaluate(self, expression: str) -> None:
        """``speed``, a child's name and whole numbers evaluate; anything else fails as
        Godot 4.6's ``Expression`` does: a null answer, then the error that says why."""
        known: dict[str, int | str | list[Any]] = {
            "speed": 42,
            'get_node("Jump").name': "Jump",
            # A game that says its self is no Node, with a title change in the class's name.
            '[is_class("Node"), get_class()]': [False, "\x1b]0;owned\x07Ref\x1b[2JCounted"],
        }
        value = int(expression) if expression.isdigit() else known.get(expression)
        kind = 0 if value is None else {str: 4, list: 28}.get(type(value), 2)
        self.send("evaluation_return", expression, 3, kind, value)
        if value is None:
            where = ["res://main.gd", self.function, self.at[1] if self.at else 0]
            error = 'Condition "p_show_error" is true. Returning: Variant()'
            said = f"Invalid named index '{expression}' for base type Object"
            if expression.startswith('get_node("Far")'):
                said = "On call to 'get_node':"
            self.send(
                "error",
                0,
                0,
                4,
                60,
                "core/math/expression.cpp",
                "execute",
                1504,
                error,
                said,
                False,
                3,
                *where,
            )

    def start_profile(self) -> None:
        rows, _ = PROFILES[self.profile]
        for i, (function, _calls, _total, _self) in enumerate(rows):
            self.send("servers:function_signature", function, i)
        for frame in range(3):  # frame, its times, script time, S servers, F, (id, calls,
            values = [  # self, total, internal) each
                v
                for i, (_f, calls, all_s, own) in enumerate(rows)
                for v in (i, calls, own, all_s, 0.0)
            ]
            self.send(
                "servers:profile_frame",
                frame,
                0.01,
                0.01,
                0.0,
                0.0166,
                0.002,
                0,
                len(values),
                *values,
            )

    def stop_profile(self) -> None:
        rows, total = PROFILES[self.profile]
        values = [
            v
            for i, (_f, calls, all_s, own) in enumerate(rows)
            for v in (i, calls * 3, own * 3, all_s * 3, 0.0)
        ]
        if not total:  # the engine's total says nothing: the server sums the frames
            values = []
        self.send(
            "servers:profile_total", 3, 0.03, 0.03, 0.0, 0.0166, 0.006, 0, len(values), *values
        )


class _Refused(Exception):
    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error, self.message = error, message


def _serve(game: Game, conn: socket.socket, debugger: FakeDebugger | None = None) -> None:
    lock = threading.Lock()

    def send(message: dict[str, Any]) -> None:
        line = message["raw"] if "raw" in message else json.dumps(message)
        with lock:
            conn.sendall((line + "\n").encode())

    def answer(cmd: dict[str, Any]) -> None:
        try:
            reply = game.handle(cmd)
        except _Refused as exc:
            reply = {"id": cmd.get("id"), "ok": False, "error": exc.error, "message": exc.message}
        if reply is not None:
            send(reply)

    buffer = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            os._exit(0)
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            cmd = json.loads(line)
            if debugger is not None and cmd.get("cmd") != "quit":
                debugger.running.wait()  # a stopped game answers nothing
            if cmd.get("cmd") in ("input", "record", "after"):  # long: answered beside the others
                threading.Thread(target=answer, args=(cmd,), daemon=True).start()
            else:
                answer(cmd)


def _major() -> int:
    return int(os.environ.get(MAJOR_ENV, "3"))


def main(argv: list[str]) -> int:
    major = _major()
    version = VERSION4 if major >= 4 else VERSION
    if "--version" in argv:
        print(version)
        return 0
    if "--doctool" in argv:
        return doctool(argv)
    if "--editor" in argv:
        return editor(argv)
    if "--import" in argv and major >= 4:
        return import4(argv)
    if any(f in argv for f in ("--export-pack", "--export", "--export-release", "--export-debug")):
        return export(argv)
    if "-s" in argv and argv[argv.index("-s") + 1].endswith("addons/gut/gut_cmdln.gd"):
        return gut(argv)
    port = os.environ.get("GODOT_MCP_PORT")
    if "--script" in argv and not port and argv[argv.index("--script") + 1].endswith("check.gd"):
        return check(argv)
    if "--script" not in argv or not port:
        print("ERROR: the fake engine runs games, exports of packs and checks", file=sys.stderr)
        return 1
    print(f"Godot Engine v{version} - https://godotengine.org", flush=True)
    bridge = re.search(r"bridge(\d)\.gd$", argv[argv.index("--script") + 1])
    if bridge is not None and int(bridge.group(1)) != major:  # the other engine's GDScript
        print(
            f"SCRIPT ERROR: Parse Error: {bridge.group(0)} is no Godot {major} script",
            file=sys.stderr,
        )
        return 1
    width, height = 64, 48
    if "--resolution" in argv:
        w, _, h = argv[argv.index("--resolution") + 1].partition("x")
        width, height = int(w), int(h)
    project = Path(argv[argv.index("--path") + 1])
    scene = os.environ.get("GODOT_MCP_SCENE", "")
    loaded = not scene or (project / scene.removeprefix("res://")).is_file()
    game = (Game4 if major >= 4 else Game)(width, height)
    game.headless = os.environ.get(SERVER_ENV) == "1" or (major >= 4 and "--headless" in argv)
    game.malformed = scene == "res://malformed.tscn"
    game.deep = scene == "res://deep.tscn"
    game.forged = scene == "res://forged.tscn"
    debugger = None
    if "--remote-debug" in argv and scene != "res://nodebug.tscn":
        given = argv[argv.index("--breakpoints") + 1] if "--breakpoints" in argv else ""
        address = argv[argv.index("--remote-debug") + 1]
        if major >= 4:
            if not address.startswith("tcp://"):  # Godot 4 takes a URI
                print(f"ERROR: Invalid debugger URI '{address}'.", file=sys.stderr, flush=True)
                return 1
            debugger = FakeDebugger4(address.removeprefix("tcp://"), given)
        else:
            debugger = FakeDebugger(address, given)
        threading.Thread(target=debugger.serve, daemon=True).start()
    conn = socket.create_connection(("127.0.0.1", int(port)))
    hello = {
        "type": "hello",
        "secret": os.environ.get("GODOT_MCP_SECRET", ""),
        "engine": version,
        "os": game.OS,
        "headless": game.headless,
    }
    conn.sendall((json.dumps(hello) + "\n").encode())
    if debugger is not None and debugger.breakpoints:  # a breakpoint in the scene's _ready
        path, line = sorted(debugger.breakpoints.items())[0]
        debugger.stop(path, line)
        debugger.running.wait()
    if not loaded:
        print(f"ERROR: Failed loading resource: {scene}.", file=sys.stderr, flush=True)
    ready = {
        "type": "ready",
        "scene": scene or "res://main.tscn",
        "loaded": loaded,
        "error": "" if loaded else f"scene {scene} failed to load (error 19)",
        "width": width,
        "height": height,
    }
    conn.sendall((json.dumps(ready) + "\n").encode())
    print("fake game ready", flush=True)
    _serve(game, conn, debugger)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
