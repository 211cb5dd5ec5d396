"""A server on a shared database says it lives, and settles the exports of hosts that died."""

from __future__ import annotations

import logging

import anyio

from godot_mcp.store.hosts import BEAT_S, beat, settle_gone_hosts
from godot_mcp.store.store import ArtifactStore

log = logging.getLogger(__name__)


async def keep_beating(store: ArtifactStore, every_s: float = BEAT_S) -> None:
    """Beat every ``every_s`` until cancelled; never raises (an outage is one warning)."""
    failing = False
    while True:
        try:
            await anyio.to_thread.run_sync(beat, store)
            settled = await anyio.to_thread.run_sync(settle_gone_hosts, store)
        except Exception as exc:
            if not failing:
                log.warning("the heartbeat is not stored: %s", exc)
            failing = True
        else:
            if failing:
                log.warning("the heartbeat is stored again")
            failing = False
            if settled:
                log.warning("%d export(s) of a host that stopped were marked interrupted", settled)
        await anyio.sleep(every_s)
