"""Exports: a headless Godot on a private snapshot, its outputs verified whole."""

from godot_mcp.features.export.job import (
    RUNNING,
    VERIFYING,
    ExportJob,
    ExportRunner,
    ExportSetupError,
    leftovers,
)
from godot_mcp.features.export.plan import ExportPlan, plan_export
from godot_mcp.features.export.templates import custom_template_refusal, template_bytes

__all__ = [
    "RUNNING",
    "VERIFYING",
    "ExportJob",
    "ExportPlan",
    "ExportRunner",
    "ExportSetupError",
    "custom_template_refusal",
    "leftovers",
    "plan_export",
    "template_bytes",
]
