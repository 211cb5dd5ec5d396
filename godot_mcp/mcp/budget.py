"""What one tool answer may take as sent: one budget, measured the way the SDK sends it.

No tool answer is larger than ``max_output_bytes`` as sent, the whole JSON-RPC message:
``structuredContent``, its JSON text mirror (escaped a second time inside a string), image
blocks and the envelope. :class:`Budget` is the only place that knows it:

* :meth:`Budget.wire_size` is the message exactly as sent: the ``CallToolResult`` dumped as the
  SDK does (``model_dump(by_alias, mode="json", exclude_none)`` wrapped in a
  ``JSONRPCResponse`` with the request's own id, ``model_dump_json(by_alias, exclude_unset)``),
  with what the SDK stamps on a result of a 2026-era protocol version (``resultType`` and the
  ``serverInfo`` ``_meta``; :class:`Framing`) and what the transport writes around it: stdio's
  newline, or the SSE event's ``event: message`` and ``data:`` lines and blank line (the HTTP
  server keeps no event store, so its events carry no ``id:`` line).
* Lists shrink first (:meth:`Budget.fit_list`, :meth:`Budget.taker`): each item is costed once
  (its JSON, plus that JSON escaped again for the mirror), the answer is built once, measured
  exactly, and stepped down when the estimate was short.
* A preview image is made to fit :meth:`Budget.image_bytes` (the runtime gets that number).
* Whatever is still too large goes down the ladder of :meth:`Budget.bounded`: drop the image
  (``preview: null``), then replace the largest values the tool's ``outputSchema`` lets stand
  for anything with ``{"type": "truncated", "bytes": N}``, and only then answer ``too_large``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from jsonschema import Draft202012Validator
from mcp import types
from mcp_types import SERVER_INFO_META_KEY
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from godot_mcp.mcp.outcomes import tool_result
from godot_mcp.mcp.spec import REFUSAL_SCHEMA

if TYPE_CHECKING:
    pass

T = TypeVar("T")
STDIO_FRAMING = len(b"\n")  # a message is one line
SSE_FRAMING = len(b"event: message\r\ndata: ") + len(b"\r\n\r\n")  # one event, no id line
CAPTURE_REST = 2048
"""Bytes of a capture's answer besides its image's base64: envelope, artifact, link, mirror."""
ASSUMED_ID = "x" * 64  # a request id as long as a client's would be, for budgets made ahead
MAX_MARKS = 64  # truncation markers tried before an answer is too_large
MAX_SPOTS = 5000  # places looked at for a marker: deeper or further ones are left whole
MAX_DEPTH = 12
_SEP = (",", ":")


def cost(value: Any) -> int:
    """Bytes ``value`` adds to an answer: its JSON in ``structuredContent``, that JSON again
    escaped inside the text mirror, and a separator in each."""
    text = json.dumps(value, ensure_ascii=False, separators=_SEP)
    mirrored = json.dumps(text, ensure_ascii=False)  # with its quotes: the two separators
    return len(text.encode("utf-8")) + len(mirrored.encode("utf-8"))


def fit_text(text: str, room: int, keep: str = "start") -> str:
    """The longest part of ``text`` (its ``keep`` end: start or end) whose :func:`cost` is
    at most ``room``; a binary search on estimates."""
    if cost(text) <= room:
        return text
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        part = text[:mid] if keep == "start" else text[len(text) - mid :]
        if cost(part) <= room:
            low = mid
        else:
            high = mid - 1
    return text[:low] if keep == "start" else text[len(text) - low :]


def marker(size: int) -> dict[str, Any]:
    """What stands for a value left out of an answer: ``size`` bytes of its JSON."""
    return {"type": "truncated", "bytes": size}


@dataclass(frozen=True)
class Framing:
    """How one request's result goes out: shaped by the SDK for the connection's protocol
    ``version`` (the fields that version does not know dropped, ``resultType`` among them
    before 2026; on a 2026-era version the ``serverInfo`` stamp added), then framed by the
    ``transport`` (its bytes around the message). :meth:`widest` is for budgets made before
    a request is known (a capture's preview)."""

    transport: int = STDIO_FRAMING
    version: str | None = None  # None: the result as dumped, nothing dropped or stamped
    server_info: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, transport: str, version: str, server_info: Mapping[str, Any]) -> Framing:
        return cls(SSE_FRAMING if transport == "http" else STDIO_FRAMING, version, server_info)

    @classmethod
    def widest(cls, server_info: Mapping[str, Any]) -> Framing:
        return cls.of("http", MODERN_PROTOCOL_VERSIONS[-1], server_info)

    @cached_property
    def shaping(self) -> int:
        """Bytes the SDK's shaping adds to a result (less what it drops), measured once on a
        probe: what it changes are top-level keys of its own (``resultType``, the
        ``serverInfo`` stamp), the same for every answer of the connection."""
        probe = types.CallToolResult(
            content=[types.TextContent(type="text", text="{}")], structured_content={}
        ).model_dump(by_alias=True, mode="json", exclude_none=True)
        return json_size(self.shaped(dict(probe))) - json_size(probe)

    def shaped(self, dumped: dict[str, Any]) -> dict[str, Any]:
        """``dumped`` as the SDK sends it on this connection (``mcp`` server runner's
        ``_serialize``; no cache hint is set for ``tools/call``)."""
        if self.version is None:
            return dumped
        try:
            dumped = serialize_server_result("tools/call", self.version, dumped)
        except (ValueError, KeyError, ValidationError):
            return dumped  # the SDK refuses it too; measured as dumped
        if self.version in MODERN_PROTOCOL_VERSIONS:
            dumped.setdefault("resultType", "complete")
            meta = dumped.get("_meta") or {}
            dumped["_meta"] = {**meta, SERVER_INFO_META_KEY: dict(self.server_info)}
        return dumped


