"""godot/verify.py against real exports of each engine and synthetic Godot 4 packs and zips.

The real outputs are exported once per module and engine by its headless Godot (Debian's
``godot3-runner``, or Godot 4's ``godot-template-release``/``-debug``, as the Linux templates)
from a copy of the engine's demo project plus an "Embed" preset.
Corruptions are applied to private copies; every check asserts the exact message.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import warnings
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from godot_mcp.features.export.verify import (
    OutputInvalid,
    verify_binary,
    verify_output,
    verify_pack,
    verify_zip,
)
from tests.godot import export_fixtures
from tests.support.engines import Engine

MAGIC = 0x43504447
CHUNK = 1 << 20

EMBED_PRESET = """
[preset.2]

name="Embed"
platform="Linux/X11"
runnable=false
custom_features=""
export_filter="all_resources"
include_filter=""
exclude_filter=""
export_path="build/embed.x86_64"
script_export_mode=1
script_encryption_key=""

[preset.2.options]

custom_template/debug=""
custom_template/release=""
binary_format/64_bits=true
binary_format/embed_pck=true
texture_format/bptc=false
texture_format/s3tc=true
texture_format/etc=false
texture_format/etc2=false
texture_format/no_bptc_fallbacks=true
"""


# Godot 4's form of the same preset.
EMBED_PRESET4 = "\n" + export_fixtures.PRESET4.format(
    index=2, name="Embed", runnable="false", export_path="build/embed.x86_64"
).replace("binary_format/embed_pck=false", "binary_format/embed_pck=true")


def require_godot(*names: str) -> None:
    """Skip loudly when a Godot binary is genuinely absent."""
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        reason = f"SKIPPED LOUDLY: {', '.join(missing)} not installed; real-Godot test not run"
        warnings.warn(reason, stacklevel=2)
        pytest.skip(reason)


def fails(check: Callable[[], None], message: str) -> None:
    """``check`` raises OutputInvalid with exactly ``message``."""
    with pytest.raises(OutputInvalid) as caught:
        check()
    assert caught.value.message == message
    assert str(caught.value) == message


# --- the real exports --------------------------------------------------------------------


@dataclass(frozen=True)
class Exports:
    pack: Path  # --export-pack Pack
    plain: Path  # --export Linux/X11 (binary + demo.pck beside it)
    embed: Path  # --export Embed (embed_pck=true)
    templates: list[Path]  # the release and debug template links
    template: Path  # what they point at
    scratch: Path


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory, engine: Engine) -> Iterator[Exports]:
    base = tmp_path_factory.mktemp(f"verify-{engine.name}")
    project = engine.copy_demo(base / "demo")
    presets = project / "export_presets.cfg"
    embed = EMBED_PRESET
    if engine.major == 4:
        embed = EMBED_PRESET4
    presets.write_text(presets.read_text() + embed)
    data = base / "xdg" / "data"
    template_dir = engine.install_templates(data)
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(data),
        "XDG_CONFIG_HOME": str(base / "xdg" / "config"),
        "XDG_CACHE_HOME": str(base / "xdg" / "cache"),
    }
    out = base / "out"
    release = "--export" if engine.major == 3 else "--export-release"
    jobs = [
        ("--export-pack", "Pack", out / "pack" / "demo.pck"),
        (release, "Linux/X11", out / "plain" / "demo.x86_64"),
        (release, "Embed", out / "embed" / "embed.x86_64"),
    ]
    for flag, preset, target in jobs:
        target.parent.mkdir(parents=True)
        done = subprocess.run(
            [*engine.headless_argv(), "--path", str(project), flag, preset, str(target)],
            env=env,
            capture_output=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stdout.decode(errors="replace")[-2000:]
        assert target.is_file(), done.stdout.decode(errors="replace")[-2000:]
    templates = [template_dir / name for name in engine.template_names]
    scratch = base / "scratch"
    scratch.mkdir()
    yield Exports(
        pack=jobs[0][2],
        plain=jobs[1][2],
        embed=jobs[2][2],
        templates=templates,
        template=templates[0].resolve(),
        scratch=scratch,
    )
    shutil.rmtree(base, ignore_errors=True)


@contextmanager
def copy_of(exports: Exports, source: Path, *, keep: int | None = None) -> Iterator[Path]:
    """A private copy of ``source`` (only its first ``keep`` bytes), deleted afterwards."""
    target = exports.scratch / source.name
    with open(source, "rb") as src, open(target, "wb") as dst:
        left = source.stat().st_size if keep is None else keep
        while left:
            chunk = src.read(min(CHUNK, left))
            assert chunk
            dst.write(chunk)
            left -= len(chunk)
    try:
        yield target
    finally:
        target.unlink()


def flip(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        assert len(byte) == 1
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))


def put(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


@dataclass(frozen=True)
class Layout:
    """Where things are in a pack, read independently of verify.py.

    Format 1 (Godot 3): a 20-byte head, 16 reserved u32, the file count at 84, the directory
    right after it, then the files; offsets are absolute. Format 3 (Godot 4.4+): the head,
    u32 flags, u64 file base, u64 directory offset (at 32), 16 reserved u32 (104 bytes in
    all), the files from the base (16-aligned), and the directory last, at the directory
    offset; offsets count from the base, paths are stored without ``res://``; each entry
    ends with a u32 of flags.
    """

    version: int
    header: int  # bytes verify.py reads as the header (format 1: the file count included)
    directory: int  # absolute position of the file count
    end: int  # absolute end of the directory
    entries: list[tuple[str, int, int, int]]  # res:// path, absolute data offset, size, entry


def layout(data: bytes, start: int = 0) -> Layout:
    magic, version = struct.unpack_from("<II", data, start)
    assert magic == MAGIC and version in (1, 3), version
    if version == 1:
        header, base, directory = 88, 0, start + 84
    else:
        _flags, base, offset = struct.unpack_from("<IQQ", data, start + 20)
        header, base, directory = 104, start + base, start + offset
    (count,) = struct.unpack_from("<I", data, directory)
    tail = 32 if version == 1 else 36
    pos = directory + 4
    entries = []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, pos)
        path = data[pos + 4 : pos + 4 + n].rstrip(b"\0").decode()
        offset, size = struct.unpack_from("<QQ", data, pos + 4 + n)
        res = path if "://" in path else "res://" + path
        entries.append((res, base + offset, size, pos))
        pos += 4 + n + tail
    return Layout(version, header, directory, pos, entries)


def pck_section_header(template: Path) -> int:
    """File offset of the ELF64 section header named "pck" (test-side reading)."""
    data = template.read_bytes()
    assert data[:6] == b"\x7fELF\x02\x01"
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    strtab = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 24)[0]
    for i in range(shnum):
        (name,) = struct.unpack_from("<I", data, shoff + i * shentsize)
        if data[strtab + name : strtab + name + 4] == b"pck\0":
            return shoff + i * shentsize
    raise AssertionError("the template has no pck section")


def differing_positions(a: Path, b: Path, limit: int) -> list[int]:
    found = []
    with open(a, "rb") as fa, open(b, "rb") as fb:
        at = 0
        while at < limit:
            x, y = fa.read(min(CHUNK, limit - at)), fb.read(min(CHUNK, limit - at))
            if x != y:
                found += [at + i for i in range(len(x)) if x[i] != y[i]]
            at += len(x)
    return found


# --- what each engine writes (re-verified, so a change of engine shows here first) --------


def test_each_engines_layout_facts(exports: Exports, engine: Engine) -> None:
    """Godot 3 (3.2.3, 3.6.2) writes pack format 1 with absolute offsets; Godot 4.6.3 format 3
    with the files from a 16-aligned base after the 104-byte header and the directory last, and
    a remapped scene (``main.tscn.remap``, the scene itself under ``.godot/exported``). The
    header names the engine's own version."""
    pack = exports.pack.read_bytes()
    facts = layout(pack)
    version = tuple(int(part) for part in engine.version.split(".")[:3])  # the pack's header
    if engine.major == 3:
        assert struct.unpack_from("<5I", pack, 0) == (MAGIC, 1, *version)
        assert facts.end < min(off for _, off, _, _ in facts.entries)
        scene = "res://main.tscn"
    else:
        assert struct.unpack_from("<5I", pack, 0) == (MAGIC, 3, *version)
        flags, base, _ = struct.unpack_from("<IQQ", pack, 20)
        assert flags & 2 and base % 16 == 0 and 104 <= base < 120  # PACK_REL_FILEBASE
        assert facts.end == len(pack)
        assert max(off + size for _, off, size, _ in facts.entries) <= facts.directory
        assert b"res://" not in pack[facts.directory :]
        scene = "res://main.tscn.remap"
    paths = {p for p, _, _, _ in facts.entries}
    assert scene in paths and "res://project.binary" in paths

    template_size = exports.template.stat().st_size
    assert exports.plain.read_bytes() == exports.template.read_bytes()

    embed = exports.embed.read_bytes()
    pack_size, magic = struct.unpack_from("<QI", embed, len(embed) - 12)
    assert magic == MAGIC
    start = len(embed) - 12 - pack_size
    assert template_size <= start < template_size + 8
    # The embedded entries hold the same files as the standalone pack, inside the pack.
    inside = layout(embed, start)
    for path, offset, size, _ in inside.entries:
        assert start < offset and offset + size <= len(embed) - 12, path
    assert {p for p, _, _, _ in inside.entries} == paths

    header = pck_section_header(exports.template)
    diffs = differing_positions(exports.template, exports.embed, template_size)
    assert diffs and all(header + 24 <= d < header + 40 for d in diffs)
    sh_offset, sh_size = struct.unpack_from("<QQ", embed, header + 24)
    # The template's own pck section: empty in Godot 3.2.3's, an 8-byte placeholder in 3.6.2's
    # and 4.6.3's.
    placeholder = struct.unpack_from("<Q", exports.template.read_bytes(), header + 32)[0]
    assert placeholder == (0 if engine.version.startswith("3.2.") else 8)
    assert sh_offset == template_size
    assert sh_offset + sh_size == len(embed)


