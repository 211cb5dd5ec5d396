"""What project checks and imports share: a headless Godot in the exports' sandbox, one of
the ``--max-exports`` slots while it runs, and scratch in ``scratch/checks/<pid>-<start>/``
(a killed server's is swept like its game scratch)."""

from __future__ import annotations

import shutil

from godot_mcp.errors import Unavailable
from godot_mcp.godot.process.locate import GodotInstall
from godot_mcp.runtime.context import Runtime
from godot_mcp.runtime.exports import ExportService
from godot_mcp.runtime.owner import me


class HeadlessWork:
    """The base of a service that runs the project's headless Godot outside an export."""

    def __init__(self, rt: Runtime, exports: ExportService) -> None:
        self.rt = rt
        self.exports = exports
        pid, start = me()
        self.scratch = rt.dirs.scratch_dir / "checks" / f"{pid}-{start}"  # made when used

    def availability(self) -> str:
        return self.exports.availability()

    def make_scratch(self) -> None:
        """This process's scratch, private, with the folders above it (blocking)."""
        self.rt.dirs.scratch("checks")
        self.scratch.mkdir(mode=0o700, exist_ok=True)

    def install(self) -> GodotInstall:
        """The install whose headless engine does the work; ``Unavailable`` saying why not."""
        why = self.availability()
        if why != "available":
            raise Unavailable(why.removeprefix("unavailable: "))
        assert self.rt.godot.headless is not None  # availability said so
        return self.rt.godot

    def refuse_low_space(self, need: int, what: str) -> None:
        """``Unavailable`` when the scratch's disk has less than ``need`` bytes free;
        ``what`` ends the refusal (``a check needs about N for …``). Blocking."""
        self.make_scratch()
        try:
            free = shutil.disk_usage(self.scratch).free
        except OSError:
            return
        if free < need:
            raise Unavailable(f"the state dir's disk has {free} bytes free; {what}")
