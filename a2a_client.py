"""a2a_client: the caller's side of A2A 1.0, and a command line that shows the wire.

The companion of a2a_min.py for calling agents, standard library only. Why a
companion: a person reading a2a_min.py learns how a request is answered, and
the server answers every request without this module, so by the rule of
STYLE.md the caller's side lives beside it, like a2a_grpc.py. It imports
a2a_min for the protocol's tables (METHODS, ROUTES) and its errors: one error
table, read in both directions, so a client catches the very classes an agent
raises (TaskNotFoundError, ...).

Quick start::

    import a2a_client

    agent = a2a_client.Client("http://127.0.0.1:8000")   # reads the agent card
    answer = agent.send("hello")                          # SendMessage
    print(answer["task"]["status"]["state"])
    for event in agent.stream("hello"):                   # SendStreamingMessage
        print(event)

or from a shell (``python a2a_min.py VERB`` runs the same)::

    python a2a_client.py send http://127.0.0.1:8000 hello --curl

How it works.

1. The agent card (section 8): fetched from /.well-known/agent-card.json of
   the URL given (or the card URL itself, or a card dict), and one of its
   ``supportedInterfaces`` chosen: the first, in the agent's order of
   preference (or the caller's, with ``binding=``), whose protocolBinding this
   client speaks and whose protocolVersion is 1.x. An interface that names
   0.0.0.0, or localhost when the card came from another host, is taken to
   mean the host the card came from (a server behind a proxy often does not
   know its public name).
2. A call: the operation's JSON-RPC name and its params (ProtoJSON, as in the
   proto), sent over the chosen binding: a JSON-RPC request to the interface
   URL, or the HTTP+JSON route of a2a_min.ROUTES with the path variables
   filled and, for GET and DELETE, the other fields in the query string.
   Every request carries A2A-Version (section 3.2.6), A2A-Extensions when the
   caller announces extensions, and the credentials (see ``auth``).
3. Answers: the HTTP status and content type are checked before anything is
   parsed, so a proxy's HTML page or a 502 is reported as what it is; an A2A
   error (JSON-RPC error object, or google.rpc.Status) is raised as its
   a2a_min class, found by the ErrorInfo reason, else by the code.
4. Streams (SendStreamingMessage, SubscribeToTask) are iterators of
   StreamResponse dicts, parsed by the SSE rules (WHATWG: comments, multi-line
   data, ``id``, ``retry``). The stream remembers the last event id; when the
   connection drops before the task reached a state that ends a stream, it
   subscribes to the task again with Last-Event-ID (the server replays what
   was missed), a few times. A task that ended meanwhile is read with GetTask
   and given as the stream's last event.

Limits, all keyword arguments of Client: ``timeout`` (seconds to connect, and
between two bytes of an answer: a stream's keep-alives count), the size of an
answer (``max_answer_bytes``) and of one stream event (``max_event_bytes``),
``resume`` (reconnects of one stream), ``max_redirects`` (same host only: a
redirect elsewhere would take the credentials with it).

MIT License. Copyright (c) 2026 the a2a_min authors.
"""

__all__ = ["Client", "Stream", "ClientError", "fetch_card", "choose_interface", "error_from",
           "tls_context", "check", "main"]

import http.client
import io
import json
import os
import socket
import sys
import time
from urllib.parse import quote, urlencode, urljoin, urlsplit

if sys.version_info < (3, 10) and __name__ == "__main__":     # (one line, not a traceback)
    sys.exit(f"a2a_client needs Python 3.10 or newer; this is Python "
             f"{'.'.join(map(str, sys.version_info[:3]))} ({sys.executable})")

import a2a_min
from a2a_min import A2AError, METHODS, PROTOCOL_VERSION, ROUTES

CARD_PATH = "/.well-known/agent-card.json"
_OLD_CARD_PATH = "/.well-known/agent.json"         # where A2A 0.2 and some 0.3 agents keep it
_BINDINGS = ("JSONRPC", "HTTP+JSON", "GRPC")
_STREAM_ENDS = a2a_min.TERMINAL_STATES | a2a_min.INTERRUPTED_STATES

DEFAULT_LIMITS = {
    "timeout": 30.0,                   # seconds to connect, and between two bytes of an answer
    "max_answer_bytes": 64 << 20,      # bytes of one answer (not a stream)
    "max_event_bytes": 16 << 20,       # bytes of one stream event
    "resume": 3,                       # times one stream reconnects after a dropped connection
    "max_redirects": 3,                # redirects followed, to the same host only
}


# -- errors: one table, both directions ----------------------------------------------

class ClientError(A2AError):
    """The call did not reach an A2A answer: the agent could not be reached,
    answered something that is not A2A (an HTML page, a proxy's 502), cut a
    stream, or took longer than the timeout. ``status`` is the HTTP status,
    if there was one. The message says what happened and what to try."""
    code, grpc_status, http_status, reason = -32603, "UNAVAILABLE", 502, "CLIENT_ERROR"

    def __init__(self, message, *, status=None, **kw):
        super().__init__(message, **kw)
        self.status = status


def _error_tables():
    """reason -> class and JSON-RPC code -> class, from a2a_min's hierarchy:
    breadth first, so a class wins over its subclasses that share its reason
    or code (ConflictError is UnsupportedOperationError on the wire)."""
    by_reason, by_code, todo = {}, {}, list(A2AError.__subclasses__())
    while todo:
        cls = todo.pop(0)
        todo += cls.__subclasses__()
        if cls is not ClientError:
            by_reason.setdefault(cls.reason, cls)
            by_code.setdefault(cls.code, cls)
    return by_reason, by_code


def error_from(code, message, details=(), *, http_status=None, retry_after=None):
    """The a2a_min error for an error on the wire: a JSON-RPC error object's
    code, message and data, or a google.rpc.Status's (code: the HTTP status).
    The ErrorInfo reason decides; the JSON-RPC code, then the HTTP status, if
    there is none."""
    by_reason, by_code = _error_tables()
    reason, metadata, field = None, {}, None
    for detail in details if isinstance(details, list) else ():
        if not isinstance(detail, dict):
            continue
        kind = str(detail.get("@type", ""))
        if kind.endswith("google.rpc.ErrorInfo") and reason is None:
            reason, metadata = detail.get("reason"), detail.get("metadata") or {}
        elif kind.endswith("google.rpc.BadRequest"):
            for violation in detail.get("fieldViolations") or ():
                field = field or violation.get("field")
    cls = by_reason.get(reason) or by_code.get(code)
    if cls is None and http_status is not None:
        cls = {400: a2a_min.InvalidParamsError, 401: a2a_min.AuthenticationRequiredError,
               404: a2a_min.TaskNotFoundError, 413: a2a_min.PayloadTooLargeError,
               429: a2a_min.CallerLimitError, 503: a2a_min.ServerBusyError}.get(http_status)
    error = (cls or A2AError)(str(message or "the agent answered an error"), field=field,
                             metadata=metadata if isinstance(metadata, dict) else {})
    if retry_after is not None:
        error.retry_after = retry_after
    return error


def _snippet(body):
    text = body[:200].decode("utf-8", "replace")
    text = " ".join(text.split())
    return f": {text[:120]!r}" if text else ""


# -- the agent card and the interface (section 8) ----------------------------------------

def _card_url(url):
    """The card's URL for what a user typed: a card URL as it is, else the
    well-known path under the agent's base URL."""
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.path.endswith(".json"):
        return url
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}{CARD_PATH}"


def fetch_card(url, *, timeout=DEFAULT_LIMITS["timeout"], headers=None, on_request=None,
               _http=None):
    """The agent card at ``url`` (a base URL or the card's own URL) and the
    URL it came from. An agent that keeps it only at the 0.2 path
    (/.well-known/agent.json) is read there too."""
    card_url = _card_url(url)
    http = _http or _Connections(timeout)
    tries = [card_url]
    if card_url.endswith(CARD_PATH):
        tries.append(card_url[:-len(CARD_PATH)] + _OLD_CARD_PATH)
    for attempt, where in enumerate(tries):
        status, head, body = http.request("GET", where, None, dict(headers or {}),
                                          on_request=on_request)
        if status == 404 and attempt + 1 < len(tries):
            continue
        if status == 404:
            also = f" (nor at the 0.2 path {where})" if where != card_url else ""
            raise ClientError(f"no agent card at {card_url} (HTTP 404){also}: check the agent's "
                              "URL (the card is at /.well-known/agent-card.json of its base URL)",
                              status=status)
        if status != 200:
            raise ClientError(f"{where} answered HTTP {status}, not an agent card{_snippet(body)}: "
                              "check the agent's URL (the card is at /.well-known/agent-card.json "
                              "of its base URL)", status=status)
        card = _json_body(where, status, head, body)
        if not isinstance(card, dict):
            raise ClientError(f"{where} answered JSON that is not an agent card (an object)")
        return card, where


def verify(card, keys, allow_stripped=False):
    """What verified the card's signature ({"kid", "alg", "payload", "card"}),
    with keys the caller trusts; ClientError saying why if none holds."""
    try:
        import a2a_signing
    except ImportError:
        raise ClientError("verifying a card's signature needs the companion a2a_signing.py "
                          "beside a2a_client.py (a checkout has it)") from None
    try:
        return a2a_signing.verify_card(card, keys, allow_stripped=allow_stripped)
    except a2a_signing.CardSignatureError as error:
        raise ClientError(f"the agent card's signature does not verify: {error}") from None


def _is_local(host):
    return host in ("localhost", "0.0.0.0", "::", "::1", "") or host.startswith("127.")


def _fix_url(url, card_url):
    """An interface URL as this client must dial it: relative ones joined to
    the card's URL; 0.0.0.0 or ::, or a loopback name in a card that came from
    another host, replaced by the card's host (and its port, if none)."""
    if "://" not in url:
        head = url.split("/", 1)[0]
        if head and head.rpartition(":")[2].isdigit():      # host:port (gRPC's form)
            url = "grpc://" + url
        elif card_url is not None:
            url = urljoin(card_url, url)
    if card_url is None:
        return url
    got, card = urlsplit(url), urlsplit(card_url)
    host = got.hostname or ""
    if host in ("0.0.0.0", "::") or (_is_local(host) and not _is_local(card.hostname or "")):
        if got.scheme in ("http", "https"):     # the origin the card came from (a proxy's)
            url = got._replace(scheme=card.scheme, netloc=card.netloc).geturl()
        else:                                   # gRPC: that host, the interface's port
            netloc = card.hostname if ":" not in (card.hostname or "") else f"[{card.hostname}]"
            url = got._replace(netloc=netloc + (f":{got.port}" if got.port else "")).geturl()
    return url


def _major(version):
    return str(version or "").split(".")[0]


def choose_interface(card, card_url=None, bindings=None):
    """The interface to call (a dict: url, protocolBinding, protocolVersion,
    tenant), by the card's order of preference, or ``bindings``' (a list of
    protocolBinding names) when given. Interfaces this client cannot speak are
    passed over; none left is a ClientError that lists what the card offers."""
    interfaces = card.get("supportedInterfaces")
    try:
        return _choose(card, card_url, bindings, interfaces)
    except ClientError:
        old = _v03_interface(card, card_url, bindings)
        if old is None:
            raise
        return old


def _v03_interface(card, card_url, bindings):
    """A JSON-RPC interface that speaks A2A 0.3, for a card with no usable 1.x
    one, when the companion a2a_v03 is here to translate (else None)."""
    if bindings and "JSONRPC" not in [b.upper() for b in bindings]:
        return None
    urls = [i.get("url") for i in card.get("supportedInterfaces") or ()
            if isinstance(i, dict) and str(i.get("protocolBinding", "")).upper() == "JSONRPC"
            and _major(i.get("protocolVersion")) == "0"]
    if card.get("url") and str(card.get("preferredTransport", "JSONRPC")).upper() == "JSONRPC":
        urls.append(card["url"])
    urls += [i.get("url") for i in card.get("additionalInterfaces") or ()
             if isinstance(i, dict) and str(i.get("transport", "")).upper() == "JSONRPC"]
    urls = [u for u in urls if u]
    if not urls or _v03() is None:
        return None
    return {"url": _fix_url(urls[0], card_url), "protocolBinding": "JSONRPC",
            "protocolVersion": "0.3"}


