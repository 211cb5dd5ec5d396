"""Real small filesystems for full-disk tests."""

from __future__ import annotations

import subprocess
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(mount: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (``3m``, ``40m``) at ``mount``; skip loudly if that is refused."""
    mount.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        reason = f"SKIPPED LOUDLY: cannot mount a small tmpfs here ({res.stderr.strip()})"
        warnings.warn(reason, stacklevel=3)
        pytest.skip(reason)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory: Path, chunk: int = 1 << 20) -> Path:
    """Write a file in ``directory`` until the disk is full; returns it."""
    filler = directory / "filler.bin"
    block = b"\0" * chunk
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(block)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    return filler
