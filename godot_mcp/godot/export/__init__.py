"""Exports: a headless Godot on a private snapshot, its outputs verified whole."""

from godot_mcp.godot.export.job import (
    RUNNING,
    VERIFYING,
    ExportJob,
    ExportRunner,
    ExportSetupError,
    leftovers,
)
from godot_mcp.godot.export.templates import custom_template_refusal, template_bytes

__all__ = [
    "RUNNING",
    "VERIFYING",
    "ExportJob",
    "ExportRunner",
    "ExportSetupError",
    "custom_template_refusal",
    "leftovers",
    "template_bytes",
]