# --- real outputs pass -------------------------------------------------------------------


def test_real_outputs_pass(exports: Exports) -> None:
    verify_pack(exports.pack)
    verify_pack(exports.plain.with_name("demo.pck"))
    verify_binary(exports.plain, exports.templates, embedded=False)
    verify_binary(exports.embed, exports.templates, embedded=True)
    for name, path, embedded in (
        ("demo.pck", exports.pack, False),
        ("demo.x86_64", exports.plain, False),
        ("demo.pck", exports.plain.with_name("demo.pck"), False),
        ("embed.x86_64", exports.embed, True),
    ):
        for platform, kind in (("Linux/X11", "release"), ("Linux", "debug")):
            verify_output(
                name,
                path,
                platform=platform,
                kind=kind,
                embedded=embedded,
                templates=exports.templates,
            )


def test_the_plain_binary_is_not_taken_for_an_embedded_one(exports: Exports) -> None:
    fails(
        lambda: verify_binary(exports.plain, exports.templates, embedded=True),
        "demo.x86_64 is cut short: it has no embedded pack after its export template",
    )
    fails(
        lambda: verify_binary(exports.embed, exports.templates, embedded=False),
        "embed.x86_64 differs from the export template",
    )


# --- a damaged standalone pack -----------------------------------------------------------


