"""a2a_metrics: what an operator watches of an a2a_min Server: Prometheus
metrics at GET /metrics, and the access log.

The optional companion of a2a_min.py, standard library only. It is imported
only when asked for::

    server = a2a_min.Server(agent, metrics=True)     # python a2a_min.py --metrics (a2a_cli)
    a2a_min.serve(server, port=8000)                 # curl localhost:8000/metrics

What it counts. Every A2A request, on every binding (JSON-RPC, HTTP+JSON, and
gRPC through a2a_grpc): a counter by method, binding and outcome ("ok", or
the A2A error's name: TaskNotFoundError, ...) and a latency histogram by
method and binding (for a stream, the time to its answer's head). At each
scrape it reads the rest from Server.stats(): live tasks, the streams that
follow a task (SubscribeToTask), the store's tasks and bytes, requests refused
by each limit, webhook deliveries by outcome, agent threads, and each host's
connections and threads. Names follow Prometheus' conventions (the unit as a
suffix, ``_total`` for a counter) in its text exposition format, version 0.0.4.

Who may read it. GET /metrics on the server's own port goes through the
server's authentication hook like any call (a scraper sends the same
credentials); serve_metrics() serves it on a separate address instead,
without authentication (a port only the scraper's network reaches), and the
server's own port then no longer has it: bounded in connections, and
answering only the Host names it should, as the server's own port does.

The access log (Server(access_log=True), or "json"; --access-log): a line
per request answered, on the "a2a_min.access" logger at INFO.
"""

import socket
import sys
import threading

import a2a_min
# The second tier (a2a_min.COMPANION_API): the log, JSON as the server writes it, traceparent.
from a2a_min import _dumps, _log, _parse_traceparent

__all__ = ["Metrics", "AccessLog", "serve_metrics", "BUCKETS"]

# Seconds: from a cached GetTask (well under a millisecond) to a slow agent's turn.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
           10.0)

# The gauges and counters read from Server.stats() at each scrape:
# (name, type, help, how to read it from the stats dict: [(labels, value)]).
_FROM_STATS = (
    ("a2a_build_info", "gauge", "This server: its a2a_min version and the A2A version it speaks.",
     lambda s: [((("version", a2a_min.__version__),
                  ("protocol_version", a2a_min.PROTOCOL_VERSION)), 1)]),
    ("a2a_live_tasks", "gauge", "Tasks this process holds open: running, or followed by a stream.",
     lambda s: [((), s["live_tasks"])]),
    ("a2a_task_subscribers", "gauge", "SubscribeToTask streams open now.",
     lambda s: [((), s["subscribers"])]),
    ("a2a_store_tasks", "gauge", "Tasks in the task store.",
     lambda s: [((), s["store"].get("tasks", 0))]),
    ("a2a_store_bytes", "gauge", "Bytes of tasks in the task store.",
     lambda s: [((), s["store"].get("bytes", 0))]),
    ("a2a_agent_threads", "gauge", "Worker threads running sync agents.",
     lambda s: [((), s["agent_threads"])]),
    ("a2a_refusals_total", "counter", "Requests refused by a limit, by the limit's name.",
     lambda s: [((("limit", limit),), n) for limit, n in sorted(s["refused"].items())]),
    ("a2a_push_deliveries_total", "counter", "Webhook deliveries, by outcome.",
     lambda s: [((("outcome", what),), s["push"][what]) for what in
                ("delivered", "failed", "retried", "refused", "dropped", "paused")]),
    ("a2a_host_connections", "gauge", "Connections open on each host.",
     lambda s: [((("host", host),), g["connections"]) for host, g in sorted(s["hosts"].items())
                if "connections" in g]),
    ("a2a_host_threads", "gauge", "Threads of each host.",
     lambda s: [((("host", host),), g["threads"]) for host, g in sorted(s["hosts"].items())
                if "threads" in g]),
)


def _labels(pairs):
    """``{name="value",...}``, values escaped as the text format says (backslash,
    double quote, line feed)."""
    if not pairs:
        return ""
    return "{" + ",".join(
        '%s="%s"' % (name, str(value).replace("\\", "\\\\").replace('"', '\\"')
                     .replace("\n", "\\n")) for name, value in pairs) + "}"


def _number(value):
    if value == float("inf"):
        return "+Inf"
    return repr(float(value)) if isinstance(value, float) else str(int(value))


