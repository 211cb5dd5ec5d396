"""godot-mcp: an MCP server that drives a Godot project and serves its outputs as artifacts."""

__version__ = "0.3.0"
