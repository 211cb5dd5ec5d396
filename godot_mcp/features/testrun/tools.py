"""``project.test``: the project's own GUT or gdUnit4 tests, run by their own runner."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcp import types

from godot_mcp.engine.process.availability import Availability
from godot_mcp.errors import Failed, GodotMcpError
from godot_mcp.features.testrun import Case
from godot_mcp.features.testrun.service import TestOutcome
from godot_mcp.mcp.budget import cost, fit_text
from godot_mcp.mcp.describe import artifact_dict, resource_link
from godot_mcp.mcp.outcomes import ok, refusal
from godot_mcp.mcp.progress import Status
from godot_mcp.mcp.spec import ARTIFACT, BOOLEAN, CODE, INTEGER, STRING, Arg, Tool, check_paths

if TYPE_CHECKING:
    from godot_mcp.features.services import Call, ServerDeps


MAX_PATHS = 100
MAX_FAILURES = 200


def failure(case: Case) -> dict[str, Any]:
    out: dict[str, Any] = {"suite": case.suite, "test": case.name}
    if case.path is not None:
        out["path"] = case.path
    if case.line is not None:
        out["line"] = case.line
    if case.code is not None:
        out["code"] = case.code
    out["message"] = case.message or ("error" if case.status == "error" else "failed")
    return out


def last_lines(lines: Sequence[str], room: int) -> list[str]:
    """The last of ``lines`` that together cost at most ``room`` bytes in the answer."""
    kept: list[str] = []
    for line in reversed(lines):
        room -= cost(line)
        if room < 0:
            break
        kept.append(line)
    return kept[::-1]


async def project_test(call: Call) -> types.CallToolResult:
    status = Status(call, "starting Godot")
    a = call.args
    budget = call.budget
    try:
        outcome: TestOutcome = await status.around(
            lambda: call.deps.tests.run(
                call.caller,
                call.generation,
                a["paths"],
                a["framework"],
                a["timeout_seconds"],
                status.say,
            )
        )
    except GodotMcpError as exc:  # the runner's last lines, as many as a quarter answer holds
        lines = exc.details.get("log_tail")
        if isinstance(lines, list):
            exc.details["log_tail"] = last_lines(lines, budget.room // 4)
        raise
    tail = last_lines(outcome.log_tail, budget.room // 4)
    report = outcome.report
    counts = {
        "tests": report.tests,
        "passed": report.passed,
        "failed": report.failures,
        "errors": report.errors,
        "skipped": report.skipped,
    }
    await status.ended(
        f"the tests ended: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['errors']} errors, {counts['skipped']} skipped"
    )
    links = [resource_link(outcome.artifact)] if outcome.artifact is not None else []
    shown = artifact_dict(outcome.artifact) if outcome.artifact is not None else None
    if outcome.unreadable is not None:
        unread = Failed(outcome.unreadable)
        result = refusal(unread, framework=outcome.framework, log_tail=tail, report=shown)
        result.content.extend(links)
        return result
    failures = [failure(c) for c in report.cases if c.status in ("failed", "error")]
    more = report.truncated or len(failures) > MAX_FAILURES

    def build(kept: Sequence[Any]) -> types.CallToolResult:
        fields: dict[str, Any] = {}
        if outcome.warnings:
            fields["warnings"] = list(outcome.warnings)
        if outcome.message is not None:
            fields["message"] = outcome.message
        return ok(
            list(links),
            framework=outcome.framework,
            counts=counts,
            failures=list(kept),
            truncated=more or len(kept) < len(failures),
            report=shown,
            log_tail=tail,
            **fields,
        )

    result, _ = budget.fit_list(failures[:MAX_FAILURES], build, shrink=_shorter)
    return result


def _shorter(item: dict[str, Any], room: int) -> dict[str, Any] | None:
    """A failure whose message is cut to fit ``room`` bytes, or None."""
    left = room - cost({**item, "message": ""})
    return {**item, "message": fit_text(item["message"], left)} if left > 0 else None


def availability(deps: ServerDeps) -> Availability:
    return deps.tests.availability()


_COUNTS = {
    "type": "object",
    "properties": {k: INTEGER for k in ("tests", "passed", "failed", "errors", "skipped")},
    "required": ["tests", "passed", "failed", "errors", "skipped"],
    "additionalProperties": False,
}
_FAILURE = {
    "type": "object",
    "properties": {
        "suite": STRING,
        "test": STRING,
        "path": STRING,
        "line": INTEGER,
        "code": CODE,
        "message": STRING,
    },
    "required": ["suite", "test", "message"],
    "additionalProperties": False,
}

TOOLS = [
    Tool(
        "project.test",
        "Run the project's own tests",
        "Run the project's GUT or gdUnit4 tests with the framework's own runner, headless, on a "
        "private copy (the project is not changed; an unchanged project's import is reused). "
        "outcome ok whenever the runner wrote its report, whatever the result: counts are its "
        "test cases; failures each failed or erroring test with its message and, where given, "
        "res:// path, line and code; report, the JUnit XML artifact; log_tail, the runner's last "
        "lines. A crash, no report or outlasting timeout_seconds answers failed or timeout. "
        "Progress follows the run; it can outlast a client's 60 s request timeout. Holds an "
        "export slot.",
        project_test,
        args=(
            Arg(
                "paths",
                "array",
                "res:// test files or folders to run (a folder with its subfolders); default "
                "the framework's own (GUT: the dirs of res://.gutconfig.json; gdUnit4: "
                "res://test)",
                min_items=1,
                max_items=MAX_PATHS,
                schema_extra={"items": {"type": "string", "maxLength": 4096}},
                check=check_paths,
            ),
            Arg(
                "framework",
                "string",
                "which framework's runner: auto (the one the project carries), gut, gdunit4",
                default="auto",
                choices=("auto", "gut", "gdunit4"),
            ),
            Arg(
                "timeout_seconds",
                "integer",
                "seconds the whole run may take, importing the copy included",
                default=300,
                minimum=1,
                maximum=600,
            ),
        ),
        answer={
            "framework": {"enum": ["gut", "gdunit4"]},
            "counts": _COUNTS,
            "failures": {"type": "array", "items": _FAILURE},
            "truncated": BOOLEAN,
            "report": {"anyOf": [ARTIFACT, {"type": "null"}]},
            "log_tail": {"type": "array", "items": STRING},
            "warnings": {"type": "array", "items": STRING},
            "message": STRING,
        },
        required=("framework", "counts", "failures", "truncated", "report", "log_tail"),
        read_only=True,
        idempotent=False,
        availability=availability,
        toolset="test",
    ),
]
