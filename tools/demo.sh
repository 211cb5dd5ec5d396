#!/usr/bin/env bash
# The main job: set up (see setup.sh), then run the demo end to end on examples/demo (Godot 4);
# `--godot 3` runs examples/demo3 on Godot 3. On a Debian 12 host Godot 4 runs inside the
# Debian sid root that setup.sh builds (tools/godot4-root.sh); set GODOT_BIN to use your own.
set -euo pipefail
cd "$(dirname "$0")/.."
engine=4
for ((i = 1; i <= $#; i++)); do
    [ "${!i}" = --godot ] && { j=$((i + 1)); engine=${!j:-4}; }
    case "${!i}" in --godot=*) engine=${!i#--godot=} ;; esac
done
if [ "$engine" = 4 ] && ! "${GODOT_BIN:-godot}" --version 2>/dev/null | grep -q '^4\.'; then
    GODOT_MCP_SETUP_GODOT4=1 bash tools/setup.sh
    exec bash tools/godot4-root.sh run .venv4/bin/python tools/demo.py "$@"
fi
bash tools/setup.sh
exec .venv/bin/python tools/demo.py "$@"
