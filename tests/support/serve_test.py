"""``godot-mcp`` with the test-only producer tool added (tests only)."""

from __future__ import annotations

import sys

from godot_mcp.cli.serve import main
from tests.support.producer import PRODUCER

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], extra_tools=[PRODUCER]))
