"""a2a_otel: OpenTelemetry spans for a2a_min, when OpenTelemetry is there.

The optional companion of a2a_min.py. a2a_min never imports OpenTelemetry
itself: a process that configured it (its SDK, or ``opentelemetry-instrument``)
has imported it. A Server makes spans through this module when asked (its Spans is one of
the server's observers, a2a_min.Observer), never
because the process imported OpenTelemetry: ``Server(tracing="opentelemetry")``
with the tracer provider the process set, ``Server(tracing=provider)`` with
that one (a missing a2a_otel.py fails there, at construction);
OTEL_SDK_DISABLED=true turns them off. a2a_client makes a span per call from
such a server's turn, or when ``Client(trace="opentelemetry")`` asks.

The spans, following OpenTelemetry's semantic conventions for HTTP and RPC:

- a SERVER span for each request: ``http.request.method``, ``url.path``,
  ``http.route``, ``http.response.status_code``; a JSON-RPC call adds
  ``rpc.system`` "jsonrpc" and ``rpc.method`` (the A2A method), a gRPC call
  is ``rpc.system`` "grpc", ``rpc.service`` and ``rpc.method``, and an
  HTTP+JSON one names its A2A method in ``a2a.method``. An error answer sets
  ``error.type`` to the A2A error's name, and the span's status to ERROR for
  a server fault (HTTP 5xx, InternalError). The parent is the request's
  ``traceparent``, if it has a valid one (a2a_min reads it: W3C Trace Context).
- an INTERNAL span for each agent turn, under its request's: ``a2a.task.id``,
  ``a2a.context.id`` and, when it ends, ``a2a.task.state``. Its span id is the
  turn's TraceContext.span_id, so what the turn sends on names it as parent.
- a CLIENT span for each webhook POST attempt, under the turn's span
  (``url.full``, ``http.response.status_code``), whose own id goes out in
  its traceparent; and a CLIENT span for each call a2a_client makes
  (``rpc.method``), under the running turn's span or the current one.

What a client chose is bounded before it becomes an attribute or a name:
text it sent (``url.path``, ``a2a.context.id``, ...) is cut to 256
characters, the last one an ellipsis (U+2026) when cut; a path no route
matches names no route (the span is "GET", without ``http.route``), a
method HTTP does not define is "_OTHER"; ``url.full`` of a webhook keeps no
query, fragment or user info, where secrets travel (``?access_token=``).

Which requests are recorded is the sampler's choice, that of the provider
the process set: OpenTelemetry's default, ParentBased, records a request
whose traceparent says sampled (flags 01) whatever ratio its root sampler
has, so a client decides; OTEL_TRACES_SAMPLER=traceidratio (not
parentbased_traceidratio) holds every request to the operator's ratio.
"""

from urllib.parse import urlsplit, urlunsplit

import a2a_min

try:
    from opentelemetry import context as _context
    from opentelemetry import trace as _trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as missing:
    raise ImportError(f"a2a_otel needs OpenTelemetry ({missing}): pip install "
                      "opentelemetry-api opentelemetry-sdk, and configure its SDK") from None

__all__ = ["Spans", "client_span", "traced"]

_SERVICE = "lf.a2a.v1.A2AService"


def _span_context(trace_context):
    """The OpenTelemetry SpanContext of ``trace_context`` (an a2a_min.TraceContext,
    seen from across the wire: its span is ``span_id``)."""
    from opentelemetry.trace import SpanContext, TraceFlags
    from opentelemetry.trace.span import TraceState
    state = TraceState.from_header([trace_context.tracestate]) if trace_context.tracestate \
        else TraceState()
    return SpanContext(int(trace_context.trace_id, 16), int(trace_context.span_id, 16),
                       is_remote=True, trace_flags=TraceFlags(trace_context.flags),
                       trace_state=state)


def _remote(trace_context):
    """An OpenTelemetry context whose span is ``trace_context``, or None."""
    if trace_context is None:
        return None
    return _trace.set_span_in_context(_trace.NonRecordingSpan(_span_context(trace_context)))


