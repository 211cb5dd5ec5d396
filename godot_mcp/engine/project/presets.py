"""Export presets of a Godot project, and the file names an export writes.

``export_presets.cfg`` and ``project.godot`` are Godot ``ConfigFile`` text: ``[section]``
headers, ``key=value`` lines, ``;`` comments. Values are Godot ``Variant`` literals as Godot 3
and Godot 4 write them, and may span many lines. ``parse_config`` reads them as:

* ``"text"`` (escapes, embedded newlines) as ``str``; ``&"name"`` as ``StringName``,
  ``NodePath("a/b")`` and ``^"a/b"`` as ``NodePath``, both ``str`` subclasses;
* ``true``/``false``, ``null``, ints, floats (``0.5``, ``-1e+06``, ``inf``, ``-inf``, ``nan``);
* ``[...]`` as ``list`` and ``{...}`` as ``dict`` (a key Python cannot hash, such as a list,
  becomes its ``repr``); Godot 4.4's typed ``Array[int]([1])`` and
  ``Dictionary[String, int]({...})`` as ``TypedArray`` / ``TypedDictionary``, a list or dict
  that also carries its types;
* ``Object(InputEventKey,"device":0,...)`` as ``GodotObject``: the class and its properties;
* any other constructor (``Vector2( 1, 2 )``, ``PackedStringArray("a")``, ``ExtResource("1_a")``,
  ``Resource("res://x.tres")``) as ``Constructed``, a tuple of the name then the arguments:
  ``("Vector2", 1, 2)``. The rare ``#ff8000`` colour literal gives ``("Color", "#ff8000")``.

Strings unescape as Godot's own reader does: ``\\n \\t \\r \\b \\f``, ``\\uXXXX`` (UTF-16 pairs
joined), ``\\UXXXXXX``; any other escaped character stands for itself (Godot 3.2.3 reads ``\\a``
as ``a``). A section's name is its header's text (``[preset.0.options]``); ``parse_tag`` splits a
resource-style one (``[gd_scene load_steps=2 format=3]``) into its tag and fields.
``resource_sections`` reads a text scene or resource (``.tscn``, ``.tres``) as it goes: each
section's tag and fields as its header comes (a header's values may hold brackets, as a
connection's ``binds= [ 1 ]``), the properties asked for filled in as reading goes on (the
others passed over by their brackets and strings alone, in one linear scan).

Errors::

    PresetsError(InvalidArgument)
     ├── PresetsMissing      the project has no export_presets.cfg (or it is unreadable)
     ├── PresetsInvalid      export_presets.cfg is not a ConfigFile / a preset has no name
     └── UnknownPreset       no preset of that name; ``.known`` lists the names there are
    ConfigSyntaxError(InvalidArgument, ValueError)
                         any ConfigFile text that does not parse; ``.line`` says where

Output naming (``expected_outputs``), verified with Godot 3.2.3 on Linux:

* the base name is the file name of the preset's ``export_path`` when set, else the project's
  ``config/name`` sanitized to ``[A-Za-z0-9._-]`` plus the platform's default extension;
  an ``export_path`` that is set but whose file name is empty or only dots (``build/``,
  ``build/.``, ``build/..``, ``...``) raises ``PresetsInvalid`` for every kind;
* ``pack``: one file, the base with its last extension replaced by ``.pck``
  (``--export-pack``; ``game.x86_64`` gives ``game.pck``);
* ``release``/``debug`` on a desktop platform (Linux/X11, Windows Desktop): the binary under the
  base name and the ``.pck`` next to it (the binary is written first), or the binary alone when
  the preset embeds its pack (``binary_format/embed_pck``);
* HTML5/Web (not testable here: no web templates): the ``.html`` plus ``.js``, ``.wasm``,
  ``.pck`` and the boot splash ``.png`` sharing its stem, the files every 3.2 web export writes;
* every other platform (Mac OSX ``.zip``, Android ``.apk``, iOS ``.ipa``, UWP ``.appx``, unknown
  platforms): the single file under the base name.

The names are derived from the preset only, so the same project and preset always give the same
names; the caller passes the first one to Godot as the output path.

A project without presets (or a caller who wants the engine's defaults) exports by ``platform``
(``PLATFORMS``): ``platform_preset`` names the engine's platform (Godot 3 ``Linux/X11``,
``HTML5``, ``Mac OSX``; Godot 4 ``Linux``, ``Web``, ``macOS``; ``Windows Desktop``, ``Android``
and ``iOS`` on both) in a preset with no ``export_path`` and default options, so its outputs are
named from the project's name; ``platform_presets_text`` is the ``export_presets.cfg`` holding
it alone, in the keys the engine itself writes, for the export's private copy of the project.
"""

