"""Small projects for the export tests, in the running test's engine's format (Godot 3 when a
test does not run per engine): nodes and scripts only, nothing to import."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from tests.support import engines

PROJECT_GODOT = """\
; Engine configuration file.
config_version=4

_global_script_classes=[  ]
_global_script_class_icons={
}

[application]

config/name="Export Test"
run/main_scene="res://main.tscn"
"""

MAIN_GD = """\
extends Node2D

func _ready():
\tprint("export test ready")
"""

MAIN_TSCN = """\
[gd_scene load_steps=2 format=2]

[ext_resource path="res://main.gd" type="Script" id=1]

[node name="Main" type="Node2D"]
script = ExtResource( 1 )

[node name="Label" type="Label" parent="."]
text = "hello"
"""

_PRESET = """\
[preset.{index}]

name="{name}"
platform="Linux/X11"
runnable={runnable}
custom_features=""
export_filter="all_resources"
include_filter="*.dat, *.txt"
exclude_filter=""
export_path="{export_path}"
script_export_mode=1
script_encryption_key=""

[preset.{index}.options]

texture_format/bptc=false
texture_format/s3tc=true
texture_format/etc=false
texture_format/etc2=false
texture_format/no_bptc_fallbacks=true
binary_format/64_bits=true
binary_format/embed_pck=false
custom_template/release=""
custom_template/debug=""
"""

EXPORT_PRESETS = (
    _PRESET.format(
        index=0,
        name="Linux/X11",
        runnable="true",
        export_path="build/game.x86_64",
    )
    + "\n"
    + _PRESET.format(index=1, name="Pack", runnable="false", export_path="build/game.pck")
)


PROJECT_GODOT4 = """\
; Engine configuration file.
config_version=5

[application]

config/name="Export Test"
run/main_scene="res://main.tscn"
config/features=PackedStringArray("4.6", "GL Compatibility")

[rendering]

renderer/rendering_method="gl_compatibility"
"""

MAIN_TSCN4 = """\
[gd_scene load_steps=2 format=3]

[ext_resource type="Script" path="res://main.gd" id="1_main"]

[node name="Main" type="Node2D" unique_id=1190283511]
script = ExtResource("1_main")

[node name="Label" type="Label" parent="." unique_id=537463372]
text = "hello"
"""

PRESET4 = """\
[preset.{index}]

name="{name}"
platform="Linux"
runnable={runnable}
dedicated_server=false
custom_features=""
export_filter="all_resources"
include_filter="*.dat, *.txt"
exclude_filter=""
export_path="{export_path}"
encryption_include_filters=""
encryption_exclude_filters=""
encrypt_pck=false
encrypt_directory=false

[preset.{index}.options]

custom_template/debug=""
custom_template/release=""
debug/export_console_wrapper=0
binary_format/embed_pck=false
texture_format/s3tc_bptc=true
texture_format/etc2_astc=false
binary_format/architecture="x86_64"
"""

EXPORT_PRESETS4 = (
    PRESET4.format(
        index=0,
        name="Linux/X11",
        runnable="true",
        export_path="build/game.x86_64",
    )
    + "\n"
    + PRESET4.format(index=1, name="Pack", runnable="false", export_path="build/game.pck")
)


def engine_major() -> int:
    """The running test's engine, or 3 for a test that does not run per engine."""
    try:
        return engines.current().major
    except RuntimeError:
        return 3


def make_project(directory: Path, major: int | None = None) -> Path:
    """Write a minimal project with the presets "Linux/X11" and "Pack" (for engine ``major``,
    by default the running test's)."""
    directory.mkdir(parents=True, exist_ok=True)
    godot4 = (major or engine_major()) == 4
    (directory / "project.godot").write_text(PROJECT_GODOT4 if godot4 else PROJECT_GODOT)
    (directory / "main.gd").write_text(MAIN_GD)
    (directory / "main.tscn").write_text(MAIN_TSCN4 if godot4 else MAIN_TSCN)
    (directory / "export_presets.cfg").write_text(EXPORT_PRESETS4 if godot4 else EXPORT_PRESETS)
    return directory


def make_big_project(directory: Path, mb: int, major: int | None = None) -> Path:
    """A project plus ``mb`` MiB of non-imported ``data/*.dat`` files the presets pack.

    The pack stores files uncompressed, so the bytes are cheap pseudo-random blocks.
    """
    make_project(directory, major)
    data = directory / "data"
    data.mkdir(exist_ok=True)
    block = os.urandom(1 << 20)
    per_file = 16
    for index in range(0, mb, per_file):
        with open(data / f"blob_{index // per_file:03d}.dat", "wb") as f:
            for n in range(index, min(index + per_file, mb)):
                f.write(n.to_bytes(8, "little") + block[8:])
    (data / "readme.txt").write_text("bulk data for export timing\n")
    return directory


def sha256(path: Path) -> str:
    """SHA-256 hex digest of one file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# Godot 3 writes an output as <name>.tmp and renames it; Godot 4 as <name>-XXXXXX (mkstemp).
_PARTIAL = re.compile(r".+\.tmp|.+\.(?:pck|x86_64|zip|apk|exe)-[A-Za-z0-9]{6}")


def is_partial(name: str) -> bool:
    """Whether ``name`` is an output Godot is still writing (either engine's naming)."""
    return _PARTIAL.fullmatch(name) is not None