def _v03():
    """The 0.3 translation (a2a_v03), or None where it is not installed."""
    try:
        import a2a_v03
    except ImportError:
        return None
    return a2a_v03


def _choose(card, card_url, bindings, interfaces):
    offers_grpc = any(isinstance(i, dict) and str(i.get("protocolBinding", "")).upper() == "GRPC"
                      for i in interfaces or ())
    speaks = set(_BINDINGS) if offers_grpc and _grpc() is not None else {"JSONRPC", "HTTP+JSON"}
    if not interfaces:
        version = str(card.get("protocolVersion", ""))
        if card.get("url") and (version.startswith("0.") or "preferredTransport" in card):
            raise ClientError(f"this agent's card is an A2A {version or '0.x'} card (url, "
                              "preferredTransport, no supportedInterfaces): the agent speaks only "
                              f"A2A {version or '0.x'}, and this client speaks A2A "
                              f"{PROTOCOL_VERSION} (and 0.3 over JSON-RPC with a2a_v03.py "
                              "beside it)")
        if card_url is None:
            raise ClientError("the agent card lists no supportedInterfaces, and it came from no "
                              "URL to fall back on: give the agent's base URL instead")
        # A 1.0 card without interfaces: JSON-RPC where the card came from.
        base = card_url.rsplit("/.well-known/", 1)[0]
        return {"url": base + "/", "protocolBinding": "JSONRPC",
                "protocolVersion": PROTOCOL_VERSION}
    wanted = [b.upper() for b in bindings] if bindings else None
    usable = []
    for position, interface in enumerate(interfaces):
        if not isinstance(interface, dict) or not interface.get("url"):
            continue
        binding = str(interface.get("protocolBinding", "")).upper()
        version = interface.get("protocolVersion")
        if binding not in speaks or (wanted and binding not in wanted):
            continue
        if version and _major(version) != _major(PROTOCOL_VERSION):
            continue
        rank = (wanted.index(binding) if wanted else 0, 0 if version else 1, position)
        usable.append((rank, dict(interface, protocolBinding=binding,
                                  url=_fix_url(interface["url"], card_url))))
    if usable:
        return min(usable, key=lambda item: item[0])[1]
    offered = ", ".join(f"{i.get('protocolBinding')} {i.get('protocolVersion') or '(no version)'}"
                        for i in interfaces if isinstance(i, dict)) or "nothing usable"
    if interfaces and all(_major(i.get("protocolVersion")) == "0" for i in interfaces
                          if isinstance(i, dict)):
        hint = (f"the agent speaks only A2A 0.x, and this client speaks A2A {PROTOCOL_VERSION} "
                "(and 0.3 over JSON-RPC with a2a_v03.py beside it)")
    elif wanted and "GRPC" in wanted and offers_grpc and _grpc() is None:
        hint = ("the agent offers GRPC, but grpcio is not installed here, which gRPC needs (in a "
                "checkout: pip install '.[grpc]'; else pip install grpcio protobuf "
                "googleapis-common-protos, with a2a_grpc.py beside a2a_client.py)")
    elif wanted:
        hint = f"none is {' or '.join(wanted)}: pick another binding (--binding)"
    elif "GRPC" in offered.upper() and _grpc() is None:
        hint = "gRPC needs the companion a2a_grpc (in a checkout: pip install '.[grpc]'; or copy a2a_grpc.py and pip install grpcio protobuf googleapis-common-protos)"
    else:
        hint = f"this client speaks {', '.join(sorted(speaks))} at A2A {PROTOCOL_VERSION}"
    raise ClientError(f"no interface of this agent card can be used (it offers {offered}): {hint}")


def _grpc():
    """The gRPC companion, or None when it (or grpcio) is not installed."""
    try:
        import a2a_grpc
    except ImportError:
        return None
    return a2a_grpc


# -- HTTP: kept-alive connections, bounded reads -------------------------------------------

def tls_context(ca=None, cert=None, key=None, *, insecure=False):
    """The ssl.SSLContext a Client connects to https agents with: the system's
    trusted CAs, or those in ``ca`` (a PEM file); a client certificate for
    mutual TLS (``cert``, with ``key`` unless the cert file holds it);
    ``insecure``: no check of the agent's certificate at all (for testing,
    like curl -k). A file that cannot be used is a ClientError naming it."""
    import ssl
    try:
        context = ssl.create_default_context(cafile=ca)
        if cert:
            context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        which = ca if ca and not cert else f"{cert}" + (f" / {key}" if key else "")
        raise ClientError(f"cannot use the TLS file(s) {which}: "
                          f"{getattr(error, 'reason', None) or error.strerror or error}") from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    # (grpc takes files, not a context: a2a_grpc reads them from here)
    context.a2a_files = {"ca": ca, "cert": cert, "key": key, "insecure": insecure}
    return context


class _Connections:
    """HTTP/1.1 connections kept alive, per origin, shared by threads (each
    request takes one and gives it back). A request on a kept connection that
    the server had closed meanwhile is sent again on a new one, once."""

    def __init__(self, timeout, max_answer_bytes=DEFAULT_LIMITS["max_answer_bytes"],
                 max_redirects=DEFAULT_LIMITS["max_redirects"], tls=None):
        import threading
        self.timeout = timeout
        self.tls = tls                             # the ssl.SSLContext for https (None: default)
        self.max_answer_bytes = max_answer_bytes
        self.max_redirects = max_redirects
        self.idle = {}
        self.lock = threading.Lock()

    def _take(self, origin):
        with self.lock:
            kept = self.idle.get(origin)
            if kept:
                return kept.pop(), True
        scheme, host, port = origin
        if scheme == "https":
            if self.tls is None:
                self.tls = tls_context()
            return http.client.HTTPSConnection(host, port, timeout=self.timeout,
                                               context=self.tls), False
        return http.client.HTTPConnection(host, port, timeout=self.timeout), False

    def give_back(self, origin, conn):
        with self.lock:
            kept = self.idle.setdefault(origin, [])
            if len(kept) < 8:
                kept.append(conn)
                return
        conn.close()

    def close(self):
        with self.lock:
            idle, self.idle = self.idle, {}
        for kept in idle.values():
            for conn in kept:
                conn.close()

    def open(self, method, url, body, headers, *, on_request=None):
        """Send a request; the response, its origin and connection, after
        following same-host redirects. The caller reads the response (and
        gives the connection back, or closes it)."""
        for _ in range(self.max_redirects + 1):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ClientError(f"{url!r} is not an http:// or https:// URL")
            origin = (parts.scheme, parts.hostname, parts.port or
                      (443 if parts.scheme == "https" else 80))
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            if on_request is not None:
                on_request(method, url, headers, body)
            resp, conn = self._send(origin, method, target, body, headers, url)
            if resp.status not in (301, 302, 303, 307, 308) or not resp.getheader("Location"):
                return resp, origin, conn
            location = urljoin(url, resp.getheader("Location"))
            resp.read(65536)
            conn.close()
            there = urlsplit(location)
            if (there.scheme, there.hostname, there.port) != (parts.scheme, parts.hostname,
                                                              parts.port):
                raise ClientError(f"{url} redirects to another host ({location}); this client "
                                  "does not follow it (your credentials would go along): if you "
                                  "trust it, call that URL instead", status=resp.status)
            if resp.status == 303:
                method, body = "GET", None
            url = location
        raise ClientError(f"{url} redirected more than {self.max_redirects} times; check the URL",
                          status=resp.status)

    def _send(self, origin, method, target, body, headers, url):
        for _ in range(2):
            conn, kept = self._take(origin)
            try:
                conn.request(method, target, body=body, headers=headers)
                return conn.getresponse(), conn
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as error:
                conn.close()
                if not kept:            # a fresh connection that failed: the server's doing
                    raise _unreachable(url, error, self.timeout) from None
            except (OSError, http.client.HTTPException) as error:
                conn.close()
                raise _unreachable(url, error, self.timeout) from None

    def request(self, method, url, body, headers, *, on_request=None):
        """(status, headers, body) of a whole answer, read to its end."""
        resp, origin, conn = self.open(method, url, body, headers, on_request=on_request)
        try:
            data = resp.read(self.max_answer_bytes + 1)
            if resp.length and len(data) <= self.max_answer_bytes:   # short of Content-Length
                raise http.client.IncompleteRead(data, resp.length)
        except (OSError, http.client.HTTPException) as error:
            conn.close()
            raise _unreachable(url, error, self.timeout, "while reading the answer") from None
        if len(data) > self.max_answer_bytes:
            conn.close()
            raise ClientError(f"{url} answered more than {self.max_answer_bytes} bytes; raise "
                              "max_answer_bytes if that is expected")
        if resp.will_close:
            conn.close()
        else:
            self.give_back(origin, conn)
        return resp.status, resp, data


def _unreachable(url, error, timeout, when="connecting"):
    if isinstance(error, (socket.timeout, TimeoutError)):
        return ClientError(f"{url} did not answer within {timeout} s ({when}): the agent may be "
                           "busy or stuck; raise the timeout (--timeout), or send with "
                           "--immediate / --stream and follow the task")
    if isinstance(error, ConnectionRefusedError):
        return ClientError(f"nothing listens at {url} (connection refused): is the agent "
                           "running, and is the port right?")
    if isinstance(error, socket.gaierror):
        return ClientError(f"the host of {url} is unknown ({error.strerror}): check the URL")
    if isinstance(error, http.client.IncompleteRead):
        return ClientError(f"{url} closed the connection in the middle of its answer: the agent "
                           "or a proxy failed; try again")
    import ssl
    if isinstance(error, ssl.SSLCertVerificationError):
        return ClientError(f"the certificate of {url} cannot be trusted "
                           f"({error.verify_message}): give the CA that issued it (--cacert FILE, "
                           "Client(tls=tls_context(ca=...))), or skip the check to test (-k)")
    if isinstance(error, ssl.SSLError) and "CERTIFICATE_REQUIRED" in str(error):
        return ClientError(f"{url} asks for a client certificate (mutual TLS): --cert FILE "
                           "--key FILE, or Client(tls=tls_context(cert=..., key=...))")
    if isinstance(error, ssl.SSLError) and "WRONG_VERSION_NUMBER" in str(error):
        return ClientError(f"{url} does not speak TLS: try http:// instead of https://")
    text = str(error) or type(error).__name__
    return ClientError(f"{url} could not be reached ({when}): {text}")


def _json_body(url, status, head, body):
    """The JSON of an answer, after checking it is JSON (a proxy's HTML page,
    a gateway's 502, say what they are)."""
    kind = (head.getheader("Content-Type") or "").split(";")[0].strip().lower()
    if kind != "application/json" and not kind.endswith("+json"):
        if status in (502, 503, 504):
            what = (f"a proxy or gateway answered HTTP {status} {head.reason}: the agent behind "
                    "it may be down or restarting; try again shortly")
        elif status == 401:
            return None
        else:
            what = (f"it answered HTTP {status} with {kind or 'no content type'}, not JSON: this "
                    "URL is not an A2A endpoint (a web page, or a proxy in the way?); check it")
        raise ClientError(f"{url}: {what}{_snippet(body)}", status=status)
    try:
        return json.loads(body)
    except ValueError:
        raise ClientError(f"{url} answered HTTP {status} with JSON that does not parse"
                          f"{_snippet(body)}", status=status) from None


def _retry_after(head):
    value = (head.getheader("Retry-After") or "").strip()
    return int(value) if value.isdigit() else None


# -- Server-Sent Events (WHATWG HTML, section 9.2) ------------------------------------

class _Cut(Exception):
    """The stream's connection ended or broke before the stream did."""


