"""The Godot engines the real tests run on, and what differs between them.

Godot 3.2.3 runs on the host (Debian 12's ``godot3`` packages); Godot 4.6.3 and Godot 3.6.2
run inside a Debian sid root (``tools/godot4-root.sh``), where the whole server and its tests
run natively. A test that takes the ``engine`` fixture runs once per engine; each lane of
``tools/test.sh`` selects the engine it can run (``GODOT_MCP_TEST_ENGINES``: 3, 4 or 36) and
deselects the others. An engine is keyed by its lane (``3``, ``4``, ``36``); ``profile`` is what
the code under test branches on.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from godot_mcp.engine.process.locate import GodotInstall, locate_godot
from godot_mcp.engine.profile import EngineProfile, profile_of

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Engine:
    """One Godot engine as the tests drive it."""

    major: int
    version: str  # the start of what its --version prints
    lane: int  # GODOT_MCP_TEST_ENGINES names it so
    windowed: str
    headless: str
    release_template: str
    debug_template: str
    template_dir: str  # under $XDG_DATA_HOME/godot/
    template_names: tuple[str, str]  # release, debug
    demo: Path

    @property
    def name(self) -> str:
        return f"godot{self.lane}"

    @property
    def profile(self) -> EngineProfile:
        return profile_of(self.version)

    def binaries(self) -> tuple[str, ...]:
        """Every binary a real test of this engine may start."""
        return (self.windowed, self.headless, self.release_template, "Xvfb")

    def require(self) -> None:
        """Fail (in CI) or skip loudly (elsewhere) when this engine cannot run here."""
        missing = [b for b in dict.fromkeys(self.binaries()) if shutil.which(b) is None]
        if not missing:
            return
        reason = f"{', '.join(missing)} not installed; {self.name} tests cannot run"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (a lane that cannot start its engine fails in CI)")
        warnings.warn(f"SKIPPED LOUDLY: {reason}", stacklevel=2)
        pytest.skip(f"SKIPPED LOUDLY: {reason}")

    def install(self) -> GodotInstall:
        """The located install, always with the runner's own Xvfb."""
        headless = None if self.headless == self.windowed else self.headless
        found = locate_godot(godot=self.windowed, godot_headless=headless)
        assert found.major == self.major, found
        return dataclasses.replace(found, display=None)

    def headless_argv(self) -> list[str]:
        """The start of a headless command line (Godot 4 is its own binary with --headless)."""
        return [self.headless, "--headless"] if self.major == 4 else [self.headless]

    def run_script(
        self, tmp_path: Path, script: str, application: str = 'config/name="Map"\n'
    ) -> tuple[Path, str]:
        """Run ``script`` headless (``--script``) in a fresh project at ``tmp_path/written``
        whose ``[application]`` section is ``application``; the project and stdout."""
        project = tmp_path / "written"
        project.mkdir()
        (project / "project.godot").write_text(
            f"config_version={self.major + 1}\n\n[application]\n\n{application}"
        )
        (project / "w.gd").write_text(script)
        env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
        run = subprocess.run(
            [*self.headless_argv(), "--path", str(project), "--script", "res://w.gd"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        return project, run.stdout

    def copy_demo(self, target: Path) -> Path:
        """A private copy of this engine's demo project."""
        shutil.copytree(self.demo, target)
        return target

    def install_templates(self, data_home: Path) -> Path:
        """Link this engine's Linux export templates under ``data_home`` (an XDG_DATA_HOME)."""
        target = data_home / "godot" / self.template_dir
        target.mkdir(parents=True, exist_ok=True)
        for name, binary in zip(
            self.template_names, (self.release_template, self.debug_template), strict=True
        ):
            found = shutil.which(binary)
            assert found, binary
            link = target / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(found)
        return target

    def port(self, text: str) -> str:
        """A Godot 3 fixture file (project, scene, resource or script) in this engine's
        format and names: the small set of renames the fixtures need, not a converter."""
        if self.major == 3:
            return text
        text = re.sub(r"^config_version=4$", "config_version=5", text, flags=re.M)
        header = r"^(\[gd_(?:scene|resource)\b[^\]]*)format=2"
        text = re.sub(header, r"\1format=3", text, flags=re.M)
        text = re.sub(
            r'\[ext_resource path="([^"]*)" type="([^"]*)" id=(\d+)\]',
            r'[ext_resource type="\2" path="\1" id="\3"]',
            text,
        )
        text = re.sub(r"ExtResource\( (\d+) \)", r'ExtResource("\1")', text)
        for old, new in _RENAMES4:
            text = text.replace(old, new)
        return with_unique_ids(text)

    def scene(self, script: str, root_type: str = "Node2D") -> str:
        """A scene of one ``root_type`` node running ``res://{script}``."""
        if self.major == 3:
            return (
                "[gd_scene load_steps=2 format=2]\n\n"
                f'[ext_resource path="res://{script}" type="Script" id=1]\n\n'
                f'[node name="Root" type="{root_type}"]\nscript = ExtResource( 1 )\n'
            )
        return with_unique_ids(
            "[gd_scene load_steps=2 format=3]\n\n"
            f'[ext_resource type="Script" path="res://{script}" id="1_s"]\n\n'
            f'[node name="Root" type="{root_type}"]\nscript = ExtResource("1_s")\n'
        )


_NODE = re.compile(r'^\[node name="[^"]*"[^\]]*?(?<! unique_id=\d)\]$', re.M)


def with_unique_ids(scene: str) -> str:
    """Give each node of a Godot 4 scene the ``unique_id`` the 4.6 editor writes. Without
    it the engine draws a random one at every export, and the same project exports to other
    bytes each time."""

    def add(match: re.Match[str]) -> str:
        line = match.group(0)
        if "unique_id=" in line:
            return line
        return f"{line[:-1]} unique_id={zlib.crc32(line.encode()) & 0x7FFFFFFF}]"

    return _NODE.sub(add, scene)


# Godot 3 names the fixtures use, and Godot 4's.
_RENAMES4 = (
    ("extends Reference", "extends RefCounted"),
    ('type="Sprite"', 'type="Sprite2D"'),
    ('type="Texture"', 'type="Texture2D"'),
    ("PoolStringArray", "PackedStringArray"),
    ("PoolByteArray", "PackedByteArray"),
    ("margin_", "offset_"),
)

GODOT3 = Engine(
    major=3,
    version="3.2.3.",
    lane=3,
    windowed="godot3",
    headless="godot3-server",
    release_template="godot3-runner",
    debug_template="godot3-runner",
    template_dir="templates/3.2.3.stable",
    template_names=("linux_x11_64_release", "linux_x11_64_debug"),
    demo=REPO / "examples" / "demo3",
)
GODOT4 = Engine(
    major=4,
    version="4.6.3.",
    lane=4,
    windowed="godot",
    headless="godot",
    release_template="godot-template-release",
    debug_template="godot-template-debug",
    template_dir="export_templates/4.6.3.stable",
    template_names=("linux_release.x86_64", "linux_debug.x86_64"),
    demo=REPO / "examples" / "demo",
)
GODOT36 = dataclasses.replace(
    GODOT3, version="3.6.2.", lane=36, template_dir="templates/3.6.2.stable"
)
ENGINES = {3: GODOT3, 4: GODOT4, 36: GODOT36}


_current: list[Engine] = []


def current() -> Engine:
    """The engine of the running test (set for every engine-parametrized test); helpers that
    write fixture projects or name binaries ask it, so a test body reads the same on both."""
    if not _current:
        raise RuntimeError("this test does not run per engine: give it the engine fixture")
    return _current[-1]


def set_current(engine: Engine | None) -> None:
    _current.clear()
    if engine is not None:
        _current.append(engine)


def lane_engines() -> set[int]:
    """The engines this test run covers: ``GODOT_MCP_TEST_ENGINES`` ("3", "4", "36" or a
    list such as "3,4"), by default 4 inside the sid root and 3 elsewhere."""
    raw = os.environ.get("GODOT_MCP_TEST_ENGINES")
    if not raw:
        return {4} if os.environ.get("GODOT_MCP_IN_SID") else {3}
    return {int(part) for part in raw.split(",") if part.strip()}


def only_engine_tests() -> bool:
    """Inside the sid root only engine-parametrized tests run (the rest ran on the host)."""
    return bool(os.environ.get("GODOT_MCP_IN_SID")) and 3 not in lane_engines()
