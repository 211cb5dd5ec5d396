"""The one table of foreign failures: what the file system, the database driver and the S3
client raise, turned into the error tree at each boundary that meets them, in the manner of
httpx's ``map_exceptions``.

    OSError (ENOSPC, EDQUOT)      StorageError   "<doing>: the disk is full"
    OSError (any other)           StorageError   "<doing>: <strerror>"
    SQLAlchemy's                  see ``db.database_errors``: DatabaseUnavailable, DatabaseBusy,
                                  StorageError (any other SQLAlchemyError too)
    botocore's                    see ``s3.s3_errors``: BlobStoreUnavailable, BlobStoreRefused,
                                  IntegrityError, ConfigError

``os_errors`` serves the blob directory; ``mapped`` serves the CLI and the transports, which
meet all three. A GodotMcpError passes through as it is.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.exc import SQLAlchemyError

from godot_mcp.errors import StorageError
from godot_mcp.store.db import database_errors

_FULL = (errno.ENOSPC, errno.EDQUOT)


def os_error(doing: str, exc: OSError) -> StorageError:
    """The tree's error of a file-system failure while ``doing`` (``cannot read a blob``)."""
    why = "the disk is full" if exc.errno in _FULL else (exc.strerror or str(exc))
    return StorageError(f"{doing}: {why}")


@contextmanager
def os_errors(doing: str) -> Iterator[None]:
    """Raise every OSError inside as :func:`os_error` of ``doing``."""
    try:
        yield
    except OSError as exc:
        raise os_error(doing, exc) from None


@contextmanager
def mapped(doing: str) -> Iterator[None]:
    """Every foreign failure inside, by the table above; ``doing`` says what was done when a
    file failed (``cannot use the state dir``)."""
    try:
        with database_errors():
            yield
    except SQLAlchemyError as exc:  # what database_errors leaves: a refusal
        reason = str(getattr(exc, "orig", None) or type(exc).__name__).splitlines()[0]
        raise StorageError(f"the store's database refused the operation: {reason[:200]}") from None
    except OSError as exc:
        raise os_error(doing, exc) from None