def _sse_events(resp, max_event_bytes, until=None):
    """(id, event, data) of each event of an SSE body, by the WHATWG rules:
    CRLF, LF or CR end a line; a line starting with ':' is a comment (a
    keep-alive); data lines join with '\\n'; one space after the colon is
    dropped; an id with NUL is ignored. A ``retry`` field comes as an event
    of its own, (None, "retry", milliseconds). A body that ends, or breaks,
    raises _Cut (an event half received is dropped). Past ``until`` (a
    time.monotonic() instant) it raises ClientError: keep-alives may go on
    for ever, and something has to end them."""
    buffer, data, event, event_id, size, after_cr = b"", [], "", None, 0, False
    while True:
        try:
            chunk = resp.read1(65536)
        except (OSError, http.client.HTTPException) as error:
            raise _Cut(error) from None
        if not chunk:
            raise _Cut(None)
        if until is not None and time.monotonic() > until:
            raise ClientError("the stream went on past the time given to it, and was closed")
        if after_cr and chunk.startswith(b"\n"):  # the LF of a CRLF split between reads
            chunk = chunk[1:]
        buffer += chunk
        after_cr = buffer.endswith(b"\r")
        lines = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        buffer = lines.pop()
        for line in lines:
            if not line:                        # a blank line ends the event
                if data:
                    yield event_id, event or "message", "\n".join(data)
                data, event, size = [], "", 0
                continue
            size += len(line)
            if line.startswith(b":"):
                continue
            name, _, value = line.decode("utf-8", "replace").partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
            elif name == "id" and "\0" not in value:
                event_id = value
            elif name == "retry" and value.isdigit():
                yield None, "retry", value
        if size + len(buffer) > max_event_bytes:
            raise ClientError(f"a stream event is larger than {max_event_bytes} bytes; raise "
                              "max_event_bytes if that is expected")


def _task_id(event):
    """The task id a StreamResponse is about, if any."""
    for key in ("task", "statusUpdate", "artifactUpdate"):
        part = event.get(key)
        if isinstance(part, dict):
            return part.get("id") if key == "task" else part.get("taskId")
    return None


def _event_state(event):
    """The task state a StreamResponse reports, if any."""
    return (event.get("task") or event.get("statusUpdate") or {}).get("status", {}).get("state")


class Stream:
    """The StreamResponse dicts of SendStreamingMessage or SubscribeToTask,
    one by one (``for event in stream``). ``last_event_id`` is the id of the
    last event received (None if the server gives none), ``task_id`` the task
    they are about. A connection that drops before the stream ended is
    resumed with SubscribeToTask and Last-Event-ID, up to ``resume`` times.
    ``close()`` ends it early; a with-block closes it too."""

    def __init__(self, client, method, params, last_event_id=None):
        self.client = client
        self.method, self.params = method, params
        self.last_event_id = last_event_id
        self.task_id = params.get("id") if method == "SubscribeToTask" else None
        self.resumed = 0
        self.ended = False
        self.retry = None          # seconds to wait before reconnecting (the server's retry:)
        # Where it ends (section 3.1.2): a message, or a terminal state; a
        # SendStreamingMessage stream also at an interrupted one (the turn is
        # over), while SubscribeToTask follows the task on, into its next turn.
        self.ends = a2a_min.TERMINAL_STATES if method == "SubscribeToTask" else _STREAM_ENDS
        self.state = None          # the last task state seen
        self.until = None          # a time.monotonic() instant past which it is cut (check URL)
        self._events = None
        self._response = None

    def __iter__(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.ended = True
        if self._response is not None:
            self._response.close()
            self._response = None
        if self._events is not None and hasattr(self._events, "close"):
            self._events.close()

    def _open(self):
        self._events, self._response = self.client._open_stream(
            self, self.method, self.params, self.last_event_id)

    def __next__(self):
        while True:
            if self.ended:
                raise StopIteration
            if self._events is None:
                self._open()
            try:
                event_id, data = next(self._events)
            except (_Cut, StopIteration) as cut:
                self._events = None
                if self._response is not None:
                    self._response.close()
                    self._response = None
                if self.state in _STREAM_ENDS:      # the server ended it where a stream may end
                    self.ended = True
                    raise StopIteration from None
                self._reconnect(cut)
                continue
            if event_id is not None:
                self.last_event_id = event_id
            self.task_id = self.task_id or _task_id(data)
            self.state = _event_state(data) or self.state
            if "message" in data or self.state in self.ends:
                self.close()
            return data

    def _reconnect(self, cut):
        """The connection ended before the stream did: subscribe again, or
        say why not."""
        if self.task_id is None or self.resumed >= self.client.limits["resume"]:
            why = "it was cut" if self.task_id else "it was cut before naming its task"
            self.ended = True
            raise ClientError(f"the stream ended before the task did ({why}"
                              f"{'' if self.task_id is None else ', ' + str(self.resumed) + ' resumes tried'}"
                              f"): follow the task with `watch` (SubscribeToTask) or read it with "
                              f"`get`{' (task ' + self.task_id + ')' if self.task_id else ''}")
        self.resumed += 1
        pause = self.retry if self.retry is not None else 0.05 * 10 ** (self.resumed - 1)
        time.sleep(min(pause, 5.0))
        self.method, self.params = "SubscribeToTask", self.client._with_tenant({"id": self.task_id})
        try:
            self._open()
        except a2a_min.UnsupportedOperationError:
            # The task ended meanwhile (a terminal task cannot be followed): its last state.
            task = self.client.call("GetTask", {"id": self.task_id})
            self._events = iter([(None, {"task": task})])
        except ClientError as error:
            self.ended = True
            if self.retry is None:
                raise
            # The server ended the stream on purpose, saying when to come back
            # (SSE retry:): a server that shuts down or restarts does that.
            raise ClientError(f"the agent ended the stream before the task ended (it is "
                              f"shutting down or restarting), and could not be reached again "
                              f"after {self.retry:g} s: {error.message}") from None


# -- the client -----------------------------------------------------------------------

class Client:
    """An A2A 1.0 client for one agent.

    ``agent``: the agent's base URL, its card's URL, or the card (a dict).
    ``binding``: a protocolBinding name or a list of them, in the order
    preferred (default: the card's order). ``auth``: credentials, either a
    header value sent as Authorization ("Bearer t0ken"), a whole header
    ("X-API-Key: t0ken"), or a callable given the name of each security
    scheme the card requires, returning its secret (or None): the secret is
    placed as the scheme says (HTTP bearer or basic: Authorization; API key:
    the header, query parameter or cookie it names; OAuth 2 and OpenID
    Connect: a Bearer token). ``tenant`` goes into every request (default:
    the interface's). ``extensions``: URIs announced in A2A-Extensions.
    ``headers``: more headers for every request. ``on_request(method, url,
    headers, body)`` is called before each HTTP request (``--curl`` prints
    it). ``tls``: the ssl.SSLContext for https agents (tls_context(): a CA
    bundle, a client certificate for mutual TLS, or none of the checks);
    default, the system's trusted CAs. ``card_keys``: verify the card's
    signatures (section 8.4.3) with these keys before any call, a dict of
    kid -> public key (PEM, a PEM file, a cryptography key) or a callable
    (kid, jku) -> key; a card that does not verify raises ClientError
    (a2a_signing.verify_card, which needs the cryptography package). The
    limits are DEFAULT_LIMITS'.
    """

    def __init__(self, agent, *, binding=None, auth=None, tenant=None, extensions=(),
                 headers=None, on_request=None, tls=None, card_keys=None, **limits):
        unknown = set(limits) - set(DEFAULT_LIMITS)
        if unknown:
            raise TypeError(f"unknown limit(s): {', '.join(sorted(unknown))}")
        self.limits = dict(DEFAULT_LIMITS, **limits)
        self.on_request = on_request
        self.http = _Connections(self.limits["timeout"], self.limits["max_answer_bytes"],
                                 self.limits["max_redirects"], tls)
        self.extra_headers = dict(headers or {})
        if isinstance(agent, dict):
            self.card, self.card_url = agent, None
        else:
            self.card, self.card_url = fetch_card(agent, timeout=self.limits["timeout"],
                                                  headers=self.extra_headers,
                                                  on_request=on_request, _http=self.http)
        self.signature = verify(self.card, card_keys) if card_keys is not None else None
        if self.signature is not None:
            # Only what the signature covers is used: no unsigned field (a 0.3
            # ``url``, a snake_case twin, an added empty value) can steer the client.
            self.card = self.signature["card"]
        bindings = [binding] if isinstance(binding, str) else binding
        self.interface = choose_interface(self.card, self.card_url, bindings)
        self.binding = self.interface["protocolBinding"]
        self.url = self.interface["url"]
        # An agent that speaks only 0.3: each call translated there and back (a2a_v03).
        self.v03 = _v03() if _major(self.interface.get("protocolVersion")) == "0" else None
        self.tenant = tenant if tenant is not None else self.interface.get("tenant") or None
        self.extensions = list(extensions)
        self.headers = {**({} if self.v03 else {"A2A-Version": PROTOCOL_VERSION}),
                        **self.extra_headers, **_credentials(self.card, auth)}
        if self.extensions:
            self.headers["A2A-Extensions"] = ", ".join(self.extensions)
        self._grpc = None
        if self.binding == "GRPC":
            # A card names a gRPC interface as host:port, without a scheme: TLS
            # when the client was given tls=, or found the card over https.
            secure = tls is not None or (self.card_url or "").startswith("https:")
            self._grpc = _grpc().GrpcChannel(self.url, timeout=self.limits["timeout"],
                                             tls=(tls or tls_context()) if secure else None)
        self._ids = 0

    def close(self):
        """Close the kept-alive connections (a with-block does it too)."""
        self.http.close()
        if self._grpc is not None:
            self._grpc.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the eleven operations (section 3.1), by their names in the spec -------------

    def send(self, message, *, task_id=None, context_id=None, immediate=False, history_length=None,
             accepted_output_modes=None, metadata=None):
        """SendMessage: ``message`` is text or a Message dict. The answer:
        {"task": ...} or {"message": ...} (SendMessageResponse)."""
        return self.call("SendMessage", self._send_request(
            message, task_id, context_id, immediate, history_length, accepted_output_modes,
            metadata))

    def stream(self, message, *, task_id=None, context_id=None, history_length=None,
               accepted_output_modes=None, metadata=None):
        """SendStreamingMessage: a Stream of StreamResponse dicts."""
        return self.call_stream("SendStreamingMessage", self._send_request(
            message, task_id, context_id, False, history_length, accepted_output_modes,
            metadata))

    def get_task(self, task_id, *, history_length=None):
        params = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return self.call("GetTask", params)

    def list_tasks(self, **filters):
        """ListTasks; ``filters`` by their wire names (contextId, status,
        pageSize, pageToken, historyLength, statusTimestampAfter,
        includeArtifacts)."""
        return self.call("ListTasks", filters)

    def cancel_task(self, task_id):
        return self.call("CancelTask", {"id": task_id})

    def subscribe(self, task_id, *, last_event_id=None):
        """SubscribeToTask: a Stream, from after ``last_event_id`` if given."""
        return self.call_stream("SubscribeToTask", {"id": task_id}, last_event_id)

    def create_push_config(self, task_id, url, *, config_id=None, token=None, authentication=None):
        params = {"taskId": task_id, "url": url}
        for key, value in (("id", config_id), ("token", token),
                           ("authentication", authentication)):
            if value is not None:
                params[key] = value
        return self.call("CreateTaskPushNotificationConfig", params)

    def get_push_config(self, task_id, config_id):
        return self.call("GetTaskPushNotificationConfig", {"taskId": task_id, "id": config_id})

    def list_push_configs(self, task_id, **paging):
        return self.call("ListTaskPushNotificationConfigs", {"taskId": task_id, **paging})

    def delete_push_config(self, task_id, config_id):
        return self.call("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": config_id})

    def extended_card(self):
        """GetExtendedAgentCard (needs credentials, usually)."""
        return self.call("GetExtendedAgentCard", {})

    # -- any operation, by its JSON-RPC name --------------------------------------

    def call(self, method, params):
        """One unary operation: its answer (a dict), or its error raised."""
        if method not in METHODS or METHODS[method][2]:
            raise ValueError(f"{method!r} is not a unary A2A method (streams: call_stream)")
        params = self._with_tenant(params)
        if self._grpc is not None:
            return self._grpc.call(method, params, self.headers)
        if self.binding == "JSONRPC":
            name = method
            if self.v03 is not None:
                name, params = self.v03.request_v03(method, params)
            self._ids += 1
            body = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": name,
                               "params": params}).encode()
            status, head, data = self.http.request(
                "POST", self.url, body, {**self.headers, "Content-Type": "application/json",
                                         "Accept": "application/json"},
                on_request=self.on_request)
            answer = self._jsonrpc_answer(status, head, data)
            return answer if self.v03 is None else self._from_v03(
                self.v03.answer_from_v03, method, answer)
        verb, url, body = self._rest_request(method, params)
        headers = dict(self.headers, Accept="application/json")
        if body is not None:
            headers["Content-Type"] = "application/json"
        status, head, data = self.http.request(verb, url, body, headers,
                                               on_request=self.on_request)
        return self._rest_answer(url, status, head, data)

    def call_stream(self, method, params, last_event_id=None):
        """A streaming operation: a Stream of its StreamResponse dicts."""
        if method not in METHODS or not METHODS[method][2]:
            raise ValueError(f"{method!r} is not a streaming A2A method (unary: call)")
        stream = Stream(self, method, self._with_tenant(params), last_event_id)
        stream._open()               # errors (TaskNotFound, ...) are raised here, not later
        return stream

    # -- on the wire ------------------------------------------------------------

    def _with_tenant(self, params):
        params = dict(params)
        if self.tenant and "tenant" not in params:
            params["tenant"] = self.tenant
        return params

    def _send_request(self, message, task_id, context_id, immediate, history_length, modes,
                      metadata):
        if isinstance(message, str):
            message = {"messageId": a2a_min._new_id(), "role": "ROLE_USER",
                       "parts": [{"text": message}]}
        else:
            message = dict(message)
            message.setdefault("messageId", a2a_min._new_id())
            message.setdefault("role", "ROLE_USER")
        if task_id:
            message["taskId"] = task_id
        if context_id:
            message["contextId"] = context_id
        params = {"message": message}
        config = {}
        if immediate:
            config["returnImmediately"] = True
        if history_length is not None:
            config["historyLength"] = history_length
        if modes:
            config["acceptedOutputModes"] = list(modes)
        if config:
            params["configuration"] = config
        if metadata:
            params["metadata"] = metadata
        return params

    def _rest_request(self, method, params):
        """(HTTP verb, URL, body) of an operation on the HTTP+JSON binding:
        the first route of a2a_min.ROUTES for it, path variables filled from
        the params, the tenant as the path's prefix."""
        verb, pattern = next((v, p) for v, p, m in ROUTES if m == method)
        rest = dict(params)
        tenant = rest.pop("tenant", None)
        path = pattern
        while "{" in path:
            name = path[path.index("{") + 1:path.index("}")]
            value = rest.pop(name, None)
            if value in (None, ""):
                raise a2a_min.InvalidParamsError(f"{method} needs {name}", field=name)
            path = path.replace("{" + name + "}", quote(str(value), safe=""), 1)
        if tenant:
            path = "/" + quote(tenant, safe="") + path
        url = self.url.rstrip("/") + path
        if verb in ("GET", "DELETE"):
            query = {k: (json.dumps(v) if isinstance(v, (dict, list)) else
                         str(v).lower() if isinstance(v, bool) else v)
                     for k, v in rest.items()}
            return verb, url + ("?" + urlencode(query) if query else ""), None
        return verb, url, json.dumps(rest).encode()

    def _from_v03(self, translate, method, answer):
        """A 0.3 agent's answer in 1.0 terms; one that is not 0.3 either is
        named as such."""
        try:
            return translate(method, answer)
        except a2a_min.InvalidParamsError as error:
            raise ClientError(f"{self.url} (an A2A 0.3 agent) answered something that is not "
                              f"A2A 0.3: {error.message}") from None

    def _jsonrpc_answer(self, status, head, data):
        answer = _json_body(self.url, status, head, data)
        if answer is None:                       # a 401 that is not JSON
            raise self._unauthorized(head)
        if isinstance(answer, dict) and answer.get("jsonrpc") == "2.0" and "id" in answer \
                and "result" not in answer and "error" not in answer:
            answer["result"] = None     # (a2a-sdk 0.3 leaves out a null result: taken as null)
        if not isinstance(answer, dict) or ("result" not in answer and "error" not in answer):
            raise ClientError(f"{self.url} answered JSON that is not a JSON-RPC response"
                              f"{_snippet(data)}", status=status)
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise error_from(error.get("code"), error.get("message"), error.get("data"),
                             http_status=status, retry_after=_retry_after(head))
        return answer["result"]

    def _rest_answer(self, url, status, head, data):
        if status == 204 or (not data and 200 <= status < 300):
            return {}
        answer = _json_body(url, status, head, data)
        if answer is None:
            raise self._unauthorized(head)
        if status >= 400 or (isinstance(answer, dict) and set(answer) == {"error"}):
            raise _status_error(answer, status, head)
        return answer

    def _unauthorized(self, head):
        challenge = head.getheader("WWW-Authenticate") or "Bearer"
        return a2a_min.AuthenticationRequiredError(
            f"the agent wants credentials ({challenge}): pass them with --auth (auth=)",
            challenge=challenge)

    def _open_stream(self, stream, method, params, last_event_id):
        """The (id, StreamResponse) events of one streaming request, and its
        HTTP response (closed to end the stream)."""
        if self._grpc is not None:
            return self._grpc.stream(method, params, self.headers, last_event_id), None
        headers = dict(self.headers, Accept="text/event-stream")
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        if self.binding == "JSONRPC":
            if self.v03 is not None:
                method, params = self.v03.request_v03(method, params)
            self._ids += 1
            url, verb = self.url, "POST"
            body = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method,
                               "params": params}).encode()
        else:
            verb, url, body = self._rest_request(method, params)
        if body is not None:
            headers["Content-Type"] = "application/json"
        resp, _, conn = self.http.open(verb, url, body, headers, on_request=self.on_request)
        kind = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if resp.status != 200 or kind != "text/event-stream":
            # Not a stream: an error, said as the binding says it (JSON), or
            # something in the way (an HTML page, a 502): read, and raise.
            try:
                data = resp.read(self.limits["max_answer_bytes"])
            except (OSError, http.client.HTTPException) as error:
                raise _unreachable(url, error, self.limits["timeout"]) from None
            finally:
                conn.close()
            if self.binding == "JSONRPC":
                self._jsonrpc_answer(resp.status, resp, data)
            else:
                self._rest_answer(url, resp.status, resp, data)
            raise ClientError(f"{url} answered HTTP {resp.status} with "
                              f"{kind or 'no content type'}, not an event stream",
                              status=resp.status)
        return self._stream_events(url, resp, stream), resp

    def _stream_events(self, url, resp, stream):
        for event_id, kind, data in _sse_events(resp, self.limits["max_event_bytes"],
                                                stream.until):
            if kind == "retry":                  # how long to wait before reconnecting
                stream.retry = int(data) / 1000
                continue
            try:
                event = json.loads(data)
            except ValueError:
                raise ClientError(f"{url} sent a stream event that is not JSON"
                                  f"{_snippet(data.encode())}") from None
            if not isinstance(event, dict):
                raise ClientError(f"{url} sent a stream event that is not a JSON object")
            if self.binding == "JSONRPC":
                if "error" in event:
                    error = event["error"] if isinstance(event["error"], dict) else {}
                    raise error_from(error.get("code"), error.get("message"), error.get("data"))
                event = event.get("result")
                if not isinstance(event, dict):
                    raise ClientError(f"{url} sent a stream event without a result")
                if self.v03 is not None:
                    event = self._from_v03(lambda _, e: self.v03.event_from_v03(e), None, event)
            elif "error" in event:
                raise _status_error(event, None, None)
            yield event_id, event


