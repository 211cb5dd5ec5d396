"""Heartbeats of the hosts serving a shared store.

A process id means nothing on another host, so a server judges an export of another host by
that host's heartbeat: every server beats every ``BEAT_S``; a host silent for ``STALE_S``
is gone, and its running exports are marked ``interrupted`` (their evidence, if any, stays
in that host's state dir). Exports of this host are still judged by their process.
"""

from __future__ import annotations

from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from godot_mcp.store.db import rowcount, write_session
from godot_mcp.store.exports import RUNNING_STATES
from godot_mcp.store.models import Export, Host
from godot_mcp.store.store import ArtifactStore

BEAT_S = 10.0
STALE_S = 60.0
GONE_MESSAGE = (
    "the server running it stopped: its host sent no heartbeat for a minute; its evidence, "
    "if any, is on that host"
)


def database_now_us(s: Session, store: ArtifactStore) -> int:
    """The database server's clock: every host's beats are stamped and judged by the same one
    (a host's own clock may be off by more than a heartbeat)."""
    if s.get_bind().dialect.name == "postgresql":
        return int(s.scalar(text(_PG_NOW)) or 0)
    return store.now_us()  # SQLite: one host, one clock


_PG_NOW = "SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint"


def beat(store: ArtifactStore) -> None:
    """Say this host lives."""
    with write_session(store.engine) as s:
        s.merge(Host(id=store.host_id, beat_us=database_now_us(s, store)))


def settle_gone_hosts(store: ArtifactStore, stale_s: float = STALE_S) -> int:
    """Mark ``interrupted`` the running exports of other hosts that stopped beating."""
    with write_session(store.engine) as s:
        now = database_now_us(s, store)
        alive = select(Host.id).where(Host.beat_us > now - int(stale_s * 1_000_000))
        gone = s.execute(
            update(Export)
            .where(
                Export.state.in_(RUNNING_STATES),
                Export.owner_host.is_not(None),
                Export.owner_host != store.host_id,
                Export.owner_host.not_in(alive),
                # Its host had time to beat (exports are stamped by their host's clock).
                Export.created_us < store.now_us() - int(stale_s * 1_000_000),
            )
            .values(state="interrupted", error=GONE_MESSAGE, ended_us=now)
        )
        return rowcount(gone)