from __future__ import annotations

import errno
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from godot_mcp.engine.profile import EngineProfile
from godot_mcp.engine.project import tree
from godot_mcp.errors import InvalidArgument, quoted


class ConfigSyntaxError(InvalidArgument, ValueError):
    """The text could not be parsed as a Godot ConfigFile; ``line`` (from 1) says where (a
    ``ValueError`` too: the readers of a project's facts pass over any value they cannot read)."""

    def __init__(self, line: int, what: str) -> None:
        super().__init__(f"line {line}: {what}")
        self.line = line
        self.what = what

    def __reduce__(self) -> tuple[type[ConfigSyntaxError], tuple[int, str]]:
        return type(self), (self.line, self.what)


class StringName(str):
    """A ``&"name"`` literal: compares and hashes as the plain string."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"StringName({str.__repr__(self)})"


class NodePath(str):
    """A ``NodePath("a/b")`` (or ``^"a/b"``) literal: compares and hashes as the plain string."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"NodePath({str.__repr__(self)})"


class Constructed(tuple[object, ...]):
    """A constructor literal such as ``Vector2( 1, 2 )``: the tuple ``("Vector2", 1, 2)``."""

    __slots__ = ()

    def __new__(cls, name: str, *args: object) -> Constructed:
        return super().__new__(cls, (name, *args))

    def __getnewargs__(self) -> tuple[object, ...]:
        return tuple(self)

    @property
    def name(self) -> str:
        """The constructor's name: ``Vector2``, ``PackedStringArray``, ``ExtResource``..."""
        name = self[0]
        assert isinstance(name, str)
        return name

    @property
    def args(self) -> tuple[object, ...]:
        """The constructor's arguments, parsed as values."""
        return self[1:]

    def __repr__(self) -> str:
        return f"Constructed({', '.join(map(repr, self))})"


TypeName = str | Constructed
"""A typed container's type: a name (``int``, ``Node``) or a script (``ExtResource("1_a")``)."""


@dataclass(frozen=True)
class GodotObject:
    """``Object(InputEventKey,"device":0,...)``: an object stored by value."""

    class_name: str
    properties: dict[str, object]


class TypedArray(list[object]):
    """``Array[int]([1, 2])``: a list (equal to the plain one) that knows its element type."""

    def __init__(self, element_type: TypeName, items: Iterable[object] = ()) -> None:
        super().__init__(items)
        self.element_type = element_type


class TypedDictionary(dict[object, object]):
    """``Dictionary[String, int]({...})``: a dict (equal to the plain one) knowing its types."""

    def __init__(
        self, key_type: TypeName, value_type: TypeName, items: dict[object, object] | None = None
    ) -> None:
        super().__init__(items or {})
        self.key_type = key_type
        self.value_type = value_type


