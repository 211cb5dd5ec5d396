"""engine/project/source.py: a project's text file read as project.source reads it, and every
refusal a hostile project or caller could ask for."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from godot_mcp.engine.project.source import MAX_BYTES, read_source
from godot_mcp.errors import InvalidArgument
from tests.support.projects import plant_unreadables
from tests.support.projects import source_project as project


def refused(root: Path, path: str, message: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        read_source(root, path)
    assert caught.value.message == message


def test_a_script_reads_as_its_lines_and_its_bytes_hash(tmp_path: Path) -> None:
    root = project(tmp_path)
    raw = b"extends Node\r\n\tvar x = 1\n\nfunc _ready():\n\tpass\n"
    (root / "src" / "main.gd").write_bytes(raw)
    read = read_source(root, "res://src/main.gd")
    assert read.lines == ["extends Node", "\tvar x = 1", "", "func _ready():", "\tpass"]
    assert read.sha256 == hashlib.sha256(raw).hexdigest()
    (root / "last.gd").write_bytes(b"a\nb")  # no ending on the last line
    assert read_source(root, "res://last.gd").lines == ["a", "b"]
    (root / "empty.gd").write_bytes(b"")
    assert read_source(root, "res://empty.gd").lines == []


def test_what_project_source_never_reads(tmp_path: Path) -> None:
    root = project(tmp_path)
    plant_unreadables(root, tmp_path)
    (root / "big.txt").write_bytes(b"x" * (MAX_BYTES + 1))
    only = "project.source reads the project's own text files only"
    refused(root, "res://out.gd", f"'res://out.gd' leads out of the project through a link; {only}")
    refused(
        root,
        "res://src/up/secret.txt",
        f"'res://src/up/secret.txt' leads out of the project through a link; {only}",
    )
    refused(
        root,
        "res://export_presets.cfg",
        f"'res://export_presets.cfg' may hold signing passwords; {only}",
    )
    refused(
        root,
        "res://.godot/cache.cfg",
        f"'res://.godot/cache.cfg' is hidden (or the engine's own); {only}",
    )
    refused(root, "res://.env", f"'res://.env' is hidden (or the engine's own); {only}")
    refused(root, "res://blob.png", "'res://blob.png' is not a text file")
    refused(root, "res://latin1.gd", "'res://latin1.gd' is not a text file")
    refused(
        root, "res://pipe.gd", "'res://pipe.gd' is not a file of the project"
    )  # never waited on
    refused(root, "res://src", "'res://src' is not a file of the project")
    refused(root, "res://missing.gd", "'res://missing.gd' is not a file of the project")
    refused(root, "res://big.txt", f"'res://big.txt' is larger than {MAX_BYTES} bytes")
    refused(root, "res://", f"'res://' is a folder; {only}")
    refused(
        root,
        "res://src/../../secret.txt",
        "'res://src/../../secret.txt' is not a plain res:// path",
    )
    refused(root, "/etc/passwd", "'/etc/passwd' is not a res:// path")
    refused(
        root,
        "res://src%2F..%2F..%2Fsecret.txt",
        "'res://src%2F..%2F..%2Fsecret.txt' is not a file of the project",
    )
