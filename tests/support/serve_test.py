"""``godot-mcp`` with the test-only producer tool added (tests only)."""

from __future__ import annotations

import sys

from godot_mcp.cli.serve import serve_with_tools
from tests.support.producer import PRODUCER

if __name__ == "__main__":
    sys.exit(serve_with_tools(sys.argv[1:], [PRODUCER]))
