"""Blobs in an S3-compatible bucket that several hosts share.

``--blob-store s3://BUCKET/PREFIX?endpoint_url=…&region=…``; credentials come from boto3's
usual chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``~/.aws``, an instance role).
Objects are ``PREFIX/blobs/<sha256>`` (the raw bytes), ``PREFIX/quarantine/<sha256>.<rand>``
(withdrawn bytes) and ``PREFIX/.store-id`` (the database this bucket belongs to).

Bytes are staged in a local temp file first (hashed while written, like the directory), then
uploaded with their SHA-256 as the S3 checksum, so the server refuses bytes that are not those;
the object's length and checksum are read back before the caller commits a row. Reads are
ranged GETs of whole blocks, each block checked against its digest in the database.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import parse_qs, urlsplit

from godot_mcp.errors import (
    BlobStoreUnavailable,
    ConfigError,
    IntegrityError,
    NotFound,
    StorageError,
)
from godot_mcp.store.blobs import (
    BLOCK_SIZE,
    StagedBlob,
    StaleMark,
    block_digest,
    checked_range,
    discard_staged,
    is_sha256,
    mkdir_private,
    stage_file,
    stage_memory,
)
from godot_mcp.store.faults import checkpoint

ORPHAN_GRACE_S = 15 * 60  # an unreferenced object this young may be another host's upload
MAX_OBJECT = 5 * 1024**3  # one PUT; larger artifacts would need multipart uploads
MEMORY_STAGE = 64 * 1024**2  # bytes already in memory up to this are uploaded from there
_BUCKET_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789.-")
_PREFIX_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/")
_FORM = "--blob-store must be s3://BUCKET/PREFIX?endpoint_url=…&region=…"
_REGION_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")
_AREAS = ("blobs", "quarantine")  # where a store lists and removes keys of its own
_UNREACHABLE_CODES = {"InternalError", "ServiceUnavailable", "SlowDown", "503", "500"}
# One boto3 session per process: it keeps the service model it parsed (200 ms a client
# otherwise). Making clients from it is not thread-safe, hence the lock; clients are.
_SESSION: Any = None
_SESSION_LOCK = threading.Lock()
_DIGEST_CODES = {"BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch", "InvalidChecksum"}


@dataclass(frozen=True)
class S3Location:
    """Where a bucket store is: bucket, key prefix (no leading or trailing slash), endpoint."""

    bucket: str
    prefix: str
    endpoint_url: str | None
    region: str | None

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)


def parse_blob_store_url(url: str) -> S3Location:
    """An ``s3://BUCKET/PREFIX?endpoint_url=…&region=…`` URL; anything else is a ConfigError."""
    try:
        parts = urlsplit(url)
        query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise ConfigError(
            "--blob-store must be s3://BUCKET/PREFIX?endpoint_url=…&region=…"
        ) from None
    if parts.scheme != "s3" or not parts.netloc or parts.fragment:
        raise ConfigError("--blob-store must be s3://BUCKET/PREFIX?endpoint_url=…&region=…")
    bucket = parts.netloc
    if (
        not 3 <= len(bucket) <= 63
        or not set(bucket) <= _BUCKET_CHARS
        or not (bucket[0].isalnum() and bucket[-1].isalnum())
        or ".." in bucket
        or all(part.isdigit() for part in bucket.split("."))
    ):
        raise ConfigError("the bucket name must be 3-63 lowercase letters, digits, '.' or '-'")
    prefix = parts.path.strip("/")
    segments = prefix.split("/") if prefix else []
    if not set(prefix) <= _PREFIX_CHARS or any(p in ("", ".", "..") for p in segments):
        raise ConfigError("the key prefix may hold letters, digits, '.', '_', '-' and '/'")
    if ".store-id" in segments:  # a marker's name is never a folder of ours
        raise ConfigError("the key prefix must not name .store-id")
    unknown = sorted(set(query) - {"endpoint_url", "region"})
    if unknown:
        raise ConfigError(f"unknown blob store option {unknown[0][:40]!r} (endpoint_url, region)")
    if any(len(v) != 1 or not v[0] for v in query.values()):
        raise ConfigError("each blob store option is given once, with a value")
    endpoint = query.get("endpoint_url", [None])[0]
    if endpoint is not None:
        try:
            at = urlsplit(endpoint)
            _ = at.port
        except ValueError:
            raise ConfigError("endpoint_url must be an http:// or https:// URL") from None
        if at.scheme not in ("http", "https") or not at.hostname or at.username is not None:
            raise ConfigError("endpoint_url must be an http:// or https:// URL (no credentials)")
    region = query.get("region", [None])[0]
    if region is not None and not set(region) <= _REGION_CHARS:
        raise ConfigError("the region may hold lowercase letters, digits and '-'")
    return S3Location(bucket, prefix, endpoint, region)