def _status_error(answer, status, head):
    """The a2a_min error of a google.rpc.Status answer (HTTP+JSON)."""
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        error = {"message": f"HTTP {status}"}
    return error_from(None, error.get("message"), error.get("details"),
                      http_status=status or error.get("code"),
                      retry_after=None if head is None else _retry_after(head))


def _credentials(card, auth):
    """The headers that carry ``auth`` (see Client), for this card's schemes."""
    if auth is None:
        return {}
    if isinstance(auth, str):
        name, colon, value = auth.partition(":")
        if colon and name.strip() and " " not in name.strip() and not name.lower().startswith(
                ("bearer", "basic")):
            return {name.strip(): value.strip()}
        return {"Authorization": auth}
    schemes = card.get("securitySchemes") or {}
    requirements = card.get("securityRequirements") or [{"schemes": {n: {}} for n in schemes}]
    for requirement in requirements:
        headers = {}
        for name in (requirement.get("schemes") or {}):
            secret = auth(name)
            if secret is None:
                break
            headers.update(_placed(schemes.get(name) or {}, secret))
        else:
            if headers:
                return headers
    return {}


def _placed(scheme, secret):
    """The header a secret goes into, for one SecurityScheme (section 4.5)."""
    if "apiKeySecurityScheme" in scheme:
        key = scheme["apiKeySecurityScheme"]
        where, name = str(key.get("location", "header")).lower(), key.get("name", "X-API-Key")
        if where == "cookie":
            return {"Cookie": f"{name}={secret}"}
        return {name: secret}                   # (a query parameter: sent as a header here)
    if "httpAuthSecurityScheme" in scheme:
        kind = scheme["httpAuthSecurityScheme"].get("scheme", "Bearer")
        return {"Authorization": f"{kind.capitalize()} {secret}"}
    return {"Authorization": f"Bearer {secret}"}


# =============================================================================
# The command line
# =============================================================================
#
# ``python a2a_min.py VERB ...`` (and ``a2a-min VERB``) come here for the
# client's verbs. Human-readable by default, --json for the answers as they
# came; --curl prints each request as a curl command before it is sent.

VERBS = ("card", "send", "get", "list", "cancel", "watch", "push", "check")

# The exit status of send and watch, by the state the task was left in; a
# task still running (send --immediate) and a Message answer are 0. Every verb
# exits 1 for an error, 2 for a command line that does not parse, 130 when
# interrupted (Ctrl-C).
EXIT_STATUS = {"TASK_STATE_COMPLETED": 0, "TASK_STATE_FAILED": 1, "TASK_STATE_REJECTED": 1,
               "TASK_STATE_INPUT_REQUIRED": 3, "TASK_STATE_AUTH_REQUIRED": 3,
               "TASK_STATE_CANCELED": 4}


def _curl_printer(secrets, show_secrets, out, tls_flags=()):
    """on_request that prints a runnable curl command for each request
    (``tls_flags``: curl's for the command line's --cacert, --cert, --key, -k)."""
    import shlex

    def show(method, url, headers, body):
        words = ["curl", "-sS", *(map(shlex.quote, tls_flags) if url.startswith("https:") else ())]
        if headers.get("Accept") == "text/event-stream":
            words.append("-N")
        if method != ("POST" if body is not None else "GET"):
            words += ["-X", method]
        words.append(shlex.quote(url))
        for name, value in headers.items():
            if name in secrets and not show_secrets:
                words.append(f'-H "{name}: ${secrets[name]}"')
            else:
                words += ["-H", shlex.quote(f"{name}: {value}")]
        if body is not None:
            words += ["-d", shlex.quote(body.decode())]
        print(" ".join(words), file=out, flush=True)
    return show


def _tls_flags(tls):
    """curl's flags for the TLS files of a tls_context() (--cacert, --cert,
    --key, -k), so that a curl line printed for an https request runs."""
    files = getattr(tls, "a2a_files", None) or {}
    flags = [word for flag in ("ca", "cert", "key") if files.get(flag)
             for word in ({"ca": "--cacert"}.get(flag, "--" + flag), files[flag])]
    return flags + (["-k"] if files.get("insecure") else [])


def _text(parts):
    out = []
    for part in parts or ():
        if "text" in part:
            out.append(part["text"])
        elif "data" in part:
            out.append(json.dumps(part["data"]))
        elif "url" in part or "raw" in part:
            out.append(f"[file {part.get('filename') or part.get('url') or ''} "
                       f"{part.get('mediaType', '')}]".replace("  ", " "))
    return "".join(out)


def _state(state):
    return str(state or "").replace("TASK_STATE_", "")


