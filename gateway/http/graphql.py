"""GraphQL over HTTP (the GraphQL Foundation's spec): which media type answers, and its status.

A client that accepts ``application/graphql-response+json`` gets it, with the status telling a
refused request from an executed one: a *request error* (the document does not parse or
validate, a variable does not coerce, a limit refuses it) answers 400 without a ``data`` entry;
anything that executed answers 200, field errors included. A client that asks only for
``application/json`` (or sends no ``Accept``, or ``*/*``) gets the legacy answer: 200 with
``data: null`` for a request error, as before. A mutation sent with GET answers 405 with
``Allow: POST``. An ``operationName`` the document does not define, or no document at all, is a
request error like any other (strawberry raises them as plain-text HTTP errors).

A body that is not a GraphQL request at all — not JSON, JSON but not an object (a batch of
operations included: batching is off), a ``query`` that is not a string, ``variables`` or
``extensions`` that are not objects, an ``operationName`` that is not a string, a body other
than ``application/json`` in UTF-8 and uncompressed — answers its 4xx status (415 for the
media type, 405 for the method) with a GraphQL error object in the media type ``Accept`` asks
for: ``{"errors": [{"message", "extensions": {"code"}}]}``, the code ``BAD_REQUEST``
(``METHOD_NOT_ALLOWED``, ``NOT_FOUND``); the refusals around this app answer alike
(``coded_error``: a token, ``gateway.http.auth``; a body's size or pace,
``gateway.http.limits``). Over GET an empty ``variables``, ``extensions`` or ``operationName``
parameter is an absent one, as are ``variables`` and ``extensions`` of JSON ``null``.

A request whose client goes away is cancelled (``gateway.http.disconnect``), unless it is a
mutation that began executing (``GraphContext.writing``): that one runs to its end, so a write
is never left half-applied, and is acknowledged, as always, only once it is durable — the agent
control plane, which sends its events fire-and-forget, loses nothing by not hearing the answer.
A mutation whose client left before it began (while it was parsed or validated) is cancelled:
it wrote nothing.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, cast

from cross_web import HTTPException
from graphql import GraphQLError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from strawberry.asgi import GraphQL
from strawberry.exceptions import MissingQueryError
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.types.execution import PreExecutionError

from gateway.http.disconnect import CancelOnDisconnect
from gateway.schema.context import GraphContext

if TYPE_CHECKING:
    from cross_web import AsyncHTTPRequestAdapter
    from starlette.datastructures import Headers
    from starlette.types import Receive, Scope, Send
    from starlette.websockets import WebSocket
    from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
    from strawberry.http.types import QueryParams
    from strawberry.types import ExecutionResult

GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
JSON = "application/json"
# Specificity of a media range: an exact type, ``application/*``, ``*/*``.
_EXACT, _TYPE, _ANY = 2, 1, 0
# Where a request's GraphQL context is kept, in its ``scope["state"]``.
_CONTEXT = "graph_context"
# The ``code`` of a request refused before it was a GraphQL request, by HTTP status.
_HTTP_CODES = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
# GET parameters an empty value leaves out, and those whose value is JSON.
_OPTIONAL = frozenset({"variables", "extensions", "operationName"})
_JSON_PARAMETERS = frozenset({"variables", "extensions"})


class MethodNotAllowed(HTTPException):
    """An operation the HTTP method may not carry (a mutation over GET): 405 with ``Allow``."""

    def __init__(self, reason: str, allow: str = "POST") -> None:
        super().__init__(405, reason)
        self.allow = allow


class _TransportWS(BaseGraphQLTransportWSHandler[GraphContext, None]):
    """graphql-transport-ws as strawberry speaks it, but for a subscription refused while it is
    parsed (a syntax error, a document over the token limit): the refusal is raised by the
    parse hook (``gateway.schema.limits.CachedParse``), which strawberry's stream lets through
    to its task, where the operation would only be completed. It is sent as the protocol's
    ``error`` message instead, as a refusal by validation is."""

    async def _send_result_stream(
        self, operation: Operation[GraphContext, None], result_source: Any
    ) -> None:
        try:
            await super()._send_result_stream(operation, result_source)
        except GraphQLError as error:
            await operation.send_initial_errors([error])


class SpecGraphQL(GraphQL[GraphContext, None]):
    """Strawberry's ASGI app with the media types, status codes and 405 described above, whose
    HTTP requests are cancelled when their client goes away (but a mutation's, once it runs),
    and whose WebSocket subscriptions report a refused document (``_TransportWS``). They speak
    graphql-transport-ws only: a socket asking for the retired ``graphql-ws`` protocol (Apollo's
    subscriptions-transport-ws) alone is closed with 4406, as strawberry closes any protocol
    it is not given."""

    graphql_transport_ws_handler_class = _TransportWS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("subscription_protocols", (GRAPHQL_TRANSPORT_WS_PROTOCOL,))
        super().__init__(*args, **kwargs)
        self._http = CancelOnDisconnect(self._serve_http, may_cancel=_may_cancel)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        await self._http(scope, receive, send)

    async def _serve_http(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope=scope, receive=receive)
        try:
            response = await self.run(request)
        except HTTPException as exc:
            response = http_error_response(exc, accept_of(request.headers))
        await response(scope, receive, send)

    def decode_json(self, data: str | bytes) -> object:
        """A request (an HTTP body, a WebSocket message) is a JSON object (batching is off);
        anything else — JSON nested too deep to decode, a bare ``NaN`` or ``Infinity``, a
        number too large for a double (``1e999``), an integer of more digits than Python
        converts (4,300) — is refused as bad JSON, in words of JSON: HTTP 400, or the
        WebSocket closed with 4400."""
        try:
            value = json.loads(
                data.decode("utf-8-sig") if isinstance(data, bytes) else data,
                parse_constant=_not_json,
                parse_float=_finite,
            )
        except json.JSONDecodeError:
            raise
        except UnicodeDecodeError as exc:
            raise json.JSONDecodeError("not UTF-8 text", "", 0) from exc
        except RecursionError as exc:
            raise json.JSONDecodeError("JSON nested too deeply", "", 0) from exc
        except ValueError as exc:  # an integer too long to convert
            raise json.JSONDecodeError("a JSON number too long", "", 0) from exc
        if not isinstance(value, dict):
            raise json.JSONDecodeError(f"{_json_kind(value)}, not an object", "", 0)
        return value

    def parse_json(self, data: str | bytes) -> Any:
        """A POST's body, saying why it is not a request (``decode_json`` tells it)."""
        try:
            return self.decode_json(data)
        except json.JSONDecodeError as exc:
            array = exc.msg.startswith(ARRAY)
            batch = " (batching is off: one operation a request)" if array else ""
            raise HTTPException(
                400, f"The request body is not a GraphQL request{batch}: {exc.msg}."
            ) from exc

    def parse_query_params(self, params: QueryParams) -> dict[str, Any]:
        """A GET's parameters; an empty ``variables``, ``extensions`` or ``operationName`` is
        absent (a form that left the field blank), and so are ``variables`` and ``extensions``
        of JSON ``null``, as in a POST's body (``null`` is an operation's possible name)."""
        parsed: dict[str, Any] = {}
        for name, value in params.items():
            blank = not value or (name in _JSON_PARAMETERS and value.strip() == "null")
            if blank and name in _OPTIONAL:
                continue
            if name in _JSON_PARAMETERS and value is not None:
                try:
                    parsed[name] = self.decode_json(value)
                except json.JSONDecodeError as exc:
                    raise HTTPException(
                        400,
                        f"The GraphQL operation's `{name}` parameter is not a JSON object: "
                        f"{exc.msg}.",
                    ) from exc
            else:
                parsed[name] = value
        return parsed

    async def parse_http_body(
        self, request: AsyncHTTPRequestAdapter
    ) -> GraphQLRequestData | list[GraphQLRequestData]:
        if request.method == "POST":
            _check_media_type(cast("Headers", request.headers))
        data = await super().parse_http_body(cast("AsyncHTTPRequestAdapter", _JsonRequest(request)))
        if not isinstance(data, list) and not isinstance(data.operation_name, str | None):
            raise HTTPException(
                400,
                "The GraphQL operation's `operationName` must be a string or null, if provided.",
            )
        return data

    async def execute_single(
        self,
        request: Request,
        request_adapter: AsyncHTTPRequestAdapter,
        sub_response: Response,
        context: GraphContext,
        root_value: None,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        request.scope.setdefault("state", {})[_CONTEXT] = context  # for ``_may_cancel``
        try:
            return await super().execute_single(
                request=request,
                request_adapter=request_adapter,
                sub_response=sub_response,
                context=context,
                root_value=root_value,
                request_data=request_data,
            )
        except HTTPException as exc:
            # Only GET has a method to blame; a subscription over POST stays a 400 request error.
            if request.method == "GET" and isinstance(exc.__cause__, InvalidOperationTypeError):
                raise MethodNotAllowed(exc.reason) from exc.__cause__
            if isinstance(exc.__cause__, CannotGetOperationTypeError | MissingQueryError):
                # No operation to run: none named so, none in the document, no document.
                code = "BAD_REQUEST" if isinstance(exc.__cause__, MissingQueryError) else None
                error = GraphQLError(
                    exc.reason, extensions={"code": code or "GRAPHQL_VALIDATION_FAILED"}
                )
                return PreExecutionError(data=None, errors=[error])
            raise

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        sub_response = await super().get_sub_response(request)
        sub_response.media_type = response_media_type(accept_of(request.headers))
        return sub_response

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        response = await super().process_result(request, result)
        media_type = response_media_type(accept_of(request.headers))
        if media_type == GRAPHQL_RESPONSE_JSON and is_request_error(result):
            response.pop("data", None)
        return response

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: Response,
    ) -> Response:
        response = super().create_response(response_data, sub_response)
        if sub_response.media_type == GRAPHQL_RESPONSE_JSON:
            response.headers["content-type"] = f"{GRAPHQL_RESPONSE_JSON}; charset=utf-8"
            if isinstance(response_data, dict) and "data" not in response_data:
                response.status_code = request_error_status(response_data)
        return response


def http_error_response(exc: HTTPException, accept: str | None) -> Response:
    """A request refused before it was a GraphQL request, as a GraphQL error object."""
    headers = {"Allow": exc.allow} if isinstance(exc, MethodNotAllowed) else {}
    if exc.status_code == 405 and not headers:  # strawberry's own, for a method it never serves
        headers = {"Allow": "GET, POST"}
    code = _HTTP_CODES.get(exc.status_code, "BAD_REQUEST")
    return coded_error(exc.status_code, exc.reason, code, accept, headers)


def coded_error(
    status: int, message: str, code: str, accept: str | None, headers: dict[str, str] | None = None
) -> Response:
    """An HTTP error as a GraphQL error object with ``code``, in the media type ``accept``
    asks for (the refusals around the GraphQL app too: a token, a body's size or pace)."""
    body = {"errors": [{"message": message, "extensions": {"code": code}}]}
    response = JSONResponse(body, status_code=status, headers=headers)
    response.headers["content-type"] = f"{response_media_type(accept)}; charset=utf-8"
    return response


def _not_json(token: str) -> object:
    """``NaN``, ``Infinity`` and ``-Infinity``, which Python's json reads but JSON lacks."""
    raise json.JSONDecodeError(f"{token} is not JSON", token, 0)


def _finite(text: str) -> float:
    """A JSON number with a fraction or exponent, refused when no double holds it."""
    value = float(text)
    if math.isinf(value):
        raise json.JSONDecodeError("a JSON number too large", text, 0)
    return value


ARRAY = "a JSON array"


def _json_kind(value: object) -> str:
    """What a decoded JSON value is, in JSON's words."""
    if isinstance(value, list):
        return ARRAY
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, int | float):
        return "a JSON number"
    return "a JSON string" if isinstance(value, str) else "JSON null"


