"""Checks that a file a Godot export wrote is whole (stdlib only, nothing is executed).

Godot 3.2.3 exits 0 even when a write failed on a full disk, leaving truncated or 0-byte
outputs behind, so the exit status alone proves nothing. Every check here reads the file in
chunks (never a whole 300 MB output at once), bounds its work by the file's size, and raises
``OutputInvalid`` whose ``.message`` is one line naming the output by its file name only.

Formats (all integers little-endian)
====================================

PCK, format version 1 (Godot 3, verified with 3.2.3)::

    u32 magic 0x43504447 ("GDPC"), u32 format version (1), u32 major, minor, patch,
    16 x u32 reserved, u32 file_count, then file_count entries:
    u32 path_len, path (UTF-8, NUL padded to 4), u64 offset, u64 size, 16-byte MD5 of the data

  Offsets are absolute positions in the file that holds the pack: for a pack embedded in an
  executable they count from the start of the executable.

PCK, format version 2 (Godot 4.0-4.3)::

    magic, version (2), major, minor, patch, u32 pack_flags, u64 file_base, 16 x u32 reserved,
    u32 file_count, entries as in version 1 followed by a u32 per-file flags

  A file's data is at ``file_base + offset``; ``file_base`` counts from the pack's start when
  ``pack_flags`` has ``PACK_REL_FILEBASE`` (1 << 1), else from the start of the file.

PCK, format version 3 (Godot 4.4+, verified with 4.6.3; the engine reads only 2 and 3)::

    magic, version (3), major, minor, patch, u32 pack_flags, u64 file_base, u64 dir_offset,
    16 x u32 reserved; at pack start + dir_offset: u32 file_count, entries as in version 2

  ``file_base`` always counts from the pack's start (``PACK_REL_FILEBASE`` is always set).

Flags (versions 2 and 3): ``PACK_DIR_ENCRYPTED`` (1 << 0): the entries are encrypted and
cannot be read without the key, so only the header and the file count are checked to lie
within the file. ``PACK_SPARSE_BUNDLE`` (1 << 2, Godot 4.5+): the files' data lives outside
the pack, so only the directory is checked. Per file: ``PACK_FILE_ENCRYPTED`` (1 << 0) stores
the MD5 of the plaintext, ``PACK_FILE_DELTA`` (1 << 2) marks a delta patch: for both only the
data's bounds are checked; ``PACK_FILE_REMOVAL`` (1 << 1) has no data at all. Any other
format version (such as a future 4) is refused with a message saying so.

Embedded pack: the executable ends with ``u64 pack_size`` then the magic ``"GDPC"``; the pack
starts at ``len - 12 - pack_size`` and occupies the bytes up to that 12-byte trailer.

Checks on a pack: the header, the directory and every file's data lie within the pack, the
directory fits in the file before it is read (entry count and path lengths bounded), the
files' sizes add up to no more than the pack holds (Godot stores each file once, so this bounds
the hashing), and every file's MD5 matches (files are hashed in offset order, in chunks).

Linux export (ELF, verified with 3.2.3 and Debian's ``godot3-runner`` as the template, and
with 4.6.3 and Debian's ``godot-template-release``/``-debug``, whose ``pck`` section is an
8-byte placeholder where 3.2.3's is empty): a plain export is the template byte for byte.
An embedded export (``binary_format/embed_pck``) is the template followed by the pack
(aligned to 8) and its trailer, where Godot rewrote exactly the ``sh_offset`` and ``sh_size``
fields of the section header of the section named ``pck`` (16 bytes in ELF64): ``sh_offset``
is the template's length and ``sh_offset + sh_size`` the file's length. Every other byte of
the template part must be unchanged, and the embedded pack is then checked like a standalone
one. The caller passes candidate templates
(release, debug, several versions): the binary passes if it matches any of them.

``verify_output`` dispatch, by the output's file name and the preset's platform:

============================================  =============================================
output                                        check
============================================  =============================================
``*.pck`` (any platform)                      ``verify_pack``
``*.zip``, ``*.apk``, ``*.aab``, ``*.ipa``,   ``verify_zip``: the central directory is
``*.appx``                                    readable and every member's CRC-32 matches
Linux/X11 or Linux, ``release``/``debug``     ``verify_binary`` against ``templates``
Windows Desktop, ``release``/``debug``        starts with ``b"MZ"``; with ``embedded`` the
                                              embedded pack is checked (rcedit may rewrite
                                              the resources, so no template comparison)
anything else (HTML5 .html/.js/.wasm/.png)    not empty
============================================  =============================================
"""

