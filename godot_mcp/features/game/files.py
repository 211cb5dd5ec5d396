"""Files a game wrote, read by the server: opened safely, read under bounds.

A game runs project code as the server's own user, and project code can answer the bridge's
capture command itself: whatever sits at a capture path (a screenshot, a recording's frames, a
screenshot's raw pixels) may be a FIFO, a device, a link, a directory, a sparse file of any
length, or a PNG whose header claims any size. So every such file is opened by
:func:`open_game_file` only, on a worker thread (never on the event loop), and:

- relative to the session's scratch dir, which must be a directory of the server's own user that
  nobody else may enter (``0700``); every directory below it and the file itself are opened
  without following links (``O_NOFOLLOW``), so no path component can be swapped for a link;
- looked at first without being opened (``O_PATH``, ``fstat``): anything but a regular file (a
  FIFO, a device, a socket, a directory, a link) is refused before it is opened;
- then opened non-blocking (``O_NONBLOCK``: a FIFO swapped in meanwhile cannot make the open
  wait for a writer) and refused unless it is that same regular file;
- it is read through a :class:`GameFile`: at most ``limit`` bytes (a file longer than that is
  refused when opened; what it grows by later is never read) and only until ``READ_SECONDS``
  after it was opened (then :class:`~godot_mcp.features.game.errors.GameTimeout`).

Every refusal is a :class:`~godot_mcp.features.game.errors.GameFailed` (a read past its time: a
``GameTimeout``) whose message names no path.

The pixel budget (:func:`check_pixels`): no image a game wrote is decoded past ``MAX_SIDE`` on
either side, so at most ``MAX_PIXELS``. It is the session's own limit (``session.MAX_SIZE``, the
largest window a session may ask for): a frame larger than any size a caller may request can
only come from the project itself, and is refused from its header, before anything is decoded.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import struct
import time
from pathlib import Path
from typing import BinaryIO

from godot_mcp.features.game.errors import GameFailed, GameTimeout

MAX_SIDE = 8192  # session.MAX_SIZE: the largest window side a session may ask for
MAX_PIXELS = MAX_SIDE * MAX_SIDE
# The longest file read: an RGBA frame of the budget stored without compression (4 bytes a
# pixel), with room for filter bytes, chunk framing and deflate's stored blocks.
MAX_FILE_BYTES = 5 * MAX_PIXELS
READ_SECONDS = 20.0  # the longest one file may take to read, from its opening

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

NOT_WRITTEN = "the engine did not write the capture file"
NOT_REGULAR = "a capture file is not a regular file (a FIFO, device, link or directory): refused"
NOT_PRIVATE = "the server's scratch dir is not private to the server's user: captures refused"
TOO_LONG = "a capture file is longer than {limit} bytes: refused"
TOO_SLOW = "reading a capture file took longer than {seconds:g} s"
TOO_MANY_PIXELS = (
    "the capture is {width}x{height} pixels, past the {side}x{side} a capture may have "
    "(the largest size a session may ask for): refused before decoding"
)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC


class GameFile(io.RawIOBase):
    """A regular file a game wrote, read through its descriptor: at most ``limit`` bytes (a
    read past them finds the end), each read before ``deadline`` (``GameTimeout`` after)."""

    def __init__(self, fd: int, limit: int, deadline: float, seconds: float) -> None:
        super().__init__()
        self._fd = fd
        self._limit = limit
        self._deadline = deadline
        self._seconds = seconds

    def fileno(self) -> int:
        return self._fd

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if time.monotonic() > self._deadline:
            raise GameTimeout(TOO_SLOW.format(seconds=self._seconds))
        view = memoryview(buffer).cast("B")
        room = self._limit - os.lseek(self._fd, 0, os.SEEK_CUR)
        if room <= 0:
            return 0
        return os.readv(self._fd, [view[:room]])

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return os.lseek(self._fd, offset, whence)

    def tell(self) -> int:
        return os.lseek(self._fd, 0, os.SEEK_CUR)

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self._fd)
            finally:
                super().close()


def open_game_file(
    root: Path,
    path: Path,
    limit: int = MAX_FILE_BYTES,
    seconds: float = READ_SECONDS,
) -> GameFile:
    """The regular file at ``path`` (inside ``root``, the session's private scratch dir),
    opened as the module says; ``GameFailed`` for anything else. Blocking: a worker thread's."""
    deadline = time.monotonic() + seconds
    folder, name = _folder_of(root, path)
    try:
        seen = _probe(name, folder)
        if seen is None:
            raise GameFailed(NOT_WRITTEN)
        fd = _open_at(name, _FILE_FLAGS, folder)
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != seen:
            raise GameFailed(NOT_REGULAR)
        if info.st_size > limit:
            raise GameFailed(TOO_LONG.format(limit=limit))
    except BaseException:
        os.close(fd)
        raise
    return GameFile(fd, limit, deadline, seconds)


def open_game_stream(
    root: Path, path: Path, limit: int = MAX_FILE_BYTES, seconds: float = READ_SECONDS
) -> BinaryIO:
    """:func:`open_game_file`, buffered."""
    raw = open_game_file(root, path, limit, seconds)
    return io.BufferedReader(raw, buffer_size=1 << 16)


def _folder_of(root: Path, path: Path) -> tuple[int, str]:
    """A descriptor of ``path``'s folder, walked down from ``root`` (private to this user)
    without following a link, and the file's name in it."""
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        raise GameFailed("a capture file is outside the server's scratch dir") from None
    if not parts or ".." in parts:
        raise GameFailed("a capture file is outside the server's scratch dir")
    try:
        folder = os.open(root, _DIR_FLAGS)
    except OSError:
        raise GameFailed(NOT_PRIVATE) from None
    try:
        mine = os.fstat(folder)
        if mine.st_uid != os.geteuid() or mine.st_mode & 0o077:
            raise GameFailed(NOT_PRIVATE)
        for part in parts[:-1]:
            inner = _open_at(part, _DIR_FLAGS, folder)
            os.close(folder)
            folder = inner
    except BaseException:
        os.close(folder)
        raise
    return folder, parts[-1]


def _probe(name: str, folder: int) -> tuple[int, int] | None:
    """The device and inode of ``name`` in ``folder``, looked at without opening it (``O_PATH``:
    a FIFO does not wait, a device is not touched, a link is the link); None when there is
    nothing there; ``GameFailed`` unless it is a regular file."""
    try:
        probe = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GameFailed(f"a capture file could not be opened: {exc.strerror}") from None
    try:
        seen = os.fstat(probe)
    finally:
        os.close(probe)
    if not stat.S_ISREG(seen.st_mode):
        raise GameFailed(NOT_REGULAR)
    return seen.st_dev, seen.st_ino


def _open_at(name: str, flags: int, folder: int) -> int:
    try:
        return os.open(name, flags, 0o600, dir_fd=folder)
    except FileNotFoundError:
        raise GameFailed(NOT_WRITTEN) from None
    except OSError as exc:
        # ELOOP: a link; ENOTDIR: a link or a file where a folder was; ENXIO: a socket.
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EISDIR, errno.EMLINK):
            raise GameFailed(NOT_REGULAR) from None
        raise GameFailed(f"a capture file could not be opened: {exc.strerror}") from None


