"""A server on a shared database says it lives, and settles the exports of hosts that died."""

from __future__ import annotations

import logging
import time

import anyio

from godot_mcp.runtime.context import Runtime
from godot_mcp.store.hosts import BEAT_S, STALE_S, beat, settle_gone_hosts

log = logging.getLogger(__name__)


async def keep_beating(rt: Runtime, every_s: float = BEAT_S) -> None:
    """Beat every ``every_s`` until cancelled; never raises (an outage is one warning).

    Other hosts are judged only once this one has beaten without a miss for longer than a
    host may stay silent: after an outage of the database, every host missed its beats, and
    the first one back must not take the others for dead.
    """
    failing = False
    healthy_since = time.monotonic()
    last_wall = time.time()
    while True:
        if time.time() - last_wall > 2 * every_s + 5:  # suspended, or the clock stepped
            healthy_since = time.monotonic()
        last_wall = time.time()
        try:
            await rt.blocking(beat, rt.store)
            settled = 0
            if time.monotonic() - healthy_since > STALE_S + every_s:
                settled = await rt.blocking(settle_gone_hosts, rt.store)
        except Exception as exc:
            if not failing:
                log.warning("the heartbeat is not stored: %s", exc)
            failing = True
            healthy_since = time.monotonic()
        else:
            if failing:
                log.warning("the heartbeat is stored again")
            failing = False
            if settled:
                log.warning("%d export(s) of a host that stopped were marked interrupted", settled)
        await anyio.sleep(every_s)
