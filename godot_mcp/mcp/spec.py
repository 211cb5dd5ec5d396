"""Each tool declared once: arguments, answer, annotations; everything else derived from it.

A :class:`Tool` names its arguments (:class:`Arg`: type, range, enum, default), the fields of
its ``ok`` answer (JSON schemas), whether it reads, destroys or repeats, and its handler. From
that one declaration come the ``inputSchema`` (strict: ``additionalProperties: false``), the
argument checks every call goes through (:meth:`Tool.parse`), the ``outputSchema`` (the ``ok``
shape or a refusal, since some clients validate ``structuredContent`` whatever ``isError``
says), and the ``annotations``; the description says what the tool does and costs, the arguments
are documented in the ``inputSchema`` only. Names on the wire: canonical names have dots;
:func:`wire_name` gives the ``_`` spelling that hosts accept, and ``{runtime.log.read}`` in a
summary or an argument's doc is the tool as ``tools/list`` spells it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.exceptions import best_match
from mcp import types

from godot_mcp.engine.process.availability import AVAILABLE, Availability
from godot_mcp.engine.project.source import MAX_CODE
from godot_mcp.errors import InvalidArgument
from godot_mcp.mcp.outcomes import TOOL_OUTCOMES

if TYPE_CHECKING:
    from godot_mcp.mcp.deps import Core, ToolCall

Kind = Literal["string", "integer", "number", "boolean", "array", "object"]
NameStyle = Literal["underscore", "dotted"]
Toolset = Literal["core", "game", "debug", "check", "import", "test", "export", "api"]
TOOLSETS: tuple[Toolset, ...] = ("game", "debug", "check", "import", "test", "export", "api")
"""The toolsets a server may leave off (``--toolsets``); ``core`` tools are always on."""
REFUSALS = tuple(o for o in TOOL_OUTCOMES if o != "ok")
_MISSING: Any = object()
_TOOL_REF = re.compile(r"\{([a-z_]+(?:\.[a-z_]+)+)\}")  # {project.export.status} in a summary


def wire_name(name: str, style: NameStyle) -> str:
    """A canonical tool name as ``tools/list`` shows it."""
    return name if style == "dotted" else name.replace(".", "_")


def spelled(text: str, style: NameStyle) -> str:
    """``text`` with each ``{tool.name}`` in it as ``tools/list`` shows that tool."""
    return _TOOL_REF.sub(lambda m: wire_name(m.group(1), style), text)


@dataclass(frozen=True)
class Arg:
    """One argument: its JSON type, bounds and default; checked exactly as declared.

    An optional argument given as ``null`` is absent (its schema says so: ``anyOf`` with
    ``null``); a required one given as ``null`` is refused. Every value is checked against
    the argument's own schema (``schema_extra`` included) before a handler sees it.
    """

    name: str
    kind: Kind
    doc: str = ""
    required: bool = False
    default: Any = _MISSING
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    min_items: int | None = None
    max_items: int | None = None
    schema_extra: Mapping[str, Any] = field(default_factory=dict)
    check: Callable[[Any], Any] | None = None  # deeper checks of arrays and objects

    def value_schema(self) -> dict[str, Any]:
        """The JSON schema of a value given for this argument (``null`` aside)."""
        out: dict[str, Any] = {"type": self.kind}
        if self.choices is not None:
            out["enum"] = list(self.choices)
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.min_items is not None:
            out["minItems"] = self.min_items
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        out.update(self.schema_extra)
        return out

    def schema(self, style: NameStyle = "underscore") -> dict[str, Any]:
        """The argument's JSON schema in ``inputSchema``, tools named in ``style``."""
        value = self.value_schema()
        out: dict[str, Any] = value if self.required else {"anyOf": [value, {"type": "null"}]}
        if self.doc:
            out = {**out, "description": spelled(self.doc, style)}
        if self.default is not _MISSING:
            out = {**out, "default": self.default}
        return out

    @cached_property
    def _validator(self) -> Draft202012Validator:
        return Draft202012Validator(self.value_schema())

    def parse(self, raw: Mapping[str, Any]) -> Any:
        """The checked value of this argument in ``raw`` (its default when absent or null)."""
        value = raw.get(self.name)
        if value is None:
            if self.required:
                raise InvalidArgument(f"{self.name} is required")
            return None if self.default is _MISSING else self.default
        typed = self._typed(value)
        if self.check is not None:
            typed = self.check(typed)  # its own messages first: they say more
        self._validate(value)
        return typed

    def _validate(self, value: Any) -> None:
        """``value`` against the argument's schema; the first error as one line that names
        where it is (``args[3] is longer than 256 characters``), quoting no value."""
        errors = list(islice(self._validator.iter_errors(value), 20))
        if errors:
            raise InvalidArgument(_said(self.name, best_match(errors)))

    def _typed(self, value: Any) -> Any:
        if self.kind == "string":
            if not isinstance(value, str) or (self.required and not value):
                raise InvalidArgument(f"{self.name} must be a non-empty string")
            if self.choices is not None and value not in self.choices:
                raise InvalidArgument(f"{self.name} must be one of {', '.join(self.choices)}")
            return value
        if self.kind == "boolean":
            if not isinstance(value, bool):
                raise InvalidArgument(f"{self.name} must be true or false")
            return value
        if self.kind in ("integer", "number"):
            return self._number(value)
        if self.kind == "array":
            if not isinstance(value, list):
                raise InvalidArgument(f"{self.name} must be a list")
            low, high = self.min_items, self.max_items
            if (low is not None and len(value) < low) or (high is not None and len(value) > high):
                raise InvalidArgument(f"{self.name} must hold {low or 0} to {high} items")
            return value
        if not isinstance(value, dict):
            raise InvalidArgument(f"{self.name} must be an object")
        return value

    def _number(self, value: Any) -> int | float:
        integer = self.kind == "integer"
        if integer and isinstance(value, float) and value.is_integer():
            value = int(value)
        ok_type = (int,) if integer else (int, float)
        low = -float("inf") if self.minimum is None else self.minimum
        high = float("inf") if self.maximum is None else self.maximum
        if isinstance(value, bool) or not isinstance(value, ok_type) or not low <= value <= high:
            noun = "an integer" if integer else "a number"
            if self.minimum is not None and self.maximum is not None:
                bounds = f" from {_num(self.minimum)} to {_num(self.maximum)}"
            else:
                bounds = ""
            raise InvalidArgument(f"{self.name} must be {noun}{bounds}")
        return value if integer else float(value)


