"""Expressions as scripts write them: GDScript's node shorthands rewritten for the engine's
``Expression``, and what to write instead when the engine could not run one.

The debugger evaluates with the engine's ``Expression`` class, which has no ``$`` and no
unique-node ``%``. A script's ``$Path``, ``$"Path"``, ``$'Path'``, ``%Unique`` and
``%"Unique"`` mean ``get_node(...)`` on the script's ``self``, so :func:`rewrite` turns each into
``get_node("…")`` before the expression is sent. It tokenizes the expression as the engine does
(strings in double or single quotes, with backslash escapes; numbers; names; operators), so
nothing inside a string literal changes, and a ``%`` is the unique-node prefix only where an
operand starts (never after a value: there it is the modulo operator).

The path grammar is GDScript 4's: an optional leading ``/`` (an absolute path), then node
names separated by ``/``; a name is an identifier (keywords included) or a quoted string, and
may start with ``%`` (a unique name); spaces may stand between these. ``..`` is accepted as a
name too (``$../Sibling``), which GDScript itself only takes quoted. A shorthand the grammar
cannot read is refused before anything is sent.

:func:`explain` says what to write instead for the failures whose cause the words show, as
Godot 4.6's ``Expression`` words them (checked against a real game at a break): a name that
is neither a local of the frame nor a property, constant or method of its ``self``
(``Invalid named index 'x' for base type Object``; the expression also sees autoloads and
engine singletons, but no class names and no other frame's locals), and a call the frame's
``self`` has no method for (``On call to 'len':``, GDScript's own functions included). A
``get_node`` call that fails on a ``self`` that is no Node is said by :func:`outside_node`,
once the game said what its ``self`` is (:data:`SELF_PROBE`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from godot_mcp.errors import InvalidArgument, quoted

__all__ = ["SELF_PROBE", "Rewritten", "explain", "failed_node_call", "outside_node", "rewrite"]

# What the frame's self is, asked of the game when a get_node call failed: is it a Node, and
# its engine class.
SELF_PROBE = '[is_class("Node"), get_class()]'

# Words after which an operand starts (a `%` there begins a unique node's name).
_OPERATOR_WORDS = frozenset({"and", "or", "not", "in", "is", "as", "if", "else"})
# GDScript's own functions (its @GDScript scope, and preload), which Expression lacks.
GDSCRIPT_ONLY = frozenset(
    {
        "Color8",
        "assert",
        "char",
        "convert",
        "dict_to_inst",
        "get_stack",
        "inst_to_dict",
        "is_instance_of",
        "len",
        "load",
        "ord",
        "preload",
        "print_debug",
        "print_stack",
        "range",
        "type_exists",
    }
)
_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    '"': '"',
    "'": "'",
    "\\": "\\",
}
_LITERAL_WORDS = frozenset({"self", "true", "false", "null"})
_HEX = frozenset("0123456789abcdefABCDEF")
_UNKNOWN_NAME = re.compile(r"Invalid named index '([^']{1,200})' for base type Object\b")
_FAILED_CALL = re.compile(r"On call to '([^']{1,200})':")
MAX_CLASS = 100  # characters of the class a game names for its self


@dataclass(frozen=True)
class Rewritten:
    """An expression as the engine is sent it, and what it reads from the frame's ``self``."""

    text: str
    shorthands: int = 0  # the node shorthands rewritten
    names: frozenset[str] = field(default_factory=frozenset)  # read bare (or as self.name)
    calls: frozenset[str] = field(default_factory=frozenset)  # called bare (or as self.f())
    members: frozenset[str] = field(default_factory=frozenset)  # read or called after a value


def _start(ch: str) -> bool:
    return ch == "_" or ch.isalpha()


def _part(ch: str) -> bool:
    return ch == "_" or ch.isalnum()


def _literal(value: str) -> str:
    """``value`` as a double-quoted string the engine's Expression reads back as it."""
    out = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + out.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r") + '"'


_OPERAND, _VALUE, _DOT, _PATH = "operand", "value", "dot", "path"  # what the last token was


