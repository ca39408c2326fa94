"""a2a_client: the caller's side of A2A 1.0, for programs that call agents.

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

or from a shell, with a2a_cli.py beside it (the command line's verbs, built
on this module)::

    python a2a_min.py send http://127.0.0.1:8000 hello --curl

How it works.

1. The agent card (section 8): fetched from /.well-known/agent-card.json of
   the URL given (or the card URL itself, or a card dict), and one of its
   ``supportedInterfaces`` chosen: the first, in the agent's order of
   preference (or the caller's, with ``binding=``), whose protocolBinding this
   client speaks and whose protocolVersion is 1.x (an agent with none, whose
   card is 0.3 only, is called in A2A 0.3 over JSON-RPC, HTTP+JSON or gRPC,
   each call translated by the companion a2a_v03). An interface that names
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
5. Enums a newer agent sends (ProtoJSON: a name, or a number): a state or a
   role this version does not know (99, TASK_STATE_PAUSED, role 7), and
   fields it does not have, are carried through as they came, and the client
   fails open: an unknown state is no error and ends no stream (the agent
   ends it, or the task is asked for again). A known state given as its
   number (3) counts as its name (TASK_STATE_COMPLETED).

Limits, all keyword arguments of Client: ``timeout`` (seconds to connect,
between two bytes of an answer, and for the whole of a unary answer: a
stream's keep-alives count), the size of an
answer (``max_answer_bytes``) and of one stream event (``max_event_bytes``),
``resume`` (reconnects of one stream), ``max_redirects`` (same host only: a
redirect elsewhere would take the credentials with it).

MIT License. Copyright (c) 2026 the a2a_min authors.
"""

__all__ = ["Client", "Stream", "ClientError", "fetch_card", "choose_interface", "error_from",
           "tls_context", "printable"]

# The private names the command line (a2a_cli) and its check (a2a_check) build
# on, besides __all__ (not for applications: they change with this file).
COMPANION_API = (
    # the connections a client keeps, and the text and curl lines it prints
    "_Connections", "_Printable", "_curl_printer", "_text", "_tls_flags", "_credentials",
    # what a2a_check reads of a card and an agent's URL
    "_allowed", "_event_state", "_fix_url", "_is_local", "_major", "_origin",
    # a task state by its name, also when it came as its number (the command line's exit status)
    "_state_name",
)

import http.client
import io
import json
import os
import socket
import sys
import time
from urllib.parse import quote, urlencode, urljoin, urlsplit

import a2a_min
from a2a_min import A2AError, METHODS, PROTOCOL_VERSION, ROUTES

CARD_PATH = "/.well-known/agent-card.json"
_OLD_CARD_PATH = "/.well-known/agent.json"         # where A2A 0.2 and some 0.3 agents keep it
_BINDINGS = ("JSONRPC", "HTTP+JSON", "GRPC")
_STREAM_ENDS = a2a_min.TERMINAL_STATES | a2a_min.INTERRUPTED_STATES
# The verb sent where a2a_min.ROUTES serves two. SubscribeToTask is GET in the
# proto's http annotation and POST in the specification's method table (A2A
# issue 1574, open); the reference SDKs' clients send POST, and some servers
# serve only POST (@a2a-js/sdk 1.0.0-beta.0: a GET there reads the task
# "<id>:subscribe" and answers TaskNotFound).
_REST_VERBS = {"SubscribeToTask": "POST"}

DEFAULT_LIMITS = {
    "timeout": 30.0,                   # seconds to connect, between two bytes, for a whole answer
    "max_answer_bytes": 64 << 20,      # bytes of one answer (not a stream)
    "max_event_bytes": 16 << 20,       # bytes of one stream event
    "resume": 3,                       # times one stream reconnects after a dropped connection
    "max_redirects": 3,                # redirects followed, to the same host only
    "send_retries": 2,                 # times a SendMessage whose answer was lost goes again
}                                      # (to an agent whose card says IDEMPOTENT_SEND)


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
    """What a non-JSON answer was, by its length only: its text is not shown
    (an interface URL may lead anywhere, and what is there is not ours to
    echo, nor the terminal's to run)."""
    return f" ({len(body)} bytes, not shown)" if body else " (empty)"


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


# Where a card may send the client, and what goes along (the server's push
# webhooks face the same question: a2a_min's address guard answers both).
# Credentials go to the origin the user named (the card's scheme, host and
# port) and to the hosts they allow, nowhere else: a card that names another
# origin as its interface gets the calls without them. And an interface on an
# address that is not globally routable (loopback, private, link-local: the
# cloud's metadata address) is refused when the card came from a global one,
# unless allowed: a public card must not turn the client on the network behind it.

