"""What an export will do, decided before anything is copied: the preset (the project's, or
the engine's defaults for a platform), the outputs it must write, and the refusals of a
preset that cannot be exported safely. Blocking (reads the project's files): use a thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from godot_mcp.engine.process.redact import PathPair
from godot_mcp.engine.profile import EngineProfile
from godot_mcp.engine.project.presets import (
    PLATFORMS,
    Preset,
    PresetsError,
    UnknownPreset,
    expected_outputs,
    find_preset,
    platform_preset,
    project_name,
    read_presets,
)
from godot_mcp.errors import InvalidArgument
from godot_mcp.features.export.templates import custom_template_refusal


@dataclass(frozen=True)
class ExportPlan:
    """The preset to export with, the output file names it must write, and the platform
    when the preset is the engine's defaults for one (written into the private copy)."""

    preset: Preset
    kind: str
    expected: list[str]
    platform: str | None

    def refuse_unsafe(self, private: Iterable[PathPair]) -> None:
        """``InvalidArgument`` for an output name that is no plain file name, or a custom
        template the export may not read (one of the server's own files, not a template)."""
        if any(not n or n in (".", "..") or "/" in n or "\0" in n for n in self.expected):
            raise InvalidArgument(
                f"preset {self.preset.name!r} has an export_path without a usable file name"
            )
        refused = custom_template_refusal(dict(os.environ), self.preset, self.kind, private)
        if refused:
            raise InvalidArgument(refused)


def plan_export(
    project: Path, preset_name: str | None, platform: str | None, kind: str, engine: EngineProfile
) -> ExportPlan:
    """The plan of an export of ``preset_name`` or, instead, of ``platform`` (exactly one)
    on ``engine``; ``InvalidArgument`` saying what to give instead."""
    if (preset_name is None) == (platform is None):
        raise InvalidArgument(f"give exactly one of preset and platform ({', '.join(PLATFORMS)})")
    if platform is not None:
        try:
            preset = platform_preset(platform, engine)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
    else:
        assert preset_name is not None
        preset = _find(project, preset_name)
    try:
        expected = expected_outputs(project_name(project), preset, kind)
    except OSError as exc:
        raise InvalidArgument(f"cannot read project.godot: {exc.strerror}") from None
    return ExportPlan(preset, kind, expected, platform)


def _find(project: Path, name: str) -> Preset:
    """The project's preset called ``name``; ``InvalidArgument`` naming the known ones (and
    ``platform``, which needs none) when there is no such preset or no presets file."""
    try:
        return find_preset(read_presets(project), name)
    except UnknownPreset as exc:
        raise InvalidArgument(f"{exc.message}; or export by platform instead of preset") from None
    except PresetsError as exc:
        raise InvalidArgument(
            f"{exc.message}; known presets: none; export by platform instead "
            f"({', '.join(PLATFORMS)}) with the engine's default options"
        ) from None
