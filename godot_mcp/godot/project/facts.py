"""What a project says of the engine it needs: C#, the features it declares, the version that
saved it.

- **C#.** A project uses C# when it has a ``.csproj`` at its root, a ``[dotnet]`` (Godot 4) or
  ``[mono]`` (Godot 3) section in ``project.godot``, ``"C#"`` among its ``config/features``,
  or a ``.cs`` file where Godot's file system looks (hidden folders, Godot's caches and folders
  holding a ``.gdignore`` left out). Its scripts load only on a .NET build of Godot
  (``locate.is_dotnet``); anywhere else a scene naming one fails to load (Godot 3) or runs
  without it (Godot 4).
- **Features.** Godot 4 records ``application/config/features``, whose first entry is the
  version of the editor that saved it (``PackedStringArray("4.7", "GL Compatibility")``);
  Godot 3 records none (``[]``). A project saved by a newer engine than the server's may use
  what that engine added (a class, a property): a warning names both versions.

Blocking (reads ``project.godot``, lists the root, walks the project at most ``MAX_FILES``
files deep): call from a worker thread.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from godot_mcp.errors import Unavailable
from godot_mcp.godot.process.locate import GodotInstall, engine_name, is_dotnet
from godot_mcp.godot.project.files import visible_files
from godot_mcp.godot.project.presets import read_config

__all__ = [
    "MAX_FILES",
    "Facts",
    "csharp_export",
    "csharp_reason",
    "export_warnings",
    "first_csharp",
    "newer_engine",
    "read_facts",
    "refuse_csharp",
]

MAX_FILES = 20_000  # files looked at for a .cs file before giving up (then: no C# found)
_SECTIONS = ("dotnet", "mono")
_FEATURE_VERSION = re.compile(r"^(\d+)\.(\d+)$")
_ENGINE_VERSION = re.compile(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Facts:
    """``features``: the declared ``config/features``; ``dotnet``: the project uses C#."""

    features: list[str]
    dotnet: bool


def read_facts(project: Path) -> Facts:
    """The project's declared features and whether it uses C#."""
    try:
        config = read_config(project / "project.godot")
    except (OSError, ValueError):
        config = {}
    features = _features(config)
    dotnet = (
        "C#" in features
        or any(section in config for section in _SECTIONS)
        or _has_csproj(project)
        or first_csharp(visible_files(project, MAX_FILES)) is not None
    )
    return Facts(features, dotnet)


def _features(config: dict[str, dict[str, object]]) -> list[str]:
    value = config.get("application", {}).get("config/features")
    if not isinstance(value, tuple | list):
        return []
    items = value[1:] if isinstance(value, tuple) else value  # a constructor: its arguments
    return [item for item in items if isinstance(item, str)]


def _has_csproj(project: Path) -> bool:
    try:
        with os.scandir(project) as entries:
            return any(e.name.endswith(".csproj") and e.is_file() for e in entries)
    except OSError:
        return False


def first_csharp(rels: Iterable[str]) -> str | None:
    """The first ``.cs`` file (in path order) of ``rels`` as ``res://``, or None."""
    found = sorted(rel for rel in rels if rel.lower().endswith(".cs"))
    return "res://" + found[0] if found else None


def csharp_reason(engine: str) -> str:
    """Why a C# project cannot run on ``engine`` (``Godot 4.6.3``), a non-.NET build."""
    return (
        f"the project uses C# and this {engine} is not a .NET build, so its C# scripts "
        "cannot load; run it with a .NET build of Godot"
    )


def refuse_csharp(project: Path, install: GodotInstall, mode: str) -> None:
    """Refuse (``Unavailable``) a game of a C# project on an engine without .NET; ``mode``
    (``windowed`` or ``headless``) picks the engine the game runs on."""
    version = install.version if mode == "windowed" else install.headless_version
    if is_dotnet(version) is False and read_facts(project).dotnet:
        raise Unavailable(csharp_reason(engine_name(version)))


def csharp_export(engine: str) -> str:
    """The warning of an export of a C# project by ``engine``, a non-.NET build."""
    return (
        f"the project uses C# and this {engine} is not a .NET build: the export holds the C# "
        "sources but no compiled assemblies, so its C# scripts will not run; export with a "
        ".NET build of Godot"
    )


def export_warnings(project: Path, engine_version: str | None) -> list[str]:
    """What an export of ``project`` by the engine ``engine_version`` warns of: C# on an
    engine without .NET, a project saved by a newer engine."""
    facts = read_facts(project)
    warnings = []
    if facts.dotnet and is_dotnet(engine_version) is False:
        warnings.append(csharp_export(engine_name(engine_version)))
    newer = newer_engine(facts.features, engine_version)
    return [*warnings, *([newer] if newer else [])]


def newer_engine(features: Iterable[str], engine_version: str | None) -> str | None:
    """The warning for a project saved by a newer Godot than ``engine_version``, or None."""
    saved = next((m for f in features if (m := _FEATURE_VERSION.match(f))), None)
    running = _ENGINE_VERSION.match(engine_version or "")
    if saved is None or running is None:
        return None
    if (int(saved.group(1)), int(saved.group(2))) <= (int(running.group(1)), int(running.group(2))):
        return None
    number = ".".join(g for g in running.groups() if g is not None)
    return (
        f"the project was saved by Godot {saved.group(0)} and this server runs Godot {number}: "
        f"what Godot {saved.group(0)} added (classes, properties) does not load here"
    )
