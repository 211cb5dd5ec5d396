"""Export presets of a Godot project, and the file names an export writes.

``export_presets.cfg`` and ``project.godot`` are Godot ``ConfigFile`` text: ``[section]``
headers, ``key=value`` lines, ``;`` comments. Values are Godot ``Variant`` literals and may span
several lines. The reader here understands quoted strings with escapes, ``true``/``false``/
``null``, numbers, ``[...]`` arrays, ``{...}`` dictionaries and constructor calls such as
``PoolStringArray( "a" )`` (read as a tuple: the constructor's name, then its arguments).

Errors::

    PresetsError(Exception)
     ├── PresetsMissing      the project has no export_presets.cfg (or it is unreadable)
     ├── PresetsInvalid      export_presets.cfg is not a ConfigFile / a preset has no name
     └── UnknownPreset       no preset of that name; ``.known`` lists the names there are
    ConfigSyntaxError(ValueError)   any ConfigFile text that does not parse

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
"""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass
from pathlib import Path

from godot_mcp.godot import tree

_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    '"': '"',
    "\\": "\\",
    "'": "'",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
}


class ConfigSyntaxError(ValueError):
    """The text could not be parsed as a Godot ConfigFile."""


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, what: str) -> ConfigSyntaxError:
        line = self.text.count("\n", 0, self.pos) + 1
        return ConfigSyntaxError(f"line {line}: {what}")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_ws(self, newlines: bool = True) -> None:
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c in " \t\r" or (newlines and c == "\n"):
                self.pos += 1
            else:
                return

    def skip_line(self) -> None:
        end = self.text.find("\n", self.pos)
        self.pos = len(self.text) if end < 0 else end + 1

    def parse(self) -> dict[str, dict[str, object]]:
        sections: dict[str, dict[str, object]] = {"": {}}
        current = sections[""]
        while True:
            self.skip_ws()
            c = self.peek()
            if not c:
                return sections
            if c in ";#":
                self.skip_line()
            elif c == "[":
                end = self.text.find("]", self.pos)
                if end < 0:
                    raise self.error("unterminated section header")
                name = self.text[self.pos + 1 : end].strip()
                current = sections.setdefault(name, {})
                self.pos = end + 1
            else:
                eq = self.text.find("=", self.pos)
                nl = self.text.find("\n", self.pos)
                if eq < 0 or (0 <= nl < eq):
                    raise self.error("expected key=value")
                key = self.text[self.pos : eq].strip()
                if key.startswith('"') and key.endswith('"') and len(key) >= 2:
                    key = key[1:-1]
                self.pos = eq + 1
                self.skip_ws(newlines=False)
                current[key] = self.value()

    def value(self) -> object:
        self.skip_ws()
        c = self.peek()
        if c == '"':
            return self.string()
        if c == "[":
            return self.sequence("[", "]")
        if c == "{":
            return self.mapping()
        start = self.pos
        while self.pos < len(self.text) and (
            self.text[self.pos].isalnum() or self.text[self.pos] in "_.+-"
        ):
            self.pos += 1
        word = self.text[start : self.pos]
        if not word:
            raise self.error(f"unexpected character {c!r}")
        self.skip_ws(newlines=False)
        if self.peek() == "(":
            return (word, *self.sequence("(", ")"))
        return _scalar(word)

    def string(self) -> str:
        self.pos += 1
        out: list[str] = []
        while True:
            if self.pos >= len(self.text):
                raise self.error("unterminated string")
            c = self.text[self.pos]
            self.pos += 1
            if c == '"':
                return "".join(out)
            if c != "\\":
                out.append(c)
                continue
            e = self.text[self.pos : self.pos + 1]
            self.pos += 1
            if e == "u":
                code = self.text[self.pos : self.pos + 4]
                try:
                    out.append(chr(int(code, 16)))
                except ValueError:
                    raise self.error("bad \\u escape") from None
                self.pos += 4
            else:
                out.append(_ESCAPES.get(e, e))

    def sequence(self, open_: str, close: str) -> list[object]:
        self.pos += 1
        items: list[object] = []
        while True:
            self.skip_ws()
            if self.peek() == close:
                self.pos += 1
                return items
            if not self.peek():
                raise self.error(f"unterminated {open_}")
            items.append(self.value())
            self.skip_ws()
            if self.peek() == ",":
                self.pos += 1

    def mapping(self) -> dict[object, object]:
        self.pos += 1
        out: dict[object, object] = {}
        while True:
            self.skip_ws()
            if self.peek() == "}":
                self.pos += 1
                return out
            if not self.peek():
                raise self.error("unterminated {")
            key = self.value()
            self.skip_ws()
            if self.peek() != ":":
                raise self.error("expected ':' in dictionary")
            self.pos += 1
            val = self.value()
            out[key if isinstance(key, str | int | float | bool) else repr(key)] = val
            self.skip_ws()
            if self.peek() == ",":
                self.pos += 1


def _scalar(word: str) -> object:
    if word == "true":
        return True
    if word == "false":
        return False
    if word in ("null", "nil"):
        return None
    try:
        return int(word)
    except ValueError:
        pass
    try:
        return float(word)
    except ValueError:
        return word


def parse_config(text: str) -> dict[str, dict[str, object]]:
    """Parse ConfigFile text into ``{section: {key: value}}``."""
    return _Parser(text).parse()


def read_config(path: Path) -> dict[str, dict[str, object]]:
    """Read and parse a project's ConfigFile (``tree.read_file`` rules: links judged, a
    regular file of at most 1 MiB); ``OSError`` if unreadable, ``ConfigSyntaxError`` if bad."""
    try:
        data = tree.read_file(path.parent, path.name)
    except tree.TreeError as exc:
        raise OSError(errno.EPERM, exc.message) from None
    return parse_config(data.decode("utf-8", errors="replace"))


class PresetsError(Exception):
    """Base of every error about a project's export presets."""


class PresetsMissing(PresetsError):
    """The project has no readable ``export_presets.cfg``."""


class PresetsInvalid(PresetsError):
    """``export_presets.cfg`` exists but cannot be understood."""


class UnknownPreset(PresetsError):
    """No preset has the requested name; ``known`` holds the names there are."""

    def __init__(self, name: str, known: list[str]) -> None:
        listed = ", ".join(repr(k) for k in known) or "none"
        super().__init__(f"unknown export preset {name!r}; known presets: {listed}")
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