def _trace_context(span, parent_id, tracestate=""):
    """The a2a_min.TraceContext of ``span``; None for the invalid span of a
    provider that makes none (the API's own, before an SDK is set)."""
    found = span.get_span_context()
    if not found.is_valid:
        return None
    return a2a_min.TraceContext(f"{found.trace_id:032x}", parent_id, f"{found.span_id:016x}",
                                int(found.trace_flags) & 1, tracestate)


def _route(request, call):
    """http.route: the path's template (section 11.3's routes), a path of the
    server's own (the card's), or None: a path nothing matched is the client's."""
    if call is not None and call.method is not None:
        for verb, template, method in a2a_min.ROUTES:
            if method == call.method and verb == request.method:
                return ("/{tenant}" if call.tenant else "") + template
    return request.path if request.path in _OWN_PATHS else None


_OWN_PATHS = {a2a_min._CARD_PATH, "/", "/metrics"}
_METHODS = {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}
_MAX_TEXT = 256         # characters of a client's text an attribute keeps


def _bounded(text):
    """``text`` (a client's), cut to _MAX_TEXT characters, the last an ellipsis if cut."""
    return text if text is None or len(text) <= _MAX_TEXT else text[:_MAX_TEXT - 1] + "\u2026"


def _without_secrets(url):
    """A webhook's URL for url.full: no user info, query or fragment (where
    tokens travel), bounded."""
    parts = urlsplit(url)
    return _bounded(urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path,
                                "", "")))


class Spans(a2a_min.Observer):
    """A Server's spans: the observer Server(tracing="opentelemetry") adds."""

    def __init__(self, server, provider=None):
        provider = provider or _trace.get_tracer_provider()
        self.tracer = provider.get_tracer("a2a_min", a2a_min.__version__)
        self.rpc_path = server.rpc_path.rstrip("/")

    def _jsonrpc(self, request):
        return request.method == "POST" and request.path.rstrip("/") == self.rpc_path

    # -- a request: a SERVER span, current while the request's own code runs --------

    def request_started(self, request):
        """Start ``request``'s span; the mark is (span, the context token)."""
        parent = _remote(_parsed(request.headers))
        if request.binding == "GRPC":
            method = request.path.rpartition("/")[2]
            span = self.tracer.start_span(f"{_SERVICE}/{method}", context=parent,
                                          kind=SpanKind.SERVER, attributes={
                                              "rpc.system": "grpc", "rpc.service": _SERVICE,
                                              "rpc.method": method})
        else:
            method = request.method if request.method in _METHODS else "_OTHER"
            attributes = {"http.request.method": method, "url.path": _bounded(request.path)}
            if self._jsonrpc(request):
                attributes["rpc.system"] = "jsonrpc"
            span = self.tracer.start_span("HTTP" if method == "_OTHER" else method,
                                          context=parent, kind=SpanKind.SERVER,
                                          attributes=attributes)
        return span, _context.attach(_trace.set_span_in_context(span))

    def request_returned(self, request, mark):
        _context.detach(mark[1])

    def request_answered(self, request, mark):
        """End ``request``'s span with what it was answered."""
        span, call = mark[0], request.call
        if request.binding == "GRPC":
            span.set_attribute("rpc.grpc.status_code", _GRPC_CODES.index(request.status))
            _end(span, request.error, request.status in _GRPC_FAULTS)
            return
        jsonrpc = self._jsonrpc(request)
        route = (self.rpc_path or "/") if jsonrpc else _route(request, call)
        if route is not None:
            span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", request.status)
        if call is not None and call.method is not None:
            span.set_attribute("rpc.method" if jsonrpc else "a2a.method", call.method)
            span.update_name(f"{_SERVICE}/{call.method}" if jsonrpc
                             else f"{request.method} {route}")
        elif route is not None and request.method in _METHODS:
            span.update_name(f"{request.method} {route}")
        _end(span, request.error, request.status >= 500)   # (the class of its error)

    # -- an agent turn: an INTERNAL span under its request's ---------------------------

    def turn_started(self, ctx, call):
        """Start ``ctx``'s turn span (under the current span: its request's) and
        make the turn's TraceContext name it; the mark is the span."""
        parent = _trace.get_current_span().get_span_context()
        span = self.tracer.start_span("a2a.turn", kind=SpanKind.INTERNAL, attributes={
            "a2a.task.id": _bounded(ctx.task_id), "a2a.context.id": _bounded(ctx.context_id)})
        incoming = _parsed(call.headers)
        made = _trace_context(span, f"{parent.span_id:016x}" if parent.is_valid else None,
                              incoming.tracestate if incoming else "")
        if made is not None:
            call.trace = made
        return span

    def turn_ended(self, ctx, state, span):
        if state is not None:
            span.set_attribute("a2a.task.state", state)
        if state == "TASK_STATE_FAILED":
            span.set_status(Status(StatusCode.ERROR, "the task failed"))
        span.end()

    # -- a webhook POST: a CLIENT span under the turn's -------------------------------

    def webhook_started(self, url, headers):
        """Start a delivery attempt's span; its traceparent goes in ``headers``."""
        parent = _remote(_parsed(headers))
        span = self.tracer.start_span("POST", context=parent, kind=SpanKind.CLIENT,
                                      attributes={"http.request.method": "POST",
                                                  "url.full": _without_secrets(url)})
        made = _trace_context(span, None, headers.get("tracestate", ""))
        if made is not None:
            headers.clear()
            headers.update(made.headers())
        return span

    def webhook_ended(self, url, status, failure, span):
        if status is not None:
            span.set_attribute("http.response.status_code", status)
        if failure:
            span.set_attribute("error.type", failure)
            span.set_status(Status(StatusCode.ERROR, failure[:200]))
        span.end()


