"""The resource contract through real servers, one body for both transports."""

from __future__ import annotations

import base64
import hashlib

import anyio
import pytest
from mcp import MCPError

from tests.mcp.conftest import Connect
from tests.mcp.test_toolsets import CORE, MEMBERS
from tests.support.producer import payload

pytestmark = pytest.mark.anyio
MAX = 512 * 1024
SHIPPED = CORE.union(*MEMBERS.values())  # every tool, each in its toolset


async def produce(client, size: int, seed: int) -> dict:
    r = await client.call_tool("test.produce", {"size": size, "seed": seed})
    assert r.structured_content["outcome"] == "ok", r.structured_content
    return r.structured_content["artifact"]


async def read_range(client, uri: str) -> tuple[bytes, dict]:
    r = await client.read_resource(uri)
    (content,) = r.contents
    assert content.uri == uri
    return base64.b64decode(content.blob), content.meta


async def test_tools_template_and_a_ranged_read_work_over_both_transports(connect: Connect):
    with anyio.fail_after(60):
        async with connect() as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert names == {n.replace(".", "_") for n in SHIPPED | {"test.produce"}}
            (tpl,) = (await c.list_resource_templates()).resource_templates
            assert tpl.uri_template == "godot-mcp://artifacts/{artifact_id}{?offset,length}"
            art = await produce(c, 3 * MAX + 777, seed=11)
            data = payload(3 * MAX + 777, 11)
            assert art["sha256"] == hashlib.sha256(data).hexdigest()
            assert art["mime_type"] == "application/octet-stream" and art["size"] == len(data)
            got, meta = await read_range(c, f"{art['uri']}?offset=1000&length=5000")
            assert got == data[1000:6000]
            assert meta == {
                "offset": 1000,
                "length": 5000,
                "size": len(data),
                "sha256": art["sha256"],
            }
            first, meta = await read_range(c, art["uri"])
            assert first == data[:MAX] and meta["length"] == MAX  # first chunk, said so
            whole = bytearray()
            while len(whole) < len(data):
                chunk, _ = await read_range(c, f"{art['uri']}?offset={len(whole)}")
                whole += chunk
            assert hashlib.sha256(whole).hexdigest() == art["sha256"]
            listed = (await c.list_resources()).resources
            assert art["uri"] in [r.uri for r in listed]
            entry = next(r for r in listed if r.uri == art["uri"])
            assert (entry.mime_type, entry.size) == ("application/octet-stream", len(data))


RANGES_OK = [
    "",
    "?offset=0",
    "?offset=5",
    "?length=1",
    "?offset=99999&length=1",
    "?length=100000",
    "?length=3&offset=7",
]
RANGES_BAD = [
    "?offset=100000",
    "?offset=100001",
    "?length=0",
    f"?length={MAX + 1}",
    "?offset=99999&length=2",
    "?offset=01",
    "?offset=-1",
    "?offset=1&offset=2",
    "?bogus=1",
    "#x",
    "?",
    "?offset=1e3",
]


def refusal_message(transport: str, data: dict) -> str:
    """The JSON-RPC message of a refused read: uniform over HTTP, the cause over stdio."""
    if transport == "http" or data["outcome"] == "not_found":
        return "Resource not found"
    if data["outcome"] == "permission_denied":
        return "Permission denied"
    return f"Range not admitted: size {data['size']}, max_output_bytes {data['max_output_bytes']}"


async def test_same_ranges_give_the_same_bytes_and_the_same_refusals_over_both(mcp_env):
    results: dict[str, list[object]] = {}
    with anyio.fail_after(90):
        for transport in ("stdio", "http"):
            out: list[object] = []
            async with mcp_env.connect(transport) as c:
                art = await produce(c, 100_000, seed=5)
                for q in RANGES_OK:
                    out.append(await read_range(c, art["uri"] + q))
                for q in RANGES_BAD:
                    with pytest.raises(MCPError) as exc:
                        await c.read_resource(art["uri"] + q)
                    assert exc.value.code == -32602
                    assert exc.value.message == refusal_message(transport, exc.value.data)
                    out.append("refused")
            results[transport] = out
    assert results["stdio"] == results["http"]
    data = payload(100_000, 5)
    assert results["stdio"][0][0] == data and results["stdio"][4][0] == data[99999:]


