"""A project whose every GDScript warning is an error: the scripts the server injects (the
bridge, the check) parse and run in it, on every engine line.

These scripts are parsed under the user's project settings, so one warning in them stops the
game or the check of such a project. The strict settings are read from the engine itself (its
``debug/gdscript/warnings/*`` project settings), so a warning a newer engine adds is covered the
day the lane runs it: Godot 4's levels all at 2 (error), Godot 3's switches all on, unsafe ones
included, with ``treat_warnings_as_errors``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from godot_mcp.features.check import job as check
from tests.runtime.test_captures import ok
from tests.support.engines import Engine
from tests.support.servers import stdio_client

pytestmark = [pytest.mark.godot, pytest.mark.anyio]

PACKAGE = Path(__file__).resolve().parents[2] / "godot_mcp" / "features"
PREFIX = "debug/gdscript/warnings/"
DUMPED = "@@strict-setting "

# Prints each warning setting: name, Variant type, default. Valid GDScript 3 and 4 alike.
DUMP = f"""extends SceneTree

func _init():
	for p in ProjectSettings.get_property_list():
		var name = str(p["name"])
		if name.begins_with("{PREFIX}"):
			print("{DUMPED}", name, " ", p["type"], " ", ProjectSettings.get_setting(name))
	quit()
"""
TYPE_BOOL, TYPE_INT = 1, 2

# What the engines print on every run, clean or not: the banner, a blank line (Godot 3: one
# space), and Godot 3.2's complaint about the C locale (machine noise on this kind of host).
NOISE = frozenset(
    {
        "",
        " ",
        "ERROR: get_language_code: Invalid locale 'C'.",
        "   At: core/translation.cpp:945.",
        "ERROR: set_locale: Unsupported locale 'C', falling back to 'en'.",
        "   At: core/translation.cpp:969.",
    }
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def godot_env(home: Path) -> dict[str, str]:
    """The caller's environment with private user dirs: nothing written to the real home."""
    env = dict(os.environ)
    for var, sub in (("HOME", "home"), ("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config")):
        env[var] = str(home / sub)
    env["XDG_CACHE_HOME"] = str(home / "cache")
    return env


def run_headless(engine: Engine, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*engine.headless_argv(), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=godot_env(home),
        stdin=subprocess.DEVNULL,
    )


def strict_settings(engine: Engine, base: Path) -> list[str]:
    """Every warning setting of the running engine at its strictest, as ``project.godot``
    lines of its ``[debug]`` section, read from the engine in a plain project."""
    plain = base / "plain"
    plain.mkdir()
    (plain / "project.godot").write_text(f"config_version={5 if engine.major == 4 else 4}\n")
    (plain / "dump.gd").write_text(DUMP)
    done = run_headless(engine, base / "home", "--path", str(plain), "--script", "res://dump.gd")
    lines = []
    for line in (done.stdout + done.stderr).splitlines():
        if not line.startswith(DUMPED):
            continue
        name, kind, _default = line[len(DUMPED) :].split(" ", 2)
        key = name[len("debug/") :]
        if int(kind) == TYPE_INT:  # Godot 4: a warning's level (0 ignore, 1 warn, 2 error)
            lines.append(f"{key}=2")
        elif int(kind) == TYPE_BOOL:  # Godot 3's switches; enable, treat_warnings_as_errors
            lines.append(f"{key}={'false' if name.endswith('/exclude_addons') else 'true'}")
    names = {line.split("=", 1)[0].rsplit("/", 1)[1] for line in lines}
    # The dump ran and found the warnings every engine line has (a broken dump fails here).
    assert {"return_value_discarded", "unsafe_method_access", "unused_variable"} <= names, done
    if engine.major == 4:
        assert sum(line.endswith("=2") for line in lines) >= 40, lines
    else:
        assert "treat_warnings_as_errors" in names and len(lines) >= 25, lines
    return lines


def write_strict(project: Path, engine: Engine, settings: list[str], application: str = "") -> Path:
    project.mkdir(parents=True)
    config = f"config_version={5 if engine.major == 4 else 4}\n\n{application}[debug]\n\n"
    (project / "project.godot").write_text(config + "".join(s + "\n" for s in settings))
    return project


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[Path]:
    """A project with nothing in it but every warning as an error."""
    base = tmp_path_factory.mktemp(f"strict-{engine.name}")
    yield write_strict(base / "strict", engine, strict_settings(engine, base))


