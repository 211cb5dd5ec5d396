"""Private paths and secrets out of every text a client receives: one mechanism for all.

A :class:`Scrubber` holds ``(path, placeholder)`` pairs and replaces, in one pass, every
occurrence of each path (as given, absolute and with links resolved) that ends at a path
boundary: ``/srv/state`` is replaced in ``/srv/state/x`` and ``/srv/state``, not in
``/srv/state2``. Longer paths win, so a dir and the dir below it get their own placeholders,
and whatever follows a private dir keeps its shape (``<export>/game.pck``). A pair whose path
ends in ``/`` is replaced with no boundary check (the project's ``dir/`` becoming ``res://``).
The values of the server's secret-looking environment variables (tokens, passwords, the
password in a database URL; :mod:`environment`) become ``<secret>`` wherever they appear.

:func:`private_roots` names what is private about a state dir: the state dir itself (and so
everything below it) and its parent. ``/``, ``/tmp`` and the home dir as such are never made
private: texts may name them.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from godot_mcp.godot.environment import secret_values

__all__ = ["PathPair", "Scrubber", "as_res", "private_roots"]

PathPair = tuple[Path | str, str]
_BOUNDARY = r"(?![A-Za-z0-9._-])"


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
        # One group per form; "/+" between components: "/srv//state" is the same path.
        patterns = {
            "/+".join(map(re.escape, f.split("/"))) + ("" if f.endswith("/") else _BOUNDARY): (
                len(f),
                placeholder,
            )
            for f, placeholder in forms.items()
        }
        for secret in self._secrets:
            if secret:
                patterns.setdefault(re.escape(secret), (len(secret), "<secret>"))
        ordered = sorted(patterns, key=lambda p: patterns[p][0], reverse=True)
        self._placeholders = [patterns[p][1] for p in ordered]
        self._re = re.compile("|".join(f"({p})" for p in ordered)) if ordered else None

    def __call__(self, text: str) -> str:
        """Return ``text`` with every known private path replaced."""
        if self._re is None or not text:
            return text
        return self._re.sub(lambda m: self._placeholders[(m.lastindex or 1) - 1], text)

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
        server's), as ``~``."""
        home = home or os.path.expanduser("~")
        tail: list[PathPair] = [(Path(__file__).resolve().parent, "<godot_mcp>"), *private]
        return cls([*pairs, *tail, *([(home, "~")] if home not in ("", "/") else [])])


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
