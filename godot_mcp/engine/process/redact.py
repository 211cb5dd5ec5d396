"""Private paths and secrets out of every text a client receives: one mechanism for all.

A :class:`Scrubber` holds ``(path, placeholder)`` pairs and replaces, in one pass, every
occurrence of each path (as given, absolute and with links resolved) that ends at a path
boundary: ``/srv/state`` is replaced in ``/srv/state/x`` and ``/srv/state``, not in
``/srv/state2``. Longer paths win, so a dir and the dir below it get their own placeholders,
and whatever follows a private dir keeps its shape (``<export>/game.pck``). A pair whose path
ends in ``/`` is replaced with no boundary check (the project's ``dir/`` becoming ``res://``).
The values of the server's secret-looking environment variables (tokens, passwords, the
password in a database URL; :mod:`environment`) become ``<secret>`` wherever they appear.

Every text a game or a project's code controls (a log line, a debugger's error and function
names, variables' names and values, profile rows, node values, test names and messages) passes
:meth:`Scrubber.game` (or :meth:`Scrubber.game_json` for a JSON value): :func:`printable`, then
the scrubber. A terminal escape or a direction mark is nothing an agent can use, and a client
that shows the text to a person would act on it.

A path is found however it is spelled: with ``//``, ``/./`` or ``x/../`` between its
components (the spellings that normalise to it), and percent-encoded, wholly or in part, in
either case, once or twice (``%2Fsrv%2fstate``, ``/srv%252Fstate``). Only the spelling found
is replaced; the text around it is left as it was, never decoded. Those spellings are looked
for only in a text that has one (a percent escape, ``/./``, ``/../``, a ``//`` not after a
scheme's ``:``), by a second pattern compiled on first need: the common line costs one pass
of the plain pattern.

:func:`private_roots` names what is private about a state dir: the state dir itself (and so
everything below it) and its parent. ``/``, ``/tmp`` and the home dir as such are never made
private: texts may name them.
"""

from __future__ import annotations

import os
import posixpath
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from godot_mcp.engine.process.engine_lines import without_escapes
from godot_mcp.engine.process.environment import secret_values

__all__ = ["PathPair", "Scrubber", "as_res", "printable", "private_roots"]

PathPair = tuple[Path | str, str]
_BOUNDARY = r"(?![A-Za-z0-9._-])"
# Any spelling of a path, each character plain or percent-encoded (either case; the "%" itself
# possibly "%25": encoded twice). Between two components: "/", "//", "/./", "/x/../".
_PCT = "%(?:25)?"
_SL = rf"(?:/|{_PCT}2[fF])"
_DOT = rf"(?:\.|{_PCT}2[eE])"
_NAME = r"(?:[^/%\n]|%(?!(?:25)?2[fF]))++"
# Runs are bounded and never given back (possessive), so no text makes a match quadratic.
_SEP = rf"{_SL}(?:(?:{_DOT}|{_NAME}{_SL}{_DOT}{_DOT})?{_SL}){{0,8}}+"
_LEAD = rf"(?:{_SL}{_DOT}{{1,2}}(?={_SL})){{0,4}}+"  # "/../srv" and "/./srv" are "/srv"
# Not followed by a name's character, plain or encoded (0-9, A-Z, a-z, ".", "-", "_").
_BOUNDARY_ANY = (
    _BOUNDARY + rf"(?!{_PCT}(?:2[dDeE]|3[0-9]|4[1-9a-fA-F]|5[0-9aA]|5[fF]|6[1-9a-fA-F]|7[0-9aA]))"
)
# A text that may spell a path otherwise than plainly: a percent escape, "/./", "/../", or
# "//" not after a scheme's ":" ("res://" is plain).
_ODD = re.compile(r"%[0-9A-Fa-f]{2}|/\.\.?(?:/|%)|(?<!:)//")
# A path-like token of such a text: from a slash (plain or encoded) up to white space or a
# quote; normalised whole, whatever depth of ".." or run of slashes it holds.
_TOKEN = re.compile(r"(?:/|%(?:25)?2[fF])[^\s\"'<>`]*")


