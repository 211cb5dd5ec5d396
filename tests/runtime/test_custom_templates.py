"""Custom export templates named by absolute path: a real template is used (bound alone into the
sandbox), anything else is refused naming why, with no path in the text."""

from __future__ import annotations

import hashlib
import os
import select
import shutil
import stat
import subprocess
import tempfile
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.project.presets import Preset, expected_outputs, find_preset, project_name
from godot_mcp.engine.project.presets import read_presets as read_project_presets
from godot_mcp.features.export.job import ExportRunner
from godot_mcp.features.export.templates import (
    TEMPLATE_MOUNT,
    TemplateRefused,
    custom_template_refusal,
    open_custom_template,
)
from tests.godot.export_fixtures import make_project, sha256
from tests.runtime.test_captures import fetch
from tests.runtime.test_export_safety import add_export_plugin, pack_files
from tests.runtime.test_exports import run_export
from tests.support import engines
from tests.support.engines import Engine
from tests.support.servers import ServedProject, serve_project, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]
ANDROID_AND_WINDOWS = """
[preset.2]

name="Android"
platform="Android"
runnable=false
export_path="build/game.apk"

[preset.2.options]

custom_template/release=""
custom_template/debug=""

[preset.3]

name="Windows"
platform="Windows Desktop"
runnable=false
export_path="build/game.exe"

[preset.3.options]

custom_template/release=""
custom_template/debug=""
"""


def require_binaries() -> None:
    """Fail in CI, skip loudly elsewhere, when the engine (its headless build, its templates)
    or bwrap is absent."""
    engines.current().require()
    if shutil.which("bwrap") is None:
        reason = "SKIPPED LOUDLY: bwrap not installed; custom templates untested"
        warnings.warn(reason, stacklevel=2)
        pytest.skip(reason)


def system_template(kind: str = "release") -> str:
    """The engine's own template installed by Debian: godot3-runner for both kinds, or
    Godot 4's godot-template-release / -debug."""
    engine = engines.current()
    found = shutil.which(engine.release_template if kind == "release" else engine.debug_template)
    assert found, kind
    return found


def set_template(
    project: Path, kind: str, value: str, preset: int = 0, embed: bool = False
) -> None:
    """Give preset ``preset`` of the project's export_presets.cfg this custom template."""
    path = project / "export_presets.cfg"
    text = path.read_text()
    head, section, rest = text.partition(f"[preset.{preset}.options]")
    end = rest.find("\n[preset.")
    body, tail = (rest, "") if end < 0 else (rest[:end], rest[end:])
    lines = [
        f'custom_template/{kind}="{value}"' if line.startswith(f"custom_template/{kind}=") else line
        for line in body.split("\n")
    ]
    body = "\n".join(lines)
    if embed:
        body = body.replace("binary_format/embed_pck=false", "binary_format/embed_pck=true")
    path.write_text(head + section + body + tail)


def server_state(tmp_path: Path) -> Path:
    """The server's state dir, one level down: its parent is private, so no template given
    under ``tmp_path`` lies beside it."""
    return tmp_path / "server" / "state"


def no_templates(tmp_path: Path) -> dict[str, str]:
    """A server environment whose XDG data home holds no installed template at all."""
    empty = tmp_path / "no-templates"
    empty.mkdir(exist_ok=True)
    return {"XDG_DATA_HOME": str(empty)}


def run_game(binary: Path, timeout: float = 60) -> str:
    """Run an exported Godot 3 game for one frame on a private Xvfb; its stdout."""
    read_end, write_end = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", "320x240x24"],
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 30)
        assert ready, "Xvfb reported no display"
        display = os.read(read_end, 32).decode().strip()
        home = binary.parent / "home"
        env = {
            "PATH": "/usr/bin:/bin",
            "DISPLAY": f":{display}",
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_CONFIG_HOME": str(home / "config"),
        }
        done = subprocess.run(
            [str(binary), "--quit"],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=binary.parent,
        )
        return done.stdout
    finally:
        os.close(read_end)
        xvfb.terminate()
        xvfb.wait(10)


