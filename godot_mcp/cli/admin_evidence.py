"""``godot-mcp-admin evidence list|purge``: ids, sizes and times only, never paths."""

from __future__ import annotations

import argparse
import json
import sys

from godot_mcp.cli.common import open_store, store_exists
from godot_mcp.config import Settings
from godot_mcp.features.export.recovery import list_evidence, purge_evidence, settle_interrupted


def evidence_list(args: argparse.Namespace, settings: Settings) -> int:
    if not store_exists(settings):
        print("[]" if args.json else "", end="\n" if args.json else "")
        return 0
    store = open_store(settings)
    try:
        settle_interrupted(store)  # exports whose server died count as soon as it is gone
        items = list_evidence(store)
    finally:
        store.close()
    rows = [
        {
            "export_id": e.export_id,
            "preset": e.preset,
            "files": e.files,
            "bytes": e.bytes,
            "interrupted_at": e.interrupted_at.isoformat() if e.interrupted_at else None,
        }
        for e in items
    ]
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            print(
                f"{r['export_id']}\t{r['files']} files\t{r['bytes']} bytes\t"
                f"{r['interrupted_at'] or '-'}\t{r['preset'] or '-'}"
            )
    return 0


def evidence_purge(args: argparse.Namespace, settings: Settings) -> int:
    if not store_exists(settings):
        print(f"godot-mcp-admin: error: no evidence for export {args.export_id}", file=sys.stderr)
        return 1
    store = open_store(settings)
    try:
        gone = purge_evidence(store, args.export_id)
    finally:
        store.close()
    print(
        f"purged evidence of {gone.export_id} ({gone.files} files, {gone.bytes} bytes)",
        file=sys.stderr,
    )
    return 0
