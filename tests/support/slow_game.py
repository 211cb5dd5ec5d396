"""A project whose every frame burns two seconds of CPU (``OS.delay_msec`` in ``_process``):
a game at about 0.5 fps, as official 3D demos run on a machine without a GPU."""

from __future__ import annotations

from pathlib import Path

from tests.support.engines import Engine

FRAME_MS = 2000

PROJECT = """config_version=4

[application]

config/name="slow game"
run/main_scene="res://slow.tscn"

[display]

window/size/width=160
window/size/height=120
"""

SLOW_GD = f"""extends Node2D

func _process(_delta):
\tOS.delay_msec({FRAME_MS})
"""


def slow_project(engine: Engine, root: Path) -> Path:
    """The slow project at ``root``, in ``engine``'s format."""
    root.mkdir(parents=True)
    config = engine.port(PROJECT)
    if engine.major >= 4:
        config = config.replace("window/size/width", "window/size/viewport_width")
        config = config.replace("window/size/height", "window/size/viewport_height")
    (root / "project.godot").write_text(config)
    (root / "slow.gd").write_text(SLOW_GD)
    (root / "slow.tscn").write_text(engine.scene("slow.gd"))
    return root