async def export_and_check(
    c, kind: str, template: Path, tmp_path: Path, embed: bool = False
) -> dict[str, bytes]:
    """A full Linux export must succeed, its binary be the template (plus the pack when
    embedded), and run; returns the outputs' bytes by name."""
    body = await run_export(c, "Linux/X11", kind)
    assert body["state"] == "succeeded", body
    names = sorted(o["name"] for o in body["outputs"])
    assert names == (["game.x86_64"] if embed else ["game.pck", "game.x86_64"]), body
    got = {o["name"]: await fetch(c, o, chunk=512 << 10) for o in body["outputs"]}
    binary = got["game.x86_64"]
    reference = template.read_bytes()
    if embed:  # the template (two ELF header fields rewritten), then the pack
        assert len(binary) > len(reference) and binary[:4] == b"\x7fELF"
    else:
        assert hashlib.sha256(binary).hexdigest() == sha256(template)
        assert binary == reference
        # Godot 4 exports the scene converted, under .godot/exported, with a remap at its name.
        scene = "res://main.tscn" if engines.current().major == 3 else "res://main.tscn.remap"
        assert scene in pack_files(got["game.pck"])
    out = tmp_path / f"run-{kind}"
    out.mkdir()
    for name, data in got.items():
        (out / name).write_bytes(data)
    (out / "game.x86_64").chmod(0o755)
    if shutil.which("Xvfb") is None:
        warnings.warn("SKIPPED LOUDLY: Xvfb not installed; the game was not run", stacklevel=2)
    else:
        assert "export test ready" in run_game(out / "game.x86_64")
    return got


# --- accepted templates, through a real server ----------------------------------------------


@pytest.mark.parametrize("kind", ["release", "debug"])
async def test_a_full_export_takes_the_system_runner_as_its_custom_template(tmp_path, kind):
    """No installed template at all: the preset's /usr/bin template (godot3-runner, or
    Godot 4's godot-template-release/-debug) is the only one."""
    require_binaries()
    runner = system_template(kind)
    project = make_project(tmp_path / "project")
    set_template(project, kind, runner)
    with anyio.fail_after(240):
        async with stdio_client(project, tmp_path / "state", env=no_templates(tmp_path)) as c:
            await export_and_check(c, kind, Path(runner), tmp_path)
    # The server's copy was pointed at the bound file; the project itself is unchanged.
    assert f'custom_template/{kind}="{runner}"' in (project / "export_presets.cfg").read_text()
    assert TEMPLATE_MOUNT not in (project / "export_presets.cfg").read_text()


@pytest.mark.parametrize("embed", [False, True], ids=["pack-beside", "pack-embedded"])
async def test_a_template_copied_outside_the_project_is_used_and_checked(tmp_path, embed):
    """A self-built template under some other dir (here a copy of godot3-runner in tmp),
    named through a link to it: the link is followed, the file it reaches is the template."""
    require_binaries()
    opt = tmp_path / "opt" / "godot"
    opt.mkdir(parents=True)
    template = opt / "linux_template.x86_64"
    shutil.copyfile(system_template(), template)
    template.chmod(0o755)
    link = tmp_path / "opt" / "current-template"
    link.symlink_to(template)
    project = make_project(tmp_path / "project")
    set_template(project, "release", str(link), embed=embed)
    with anyio.fail_after(240):
        async with stdio_client(project, server_state(tmp_path), env=no_templates(tmp_path)) as c:
            await export_and_check(c, "release", template, tmp_path, embed=embed)


async def test_the_sandbox_sees_the_template_file_alone_not_its_folder(tmp_path):
    """Project code run by the export (an editor plugin) finds the template only where the
    sandbox binds it: not at its own path, nor anything beside it."""
    require_binaries()
    opt = tmp_path / "opt"
    opt.mkdir()
    template = opt / "template.x86_64"
    shutil.copyfile(system_template(), template)
    (opt / "beside.txt").write_text("next to the template\n")
    project = make_project(tmp_path / "project")
    set_template(project, "release", str(template))
    paths = [str(template), str(opt / "beside.txt"), f"{TEMPLATE_MOUNT}/release"]
    add_export_plugin(project, [f'"{p}"' for p in paths])
    with anyio.fail_after(240):
        async with stdio_client(project, server_state(tmp_path), env=no_templates(tmp_path)) as c:
            body = await run_export(c, "Linux/X11", "release")
            assert body["state"] == "succeeded", body
            pck = next(o for o in body["outputs"] if o["name"] == "game.pck")
            files = pack_files(await fetch(c, pck, chunk=1 << 20))
    assert "res://plugin_ran" in files
    stolen = {p for p in files if p.startswith("res://stolen/")}
    # The bound template itself is readable where the preset copy points; nothing else is.
    assert stolen == {"res://stolen/release"}, stolen
    assert files["res://stolen/release"][:4] == b"\x7fELF"