def _parsed(headers):
    """The span a request's traceparent names (to hang ours under), as an
    a2a_min.TraceContext whose span_id is the caller's; None if it has none."""
    found = a2a_min.TraceContext.from_headers(headers)
    if found.parent_id is None:
        return None
    return a2a_min.TraceContext(found.trace_id, None, found.parent_id, found.flags,
                                found.tracestate)


# gRPC's status codes, by number (rpc.grpc.status_code is the number); a server
# span's status is ERROR for the ones that are the server's fault.
_GRPC_CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
               "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
               "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
               "UNAUTHENTICATED")
_GRPC_FAULTS = {"UNKNOWN", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE",
                "DATA_LOSS"}


def _end(span, error, fault):
    """End a SERVER span; ``error``: the class of the A2AError answered, or None."""
    if error is not None:
        span.set_attribute("error.type", error.__name__)
    if fault:
        span.set_status(Status(StatusCode.ERROR, error.__name__ if error else ""))
    span.end()


def traced(ctx):
    """Has ``ctx`` (an a2a_min.RequestContext, or None) a span of ours: is it
    a turn of a Server(tracing="opentelemetry")? (a2a_client's calls from it
    make spans too.)"""
    return ctx is not None and ctx.marks is not None and \
        any(isinstance(observer, Spans) for observer in ctx.marks)


class client_span:
    """a2a_client's span for one call to ``method``, under ``trace_context``
    (the running turn's TraceContext) or else the current span: ``headers``
    carry its traceparent; end() it, with the error the call raised if any."""

    def __init__(self, method, trace_context):
        tracer = _trace.get_tracer_provider().get_tracer("a2a_client", a2a_min.__version__)
        self.span = tracer.start_span(f"{_SERVICE}/{method}", context=_remote(trace_context),
                                      kind=SpanKind.CLIENT, attributes={"rpc.method": method})
        made = _trace_context(self.span, None,
                              trace_context.tracestate if trace_context else "")
        self.headers = (made or trace_context).headers() if made or trace_context else {}

    def end(self, error=None):
        if error is not None:
            self.span.set_attribute("error.type", type(error).__name__)
            self.span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
        self.span.end()