_MAX_DEPTH = 128
_SKIP = re.compile(r"(?:[\x00-\x20]+|;[^\n]*)*")  # Godot: every char <= ' ' is blank
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")
_NEG_INF = re.compile(r"-inf(?:\.0)?(?![A-Za-z0-9_])")  # Godot 3.2.3 writes -INF as "-inf.0"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN = re.compile(r'[^"\\]+')
_HEX = re.compile(r"[0-9A-Fa-f]+")
_COLOR = re.compile(r"#[0-9A-Fa-f]*")
_HEADER = re.compile(r'\[((?:[^\]"\\]|\\.|"(?:[^"\\]|\\.)*")*)\]', re.DOTALL)
_KEY = re.compile(r"([^=\n]*)=")
_TAG = re.compile(r"[^\x00-\x20=]+")
_SECTION_TAG = re.compile(r"[^\x00-\x20=\]]+")
# A value passed over: its strings whole, runs of anything else, brackets one at a time.
_PASSED = re.compile(r'"(?:[^"\\]|\\.)*"|[^"\n()\[\]{}]+|[()\[\]{}]|\n')
# A header's field value passed over: it ends at a blank or the header's ']' outside brackets.
_PASSED_FIELD = re.compile(r'"(?:[^"\\]|\\.)*"|[^"\x00-\x20()\[\]{}]+|[()\[\]{}]|[\x00-\x20]+')
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}
_WORDS: dict[str, object] = {
    "true": True,
    "false": False,
    "null": None,
    "nil": None,
    "inf": math.inf,
    "inf_neg": -math.inf,
    "nan": math.nan,
}


