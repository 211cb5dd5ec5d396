"""project.check with a real headless Godot: every problem once, with its place; nothing changed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from godot_mcp.engine.project import tree
from godot_mcp.features.check import job as check
from tests.mcp.conftest import Connect, transport_factory
from tests.runtime.conftest import require_godot
from tests.runtime.test_captures import ok
from tests.support import engines
from tests.support.engines import Engine
from tests.support.procs import cmdline
from tests.support.servers import ServedProject, serve_project, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.usefixtures("engine")]

PROJECT = """\
config_version=4

[application]

config/name="checked"
run/main_scene="res://main.tscn"

[autoload]

Global="*res://global.gd"
"""
CLEAN = {
    "global.gd": "extends Node\n\nvar score := 1\n",
    "main.gd": "extends Node2D\n\nfunc _ready():\n\tprint(Global.score)\n",
    "main.tscn": (
        '[gd_scene load_steps=2 format=2]\n\n[ext_resource path="res://main.gd" '
        'type="Script" id=1]\n\n[node name="Main" type="Node2D"]\nscript = ExtResource( 1 )\n'
    ),
    "sub/deeper/helper.gd": "extends Reference\n\nfunc twice(x):\n\treturn 2 * x\n",
    "data/env.tres": (
        '[gd_resource type="Environment" format=2]\n\n[resource]\nbackground_mode = 1\n'
    ),
    "notes.txt": "not checked\n",
}
BROKEN = {
    **CLEAN,
    # an expression cut short on line 4: Godot names line 5, where it found out
    "broken.gd": "extends Node\n\nfunc f():\n\tvar x = \n\treturn 1\n",
    # line 7: an identifier nobody declared, in a subfolder
    "sub/undeclared.gd": (
        "extends Node\n\nfunc f():\n\treturn 1\n\nfunc g():\n\treturn nobody + 1\n"
    ),
    # line 3: a script that does not exist
    "bad.tscn": (
        '[gd_scene load_steps=2 format=2]\n\n[ext_resource path="res://missing.gd" '
        'type="Script" id=1]\n\n[node name="Bad" type="Node"]\nscript = ExtResource( 1 )\n'
    ),
    # a scene of the broken script: its error is still reported once
    "uses_broken.tscn": (
        '[gd_scene load_steps=2 format=2]\n\n[ext_resource path="res://broken.gd" '
        'type="Script" id=1]\n\n[node name="U" type="Node"]\nscript = ExtResource( 1 )\n'
    ),
}
SLOW_GLOBAL = "extends Node\n\nvar score := 1\n\nfunc _init():\n\tOS.delay_msec({ms})\n"


def line(problem: str) -> int:
    """The line each engine names: Godot 3 the line where it found out an expression was cut
    short (5), Godot 4 the expression's own (4); Godot 3 a missing script's ext_resource
    line (3), Godot 4 the line that uses it (6)."""
    return {"broken": (5, 4), "bad": (3, 6)}[problem][engines.current().major - 3]


def make(
    root: Path, files: dict[str, str], project: str = PROJECT, engine: Engine | None = None
) -> Path:
    engine = engine or engines.current()
    root.mkdir(parents=True)
    (root / "project.godot").write_text(engine.port(project))
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(engine.port(text))
    return root


def tree_hash(root: Path) -> str:
    """Every path, mode and byte under ``root`` (links not followed)."""
    h = hashlib.sha256()
    for top, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(top) / name
            st = path.lstat()
            h.update(f"{path.relative_to(root)}\0{st.st_mode}\0".encode())
            if path.is_file() and not path.is_symlink():
                h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def check_env(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[ServedProject]:
    base = tmp_path_factory.mktemp(f"check-{engine.name}")
    make(base / "clean", CLEAN, engine=engine)
    project = make(base / "broken", BROKEN, engine=engine)
    served = serve_project(project, base / "state")
    yield served
    served.http.stop()


@pytest.fixture(params=["stdio", "http"])
def checking(request: pytest.FixtureRequest, check_env: ServedProject) -> Connect:
    return transport_factory(request.param, check_env)


def places(answer: dict) -> set[tuple[str, str, int | None]]:
    return {(e["kind"], e["path"], e.get("line")) for e in answer["errors"]}


async def test_each_problem_is_found_once_with_its_place(checking, check_env):
    before = tree_hash(check_env.project)
    with anyio.fail_after(120):
        async with checking() as c:
            answer = await ok(c, "project.check")
    assert places(answer) == {
        ("parse", "res://broken.gd", line("broken")),
        ("parse", "res://sub/undeclared.gd", 7),
        ("missing_dependency", "res://bad.tscn", line("bad")),
    }
    assert len(answer["errors"]) == 3 and answer["truncated"] is False
    by_path = {e["path"]: e for e in answer["errors"]}
    assert '"nobody"' in by_path["res://sub/undeclared.gd"]["message"]
    assert "res://missing.gd" in by_path["res://bad.tscn"]["message"]
    assert answer["checked"] == {"scripts": 5, "scenes": 4}
    text = json.dumps(answer)
    for private in (check_env.state_dir, check_env.project, check_env.project.parent):
        assert str(private) not in text
    assert tree_hash(check_env.project) == before  # nothing written, not even .import/
    assert not (check_env.project / ".import").exists()


async def test_paths_narrow_the_check_and_unknown_paths_are_refused(checking):
    with anyio.fail_after(120):
        async with checking() as c:
            sub = await ok(c, "project.check", {"paths": ["res://sub"]})
            assert places(sub) == {("parse", "res://sub/undeclared.gd", 7)}
            assert sub["checked"] == {"scripts": 2, "scenes": 0}
            two = await ok(
                c, "project.check", {"paths": ["res://bad.tscn", "res://sub/deeper/helper.gd"]}
            )
            assert places(two) == {("missing_dependency", "res://bad.tscn", line("bad"))}
            assert two["checked"] == {"scripts": 1, "scenes": 1}
            for paths, why in (
                (["res://nope"], "res://nope is not a file or folder of the project"),
                (["res://../etc"], "'res://../etc' is not a plain res:// path"),
                (["/etc/passwd"], "'/etc/passwd' is not a res:// path"),
                (["res://notes.txt"], "res://notes.txt cannot be checked: not a script, scene"),
            ):
                r = await c.call_tool("project_check", {"paths": paths})
                assert r.structured_content["outcome"] == "invalid_argument", paths
                assert r.structured_content["message"].startswith(why), r.structured_content


async def test_any_http_principal_may_check(check_env):
    with anyio.fail_after(120):
        async with check_env.connect("http", "bob") as c:
            answer = await ok(c, "project.check", {"paths": ["res://sub/deeper"]})
    assert answer["errors"] == [] and answer["checked"] == {"scripts": 1, "scenes": 0}


async def test_a_clean_project_checks_clean(tmp_path, check_env):
    clean = check_env.project.parent / "clean"
    before = tree_hash(clean)
    with anyio.fail_after(120):
        async with stdio_client(clean, tmp_path / "state") as c:
            answer = await ok(c, "project.check")
    assert answer == {
        "outcome": "ok",
        "errors": [],
        "checked": {"scripts": 3, "scenes": 2},
        "truncated": False,
    }
    assert tree_hash(clean) == before


async def test_a_link_out_of_the_project_refuses_the_check(tmp_path):
    require_godot("godot3-server", "bwrap")
    project = make(tmp_path / "p", CLEAN)
    (project / "leak.gd").symlink_to("/etc/passwd")
    with anyio.fail_after(60):
        async with stdio_client(project, tmp_path / "state") as c:
            r = await c.call_tool("project_check", {})
    assert r.structured_content["outcome"] == "invalid_argument"
    assert "res://leak.gd" in r.structured_content["message"]
    assert "/etc/passwd" not in r.structured_content["message"]


def _check_processes(where: Path) -> list[int]:
    marker = str(where)
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and marker in cmdline(int(p))]


async def _until(predicate, seconds: float = 20) -> None:
    with anyio.fail_after(seconds):
        while not predicate():
            await anyio.sleep(0.05)


async def test_a_check_holds_an_export_slot_and_a_cancelled_one_leaves_nothing(tmp_path):
    require_godot("godot3-server", "bwrap")
    slow = {**CLEAN, "global.gd": SLOW_GLOBAL.format(ms=60_000)}
    project = make(tmp_path / "slow", slow)
    state = tmp_path / "state"
    checks = state / "scratch" / "checks"
    async with stdio_client(project, state, "--max-exports", "1") as c:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(c.call_tool, "project_check", {})
                await _until(lambda: bool(_check_processes(checks)))
                profile = await ok(c, "server.profile")
                assert profile["capacity"]["exports_running"] == 1
                second = await c.call_tool("project_check", {})
                assert second.structured_content["outcome"] == "unavailable"
                assert "--max-exports" in second.structured_content["message"]
                tg.cancel_scope.cancel()  # the caller goes away: notifications/cancelled
            await _until(lambda: not _check_processes(checks))
            await _until(lambda: not list(checks.glob("*/*")))  # its copy removed
            profile = await ok(c, "server.profile")
            assert profile["capacity"]["exports_running"] == 0


async def test_a_check_past_its_time_limit_ends_with_its_process_group(tmp_path):
    require_godot("godot3-server", "bwrap")
    project = make(tmp_path / "slow", {**CLEAN, "global.gd": SLOW_GLOBAL.format(ms=60_000)})
    plan = tree.plan(project)
    engine = engines.current()
    job = check.Check(
        shutil.which(engine.headless) or "", engine.profile, tmp_path / "work", project
    )
    job.prepare(plan, check.select(plan, None))
    job.launch()
    started = time.monotonic()
    with pytest.raises(check.CheckTimeout) as caught:
        await job.run(timeout=2)
    assert 2 <= time.monotonic() - started < 15
    assert caught.value.message == "the check did not finish within 2 s (0 of 5 files checked)"
    assert not _check_processes(tmp_path / "work")
    job.cleanup()
    assert not (tmp_path / "work").exists()


BANNER = "echo 'Godot Engine v4.6.3.stable - https://godotengine.org'\n"
PROBE = "echo 'ERROR: Required extension VK_KHR_surface not found.' >&2\n"
LOADER = "echo 'godot: error while loading shared libraries: libGL.so.1' >&2\n"


@pytest.mark.parametrize(
    "output, code, why",
    [
        # The engine's first error line, its start-up probe left out.
        (
            BANNER + PROBE + LOADER + "echo 'ERROR: first' >&2\necho 'ERROR: second' >&2\n",
            3,
            "ERROR: first",
        ),
        # No error line of its own: the line of the process that failed before it spoke.
        (BANNER + PROBE + LOADER, 127, "godot: error while loading shared libraries: libGL.so.1"),
        (
            BANNER + "echo 'bwrap: Creating new namespace failed: Operation not permitted'\n",
            1,
            "bwrap: Creating new namespace failed: Operation not permitted",
        ),
    ],
)
async def test_an_engine_that_fails_before_checking_says_why(tmp_path, output, code, why):
    """A run that checked nothing answers the first line that says why (a stand-in engine:
    what a real one prints when its libraries or the sandbox fail)."""
    require_godot("godot3-server", "bwrap")
    project = make(tmp_path / "p", CLEAN)
    plan = tree.plan(project)
    fake = tmp_path / "bin" / "godot"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\n{output}exit {code}\n")
    fake.chmod(0o755)
    job = check.Check(str(fake), engines.current().profile, tmp_path / "work", project)
    job.prepare(plan, check.select(plan, None))
    job.launch()
    with pytest.raises(check.CheckFailed) as caught:
        await job.run(timeout=30)
    assert caught.value.message == (
        f"Godot exited with code {code} after checking 0 of 5 files: {why}"
    )
    job.cleanup()


async def test_the_profile_probes_the_engine_itself_in_the_sandbox(tmp_path):
    """An engine that answers --version outside the sandbox but cannot start inside it (here:
    it needs a variable the sandbox does not pass on, as a real one needs its libraries) makes
    exports and checks unavailable, with the engine's own line and not its path."""
    require_godot("godot3-server", "bwrap")
    engine = engines.current()
    fake = tmp_path / "private" / "godot-headless"
    fake.parent.mkdir()
    fake.write_text(
        '#!/bin/sh\nif [ -n "$OUTSIDE_THE_SANDBOX" ]; then echo 4.6.3.stable; exit 0; fi\n'
        f"echo '{fake}: error while loading shared libraries: libgodot.so.4' >&2\nexit 127\n"
    )
    fake.chmod(0o755)
    project = make(tmp_path / "p", CLEAN)
    why = (
        "unavailable: the engine does not start in the sandbox: "
        "godot-headless: error while loading shared libraries: libgodot.so.4"
    )
    env = {"OUTSIDE_THE_SANDBOX": "1"}
    with anyio.fail_after(60):
        async with stdio_client(
            project, tmp_path / "state", "--godot-headless", str(fake), env=env
        ) as c:
            profile = await ok(c, "server.profile")
            assert profile["availability"]["project_check"] == why
            assert profile["availability"]["project_export"] == why
            refused = await c.call_tool("project_check", {})
            assert refused.structured_content == {"outcome": "unavailable", "message": why[13:]}
        # The real engine passes the same probe.
        real = ("--godot-headless", engine.headless)
        async with stdio_client(project, tmp_path / "state2", *real) as c:
            profile = await ok(c, "server.profile")
            assert profile["availability"]["project_check"] == "available"


