"""The scene tree's filters: what a caller may ask for, and what a game may answer.

The bridge filters and collapses (it walks the tree anyway, and only the engine knows which
classes inherit which); the server checks the filters before anything is sent, and reads the
game's listing back (``protocol.Tree.parse``): every entry's shape, at most ``max_nodes`` of
them, each count a run's, and ``total`` the sum of the counts unless the listing was cut. A
forged answer is refused, never passed on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from godot_mcp.engine.project.tree import relative
from godot_mcp.errors import InvalidArgument

__all__ = [
    "COLLAPSE_RUN",
    "DEFAULT_MAX_NODES",
    "DEFAULT_TREE_BYTES",
    "MAX_FILTER_CHARS",
    "MAX_SCRIPT_CHARS",
    "TreeFilters",
    "check_class",
    "check_group",
    "check_name",
    "check_script",
]

COLLAPSE_RUN = 4  # the fewest siblings one collapsed entry stands for
DEFAULT_MAX_NODES = 300  # entries, when a caller names no max_nodes
DEFAULT_TREE_BYTES = 16 * 1024  # that default listing's answer, at most, as sent
MAX_FILTER_CHARS = 200  # a name glob, class or group (a script path: 1,024)
MAX_SCRIPT_CHARS = 1024
# The engines' String.match tries every split of the name for every '*': a glob of many stars
# would keep a game busy for minutes on one long name.
MAX_STARS = 4
_CLASS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_IN_NAMES = '/:."'  # no node's name holds these, on either engine


def _printable(value: str, what: str) -> None:
    if not value:
        raise InvalidArgument(f"{what} must not be empty")
    if not value.isprintable():
        raise InvalidArgument(f"{what} must not hold control characters")


def check_name(glob: str) -> str:
    """A glob on one node's name: ``*`` any run of characters, ``?`` one, the rest as is
    (case counts), as the engines' ``String.match`` reads it; at most ``MAX_STARS`` stars
    once runs of them are one."""
    _printable(glob, "name")
    if bad := [c for c in _NOT_IN_NAMES if c in glob]:
        raise InvalidArgument(
            f"name is a glob on a node's name, which never holds {bad[0]!r} "
            "(use root for a place in the tree)"
        )
    glob = re.sub(r"\*{2,}", "*", glob)  # the same glob; the engines' matcher recurses per star
    if glob.count("*") > MAX_STARS:
        raise InvalidArgument(f"name may hold at most {MAX_STARS} '*'")
    return glob


def check_class(name: str) -> str:
    """An engine class or a script's ``class_name``: an identifier."""
    if not _CLASS.fullmatch(name):
        raise InvalidArgument("class must be a class name (letters, digits and _)")
    return name


def check_group(name: str) -> str:
    """A group's name: any printable text."""
    _printable(name, "group")
    return name


def check_script(path: str) -> str:
    """A script as a plain ``res://`` path (a scene's built-in script as ``res://x.tscn::id``)."""
    _printable(path, "script")
    try:
        rel = relative(path)
    except ValueError:
        raise InvalidArgument("script must be a plain res:// path, e.g. res://player.gd") from None
    if not rel or path.endswith("/"):
        raise InvalidArgument("script must name a file, e.g. res://player.gd")
    return path


@dataclass(frozen=True)
class TreeFilters:
    """The filters of one listing; none given lists every node."""

    name: str | None = None
    class_name: str | None = None
    group: str | None = None
    script: str | None = None

    def command(self) -> dict[str, Any]:
        """The filters as the bridge's ``tree`` command takes them (only those given)."""
        given = {
            "name": self.name,
            "class": self.class_name,
            "group": self.group,
            "script": self.script,
        }
        return {k: v for k, v in given.items() if v is not None}
