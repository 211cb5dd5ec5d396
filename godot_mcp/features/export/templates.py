"""Export templates: where a preset's templates are found, and whether a custom one may be used.

Godot looks for its installed templates under ``$XDG_DATA_HOME/godot`` (Godot 3
``templates/<version>/linux_x11_64_release``, Godot 4 ``export_templates/<version>/
linux_release.<arch>``). A preset may name a custom template instead: a ``res://`` one is
project content; any other is read from the machine, so it must be named by absolute path and
be a plausible template for the preset's platform (an ELF executable for Linux, a PE one for
Windows, a zip for the zipped platforms). It is opened once and checked from that descriptor,
which the export's sandbox binds read-only at ``TEMPLATE_MOUNT/<kind>``; no refusal names a
path. A template among the server's own files is refused whatever its bytes: one that lies
(links resolved, the path normalised) in the state dir or below it, its parent, or this
package (``private`` roots, :func:`redact.private_roots`), so no preset can export them back.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path

from godot_mcp.engine.process.redact import PathPair
from godot_mcp.engine.project.presets import Preset
from godot_mcp.errors import InvalidArgument

__all__ = [
    "TEMPLATE_DIRS",
    "TEMPLATE_MOUNT",
    "TemplateRefused",
    "custom_template_refusal",
    "open_custom_template",
    "template_bytes",
    "template_candidates",
    "template_paths",
    "user_data_home",
]

TEMPLATE_DIRS = ("templates", "export_templates")
_LINUX = ("linux/x11", "linux", "linuxbsd", "x11")
_WINDOWS = ("windows desktop", "windows")
_ZIPPED = ("android", "html5", "web", "mac osx", "macos", "osx", "ios", "uwp")
TEMPLATE_MOUNT = "/run/godot-mcp/custom_template"  # where a sandboxed export sees its template
_BLANK = "".join(map(chr, range(33)))  # what Godot's strip_edges() strips


def user_data_home(env: Mapping[str, str]) -> Path:
    data = env.get("XDG_DATA_HOME", "")
    if data and os.path.isabs(data):
        return Path(data)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".local" / "share"


def template_candidates(
    env: Mapping[str, str], preset: Preset, kind: str, project: Path | None = None
) -> list[Path]:
    """The Linux export templates a ``kind`` export of ``preset`` may have been made from.

    The preset's custom template first, then the user's installed ones of every version
    (Godot 3 ``templates/<version>/linux_x11_64_release``, Godot 4
    ``export_templates/<version>/linux_release.<arch>``). Empty for packs and other platforms.
    """
    if kind == "pack" or preset.platform.strip().lower() not in _LINUX:
        return []
    found: list[Path] = []
    custom = preset.custom_template(kind)
    if custom.startswith("res://") and project is not None:
        found.append(project / custom.removeprefix("res://"))
    elif custom and os.path.isabs(custom):
        found.append(Path(custom))
    user_godot = user_data_home(env) / "godot"
    bits = "64" if preset.bits_64 else "32"
    found += sorted(user_godot.glob(f"templates/*/linux_x11_{bits}_{kind}"))
    found += sorted(user_godot.glob(f"export_templates/*/linux_{kind}.*"))
    return [p for p in found if p.is_file()]


def template_paths(env: Mapping[str, str]) -> list[Path]:
    """The user's template dirs and the real files their entries point at (for the sandbox)."""
    user_godot = user_data_home(env) / "godot"
    found: list[Path] = []
    for name in TEMPLATE_DIRS:
        root = user_godot / name
        if not root.is_dir():
            continue
        found.append(root)
        for entry in root.glob("*/*"):
            if entry.is_symlink() and entry.exists():
                found.append(Path(os.path.realpath(entry)))
    return found


class TemplateRefused(InvalidArgument):
    """A preset's custom template may not be used; ``message`` says why (no path in it)."""


def custom_template_refusal(
    env: Mapping[str, str], preset: Preset, kind: str, private: Iterable[PathPair] = ()
) -> str | None:
    """Why the preset's custom template for ``kind`` may not be used, or None.

    A ``res://`` template is project content (judged with the snapshot). Any other one is read
    from the machine, so it must be named by absolute path, lie outside the server's
    ``private`` roots and be a plausible template for the preset's platform
    (``open_custom_template``). ``env`` is not used (kept for callers).
    """
    del env
    try:
        fd = open_custom_template(preset, kind, private)
    except TemplateRefused as exc:
        return exc.message
    if fd is not None:
        os.close(fd)
    return None


