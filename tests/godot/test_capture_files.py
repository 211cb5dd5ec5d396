"""Files a game wrote, as the server reads them (no engine): a FIFO, a link, a device or a
folder at a capture path is refused at once, a file past its length or its time is refused, and
no PNG or raw frame past the pixel budget is decoded: refused from its header."""

from __future__ import annotations

import io
import os
import stat
import struct
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from godot_mcp.features.game import files as gamefiles
from godot_mcp.features.game.capture import assemble_apng, check_png, png_size
from godot_mcp.features.game.errors import GameFailed, GameTimeout
from godot_mcp.features.game.files import (
    MAX_FILE_BYTES,
    MAX_SIDE,
    NOT_PRIVATE,
    NOT_REGULAR,
    NOT_WRITTEN,
    TOO_LONG,
    TOO_MANY_PIXELS,
    open_game_file,
)
from godot_mcp.features.game.preview import RawFrame, contact_sheet, downscale
from godot_mcp.features.game.runner import MAX_SIZE


def chunk(kind: bytes, data: bytes) -> bytes:
    crc = struct.pack(">I", zlib.crc32(kind + data))
    return struct.pack(">I", len(data)) + kind + data + crc


def png_of(width: int, height: int, rows: int | None = None) -> bytes:
    """A grey 8-bit RGB PNG claiming ``width`` x ``height``: its image data holds ``rows`` rows
    (all of them when not given), so a huge claim stays a few bytes on disk."""
    pack = zlib.compressobj(9)
    row = b"\0" + b"\x80" * (3 * width)
    count = height if rows is None else rows
    idat = b"".join(pack.compress(row) for _ in range(count)) + pack.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


def bomb_message(width: int, height: int) -> str:
    return TOO_MANY_PIXELS.format(width=width, height=height, side=MAX_SIDE)


def bounded(fn: Callable[[], object], seconds: float = 5) -> BaseException | object:
    """``fn()`` on a thread, its result or exception; fails the test (instead of hanging it)
    when it has not returned within ``seconds``."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert out, f"still blocked after {seconds} s"
    return out[0]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A scratch dir as the server makes it: private to its user."""
    place = tmp_path / "scratch"
    place.mkdir(mode=0o700)
    return place


def test_the_pixel_budget_is_the_sessions_own_size_limit():
    assert MAX_SIDE == MAX_SIZE == 8192
    assert gamefiles.MAX_PIXELS == 8192 * 8192