def injected(engine: Engine, stem: str, into: Path) -> Path:
    """The server's script of ``stem`` for ``engine``, as the server hands it to Godot."""
    source = PACKAGE / ("game" if stem == "bridge" else "check") / f"{stem}{engine.major}.gd"
    text = source.read_text(encoding="utf-8")
    if stem == "check":  # filled in as CheckJob.prepare fills it
        listing = check._gd_string(str(into / "list.txt"))
        text = text.replace("__LIST__", listing).replace("__MARK__", "@@godot-mcp-check-0123")
    into.mkdir(parents=True, exist_ok=True)
    script = into / f"{stem}.gd"
    script.write_text(text, encoding="utf-8")
    return script


def check_only(engine: Engine, project: Path, script: Path) -> tuple[int, list[str]]:
    """``--check-only`` of ``script`` in ``project``: the exit code and what was printed
    besides the banner and the machine's noise."""
    done = run_headless(
        engine,
        project.parent / "home",
        "--path",
        str(project),
        "--check-only",
        "--script",
        str(script),
    )
    out = (done.stdout + "\n" + done.stderr).splitlines()
    return done.returncode, [
        line for line in out if line not in NOISE and not line.startswith("Godot Engine v")
    ]


@pytest.mark.parametrize("stem", ["bridge", "check"])
def test_each_injected_script_parses_where_every_warning_is_an_error(
    strict: Path, engine: Engine, stem: str, tmp_path: Path
):
    rc, printed = check_only(engine, strict, injected(engine, stem, tmp_path))
    assert (rc, printed) == (0, []), "\n".join(printed)


# A script with a warning no engine line reports unless told to (Godot 4's untyped_declaration,
# Godot 3's unsafe_property_access): the strict project makes it an error.
CANARY = {
    3: "extends SceneTree\n\nfunc _init():\n\tvar n := Node.new()\n\tprint(n.nothing)\n",
    4: "extends SceneTree\n\nvar untyped = 1\n",
}


def test_the_strict_project_turns_a_warning_off_by_default_into_an_error(
    strict: Path, engine: Engine, tmp_path: Path
):
    """The yardstick of the test above: a clean script prints nothing but the noise and exits
    0 there (every engine line exits 0 on a clean --check-only), a canary fails to parse."""
    clean = tmp_path / "clean.gd"
    clean.write_text("extends SceneTree\n")
    assert check_only(engine, strict, clean) == (0, [])
    script = tmp_path / "canary.gd"
    script.write_text(CANARY[engine.major])
    _rc, printed = check_only(engine, strict, script)
    assert any("Parse Error" in ln and "warning treated as error" in ln.lower() for ln in printed)
    plain = tmp_path / "plain"
    write_strict(plain, engine, [])
    assert check_only(engine, plain, script) == (0, [])


MAIN_SCRIPT = "extends Node2D\n"


async def test_a_strict_project_runs_and_checks_through_the_server(
    tmp_path: Path, strict: Path, engine: Engine
):
    """A game session reaches the bridge, and project.check finds nothing, in a project whose
    every warning is an error (with a main scene and an autoload, both read by the check)."""
    settings = [
        line
        for line in (strict / "project.godot").read_text().splitlines()
        if line.startswith("gdscript/")
    ]
    application = (
        '[application]\n\nconfig/name="strict"\nrun/main_scene="res://main.tscn"\n\n'
        '[autoload]\n\nGlobal="*res://global.gd"\n\n'
    )
    project = write_strict(tmp_path / "game", engine, settings, application)
    (project / "main.gd").write_text(MAIN_SCRIPT)
    (project / "global.gd").write_text("extends Node\n")
    (project / "main.tscn").write_text(engine.scene("main.gd", "Node2D"))
    with anyio.fail_after(180):
        async with stdio_client(project, tmp_path / "state") as c:
            answer = await ok(c, "project.check")
            assert answer == {
                "outcome": "ok",
                "errors": [],
                "checked": {"scripts": 2, "scenes": 1},
                "truncated": False,
            }
            start = {"mode": "headless"}
            sid = (await ok(c, "runtime.session.start", start))["session"]["id"]
            tree = await ok(c, "runtime.scene.tree", {"session_id": sid, "depth": 1})
            assert tree["current_scene"] == "/root/Root"
            errors = await ok(c, "runtime.log.read", {"session_id": sid, "min_level": "error"})
            assert errors["lines"] == [], errors
            await ok(c, "runtime.session.stop", {"session_id": sid})
