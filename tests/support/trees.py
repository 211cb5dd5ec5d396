"""Fingerprints of whole directory trees, to prove a project was left untouched."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under ``root``: its mode, and its content hash or link target."""
    digest: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            what = "link:" + os.readlink(path)
        elif stat.S_ISDIR(info.st_mode):
            what = "dir"
        else:
            what = hashlib.sha256(path.read_bytes()).hexdigest()
        digest[str(path.relative_to(root))] = f"{oct(info.st_mode)} {what}"
    return digest