class _Reader:
    """One pass over an expression (see the module's docstring)."""

    def __init__(self, source: str) -> None:
        self.src = source
        self.i = 0
        self.out: list[str] = []
        self.shorthands = 0
        self.names: set[str] = set()
        self.calls: set[str] = set()
        self.members: set[str] = set()
        self.prev = _OPERAND  # an operand starts at the beginning
        self.word_before = ""  # the name the last token was, if it was one
        self.after_self = False  # the last tokens were `self` `.`

    def refuse(self, at: int, what: str) -> InvalidArgument:
        where = "at its end" if at >= len(self.src) else f"at character {at + 1}"
        return InvalidArgument(f"expression: {what} ({where})")

    def peek(self, offset: int = 0) -> str:
        j = self.i + offset
        return self.src[j] if j < len(self.src) else ""

    def skip_space(self) -> None:
        while self.peek().isspace():
            self.i += 1

    def next_char(self) -> str:
        """The first character from here on that is no space ("" at the end)."""
        j = self.i
        while j < len(self.src) and self.src[j].isspace():
            j += 1
        return self.src[j] if j < len(self.src) else ""

    def string_end(self, start: int) -> int:
        """The index after the string literal that starts at ``start``; -1 if it never ends."""
        quote = self.src[start]
        j = start + 1
        while j < len(self.src):
            if self.src[j] == "\\":
                j += 2
            elif self.src[j] == quote:
                return j + 1
            else:
                j += 1
        return -1

    def string_value(self, start: int, end: int) -> str:
        """The text of the string literal ``src[start:end]``, its escapes read."""
        out: list[str] = []
        j = start + 1
        while j < end - 1:
            ch = self.src[j]
            if ch != "\\":
                out.append(ch)
                j += 1
                continue
            esc = self.src[j + 1]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                j += 2
                continue
            size = {"u": 4, "U": 6}.get(esc)
            digits = self.src[j + 2 : j + 2 + size] if size else ""
            if size is None or len(digits) != size or not all(c in _HEX for c in digits):
                raise self.refuse(j, f"an escape a node path cannot hold: \\{quoted(esc)}")
            out.append(chr(min(int(digits, 16), 0x10FFFF)))
            j += 2 + size
        return "".join(out)

    def run(self) -> Rewritten:
        while self.i < len(self.src):
            self.token()
        return Rewritten(
            "".join(self.out),
            self.shorthands,
            frozenset(self.names),
            frozenset(self.calls),
            frozenset(self.members),
        )

    def emit(self, start: int, kind: str) -> None:
        self.out.append(self.src[start : self.i])
        self.prev = kind

    def token(self) -> None:
        ch = self.peek()
        start = self.i
        if ch.isspace():
            self.i += 1
            self.out.append(ch)
            return
        word_before, self.word_before = self.word_before, ""
        after_self, self.after_self = self.after_self, False
        if ch in "\"'":
            end = self.string_end(start)
            self.i = len(self.src) if end < 0 else end  # never ends: the engine says so
            self.emit(start, _VALUE)
        elif _start(ch):
            self.word(after_self)
        elif ch.isdigit() or (ch == "." and self.peek(1).isdigit()):
            while _part(self.peek()) or self.peek() == ".":
                self.i += 1
            self.emit(start, _VALUE)
        elif ch == "$" or (ch == "%" and self.prev in (_OPERAND, _DOT)):
            self.shorthand()
        elif ch == "%" and self.prev == _PATH:
            raise self.refuse(start, "'%' right after a node path (it may only start a name)")
        else:
            self.i += 1
            self.after_self = ch == "." and self.prev == _VALUE and word_before == "self"
            self.emit(start, _VALUE if ch in ")]}" else _DOT if ch == "." else _OPERAND)

    def word(self, after_self: bool) -> None:
        start = self.i
        while _part(self.peek()):
            self.i += 1
        name = self.src[start : self.i]
        if self.prev == _DOT and not after_self:
            self.members.add(name)
        elif self.prev != _DOT and name in _OPERATOR_WORDS:
            self.emit(start, _OPERAND)
            return
        elif self.next_char() == "(":
            self.calls.add(name)
        elif name not in _LITERAL_WORDS:
            self.names.add(name)
        self.emit(start, _VALUE)
        self.word_before = name

    def shorthand(self) -> None:
        start = self.i
        sign = self.src[start]
        if self.prev == _DOT:
            raise self.refuse(start, f"a node path ({sign}Name) cannot follow '.'")
        self.i += 1
        path = self.path(start, sign)
        self.out.append(f"get_node({_literal(path)})")
        self.calls.add("get_node")
        self.shorthands += 1
        self.prev = _PATH

    def path(self, start: int, sign: str) -> str:
        """The node path after ``sign`` (``$`` or ``%``), as GDScript 4 reads it (and ``..``)."""
        example = '%Name or %"Name"' if sign == "%" else '$Name, $Name/Child or $"Name"'
        parts: list[str] = ["%"] if sign == "%" else []
        after = sign
        self.skip_space()
        if sign == "$" and self.peek() == "/":
            self.i += 1
            parts.append("/")
            after = "/"
            self.skip_space()
        while True:
            if after != "%" and self.peek() == "%":
                self.i += 1
                parts.append("%")
                after = "%"
                self.skip_space()
            at = self.i
            name = self.name()
            if name is None:
                found = self.peek()
                what = f"'{quoted(found)}'" if found else "the end"
                raise self.refuse(
                    at,
                    f"a node name is needed after '{after}', not {what} ({example})",
                )
            parts.append(name)
            if self.next_char() != "/":
                return "".join(parts)
            self.skip_space()
            self.i += 1
            parts.append("/")
            after = "/"
            self.skip_space()

    def name(self) -> str | None:
        """One node name of a path: an identifier, ``..`` or a quoted string; None if none
        starts here."""
        ch = self.peek()
        start = self.i
        if _start(ch):
            while _part(self.peek()):
                self.i += 1
            return self.src[start : self.i]
        if ch == "." and self.peek(1) == "." and self.peek(2) != ".":
            self.i += 2
            return ".."
        if ch and ch in "\"'":
            end = self.string_end(start)
            if end < 0:
                raise self.refuse(start, "a node path's string never ends")
            self.i = end
            return self.string_value(start, end)
        return None