def _check_media_type(headers: Headers) -> None:
    """A POST's body is JSON text in UTF-8, neither compressed nor in another charset (the
    parameters and the names in any case), said by one ``Content-Type``: else 415."""
    types = headers.getlist("content-type")
    media, *parameters = (part.strip() for part in (types[0] if types else "").split(";"))
    charsets = {
        value.strip().strip('"').lower()
        for name, _, value in (parameter.partition("=") for parameter in parameters)
        if name.strip().lower() == "charset"
    }
    # Several Content-Encoding lines are one list (RFC 9110), applied in order.
    codings = ",".join(headers.getlist("content-encoding")).lower().split(",")
    encodings = [coding.strip() for coding in codings if coding.strip() not in ("", "identity")]
    if len(types) > 1:
        refused = f"{len(types)} Content-Type headers"
    elif media.lower() != JSON:
        refused = media or "no media type"
    elif not charsets <= {"utf-8", "utf8"}:
        refused = f"{JSON} in {', '.join(sorted(charsets))}"
    elif encodings:
        refused = f"{JSON} encoded as {', '.join(encodings)}"
    else:
        return
    raise HTTPException(415, f"A GraphQL request is sent as {JSON} in UTF-8, not {refused}.")


class _JsonRequest:
    """A POST whose media type ``_check_media_type`` accepted, as strawberry reads it (it
    compares the media type case-sensitively); everything else is the request's."""

    def __init__(self, request: AsyncHTTPRequestAdapter) -> None:
        self._request = request

    @property
    def content_type(self) -> str | None:
        return JSON if self._request.method == "POST" else self._request.content_type

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)


