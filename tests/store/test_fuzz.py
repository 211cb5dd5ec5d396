from __future__ import annotations

import os
import string
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from godot_mcp.errors import ConfigError, GodotMcpError, NotFound, OutOfRange
from godot_mcp.store.directory import DirectoryObjects
from godot_mcp.store.ids import URI_PREFIX, admit_range, is_valid_id, new_id, parse_uri
from godot_mcp.store.s3 import parse_blob_store_url
from godot_mcp.store.store import ArtifactStore
from godot_mcp.store.values import Caller, NewArtifact
from tests.conftest import Backend
from tests.store.conftest import make_project, stdio_caller

MAX = 512 * 1024


def test_ids_are_url_safe_and_carry_128_random_bits() -> None:
    ids = {new_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(is_valid_id(i) and len(i) == 22 for i in ids)


@given(
    size=st.integers(0, 3 * MAX),
    offset=st.none() | st.integers(0, 4 * MAX),
    length=st.none() | st.integers(0, 2 * MAX),
)
def test_range_rules_admit_exactly_what_the_contract_says(size, offset, length) -> None:
    o = 0 if offset is None else offset
    admitted = (o < size or o == 0 == size) and (
        length is None or (1 <= length <= MAX and o + length <= size)
    )
    try:
        got = admit_range(size, offset, length, MAX)
    except OutOfRange:
        assert not admitted
        return
    assert admitted
    want_len = min(MAX, size - o) if length is None else length
    assert got == (o, want_len)


@given(st.text(max_size=80))
def test_any_text_either_parses_as_a_canonical_uri_or_does_not_resolve(text) -> None:
    for candidate in (text, URI_PREFIX + text):
        try:
            parsed = parse_uri(candidate)
        except NotFound:
            continue
        assert is_valid_id(parsed.artifact_id)
        rebuilt = URI_PREFIX + parsed.artifact_id
        assert candidate.startswith(rebuilt)


@given(st.text(alphabet="0123456789-+ ", max_size=6), st.sampled_from(["offset", "length"]))
def test_only_canonical_decimals_are_accepted(value, key) -> None:
    uri = f"{URI_PREFIX}{'A' * 22}?{key}={value}"
    canonical = value.isdigit() and (value == "0" or not value.startswith("0"))
    try:
        parse_uri(uri)
        assert canonical
    except NotFound:
        assert not canonical


def test_malformed_queries_do_not_resolve() -> None:
    base = URI_PREFIX + "A" * 22
    for bad in (
        "?",
        "?offset=1&offset=2",
        "?foo=1",
        "?offset",
        "#frag",
        "?offset=1#x",
        "?length=01",
        "?offset=%31",
        "?offset=1&",
        "?&offset=1",
        "?offset=-1",
    ):
        try:
            parse_uri(base + bad)
        except NotFound:
            continue
        raise AssertionError(bad)
    assert parse_uri(base + "?length=5&offset=3").offset == 3
    try:
        parse_uri(URI_PREFIX + "A" * 21 + "%41")
        raise AssertionError("percent-encoded id resolved")
    except NotFound:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=100))
def test_blob_paths_never_leave_the_blob_dir(tmp_path_factory, name) -> None:
    root = tmp_path_factory.mktemp("blobs")
    blobs = DirectoryObjects(root / "b", root / "q")
    try:
        path = blobs.path_of(name)
    except NotFound:
        return
    assert Path(os.path.normpath(path)).is_relative_to(root / "b")


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(suffix=st.text(max_size=40), principal=st.sampled_from(["local", "other"]))
def test_reads_of_arbitrary_uris_give_only_typed_outcomes(
    tmp_path, suffix, principal, backend
) -> None:
    store = _shared_store(tmp_path, backend)
    caller = Caller(principal, None, None, store.caller.project_id)
    for uri in (store.uri + suffix, URI_PREFIX + suffix, suffix):
        try:
            r = store.read(caller, uri)
        except GodotMcpError as exc:
            assert exc.outcome in {"not_found", "permission_denied", "out_of_range"}
            continue
        assert r.data == store.data[r.offset : r.offset + r.length]


_STORES: dict[Path, ArtifactStore] = {}


def _shared_store(tmp_path: Path, backend: Backend) -> ArtifactStore:
    store = _STORES.get(tmp_path)
    if store is None:
        store = ArtifactStore(tmp_path / "state", **backend.options)
        caller, gen = stdio_caller(store, make_project(tmp_path / "p"))
        data = os.urandom(700_000)
        info = store.register(caller, gen, NewArtifact("image/png", data))
        store.caller, store.uri, store.data = caller, info.uri, data  # type: ignore[attr-defined]
        _STORES[tmp_path] = store
    return store


def test_forged_cursors_are_refused_as_invalid(tmp_path, backend) -> None:
    import base64
    import json

    from godot_mcp.errors import InvalidArgument

    store = _shared_store(tmp_path, backend)
    for value in ([2**70, "x"], [-1, "A" * 22], [1, "../../etc"], [True, "A" * 22], "nope", []):
        cursor = base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
        try:
            store.list(store.caller, cursor)  # type: ignore[attr-defined]
        except InvalidArgument:
            continue
        raise AssertionError(value)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=60),
        st.builds(
            lambda p, q: f"s3://bucket-1/{p}?{q}", st.text(max_size=30), st.text(max_size=30)
        ),
    )
)
def test_a_blob_store_url_is_refused_or_names_keys_inside_its_prefix(url) -> None:
    try:
        where = parse_blob_store_url(url)
    except ConfigError:
        return
    segments = where.prefix.split("/") if where.prefix else []
    assert all(seg not in ("", ".", "..") for seg in segments), url
    assert set(where.prefix) <= set(string.ascii_letters + string.digits + "._-/"), url
    key = where.key("blobs", "ab" * 32)
    assert key == "/".join([*segments, "blobs", "ab" * 32])
