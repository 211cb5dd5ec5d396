"""Previews a model sees in the answer itself: a downscaled frame, a recording's contact sheet.

A preview is a PNG of at most ``max_px`` on its long edge (a frame or a whole sheet),
never larger than ``max_bytes`` once encoded (it goes into the answer as base64): when a noisy
frame encodes bigger, it is scaled down again until it fits, and there is none when even a
16 px one would not. Frames are never scaled up.
Pure image work on Pillow; callers run it on a worker thread.

Every file read here was written by a game: it is opened as ``features/game/files.py`` says (under
``root``, the session's scratch dir: no link followed, a regular file, bounded in length and
time), and no image is decoded past the pixel budget there (``MAX_SIDE`` a side, the session's
own size limit), checked on its header before Pillow decodes anything: a refused file raises
``GameFailed``. Pillow's own ``Image.MAX_IMAGE_PIXELS`` is not relied on (it is global, and
below twice its value it only warns).
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from godot_mcp.features.game.files import check_pixels, open_game_file, open_game_stream, png_header

MAX_CELLS = 16
LABEL_PX = 12  # the strip under each cell that names its frame index
GAP_PX = 2
_SHRINK = 0.75  # how much smaller each try is when an encoded preview does not fit
_MIN_PX = 16
_BETTER = 1.5  # how much larger (on each edge) cells must be to leave the square grid
_GAP = (110, 110, 110)  # between cells: a frame's own dark edges stay apart
_STRIP = (16, 16, 16)  # under a cell, behind its label
_FAST = 1  # zlib level: previews are thrown away after one answer, speed matters more
_CHANNELS = {"RGB": 3, "RGBA": 4}
_STRIP_BYTES = 4 << 20  # raw pixels are read and unpacked this much at a time


@dataclass(frozen=True)
class Preview:
    """An encoded preview PNG, its size, and for a sheet the frames its cells show."""

    png: bytes
    width: int
    height: int
    frames: tuple[int, ...] = ()
    columns: int = 0
    cells: tuple[tuple[int, int, int, int], ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class RawFrame:
    """A frame's pixels as the engine holds them (8-bit ``RGB`` or ``RGBA``, rows top down)."""

    path: Path
    mode: str
    width: int
    height: int


def downscale(
    path: Path,
    max_px: int,
    max_bytes: int,
    raw: RawFrame | None = None,
    root: Path | None = None,
) -> Preview | None:
    """The PNG at ``path`` scaled to at most ``max_px`` on its long edge; from ``raw``, the
    same frame's pixels, when the engine wrote them (no PNG to decode: most of the cost).
    ``root``: the scratch dir the files are in (``path``'s folder when not given)."""
    frame = _from_raw(raw, root) if raw is not None else None
    if frame is None:
        frame = decode(path, root)
    edge = max(frame.size)
    target = min(max_px, edge)
    while True:
        scale = target / edge
        size = (max(1, round(frame.width * scale)), max(1, round(frame.height * scale)))
        shown = frame if size == frame.size else _resize(frame, size)
        png = _encode(shown)
        if len(png) <= max_bytes:
            return Preview(png, shown.width, shown.height)
        if target <= _MIN_PX:
            return None  # the answer has no room for it, however small
        target = max(_MIN_PX, int(target * _SHRINK))


def sheet_frames(count: int, most: int = MAX_CELLS) -> list[int]:
    """The indices a contact sheet of ``count`` frames shows: all of them up to ``most``
    (16), else ``most`` evenly spaced from the first to the last, in time order."""
    if count <= most:
        return list(range(count))
    if most == 1:
        return [0]
    return [round(i * (count - 1) / (most - 1)) for i in range(most)]


def sheet_columns(cells: int) -> int:
    """Columns of a sheet of ``cells`` cells: as square a grid as fits them."""
    return max(1, math.ceil(math.sqrt(cells)))


@dataclass(frozen=True)
class Layout:
    """A sheet's grid: ``cells`` cells in ``columns`` columns, each ``cell`` (width, height)
    with a ``label`` px strip under it; the whole ``size``."""

    cells: int
    columns: int
    cell: tuple[int, int]
    label: int

    @property
    def rows(self) -> int:
        return math.ceil(self.cells / self.columns)

    @property
    def size(self) -> tuple[int, int]:
        width = self.columns * (self.cell[0] + GAP_PX) - GAP_PX
        return width, self.rows * (self.cell[1] + self.label + GAP_PX) - GAP_PX


