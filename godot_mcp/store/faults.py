"""Named crash points for the crash-consistency tests.

``checkpoint("name")`` does nothing unless the process was started with
``GODOT_MCP_KILL_AT=name`` (optionally ``name:N`` for the N-th time the point is
passed), in which case the process sends itself SIGKILL right there: a real
``kill -9`` at an exact point of the write path.

A test hook, fenced: read once at import, from a variable no option or configuration file
sets; unset (as in every deployment), a checkpoint is one comparison.
"""

from __future__ import annotations

import os
import signal

_TARGET = os.environ.get("GODOT_MCP_KILL_AT", "")
_NAME, _, _NTH = _TARGET.partition(":")
_COUNTS: dict[str, int] = {}


def checkpoint(name: str) -> None:
    """Die by SIGKILL here when this point is the configured crash point."""
    if not _NAME or name != _NAME:
        return
    seen = _COUNTS.get(name, 0) + 1
    _COUNTS[name] = seen
    if seen >= int(_NTH or "1"):
        os.kill(os.getpid(), signal.SIGKILL)
