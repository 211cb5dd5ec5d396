"""The engine's own import of a private copy of the project, and its result moved in."""

from godot_mcp.features.importer.job import (
    Importer,
    ImportFailed,
    ImportTimeout,
    Outcome,
    Progress,
    install,
    time_limit,
)

__all__ = [
    "ImportFailed",
    "ImportTimeout",
    "Importer",
    "Outcome",
    "Progress",
    "install",
    "time_limit",
]
