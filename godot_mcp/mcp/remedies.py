"""The way out of a refusal, worded with its tool as ``tools/list`` spells it.

The layers below the edge raise an error with a :class:`~godot_mcp.errors.Remedy`; only here
does a remedy become a tool's name, in the server's name style (``--tool-names``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from godot_mcp.engine.process.availability import unavailable
from godot_mcp.errors import GodotMcpError, Remedy
from godot_mcp.mcp.spec import wire_name

if TYPE_CHECKING:
    from godot_mcp.mcp.deps import Core
    from godot_mcp.mcp.spec import Tools

# Each remedy: the tool that does it, and how the refusal says it.
WAYS: dict[Remedy, tuple[str, str]] = {
    Remedy.RESUME: ("runtime.debug.control", "{said}; resume it with {tool}"),
    Remedy.BREAK: ("runtime.debug.control", "{said}; stop it first ({tool} break)"),
    Remedy.IMPORT: ("project.import", "{said}: import it with {tool} first"),
    Remedy.VARIABLES: ("runtime.debug.variables", "{said}; {tool} lists the frame's names"),
}


def remedied(exc: GodotMcpError, deps: Core, tools: Tools) -> GodotMcpError:
    """``exc`` with its way out in its message, and why that tool is unavailable on this
    server when it is."""
    if exc.remedy is None:
        return exc
    name, way = WAYS[exc.remedy]
    tool = wire_name(name, tools.style)
    text = way.format(said=exc.message, tool=tool)
    found = tools.find(name)
    availability = found.availability(deps) if found is not None else unavailable("not served")
    if availability.why is not None:
        text += f"; {tool} is unavailable here: {availability.why}"
    exc.message, exc.remedy = text, None
    return exc
