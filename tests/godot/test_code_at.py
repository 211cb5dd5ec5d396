"""engine/project/source.py's ``code_at``: the ``code`` of the places an answer names, read
under project.source's rules, each file once, within bounds a hostile game cannot push."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from godot_mcp.engine.project import source, tree
from godot_mcp.engine.project.source import MAX_BYTES, MAX_CODE, code_at
from tests.support.projects import plant_unreadables
from tests.support.projects import source_project as project


class Reads:
    """Every read ``code_at`` makes: the files asked for and the bytes got."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: list[tuple[str, ...]] = []
        self.bytes = 0
        real = tree.read_below

        def counted(root: Path, parts: Any, limit: int) -> bytes | None:
            parts = tuple(parts)
            self.files.append(parts)
            data = real(root, parts, limit)
            self.bytes += len(data or b"")
            return data

        monkeypatch.setattr(source.tree, "read_below", counted)


def test_a_line_is_its_text_trimmed_printable_and_cut(tmp_path: Path) -> None:
    root = project(tmp_path)
    long = "x" * (MAX_CODE + 50)
    raw = (
        "extends Node\r\n"
        "\tvar speed = 10  \n"
        "\n"
        "\t\x1b[31mprint('red')\x1b[0m\x07\n"
        f"\t{long}\n"
        "\u202eevil()\n"
    )
    (root / "src" / "main.gd").write_bytes(raw.encode())
    path = "res://src/main.gd"
    got = code_at(root, [(path, n) for n in range(1, 9)])
    assert got == {
        (path, 1): "extends Node",
        (path, 2): "var speed = 10",
        (path, 3): "",
        (path, 4): "print('red')",
        (path, 5): "x" * MAX_CODE,
        (path, 6): "evil()",
    }


def test_places_that_have_no_code_answer_none_and_raise_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "a.gd").write_text("one\ntwo\n")
    outside = plant_unreadables(root, tmp_path)
    (root / ".import").mkdir()
    (root / ".import" / "a.md5").write_text("x\n")
    (root / "big.txt").write_bytes(b"x\n" * (MAX_BYTES // 2 + 1))
    places: list[tuple[Any, Any]] = [
        ("res://../../etc/passwd", 1),
        ("res://../secret.txt", 1),
        ("res://export_presets.cfg", 1),
        ("res://out.gd", 1),
        ("res://src/up/secret.txt", 1),
        ("res://.godot/cache.cfg", 1),
        ("res://.import/a.md5", 1),
        ("res://.env", 1),
        ("res://blob.png", 1),
        ("res://latin1.gd", 1),
        ("res://pipe.gd", 1),
        ("res://big.txt", 1),
        ("res://missing.gd", 1),
        ("res://src", 1),
        ("res://", 1),
        (str(outside), 1),
        ("/etc/passwd", 1),
        ("user://save.cfg", 1),
        ("res://a.gd", 3),
        ("res://a.gd", 10**30),
        ("res://a.gd", 0),
        ("res://a.gd", -1),
        ("res://a.gd", True),
        ("res://a.gd", "1"),
        (None, 1),
        ("res://a.gd\0", 1),
        ("res://a\\..\\b.gd", 1),
        ("res://\udc80.gd", 1),
        ("res://" + "a" * 5000 + ".gd", 1),
        ("res://" + "a/" * 3000 + "b.gd", 1),
    ]
    assert code_at(root, places) == {}
    assert code_at(root, [*places, ("res://a.gd", 2)]) == {("res://a.gd", 2): "two"}


def test_each_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path)
    (root / "a.gd").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    reads = Reads(monkeypatch)
    got = code_at(root, [("res://a.gd", n % 100 + 1) for n in range(10_000)])
    assert got == {("res://a.gd", n): f"line {n}" for n in range(1, 101)}
    assert reads.files == [("a.gd",)]


def test_a_game_naming_thousands_of_files_costs_a_bounded_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path)
    for n in range(20):
        (root / f"f{n}.gd").write_text(f"file {n}\n")
    reads = Reads(monkeypatch)
    places = [(f"res://f{n % 20}.gd" if n < 20 else f"res://x{n}.gd", 1) for n in range(10_000)]
    got = code_at(root, places, max_files=8)
    assert got == {(f"res://f{n}.gd", 1): f"file {n}" for n in range(8)}
    assert len(reads.files) == 8
    # The default bound, on 10,000 names of files that do not exist.
    reads.files.clear()
    assert code_at(root, [(f"res://nothing/{n}.gd", 1) for n in range(10_000)]) == {}
    assert len(reads.files) == source.MAX_PLACE_FILES


def test_the_bytes_read_for_one_answer_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path)
    size = 1 << 20
    for n in range(6):
        (root / f"big{n}.gd").write_bytes(f"big {n}\n".encode().ljust(size, b"#"))
    reads = Reads(monkeypatch)
    got = code_at(root, [(f"res://big{n}.gd", 1) for n in range(6)], max_bytes=3 * size + 10)
    # Three whole files fit; the fourth is cut by the bound and has none; no more is read.
    assert got == {(f"res://big{n}.gd", 1): f"big {n}" for n in range(3)}
    assert len(reads.files) == 4
    assert reads.bytes == 3 * size + 11