def _origin(url):
    parts = urlsplit(url if "://" in url else "grpc://" + url)
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower().rstrip("."), parts.port or default


def _allowed(allow_hosts, url):
    """Whether ``url``'s host (or host:port) is among the hosts the user allowed."""
    _, host, port = _origin(url)
    wanted = {str(entry).lower().rstrip(".").strip("[]") for entry in allow_hosts or ()}
    return host in wanted or f"{host}:{port}" in wanted or f"[{host}]:{port}" in wanted


def _addresses(host, resolve):
    import ipaddress
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        return [ipaddress.ip_address(a.split("%")[0]) for a in resolve(host)]
    except (OSError, ValueError):
        return []


def _resolve(host):
    return sorted({info[4][0] for info in socket.getaddrinfo(host, None)})


def interface_refusal(card_url, url, allow_hosts=(), resolve=_resolve):
    """Why the client must not call ``url``, an interface of the card read
    from ``card_url`` (a string), or None: the card came from a globally
    routable address and the interface is on one that is not, and the user
    did not allow its host. ``resolve(host)`` gives a name's addresses."""
    if card_url is None or _origin(url)[1] == _origin(card_url)[1] or _allowed(allow_hosts, url):
        return None
    card_host, host = _origin(card_url)[1], _origin(url)[1]
    came_from = _addresses(card_host, resolve)
    if not came_from or not all(a2a_min._may_reach(a, ()) for a in came_from):
        return None                    # a card from a private network may name its neighbours
    inner = [a for a in _addresses(host, resolve) if not a2a_min._may_reach(a, ())]
    if not inner:
        return None
    return (f"the agent card from {card_host} names an interface at {url}, on {inner[0]}, an "
            "address that is not globally routable (loopback, private, link-local): refused, "
            f"so that a card cannot aim this client at the network behind it; if you trust it, "
            f"allow the host (--allow-host {host}, Client(allow_hosts=[...]))")


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
    """An interface that speaks A2A 0.3 over JSON-RPC, HTTP+JSON or gRPC (with
    a2a_grpc), for a card with no usable 1.x one, when the companion a2a_v03
    is here to translate (else None): the card's first such (0.3: ``url`` in
    its ``preferredTransport``, then ``additionalInterfaces``), or by ``bindings``."""
    offers = [(str(i.get("protocolBinding", "")).upper(), i.get("url"))
              for i in card.get("supportedInterfaces") or ()
              if isinstance(i, dict) and _major(i.get("protocolVersion")) == "0"]
    if card.get("url"):
        offers.append((str(card.get("preferredTransport") or "JSONRPC").upper(), card["url"]))
    offers += [(str(i.get("transport", "")).upper(), i.get("url"))
               for i in card.get("additionalInterfaces") or () if isinstance(i, dict)]
    speaks = ("JSONRPC", "HTTP+JSON") + (("GRPC",) if _grpc() is not None else ())
    wanted = [b.upper() for b in bindings] if bindings else None
    offers = sorted(((wanted.index(b) if wanted else 0, n, b, u)
                     for n, (b, u) in enumerate(offers)
                     if u and b in speaks and (wanted is None or b in wanted)))
    if not offers or _v03() is None:
        return None
    return {"url": _fix_url(offers[0][3], card_url), "protocolBinding": offers[0][2],
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
                              f"{PROTOCOL_VERSION} (and 0.3 with a2a_v03.py beside it)")
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
                "(and 0.3 with a2a_v03.py beside it)")
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

    def open(self, method, url, body, headers, *, on_request=None, _deadline=None):
        """Send a request; the response, its origin and connection, after
        following same-host redirects. The caller reads the response (and
        gives the connection back, or closes it). ``_deadline`` (a
        time.monotonic() time): the answer is read by then, or not at all."""
        for _ in range(self.max_redirects + 1):
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ClientError(f"{url!r} is not an http:// or https:// URL")
            origin = (parts.scheme, parts.hostname, parts.port or
                      (443 if parts.scheme == "https" else 80))
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            if on_request is not None:
                on_request(method, url, headers, body)
            resp, conn = self._send(origin, method, target, body, headers, url, _deadline)
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

    def _send(self, origin, method, target, body, headers, url, deadline=None):
        import functools
        for _ in range(2):
            conn, kept = self._take(origin)
            conn.response_class = http.client.HTTPResponse if deadline is None else \
                functools.partial(_DeadlineResponse, deadline=deadline, timeout=self.timeout)
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
        """(status, headers, body) of a whole answer, read to its end, within
        ``timeout`` seconds for the whole answer: the socket's timeout bounds
        each wait for a byte only, and an answer dripping a byte at a time
        would never end (see _DeadlineResponse)."""
        deadline, conn = time.monotonic() + self.timeout, None
        try:
            resp, origin, conn = self.open(method, url, body, headers, on_request=on_request,
                                           _deadline=deadline)
            data = resp.read(self.max_answer_bytes + 1)
            if resp.length and len(data) <= self.max_answer_bytes:   # short of Content-Length
                raise http.client.IncompleteRead(data, resp.length)
        except (OSError, http.client.HTTPException, ClientError) as error:
            if conn is not None:
                conn.close()
            if time.monotonic() >= deadline:
                raise ClientError(f"{url} did not answer within {self.timeout} s (its whole "
                                  "answer): the agent may be busy or stuck; raise the "
                                  "timeout (--timeout), or send with --immediate / --stream and "
                                  "follow the task") from None
            if isinstance(error, ClientError):
                raise
            raise _unreachable(url, error, self.timeout, "while reading the answer") from None
        if conn.sock is not None:
            conn.sock.settimeout(self.timeout)         # (kept alive: per byte again)
        if len(data) > self.max_answer_bytes:
            conn.close()
            raise ClientError(f"{url} answered more than {self.max_answer_bytes} bytes; raise "
                              "max_answer_bytes if that is expected")
        if resp.will_close:
            conn.close()
        else:
            self.give_back(origin, conn)
        return resp.status, resp, data