def _show_task(task, out):
    status = task.get("status", {})
    print(f"task {task.get('id')}  {_state(status.get('state'))}  context {task.get('contextId')}",
          file=out)
    said = _text((status.get("message") or {}).get("parts"))
    if said:
        print(f"  status: {said}", file=out)
    for artifact in task.get("artifacts") or ():
        name = artifact.get("name") or artifact.get("artifactId")
        print(f"  artifact {name}: {_text(artifact.get('parts'))}", file=out)


def _show_answer(answer, out):
    if "task" in answer:
        _show_task(answer["task"], out)
    elif "message" in answer:
        print(f"message: {_text(answer['message'].get('parts'))}", file=out)
    else:
        print(json.dumps(answer, indent=2), file=out)


def _show_event(stream, event, out):
    mark = f"[{stream.last_event_id}] " if stream.last_event_id is not None else ""
    if "task" in event:
        task = event["task"]
        print(f"{mark}task {task.get('id')} {_state(task.get('status', {}).get('state'))}",
              file=out)
    elif "statusUpdate" in event:
        status = event["statusUpdate"].get("status", {})
        said = _text((status.get("message") or {}).get("parts"))
        print(f"{mark}status {_state(status.get('state'))}" + (f": {said}" if said else ""),
              file=out)
    elif "artifactUpdate" in event:
        update = event["artifactUpdate"]
        artifact = update.get("artifact", {})
        name = artifact.get("name") or artifact.get("artifactId")
        text = _text(artifact.get("parts"))
        # (a chunk that ends a line, as serve --exec sends them: print ends it)
        print(f"{mark}artifact {name}{' (more)' if update.get('append') else ''}: "
              f"{text[:-1] if text.endswith(chr(10)) else text}", file=out)
    elif "message" in event:
        print(f"{mark}message: {_text(event['message'].get('parts'))}", file=out)
    out.flush()


def _show_card(card, out):
    print(f"{card.get('name')} {card.get('version', '')}: {card.get('description', '')}", file=out)
    for interface in card.get("supportedInterfaces") or ():
        tenant = f"  tenant {interface['tenant']}" if interface.get("tenant") else ""
        print(f"  {interface.get('protocolBinding'):<10} {interface.get('protocolVersion', ''):<4} "
              f"{interface.get('url')}{tenant}", file=out)
    if not card.get("supportedInterfaces") and card.get("url"):       # a 0.3 card
        print(f"  {card.get('preferredTransport', 'JSONRPC'):<10} {card.get('protocolVersion', '0.3'):<4} "
              f"{card['url']}", file=out)
        for interface in card.get("additionalInterfaces") or ():
            print(f"  {interface.get('transport'):<10} {card.get('protocolVersion', '0.3'):<4} "
                  f"{interface.get('url')}", file=out)
    capabilities = card.get("capabilities") or {}
    print("  capabilities: " + (", ".join(k for k, v in capabilities.items() if v is True)
                                or "none"), file=out)
    for extension in capabilities.get("extensions") or ():
        if isinstance(extension, dict):
            print(f"  extension {extension.get('uri')}"
                  + (" (required)" if extension.get("required") else "")
                  + (f": {extension['description']}" if extension.get("description") else ""),
                  file=out)
    for skill in card.get("skills") or ():
        print(f"  skill {skill.get('id')}: {skill.get('name')} - {skill.get('description', '')}",
              file=out)
    if card.get("securitySchemes"):
        print("  security: " + ", ".join(card["securitySchemes"]), file=out)


def _seconds(text):
    """A --timeout: a number of seconds above 0."""
    import argparse
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0 (say 30)")
    return value


# -- check URL: a quick conformance check of any A2A 1.0 agent ---------------------------
#
# Built on the client, from the specification only: each check says PASS,
# FAIL, WARN (the specification leaves it open, or it is a risk rather than
# an error) or SKIP (the agent does not offer it), with the section it holds
# the agent to, and for a FAIL the curl line that shows it. By default one
# message is sent (one task made); --full sends three more (streaming, and
# ListTasks' order and paging). The exit status is 1 if anything FAILed.

_CARD_REQUIRED = ("name", "description", "version", "supportedInterfaces", "capabilities",
                  "defaultInputModes", "defaultOutputModes", "skills")
_SKILL_REQUIRED = ("id", "name", "description", "tags")
_TASK_STATES = tuple(a2a_min.ENUMS["TaskState"][1:])


class _Check:
    """The checks' shared state: where to print, what was seen, the verdicts.
    Every request, the raw ones included, carries what the client's carry:
    the credentials (``auth``), the TLS files, ``headers``; and the curl line
    that reproduces a FAIL names them (the secret as $A2A_AUTH)."""

    def __init__(self, url, out, timeout, tls, auth, headers=None, show_secrets=False):
        self.url, self.out, self.timeout, self.tls, self.auth = url, out, timeout, tls, auth
        self.extra_headers = dict(headers or {})
        self.headers = dict(self.extra_headers, **_credentials({}, auth)) \
            if isinstance(auth, str) else dict(self.extra_headers)
        self.needs = None                          # why the agent's calls cannot be made
        self.failed = 0
        self.requests = io.StringIO()              # the curl line of each request, as sent
        secrets = {name: "A2A_AUTH" for name in _credentials({}, auth)} \
            if isinstance(auth, str) else {}
        self.curl = _curl_printer(secrets, show_secrets, self.requests, _tls_flags(tls))

    def say(self, verdict, section, what, detail="", reproduce=None):
        self.failed += verdict == "FAIL"
        print(f"{verdict:<4}  §{section:<7} {what}" + (f": {detail}" if detail else ""),
              file=self.out)
        if verdict == "FAIL":
            lines = [reproduce] if reproduce else \
                self.requests.getvalue().strip().splitlines()
            if lines:
                print(f"      reproduce: {lines[-1]}", file=self.out)
        self.requests.seek(0)
        self.requests.truncate()

    def client(self, card, binding):
        return Client(card, binding=binding, auth=self.auth, on_request=self.curl, tls=self.tls,
                      timeout=self.timeout, headers=self.extra_headers)

    def raw(self, method, url, body=None, headers=None):
        """(status, head, parsed JSON or None) of one request, sent as it is
        (with the credentials and headers every request of the check carries)."""
        headers = {"Content-Type": "application/json", **self.headers, **(headers or {})}
        conns = _Connections(self.timeout, tls=self.tls)
        try:
            status, head, data = conns.request(method, url, body, headers, on_request=self.curl)
        finally:
            conns.close()
        try:
            return status, head, json.loads(data)
        except ValueError:
            return status, head, None


CHECK_TIMEOUT = 10.0        # check's --timeout: seconds for each request (a stream: three times)


def check(url, *, out=None, full=False, timeout=CHECK_TIMEOUT, tls=None, auth=None, keys=None,
          headers=None, show_secrets=False):
    """Check the agent at ``url`` against A2A 1.0; returns the number of FAILs.
    ``auth``, ``tls`` and ``headers`` as for Client: every request carries
    them. ``keys`` (kid -> public key, as for Client's card_keys): the card's
    signatures must verify with them."""
    out = out or sys.stdout
    run = _Check(url, out, timeout, tls, auth, headers, show_secrets)
    run.keys = keys
    try:
        card, where = fetch_card(url, timeout=timeout, on_request=run.curl,
                                 headers=run.extra_headers, _http=_Connections(timeout, tls=tls))
    except A2AError as error:
        run.say("FAIL", "8.2", "the agent card", error.message)
    else:
        run.card_curl = run.requests.getvalue().strip().splitlines()[-1:] or [None]
        if callable(auth):
            run.headers.update(_credentials(card, auth))
        run.needs = _needs(card, auth, tls)
        _check_agent(run, card, where, full)
    print(f"{run.failed} failed" if run.failed else "no failures", file=out)
    return run.failed


def _needs(card, auth, tls):
    """What the card asks for that the check was not given (a line saying
    how to give it), or None: an agent whose every call needs credentials
    cannot be checked past its card without them."""
    schemes = card.get("securitySchemes") or {}
    requirements = card.get("securityRequirements")
    if requirements is None:
        requirements = [{"schemes": {name: {}}} for name in schemes]
    if not isinstance(requirements, list) or not requirements or any(
            isinstance(r, dict) and not r.get("schemes") for r in requirements):
        return None                                # none asked for, or anonymous allowed
    has_cert = tls is not None and bool(getattr(tls, "a2a_files", {}).get("cert"))
    wanted = []
    for requirement in requirements:
        names = list((requirement.get("schemes") if isinstance(requirement, dict) else None)
                     or ())
        kinds = [next(iter(schemes.get(n) or {"?": 0})) for n in names]
        if all((k == "mtlsSecurityScheme" and has_cert) or
               (k != "mtlsSecurityScheme" and auth is not None) for k in kinds):
            return None                            # this requirement can be met
        for name, kind in zip(names, kinds):
            if kind == "mtlsSecurityScheme":
                wanted.append(f"a client certificate ({name}): --cert FILE --key FILE")
            elif kind == "httpAuthSecurityScheme":
                how = (schemes[name][kind] or {}).get("scheme", "Bearer").capitalize()
                wanted.append(f"{how} credentials ({name}): --auth '{how} <token>'")
            elif kind == "apiKeySecurityScheme":
                header = (schemes[name][kind] or {}).get("name", "X-API-Key")
                wanted.append(f"an API key ({name}): --auth '{header}: <key>'")
            else:
                wanted.append(f"credentials ({name}, {kind}): --auth 'Bearer <token>'")
    return "; or ".join(dict.fromkeys(wanted))


