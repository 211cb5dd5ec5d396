"""The one error tree of godot-mcp.

Every failure a user can meet is one of these, every exception a part of the package raises
past its own module is one of these, and the MCP edge maps each to exactly one outcome
(``godot_mcp.mcp.outcomes``): the outcome of the tree's class it is under, the outcome
column below. A feature's own class sets the words a client reads where it is raised (or in
one function of the feature); no handler catches one to say it again as another. The whole
tree, each class with its module (under ``godot_mcp``; none: this one)::

    GodotMcpError                                             outcome
    ├── ConfigError                                           (CLI: exit status 2)
    ├── InvalidArgument                                       invalid_argument
    │   ├── TemplateRefused       features.export.templates   a template that is none
    │   ├── PresetsError          engine.project.presets      export_presets.cfg refused
    │   │   ├── PresetsMissing    engine.project.presets
    │   │   ├── PresetsInvalid    engine.project.presets
    │   │   └── UnknownPreset     engine.project.presets
    │   ├── ConfigSyntaxError     engine.project.presets      ConfigFile text (a ValueError too)
    │   ├── TreeError             engine.project.tree         the project's files refused
    │   │   ├── LinkOutside       engine.project.tree
    │   │   ├── LinkLoop          engine.project.tree
    │   │   ├── TooManyEntries    engine.project.tree
    │   │   └── TreeChanged       engine.project.tree
    │   ├── BadTestPath           features.testrun.selection
    │   ├── BadPaths              features.check.job          (a CheckError)
    │   ├── GameInvalid           features.game.errors        (a GameError)
    │   ├── EvaluationFailed      engine.debugger.session     the engine's words on it
    │   └── NoSelf                engine.debugger.session     a frame with no self
    ├── NotFound                                              not_found
    │   └── GameNotFound          features.game.errors        (a GameError)
    ├── PermissionDenied                                      permission_denied (HTTP: not_found)
    │   └── NotYours                                          another caller's thing
    ├── OutOfRange                                            out_of_range (HTTP: not_found)
    ├── TooLarge                                              too_large
    ├── Unavailable                                           unavailable
    │   ├── DatabaseUnavailable                               the store's database (PostgreSQL)
    │   ├── DatabaseBusy                                      it answered; try again
    │   ├── BlobStoreUnavailable                              the store's bucket (S3)
    │   ├── StaleMark             store.blobs                 written again while read
    │   ├── NeverImported         engine.project.imported
    │   ├── GameUnavailable       features.game.errors        (a GameError)
    │   ├── NotStopped            engine.debugger.session     no break to answer from
    │   │   └── DebuggerLost      engine.debugger.session     the debugger connection ended
    │   └── AtBreak               engine.debugger.session     stopped where it must run
    ├── Timeout                                               timeout
    │   ├── ImportTimeout         features.importer.job
    │   ├── TestRunTimeout        features.testrun.job
    │   ├── CheckTimeout          features.check.job          (a CheckError)
    │   └── GameTimeout           features.game.errors        (a GameError)
    ├── Failed                                                failed
    │   ├── IntegrityError                                    bytes differ from the promise
    │   ├── StorageError                                      a write or fsync failed
    │   │   └── BlobStoreRefused                              the store's bucket refused it
    │   ├── Malformed                                         a game's reply or message
    │   ├── CannotStart           engine.process.run
    │   ├── ExportError           features.export.job
    │   │   └── ExportSetupError  features.export.job
    │   ├── OutputInvalid         features.export.verify
    │   ├── ImportFailed          features.importer.job
    │   ├── TestRunFailed         features.testrun.job
    │   ├── ReportRefused         features.testrun.junit
    │   ├── CheckFailed           features.check.job          (a CheckError)
    │   └── GameFailed            features.game.errors        (a GameError)
    │       └── BridgeClosed      features.game.bridge
    ├── GameError                 features.game.errors        each one's class above
    └── CheckError                features.check.job          each one's class above

Foreign failures (OSError, the database driver's, botocore's) become these at the boundary
that meets them, by one table: ``godot_mcp.store.failures``.

Messages are one line and never name a private path; a message quotes at most
``MAX_QUOTED`` characters of anything a caller sent (:func:`quoted`). No layer below the MCP
edge knows a tool's name: an error whose way out is another tool says which way (its
:class:`Remedy`) and the edge words it with that tool as ``tools/list`` spells it.
"""

