"""The project's scripts, scenes and resources checked by its own headless Godot."""

from godot_mcp.features.check.job import Check, Progress, Report, select, time_limit

__all__ = ["Check", "Progress", "Report", "select", "time_limit"]
