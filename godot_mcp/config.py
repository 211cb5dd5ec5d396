"""Options shared by ``godot-mcp serve`` and every ``godot-mcp-admin`` subcommand.

Each option may also come from its environment variable; the command line wins.
Validation errors are ConfigError (one line, exit status 2 at the CLI edge).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import platformdirs

from godot_mcp.errors import ConfigError
from godot_mcp.mcp.spec import TOOLSETS, NameStyle, Toolset
from godot_mcp.runtime.context import Capacity
from godot_mcp.store.db import backend
from godot_mcp.store.values import Limits

MIN_OUTPUT_BYTES = 1024
_LIMIT_OPTIONS = (
    ("max_output_bytes", "GODOT_MCP_MAX_OUTPUT_BYTES", 512 * 1024),
    ("store_budget_bytes", "GODOT_MCP_STORE_BUDGET_BYTES", 256 * 1024 * 1024),
    ("retention_seconds", "GODOT_MCP_RETENTION_SECONDS", 900),
)
_SERVER_OPTIONS = (
    ("max_game_sessions", "GODOT_MCP_MAX_GAME_SESSIONS", 4),
    ("max_exports", "GODOT_MCP_MAX_EXPORTS", 2),
    ("http_session_idle_seconds", "GODOT_MCP_HTTP_SESSION_IDLE_SECONDS", 1800),
    ("max_http_sessions_per_principal", "GODOT_MCP_MAX_HTTP_SESSIONS_PER_PRINCIPAL", 32),
)
TOOL_NAME_STYLES = ("underscore", "dotted")


@dataclass(frozen=True)
class Settings:
    """Resolved options."""

    state_dir: Path
    godot: str | None
    godot_headless: str | None
    limits: Limits
    capacity: Capacity = field(default_factory=Capacity)
    tool_names: NameStyle = "underscore"
    toolsets: frozenset[Toolset] = frozenset(TOOLSETS)  # the features whose tools are on
    allow_runtime_writes: bool = False
    http_session_idle_seconds: int = 1800
    max_http_sessions_per_principal: int = 32
    state_dir_spellings: tuple[str, ...] = ()  # as given, before links were resolved
    database_url: str | None = None  # None: the SQLite file in the state dir
    blob_store_url: str | None = None  # None: the blob directory in the state dir


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """Add the shared options (defaults stay None so env vars can fill them)."""
    parser.add_argument("--state-dir", metavar="DIR")
    parser.add_argument("--godot", metavar="BIN")
    parser.add_argument("--godot-headless", metavar="BIN")
    parser.add_argument("--max-output-bytes", metavar="N")
    parser.add_argument("--store-budget-bytes", metavar="N")
    parser.add_argument("--retention-seconds", metavar="N")
    parser.add_argument("--tool-names", metavar="underscore|dotted")
    parser.add_argument("--toolsets", metavar="LIST")
    parser.add_argument("--max-game-sessions", metavar="N")
    parser.add_argument("--max-exports", metavar="N")
    parser.add_argument("--allow-runtime-writes", action="store_true", default=None)
    parser.add_argument("--http-session-idle-seconds", metavar="N")
    parser.add_argument("--max-http-sessions-per-principal", metavar="N")
    parser.add_argument("--database-url", metavar="URL")
    parser.add_argument("--blob-store", metavar="URL")


_MAX_SECONDS = 10 * 365 * 24 * 3600  # ten years: later than any retention or idle time
_MAX_COUNT = 1 << 53


def _positive_int(name: str, raw: str, high: int = _MAX_COUNT) -> int:
    text = raw.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 20 or not 1 <= int(text) <= high:
        raise ConfigError(f"{name} must be an integer from 1 to {high}, got {raw[:40]!r}")
    return int(text)


def resolve(
    args: argparse.Namespace, env: Mapping[str, str] = os.environ, project: Path | None = None
) -> Settings:
    """Turn parsed arguments plus the environment into Settings, or raise ConfigError."""
    values = _integers(args, env, _LIMIT_OPTIONS)
    if values["max_output_bytes"] < MIN_OUTPUT_BYTES:  # not even a refusal would fit below it
        raise ConfigError(f"--max-output-bytes must be at least {MIN_OUTPUT_BYTES}")
    server = _integers(args, env, _SERVER_OPTIONS)
    style = _explicit(args, "tool_names", "--tool-names", env, "GODOT_MCP_TOOL_NAMES")
    if style is not None and style not in TOOL_NAME_STYLES:
        raise ConfigError(f"--tool-names must be underscore or dotted, got {style!r}")
    given = _explicit(args, "toolsets", "--toolsets", env, "GODOT_MCP_TOOLSETS")
    from_env = getattr(args, "toolsets", None) is None
    toolsets = parse_toolsets(given, "GODOT_MCP_TOOLSETS" if from_env else "--toolsets")
    writes = getattr(args, "allow_runtime_writes", None)
    if writes is None:
        flag = env.get("GODOT_MCP_ALLOW_RUNTIME_WRITES", "")
        if flag not in ("", "0", "1"):
            raise ConfigError(f"GODOT_MCP_ALLOW_RUNTIME_WRITES must be 0 or 1, got {flag!r}")
        writes = flag == "1"
    database = _explicit(args, "database_url", "--database-url", env, "GODOT_MCP_DATABASE_URL")
    if database is not None and backend(database) == "postgresql":  # ConfigError if neither
        _needs_shared("--database-url", "psycopg")
    blob_store = _explicit(args, "blob_store", "--blob-store", env, "GODOT_MCP_BLOB_STORE")
    if blob_store is not None:
        from godot_mcp.store.s3 import parse_blob_store_url

        parse_blob_store_url(blob_store)  # ConfigError for anything but s3://BUCKET/PREFIX?…
        _needs_shared("--blob-store", "boto3")
    state = _explicit(args, "state_dir", "--state-dir", env, "GODOT_MCP_STATE_DIR")
    state_dir = Path(state) if state else Path(platformdirs.user_state_dir("godot-mcp"))
    state_dir = state_dir.expanduser().resolve()
    _check_state_dir(state_dir)
    if project is not None:
        proj = project.resolve()
        if state_dir == proj or proj in state_dir.parents:
            raise ConfigError("the state dir must not be inside the project")
    return Settings(
        state_dir=state_dir,
        godot=_binary(
            _explicit(args, "godot", "--godot", env, "GODOT_BIN"), "--godot", project is not None
        ),
        godot_headless=_binary(
            _explicit(args, "godot_headless", "--godot-headless", env, "GODOT_HEADLESS_BIN"),
            "--godot-headless",
            project is not None,
        ),
        limits=Limits(**values),
        capacity=Capacity(server["max_game_sessions"], server["max_exports"]),
        tool_names="dotted" if style == "dotted" else "underscore",
        toolsets=toolsets,
        allow_runtime_writes=bool(writes),
        http_session_idle_seconds=server["http_session_idle_seconds"],
        max_http_sessions_per_principal=server["max_http_sessions_per_principal"],
        state_dir_spellings=tuple(
            os.path.abspath(os.path.expanduser(s))
            for s in (state, env.get("GODOT_MCP_STATE_DIR"))
            if s and s.strip()
        ),
        database_url=database,
        blob_store_url=blob_store,
    )


def parse_toolsets(raw: str | None, source: str = "--toolsets") -> frozenset[Toolset]:
    """``--toolsets``: ``all`` (the default) or a comma-separated list of toolsets; an
    unknown name (an empty one too) is a ConfigError naming the known ones."""
    if raw is None:
        return frozenset(TOOLSETS)
    chosen: set[Toolset] = set()
    for name in (part.strip() for part in raw.split(",")):
        if name == "all":
            chosen.update(TOOLSETS)
            continue
        if name not in TOOLSETS:
            raise ConfigError(
                f"{source}: unknown toolset {name[:40]!r} (known: all, {', '.join(TOOLSETS)})"
            )
        chosen.add(cast(Toolset, name))
    return frozenset(chosen)


def _needs_shared(option: str, module: str) -> None:
    """A shared store's driver comes with the ``shared`` extra: a ConfigError naming it when
    ``module`` is not installed."""
    if importlib.util.find_spec(module) is None:
        raise ConfigError(
            f"{option} needs the shared extra ({module} is not installed): "
            "pip install 'mcp-server-godot[shared]'"
        )


def _integers(
    args: argparse.Namespace, env: Mapping[str, str], options: tuple[tuple[str, str, int], ...]
) -> dict[str, int]:
    """Positive integer options: the command line, else the environment, else the default."""
    values: dict[str, int] = {}
    for attr, var, default in options:
        raw = getattr(args, attr, None)
        source = "--" + attr.replace("_", "-")
        if raw is None and env.get(var):
            raw, source = env[var], var
        high = _MAX_SECONDS if attr.endswith("seconds") else _MAX_COUNT
        values[attr] = default if raw is None else _positive_int(source, raw, high)
    return values


def _explicit(
    args: argparse.Namespace, attr: str, flag: str, env: Mapping[str, str], var: str
) -> str | None:
    """An option's value from the command line, else its environment variable; never empty."""
    raw = getattr(args, attr, None)
    if raw is not None:
        if not raw.strip():
            raise ConfigError(f"{flag} must not be empty")
        return str(raw)
    value = env.get(var)
    return value if value and value.strip() else None


def _binary(value: str | None, flag: str, check: bool) -> str | None:
    """A Godot binary named explicitly must exist and be executable (checked by ``serve``)."""
    if value is None or not check:
        return value
    if shutil.which(value) is None:
        raise ConfigError(f"{flag}: no executable {value!r}")
    return value


def _check_state_dir(state_dir: Path) -> None:
    """The state dir must be a directory, or creatable under a writable directory."""
    probe = state_dir
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"the state dir is not usable: {probe.name!r} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError("the state dir is not writable")


def check_project(raw: str) -> Path:
    """The project root, which must be a directory holding ``project.godot``."""
    path = Path(raw).expanduser()
    if not path.is_dir():
        raise ConfigError(f"project directory does not exist: {raw!r}")
    if not (path / "project.godot").is_file():
        raise ConfigError(f"not a Godot project (no project.godot): {raw!r}")
    return path.resolve()


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")
