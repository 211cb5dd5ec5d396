"""Opaque artifact identifiers, artifact URIs and the byte-range rules.

An id is 128 random bits from ``secrets`` in URL-safe base64 (22 characters):
never derived from content, time or paths. A URI that is not exactly
``godot-mcp://artifacts/ID[?offset=O][&length=L]`` (either order, each at most
once, canonical decimal) does not resolve.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from godot_mcp.errors import NotFound, OutOfRange

URI_PREFIX = "godot-mcp://artifacts/"
URI_TEMPLATE = URI_PREFIX + "{artifact_id}{?offset,length}"

_ID_RE = re.compile(r"[A-Za-z0-9_-]{22}")
_DECIMAL_RE = re.compile(r"0|[1-9][0-9]*")
_MAX_DIGITS = 24
_HUGE = 1 << 80


def new_id() -> str:
    """A fresh opaque identifier: 128 random bits, URL-safe, 22 characters."""
    return secrets.token_urlsafe(16)


def is_valid_id(value: str) -> bool:
    """True when ``value`` has the shape of an artifact id."""
    return _ID_RE.fullmatch(value) is not None


def artifact_uri(artifact_id: str) -> str:
    """The URI of an artifact, without a range."""
    return URI_PREFIX + artifact_id


@dataclass(frozen=True)
class ParsedUri:
    """An artifact URI taken apart: the id and the optional range."""

    artifact_id: str
    offset: int | None
    length: int | None


def _decimal(text: str) -> int:
    if _DECIMAL_RE.fullmatch(text) is None:
        raise ValueError(text)
    if len(text) > _MAX_DIGITS:
        return _HUGE  # well-formed but far beyond any size: refused as a range later
    return int(text)


def parse_uri(uri: object) -> ParsedUri:
    """Parse an artifact URI or raise :class:`NotFound` (it does not resolve)."""
    if not isinstance(uri, str) or not uri.startswith(URI_PREFIX) or "#" in uri:
        raise NotFound("artifact not found")
    rest = uri[len(URI_PREFIX) :]
    artifact_id, sep, query = rest.partition("?")
    if not is_valid_id(artifact_id) or (sep and not query):
        raise NotFound("artifact not found")
    params: dict[str, int] = {}
    if query:
        for part in query.split("&"):
            key, eq, value = part.partition("=")
            if not eq or key not in ("offset", "length") or key in params:
                raise NotFound("artifact not found")
            try:
                params[key] = _decimal(value)
            except ValueError:
                raise NotFound("artifact not found") from None
    return ParsedUri(artifact_id, params.get("offset"), params.get("length"))


def admit_range(
    size: int, offset: int | None, length: int | None, max_output_bytes: int
) -> tuple[int, int]:
    """Apply the contract's range rules; return ``(offset, length)`` or raise OutOfRange."""
    o = 0 if offset is None else offset
    if not (o < size or o == 0 == size):
        raise OutOfRange(
            "offset is past the end of the artifact", size=size, max_output_bytes=max_output_bytes
        )
    if length is None:
        return o, min(max_output_bytes, size - o)
    if not 1 <= length <= max_output_bytes:
        raise OutOfRange(
            f"length must be between 1 and {max_output_bytes}",
            size=size,
            max_output_bytes=max_output_bytes,
        )
    if o + length > size:
        raise OutOfRange(
            "range ends past the end of the artifact", size=size, max_output_bytes=max_output_bytes
        )
    return o, length