from __future__ import annotations

import hashlib
import os
import struct
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from godot_mcp.errors import Failed

__all__ = ["OutputInvalid", "verify_binary", "verify_output", "verify_pack", "verify_zip"]

PACK_MAGIC = 0x43504447  # "GDPC"
PACK_DIR_ENCRYPTED = 1 << 0
PACK_REL_FILEBASE = 1 << 1
PACK_SPARSE_BUNDLE = 1 << 2
PACK_FILE_ENCRYPTED = 1 << 0
PACK_FILE_REMOVAL = 1 << 1
PACK_FILE_DELTA = 1 << 2

ZIP_SUFFIXES = (".zip", ".apk", ".aab", ".ipa", ".appx")
_LINUX = frozenset({"linux/x11", "linux", "linuxbsd", "x11"})
_WINDOWS = frozenset({"windows desktop", "windows"})
_BINARY_KINDS = frozenset({"release", "debug"})

_CHUNK = 1 << 20
_MAX_PATH = 1 << 16  # bytes of one entry's path
_TRAILER = struct.Struct("<QI")  # embedded pack: u64 pack_size, u32 magic
_EMBED_ALIGN = 8


class OutputInvalid(Failed):
    """An export output is not whole; ``.message`` is one line naming only its file name."""


def verify_pack(path: Path, *, name: str | None = None) -> None:
    """Check a standalone ``.pck`` (see the module docstring for what is checked)."""
    label = _label(name if name is not None else path.name)
    with _open(path, label) as f:
        size = _size(f)
        if size == 0:
            raise OutputInvalid(f"{label} is empty (0 bytes)")
        _check_pack(f, label, 0, size, embedded=False)


def verify_binary(
    path: Path, templates: Sequence[Path], embedded: bool, *, name: str | None = None
) -> None:
    """Check an exported Linux binary against the export templates it may have been made from."""
    label = _label(name if name is not None else path.name)
    candidates = _existing(templates)
    if not candidates:
        raise OutputInvalid(f"{label}: no export template to compare it with")
    with _open(path, label) as f:
        size = _size(f)
        if size == 0:
            raise OutputInvalid(f"{label} is empty (0 bytes)")
        matched: tuple[int, _Fields | None] | None = None
        outcomes: set[str] = set()
        for template in candidates:
            outcome = _compare_template(f, size, template, embedded)
            if isinstance(outcome, tuple):
                matched = outcome
                break
            outcomes.add(outcome)
        if matched is None:
            if "short" in outcomes:
                raise OutputInvalid(f"{label} is cut short: it ends inside its export template")
            if "bare" in outcomes:
                raise OutputInvalid(
                    f"{label} is cut short: it has no embedded pack after its export template"
                )
            raise OutputInvalid(f"{label} differs from the export template")
        if not embedded:
            return
        template_size, fields = matched
        if fields is not None:
            section_offset = _read_field(f, fields.offset_pos, fields.fmt)
            section_size = _read_field(f, fields.size_pos, fields.fmt)
            if section_offset != template_size:
                raise OutputInvalid(f"{label}: its pck section does not point at the embedded pack")
            if section_offset + section_size > size:
                raise OutputInvalid(
                    f"{label} is cut short: its embedded pack ends past the end of the file"
                )
            if section_offset + section_size < size:
                raise OutputInvalid(f"{label}: its pck section does not reach the end of the file")
        _check_embedded(f, label, size, template_size)


def verify_zip(path: Path, *, name: str | None = None) -> None:
    """Check a zip-based output: its central directory reads and every member's CRC matches."""
    label = _label(name if name is not None else path.name)
    with _open(path, label) as f:
        if _size(f) == 0:
            raise OutputInvalid(f"{label} is empty (0 bytes)")
        try:
            archive = zipfile.ZipFile(f)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError):
            raise OutputInvalid(
                f"{label} is not a whole zip archive (its central directory is missing or damaged)"
            ) from None
        with archive:
            for info in archive.infolist():
                member = _printable(info.filename)
                try:
                    with archive.open(info) as data:
                        while data.read(_CHUNK):
                            pass
                except zipfile.BadZipFile as exc:
                    if str(exc).startswith("Bad CRC-32"):
                        raise OutputInvalid(
                            f"{label}: {member} does not match its CRC-32 "
                            "(the write was incomplete)"
                        ) from None
                    raise OutputInvalid(
                        f"{label}: {member} is damaged (the write was incomplete)"
                    ) from None
                except (zlib.error, EOFError, ValueError, OSError):
                    raise OutputInvalid(
                        f"{label}: {member} is damaged (the write was incomplete)"
                    ) from None
                except (NotImplementedError, RuntimeError):
                    # An unsupported compression method or an encrypted member: Godot writes
                    # neither, and it cannot be checked.
                    raise OutputInvalid(f"{label}: {member} cannot be checked") from None