def test_the_runner_binds_exactly_the_one_checked_file(tmp_path):
    """The sandbox command of a prepared export: one descriptor bound at the mount, the
    template's folder nowhere; the snapshot's preset points at the mount."""
    require_binaries()
    opt = tmp_path / "opt"
    opt.mkdir()
    template = opt / "template.x86_64"
    shutil.copyfile(system_template("debug"), template)
    project = make_project(tmp_path / "project")
    set_template(project, "debug", str(template))
    engine = engines.current()
    runner = ExportRunner(
        shutil.which(engine.headless) or engine.headless,
        tmp_path / "work",
        env={**os.environ, **no_templates(tmp_path)},
        profile=engine.profile,
    )
    preset = find_preset(read_project_presets(project), "Linux/X11")
    expected = expected_outputs(project_name(project), preset, "debug")
    job = runner.prepare(project, preset, "debug", "e1", expected)
    try:
        argv = job.command()
        fd_binds = [i for i, a in enumerate(argv) if a == "--ro-bind-fd"]
        assert len(fd_binds) == 1, argv
        fd = int(argv[fd_binds[0] + 1])
        assert argv[fd_binds[0] + 2] == f"{TEMPLATE_MOUNT}/debug"
        assert os.path.samestat(os.fstat(fd), os.stat(template))
        assert not any(str(opt) in a for a in argv), argv
        copy = read_project_presets(job.snapshot_dir)
        assert find_preset(copy, "Linux/X11").custom_debug == f"{TEMPLATE_MOUNT}/debug"
        assert find_preset(copy, "Linux/X11").custom_release == ""
    finally:
        job.cleanup()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed with the job


# --- refusals, through a real server ----------------------------------------------------------


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[ServedProject]:
    base = tmp_path_factory.mktemp(f"refusals-{engine.name}")
    project = make_project(base / "project", engine.major)
    with open(project / "export_presets.cfg", "a") as f:
        f.write(ANDROID_AND_WINDOWS)
    (project / "shadow").symlink_to("/etc/shadow")
    outside = base / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("not a template\n")
    with zipfile.ZipFile(outside / "template.zip", "w") as z:
        z.writestr("godot.x86_64", b"\x7fELF" + b"\0" * 60)
    shutil.copyfile(shutil.which(engine.release_template) or "", outside / "elf-template")
    (outside / "folder").mkdir()
    os.mkfifo(outside / "fifo")
    served = serve_project(project, base / "server" / "state")
    yield served
    served.http.stop()


def _shadow_reason() -> str:
    # Root reads /etc/shadow: it is then refused for what it holds.
    return "not an ELF executable" if os.geteuid() == 0 else "it cannot be read (Permission denied)"


# (preset, kind, value: "{project}"/"{outside}" filled in, expected reason)
REFUSALS = [
    ("Linux/X11", "release", "/etc/shadow", None),
    ("Linux/X11", "release", "{project}/shadow", None),
    ("Linux/X11", "debug", "{outside}/folder", "it is a directory, not a regular file"),
    ("Linux/X11", "release", "{outside}/fifo", "it is a FIFO, not a regular file"),
    ("Linux/X11", "release", "/dev/zero", "it is a device, not a regular file"),
    ("Linux/X11", "release", "{outside}/notes.txt", "not an ELF executable"),
    ("Linux/X11", "debug", "{outside}/template.zip", "not an ELF executable"),
    ("Linux/X11", "release", "{outside}/missing", "it does not exist"),
    ("Android", "release", "{outside}/elf-template", "not a zip archive"),
    ("Windows", "debug", "{outside}/elf-template", "not a Windows (PE) executable"),
]
# The platform each preset names (the Linux one: Godot 3 "Linux/X11", Godot 4 "Linux").
PLATFORMS = {"Android": "Android", "Windows": "Windows Desktop"}


@pytest.mark.parametrize(
    "preset,kind,value,reason",
    REFUSALS,
    ids=[
        "etc-shadow",
        "project-link-to-shadow",
        "directory",
        "fifo",
        "dev-zero",
        "text-file",
        "zip-for-linux",
        "missing",
        "elf-for-android",
        "elf-for-windows",
    ],
)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_file_that_is_not_a_template_is_refused_naming_why(
    refusing, transport, preset, kind, value, reason
) -> None:
    project, state = refusing.project, refusing.state_dir
    outside = project.parent / "outside"
    written = value.format(project=project, outside=outside)
    index = {"Linux/X11": 0, "Android": 2, "Windows": 3}[preset]
    original = (project / "export_presets.cfg").read_text()
    set_template(project, kind, written, preset=index)
    try:
        with anyio.fail_after(60):
            async with refusing.connect(transport) as c:
                r = await c.call_tool("project.export", {"preset": preset, "kind": kind})
                resources = (await c.list_resources()).resources
    finally:
        (project / "export_presets.cfg").write_text(original)
    body = r.structured_content
    assert body["outcome"] == "invalid_argument", body
    assert body["message"] == (
        f"preset {preset!r}: its custom_template/{kind} lies outside the project and is not "
        f"an export template for {platform_of(preset)}: {reason or _shadow_reason()}"
    )
    # No path at all: not what was written, not where a link leads, not the state dir.
    said = body["message"]
    for private in (str(state), str(project), str(outside), "/etc", "/dev", "/tmp", "/run"):
        assert private not in said, said
    # Refused before anything was made: no export, no work dir, no artifact.
    assert list((state / "exports").iterdir()) == []
    assert resources == []