# What a terminal or a bidirectional text would act on once escape sequences are gone: C0 and
# C1 controls but tab and newline, the line and paragraph separators, zero-width and other
# invisible format characters (the Mongolian vowel separator, word joiner, invisible operators,
# byte-order mark, tag characters) and direction marks (the Arabic letter mark among them).
_UNSEEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064"
    "\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)


def printable(text: str) -> str:
    """``text`` without terminal escape sequences, control characters (tab and newline are
    kept: a value's own lines are data) and direction marks."""
    return _UNSEEN.sub("", without_escapes(text))


def _hex_digit(d: str) -> str:
    return d if d.isdigit() else f"[{d.lower()}{d.upper()}]"


def _char_any(c: str) -> str:
    """One character, as itself or percent-encoded (its UTF-8 bytes)."""
    escaped = "".join(
        _PCT + "".join(map(_hex_digit, f"{b:02X}")) for b in c.encode("utf-8", "surrogatepass")
    )
    return f"(?:{re.escape(c)}|{escaped})"


def _path_pattern(form: str, any_spelling: bool) -> str:
    """The pattern of the path ``form`` (absolute, or ending in ``/``): as written, with
    ``/+`` between components; or, ``any_spelling``, every spelling that normalises or
    percent-decodes to it."""
    parts = form.split("/")
    if not any_spelling:
        body = "/+".join(map(re.escape, parts))
        return body + ("" if form.endswith("/") else _BOUNDARY)
    words = ["".join(map(_char_any, part)) for part in parts]
    # The root is one slash: "file://%2Fsrv" keeps its "//".
    absolute = form.startswith("/")
    body = _LEAD + _SL + _SEP.join(words[1:]) if absolute else _SEP.join(words)
    return body + ("" if form.endswith("/") else _BOUNDARY_ANY)


