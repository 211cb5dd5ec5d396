"""The artifact store: register, read, list and release artifacts.

Pure library: it knows nothing of MCP. See ``docs/store.md`` for the write path,
the locking and the crash reasoning.
"""

from __future__ import annotations

import base64
import builtins
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from sqlalchemy import ColumnElement, and_, delete, func, or_, select, tuple_
from sqlalchemy.orm import Session

from godot_mcp.errors import (
    Failed,
    GodotMcpError,
    IntegrityError,
    InvalidArgument,
    NotFound,
    OutOfRange,
    StorageError,
    TooLarge,
)
from godot_mcp.store import shared, sqlite
from godot_mcp.store.binding import bound_to, check_owner, unknown
from godot_mcp.store.blobs import (
    BLOCK_SIZE,
    Blobs,
    Blocks,
    StagedBlob,
    StaleMark,
    mkdir_private,
)
from godot_mcp.store.db import (
    database_errors,
    make_engine,
    read_session,
    rowcount,
    sqlite_file,
    upgrade_to_head,
    write_session,
)
from godot_mcp.store.directory import DirectoryObjects
from godot_mcp.store.faults import checkpoint
from godot_mcp.store.guard import Guard, LeaseGuard, LocalGuard
from godot_mcp.store.ids import admit_range, artifact_uri, is_valid_id, new_id, parse_uri
from godot_mcp.store.locks import BlobLock
from godot_mcp.store.models import Artifact, Blob, Project
from godot_mcp.store.objects import ObjectStore, Version
from godot_mcp.store.projects import Projects
from godot_mcp.store.values import (
    ArtifactInfo,
    Caller,
    Clock,
    Limits,
    NewArtifact,
    Page,
    ReadResult,
    StoreLayout,
    from_us,
    to_us,
    utc_now,
)

_DIGEST_CACHE = 64

log = logging.getLogger(__name__)


