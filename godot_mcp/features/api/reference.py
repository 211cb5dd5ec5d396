"""The engine's own class reference: dumped once per engine version, read with the standard
library's XML parser, looked up along the inheritance chain (``docs/api.md``).

**Dump.** ``--doctool <dir>`` writes one XML file per class (``doc/classes/``,
``modules/*/doc_classes/``, ``platform/*/doc_classes/``) from the engine's ClassDB: classes,
members, signatures, defaults. On an empty dir it writes *no* descriptions (both 3.2.3 and
4.6.3: every ``<description>`` is empty), because it merges with the files it finds there.
The descriptions are compiled into the engine (the class reference its editor's help shows,
every class's XML concatenated and zlib-compressed): :func:`compiled_reference` reads them
from the binary and writes them into the dump dir first, so ``--doctool`` merges them into
what it writes, by its own rules. An engine without them (a build without tools) dumps
the structure only, and every description is ``None``.

The dump runs the engine alone: in an empty temp dir as its cwd, no project, its XDG dirs
in that temp dir; no code of the user's project runs. It is written into a temp dir
inside ``<state>/api/`` and renamed into place (``<state>/api/<version-slug>/``) only when
complete, so a server reading it sees a whole dump or none; two servers dumping at once both
finish and the second rename loses, harmlessly. The temp dir is named after its owner
(``.partial-<pid>-<start ticks>-<random>``): one whose owner is gone (a killed server's) is
removed by :func:`sweep_partials`, at every dump, every server start and ``reconcile``.

**Signatures** (as the reference writes them, the engine's own type names)::

    method     void add_child(node: Node, force_readable_name: bool = false) const
    vararg     Variant call(method: StringName, ...) vararg
    property   offset_left: float = 0.0         (an enum's type is the enum: Label.Align)
    signal     gui_input(event: InputEvent)
    constant   PI = 3.14159265358979             (of an enum: MouseFilter.MOUSE_FILTER_STOP = 0)
    theme_item font_color: Color = Color(1, 1, 1, 1)
"""

from __future__ import annotations

import contextlib
import difflib
import mmap
import os
import re
import shutil
import time
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from godot_mcp.engine.process.run import GodotRun, xdg_homes
from godot_mcp.engine.process.supervisor import Supervisor
from godot_mcp.engine.profile import EngineProfile
from godot_mcp.errors import InvalidArgument, NotFound, Timeout, Unavailable

__all__ = [
    "ApiIndex",
    "ClassRef",
    "Member",
    "close_names",
    "compiled_reference",
    "dump",
    "slug",
    "sweep_partials",
]

DUMP_TIMEOUT_S = 120.0
STALE_PARTIAL_S = 3600.0  # an old-style partial dump (no start time) this old is a dead one's
MAX_NAME = 128
MAX_CLOSE = 5
KINDS = ("methods", "properties", "signals", "constants", "theme_items")
KIND_OF = {  # the answer's kind per list, in the order a name is looked for
    "properties": "property",
    "methods": "method",
    "signals": "signal",
    "constants": "constant",
    "theme_items": "theme_item",
}
_CLASS_NAME = re.compile(r"@?[A-Za-z_][A-Za-z0-9_]*")
_MEMBER_NAME = re.compile(r"@?[A-Za-z_][A-Za-z0-9_/.\-]*")
_BBCODE_LINK = re.compile(
    r"\[(?:member|method|signal|constant|enum|theme_item|annotation|constructor|operator|param)"
    r" ([^\]]+)\]"
)
_BBCODE_URL = re.compile(r"\[url=[^\]]*\](.*?)\[/url\]")
_BBCODE_TAG = re.compile(
    r"\[/?(?:b|i|u|s|code|kbd|codeblock|codeblocks|gdscript|csharp|center"
    r"|br|lb|rb|color[^\]]*|font[^\]]*)\]"
)
_BBCODE_CLASS = re.compile(r"\[([A-Z@][A-Za-z0-9_.]*)\]")


def slug(version: str) -> str:
    """A dir name for an engine's exact version string (``4.6.3.stable.debian4.6.3+ds-3``)."""
    cleaned = re.sub(r"[^A-Za-z0-9._+-]", "_", version.strip())[:200]
    return cleaned.lstrip(".") or "unknown"


def check_class(name: str) -> str:
    if len(name) > MAX_NAME or not _CLASS_NAME.fullmatch(name):
        raise InvalidArgument(
            f"class must be a class name (letters, digits, _; at most {MAX_NAME})"
        )
    return name


def check_member(name: str) -> str:
    if len(name) > MAX_NAME or not _MEMBER_NAME.fullmatch(name):
        raise InvalidArgument(
            f"member must be a member name (letters, digits, _; at most {MAX_NAME})"
        )
    return name


# --- descriptions compiled into the engine ----------------------------------------------


