"""project.api with a real engine: its own class reference, dumped once, looked up by a server."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from godot_mcp.features.api import reference as api
from tests.support.engines import Engine
from tests.support.projects import make_project
from tests.support.servers import stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.godot, pytest.mark.slow]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[tuple[Path, Path]]:
    base = tmp_path_factory.mktemp(f"api-{engine.name}")
    yield make_project(base / "project"), base / "state"


async def call(served: tuple[Path, Path], args: dict) -> dict:
    project, state = served
    with anyio.fail_after(180):
        async with stdio_client(project, state) as c:
            r = await c.call_tool("project_api", args)
    return r.structured_content


def dumped(state: Path) -> Path:
    (found,) = [p for p in (state / "api").iterdir() if not p.name.startswith(".")]
    return found


async def test_offset_left_is_controls_on_4_and_unknown_on_3(served, engine):
    answer = await call(served, {"class": "Label", "member": "offset_left"})
    if engine.major == 4:
        assert answer["outcome"] == "ok", answer
        assert answer["member"]["defined_in"] == "Control"
        assert answer["member"]["kind"] == "property"
        assert answer["member"]["signature"] == "offset_left: float = 0.0"
        assert answer["inherits"][:3] == ["Control", "CanvasItem", "Node"]
    else:
        assert answer["outcome"] == "not_found", answer
        assert "margin_left" in answer["close_names"]
        assert "margin_left" in answer["message"]
        assert len(answer["close_names"]) <= 5
    # the dump is the engine's own, one per version; nothing of it is left half-written
    assert not [p for p in (served[1] / "api").iterdir() if p.name.startswith(".partial")]


async def test_margin_left_on_3_and_its_description(served, engine):
    answer = await call(served, {"class": "Label", "member": "margin_left"})
    if engine.major == 3:
        assert answer["outcome"] == "ok", answer
        assert answer["member"]["defined_in"] == "Control"
        # the descriptions come from the reference compiled into the engine
        assert answer["member"]["description"].startswith("Distance between the node's left edge")
    else:
        assert answer["outcome"] == "not_found"
        assert "offset_left" in answer["close_names"]


async def test_character_body_2d_is_a_godot_4_class(served, engine):
    answer = await call(served, {"class": "CharacterBody2D"})
    if engine.major == 4:
        assert answer["outcome"] == "ok", answer
        assert answer["inherits"][0] == "PhysicsBody2D"
        assert "move_and_slide" in answer["members"]["methods"]
        assert "velocity" in answer["members"]["properties"]
        assert answer["truncated"] is False
    else:
        assert answer["outcome"] == "not_found"
        assert "did you mean" in answer["message"]
        assert 1 <= len(answer["close_names"]) <= 5
    kinematic = await call(served, {"class": "KinematicBody2D"})
    assert kinematic["outcome"] == ("ok" if engine.major == 3 else "not_found")


async def test_a_signature_is_as_the_engines_reference_writes_it(served, engine):
    answer = await call(served, {"class": "Label", "member": "add_child"})
    assert answer["outcome"] == "ok", answer
    member = answer["member"]
    assert member["defined_in"] == "Node" and member["kind"] == "method"
    root = ET.parse(dumped(served[1]) / "doc" / "classes" / "Node.xml").getroot()
    (method,) = [m for m in root.iter("method") if m.get("name") == "add_child"]
    params = method.findall("param" if engine.major == 4 else "argument")
    assert params  # Godot 4 writes <param>, Godot 3 <argument>
    written = ", ".join(
        f"{p.get('name')}: {p.get('enum') or p.get('type')}"
        + (f" = {p.get('default')}" if p.get("default") is not None else "")
        for p in params
    )
    assert member["signature"] == f"void add_child({written})"
    assert member["signature"].startswith("void add_child(node: Node, ")
    assert member["description"].startswith("Adds a child node.")


async def test_unknown_names_and_bad_input(served, engine):
    answer = await call(served, {"class": "Lable"})
    assert answer["outcome"] == "not_found"
    assert "Label" in answer["close_names"]
    assert "/" not in answer["message"]
    bad = await call(served, {"class": "../../etc/passwd"})
    assert bad["outcome"] == "invalid_argument"
    long = await call(served, {"class": "Node", "member": "x" * 200})
    assert long["outcome"] == "invalid_argument"


async def test_every_class_of_the_reference_answers_within_the_output_limit(served, engine):
    index = api.ApiIndex(dumped(served[1]))
    biggest = max(index.files, key=lambda n: len(index.get(n).names()["constants"]))
    answer = await call(served, {"class": biggest})
    assert answer["outcome"] == "ok", answer
    assert set(answer["members"]) == set(api.KINDS)
