"""``godot-mcp-admin token add|list|revoke``."""

from __future__ import annotations

import argparse
import json
import sys

from godot_mcp.cli.common import open_store, store_exists
from godot_mcp.config import Settings
from godot_mcp.store.tokens import add_token, list_tokens, revoke_principal


def token_add(args: argparse.Namespace, settings: Settings) -> int:
    store = open_store(settings, bytes_too=False)
    try:
        token = add_token(store.engine, args.principal)
    finally:
        store.close()
    print(token, flush=True)
    print(f"token for {args.principal} created; it is shown only once", file=sys.stderr)
    return 0


def token_list(args: argparse.Namespace, settings: Settings) -> int:
    if not store_exists(settings):
        print("[]" if args.json else "", end="\n" if args.json else "")
        return 0
    store = open_store(settings, bytes_too=False)
    try:
        tokens = list_tokens(store.engine)
    finally:
        store.close()
    if args.json:
        print(
            json.dumps(
                [
                    {"id": t.id, "principal": t.principal, "created_at": t.created_at.isoformat()}
                    for t in tokens
                ]
            )
        )
    else:
        for t in tokens:
            print(f"{t.principal}\t{t.id}\t{t.created_at.isoformat()}")
    return 0


def token_revoke(args: argparse.Namespace, settings: Settings) -> int:
    if not store_exists(settings):
        print(f"{args.principal}: no tokens", file=sys.stderr)
        return 0
    store = open_store(settings, bytes_too=False)
    try:
        n = revoke_principal(store.engine, args.principal)
    finally:
        store.close()
    print(f"revoked {n} token(s) of {args.principal}", file=sys.stderr)
    return 0
