"""``godot-mcp serve`` set-up refusals and ``godot-mcp-admin`` reports, run in this process: each
command's ``main`` as its console script calls it, its exit status and its output as a user
reads them (tests/mcp/test_cli.py runs the commands as processes)."""

from __future__ import annotations

import contextlib
import io
import json
import socket
from dataclasses import dataclass

import pytest

from godot_mcp.cli import admin as admin_cli
from godot_mcp.cli import serve as serve_cli
from tests.mcp.conftest import make_project


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def _main(entry, argv: list[str]) -> Done:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = entry(argv)
        except SystemExit as exc:  # argparse's refusals
            code = exc.code
    return Done(int(code or 0), out.getvalue(), err.getvalue())


def run(*argv: str) -> Done:
    assert argv[0] == "serve"
    return _main(serve_cli.main, list(argv))


def admin(*argv: str) -> Done:
    return _main(admin_cli.main, list(argv))


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GODOT_MCP_KILL_AT", "GODOT_MCP_STATE_DIR", "GODOT_MCP_TOOLSETS"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["serve", "--project", "{missing}"], "project directory does not exist"),
        (
            ["serve", "--project", "{project}", "--state-dir", "{project}/state"],
            "state dir must not be inside the project",
        ),
        (["serve", "--project", "{project}", "--transport", "http"], "HTTP needs a token"),
        (["serve", "--project", "{project}", "--max-output-bytes", "0"], "--max-output-bytes"),
        (
            ["serve", "--project", "{project}", "--max-output-bytes", "1023"],
            "--max-output-bytes must be at least 1024",
        ),
        (["serve", "--project", "{project}", "--transport", "http", "--port", "99999"], "--port"),
        (["serve", "--project", "{project}", "--transport", "carrier-pigeon"], "invalid choice"),
        (["serve"], "--project"),
        (["serve", "--project", "{project}", "--max-exports", "\u00b2"], "--max-exports"),
        (
            ["serve", "--project", "{project}", "--retention-seconds", "1" + "0" * 400],
            "--retention",
        ),
        (["serve", "--project", "{project}", "--tool-names", "shouty"], "--tool-names"),
        (["serve", "--project", "{project}", "--transport", "http", "--port", "\u0660"], "--port"),
    ],
)
def test_bad_setups_fail_with_one_line_and_status_2_creating_nothing(tmp_path, args, needle):
    project = make_project(tmp_path / "p")
    state = tmp_path / "state"
    argv = [a.format(missing=tmp_path / "nope", project=project) for a in args]
    if "--state-dir" not in argv:
        argv += ["--state-dir", str(state)]
    done = run(*argv)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr
    assert done.stdout == ""
    assert not state.exists() and not (project / "state").exists()


def test_reconcile_and_status_on_a_missing_state_dir_print_an_empty_report(tmp_path):
    for cmd in ("reconcile", "status"):
        done = admin(cmd, "--json", "--state-dir", str(tmp_path / "none"))
        assert done.returncode == 0
        report = json.loads(done.stdout)
        assert report["bytes_in_use"] == 0
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--state-dir", "{file}"], "not a directory"),
        (["--state-dir", "{file}/sub"], "not a directory"),
        (["--state-dir", ""], "--state-dir must not be empty"),
        (["--godot", "/no/such/godot"], "--godot"),
        (["--transport", "http", "--host", "256.1.1.1"], "does not resolve"),
        (["--transport", "http", "--port", "{busy}"], "cannot listen"),
    ],
)
def test_unusable_state_dirs_binaries_and_addresses_fail_with_one_line(tmp_path, extra, needle):
    project = make_project(tmp_path / "p")
    afile = tmp_path / "afile"
    afile.write_text("x")
    state = tmp_path / "state"
    admin("token", "add", "x", "--state-dir", str(state))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        argv = [a.format(file=afile, busy=port) for a in extra]
        if "--state-dir" not in argv:
            argv += ["--state-dir", str(state)]
        done = run("serve", "--project", str(project), *argv)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr


def test_evidence_is_listed_by_id_and_size_and_purged_by_id(tmp_path):
    from godot_mcp.runtime.dirs import RuntimeDirs
    from godot_mcp.store.ids import new_id

    state = tmp_path / "state"
    assert admin("evidence", "list", "--json", "--state-dir", str(state)).stdout == "[]\n"
    assert admin("token", "add", "x", "--state-dir", str(state)).returncode == 0
    export_id = new_id()
    kept = RuntimeDirs(state).evidence_dir / export_id
    kept.mkdir(parents=True)
    (kept / "game.pck").write_bytes(b"abc")
    listed = admin("evidence", "list", "--json", "--state-dir", str(state))
    assert json.loads(listed.stdout) == [
        {"export_id": export_id, "preset": None, "files": 1, "bytes": 3, "interrupted_at": None}
    ]
    plain = admin("evidence", "list", "--state-dir", str(state))
    assert plain.stdout == f"{export_id}\t1 files\t3 bytes\t-\t-\n"
    assert str(tmp_path) not in listed.stdout + plain.stdout
    unknown = admin("evidence", "purge", new_id(), "--state-dir", str(state))
    assert unknown.returncode != 0 and "no evidence for export" in unknown.stderr
    purged = admin("evidence", "purge", export_id, "--state-dir", str(state))
    assert purged.returncode == 0
    assert purged.stderr == f"purged evidence of {export_id} (1 files, 3 bytes)\n"
    assert not kept.exists()
    assert admin("evidence", "list", "--json", "--state-dir", str(state)).stdout == "[]\n"