@contextmanager
def s3_errors() -> Iterator[None]:
    """Turn botocore's failures into the error tree: an endpoint that cannot be reached (or
    answers 5xx) is BlobStoreUnavailable; a refusal is StorageError; a bad digest is
    IntegrityError. Messages name the S3 error code, never a key or a credential."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionError,
        NoCredentialsError,
        ReadTimeoutError,
    )

    try:
        yield
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "error"))
        if code in _UNREACHABLE_CODES:
            raise BlobStoreUnavailable(f"the blob store cannot serve now ({code})") from None
        if code in _DIGEST_CODES:
            raise IntegrityError("the blob store received other bytes than were sent") from None
        raise StorageError(f"the blob store refused the operation ({code[:60]})") from None
    except (ConnectionError, ReadTimeoutError):
        raise BlobStoreUnavailable("the blob store cannot be reached") from None
    except NoCredentialsError:
        raise ConfigError(
            "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a profile)"
        ) from None
    except BotoCoreError as exc:
        raise StorageError(f"the blob store failed ({type(exc).__name__})") from None


def _missing(exc: Exception) -> bool:
    from botocore.exceptions import ClientError

    if not isinstance(exc, ClientError):
        return False
    error = exc.response.get("Error", {})
    return str(error.get("Code")) in ("404", "NoSuchKey", "NotFound")


def _b64(sha256_hex: str) -> str:
    return base64.b64encode(bytes.fromhex(sha256_hex)).decode()


class S3BlobStore:
    """Blob objects in a bucket; staging in a local temp dir of this host."""

    shared = True

    def __init__(
        self,
        location: S3Location,
        tmp_dir: Path,
        block_size: int = BLOCK_SIZE,
        orphan_grace_s: float = ORPHAN_GRACE_S,
    ) -> None:
        import boto3
        from botocore.config import Config

        self.where = location
        self.tmp_dir = tmp_dir
        self.block_size = block_size
        self.orphan_grace_us = int(orphan_grace_s * 1_000_000)
        self._marks: dict[str, tuple[int, int, int, int] | None] = {}  # as last seen
        self._marks_lock = threading.Lock()
        mkdir_private(tmp_dir)
        config = Config(
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
            max_pool_connections=32,
            s3={"addressing_style": "path"},
            request_checksum_calculation="when_required",  # we send SHA-256 ourselves
            response_checksum_validation="when_required",  # and check every block
        )
        with s3_errors(), _SESSION_LOCK:
            global _SESSION
            if _SESSION is None:
                _SESSION = boto3.session.Session()
            self.client: Any = _SESSION.client(
                "s3",
                endpoint_url=location.endpoint_url,
                region_name=location.region,
                config=config,
            )
            try:
                self.client.head_bucket(Bucket=location.bucket)
            except Exception as exc:
                if _missing(exc):
                    raise ConfigError("the blob store's bucket does not exist") from None
                raise

    def _key(self, sha256: str) -> str:
        if not is_sha256(sha256):
            raise NotFound("artifact not found")
        return self.where.key("blobs", sha256)

    # -- writing -------------------------------------------------------------

    def stage(self, source: bytes | BinaryIO) -> StagedBlob:
        """Hash ``source``: bytes in memory stay there (up to ``MEMORY_STAGE``: the upload's
        checksum guards them as a temp file would); a stream goes to a local temp file."""
        if isinstance(source, bytes | bytearray | memoryview) and len(source) <= MEMORY_STAGE:
            return stage_memory(source, self.block_size)
        return stage_file(self.tmp_dir, source, self.block_size)

    def publish(self, staged: StagedBlob) -> None:
        """Upload the staged bytes with their SHA-256 as checksum: the server refuses other
        bytes (BadDigest) and echoes the checksum it computed. A server that echoes none is
        asked again (HEAD with checksums), and the object re-hashed if it keeps none. The
        temp file goes either way."""
        try:
            if staged.size > MAX_OBJECT:
                raise StorageError("an artifact over 5 GiB does not fit one S3 upload")
            key = self._key(staged.sha256)
            self._forget(staged.sha256)
            with s3_errors(), _body(staged) as body:
                put = self.client.put_object(
                    Bucket=self.where.bucket,
                    Key=key,
                    Body=body,
                    ContentLength=staged.size,
                    ChecksumSHA256=_b64(staged.sha256),
                )
            checkpoint("publish.renamed")
            echoed = put.get("ChecksumSHA256")
            if echoed is None:
                with s3_errors():
                    head = self.client.head_object(
                        Bucket=self.where.bucket, Key=key, ChecksumMode="ENABLED"
                    )
                if head.get("ContentLength") != staged.size:
                    raise IntegrityError("the blob store holds other bytes than were sent")
                echoed = head.get("ChecksumSHA256")
                if echoed is None and self.hash_blob(staged.sha256) != (
                    staged.sha256,
                    staged.size,
                ):
                    raise IntegrityError("the blob store holds other bytes than were sent")
            if echoed is not None and echoed != _b64(staged.sha256):
                raise IntegrityError("the blob store holds other bytes than were sent")
            with self._marks_lock:
                self._marks[staged.sha256] = _mark(put, staged.size)
        finally:
            discard_staged(staged)

    def discard(self, staged: StagedBlob) -> None:
        """Drop a staged temp file that will not be published."""
        discard_staged(staged)

    # -- reading -------------------------------------------------------------

    def _head(self, sha256: str) -> dict[str, Any] | None:
        try:
            with s3_errors():
                try:
                    return dict(
                        self.client.head_object(Bucket=self.where.bucket, Key=self._key(sha256))
                    )
                except Exception as exc:
                    if _missing(exc):
                        return None
                    raise
        except NotFound:
            return None

    def exists(self, sha256: str, size: int) -> bool:
        """True when the object is there with the expected size."""
        return self.fingerprint(sha256, size) is not None

    def fingerprint(
        self, sha256: str, size: int, recheck: bool = True
    ) -> tuple[int, int, int, int] | None:
        """(0, size, 0, ETag hash) of an object of the expected size, else None: other bytes
        have another ETag. One HEAD (as a stat on disk), unless ``recheck`` is off and this
        process saw the object last (its own upload); the answer is kept so that ``read``
        can tell when the object changed after it."""
        if not recheck:
            with self._marks_lock:
                mark = self._marks.get(sha256)
            if mark is not None:
                return mark if mark[1] == size else None
        head = self._head(sha256)
        mark = None if head is None else _mark(head, int(head.get("ContentLength", -1)))
        with self._marks_lock:
            self._marks[sha256] = mark
            while len(self._marks) > 4096:
                self._marks.pop(next(iter(self._marks)))
        return mark if mark is not None and mark[1] == size else None

    def _forget(self, sha256: str) -> None:
        with self._marks_lock:
            self._marks.pop(sha256, None)

    def _get(self, sha256: str, first: int | None = None, last: int | None = None) -> Any:
        """The body stream of the object (or of bytes ``first..last``); NotFound if it is gone."""
        return self._get_object(sha256, first, last)["Body"]

    def _get_object(self, sha256: str, first: int | None = None, last: int | None = None) -> Any:
        extra = {"Range": f"bytes={first}-{last}"} if first is not None else {}
        with s3_errors():
            try:
                return self.client.get_object(
                    Bucket=self.where.bucket, Key=self._key(sha256), **extra
                )
            except Exception as exc:
                if _missing(exc):
                    raise NotFound("artifact not found") from None
                raise

    def verify(self, sha256: str, digests: bytes) -> bool:
        """True when every block of the object matches its recorded digest (one streamed GET)."""
        try:
            body = self._get(sha256)
        except NotFound:
            return False
        index = 0
        with s3_errors(), _reading(body):  # an early False gives its connection back
            for block in _blocks(body, self.block_size):
                if block_digest(block) != digests[index * 8 : index * 8 + 8]:
                    return False
                index += 1
        return index * 8 == len(digests)

    def read(
        self,
        sha256: str,
        offset: int,
        length: int,
        digests: bytes,
        mark: tuple[int, int, int, int] | None = None,
    ) -> bytes:
        """Read ``[offset, offset+length)`` with one ranged GET of the whole blocks it touches,
        verifying every one. StaleMark when the GET's object is not the one ``mark`` names (by
        default: the one this process saw last)."""
        if length == 0:
            return b""
        bs = self.block_size
        first, last = offset // bs, (offset + length - 1) // bs
        got = self._get_object(sha256, first * bs, (last + 1) * bs - 1)
        with s3_errors(), _reading(got["Body"]) as body:
            total = str(got.get("ContentRange", "")).rpartition("/")[2]
            seen = _mark(got, int(total) if total.isdigit() else -1)
            with self._marks_lock:
                known = mark if mark is not None else self._marks.get(sha256)
            if known is not None and known != seen:  # uploaded again since it was seen
                self._forget(sha256)
                raise StaleMark
            data = body.read()
        return checked_range(data, first, offset, length, digests, bs, "in the blob store")

    def hash_blob(self, sha256: str) -> tuple[str, int] | None:
        """Re-hash an object in full by streaming it: ``(sha256, size)``, or None if it is gone.
        A bucket that cannot be reached raises; it never counts as missing."""
        try:
            body = self._get(sha256)
        except NotFound:
            return None
        h = hashlib.sha256()
        size = 0
        with s3_errors(), _reading(body):
            for chunk in body.iter_chunks(1 << 20):
                h.update(chunk)
                size += len(chunk)
        return h.hexdigest(), size

    # -- removing ------------------------------------------------------------

    def delete(self, sha256: str) -> None:
        """Remove an object (missing is fine)."""
        self._forget(sha256)
        with s3_errors():
            self.client.delete_object(Bucket=self.where.bucket, Key=self._key(sha256))
        checkpoint("collect.deleted")

    def quarantine(self, sha256: str) -> None:
        """Copy an object whose bytes no longer match aside, then remove it."""
        key = self._key(sha256)
        self._forget(sha256)
        aside = self.where.key("quarantine", f"{sha256}.{secrets.token_hex(4)}")
        with s3_errors():
            try:
                self.client.copy_object(
                    Bucket=self.where.bucket,
                    Key=aside,
                    CopySource={"Bucket": self.where.bucket, "Key": key},
                )
            except Exception as exc:
                if _missing(exc):
                    return
                raise
            self.client.delete_object(Bucket=self.where.bucket, Key=key)

    def quarantined(self) -> int:
        """How many withdrawn objects are kept aside."""
        return sum(1 for _ in self._list("quarantine/"))

    def _list(self, under: str) -> Iterator[dict[str, Any]]:
        """The objects right under ``under`` (never deeper: no other store's keys)."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.where.bucket, Prefix=self.where.key(under), Delimiter="/"
        )
        with s3_errors():
            for page in pages:
                yield from page.get("Contents", [])

    def iter_blobs(self, older_than_us: int | None = None) -> Iterator[str]:
        """Every blob object's name, or only those last written before ``older_than_us``."""
        start = len(self.where.key("blobs/"))
        for item in self._list("blobs/"):
            name = item["Key"][start:]
            if not is_sha256(name):
                continue  # a stray, for iter_strays
            modified = int(item["LastModified"].timestamp() * 1_000_000)
            if older_than_us is None or modified < older_than_us:
                yield name

    def iter_strays(self) -> Iterator[str]:
        """Keys under ``blobs/`` that are not a blob's name (relative to ``blobs/``)."""
        start = len(self.where.key("blobs/"))
        for item in self._list("blobs/"):
            name = item["Key"][start:]
            if not is_sha256(name) and name != ".store-id":  # another store's marker: not ours
                yield name

    def remove_stray(self, name: str) -> None:
        """Remove one key that ``iter_strays`` named."""
        with s3_errors():
            self.client.delete_object(Bucket=self.where.bucket, Key=self.where.key("blobs", name))

    def iter_temp(self) -> Iterator[Path]:
        """This host's staging temp files (stale once no registration of this host runs)."""
        yield from self.tmp_dir.iterdir()

    # -- which database the bucket belongs to ----------------------------------

    def nesting(self) -> str | None:
        """Another store this one would sit inside, or hold, as ``s3://bucket/prefix``.

        Stores nest only through their own areas: a store whose prefix runs through another
        store's ``blobs/`` or ``quarantine/`` (found by that store's ``.store-id`` marker
        above), or one whose own areas hold another store's marker. Any other prefix, the
        most natural ``s3://bucket/blobs`` included, is fine when no such store exists.
        """
        segments = self.where.prefix.split("/") if self.where.prefix else []
        for i, segment in enumerate(segments):
            if segment in _AREAS:
                above = "/".join(segments[:i])
                if self._exists("/".join(p for p in (above, ".store-id") if p)):
                    return f"s3://{self.where.bucket}/{above}"
        for area in _AREAS:
            if self._exists(self.where.key(area, ".store-id")):
                return f"s3://{self.where.bucket}/{self.where.key(area)}"
        return None

    def _exists(self, key: str) -> bool:
        with s3_errors():
            try:
                self.client.head_object(Bucket=self.where.bucket, Key=key)
            except Exception as exc:
                if _missing(exc):
                    return False
                raise
        return True

    def read_marker(self) -> str | None:
        """The id of the database this bucket's objects belong to, or None when unclaimed."""
        with s3_errors():
            try:
                body = self.client.get_object(
                    Bucket=self.where.bucket, Key=self.where.key(".store-id")
                )["Body"]
            except Exception as exc:
                if _missing(exc):
                    return None
                raise
            with _reading(body):  # the marker is short; a longer object is not read through
                return str(body.read(200).decode("ascii", "replace")).strip()

    def write_marker(self, ident: str) -> bool:
        """Record ``ident`` as the bucket's database unless one is recorded; True if written."""
        from botocore.exceptions import ClientError

        with s3_errors():
            try:
                self.client.put_object(
                    Bucket=self.where.bucket,
                    Key=self.where.key(".store-id"),
                    Body=(ident + "\n").encode("ascii"),
                    IfNoneMatch="*",
                )
            except ClientError as exc:
                if str(exc.response.get("Error", {}).get("Code")) in ("PreconditionFailed", "412"):
                    return False
                raise
        return True

    def close(self) -> None:
        """Release the client's connections."""
        self.client.close()


