"""Exports read the project and nothing else, and never register an output that is not whole."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
from pathlib import Path

import anyio
import pytest

from tests.godot.export_fixtures import make_big_project, make_project
from tests.runtime.conftest import require_godot
from tests.runtime.test_captures import fetch, ok
from tests.runtime.test_exports import run_export
from tests.support import engines
from tests.support.disks import fill, tmpfs
from tests.support.engines import Engine
from tests.support.servers import serve_project, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

# (link name in the project, target, target is a folder); "{state}" is the server's state dir.
OUTSIDE = [
    ("passwd.txt", "/etc/passwd", False),
    ("etc", "/etc", True),
    ("rel", "../../../blobs", True),
    ("rel.txt", "../../../store.db", False),
    ("data/up.txt", "../../state/store.db", False),
    ("state", "{state}", True),
    ("gone.txt", "/nonexistent/secret", False),
]
LOOPS = [("loop_a.txt", "loop_b.txt"), ("data/again", "..")]


def pack_files(blob: bytes) -> dict[str, bytes]:
    """The files of a standalone pack by res:// path: Godot 3's format 1 (absolute offsets,
    directory after the header) or Godot 4's format 3 (offsets from a file base, directory
    where the header says, paths without res://, a flags word per entry)."""
    (version,) = struct.unpack_from("<I", blob, 4)
    if version == 1:
        base, directory, tail = 0, 84, 32
    else:
        assert version == 3, version
        _flags, base, directory = struct.unpack_from("<IQQ", blob, 20)
        tail = 36
    (count,) = struct.unpack_from("<I", blob, directory)
    pos, out = directory + 4, {}
    for _ in range(count):
        (length,) = struct.unpack_from("<I", blob, pos)
        path = blob[pos + 4 : pos + 4 + length].rstrip(b"\0").decode()
        pos += 4 + length
        offset, size = struct.unpack_from("<QQ", blob, pos)
        pos += tail
        name = path if path.startswith("res://") else "res://" + path
        out[name] = blob[base + offset : base + offset + size]
    return out


@pytest.fixture(scope="module")
def link_env(tmp_path_factory: pytest.TempPathFactory, engine: Engine):
    base = tmp_path_factory.mktemp(f"links-{engine.name}")
    project = make_project(base / "project", engine.major)
    (project / "data").mkdir()
    (project / "data" / "real.txt").write_bytes(b"inside bytes")
    served = serve_project(project, base / "state")
    yield served
    served.http.stop()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_link_out_of_the_project_refuses_the_export_at_once_naming_it(
    link_env, transport
) -> None:
    project, state = link_env.project, link_env.state_dir
    cases = [(n, t.format(state=state), d) for n, t, d in OUTSIDE]
    with anyio.fail_after(120):
        async with link_env.connect(transport) as c:
            for name, target, is_dir in [*cases, *((a, b, False) for a, b in LOOPS)]:
                link = project / name
                link.symlink_to(target, target_is_directory=is_dir)
                if name == "loop_a.txt":
                    (project / "loop_b.txt").symlink_to("loop_a.txt")
                try:
                    r = await c.call_tool("project.export", {"preset": "Pack", "kind": "pack"})
                finally:
                    link.unlink()
                    if name == "loop_a.txt":
                        (project / "loop_b.txt").unlink()
                body = r.structured_content
                assert body["outcome"] == "invalid_argument", (name, body)
                assert f"res://{name}" in body["message"]
                said = body["message"].replace(f"res://{name}", "")
                assert str(state) not in said and "/etc" not in said and target not in said
                # Refused before anything was made: no export, no work dir, no artifact.
                assert list((state / "exports").iterdir()) == []
                assert (await c.list_resources()).resources == []


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_links_inside_the_project_export_the_bytes_they_point_at(link_env, transport) -> None:
    project = link_env.project
    (project / "inside.txt").symlink_to("data/real.txt")
    (project / "mirror").symlink_to("data", target_is_directory=True)
    (project / "dangling.txt").symlink_to("data/not-there.txt")
    try:
        with anyio.fail_after(120):
            async with link_env.connect(transport) as c:
                body = await run_export(c, "Pack", "pack")
                assert body["state"] == "succeeded", body
                (out,) = body["outputs"]
                files = pack_files(await fetch(c, out, chunk=4096))
    finally:
        for name in ("inside.txt", "mirror", "dangling.txt"):
            (project / name).unlink()
    assert files["res://inside.txt"] == b"inside bytes"
    assert files["res://mirror/real.txt"] == b"inside bytes"
    assert files["res://data/real.txt"] == b"inside bytes"
    assert "res://dangling.txt" not in files