class _DeadlineResponse(http.client.HTTPResponse):
    """An HTTP response read by a deadline: before each read from the socket,
    its timeout is made what is left (at most ``timeout``), so the head and
    the body end by the deadline however slowly they come."""

    def __init__(self, sock, debuglevel=0, method=None, url=None, *, deadline, timeout):
        super().__init__(sock, debuglevel, method, url)
        self.fp = io.BufferedReader(_DeadlineReader(self.fp.detach(), sock, deadline, timeout))


class _DeadlineReader(io.RawIOBase):
    def __init__(self, raw, sock, deadline, timeout):
        self.raw, self.sock, self.deadline, self.timeout = raw, sock, deadline, timeout

    def readable(self):
        return True

    def readinto(self, buffer):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the whole answer took longer than the timeout")
        self.sock.settimeout(min(left, self.timeout))
        return self.raw.readinto(buffer)

    def close(self):
        self.raw.close()
        super().close()


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


# A task state by its number: ProtoJSON writes an enum as its name and a parser
# accepts its number too (3 is TASK_STATE_COMPLETED).
_STATE_NAMES = a2a_min.ENUMS["TaskState"]


def _state_name(state):
    """A task state as its name, also when it came as its number. A state
    this version does not know (a newer agent's: 99, TASK_STATE_PAUSED) stays
    as it came: the client fails open, so it is neither an error nor the end
    of a stream, and the answers carry it through unchanged."""
    if type(state) is int and 0 < state < len(_STATE_NAMES):       # (0: none given)
        return _STATE_NAMES[state]
    return state