class Budget:
    """The bytes one tool answer may take as sent, for one request."""

    def __init__(
        self, limit: int, request_id: str | int | None = None, framing: Framing | None = None
    ) -> None:
        self.limit = limit
        self.request_id: str | int = ASSUMED_ID if request_id is None else request_id
        self.framing = framing or Framing()
        self.room = limit  # what the message may take as sent

    # -- measuring -----------------------------------------------------------------------

    def wire_size(self, result: types.CallToolResult) -> int:
        """The exact bytes of ``result`` as sent: the message the SDK writes, its shaping for
        the protocol version and the transport's framing included."""
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        message = types.JSONRPCResponse(jsonrpc="2.0", id=self.request_id, result=dumped)
        body = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        return len(body) + self.framing.shaping + self.framing.transport

    def fits(self, result: types.CallToolResult) -> bool:
        return self.wire_size(result) <= self.room

    def image_bytes(self) -> int:
        """The most a capture's preview PNG may take: it rides as base64 in an image block."""
        return max(0, (self.room - CAPTURE_REST) * 3 // 4)

    # -- lists ---------------------------------------------------------------------------

    def taker(self, base: types.CallToolResult) -> Callable[[Any], bool]:
        """A predicate for items read one by one: True while one more still fits beside
        ``base`` (the answer with no items, every other field at its largest), on estimates;
        the first item is always taken (:meth:`fit_list` shrinks it or steps down)."""
        left = self.room - self.wire_size(base)
        taken = 0

        def take(item: Any) -> bool:
            nonlocal left, taken
            left -= cost(item)
            taken += 1
            return taken == 1 or left >= 0

        return take

    def fit_list(
        self,
        items: Sequence[T],
        build: Callable[[Sequence[T]], types.CallToolResult],
        shrink: Callable[[T, int], T | None] | None = None,
    ) -> tuple[types.CallToolResult, int]:
        """The answer ``build`` makes of as many leading ``items`` as fit, and how many.

        Costs each item once, builds the answer once and measures it exactly; when the
        estimate was short it steps down (each step drops the overshoot's worth of items at
        their measured average cost).
        ``shrink(item, bytes)``, when given, makes a first item that does not fit alone a
        smaller one of at most that cost (or None): a reader always gets somewhere.
        """
        empty = self.wire_size(build(items[:0]))
        left, n = self.room - empty, 0
        for item in items:
            c = cost(item)
            if c > left:
                break
            left, n = left - c, n + 1
        if n == 0 and items and shrink is not None and left > 0:
            smaller = shrink(items[0], left)
            if smaller is not None:
                answer = build([smaller])
                if self.fits(answer):
                    return answer, 1
        answer = build(items[:n])
        size = self.wire_size(answer)
        while size > self.room and n > 0:  # the estimate was short: step down
            per = max(1.0, (size - empty) / n)  # what an item measured on average
            n = max(0, n - max(1, math.ceil((size - self.room) / per)))
            answer = build(items[:n])
            size = self.wire_size(answer)
        return answer, n

    # -- the net under every answer ---------------------------------------------------------

    def bounded(
        self, result: types.CallToolResult, schema: Mapping[str, Any] | None = None
    ) -> types.CallToolResult:
        """``result`` if it fits; else the ladder: without its image (``preview: null``),
        then with its largest values that ``schema`` (the ``ok`` shape; a refusal's details
        may be anything) lets be anything replaced by :func:`marker`, and only then
        ``too_large``."""
        size = self.wire_size(result)
        if size <= self.room:
            return result
        first = size
        body = dict(result.structured_content or {})
        blocks: list[types.ContentBlock] = [
            b for b in result.content[1:] if not isinstance(b, types.ImageContent)
        ]
        if len(blocks) < len(result.content) - 1:
            if "preview" in body:
                body["preview"] = None
            result = tool_result(body, blocks)
            size = self.wire_size(result)
            if size <= self.room:
                return result
        shape = schema if body.get("outcome") == "ok" else REFUSAL_SCHEMA  # details: anything
        if shape is not None:
            marked = self._marked(body, blocks, shape, size)
            if marked is not None:
                return marked
        return tool_result(
            {
                "outcome": "too_large",
                "message": f"the answer would be {first} bytes as sent, over max_output_bytes "
                f"({self.limit} bytes as sent); ask for less",
            }
        )

    def _marked(
        self,
        body: dict[str, Any],
        blocks: list[types.ContentBlock],
        schema: Mapping[str, Any],
        size: int,
    ) -> types.CallToolResult | None:
        for _ in range(MAX_MARKS):
            over = size - self.room
            spots = [s for s in _spots(body, schema) if s[1] > json_size(marker(s[1]))]
            if not spots:
                return None
            # The smallest value whose marker alone brings the answer down, else the largest.
            enough = [s for s in spots if 2 * (s[1] - json_size(marker(s[1]))) >= over]
            path, was = min(enough, key=_size) if enough else max(spots, key=_size)
            body = _replaced(body, path, marker(was))
            result = tool_result(body, blocks)
            size = self.wire_size(result)
            if size <= self.room:
                return result
        return None


# -- where a marker may stand -------------------------------------------------------------

Path = tuple[str | int, ...]
_VALIDATORS: dict[str, Draft202012Validator] = {}


def _size(spot: tuple[Path, int]) -> int:
    return spot[1]


def json_size(value: Any) -> int:
    """Bytes of ``value``'s compact JSON, as an answer holds it."""
    return len(json.dumps(value, ensure_ascii=False, separators=_SEP).encode("utf-8"))


def _valid(schema: Mapping[str, Any], value: Any) -> bool:
    key = json.dumps(schema, sort_keys=True)
    validator = _VALIDATORS.get(key)
    if validator is None:
        validator = _VALIDATORS[key] = Draft202012Validator(dict(schema))
    return bool(validator.is_valid(value))


def _branch(schema: Mapping[str, Any], value: Any) -> Mapping[str, Any]:
    """The branch of an ``anyOf``/``oneOf`` that ``value`` is an instance of (else ``schema``)."""
    for key in ("oneOf", "anyOf"):
        for sub in schema.get(key, ()):
            if _valid(sub, value):
                return _branch(sub, value)
    return schema


def _spots(body: dict[str, Any], schema: Mapping[str, Any]) -> list[tuple[Path, int]]:
    """Places in ``body`` whose schema admits a marker, with their JSON sizes; the
    answer's ``outcome`` is never one."""
    out: list[tuple[Path, int]] = []
    todo: list[tuple[Any, Mapping[str, Any], Path]] = [
        (v, schema.get("properties", {}).get(k, {}), (k,))
        for k, v in body.items()
        if k != "outcome"
    ]
    seen = 0
    while todo and seen < MAX_SPOTS:
        value, sub, path = todo.pop()
        seen += 1
        if not _is_marker(value) and _valid(sub, marker(1)):
            out.append((path, json_size(value)))
        if len(path) >= MAX_DEPTH:
            continue
        shape = _branch(sub, value)
        if isinstance(value, dict):
            props = shape.get("properties", {})
            extra = shape.get("additionalProperties", {})
            for key, child in value.items():
                todo.append(
                    (child, props.get(key, extra if isinstance(extra, dict) else {}), (*path, key))
                )
        elif isinstance(value, list):
            items = shape.get("items", {})
            for i, child in enumerate(value):
                todo.append((child, items if isinstance(items, dict) else {}, (*path, i)))
    return out


def _is_marker(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") == "truncated"
        and set(value)
        == {
            "type",
            "bytes",
        }
    )


def _replaced(value: Any, path: Path, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in value.items()}
    return [(_replaced(v, rest, new) if i == head else v) for i, v in enumerate(value)]
