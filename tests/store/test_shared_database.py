"""The command line on a shared PostgreSQL database: one store seen from two state dirs."""

from __future__ import annotations

import json

from tests.support.servers import run_admin


def test_a_token_added_on_one_host_is_listed_on_another(tmp_path, pg_server) -> None:
    url = pg_server.create_database()
    added = run_admin(
        "token", "add", "alice", "--state-dir", str(tmp_path / "a"), "--database-url", url
    )
    assert added.returncode == 0, added.stderr
    listed = run_admin(
        "token", "list", "--json", "--state-dir", str(tmp_path / "b"), "--database-url", url
    )
    assert listed.returncode == 0, listed.stderr
    assert [t["principal"] for t in json.loads(listed.stdout)] == ["alice"]
    assert not (tmp_path / "a" / "store.db").exists()  # nothing of it in SQLite


def test_an_unreachable_database_is_one_line_and_exit_2(tmp_path) -> None:
    url = "postgresql+psycopg://postgres@127.0.0.1:1/nothing"
    done = run_admin("token", "list", "--state-dir", str(tmp_path / "s"), "--database-url", url)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "godot-mcp-admin: error: cannot open the store's database: "
    ), done.stderr


def test_a_database_url_of_another_kind_is_refused(tmp_path) -> None:
    done = run_admin(
        "reconcile", "--state-dir", str(tmp_path / "s"), "--database-url", "mysql://x/y"
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "godot-mcp-admin: error: the database must be SQLite or PostgreSQL, not 'mysql'"
    )
