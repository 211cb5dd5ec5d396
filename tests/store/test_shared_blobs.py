"""The command line and a running server on an S3 bucket (a real SeaweedFS): every admin
subcommand takes both options, a bucket that cannot be reached at start-up is one line and
exit 2, an outage later answers ``unavailable`` and the server recovers with nothing lost."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest

from godot_mcp.store.ids import new_id
from tests.support import seaweed
from tests.support.projects import make_project
from tests.support.rawmcp import raw_session
from tests.support.servers import ROOT, run_admin, server_env, start_http

# slow: starts servers on SeaweedFS.
pytestmark = pytest.mark.slow

UNREACHABLE = "s3://nobody/store?endpoint_url=http://127.0.0.1:9&region=us-east-1"


def test_every_admin_subcommand_takes_the_database_and_the_bucket(
    tmp_path, pg_server, s3_server
) -> None:
    both = [
        "--state-dir",
        str(tmp_path / "s"),
        "--database-url",
        pg_server.create_database(),
        "--blob-store",
        s3_server.url(s3_server.create_bucket()),
    ]
    added = run_admin("token", "add", "alice", *both)
    assert added.returncode == 0, added.stderr
    listed = run_admin("token", "list", "--json", *both)
    assert [t["principal"] for t in json.loads(listed.stdout)] == ["alice"], listed.stderr
    for argv in (["status", "--json"], ["reconcile", "--json"], ["evidence", "list", "--json"]):
        done = run_admin(*argv, *both)
        assert done.returncode == 0, (argv, done.stderr)
    assert json.loads(run_admin("status", "--json", *both).stdout)["bytes_in_use"] == 0
    assert run_admin("token", "revoke", "alice", *both).returncode == 0
    unknown = "-" + new_id()[1:]  # an id may begin with a dash: still an id, not an option
    purge = run_admin("evidence", "purge", unknown, *both)
    assert purge.returncode == 1, purge.stderr
    assert purge.stderr == f"godot-mcp-admin: error: no evidence for export {unknown}\n"


def test_a_bucket_that_cannot_be_reached_at_start_up_is_one_line_and_exit_2(
    tmp_path, pg_server
) -> None:
    url = pg_server.create_database()
    state = ["--state-dir", str(tmp_path / "s"), "--database-url", url, "--blob-store", UNREACHABLE]
    done = run_admin("reconcile", *state)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "godot-mcp-admin: error: cannot open the store's blob store: "
        "the blob store cannot be reached\n"
    )
    served = run_serve(tmp_path, *state[2:])
    assert served.returncode == 2, served.stderr
    assert served.stderr == (
        "godot-mcp: error: cannot open the store's blob store: the blob store cannot be reached\n"
    )
    bad = run_admin("status", "--state-dir", str(tmp_path / "s"), "--blob-store", "s3://x")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr


def test_a_bucket_of_another_database_is_refused(tmp_path, pg_server, s3_server) -> None:
    blobs = s3_server.url(s3_server.create_bucket())
    first = ["--database-url", pg_server.create_database(), "--blob-store", blobs]
    assert run_admin("reconcile", "--state-dir", str(tmp_path / "a"), *first).returncode == 0
    other = ["--database-url", pg_server.create_database(), "--blob-store", blobs]
    refused = run_admin("reconcile", "--state-dir", str(tmp_path / "b"), *other)
    assert refused.returncode == 2
    assert refused.stderr == (
        "godot-mcp-admin: error: this bucket prefix belongs to another database: give each "
        "store its own prefix\n"
    )


@pytest.mark.anyio
async def test_a_bucket_outage_answers_unavailable_and_the_server_recovers(
    tmp_path, pg_server
) -> None:
    if seaweed.binary() is None:
        pytest.skip("SKIPPED LOUDLY: SeaweedFS (weed) is not installed")
    s3 = seaweed.start()  # its own: this test kills it
    http = None
    try:
        url = pg_server.create_database()
        both = ["--database-url", url, "--blob-store", s3.url(s3.create_bucket())]
        state = tmp_path / "state"
        token = run_admin("token", "add", "alice", "--state-dir", str(state), *both)
        assert token.returncode == 0, token.stderr
        http = start_http(make_project(tmp_path / "p"), state, *both, tokens={})
        with anyio.fail_after(180):
            async with raw_session(http.url, token.stdout.strip()) as s:
                made = await s.call("test_produce", {"size": 300_000, "seed": 1})
                assert made["outcome"] == "ok", made
                s3.kill()
                down = await s.call("test_produce", {"size": 1000, "seed": 2})
                assert down["outcome"] == "unavailable", down
                assert down["message"] == "the blob store cannot be reached"
                read = await s.request("resources/read", {"uri": made["artifact"]["uri"]})
                assert "error" in read and "result" not in read, read
                s3.restart()
                again = await s.call("test_produce", {"size": 1000, "seed": 2})
                assert again["outcome"] == "ok", again
                back = await s.request("resources/read", {"uri": made["artifact"]["uri"]})
                blob = back["result"]["contents"][0]
                assert blob["_meta"]["sha256"] == made["artifact"]["sha256"]
        assert http.process.poll() is None
        log = http.log_path.read_text(errors="replace")
        assert "Traceback" not in log, log[-3000:]
    finally:
        if http is not None:
            http.stop()
        s3.stop()


def run_serve(tmp_path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``godot-mcp`` over stdio on a fresh project, expected to refuse to start."""
    project = make_project(tmp_path / "served")
    return subprocess.run(
        [sys.executable, "-m", "godot_mcp.cli.serve", "serve", "--project", str(project), *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(),
        cwd=ROOT,
    )
