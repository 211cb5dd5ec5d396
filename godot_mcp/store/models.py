"""Typed SQLAlchemy mappings of the store's metadata.

Times are integer microseconds since the Unix epoch (UTC): exact, and the same
on SQLite and PostgreSQL. The schema itself is created only by the Alembic
migrations in ``schema/``; a test checks that both agree.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Project(Base):
    """One Godot project root and its generation counter."""

    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    root: Mapped[str] = mapped_column(Text, unique=True)
    generation: Mapped[int] = mapped_column(Integer, default=1)
    identity_sha256: Mapped[str | None] = mapped_column(String(64))
    stat_signature: Mapped[str | None] = mapped_column(Text)


class Blob(Base):
    """One distinct content in the blob directory, with its block digests."""

    __tablename__ = "blobs"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    block_size: Mapped[int] = mapped_column(Integer)
    block_digests: Mapped[bytes] = mapped_column(LargeBinary)
    created_us: Mapped[int] = mapped_column(BigInteger)


class Artifact(Base):
    """One readable artifact: a binding, a retention window, a blob."""

    __tablename__ = "artifacts"
    __table_args__ = (
        Index("ix_artifacts_expires", "expires_us"),
        Index("ix_artifacts_blob", "sha256"),
        Index("ix_artifacts_binding", "principal", "session_id", "project_id", "created_us"),
        Index("ix_artifacts_export", "export_id"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    generation: Mapped[int] = mapped_column(Integer)
    principal: Mapped[str] = mapped_column(Text)
    session_id: Mapped[str | None] = mapped_column(Text)
    launch_id: Mapped[str | None] = mapped_column(String(32))
    media_type: Mapped[str] = mapped_column(Text)
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(ForeignKey("blobs.sha256"))
    frames: Mapped[int | None] = mapped_column(Integer)
    width: Mapped[int | None] = mapped_column(Integer)
    height: Mapped[int | None] = mapped_column(Integer)
    name: Mapped[str | None] = mapped_column(Text)
    export_id: Mapped[str | None] = mapped_column(String(32))
    created_us: Mapped[int] = mapped_column(BigInteger)
    expires_us: Mapped[int] = mapped_column(BigInteger)


class StoreLock(Base):
    """A single row that budget-checking writes lock (a row lock on PostgreSQL)."""

    __tablename__ = "store_lock"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    writes: Mapped[int] = mapped_column(BigInteger, default=0)


class BlobStoreRow(Base):
    """The one blob store whose bytes this database's rows name (a shared database)."""

    __tablename__ = "blob_store"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    location: Mapped[str] = mapped_column(Text)
    created_us: Mapped[int] = mapped_column(BigInteger)


class BlobUpload(Base):
    """A lease on one blob of a shared blob store while one registration uploads it: no
    host deletes an object with a live lease (``store/leases.py``)."""

    __tablename__ = "blob_uploads"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(32), primary_key=True)
    expires_us: Mapped[int] = mapped_column(BigInteger)


class Host(Base):
    """A host serving a shared store, and when it last said it lives (``store/hosts.py``)."""

    __tablename__ = "hosts"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    beat_us: Mapped[int] = mapped_column(BigInteger)


class Token(Base):
    """An HTTP bearer credential: only its SHA-256 is kept."""

    __tablename__ = "tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    principal: Mapped[str] = mapped_column(Text, index=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    created_us: Mapped[int] = mapped_column(BigInteger)


class Export(Base):
    """One managed export: its binding, its state, and which process runs it."""

    __tablename__ = "exports"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"))
    generation: Mapped[int] = mapped_column(Integer)
    principal: Mapped[str] = mapped_column(Text)
    session_id: Mapped[str | None] = mapped_column(Text)
    launch_id: Mapped[str | None] = mapped_column(String(32))
    preset: Mapped[str] = mapped_column(Text)  # "" for an export by platform
    kind: Mapped[str] = mapped_column(String(16))
    platform: Mapped[str | None] = mapped_column(String(16))  # None: by preset
    state: Mapped[str] = mapped_column(String(16), index=True)
    error: Mapped[str | None] = mapped_column(Text)
    log_tail: Mapped[str | None] = mapped_column(Text)
    owner_pid: Mapped[int] = mapped_column(Integer)
    owner_start: Mapped[str] = mapped_column(Text)
    owner_host: Mapped[str | None] = mapped_column(String(32))  # None: made before hosts
    created_us: Mapped[int] = mapped_column(BigInteger)
    ended_us: Mapped[int | None] = mapped_column(BigInteger)
    evidence_bytes: Mapped[int | None] = mapped_column(BigInteger)
    evidence_files: Mapped[int | None] = mapped_column(Integer)
