#!/usr/bin/env bash
# Test infrastructure for Godot 4 on a Debian 12 host: Godot 4.6 (with its export templates) is
# packaged by Debian unstable only and needs its glibc, so it runs inside a Debian sid root.
#
#   tools/godot4-root.sh ensure      build the root once (cached; rebuilt when missing or broken),
#                                    add Godot 3.6 to it, and a Python venv for this checkout
#                                    inside it (.venv4/)
#   tools/godot4-root.sh run CMD...  run CMD inside the root, this checkout at the same path
#
# Users who have a Godot 4 binary need none of this: they point GODOT_BIN at it.
# The root lives in GODOT_MCP_SID_ROOT (default /var/tmp/godot-mcp/sid), outside the checkout,
# so fresh clones on the same machine share it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
root=${GODOT_MCP_SID_ROOT:-/var/tmp/godot-mcp/sid}
mirror=${GODOT_MCP_SID_MIRROR:-$(sed -n 's/^URIs: *\(\S*debian\)$/\1/p' \
    /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
mirror=${mirror:-http://deb.debian.org/debian}
packages=godot,godot-template-release,godot-template-debug,libgl1-mesa-dri,libegl1,libglx-mesa0
packages+=,python3,python3-venv,xvfb,xauth,bubblewrap,ca-certificates,procps,postgresql,nodejs
packages+=,git,mount
# Bump when the package list changes: a root with another stamp is rebuilt.
stamp="3 $packages"
# Installed into a root that lacks them, without a rebuild: Godot 3.6 (sid's godot3, which does
# not conflict with its godot 4), for the Godot 3.6 lane.
extras="godot3 godot3-server godot3-runner"

inside() {
    local binds=(--bind "$root" / --dev /dev --proc /proc --bind /tmp /tmp --bind "$repo" "$repo")
    local f
    for f in /etc/pip.conf /etc/ssl/certs/ca-certificates.crt /etc/resolv.conf; do
        [ -e "$f" ] && binds+=(--ro-bind "$f" "$f")
    done
    # Root's capabilities stay (the tests mount small tmpfs disks and nest their own sandboxes);
    # the environment is the caller's, with the root's own PATH.
    bwrap "${binds[@]}" --cap-add ALL --die-with-parent --chdir "$repo" \
        --setenv PATH /usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin --setenv GODOT_MCP_IN_SID 1 "$@"
}

healthy() {
    [ -f "$root/.godot-mcp-stamp" ] && [ "$(cat "$root/.godot-mcp-stamp")" = "$stamp" ] &&
        inside godot --version 2>/dev/null | grep -q '^4\.'
}

build() {
    command -v mmdebstrap >/dev/null || {
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends mmdebstrap
    } >&2
    local tmp="$root.new"
    rm -rf "$tmp"
    mkdir -p "$(dirname "$root")"
    echo "godot4-root: building a Debian sid root with Godot 4 at $root" >&2
    mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
        --include="$packages" sid "$tmp" "$mirror" >&2
    echo "$stamp" >"$tmp/.godot-mcp-stamp"
    rm -rf "$root"
    mv "$tmp" "$root"
}

ensure() {
    if ! healthy; then
        [ "$(id -u)" = 0 ] || { echo "godot4-root: building the root needs root" >&2; exit 1; }
        build
        healthy || { echo "godot4-root: Godot 4 does not run in the new root" >&2; exit 1; }
    fi
    local missing=()
    local pkg
    for pkg in $extras; do
        inside dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        [ "$(id -u)" = 0 ] || { echo "godot4-root: installing ${missing[*]} needs root" >&2; exit 1; }
        echo "godot4-root: installing ${missing[*]} into the root" >&2
        inside sh -c 'apt-get -o Acquire::Check-Valid-Until=false update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"' \
            sh "${missing[@]}" >&2
    fi
    local log="$repo/.venv4.log"
    if [ ! -x "$repo/.venv4/bin/python" ]; then
        inside python3 -m venv "$repo/.venv4"
    fi
    # The distribution was called godot-mcp before 0.2.0: a venv made then drops that install.
    inside "$repo/.venv4/bin/python" -m pip uninstall -q -y godot-mcp >/dev/null 2>&1 || true
    if ! inside "$repo/.venv4/bin/python" -m pip install -q --disable-pip-version-check \
            -e "$repo[test]" >"$log" 2>&1; then
        cat "$log" >&2
        echo "godot4-root: installing the Python environment inside the root failed" >&2
        exit 1
    fi
}

case "${1:-}" in
    ensure) ensure ;;
    run) shift; inside "$@" ;;
    *) echo "usage: $0 ensure | run CMD..." >&2; exit 2 ;;
esac
