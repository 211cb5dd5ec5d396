"""Small Godot 3 projects for the export tests (nodes and scripts only: nothing to import)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

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


def make_project(directory: Path) -> Path:
    """Write a minimal Godot 3 project with the presets "Linux/X11" and "Pack"."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "project.godot").write_text(PROJECT_GODOT)
    (directory / "main.gd").write_text(MAIN_GD)
    (directory / "main.tscn").write_text(MAIN_TSCN)
    (directory / "export_presets.cfg").write_text(EXPORT_PRESETS)
    return directory


def make_big_project(directory: Path, mb: int) -> Path:
    """A project plus ``mb`` MiB of non-imported ``data/*.dat`` files the presets pack.

    The pack stores files uncompressed, so the bytes are cheap pseudo-random blocks.
    """
    make_project(directory)
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