def _event_state(event):
    """The task state a StreamResponse reports, if any (its name: _state_name)."""
    return _state_name((event.get("task") or event.get("statusUpdate") or {})
                       .get("status", {}).get("state"))


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
        self.last = False          # the next event is the last (the task ended meanwhile)
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
            if "message" in data or self.state in self.ends or self.last:
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
            # The task ended meanwhile (a terminal task cannot be followed): its last state,
            # the stream's last event, also when it is a state this version does not know
            # (a newer agent's, which ends no stream of itself).
            task = self.client.call("GetTask", {"id": self.task_id})
            self._events = iter([(None, {"task": task})])
            self.last = True
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
    (a2a_signing.verify_card, which needs the cryptography package).
    ``allow_hosts``: hosts ("name" or "name:port") besides the card's own
    origin that may get the credentials, and that the card may send the
    client to on a non-global address (see interface_refusal); ``card_url``:
    where ``agent``, a card dict, came from (the origin credentials go to).
    ``trace``: the W3C trace context (a2a_min.TraceContext) each call carries
    as ``traceparent``; by default, that of the a2a_min turn the call is made
    from (a2a_min.RequestContext.current(): agent A's turn -> agent B is one
    trace);
    False, none; "opentelemetry": that context and an OpenTelemetry span per
    call (a2a_otel), as a call from a turn of Server(tracing="opentelemetry")
    has. ``protocol``: the A2A-Version to speak, "1.0" or "1.1" (the draft:
    generations, send(if_generation=), get_task(wait_generation=)).
    The limits are DEFAULT_LIMITS'.
    """

    def __init__(self, agent, *, binding=None, auth=None, tenant=None, extensions=(),
                 headers=None, on_request=None, tls=None, card_keys=None, allow_hosts=(),
                 card_url=None, trace=None, protocol=PROTOCOL_VERSION, **limits):
        if protocol not in (PROTOCOL_VERSION, a2a_min.PREVIEW_VERSION):
            raise ValueError(f"protocol {protocol!r}: this client speaks A2A "
                             f"{PROTOCOL_VERSION} and the {a2a_min.PREVIEW_VERSION} draft")
        unknown = set(limits) - set(DEFAULT_LIMITS)
        if unknown:
            raise TypeError(f"unknown limit(s): {', '.join(sorted(unknown))}")
        self.limits = dict(DEFAULT_LIMITS, **limits)
        self.on_request = on_request
        self.http = _Connections(self.limits["timeout"], self.limits["max_answer_bytes"],
                                 self.limits["max_redirects"], tls)
        self.extra_headers = dict(headers or {})
        if isinstance(agent, dict):
            self.card, self.card_url = agent, card_url
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
        refusal = interface_refusal(self.card_url, self.url, allow_hosts)
        if refusal:
            raise ClientError(refusal)
        # Credentials only to the origin the user named, or to hosts they allow.
        credentials = _credentials(self.card, auth)
        self.withheld = None
        if self.card_url is not None and _origin(self.url) != _origin(self.card_url) \
                and not _allowed(allow_hosts, self.url):
            secret = {"authorization", "cookie", "proxy-authorization"} | {
                name.lower() for name in credentials}
            self.withheld = sorted(name for name in {**self.extra_headers, **credentials}
                                   if name.lower() in secret)
            self.extra_headers = {k: v for k, v in self.extra_headers.items()
                                  if k.lower() not in secret}
            credentials = {}
        # An agent that speaks only 0.3: each call translated there and back (a2a_v03).
        self.v03 = _v03() if _major(self.interface.get("protocolVersion")) == "0" else None
        self.tenant = tenant if tenant is not None else self.interface.get("tenant") or None
        self.extensions = list(extensions)
        # A send repeated with its messageId, announced, runs nothing there: one whose answer
        # was lost may go again (docs/idempotency.md).
        self.idempotent = self.v03 is None and a2a_min.IDEMPOTENT_SEND in (
            e.get("uri") for e in self.card.get("capabilities", {}).get("extensions", ()))
        if self.idempotent and a2a_min.IDEMPOTENT_SEND not in self.extensions:
            self.extensions.append(a2a_min.IDEMPOTENT_SEND)
        self.protocol = "0.3" if self.v03 else protocol
        self.headers = {**({} if self.v03 else {"A2A-Version": protocol}),
                        **self.extra_headers, **credentials}
        if self.extensions:
            self.headers["A2A-Extensions"] = ", ".join(self.extensions)
        self._grpc = None
        if self.binding == "GRPC":
            # A card names a gRPC interface as host:port, without a scheme: TLS
            # when the client was given tls=, or found the card over https.
            secure = tls is not None or (self.card_url or "").startswith("https:")
            self._grpc = _grpc().GrpcChannel(self.url, timeout=self.limits["timeout"],
                                             tls=(tls or tls_context()) if secure else None,
                                             client_error=ClientError, error_from=error_from,
                                             v03=self.v03)
        self._ids = 0
        self.trace = trace
        if trace == "opentelemetry":            # (asked for by name: a missing a2a_otel fails now)
            a2a_min._companion("a2a_otel", 'Client(trace="opentelemetry")')

    def _traced(self, method):
        """The headers of a call to ``method`` (the client's and its trace
        context's), and its OpenTelemetry span when one is asked for: trace=
        "opentelemetry", or a turn with a span of its own (a2a_otel's), never
        because the process imported OpenTelemetry."""
        trace = self.trace
        spans = trace == "opentelemetry"
        if trace is None or spans:
            turn = a2a_min.RequestContext.current()
            trace = turn and turn.trace
            otel = sys.modules.get("a2a_otel")  # (no turn has a span while it is not loaded)
            spans = spans or (otel is not None and otel.traced(turn))
        if spans and os.environ.get("OTEL_SDK_DISABLED", "").lower() != "true":
            import a2a_otel
            span = a2a_otel.client_span(method, trace or None)
            return {**self.headers, **span.headers}, span
        return ({**self.headers, **trace.headers()} if trace else self.headers), None

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
             accepted_output_modes=None, metadata=None, if_generation=None):
        """SendMessage: ``message`` is text or a Message dict. The answer:
        {"task": ...} or {"message": ...} (SendMessageResponse). ``if_generation``
        (protocol 1.1): refused (TaskGenerationMismatchError) unless the task is at it."""
        return self.call("SendMessage", self._send_request(
            message, task_id, context_id, immediate, history_length, accepted_output_modes,
            metadata, if_generation))

    def stream(self, message, *, task_id=None, context_id=None, history_length=None,
               accepted_output_modes=None, metadata=None, if_generation=None):
        """SendStreamingMessage: a Stream of StreamResponse dicts."""
        return self.call_stream("SendStreamingMessage", self._send_request(
            message, task_id, context_id, False, history_length, accepted_output_modes,
            metadata, if_generation))

    def get_task(self, task_id, *, history_length=None, wait_generation=None):
        """GetTask. ``wait_generation`` (protocol 1.1): a long-poll, answered once
        the task's generation is past it, or when the agent's wait ends."""
        params = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        if wait_generation is not None:
            self._needs_1_1("wait_generation")
            params["currentGeneration"] = wait_generation
        return self.call("GetTask", params)

    def _needs_1_1(self, what):
        if self.protocol != a2a_min.PREVIEW_VERSION:
            raise ValueError(f"{what} is A2A {a2a_min.PREVIEW_VERSION}'s (the draft): make "
                             f"the client with protocol=\"{a2a_min.PREVIEW_VERSION}\"")

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
        headers, span = self._traced(method)
        failed = None
        retries = self.limits["send_retries"] if method == "SendMessage" and self.idempotent else 0
        try:
            for attempt in range(retries + 1):
                try:
                    return self._call(method, params, headers)
                except (ClientError, a2a_min.SendInFlightError, a2a_min.ServerBusyError) as error:
                    if attempt == retries:      # (the answer was lost, or the first still runs)
                        raise
                    time.sleep(min(5.0, error.retry_after or 0.25 * 2 ** attempt))
        except Exception as error:
            failed = error
            raise
        finally:
            if span is not None:
                span.end(failed)

    def _call(self, method, params, headers):
        if self._grpc is not None:
            return self._grpc.call(method, params, headers)
        if self.binding == "JSONRPC":
            name = method
            if self.v03 is not None:
                name, params = self.v03.request_v03(method, params)
            self._ids += 1
            body = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": name,
                               "params": params}).encode()
            status, head, data = self.http.request(
                "POST", self.url, body, {**headers, "Content-Type": "application/json",
                                         "Accept": "application/json"},
                on_request=self.on_request)
            answer = self._jsonrpc_answer(status, head, data)
            return answer if self.v03 is None else self._from_v03(
                self.v03.answer_from_v03, method, answer)
        verb, url, body = (self._rest_request(method, params) if self.v03 is None else
                           self._rest_request_v03(method, params))
        headers = dict(headers, Accept="application/json")
        if body is not None:
            headers["Content-Type"] = "application/json"
        status, head, data = self.http.request(verb, url, body, headers,
                                               on_request=self.on_request)
        if self.v03 is not None:
            return self._rest_answer_v03(method, url, status, head, data)
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
                      metadata, if_generation=None):
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
        if if_generation is not None:
            self._needs_1_1("if_generation")
            config["ifGenerationMatch"] = if_generation
        if config:
            params["configuration"] = config
        if metadata:
            params["metadata"] = metadata
        return params

    def _rest_request(self, method, params):
        """(HTTP verb, URL, body) of an operation on the HTTP+JSON binding:
        the first route of a2a_min.ROUTES for it, path variables filled from
        the params, the tenant as the path's prefix."""
        verb, pattern = next((v, p) for v, p, m in ROUTES
                             if m == method and _REST_VERBS.get(method, v) == v)
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

    def _rest_request_v03(self, method, params):
        """(HTTP verb, URL, body) of an operation on 0.3's HTTP+JSON binding:
        its route under the interface URL's /v1 (added unless the URL ends
        with it), its body in the 0.3 proto's JSON (a2a_v03)."""
        verb, path, query, body = self.v03.rest_request_v03(method, params)
        base = self.url.rstrip("/")
        url = (base if base.endswith("/v1") else base + "/v1") + path
        if query:
            url += "?" + urlencode({k: str(v).lower() if isinstance(v, bool) else v
                                    for k, v in query.items()})
        return verb, url, None if body is None else json.dumps(body).encode()

    def _rest_answer_v03(self, method, url, status, head, data):
        if status == 204 or (not data and 200 <= status < 300):
            return {} if method == "DeleteTaskPushNotificationConfig" else \
                self._from_v03(self.v03.rest_answer_from_v03, method, {})
        answer = _json_body(url, status, head, data)
        if answer is None:
            raise self._unauthorized(head)
        if status >= 400:
            found = self.v03.rest_error_from_v03(answer)
            if found is None:                # (a google.rpc.Status, or none of the two)
                raise _status_error(answer, status, head)
            raise error_from(found[0], found[1], http_status=status,
                             retry_after=_retry_after(head))
        if METHODS[method][2]:              # (a stream answered JSON: said by the caller)
            return answer
        return self._from_v03(self.v03.rest_answer_from_v03, method, answer)

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
        if self.withheld:
            return a2a_min.AuthenticationRequiredError(
                f"the agent wants credentials ({challenge}), and they were not sent: its card "
                f"names {self.url}, another origin than the one you gave ({self.card_url}); if "
                f"you trust it, allow it (--allow-host {_origin(self.url)[1]}, "
                "Client(allow_hosts=[...]))", challenge=challenge)
        return a2a_min.AuthenticationRequiredError(
            f"the agent wants credentials ({challenge}): pass them with --auth (auth=)",
            challenge=challenge)

    def _open_stream(self, stream, method, params, last_event_id):
        """The (id, StreamResponse) events of one streaming request, and its
        HTTP response (closed to end the stream)."""
        headers, span = self._traced(method)
        failed = None
        try:
            return self._open(stream, method, params, last_event_id, headers)
        except Exception as error:
            failed = error
            raise
        finally:
            if span is not None:               # (its span: until the stream is open)
                span.end(failed)

    def _open(self, stream, method, params, last_event_id, headers):
        if self._grpc is not None:
            return self._grpc.stream(method, params, headers, last_event_id), None
        headers = dict(headers, Accept="text/event-stream")
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        if self.binding == "JSONRPC":
            if self.v03 is not None:
                method, params = self.v03.request_v03(method, params)
            self._ids += 1
            url, verb = self.url, "POST"
            body = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method,
                               "params": params}).encode()
        elif self.v03 is not None:
            verb, url, body = self._rest_request_v03(method, params)
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
            elif self.v03 is not None:
                self._rest_answer_v03(method, url, resp.status, resp, data)
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
            elif self.v03 is not None:
                found = self.v03.rest_error_from_v03(event)
                if found is not None:
                    raise error_from(found[0], found[1])
                event = self._from_v03(lambda _, e: self.v03.rest_event_from_v03(e), None, event)
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



# -- showing the wire to a person: printable text, curl lines ------------------------------
#
# What the command line's verbs (a2a_cli.py) and check (a2a_check.py) print,
# here because both use it and a program may too. Text an agent sends
# (artifacts, status messages, errors, card fields) is printed for a person, often to a terminal, which obeys escape sequences in
# it: an OSC 52 sequence writes the user's clipboard, a CR or a CSI "erase
# line" rewrites what was printed (a forged "signature verified" line). Every
# C0 and C1 control character but newline and tab, and DEL, is shown as \xNN
# instead, in every verb and in check: their output streams pass through
# _Printable. (--json output is JSON, whose encoder escapes them already.)
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f,
                                          *range(0x80, 0xa0))}


def printable(text):
    """``text`` with its control characters (but newline and tab) shown as \\xNN."""
    return str(text).translate(_CONTROLS)


class _Printable:
    """A text stream whose writes pass through printable()."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        return self.stream.write(printable(text))

    def __getattr__(self, name):
        return getattr(self.stream, name)


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
            if name in secrets and not show_secrets:      # (the variable holds what --auth
                words.append(f'-H "{name}: ${secrets[name]}"'   # does: a value, or a header)
                             if name == "Authorization" else f'-H "${secrets[name]}"')
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