async def test_stdio_refusals_say_why(mcp_env):
    from tests.support.servers import stdio_client

    with anyio.fail_after(60):
        async with stdio_client(mcp_env.project, mcp_env.state_dir) as c:
            art = await produce(c, 1000, seed=1)
            cases = {
                "godot-mcp://artifacts/AAAAAAAAAAAAAAAAAAAAAA": ("not_found", None),
                art["uri"] + "?offset=1000": ("out_of_range", 1000),
                art["uri"] + "?length=0": ("out_of_range", 1000),
                art["uri"] + f"?length={MAX + 1}": ("out_of_range", 1000),
                art["uri"] + "?offset=999&length=2": ("out_of_range", 1000),
                art["uri"] + "?offset=%31": ("not_found", None),
            }
            for uri, (outcome, size) in cases.items():
                with pytest.raises(MCPError) as exc:
                    await c.read_resource(uri)
                assert exc.value.data["outcome"] == outcome, uri
                assert exc.value.data["uri"] == uri
                assert (
                    exc.value.message
                    == {
                        "not_found": "Resource not found",
                        "out_of_range": f"Range not admitted: size 1000, max_output_bytes {MAX}",
                    }[outcome]
                )
                if size is not None:
                    assert exc.value.data["size"] == size
                    assert exc.value.data["max_output_bytes"] == MAX


async def test_a_stdio_client_is_refused_an_artifact_bound_to_an_http_session(mcp_env):
    from tests.support.servers import http_client, stdio_client

    with anyio.fail_after(60):
        async with http_client(mcp_env.http.url, mcp_env.http.tokens["alice"]) as h:
            art = await produce(h, 500, seed=3)
            async with stdio_client(mcp_env.project, mcp_env.state_dir) as s:
                with pytest.raises(MCPError) as exc:
                    await s.read_resource(art["uri"])
                assert exc.value.data == {"uri": art["uri"], "outcome": "permission_denied"}
                assert exc.value.message == "Permission denied"
                r = await s.call_tool("artifacts.read", {"uri": art["uri"]})
                assert r.is_error and r.structured_content["outcome"] == "permission_denied"
                assert art["uri"] not in [x.uri for x in (await s.list_resources()).resources]


async def test_artifacts_read_answers_an_embedded_resource(connect: Connect):
    with anyio.fail_after(60):
        async with connect() as c:
            art = await produce(c, 2000, seed=9)
            uri = art["uri"] + "?offset=10&length=20"
            r = await c.call_tool("artifacts.read", {"uri": uri})
            assert not r.is_error and r.structured_content["outcome"] == "ok"
            embedded = [b for b in r.content if b.type == "resource"]
            assert len(embedded) == 1 and embedded[0].resource.uri == uri
            assert base64.b64decode(embedded[0].resource.blob) == payload(2000, 9)[10:30]
            bad = await c.call_tool("artifacts.read", {"uri": art["uri"] + "?offset=2000"})
            assert bad.is_error
            expect = "not_found" if connect.transport == "http" else "invalid_argument"
            assert bad.structured_content["outcome"] == expect
            missing = await c.call_tool("artifacts.read", {})
            assert missing.structured_content["outcome"] == "invalid_argument"


async def test_a_new_generation_withdraws_older_artifacts(connect: Connect):
    with anyio.fail_after(60):
        async with connect() as c:
            art = await produce(c, 100, seed=2)
            gen = (await c.call_tool("project.info", {})).structured_content["generation"]
            r = await c.call_tool("project.reload", {})
            assert r.structured_content["generation"] == gen + 1
            with pytest.raises(MCPError) as exc:
                await c.read_resource(art["uri"])
            assert exc.value.data["outcome"] == "not_found"
            assert art["uri"] not in [x.uri for x in (await c.list_resources()).resources]


@pytest.mark.slow  # starts a server
async def test_an_edited_project_godot_is_noticed_on_the_next_request(tmp_path):
    from tests.mcp.conftest import make_project
    from tests.support.servers import stdio_client

    project = make_project(tmp_path / "p")
    with anyio.fail_after(60):
        async with stdio_client(project, tmp_path / "state") as c:
            art = await produce(c, 100, seed=12)
            gen = (await c.call_tool("project.info", {})).structured_content["generation"]
            (project / "project.godot").touch()  # same bytes: same generation
            same = (await c.call_tool("project.info", {})).structured_content["generation"]
            assert same == gen
            await read_range(c, art["uri"])
            godot = project / "project.godot"
            godot.write_text(godot.read_text() + "\n[display]\nwindow/size/width=640\n")
            after = (await c.call_tool("project.info", {})).structured_content["generation"]
            assert after == gen + 1
            with pytest.raises(MCPError) as exc:
                await c.read_resource(art["uri"])
            assert exc.value.data["outcome"] == "not_found"


async def test_a_long_uri_is_echoed_cut_to_its_first_200_characters(connect: Connect):
    long_uris = [
        "godot-mcp://artifacts/" + "B" * 100_000,  # an unknown id
        "godot-mcp://artifacts/" + "A" * 22 + "?offset=" + "9" * 100_000,  # no read admits it
    ]
    with anyio.fail_after(60):
        async with connect() as c:
            art = await produce(c, 1000, seed=2)
            for uri in [*long_uris, art["uri"] + "?length=" + "1" * 100_000]:
                with pytest.raises(MCPError) as exc:
                    await c.read_resource(uri)
                assert exc.value.data["uri"] == uri[:200], connect.transport
                assert len(exc.value.message) < 200
