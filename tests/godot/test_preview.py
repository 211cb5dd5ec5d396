"""Previews as pure image work: sizes, the answer's byte budget, raw pixels, sheet layout."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageStat

from godot_mcp.features.game.preview import (
    GAP_PX,
    LABEL_PX,
    RawFrame,
    contact_sheet,
    downscale,
    sheet_columns,
    sheet_frames,
    sheet_layout,
)


def _frame(tmp_path: Path, name: str, size: tuple[int, int], seed: int) -> tuple[Path, Image.Image]:
    image = Image.new("RGB", size, (seed * 40 % 256, 90, 200 - seed * 10 % 200))
    for x in range(0, size[0], 16):  # stripes: what a downscale must average, not drop
        image.paste((255, 255, 255), (x, 0, x + 8, size[1] // 2))
    path = tmp_path / name
    image.save(path)
    return path, image


def _mean_diff(a: Image.Image, b: Image.Image) -> float:
    return sum(ImageStat.Stat(ImageChops.difference(a, b)).mean) / 3


def _png(preview) -> Image.Image:
    return Image.open(io.BytesIO(preview.png))


def test_a_frame_is_scaled_on_its_long_edge_and_never_up(tmp_path):
    path, image = _frame(tmp_path, "f.png", (1280, 720), 1)
    p = downscale(path, 640, 1 << 20)
    assert (p.width, p.height) == (640, 360) == _png(p).size
    want = image.reduce(2)
    assert ImageChops.difference(_png(p).convert("RGB"), want).getbbox() is None
    tall, _ = _frame(tmp_path, "t.png", (300, 900), 2)
    assert downscale(tall, 450, 1 << 20).height == 450
    whole = downscale(tall, 1280, 1 << 20)
    assert (whole.width, whole.height) == (300, 900)


def test_raw_pixels_give_the_same_preview_and_a_wrong_file_falls_back(tmp_path):
    path, image = _frame(tmp_path, "f.png", (640, 480), 3)
    raw = tmp_path / "f.raw"
    raw.write_bytes(image.convert("RGBA").tobytes())
    from_png = downscale(path, 320, 1 << 20)
    from_raw = downscale(path, 320, 1 << 20, RawFrame(raw, "RGBA", 640, 480))
    assert from_raw.png == from_png.png
    raw.write_bytes(b"\0" * 100)  # cut short: the PNG decides
    assert downscale(path, 320, 1 << 20, RawFrame(raw, "RGBA", 640, 480)).png == from_png.png
    assert downscale(path, 320, 1 << 20, RawFrame(raw, "BGR", 640, 480)).png == from_png.png


def test_a_preview_that_does_not_fit_the_answer_is_made_smaller(tmp_path):
    noise = Image.frombytes("RGB", (800, 600), os.urandom(800 * 600 * 3))
    path = tmp_path / "noise.png"
    noise.save(path)
    big = downscale(path, 640, 1 << 22)
    assert big.width == 640 and len(big.png) > 200_000
    small = downscale(path, 640, 100_000)
    assert len(small.png) <= 100_000 and small.width < 640
    assert small.width / small.height == pytest.approx(800 / 600, rel=0.02)
    assert downscale(path, 640, 200) is None  # no room in the answer, however small
    assert contact_sheet([path, path], 640, 200) is None


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (2, [0, 1]),
        (16, list(range(16))),
        (17, [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16]),
        (300, [round(i * 299 / 15) for i in range(16)]),
    ],
)
def test_a_sheet_shows_at_most_16_frames_evenly_in_time_order(count, shown):
    got = sheet_frames(count)
    assert got == shown and got == sorted(set(got)) and got[0] == 0 and got[-1] == count - 1


def test_sheet_columns_make_a_near_square_grid():
    assert [sheet_columns(n) for n in (1, 2, 3, 4, 5, 9, 10, 16)] == [1, 2, 2, 2, 3, 3, 4, 4]


def test_each_cell_is_its_frame_in_order_with_its_label_under_it(tmp_path):
    frames = [_frame(tmp_path, f"{i}.png", (320, 180), i) for i in range(20)]
    sheet = contact_sheet([p for p, _ in frames], 700, 1 << 20)
    assert sheet.frames == tuple(sheet_frames(20)) and sheet.columns == 4
    image = _png(sheet).convert("RGB")
    assert image.size == (sheet.width, sheet.height) and sheet.width <= 700
    for n, (index, (x, y, w, h)) in enumerate(zip(sheet.frames, sheet.cells, strict=True)):
        assert (x, y) == ((n % 4) * (w + GAP_PX), (n // 4) * (h + LABEL_PX + GAP_PX))
        cell = image.crop((x, y, x + w, y + h))
        diffs = [_mean_diff(cell, f.resize((w, h), Image.Resampling.BOX)) for _p, f in frames]
        assert diffs[index] < 5 and diffs[index] == min(diffs), (n, index, diffs)
        label = image.crop((x, y + h, x + w, y + h + LABEL_PX)).convert("L")
        assert label.getextrema()[1] > 150


SHAPES = [(1, 4000), (4000, 1), (64, 2048), (2048, 64), (1, 1), (3, 5), (1280, 720)]


@pytest.mark.parametrize("size", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("max_px", [1, 12, 13, 40, 300, 1024, 1280])
def test_a_whole_sheet_is_at_most_preview_px_on_its_long_edge_whatever_the_window(
    tmp_path, size, max_px
):
    path, _ = _frame(tmp_path, "f.png", size, 1)
    for count in (2, 20):
        sheet = contact_sheet([path] * count, max_px, 1 << 22)
        assert sheet is not None, (size, max_px, count)
        real = _png(sheet).size
        assert real == (sheet.width, sheet.height) and max(real) <= max_px, (real, count)
        shown = list(sheet.frames)
        assert shown == sheet_frames(count, len(shown)) and 1 <= len(shown) <= 16
        for x, y, w, h in sheet.cells:  # inside the sheet, never larger than the frame
            assert x + w <= real[0] and y + h <= real[1] and w <= size[0] and h <= size[1]


def test_a_tall_or_wide_window_gets_one_row_or_one_column_of_cells_as_large_as_fit():
    assert sheet_layout((64, 2048), 20, 1024) == sheet_layout((64, 2048), 16, 1024)
    tall = sheet_layout((64, 2048), 16, 1024)
    assert (tall.cells, tall.columns, tall.cell, tall.size) == (16, 16, (31, 1012), (526, 1024))
    wide = sheet_layout((2048, 64), 16, 1024)
    assert (wide.cells, wide.columns, wide.cell, wide.size) == (16, 1, (1024, 32), (1024, 734))
    # A usual window keeps the square grid; its cells fill the width.
    usual = sheet_layout((1280, 720), 16, 1024)
    assert (usual.columns, usual.cell, usual.size) == (4, (254, 142), (1022, 622))


def test_fewer_frames_when_their_cells_would_be_too_small_to_see():
    # 16 cells of a wide window in 300 px would be 4 px tall; 13 are 9 px, as tall as one.
    few = sheet_layout((2048, 64), 20, 300)
    assert (few.cells, few.columns, few.cell) == (13, 1, (288, 9))
    one = sheet_layout((1280, 720), 20, 16)
    assert (one.cells, one.cell, one.label) == (1, (7, 4), LABEL_PX)
    bare = sheet_layout((1280, 720), 20, 12)  # no room for a label under any cell
    assert (bare.cells, bare.cell, bare.label) == (1, (12, 6), 0)
    assert sheet_layout((1280, 720), 20, 0) is None