def compiled_reference(binary: str | os.PathLike[str], limit: int = 64 << 20) -> list[bytes]:
    """The class reference compiled into the engine binary: one XML document per class, or
    ``[]`` when it carries none. The reference is a zlib stream whose text starts with
    ``<?xml`` and a ``<class``; it is found by trying each zlib header in the file, which is
    mapped, not read (an engine is 65-160 MB)."""
    with open(binary, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return []
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _find_reference(data, limit)


def _find_reference(data: mmap.mmap, limit: int) -> list[bytes]:
    for match in re.finditer(rb"\x78[\x01\x5e\x9c\xda]", data):
        start = match.start()
        try:
            first = zlib.decompressobj().decompress(data[start : start + 512], 128)
        except zlib.error:
            continue
        if not (first.startswith(b"<?xml") and b"<class " in first):
            continue
        text = _inflate(data, start, limit)
        if text is None:
            continue
        return [b"<?xml" + part for part in text.split(b"<?xml") if part.strip()]
    return []


def _inflate(data: mmap.mmap, start: int, limit: int, step: int = 1 << 20) -> bytes | None:
    """The zlib stream at ``start``, at most ``limit`` bytes of it; None if it is broken."""
    whole = zlib.decompressobj()
    text = bytearray()
    pos = start
    try:
        while not whole.eof and len(text) < limit and pos < len(data):
            chunk = data[pos : pos + step]
            pos += len(chunk)
            text += whole.decompress(chunk, limit - len(text))
    except zlib.error:
        return None
    return bytes(text)


def prime(target: Path, documents: Iterable[bytes]) -> int:
    """Write each class document as ``doc/classes/<Class>.xml`` for ``--doctool`` to merge."""
    classes = target / "doc" / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    written = 0
    for doc in documents:
        found = re.search(rb'<class name="([^"]+)"', doc)
        if found is None:
            continue
        name = found.group(1).decode("utf-8", "replace")
        if not _CLASS_NAME.fullmatch(name):
            continue
        (classes / f"{name}.xml").write_bytes(doc)
        written += 1
    return written


# --- the dump ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DumpReport:
    """Where the dump is and what it took (``seconds`` 0 when it was already there;
    ``dumped`` False when another server's dump landed first)."""

    path: Path
    seconds: float
    dumped: bool


PARTIAL = ".partial-"


def _start_ticks(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks (field 22 of ``/proc/PID/stat``), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def partial_name() -> str:
    """A partial dump's dir name: ``.partial-<pid>-<start ticks>-<random>``, its owner being
    this process (a pid alone can be reused; the pair names one process for the boot)."""
    pid = os.getpid()
    return f"{PARTIAL}{pid}-{_start_ticks(pid) or '0'}-{os.urandom(6).hex()}"


def _owner_gone(name: str, mtime: float, now: float) -> bool:
    """Whether the process that made the partial dump ``name`` has ended. A name of the older
    ``.partial-<pid>-<random>`` shape carries no start time: its owner is gone when its pid
    runs no more, or the dir is older than ``STALE_PARTIAL_S``."""
    parts = name.removeprefix(PARTIAL).split("-")
    if not parts[0].isdigit():
        return True
    pid = int(parts[0])
    if len(parts) == 3 and parts[1].isdigit():
        return _start_ticks(pid) != parts[1]
    return _start_ticks(pid) is None or now - mtime > STALE_PARTIAL_S


def sweep_partials(api_dir: Path) -> int:
    """Remove the partial dumps in ``api_dir`` whose owner is gone (a killed server's);
    a running server's own is left alone. Returns how many were removed."""
    now = time.time()
    removed = 0
    try:
        entries = [e for e in os.scandir(api_dir) if e.name.startswith(PARTIAL)]
    except OSError:
        return 0
    for entry in entries:
        try:
            mtime = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if not _owner_gone(entry.name, mtime, now):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
        if not os.path.lexists(entry.path):
            removed += 1
    return removed


def _prepare(api_dir: Path, binary: str) -> Path:
    api_dir.mkdir(parents=True, mode=0o700, exist_ok=True)
    sweep_partials(api_dir)
    partial = Path(os.path.realpath(os.fspath(api_dir / partial_name())))
    for sub in ("out", "cwd", "home"):
        (partial / sub).mkdir(parents=True, mode=0o700)
    engine = shutil.which(binary) or binary
    prime(partial / "out", compiled_reference(os.path.realpath(engine)))
    return partial


def _settle(partial: Path, target: Path) -> bool:
    """Rename the finished dump into place; ``False`` when another server's came first."""
    out = partial / "out"
    if not any(out.rglob("*.xml")):
        raise Unavailable("the engine's --doctool wrote no class reference")
    try:
        os.rename(out, target)
    except OSError:
        if not target.is_dir():
            raise
        return False  # what is left of ``partial`` goes with the dump's own clean-up
    return True


async def dump(
    binary: str,
    engine: EngineProfile,
    api_dir: Path,
    version: str,
    *,
    timeout: float = DUMP_TIMEOUT_S,
) -> DumpReport:
    """Dump the class reference of ``binary`` (a headless engine) into
    ``api_dir/<slug(version)>/`` unless it is there; typed refusals, every wait bounded."""
    target = api_dir / slug(version)
    if target.is_dir():
        return DumpReport(target, 0.0, False)
    began = time.monotonic()
    try:
        partial = await anyio.to_thread.run_sync(_prepare, api_dir, binary)
    except OSError as exc:
        raise Unavailable(f"the class reference cannot be dumped: {exc.strerror}") from None
    run = GodotRun(
        binary,
        [*engine.headless_flags, "--doctool", str(partial / "out")],
        partial / "cwd",
        extra_env={**xdg_homes(partial / "home"), "HOME": str(partial / "home")},
    )
    late = f"the engine's --doctool did not finish within {timeout:.0f} s"
    async with Supervisor(Unavailable, cleanup=lambda: shutil.rmtree(partial, True)) as doctool:
        doctool.start(run)
        code = await doctool.wait(timeout, lambda: Timeout(late))
        if code != 0:
            raise Unavailable(f"the engine's --doctool exited with code {code}")
        try:
            dumped = await anyio.to_thread.run_sync(_settle, partial, target)
        except OSError as exc:
            raise Unavailable(f"the class reference cannot be kept: {exc.strerror}") from None
    return DumpReport(target, time.monotonic() - began, dumped)


# --- reading it -------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """One member as the reference writes it."""

    name: str
    kind: str  # method, property, signal, constant, theme_item
    signature: str
    description: str | None


@dataclass
class ClassRef:
    """One class of the reference: its parent and its own members by kind."""

    name: str
    inherits: str | None
    description: str | None
    members: dict[str, dict[str, Member]] = field(default_factory=dict)

    def names(self) -> dict[str, list[str]]:
        return {kind: sorted(self.members.get(kind, {})) for kind in KINDS}

    def find(self, name: str) -> Member | None:
        for kind in KIND_OF:
            found = self.members.get(kind, {}).get(name)
            if found is not None:
                return found
        return None


def plain(text: str | None) -> str | None:
    """The first paragraph of a reference text, its BBCode made plain; ``None`` if empty."""
    if not text:
        return None
    for raw in text.strip().splitlines():
        line = raw.strip()
        if not line:
            continue
        line = _BBCODE_URL.sub(r"\1", line)
        line = _BBCODE_LINK.sub(r"\1", line)
        line = _BBCODE_TAG.sub("", line)
        line = _BBCODE_CLASS.sub(r"\1", line)
        line = line.replace("[lb]", "[").replace("[rb]", "]").strip()
        return line or None
    return None


def _type(el: ET.Element | None) -> str:
    if el is None:
        return "void"
    return el.get("enum") or el.get("type") or "Variant"


def _typed(name: str, el: ET.Element) -> str:
    out = f"{name}: {_type(el)}"
    default = el.get("default")
    return f"{out} = {default}" if default is not None else out


def _params(el: ET.Element) -> list[ET.Element]:
    found = el.findall("param") or el.findall("argument")  # Godot 4 / Godot 3
    return sorted(found, key=lambda p: int(p.get("index") or 0))


def method_signature(el: ET.Element) -> str:
    qualifiers = (el.get("qualifiers") or "").split()
    params = [_typed(p.get("name") or "arg", p) for p in _params(el)]
    if "vararg" in qualifiers:
        params.append("...")
    out = f"{_type(el.find('return'))} {el.get('name')}({', '.join(params)})"
    return " ".join([out, *qualifiers])


def signal_signature(el: ET.Element) -> str:
    params = [_typed(p.get("name") or "arg", p) for p in _params(el)]
    return f"{el.get('name')}({', '.join(params)})"


def constant_signature(el: ET.Element) -> str:
    name = el.get("name") or ""
    enum = el.get("enum")
    return f"{enum + '.' if enum else ''}{name} = {el.get('value')}"


def theme_signature(el: ET.Element) -> str:
    return _typed(el.get("name") or "", el)


def parse_class(source: bytes | str | Path) -> ClassRef:
    """One class file of the reference (``--doctool``'s XML, Godot 3 or 4)."""
    root = ET.parse(source).getroot() if isinstance(source, Path) else ET.fromstring(source)
    ref = ClassRef(
        name=root.get("name") or "",
        inherits=root.get("inherits") or None,
        description=plain(root.findtext("brief_description")),
    )
    sections = {
        "methods": ("methods/method", method_signature),
        "properties": ("members/member", lambda e: _typed(e.get("name") or "", e)),
        "signals": ("signals/signal", signal_signature),
        "constants": ("constants/constant", constant_signature),
        "theme_items": ("theme_items/theme_item", theme_signature),
    }
    for kind, (path, sign) in sections.items():
        single = KIND_OF[kind]
        found: dict[str, Member] = {}
        for el in root.findall(path):
            name = el.get("name")
            if not name or name in found:
                continue
            text = el.findtext("description") if kind != "properties" else el.text
            found[name] = Member(name, single, sign(el), plain(text))
        ref.members[kind] = found
    return ref


def close_names(name: str, candidates: Iterable[str], n: int = MAX_CLOSE) -> list[str]:
    """Up to ``n`` names like ``name``: the same but for case first, then by similarity
    (difflib's ratio) plus the words (``_``-separated) they share, one word swapped
    (``offset_left`` finds ``margin_left``), containment and the same case style."""
    low = name.lower()
    words = {w for w in low.split("_") if w}
    scored: list[tuple[float, str]] = []
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(low)
    for cand in set(candidates):
        if cand == name:
            continue
        lower = cand.lower()
        if lower == low:
            scored.append((-10.0, cand))
            continue
        matcher.set_seq1(lower)
        if matcher.real_quick_ratio() < 0.3:
            continue
        ratio = matcher.ratio()
        theirs = {w for w in lower.split("_") if w}
        shared = len(words & theirs) / max(len(words), 1)
        short, long_ = sorted((low, lower), key=len)
        contained = (
            0.25 if len(short) >= 4 and 2 * len(short) >= len(long_) and short in long_ else 0
        )
        style = 0.15 if name.isupper() == cand.isupper() else 0.0  # CONSTANT or member_name
        swapped = 0.35 * _one_word_apart(low, lower) + 0.3 * (sorted(low) == sorted(lower))
        score = ratio + 0.4 * shared + contained + style + swapped
        if score >= 0.65:
            scored.append((-score, cand))
    scored.sort()
    return [cand for _, cand in scored[:n]]


def _one_word_apart(a: str, b: str) -> bool:
    """``offset_left`` and ``margin_left``: as many words, all but one the same, in order."""
    wa, wb = a.split("_"), b.split("_")
    return len(wa) == len(wb) > 1 and sum(x != y for x, y in zip(wa, wb, strict=True)) == 1


class ApiIndex:
    """One engine's dumped reference: the class files found once, each class parsed on
    first use and kept."""

    def __init__(self, root: Path, engine: str = "Godot") -> None:
        self.root = root
        self.engine = engine
        self.files: dict[str, Path] = {}
        for path in root.rglob("*.xml"):
            self.files.setdefault(path.stem, path)
        self._parsed: dict[str, ClassRef] = {}

    def get(self, name: str) -> ClassRef:
        """The class called ``name``: :class:`NotFound` with close names if there is none."""
        found = self._parsed.get(name)
        if found is not None:
            return found
        path = self.files.get(name)
        if path is None:
            near = close_names(name, self.files)
            raise NotFound(
                f"{self.engine} has no class {name}{_did_you_mean(near)}", close_names=near
            )
        try:
            ref = parse_class(path)
        except (OSError, ET.ParseError):  # its message may name a path: not told
            raise Unavailable(f"the class reference of {name} cannot be read") from None
        self._parsed[name] = ref
        return ref

    def chain(self, name: str) -> list[ClassRef]:
        """The class and its ancestors, nearest first (a cycle or a missing parent ends it)."""
        out = [self.get(name)]
        seen = {name}
        while (parent := out[-1].inherits) and parent not in seen and parent in self.files:
            seen.add(parent)
            out.append(self.get(parent))
        return out

    def lookup(self, name: str, member: str | None = None) -> dict[str, object]:
        """The answer about a class, or about one of its members (own or inherited); the
        names were checked (``check_class``, ``check_member``) before the dump was asked for."""
        chain = self.chain(name)
        inherits = [c.name for c in chain[1:]]
        if member is None:
            return {"class": name, "inherits": inherits, "members": chain[0].names()}
        for ref in chain:
            found = ref.find(member)
            if found is not None:
                return {
                    "class": name,
                    "inherits": inherits,
                    "member": {
                        "name": found.name,
                        "kind": found.kind,
                        "signature": found.signature,
                        "description": found.description,
                        "defined_in": ref.name,
                    },
                }
        everything = [m for ref in chain for kind in ref.members.values() for m in kind]
        near = close_names(member, everything)
        raise NotFound(
            f"{self.engine}'s {name} has no member {member}{_did_you_mean(near)}",
            close_names=near,
        )


def _did_you_mean(near: list[str]) -> str:
    return f"; did you mean {', '.join(near)}?" if near else ""
