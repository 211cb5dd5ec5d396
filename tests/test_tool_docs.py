"""The tool reference in docs/tools/ is what tools/make_tool_docs.py writes from the tool
declarations now: a declaration changed without regenerating the pages fails here."""

from __future__ import annotations

import dataclasses
import re

import pytest

from godot_mcp.app import shipped_tools
from tools import make_tool_docs

REGENERATE = "python tools/make_tool_docs.py"


def test_the_committed_pages_are_what_the_declarations_give_now():
    stale = [
        str(path.relative_to(make_tool_docs.ROOT))
        for path, text in make_tool_docs.pages().items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]
    assert stale == [], f"out of date: {', '.join(stale)}; run {REGENERATE}"


def test_every_tool_has_its_section_on_its_groups_page():
    pages = make_tool_docs.pages()
    for tool in shipped_tools():
        page = pages[make_tool_docs.OUT / f"{tool.toolset}.md"]
        assert f"\n## {tool.name.replace('.', '_')}\n" in page
        for arg in tool.args:
            assert f"| `{arg.name}` |" in page
    dotted = [t.name for t in shipped_tools()]
    for page in pages.values():  # tools named as a host lists them, beside each dotted name
        text = "\n".join(line for line in page.splitlines() if "Dotted name:" not in line)
        assert re.search(r"\{[a-z_]+\.[a-z_.]+\}", text) is None
        assert [name for name in dotted if re.search(rf"\b{re.escape(name)}\b", text)] == []


def test_a_changed_declaration_makes_the_check_fail(monkeypatch: pytest.MonkeyPatch, capsys):
    assert make_tool_docs.main(["--check"]) == 0
    changed = [
        dataclasses.replace(t, summary=t.summary + " Changed.") if t.name == "project.api" else t
        for t in shipped_tools()
    ]
    monkeypatch.setattr(make_tool_docs, "shipped_tools", lambda: changed)
    assert make_tool_docs.main(["--check"]) == 1
    assert capsys.readouterr().err == "out of date: docs/tools/api.md\n"
