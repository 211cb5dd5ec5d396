"""What an answer may tell its caller, and what a caller may make a game do: one policy per
server, chosen from its transport and options, applied at the edge only.

The lower layers always raise the precise error: ``NotYours`` for another caller's artifact,
game session or export, ``OutOfRange`` for a range the contract does not admit, the store's
``Unavailable`` for an outage. Over stdio the one local user hears exactly that. Over HTTP
(the uniform rule) an id another principal may have guessed must answer exactly like an
unknown one, so the policy turns those errors into the unknown id's refusal before any
outcome is built (``mcp/outcomes.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from godot_mcp.errors import GodotMcpError, NotYours, OutOfRange, PermissionDenied, Unavailable
from godot_mcp.store.binding import unknown

WRITES_DISABLED = (
    "runtime writes are disabled on this server (start it with --allow-runtime-writes)"
)


@dataclass(frozen=True)
class Disclosure:
    """``uniform``: another caller's thing, and a refused range of an artifact, answer like
    an unknown id, and a refused resource read names no cause. ``writes``: ``node.set`` and
    ``node.call`` may run (they can make a game do anything)."""

    uniform: bool
    writes: bool

    @classmethod
    def of(cls, transport: str, allow_runtime_writes: bool = False) -> Disclosure:
        """The policy of a server on ``transport``: precise and writable over stdio (the
        user's own machine); uniform over HTTP, writes only with --allow-runtime-writes."""
        http = transport == "http"
        return cls(uniform=http, writes=not http or allow_runtime_writes)

    def require_writes(self) -> None:
        """``Unavailable`` unless tools that make a game or the project change may run."""
        if not self.writes:
            raise Unavailable(WRITES_DISABLED)

    def shown(self, exc: GodotMcpError) -> GodotMcpError:
        """The error a tool answer is built from."""
        if not self.uniform:
            return exc
        if isinstance(exc, NotYours):
            return unknown(exc.what)
        if isinstance(exc, (PermissionDenied, OutOfRange)):
            return unknown("artifact")
        return exc

    def cause(self, exc: GodotMcpError | None) -> GodotMcpError | None:
        """The cause a refused resource read may name: none under the uniform rule (an
        outage too: the bytes a read would look up could be another caller's)."""
        return None if self.uniform else exc