def sheet_layout(frame: tuple[int, int], count: int, max_px: int) -> Layout | None:
    """The grid of a sheet of ``count`` frames of size ``frame``, at most ``max_px`` on its
    long edge, whatever the frame's shape.

    Frames are never scaled up, and keep their shape down to a pixel. The columns are as
    square a grid as fits the cells, unless the frame's shape makes another number of columns
    show them more than ``_BETTER`` times larger (a tall window: one row; a wide one: one
    column). Fewer frames are shown (evenly spaced, :func:`sheet_frames`) while their cells
    would be smaller than ``_MIN_PX`` on their short edge, and one frame could be larger. A
    sheet too small for a label under one cell has no labels. None when ``max_px`` < 1.
    """
    for label in (LABEL_PX, 0):
        one = _grid(frame, 1, max_px, label)
        if one is None:
            continue
        floor = min(_MIN_PX, min(one.cell))
        for cells in range(min(count, MAX_CELLS), 0, -1):
            layout = _grid(frame, cells, max_px, label)
            if layout is not None and min(layout.cell) >= floor:
                return layout
        return one
    return None


def _grid(frame: tuple[int, int], cells: int, max_px: int, label: int) -> Layout | None:
    """The best grid of ``cells`` cells within ``max_px`` (see :func:`sheet_layout`)."""
    fits = [
        layout
        for columns in range(1, cells + 1)
        if (layout := _fit(frame, cells, columns, max_px, label)) is not None
    ]
    if not fits:
        return None
    largest = max(fits, key=lambda layout: layout.cell[0] * layout.cell[1])
    square = next((f for f in fits if f.columns == sheet_columns(cells)), None)
    area = square.cell[0] * square.cell[1] if square is not None else 0
    if square is not None and largest.cell[0] * largest.cell[1] <= _BETTER**2 * area:
        return square
    return largest


def _fit(
    frame: tuple[int, int], cells: int, columns: int, max_px: int, label: int
) -> Layout | None:
    """``cells`` cells in ``columns`` columns scaled to fit ``max_px`` both ways; None when
    not even a pixel a cell fits."""
    rows = math.ceil(cells / columns)
    room_w = (max_px - (columns - 1) * GAP_PX) // columns
    room_h = (max_px - rows * (label + GAP_PX) + GAP_PX) // rows
    if room_w < 1 or room_h < 1:
        return None
    width, height = frame
    scale = min(1.0, room_w / width, room_h / height)
    cell = (
        min(room_w, max(1, math.floor(width * scale))),
        min(room_h, max(1, math.floor(height * scale))),
    )
    return Layout(cells, columns, cell, label)


def contact_sheet(
    paths: Sequence[Path], max_px: int, max_bytes: int, root: Path | None = None
) -> Preview | None:
    """A grid of the frames at ``paths`` (or some evenly spaced), left to right then top to
    bottom, each cell labelled under it with its frame index; at most ``max_px`` on its long
    edge (:func:`sheet_layout`). Each frame shown is decoded once; a sheet made smaller to fit
    ``max_bytes`` is scaled from those cells, and shows the same frames or fewer of them."""
    with open_game_stream(_root(paths[0], root), paths[0]) as first:
        frame = png_header(first)
    shown = list(range(len(paths)))
    images: list[Image.Image] = []
    while True:
        layout = sheet_layout(frame, len(shown), max_px)
        if layout is None:
            return None
        keep = sheet_frames(len(shown), layout.cells)
        had = dict(zip(shown, images, strict=False))
        shown = [shown[i] for i in keep]
        images = [_cell(had.get(index), paths[index], layout.cell, root) for index in shown]
        sheet, boxes = _lay_out(images, shown, layout)
        png = _encode(sheet)
        if len(png) <= max_bytes:
            return Preview(png, sheet.width, sheet.height, tuple(shown), layout.columns, boxes)
        if max(layout.cell) <= _MIN_PX:
            return None  # the answer has no room for it, however small
        max_px = int(max_px * _SHRINK)


