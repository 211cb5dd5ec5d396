"""A game's own arguments: what each engine would read itself is refused by name."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from godot_mcp.engine.profile import profile_of
from godot_mcp.features.game.args import GODOT3_OPTIONS, check_game_args
from godot_mcp.features.game.errors import GameInvalid

GODOT3_READS = [
    "--path",
    "-s",
    "-d",
    "--export-pack",
    "--skip-breakpoints",
    "/?",
    "--lsp-port",
    "--benchmark-file",
    "--generate-mono-glue",
    "--mono-debugger-agent=transport=dt_socket",
]
GODOT3_LOADS = ["levels/boss.tscn", "other/project.godot", "x.TRES", "a.scn"]
HARMLESS = [
    "--path=/x",
    "--Version",
    "server",
    "two words",
    "",
    "--role=client",
    "ünï",
    "--mcp-port=9",
    "--mcp-scene=/tmp/x.tscn/",
    "100%",
    "%zz",
]
ALTERED = {
    " --version": "begins or ends with a space or control character",
    "--version\n": "begins or ends with a space or control character",
    "\t-s": "begins or ends with a space or control character",
    " --mcp-scene=/tmp/x/evil.tscn": "begins or ends with a space or control character",
    "x\x7f": None,  # DEL is above space: neither engine strips it
    "%20--mcp-port=1": "holds a %XX sequence",
    "\ufeff--path": "begins with a byte-order mark",
    "\ufeff--script": "begins with a byte-order mark",
    "\ufeff--main-pack": "begins with a byte-order mark",
    "\ufeff x": "begins with a byte-order mark",
    "a\ufeff": None,  # only a leading mark is dropped
    "a%2Fb": "holds a %XX sequence",
    "a%2fb": "holds a %XX sequence",
}


@pytest.mark.parametrize("arg", GODOT3_READS)
def test_an_option_godot3_reads_is_refused_there_and_kept_on_4(arg):
    with pytest.raises(GameInvalid, match=r"args\[1\] '.+' is an option Godot 3 reads itself"):
        check_game_args(["ok", arg], profile_of(3))
    assert check_game_args(["ok", arg], profile_of(4)) == ["ok", arg]


@pytest.mark.parametrize("arg", GODOT3_LOADS)
def test_a_file_godot3_would_load_is_refused_there_and_kept_on_4(arg):
    with pytest.raises(GameInvalid, match=r"args\[0\] names a project or scene file"):
        check_game_args([arg], profile_of(3))
    assert check_game_args([arg], profile_of(4)) == [arg]


@pytest.mark.parametrize("arg", list(ALTERED))
def test_an_argument_the_engine_would_alter_is_refused_on_both(arg):
    """Both engines strip up to space from each end and decode %20 before the game sees an
    argument: refused, never passed altered."""
    for major in (3, 4):
        if ALTERED[arg] is None:
            assert check_game_args([arg], profile_of(major)) == [arg]
            continue
        with pytest.raises(GameInvalid) as raised:
            check_game_args(["ok", arg], profile_of(major))
        assert raised.value.message.startswith(f"args[1] {ALTERED[arg]}")


def test_other_arguments_pass_on_both_engines():
    for major in (3, 4):
        assert check_game_args(HARMLESS, profile_of(major)) == HARMLESS


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a"] * 33, "args holds 33 items; at most 32"),
        (["a", "b" * 257], "args[1] is 257 characters; at most 256"),
        (["a\0"], "args[0] holds a NUL character"),
        (["\ud800"], "args[0] is not valid UTF-8 (a lone surrogate)"),
        ([3], "args[0] must be a string"),
        ("--x", "args must be a list of strings"),
    ],
)
def test_bad_args_are_refused_by_name(args, message):
    for major in (3, 4):
        with pytest.raises(GameInvalid) as raised:
            check_game_args(args, profile_of(major))
        assert raised.value.message == message


def test_every_option_of_the_local_godot3_help_is_known():
    """The list is checked against the engine's own --help, where Godot 3 is installed."""
    binary = shutil.which("godot3-server") or shutil.which("godot3")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("godot3 is not installed, and CI needs it")
        pytest.skip("SKIPPED LOUDLY: no godot3 here to read --help from")
    out = subprocess.run(
        [binary, "--help"], capture_output=True, text=True, timeout=30, check=False
    ).stdout
    listed = set()
    for line in out.splitlines():
        found = re.match(r"\s+((?:-[a-zA-Z], )?--?[a-z][\w-]*)", line)
        if found:
            listed.update(found.group(1).split(", "))
    assert len(listed) > 40, out[:500]
    assert listed <= GODOT3_OPTIONS, sorted(listed - GODOT3_OPTIONS)
