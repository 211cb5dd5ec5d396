"""What ``project.info`` says of a project, read from its files (blocking: use a thread)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from godot_mcp.engine.profile import profile_of
from godot_mcp.engine.project import uids
from godot_mcp.engine.project.facts import newer_engine, read_facts
from godot_mcp.engine.project.inputmap import read_input_map
from godot_mcp.engine.project.presets import (
    PresetsError,
    project_config,
    project_name,
    read_presets,
)


@dataclass(frozen=True)
class ProjectInfo:
    """The project's name, main scene (``res://``), export presets, whether it uses C#, the
    features it declares, warnings (saved by a newer engine than ``engine_version``), and its
    input map (``inputmap.py``)."""

    name: str
    main_scene: str | None
    presets: list[str]
    dotnet: bool
    features: list[str]
    warnings: list[str]
    input_map: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def read_info(project: Path, engine_version: str | None) -> ProjectInfo:
    """``project`` as ``project.info`` reports it to a server running ``engine_version``."""
    facts = read_facts(project)
    newer = newer_engine(facts.features, engine_version)
    try:
        presets = [p.name for p in read_presets(project)]
    except PresetsError:
        presets = []
    try:
        name = project_name(project)
    except (OSError, PresetsError):
        name = project.name
    return ProjectInfo(
        name,
        main_scene(project),
        presets,
        facts.dotnet,
        facts.features,
        [newer] if newer else [],
        read_input_map(project_config(project), profile_of(engine_version)),
    )


def main_scene(project: Path) -> str | None:
    """The main scene as ``res://`` (Godot 4's ``uid://`` form resolved when it can be)."""
    scene = project_config(project).get("application", {}).get("run/main_scene")
    return uids.scene_path(project, scene) if isinstance(scene, str) and scene else None
