"""What each line of Godot engines does differently, in one place: an :class:`EngineProfile`
a line, got with :func:`profile_of` from the engine's ``--version`` (or its numbers).

Lines::

    GODOT_3     a Godot 3 whose minor is unknown (and any engine whose version is unknown)
    GODOT_3_2   3.2 (and before)      imports .svgz, no .mp3; an unnamed project's user://
    GODOT_3_3   3.3, 3.4              imports .mp3, no .svgz;  in the project folder
    GODOT_3_5   3.5, 3.6
    GODOT_4_0   4.0 to 4.3            a windowed run without a GPU is told to use OpenGL
    GODOT_4     4.4 on (and a Godot 4 whose minor is unknown; a later major too)

Nothing outside this module compares engine versions, but for the wire codecs
(``engine/debugger/variant.py``, ``wire.py``), which take :attr:`EngineProfile.major`
(``tests/test_engine_profile.py`` reads the package for it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

__all__ = [
    "GODOT_3",
    "GODOT_3_2",
    "GODOT_3_3",
    "GODOT_3_5",
    "GODOT_4",
    "GODOT_4_0",
    "EngineProfile",
    "profile_of",
    "saved_by_newer",
]

_NUMBERS = re.compile(r"\s*(\d+)\.(\d+)")


@dataclass(frozen=True, eq=False)
class EngineProfile:
    """One line of engines: every way it differs from the others, by name."""

    name: str
    major: int  # what the wire codecs read the engine's Variants and framing by

    # Running it.
    headless_flags: tuple[str, ...]  # Godot 4 runs headless with a flag; Godot 3 is a server build
    windowed_flags: tuple[str, ...]  # a windowed game's, where there is no GPU (Xvfb)
    reads_args_after_dashes: bool  # its own options and project or scene files, after ``--``
    unnamed_user_dir_in_project: bool  # an unnamed project's ``user://`` is the project folder

    # Its debugger.
    remote_debug_scheme: str  # before ``--remote-debug``'s host:port
    can_evaluate: bool
    steps_out: bool
    reloads_named_scripts: bool  # else ``reload_scripts`` takes no list and reloads them all
    logs_errors_when_debugged: bool  # else a script error reaches only the debugger
    enter_says_stack: bool  # ``debug_enter``'s third value: the game has a stack
    flat_stack: bool  # ``stack_dump`` a flat list, else a Dictionary a frame
    variables_one_by_one: bool  # a ``stack_frame_var`` message a variable
    servers_profiler: bool  # ``profiler:servers`` and ``servers:*``, else ``start_profiling``

    # Importing.
    import_folder: str
    import_records: str  # the folder of its ``.md5`` records of imported files
    import_flags: tuple[str, ...]
    import_exits: bool  # once imported; else the editor runs on and is stopped
    imports: frozenset[str]  # the extensions its importers take
    major_imports: frozenset[str]  # those some engine of its major takes (never imported?)
    class_names_need_import: bool  # the global class cache is in the import folder

    # Tests.
    runs_gdunit4: bool
    imports_before_tests: bool  # the runners need the global script classes an import records

    # Exports.
    export_flags: Mapping[str, tuple[str, ...]]  # a kind's (release, debug, pack)
    platform_names: Mapping[str, str]  # the engine's name of each of PLATFORMS
    preset_keys: tuple[tuple[str, str], ...]  # the [preset.N] keys it writes, in its order
    console_wrapper: bool  # a desktop debug export adds a launcher unless told not to

    # Input.
    key_codes: tuple[str, ...] = ()  # what a key of the input map matches by, first set first

    def script(self, stem: str) -> str:
        """The server's own script of ``stem`` for this engine's GDScript (``bridge3.gd``)."""
        return f"{stem}{self.major}.gd"

    def remote_debug(self, address: str) -> str:
        """``--remote-debug``'s value for ``address`` (``127.0.0.1:6007``)."""
        return self.remote_debug_scheme + address

    def __repr__(self) -> str:
        return f"<EngineProfile {self.name}>"


_COMMON = frozenset(
    {
        # textures
        "png", "jpg", "jpeg", "webp", "svg", "tga", "bmp", "hdr", "exr",
        # audio
        "wav", "ogg",
        # scenes and models
        "gltf", "glb", "dae", "obj", "fbx", "escn",
        # translations
        "csv",
    }
)  # fmt: skip
_IMPORTS3 = _COMMON | {"svgz", "mp3"}  # 3.2 imports .svgz, 3.3 and later .mp3
_IMPORTS4 = _COMMON | {
    "mp3",
    "ttf",
    "otf",
    "ttc",
    "otc",
    "woff",
    "woff2",
    "pfb",
    "fnt",
    "font",
    "glsl",
}