@contextmanager
def _reading(body: Any) -> Iterator[Any]:
    """A GET's body, closed afterwards however the reading ends, and its connection given back
    to the client's pool: closing alone (urllib3) keeps the pool's slot taken, so every early
    return would cost the pool a connection for good."""
    try:
        yield body
    finally:
        raw = getattr(body, "_raw_stream", None)
        body.close()
        release = getattr(raw, "release_conn", None)
        if release is not None:
            release()


@contextmanager
def _body(staged: StagedBlob) -> Iterator[Any]:
    """What to upload: the bytes kept in memory, or the staged temp file."""
    if staged.data is not None:
        yield staged.data
        return
    assert staged.temp_path is not None
    with open(staged.temp_path, "rb") as f:
        yield f


def _mark(answer: dict[str, Any], size: int) -> tuple[int, int, int, int]:
    """An object's fingerprint from a PUT's, HEAD's or GET's answer: (0, size, 0, ETag). An
    upload of the same bytes keeps it (nothing to verify again); other bytes change it."""
    tag = int.from_bytes(hashlib.sha256(str(answer.get("ETag")).encode()).digest()[:8], "big")
    return 0, size, 0, tag


def _blocks(body: Any, size: int) -> Iterator[bytes]:
    """The stream's bytes in blocks of ``size`` (the last one shorter)."""
    pending = bytearray()
    for chunk in body.iter_chunks(1 << 20):
        pending += chunk
        whole = len(pending) // size * size
        for start in range(0, whole, size):
            yield bytes(pending[start : start + size])
        del pending[:whole]
    if pending:
        yield bytes(pending)