def test_the_time_limit_scales_with_the_project():
    assert check.time_limit(0) == 30
    assert check.time_limit(5000) == 530


async def test_a_long_check_reports_honest_progress(tmp_path):
    require_godot("godot3-server", "bwrap")
    project = make(tmp_path / "slow", {**CLEAN, "global.gd": SLOW_GLOBAL.format(ms=1500)})
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    with anyio.fail_after(60):
        async with stdio_client(project, tmp_path / "state") as c:
            r = await c.call_tool("project_check", {}, progress_callback=progress)
    assert r.structured_content["outcome"] == "ok" and r.structured_content["errors"] == []
    values = [v for v, _, _ in seen]
    assert len(seen) >= 3 and values == sorted(set(values))  # strictly increasing
    assert all(t is None for _, t, _ in seen[:-1]) and seen[-1][1] == seen[-1][0]
    assert seen[-1][2] == "the check ended: 0 errors"
    assert any(m and m.endswith("files checked") for _, _, m in seen[:-1])


# Project code runs before the check and may print the check's marker lines (the nonce is
# in the check script, named on Godot's command line): lines out of the check's order count
# for nothing. The spy also tries to fill /tmp, read the store and the server's environment.
_SPY_HEAD = """\
extends Node

func _init():
\tvar args = OS.get_cmdline_args()
\tvar script = ""
\tfor i in range(args.size() - 1):
\t\tif args[i] == "--script":
\t\t\tscript = args[i + 1]
"""
_SPY_TAIL = """\
\tprinterr(mark + " BEGIN res://spy.gd")
\tvar secret = OS.get_environment("MYSECRET")
\tvar seen = "ENV=%s WROTE=%d STATE=%s" % [secret, wrote, state_open]
\tprinterr("SCRIPT ERROR: Parse Error: " + seen)
\tprinterr("{at}")
\tprinterr(mark + " END ok res://spy.gd")
"""
SPY = (
    _SPY_HEAD
    + """\
\tvar f = File.new()
\tf.open(script, File.READ)
\tvar mark = f.get_as_text().split('const MARK = "')[1].split('"')[0]
\tf.close()
\tvar wrote = 0
\tvar chunk = PoolByteArray()
\tchunk.resize(1 << 20)
\tvar out = File.new()
\tif out.open("/tmp/fill", File.WRITE) == OK:
\t\tfor _i in range(400):
\t\t\tout.store_buffer(chunk)
\t\t\twrote = out.get_len()
\t\tout.close()
\tvar home = File.new()
\tvar state_open = home.open("{state}/store.db", File.READ) == OK
"""
    + _SPY_TAIL.replace("{at}", "   At: res://spy.gd:1.")
)
# The same spy in Godot 4's API (FileAccess).
SPY4 = (
    _SPY_HEAD
    + """\
\tvar mark = FileAccess.get_file_as_string(script).split('const MARK = "')[1].split('"')[0]
\tvar wrote = 0
\tvar chunk = PackedByteArray()
\tchunk.resize(1 << 20)
\tvar out = FileAccess.open("/tmp/fill", FileAccess.WRITE)
\tif out != null:
\t\tfor _i in range(400):
\t\t\tout.store_buffer(chunk)
\t\t\twrote = out.get_length()
\t\tout.close()
\tvar state_open = FileAccess.open("{state}/store.db", FileAccess.READ) != null
"""
    + _SPY_TAIL.replace("{at}", "   at: _init (res://spy.gd:1)")
)
# An imported file whose imported copy is gone, in each engine's form.
IMPORT3 = (
    '[remap]\n\nimporter="texture"\ntype="StreamTexture"\n'
    'path="res://.import/imp.png-0123456789abcdef.stex"\n'
)
IMPORT4 = (
    '[remap]\n\nimporter="texture"\ntype="CompressedTexture2D"\n'
    'path="res://.godot/imported/imp.png-0123456789abcdef.ctex"\n'
)
RECURSE = "extends Resource\n\nfunc _init():\n\t_init()\n"
# What crashes each engine while it loads a resource: Godot 3.2.3 overflows its stack on
# infinite recursion; Godot 4 reports that as a script error, so it is asked to crash.
CRASH = {3: RECURSE, 4: 'extends Resource\n\nfunc _init():\n\tOS.crash("on purpose")\n'}


