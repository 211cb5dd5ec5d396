"""Finding the Godot binaries (windowed and headless) and a display for windowed runs.

Windowed: the explicit argument, else ``GODOT_BIN``, else the first of ``godot4``, ``godot``,
``godot3`` on ``PATH``. Headless: the explicit argument, else ``GODOT_HEADLESS_BIN``, else the
windowed binary itself for Godot 4 (run with ``--headless``), else ``godot3-server`` for Godot 3.
Versions come from ``--version``, whose exit code is ignored (Godot 3.2.3 exits 255). A .NET
build says so in its version: ``3.5.stable.mono.official…``, ``4.3.stable.mono.official…``
(the ``mono`` module's part of the version string; ``dotnet`` is taken too).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from godot_mcp.engine.process import environment
from godot_mcp.engine.process.availability import AVAILABLE, Availability, unavailable
from godot_mcp.engine.process.engine_lines import VERSION, version_line
from godot_mcp.engine.process.run import CannotStart, GodotRun
from godot_mcp.engine.profile import EngineProfile, profile_of

WINDOWED_CANDIDATES = ("godot4", "godot", "godot3")
HEADLESS3_CANDIDATES = ("godot3-server", "godot-server")
VERSION_TIMEOUT = 10.0
_DOTNET = re.compile(r"\.(?:mono|dotnet)(?:\.|$)")


@dataclass(frozen=True)
class GodotInstall:
    """What this machine offers for running a game; ``None`` where nothing was found."""

    binary: str | None
    headless: str | None
    version: str | None
    headless_version: str | None
    major: int | None
    xvfb: str | None
    display: str | None

    def version_for(self, mode: str) -> str | None:
        """The version of the engine a game of ``mode`` (``windowed``, ``headless``) runs on."""
        return self.version if mode == "windowed" else self.headless_version

    @property
    def profile(self) -> EngineProfile:
        """The windowed engine's profile (Godot 3's when its version is unknown)."""
        return profile_of(self.version)

    @property
    def headless_profile(self) -> EngineProfile:
        """The headless engine's profile (checks, exports, imports, headless games)."""
        return profile_of(self.headless_version)

    def profile_for(self, mode: str) -> EngineProfile:
        """The profile of the engine a game of ``mode`` (``windowed``, ``headless``) runs on."""
        return self.profile if mode == "windowed" else self.headless_profile

    @property
    def headless_major(self) -> int | None:
        """Major version of the headless binary, if known."""
        return major_of(self.headless_version)

    @property
    def dotnet(self) -> bool | None:
        """Whether the engine games run on is a .NET build (``None``: no version known)."""
        return is_dotnet(self.version or self.headless_version)

    @property
    def headless_dotnet(self) -> bool | None:
        """Whether the headless engine (checks, exports) is a .NET build."""
        return is_dotnet(self.headless_version)

    @property
    def headless_name(self) -> str:
        """The headless engine as refusals name it: ``Godot 4.6.3`` (``Godot`` if unknown)."""
        return engine_name(self.headless_version)

    @property
    def windowed_flags(self) -> list[str]:
        """Flags a windowed game needs (its engine's, where there is no GPU)."""
        return list(self.profile.windowed_flags)


def engine_name(version: str | None) -> str:
    """``Godot 4.6.3`` for ``4.6.3.stable.debian…``; ``Godot`` when the version is unknown."""
    match = re.match(r"\s*(\d+(?:\.\d+){1,2})", version or "")
    return f"Godot {match.group(1)}" if match else "Godot"


def is_dotnet(version: str | None) -> bool | None:
    """Whether a version string is a .NET build's (``4.3.stable.mono.official.77dcf97d8``);
    ``None`` for no version."""
    if not version:
        return None
    return bool(_DOTNET.search(version.strip()))


def major_of(version: str | None) -> int | None:
    """The major number of a Godot version string such as ``3.2.3.stable.custom_build``."""
    if not version:
        return None
    match = VERSION.match(version)
    return int(match.group(1)) if match else None


def read_version(binary: str, timeout: float = VERSION_TIMEOUT) -> str | None:
    """Run ``binary --version`` (with the sandbox's bare environment: a locale and ``PATH``)
    and return the version line, or ``None`` if it gave none. Blocking."""
    run = GodotRun(binary, ["--version"], Path("/"), base_env=environment.for_sandbox(os.environ))
    try:
        return version_line(run.probe(timeout).stdout)
    except CannotStart:
        return None


def _which(name: str | None, env: Mapping[str, str]) -> str | None:
    if not name:
        return None
    return shutil.which(name, path=env.get("PATH", os.defpath))


def locate_godot(
    godot: str | None = None,
    godot_headless: str | None = None,
    env: Mapping[str, str] = os.environ,
) -> GodotInstall:
    """Find the Godot binaries, their versions, Xvfb and the current display."""
    wanted = godot or env.get("GODOT_BIN")
    if wanted:
        binary = _which(wanted, env)
    else:
        binary = next((found for name in WINDOWED_CANDIDATES if (found := _which(name, env))), None)
    version = read_version(binary) if binary else None
    major = major_of(version)

    wanted_headless = godot_headless or env.get("GODOT_HEADLESS_BIN")
    headless: str | None
    if wanted_headless:
        headless = _which(wanted_headless, env)
        headless_version = read_version(headless) if headless else None
    elif binary and profile_of(version).headless_flags:
        headless, headless_version = binary, version
    else:
        headless = next(
            (found for name in HEADLESS3_CANDIDATES if (found := _which(name, env))), None
        )
        headless_version = read_version(headless) if headless else None

    return GodotInstall(
        binary=binary,
        headless=headless,
        version=version,
        headless_version=headless_version,
        major=major,
        xvfb=_which("Xvfb", env),
        display=env.get("DISPLAY") or None,
    )


def windowed_availability(inst: GodotInstall) -> Availability:
    """Whether windowed game sessions can start, and if not why."""
    if not inst.binary:
        return unavailable("no Godot binary found (set GODOT_BIN or install godot3/godot4)")
    if not inst.version:
        return unavailable("the Godot binary did not report a version")
    if not inst.display and not inst.xvfb:
        return unavailable("no DISPLAY and no Xvfb installed")
    return AVAILABLE


def headless_availability(inst: GodotInstall) -> Availability:
    """Whether headless game sessions can start, and if not why."""
    if not inst.headless:
        return unavailable(
            "no headless Godot found (Godot 3 needs godot3-server; or set GODOT_HEADLESS_BIN)"
        )
    if not inst.headless_version:
        return unavailable("the headless Godot binary did not report a version")
    return AVAILABLE
