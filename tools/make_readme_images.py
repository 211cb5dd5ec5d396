"""Remake the README's pictures of the demo: docs/img/demo-{screenshot,recording,contact-sheet}.png.

    GODOT_BIN=godot .venv4/bin/python tools/make_readme_images.py   # capture afresh (Godot 4)
    .venv/bin/python tools/make_readme_images.py --from demo-output   # reuse a demo run's files

The README's pictures come from Godot 4 (``examples/demo`` is a Godot 4 project: run it where
``GODOT_BIN`` is a Godot 4, such as ``tools/godot4-root.sh run …``). By default it starts
``godot-mcp serve`` on examples/demo over stdio (a throw-away state dir),
starts a windowed game session, captures a screenshot and a recording through the tools, reads
both back through ``resources/read`` and checks their SHA-256, exactly as a client would. With
``--from DIR`` it takes ``DIR/screenshot.png``, ``DIR/recording.png`` and ``DIR/contact-sheet.png``
(what ``tools/demo.py`` saves) instead. The contact sheet is the image the recording's answer
carries, exactly as the model sees it. Either way it writes small copies for the README: the
screenshot about 640 px wide, the recording an animated PNG (APNG) about 480 px wide, each on a
256-colour palette so browsers and code hosts show them at a fraction of the size.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "examples" / "demo"
OUT = ROOT / "docs" / "img"


async def _read(client: Client, artifact: dict) -> bytes:
    """An artifact's bytes, read in ranges through resources/read and checked by SHA-256."""
    data = bytearray()
    while not data or len(data) < artifact["size"]:
        uri = f"{artifact['uri']}?offset={len(data)}" if data else artifact["uri"]
        data += base64.b64decode((await client.read_resource(uri)).contents[0].blob)
    if hashlib.sha256(data).hexdigest() != artifact["sha256"]:
        raise SystemExit("make_readme_images: an artifact does not match its SHA-256")
    return bytes(data)


async def _call(client: Client, tool: str, args: dict) -> dict:
    body = (await client.call_tool(tool, args)).structured_content or {}
    if body.get("outcome") != "ok":
        why = f"{body.get('outcome')}: {body.get('message')}"
        raise SystemExit(f"make_readme_images: {tool} answered {why}")
    return body


async def capture(frames: int, fps: int) -> tuple[bytes, bytes, bytes]:
    """A screenshot, a recording and its contact sheet (the image the recording's answer
    carries) of examples/demo, taken by the real server."""
    with tempfile.TemporaryDirectory(prefix="godot-mcp-readme-") as state:
        argv = [sys.executable, "-m", "godot_mcp.cli.serve", "serve", "--project", str(PROJECT)]
        argv += ["--state-dir", state]
        async with Client(StdioServerParameters(command=argv[0], args=argv[1:])) as client:
            sid = (await _call(client, "runtime_session_start", {}))["session"]["id"]
            try:
                await anyio.sleep(1.0)  # let the spinner get going
                shot = await _call(client, "runtime_screenshot_capture", {"session_id": sid})
                answer = await client.call_tool(
                    "runtime_recording_capture",
                    {"session_id": sid, "frames": frames, "fps": fps},
                )
                rec = answer.structured_content or {}
                if rec.get("outcome") != "ok":
                    raise SystemExit(f"make_readme_images: the recording answered {rec}")
                (sheet,) = [base64.b64decode(b.data) for b in answer.content if b.type == "image"]
                shot_bytes = await _read(client, shot["artifact"])
                return shot_bytes, await _read(client, rec["artifact"]), sheet
            finally:
                await _call(client, "runtime_session_stop", {"session_id": sid})


def _frames(data: bytes) -> tuple[list[Image.Image], list[float]]:
    im = Image.open(io.BytesIO(data))
    frames, durations = [], []
    for i in range(getattr(im, "n_frames", 1)):
        im.seek(i)
        frames.append(im.convert("RGB"))
        durations.append(float(im.info.get("duration") or 100))
    return frames, durations


def _small(im: Image.Image, width: int) -> Image.Image:
    return im.resize((width, round(im.height * width / im.width)), Image.Resampling.LANCZOS)


def _palette(frames: list[Image.Image]) -> Image.Image:
    """One 256-colour palette for all frames: a montage of samples, quantized once."""
    picks = frames[:: max(1, len(frames) // 8)]
    sheet = Image.new("RGB", (picks[0].width, picks[0].height * len(picks)))
    for i, frame in enumerate(picks):
        sheet.paste(frame, (0, i * frame.height))
    return sheet.quantize(256, method=Image.Quantize.MEDIANCUT)


def write_images(
    shot: bytes, rec: bytes, sheet: bytes, out: Path, shot_width: int, rec_width: int
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    contact = Image.open(io.BytesIO(sheet)).convert("RGB")
    contact = contact.quantize(palette=_palette([contact]), dither=Image.Dither.NONE)
    contact.save(out / "demo-contact-sheet.png", optimize=True)
    still = _small(Image.open(io.BytesIO(shot)).convert("RGB"), shot_width)
    still = still.quantize(palette=_palette([still]), dither=Image.Dither.NONE)
    still.save(out / "demo-screenshot.png", optimize=True)

    frames, durations = _frames(rec)
    small = [_small(f, rec_width) for f in frames]
    pal = _palette(small)
    indexed = [f.quantize(palette=pal, dither=Image.Dither.NONE) for f in small]
    indexed[0].save(
        out / "demo-recording.png",
        format="PNG",
        save_all=True,
        append_images=indexed[1:],
        duration=durations,
        loop=0,
        optimize=True,
    )
    check = Image.open(out / "demo-recording.png")
    if not (getattr(check, "is_animated", False) and check.n_frames == len(frames)):
        raise SystemExit("make_readme_images: the recording did not come out as an animated PNG")
    for name in ("demo-screenshot.png", "demo-recording.png", "demo-contact-sheet.png"):
        path = out / name
        im = Image.open(path)
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        frames = getattr(im, "n_frames", 1)
        print(f"{shown}: {im.width}x{im.height}, {frames} frame(s), {path.stat().st_size} bytes")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="src", metavar="DIR", help="reuse a demo run's output dir")
    ap.add_argument("--frames", type=int, default=36, help="recording frames when capturing (36)")
    ap.add_argument("--fps", type=int, default=12, help="recording frame rate when capturing (12)")
    ap.add_argument("--out", default=str(OUT), help="output directory (docs/img)")
    args = ap.parse_args()
    if args.src:
        src = Path(args.src)
        shot, rec = (src / "screenshot.png").read_bytes(), (src / "recording.png").read_bytes()
        sheet = (src / "contact-sheet.png").read_bytes()
    else:
        shot, rec, sheet = anyio.run(capture, args.frames, args.fps)
    write_images(shot, rec, sheet, Path(args.out), shot_width=640, rec_width=480)
    return 0


if __name__ == "__main__":
    sys.exit(main())
