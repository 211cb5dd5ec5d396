"""The engine's own remote debugger, spoken by the server for the games it starts: the Variant
wire format, the message framing of each engine, a listener that keeps only the launched
process's connection, and the debugger session (breaks, stacks, variables, stepping)."""

from godot_mcp.engine.debugger.listener import DebugListener
from godot_mcp.engine.debugger.session import (
    MAX_VARIABLES,
    AtBreak,
    Break,
    Debugger,
    DebuggerLost,
    Evaluated,
    EvaluationFailed,
    Frame,
    Measured,
    NoSelf,
    NotStopped,
    Profiled,
    Variables,
)
from godot_mcp.engine.debugger.variant import Malformed, to_json

__all__ = [
    "MAX_VARIABLES",
    "AtBreak",
    "Break",
    "DebugListener",
    "Debugger",
    "DebuggerLost",
    "Evaluated",
    "EvaluationFailed",
    "Frame",
    "Malformed",
    "Measured",
    "NoSelf",
    "NotStopped",
    "Profiled",
    "Variables",
    "to_json",
]
