"""Suite-wide settings."""

from hypothesis import settings

# The machine is shared and noisy: property tests judge outcomes, never timings.
settings.register_profile("godot-mcp", deadline=None)
settings.load_profile("godot-mcp")