def check_pixels(width: int, height: int) -> None:
    """``GameFailed`` unless a ``width`` x ``height`` image fits the pixel budget.

    The outcome is ``failed``, not ``too_large``: the caller asked for nothing large (the size
    a session may ask for is checked, ``invalid_argument``, before any game runs), so a frame
    past it is the game's doing, a capture the engine should not have made, like a malformed
    one; ``too_large`` says "ask for less", which a caller cannot do here.
    """
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        raise GameFailed(TOO_MANY_PIXELS.format(width=width, height=height, side=MAX_SIDE))


def png_header(f: BinaryIO) -> tuple[int, int]:
    """Width and height from the IHDR at the start of ``f``, within the pixel budget;
    ``GameFailed`` if it is not a PNG or too large. Reads 24 bytes."""
    head = f.read(24)
    if len(head) < 24 or head[:8] != PNG_MAGIC or head[12:16] != b"IHDR":
        raise GameFailed("the engine wrote a capture that is not a PNG")
    width, height = struct.unpack(">II", head[16:24])
    check_pixels(int(width), int(height))
    return int(width), int(height)


def create_server_file(root: Path, path: Path) -> BinaryIO:
    """``path`` (inside ``root``) opened for writing, emptied: a file the server writes where
    the game can reach it (an APNG assembled from its frames). Opened as the game's files are:
    no link followed, a FIFO refused (``ENXIO``: non-blocking with no reader), a regular file or
    ``GameFailed``."""
    folder, name = _folder_of(root, path)
    try:
        _probe(name, folder)  # a FIFO or a device there is refused before it is opened
        fd = _open_at(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _FILE_FLAGS, folder)
    finally:
        os.close(folder)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise GameFailed(NOT_REGULAR)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "wb", closefd=True)