def _where(name: str, path: Sequence[Any]) -> str:
    """``args[3]``, ``until.node``: where in an argument a value is (long keys cut)."""
    out = name
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        elif isinstance(step, str) and _KEY.fullmatch(step):
            out += f".{step}"
        else:
            out += f"[{str(step)[:MAX_QUOTED]!r}]"
    return out


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
MAX_QUOTED = 40  # characters of a caller's value or key a message may quote
_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


_BOUNDS = {  # a bound's rule: how it is said, and what it counts (one, more than one)
    "maxLength": ("is longer than", "character", "characters"),
    "minLength": ("is shorter than", "character", "characters"),
    "maxItems": ("holds more than", "item", "items"),
    "minItems": ("holds fewer than", "item", "items"),
    "maxProperties": ("has more than", "property", "properties"),
    "minProperties": ("has fewer than", "property", "properties"),
    "maximum": ("is more than", "", ""),
    "minimum": ("is less than", "", ""),
}


def _said(name: str, error: ValidationError) -> str:
    """One line for a schema error, naming where it is and the rule, never the value."""
    where = _where(name, error.absolute_path)
    rule, bound = error.validator, error.validator_value
    if rule in _BOUNDS:
        said, one, many = _BOUNDS[rule]
        unit = one if bound == 1 else many
        return f"{where} {said} {_num(bound)}{' ' + unit if unit else ''}"
    if rule in ("enum", "const"):
        options = bound if rule == "enum" else [bound]
        shown = ", ".join(str(o)[:MAX_QUOTED] for o in list(options)[:10])
        return f"{where} must be one of {shown}"
    if rule == "type":
        kinds = bound if isinstance(bound, list) else [bound]
        return f"{where} must be {' or '.join(_TYPES.get(k, str(k)) for k in kinds)}"
    if rule == "required":
        missing = next((p for p in bound if p not in (error.instance or {})), "?")
        return f"{where} lacks {str(missing)[:MAX_QUOTED]!r}"
    if rule == "additionalProperties":
        extra = sorted(set(error.instance or {}) - set(error.schema.get("properties", {})))
        first = str(extra[0])[:MAX_QUOTED] if extra else "?"
        return f"{where} has an unknown property {first!r}"
    if rule in ("oneOf", "anyOf"):
        return f"{where} matches none of the shapes it may take"
    return f"{where} is not valid ({str(rule)[:MAX_QUOTED]})"


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


Handler = Callable[["ToolCall[Any]"], Awaitable[types.CallToolResult]]
AvailabilityOf = Callable[[Any], Availability]  # of the features' ServerDeps


