"""How artifacts are described to clients (never with a location)."""

from __future__ import annotations

from typing import Any

from mcp import types

from godot_mcp.store.values import ArtifactInfo

_EXT = {
    "image/png": "png",
    "image/apng": "png",
    "application/octet-stream": "bin",
    "text/plain; charset=utf-8": "txt",
    "application/xml": "xml",
}
_KIND = {
    "image/png": "screenshot",
    "image/apng": "recording",
    "text/plain; charset=utf-8": "log",
    "application/xml": "report",
}


def display_name(info: ArtifactInfo) -> str:
    """The artifact's name: the export file name, else a name from its kind and id."""
    if info.name:
        return info.name
    kind = _KIND.get(info.media_type, "artifact")
    return f"{kind}-{info.id[:8]}.{_EXT.get(info.media_type, 'bin')}"


def artifact_dict(info: ArtifactInfo) -> dict[str, Any]:
    """The ``artifact`` object of tool answers."""
    out: dict[str, Any] = {
        "uri": info.uri,
        "mime_type": info.media_type,
        "size": info.size,
        "sha256": info.sha256,
        "expires_at": info.expires_at.isoformat().replace("+00:00", "Z"),
    }
    if info.name is not None:
        out["name"] = info.name
    if info.frames is not None:
        out.update(frames=info.frames, width=info.width, height=info.height)
    return out


def resource_link(info: ArtifactInfo) -> types.ResourceLink:
    """A ``resource_link`` content block for an artifact."""
    return types.ResourceLink(
        uri=info.uri, name=display_name(info), mime_type=info.media_type, size=info.size
    )


def resource_entry(info: ArtifactInfo) -> types.Resource:
    """A ``resources/list`` entry."""
    return types.Resource(
        uri=info.uri, name=display_name(info), mime_type=info.media_type, size=info.size
    )
