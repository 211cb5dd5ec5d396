"""``resources/list``, ``resources/templates/list`` and ``resources/read``."""

from __future__ import annotations

import base64
import logging
from typing import Any

from mcp import MCPError, types
from mcp.server.context import ServerRequestContext

from godot_mcp.errors import GodotMcpError, InvalidArgument, NotFound
from godot_mcp.mcp.deps import Core, Who, identify
from godot_mcp.mcp.describe import resource_entry
from godot_mcp.mcp.outcomes import list_error, resource_error
from godot_mcp.store.ids import URI_TEMPLATE
from godot_mcp.store.values import Caller, ReadResult

log = logging.getLogger(__name__)
PAGE_SIZE = 50


def caller_of(who: Who, deps: Core) -> Caller:
    """The store caller of ``who`` (observing the project's generation: a store call)."""
    state = deps.store.projects.observe(deps.project)
    return Caller(who.principal, who.session_id, who.launch_id, state.id)


def blob_contents(result: ReadResult) -> types.BlobResourceContents:
    """The one content block of an admitted read."""
    meta = {
        "offset": result.offset,
        "length": result.length,
        "size": result.size,
        "sha256": result.sha256,
    }
    return types.BlobResourceContents(  # `meta` is the field; `_meta` only its wire alias
        uri=result.uri,
        mime_type=result.media_type,
        blob=base64.b64encode(result.data).decode("ascii"),
        meta=meta,  # type: ignore[call-arg]
    )


async def read_artifact(deps: Core, caller: Caller | Who, uri: str) -> ReadResult:
    """Read ``uri`` for ``caller`` (or for ``who``, observing the project first) with the
    transport's refusal mode, on a worker thread: a read may verify a blob in full or wait
    on a database or bucket."""

    def read() -> ReadResult:
        resolved = caller if isinstance(caller, Caller) else caller_of(caller, deps)
        return deps.store.read(resolved, uri)

    return await deps.runtime.blocking(read)


def make_handlers(deps: Core) -> dict[str, Any]:
    """The resource handlers of the low-level server."""

    async def on_list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params else None
        try:
            who = identify(ctx, deps)  # on the loop: the request's token is a context variable
        except NotFound:
            who = None  # no MCP session to bind to: nothing is the caller's
        try:  # off the loop: a shared store's listing is a database query and a HEAD a row
            page = (
                None
                if who is None
                else await deps.runtime.blocking(
                    lambda: deps.store.list(caller_of(who, deps), cursor, PAGE_SIZE)
                )
            )
        except InvalidArgument:
            raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor") from None
        except GodotMcpError as exc:
            # An empty list would say "you have nothing": the store could not say at all.
            raise list_error(exc) from None
        except Exception:
            log.exception("resources/list failed")
            raise MCPError(code=types.INTERNAL_ERROR, message="Internal error") from None
        return types.ListResourcesResult(
            resources=[resource_entry(i) for i in page.items] if page else [],
            next_cursor=page.next_cursor if page else None,
            ttl_ms=0,
            cache_scope="private",
        )

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=URI_TEMPLATE,
                    name="artifact",
                    title="godot-mcp artifact",
                    description=(
                        "A screenshot, recording or export output. Read a larger artifact in "
                        f"byte ranges of at most {deps.limits.max_output_bytes} bytes."
                    ),
                )
            ],
            ttl_ms=0,
            cache_scope="private",
        )

    async def on_read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = params.uri
        try:
            result = await read_artifact(deps, identify(ctx, deps), uri)
        except GodotMcpError as exc:
            raise resource_error(uri, deps.disclosure.cause(exc)) from None
        except Exception:
            log.exception("resources/read failed")
            raise resource_error(uri, None) from None
        return types.ReadResourceResult(
            contents=[blob_contents(result)], ttl_ms=0, cache_scope="private"
        )

    return {
        "on_list_resources": on_list_resources,
        "on_list_resource_templates": on_list_resource_templates,
        "on_read_resource": on_read_resource,
    }