def _resource(script: str) -> str:
    return (
        '[gd_resource type="Resource" load_steps=2 format=2]\n\n'
        f'[ext_resource path="res://{script}" type="Script" id=1]\n\n'
        "[resource]\nscript = ExtResource( 1 )\n"
    )


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def _texture_scene(path: str) -> str:
    return (
        f'[gd_scene load_steps=2 format=2]\n\n[ext_resource path="{path}" type="Texture" '
        'id=1]\n\n[node name="S" type="Sprite"]\ntexture = ExtResource( 1 )\n'
    )


async def test_a_hostile_project_reaches_nothing_and_every_problem_is_still_found(tmp_path):
    require_godot("godot3-server", "bwrap")
    four = engines.current().major == 4
    state = tmp_path / "state"
    project = make(
        tmp_path / "hostile",
        {
            **CLEAN,
            "spy.gd": (SPY4 if four else SPY).replace("{state}", str(state)),
            "a_broken.gd": BROKEN["broken.gd"],
            "rec.gd": RECURSE,
            "crasher.gd": CRASH[engines.current().major],
            "crash.tres": _resource("crasher.gd"),
            "deep.tres": _resource("rec.gd") if four else CLEAN["data/env.tres"],
            "z_late.gd": BROKEN["sub/undeclared.gd"],
            "tex_missing.tscn": _texture_scene("res://nope.png"),
            "tex_unimported.tscn": _texture_scene("res://imp.png"),
            # imported once, its imported copy gone since
            "imp.png.import": IMPORT4 if four else IMPORT3,
        },
        project=PROJECT + 'Spy="*res://spy.gd"\nGone="*res://gone_global.gd"\n',
    )
    (project / "imp.png").write_bytes(PNG)
    (project / (".godot" if four else ".import")).mkdir()  # imported once: not imported again
    with anyio.fail_after(120):
        async with stdio_client(project, state, env={"MYSECRET": "hunter2"}) as c:
            answer = await ok(c, "project.check")
            assert (await ok(c, "server.profile"))["capacity"]["exports_running"] == 0
    text = json.dumps(answer)
    assert "hunter2" not in text and str(state) not in text
    by = {(e["path"], e["kind"]): e for e in answer["errors"]}
    assert len(by) == len(answer["errors"])  # each problem once
    imported = (
        "res://.godot/imported/imp.png-0123456789abcdef.ctex"
        if four
        else "res://.import/imp.png-0123456789abcdef.stex"
    )
    expected = {
        ("res://project.godot", "missing_dependency"): "missing file: res://gone_global.gd",
        ("res://a_broken.gd", "parse"): line("broken"),
        ("res://crash.tres", "load"): "Godot crashed loading it (exit code ",
        ("res://z_late.gd", "parse"): 7,  # found after the crash
        ("res://tex_missing.tscn", "missing_dependency"): "missing file: res://nope.png",
        ("res://tex_unimported.tscn", "load"): (
            f"Godot could not load {imported} (is the project imported?)"
        ),
    }
    if four:
        expected[("res://deep.tres", "load")] = (
            "Stack overflow. Check for infinite recursion in your script (at res://rec.gd:3)"
        )
    # The spy's forged lines count for nothing; nothing else is reported.
    assert set(by) == set(expected)
    for key, want in expected.items():
        if isinstance(want, int):
            assert by[key]["line"] == want, key
        else:
            assert by[key]["message"].startswith(want), (key, by[key])
    assert not list((state / "scratch" / "checks").glob("*/*"))