def _may_cancel(scope: Scope) -> bool:
    """False once the request's mutation began executing (it then runs to its end)."""
    context = scope.get("state", {}).get(_CONTEXT)
    return not (isinstance(context, GraphContext) and context.writing)


def request_error_status(response: GraphQLHTTPResponse) -> int:
    """403 for a read token's mutation, else 400 (a document that never executed)."""
    errors: list[Any] = list(response.get("errors") or [])
    codes = {(error.get("extensions") or {}).get("code") for error in errors}
    return 403 if codes == {"FORBIDDEN"} else 400


def accept_of(headers: Headers) -> str:
    """Every ``Accept`` line of a request as one list (RFC 9110: several lines are one)."""
    return ", ".join(headers.getlist("accept"))


def response_media_type(accept: str | None) -> str:
    """The media type to answer with for an ``Accept`` header.

    The highest quality wins, then the more specific range; asked for both by name at the same
    quality, the newer type wins; matched only by a wildcard (browsers, curl), ``application/json``.
    Nothing acceptable (or no header) falls back to ``application/json``, which the spec requires
    every server to speak.
    """
    best: tuple[float, int, int] = (0.0, -1, 0)
    choice = JSON
    for candidate, preference in ((GRAPHQL_RESPONSE_JSON, 1), (JSON, 0)):
        quality, specificity = _match(accept or "", candidate)
        tie_break = preference if specificity == _EXACT else 1 - preference
        rank = (quality, specificity, tie_break)
        if quality > 0 and rank > best:
            best, choice = rank, candidate
    return choice


def is_request_error(result: ExecutionResult) -> bool:
    """True when the document never executed: parse, validation or variable coercion errors.

    Strawberry marks parse and validation failures as ``PreExecutionError``; graphql-core reports
    a variable that does not coerce as an execution result without data whose errors have no
    ``path`` (a field error always has one).
    """
    if isinstance(result, PreExecutionError):
        return True
    errors = result.errors or []
    return result.data is None and bool(errors) and all(error.path is None for error in errors)


def _match(accept: str, candidate: str) -> tuple[float, int]:
    """Quality and specificity of the most specific range of ``accept`` matching ``candidate``."""
    kind = candidate.split("/", 1)[0]
    found: tuple[int, float] = (-1, 0.0)
    for entry in accept.split(","):
        media, *parameters = (part.strip() for part in entry.split(";"))
        media = media.lower()
        specificity = {candidate: _EXACT, f"{kind}/*": _TYPE, "*/*": _ANY}.get(media)
        if specificity is not None and specificity > found[0]:
            found = (specificity, _quality(parameters))
    return found[1], found[0]


def _quality(parameters: list[str]) -> float:
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            try:
                return min(max(float(value), 0.0), 1.0)
            except ValueError:
                return 0.0
    return 1.0
