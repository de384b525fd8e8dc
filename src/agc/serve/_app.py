"""The HTTP API: a Starlette application over the :class:`~agc.serve._supervisor.Supervisor`.

Routes (JSON in and out; every error is ``{"error": {"code", "message"}}``):

* ``POST /v1/agent/chat``: ``{"message", "conversationId"?, "attachments"?}`` answered
  ``202 {traceId, conversationId}``;
* ``GET /v1/agent/chat/result/<traceId>``: the terminal summary, or ``status: running``
  with ``waitingFor``;
* ``GET /v1/agent/chat/trace/<traceId>``: the trace, paged (``?after=<seq>&limit=<n>``);
* ``POST /v1/agent/chat/cancel/<traceId>``: ask a running turn to stop;
* ``GET /v1/agent/sessions``: the registry; ``GET|DELETE /v1/agent/sessions/<id>``: one
  conversation (``DELETE`` ends its process and forgets it);
* ``GET /healthz``: liveness; ``GET /readyz``: readiness, the preflight (``200`` ready,
  ``503`` blocked).

With a bearer token configured every route but ``/healthz`` and ``/readyz`` needs
``Authorization: Bearer <token>`` (RFC 6750), compared in constant time
(``hmac.compare_digest``); the token itself is never logged or echoed.
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agc._core import json as strict_json
from agc.errors import JsonInvalidError
from agc.serve._supervisor import PROVIDER, ChatRefusedError, Supervisor

__all__ = ["CHAT_PATH", "BearerAuth", "create_app"]

CHAT_PATH: Final = "/v1/agent/chat"
OPEN_PATHS: Final = frozenset({"/healthz", "/readyz"})
_MAX_KEY_CHARS: Final = 200


def _error(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status, headers=headers)


class BearerAuth:
    """ASGI middleware: refuse requests without the bearer token (``401``).

    Args:
        app: the wrapped application.
        token: the expected token (bytes).
        open_paths: paths that need no token (the probes).
    """

    def __init__(
        self, app: ASGIApp, *, token: bytes, open_paths: frozenset[str] = OPEN_PATHS
    ) -> None:
        if not token:
            raise ValueError("an empty bearer token would accept anyone")
        self.app = app
        self._token = token
        self._open = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self._open:
            await self.app(scope, receive, send)
            return
        presented = b""
        for name, value in scope.get("headers") or ():
            if name == b"authorization":
                presented = value
                break
        scheme, _, credentials = presented.partition(b" ")
        ok = scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)
        if ok:
            await self.app(scope, receive, send)
            return
        response = _error(
            401,
            "unauthorized",
            "a valid bearer token is required (Authorization: Bearer …)",
            headers={"WWW-Authenticate": 'Bearer realm="agc serve"'},
        )
        await response(scope, receive, send)


class _BodyGoneError(Exception):
    """The client left (or the server closed it) before its request body was read."""


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The body, or ``None`` past ``limit`` bytes.

    Raises:
        _BodyGoneError: the connection ended first (the server's body deadline closes it).
    """
    data = bytearray()
    try:
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                return None
    except ClientDisconnect as exc:
        raise _BodyGoneError from exc
    return bytes(data)