def test_truncated_pack(exports: Exports) -> None:
    """A cut before the directory's end is reported as such on both formats (format 3 keeps
    its directory last, so every cut of a format-3 pack is one); a cut after it (format 1)
    names the first file, in directory order, whose data it removes."""
    data = exports.pack.read_bytes()
    facts = layout(data)
    last = max(facts.entries, key=lambda e: e[1] + e[2])
    first_data = min(off for _, off, _, _ in facts.entries)
    header = "demo.pck is cut short: its header ends past the end of the file"
    directory = "demo.pck is cut short: its directory ends past the end of the file"

    def expected(cut: int) -> str | None:
        if cut == 0:
            return "demo.pck is empty (0 bytes)"
        if cut < facts.header:
            return header
        if cut < facts.end:
            return directory
        gone = [p for p, off, size, _ in facts.entries if off + size > cut]
        return f"demo.pck is cut short: {gone[0]} ends past the end of the file" if gone else None

    cuts = {0, 3, 50, facts.header - 1, facts.header, facts.header + 32, facts.directory}
    cuts |= {facts.directory + 5, facts.end - 1, first_data + 1, last[1] + last[2] - 1}
    assert max(cuts) < len(data)
    messages = {keep: expected(keep) for keep in sorted(cuts)}
    for keep, message in messages.items():
        assert message is not None
        with copy_of(exports, exports.pack, keep=keep) as cut:
            fails(lambda cut=cut: verify_pack(cut), message)
    # Format 1's cuts in the data were made, and name the file they cut.
    in_data = [m for m in messages.values() if m and "res://" in m]
    assert len(in_data) == (2 if facts.version == 1 else 0)
    if facts.version == 1:
        # Godot 3 pads the last file to 16 bytes: a cut inside that padding loses no data.
        assert last[1] + last[2] < len(data) and expected(last[1] + last[2]) is None
        with copy_of(exports, exports.pack, keep=last[1] + last[2]) as cut:
            verify_pack(cut)


