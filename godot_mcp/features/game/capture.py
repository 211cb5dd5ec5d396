"""Capture files: the value handed to callers, PNG checks, and APNG assembly."""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from godot_mcp.features.game.errors import GameFailed
from godot_mcp.features.game.files import (
    PNG_MAGIC,
    check_pixels,
    create_server_file,
    open_game_file,
    open_game_stream,
    png_header,
)
from godot_mcp.features.game.preview import Preview, RawFrame

# The longest chunk read: Godot writes 8 KiB image data chunks (libpng's default), Pillow
# 64 KiB; a chunk claiming up to 2 GiB is refused before anything is allocated for it.
MAX_CHUNK = 16 << 20
# Chunks of the first frame carried over: they describe how every frame's pixels are read.
_BEFORE_IDAT = frozenset({b"PLTE", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"iCCP", b"sBIT", b"pHYs"})


@dataclass(frozen=True)
class Capture:
    """A capture written to a temp file in the caller's scratch dir; the caller deletes it
    (and its ``raw`` pixels)."""

    path: Path
    media_type: str
    width: int
    height: int
    frames: int
    engine_ms: float
    preview: Preview | None = None  # a recording's contact sheet, when one was asked for
    raw: RawFrame | None = None  # a screenshot's pixels, when asked for; the caller deletes it
    digest: Digest | None = None  # the bytes checked: what registering ``path`` must find
    root: Path | None = None  # the scratch dir ``path`` is in, opened as a game's files are


@dataclass(frozen=True)
class Digest:
    """The length and SHA-256 of a capture file's bytes as checked: what is registered."""

    size: int
    sha256: str


def png_size(path: Path, root: Path | None = None) -> tuple[int, int]:
    """Width and height from a PNG's IHDR; ``GameFailed`` if it is not a PNG, or past the
    pixel budget (``features/game/files.py``). The file is opened as every file a game wrote."""
    with open_game_stream(_root(path, root), path) as png:
        return png_header(png)


def check_whole(path: Path, root: Path | None = None) -> Digest:
    """Raise ``GameFailed`` unless every chunk of the PNG is there, CRCs and IEND, and
    nothing after it; the length and SHA-256 of its bytes."""
    with open_game_stream(_root(path, root), path) as png:
        digest = hashlib.sha256()
        size = 0
        for _kind, _data, raw in _chunks(png):
            digest.update(raw)
            size += len(raw)
        if png.read(1):
            raise GameFailed("a capture file has bytes past its end")
        return Digest(size, digest.hexdigest())


def check_png(path: Path, width: int, height: int, root: Path | None = None) -> Digest:
    """Raise ``GameFailed`` unless ``path`` is a whole PNG of the reported size, within the
    pixel budget; its length and SHA-256 (what the artifact must hold). ``root``: the
    session's scratch dir (``path``'s folder when not given). Blocking: a worker thread's."""
    got = png_size(path, root)
    if got != (width, height) or width <= 0 or height <= 0:
        raise GameFailed(
            f"the capture is {got[0]}x{got[1]} but the engine reported {width}x{height}",
        )
    return check_whole(path, root)


def check_screenshot(
    root: Path, path: Path, width: int, height: int, raw: RawFrame | None
) -> tuple[Digest, RawFrame | None]:
    """:func:`check_png` of a screenshot, and its raw pixels kept when they are a regular file
    of the frame's length (else dropped: the preview decodes the PNG). Blocking."""
    digest = check_png(path, width, height, root)
    if raw is not None:
        channels = {"RGB": 3, "RGBA": 4}.get(raw.mode, 0)
        with open_game_file(root, raw.path) as pixels:
            if os.fstat(pixels.fileno()).st_size != width * height * channels:
                raw = None
    return digest, raw


def _root(path: Path, root: Path | None) -> Path:
    return Path(path).parent if root is None else root