class Metrics(a2a_min.Observer):
    """What a Server counts for GET /metrics (Server(metrics=True) makes one,
    the observer of every request answered on any binding). ``here``: served
    on the server's own port (False once serve_metrics() serves it apart)."""

    MEDIA_TYPE = "text/plain; version=0.0.4; charset=utf-8"

    def __init__(self, server, buckets=BUCKETS):
        self.server, self.buckets = server, tuple(sorted(buckets))
        self.lock = threading.Lock()
        self.requests = {}          # (method, binding, outcome) -> count
        self.durations = {}         # (method, binding) -> [count per bucket..., sum, count]
        self.here = True

    def request_answered(self, request, mark):
        """An A2A request answered (an Observer's event): counted by method,
        binding and outcome."""
        call = request.call
        if call is not None and call.method is not None:
            self.observe(call.method, request.binding, request.error, request.seconds)

    def observe(self, method, binding, error, seconds):
        """One request answered: its A2A ``method``, ``binding``, the class of
        the A2AError it was answered with (None: it succeeded), and how long it took."""
        outcome = "ok" if error is None else error.__name__
        with self.lock:
            key = (method, binding, outcome)
            self.requests[key] = self.requests.get(key, 0) + 1
            row = self.durations.get((method, binding))
            if row is None:
                row = self.durations[(method, binding)] = [0] * len(self.buckets) + [0.0, 0]
            for i, bound in enumerate(self.buckets):
                if seconds <= bound:
                    row[i] += 1                  # (each bucket counts those at or under it)
            row[-2] += seconds
            row[-1] += 1

    def response(self, request):
        """The answer to GET /metrics on the server's own port (a2a_min
        routes it here), for whoever the authentication hook lets in."""
        server = self.server
        if request.method not in ("GET", "HEAD"):
            refused = server.error_response(request.path, 405, a2a_min.UnsupportedOperationError(
                f"{request.method} is not allowed on {request.path}; use GET"))
            refused.headers.append(("Allow", "GET"))
            return refused
        if server.authenticate is not None:
            try:
                server.authenticate(a2a_min.CallContext(request.headers, peer=request.peer,
                                                        tracing=False))
            except a2a_min.A2AError as error:
                return server.error_response(request.path, error.http_status, error)
        return a2a_min.Response(200, [("Content-Type", self.MEDIA_TYPE)], self.render())

    def render(self):
        """The metrics in the Prometheus text format, as bytes."""
        stats = self.server.stats()
        with self.lock:
            requests = sorted(self.requests.items())
            durations = sorted((key, list(row)) for key, row in self.durations.items())
        out = ["# HELP a2a_requests_total A2A requests answered, by method, binding and outcome.",
               "# TYPE a2a_requests_total counter"]
        out += ["a2a_requests_total%s %d" % (_labels(
            (("method", m), ("binding", b), ("outcome", o))), n) for (m, b, o), n in requests]
        out += ["# HELP a2a_request_duration_seconds Time to answer an A2A request (a stream: "
                "to its head), by method and binding.",
                "# TYPE a2a_request_duration_seconds histogram"]
        for (method, binding), row in durations:
            labels = (("method", method), ("binding", binding))
            for bound, count in zip(self.buckets + (float("inf"),), row[:-2] + [row[-1]]):
                out.append("a2a_request_duration_seconds_bucket%s %d" % (
                    _labels(labels + (("le", _number(bound)),)), count))
            out.append("a2a_request_duration_seconds_sum%s %s" % (_labels(labels), repr(row[-2])))
            out.append("a2a_request_duration_seconds_count%s %d" % (_labels(labels), row[-1]))
        for name, kind, text, read in _FROM_STATS:
            out += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
            out += [f"{name}{_labels(labels)} {_number(value)}" for labels, value in read(stats)]
        return ("\n".join(out) + "\n").encode()