def test_the_sandbox_hides_the_environment_and_bounds_every_write(tmp_path):
    """What project code can do inside the check's sandbox, tried with a shell."""
    require_godot("bwrap")
    from godot_mcp.engine.process import environment, sandbox

    project = make(tmp_path / "p", CLEAN)
    fd = os.open(project, os.O_RDONLY | os.O_DIRECTORY)
    script = (
        "env; grep CapEff /proc/self/status; "
        f"mount -o remount,bind,rw {project} 2>/dev/null && echo REMOUNTED; "
        f"echo x > {project}/PWNED 2>/dev/null && echo WROTE-PROJECT; "
        "touch /rootfile 2>/dev/null && echo WROTE-ROOT; "
        "touch /dev/big 2>/dev/null && echo WROTE-DEV; "
        "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>/dev/null; "
        "echo TMP=$(stat -c %s /tmp/fill); "
        "dd if=/dev/zero of=/dev/shm/fill bs=1M count=64 2>/dev/null; "
        "echo SHM=$(stat -c %s /dev/shm/fill)"
    )
    argv = sandbox.wrap(
        ["/bin/sh", "-c", script],
        rw=[],
        ro=[],
        cwd=Path("/"),
        home=Path("/tmp/home"),
        ro_fds=[(fd, project)],
        tmp_size=16 << 20,
    )
    env = environment.for_sandbox({**os.environ, "MYSECRET": "hunter2", "LC_API_TOKEN": "sekrit"})
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, pass_fds=(fd,))
    os.close(fd)
    out = done.stdout
    assert "hunter2" not in out and "sekrit" not in out
    assert "CapEff:\t0000000000000000" in out
    for bad in ("REMOUNTED", "WROTE-PROJECT", "WROTE-ROOT", "WROTE-DEV"):
        assert bad not in out, out
    assert f"TMP={16 << 20}" in out and f"SHM={16 << 20}" in out  # cut at the bound
    assert not (project / "PWNED").exists()