def _available(_deps: Core) -> Availability:
    return AVAILABLE


@dataclass(frozen=True)
class Tool:
    """One tool, declared once: ``toolset`` is the feature it belongs to (``--toolsets``)."""

    name: str
    title: str
    summary: str
    handler: Handler
    args: tuple[Arg, ...] = ()
    answer: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    availability: AvailabilityOf = _available
    raw_bytes: bool = False  # answers artifact bytes: bounded by their raw length, not as JSON
    toolset: Toolset = field(kw_only=True)

    def parse(self, raw: Mapping[str, Any] | None) -> dict[str, Any]:
        """Check a call's arguments against the declaration; unknown names are refused."""
        given = dict(raw or {})
        unknown = sorted(set(given) - {a.name for a in self.args})
        if unknown:
            names = ", ".join(repr(n[:40]) for n in unknown[:10])
            raise InvalidArgument(f"unknown argument(s): {names}")
        return {a.name: a.parse(given) for a in self.args}

    def input_schema(self, style: NameStyle = "underscore") -> dict[str, Any]:
        """The strict JSON schema of the arguments, tools named in ``style``."""
        out: dict[str, Any] = {
            "type": "object",
            "properties": {a.name: a.schema(style) for a in self.args},
            "additionalProperties": False,
        }
        required = [a.name for a in self.args if a.required]
        if required:
            out["required"] = required
        return out

    def ok_schema(self) -> dict[str, Any]:
        """The schema of an ``ok`` answer's ``structuredContent``."""
        return {
            "type": "object",
            "properties": {"outcome": {"const": "ok"}, **self.answer},
            "required": ["outcome", *self.required],
            "additionalProperties": False,
        }

    def output_schema(self) -> dict[str, Any]:
        """The schema of every answer's ``structuredContent``: the ``ok`` shape or a refusal."""
        return {"type": "object", "oneOf": [self.ok_schema(), REFUSAL_SCHEMA]}

    def description(self, style: NameStyle) -> str:
        """What the tool does and costs (its arguments are the ``inputSchema``'s)."""
        return spelled(self.summary, style)

    def declaration(self, style: NameStyle) -> types.Tool:
        """The MCP declaration of this tool, named in ``style``."""
        return types.Tool(
            name=wire_name(self.name, style),
            title=self.title,
            description=self.description(style),
            input_schema=self.input_schema(style),
            output_schema=self.output_schema(),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=self.destructive,
                idempotent_hint=self.idempotent,
                open_world_hint=False,
            ),
        )


REFUSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "outcome": {"enum": list(REFUSALS)},
        "message": {"type": "string"},
    },
    "required": ["outcome", "message"],
}


class Tools:
    """The tools of one server, findable by either spelling of their names."""

    def __init__(self, tools: Sequence[Tool], style: NameStyle) -> None:
        self.style = style
        self.all = list(tools)
        self._by: dict[str, Tool] = {}
        for tool in self.all:
            for spelling in {tool.name, wire_name(tool.name, "underscore")}:
                if spelling in self._by and self._by[spelling] is not tool:
                    raise ValueError(f"two tools are spelled {spelling!r}")
                self._by[spelling] = tool

    def find(self, name: str) -> Tool | None:
        """The tool called ``name`` in either spelling."""
        return self._by.get(name)

    def listed(self, tool: Tool) -> str:
        """The spelling ``tools/list`` shows."""
        return wire_name(tool.name, self.style)


# Shapes shared by several answers (a union of types as anyOf: portable to every client).
STRING: dict[str, Any] = {"type": "string"}
INTEGER: dict[str, Any] = {"type": "integer"}
# A place's ``code``: its line as the file is now (``engine/project/source.py``, code_at).
CODE: dict[str, Any] = {"type": "string", "maxLength": MAX_CODE}
NULL: dict[str, Any] = {"type": "null"}
NUMBER: dict[str, Any] = {"type": "number"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
ARTIFACT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "uri": STRING,
        "mime_type": STRING,
        "size": INTEGER,
        "sha256": STRING,
        "expires_at": STRING,
        "name": STRING,
        "frames": INTEGER,
        "width": INTEGER,
        "height": INTEGER,
    },
    "required": ["uri", "mime_type", "size", "sha256", "expires_at"],
    "additionalProperties": False,
}


def check_paths(value: list[Any]) -> list[str]:
    """An argument's list of res:// paths: each a non-empty string of at most 4096."""
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item or len(item) > 4096:
            raise InvalidArgument(f"paths[{i}] must be a res:// path (a non-empty string)")
    return list(value)
