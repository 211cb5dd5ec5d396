#!/usr/bin/env bash
# The main job: set up (see setup.sh), then run the demo end to end on examples/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
exec .venv/bin/python tools/demo.py "$@"
