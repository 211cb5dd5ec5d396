"""Which outputs a succeeded export's status lists (pure logic, on top of the real exports)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from godot_mcp.errors import NotFound, Unavailable
from godot_mcp.features.export.service import live_outputs
from godot_mcp.store.values import ArtifactInfo


def _info(name: str) -> ArtifactInfo:
    now = datetime.now(UTC)
    return ArtifactInfo(
        id=name,
        uri=f"godot-mcp://artifacts/{name}",
        media_type="application/octet-stream",
        size=1,
        sha256="0" * 64,
        created_at=now,
        expires_at=now,
        generation=1,
        name=name,
    )


def test_released_outputs_are_left_out_and_any_other_failure_is_said() -> None:
    a, b = _info("a"), _info("b")

    def expired_b(x: ArtifactInfo) -> ArtifactInfo:
        if x is b:
            raise NotFound("artifact not found")
        return x

    assert live_outputs([a, b], expired_b) == [a]

    def unreachable(x: ArtifactInfo) -> ArtifactInfo:
        raise Unavailable("the blob store cannot be reached")

    with pytest.raises(Unavailable):
        live_outputs([a, b], unreachable)