class Scrubber:
    """Replaces private paths, and the server's secret values, in text with placeholders."""

    def __init__(self, pairs: Iterable[PathPair], secrets: Iterable[str] | None = None) -> None:
        """``secrets``: values replaced by ``<secret>`` wherever they appear (default: those
        of the server's own environment, :func:`environment.secret_values`)."""
        self._pairs = list(pairs)
        self._secrets = list(secret_values(os.environ) if secrets is None else secrets)
        forms: dict[str, str] = {}
        for path, placeholder in self._pairs:
            text = str(path)
            if text.endswith("/") and text.strip("/"):
                forms.setdefault(text, placeholder)
                real = os.path.realpath(text) + "/"
                forms.setdefault(real, placeholder)
                continue
            text = text.rstrip("/")
            if not text:
                continue
            for form in (text, os.path.abspath(text), os.path.realpath(text)):
                forms.setdefault(form, placeholder)
        # Longer paths first: a dir and the dir below it each get their own placeholder.
        self._order = sorted(
            [
                *((f, p, True) for f, p in forms.items()),
                *((s, "<secret>", False) for s in dict.fromkeys(self._secrets) if s),
            ],
            key=lambda item: len(item[0]),
            reverse=True,
        )
        self._placeholders = [placeholder for _, placeholder, _ in self._order]
        self._re = self._compile(any_spelling=False)
        self._re_any: re.Pattern[str] | None = None  # compiled on first need

    def _compile(self, any_spelling: bool) -> re.Pattern[str] | None:
        """One group per form or secret, in ``_order``; None when there is nothing."""
        if not self._order:
            return None
        groups = []
        for value, _placeholder, is_path in self._order:
            if is_path:
                groups.append(_path_pattern(value, any_spelling))
            elif any_spelling:
                groups.append("".join(map(_char_any, value)))
            else:
                groups.append(re.escape(value))
        return re.compile("|".join(f"({g})" for g in groups))

    def game(self, text: str) -> str:
        """A text the game or the project's code controls, as a client gets it: printable
        (:func:`printable`) and scrubbed."""
        return self(printable(text))

    def game_json(self, value: Any) -> Any:
        """A JSON value from the game with every string in it (object keys too) as
        :meth:`game` makes it."""
        if isinstance(value, str):
            return self.game(value)
        if isinstance(value, list):
            return [self.game_json(v) for v in value]
        if isinstance(value, dict):
            return {self.game(k): self.game_json(v) for k, v in value.items()}
        return value

    def __call__(self, text: str) -> str:
        """Return ``text`` with every known private path replaced."""
        if self._re is None or not text:
            return text
        pattern = self._re
        if _ODD.search(text):
            if self._re_any is None:
                self._re_any = self._compile(any_spelling=True)
            pattern = self._re_any or pattern
        text = pattern.sub(lambda m: self._placeholders[(m.lastindex or 1) - 1], text)
        if pattern is not self._re:  # an odd spelling may still hide a path: normalise it
            text = _TOKEN.sub(self._normalised, text)
        return text

    def _normalised(self, match: re.Match[str]) -> str:
        """A path-like token of an odd line, replaced when, percent-decoded (twice at most)
        and normalised (any ``..`` depth, any run of slashes), it names a private path."""
        token = match.group(0)
        if not _ODD.search(token):
            return token
        plain = unquote(unquote(token))
        norm = re.sub(r"^/+", "/", posixpath.normpath(plain)) if plain.startswith("/") else ""
        if not norm:
            return token
        for form, placeholder, is_path in self._order:
            if not is_path:
                continue
            if form.endswith("/"):
                if norm.startswith(form) or norm + "/" == form:
                    return placeholder + norm[len(form) :]
                continue
            if norm == form or norm.startswith(form + "/"):
                return placeholder + norm[len(form) :]
        return token

    def extended(self, pairs: Iterable[PathPair]) -> Scrubber:
        """A scrubber with these pairs added (they win over existing ones for the same path)."""
        return Scrubber([*pairs, *self._pairs], self._secrets)

    @classmethod
    def for_run(
        cls, pairs: Iterable[PathPair], private: Iterable[PathPair] = (), home: str | None = None
    ) -> Scrubber:
        """The scrubber of a Godot run (a game, an export, a check): the run's own ``pairs``
        (its project, scratch and output dirs), then what no run's text may name: this
        package, the server's ``private`` paths and the home dir (``home``, default the
        server's), as ``~``. Root's home, ``/root``, names no one and is where every node
        path of a Godot scene begins (``/root/Main``): it is left as it is."""
        home = home or os.path.expanduser("~")
        tail: list[PathPair] = [(Path(__file__).resolve().parents[1], "<godot_mcp>"), *private]
        named = home not in ("", "/") and os.path.normpath(home) != "/root"
        return cls([*pairs, *tail, *([(home, "~")] if named else [])])


def as_res(project: Path | str) -> list[PathPair]:
    """The pairs that turn a project dir into ``res://`` (``dir/x`` becomes ``res://x``)."""
    return [(str(project).rstrip("/") + "/", "res://"), (project, "res://")]


def private_roots(state_dir: Path, *spellings: str | None) -> list[PathPair]:
    """The state dir (everything below it included) and its parent, as placeholders.

    ``spellings``: other names the state dir was given by (a path through a link, as the
    user typed it or as ``GODOT_MCP_STATE_DIR`` holds it), which resolving it forgets.
    """
    public = {"/", os.path.realpath(tempfile.gettempdir()), os.path.realpath(Path.home())}
    pairs: list[PathPair] = []
    for given in dict.fromkeys([str(state_dir), *(s for s in spellings if s)]):
        path = Path(os.path.abspath(given))
        pairs.append((path, "<state>"))
        parent = path.parent
        if os.path.realpath(parent) not in public and str(parent) not in public:
            pairs.append((parent, "<private>"))
    return pairs