@dataclass
class Section:
    """One section of a text scene or resource: ``[ext_resource path="res://a.gd" …]`` is the
    tag ``ext_resource`` and its fields; ``properties`` its ``key = value`` lines."""

    tag: str
    fields: dict[str, object]
    properties: dict[str, object] = field(default_factory=dict)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    # --- reading ---------------------------------------------------------------------------

    def error(self, what: str, at: int | None = None) -> ConfigSyntaxError:
        pos = self.pos if at is None else at
        return ConfigSyntaxError(self.text.count("\n", 0, pos) + 1, what)

    def peek(self) -> str:
        return self.text[self.pos : self.pos + 1]

    def found(self) -> str:
        c = self.peek()
        return repr(c) if c else "the end of the text"

    def skip(self) -> str:
        """Past blanks and ``;`` comments; the next character, "" at the end."""
        match = _SKIP.match(self.text, self.pos)
        assert match is not None
        self.pos = match.end()
        return self.peek()

    def take(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        match = pattern.match(self.text, self.pos)
        if match:
            self.pos = match.end()
        return match

    def expect(self, char: str) -> None:
        if self.skip() != char:
            raise self.error(f"expected {char!r}, found {self.found()}")
        self.pos += 1

    def identifier(self, what: str) -> str:
        self.skip()
        match = self.take(_IDENT)
        if match is None:
            raise self.error(f"expected {what}, found {self.found()}")
        return match.group()

    # --- the file ----------------------------------------------------------------------------

    def parse(self) -> dict[str, dict[str, object]]:
        sections: dict[str, dict[str, object]] = {"": {}}
        current = sections[""]
        while c := self.skip():
            if c == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end + 1
            elif c == "[":
                current = sections.setdefault(self.header(), {})
            else:
                key = self.key()
                current[key] = self.value()
        return sections

    def header(self) -> str:
        match = self.take(_HEADER)
        if match is None:
            raise self.error("unterminated section header")
        return match.group(1).strip()

    def key(self) -> str:
        if self.peek() == '"':
            key = self.string()
            self.expect("=")
            return key
        match = self.take(_KEY)
        if match is None:
            raise self.error("expected key=value")
        return match.group(1).strip()

    def tag(
        self, close: str = "", only: frozenset[str] | None = None
    ) -> tuple[str, dict[str, object]]:
        """A tag and its fields (``only`` those named, the others passed over), to the end of
        the text or, with ``close``, past it."""
        self.skip()
        name = self.take(_SECTION_TAG if close else _TAG)
        if name is None:
            raise self.error(f"expected a tag name, found {self.found()}")
        fields: dict[str, object] = {}
        while (c := self.skip()) and c != close:
            field = self.identifier("a field name")
            self.expect("=")
            if only is None or field in only:
                fields[field] = self.value()
            else:
                self.skip()
                self.pass_value(_PASSED_FIELD)
        if close:
            self.expect(close)
        return name.group(), fields

    def sections(self, keep: Iterable[str], fields: Iterable[str] | None) -> Iterator[Section]:
        kept = frozenset(keep)
        only = None if fields is None else frozenset(fields)
        current: Section | None = None
        while c := self.skip():
            if c == "[":
                self.pos += 1
                current = Section(*self.tag("]", only))
                yield current
            elif current is None:
                raise self.error(f"expected a section header, found {self.found()}")
            else:
                key = self.key()
                if key in kept:
                    current.properties[key] = self.value()
                else:
                    self.pass_value(_PASSED)

    def pass_value(self, tokens: re.Pattern[str]) -> None:
        """Past a value without reading it, outside brackets and strings: a property's to
        the end of its line (``_PASSED``), a header field's to a blank or the header's end
        (``_PASSED_FIELD``)."""
        start, depth = self.pos, 0
        field = tokens is _PASSED_FIELD
        while (token := tokens.match(self.text, self.pos)) is not None:
            text = token.group()
            ends = (text[0] <= " " or text == "]") if field else text == "\n"
            if ends and depth == 0:
                return
            self.pos = token.end()
            if text in ("(", "[", "{"):
                depth += 1
            elif text in (")", "]", "}"):
                depth -= 1
                if depth < 0:
                    raise self.error(f"unbalanced {text!r}")
        if self.pos < len(self.text):
            raise self.error("unterminated string", at=start)

    # --- values ------------------------------------------------------------------------------

    def value(self) -> object:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.error(f"values nested more than {_MAX_DEPTH} deep")
        value = self.one_value()
        self.depth -= 1
        return value

    def one_value(self) -> object:
        c = self.skip()
        if c == '"':
            return self.string()
        if c in ("&", "@", "^") and self.text.startswith('"', self.pos + 1):
            self.pos += 1
            return NodePath(self.string()) if c == "^" else StringName(self.string())
        if c == "[":
            self.pos += 1
            return self.items("]")
        if c == "{":
            self.pos += 1
            return self.mapping()
        if c == "#":
            color = self.take(_COLOR)
            assert color is not None
            return Constructed("Color", color.group())
        if c == "-" or "0" <= c <= "9":
            return self.number()
        start = self.pos
        word = self.take(_IDENT)
        if word is None:
            raise self.error(f"expected a value, found {self.found()}")
        return self.word(word.group(), start)

    def number(self) -> float | int:
        if self.take(_NEG_INF):
            return -math.inf
        match = self.take(_NUMBER)
        if match is None:
            raise self.error("expected a number after '-'")
        text = match.group()
        if match.group(1) is not None or match.group(2) is not None:
            return float(text)
        try:
            return int(text)
        except ValueError:  # Python refuses ints of more than 4300 digits
            raise self.error("integer too long") from None

    def word(self, name: str, start: int) -> object:
        if name in _WORDS:
            return _WORDS[name]
        after = self.skip()
        if after == "(":
            self.pos += 1
            return self.object() if name == "Object" else self.constructed(name)
        if after == "[" and name in ("Array", "Dictionary"):
            self.pos += 1
            return self.typed_array() if name == "Array" else self.typed_dictionary()
        raise self.error(f"unexpected identifier {name!r}", at=start)

    def string(self) -> str:
        start = self.pos
        self.pos += 1
        out: list[str] = []
        lead = 0  # a \u escape's UTF-16 lead surrogate, waiting for its trail
        while True:
            plain = self.take(_PLAIN)
            c = self.peek()
            if (plain or c == '"') and lead:
                raise self.error("unpaired UTF-16 surrogate in string")
            if plain:
                out.append(plain.group())
            if not c:
                raise self.error("unterminated string", at=start)
            self.pos += 1
            if c == '"':
                return "".join(out)
            code = self.escape(start)
            if 0xD800 <= code < 0xDC00 and not lead:
                lead = code
                continue
            if 0xDC00 <= code < 0xE000 and lead:
                code, lead = 0x10000 + ((lead - 0xD800) << 10) + (code - 0xDC00), 0
            elif lead or 0xD800 <= code < 0xE000:
                raise self.error("unpaired UTF-16 surrogate in string")
            out.append(chr(code))

    def escape(self, start: int) -> int:
        """The code point of the escape after a backslash."""
        e = self.peek()
        if not e:
            raise self.error("unterminated string", at=start)
        self.pos += 1
        if e not in ("u", "U"):
            return ord(_ESCAPES.get(e, e))
        width = 4 if e == "u" else 6
        digits = self.text[self.pos : self.pos + width]
        if len(digits) != width or not _HEX.fullmatch(digits) or int(digits, 16) > 0x10FFFF:
            raise self.error(f"malformed \\{e} escape in string")
        self.pos += width
        return int(digits, 16)

    def after_item(self, close: str) -> None:
        """Past the ',' that follows an item, or at ``close``."""
        c = self.skip()
        if c == ",":
            self.pos += 1
        elif c != close:
            raise self.error(f"expected ',' or {close!r}, found {self.found()}")

    def items(self, close: str) -> list[object]:
        items: list[object] = []
        while self.skip() != close:
            items.append(self.value())
            self.after_item(close)
        self.pos += 1
        return items

    def mapping(self) -> dict[object, object]:
        out: dict[object, object] = {}
        while self.skip() != "}":
            key = self.value()
            self.expect(":")
            out[_dict_key(key)] = self.value()
            self.after_item("}")
        self.pos += 1
        return out

    def constructed(self, name: str) -> Constructed | NodePath:
        start = self.pos
        args = self.items(")")
        if name != "NodePath":
            return Constructed(name, *args)
        if len(args) != 1 or not isinstance(args[0], str):
            raise self.error("NodePath() takes one string", at=start)
        return NodePath(args[0])

    def object(self) -> GodotObject:
        class_name = self.identifier("the object's class")
        if self.skip() != ")":
            self.expect(",")
        properties: dict[str, object] = {}
        while self.skip() != ")":
            if self.peek() != '"':
                raise self.error(f"expected a property name in quotes, found {self.found()}")
            name = self.string()
            self.expect(":")
            properties[name] = self.value()
            self.after_item(")")
        self.pos += 1
        return GodotObject(class_name, properties)

    def type_name(self) -> TypeName:
        name = self.identifier("a type")
        if self.skip() != "(":
            return name
        self.pos += 1
        return Constructed(name, *self.items(")"))

    def typed_array(self) -> TypedArray:
        element_type = self.type_name()
        self.expect("]")
        self.expect("(")
        self.expect("[")
        items = self.items("]")
        self.expect(")")
        return TypedArray(element_type, items)

    def typed_dictionary(self) -> TypedDictionary:
        key_type = self.type_name()
        self.expect(",")
        value_type = self.type_name()
        self.expect("]")
        self.expect("(")
        self.expect("{")
        items = self.mapping()
        self.expect(")")
        return TypedDictionary(key_type, value_type, items)


def _dict_key(key: object) -> object:
    try:
        hash(key)
    except TypeError:
        return repr(key)
    return key


def parse_config(text: str) -> dict[str, dict[str, object]]:
    """Parse ConfigFile text into ``{section: {key: value}}`` (keys before any header under "").

    ``ConfigSyntaxError``, with the line, for text Godot could not read either.
    """
    return _Parser(text.removeprefix("\ufeff")).parse()


def parse_tag(section: str) -> tuple[str, dict[str, object]]:
    """A section name split into its tag and fields.

    ``gd_scene load_steps=2 format=3`` gives ``("gd_scene", {"load_steps": 2, "format": 3})``;
    a ConfigFile name such as ``preset.0.options`` is all tag. ``ConfigSyntaxError`` when the
    fields do not parse.
    """
    return _Parser(section).tag()


def resource_sections(
    text: str, keep: Iterable[str] = (), fields: Iterable[str] | None = None
) -> Iterator[Section]:
    """The sections of a text scene or resource, each yielded as its header is read, with
    its header's ``fields`` (default all); its ``properties`` hold the keys named in ``keep``,
    complete once the next section is yielded. ``ConfigSyntaxError``, with the line, where
    the text does not read."""
    return _Parser(text.removeprefix("\ufeff")).sections(keep, fields)


def project_config(project: Path) -> dict[str, dict[str, object]]:
    """The sections of ``project``'s ``project.godot``; none when it cannot be read or parsed
    (blocking)."""
    try:
        return read_config(project / "project.godot")
    except (OSError, ValueError):
        return {}


def read_config(path: Path) -> dict[str, dict[str, object]]:
    """Read and parse a project's ConfigFile (``tree.read_file`` rules: links judged, a
    regular file of at most 1 MiB); ``OSError`` if unreadable, ``ConfigSyntaxError`` if bad."""
    try:
        data = tree.read_file(path.parent, path.name)
    except tree.TreeError as exc:
        raise OSError(errno.EPERM, exc.message) from None
    return parse_config(data.decode("utf-8", errors="replace"))


class PresetsError(InvalidArgument):
    """Base of every error about a project's export presets (the caller named or needs a
    preset the project does not hold as asked)."""


class PresetsMissing(PresetsError):
    """The project has no readable ``export_presets.cfg``."""


class PresetsInvalid(PresetsError):
    """``export_presets.cfg`` exists but cannot be understood."""


class UnknownPreset(PresetsError):
    """No preset has the requested name; ``known`` holds the names there are."""

    def __init__(self, name: str, known: list[str]) -> None:
        listed = ", ".join(repr(k) for k in known) or "none"
        super().__init__(f"unknown export preset {quoted(name)!r}; known presets: {listed}")
        self.name = name
        self.known = known


@dataclass(frozen=True)
class Preset:
    """One ``[preset.N]`` section: what the output names depend on."""

    name: str
    platform: str
    export_path: str
    embed_pck: bool = False
    bits_64: bool = True
    custom_release: str = ""
    custom_debug: str = ""

    def custom_template(self, kind: str) -> str:
        """The preset's own template for a ``release``/``debug`` export ("" when unset)."""
        return {"release": self.custom_release, "debug": self.custom_debug}.get(kind, "")


KINDS = ("release", "debug", "pack")
PRESETS_FILE = "export_presets.cfg"
_PRESET_SECTION = re.compile(r"^preset\.(\d+)$")


def read_presets(project: Path) -> list[Preset]:
    """Read the project's export presets afresh, in Godot's order (``preset.0`` first)."""
    path = project / PRESETS_FILE
    try:
        sections = read_config(path)
    except FileNotFoundError:
        raise PresetsMissing(f"the project has no {PRESETS_FILE}") from None
    except OSError as exc:
        raise PresetsMissing(f"cannot read {PRESETS_FILE}: {exc.strerror}") from None
    except ConfigSyntaxError as exc:
        raise PresetsInvalid(f"{PRESETS_FILE} does not parse: {exc}") from None
    found: list[tuple[int, Preset]] = []
    for section, values in sections.items():
        match = _PRESET_SECTION.match(section)
        if not match:
            continue
        name = values.get("name")
        if not isinstance(name, str) or not name:
            raise PresetsInvalid(f"[{section}] in {PRESETS_FILE} has no name")
        options = sections.get(f"{section}.options", {})
        found.append(
            (
                int(match.group(1)),
                Preset(
                    name=name,
                    platform=_text(values.get("platform")),
                    export_path=_text(values.get("export_path")),
                    embed_pck=options.get("binary_format/embed_pck") is True,
                    bits_64=options.get("binary_format/64_bits", True) is not False,
                    custom_release=_text(options.get("custom_template/release")),
                    custom_debug=_text(options.get("custom_template/debug")),
                ),
            )
        )
    return [preset for _, preset in sorted(found, key=lambda item: item[0])]


PLATFORMS = ("linux", "windows", "macos", "web", "android", "ios")


def platform_preset(platform: str, engine: EngineProfile) -> Preset:
    """The preset a ``platform`` export runs: named as the engine names the platform, no
    ``export_path`` (outputs named from the project), the engine's default options.

    ``ValueError`` for a platform outside ``PLATFORMS``.
    """
    if platform not in PLATFORMS:
        raise ValueError(f"platform must be one of {', '.join(PLATFORMS)}, not {platform!r}")
    name = engine.platform_names[platform]
    return Preset(name=name, platform=name, export_path="")


def platform_presets_text(preset: Preset, engine: EngineProfile) -> str:
    """An ``export_presets.cfg`` holding ``preset`` alone with the engine's default options.

    The options section names the custom templates, unset (their default on every platform:
    Godot 4 logs an error for an options section it cannot find, and an empty section is not
    a section to it). One option differs from Godot 4's default: a desktop debug export writes
    no console wrapper (``debug/export_console_wrapper=0``; by default Godot 4.6 adds a
    ``.sh`` or ``.console.exe`` launcher beside the binary), so a desktop export is its binary
    and its pack on both engines, as ``expected_outputs`` names them.
    """
    lines = ["[preset.0]", "", f"name={_quoted(preset.name)}"]
    lines += [f"platform={_quoted(preset.platform)}"]
    lines += [f"{key}={value}" for key, value in engine.preset_keys]
    lines += [
        "",
        "[preset.0.options]",
        "",
        'custom_template/debug=""',
        'custom_template/release=""',
    ]
    if engine.console_wrapper and _family(preset.platform) == "desktop":
        lines.append("debug/export_console_wrapper=0")
    return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def find_preset(presets: list[Preset], name: str) -> Preset:
    """The first preset called ``name`` (Godot's own choice), else ``UnknownPreset``."""
    for preset in presets:
        if preset.name == name:
            return preset
    raise UnknownPreset(name, [p.name for p in presets])


def project_name(project: Path) -> str:
    """``application/config/name`` from ``project.godot``; the directory name when unset.

    Raises ``FileNotFoundError`` when the directory holds no ``project.godot``.
    """
    try:
        sections = read_config(project / "project.godot")
    except ConfigSyntaxError:
        return project.resolve().name
    name = sections.get("application", {}).get("config/name")
    return name if isinstance(name, str) and name.strip() else project.resolve().name


def expected_outputs(project_name: str, preset: Preset, kind: str) -> list[str]:
    """The file names Godot writes for this export, the primary output first.

    ``ValueError`` for an unknown kind; ``PresetsInvalid`` when the preset's ``export_path``
    is set but has no usable file name (empty or only dots).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    base = _base_name(project_name, preset)
    stem = _stem(base)
    if kind == "pack":
        return [stem + ".pck"]
    family = _family(preset.platform)
    if family == "desktop":
        names = [base] if preset.embed_pck else [base, stem + ".pck"]
    elif family == "web":
        names = [base, stem + ".js", stem + ".wasm", stem + ".pck", stem + ".png"]
    else:
        names = [base]
    return list(dict.fromkeys(names))


def sanitize_name(name: str) -> str:
    """A project name made safe as a file name: ``[A-Za-z0-9._-]`` only, never empty."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned or "project"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _family(platform: str) -> str:
    key = platform.strip().lower()
    if key in ("linux/x11", "linux", "linuxbsd", "windows desktop", "windows", "x11"):
        return "desktop"
    if key in ("html5", "web"):
        return "web"
    return "single"


_DEFAULT_EXTENSIONS = {
    "windows desktop": ".exe",
    "windows": ".exe",
    "mac osx": ".zip",
    "macos": ".zip",
    "html5": ".html",
    "web": ".html",
    "android": ".apk",
    "ios": ".ipa",
    "uwp": ".appx",
}


def _base_name(project_name: str, preset: Preset) -> str:
    path = preset.export_path.replace("\\", "/").strip()
    if path:
        file_name = path.rsplit("/", 1)[-1]
        if not file_name.strip("."):  # "", ".", "..", "...": no file to write
            raise PresetsInvalid(
                f"export preset {preset.name!r}: its export_path {preset.export_path!r}"
                " has no usable file name"
            )
        return file_name
    key = preset.platform.strip().lower()
    if key in ("linux/x11", "linux", "linuxbsd", "x11"):
        extension = ".x86_64" if preset.bits_64 else ".x86"
    else:
        extension = _DEFAULT_EXTENSIONS.get(key, "")
    return sanitize_name(project_name) + extension


def _stem(file_name: str) -> str:
    """Godot's ``String.get_basename()`` on a bare file name."""
    dot = file_name.rfind(".")
    return file_name if dot < 0 else file_name[:dot]
