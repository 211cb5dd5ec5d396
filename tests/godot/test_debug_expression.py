"""Expressions as scripts write them (``features/debug/expression.py``): node shorthands
rewritten as ``get_node`` calls for the engine's ``Expression``, never inside a string and
never the modulo operator, shorthands the grammar cannot read refused with their place, and
what to write instead for the failures whose cause the engine's words show."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from godot_mcp.errors import InvalidArgument
from godot_mcp.features.debug.expression import (
    SELF_PROBE,
    explain,
    failed_node_call,
    outside_node,
    rewrite,
)


@pytest.mark.parametrize(
    ("written", "sent"),
    [
        ("$Jump.get_class()", 'get_node("Jump").get_class()'),
        ('$"Jump".name', 'get_node("Jump").name'),
        ("$'Jump'.name", 'get_node("Jump").name'),
        ("%Unique.name", 'get_node("%Unique").name'),
        ('%"Unique".name', 'get_node("%Unique").name'),
        ("%'Unique'", 'get_node("%Unique")'),
        ("$Jump/Deep/Deeper", 'get_node("Jump/Deep/Deeper")'),
        ("$/root/Main", 'get_node("/root/Main")'),
        ("$../Sibling", 'get_node("../Sibling")'),
        ("$Jump/..", 'get_node("Jump/..")'),
        ("$%Unique/Child", 'get_node("%Unique/Child")'),
        ("$Jump/%Unique", 'get_node("Jump/%Unique")'),
        ("%Unique/Child/%Other", 'get_node("%Unique/Child/%Other")'),
        ('$"My Node/Child Two".name', 'get_node("My Node/Child Two").name'),
        ('$Jump/"with space"/End', 'get_node("Jump/with space/End")'),
        ("$ Jump / Deep", 'get_node("Jump/Deep")'),  # GDScript allows spaces between
        ('$"say \\"hi\\""', 'get_node("say \\"hi\\"")'),
        ("$'it\\'s'", 'get_node("it\'s")'),
        ('$"back\\\\slash"', 'get_node("back\\\\slash")'),
        ('$"\\u00e9t\\u00E9"', 'get_node("été")'),
        ("$Jümp", 'get_node("Jümp")'),
        ("$class", 'get_node("class")'),  # keywords are names in a path
        ('$""', 'get_node("")'),
        ("[$A, %B, ($C)]", '[get_node("A"), get_node("%B"), (get_node("C"))]'),
        ("not %Flag.visible", 'not get_node("%Flag").visible'),
        ("1 + %Count.value", '1 + get_node("%Count").value'),
        ("-%Count.value", '-get_node("%Count").value'),
        ("x in %List.items", 'x in get_node("%List").items'),
        ('$A.get_node("B")', 'get_node("A").get_node("B")'),
    ],
)
def test_a_node_shorthand_is_sent_as_get_node_on_self(written: str, sent: str) -> None:
    assert rewrite(written).text == sent


@pytest.mark.parametrize(
    "text",
    [
        '"$Jump %Unique"',
        "'$Jump' + '%s'",
        '"a \\"$b\\" %c" + \'\\\'$d\'',
        '"%d apples" % count',
        "speed % 3",
        "speed %3",
        "(a + b) % c",
        "items[0] % 2",
        "1.5 % 1",
        "0x1F % 3",
        "{'a': 1}.a % 2",
        "self % 2",
        '"unterminated $Jump',
        "",
        "   ",
    ],
)
def test_strings_and_the_modulo_operator_are_left_as_written(text: str) -> None:
    assert rewrite(text).text == text


def test_a_modulo_after_a_node_shorthand_value_stays_one() -> None:
    assert rewrite("$A.count % 2").text == 'get_node("A").count % 2'
    assert rewrite("(%A) % 2").text == '(get_node("%A")) % 2'
    assert rewrite('$A.n % 2 + "$B"').text == 'get_node("A").n % 2 + "$B"'


@given(st.text(alphabet=st.characters(blacklist_characters="$%"), max_size=200))
def test_an_expression_without_shorthands_is_sent_unchanged(text: str) -> None:
    assert rewrite(text).text == text


@given(st.text(max_size=60))
def test_a_string_literal_is_never_changed(body: str) -> None:
    literal = '"' + body.replace("\\", "\\\\").replace('"', '\\"') + '"'
    assert rewrite(f"{literal} + $Jump.name").text == f'{literal} + get_node("Jump").name'
    assert rewrite(f"str(%U) + {literal}").text == f'str(get_node("%U")) + {literal}'


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_a_quoted_path_reaches_the_engine_as_the_same_text(name: str) -> None:
    """Whatever a quoted path holds, the engine reads back exactly it."""
    literal = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    sent = rewrite(f"${literal}").text
    assert sent.startswith('get_node("') and sent.endswith('")')
    inner = sent[len("get_node(") : -1]
    decoded = rewrite(f"${inner}").text  # the same literal read back again: unchanged
    assert decoded == sent


@pytest.mark.parametrize(
    ("written", "message"),
    [
        (
            "$",
            "expression: a node name is needed after '$', not the end "
            '($Name, $Name/Child or $"Name") (at its end)',
        ),
        (
            "$ ",
            "expression: a node name is needed after '$', not the end "
            '($Name, $Name/Child or $"Name") (at its end)',
        ),
        (
            "1 + $",
            "expression: a node name is needed after '$', not the end "
            '($Name, $Name/Child or $"Name") (at its end)',
        ),
        (
            "%",
            "expression: a node name is needed after '%', not the end "
            '(%Name or %"Name") (at its end)',
        ),
        (
            "$Jump/",
            "expression: a node name is needed after '/', not the end "
            '($Name, $Name/Child or $"Name") (at its end)',
        ),
        (
            "$1abc",
            "expression: a node name is needed after '$', not '1' "
            '($Name, $Name/Child or $"Name") (at character 2)',
        ),
        (
            "$.name",
            "expression: a node name is needed after '$', not '.' "
            '($Name, $Name/Child or $"Name") (at character 2)',
        ),
        (
            "$Jump/...x",
            "expression: a node name is needed after '/', not '.' "
            '($Name, $Name/Child or $"Name") (at character 7)',
        ),
        (
            "% 2",
            "expression: a node name is needed after '%', not '2' "
            '(%Name or %"Name") (at character 3)',
        ),
        (
            "(%)",
            "expression: a node name is needed after '%', not ')' "
            '(%Name or %"Name") (at character 3)',
        ),
        (
            "%%A",
            "expression: a node name is needed after '%', not '%' "
            '(%Name or %"Name") (at character 2)',
        ),
        (
            "$A/%/B",
            "expression: a node name is needed after '%', not '/' "
            '($Name, $Name/Child or $"Name") (at character 5)',
        ),
        (
            "$A%B",
            "expression: '%' right after a node path (it may only start a name) (at character 3)",
        ),
        (
            "$A % 2",
            "expression: '%' right after a node path (it may only start a name) (at character 4)",
        ),
        ("x.$A", "expression: a node path ($Name) cannot follow '.' (at character 3)"),
        ("self.%A", "expression: a node path (%Name) cannot follow '.' (at character 6)"),
        ('$"Jump', "expression: a node path's string never ends (at character 2)"),
        ("$'Jump\\'", "expression: a node path's string never ends (at character 2)"),
        ('$"a\\qb"', "expression: an escape a node path cannot hold: \\q (at character 4)"),
        ('$"\\u00"', "expression: an escape a node path cannot hold: \\u (at character 3)"),
    ],
)
def test_a_shorthand_the_grammar_cannot_read_is_refused_with_its_place(
    written: str, message: str
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        rewrite(written)
    assert refused.value.message == message
    assert refused.value.outcome == "invalid_argument"


def test_what_an_expression_reads_from_self_is_known() -> None:
    sent = rewrite("len(items) + self.speed + other.count + self.size() + $A.name + f (1)")
    assert sent.names == {"items", "speed", "other"}
    assert sent.calls == {"len", "size", "get_node", "f"}
    assert sent.members == {"count", "name"}
    assert sent.shorthands == 1
    assert rewrite("not x and y or true in null").names == {"x", "y"}
    assert rewrite('"speed" + str(1)').names == frozenset()
    assert rewrite('get_node("A")').calls == {"get_node"}


UNKNOWN = "Invalid named index 'nope' for base type Object"


def test_an_unknown_name_says_what_the_expression_sees() -> None:
    words, names = explain(rewrite("nope + 1"), UNKNOWN) or ("", False)
    assert words == (
        "Invalid named index 'nope' for base type Object: 'nope' is no local of this frame "
        "and no property, constant or method of its self; the expression also sees "
        "autoloads and engine singletons, but no class names (reach a script as "
        'ResourceLoader.load("res://….gd")) and no other frame\'s locals (evaluate those '
        "with that frame's index as frame)"
    )
    assert names is True
    via_self = explain(rewrite("self.nope"), UNKNOWN)
    assert via_self is not None and via_self[0].startswith(UNKNOWN + ": 'nope' is no local")
    # The engine's own period is kept; the hint follows it.
    dotted = explain(rewrite("nope"), UNKNOWN + ".")
    assert dotted is not None and dotted[0].startswith(UNKNOWN + ". 'nope' is no local")


def test_a_name_read_from_another_value_gets_no_hint() -> None:
    assert explain(rewrite("player.nope"), UNKNOWN) is None  # player's, not self's
    assert explain(rewrite("nope + player.nope"), UNKNOWN) is None  # which one: unknown
    assert explain(rewrite("other"), UNKNOWN) is None  # another name failed
    assert explain(rewrite("nope"), 'Node not found: "nope".') is None


def test_a_failed_call_says_what_the_engine_lacks() -> None:
    words, names = explain(rewrite("len(items)"), "On call to 'len':") or ("", True)
    assert words == (
        "On call to 'len': 'len' is GDScript's own function, which the engine's expressions "
        "lack: use the value's own methods (size(), length()) or an engine singleton's "
        '(ResourceLoader.load("res://…"))'
    )
    assert names is False
    words, _ = explain(rewrite("jump(1, 2)"), "On call to 'jump':") or ("", True)
    assert (
        words
        == "On call to 'jump': the frame's self has no method 'jump' that takes these arguments"
    )
    assert explain(rewrite("player.jump()"), "On call to 'jump':") is None
    # get_node is said once the game said what its self is.
    assert explain(rewrite("$A"), "On call to 'get_node':") is None


def test_a_node_shorthand_outside_a_node_says_so() -> None:
    words = "On call to 'get_node':"
    sent = rewrite("$Jump.get_class()")
    assert failed_node_call(sent, words)
    assert outside_node(sent, words, [False, "RefCounted"]) == (
        "On call to 'get_node': the frame's self is a RefCounted, not a Node: $Path and "
        "%Name mean get_node on self, which only a Node has; evaluate in a frame whose self "
        "is a Node (its index as frame), or reach the scene as "
        'Engine.get_main_loop().current_scene.get_node("…")'
    )
    written = outside_node(rewrite('get_node("Jump")'), words, [False, "Resource"])
    assert written is not None and "a Resource, not a Node: it means get_node on self" in written
    # A Node's get_node that failed otherwise, and answers no game would give: no hint.
    assert outside_node(sent, words, [True, "Node2D"]) is None
    for forged in (None, [False], [0, "X"], "no", [False, "X", 1], {"a": 1}):
        assert outside_node(sent, words, forged) is None, forged
    assert outside_node(sent, words, [False, 7]) is not None  # a class it did not name
    assert "an Object, not a Node" in (outside_node(sent, words, [False, ""]) or "")
    long = outside_node(sent, words, [False, "K" * 5000])
    assert long is not None and "K" * 100 + ", not a Node" in long
    assert not failed_node_call(rewrite("player.get_node('A')"), words)
    assert not failed_node_call(sent, 'Node not found: "Jump".')
    assert rewrite(SELF_PROBE).text == SELF_PROBE
