#!/usr/bin/env bash
# The fast lane a developer runs between edits: every test that needs no real engine and
# starts no real server process (pytest -m "not godot and not slow"), under coverage of the
# package (the processes the tests start included). Prints its time and fails when less than
# 88% of the package's lines ran. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -f .coverage .coverage.*
start=$(date +%s)
.venv/bin/python -m coverage run -m pytest -m "not godot and not slow" -q -p no:cacheprovider "$@"
took=$(($(date +%s) - start))
.venv/bin/python -m coverage combine -q
echo "fast lane: ${took} s under coverage"
.venv/bin/python -m coverage report --fail-under=88 | grep "^TOTAL"
