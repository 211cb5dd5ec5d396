"""The engine's class reference, dumped by the project's own Godot and indexed for lookups."""

from godot_mcp.features.api.reference import (
    KINDS,
    MAX_NAME,
    ApiIndex,
    DumpReport,
    check_class,
    check_member,
    dump,
    sweep_partials,
)

__all__ = [
    "KINDS",
    "MAX_NAME",
    "ApiIndex",
    "DumpReport",
    "check_class",
    "check_member",
    "dump",
    "sweep_partials",
]