async def test_a_full_disk_never_yields_a_succeeded_export_with_cut_short_outputs(tmp_path):
    require_godot("godot3-server")
    project = make_big_project(tmp_path / "big", mb=12)
    with anyio.fail_after(240):
        async with stdio_client(project, tmp_path / "ref-state") as c:
            ref = await run_export(c, "Pack", "pack")
            assert ref["state"] == "succeeded", ref
            reference = ref["outputs"][0]["sha256"]
        with tmpfs(tmp_path / "disk", "40m") as disk:
            outcomes = []
            async with stdio_client(project, disk / "state") as c:
                for _ in range(4):
                    r = await c.call_tool("project.export", {"preset": "Pack", "kind": "pack"})
                    if r.structured_content["outcome"] != "ok":
                        outcomes.append(("refused", r.structured_content))
                        continue
                    export_id = r.structured_content["export"]["id"]
                    s = await c.call_tool(
                        "project.export.status", {"export_id": export_id, "wait_seconds": 50}
                    )
                    body = s.structured_content["export"]
                    outcomes.append((body["state"], body))
                    for out in body["outputs"]:
                        got = await fetch(c, out, chunk=512 * 1024)
                        assert hashlib.sha256(got).hexdigest() == out["sha256"] == reference
                await ok(c, "server.profile")  # the server still answers
    states = [state for state, _ in outcomes]
    assert states[0] == "succeeded", outcomes
    assert set(states) <= {"succeeded", "failed", "refused"}, outcomes
    # The disk holds the first output; the second copy cannot fit whole next to it.
    assert states[1] != "succeeded", outcomes
    for state, body in outcomes:
        if state == "failed":
            assert "not whole" in body["error"] or "could not be stored" in body["error"], body
        if state == "refused":
            assert body["outcome"] == "unavailable", body
            assert "free" in body["message"], body


async def test_an_export_the_disk_cannot_hold_is_unavailable_at_start(tmp_path):
    require_godot("godot3-server")
    project = make_big_project(tmp_path / "big", mb=8)
    with tmpfs(tmp_path / "disk", "12m") as disk, anyio.fail_after(120):
        async with stdio_client(project, disk / "state") as c:
            r = await c.call_tool("project.export", {"preset": "Pack", "kind": "pack"})
            body = r.structured_content
            assert body["outcome"] == "unavailable", body
            assert "bytes free" in body["message"] and str(disk) not in body["message"]
            assert list((disk / "state" / "exports").iterdir()) == []
            await ok(c, "server.profile")


async def test_a_disk_filled_during_an_export_ends_it_with_a_typed_outcome(tmp_path):
    """The export runs out of disk after it was admitted: it ends, the server lives on."""
    require_godot("godot3-server")
    project = make_big_project(tmp_path / "big", mb=2)
    with tmpfs(tmp_path / "disk", "24m") as disk, anyio.fail_after(180):
        async with stdio_client(project, disk / "state") as c:
            started = await ok(c, "project.export", {"preset": "Pack", "kind": "pack"})
            filler = fill(disk)
            s = await c.call_tool(
                "project.export.status",
                {"export_id": started["export"]["id"], "wait_seconds": 50},
            )
            body = s.structured_content
            assert body["outcome"] == "ok", body
            assert body["export"]["state"] in ("succeeded", "failed"), body
            for out in body["export"]["outputs"]:
                got = await fetch(c, out, chunk=256 * 1024)
                assert hashlib.sha256(got).hexdigest() == out["sha256"]
            filler.unlink()
            await ok(c, "server.profile")
            again = await run_export(c, "Pack", "pack")
            assert again["state"] == "succeeded", again
    shutil.rmtree(tmp_path / "big")


# An export plugin that tries to read the store and the machine's secrets into the pack, and
# marks the pack so the test knows it ran. {read} opens ``secret`` the engine's way and takes
# its first 64 KiB (enough to show any secret's head).
EXPORT_PLUGIN = """\
extends EditorExportPlugin
func _get_name():
\treturn "x"
func _export_begin(features, is_debug, path, flags):
\tadd_file("res://plugin_ran", PoolByteArray([1]), false)
\tvar state = path.get_base_dir().get_base_dir().get_base_dir().get_base_dir()
\tfor secret in [{secrets}]:
{read}
\t\t\tadd_file("res://stolen/" + secret.get_file(), data, false)
\t\t\tprint("STOLE ", secret)
"""
_READ = {
    3: "\t\tvar f = File.new()\n\t\tif f.open(secret, File.READ) == OK:\n"
    "\t\t\tvar data = f.get_buffer(65536)",
    4: "\t\tvar f = FileAccess.open(secret, FileAccess.READ)\n\t\tif f != null:\n"
    "\t\t\tvar data = f.get_buffer(65536)",
}