def test_a_fifo_at_a_capture_path_is_refused_at_once(root: Path):
    fifo = root / "shot-x.png"
    os.mkfifo(fifo)
    try:
        started = time.monotonic()
        refused = bounded(lambda: check_png(fifo, 64, 64))
        assert isinstance(refused, GameFailed) and refused.message == NOT_REGULAR
        assert time.monotonic() - started < 1
    finally:
        # What a writer would do: unblocks a reader still waiting on it (today's code).
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def _device(at: Path) -> None:
    """A character device like /dev/zero at ``at``; a link to /dev/zero where the user may not
    make device nodes (a link is refused before the device is reached either way)."""
    try:
        os.mknod(at, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        at.symlink_to("/dev/zero")


@pytest.mark.parametrize("kind", ["link", "device", "dev-zero-link", "folder", "socket"])
def test_anything_but_a_regular_file_is_refused(root: Path, tmp_path: Path, kind: str):
    real = tmp_path / "real.png"
    real.write_bytes(png_of(64, 64))
    shot = root / "shot-x.png"
    if kind == "link":
        shot.symlink_to(real)
    elif kind == "device":
        _device(shot)
    elif kind == "dev-zero-link":
        shot.symlink_to("/dev/zero")
    elif kind == "folder":
        shot.mkdir()
    else:
        import socket

        server = socket.socket(socket.AF_UNIX)
        server.bind(str(shot))
    refused = bounded(lambda: check_png(shot, 64, 64, root))
    assert isinstance(refused, GameFailed) and refused.message == NOT_REGULAR, refused
    assert isinstance(bounded(lambda: png_size(shot, root)), GameFailed)


def test_a_folder_swapped_for_a_link_is_not_followed(root: Path, tmp_path: Path):
    """A recording's frames live in a folder of the scratch dir: a link in its place (to a
    folder of valid frames elsewhere) is refused, not read through."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    for i in range(2):
        (elsewhere / f"frame-{i:04d}.png").write_bytes(png_of(32, 32))
    (root / "rec-x").symlink_to(elsewhere)
    frames = [root / "rec-x" / f"frame-{i:04d}.png" for i in range(2)]
    refused = bounded(lambda: check_png(frames[0], 32, 32, root))
    assert isinstance(refused, GameFailed) and refused.message == NOT_REGULAR
    refused = bounded(lambda: assemble_apng(frames, root / "rec-x.png", 10, root))
    assert isinstance(refused, GameFailed) and refused.message == NOT_REGULAR


def test_a_scratch_dir_others_may_enter_is_refused(tmp_path: Path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    (shared / "shot.png").write_bytes(png_of(16, 16))
    with pytest.raises(GameFailed) as refused:
        check_png(shared / "shot.png", 16, 16, shared)
    assert refused.value.message == NOT_PRIVATE


def test_a_missing_file_says_the_engine_did_not_write_it(root: Path):
    with pytest.raises(GameFailed) as refused:
        check_png(root / "nothing.png", 16, 16)
    assert refused.value.message == NOT_WRITTEN


def test_a_file_past_its_length_or_its_time_is_refused(root: Path):
    sparse = root / "shot-x.png"
    with open(sparse, "wb") as f:
        f.write(png_of(16, 16))
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing of it is on the disk
    with pytest.raises(GameFailed) as refused:
        check_png(sparse, 16, 16)
    assert refused.value.message == TOO_LONG.format(limit=MAX_FILE_BYTES)
    ok = root / "ok.png"
    ok.write_bytes(png_of(16, 16))
    with open_game_file(root, ok, seconds=0) as late, pytest.raises(GameTimeout) as timed:
        late.read(8)
    assert timed.value.message == "reading a capture file took longer than 0 s"
    size = ok.stat().st_size
    with open_game_file(root, ok, limit=size) as capped:
        with open(ok, "ab") as more:  # what a file grows by once opened is never read
            more.write(b"x" * 100)
        assert capped.read() == ok.read_bytes()[:size]


def test_a_chunk_claiming_gigabytes_is_refused_before_it_is_read(root: Path):
    head = png_of(16, 16)[:33]  # the signature and IHDR
    bad = root / "shot-x.png"
    bad.write_bytes(head + struct.pack(">I4s", 0x7FFF_FFFF, b"IDAT") + b"\0" * 64)
    with pytest.raises(GameFailed) as refused:
        check_png(bad, 16, 16)
    assert refused.value.message == f"a capture file has a chunk longer than {16 << 20} bytes"


def test_bytes_after_the_end_of_a_png_are_refused(root: Path):
    tail = root / "shot-x.png"
    tail.write_bytes(png_of(16, 16) + b"more")
    with pytest.raises(GameFailed) as refused:
        check_png(tail, 16, 16)
    assert refused.value.message == "a capture file has bytes past its end"


@pytest.mark.parametrize(
    ("width", "height"), [(12000, 12000), (MAX_SIDE + 1, 16), (16, MAX_SIDE + 1), (1 << 31, 1)]
)
def test_a_png_past_the_pixel_budget_is_refused_from_its_header(
    root: Path, width: int, height: int
):
    """Even when the engine's report agrees with it: the header is read first, and nothing is
    decoded (a few rows of image data stand for the rest)."""
    bomb = root / "shot-x.png"
    bomb.write_bytes(png_of(width if width < 1 << 20 else 16, height, rows=2))
    if width >= 1 << 20:  # a width no zlib stream is made for: patch the header's
        data = bytearray(bomb.read_bytes())
        header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
        data[8:33] = chunk(b"IHDR", header)
        bomb.write_bytes(bytes(data))
    for call in (
        lambda: check_png(bomb, width, height),
        lambda: png_size(bomb),
        lambda: downscale(bomb, 640, 1 << 20),
        lambda: contact_sheet([bomb, bomb], 640, 1 << 20),
        lambda: assemble_apng([bomb, bomb], root / "rec.png", 10),
    ):
        with pytest.raises(GameFailed) as refused:
            call()
        assert refused.value.message == bomb_message(width, height)


def test_a_png_of_the_budget_itself_is_checked_whole(root: Path):
    edge = root / "shot-x.png"
    edge.write_bytes(png_of(MAX_SIDE, 2))
    digest = check_png(edge, MAX_SIDE, 2)
    assert digest.size == edge.stat().st_size


def test_a_raw_frame_past_the_budget_or_not_a_file_is_refused(root: Path, tmp_path: Path):
    png = root / "shot-x.png"
    png.write_bytes(png_of(64, 48))
    huge = root / "shot-x.raw"
    huge.write_bytes(b"")
    with pytest.raises(GameFailed) as refused:
        downscale(png, 32, 1 << 20, RawFrame(huge, "RGB", 12000, 12000))
    assert refused.value.message == bomb_message(12000, 12000)
    fifo = root / "shot-y.raw"
    os.mkfifo(fifo)
    refused_fifo = bounded(lambda: downscale(png, 32, 1 << 20, RawFrame(fifo, "RGB", 64, 48)))
    assert isinstance(refused_fifo, GameFailed) and refused_fifo.message == NOT_REGULAR
    # A raw file of the wrong length is not what it says: the PNG is decoded instead.
    short = root / "shot-z.raw"
    short.write_bytes(b"\0" * 10)
    preview = downscale(png, 32, 1 << 20, RawFrame(short, "RGB", 64, 48))
    assert preview is not None
    with Image.open(io.BytesIO(preview.png)) as image:
        assert image.size == (32, 24) and image.convert("RGB").getpixel((3, 3)) == (128,) * 3


def test_an_apng_is_written_through_no_link(root: Path, tmp_path: Path):
    """The APNG the server assembles sits where the game can reach it too: a link or a FIFO
    planted at its name is refused, and nothing is written through it."""
    frames = []
    for i in range(2):
        frame = root / f"frame-{i}.png"
        frame.write_bytes(png_of(16, 16))
        frames.append(frame)
    target = tmp_path / "victim"
    target.write_bytes(b"keep")
    out = root / "rec-x.png"
    out.symlink_to(target)
    with pytest.raises(GameFailed) as refused:
        assemble_apng(frames, out, 10)
    assert refused.value.message == NOT_REGULAR
    assert target.read_bytes() == b"keep"
    out.unlink()
    os.mkfifo(out)
    refused_fifo = bounded(lambda: assemble_apng(frames, out, 10))
    assert isinstance(refused_fifo, GameFailed) and refused_fifo.message == NOT_REGULAR
    out.unlink()
    digest = assemble_apng(frames, out, 10)
    assert digest.size == out.stat().st_size
    with Image.open(out) as anim:
        assert anim.n_frames == 2