def verify_output(
    name: str,
    path: Path,
    *,
    platform: str,
    kind: str,
    embedded: bool,
    templates: Sequence[Path],
) -> None:
    """Check one output of an export, chosen by its file name and the preset (see the table)."""
    lower = name.lower()
    family = platform.strip().lower()
    if lower.endswith(".pck"):
        verify_pack(path, name=name)
    elif lower.endswith(ZIP_SUFFIXES):
        verify_zip(path, name=name)
    elif kind in _BINARY_KINDS and family in _LINUX:
        verify_binary(path, templates, embedded, name=name)
    elif kind in _BINARY_KINDS and family in _WINDOWS:
        _verify_windows(path, _label(name), embedded)
    else:
        label = _label(name)
        with _open(path, label) as f:
            if _size(f) == 0:
                raise OutputInvalid(f"{label} is empty (0 bytes)")


# --- packs -------------------------------------------------------------------------------


def _check_pack(f: BinaryIO, label: str, start: int, end: int, *, embedded: bool) -> None:
    """Check the pack occupying ``[start, end)`` of ``f``."""
    its = "its embedded pack's" if embedded else "its"
    where = "its embedded pack" if embedded else "the file"
    # A standalone pack that ends early was cut short; an embedded one ends at its trailer.
    cut = f"{label}:" if embedded else f"{label} is cut short:"

    def short(what: str) -> OutputInvalid:
        end_of = "the pack" if embedded else "the file"
        return OutputInvalid(f"{cut} {its} {what} ends past the end of {end_of}")

    def read(pos: int, n: int, what: str) -> bytes:
        if pos < start or pos + n > end:
            raise short(what)
        f.seek(pos)
        data = f.read(n)
        if len(data) != n:
            raise short(what)
        return data

    magic, version = struct.unpack("<II", read(start, 8, "header"))
    if magic != PACK_MAGIC:
        if embedded:
            raise OutputInvalid(f"{label}: its embedded pack has no GDPC magic at its start")
        raise OutputInvalid(f"{label} is not a Godot pack (no GDPC magic at its start)")
    if version not in (1, 2, 3):
        raise OutputInvalid(
            f"{label} uses pack format version {version}, "
            "which this check does not know (it knows 1, 2 and 3)"
        )
    flags = 0
    if version == 1:
        read(start, 20 + 64 + 4, "header")
        file_base = 0  # offsets are absolute positions in the file
        directory = start + 20 + 64
    elif version == 2:
        flags, file_base = struct.unpack("<IQ", read(start + 20, 12, "header"))
        read(start, 32 + 64 + 4, "header")
        if flags & PACK_REL_FILEBASE:
            file_base += start
        directory = start + 32 + 64
    else:
        flags, file_base, dir_offset = struct.unpack("<IQQ", read(start + 20, 20, "header"))
        read(start, 40 + 64, "header")
        file_base += start
        directory = start + dir_offset
        if directory > end:
            raise short("directory")
        if directory < start + 40 + 64:
            raise OutputInvalid(
                f"{label} has a corrupt header: {its} directory offset points into the header"
            )
    (count,) = struct.unpack("<I", read(directory, 4, "directory"))
    if flags & PACK_DIR_ENCRYPTED:
        return  # the entries are encrypted: nothing more can be read without the key
    entry_tail = 16 + 16 + (4 if version >= 2 else 0)  # offset, size, md5 (+ flags)
    pos = directory + 4
    if count * (4 + entry_tail) > end - pos:
        raise short("directory")

    # The whole directory first (a cut inside it is reported as such), then the data.
    f.seek(pos)
    entries: list[tuple[str, int, int, bytes, int]] = []
    for index in range(count):
        head = f.read(4)
        if len(head) != 4 or pos + 4 > end:
            raise short("directory")
        (path_len,) = struct.unpack("<I", head)
        if path_len > _MAX_PATH:
            raise OutputInvalid(
                f"{label} has a corrupt directory: entry {index} claims a {path_len}-byte path"
            )
        pos += 4 + path_len + entry_tail
        raw = f.read(path_len + entry_tail)
        if pos > end or len(raw) != path_len + entry_tail:
            raise short("directory")
        offset, size = struct.unpack_from("<QQ", raw, path_len)
        md5 = raw[path_len + 16 : path_len + 32]
        file_flags = struct.unpack_from("<I", raw, path_len + 32)[0] if version >= 2 else 0
        entries.append((_res_path(raw[:path_len]), offset, size, md5, file_flags))
    if flags & PACK_SPARSE_BUNDLE:
        return  # the files' data lives outside the pack

    hashed: list[tuple[int, int, bytes, str]] = []
    total = 0
    for res, offset, size, md5, file_flags in entries:
        if file_flags & PACK_FILE_REMOVAL:
            continue
        data = file_base + offset
        if data < start:
            raise OutputInvalid(f"{label} has a corrupt directory: {res} starts before the pack")
        if data + size > end:
            raise OutputInvalid(f"{cut} {res} ends past the end of {where}")
        total += size
        if total > end - start:
            raise OutputInvalid(
                f"{label} has a corrupt directory: its files add up to more than the pack holds"
            )
        if file_flags == 0:  # encrypted (MD5 of the plaintext) or delta: bounds only
            hashed.append((data, size, md5, res))

    for data, size, md5, res in sorted(hashed):
        digest = hashlib.md5(usedforsecurity=False)
        f.seek(data)
        left = size
        while left:
            chunk = f.read(min(_CHUNK, left))
            if not chunk:
                raise OutputInvalid(f"{cut} {res} ends past the end of {where}")
            digest.update(chunk)
            left -= len(chunk)
        if digest.digest() != md5:
            raise OutputInvalid(f"{label}: {res} does not match its MD5 (the write was incomplete)")


