"""Small helpers shared by the two command-line entry points."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

from godot_mcp.config import Settings
from godot_mcp.store.store import ArtifactStore


def fail(prog: str, message: str, status: int = 2) -> int:
    """Print a one-line error on stderr and return the exit status."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    return status


def print_report(report: Mapping[str, object], as_json: bool) -> None:
    """Print a flat report as JSON or as aligned ``key: value`` lines."""
    if as_json:
        print(json.dumps(report, sort_keys=True))
        return
    flat: dict[str, object] = {}
    for key, value in report.items():
        if isinstance(value, Mapping):
            for sub, v in value.items():
                flat[f"{key}.{sub}"] = v
        else:
            flat[key] = value
    width = max((len(k) for k in flat), default=0)
    for key, value in flat.items():
        print(f"{key.ljust(width)}  {value}")


def open_store(settings: Settings) -> ArtifactStore:
    """Open (and migrate) the store of a state dir."""
    return ArtifactStore(settings.state_dir, settings.limits)
