"""Objects in an S3-compatible bucket that several hosts share (``store/objects.py``).

``--blob-store s3://BUCKET/PREFIX?endpoint_url=…&region=…``; credentials come from boto3's
usual chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``~/.aws``, an instance role).
Objects are ``PREFIX/blobs/<sha256>`` (the raw bytes), ``PREFIX/quarantine/<sha256>.<rand>``
(withdrawn bytes) and ``PREFIX/.store-id`` (the database this bucket belongs to).

Bytes are staged above (``store/blobs.py``: in memory up to ``MEMORY_STAGE``, else in a local
temp file), then uploaded with their SHA-256 as the S3 checksum, so the server refuses bytes
that are not those; the checksum the server computed is read back before the caller commits a
row. Reads are ranged GETs; their blocks are checked above, against the database's digests.
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
from typing import Any
from urllib.parse import parse_qs, urlsplit

from godot_mcp.errors import (
    BlobStoreRefused,
    BlobStoreUnavailable,
    ConfigError,
    IntegrityError,
    NotFound,
    StorageError,
)
from godot_mcp.store.directory import PrivateStaging, mkdir_private
from godot_mcp.store.faults import checkpoint
from godot_mcp.store.objects import Area, Listed, Recorded, Upload, Version
from godot_mcp.store.shared import OTHER_DATABASE, OTHER_STORE

MAX_OBJECT = 5 * 1024**3  # one PUT; larger artifacts would need multipart uploads
MEMORY_STAGE = 64 * 1024**2  # bytes already in memory up to this are uploaded from there
_BUCKET_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789.-")
_PREFIX_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/")
_FORM = "--blob-store must be s3://BUCKET/PREFIX?endpoint_url=…&region=…"
_REGION_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")
_AREAS = ("blobs", "quarantine")  # where a store keeps keys of its own
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
        raise BlobStoreRefused(f"the blob store refused the operation ({code[:60]})") from None
    except (ConnectionError, ReadTimeoutError):
        raise BlobStoreUnavailable("the blob store cannot be reached") from None
    except NoCredentialsError:
        raise ConfigError(
            "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a profile)"
        ) from None
    except BotoCoreError as exc:
        raise BlobStoreRefused(f"the blob store failed ({type(exc).__name__})") from None


def _missing(exc: Exception) -> bool:
    from botocore.exceptions import ClientError

    if not isinstance(exc, ClientError):
        return False
    error = exc.response.get("Error", {})
    return str(error.get("Code")) in ("404", "NoSuchKey", "NotFound")


def _b64(sha256_hex: str) -> str:
    return base64.b64encode(bytes.fromhex(sha256_hex)).decode()


class S3Objects(PrivateStaging):
    """Objects in a bucket under one prefix (``blobs/`` and ``quarantine/``); staging in a
    local temp dir of this host. An object's version is its size and ETag: an upload of the
    same bytes keeps it (one PUT's ETag is the bytes' MD5), other bytes change it."""

    shared = True
    memory_stage = MEMORY_STAGE  # the upload's checksum guards them as a temp file would

    def __init__(self, location: S3Location, staging: Path) -> None:
        import boto3
        from botocore.config import Config

        self.where = location
        self.staging = staging
        mkdir_private(staging)
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

    def _key(self, name: str) -> str:
        if not name or "/" in name or name in (".", ".."):
            raise NotFound("artifact not found")
        return self.where.key("blobs", name)

    def put(self, name: str, upload: Upload) -> Version:
        """Upload with the SHA-256 as checksum: the server refuses other bytes (BadDigest) and
        echoes the checksum it computed. A server that echoes none is asked again (HEAD with
        checksums), and the object re-hashed if it keeps none."""
        if upload.size > MAX_OBJECT:
            raise StorageError("an artifact over 5 GiB does not fit one S3 upload")
        key = self._key(name)
        with s3_errors(), _body(upload) as body:
            put = self.client.put_object(
                Bucket=self.where.bucket,
                Key=key,
                Body=body,
                ContentLength=upload.size,
                ChecksumSHA256=_b64(upload.sha256),
            )
        checkpoint("publish.renamed")
        echoed = put.get("ChecksumSHA256")
        if echoed is None:
            with s3_errors():
                head = self.client.head_object(
                    Bucket=self.where.bucket, Key=key, ChecksumMode="ENABLED"
                )
            if head.get("ContentLength") != upload.size:
                raise IntegrityError("the blob store holds other bytes than were sent")
            echoed = head.get("ChecksumSHA256")
            if echoed is None and self._sha256(key) != upload.sha256:
                raise IntegrityError("the blob store holds other bytes than were sent")
        if echoed is not None and echoed != _b64(upload.sha256):
            raise IntegrityError("the blob store holds other bytes than were sent")
        return _version(put, upload.size)

    def _sha256(self, key: str) -> str:
        with s3_errors():
            body = self.client.get_object(Bucket=self.where.bucket, Key=key)["Body"]
            h = hashlib.sha256()
            with _reading(body):
                for chunk in body.iter_chunks(1 << 20):
                    h.update(chunk)
        return h.hexdigest()

    def get_range(self, name: str, offset: int, length: int) -> tuple[bytes, Version]:
        """One ranged GET; the version is the GET's own ETag and the object's whole size."""
        key = self._key(name)
        with s3_errors():
            try:
                got = self.client.get_object(
                    Bucket=self.where.bucket,
                    Key=key,
                    Range=f"bytes={offset}-{offset + length - 1}",
                )
            except Exception as exc:
                if _missing(exc):
                    raise NotFound("artifact not found") from None
                raise
            with _reading(got["Body"]) as body:
                total = str(got.get("ContentRange", "")).rpartition("/")[2]
                return body.read(), _version(got, int(total) if total.isdigit() else -1)

    def head(self, name: str) -> Version | None:
        """One HEAD: the object's version, or None when it is not there."""
        with s3_errors():
            try:
                got = self.client.head_object(Bucket=self.where.bucket, Key=self._key(name))
            except Exception as exc:
                if _missing(exc):
                    return None
                raise
        return _version(got, int(got.get("ContentLength", -1)))

    def delete(self, name: str) -> None:
        """Remove an object (missing is fine)."""
        with s3_errors():
            self.client.delete_object(Bucket=self.where.bucket, Key=self._key(name))

    def move_aside(self, name: str) -> None:
        """Copy an object to ``quarantine/``, then remove it."""
        key = self._key(name)
        aside = self.where.key("quarantine", f"{name}.{secrets.token_hex(4)}")
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

    def list(self, area: Area) -> Iterator[Listed]:
        """The objects right under an area (never deeper: no other store's keys; another
        store's ``.store-id`` marker is not ours either)."""
        under = self.where.key(area) + "/"
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.where.bucket, Prefix=under, Delimiter="/"
        )
        with s3_errors():
            for page in pages:
                for item in page.get("Contents", []):
                    name = item["Key"][len(under) :]
                    if name and name != ".store-id":  # not the folder's own key
                        yield Listed(name, int(item["LastModified"].timestamp() * 1_000_000))

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

    def claim(self, recorded: Recorded) -> None:
        """A bucket prefix is named by the bucket, the prefix and a random id the first
        server makes, recorded in the database and in the bucket (``PREFIX/.store-id``)."""
        where = f"{self.where.bucket}/{self.where.prefix}"  # the endpoint may change; not these
        other = self.nesting()
        if other is not None:
            raise ConfigError(
                f"the blob store would share keys with the store at {other} (one inside the "
                "other's blobs/ or quarantine/): choose a prefix beside it"
            )
        marker = self.read_marker()
        if marker is None:
            known = recorded(f"bucket {secrets.token_hex(16)} {where}") or ""
            kind, _, rest = known.partition(" ")
            ident, _, place = rest.partition(" ")
            if kind != "bucket" or place != where:  # another store, another bucket or prefix
                raise ConfigError(OTHER_STORE)
            # Written, or another server wrote it meanwhile: it must be ours.
            if not self.write_marker(ident) and self.read_marker() != ident:
                raise ConfigError(OTHER_DATABASE)
            return
        record = recorded(None)
        if record is None:
            raise ConfigError(OTHER_DATABASE)
        if record != f"bucket {marker} {where}":
            raise ConfigError(OTHER_STORE)

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
def _body(upload: Upload) -> Iterator[Any]:
    """What to upload: the bytes kept in memory, or the staged temp file."""
    if upload.data is not None:
        yield upload.data
        return
    assert upload.path is not None
    with open(upload.path, "rb") as f:
        yield f


def _version(answer: dict[str, Any], size: int) -> Version:
    """An object's version from a PUT's, HEAD's or GET's answer: its size and ETag."""
    return Version(size, str(answer.get("ETag")))