def open_custom_template(preset: Preset, kind: str, private: Iterable[PathPair] = ()) -> int | None:
    """A read-only descriptor of the preset's custom template named by absolute path.

    ``None`` when the preset names none for ``kind`` or names a ``res://`` one. Otherwise the
    path must not lie among the server's own files: under one of the ``private`` roots (the
    state dir, its parent, as :func:`redact.private_roots` gives them) or this package, judged
    on the path as written once normalised (``..``, ``//``, ``.``) and on the file the opened
    descriptor names (every link resolved). It (links followed) must name a regular file (not
    a directory, FIFO, device or socket: it is opened ``O_PATH`` first, so opening never
    blocks nor wakes a device) that the server can read, whose first bytes are those of a
    template for the preset's platform: an ELF executable for Linux, a PE executable for
    Windows, a zip for Android, Web/HTML5, macOS, iOS and UWP. ``TemplateRefused`` else, its
    message naming the reason and never a path (not even where a link leads). The caller
    closes the descriptor.
    """
    custom = preset.custom_template(kind)
    if not custom or custom.startswith("res://"):
        return None
    where = f"preset {preset.name!r}: its custom_template/{kind}"
    path = custom.strip(_BLANK)
    if not os.path.isabs(path):
        raise TemplateRefused(
            f"{where} lies outside the project and is neither a res:// path nor an absolute "
            "path; exports read nothing else"
        )
    roots = _private_roots(private)
    refused = TemplateRefused(
        f"{where} is one of the server's own files (in its state dir, beside it or in its "
        "package); exports never read them"
    )
    if _under(os.path.normpath(path), roots) or _under(os.path.realpath(path), roots):
        raise refused
    try:
        fd = _open_regular(path, roots)
        try:
            _check_magic(fd, preset.platform)
        except BaseException:
            os.close(fd)
            raise
    except _Private:
        raise refused from None
    except _NotTemplate as exc:
        raise TemplateRefused(
            f"{where} lies outside the project and is not an export template for "
            f"{preset.platform or 'its platform'}: {exc.args[0]}"
        ) from None
    return fd


class _NotTemplate(Exception):
    pass


class _Private(Exception):
    pass


_PACKAGE = Path(__file__).resolve().parents[2]  # godot_mcp/


def _private_roots(private: Iterable[PathPair]) -> list[str]:
    """The dirs no template may lie in: each private path as given (absolute, normalised)
    and with its links resolved, and this package. ``/`` never (it would be everything)."""
    roots: set[str] = {str(_PACKAGE)}
    for given, _placeholder in private:
        text = str(given)
        if not text.strip("/"):
            continue
        roots.add(os.path.normpath(os.path.abspath(text)))
        roots.add(os.path.realpath(text))
    return sorted(r for r in roots if r != "/")


def _under(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root + "/") for root in roots)


def _open_regular(path: str, roots: list[str] | None = None) -> int:
    """``path`` opened read-only, refused unless (links followed) it is a regular file;
    ``_Private`` when the file it names lies under one of ``roots``."""
    try:
        handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _NotTemplate("it does not exist") from None
    except NotADirectoryError:
        raise _NotTemplate("it does not exist") from None
    except OSError as exc:
        raise _NotTemplate(f"it cannot be opened ({exc.strerror or 'error'})") from None
    try:
        if roots:
            try:  # where the descriptor is, every link resolved, whatever the path names now
                named = os.readlink(f"/proc/self/fd/{handle}")
            except OSError:
                named = ""
            if not named.startswith("/") or _under(named, roots):
                raise _Private
        _require_regular(os.fstat(handle).st_mode)
        try:  # the very file the O_PATH descriptor names, whatever the path names by now
            fd = os.open(
                f"/proc/self/fd/{handle}",
                os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK,
            )
        except OSError as exc:
            raise _NotTemplate(f"it cannot be read ({exc.strerror or 'error'})") from None
    finally:
        os.close(handle)
    try:
        _require_regular(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _require_regular(mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        what = "a directory"
    elif stat.S_ISFIFO(mode):
        what = "a FIFO"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        what = "a device"
    elif stat.S_ISSOCK(mode):
        what = "a socket"
    else:
        what = "not a file"
    raise _NotTemplate(f"it is {what}, not a regular file")


def _check_magic(fd: int, platform: str) -> None:
    """Refuse a file whose first bytes are not those of a template for ``platform``."""
    key = platform.strip().lower()
    try:
        head = os.pread(fd, 64, 0)
        if key in _LINUX:
            if not _is_elf_executable(head):
                raise _NotTemplate("not an ELF executable")
        elif key in _WINDOWS:
            if not _is_pe(fd, head):
                raise _NotTemplate("not a Windows (PE) executable")
        elif key in _ZIPPED:
            if not head.startswith(b"PK\x03\x04"):
                raise _NotTemplate("not a zip archive")
        else:
            raise _NotTemplate("no export template format is known for this platform")
    except OSError as exc:
        raise _NotTemplate(f"it cannot be read ({exc.strerror or 'error'})") from None


def _is_elf_executable(head: bytes) -> bool:
    """ELF magic, a known class and byte order, and type executable (or PIE: shared object)."""
    if len(head) < 18 or not head.startswith(b"\x7fELF") or head[4] not in (1, 2):
        return False
    if head[5] not in (1, 2):
        return False
    (e_type,) = struct.unpack_from("<H" if head[5] == 1 else ">H", head, 16)
    return e_type in (2, 3)  # ET_EXEC, ET_DYN


def _is_pe(fd: int, head: bytes) -> bool:
    """``MZ`` and, where its header says, the ``PE\\0\\0`` signature."""
    if len(head) < 64 or not head.startswith(b"MZ"):
        return False
    (offset,) = struct.unpack_from("<I", head, 0x3C)
    return os.pread(fd, 4, offset) == b"PE\0\0"


def template_bytes(
    env: Mapping[str, str], preset: Preset, kind: str, project: Path | None = None
) -> int:
    """The size of the largest candidate template (0 when there is none)."""
    found = template_candidates(env, preset, kind, project)
    return max((p.stat().st_size for p in found), default=0)
