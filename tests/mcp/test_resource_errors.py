"""The JSON-RPC error of a refused read (pure mapping, on top of the real-server tests)."""

from __future__ import annotations

from godot_mcp.edge.outcomes import resource_error
from godot_mcp.errors import BlobStoreUnavailable, DatabaseUnavailable, NotFound

URI = "godot-mcp://artifacts/abc"


def test_an_outage_says_unavailable_over_stdio_and_stays_uniform_over_http() -> None:
    for exc in (
        BlobStoreUnavailable("the blob store cannot be reached"),
        DatabaseUnavailable("the store's database cannot be reached: refused"),
    ):
        local = resource_error(URI, exc, http=False)
        assert local.error.data == {"uri": URI, "outcome": "unavailable"}
        assert local.error.message == f"Unavailable: {exc.message}"
        # Over HTTP an outage is answered like any refusal: another caller's artifact (whose
        # bytes a read would look up) and an unknown one stay indistinguishable.
        remote = resource_error(URI, exc, http=True)
        unknown = resource_error(URI, NotFound("artifact not found"), http=True)
        assert (remote.error.message, remote.error.data) == (
            unknown.error.message,
            unknown.error.data,
        )