def create_app(
    supervisor: Supervisor,
    *,
    token: str | None = None,
    lifespan: bool = True,
    on_startup: Callable[[], None] | None = None,
) -> Starlette:
    """The ASGI application.

    Args:
        supervisor: runs the conversations.
        token: the bearer token every non-probe route needs (``None``: none needed).
        lifespan: start and stop the supervisor with the application (ASGI lifespan);
            ``False`` when the caller does it (tests with an in-process transport).
        on_startup: called once the supervisor runs (the server is about to accept).
    """
    body_limit = supervisor.config.max_message_chars * 4 + 64 * 1024

    async def chat(request: Request) -> Response:
        try:
            data = await _read_body(request, body_limit)
        except _BodyGoneError:  # nobody to answer; the answer only ends the request quietly
            return _error(408, "request_timeout", "the request body did not arrive")
        if data is None:
            return _error(413, "body_too_large", f"the request body is over {body_limit} bytes")
        try:
            body = strict_json.loads(data)
        except JsonInvalidError as exc:
            return _error(400, "body_invalid", f"the body is not JSON: {exc.message}"[:300])
        if not isinstance(body, dict):
            return _error(400, "body_invalid", 'the body must be a JSON object {"message": …}')
        key = request.headers.get("idempotency-key")
        if key is not None and not (0 < len(key) <= _MAX_KEY_CHARS and key.isprintable()):
            return _error(
                400, "idempotency_key_invalid", "Idempotency-Key must be 1-200 printable characters"
            )
        try:
            accepted = await supervisor.submit(
                body.get("message"),
                body.get("conversationId"),
                idempotency_key=key,
                attachments=body.get("attachments"),
            )
        except ChatRefusedError as refused:
            headers = (
                {} if refused.retry_after is None else {"Retry-After": str(refused.retry_after)}
            )
            return JSONResponse(refused.body, refused.http_status, headers=headers)
        headers = {"Location": f"{CHAT_PATH}/result/{accepted['traceId']}"}
        return JSONResponse(accepted, 202, headers=headers)

    async def result(request: Request) -> Response:
        trace_id = request.path_params["trace_id"]
        body = supervisor.result(trace_id)
        if body is None:
            return _error(404, "trace_not_found", "no such trace (or it was dropped from memory)")
        return JSONResponse(body)

    async def trace(request: Request) -> Response:
        trace_id = request.path_params["trace_id"]
        try:
            after = int(request.query_params.get("after", "-1"))
            limit = int(request.query_params.get("limit", str(supervisor.config.trace_page_limit)))
        except ValueError:
            return _error(400, "query_invalid", "after and limit must be integers")
        if after < -1 or limit < 1:
            return _error(400, "query_invalid", "after must be >= -1 and limit >= 1")
        body = supervisor.trace_page(trace_id, after=after, limit=limit)
        if body is None:
            return _error(404, "trace_not_found", "no such trace (or it was dropped from memory)")
        return JSONResponse(body)

    async def cancel(request: Request) -> Response:
        body = await supervisor.cancel(request.path_params["trace_id"])
        if body is None:
            return _error(404, "trace_not_found", "no such trace")
        return JSONResponse(body, 202 if body["cancelled"] else 409)

    async def sessions(request: Request) -> Response:
        del request
        return JSONResponse(supervisor.registry())

    async def session(request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        if request.method == "DELETE":
            ended = await supervisor.end_conversation(conversation_id)
            if ended is None:
                return _error(404, "conversation_not_found", "no such conversation")
            return JSONResponse(ended)
        conversation = supervisor.conversations.get(conversation_id)
        if conversation is None:
            return _error(404, "conversation_not_found", "no such conversation")
        return JSONResponse(conversation.to_dict())

    async def healthz(request: Request) -> Response:
        del request
        return JSONResponse(
            {"status": "ok", "provider": PROVIDER, "uptimeMs": supervisor.uptime_ms()}
        )

    async def readyz(request: Request) -> Response:
        del request
        report, body = await supervisor.readiness()
        return JSONResponse(body, 200 if report.ready else 503)

    async def not_found(request: Request, exc: Exception) -> Response:
        del request
        if isinstance(exc, HTTPException) and exc.status_code == 405:
            return _error(405, "method_not_allowed", "this route does not take that method")
        return _error(404, "not_found", "no such route")

    async def internal(request: Request, exc: Exception) -> Response:
        del request, exc  # never echoed: it could quote anything
        return _error(500, "internal_error", "the service hit a bug; the turn's record is kept")

    @contextlib.asynccontextmanager
    async def run(app: Starlette) -> AsyncIterator[None]:
        del app
        if lifespan:
            await supervisor.start()
        if on_startup is not None:
            on_startup()
        try:
            yield
        finally:
            if lifespan:
                await supervisor.stop()

    routes = [
        Route(CHAT_PATH, chat, methods=["POST"]),
        Route(CHAT_PATH + "/result/{trace_id}", result, methods=["GET"]),
        Route(CHAT_PATH + "/trace/{trace_id}", trace, methods=["GET"]),
        Route(CHAT_PATH + "/cancel/{trace_id}", cancel, methods=["POST"]),
        Route("/v1/agent/sessions", sessions, methods=["GET"]),
        Route("/v1/agent/sessions/{conversation_id}", session, methods=["GET", "DELETE"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]
    handlers: dict[Any, Any] = {404: not_found, 405: not_found, 500: internal, Exception: internal}
    app = Starlette(routes=routes, exception_handlers=handlers, lifespan=run)
    if token is not None:
        app.add_middleware(BearerAuth, token=token.encode("utf-8"))
    return app