def serve_metrics(server, host="127.0.0.1", port=9464, *, allowed_hosts=(),
                  max_connections=16, timeout=10.0):
    """Serve ``server``'s GET /metrics on ``host``:``port``, on a thread of its
    own, without authentication; the server's own port stops serving it.
    Returns the http.server (``shutdown()`` it to stop).

    It answers the Host names the server answers to, ``host`` itself and
    ``allowed_hosts`` ("*": any); another name gets 421, for a page of another
    site can point a name it owns at this address (DNS rebinding). At most
    ``max_connections`` at once, each a thread (one more is answered 503 and
    closed), and a request must arrive whole within ``timeout`` seconds (a
    client that trickles a byte at a time is cut there, not kept by each byte)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    metrics = server.metrics
    if metrics is None:
        raise ValueError("serve_metrics needs Server(metrics=True)")
    names = {_name(name) for name in (host, *allowed_hosts)}
    any_address = host in ("", "0.0.0.0", "::")
    slots = threading.BoundedSemaphore(max_connections)

    class Handler(BaseHTTPRequestHandler):
        def handle(self):
            cut = threading.Timer(timeout, self.cut)   # (the whole request, not each byte)
            cut.daemon = True
            cut.start()
            try:
                super().handle()
            finally:
                cut.cancel()

        def cut(self):
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def do_GET(self):
            said = self.headers.get("Host")
            name = _name(said or "")
            if said is None and self.request_version == "HTTP/1.1" or \
                    len(self.headers.get_all("Host") or ()) > 1:
                self.send_error(400, "an HTTP/1.1 request names one Host (RFC 9112 3.2)")
                return
            if said is not None and not (name in names or "*" in names or any_address and (
                    name[:1] == "[" or not name.strip("0123456789.")) or
                    a2a_min._answers_to(server, said)):
                found, status = False, 421
                body = (f"this listener does not answer to Host {said[:80]!r}: name it in "
                        "serve_metrics(allowed_hosts=...) or --allow-host\n").encode()
            else:
                found = self.path.partition("?")[0] == "/metrics"
                status, body = (200, metrics.render()) if found else \
                    (404, b"only /metrics is served here\n")
            self.send_response(status)
            self.send_header("Content-Type", metrics.MEDIA_TYPE if found else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    Handler.timeout = timeout               # (the connection's socket: idle, it is closed)

    class Listener(ThreadingHTTPServer):
        daemon_threads = True

        def process_request(self, request, client_address):
            if not slots.acquire(blocking=False):       # (max_connections open: no thread)
                try:
                    request.send(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                 b"Connection: close\r\n\r\n")
                except OSError:
                    pass
                self.shutdown_request(request)
                return
            try:
                super().process_request(request, client_address)
            except BaseException:
                slots.release()
                raise

        def handle_error(self, request, client_address):
            if not isinstance(sys.exc_info()[1], OSError):   # (a client cut or gone: quiet)
                super().handle_error(request, client_address)

        def process_request_thread(self, request, client_address):
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                slots.release()                 # (before the close the client sees)
                self.shutdown_request(request)

    httpd = Listener((host, port), Handler)
    metrics.here = False
    threading.Thread(target=httpd.serve_forever, name="a2a-metrics", daemon=True).start()
    return httpd


def _name(host):
    """The name of a Host header (or an address), lower case, without its port."""
    host = host.strip().lower()
    if host.startswith("[") or host.count(":") > 1:     # an IPv6 address, [::1]:9464 or ::1
        return "[" + host.strip("[").partition("]")[0] + "]"
    return host.partition(":")[0]


class AccessLog(a2a_min.Observer):
    """Server(access_log=...): a line per request answered, to the
    "a2a_min.access" logger: text, or (``form`` "json") one JSON object: time,
    client, method, path without its query, the A2A method, status, bytes,
    milliseconds, trace, task and principal; never a credential. A text line
    names the trace of a request that came with a traceparent."""

    def __init__(self, server, form):
        self.server, self.json = server, form == "json"

    def request_answered(self, request, mark):
        call, ms, size = request.call, request.seconds * 1000, request.size
        if call is not None:
            shown = self.json or "traceparent" in call.headers
            trace = shown and call.trace and call.trace.trace_id
        else:                                  # (refused before it was a call)
            found = self.server.tracing and _parse_traceparent(
                request.headers.get("traceparent", ""))
            trace = found and found[0]
        if self.json:
            line = _dumps({
                "time": self.server.live.now(), "client": str(request.peer or "") or None,
                "method": request.method, "path": request.path,
                "a2a_method": call and call.method, "status": request.status, "bytes": size,
                "stream": request.stream, "ms": round(ms, 2),
                "trace_id": trace or None, "task_id": call and call.task_id,
                "principal": None if call is None or call.principal is None
                else str(call.principal),
            }).decode()
        else:
            line = (f"{request.peer or '-'} \"{request.method} {request.path}"
                    f"{'?' if request.query else ''}{request.query}\" {request.status} "
                    f"{'-' if size is None else size} {ms:.1f}ms"
                    f"{' (a stream)' if request.stream else ''}"
                    f"{' trace=' + trace if trace else ''}")
        _log().getChild("access").info("%s", line)
