"""Game sessions: a Godot running the project with the bridge, its log, captures and input."""

from godot_mcp.features.game.args import MAX_ARG_CHARS, MAX_ARGS, check_game_args
from godot_mcp.features.game.capture import Capture
from godot_mcp.features.game.capturing import (
    MAX_FPS,
    MAX_FRAMES,
    MAX_RECORD_SECONDS,
    MIN_FPS,
    MIN_FRAMES,
    validate_recording,
)
from godot_mcp.features.game.files import open_game_stream
from godot_mcp.features.game.gate import Gate, stopped_error
from godot_mcp.features.game.log import LEVELS, Entry, Page, decode_cursor, encode_cursor
from godot_mcp.features.game.preview import Preview, RawFrame, downscale
from godot_mcp.features.game.runner import GameRunner
from godot_mcp.features.game.session import GameSession
from godot_mcp.features.game.userdata import project_file_warnings
from godot_mcp.features.game.waiting import input_timeout, wait_for_line, wait_until

__all__ = [
    "LEVELS",
    "MAX_ARGS",
    "MAX_ARG_CHARS",
    "MAX_FPS",
    "MAX_FRAMES",
    "MAX_RECORD_SECONDS",
    "MIN_FPS",
    "MIN_FRAMES",
    "Capture",
    "Entry",
    "GameRunner",
    "GameSession",
    "Gate",
    "Page",
    "Preview",
    "RawFrame",
    "check_game_args",
    "decode_cursor",
    "downscale",
    "encode_cursor",
    "input_timeout",
    "open_game_stream",
    "project_file_warnings",
    "stopped_error",
    "validate_recording",
    "wait_for_line",
    "wait_until",
]
