"""Linux export templates made from Debian's ``godot3-runner`` (for tests and the demo).

Godot 3.2.3 looks for its Linux templates at
``$XDG_DATA_HOME/godot/templates/3.2.3.stable/linux_x11_64_release`` and ``..._debug`` (the
directory name is the engine version without the ``.custom_build`` suffix, as Godot's own
"No export template found at the expected path" error shows). Debian ships no templates, but its
no-tools X11 runtime ``/usr/bin/godot3-runner`` is exactly such a template: linking both names to
it makes ``--export``/``--export-debug`` work.
"""

from __future__ import annotations

import shutil
from pathlib import Path

RUNNER = "/usr/bin/godot3-runner"
TEMPLATE_NAMES = ("linux_x11_64_release", "linux_x11_64_debug")


def install_debian_templates(data_home: Path, version_dir: str = "3.2.3.stable") -> Path | None:
    """Link the Linux templates under ``data_home`` to ``godot3-runner``.

    Returns the version's template directory, or ``None`` when ``godot3-runner`` is not
    installed. Existing links are replaced; ``data_home`` plays the role of ``XDG_DATA_HOME``.
    """
    runner = Path(RUNNER) if Path(RUNNER).exists() else None
    if runner is None:
        found = shutil.which("godot3-runner")
        runner = Path(found) if found else None
    if runner is None:
        return None
    target = data_home / "godot" / "templates" / version_dir
    target.mkdir(parents=True, exist_ok=True)
    for name in TEMPLATE_NAMES:
        link = target / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(runner)
    return target