GODOT_3 = EngineProfile(
    name="Godot 3",
    major=3,
    headless_flags=(),
    windowed_flags=(),
    reads_args_after_dashes=True,
    unnamed_user_dir_in_project=False,
    remote_debug_scheme="",
    can_evaluate=False,
    steps_out=False,
    reloads_named_scripts=False,
    logs_errors_when_debugged=False,
    enter_says_stack=False,
    flat_stack=False,
    variables_one_by_one=False,
    servers_profiler=False,
    import_folder=".import/",
    import_records=".import",
    import_flags=("--editor",),
    import_exits=False,
    imports=_IMPORTS3,
    major_imports=_IMPORTS3,
    class_names_need_import=False,
    runs_gdunit4=False,
    imports_before_tests=False,
    export_flags={
        "pack": ("--export-pack",),
        "release": ("--export",),
        "debug": ("--export-debug",),
    },
    platform_names={
        "linux": "Linux/X11",
        "windows": "Windows Desktop",
        "macos": "Mac OSX",
        "web": "HTML5",
        "android": "Android",
        "ios": "iOS",
    },
    preset_keys=(
        ("runnable", "true"),
        ("custom_features", '""'),
        ("export_filter", '"all_resources"'),
        ("include_filter", '""'),
        ("exclude_filter", '""'),
        ("export_path", '""'),
        ("script_export_mode", "1"),
        ("script_encryption_key", '""'),
    ),
    console_wrapper=False,
    key_codes=("scancode", "physical_scancode"),
)
GODOT_3_2 = replace(
    GODOT_3,
    name="Godot 3.2",
    imports=_COMMON | {"svgz"},
    unnamed_user_dir_in_project=True,
    key_codes=("scancode",),  # physical_scancode is 3.3's
)
GODOT_3_3 = replace(
    GODOT_3, name="Godot 3.3", imports=_COMMON | {"mp3"}, unnamed_user_dir_in_project=True
)
GODOT_3_5 = replace(GODOT_3, name="Godot 3.5", imports=_COMMON | {"mp3"})
GODOT_4 = EngineProfile(
    name="Godot 4",
    major=4,
    headless_flags=("--headless",),
    windowed_flags=(),
    reads_args_after_dashes=False,
    unnamed_user_dir_in_project=False,
    remote_debug_scheme="tcp://",
    can_evaluate=True,
    steps_out=True,
    reloads_named_scripts=True,
    logs_errors_when_debugged=True,
    enter_says_stack=True,
    flat_stack=True,
    variables_one_by_one=True,
    servers_profiler=True,
    import_folder=".godot/",
    import_records=".godot/imported",
    import_flags=("--headless", "--import"),
    import_exits=True,
    imports=_IMPORTS4,
    major_imports=_IMPORTS4,
    class_names_need_import=True,
    runs_gdunit4=True,
    imports_before_tests=True,
    export_flags={
        "pack": ("--headless", "--export-pack"),
        "release": ("--headless", "--export-release"),
        "debug": ("--headless", "--export-debug"),
    },
    platform_names={
        "linux": "Linux",
        "windows": "Windows Desktop",
        "macos": "macOS",
        "web": "Web",
        "android": "Android",
        "ios": "iOS",
    },
    preset_keys=(
        ("runnable", "true"),
        ("dedicated_server", "false"),
        ("custom_features", '""'),
        ("export_filter", '"all_resources"'),
        ("include_filter", '""'),
        ("exclude_filter", '""'),
        ("export_path", '""'),
        ("encryption_include_filters", '""'),
        ("encryption_exclude_filters", '""'),
        ("encrypt_pck", "false"),
        ("encrypt_directory", "false"),
    ),
    console_wrapper=True,
    key_codes=("keycode", "physical_keycode", "key_label"),  # key_label from 4.2
)
# Vulkan fails under Xvfb; 4.4 falls back to OpenGL by itself.
GODOT_4_0 = replace(GODOT_4, name="Godot 4.0", windowed_flags=("--rendering-driver", "opengl3"))


def profile_of(version: str | int | None, minor: int | None = None) -> EngineProfile:
    """The profile of an engine: its ``--version`` (``3.2.3.stable.custom_build``), or its
    major (and ``minor``) numbers. An unknown version is Godot 3's (minor unknown), a
    version before 3 read as Godot 3's and one after 4 as the newest line; a major given as
    a number must be 3 or 4 (``ValueError``)."""
    if isinstance(version, int):
        if version not in (3, 4):
            raise ValueError(f"unsupported Godot major version {version}")
        major = version
    else:
        match = _NUMBERS.match(version or "")
        if match is None:
            return GODOT_3
        major, minor = int(match.group(1)), int(match.group(2))
    if major >= 4:
        return GODOT_4 if minor is None or major > 4 or minor >= 4 else GODOT_4_0
    if minor is None:
        return GODOT_3
    if major < 3 or minor <= 2:
        return GODOT_3_2
    return GODOT_3_3 if minor <= 4 else GODOT_3_5


def saved_by_newer(saved: tuple[int, int], running: tuple[int, int]) -> bool:
    """Whether a project saved by Godot ``saved`` (major, minor) is newer than the engine
    ``running``."""
    return saved > running
