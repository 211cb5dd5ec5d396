"""A game's own arguments: checked, then passed after ``--``, never to the engine.

Both engines rewrite every argument before anything reads it: decoding it from UTF-8 drops a
leading byte-order mark, then they strip the characters up to space from both ends and turn
``%20`` into a space. An argument they would alter is refused, so what reaches the game (and
what the checks below compare) is exactly what was asked.

Godot 4 keeps everything after ``--`` for the game (``OS.get_cmdline_user_args()``). Godot 3
has no such boundary: it still reads its own options anywhere on the line, and takes an
argument ending in ``project.godot`` as another project and one naming a scene file as the
scene to run. So on Godot 3 those are refused by name rather than letting a game argument
reconfigure the engine (``--script``, ``--path``, ``--export``, ``--remote-debug`` ...).

The bridge's own settings never travel on the command line (they are in the game's
environment), so no argument, however spelled, reaches them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from godot_mcp.engine.profile import EngineProfile
from godot_mcp.features.game.errors import GameInvalid

MAX_ARGS = 32
MAX_ARG_CHARS = 256
_EDGE = "".join(map(chr, range(33)))  # what the engines strip from both ends of an argument
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")  # the engines decode %20; every %XX is refused

# What Godot 3.x reads wherever it stands on the command line: every option main.cpp's
# Main::setup and Main::start compare an argument with (3.2.3 and 3.6.2 read from their
# sources), which its --help does not all list, and those its modules read.
GODOT3_OPTIONS = frozenset(
    [
        "-h",
        "--help",
        "/?",
        "--version",
        "-v",
        "--verbose",
        "--quiet",
        "-e",
        "--editor",
        "-p",
        "--project-manager",
        "-q",
        "--quit",
        "-l",
        "--language",
        "--path",
        "-u",
        "--upwards",
        "--main-pack",
        "--render-thread",
        "--remote-fs",
        "--remote-fs-password",
        "--audio-driver",
        "--video-driver",
        "--tablet-driver",
        "-f",
        "--fullscreen",
        "-m",
        "--maximized",
        "-w",
        "--windowed",
        "-t",
        "--always-on-top",
        "--resolution",
        "--position",
        "--low-dpi",
        "--no-window",
        "--enable-vsync-via-compositor",
        "--disable-vsync-via-compositor",
        "--enable-delta-smoothing",
        "--disable-delta-smoothing",
        "-d",
        "--debug",
        "-b",
        "--breakpoints",
        "--profiling",
        "--remote-debug",
        "--debug-collisions",
        "--debug-navigation",
        "--frame-delay",
        "--time-scale",
        "--disable-render-loop",
        "--disable-crash-handler",
        "--fixed-fps",
        "--print-fps",
        "-s",
        "--script",
        "--check-only",
        "--export",
        "--export-debug",
        "--export-pack",
        "--doctool",
        "--no-docbase",
        "--build-solutions",
        "--gdnative-generate-json-api",
        "--test",
        "--allow_focus_steal_pid",
        "--skip-breakpoints",
        "--debug_opengl",
        # Read by 3.5 and 3.6 (main.cpp) and by their modules (GDNative, Mono), listed or not.
        "--debug-server",
        "--debug-shader-fallbacks",
        "--benchmark",
        "--benchmark-file",
        "--lsp-port",
        "--class-db-json",
        "--generate-mono-glue",
        "--generate-mono-cs-glue",
        "--generate-mono-cpp-glue",
    ]
)
# Prefixes Godot 3 (3.6's Mono module) reads as its own, whatever follows.
GODOT3_PREFIXES = ("--mono-debugger-agent=",)
GODOT3_FILES = ("project.godot", ".scn", ".tscn", ".escn", ".res", ".tres")


def check_game_args(args: Sequence[str], engine: EngineProfile) -> list[str]:
    """``args`` if a game may be given them on this engine; else ``GameInvalid`` naming the
    first that may not be, and why."""
    if not isinstance(args, list | tuple):
        raise GameInvalid("args must be a list of strings")
    if len(args) > MAX_ARGS:
        raise GameInvalid(f"args holds {len(args)} items; at most {MAX_ARGS}")
    for i, arg in enumerate(args):
        what = f"args[{i}]"
        if not isinstance(arg, str):
            raise GameInvalid(f"{what} must be a string")
        if len(arg) > MAX_ARG_CHARS:
            raise GameInvalid(f"{what} is {len(arg)} characters; at most {MAX_ARG_CHARS}")
        if "\0" in arg:
            raise GameInvalid(f"{what} holds a NUL character")
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raise GameInvalid(f"{what} is not valid UTF-8 (a lone surrogate)") from None
        if arg.startswith("\ufeff"):
            raise GameInvalid(
                f"{what} begins with a byte-order mark, which the engine drops before it reads "
                "the argument"
            )
        if arg != arg.strip(_EDGE):
            raise GameInvalid(
                f"{what} begins or ends with a space or control character, which the engine "
                "would strip before the game sees it"
            )
        if _ESCAPE.search(arg):
            raise GameInvalid(
                f"{what} holds a %XX sequence, which the engine may decode before the game sees it"
            )
        if engine.reads_args_after_dashes:
            if arg in GODOT3_OPTIONS or arg.startswith(GODOT3_PREFIXES):
                raise GameInvalid(
                    f"{what} {arg!r} is an option Godot 3 reads itself, even after --; "
                    "spell it another way (e.g. with =value)"
                )
            if arg.lower().endswith(GODOT3_FILES):
                raise GameInvalid(
                    f"{what} names a project or scene file, which Godot 3 would load itself; "
                    "use scene= for the scene"
                )
    return list(args)
