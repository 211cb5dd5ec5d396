#!/usr/bin/env bash
# Install what godot-mcp needs on a fresh Debian machine: Godot 3, Xvfb, bubblewrap, PostgreSQL
# (for the tests of a shared store), a venv; with GODOT_MCP_SETUP_GODOT4=1 also the Debian sid
# root where Godot 4 runs on a Debian 12 host (tools/godot4-root.sh, cached across checkouts).
# Idempotent; apt steps run only as root and only for what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in godot3 godot3-server godot3-runner xvfb xauth libgl1-mesa-dri bubblewrap postgresql; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
command -v npx >/dev/null 2>&1 || need+=(npm)
if ((${#need[@]})); then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing ${need[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
    else
        echo "setup: missing ${need[*]} (run as root to install them); Godot tests will skip" >&2
    fi
fi

# The npm MCP clients the tests drive (tests/js: the TypeScript SDK and the Inspector), pinned by
# tests/js/package-lock.json. Optional: when they cannot be installed, their tests skip loudly.
js=tests/js
install_js() {
    command -v npm >/dev/null 2>&1 || { echo "setup: npm is not installed"; return 1; }
    (cd "$js" && timeout 600 npm ci --no-audit --no-fund)
}
if [ ! -d "$js/node_modules" ] || [ "$js/package-lock.json" -nt "$js/node_modules" ]; then
    if install_js >"$js/npm.log" 2>&1; then
        touch "$js/node_modules"
    else
        rm -rf "$js/node_modules"
        echo "setup: the npm clients in $js could not be installed (see $js/npm.log); their tests will skip loudly" >&2
    fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
log=.venv/install.log
# The distribution was called godot-mcp before 0.2.0: a venv made then drops that install.
if .venv/bin/python -m pip show -q godot-mcp >/dev/null 2>&1; then
    .venv/bin/python -m pip uninstall -q -y godot-mcp >/dev/null 2>&1 || true
fi
if ! { .venv/bin/python -m pip install -q --disable-pip-version-check -U pip &&
       .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "setup: installing the Python environment failed" >&2
    exit 1
fi

if [ "${GODOT_MCP_SETUP_GODOT4:-}" = 1 ]; then
    if [ "$(id -u)" = 0 ] || [ -x "${GODOT_MCP_SID_ROOT:-/var/tmp/godot-mcp/sid}/usr/bin/godot" ]; then
        bash tools/godot4-root.sh ensure
    else
        echo "setup: the Godot 4 root needs root to build (tools/godot4-root.sh ensure)" >&2
    fi
fi
