"""``godot-mcp-admin``: offline maintenance of a state dir.

Parses and prints only; the work is done by library functions. Nothing printed
names where bytes live.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from sqlalchemy.exc import SQLAlchemyError

from godot_mcp.cli import admin_evidence, admin_tokens
from godot_mcp.cli.common import (
    failed,
    open_store,
    print_report,
    store_exists,
)
from godot_mcp.config import OneLineParser, Settings, add_common_options, resolve
from godot_mcp.errors import GodotMcpError
from godot_mcp.features.api.service import sweep_dead_dumps
from godot_mcp.features.export.recovery import evidence_counts, settle_interrupted
from godot_mcp.runtime.scratch import sweep_dead_scratch
from godot_mcp.store.ids import is_valid_id
from godot_mcp.store.reconcile import ReconcileReport, StatusReport, reconcile, status

PROG = "godot-mcp-admin"
Handler = Callable[[argparse.Namespace, Settings], int]


def _reconcile(args: argparse.Namespace, settings: Settings) -> int:
    if not store_exists(settings):
        print_report(
            ReconcileReport(
                budget_bytes=settings.limits.store_budget_bytes,
                extra={
                    "exports_interrupted": 0,
                    "dead_scratch_removed": 0,
                    "dead_api_dumps_removed": 0,
                },
            ).as_dict(),
            args.json,
        )
        return 0
    store = open_store(settings)
    try:
        report = reconcile(store)
        report.extra.update(settle_interrupted(store))
        report.extra["dead_scratch_removed"] = sweep_dead_scratch(store)
        report.extra["dead_api_dumps_removed"] = sweep_dead_dumps(store)
    finally:
        store.close()
    print_report(report.as_dict(), args.json)
    return 0


def _status(args: argparse.Namespace, settings: Settings) -> int:
    if not store_exists(settings):
        print_report(
            StatusReport(
                budget_bytes=settings.limits.store_budget_bytes,
                extra={"evidence_exports": 0, "evidence_bytes": 0},
            ).as_dict(),
            args.json,
        )
        return 0
    store = open_store(settings, bytes_too=False)
    try:
        settle_interrupted(store)  # an export whose server died is pending evidence already
        report = status(store)
        report.extra.update(evidence_counts(store))
    finally:
        store.close()
    print_report(report.as_dict(), args.json)
    return 0


_HANDLERS: dict[str, Handler] = {
    "reconcile": _reconcile,
    "status": _status,
    "token add": admin_tokens.token_add,
    "token list": admin_tokens.token_list,
    "token revoke": admin_tokens.token_revoke,
    "evidence list": admin_evidence.evidence_list,
    "evidence purge": admin_evidence.evidence_purge,
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``godot-mcp-admin``."""
    parser = OneLineParser(prog=PROG, description="Maintain a godot-mcp state dir.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name, help_text in (
        ("reconcile", "re-verify the store; drop expired, missing and mismatched artifacts"),
        ("status", "budget in use, artifact counts, pending evidence"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        add_common_options(p)
    token = sub.add_parser("token", help="HTTP credentials")
    tsub = token.add_subparsers(dest="token_command", required=True, parser_class=OneLineParser)
    for name in ("add", "revoke"):
        p = tsub.add_parser(name)
        p.add_argument("principal")
        add_common_options(p)
    p = tsub.add_parser("list")
    p.add_argument("--json", action="store_true")
    add_common_options(p)
    evidence = sub.add_parser("evidence", help="recovery evidence of interrupted exports")
    esub = evidence.add_subparsers(
        dest="evidence_command", required=True, parser_class=OneLineParser
    )
    p = esub.add_parser("list")
    p.add_argument("--json", action="store_true")
    add_common_options(p)
    p = esub.add_parser("purge")
    p.add_argument("export_id")
    add_common_options(p)
    return parser


def _dash_ids_last(argv: Sequence[str]) -> list[str]:
    """An export id may begin with ``-`` (ids are URL-safe base64): after ``purge`` it is
    moved behind ``--`` so that it is not read as an option."""
    out = list(argv)
    for i, word in enumerate(out[:-1]):
        nxt = out[i + 1]
        if word == "purge" and nxt.startswith("-") and is_valid_id(nxt):
            return out[: i + 1] + out[i + 2 :] + ["--", nxt]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``godot-mcp-admin``."""
    args = build_parser().parse_args(_dash_ids_last(sys.argv[1:] if argv is None else argv))
    name = args.command
    sub = getattr(args, "token_command", None) or getattr(args, "evidence_command", None)
    if sub:
        name = f"{name} {sub}"
    try:
        settings = resolve(args)
        return _HANDLERS[name](args, settings)
    except (GodotMcpError, SQLAlchemyError, OSError) as exc:
        return failed(PROG, exc)


if __name__ == "__main__":
    sys.exit(main())
