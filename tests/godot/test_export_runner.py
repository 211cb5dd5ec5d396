"""The export layer against a real headless Godot 3: presets, names, runs, cancel, crash."""

from __future__ import annotations

import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.process import procs
from godot_mcp.engine.project.presets import (
    Preset,
    PresetsInvalid,
    PresetsMissing,
    UnknownPreset,
    expected_outputs,
    find_preset,
    parse_config,
    project_name,
    read_presets,
)
from godot_mcp.features.export.job import ExportJob, ExportRunner, leftovers, work_dirs
from tests.godot.export_fixtures import is_partial, make_big_project, make_project, sha256
from tests.support import engines
from tests.support.engines import Engine
from tests.support.trees import tree_digest
from tools.debian_templates import install_debian_templates

# Real exports run per engine (the engine fixture fails in CI, skips loudly elsewhere, when the
# engine is absent).
needs_godot = pytest.mark.usefixtures("engine")
BIG_MB = 384


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture(scope="module")
def big_project(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[Path]:
    base = tmp_path_factory.mktemp(f"big-{engine.name}")
    yield make_big_project(base / "project", BIG_MB, engine.major)
    shutil.rmtree(base, ignore_errors=True)


def runner_for(tmp_path: Path, templates: bool = False) -> ExportRunner:
    """A runner with a private XDG_DATA_HOME, holding Debian-made templates if asked."""
    data_home = tmp_path / "data"
    data_home.mkdir(exist_ok=True)
    engine = engines.current()
    if templates:
        engine.install_templates(data_home)
    env = {**os.environ, "XDG_DATA_HOME": str(data_home)}
    godot = shutil.which(engine.headless)
    assert godot is not None
    return ExportRunner(godot, tmp_path / "work", env=env, profile=engine.profile)


def start(
    runner: ExportRunner, project: Path, preset_name: str, kind: str, export_id: str
) -> ExportJob:
    preset = find_preset(read_presets(project), preset_name)
    expected = expected_outputs(project_name(project), preset, kind)
    return runner.start(project, preset, kind, export_id, expected)


async def until(job: ExportJob, predicate: object, timeout: float = 20.0) -> None:
    """Tick the job until ``predicate()`` holds; fails after ``timeout``."""
    assert callable(predicate)
    with anyio.fail_after(timeout):
        while not predicate():
            assert await job.wait(0.02) == "running", job.error


def process_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


# --- presets and names (no Godot needed) ---------------------------------------------------


def test_presets_are_read_in_godot_order_with_their_output_names(project: Path) -> None:
    presets = read_presets(project)
    assert [p.name for p in presets] == ["Linux/X11", "Pack"]
    linux, pack = presets
    assert linux == Preset("Linux/X11", "Linux/X11", "build/game.x86_64")
    assert project_name(project) == "Export Test"
    assert expected_outputs("Export Test", linux, "release") == ["game.x86_64", "game.pck"]
    assert expected_outputs("Export Test", linux, "debug") == ["game.x86_64", "game.pck"]
    assert expected_outputs("Export Test", linux, "pack") == ["game.pck"]
    assert expected_outputs("Export Test", pack, "pack") == ["game.pck"]


def test_output_names_fall_back_to_the_sanitized_project_name() -> None:
    linux = Preset("L", "Linux/X11", "")
    assert expected_outputs("My Game!", linux, "release") == ["My_Game.x86_64", "My_Game.pck"]
    assert expected_outputs("My Game!", linux, "pack") == ["My_Game.pck"]
    embedded = Preset("L", "Linux/X11", "out/run.x86_64", embed_pck=True)
    assert expected_outputs("x", embedded, "release") == ["run.x86_64"]
    windows = Preset("W", "Windows Desktop", "")
    assert expected_outputs("g", windows, "release") == ["g.exe", "g.pck"]
    assert expected_outputs("g", Preset("M", "Mac OSX", ""), "release") == ["g.zip"]
    assert expected_outputs("g", Preset("H", "HTML5", "web/index.html"), "debug") == [
        "index.html",
        "index.js",
        "index.wasm",
        "index.pck",
        "index.png",
    ]
    with pytest.raises(ValueError):
        expected_outputs("g", windows, "zip")


def test_missing_presets_file_and_unknown_preset_are_refused(project: Path) -> None:
    presets = read_presets(project)
    with pytest.raises(UnknownPreset) as info:
        find_preset(presets, "Android")
    assert info.value.known == ["Linux/X11", "Pack"]
    assert "'Pack'" in str(info.value)
    (project / "export_presets.cfg").unlink()
    with pytest.raises(PresetsMissing):
        read_presets(project)
    (project / "export_presets.cfg").write_text('[preset.0]\nname="x\n')
    with pytest.raises(PresetsInvalid):
        read_presets(project)


def test_variant_literals_parse() -> None:
    parsed = parse_config(
        'top=1\n[s]\nname="a \\"q\\" \\u00e9\\n"\non=true\nlist=[ 1, -2.5, "x" ]\n'
        'multi={\n"k": PoolStringArray( "a", "b" )\n}\n; comment\nnone=null\n'
    )
    assert parsed[""] == {"top": 1}
    assert parsed["s"] == {
        "name": 'a "q" é\n',
        "on": True,
        "list": [1, -2.5, "x"],
        "multi": {"k": ("PoolStringArray", "a", "b")},
        "none": None,
    }


def test_debian_templates_link_to_the_runner(tmp_path: Path) -> None:
    target = install_debian_templates(tmp_path)
    if target is None:
        pytest.skip("SKIPPED LOUDLY: godot3-runner is not installed")
    assert target == tmp_path / "godot/templates/3.2.3.stable"
    for name in ("linux_x11_64_release", "linux_x11_64_debug"):
        assert (target / name).resolve() == Path(shutil.which("godot3-runner") or "").resolve()


# --- real exports ---------------------------------------------------------------------------


@needs_godot
@pytest.mark.godot
@pytest.mark.anyio
async def test_pack_export_is_deterministic_and_leaves_the_project_untouched(
    tmp_path: Path, project: Path
) -> None:
    before = tree_digest(project)
    runner = runner_for(tmp_path)
    digests = []
    for export_id in ("pack-1", "pack-2"):
        job = start(runner, project, "Pack", "pack", export_id)
        assert await job.wait(30) == "succeeded", job.error
        assert [name for name, _ in job.outputs] == ["game.pck"]
        assert job.progress()[0] == job.progress()[1] == job.outputs[0][1].stat().st_size
        digests.append(sha256(job.outputs[0][1]))
        job.cleanup()
        assert not job.work_dir.exists()
    assert digests[0] == digests[1]
    assert tree_digest(project) == before
    assert work_dirs(tmp_path / "work") == []


@needs_godot
@pytest.mark.godot
@pytest.mark.anyio
async def test_full_export_writes_binary_and_pack(tmp_path: Path, project: Path) -> None:
    before = tree_digest(project)
    runner = runner_for(tmp_path, templates=True)
    job = start(runner, project, "Linux/X11", "release", "full")
    assert await job.wait(60) == "succeeded", job.error
    names = [name for name, _ in job.outputs]
    assert names == ["game.x86_64", "game.pck"]
    binary, pack = (path for _, path in job.outputs)
    assert os.access(binary, os.X_OK) and binary.stat().st_size > 1_000_000
    assert b"res://main.tscn" in pack.read_bytes()
    assert not [f for f in job.out_dir.iterdir() if is_partial(f.name)]
    engine = engines.current()
    templates = tmp_path / "data/godot" / engine.template_dir
    assert sorted(p.name for p in templates.iterdir()) == sorted(engine.template_names)
    assert not (tmp_path / "data/godot/app_userdata").exists()
    job.cleanup()
    assert tree_digest(project) == before


@needs_godot
@pytest.mark.godot
@pytest.mark.anyio
async def test_missing_templates_fail_with_godots_message_and_no_private_paths(
    tmp_path: Path, project: Path
) -> None:
    runner = runner_for(tmp_path)
    job = start(runner, project, "Linux/X11", "debug", "no-templates")
    assert await job.wait(30) == "failed"
    assert job.exit_code == 1 and job.outputs == []
    assert job.error is not None
    assert "No export template found" in job.error
    # The path the engine names first: Godot 3's debug template, Godot 4's release one.
    engine = engines.current()
    release, debug = engine.template_names
    expected = f"{engine.template_dir.split('/', 1)[1]}/{debug if engine.major == 3 else release}"
    assert f"<templates>/{expected}" in job.error
    for text in (job.error, job.log_tail(50)):
        assert str(tmp_path) not in text and os.path.realpath(tmp_path) not in text
        assert "Invalid locale" not in job.error
    job.cleanup()


@needs_godot
@pytest.mark.godot
@pytest.mark.anyio
async def test_a_preset_godot_does_not_know_fails_with_its_message(
    tmp_path: Path, project: Path
) -> None:
    runner = runner_for(tmp_path)
    job = runner.start(project, Preset("Ghost", "Linux/X11", ""), "pack", "ghost", ["g.pck"])
    assert await job.wait(30) == "failed"
    assert job.error is not None and "Invalid export preset name: Ghost" in job.error
    job.cleanup()


@needs_godot
@pytest.mark.godot
@pytest.mark.anyio
async def test_big_pack_includes_the_data_and_reports_growing_progress(
    tmp_path: Path, big_project: Path
) -> None:
    runner = runner_for(tmp_path)
    started = time.monotonic()
    job = start(runner, big_project, "Pack", "pack", "big")
    samples = [job.progress()]
    with anyio.fail_after(60):
        while await job.wait(0.1) == "running":
            samples.append(job.progress())
    elapsed = time.monotonic() - started
    assert job.state == "succeeded", job.error
    assert elapsed >= 2.0, f"export took {elapsed:.2f}s: the big project is too small"
    print(f"pack export of {BIG_MB} MiB: {elapsed:.2f}s")
    dones = [done for done, _ in samples]
    assert dones == sorted(dones)
    assert any(0 < done < total for done, total in samples)
    pack = job.outputs[0][1]
    assert pack.stat().st_size >= BIG_MB << 20
    with open(pack, "rb") as f:
        if engines.current().major == 3:  # format 1: the directory follows the header
            prefix, directory = b"res://", f.read(1 << 16)
        else:  # format 3: the directory is where the header says, its paths without res://
            f.seek(struct.unpack("<IQQ", f.read(40)[20:])[2])
            prefix, directory = b"", f.read(1 << 16)
    assert prefix + b"data/blob_000.dat" in directory and prefix + b"data/readme.txt" in directory
    job.cleanup()


@needs_godot
@pytest.mark.godot
@pytest.mark.anyio
async def test_cancel_kills_the_export_and_removes_its_work_dir(
    tmp_path: Path, big_project: Path
) -> None:
    runner = runner_for(tmp_path)
    job = start(runner, big_project, "Pack", "pack", "doomed")
    pid = job.pid
    assert pid is not None
    await until(job, lambda: job.progress()[0] > 0)
    assert await job.cancel() == "cancelled"
    assert job.outputs == [] and not job.work_dir.exists()
    assert process_gone(pid)
    # Nothing of its group runs (the sandbox's orphaned init may wait as a zombie for the
    # machine's init to reap it: it runs nothing).
    assert not procs.group_running(pid)
    assert await job.cancel() == "cancelled"


_CRASHING_OWNER = """
import sys, time
from pathlib import Path
from godot_mcp.engine.profile import profile_of
from godot_mcp.features.export.job import ExportRunner, leftovers
from tests.godot.export_fixtures import is_partial
from godot_mcp.engine.project.presets import (
    expected_outputs, find_preset, project_name, read_presets,
)

project, work_root = Path(sys.argv[1]), Path(sys.argv[2])
preset = find_preset(read_presets(project), "Pack")
job = ExportRunner(sys.argv[3], work_root, profile=profile_of(int(sys.argv[4]))).start(
    project, preset, "pack", "orphan", expected_outputs(project_name(project), preset, "pack"))
print(job.pid, flush=True)
deadline = time.monotonic() + 30
while not any(is_partial(p.name) for p in leftovers(job.work_dir)):
    assert time.monotonic() < deadline and job.poll() == "running"
    time.sleep(0.02)
print("partial", flush=True)
time.sleep(120)
"""


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the owning process said nothing in time"
    return proc.stdout.readline().strip()


@pytest.fixture
def owner(tmp_path: Path, big_project: Path, engine: Engine) -> Iterator[subprocess.Popen[str]]:
    godot = shutil.which(engine.headless)
    assert godot is not None
    work = str(tmp_path / "work")
    proc = subprocess.Popen(  # type: ignore[call-overload]
        [sys.executable, "-c", _CRASHING_OWNER, str(big_project), work, godot, str(engine.major)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
        **procs.spawn_kwargs(),
    )
    yield proc
    procs.kill_group(proc.pid)
    proc.wait(timeout=5)


@needs_godot
@pytest.mark.godot
def test_kill_9_of_the_owner_kills_godot_and_leaves_partial_files(
    tmp_path: Path, owner: subprocess.Popen[str]
) -> None:
    godot_pid = int(read_line(owner, 20))
    assert read_line(owner, 30) == "partial"
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait(timeout=5)
    deadline = time.monotonic() + 5
    while not process_gone(godot_pid):
        assert time.monotonic() < deadline, "godot outlived its owner"
        time.sleep(0.02)
    (work_dir,) = work_dirs(tmp_path / "work")
    assert work_dir.name == "orphan"
    left = leftovers(work_dir)
    assert any(is_partial(p.name) for p in left)
    assert work_dir / "log.txt" in left
    assert all(p.is_relative_to(work_dir) and "snapshot" not in p.parts for p in left)


def test_every_store_id_is_a_usable_export_work_dir(project: Path, tmp_path: Path) -> None:
    from godot_mcp.engine.project.presets import find_preset, read_presets
    from godot_mcp.features.export.job import work_dirs

    runner = ExportRunner("/bin/true", tmp_path / "work")
    preset = find_preset(read_presets(project), "Pack")
    ids = ["-" + "A" * 21, "_" + "b" * 21, "Zz09-_" * 3 + "abcd"]
    for export_id in ids:
        job = runner.prepare(project, preset, "pack", export_id, ["game.pck"])
        assert job.work_dir.name == export_id and (job.work_dir / "out").is_dir()
    assert sorted(p.name for p in work_dirs(tmp_path / "work")) == sorted(ids)


@pytest.mark.parametrize("export_path", ["build/..", "build/.", "...", "build/", "..", "a\\.."])
@pytest.mark.parametrize("kind", ["pack", "release", "debug"])
def test_an_export_path_without_a_usable_file_name_is_refused(export_path: str, kind: str) -> None:
    for platform in ("Linux/X11", "Windows Desktop", "HTML5", "Android"):
        preset = Preset("My\nPreset", platform, export_path)
        with pytest.raises(PresetsInvalid) as info:
            expected_outputs("Export Test", preset, kind)
        message = str(info.value)
        assert "\n" not in message
        assert "'My\\nPreset'" in message and repr(export_path) in message
        assert "export_path" in message and "no usable file name" in message


def test_names_with_dots_but_a_usable_file_name_are_unchanged() -> None:
    linux = Preset("L", "Linux/X11", "build/game.x86_64")
    assert expected_outputs("g", linux, "pack") == ["game.pck"]
    assert expected_outputs("g", linux, "release") == ["game.x86_64", "game.pck"]
    assert expected_outputs("g", linux, "debug") == ["game.x86_64", "game.pck"]
    assert expected_outputs("g", Preset("L", "Linux/X11", "../out/a.b.c"), "pack") == ["a.b.pck"]
    assert expected_outputs("g", Preset("L", "Linux/X11", "out/..x"), "release") == [
        "..x",
        "..pck",
    ]
    assert expected_outputs("g", Preset("L", "Linux/X11", "  "), "pack") == ["g.pck"]
    assert expected_outputs("g", Preset("L", "Linux/X11", ""), "release") == ["g.x86_64", "g.pck"]