def platform_of(preset: str) -> str:
    if preset == "Linux/X11":
        return "Linux/X11" if engines.current().major == 3 else "Linux"
    return PLATFORMS[preset]


async def test_a_relative_template_path_is_refused(refusing) -> None:
    project = refusing.project
    original = (project / "export_presets.cfg").read_text()
    set_template(project, "release", "templates/godot3-runner")
    try:
        with anyio.fail_after(60):
            async with refusing.connect("stdio") as c:
                r = await c.call_tool("project.export", {"preset": "Linux/X11", "kind": "release"})
    finally:
        (project / "export_presets.cfg").write_text(original)
    assert r.structured_content["outcome"] == "invalid_argument", r.structured_content
    assert r.structured_content["message"] == (
        "preset 'Linux/X11': its custom_template/release lies outside the project and is "
        "neither a res:// path nor an absolute path; exports read nothing else"
    )


# --- the rule itself, on real files ---------------------------------------------------------


def _preset(platform: str, path: str) -> Preset:
    return Preset("P", platform, "build/game", custom_release=path, custom_debug=path)


def test_the_template_format_follows_the_platform(tmp_path):
    elf = tmp_path / "elf"
    shutil.copyfile(system_template(), elf)
    zipped = tmp_path / "template.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("a", b"a")
    pe = tmp_path / "template.exe"
    pe.write_bytes(b"MZ" + b"\0" * 58 + (64).to_bytes(4, "little") + b"PE\0\0" + b"\0" * 64)
    mz_only = tmp_path / "mz.exe"
    mz_only.write_bytes(b"MZ" + b"\0" * 200)
    accepted = [
        ("Linux/X11", elf),
        ("Linux", elf),
        ("Windows Desktop", pe),
        ("Android", zipped),
        ("HTML5", zipped),
        ("Web", zipped),
        ("Mac OSX", zipped),
        ("macOS", zipped),
        ("iOS", zipped),
    ]
    for platform, path in accepted:
        for kind in ("release", "debug"):
            fd = open_custom_template(_preset(platform, str(path)), kind)
            assert fd is not None, (platform, path)
            assert os.path.samestat(os.fstat(fd), os.stat(path))
            assert stat.S_ISREG(os.fstat(fd).st_mode)
            os.close(fd)
    refused = [
        ("Linux", zipped, "not an ELF executable"),
        ("Windows Desktop", mz_only, "not a Windows (PE) executable"),
        ("Windows Desktop", elf, "not a Windows (PE) executable"),
        ("Web", pe, "not a zip archive"),
        ("Mac OSX", elf, "not a zip archive"),
        ("Nintendo", elf, "no export template format is known for this platform"),
    ]
    for platform, path, reason in refused:
        with pytest.raises(TemplateRefused) as caught:
            open_custom_template(_preset(platform, str(path)), "release")
        assert caught.value.message.endswith(f"for {platform}: {reason}"), caught.value.message
        assert str(tmp_path) not in caught.value.message
    # Nothing to check: no template, a pack, a res:// one (project content).
    assert open_custom_template(_preset("Linux", ""), "release") is None
    assert open_custom_template(_preset("Linux", str(elf)), "pack") is None
    assert open_custom_template(_preset("Linux", "res://t.x86_64"), "release") is None
    # Godot strips blanks around the path: so does the check.
    fd = open_custom_template(_preset("Linux", f"  {elf}\t"), "release")
    assert fd is not None
    os.close(fd)


def _refusal_as_nobody(preset: Preset) -> str | None:
    """``custom_template_refusal`` in a child running as ``nobody`` (the server's view when it
    is not root: root reads every file)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            answer = custom_template_refusal({}, preset, "release")
            os.write(write_end, (answer if answer is not None else "\0").encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        data = f.read().decode()
    os.waitpid(pid, 0)
    return None if data == "\0" else data


def test_a_template_the_server_cannot_read_is_refused():
    """A file the server may not read is refused as such (never opened by Godot either)."""
    folder = Path(tempfile.mkdtemp(prefix="unreadable-template-"))
    try:
        folder.chmod(0o711)
        template = folder / "template.x86_64"
        shutil.copyfile(system_template(), template)
        template.chmod(0o000)
        preset = Preset("L", "Linux/X11", "build/game", custom_release=str(template))
        if os.geteuid() == 0:
            said = _refusal_as_nobody(preset)
        else:
            said = custom_template_refusal({}, preset, "release")
        assert said == (
            "preset 'L': its custom_template/release lies outside the project and is not an "
            "export template for Linux/X11: it cannot be read (Permission denied)"
        )
        template.chmod(0o644)  # the same file, readable: accepted
        if os.geteuid() == 0:
            assert _refusal_as_nobody(preset) is None
        assert custom_template_refusal({}, preset, "release") is None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