def _chunks(png: BinaryIO) -> Iterator[tuple[bytes, bytes, bytes]]:
    """The (type, data, bytes as read) chunks of a PNG stream, CRCs checked; the first item's
    bytes include the signature. No chunk longer than ``MAX_CHUNK`` is read."""
    magic = png.read(8)
    if magic != PNG_MAGIC:
        raise GameFailed("a capture file is not a PNG")
    while True:
        head = png.read(8)
        if len(head) < 8:
            raise GameFailed("a capture file is truncated")
        length, kind = struct.unpack(">I4s", head)
        if length > MAX_CHUNK:
            raise GameFailed(f"a capture file has a chunk longer than {MAX_CHUNK} bytes")
        data = png.read(length)
        crc = png.read(4)
        if len(data) < length or len(crc) < 4:
            raise GameFailed("a capture file is truncated")
        if struct.unpack(">I", crc)[0] != zlib.crc32(kind + data):
            raise GameFailed("a capture file is corrupt")
        yield kind, data, magic + head + data + crc
        magic = b""
        if kind == b"IEND":
            return


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


class _Hashed:
    """A file being written, its length and SHA-256 kept as it goes."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.size = 0
        self.hash = hashlib.sha256()

    def write(self, data: bytes) -> None:
        self.out.write(data)
        self.hash.update(data)
        self.size += len(data)


def assemble_apng(frames: Sequence[Path], out: Path, fps: int, root: Path | None = None) -> Digest:
    """Write ``frames`` (PNG files of one size) as an endlessly looping APNG at ``fps``; the
    length and SHA-256 of what was written.

    Each frame's compressed image data is copied as is (``IDAT`` for the first frame, ``fdAT``
    after), each frame shown ``1/fps`` s, replacing the previous one: no decoding or
    re-encoding, and memory for one chunk at a time. The frames are opened as every file a
    game wrote (``features/game/files.py``, under ``root``: each one's folder when not given), the
    first one's header within the pixel budget.
    """
    if len(frames) < 2:
        raise ValueError("an animation needs at least two frames")
    sequence = 0
    header: bytes | None = None
    with create_server_file(_root(out, root), out) as file:
        apng = _Hashed(file)
        apng.write(PNG_MAGIC)
        for index, path in enumerate(frames):
            wrote_control = False
            with open_game_stream(_root(path, root), path) as png:
                for kind, data, _raw in _chunks(png):
                    if kind == b"IHDR":
                        if header is None:
                            if len(data) < 8:
                                raise GameFailed("a recorded frame has a malformed header")
                            check_pixels(*struct.unpack(">II", data[:8]))
                            header = data
                            apng.write(_chunk(b"IHDR", data))
                            apng.write(_chunk(b"acTL", struct.pack(">II", len(frames), 0)))
                        elif data != header:
                            raise GameFailed("the recorded frames differ in size or format")
                        continue
                    if header is None:
                        raise GameFailed("a recorded frame has no header")
                    if kind in (b"IDAT", b"IEND"):
                        if kind == b"IDAT" and not wrote_control:
                            width, height = struct.unpack(">II", header[:8])
                            control = struct.pack(
                                ">IIIIIHHBB", sequence, width, height, 0, 0, 1, fps, 0, 0
                            )
                            apng.write(_chunk(b"fcTL", control))
                            sequence += 1
                            wrote_control = True
                        if kind == b"IEND":
                            break
                        if index == 0:
                            apng.write(_chunk(b"IDAT", data))
                        else:
                            apng.write(_chunk(b"fdAT", struct.pack(">I", sequence) + data))
                            sequence += 1
                    elif index == 0 and not wrote_control and kind in _BEFORE_IDAT:
                        apng.write(_chunk(kind, data))
            if not wrote_control:
                raise GameFailed("a recorded frame has no image data")
        apng.write(_chunk(b"IEND", b""))
    return Digest(apng.size, apng.hash.hexdigest())