from __future__ import annotations

from enum import Enum

MAX_QUOTED = 200  # characters of a caller's input a message (or an error's data) repeats


def quoted(value: object) -> str:
    """``value`` as a message repeats it: its first ``MAX_QUOTED`` characters, then ``…``
    when there were more (a caller may send a 100,000-character name)."""
    text = str(value)
    return text if len(text) <= MAX_QUOTED else text[:MAX_QUOTED] + "…"


def echoes_cut(message: str, sent: object) -> str:
    """``message`` (someone else's words: a game's reply) with every string of ``sent`` (what
    the caller asked, walked as JSON) that it repeats whole cut as :func:`quoted` cuts it."""
    found: set[str] = set()
    stack = [sent]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) > MAX_QUOTED:
                found.add(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    for text in sorted(found, key=len, reverse=True):
        message = message.replace(text, quoted(text))
    return message


class Remedy(Enum):
    """What a caller can do about a refusal with another tool; the edge says which tool."""

    RESUME = "resume"  # let a game stopped by its debugger run again
    BREAK = "break"  # stop a debugged game where it is
    IMPORT = "import"  # import the project
    VARIABLES = "variables"  # read a stopped frame's names and values


class GodotMcpError(Exception):
    """Base of every typed failure; ``outcome`` names the tool outcome; ``remedy``, the way
    out the edge adds to the message."""

    outcome = "failed"

    def __init__(self, message: str, *, remedy: Remedy | None = None, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.remedy = remedy
        self.details = details  # more fields of the refusal (a wait's last value seen)


class ConfigError(GodotMcpError):
    """A bad option, a missing project, a state dir inside the project."""

    outcome = "invalid_argument"


class InvalidArgument(GodotMcpError):
    outcome = "invalid_argument"


class NotFound(GodotMcpError):
    outcome = "not_found"


class PermissionDenied(GodotMcpError):
    outcome = "permission_denied"


class NotYours(PermissionDenied):
    """A thing that exists but is bound to another caller. Lower layers always raise this
    precise error; the edge's disclosure policy decides whether the caller hears it or the
    unknown id's answer (``godot_mcp.mcp.disclosure``)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"this {what} belongs to another caller")
        self.what = what


class OutOfRange(GodotMcpError):
    """A byte range the contract does not admit."""

    outcome = "out_of_range"

    def __init__(self, message: str, *, size: int, max_output_bytes: int) -> None:
        super().__init__(message)
        self.size = size
        self.max_output_bytes = max_output_bytes


class TooLarge(GodotMcpError):
    outcome = "too_large"


class Unavailable(GodotMcpError):
    outcome = "unavailable"


class DatabaseUnavailable(Unavailable):
    """The store's database server cannot be reached (it is down, or the network is).

    ``message`` goes to clients and names nothing of the deployment; ``reason`` (the driver's
    own line: host, port, role) goes to the operator, in the log and at start-up.
    """

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.message}: {self.reason}" if self.reason else self.message


class DatabaseBusy(Unavailable):
    """The store's database answered but could not do it now: a deadlock, a serialization
    conflict, a statement or lock timeout, too many connections. Worth trying again."""


class BlobStoreUnavailable(Unavailable):
    """The store's S3 endpoint cannot be reached or answers 5xx."""


class Timeout(GodotMcpError):
    outcome = "timeout"


class Failed(GodotMcpError):
    outcome = "failed"


class IntegrityError(Failed):
    """Bytes differ from the length or SHA-256 they were promised to have."""


class StorageError(Failed):
    """The disk refused a write (ENOSPC, EIO, a failing fsync)."""


class BlobStoreRefused(StorageError):
    """The store's bucket answered and refused the operation (an S3 error code)."""


class Malformed(Failed):
    """A game sent what its protocol never sends, on whichever channel: a bridge reply the
    bridge scripts never write, debugger bytes that are no message of the engine's."""
