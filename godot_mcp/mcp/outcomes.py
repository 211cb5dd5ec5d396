"""The one edge where typed failures become MCP answers.

Tools answer ``structuredContent`` with ``outcome`` first, ``isError`` for every
outcome but ``ok``, a one-line ``message``, and a text block mirroring it.
Resource reads raise JSON-RPC errors instead (``resource_error``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from mcp import MCPError, types

from godot_mcp.errors import MAX_QUOTED, GodotMcpError, OutOfRange

MAX_MESSAGE = 2000


def non_finite(value: float) -> dict[str, str]:
    """A float JSON has no number for, as a Godot value says it."""
    return {"type": "float", "value": "nan" if math.isnan(value) else f"{value}"}


TOOL_OUTCOMES = (
    "ok",
    "invalid_argument",
    "not_found",
    "permission_denied",
    "unavailable",
    "too_large",
    "failed",
    "timeout",
)


def clean(value: Any) -> Any:
    """``value`` as JSON can carry it: every string valid UTF-8 (a file name's undecodable
    bytes as ``\\xNN``), every non-finite float as a Godot value says it
    (``{"type": "float", "value": "nan" | "inf" | "-inf"}``).

    Names from the filesystem may hold lone surrogates, which no JSON encoder will send; one
    such name must not make the answer unsendable (over stdio that ended the server). A
    non-finite float is no JSON number: sent as ``NaN`` it breaks a client's parser, and as
    ``null`` it fails the answer's schema.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return non_finite(value)
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def tool_result(
    structured: dict[str, Any], extra: list[types.ContentBlock] | None = None
) -> types.CallToolResult:
    """A tool answer: structured content, a text mirror, then any extra blocks."""
    body = {"outcome": structured.get("outcome", "ok"), **structured}
    try:  # both are rare: walk the answer only when its text cannot be sent
        mirror = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        mirror.encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        body = clean(body)
        mirror = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    text = types.TextContent(text=mirror)
    return types.CallToolResult(
        content=[text, *(extra or [])],
        structured_content=body,
        is_error=body["outcome"] != "ok",
    )


def ok(extra: list[types.ContentBlock] | None = None, **fields: Any) -> types.CallToolResult:
    """An ``ok`` tool answer."""
    return tool_result({"outcome": "ok", **fields}, extra)


def refusal(exc: GodotMcpError, **fields: Any) -> types.CallToolResult:
    """A failed tool answer from a typed error, as the disclosure policy shows it
    (``Disclosure.shown``). A range refusal (not a tool outcome of its own) is
    ``invalid_argument`` with ``reason = out_of_range``.
    """
    outcome = exc.outcome
    message = " ".join(exc.message.splitlines())
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    detail: dict[str, Any] = {}
    if outcome == "out_of_range":
        assert isinstance(exc, OutOfRange)
        outcome = "invalid_argument"
        detail = {
            "reason": "out_of_range",
            "size": exc.size,
            "max_output_bytes": exc.max_output_bytes,
        }
    if outcome not in TOOL_OUTCOMES:
        outcome = "failed"
    return tool_result({"outcome": outcome, "message": message, **exc.details, **detail, **fields})


def resource_error(uri: str, exc: GodotMcpError | None) -> MCPError:
    """The JSON-RPC error of a refused resource read, from the cause the disclosure policy
    lets it name (``Disclosure.cause``).

    With no cause (over HTTP, or an internal fault) it is the same for every refusal; with
    one the message and ``data.outcome`` say why, so a person reading a client's log can
    tell an expired artifact from a bad range.
    """
    data: dict[str, Any] = {"uri": uri[:MAX_QUOTED], "outcome": "not_found"}
    message = "Resource not found"
    if exc is not None:
        if exc.outcome == "permission_denied":
            data["outcome"], message = "permission_denied", "Permission denied"
        elif exc.outcome == "unavailable":  # the store's database or bucket: try again later
            data["outcome"], message = "unavailable", f"Unavailable: {exc.message}"
        elif isinstance(exc, OutOfRange):
            data.update(
                outcome="out_of_range", size=exc.size, max_output_bytes=exc.max_output_bytes
            )
            message = (
                f"Range not admitted: size {exc.size}, max_output_bytes {exc.max_output_bytes}"
            )
    return MCPError(code=types.INVALID_PARAMS, message=message, data=data)


def list_error(exc: GodotMcpError) -> MCPError:
    """The JSON-RPC error of a ``resources/list`` the store could not answer (its database or
    bucket unreachable): ``data.outcome`` says so, never an empty list. Nothing in it is the
    caller's or anyone's data, so it is the same over stdio and HTTP."""
    outcome = exc.outcome if exc.outcome in ("unavailable", "timeout") else "failed"
    message = exc.message if outcome != "failed" else "the artifacts could not be listed"
    return MCPError(
        code=types.INTERNAL_ERROR,
        message=f"{outcome.capitalize()}: {message}",
        data={"outcome": outcome},
    )
