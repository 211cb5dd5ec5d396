"""Capture files: the value handed to callers, PNG checks, and APNG assembly."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from godot_mcp.godot.game_errors import GameFailed
from godot_mcp.godot.preview import Preview, RawFrame

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
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


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR; ``GameFailed`` if it is not a PNG."""
    try:
        with open(path, "rb") as png:
            head = png.read(24)
    except OSError:
        raise GameFailed("the engine did not write the capture file") from None
    if len(head) < 24 or head[:8] != PNG_MAGIC or head[12:16] != b"IHDR":
        raise GameFailed("the engine wrote a capture that is not a PNG")
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


def check_whole(path: Path) -> None:
    """Raise ``GameFailed`` unless every chunk of the PNG is there, CRCs and IEND."""
    for _kind, _data in _chunks(path):
        pass


def check_png(path: Path, width: int, height: int) -> None:
    """Raise ``GameFailed`` unless ``path`` is a PNG of the reported size."""
    got = png_size(path)
    if got != (width, height) or width <= 0 or height <= 0:
        raise GameFailed(
            f"the capture is {got[0]}x{got[1]} but the engine reported {width}x{height}",
        )
    check_whole(path)


def _chunks(path: Path) -> Iterator[tuple[bytes, bytes]]:
    """The (type, data) chunks of a PNG file, CRCs checked."""
    with open(path, "rb") as png:
        if png.read(8) != PNG_MAGIC:
            raise GameFailed("a capture file is not a PNG")
        while True:
            head = png.read(8)
            if len(head) < 8:
                raise GameFailed("a capture file is truncated")
            length, kind = struct.unpack(">I4s", head)
            data = png.read(length)
            crc = png.read(4)
            if len(data) < length or len(crc) < 4:
                raise GameFailed("a capture file is truncated")
            if struct.unpack(">I", crc)[0] != zlib.crc32(kind + data):
                raise GameFailed("a capture file is corrupt")
            yield kind, data
            if kind == b"IEND":
                return


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def assemble_apng(frames: Sequence[Path], out: Path, fps: int) -> None:
    """Write ``frames`` (PNG files of one size) as an endlessly looping APNG at ``fps``.

    Each frame's compressed image data is copied as is (``IDAT`` for the first frame, ``fdAT``
    after), each frame shown ``1/fps`` s, replacing the previous one: no decoding or
    re-encoding, and memory for one chunk at a time.
    """
    if len(frames) < 2:
        raise ValueError("an animation needs at least two frames")
    sequence = 0
    header: bytes | None = None
    with open(out, "wb") as apng:
        apng.write(PNG_MAGIC)
        for index, path in enumerate(frames):
            wrote_control = False
            for kind, data in _chunks(path):
                if kind == b"IHDR":
                    if header is None:
                        header = data
                        apng.write(_chunk(b"IHDR", data))
                        apng.write(_chunk(b"acTL", struct.pack(">II", len(frames), 0)))
                    elif data != header:
                        raise GameFailed("the recorded frames differ in size or format")
                    continue
                if kind in (b"IDAT", b"IEND"):
                    if kind == b"IDAT" and not wrote_control:
                        assert header is not None
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