def test_pack_with_a_flipped_data_byte(exports: Exports) -> None:
    entries = layout(exports.pack.read_bytes()).entries
    assert len(entries) >= 3
    for path, offset, size, _ in entries:
        for position in (offset, offset + size // 2, offset + size - 1):
            with copy_of(exports, exports.pack) as bad:
                flip(bad, position)
                fails(
                    lambda bad=bad: verify_pack(bad),
                    f"demo.pck: {path} does not match its MD5 (the write was incomplete)",
                )


def test_pack_with_a_damaged_header_or_directory(exports: Exports) -> None:
    data = exports.pack.read_bytes()
    facts = layout(data)
    path, offset, size, at = facts.entries[0]
    (path_len,) = struct.unpack_from("<I", data, at)
    entry0 = at + 4 + path_len  # its offset field
    base = offset - struct.unpack_from("<Q", data, entry0)[0]
    cases: list[tuple[int, bytes, str]] = [
        (0, b"XDPC", "demo.pck is not a Godot pack (no GDPC magic at its start)"),
        (
            4,
            struct.pack("<I", 4),
            "demo.pck uses pack format version 4, which this check does not know "
            "(it knows 1, 2 and 3)",
        ),
        (
            facts.directory,
            struct.pack("<I", 10**6),
            "demo.pck is cut short: its directory ends past the end of the file",
        ),
        (
            facts.directory + 4,
            struct.pack("<I", 70000),
            "demo.pck has a corrupt directory: entry 0 claims a 70000-byte path",
        ),
        (
            entry0,
            struct.pack("<Q", len(data) - base),
            f"demo.pck is cut short: {path} ends past the end of the file",
        ),
        (
            entry0 + 8,
            struct.pack("<Q", size + 1),
            f"demo.pck: {path} does not match its MD5 (the write was incomplete)",
        ),
        (
            entry0 + 16,
            b"\0" * 16,
            f"demo.pck: {path} does not match its MD5 (the write was incomplete)",
        ),
    ]
    if facts.version == 3:  # the directory offset of format 3's header
        cases += [
            (
                32,
                struct.pack("<Q", 50),
                "demo.pck has a corrupt header: its directory offset points into the header",
            ),
            (
                32,
                struct.pack("<Q", len(data) + 1),
                "demo.pck is cut short: its directory ends past the end of the file",
            ),
        ]
    assert offset < len(data)
    for position, patch, message in cases:
        with copy_of(exports, exports.pack) as bad:
            put(bad, position, patch)
            fails(lambda bad=bad: verify_pack(bad), message)


def test_messages_name_the_output_not_where_it_is(exports: Exports) -> None:
    keep = layout(exports.pack.read_bytes()).header + 8
    with copy_of(exports, exports.pack, keep=keep) as cut:
        stored = cut.rename(cut.with_name("blob-1234"))
        try:
            fails(
                lambda: verify_output(
                    "build/dir/game.pck",
                    stored,
                    platform="Linux/X11",
                    kind="pack",
                    embedded=False,
                    templates=[],
                ),
                "game.pck is cut short: its directory ends past the end of the file",
            )
        finally:
            stored.rename(cut)
    fails(lambda: verify_pack(exports.scratch / "gone.pck"), "gone.pck is missing")
    fails(lambda: verify_pack(exports.scratch), "scratch cannot be read (Is a directory)")
    with copy_of(exports, exports.pack, keep=0) as empty:
        fails(
            lambda: verify_output(
                "a\nb\u2028c.pck", empty, platform="", kind="pack", embedded=False, templates=[]
            ),
            "a?b?c.pck is empty (0 bytes)",
        )


# --- a damaged binary --------------------------------------------------------------------


def test_plain_binary_with_a_flipped_byte(exports: Exports) -> None:
    size = exports.plain.stat().st_size
    header = pck_section_header(exports.template)
    with copy_of(exports, exports.plain) as bad:
        for position in (0, 4, 1 << 20, size // 2, header + 24, header + 32, size - 1):
            flip(bad, position)
            fails(
                lambda bad=bad: verify_binary(bad, exports.templates, embedded=False),
                "demo.x86_64 differs from the export template",
            )
            flip(bad, position)  # restore
        verify_binary(bad, exports.templates, embedded=False)
        with open(bad, "ab") as f:
            f.write(b"\0")  # one byte more than the template
        fails(
            lambda: verify_binary(bad, exports.templates, embedded=False),
            "demo.x86_64 differs from the export template",
        )


def test_embedded_binary_with_a_flipped_byte(exports: Exports) -> None:
    template_size = exports.template.stat().st_size
    header = pck_section_header(exports.template)
    embed = exports.embed.read_bytes()
    pack_size = struct.unpack_from("<Q", embed, len(embed) - 12)[0]
    start = len(embed) - 12 - pack_size
    path, offset, size, _ = layout(embed, start).entries[0]
    differs = "embed.x86_64 differs from the export template"
    cases = [
        (0, differs),
        (1 << 20, differs),
        (header + 23, differs),  # just before sh_offset
        (header + 40, differs),  # just after sh_size
        (header, differs),  # the section's name
        (template_size - 1, differs),
        (header + 24, "embed.x86_64: its pck section does not point at the embedded pack"),
        (header + 31, "embed.x86_64: its pck section does not point at the embedded pack"),
        (header + 39, "embed.x86_64 is cut short: its embedded pack ends past the end of the file"),
        (start, "embed.x86_64: its embedded pack has no GDPC magic at its start"),
        (
            offset + size // 2,
            f"embed.x86_64: {path} does not match its MD5 (the write was incomplete)",
        ),
        (
            len(embed) - 1,
            "embed.x86_64 is cut short: it does not end with an embedded pack's trailer",
        ),
        (
            len(embed) - 5,
            "embed.x86_64 has a corrupt embedded pack: its trailer claims more "
            "bytes than the file holds",
        ),
    ]
    with copy_of(exports, exports.embed) as bad:
        for position, message in cases:
            flip(bad, position)
            fails(
                lambda bad=bad: verify_binary(bad, exports.templates, embedded=True),
                message,
            )
            flip(bad, position)  # restore
        verify_binary(bad, exports.templates, embedded=True)
        # sh_size one 8-byte step short of the end: the section no longer covers the pack.
        sh_size = struct.unpack_from("<Q", embed, header + 32)[0]
        put(bad, header + 32, struct.pack("<Q", sh_size - 8))
        fails(
            lambda: verify_binary(bad, exports.templates, embedded=True),
            "embed.x86_64: its pck section does not reach the end of the file",
        )
        put(bad, header + 32, struct.pack("<Q", sh_size))
        # A trailer claiming a pack that starts 8 bytes after the template's end.
        put(bad, len(embed) - 12, struct.pack("<Q", pack_size - 8))
        fails(
            lambda: verify_binary(bad, exports.templates, embedded=True),
            "embed.x86_64: its embedded pack does not start where its template ends",
        )
        # ...or 4 bytes after it (still within the alignment slack): no pack header there.
        put(bad, len(embed) - 12, struct.pack("<Q", pack_size - 4))
        fails(
            lambda: verify_binary(bad, exports.templates, embedded=True),
            "embed.x86_64: its embedded pack has no GDPC magic at its start",
        )


def test_truncated_binaries(exports: Exports) -> None:
    template_size = exports.template.stat().st_size
    size = exports.embed.stat().st_size
    ends_past = "embed.x86_64 is cut short: its embedded pack ends past the end of the file"
    cases = {
        1: "embed.x86_64 is cut short: it ends inside its export template",
        template_size // 2: "embed.x86_64 is cut short: it ends inside its export template",
        template_size - 1: "embed.x86_64 is cut short: it ends inside its export template",
        template_size: "embed.x86_64 is cut short: it has no embedded pack after its export "
        "template",
        template_size + 100: ends_past,
        size - 12: ends_past,
        size - 1: ends_past,
    }
    for keep, message in cases.items():
        with copy_of(exports, exports.embed, keep=keep) as cut:
            fails(
                lambda cut=cut: verify_binary(cut, exports.templates, embedded=True),
                message,
            )
    for keep in (1, template_size // 2, template_size - 1):
        with copy_of(exports, exports.plain, keep=keep) as cut:
            fails(
                lambda cut=cut: verify_binary(cut, exports.templates, embedded=False),
                "demo.x86_64 is cut short: it ends inside its export template",
            )
    with copy_of(exports, exports.plain, keep=0) as cut:
        fails(
            lambda: verify_binary(cut, exports.templates, embedded=False),
            "demo.x86_64 is empty (0 bytes)",
        )


def test_binary_against_the_wrong_template(exports: Exports, engine: Engine) -> None:
    wrong = exports.scratch / "wrong_template"
    shutil.copyfile(exports.template, wrong)
    try:
        flip(wrong, wrong.stat().st_size // 3)
        server = shutil.which(engine.headless)  # the engine itself: an ELF, not the template
        assert server is not None
        for templates in ([wrong], [Path(server)], [wrong, Path(server)]):
            fails(
                lambda t=templates: verify_binary(exports.plain, t, embedded=False),
                "demo.x86_64 differs from the export template",
            )
            fails(
                lambda t=templates: verify_binary(exports.embed, t, embedded=True),
                "embed.x86_64 differs from the export template",
            )
        # Any matching candidate is enough.
        verify_binary(exports.plain, [wrong, exports.scratch / "absent", *exports.templates], False)
        verify_binary(exports.embed, [wrong, *exports.templates], True)
    finally:
        wrong.unlink()
    for templates in ([], [exports.scratch / "absent"], [exports.scratch]):
        fails(
            lambda t=templates: verify_binary(exports.plain, t, embedded=False),
            "demo.x86_64: no export template to compare it with",
        )


# --- zips ------------------------------------------------------------------------------


def make_zip(path: Path) -> dict[str, int]:
    """A zip with a stored and a deflated member; returns each member's data offset."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("assets/stored.txt", b"stored member " * 200, zipfile.ZIP_STORED)
        zf.writestr("classes.dex", bytes(range(256)) * 64, zipfile.ZIP_DEFLATED)
        zf.writestr("empty/", b"")
    offsets = {}
    with zipfile.ZipFile(path) as zf, open(path, "rb") as f:
        for info in zf.infolist():
            f.seek(info.header_offset)
            local = f.read(30)
            name_len, extra_len = struct.unpack_from("<HH", local, 26)
            offsets[info.filename] = info.header_offset + 30 + name_len + extra_len
    return offsets


def central_entry(data: bytes, name: str) -> int:
    """Offset of ``name``'s central directory header."""
    at = data.index(b"PK\x01\x02")
    while True:
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, at + 28)
        if data[at + 46 : at + 46 + name_len] == name.encode():
            return at
        at += 46 + name_len + extra_len + comment_len


def test_zip_outputs(tmp_path: Path) -> None:
    archive = tmp_path / "game.apk"
    offsets = make_zip(archive)
    verify_zip(archive)
    for name in ("game.zip", "game.apk", "game.aab", "game.ipa", "game.appx"):
        verify_output(
            name, archive, platform="Android", kind="release", embedded=False, templates=[]
        )
    good = archive.read_bytes()

    flip(archive, offsets["assets/stored.txt"] + 100)
    fails(
        lambda: verify_zip(archive),
        "game.apk: assets/stored.txt does not match its CRC-32 (the write was incomplete)",
    )
    archive.write_bytes(good)
    put(archive, offsets["classes.dex"] - 30 - len("classes.dex"), b"XXXX")  # local header
    fails(
        lambda: verify_zip(archive), "game.apk: classes.dex is damaged (the write was incomplete)"
    )
    for keep in (len(good) - 1, len(good) // 2, 10):
        archive.write_bytes(good[:keep])
        fails(
            lambda: verify_zip(archive),
            "game.apk is not a whole zip archive (its central directory is missing or damaged)",
        )
    archive.write_bytes(b"")
    fails(lambda: verify_zip(archive), "game.apk is empty (0 bytes)")
    archive.write_bytes(good)
    flip(archive, offsets["assets/stored.txt"])
    fails(
        lambda: verify_output(
            "Game.ZIP", archive, platform="Mac OSX", kind="release", embedded=False, templates=[]
        ),
        "Game.ZIP: assets/stored.txt does not match its CRC-32 (the write was incomplete)",
    )

    # Members zipfile cannot read are not passed unchecked: encrypted, unknown compression.
    local = offsets["classes.dex"] - 30 - len("classes.dex")
    for patch_local, patch_central in (
        ((local + 6, b"\x01\x00"), (8, b"\x01\x00")),  # general purpose flag: encrypted
        ((local + 8, b"\x63\x00"), (10, b"\x63\x00")),  # compression method 99
    ):
        bad = bytearray(good)
        start = central_entry(good, "classes.dex")
        bad[patch_local[0] : patch_local[0] + 2] = patch_local[1]
        bad[start + patch_central[0] : start + patch_central[0] + 2] = patch_central[1]
        archive.write_bytes(bytes(bad))
        fails(lambda: verify_zip(archive), "game.apk: classes.dex cannot be checked")


def test_zip_with_a_flipped_deflated_byte_fails(tmp_path: Path) -> None:
    archive = tmp_path / "game.zip"
    offsets = make_zip(archive)
    good = archive.read_bytes()
    size = zipfile.ZipFile(archive).getinfo("classes.dex").compress_size
    outcomes = set()
    # Not the stream's last byte: flipped, it only makes zlib emit bytes past the member's
    # declared size, which zipfile (like any reader trusting the size) never returns.
    for delta in range(size - 1):
        archive.write_bytes(good)
        flip(archive, offsets["classes.dex"] + delta)
        with pytest.raises(OutputInvalid) as caught:
            verify_zip(archive)
        outcomes.add(caught.value.message)
    assert outcomes <= {
        "game.zip: classes.dex does not match its CRC-32 (the write was incomplete)",
        "game.zip: classes.dex is damaged (the write was incomplete)",
    }, outcomes


# --- synthetic Godot 4 packs -----------------------------------------------------------

FILES = [
    ("res://main.tscn", b"[gd_scene format=3]\n" * 40),
    ("res://dir/data.bin", bytes(range(256)) * 33),
    ("res://empty.txt", b""),
]


def pad16(n: int) -> int:
    return (-n) % 16


def entry(path: str, offset: int, size: int, md5: bytes, flags: int | None) -> bytes:
    raw = path.encode()
    raw += b"\0" * ((-len(raw)) % 4)
    out = struct.pack("<I", len(raw)) + raw + struct.pack("<QQ", offset, size) + md5
    return out + (struct.pack("<I", flags) if flags is not None else b"")


def data_block(files: list[tuple[str, bytes]]) -> tuple[bytes, list[int]]:
    """The files' bytes each padded to 16, and each one's offset in the block."""
    block, offsets = b"", []
    for _, content in files:
        offsets.append(len(block))
        block += content + b"\0" * pad16(len(content))
    return block, offsets


def md5(content: bytes) -> bytes:
    return hashlib.md5(content).digest()


def build_v1(files: list[tuple[str, bytes]], start: int = 0) -> bytes:
    """A Godot 3 pack to be placed at ``start`` of its file (offsets absolute)."""
    header = struct.pack("<5I", MAGIC, 1, 3, 2, 3) + b"\0" * 64 + struct.pack("<I", len(files))
    directory_size = sum(len(entry(p, 0, 0, b"\0" * 16, None)) for p, _ in files)
    data_at = 88 + directory_size + pad16(start + 88 + directory_size)
    block, offsets = data_block(files)
    directory = b"".join(
        entry(p, start + data_at + o, len(c), md5(c), None)
        for (p, c), o in zip(files, offsets, strict=True)
    )
    return (header + directory).ljust(data_at, b"\0") + block


def build_v2(
    files: list[tuple[str, bytes]],
    *,
    start: int = 0,
    relative: bool = True,
    pack_flags: int = 0,
    file_flags: list[int] | None = None,
    md5s: list[bytes] | None = None,
) -> bytes:
    """A Godot 4.0-4.3 pack placed at ``start`` of its file."""
    flags = file_flags or [0] * len(files)
    sums = md5s or [md5(c) for _, c in files]
    directory_size = sum(len(entry(p, 0, 0, b"\0" * 16, 0)) for p, _ in files)
    data_at = 100 + directory_size + pad16(100 + directory_size)
    file_base = data_at if relative else start + data_at
    if relative:
        pack_flags |= 1 << 1
    header = struct.pack("<5IIQ", MAGIC, 2, 4, 2, 1, pack_flags, file_base) + b"\0" * 64
    block, offsets = data_block(files)
    directory = struct.pack("<I", len(files)) + b"".join(
        entry(p, o, len(c), s, f)
        for (p, c), o, s, f in zip(files, offsets, sums, flags, strict=True)
    )
    return (header + directory).ljust(data_at, b"\0") + block


def build_v3(
    files: list[tuple[str, bytes]],
    *,
    pack_flags: int = 1 << 1,
    file_flags: list[int] | None = None,
    version: int = 3,
) -> bytes:
    """A Godot 4.4+ pack: header, data from offset 112, then the directory (paths sans res://)."""
    flags = file_flags or [0] * len(files)
    block, offsets = data_block(files)
    file_base = 104 + pad16(104)
    dir_offset = file_base + len(block)
    header = struct.pack("<5IIQQ", MAGIC, version, 4, 4, 1, pack_flags, file_base, dir_offset)
    directory = struct.pack("<I", len(files)) + b"".join(
        entry(p.removeprefix("res://"), o, len(c), md5(c), f)
        for (p, c), o, f in zip(files, offsets, flags, strict=True)
    )
    return (header + b"\0" * 64).ljust(file_base, b"\0") + block + directory


def embed(prefix: bytes, pack: bytes) -> bytes:
    """``prefix`` + ``pack`` (which must expect to start at len(prefix)) + the trailer."""
    body = pack + b"\0" * ((-(len(pack) + 12)) % 8)
    return prefix + body + struct.pack("<QI", len(body), MAGIC)


def data_offset(pack: bytes, version: int, index: int) -> int:
    """Where file ``index``'s data starts in a synthetic pack at the start of its file."""
    block, offsets = data_block(FILES)
    assert block
    if version == 2:
        return struct.unpack_from("<Q", pack, 24)[0] + offsets[index]
    return 112 + offsets[index]


@pytest.mark.parametrize("version", [2, 3])
def test_synthetic_godot_4_packs(tmp_path: Path, version: int) -> None:
    pack = build_v2(FILES) if version == 2 else build_v3(FILES)
    path = tmp_path / "game.pck"
    path.write_bytes(pack)
    verify_pack(path)
    for index in (0, 1):
        name = FILES[index][0]
        for delta in (0, len(FILES[index][1]) - 1):
            bad = bytearray(pack)
            bad[data_offset(pack, version, index) + delta] ^= 0x01
            path.write_bytes(bad)
            fails(
                lambda: verify_pack(path),
                f"game.pck: {name} does not match its MD5 (the write was incomplete)",
            )
    # Truncated: v2 keeps its directory in front, v3 at the end.
    cuts = {
        10: "game.pck is cut short: its header ends past the end of the file",
        len(pack) - 1: (
            f"game.pck is cut short: {FILES[1][0]} ends past the end of the file"
            if version == 2
            else "game.pck is cut short: its directory ends past the end of the file"
        ),
    }
    if version == 3:
        cuts[200] = "game.pck is cut short: its directory ends past the end of the file"
    else:
        cuts[120] = "game.pck is cut short: its directory ends past the end of the file"
    for keep, message in cuts.items():
        path.write_bytes(pack[:keep])
        fails(lambda: verify_pack(path), message)


def test_godot_4_flags(tmp_path: Path) -> None:
    path = tmp_path / "game.pck"
    garbage = [b"\xee" * 16] * len(FILES)

    # Absolute file_base (no PACK_REL_FILEBASE), embedded in an executable.
    prefix = b"MZ" + b"\x90" * 1000
    exe = tmp_path / "game.exe"
    exe.write_bytes(embed(prefix, build_v2(FILES, start=len(prefix), relative=False)))
    verify_output(
        "game.exe", exe, platform="Windows Desktop", kind="release", embedded=True, templates=[]
    )
    # The same with PACK_REL_FILEBASE (what 4.x writes); then an absolute base misread as
    # relative points past the end of the pack.
    exe.write_bytes(embed(prefix, build_v2(FILES, start=len(prefix), relative=True)))
    verify_output(
        "game.exe", exe, platform="Windows Desktop", kind="release", embedded=True, templates=[]
    )
    bad = bytearray(embed(prefix, build_v2(FILES, start=len(prefix), relative=False)))
    bad[len(prefix) + 20] |= 1 << 1  # claim PACK_REL_FILEBASE for an absolute file_base
    exe.write_bytes(bad)
    fails(
        lambda: verify_output(
            "game.exe", exe, platform="Windows Desktop", kind="debug", embedded=True, templates=[]
        ),
        f"game.exe: {FILES[1][0]} ends past the end of its embedded pack",
    )

    # Encrypted directory: only the header and the count are read.
    encrypted = build_v2(FILES, pack_flags=1 << 0)
    path.write_bytes(encrypted[:100] + os.urandom(64))
    verify_pack(path)
    path.write_bytes(encrypted[:99])  # the file count is part of the v2 header
    fails(
        lambda: verify_pack(path), "game.pck is cut short: its header ends past the end of the file"
    )

    # Encrypted files: the MD5 is the plaintext's, so only their bounds are checked.
    path.write_bytes(build_v2(FILES, file_flags=[1, 1, 1], md5s=garbage))
    verify_pack(path)
    path.write_bytes(build_v2(FILES, file_flags=[1, 0, 0], md5s=garbage))
    fails(
        lambda: verify_pack(path),
        f"game.pck: {FILES[1][0]} does not match its MD5 (the write was incomplete)",
    )
    whole = build_v2(FILES, file_flags=[1, 1, 1], md5s=garbage)
    path.write_bytes(whole[: data_offset(whole, 2, 1) + 5])
    fails(
        lambda: verify_pack(path),
        f"game.pck is cut short: {FILES[1][0]} ends past the end of the file",
    )

    # A removal entry has no data (here its offset points far away); a delta entry is checked
    # for bounds only.
    removal = bytearray(build_v3(FILES, file_flags=[2, 4, 0]))
    (dir_offset,) = struct.unpack_from("<Q", removal, 32)
    (path_len,) = struct.unpack_from("<I", removal, dir_offset + 4)
    first_offset = dir_offset + 4 + 4 + path_len
    removal[first_offset : first_offset + 8] = struct.pack("<Q", 1 << 40)
    path.write_bytes(bytes(removal))
    verify_pack(path)
    removal[first_offset + 32 : first_offset + 36] = struct.pack("<I", 0)  # its flags
    path.write_bytes(bytes(removal))  # no longer a removal
    fails(
        lambda: verify_pack(path),
        f"game.pck is cut short: {FILES[0][0]} ends past the end of the file",
    )

    # Sparse bundle: the data lives elsewhere, only the directory is checked.
    sparse = bytearray(build_v3(FILES, pack_flags=(1 << 1) | (1 << 2)))
    block, _ = data_block(FILES)
    sparse[112 : 112 + len(block)] = b"\0" * len(block)
    path.write_bytes(bytes(sparse))
    verify_pack(path)
    path.write_bytes(bytes(sparse[:-1]))
    fails(
        lambda: verify_pack(path),
        "game.pck is cut short: its directory ends past the end of the file",
    )

    # Format versions the engine does not write are refused.
    path.write_bytes(build_v3(FILES, version=4))
    fails(
        lambda: verify_pack(path),
        "game.pck uses pack format version 4, which this check does not know (it knows 1, 2 and 3)",
    )

    # A v3 directory offset pointing into the header.
    v3 = bytearray(build_v3(FILES))
    v3[32:40] = struct.pack("<Q", 50)
    path.write_bytes(bytes(v3))
    fails(
        lambda: verify_pack(path),
        "game.pck has a corrupt header: its directory offset points into the header",
    )


def test_synthetic_v1_embedded_in_a_windows_exe(tmp_path: Path) -> None:
    prefix = b"MZ" + bytes(range(256)) * 4 + b"\x01"  # the pack starts at an odd offset
    exe = tmp_path / "game.exe"
    whole = embed(prefix, build_v1(FILES, start=len(prefix)))
    exe.write_bytes(whole)

    def check(embedded: bool = True) -> None:
        verify_output(
            "game.exe",
            exe,
            platform="Windows Desktop",
            kind="release",
            embedded=embedded,
            templates=[],
        )

    check()
    bad = bytearray(whole)
    bad[len(prefix) + 300] ^= 0x10  # inside main.tscn's data (it starts 253 bytes in)
    exe.write_bytes(bad)
    fails(check, f"game.exe: {FILES[0][0]} does not match its MD5 (the write was incomplete)")
    exe.write_bytes(whole[:-3])
    fails(check, "game.exe is cut short: it does not end with an embedded pack's trailer")
    exe.write_bytes(b"\x7fELF" + whole[4:])
    fails(check, "game.exe is not a Windows executable (no MZ header)")
    exe.write_bytes(prefix)  # no pack at all: fine only when nothing is embedded
    check(embedded=False)
    fails(check, "game.exe is cut short: it does not end with an embedded pack's trailer")
    # A trailer whose pack is too small to hold a header, or claims more than the file.
    for pack_size, message in (
        (6, "game.exe: its embedded pack's header ends past the end of the pack"),
        (
            len(whole),
            "game.exe has a corrupt embedded pack: its trailer claims more bytes than "
            "the file holds",
        ),
    ):
        exe.write_bytes(whole[:-12] + struct.pack("<QI", pack_size, MAGIC))
        fails(check, message)


def test_other_outputs_must_not_be_empty(tmp_path: Path) -> None:
    for name in ("game.html", "game.js", "game.wasm", "game.png"):
        path = tmp_path / name
        path.write_bytes(b"x")
        verify_output(name, path, platform="HTML5", kind="release", embedded=False, templates=[])
        path.write_bytes(b"")
        fails(
            lambda n=name, p=path: verify_output(
                n, p, platform="HTML5", kind="release", embedded=False, templates=[]
            ),
            f"{name} is empty (0 bytes)",
        )
    web_pack = tmp_path / "game.pck"
    web_pack.write_bytes(build_v1(FILES)[:-1])
    fails(
        lambda: verify_output(
            "game.pck", web_pack, platform="HTML5", kind="release", embedded=False, templates=[]
        ),
        f"game.pck is cut short: {FILES[1][0]} ends past the end of the file",
    )


# --- synthetic Linux binaries against an ELF template ------------------------------------


def elf_template(fill: int = 0) -> bytes:
    """A small ELF64 file shaped like a Godot Linux export template: a header, code bytes,
    the section names, then the section headers (null, .shstrtab and an empty ``pck``)."""
    names = b"\0.shstrtab\0pck\0"
    code = bytes((i + fill) % 256 for i in range(2048))
    strtab_at = 64 + len(code)
    shoff = strtab_at + len(names) + (-(strtab_at + len(names)) % 8)
    head = bytearray(64)
    head[:7] = b"\x7fELF\x02\x01\x01"
    struct.pack_into("<Q", head, 0x28, shoff)
    struct.pack_into("<HHH", head, 0x3A, 64, 3, 1)  # entry size, entries, .shstrtab's index
    section = struct.Struct("<IIQQQQIIQQ")
    table = bytes(64) + section.pack(1, 3, 0, 0, strtab_at, len(names), 0, 0, 1, 0)
    table += section.pack(11, 1, 0, 0, 0, 0, 0, 0, 1, 0)  # pck: Godot fills in where and how big
    return bytes((bytes(head) + code + names).ljust(shoff, b"\0") + table)


PCK_FIELDS = 64 * 2 + 24  # the pck section header's sh_offset, from the table's start


def embedded_binary(template: bytes) -> bytes:
    """``template`` with a Godot 3 pack embedded after it, its pck section pointing there."""
    shoff = struct.unpack_from("<Q", template, 0x28)[0]
    whole = bytearray(embed(template, build_v1(FILES, start=len(template))))
    struct.pack_into("<QQ", whole, shoff + PCK_FIELDS, len(template), len(whole) - len(template))
    return bytes(whole)


def test_a_linux_binary_is_its_template_and_an_embedded_pack_where_its_section_says(
    tmp_path: Path,
) -> None:
    template = elf_template()
    other = tmp_path / "other.bin"
    other.write_bytes(elf_template(fill=7))
    path = tmp_path / "template.bin"
    path.write_bytes(template)
    out = tmp_path / "game.x86_64"

    def check(embedded: bool, templates: list[Path] | None = None) -> None:
        verify_output(
            "game.x86_64",
            out,
            platform="Linux/X11",
            kind="release",
            embedded=embedded,
            templates=[other, path] if templates is None else templates,
        )

    out.write_bytes(template)  # a plain binary: the template itself
    check(embedded=False)
    flipped = bytearray(template)
    flipped[100] ^= 1
    out.write_bytes(flipped)
    fails(lambda: check(False), "game.x86_64 differs from the export template")
    out.write_bytes(template[:-10])
    fails(lambda: check(False), "game.x86_64 is cut short: it ends inside its export template")
    out.write_bytes(template + b"x")
    fails(lambda: check(False), "game.x86_64 differs from the export template")
    fails(lambda: check(False, []), "game.x86_64: no export template to compare it with")
    fails(
        lambda: check(False, [tmp_path / "none"]),
        "game.x86_64: no export template to compare it with",
    )

    whole = embedded_binary(template)
    out.write_bytes(whole)
    check(embedded=True)
    out.write_bytes(template)
    fails(
        lambda: check(True),
        "game.x86_64 is cut short: it has no embedded pack after its export template",
    )
    fields = struct.unpack_from("<Q", template, 0x28)[0] + PCK_FIELDS
    for offset, size, message in (
        (
            len(template) + 8,
            None,
            "game.x86_64: its pck section does not point at the embedded pack",
        ),
        (
            None,
            1 << 20,
            "game.x86_64 is cut short: its embedded pack ends past the end of the file",
        ),
        (None, 16, "game.x86_64: its pck section does not reach the end of the file"),
    ):
        bad = bytearray(whole)
        if offset is not None:
            struct.pack_into("<Q", bad, fields, offset)
        if size is not None:
            struct.pack_into("<Q", bad, fields + 8, size)
        out.write_bytes(bad)
        fails(lambda: check(True), message)
    outside = bytearray(whole)
    outside[fields - 1] ^= 1  # next to the fields Godot rewrites, not in them
    out.write_bytes(outside)
    fails(lambda: check(True), "game.x86_64 differs from the export template")
    damaged = bytearray(whole)
    damaged[len(template) + 300] ^= 0x10  # inside main.tscn's data
    out.write_bytes(damaged)
    fails(
        lambda: check(True),
        f"game.x86_64: {FILES[0][0]} does not match its MD5 (the write was incomplete)",
    )
    out.unlink()
    fails(lambda: check(True), "game.x86_64 is missing")
