"""Where the runtime keeps its own things under the server's private state dir: exports'
work dirs, the evidence of interrupted ones, games' and checks' scratch, the imports kept for
later copies, the engines' class references. The store keeps its database and blobs beside
them (``StoreLayout``) and knows nothing of these."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RuntimeDirs:
    """The runtime's folders under ``state_dir``."""

    state_dir: Path

    @property
    def exports_dir(self) -> Path:
        return self.state_dir / "exports"

    @property
    def evidence_dir(self) -> Path:
        return self.state_dir / "evidence"

    @property
    def scratch_dir(self) -> Path:
        return self.state_dir / "scratch"

    def scratch(self, kind: str) -> Path:
        """``scratch/<kind>/`` (``games``, ``checks``), made private (0700) with ``scratch/``
        when missing (blocking: a few syscalls)."""
        for folder in (self.scratch_dir, self.scratch_dir / kind):
            folder.mkdir(mode=0o700, exist_ok=True)
            os.chmod(folder, 0o700)
        return self.scratch_dir / kind

    @property
    def imports_dir(self) -> Path:
        """What imports of private copies wrote, kept for later copies of the same files
        (``runtime/import_cache.py``)."""
        return self.state_dir / "imports"

    @property
    def api_dir(self) -> Path:
        """The engines' class references, one dir per exact engine version."""
        return self.state_dir / "api"
