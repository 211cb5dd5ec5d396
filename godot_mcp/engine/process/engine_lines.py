"""What a line of Godot's own output is: an error, a warning, or a start-up line.

Start-up lines say nothing about the project: the banner, the renderer and V-Sync lines, this
machine's locale and audio fallbacks, and Godot 4's Vulkan probe. A Forward+ project started
where there is no Vulkan (Xvfb, most CI) logs ``ERROR: Required extension VK_KHR_surface not
found`` (and on some versions ``Vulkan``/``rendering device`` lines) before Godot 4.4+ falls
back to OpenGL by itself: an error line in form, the engine's probe in fact. Such lines are
never a reason for a failure and are marked in a game's log, never dropped. Godot 4.6 follows
the Vulkan line with ``ERROR: Condition "err != OK" is true. Returning: err`` (located in its
Vulkan driver) and ``WARNING: … switching to OpenGL 3``: the first is a start-up line only
right after the Vulkan probe (:func:`is_startup` with ``after_probe``), the second always.

The same holds for the server build's dummy renderer on Godot 3.5+ (3.6.2 checked): its editor
(an export, an import) prints ``ERROR: VisualServer attempted to free a NULL RID.`` by the
hundred, as it starts and again as it quits, whatever the project; and in the sandbox of an
export or a check, which has no system certificates, 3.6 starts with ``ERROR: Cannot open
X509CertificateMbedTLS file '/etc/ssl/certs/ca-certificates.crt'.``. Counted with the start-up
lines, they are never the reason a run failed; the engine's own message (``No export template
found …``, ``Invalid export preset name …``) stands among them and is the reason.
"""

from __future__ import annotations

import re

__all__ = [
    "SCRIPT_PARSE_ERROR",
    "Reason",
    "first_reason",
    "is_probe",
    "is_startup",
    "level",
    "script_place",
    "without_escapes",
]

# A script that does not compile, its message in group 1; the line after it names the place:
#   Godot 3  SCRIPT ERROR: GDScript::reload: Parse Error: m      At: res://x.gd:7.
#   Godot 4  SCRIPT ERROR: Parse Error: m                         at: GDScript::reload (res://x.gd:7)
SCRIPT_PARSE_ERROR = re.compile(r"^SCRIPT ERROR: (?:[\w:]+: )?(?:Parse|Compile) Error: (.*)$")
_PLACE = re.compile(r"^\s+(?:At: (res://.+):(\d+)\.?|at: .*\((res://.+):(\d+)\))\s*$")

_ERROR = re.compile(r"^(?:USER )?(?:SCRIPT )?ERROR: ")
_WARNING = re.compile(r"^(?:USER )?WARNING: ")
_PARSE = re.compile(r"Parse Error", re.IGNORECASE)
_LOCATION = re.compile(r"^(?:At|at): ")  # the location line under an error, stripped
_STARTUP = re.compile(
    r"^Godot Engine v|^OpenGL (?:ES|API) |V-Sync|VK_KHR_surface|^Vulkan |[Vv]ulkan .*not |"
    r"rendering device|Invalid locale '|Unsupported locale '|locale .* not supported|"
    r"ALSA lib |AudioDriver|audio driver|PulseAudio|Using dummy audio|switching to OpenGL|"
    r"VisualServer attempted to free a NULL RID|"
    r"Cannot open X509CertificateMbedTLS file '/etc/ssl/"
)
_PROBE = re.compile(r"^ERROR: .*(?:VK_KHR_surface|[Vv]ulkan)")  # the renderer's probe failed
_AFTER_PROBE = re.compile(r'^ERROR: Condition "err != OK" is true\. Returning: err$')
# Lines of a process that failed before it could say anything of its own (the sandbox, the
# dynamic loader, a shell): the reason when no engine error was printed.
_FAILURE = re.compile(
    r"^bwrap: |error while loading shared libraries|: not found$|^Segmentation fault|"
    r"^Illegal instruction|cannot execute|Permission denied|No such file or directory"
)


# Terminal escape sequences (print_rich's and Godot 4's progress colours, cursor moves,
# titles): no information an agent can use. CSI (ESC [ … final), OSC (ESC ] … BEL or ESC \),
# and two-character escapes.
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])?")


def without_escapes(text: str) -> str:
    """``text`` without terminal escape sequences."""
    return _ESCAPES.sub("", text) if "\x1b" in text else text


def script_place(line: str) -> tuple[str, int] | None:
    """The ``res://`` path and line a script error's second line names (either engine)."""
    at = _PLACE.match(line)
    if at is None:
        return None
    return at.group(1) or at.group(3), int(at.group(2) or at.group(4))


def level(line: str) -> str:
    """``error``, ``warning`` or ``print``, as a game's log classes ``line``."""
    if _ERROR.match(line) or (_PARSE.search(line) and line.startswith("ERROR")):
        return "error"
    if _WARNING.match(line):
        return "warning"
    return "print"


def is_startup(line: str, after_probe: bool = False) -> bool:
    """One of the engine's start-up lines, which say nothing about the project.
    ``after_probe``: the line before it (in its stream) was the renderer's failed probe."""
    text = line.strip()
    return bool(_STARTUP.search(text)) or (after_probe and bool(_AFTER_PROBE.match(text)))


def is_probe(line: str) -> bool:
    """A start-up line of the renderer's failed probe, after which the engine's own
    ``Condition "err != OK"`` line is a start-up line too."""
    return is_startup(line) and bool(_PROBE.match(line.strip()))


class Reason:
    """Why a run failed, from its output seen line by line (memory: two lines).

    The first error line that is not a start-up line (nor matched by ``ignore``), else the
    first line of a process that failed before the engine spoke (the sandbox, the loader).
    """

    def __init__(self, ignore: re.Pattern[str] | None = None) -> None:
        self.ignore = ignore
        self._error = ""
        self._failure = ""
        self._after_probe = False

    def see(self, raw: str) -> None:
        if self._error:
            return
        line = raw.strip()
        if not line or _LOCATION.match(line):
            return
        after_probe, self._after_probe = self._after_probe, is_probe(line)
        if is_startup(line, after_probe) or (self.ignore is not None and self.ignore.search(line)):
            return
        if level(line) == "error":
            self._error = line
        elif not self._failure and _FAILURE.search(line):
            self._failure = line

    @property
    def text(self) -> str:
        """The reason, or ``""`` when the output gave none."""
        return self._error or self._failure


def first_reason(lines: list[str], ignore: re.Pattern[str] | None = None) -> str:
    """:class:`Reason` over ``lines``."""
    reason = Reason(ignore)
    for line in lines:
        reason.see(line)
    return reason.text


VERSION = re.compile(r"^\s*(\d+)\.(\d+)(?:\.\d+)?\S*", re.MULTILINE)


def version_line(text: str) -> str | None:
    """The version line of Godot's ``--version`` output (``4.6.3.stable.debian``), if any."""
    match = VERSION.search(text)
    return match.group(0).strip() if match else None
