"""The private copy of a project: links judged where the project is, no link in the copy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from godot_mcp.engine.project import tree


def _project(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "project.godot").write_text("config_version=4\n")
    (root / "data" / "real.txt").write_bytes(b"inside bytes")
    (root / "data" / "deep").mkdir()
    (root / "data" / "deep" / "leaf.txt").write_bytes(b"leaf")
    return root


def _links_in(root: Path) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            if os.path.islink(os.path.join(dirpath, name)):
                found.append(os.path.relpath(os.path.join(dirpath, name), root))
    return found


@pytest.mark.parametrize(
    ("name", "target", "is_dir"),
    [
        ("passwd.txt", "/etc/passwd", False),
        ("etc", "/etc", True),
        ("rel.txt", "../../../store.db", False),
        ("rel", "../../../blobs", True),
        ("up.txt", "../outside.txt", False),
        ("data/sneaky.txt", "../../outside.txt", False),
        ("gone.txt", "/nonexistent/place", False),
    ],
)
def test_a_link_out_of_the_project_is_refused_by_its_res_path(
    tmp_path: Path, name: str, target: str, is_dir: bool
) -> None:
    project = _project(tmp_path / "a" / "b" / "project")
    (tmp_path / "a" / "b" / "outside.txt").write_bytes(b"secret")
    (project / name).symlink_to(target, target_is_directory=is_dir)
    with pytest.raises(tree.LinkOutside) as exc:
        tree.plan(project)
    assert exc.value.res_path == f"res://{name}"
    assert exc.value.message == (
        f"res://{name} is a symbolic link to a place outside the project; "
        "exports read the project only"
    )
    assert target not in exc.value.message.replace(f"res://{name}", "")


def test_a_link_into_the_state_dir_beside_the_project_is_refused(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    state = tmp_path / "state"
    state.mkdir()
    (project / "state").symlink_to(state)
    with pytest.raises(tree.LinkOutside):
        tree.plan(project)


@pytest.mark.parametrize(
    ("links", "culprit"),
    [
        ({"a": "b", "b": "a"}, "res://a"),
        ({"self.txt": "self.txt"}, "res://self.txt"),
        ({"data/up": ".."}, "res://data/up"),
        ({"root": "."}, "res://root"),
        ({"data/deep/again": "../../data"}, "res://data/deep/again"),
    ],
)
def test_a_link_that_loops_is_refused(tmp_path: Path, links: dict[str, str], culprit: str) -> None:
    project = _project(tmp_path / "project")
    for name, target in links.items():
        (project / name).symlink_to(target)
    with pytest.raises(tree.LinkLoop) as exc:
        tree.plan(project)
    assert exc.value.res_path == culprit


def test_links_inside_become_plain_copies_and_dangling_ones_are_left_out(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    (project / "file_link.txt").symlink_to("data/real.txt")
    (project / "abs_link.txt").symlink_to(project / "data" / "real.txt")
    (project / "dir_link").symlink_to("data", target_is_directory=True)
    (project / "data" / "chain.txt").symlink_to("../file_link.txt")
    (project / "dangling.txt").symlink_to("data/missing.txt")
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref")
    os.mkfifo(project / "pipe")
    plan = tree.plan(project)
    copy = tmp_path / "copy"
    copied = tree.copy(plan, copy)
    assert _links_in(copy) == []
    assert (copy / "file_link.txt").read_bytes() == b"inside bytes"
    assert (copy / "abs_link.txt").read_bytes() == b"inside bytes"
    assert (copy / "dir_link" / "real.txt").read_bytes() == b"inside bytes"
    assert (copy / "dir_link" / "deep" / "leaf.txt").read_bytes() == b"leaf"
    assert (copy / "dir_link" / "chain.txt").read_bytes() == b"inside bytes"
    assert not (copy / "dangling.txt").exists()
    assert not (copy / ".git").exists()
    assert not (copy / "pipe").exists()
    assert copied == plan.bytes == sum(f.stat().st_size for f in copy.rglob("*") if f.is_file())
    assert plan.links == 6  # chain.txt is met twice: in data/ and through dir_link/


def test_a_file_swapped_for_a_link_after_the_plan_fails_the_copy(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    plan = tree.plan(project)
    (project / "data" / "real.txt").unlink()
    (project / "data" / "real.txt").symlink_to("/etc/passwd")
    with pytest.raises(tree.TreeChanged) as exc:
        tree.copy(plan, tmp_path / "copy")
    assert exc.value.res_path == "res://data/real.txt"


def test_a_folder_swapped_for_a_link_after_the_plan_fails_the_copy(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "leaf.txt").write_bytes(b"secret")
    plan = tree.plan(project)
    (project / "data" / "deep" / "leaf.txt").unlink()
    (project / "data" / "deep").rmdir()
    (project / "data" / "deep").symlink_to(outside / "deep")
    with pytest.raises(tree.TreeChanged):
        tree.copy(plan, tmp_path / "copy")


def test_the_project_reached_through_a_link_judges_links_where_it_really_is(
    tmp_path: Path,
) -> None:
    real = _project(tmp_path / "real")
    (tmp_path / "alias").symlink_to(real)
    (real / "abs.txt").symlink_to(tmp_path / "alias" / "data" / "real.txt")
    plan = tree.plan(tmp_path / "alias")
    tree.copy(plan, tmp_path / "copy")
    assert (tmp_path / "copy" / "abs.txt").read_bytes() == b"inside bytes"


def test_the_project_root_swapped_after_the_plan_fails_the_copy(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    victim = _project(tmp_path / "victim")
    (victim / "data" / "real.txt").write_bytes(b"SECRET")
    plan = tree.plan(project)
    project.rename(tmp_path / "moved")
    project.symlink_to(victim)
    with pytest.raises(tree.TreeChanged):
        tree.copy(plan, tmp_path / "copy")


def test_a_file_that_grew_after_the_plan_fails_the_copy(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    plan = tree.plan(project)
    (project / "data" / "real.txt").write_bytes(b"x" * 100_000)
    with pytest.raises(tree.TreeChanged) as exc:
        tree.copy(plan, tmp_path / "copy")
    assert exc.value.res_path == "res://data/real.txt"


def test_folders_nested_too_deep_are_a_typed_refusal(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    deep = project
    for _ in range(tree.MAX_DEPTH + 2):
        deep = deep / "d"
    deep.mkdir(parents=True)
    with pytest.raises(tree.TooManyEntries) as exc:
        tree.plan(project)
    assert "nested too deep" in exc.value.message


def test_names_that_are_not_utf8_or_hold_newlines_are_named_printably(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    os.symlink(b"/etc/passwd", os.fsencode(str(project)) + b"/bad\xff")
    with pytest.raises(tree.LinkOutside) as exc:
        tree.plan(project)
    assert exc.value.res_path == "res://bad\\xff"
    exc.value.message.encode("utf-8")  # sendable
    os.unlink(os.fsencode(str(project)) + b"/bad\xff")
    (project / "evil\nline").symlink_to("/etc/passwd")
    with pytest.raises(tree.LinkOutside) as exc:
        tree.plan(project)
    assert exc.value.res_path == "res://evil?line" and "\n" not in exc.value.message


def test_project_files_are_read_safely(tmp_path: Path) -> None:
    from godot_mcp.engine.project.presets import read_presets

    project = _project(tmp_path / "project")
    (tmp_path / "outside.cfg").write_text('[preset.0]\nname="secret-name"\n')
    (project / "export_presets.cfg").symlink_to(tmp_path / "outside.cfg")
    with pytest.raises(Exception) as exc:
        read_presets(project)
    assert "outside the project" in str(exc.value) and "secret-name" not in str(exc.value)
    (project / "export_presets.cfg").unlink()
    os.mkfifo(project / "export_presets.cfg")  # would block a plain open() forever
    with pytest.raises(Exception) as exc:
        read_presets(project)
    assert "not a regular file" in str(exc.value)
    (project / "export_presets.cfg").unlink()
    (project / "export_presets.cfg").symlink_to("/dev/zero")
    with pytest.raises(Exception) as exc:
        read_presets(project)
    assert "outside the project" in str(exc.value)
    (project / "export_presets.cfg").unlink()
    (project / "export_presets.cfg").write_bytes(b" " * (2 << 20))
    with pytest.raises(Exception) as exc:
        read_presets(project)
    assert "larger than" in str(exc.value)
    (project / "export_presets.cfg").unlink()
    (project / "data" / "p.cfg").write_text('[preset.0]\nname="inside"\n')
    (project / "export_presets.cfg").symlink_to("data/p.cfg")
    assert [p.name for p in read_presets(project)] == ["inside"]


def test_a_path_too_long_for_the_system_refuses_the_plan_by_its_res_path(tmp_path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(25):  # 25 * 204 characters: past PATH_MAX (4096) from the root
            os.mkdir("d" * 203, dir_fd=fd)
            nxt = os.open("d" * 203, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        os.close(os.open("x.gd", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    with pytest.raises(tree.TreeError) as caught:
        tree.plan(root)
    assert caught.value.message.startswith("res://" + "d" * 203 + "/")
    assert "cannot be read: File name too long" in caught.value.message
    assert len(caught.value.message) < 400


def test_a_refusal_names_the_work_refused_and_a_plan_may_leave_links_out(tmp_path: Path) -> None:
    project = _project(tmp_path / "project")
    (project / "a_leak.txt").symlink_to("/etc/passwd")
    (project / "data" / "loop").symlink_to("..", target_is_directory=True)
    for reader in ("checks", "imports", "test runs", "reloads"):
        with pytest.raises(tree.LinkOutside) as exc:
            tree.plan(project, reader)
        assert exc.value.message == (
            f"res://a_leak.txt is a symbolic link to a place outside the project; {reader} "
            "read the project only"
        )
    (project / "a_leak.txt").unlink()
    with pytest.raises(tree.LinkLoop) as loop:
        tree.plan(project, "checks")
    assert loop.value.message == (
        "res://data/loop is a link to a folder that contains it; checks cannot follow a loop"
    )
    (project / "a_leak.txt").symlink_to("/etc/passwd")
    kept = tree.plan(project, "reloads", leave_out=True)
    assert kept.left_out == ["a_leak.txt", "data/loop"]
    assert {e.rel for e in kept.entries} == {
        e.rel for e in tree.plan(_project(tmp_path / "b")).entries
    }
