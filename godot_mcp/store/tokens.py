"""HTTP bearer tokens: printed once at creation, only a SHA-256 kept.

A presented token is hashed first and the hash compared in constant time, so
neither the lookup nor the comparison leaks the token through timing. Every
request re-checks the database: a revocation takes effect on the next request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import Engine, create_engine, delete, func, select
from sqlalchemy.exc import SQLAlchemyError

from godot_mcp.errors import InvalidArgument
from godot_mcp.store.db import read_session, rowcount, write_session
from godot_mcp.store.models import Token
from godot_mcp.store.values import from_us, to_us, utc_now

TOKEN_PREFIX = "gmcp_"
_PRINCIPAL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


@dataclass(frozen=True)
class TokenInfo:
    """A token's public facts (never the token)."""

    id: str
    principal: str
    created_at: datetime


@dataclass(frozen=True)
class Verified:
    """Who a valid token speaks for, and which token it was."""

    principal: str
    token_id: str


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def add_token(engine: Engine, principal: str) -> str:
    """Create a token for ``principal`` and return it (the only time it is seen)."""
    if _PRINCIPAL_RE.fullmatch(principal) is None or principal == "local":
        raise InvalidArgument(
            "principal must be 1-64 of letters, digits, '.', '_', '@', '-' (and not 'local')"
        )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with write_session(engine) as s:
        s.add(
            Token(
                id=secrets.token_hex(8),
                principal=principal,
                token_sha256=_digest(token),
                created_us=to_us(utc_now()),
            )
        )
    return token


def list_tokens(engine: Engine) -> list[TokenInfo]:
    """Every token's id, principal and creation time."""
    with read_session(engine) as s:
        rows = s.scalars(select(Token).order_by(Token.principal, Token.created_us)).all()
    return [TokenInfo(r.id, r.principal, from_us(r.created_us)) for r in rows]


def count_tokens_readonly(db: Path) -> int:
    """How many tokens the SQLite file ``db`` holds, read without writing anything to it
    (a missing or unreadable file, or one made before tokens existed, holds none)."""
    engine = create_engine(
        "sqlite+pysqlite:///file:" + str(db) + "?mode=ro&uri=true",
        connect_args={"timeout": 5},
    )
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(Token)).scalar_one())
    except SQLAlchemyError:
        return 0
    finally:
        engine.dispose()


def revoke_principal(engine: Engine, principal: str) -> int:
    """Revoke every token of ``principal``; returns how many."""
    with write_session(engine) as s:
        return int(rowcount(s.execute(delete(Token).where(Token.principal == principal))) or 0)


def count_tokens(engine: Engine) -> int:
    """How many tokens exist."""
    return len(list_tokens(engine))


def verify_token(engine: Engine, token: str) -> Verified | None:
    """The principal of a valid token, or None."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    digest = _digest(token)
    with read_session(engine) as s:
        row = s.scalars(select(Token).where(Token.token_sha256 == digest)).one_or_none()
    if row is None or not hmac.compare_digest(row.token_sha256, digest):
        return None
    return Verified(row.principal, row.id)