def _check_embedded(f: BinaryIO, label: str, size: int, region_start: int | None) -> None:
    """Check the pack embedded at the end of ``f`` (after ``region_start``, when known)."""
    lowest = region_start if region_start is not None else 2
    if size < lowest + _TRAILER.size:
        raise OutputInvalid(f"{label} is cut short: it has no embedded pack")
    f.seek(size - _TRAILER.size)
    pack_size, magic = _TRAILER.unpack(f.read(_TRAILER.size))
    if magic != PACK_MAGIC:
        raise OutputInvalid(
            f"{label} is cut short: it does not end with an embedded pack's trailer"
        )
    end = size - _TRAILER.size
    if pack_size > end - lowest:
        raise OutputInvalid(
            f"{label} has a corrupt embedded pack: "
            "its trailer claims more bytes than the file holds"
        )
    start = end - pack_size
    if region_start is not None and start >= region_start + _EMBED_ALIGN:
        raise OutputInvalid(f"{label}: its embedded pack does not start where its template ends")
    _check_pack(f, label, start, end, embedded=True)


def _verify_windows(path: Path, label: str, embedded: bool) -> None:
    with _open(path, label) as f:
        size = _size(f)
        if size == 0:
            raise OutputInvalid(f"{label} is empty (0 bytes)")
        if f.read(2) != b"MZ":
            raise OutputInvalid(f"{label} is not a Windows executable (no MZ header)")
        if embedded:
            _check_embedded(f, label, size, None)


# --- templates ---------------------------------------------------------------------------


class _Fields:
    """Where Godot rewrites the ``pck`` section header's ``sh_offset`` and ``sh_size``."""

    __slots__ = ("fmt", "offset_pos", "size_pos")

    def __init__(self, offset_pos: int, size_pos: int, fmt: str) -> None:
        self.offset_pos = offset_pos
        self.size_pos = size_pos
        self.fmt = fmt

    def ranges(self) -> list[tuple[int, int]]:
        width = struct.calcsize(self.fmt)
        return sorted(
            [(self.offset_pos, self.offset_pos + width), (self.size_pos, self.size_pos + width)]
        )


