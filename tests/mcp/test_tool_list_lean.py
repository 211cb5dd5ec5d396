"""The tool list every model reads: lean, free of references to documents the repository does
not hold, and naming each tool as ``tools/list`` spells it, in both name styles."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest
from mcp import types

import godot_mcp
from godot_mcp.app import shipped_tools
from godot_mcp.mcp.spec import NameStyle, wire_name
from tests.runtime.test_fake_engine import fake_server

pytestmark = pytest.mark.anyio
MAX_LIST_BYTES = 32_000  # every tool on, without outputSchema, as compact JSON
PACKAGE = Path(godot_mcp.__file__).parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def listed(tmp_path: Path, names: NameStyle) -> list[types.Tool]:
    with anyio.fail_after(60):
        async with fake_server(tmp_path, names=names) as c:
            return (await c.list_tools()).tools


def compact(tool: types.Tool) -> str:
    dumped = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    dumped.pop("outputSchema", None)
    return json.dumps(dumped, separators=(",", ":"))


@pytest.mark.parametrize("names", ["underscore", "dotted"])
async def test_the_tool_list_is_lean(tmp_path: Path, names: NameStyle) -> None:
    tools = await listed(tmp_path, names)
    assert len(tools) == len(shipped_tools())
    size = sum(len(compact(t).encode()) for t in tools)
    assert size <= MAX_LIST_BYTES, size


@pytest.mark.parametrize("names", ["underscore", "dotted"])
async def test_the_tool_list_names_tools_as_listed(tmp_path: Path, names: NameStyle) -> None:
    """No description or argument doc names a tool in the other style's spelling, and no
    ``{tool}`` reference is left unspelled."""
    tools = await listed(tmp_path, names)
    other: NameStyle = "dotted" if names == "underscore" else "underscore"
    wrong = {wire_name(t.name, other) for t in shipped_tools()}
    wrong -= {wire_name(t.name, names) for t in shipped_tools()}
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, wrong)) + r")(?![\w])")
    for tool in tools:
        text = compact(tool)
        assert not pattern.search(text), (tool.name, pattern.search(text))
        assert not re.search(r"\{[a-z_]+(\.[a-z_]+)+\}", text), tool.name


def test_nothing_under_the_package_refers_to_sections_of_another_document() -> None:
    """ "§n" named sections of a specification the repository does not hold: descriptions,
    messages and modules say it in words or point at docs/."""
    found = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
        for n, line in enumerate(path.read_bytes().splitlines(), 1)
        if "§".encode() in line
    ]
    assert found == []
    for style in ("underscore", "dotted"):
        for tool in shipped_tools():
            assert "§" not in json.dumps(tool.declaration(style).model_dump(mode="json")), tool