class _DigestCache:
    """A small thread-safe LRU of block digests by blob sha (at most ``_DIGEST_CACHE``).

    Used from several worker threads at once, so every access holds
    ``_lock``; the lock guards only dictionary operations (never I/O), so it stays cheap.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: OrderedDict[str, Blocks] = OrderedDict()

    def get(self, sha: str) -> Blocks | None:
        """The cached digests (now the most recently used), or None."""
        with self._lock:
            digests = self._data.get(sha)
            if digests is not None:
                self._data.move_to_end(sha)
            return digests

    def put(self, sha: str, digests: Blocks) -> None:
        """Cache ``digests``, evicting the least recently used beyond the limit."""
        with self._lock:
            self._data[sha] = digests
            self._data.move_to_end(sha)
            while len(self._data) > _DIGEST_CACHE:
                self._data.popitem(last=False)

    def pop(self, sha: str) -> None:
        """Forget one blob's digests (no error if they are not cached)."""
        with self._lock:
            self._data.pop(sha, None)

    def clear(self) -> None:
        """Forget everything (``reconcile`` calls this)."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, sha: object) -> bool:
        with self._lock:
            return sha in self._data


def _info(row: Any) -> ArtifactInfo:
    """An ArtifactInfo from an Artifact row (ORM object or plain row)."""
    return ArtifactInfo(
        id=row.id,
        uri=artifact_uri(row.id),
        media_type=row.media_type,
        size=row.size,
        sha256=row.sha256,
        created_at=from_us(row.created_us),
        expires_at=from_us(row.expires_us),
        generation=row.generation,
        frames=row.frames,
        width=row.width,
        height=row.height,
        name=row.name,
        export_id=row.export_id,
    )


def release_dead(s: Session, now_us: int) -> tuple[int, list[str]]:
    """Delete expired and older-generation artifacts, then blob rows nobody references.

    Runs inside a write transaction; returns the count of artifacts released and
    the SHA-256 of blob rows deleted (their files go only after the commit).
    """
    stale_gen = select(Project.id).where(
        and_(Project.id == Artifact.project_id, Project.generation != Artifact.generation)
    )
    dead = s.execute(
        select(Artifact.id, Artifact.sha256).where(
            or_(Artifact.expires_us <= now_us, stale_gen.exists())
        )
    ).all()
    if not dead:
        return 0, []
    s.execute(delete(Artifact).where(Artifact.id.in_([d.id for d in dead])))
    return len(dead), drop_unreferenced_blobs(s, {d.sha256 for d in dead})


def drop_unreferenced_blobs(s: Session, candidates: Iterable[str]) -> list[str]:
    """Delete the blob rows among ``candidates`` that no artifact references."""
    gone: list[str] = []
    for sha in sorted(set(candidates)):
        used = s.scalar(select(func.count()).select_from(Artifact).where(Artifact.sha256 == sha))
        if not used:
            s.execute(delete(Blob).where(Blob.sha256 == sha))
            gone.append(sha)
    return gone


def live_bytes(s: Session) -> int:
    """Sum of the sizes of the artifacts that hold budget (every row not yet released)."""
    return int(s.scalar(select(func.coalesce(func.sum(Artifact.size), 0))) or 0)


class ArtifactStore:
    """Metadata in a database (SQLite in the state dir by default, or PostgreSQL), bytes
    content-addressed in an object store (the state dir's blob directory by default, or an
    S3-compatible bucket).

    ``database_url``: ``None`` for the state dir's SQLite file, else an SQLAlchemy URL
    (``postgresql+psycopg://…``). A database that cannot be reached raises
    DatabaseUnavailable. ``blobs``: the object store (``store/objects.py``); else
    ``blob_store_url`` names one (``s3://BUCKET/PREFIX?endpoint_url=…&region=…``), else the
    state dir's blob directory. ``claim``: a shared database is checked to belong to this
    blob store (and claimed when new); off only for what never touches bytes (tokens,
    status).
    """

    def __init__(
        self,
        state_dir: Path,
        limits: Limits | None = None,
        clock: Clock = utc_now,
        block_size: int = BLOCK_SIZE,
        database_url: str | None = None,
        claim: bool = True,
        blob_store_url: str | None = None,
        blobs: ObjectStore | None = None,
    ) -> None:
        self.layout = StoreLayout(Path(state_dir))
        self.limits = limits or Limits()
        self.clock = clock
        for d in (self.layout.state_dir, self.layout.blob_dir):
            mkdir_private(d)
        objects = blobs if blobs is not None else self._open_objects(blob_store_url)
        self.blobs = Blobs(objects, block_size)
        self.lock = BlobLock(self.layout.lock_path)
        self.database_url = database_url or sqlite.url_for(self.layout.db_path)
        try:
            self.engine = make_engine(self.database_url)
            upgrade_to_head(self.engine)
        except BaseException:
            self.blobs.close()
            raise
        db_file = sqlite_file(self.database_url)
        if db_file is not None:
            os.chmod(db_file, 0o600)  # it holds the token hashes
        # A shared database names one blob store's bytes only; a bucket belongs to one database.
        own_file = db_file is not None and db_file.resolve() == self.layout.db_path.resolve()
        # The one choice between one host's lock and the database's leases (store/guard.py).
        self.guard: Guard = (
            LeaseGuard(self.engine, self.blobs, self.now_us)
            if objects.shared
            else LocalGuard(self.engine, self.blobs, self.lock)
        )
        if claim and (not own_file or objects.shared):
            try:
                shared.claim_store(self.engine, objects, self.now_us())
            except BaseException:
                self.close()
                raise
        self.shared_database = db_file is None  # other hosts may use it too
        # On a database other hosts share, a project is (host, root): the same path on two
        # hosts is two projects, each with its own generation.
        self.host_id = shared.host_id(self.layout.state_dir)
        self.projects = Projects(self.engine, None if db_file is not None else self.host_id)
        self._digests = _DigestCache()
        self._pending_gc: set[str] = set()
        self._verified: dict[str, Version] = {}
        self._last_used = 0
        self._gc_mutex = threading.Lock()

    def forget_verified(self) -> None:
        """Forget every cached verification and digest list (after reconcile)."""
        self._digests.clear()
        with self._gc_mutex:
            self._verified.clear()

    def _open_objects(self, url: str | None) -> ObjectStore:
        if url is None:
            return DirectoryObjects(self.layout.blob_dir, self.layout.quarantine_dir)
        from godot_mcp.store.s3 import S3Objects, parse_blob_store_url

        return S3Objects(parse_blob_store_url(url), self.layout.blob_dir / ".tmp")

    def close(self) -> None:
        """Release database and blob store connections."""
        self.engine.dispose()
        self.blobs.close()

    def now_us(self) -> int:
        """The store's clock, in microseconds since the epoch."""
        return to_us(self.clock())

    # -- registration -------------------------------------------------------

    def register(
        self, caller: Caller, generation: int, item: NewArtifact, export_id: str | None = None
    ) -> ArtifactInfo:
        """Register one artifact bound to ``caller`` and ``generation``."""
        return self.register_group(caller, generation, [item], export_id)[0]

    def register_group(
        self,
        caller: Caller,
        generation: int,
        items: Sequence[NewArtifact],
        export_id: str | None = None,
    ) -> list[ArtifactInfo]:
        """Register artifacts that commit together or not at all.

        Raises TooLarge when they do not fit the budget after releasing dead
        artifacts, IntegrityError when bytes differ from what was promised,
        StorageError when the disk refuses. Nothing is kept on failure.
        """
        budget = self.limits.store_budget_bytes
        staged: list[StagedBlob] = []
        published: list[str] = []
        versions: list[Version] = []
        freed: list[str] = []
        holder = self.guard.holder()
        try:
            with self.lock.shared():
                for item in items:
                    st = self._stage(item)
                    staged.append(st)
                    if sum(x.size for x in staged) > budget:
                        raise TooLarge(
                            f"{sum(x.size for x in staged)} bytes do not fit the store budget "
                            f"of {budget} bytes"
                        )
                checkpoint("register.staged")
                total = sum(st.size for st in staged)
                if self._last_used + total > self.limits.store_budget_bytes:
                    self._precheck_budget(total)
                self.guard.keep(holder, [st.sha256 for st in staged], self.now_us())
                for st in staged:
                    published.append(st.sha256)  # an upload that fails midway may leave bytes
                    versions.append(self.blobs.publish(st))
                checkpoint("register.published")
                infos, freed = self._commit(caller, generation, items, staged, export_id, holder)
                checkpoint("register.committed")
        except BaseException:
            for st in staged:
                self.blobs.discard(st)
            self.guard.give_back(holder)
            self._collect_quietly(published + freed)
            raise
        for st, version in zip(staged, versions, strict=True):  # hashed while written
            self._remember_intact(st.sha256, version)
        self._collect_quietly(freed)  # committed: a failed clean-up is retried, not reported
        return infos

    def _precheck_budget(self, total: int) -> None:
        """Refuse before publishing when even releasing every dead artifact cannot make room.

        The authoritative check is the one in the commit; this one only spares
        the disk a publish that is bound to be rolled back.
        """
        now = self.now_us()
        with read_session(self.engine) as s:
            alive = int(
                s.scalar(
                    select(func.coalesce(func.sum(Artifact.size), 0))
                    .join(Project, Project.id == Artifact.project_id)
                    .where(Artifact.expires_us > now, Artifact.generation == Project.generation)
                )
                or 0
            )
        budget = self.limits.store_budget_bytes
        if alive + total > budget:
            raise TooLarge(
                f"{total} bytes do not fit the store budget ({alive} of {budget} bytes in use)"
            )

    def _stage(self, item: NewArtifact) -> StagedBlob:
        source: bytes | BinaryIO | Path = item.source
        if isinstance(source, Path):
            with open(source, "rb", buffering=0) as f:
                st = self.blobs.stage(f)
        else:
            st = self.blobs.stage(source)
        if (item.expected_size is not None and st.size != item.expected_size) or (
            item.expected_sha256 is not None and st.sha256 != item.expected_sha256.lower()
        ):
            self.blobs.discard(st)
            raise IntegrityError("the bytes do not match their expected length and SHA-256")
        return st

    def _commit(
        self,
        caller: Caller,
        generation: int,
        items: Sequence[NewArtifact],
        staged: Sequence[StagedBlob],
        export_id: str | None,
        holder: str | None = None,
    ) -> tuple[list[ArtifactInfo], list[str]]:
        budget = self.limits.store_budget_bytes
        total = sum(st.size for st in staged)
        with write_session(self.engine) as s:
            now = self.now_us()
            _, freed = release_dead(s, now)
            current = s.scalar(select(Project.generation).where(Project.id == caller.project_id))
            if current != generation:
                raise Failed("the project changed (new generation) before the bytes were stored")
            used = live_bytes(s)
            self._last_used = used
            if used + total > budget:
                raise TooLarge(
                    f"{total} bytes do not fit the store budget ({used} of {budget} bytes in use)"
                )
            self._last_used = used + total
            self.guard.committing(s, holder, staged, now)
            rows: list[Artifact] = []
            for item, st in zip(items, staged, strict=True):
                blob = s.get(Blob, st.sha256)
                if blob is None:
                    s.add(
                        Blob(
                            sha256=st.sha256,
                            size=st.size,
                            block_size=self.blobs.block_size,
                            block_digests=st.block_digests,
                            created_us=now,
                        )
                    )
                    s.flush()
                else:  # its bytes were just written again: a verdict on the old ones is void
                    blob.created_us = max(now, blob.created_us + 1)
                rows.append(
                    Artifact(
                        id=new_id(),
                        project_id=caller.project_id,
                        generation=generation,
                        principal=caller.principal,
                        session_id=caller.session_id,
                        launch_id=caller.launch_id,
                        media_type=item.media_type,
                        size=st.size,
                        sha256=st.sha256,
                        frames=item.frames,
                        width=item.width,
                        height=item.height,
                        name=item.name,
                        export_id=export_id,
                        created_us=now,
                        expires_us=now + self.limits.retention_seconds * 1_000_000,
                    )
                )
            s.add_all(rows)
            s.flush()
            checkpoint("register.before_commit")
            infos = [_info(r) for r in rows]
        return infos, freed

    def _collect_quietly(self, candidates: Iterable[str]) -> None:
        """``_collect``, keeping what it could not delete for the next one or reconcile."""
        candidates = list(candidates)
        try:
            self._collect(candidates)
        except GodotMcpError:
            with self._gc_mutex:
                self._pending_gc.update(candidates)

    def _collect(self, candidates: Iterable[str]) -> None:
        """Delete blobs that have no row, if no registration is about to commit them
        (the guard says); what it cannot delete now is left for the next collection."""
        with self._gc_mutex:
            self._pending_gc.update(candidates)
            todo = sorted(self._pending_gc)
        if not todo:
            return
        with self._gc_mutex:
            self._pending_gc.difference_update(todo)
        done = False
        try:
            done = self.guard.collect(todo)
        finally:
            if not done:  # left for the next collection, or reconcile
                with self._gc_mutex:
                    self._pending_gc.update(todo)

    @property
    def threads(self) -> int:
        """How many threads may use the store at once: its database's connections (the
        pool and its overflow), at least 4."""
        pool = self.engine.pool
        size = getattr(pool, "size", lambda: 0)() + max(0, getattr(pool, "_max_overflow", 0))
        return max(4, size)

    # -- reads ---------------------------------------------------------------

    def resolve(self, caller: Caller, artifact_id: str) -> Any:
        """The artifact row if it resolves and is bound to ``caller``; typed refusal otherwise."""
        row = self._row(artifact_id)
        if self._intact(row.sha256, row.size, row.blob_born) is None:
            raise unknown("artifact")
        self._check_owner(caller, row)
        return row

    def _row(self, artifact_id: str) -> Any:
        """The artifact's row, unless it is unknown, expired or of an older generation."""
        now = self.now_us()
        with database_errors(), self.engine.connect() as conn:  # reads are the hot path
            row = conn.execute(
                select(
                    Artifact.__table__,
                    Project.generation.label("current"),
                    Blob.created_us.label("blob_born"),
                )
                .join(Project, Project.id == Artifact.project_id)
                .join(Blob, Blob.sha256 == Artifact.sha256)
                .where(Artifact.id == artifact_id)
            ).first()
        if row is None or now >= row.expires_us or row.generation != row.current:
            raise unknown("artifact")
        return row

    def _check_owner(self, caller: Caller, row: Any) -> None:
        check_owner(caller, bound_to(row), "artifact")

    def _intact(self, sha: str, size: int, born: int | None = None) -> Version | None:
        """The version of the blob when its bytes are present and match their block digests
        (checked before any binding check), else None.

        A blob is verified in full once per process and version (a file's identity, an
        object's ETag); after that a lookup suffices, and every read still verifies the
        blocks it serves. A mismatch withdraws the blob; bytes written again while they were
        verified are looked at once more.
        """
        for _ in range(2):
            version = self.blobs.head(sha, size)
            if version is None:
                return None
            if self._verified.get(sha) == version:
                return version
            try:
                intact = self.blobs.verify(sha, self._block_digests(sha), version)
            except StaleMark:
                continue
            if not intact:
                self.withdraw(sha, born)
                return None
            self._remember_intact(sha, version)
            return version
        return None

    def _remember_intact(self, sha: str, version: Version) -> None:
        with self._gc_mutex:
            self._verified[sha] = version
            while len(self._verified) > 4096:
                self._verified.pop(next(iter(self._verified)))

    def read(
        self,
        caller: Caller,
        uri: str,
        *,
        _again: bool = False,
    ) -> ReadResult:
        """Read an artifact URI (with its optional range) for ``caller`` (blocking: callers
        on an event loop run it on a worker thread).

        Checks, in order: the id resolves (NotFound), the binding (NotYours), the range
        (OutOfRange). What a caller hears of each is the edge's disclosure policy.
        """
        parsed = parse_uri(uri)
        row = self._row(parsed.artifact_id)
        ahead = self._read_ahead(row, parsed.offset, parsed.length)
        version = None if ahead is not None else self._intact(row.sha256, row.size, row.blob_born)
        if ahead is None and version is None:
            raise unknown("artifact")
        self._check_owner(caller, row)
        offset, length = admit_range(
            row.size, parsed.offset, parsed.length, self.limits.max_output_bytes
        )
        try:
            if ahead is not None:
                data = ahead
            else:
                assert version is not None
                digests = self._block_digests(row.sha256)
                data = self.blobs.read(row.sha256, offset, length, digests, version)
        except StaleMark:  # uploaded again since it was verified: verify it again
            with self._gc_mutex:
                self._verified.pop(row.sha256, None)
            if _again:
                raise NotFound("artifact not found") from None
            return self.read(caller, uri, _again=True)
        except IntegrityError:
            self.withdraw(row.sha256, row.blob_born)
            raise NotFound("artifact not found") from None
        return ReadResult(uri, row.media_type, offset, length, row.size, row.sha256, data)

    def _read_ahead(self, row: Any, offset: int | None, length: int | None) -> bytes | None:
        """A blob verified in full before: its range in one read, before the binding check,
        in place of the lookup (the read's own version must be the verified one, and its
        blocks their digests). None when the slow way must decide (never verified, another
        version, gone, or a range not admitted); a changed block withdraws the blob."""
        with self._gc_mutex:
            mark = self._verified.get(row.sha256)
        if mark is None:
            return None
        try:
            first, n = admit_range(row.size, offset, length, self.limits.max_output_bytes)
        except OutOfRange:
            return None
        try:
            return self.blobs.read(row.sha256, first, n, self._block_digests(row.sha256), mark)
        except (StaleMark, NotFound, StorageError):  # changed, gone, refused: the slow way says
            with self._gc_mutex:
                self._verified.pop(row.sha256, None)
            return None
        except IntegrityError:
            self.withdraw(row.sha256, row.blob_born)
            raise unknown("artifact") from None

    def _block_digests(self, sha: str) -> Blocks:
        cached = self._digests.get(sha)
        if cached is not None:
            return cached
        with read_session(self.engine) as s:  # outside the cache's lock
            row = s.execute(
                select(Blob.block_digests, Blob.block_size).where(Blob.sha256 == sha)
            ).first()
        if row is None:
            raise NotFound("artifact not found")
        blocks = Blocks(row.block_digests, row.block_size)
        self._digests.put(sha, blocks)
        return blocks

    def withdraw(self, sha: str, born: int | None = None) -> None:
        """Withdraw a blob whose bytes changed: artifacts stop resolving; bytes quarantined.

        ``born``: the blob row's ``created_us`` when its bytes were found bad; a row made
        since (the blob was released and registered again meanwhile) is not withdrawn.
        """
        with write_session(self.engine) as s:
            if born is not None and s.scalar(
                select(Blob.created_us).where(Blob.sha256 == sha)
            ) not in (born, None):
                return
            s.execute(delete(Artifact).where(Artifact.sha256 == sha))
            s.execute(delete(Blob).where(Blob.sha256 == sha))
        self._digests.pop(sha)
        with self._gc_mutex:
            self._verified.pop(sha, None)
        self.guard.withdraw(sha)

    # -- listing and release ------------------------------------------------

    def list(self, caller: Caller, cursor: str | None = None, limit: int = 50) -> Page:
        """The artifacts ``caller`` could read now, oldest first, ``limit`` per page."""
        after = _decode_cursor(cursor) if cursor else None
        now = self.now_us()
        with read_session(self.engine) as s:
            q = (
                select(Artifact)
                .join(Project, Project.id == Artifact.project_id)
                .where(
                    Artifact.principal == caller.principal,
                    Artifact.session_id.is_(None)
                    if caller.session_id is None
                    else Artifact.session_id == caller.session_id,
                    Artifact.launch_id.is_(None)
                    if caller.launch_id is None
                    else Artifact.launch_id == caller.launch_id,
                    Artifact.project_id == caller.project_id,
                    Artifact.generation == Project.generation,
                    Artifact.expires_us > now,
                )
                .order_by(Artifact.created_us, Artifact.id)
                .limit(limit + 1)
            )
            if after is not None:
                q = q.where(tuple_(Artifact.created_us, Artifact.id) > tuple_(*after))
            rows = list(s.scalars(q))
        more = len(rows) > limit
        rows = rows[:limit]
        items = [_info(r) for r in rows if self.blobs.exists(r.sha256, r.size)]
        nxt = _encode_cursor(rows[-1].created_us, rows[-1].id) if more and rows else None
        return Page(items, nxt)

    def info(self, caller: Caller, artifact_id: str) -> ArtifactInfo:
        """Describe one artifact the caller could read (same checks as a read)."""
        return _info(self.resolve(caller, artifact_id))

    def export_artifacts(self, export_id: str) -> builtins.list[ArtifactInfo]:
        """The artifacts registered for one export, in registration order."""
        with read_session(self.engine) as s:
            rows = s.scalars(
                select(Artifact).where(Artifact.export_id == export_id).order_by(Artifact.name)
            ).all()
        return [_info(r) for r in rows]

    def release_where(self, *conditions: ColumnElement[bool]) -> int:
        """Release every artifact matching ``conditions`` at once; returns how many."""
        with write_session(self.engine) as s:
            shas = set(s.scalars(select(Artifact.sha256).where(*conditions)))
            n = rowcount(s.execute(delete(Artifact).where(*conditions)))
            gone = drop_unreferenced_blobs(s, shas)
        self._collect_quietly(gone)  # committed: a failed clean-up is retried, not reported
        return int(n or 0)

    def release_expired(self) -> int:
        """Release expired and older-generation artifacts now; returns how many."""
        with write_session(self.engine) as s:
            n, gone = release_dead(s, self.now_us())
        self._collect_quietly(gone)
        return n

    def bytes_in_use(self) -> int:
        """Budget held now by artifacts not yet released."""
        with read_session(self.engine) as s:
            return live_bytes(s)


def _encode_cursor(created_us: int, artifact_id: str) -> str:
    raw = json.dumps([created_us, artifact_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, aid = json.loads(raw)
        if (
            not isinstance(created, int)
            or isinstance(created, bool)
            or not 0 <= created < 2**63
            or not isinstance(aid, str)
            or not is_valid_id(aid)
        ):
            raise ValueError
        return created, aid
    except (ValueError, TypeError, UnicodeDecodeError):
        raise InvalidArgument("invalid cursor") from None


def release_launch(store: ArtifactStore, launch_id: str) -> int:
    """Release every artifact bound to one server launch (it can never read them again)."""
    return store.release_where(Artifact.launch_id == launch_id)


def release_session_id(store: ArtifactStore, launch_id: str, session_id: str) -> int:
    """Release the artifacts of one MCP session of one launch (the session ended)."""
    return store.release_where(Artifact.launch_id == launch_id, Artifact.session_id == session_id)