def decode(path: Path, root: Path | None = None) -> Image.Image:
    """The PNG a game wrote at ``path`` as an RGB image; ``GameFailed`` if it is not a PNG,
    cannot be opened as the game's files are, or is past the pixel budget (read from its
    header, then again from what Pillow parsed, before any pixel is decoded)."""
    with open_game_stream(_root(path, root), path) as png:
        png_header(png)
        png.seek(0)
        with Image.open(png, formats=["PNG"]) as image:
            check_pixels(*image.size)  # the same bytes may have changed since: Pillow's view
            return _rgb(image)


def _root(path: Path, root: Path | None) -> Path:
    return Path(path).parent if root is None else root


def _cell(
    made: Image.Image | None, path: Path, cell: tuple[int, int], root: Path | None
) -> Image.Image:
    """A frame at ``cell`` size: from the cell ``made`` for it before when that is no
    smaller (never scaled up), else decoded again."""
    if made is not None and made.width >= cell[0] and made.height >= cell[1]:
        frame = made
    else:
        frame = decode(path, root)
    return frame if frame.size == cell else _resize(frame, cell)


def _lay_out(
    cells: Sequence[Image.Image], shown: Sequence[int], layout: Layout
) -> tuple[Image.Image, tuple[tuple[int, int, int, int], ...]]:
    cell_w, cell_h = layout.cell
    pitch_x, pitch_y = cell_w + GAP_PX, cell_h + layout.label + GAP_PX
    sheet = Image.new("RGB", layout.size, _GAP)
    font = ImageFont.load_default()
    boxes = []
    for n, (index, image) in enumerate(zip(shown, cells, strict=True)):
        x, y = (n % layout.columns) * pitch_x, (n // layout.columns) * pitch_y
        sheet.paste(image, (x, y))
        boxes.append((x, y, cell_w, cell_h))
        if layout.label:
            # Drawn on a strip of its own: a label wider than a narrow cell is cut at its edge.
            strip = Image.new("RGB", (cell_w, layout.label), _STRIP)
            ImageDraw.Draw(strip).text((2, 0), str(index), fill=(230, 230, 230), font=font)
            sheet.paste(strip, (x, y + cell_h))
    return sheet, tuple(boxes)


def _from_raw(raw: RawFrame, root: Path | None = None) -> Image.Image | None:
    """The raw frame as an RGB image (alpha dropped as it is unpacked), or None when the file
    is not what it says; ``GameFailed`` when it is past the pixel budget or cannot be opened as
    the game's files are. Read a strip of rows at a time into the image, never mapped (a game
    truncating a mapped file would kill the server with ``SIGBUS``)."""
    channels = _CHANNELS.get(raw.mode)
    if channels is None or raw.width <= 0 or raw.height <= 0:
        return None
    check_pixels(raw.width, raw.height)
    size = raw.width * raw.height * channels
    with open_game_file(_root(raw.path, root), raw.path) as f:
        if os.fstat(f.fileno()).st_size != size:
            return None
        image = Image.new("RGB", (raw.width, raw.height))
        rawmode = "RGBX" if channels == 4 else "RGB"
        row = raw.width * channels
        rows = max(1, _STRIP_BYTES // row)
        top = 0
        while top < raw.height:
            count = min(rows, raw.height - top)
            strip = bytearray(row * count)
            view = memoryview(strip)
            got = 0
            while got < len(strip):
                n = f.readinto(view[got:])
                if not n:
                    return None  # shorter than it said: the game cut it
                got += n
            image.paste(Image.frombytes("RGB", (raw.width, count), strip, "raw", rawmode), (0, top))
            top += count
        return image


def _rgb(image: Image.Image) -> Image.Image:
    image.load()
    return image if image.mode == "RGB" else image.convert("RGB")


def _resize(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """A box average when the scale is a whole factor (fast, exact), else Pillow's bilinear
    resize after a whole-pixel reduction."""
    factor = image.width // size[0]
    if factor > 1 and image.width == size[0] * factor and image.height == size[1] * factor:
        return image.reduce(factor)
    return image.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)


def _encode(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=_FAST)
    return out.getvalue()
