"""Export tools (project.export*)."""

from __future__ import annotations

from godot_mcp.edge.deps import ToolSpec

TOOLS: list[ToolSpec] = []