def rewrite(expression: str) -> Rewritten:
    """``expression`` with every node shorthand (``$Path``, ``$"Path"``, ``%Unique``,
    ``%"Unique"``) as ``get_node("…")``; ``InvalidArgument`` for one the grammar cannot read."""
    return _Reader(expression).run()


def _joined(words: str, hint: str) -> str:
    return f"{words} {hint}" if words.endswith((":", ".")) else f"{words}: {hint}"


def explain(sent: Rewritten, words: str) -> tuple[str, bool] | None:
    """What to write instead, joined to the engine's ``words`` on why ``sent`` failed, and
    whether the frame's variables would show the way; None when the words show no known
    cause. A failed ``get_node`` is left to :func:`outside_node`."""
    name = _UNKNOWN_NAME.search(words)
    if name and name[1] in sent.names and name[1] not in sent.members:
        said = quoted(name[1])
        return _joined(
            words,
            f"'{said}' is no local of this frame and no property, constant or method of its "
            "self; the expression also sees autoloads and engine singletons, but no class "
            'names (reach a script as ResourceLoader.load("res://….gd")) and no other '
            "frame's locals (evaluate those with that frame's index as frame)",
        ), True
    call = _FAILED_CALL.search(words)
    if call and call[1] in sent.calls and call[1] not in sent.members and call[1] != "get_node":
        said = quoted(call[1])
        if call[1] in GDSCRIPT_ONLY:
            hint = (
                f"'{said}' is GDScript's own function, which the engine's expressions lack: "
                "use the value's own methods (size(), length()) or an engine singleton's "
                '(ResourceLoader.load("res://…"))'
            )
        else:
            hint = f"the frame's self has no method '{said}' that takes these arguments"
        return _joined(words, hint), False
    return None


def failed_node_call(sent: Rewritten, words: str) -> bool:
    """Whether the engine's ``words`` say that ``sent``'s own ``get_node`` call failed (as
    it does when the frame's self is no Node)."""
    call = _FAILED_CALL.search(words)
    ours = "get_node" in sent.calls and "get_node" not in sent.members
    return bool(call and call[1] == "get_node" and ours)


def outside_node(sent: Rewritten, words: str, probed: object) -> str | None:
    """The engine's ``words`` on a failed ``get_node`` call, with what to write instead
    when the game said (``probed``: its answer to :data:`SELF_PROBE`) that the frame's self
    is no Node; None otherwise."""
    if not failed_node_call(sent, words):
        return None
    if not (isinstance(probed, list) and len(probed) == 2 and probed[0] is False):
        return None
    cls = probed[1] if isinstance(probed[1], str) and probed[1] else "Object"
    article = "an" if cls[0] in "AEIOU" else "a"
    what = "$Path and %Name mean" if sent.shorthands else "it means"
    return _joined(
        words,
        f"the frame's self is {article} {quoted(cls[:MAX_CLASS])}, not a Node: {what} get_node on "
        "self, which only a Node has; evaluate in a frame whose self is a Node (its index "
        'as frame), or reach the scene as Engine.get_main_loop().current_scene.get_node("…")',
    )