def _pck_section(t: BinaryIO, size: int) -> _Fields | None:
    """The ``pck`` section header's rewritable fields in an ELF template, or ``None``."""
    t.seek(0)
    head = t.read(64)
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[5] not in (1, 2):
        return None  # (an ELF32 header is 52 bytes, but no template is that small)
    order = "<" if head[5] == 1 else ">"
    if head[4] == 2:
        shoff = struct.unpack_from(order + "Q", head, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", head, 0x3A)
        entry, field = 64, "Q"
        name_at, offset_at, size_at = 0, 24, 32
    elif head[4] == 1:
        shoff = struct.unpack_from(order + "I", head, 0x20)[0]
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", head, 0x2E)
        entry, field = 40, "I"
        name_at, offset_at, size_at = 0, 16, 20
    else:
        return None
    if shentsize < entry or shnum == 0 or shstrndx >= shnum or shoff + shnum * shentsize > size:
        return None
    t.seek(shoff)
    table = t.read(shnum * shentsize)
    if len(table) != shnum * shentsize:
        return None

    def header(i: int) -> tuple[int, int, int]:
        base = i * shentsize
        (name,) = struct.unpack_from(order + "I", table, base + name_at)
        (offset,) = struct.unpack_from(order + field, table, base + offset_at)
        (length,) = struct.unpack_from(order + field, table, base + size_at)
        return name, offset, length

    _, str_offset, str_size = header(shstrndx)
    if str_offset + str_size > size or str_size > _CHUNK:
        return None
    t.seek(str_offset)
    strings = t.read(str_size)
    for i in range(shnum):
        name, _, _ = header(i)
        if strings[name : name + 4] == b"pck\0":
            base = shoff + i * shentsize
            return _Fields(base + offset_at, base + size_at, order + field)
    return None


def _compare_template(
    f: BinaryIO, size: int, template: Path, embedded: bool
) -> tuple[int, _Fields | None] | str:
    """``(template size, fields)`` if ``f`` was made from ``template``, else why not.

    "short": ``f`` is a proper prefix of the template; "bare": an embedded export that is just
    the template; "differs": anything else.
    """
    try:
        t = open(template, "rb")  # noqa: SIM115 (closed below)
    except OSError:
        return "differs"
    with t:
        template_size = _size(t)
        if not embedded and size > template_size:
            return "differs"
        fields = _pck_section(t, template_size) if embedded else None
        allowed = fields.ranges() if fields is not None else []
        f.seek(0)
        t.seek(0)
        at = 0
        limit = min(size, template_size)
        while at < limit:
            n = min(_CHUNK, limit - at)
            a = f.read(n)
            b = t.read(n)
            if len(a) != n or len(b) != n:
                return "differs"
            if a != b and not _equal_outside(a, b, at, allowed):
                return "differs"
            at += n
    if size < template_size:
        return "short"
    if not embedded and size != template_size:
        return "differs"
    if embedded and size == template_size:
        return "bare"
    return template_size, fields


def _equal_outside(a: bytes, b: bytes, at: int, allowed: list[tuple[int, int]]) -> bool:
    """Whether chunks ``a`` and ``b`` (at file offset ``at``) agree outside ``allowed``."""
    cut = 0
    for lo, hi in allowed:
        lo, hi = max(lo - at, cut), min(hi - at, len(a))
        if lo >= hi:
            continue
        if a[cut:lo] != b[cut:lo]:
            return False
        cut = hi
    return a[cut:] == b[cut:]


def _read_field(f: BinaryIO, pos: int, fmt: str) -> int:
    f.seek(pos)
    value: int = struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    return value


def _existing(templates: Sequence[Path]) -> list[Path]:
    seen: set[Path] = set()
    found: list[Path] = []
    for template in templates:
        try:
            real = template.resolve()
            if not real.is_file() or not os.access(real, os.R_OK) or real in seen:
                continue
        except OSError:
            continue
        seen.add(real)
        found.append(real)
    return found


# --- small helpers -----------------------------------------------------------------------


@contextmanager
def _open(path: Path, label: str) -> Iterator[BinaryIO]:
    """The output opened for reading; read errors become ``OutputInvalid``."""
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        raise OutputInvalid(f"{label} is missing") from None
    except OSError as exc:
        raise OutputInvalid(f"{label} cannot be read ({exc.strerror or 'error'})") from None
    try:
        with f:
            yield f
    except OSError as exc:
        raise OutputInvalid(f"{label} cannot be read ({exc.strerror or 'error'})") from None


def _size(f: BinaryIO) -> int:
    return os.fstat(f.fileno()).st_size


def _printable(text: str, limit: int = 200) -> str:
    clean = "".join(c if c.isprintable() else "?" for c in text)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


def _label(name: str) -> str:
    """The output's file name only, printable and on one line."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    return _printable(base or "output", 120)


def _res_path(raw: bytes) -> str:
    text = raw.rstrip(b"\0").decode("utf-8", errors="replace")
    if "://" not in text:
        text = "res://" + text.lstrip("/")  # Godot 4.4+ stores paths without "res://"
    return _printable(text)