def add_export_plugin(project: Path, secrets: list[str]) -> None:
    """Enable an editor plugin whose export plugin tries to copy ``secrets`` (GDScript
    expressions) into the pack: project code that runs inside every export."""
    engine = engines.current()
    enabled = 'PoolStringArray( "x" )'
    if engine.major == 4:
        enabled = 'PackedStringArray("res://addons/x/plugin.cfg")'
    with open(project / "project.godot", "a") as f:
        f.write(f"\n[editor_plugins]\n\nenabled={enabled}\n")
    addon = project / "addons" / "x"
    addon.mkdir(parents=True)
    (addon / "plugin.cfg").write_text(
        '[plugin]\nname="x"\ndescription=""\nauthor=""\nversion="1"\nscript="plugin.gd"\n'
    )
    tool = "@tool" if engine.major == 4 else "tool"
    (addon / "plugin.gd").write_text(
        f"{tool}\nextends EditorPlugin\nfunc _enter_tree():\n"
        '\tadd_export_plugin(preload("res://addons/x/exp.gd").new())\n'
    )
    script = EXPORT_PLUGIN.format(secrets=", ".join(secrets), read=_READ[engine.major])
    (addon / "exp.gd").write_text(engine.port(f"{tool}\n{script}"))


def _png() -> bytes:
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


async def test_project_code_and_import_remaps_see_nothing_outside_the_copy(tmp_path):
    """Godot reads paths from .import files and runs editor plugins while exporting: the
    sandbox, not the snapshot, keeps the store and the machine's files out of the pack."""
    require_godot("godot3-server")
    import re
    import subprocess

    project = make_project(tmp_path / "project")
    add_export_plugin(project, ['state + "/store.db"', '"/etc/shadow"', '"/etc/passwd"'])
    (project / "x.png").write_bytes(_png())
    xdg = tmp_path / "xdg"
    pack = ["--path", str(project), "--export-pack", "Pack", str(tmp_path / "f.pck")]
    subprocess.run(  # import x.png once, as the editor would
        [*engines.current().headless_argv(), *pack],
        capture_output=True,
        timeout=120,
        env={**os.environ, **{f"XDG_{k}_HOME": str(xdg / k) for k in ("CONFIG", "CACHE", "DATA")}},
    )
    imported = (project / "x.png.import").read_text()
    imported = re.sub(r'^path="[^"]*"', 'path="../../../store.db"', imported, flags=re.M)
    (project / "x.png.import").write_text(re.sub(r"^dest_files=.*$", "", imported, flags=re.M))
    shutil.rmtree(project / "build", ignore_errors=True)
    with anyio.fail_after(120):
        async with stdio_client(project, tmp_path / "state") as c:
            body = await run_export(c, "Pack", "pack")
            assert body["state"] in ("succeeded", "failed"), body
            for out in body["outputs"]:
                data = await fetch(c, out, chunk=256 * 1024)
                assert b"SQLite format 3" not in data and b"root:" not in data
                files = pack_files(data)
                assert "res://plugin_ran" in files  # the plugin did run inside the export
                assert not [name for name in files if name.startswith("res://stolen/")]


async def test_a_custom_template_outside_the_project_and_the_templates_is_refused(tmp_path):
    require_godot("godot3-server")
    project = make_project(tmp_path / "project")
    presets = project / "export_presets.cfg"
    presets.write_text(
        presets.read_text().replace(
            'custom_template/release=""', 'custom_template/release="/etc/passwd"', 1
        )
    )
    with anyio.fail_after(60):
        async with stdio_client(project, tmp_path / "state") as c:
            r = await c.call_tool("project.export", {"preset": "Linux/X11", "kind": "release"})
            body = r.structured_content
            assert body["outcome"] == "invalid_argument", body
            assert "custom_template/release lies outside the project" in body["message"]
            assert "/etc" not in body["message"]


async def test_presets_that_are_a_fifo_or_lead_outside_are_refused_without_blocking(tmp_path):
    require_godot("godot3-server")
    project = make_project(tmp_path / "project")
    (tmp_path / "outside.cfg").write_text('[preset.0]\nname="secret-name"\n')
    with anyio.fail_after(60):
        async with stdio_client(project, tmp_path / "state") as c:
            (project / "export_presets.cfg").unlink()
            os.mkfifo(project / "export_presets.cfg")
            r = await c.call_tool("project.export", {"preset": "Pack", "kind": "pack"})
            assert r.structured_content["outcome"] == "invalid_argument", r.structured_content
            assert "not a regular file" in r.structured_content["message"]
            (project / "export_presets.cfg").unlink()
            (project / "export_presets.cfg").symlink_to(tmp_path / "outside.cfg")
            for tool, args in (("project.export", {"preset": "secret-name"}), ("project.info", {})):
                r = await c.call_tool(tool, args)
                assert "secret-name" not in str(r.structured_content), r.structured_content
            await ok(c, "server.profile")
