#!/usr/bin/env bash
# Set up (see setup.sh), lint, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
.venv/bin/ruff check godot_mcp schema tests tools
.venv/bin/mypy godot_mcp
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
    echo "test: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