def _refused_for_credentials(run, status, answer):
    """Whether a raw request of the check was refused for its credentials
    (HTTP 401, or JSON-RPC's -31401), when the check has none to give."""
    if run.needs is None:
        return False
    error = answer.get("error") if isinstance(answer, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return status == 401 or code == a2a_min.AuthenticationRequiredError.code


def _check_agent(run, card, where, full):
    _check_card(run, card, where)
    _check_card_caching(run, where)
    if run.needs is not None:
        print(f"this agent needs credentials: {run.needs} (what needs them is skipped)",
              file=run.out)
    bindings = {i.get("protocolBinding"): i for i in card.get("supportedInterfaces") or ()
                if _major(i.get("protocolVersion")) == "1"}
    if "JSONRPC" in bindings:
        _check_jsonrpc(run, _fix_url(bindings["JSONRPC"]["url"], where))
    first = next((b for b in ("JSONRPC", "HTTP+JSON") if b in bindings), None)
    if first is None:
        run.say("SKIP", "5", "the operations", "no JSON-RPC or HTTP+JSON 1.0 interface")
        return
    if run.needs is not None:
        run.say("SKIP", "3.1", "the operations (SendMessage, GetTask, ListTasks, CancelTask, "
                "push configs; HTTP+JSON's error table" + (", streaming, ListTasks' order"
                                                           if full else "") + ")",
                "no credentials")
        return
    task = _check_operations(run, card, first)
    if "HTTP+JSON" in bindings:
        _check_rest(run, card, _fix_url(bindings["HTTP+JSON"]["url"], where), task)
    if full:
        _check_streaming(run, card, first)
        _check_order(run, card, first)


def _check_card(run, card, where):
    missing = [f for f in _CARD_REQUIRED if card.get(f) in (None, "", [])
               and not (f == "skills" and "skills" in card) and f != "capabilities"]
    missing += ["capabilities"] if not isinstance(card.get("capabilities"), dict) else []
    run.say("FAIL" if missing else "PASS", "4.4.1", "the card's required fields",
            f"missing {', '.join(missing)}" if missing else "")
    for skill in card.get("skills") or ():
        gone = [f for f in _SKILL_REQUIRED if not skill.get(f)]
        if gone:
            run.say("FAIL", "4.4.5", f"skill {skill.get('id')!r}", f"missing {', '.join(gone)}")
    origin = urlsplit(where)
    for iface in card.get("supportedInterfaces") or ():
        target = urlsplit(iface.get("url", "") if "://" in iface.get("url", "")
                          else "grpc://" + iface.get("url", ""))
        if not all(iface.get(f) for f in ("url", "protocolBinding", "protocolVersion")):
            run.say("FAIL", "4.4.6", "an interface", f"needs url, protocolBinding and "
                    f"protocolVersion: {json.dumps(iface)[:120]}")
        elif (target.hostname or "") in ("0.0.0.0", "::"):
            run.say("WARN", "8.3.1", f"{iface['protocolBinding']} interface {iface['url']}",
                    "a wildcard address a server listens on, not one a client can connect to: "
                    "set the public URL (a2a_min: --public-url)")
        elif _is_local(target.hostname or "") and _is_local(origin.hostname or "") and \
                (target.port or 0) != (origin.port or 0) and target.scheme in ("http", "https"):
            run.say("WARN", "8.3.1", f"{iface['protocolBinding']} interface {iface['url']}",
                    f"another port than the card's ({origin.netloc}): the server's public URL "
                    "(a2a_min: --public-url) may not match where it listens")
        elif _is_local(target.hostname or "") and not _is_local(origin.hostname or ""):
            run.say("WARN", "8.3.1", f"{iface['protocolBinding']} interface {iface['url']}",
                    "a local address in a card served from elsewhere: clients cannot reach it")
        elif origin.scheme == "https" and target.scheme == "http":
            run.say("WARN", "7.1", f"{iface['protocolBinding']} interface {iface['url']}",
                    "plain http in a card served over https")
    if "protocolVersion" in card:
        run.say("WARN", "4.4.1", "the card has a top-level protocolVersion",
                "a 0.3-era field (1.0 names the version per interface)")
    if "security" in card and "securityRequirements" not in card:
        run.say("WARN", "4.4.1", "the card names its security requirements `security`",
                "the name of an early sample card; the proto's is securityRequirements")
    _check_signatures(run, card)


def _check_signatures(run, card):
    """Section 8.4: each signature's protected header names alg and kid (and
    typ JOSE); with keys, one signature verifies."""
    signatures = card.get("signatures")
    if not signatures:
        if run.keys:
            run.say("FAIL", "8.4.3", "the card's signatures", "keys were given (--card-key) "
                    "but the card is not signed")
        return
    for number, entry in enumerate(signatures if isinstance(signatures, list) else [None]):
        try:
            header = json.loads(a2a_min._b64decode(entry["protected"]))
            missing = [f for f in ("alg", "kid") if not header.get(f)]
        except (TypeError, KeyError, ValueError):
            header, missing = {}, ["a readable protected header"]
        if missing:
            run.say("FAIL", "8.4.2", f"signature {number}", f"needs {', '.join(missing)}")
        elif header.get("typ") not in (None, "JOSE"):
            run.say("WARN", "8.4.2", f"signature {number}", f"typ {header['typ']!r}; the "
                    "specification says JOSE (SHOULD)")
    if not run.keys:
        run.say("WARN", "8.4.3", "the card's signatures", "present, not verified: give the "
                "signer's public key with --card-key KID=FILE")
        return
    try:
        held = verify(card, run.keys, allow_stripped=True)      # (to say so: a WARN below)
    except ClientError as error:
        run.say("FAIL", "8.4.3", "the card's signatures verify", error.message,
                reproduce=getattr(run, "card_curl", [None])[0])
        return
    if held["payload"] == "section 8.4.1":
        run.say("PASS", "8.4.3", "the card's signatures verify", f"kid {held['kid']}, "
                f"{held['alg']}")
    else:
        run.say("WARN", "8.4.1", "the card's signature verifies only over the older "
                "empty-values-stripped form", f"kid {held['kid']}: REQUIRED fields at their "
                "default were left out of what was signed")


def _check_card_caching(run, where):
    """Section 8.6: the card SHOULD come with Cache-Control max-age and an
    ETag, and a conditional request with that ETag gets 304."""
    try:
        status, head, _ = run.raw("GET", where)
        tag = head.getheader("ETag")
        control = (head.getheader("Cache-Control") or "").lower()
        missing = [name for name, there in (("Cache-Control max-age", "max-age" in control),
                                            ("ETag", tag)) if not there]
        if not missing:
            status, _, _ = run.raw("GET", where, headers={"If-None-Match": tag})
    except A2AError as error:
        run.say("FAIL", "8.6", "the card's caching headers", error.message)
        return
    if missing:
        run.say("WARN", "8.6", "the card's caching headers", f"no {' and no '.join(missing)} "
                "(SHOULD): clients cannot tell when to read it again")
    else:
        run.say("PASS" if status == 304 else "WARN", "8.6", "the card's caching headers, and "
                "304 for its ETag", "" if status == 304 else f"If-None-Match got HTTP {status}")


def _check_jsonrpc(run, url):
    cases = (("-32700", "9.5", "invalid JSON is a parse error", b"{", {"A2A-Version": "1.0"}),
             ("-32600", "9.5", "a request without a method is invalid",
              b'{"jsonrpc":"2.0","id":1}', {"A2A-Version": "1.0"}),
             ("-32601", "9.5", "an unknown method is not found",
              b'{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod","params":{}}',
              {"A2A-Version": "1.0"}),
             ("-32009", "3.6.2", "an unsupported A2A-Version is refused",
              b'{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}',
              {"A2A-Version": "99.0"}))
    for code, section, what, body, headers in cases:
        try:
            status, _, answer = run.raw("POST", url, body, headers)
        except A2AError as error:
            run.say("FAIL", section, what, error.message)
            continue
        if _refused_for_credentials(run, status, answer):
            run.say("SKIP", section, what, "no credentials")
            continue
        got = (answer or {}).get("error", {}).get("code") if isinstance(answer, dict) else None
        run.say("PASS" if str(got) == code else "FAIL", section, what,
                "" if str(got) == code else f"expected error {code}, got "
                + (f"error {got}" if got is not None else json.dumps(answer)[:100]))
    try:
        status, _, answer = run.raw("POST", url, b'{"jsonrpc":"2.0","id":1,"method":"GetTask",'
                                    b'"params":{"id":"a2a-check-no-such-task"}}',
                                    {"A2A-Version": "1.0"})
        if _refused_for_credentials(run, status, answer):
            run.say("SKIP", "9.5", "an A2A error's data carries an ErrorInfo", "no credentials")
            return
        error = answer.get("error") if isinstance(answer, dict) else None
        infos = _error_info(error, "JSONRPC")
        good = ("TASK_NOT_FOUND", "a2a-protocol.org") in infos
        run.say("PASS" if good else "FAIL", "9.5", "an A2A error's data carries an ErrorInfo "
                "(TASK_NOT_FOUND, domain a2a-protocol.org)", "" if good else
                f"got {json.dumps(error)[:140]}")
    except A2AError as error:
        run.say("FAIL", "9.5", "an A2A error's data carries an ErrorInfo", error.message)
    try:
        status, _, answer = run.raw("POST", url, b'{"jsonrpc":"2.0","id":1,"method":"ListTasks",'
                                                 b'"params":{}}')
        if _refused_for_credentials(run, status, answer):
            run.say("SKIP", "3.6.2", "a request without A2A-Version", "no credentials")
            return
        refused = isinstance(answer, dict) and "error" in answer
        run.say("PASS" if refused else "WARN", "3.6.2", "a request without A2A-Version",
                "" if refused else "answered; the specification reads no header as 0.3")
    except A2AError as error:
        run.say("FAIL", "3.6.2", "a request without A2A-Version", error.message)


def _check_operations(run, card, binding):
    """SendMessage, GetTask (and a missing task), ListTasks, CancelTask of a
    finished task: one message. Returns the task (or None)."""
    client = run.client(card, binding)
    try:
        answer = client.send("a2a_min check: hello")
    except A2AError as error:
        run.say("FAIL", "3.1.1", f"SendMessage ({binding})", error.message)
        return None
    task = answer.get("task")
    if task is None:
        ok = isinstance(answer.get("message"), dict)
        run.say("PASS" if ok else "FAIL", "3.1.1", f"SendMessage ({binding})",
                "answered a Message" if ok else f"neither task nor message: {str(answer)[:100]}")
        return None
    state = (task.get("status") or {}).get("state")
    good = task.get("id") and task.get("contextId") and state in _TASK_STATES
    run.say("PASS" if good else "FAIL", "3.1.1", f"SendMessage ({binding})",
            f"task {task.get('id')} {state}" if good else f"a task needs id, contextId and a "
            f"status.state; got {json.dumps(task)[:120]}")
    if state in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED"):
        why = _text(((task.get("status") or {}).get("message") or {}).get("parts") or ())
        run.say("WARN", "3.1.1", "the agent's task ended " + state[11:].lower(),
                (why or "no reason given")[:160] + ": the protocol held, the agent did not")
    for what, section, call, expect in (
            ("GetTask reads it back", "3.1.3", lambda: client.get_task(task["id"]), None),
            ("GetTask of a missing task", "3.1.3",
             lambda: client.get_task("a2a-check-no-such-task"), a2a_min.TaskNotFoundError),
            ("ListTasks lists it", "3.1.4", lambda: client.list_tasks(pageSize=50), None)):
        try:
            got = call()
        except A2AError as error:
            ok = expect is not None and isinstance(error, expect)
            run.say("PASS" if ok else "FAIL", section, what, "" if ok else error.message)
            continue
        if expect is not None:
            run.say("FAIL", section, what, f"expected {expect.__name__}, got an answer")
        elif "tasks" in got:
            found = any(t.get("id") == task["id"] for t in got.get("tasks") or ())
            run.say("PASS" if found else "WARN", section, what,
                    "" if found else "not in the first 50 (tasks may be scoped, or many)")
            _check_list_shape(run, got)
        else:
            run.say("PASS" if got.get("id") == task["id"] else "FAIL", section, what,
                    "" if got.get("id") == task["id"] else f"got {str(got)[:100]}")
    try:
        bare = client.get_task(task["id"], history_length=0)
        run.say("PASS" if "history" not in bare else "FAIL", "3.2.4", "GetTask with "
                "historyLength 0 leaves the history out", "" if "history" not in bare else
                f"{len(bare['history'])} messages came")
    except A2AError as error:
        run.say("FAIL", "3.2.4", "GetTask with historyLength 0", error.message)
    _check_capabilities(run, card, client, task, state)
    if (card.get("capabilities") or {}).get("pushNotifications"):
        _check_push(run, client, task)
    if state in _TERMINAL:
        try:
            client.cancel_task(task["id"])
            run.say("FAIL", "3.1.5", "CancelTask of a finished task",
                    "answered; expected TaskNotCancelableError")
        except a2a_min.TaskNotCancelableError:
            run.say("PASS", "3.1.5", "CancelTask of a finished task")
        except A2AError as error:
            run.say("FAIL", "3.1.5", "CancelTask of a finished task",
                    f"expected TaskNotCancelableError, got {type(error).__name__}: {error.message}")
    else:
        run.say("SKIP", "3.1.5", "CancelTask of a finished task", f"the task is {state}")
    return task


def _check_list_shape(run, answer):
    """ListTasks' answer (section 3.1.4): nextPageToken always there ("" on
    the last page), pageSize and totalSize, no artifacts unless asked for."""
    missing = [f for f in ("nextPageToken", "pageSize", "totalSize") if f not in answer]
    run.say("FAIL" if missing else "PASS", "3.1.4", "ListTasks answers nextPageToken, pageSize "
            "and totalSize", f"missing {', '.join(missing)}" if missing else "")
    with_artifacts = [t.get("id") for t in answer.get("tasks") or () if "artifacts" in t]
    run.say("FAIL" if with_artifacts else "PASS", "3.1.4", "ListTasks leaves artifacts out "
            "unless includeArtifacts", f"{len(with_artifacts)} tasks carry them"
            if with_artifacts else "")


def _check_capabilities(run, card, client, task, state):
    """What the card says it cannot do is refused with the error the
    specification names (section 3.3.4, capability validation)."""
    capabilities = card.get("capabilities") or {}
    probes = []
    if not capabilities.get("pushNotifications"):
        probes.append(("3.1.9", "push configs, which the card says it does not send",
                       lambda: client.list_push_configs(task["id"]),
                       a2a_min.PushNotificationNotSupportedError))
    if not capabilities.get("extendedAgentCard"):
        probes.append(("3.1.11", "GetExtendedAgentCard, which the card does not offer",
                       client.extended_card, a2a_min.UnsupportedOperationError))
    if capabilities.get("streaming") and state in _TERMINAL:
        def subscribe():
            with client.subscribe(task["id"]) as stream:
                return list(stream)
        probes.append(("3.1.6", "SubscribeToTask of a finished task", subscribe,
                       a2a_min.UnsupportedOperationError))
    for section, what, call, expected in probes:
        try:
            call()
            run.say("FAIL", section, what, f"answered; expected {expected.__name__}")
        except expected:
            run.say("PASS", section, what)
        except A2AError as error:
            run.say("FAIL", section, what, f"expected {expected.__name__}, got "
                    f"{type(error).__name__}: {error.message}")


_TERMINAL = a2a_min.TERMINAL_STATES

# A webhook URL that reaches no one: no resolver answers for .invalid (RFC 6761
# section 6.4), and the round trip registers it on a task that has ended.
_NOWHERE = "https://a2a-check.invalid/webhook"


def _check_push(run, client, task):
    """The push config round trip (sections 3.1.7 to 3.1.10): create, get,
    list, delete (twice: it is idempotent), then get finds nothing."""
    steps = (
        ("3.1.7", "CreateTaskPushNotificationConfig",
         lambda: client.create_push_config(task["id"], _NOWHERE, token="a2a-check"),
         lambda got: got.get("url") == _NOWHERE and got.get("id")),
        ("3.1.8", "GetTaskPushNotificationConfig reads it back",
         lambda: client.get_push_config(task["id"], made["id"]),
         lambda got: got.get("url") == _NOWHERE and got.get("id") == made["id"]),
        ("3.1.9", "ListTaskPushNotificationConfigs lists it",
         lambda: client.list_push_configs(task["id"]),
         lambda got: any(c.get("id") == made["id"] for c in got.get("configs") or ())),
        ("3.1.10", "DeleteTaskPushNotificationConfig",
         lambda: client.delete_push_config(task["id"], made["id"]), lambda got: True),
        ("3.1.10", "DeleteTaskPushNotificationConfig again (it is idempotent)",
         lambda: client.delete_push_config(task["id"], made["id"]), lambda got: True))
    made = {}
    for section, what, call, good in steps:
        try:
            got = call()
        except A2AError as error:
            run.say("FAIL", section, what, f"{type(error).__name__}: {error.message}")
            return
        if section == "3.1.7" and isinstance(got, dict):
            made.update(got)
        ok = isinstance(got, dict) and good(got)
        run.say("PASS" if ok else "FAIL", section, what, "" if ok else f"got {str(got)[:120]}")
        if not ok:
            return
    try:
        client.get_push_config(task["id"], made["id"])
        run.say("FAIL", "3.1.8", "a deleted config is gone", "GetTaskPushNotificationConfig "
                "still answers it")
    except a2a_min.TaskNotFoundError:
        run.say("PASS", "3.1.8", "a deleted config is gone")
    except A2AError as error:
        run.say("FAIL", "3.1.8", "a deleted config is gone", f"expected TaskNotFoundError, "
                f"got {type(error).__name__}: {error.message}")


def _error_info(error, shape):
    """(A2A error code or HTTP status, the ErrorInfo reasons and domains) of an
    error object, in the binding's shape: JSON-RPC's data, or google.rpc.Status's details."""
    details = (error or {}).get("data" if shape == "JSONRPC" else "details")
    infos = [d for d in details if isinstance(d, dict) and str(d.get("@type", "")).endswith(
        "google.rpc.ErrorInfo")] if isinstance(details, list) else []
    return [(d.get("reason"), d.get("domain")) for d in infos]


# HTTP+JSON's status table (sections 5.4 and 11.6), row by row: what is sent,
# and the HTTP status, google.rpc.Code name and ErrorInfo reason that must come
# back. {task} is the finished task of the check; None rows need none.
_REST_ERRORS = (
    ("a missing task", "GET", "/tasks/a2a-check-no-such-task", None, {}, 404, "NOT_FOUND",
     "TASK_NOT_FOUND"),
    ("CancelTask of a finished task", "POST", "/tasks/{task}:cancel", b"{}", {}, 400,
     "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
    ("an unsupported A2A-Version", "GET", "/tasks", None, {"A2A-Version": "99.0"}, 400,
     "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
    ("a pageSize out of range", "GET", "/tasks?pageSize=500", None, {}, 400,
     "INVALID_ARGUMENT", None),
    ("invalid JSON", "POST", "/message:send", b"{", {}, 400, "INVALID_ARGUMENT", None))


def _check_rest(run, card, base, task):
    base = base.rstrip("/")
    for what, verb, path, body, headers, code, name, reason in _REST_ERRORS:
        if "{task}" in path and (task is None or (task.get("status") or {}).get("state")
                                 not in _TERMINAL):
            continue
        title = f"HTTP+JSON errors: {what} is {code} {name}" + \
            (f" with ErrorInfo {reason}" if reason else "")
        try:
            status, head, answer = run.raw(verb, base + path.replace(
                "{task}", (task or {}).get("id", "")), body, {"A2A-Version": "1.0", **headers})
        except A2AError as error:
            run.say("FAIL", "11.6", title, error.message)
            continue
        error = answer.get("error") if isinstance(answer, dict) else None
        kind = (head.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if kind == "application/problem+json" or (isinstance(answer, dict) and
                                                  "title" in answer and "status" in answer):
            run.say("WARN", "11.6", title, f"HTTP {status} as problem+json, the form section "
                    "6's examples show; section 11.6 asks for google.rpc.Status")
            continue
        reasons = [r for r, _ in _error_info(error, "HTTP+JSON")]
        good = status == code and isinstance(error, dict) and error.get("code") == code and \
            error.get("status") == name and (reason is None or reason in reasons)
        run.say("PASS" if good else "FAIL", "11.6", title, "" if good else
                f"got HTTP {status}: {json.dumps(answer)[:140]}")
    if task is not None and (task.get("status") or {}).get("state") in _TERMINAL:
        _check_subscribe_verbs(run, base, task)
    if task is not None:
        try:
            seen = run.client(card, "HTTP+JSON").get_task(task["id"])
            same = seen.get("id") == task["id"]
            run.say("PASS" if same else "FAIL", "5.1", "one task, seen over a second binding",
                    "" if same else f"HTTP+JSON answered {str(seen)[:100]}")
        except A2AError as error:
            run.say("FAIL", "5.1", "one task, seen over a second binding", error.message)


def _check_subscribe_verbs(run, base, task):
    """SubscribeToTask over HTTP+JSON: the proto says GET, the specification's
    table POST (A2A-FACTS, the decisions). Either may be all an agent
    serves; a finished task is refused with UnsupportedOperationError
    either way, unless the route itself is missing."""
    missing = []
    for verb in ("GET", "POST"):
        try:
            status, _, _ = run.raw(verb, f"{base}/tasks/{task['id']}:subscribe",
                                   b"{}" if verb == "POST" else None,
                                   {"A2A-Version": "1.0", "Accept": "text/event-stream"})
        except A2AError as error:
            run.say("FAIL", "11.3", f"{verb} /tasks/{{id}}:subscribe", error.message)
            return
        if status in (404, 405):
            missing.append(f"{verb} (HTTP {status})")
    run.say("WARN" if missing else "PASS", "11.3", "SubscribeToTask by GET and by POST",
            f"{', '.join(missing)} not served: the proto says GET, the specification's table "
            "POST; clients use either" if missing else "")


def _check_streaming(run, card, binding):
    if not (card.get("capabilities") or {}).get("streaming"):
        run.say("SKIP", "3.1.2", "SendStreamingMessage", "the card does not declare streaming")
        return
    try:
        with run.client(card, binding).stream("a2a_min check: stream") as stream:
            stream.until = time.monotonic() + 3 * run.timeout   # keep-alives may never end
            events = [(stream.last_event_id, event) for event in stream]
    except A2AError as error:
        run.say("FAIL", "3.1.2", "SendStreamingMessage", error.message)
        return
    first = events[0][1] if events else {}
    good = events and ("task" in first or "message" in first)
    run.say("PASS" if good else "FAIL", "3.1.2", "SendStreamingMessage starts with the task",
            f"{len(events)} events" if good else f"first event: {str(first)[:100]}")
    if good:
        ids = [event_id for event_id, _ in events if event_id is not None]
        run.say("PASS" if ids else "WARN", "3.5.2", "stream events carry SSE ids", "" if ids
                else "none: a client that loses the stream cannot resume it (Last-Event-ID)")
    if good and "task" in first:
        last = _event_state(events[-1][1])
        ended = last in _STREAM_ENDS
        run.say("PASS" if ended else "FAIL", "3.1.2", "the stream ends with the task's end",
                last or "no state")


_STREAM_ENDS = a2a_min.TERMINAL_STATES | a2a_min.INTERRUPTED_STATES


def _check_order(run, card, binding):
    client = run.client(card, binding)
    try:
        ids = []
        for i in range(2):                         # (a second apart: timestamps may be in s)
            if ids:
                time.sleep(1.05)
            ids.append((client.send(f"a2a_min check: order {i}").get("task") or {}).get("id"))
        page = client.list_tasks(pageSize=1)
        listed = [t.get("id") for t in page.get("tasks") or ()]
        run.say("PASS" if listed == ids[-1:] else "FAIL", "3.1.4",
                "ListTasks: newest first, pageSize honoured", "" if listed == ids[-1:] else
                f"asked 1, got {listed}; the newest is {ids[-1]}")
        token = page.get("nextPageToken")
        if not token:
            run.say("FAIL", "3.1.4", "ListTasks: a nextPageToken while more remain")
            return
        second = [t.get("id") for t in client.list_tasks(pageSize=1, pageToken=token)
                  .get("tasks") or ()]
        run.say("PASS" if second == ids[:1] else "FAIL", "3.1.4", "ListTasks: the next page",
                "" if second == ids[:1] else f"got {second}, expected {ids[:1]}")
    except A2AError as error:
        run.say("FAIL", "3.1.4", "ListTasks order and paging", error.message)


_EXIT_HELP = ("Exit status: 0 done; 1 an error, or (send, watch) the task FAILED or was "
              "REJECTED; 2 a command line that does not parse; 3 (send, watch) the task waits "
              "for input or credentials (INPUT_REQUIRED, AUTH_REQUIRED: send --task ID); 4 "
              "(send, watch) the task was CANCELED; 130 interrupted (Ctrl-C).")


def _parser():
    import argparse
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the answers as they came")
    common.add_argument("--auth", default=os.environ.get("A2A_AUTH"), metavar="VALUE",
                        help="credentials: an Authorization value ('Bearer t0ken') or a header "
                             "('X-API-Key: t0ken'); default $A2A_AUTH")
    common.add_argument("--tenant", help="the tenant to address (default: the interface's)")
    common.add_argument("--binding", choices=("jsonrpc", "http+json", "grpc"), type=str.lower,
                        help="the binding to use (default: the card's first that works)")
    common.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                        help="to connect, and between two bytes of an answer (default "
                             f"{DEFAULT_LIMITS['timeout']:g}; check: {CHECK_TIMEOUT:g})")
    common.add_argument("--extension", action="append", default=[], metavar="URI",
                        help="announce an extension (A2A-Extensions); repeatable")
    common.add_argument("--curl", action="store_true",
                        help="print each request as a curl command (to stderr) before sending it")
    common.add_argument("--show-secrets", action="store_true",
                        help="with --curl: print credentials, not $A2A_AUTH")
    common.add_argument("--cacert", metavar="FILE",
                        help="https: trust the agent's certificate if this CA (PEM) issued it")
    common.add_argument("--cert", metavar="FILE",
                        help="https: present this client certificate (mutual TLS)")
    common.add_argument("--key", metavar="FILE", help="its private key (if not in --cert)")
    common.add_argument("-k", "--insecure", action="store_true",
                        help="https: do not check the agent's certificate (testing only)")
    common.add_argument("--card-key", action="append", default=[], metavar="KID=FILE",
                        help="trust this public key (PEM) for card signatures of this kid, and "
                             "refuse a card that does not verify (section 8.4); repeatable")
    parser = argparse.ArgumentParser(
        prog=a2a_min._prog(), description="Call an A2A 1.0 agent (run with no verb, or 'serve', to "
                                    "serve the demo agent).",
        epilog=_EXIT_HELP)
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    card = verbs.add_parser("card", parents=[common], help="show the agent card")
    card.add_argument("url")
    card.add_argument("--extended", action="store_true", help="GetExtendedAgentCard too")
    send = verbs.add_parser("send", parents=[common], help="SendMessage (or stream it)",
                            epilog=_EXIT_HELP)
    send.add_argument("url")
    send.add_argument("text")
    send.add_argument("--stream", action="store_true", help="SendStreamingMessage")
    send.add_argument("--task", metavar="ID", help="continue this task (its next turn)")
    send.add_argument("--context", metavar="ID", help="in this context")
    send.add_argument("--immediate", action="store_true",
                      help="answer at once, without waiting for the agent (returnImmediately)")
    get = verbs.add_parser("get", parents=[common], help="GetTask")
    get.add_argument("url")
    get.add_argument("id")
    get.add_argument("--history", type=int, metavar="N", help="the last N messages")
    lister = verbs.add_parser("list", parents=[common], help="ListTasks")
    lister.add_argument("url")
    lister.add_argument("--context", metavar="ID")
    lister.add_argument("--state", metavar="STATE", help="e.g. working, TASK_STATE_COMPLETED")
    lister.add_argument("--page-size", type=int, metavar="N")
    lister.add_argument("--page-token", metavar="TOKEN")
    cancel = verbs.add_parser("cancel", parents=[common], help="CancelTask")
    cancel.add_argument("url")
    cancel.add_argument("id")
    watch = verbs.add_parser("watch", parents=[common], help="SubscribeToTask", epilog=_EXIT_HELP)
    watch.add_argument("url")
    watch.add_argument("id")
    watch.add_argument("--last-event-id", metavar="ID", help="resume after this event")
    checking = verbs.add_parser("check", parents=[common],
                                help="a quick conformance check of an agent (PASS/FAIL/WARN/SKIP)")
    checking.add_argument("url")
    checking.add_argument("--full", action="store_true",
                          help="also streaming, and ListTasks' order and paging (3 more tasks)")
    push = verbs.add_parser("push", help="push notification configs")
    push_verbs = push.add_subparsers(dest="push_verb", required=True, metavar="ACTION")
    create = push_verbs.add_parser("create", parents=[common],
                                   help="CreateTaskPushNotificationConfig")
    create.add_argument("url")
    create.add_argument("task")
    create.add_argument("webhook")
    create.add_argument("--id", metavar="ID", help="the config's id (default: the server's)")
    create.add_argument("--token", help="sent back with each notification")
    for name, help_text in (("get", "GetTaskPushNotificationConfig"),
                            ("delete", "DeleteTaskPushNotificationConfig")):
        sub = push_verbs.add_parser(name, parents=[common], help=help_text)
        sub.add_argument("url")
        sub.add_argument("task")
        sub.add_argument("id")
    listed = push_verbs.add_parser("list", parents=[common], help="ListTaskPushNotificationConfigs")
    listed.add_argument("url")
    listed.add_argument("task")
    return parser


def _verb_first(argv):
    """The command line with the verb first: options written before it
    (``--json send URL hi``) go after it (and after push's action), where
    its parser reads them."""
    at = next((i for i, word in enumerate(argv) if word in VERBS), None)
    if not at or not argv[0].startswith("-") or argv[0] in ("-h", "--help"):
        return argv
    verb = at + 1 + (argv[at] == "push" and at + 1 < len(argv) and
                     argv[at + 1] in ("create", "get", "list", "delete"))
    return argv[at:verb] + argv[:at] + argv[verb:]


def _swapped(args):
    """A one-line complaint when the URL and the text of ``send`` are the
    wrong way round (said before the text is looked up as a host name)."""
    text = getattr(args, "text", None)
    if args.verb != "send" or text is None or "://" in args.url:
        return None
    if text.startswith(("http://", "https://")) or (
            " " not in text and text.rpartition(":")[2].split("/")[0].isdigit()):
        import shlex
        return (f"send takes the agent's URL first, then the text: send {shlex.quote(text)} "
                f"{shlex.quote(args.url)}")
    return None


def main(argv=None, out=None, err=None):
    """The client's command line; the exit status (see EXIT_STATUS: 0, 1 for
    an error, 2 for a command line that does not parse, 130 for Ctrl-C)."""
    out, err = out or sys.stdout, err or sys.stderr
    args = _parser().parse_args(_verb_first(sys.argv[1:] if argv is None else list(argv)))
    swapped = _swapped(args)
    if swapped:
        print(f"error: {swapped}", file=err)
        return 2
    if args.timeout is None:
        args.timeout = CHECK_TIMEOUT if args.verb == "check" else DEFAULT_LIMITS["timeout"]
    secrets = {}
    if args.auth:
        header = next(iter(_credentials({}, args.auth)))
        secrets[header] = "A2A_AUTH"
    try:
        args.tls = _cli_tls(args)
        on_request = _curl_printer(secrets, args.show_secrets, err,
                                   _tls_flags(args.tls)) if args.curl else None
        return _run(args, out, err, on_request)
    except A2AError as error:
        kind = type(error).__name__
        print(f"error: {kind}: {error.message}", file=err)
        if getattr(error, "retry_after", None):
            print(f"  (try again after {error.retry_after} s)", file=err)
        if isinstance(error, a2a_min.AuthenticationRequiredError) and args.auth and \
                len(args.auth.split()) == 1 and ":" not in args.auth:
            print("  (--auth has one word and no scheme, so the Authorization header sent was "
                  "not 'Bearer <token>': write --auth 'Bearer <token>', or a header of its own: "
                  "--auth 'X-API-Key: <key>')", file=err)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:                     # (| head): the reader has what it wanted
        sys.stdout = None
        return 0
    except Exception as error:                  # a bug here: said in one line, not a traceback
        print(f"error: {type(error).__name__}: {error} (this is a bug in a2a_client; please "
              "report it with the command line, and --curl's output)", file=err)
        return 1


def _card_keys(args):
    """--card-key KID=FILE ... -> {kid: file}, or None."""
    keys = {}
    for given in args.card_key:
        kid, sep, path = given.partition("=")
        if not (sep and kid and path):
            raise ClientError(f"--card-key {given!r}: write it KID=FILE, e.g. "
                              "--card-key key-1=public.pem")
        keys[kid] = path
    return keys or None


def _run(args, out, err, on_request):
    limits = {"timeout": args.timeout, "card_keys": _card_keys(args)}
    if args.verb == "check":
        return 1 if check(args.url, out=out, full=args.full, timeout=args.timeout,
                          tls=args.tls, auth=args.auth, keys=limits["card_keys"],
                          show_secrets=args.show_secrets) else 0
    if args.verb == "card":
        card, where = fetch_card(args.url, timeout=args.timeout, on_request=on_request,
                                 _http=_Connections(args.timeout, tls=args.tls))
        if limits["card_keys"]:
            held = verify(card, limits["card_keys"])
            print(f"signature verified: kid {held['kid']}, {held['alg']}" +
                  ("" if held["payload"] == "section 8.4.1" else
                   f" (over the older form: {held['payload']})"), file=sys.stderr)
        if args.json and not args.extended:
            print(json.dumps(card, indent=2), file=out)
            return 0
        if args.extended:
            with _client(args, card, where, on_request, limits) as client:
                card = client.extended_card()
        print(json.dumps(card, indent=2), file=out) if args.json else _show_card(card, out)
        return 0
    with _client(args, None, args.url, on_request, limits) as client:
        if args.verb == "send" and args.stream:
            return _follow(client.stream(args.text, task_id=args.task, context_id=args.context),
                           args, out, err)
        if args.verb == "watch":
            return _follow(client.subscribe(args.id, last_event_id=args.last_event_id), args,
                           out, err)
        if args.verb == "send":
            answer = client.send(args.text, task_id=args.task, context_id=args.context,
                                 immediate=args.immediate)
        elif args.verb == "get":
            answer = {"task": client.get_task(args.id, history_length=args.history)}
        elif args.verb == "cancel":
            answer = {"task": client.cancel_task(args.id)}
        elif args.verb == "list":
            filters = {"contextId": args.context, "pageSize": args.page_size,
                       "pageToken": args.page_token}
            if args.state:
                state = args.state.upper()
                filters["status"] = state if state.startswith("TASK_STATE_") else \
                    "TASK_STATE_" + state
            answer = client.list_tasks(**{k: v for k, v in filters.items() if v is not None})
            if not args.json:
                for task in answer.get("tasks", ()):
                    status = task.get("status", {})
                    print(f"{task.get('id')}  {_state(status.get('state')):<14} "
                          f"{status.get('timestamp', '')}  context {task.get('contextId')}",
                          file=out)
                if answer.get("nextPageToken"):
                    print(f"(more: --page-token {answer['nextPageToken']})", file=out)
                elif not answer.get("tasks"):
                    print("no tasks", file=out)
                return 0
        else:
            answer = _push(client, args)
            if not args.json:
                for config in answer.get("configs", [answer] if answer else []):
                    print(f"{config.get('id')}  task {config.get('taskId')}  {config.get('url')}",
                          file=out)
                if not answer:
                    print("deleted", file=out)
                return 0
        if args.json:
            print(json.dumps(answer.get("task", answer) if args.verb in ("get", "cancel")
                             else answer, indent=2), file=out)
        else:
            _show_answer(answer, out)
    if args.verb == "send":
        return EXIT_STATUS.get(((answer.get("task") or {}).get("status") or {}).get("state"), 0)
    return 0


def _client(args, card, url, on_request, limits):
    bindings = {"jsonrpc": "JSONRPC", "http+json": "HTTP+JSON", "grpc": "GRPC"}
    return Client(card if card is not None else url,
                  binding=bindings.get(args.binding) if args.binding else None, auth=args.auth,
                  tenant=args.tenant, extensions=args.extension, on_request=on_request,
                  tls=args.tls, **limits)


def _cli_tls(args):
    """--cacert, --cert, --key, --insecure: the SSLContext, or None (default)."""
    if not (args.cacert or args.cert or args.insecure):
        return None
    return tls_context(args.cacert, args.cert, args.key, insecure=args.insecure)


def _follow(stream, args, out, err):
    """Print a stream's events; the exit status by the state it ended in.
    Interrupted (Ctrl-C) or cut for good, it says how to go on."""
    try:
        with stream:
            for event in stream:
                if args.json:
                    print(json.dumps({"id": stream.last_event_id, "event": event}), file=out,
                          flush=True)
                else:
                    _show_event(stream, event, out)
    except KeyboardInterrupt:
        print("interrupted: the task goes on without you", file=err)
        _say_how_to_go_on(stream, args, err)
        return 130
    except A2AError as error:
        print(f"error: {type(error).__name__}: {error.message}", file=err)
        _say_how_to_go_on(stream, args, err)
        return 1
    return EXIT_STATUS.get(stream.state, 0)


def _say_how_to_go_on(stream, args, err):
    """The command lines that follow the task from where the stream stopped
    (SubscribeToTask with Last-Event-ID: the server replays what was
    missed), or cancel it."""
    if stream.task_id is None or stream.state in a2a_min.TERMINAL_STATES:
        return
    import shlex
    prog, url, task = a2a_min._prog(), shlex.quote(args.url), shlex.quote(stream.task_id)
    options = [*_tls_flags(args.tls)] + (["--binding", args.binding] if args.binding else []) \
        + (["--tenant", args.tenant] if args.tenant else [])
    more = "".join(" " + shlex.quote(word) for word in options)
    after = "" if stream.last_event_id is None else \
        f" --last-event-id {shlex.quote(str(stream.last_event_id))}"
    print(f"  follow it: {prog} watch {url} {task}{after}{more}", file=err)
    print(f"  stop it:   {prog} cancel {url} {task}{more}", file=err, flush=True)


def _push(client, args):
    if args.push_verb == "create":
        return client.create_push_config(args.task, args.webhook, config_id=args.id,
                                         token=args.token)
    if args.push_verb == "get":
        return client.get_push_config(args.task, args.id)
    if args.push_verb == "list":
        return client.list_push_configs(args.task)
    return client.delete_push_config(args.task, args.id)


if __name__ == "__main__":
    sys.exit(main())
