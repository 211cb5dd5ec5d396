"""The disclosure policy and the refusals built from it (pure mapping, on top of the
real-server tests over stdio and HTTP)."""

from __future__ import annotations

import json

from godot_mcp.errors import (
    BlobStoreUnavailable,
    DatabaseUnavailable,
    GodotMcpError,
    NotFound,
    NotYours,
    OutOfRange,
    echoes_cut,
    quoted,
)
from godot_mcp.mcp.disclosure import Disclosure
from godot_mcp.mcp.outcomes import refusal, resource_error, tool_result
from godot_mcp.store.binding import unknown

URI = "godot-mcp://artifacts/abc"
LOCAL = Disclosure.of("stdio")
REMOTE = Disclosure.of("http")


def _tool(policy: Disclosure, exc: GodotMcpError) -> dict[str, object]:
    body = refusal(policy.shown(exc)).structured_content
    assert body is not None
    return body


def test_an_outage_says_unavailable_over_stdio_and_stays_uniform_over_http() -> None:
    for exc in (
        BlobStoreUnavailable("the blob store cannot be reached"),
        DatabaseUnavailable("the store's database cannot be reached: refused"),
    ):
        local = resource_error(URI, LOCAL.cause(exc))
        assert local.error.data == {"uri": URI, "outcome": "unavailable"}
        assert local.error.message == f"Unavailable: {exc.message}"
        # Over HTTP an outage is answered like any refusal: another caller's artifact (whose
        # bytes a read would look up) and an unknown one stay indistinguishable.
        remote = resource_error(URI, REMOTE.cause(exc))
        unknown_id = resource_error(URI, REMOTE.cause(NotFound("artifact not found")))
        assert (remote.error.message, remote.error.data) == (
            unknown_id.error.message,
            unknown_id.error.data,
        )


def test_another_callers_thing_answers_like_an_unknown_one_over_http_only() -> None:
    for what in ("artifact", "game session", "export"):
        theirs, missing = NotYours(what), unknown(what)
        assert _tool(REMOTE, theirs) == _tool(REMOTE, missing)
        assert _tool(LOCAL, theirs) == {
            "outcome": "permission_denied",
            "message": f"this {what} belongs to another caller",
        }
        assert _tool(LOCAL, missing)["outcome"] == "not_found"
    assert _tool(REMOTE, NotYours("game session"))["message"] == "no such game session"


def test_a_refused_range_is_precise_over_stdio_and_an_unknown_artifact_over_http() -> None:
    exc = OutOfRange("offset past the end", size=10, max_output_bytes=4096)
    assert _tool(LOCAL, exc) == {
        "outcome": "invalid_argument",
        "message": "offset past the end",
        "reason": "out_of_range",
        "size": 10,
        "max_output_bytes": 4096,
    }
    assert _tool(REMOTE, exc) == {"outcome": "not_found", "message": "artifact not found"}
    local = resource_error(URI, LOCAL.cause(exc))
    assert local.error.data == {
        "uri": URI,
        "outcome": "out_of_range",
        "size": 10,
        "max_output_bytes": 4096,
    }
    assert resource_error(URI, REMOTE.cause(exc)).error.data == {
        "uri": URI,
        "outcome": "not_found",
    }


def test_runtime_writes_are_on_locally_and_off_over_http_unless_allowed() -> None:
    assert LOCAL.writes and not REMOTE.writes
    assert Disclosure.of("http", allow_runtime_writes=True).writes
    assert Disclosure.of("stdio", allow_runtime_writes=False).writes


def test_a_message_repeats_at_most_200_characters_of_each_thing_a_caller_sent() -> None:
    long, longer = "Q" * 1000, "R" * 5000
    sent = {"path": "/root/" + long, "values": {longer: 1}, "short": "abc", "n": [long]}
    message = f"no node at /root/{long}; unknown property {longer} (abc)"
    assert echoes_cut(message, sent) == (
        f"no node at /root/{long[:194]}…; unknown property {longer[:200]}… (abc)"
    )
    assert echoes_cut("nothing sent is repeated", sent) == "nothing sent is repeated"
    assert quoted("x" * 200) == "x" * 200 and quoted("x" * 201) == "x" * 200 + "…"


def test_a_number_json_has_none_for_is_answered_as_a_godot_value_says_it() -> None:
    answer = tool_result({"outcome": "ok", "v": [float("nan"), {"k": float("-inf")}, 1.5]})
    body = answer.structured_content
    assert body == {
        "outcome": "ok",
        "v": [{"type": "float", "value": "nan"}, {"k": {"type": "float", "value": "-inf"}}, 1.5],
    }
    assert (
        json.loads(answer.content[0].text, parse_constant=strict) == body
    )  # strict JSON: no NaN in the mirror


def strict(word: str) -> None:
    raise AssertionError(f"{word} is no JSON number")
