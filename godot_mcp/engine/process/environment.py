"""What of the server's environment a Godot it starts may see, and which values are secret.

A game, an export and a check run project code, and what that code prints reaches callers
(``runtime.log.read``, an export's error, a check's messages), HTTP principals included. So
none of them inherits the server's environment: each gets an allow-list.

* An export or check (inside the sandbox): the locale and a plain ``PATH``.
* A game: what Godot needs to draw, play sound and find its files: the locale, ``PATH``,
  ``HOME`` and the user's names, the XDG dirs, the display (X11 or Wayland), the audio
  servers, and the GL/Vulkan driver choices (Mesa, NVIDIA, libglvnd); ``LD_LIBRARY_PATH``
  for a Godot built against libraries of its own.

Whatever else the server holds (``AWS_SECRET_ACCESS_KEY``, ``GODOT_MCP_DATABASE_URL`` with
its password, tokens) stays with it. And since a project can carry a secret in by other
means (a file, a hard-coded string), :func:`secret_values` names the values of the
server's secret-looking variables, which every scrubber removes from every text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

__all__ = ["PATH", "for_game", "for_sandbox", "secret_values"]

PATH = "/usr/local/bin:/usr/bin:/bin"
_LC = (
    r"LC_(?:ALL|CTYPE|MESSAGES|NUMERIC|COLLATE|MONETARY|TIME|PAPER|NAME|ADDRESS|TELEPHONE"
    r"|MEASUREMENT|IDENTIFICATION)"
)
_LOCALE = re.compile(rf"^(?:LANG|LANGUAGE|TZ|{_LC})$")
_GAME = re.compile(
    rf"^(?:PATH|HOME|USER|LOGNAME|LANG|LANGUAGE|TZ|{_LC}"
    r"|XDG_(?:DATA|CONFIG|CACHE|STATE)_HOME|XDG_RUNTIME_DIR|XDG_(?:DATA|CONFIG)_DIRS"
    r"|XDG_SESSION_TYPE|XDG_CURRENT_DESKTOP"
    r"|DISPLAY|XAUTHORITY|WAYLAND_DISPLAY"
    r"|PULSE_SERVER|PULSE_RUNTIME_PATH|PULSE_COOKIE|PIPEWIRE_RUNTIME_DIR|ALSA_CONFIG_PATH"
    r"|SDL_[A-Z_]+"
    r"|LIBGL_[A-Z_]+|MESA_[A-Z_]+|GALLIUM_DRIVER|DRI_PRIME|__GLX_VENDOR_LIBRARY_NAME"
    r"|__EGL_VENDOR_LIBRARY_(?:FILENAMES|DIRS)|__GL_[A-Z_]+|__NV_PRIME_RENDER_OFFLOAD"
    r"|VK_ICD_FILENAMES|VK_DRIVER_FILES|VK_LAYER_PATH|VK_INSTANCE_LAYERS"
    r"|LD_LIBRARY_PATH)$"
)
# Names whose values are secret, wherever they appear in a name.
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|AUTH(?!ORITY)"
    r"|DATABASE_URL|_DSN$|COOKIE|SESSION_KEY",
    re.IGNORECASE,
)
MIN_SECRET = 6  # shorter values ("1", "true") would scrub ordinary words


def for_sandbox(base: Mapping[str, str]) -> dict[str, str]:
    """An export's or check's environment: the locale of ``base`` and a plain ``PATH``
    (start Godot by its absolute path)."""
    return {"PATH": PATH, **{k: v for k, v in base.items() if _LOCALE.match(k)}}


def for_game(base: Mapping[str, str]) -> dict[str, str]:
    """A game's environment: what Godot needs of ``base`` (see the module's text)."""
    env = {k: v for k, v in base.items() if _GAME.match(k) and not _SECRET_NAME.search(k)}
    env.setdefault("PATH", PATH)
    return env


def secret_values(base: Mapping[str, str]) -> list[str]:
    """The values of ``base``'s secret-looking variables, longest first, and the passwords
    inside any URL-valued one (``postgresql://user:PASSWORD@host/db``)."""
    found: set[str] = set()
    for name, value in base.items():
        if name != "PATH" and _SECRET_NAME.search(name):
            found.add(value)
        if "://" in value:  # any URL's password (a proxy's, a database's)
            try:
                password = urlsplit(value).password
            except ValueError:
                password = None
            if password:
                found |= {password, unquote(password)}
    return sorted((v for v in found if len(v) >= MIN_SECRET), key=len, reverse=True)
