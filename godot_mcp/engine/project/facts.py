"""What a project says of the engine it needs: C#, the features it declares, the version that
saved it.

- **C#.** A project uses C# when it has a ``.csproj`` at its root, a ``[dotnet]`` (Godot 4) or
  ``[mono]`` (Godot 3) section in ``project.godot``, ``"C#"`` among its ``config/features``,
  or a ``.cs`` file where Godot's file system looks (hidden folders, Godot's caches and folders
  holding a ``.gdignore`` left out). Its scripts load only on a .NET build of Godot
  (``locate.is_dotnet``); anywhere else a scene naming one fails to load (Godot 3) or runs
  without it (Godot 4).
- **Needing C#, or only carrying it.** A project *needs* C# when what the game runs attaches a
  ``.cs`` script: its main scene (or the scene a session starts), an autoload, or what they load
  with them (``reach.walk``: ``ext_resource``, ``preload``, ``extends "…"``, transitively). A
  ``load`` at run time is not followed: the game may guard it, as the official
  ``misc/os_test`` demo loads its ``CSharpTest.cs`` only when ``ResourceLoader.exists`` says
  so. A project that uses C# and does not need it *carries* it: on an engine without .NET it
  runs, and what starts, checks or exports it warns that its ``.cs`` files will not load
  (``csharp_fit``). One that needs it is refused a game (``refuse_csharp``), checked as one
  ``load`` problem and exported with a warning.
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

from godot_mcp.engine.process.locate import GodotInstall, engine_name, is_dotnet
from godot_mcp.engine.process.redact import printable
from godot_mcp.engine.profile import saved_by_newer
from godot_mcp.engine.project import reach, uids
from godot_mcp.engine.project.files import visible_files
from godot_mcp.engine.project.presets import project_config
from godot_mcp.errors import Unavailable

__all__ = [
    "MAX_FILES",
    "CsharpFit",
    "Facts",
    "csharp_carried",
    "csharp_export",
    "csharp_fit",
    "csharp_reason",
    "export_warnings",
    "first_csharp",
    "game_roots",
    "newer_engine",
    "read_facts",
    "refuse_csharp",
]

MAX_FILES = 20_000  # files looked at for a .cs file before giving up (then: no C# found)
MAX_NAMED = 10  # C# files a warning names (then: how many more)
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
    config = project_config(project)
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


def game_roots(project: Path, scene: str | None = None) -> list[str]:
    """What the game loads at start: ``scene`` (else the main scene), then each autoload, as
    ``project.godot`` names them (``res://`` or ``uid://``)."""
    config = project_config(project)
    main = config.get("application", {}).get("run/main_scene")
    if scene is None and isinstance(main, str) and main:
        scene = uids.scene_path(project, main)
    loads = [v.removeprefix("*") for v in config.get("autoload", {}).values() if isinstance(v, str)]
    return [*([scene] if scene else []), *loads]


@dataclass(frozen=True)
class CsharpFit:
    """A C# project on an engine without .NET: ``needed``, the first ``.cs`` script what the
    game runs attaches (None: it attaches none, the project only carries C#), and ``files``,
    its ``.cs`` files where Godot's file system looks, in path order; both as a client may
    read them (a file name is the project's text: :func:`printable`)."""

    needed: str | None
    files: list[str]


def csharp_fit(
    project: Path, scene: str | None = None, seen: Iterable[str] | None = None
) -> CsharpFit:
    """Whether the game (started on ``scene``, else the main scene) needs C#, and the
    project's C# files among ``seen`` (the files Godot's file system sees, project-relative;
    default: listed here). Blocking: reads what the game loads, bounded by ``reach``."""
    reached = reach.walk(project, game_roots(project, scene))
    needed = next((p for p in reached.by if p.lower().endswith(".cs")), None)
    listed = visible_files(project, MAX_FILES) if seen is None else seen
    files = sorted(r for r in listed if r.lower().endswith(".cs"))
    shown = None if needed is None else printable(needed)
    return CsharpFit(shown, [printable("res://" + f) for f in files])


def csharp_carried(engine: str, files: list[str]) -> str:
    """The warning of a project that carries the C# scripts ``files`` and does not need them,
    on ``engine`` (``Godot 4.6.3``), a non-.NET build."""
    names = ", ".join(files[:MAX_NAMED])
    more = f" and {len(files) - MAX_NAMED} more" if len(files) > MAX_NAMED else ""
    return (
        f"this {engine} is not a .NET build, so the project's C# scripts will not load "
        f"({names}{more}); what the game loads at start attaches none of them"
    )


def csharp_reason(engine: str) -> str:
    """Why a C# project cannot run on ``engine`` (``Godot 4.6.3``), a non-.NET build."""
    return (
        f"the project uses C# and this {engine} is not a .NET build, so its C# scripts "
        "cannot load; run it with a .NET build of Godot"
    )


def refuse_csharp(
    project: Path, install: GodotInstall, mode: str, scene: str | None = None
) -> list[str]:
    """Refuse (``Unavailable``) a game that needs C# on an engine without .NET; ``mode``
    (``windowed`` or ``headless``) picks the engine the game runs on, ``scene`` the scene it
    starts (default the main scene). A game of a project that only carries C# starts: its
    warnings (the C# files that will not load) are returned."""
    version = install.version_for(mode)
    if is_dotnet(version) is not False or not read_facts(project).dotnet:
        return []
    fit = csharp_fit(project, scene)
    if fit.needed is not None:
        raise Unavailable(csharp_reason(engine_name(version)))
    return [csharp_carried(engine_name(version), fit.files)] if fit.files else []


def csharp_export(engine: str) -> str:
    """The warning of an export of a C# project by ``engine``, a non-.NET build."""
    return (
        f"the project uses C# and this {engine} is not a .NET build: the export holds the C# "
        "sources but no compiled assemblies, so its C# scripts will not run; export with a "
        ".NET build of Godot"
    )


def export_warnings(project: Path, engine_version: str | None) -> list[str]:
    """What an export of ``project`` by the engine ``engine_version`` warns of: C# on an
    engine without .NET (a game that needs it, or C# files that will not load), a project
    saved by a newer engine."""
    facts = read_facts(project)
    warnings = []
    if facts.dotnet and is_dotnet(engine_version) is False:
        fit = csharp_fit(project)
        engine = engine_name(engine_version)
        if fit.needed is not None:
            warnings.append(csharp_export(engine))
        elif fit.files:
            warnings.append(csharp_carried(engine, fit.files))
    newer = newer_engine(facts.features, engine_version)
    return [*warnings, *([newer] if newer else [])]


def newer_engine(features: Iterable[str], engine_version: str | None) -> str | None:
    """The warning for a project saved by a newer Godot than ``engine_version``, or None."""
    saved = next((m for f in features if (m := _FEATURE_VERSION.match(f))), None)
    running = _ENGINE_VERSION.match(engine_version or "")
    if saved is None or running is None:
        return None
    numbers = (int(saved.group(1)), int(saved.group(2)))
    if not saved_by_newer(numbers, (int(running.group(1)), int(running.group(2)))):
        return None
    number = ".".join(g for g in running.groups() if g is not None)
    return (
        f"the project was saved by Godot {saved.group(0)} and this server runs Godot {number}: "
        f"what Godot {saved.group(0)} added (classes, properties) does not load here"
    )
