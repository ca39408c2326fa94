"""Property-based tests (Hypothesis): no input, however hostile, breaks the server.

What holds for every input Hypothesis comes up with:

- ``parse(message_type, value)``, for every message of MESSAGES, given any JSON
  value or a value shaped like the message (wrong types, nulls, huge and
  negative numbers, odd strings, lone surrogates, nested Struct and Value
  fields): it returns a dict or raises InvalidParamsError naming a field, and
  what it returns is canonical (parsing it again gives it back).
- ``Server.handle_http(method, path, query, headers, body)``, in-process, for
  the JSON-RPC endpoint, the HTTP+JSON routes and the card, given any bytes,
  JSON of any shape, or valid-looking requests with mutated fields, and any
  path, query and headers: never a 500, never InternalError (the catch-all
  that hides an unexpected exception), nothing logged as an error. A unary
  answer is strict JSON in its binding's shape (a JSON-RPC Response object
  with the request's id and exactly one of result and error; a
  google.rpc.Status error body over HTTP+JSON); a stream is well-formed SSE
  frames and ends.
- ``_RequestReader`` (the HTTP/1.1 reader of both servers), given any bytes
  built from request heads, chunk lines and noise: it returns requests or
  refuses with a 4xx/501 BadRequest, never anything else, and reads the same
  requests whether the bytes come whole, in pieces or a byte at a time.
- ``_sse_frame`` and the stream wrapper ``_SSEStream``: any JSON value goes out
  as one ``data:`` line that parses back to the same value; keep-alives are
  comments; an error ends a stream with one last frame; the events are closed.

How long it searches: every property tries A2A_FUZZ_EXAMPLES inputs (default
200; the whole file takes a few seconds). Before a release, search longer
(20000 inputs per property take some minutes):

    A2A_FUZZ_EXAMPLES=20000 python -m pytest -q tests/test_fuzz.py

Hypothesis keeps the failing inputs it finds in .hypothesis/ and tries them
first on the next run; a failure prints the smallest input it could find, and
the statistics (``--hypothesis-show-statistics``) show which answers the
inputs reached.

Fixed bugs. Section 4 holds the inputs that broke a2a_min.py when this file
was first written (lone surrogates, NaN, digits int() refuses, deep page
tokens, odd timestamp years, HEAD on a stream, nesting near the parser's
limit), each a regression test; the search covers those inputs too.
"""

import asyncio
import base64
import json
import logging
import os
import re
import time
import urllib.parse

import pytest

from harness import V1, need

need("hypothesis", "the fuzz tests need Hypothesis (the test extra)")
import hypothesis  # noqa: E402
from hypothesis import HealthCheck, assume, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import a2a_min  # noqa: E402

EXAMPLES = int(os.environ.get("A2A_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

CARD_PATH = "/.well-known/agent-card.json"
MAX_BODY = 16384            # the fuzzed server's max_body_bytes: large bodies are cheap to try
KEEPALIVE = b": keep-alive\n"      # (a comment line alone: no empty event after it)
FRAME = re.compile(rb"(?:id: (0|[1-9][0-9]*)\n)?data: ([^\r\n]*)\n\n\Z")


# -- strict JSON ---------------------------------------------------------------------------

def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def strict_json(data):
    """RFC 8259 JSON from bytes: UTF-8, and no NaN or Infinity (which json.loads allows)."""
    return json.loads(data.decode("utf-8"), parse_constant=_no_constant)


# -- strategies: values ----------------------------------------------------------------------

ODD_STRINGS = [
    "", " ", "\x00", "\n", "\r\n", "\t", "\u2028", "\u0085", "\ufeff", "\uffff", "\U0001f600",
    "é", "\u0663\u0661", "\uff11", "-", "--1", "1-", "+1", "007", "1e3", "0x10", "2147483648",
    "-2147483649", "NaN", "Infinity", "null", "true", "[]", "{}", "AAAA", "A", "====", "a-_b",
    "2025-10-28T10:30:00Z", "2025-10-28T10:30:00.123456789+05:30", "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:60-23:59", "2025-02-30T24:60:61Z", "TASK_STATE_COMPLETED",
    "TASK_STATE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT", "ROLE_UNSPECIFIED", "wait", "direct",
    "/", "..", "%2F", "%", ":cancel", ":subscribe", "tasks", "x" * 300,
]
SURROGATES = ["\ud800", "a\udc00b", "\udfff", "\udbff\udbff"]      # lone surrogates

# Any str json.loads can make, lone surrogates included ...
TEXT = (st.text(st.characters(exclude_categories=()), max_size=20)
        | st.sampled_from(ODD_STRINGS + SURROGATES))
# ... and what hosts hand over as paths, queries and headers (never a surrogate).
PLAIN_TEXT = st.text(max_size=20) | st.sampled_from(ODD_STRINGS)
ODD_NUMBERS = st.sampled_from([0, -1, 1, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**63, -2**64,
                               10**30, 0.5, -0.0, 1.0, 1e308, -1e-308, 2.5e9])


# Characters str.isdigit() takes: superscripts (which int() refuses) and other
# scripts' digits (which it takes).
ODD_DIGITS = ["\u00b2", "\u00b9", "1\u00b3", "\u0663", "\uff11"]

# Hypothesis favours the first of sampled_from's choices (and small integers):
# the usual case comes first.
OFTEN = st.sampled_from([True, True, True, False])
RARELY = st.sampled_from([False] * 7 + [True])


def json_values(text, max_leaves=12):
    """Any value json.loads can return, strings from ``text``; NaN and Infinity
    too (json.loads takes them, though JSON has no such numbers)."""
    scalars = (st.none() | st.booleans() | st.integers() | ODD_NUMBERS | st.floats()
               | text)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(text, inner, max_size=4), max_leaves=max_leaves)


JSON = json_values(TEXT)


def nested(depth, leaf=1):
    """A value nested ``depth`` deep, objects and arrays in turn."""
    value = leaf
    for level in range(depth):
        value = {"x": value} if level % 2 else [value]
    return value


def _snake(name):
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _timestamps():
    digits = st.integers(0, 99).map(lambda n: "%02d" % n)
    return st.builds(lambda y, mo, d, h, mi, s, frac, zone:
                     f"{y}-{mo}-{d}T{h}:{mi}:{s}{frac}{zone}",
                     st.integers(0, 9999).map(lambda n: "%04d" % n), digits, digits, digits,
                     digits, digits,
                     st.sampled_from(["", ".1", ".123", ".123456789", ".1234567891"]),
                     st.sampled_from(["Z", "z", "+00:00", "-23:59", "+99:99", ""]))


def _datetimes():
    return st.datetimes().map(lambda d: f"{d.year:04d}-{d:%m-%dT%H:%M:%S.%f}Z")


def scalar_values(type_, valid):
    """Values for one scalar (or well-known type) of the MESSAGES table: ones
    that fit (``valid``), or those and near misses."""
    names = a2a_min.ENUMS.get(type_)
    if valid:
        if names:
            return st.sampled_from(names[1:])
        return {"string": TEXT, "bool": st.booleans(),
                "int32": st.integers(0, 100) | st.integers(-2**31, 2**31 - 1),
                "int64": st.integers(0, 100) | st.integers(-2**63, 2**63 - 1),
                "bytes": st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode()),
                "Timestamp": _datetimes(), "Struct": st.dictionaries(TEXT, JSON, max_size=4),
                "Value": JSON}[type_]
    if type_ == "string":
        return TEXT
    if type_ == "bool":
        return st.booleans() | st.sampled_from(["true", 0, 1])
    if type_ in ("int32", "int64"):
        return (st.integers(-2**63, 2**63 - 1) | ODD_NUMBERS
                | st.integers(-2**70, 2**70).map(str) | st.sampled_from(ODD_STRINGS))
    if type_ == "bytes":
        return (st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
                | st.binary(max_size=12).map(
                    lambda b: base64.urlsafe_b64encode(b).decode().rstrip("="))
                | TEXT)
    if type_ == "Timestamp":
        return _timestamps() | _datetimes() | TEXT
    if type_ == "Struct":
        return st.dictionaries(TEXT, JSON, max_size=4) | st.integers(1, 40).map(
            lambda depth: {"deep": nested(depth)})
    if type_ == "Value":
        return JSON | st.integers(1, 40).map(nested)
    return st.sampled_from(names) | st.integers(-2, len(names) + 1) | TEXT


@st.composite
def message_values(draw, message_type, valid=False, depth=0):
    """A dict shaped like ``message_type`` of MESSAGES. ``valid``: required
    fields set, one member of each oneof, values that fit. Otherwise each field
    is left out, given a value that fits or nearly does, a value of the wrong
    type, or null; under its camelCase or snake_case name; maybe with unknown
    fields besides."""
    rows = a2a_min.MESSAGES[message_type]
    chosen = {}                                  # oneof -> the member that is set
    for _, name, _, labels in rows:
        for word in labels.split():
            if word.startswith("oneof:") and word not in chosen:
                members = [r[1] for r in rows if word in r[3].split()]
                chosen[word] = draw(st.sampled_from(members))
    out = {}
    for _, name, type_, labels in rows:
        words = labels.split()
        oneof = next((w for w in words if w.startswith("oneof:")), None)
        if valid:
            if oneof and chosen[oneof] != name or not oneof and "required" not in words \
                    and draw(st.booleans()):
                continue
            how = "good"
        else:
            how = draw(st.sampled_from(("good",) * 4 + ("absent",) * 3 + ("wrong", "null")))
            if how == "absent" and not ("required" in words and draw(st.booleans())):
                continue
        key = draw(st.sampled_from((name, _snake(name)))) if not valid else name
        if how == "null":
            out[key] = None
            continue
        if how == "wrong":
            out[key] = draw(JSON)
            continue
        if name == "pageToken":
            out[key] = draw(page_tokens(TEXT))
        elif type_.startswith("map<"):
            one = _one_value(type_[4:-1].split(",")[1], valid, depth)
            out[key] = draw(st.dictionaries(TEXT, one, max_size=3))
        elif "repeated" in words:
            out[key] = draw(st.lists(_one_value(type_, valid, depth), min_size=valid and
                                     "required" in words, max_size=3))
        else:
            out[key] = draw(_one_value(type_, valid, depth))
    if not valid and draw(RARELY):
        out[draw(TEXT)] = draw(JSON)
    return out


def _token(text):
    return base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode().rstrip("=")


def page_tokens(text):
    """ListTasks page tokens: text, or what this server's tokens are made of
    (base64 of JSON), well or badly formed, and nested."""
    return (text | JSON.map(lambda v: _token(json.dumps(v)))
            | st.tuples(text, text).map(lambda pair: _token(json.dumps(list(pair))))
            | st.integers(1, 3000).map(lambda depth: _token("[" * depth + "]" * depth)))


def _one_value(type_, valid, depth):
    if type_ in a2a_min.MESSAGES:
        if depth >= 3:
            return st.just({})
        return message_values(type_, valid, depth + 1)
    return scalar_values(type_, valid)


@st.composite
def mutations(draw, value, count):
    """``value`` with ``count`` of its nodes replaced by any JSON, set to null,
    or deleted."""
    for _ in range(count):
        if not isinstance(value, (dict, list)) or not value:
            return draw(JSON)
        parent = value
        while True:                              # walk down to a random container
            key = draw(st.sampled_from(sorted(parent) if isinstance(parent, dict)
                                       else range(len(parent))))
            child = parent[key]
            if isinstance(child, (dict, list)) and child and draw(OFTEN):
                parent = child
                continue
            break
        what = draw(st.sampled_from(["replace", "replace", "null", "delete"]))
        if what == "delete":
            del parent[key]
        else:
            parent[key] = None if what == "null" else draw(JSON)
    return value


# -- 1. parse() ------------------------------------------------------------------------------

MESSAGE_TYPES = sorted(a2a_min.MESSAGES)


def check_parse(message_type, value):
    """parse() gives a canonical dict, or InvalidParamsError naming a field."""
    try:
        out = a2a_min.parse(message_type, value)
    except a2a_min.InvalidParamsError as error:
        assert isinstance(error.field, str) and error.field
        assert isinstance(error.message, str) and error.message
        return
    assert type(out) is dict
    names = {row[1] for row in a2a_min.MESSAGES[message_type]}
    assert set(out) <= names
    again = a2a_min.parse(message_type, out)
    assert json.dumps(again, sort_keys=True) == json.dumps(out, sort_keys=True)   # NaN == NaN


ODD_YEAR = re.compile(r"(\d{1,3}|\d{5,})-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")


@FUZZ
@given(st.sampled_from(MESSAGE_TYPES), JSON)
def test_parse_takes_any_json_value(message_type, value):
    check_parse(message_type, value)


@FUZZ
@given(st.data())
def test_parse_takes_any_value_shaped_like_the_message(data):
    message_type = data.draw(st.sampled_from(MESSAGE_TYPES), label="message_type")
    value = data.draw(message_values(message_type, valid=data.draw(st.booleans())),
                      label="value")
    check_parse(message_type, value)


# -- 2. handle_http() ------------------------------------------------------------------------

def fuzz_agent(ctx):
    """Ends at once: an echo, a direct message, or a task waiting for input."""
    if ctx.text == "wait":
        yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "say more")
    elif ctx.text == "direct":
        yield a2a_min.agent_message("a direct reply")
    else:
        yield a2a_min.status_update("TASK_STATE_WORKING")
        yield "echo: " + ctx.text


class ErrorLog(logging.Handler):
    """Collects what the "a2a_min" logger reports at ERROR: every unexpected
    exception the server catches is logged there."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records = []

    def emit(self, record):
        self.records.append(record)

    def take(self):
        """The messages so far, each with its exception (no traceback: formatting
        one parses source with ast, which Python 3.11 does not do safely while
        another thread does too)."""
        out = [r.getMessage() + (f": {r.exc_info[0].__name__}: {r.exc_info[1]}"
                                 if r.exc_info else "") for r in self.records]
        del self.records[:]
        return out


@pytest.fixture(scope="module")
def fuzzed():
    """One server for a whole test (its worker threads live as long as it):
    push notifications off (nothing may leave this machine), short keep-alives
    (streams never wait long), a small body limit."""
    server = a2a_min.Server(fuzz_agent, keepalive_interval=0.01, blocking_timeout=2,
                            max_body_bytes=MAX_BODY, max_workers=4, max_tasks=5000,
                            extended_card={"description": "The extended card."},
                            authenticate=lambda call: "fuzzer")   # (the extended card too)
    log = ErrorLog()
    logger = logging.getLogger("a2a_min")
    logger.addHandler(log)
    done = _send(server, "done")
    try:
        yield server, log, done
    finally:
        logger.removeHandler(log)
    assert server._pusher is None                 # no webhook was ever tried


def _send(server, text):
    answer = server.call("SendMessage", {"message": {
        "messageId": f"fuzz-{time.monotonic_ns()}", "role": "ROLE_USER",
        "parts": [{"text": text}]}})
    return answer["task"]["id"]


def _substitute(value, ids):
    """Replace the placeholder ids ("@live", "@done") with real task ids."""
    if isinstance(value, str):
        for placeholder, real in ids.items():
            value = value.replace(placeholder, real)
        return value
    if isinstance(value, list):
        return [_substitute(v, ids) for v in value]
    if isinstance(value, dict):
        return {_substitute(k, ids): _substitute(v, ids) for k, v in value.items()}
    return value


PLACEHOLDERS = st.sampled_from(["@live", "@done", "@live", "no-such-task"])
ENCODINGS = st.sampled_from(["utf-8"] * 6 + ["utf-8-sig", "utf-16", "utf-16-be", "utf-32"])


@st.composite
def request_params(draw, message_type):
    """Params for one request message: mostly valid with a few fields mutated,
    ids often naming real tasks; now and then anything shaped like it."""
    if draw(RARELY):
        return draw(message_values(message_type))
    params = draw(message_values(message_type, valid=True))
    for name in ("id", "taskId"):
        if name in params and draw(OFTEN):
            params[name] = draw(PLACEHOLDERS)
    if draw(OFTEN):                              # tasks are seen only within their tenant
        params.pop("tenant", None)
    message = params.get("message")
    if isinstance(message, dict):                # a message the agent will read
        message["role"] = "ROLE_USER"
        if draw(OFTEN):
            message["messageId"] = f"m-{draw(st.integers(0, 2**32))}"
            message["parts"] = [{"text": draw(st.sampled_from(["wait", "direct", "hi"]) | TEXT)}]
        if draw(OFTEN):              # a new task, or a turn of a real one
            message.pop("contextId", None)
            message.pop("taskId", None)
            if draw(st.booleans()):
                message["taskId"] = draw(PLACEHOLDERS)
        configuration = params.get("configuration", {})
        if draw(OFTEN):              # push is off: refused
            configuration.pop("taskPushNotificationConfig", None)
        if draw(st.booleans()):
            configuration.pop("historyLength", None)
    return draw(mutations(params, draw(st.sampled_from([0, 0, 0, 1, 2]))))


class Body:
    """How to make a request body once the placeholder ids are known: a JSON
    value in some encoding (maybe with a few bytes edited afterwards), or raw
    bytes."""

    def __init__(self, value=None, raw=None, ensure_ascii=True, encoding="utf-8", edits=()):
        self.value, self.raw = value, raw
        self.ensure_ascii, self.encoding, self.edits = ensure_ascii, encoding, edits

    def build(self, ids):
        """(body bytes, the JSON value they hold, if intact)."""
        if self.raw is not None:
            return self.raw, None
        value = _substitute(self.value, ids)
        data = bytearray(json.dumps(value, ensure_ascii=self.ensure_ascii).encode(
            self.encoding, "surrogatepass"))
        for at, what, payload in self.edits:
            at %= len(data) + 1
            if what == "insert" or at == len(data):
                data[at:at] = payload
            elif what == "replace":
                data[at:at + 1] = payload[:1]
            else:
                del data[at]
        return bytes(data), None if self.edits else value

    def mentions(self, placeholder):
        return self.raw is None and placeholder in json.dumps(self.value)

    def __repr__(self):
        return f"Body(value={self.value!r}, raw={self.raw!r}, encoding={self.encoding!r}, " \
               f"ensure_ascii={self.ensure_ascii}, edits={self.edits!r})"


EDITS = st.lists(st.tuples(st.integers(0, 1 << 16),
                           st.sampled_from(["replace", "insert", "delete"]),
                           st.binary(min_size=1, max_size=3)), min_size=1, max_size=4)


@st.composite
def bodies(draw, envelope):
    """``envelope`` as JSON in some encoding, maybe with bytes edited; or JSON of
    another shape; or any bytes; or none."""
    how = draw(st.sampled_from(["json"] * 12 + ["mutated", "other", "bytes", "empty"]))
    if how == "bytes":
        return Body(raw=draw(st.binary(max_size=64)))
    if how == "empty":
        return Body(raw=b"")
    return Body(draw(JSON) if how == "other" else envelope,
                ensure_ascii=draw(st.booleans()), encoding=draw(ENCODINGS),
                edits=draw(EDITS) if how == "mutated" else ())


HEADER_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=30)
CONTENT_TYPES = st.sampled_from(["application/json", "application/a2a+json",
                                 "application/json; charset=utf-8", "text/plain", "",
                                 "application/x-www-form-urlencoded", "APPLICATION/JSON",
                                 "application/vnd.api+json"]) | HEADER_TEXT


@st.composite
def headers(draw):
    out = {"a2a-version": "1.0", "content-type": "application/json"}
    if draw(RARELY):
        out["a2a-version"] = draw(st.sampled_from(["0.3", "1", "1.0.7", " 1.0 ", "2.0", ""])
                                  | HEADER_TEXT)
    if draw(RARELY):
        out["content-type"] = draw(CONTENT_TYPES)
    for name in draw(st.lists(st.sampled_from(
            ["a2a-extensions", "last-event-id", "accept", "if-none-match", "authorization",
             "x-api-key", "content-length", "host"]), max_size=3)):
        out[name] = draw(st.sampled_from(["0", "1", "-1", "99999999999999999999", "*", "text/html",
                                          "application/a2a+json", '"x"', ",,,"] + ODD_DIGITS)
                         | HEADER_TEXT)
    if draw(RARELY):
        del out[draw(st.sampled_from(["a2a-version", "content-type"]))]
    return out


QUERIES = st.one_of(
    st.just(""),
    st.lists(st.tuples(st.sampled_from(
        ["historyLength", "history_length", "pageSize", "pageToken", "status", "contextId",
         "includeArtifacts", "statusTimestampAfter", "tenant", "A2A-Version", "lastEventId",
         "Last-Event-ID", "id", "taskId"]) | PLAIN_TEXT, PLAIN_TEXT), max_size=4).map(
        urllib.parse.urlencode),
    page_tokens(PLAIN_TEXT).map(lambda token: urllib.parse.urlencode({"pageToken": token})),
    st.sampled_from(["%", "%zz", "&&", "=", "a=1&a=2", "historyLength=1&historyLength=2",
                     "status=3", "status=99", "status=%C2%B2", "status=%D9%A3",
                     "lastEventId=%C2%B9",
                     "includeArtifacts=yes", "pageSize=-1", "pageSize=%D9%A3",
                     "&".join(["a=1"] * 120)]),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30))

VERBS = st.sampled_from(["GET", "POST", "DELETE", "HEAD", "OPTIONS", "PUT", "PATCH", "get",
                         "BREW", ""])
SEGMENT = (st.sampled_from(["tasks", "message:send", "message:stream", "pushNotificationConfigs",
                            "extendedAgentCard", ".well-known", "agent-card.json", "", "..",
                            ":cancel", "x:cancel", ":subscribe", "%2F", "%41", "%", "%zz",
                            "%ED%A0%80", "@live", "@done"])
           | st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=8))


@st.composite
def paths(draw):
    """(path, the (verb, method) of the route it was made from, or None)."""
    how = draw(st.sampled_from(["route"] * 5 + ["fixed", "segments"]))
    if how == "fixed":
        return draw(st.sampled_from(["/", "", "//", CARD_PATH, CARD_PATH + "/", "/" + CARD_PATH,
                                     "/tasks/", "/tasks//x", "/message:send/",
                                     "/tenant/tasks"])), None
    if how == "segments":
        return "/" + "/".join(draw(st.lists(SEGMENT, max_size=5))), None
    verb, pattern, method = draw(st.sampled_from(a2a_min.ROUTES))
    path = pattern
    for name in ("{taskId}", "{id}"):
        if name in path:
            value = draw(PLACEHOLDERS | PLAIN_TEXT)
            if draw(st.booleans()):
                value = urllib.parse.quote(value, safe="")
            path = path.replace(name, value)
    if draw(RARELY):
        path = "/" + urllib.parse.quote(draw(PLAIN_TEXT), safe="") + path
    return path, (verb, method)


@st.composite
def http_requests(draw):
    """(verb, path, query, headers, body): anything a host could hand over,
    mostly aimed at a route, with that route's verb and request message."""
    path, route = draw(paths())
    if route is not None and draw(OFTEN):
        verb, method = route
        params = draw(request_params(a2a_min.METHODS[method][0]))
    else:
        verb, params = draw(VERBS), draw(JSON)
    if verb in ("GET", "DELETE", "HEAD") and draw(OFTEN):
        body = Body(raw=b"")
    else:
        body = draw(bodies(params))
    return verb, path, draw(QUERIES), draw(headers()), body


@st.composite
def jsonrpc_requests(draw):
    """(query, headers, body) for POST to the JSON-RPC endpoint."""
    name = draw(st.sampled_from(sorted(a2a_min.METHODS)))
    if draw(RARELY):
        name = draw(st.sampled_from(sorted(a2a_min.LEGACY_METHODS)) | TEXT)
    request_type = a2a_min.METHODS[name][0] if name in a2a_min.METHODS else "GetTaskRequest"
    request_id = draw(st.integers(-2**53, 2**53) | TEXT)
    if draw(RARELY):
        request_id = draw(st.sampled_from([None, True, 1.5, [], {}]) | JSON)
    envelope = {"jsonrpc": "2.0", "id": request_id, "method": name,
                "params": draw(request_params(request_type))}
    if draw(RARELY):
        envelope = draw(mutations(envelope, 1))
    query = draw(QUERIES) if draw(RARELY) else ""
    return query, draw(headers()), draw(bodies(envelope))


# The properties of one exchange.

def _content_type(response):
    return next((v for k, v in response.headers if k.lower() == "content-type"), "")


def check_jsonrpc_object(answer, expected_id):
    assert type(answer) is dict and answer.get("jsonrpc") == "2.0", answer
    assert "id" in answer and (answer["id"] is None or type(answer["id"]) in (int, str))
    if expected_id is not None:
        assert answer["id"] == expected_id, (answer["id"], expected_id)
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        error = answer["error"]
        assert type(error["code"]) is int and isinstance(error["message"], str), error
        assert isinstance(error.get("data", []), list)
        reasons = [d.get("reason") for d in error.get("data", []) if isinstance(d, dict)]
        assert "INTERNAL_ERROR" not in reasons, error["message"]


def check_status_error(answer, status):
    error = answer["error"]
    assert set(error) == {"code", "status", "message", "details"}, answer
    assert error["code"] == status and isinstance(error["status"], str)
    assert isinstance(error["message"], str) and isinstance(error["details"], list)
    assert error["status"] != "INTERNAL" or status != 500, error["message"]


def frames_in(chunks):
    """The SSE frames in a stream's chunks: one chunk holds the frames of the
    events that were ready together (_SSEStream._joined), each whole."""
    frames = []
    for chunk in chunks:
        while chunk:
            if chunk.startswith(KEEPALIVE):          # (a comment line, no blank line after it)
                cut = len(KEEPALIVE)
            else:
                cut = chunk.find(b"\n\n") + 2
                assert cut > 1, chunk                 # only whole frames
            frames.append(chunk[:cut])
            chunk = chunk[cut:]
    return frames


def check_stream(response, *, jsonrpc, expected_id):
    """Read a stream (at most 40 frames, 3 keep-alives in a row): well-formed
    SSE frames, an error frame only last; then it ends, or is closed."""
    assert response.status == 200 and _content_type(response) == "text/event-stream"
    frames, ticks, ended, last_id = 0, 0, False, None
    stream = iter(response.stream)
    ready = []
    try:
        while frames < 40 and ticks < 3:
            try:
                ready = ready or frames_in([next(stream)])
            except StopIteration:
                ended = True
                break
            frame = ready.pop(0)
            frames += 1
            if frame == KEEPALIVE:
                ticks += 1
                continue
            ticks = 0
            match = FRAME.match(frame)
            assert match, frame
            if match.group(1) is not None:
                seq = int(match.group(1))
                assert last_id is None or seq > last_id, (last_id, seq)
                last_id = seq
            payload = strict_json(match.group(2))
            if jsonrpc:
                check_jsonrpc_object(payload, expected_id)
                failed = "error" in payload
                event = payload.get("result")
            else:
                failed = "error" in payload
                if failed:
                    check_status_error(payload, payload["error"]["code"])
                event = None if failed else payload
            if event is not None:
                kinds = {"task", "message", "statusUpdate", "artifactUpdate"} & set(event)
                assert len(kinds) == 1 and len(event) == 1, event
            if failed:
                assert not ready and next(stream, None) is None, "an error frame must end it"
                ended = True
                break
    finally:
        response.stream.close()
    assert next(stream, None) is None                # closed: nothing more
    return ended


def check_exchange(server, verb, path, query, hdrs, body, envelope):
    """Send one request; hold the answer to its binding's shape."""
    response = server.handle_http(verb, path, query, dict(hdrs), body)
    assert response.pending is None
    assert response.status != 500 and 100 <= response.status < 600, response.body[:300]
    rpc = path.rstrip("/") == server.rpc_path.rstrip("/") and path != CARD_PATH
    jsonrpc = rpc and verb == "POST"
    expected_id = None
    if jsonrpc and isinstance(envelope, dict) and len(body) <= MAX_BODY:
        rid = envelope.get("id")
        ctype = hdrs.get("content-type", "").split(";")[0].strip().lower()
        # Refused before it is read (a2a_min.py, "Who may call"): a Host that is not one
        # or that the server does not answer to, or a body that does not say it is JSON.
        # Those answers have no id.
        host_ok = "host" not in hdrs or a2a_min._answers_to(server, hdrs["host"])
        if type(rid) in (int, str) and host_ok and (ctype == "application/json"
                                                    or ctype.endswith("+json")):
            expected_id = rid
    if response.stream is not None:
        assert verb in ("POST", "GET"), verb
        ended = check_stream(response, jsonrpc=jsonrpc, expected_id=expected_id)
        _event(f"stream, {'ended' if ended else 'closed'}")
        return response
    body_out = response.body
    if jsonrpc:
        assert response.status in (200, 413, 415, 421) or response.status == 400 and not \
            a2a_min._is_host(hdrs.get("host", "")), response.status
        answer = strict_json(body_out)
        check_jsonrpc_object(answer, expected_id)
        _event("JSON-RPC " + ("result" if "result" in answer else str(answer["error"]["code"])))
        return response
    _event(f"HTTP {response.status}")
    if response.status >= 400:
        answer = strict_json(body_out)
        if rpc:                                      # 405 at the JSON-RPC endpoint
            check_jsonrpc_object(answer, None)
        else:
            check_status_error(answer, response.status)
    elif response.status in (204, 304):
        assert body_out == b""
    elif rpc and verb in ("GET", "HEAD"):
        assert _content_type(response).startswith(("text/plain", "text/html"))
    else:
        assert _content_type(response).startswith(("application/json", "application/a2a+json"))
        assert type(strict_json(body_out)) is dict
    return response


def _exchange(fuzzed, verb, path, query, hdrs, body):
    """check_exchange with the placeholder ids made real, and nothing logged."""
    server, log, done = fuzzed
    log.take()
    ids = {"@done": done}
    if "@live" in path or body.mentions("@live"):
        ids["@live"] = _send(server, "wait")
    path = _substitute(path, ids)
    data, envelope = body.build(ids)
    try:
        check_exchange(server, verb, path, query, hdrs, data, envelope)
    finally:
        if "@live" in ids:
            try:
                server.call("CancelTask", {"id": ids["@live"]})
            except a2a_min.A2AError:
                pass                                 # the request ended it already
    errors = log.take()
    assert not errors, errors[0]


@FUZZ
@given(jsonrpc_requests())
def test_jsonrpc_endpoint_takes_anything(fuzzed, request):
    query, hdrs, body = request
    _exchange(fuzzed, "POST", "/", query, hdrs, body)


@FUZZ
@given(http_requests())
def test_http_routes_take_anything(fuzzed, request):
    _exchange(fuzzed, *request)


# -- 2b. The HTTP/1.1 reader -----------------------------------------------------------------

HEAD_PIECES = st.sampled_from([
    b"GET / HTTP/1.1\r\n", b"POST /message:send HTTP/1.1\r\n", b"POST / HTTP/1.0\r\n",
    b"Host: a\r\n", b"Content-Length: 5\r\n", b"Content-Length: 5, 5\r\n",
    b"Content-Length: -1\r\n", b"Content-Length: \xb2\r\n", b"Transfer-Encoding: chunked\r\n",
    b"Transfer-Encoding: gzip, chunked\r\n", b"Transfer-Encoding : chunked\r\n",
    b" folded\r\n", b"Expect: 100-continue\r\n", b"Connection: close\r\n", b"\r\n", b"\n",
    b"5\r\nhello\r\n", b"-6\r\n", b"0x3\r\n", b"0\r\n\r\n", b"3;x=y\r\nabc\r\n",
    b"Trailer: t\r\n", b"hello", b"\x00", b"\r"])
STREAMS = st.lists(st.one_of(HEAD_PIECES, st.binary(max_size=40)), max_size=12).map(b"".join)


def read_in_pieces(data, cuts):
    """Feed ``data`` to one _RequestReader in the pieces ``cuts`` make; return
    what came out: the requests, then the refusal's status or None."""
    reader = a2a_min._RequestReader(max_header_bytes=512, max_headers=8, max_body_bytes=64)
    buffer, out, at = bytearray(), [], 0
    for cut in sorted(set(cuts)) + [len(data)]:
        buffer += data[at:cut]
        at = max(at, cut)
        while True:
            try:
                request = reader.read(buffer)
            except a2a_min._BadRequest as bad:
                assert bad.status in (400, 408, 413, 414, 431, 501), bad.status
                assert isinstance(bad.error, a2a_min.A2AError) and bad.error.message
                return out, bad.status
            if request is None:
                break
            assert len(request.body) <= 64
            out.append((request.method, request.target, request.body, request.keep_alive,
                        sorted(request.headers.items())))
    return out, None


@FUZZ
@given(STREAMS, st.lists(st.integers(0, 600), max_size=10))
def test_the_http_reader_takes_any_bytes_in_any_pieces_alike(data, cuts):
    """Never another exception, never a hang, and the same requests (and the
    same refusal) whether the bytes come whole, a piece at a time, or a byte
    at a time: what was read is remembered, not read twice."""
    whole = read_in_pieces(data, [])
    assert read_in_pieces(data, [c for c in cuts if c <= len(data)]) == whole
    assert read_in_pieces(data, range(len(data))) == whole


# -- 3. SSE framing --------------------------------------------------------------------------

SEQS = st.none() | st.integers(0, 2**63)


@FUZZ
@given(SEQS, JSON)
def test_sse_frame_round_trips_any_json_value(seq, value):
    assume(not _non_finite(value))                   # (parse() refuses NaN and Infinity)
    frame = a2a_min._sse_frame(seq, value)
    match = FRAME.match(frame)
    assert match, frame
    assert (None if match.group(1) is None else int(match.group(1))) == seq
    assert strict_json(match.group(2)) == value


class Scripted:
    """A follower stand-in: gives (seq, event) pairs, (None, None) keep-alive
    ticks, or raises what the script holds; records close()."""

    def __init__(self, script):
        self.script = list(script)
        self.closed = False

    def __iter__(self):
        return self

    def __next__(self):
        if not self.script:
            raise StopIteration
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    keepalive = 1.0

    def poll(self, idle=False):
        """What a host on an event loop reads: the same script, never waiting."""
        return self.__next__()

    def watch(self, wake):
        pass

    def unwatch(self, wake):
        pass

    def close(self):
        self.closed = True


ERRORS = st.sampled_from([a2a_min.TaskNotFoundError("gone", metadata={"taskId": "t"}),
                          a2a_min.InvalidParamsError("bad", field="id"),
                          a2a_min.UnsupportedOperationError("no"),
                          ValueError("an agent's own exception")])
SCRIPTS = st.lists(st.one_of(st.tuples(SEQS, st.dictionaries(
    st.sampled_from(["task", "message", "statusUpdate", "artifactUpdate"]), JSON,
    min_size=1, max_size=1)), st.just((None, None)), ERRORS), max_size=8)


@FUZZ
@given(SCRIPTS, st.booleans(), st.booleans())
def test_sse_stream_frames_every_event_and_ends(script, jsonrpc, read_async):
    # Events come from checked tasks (parse() refuses NaN and Infinity).
    assume(not _non_finite([item for item in script if type(item) is tuple]))
    if jsonrpc:
        def wrap(event):
            return {"jsonrpc": "2.0", "id": 7, "result": event}

        def wrap_error(error):
            return a2a_min._jsonrpc_error(7, error)
    else:
        def wrap(event):
            return event
        wrap_error = a2a_min._status_error
    events = Scripted(script)
    stream = a2a_min._SSEStream(events, wrap, wrap_error)

    async def read_all():
        return [frame async for frame in a2a_min._LoopStream(stream, asyncio.get_running_loop())]
    logging.getLogger("a2a_min").disabled = True     # ValueError is logged, as it should be
    try:
        frames = frames_in(asyncio.run(read_all()) if read_async else list(stream))
    finally:
        logging.getLogger("a2a_min").disabled = False
    expected = []
    for item in script:
        if isinstance(item, Exception):
            error = item if isinstance(item, a2a_min.A2AError) else a2a_min.InternalError(
                "internal error; see the server log")
            expected.append((None, wrap_error(error)))
            break
        expected.append(item if item == (None, None) else (item[0], wrap(item[1])))
    assert len(frames) == len(expected)
    for frame, (seq, payload) in zip(frames, expected):
        if payload is None:
            assert frame == KEEPALIVE
            continue
        match = FRAME.match(frame)
        assert match, frame
        assert (None if match.group(1) is None else int(match.group(1))) == seq
        assert strict_json(match.group(2)) == payload
    assert events.closed
    assert list(stream) == []                        # ended: it stays ended


# -- 4. Fixed bugs ---------------------------------------------------------------------------
#
# Inputs that broke a2a_min.py, found by the tests above (and, for the hosts'
# Content-Length, by reading the code around a finding): each a regression
# test now.

def _rpc(method, params, request_id=1):
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                       "params": params}).encode()


def _message(text="hi", **fields):
    return {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}], **fields}


LONE_SURROGATE = ("a lone surrogate (e.g. \\ud800, legal in JSON text, or the bytes ED A0 80) "
                  "reaches the model; _dumps() cannot encode it as UTF-8 "
                  "(UnicodeEncodeError): the answer is InternalError or a 500, the task is "
                  "never stored in its final state")
NON_FINITE = ("NaN and Infinity (json.loads takes them) are kept in Struct and Value fields and "
              "written back as bare NaN/Infinity: the answer is not JSON (RFC 8259)")
ODD_DIGIT = ("a value that str.isdigit() takes but int() refuses (a superscript such as \u00b2, "
             "byte B2 in a latin-1 header) is passed to int(): ValueError, a 500 (JSON-RPC: "
             "InternalError)")
DEEP_TOKEN = ("a pageToken of base64 JSON nested deeper than json.loads can go raises "
              "RecursionError in _decode_page_token (it catches ValueError, TypeError and "
              "binascii.Error only): a 500 (JSON-RPC: InternalError)")
V1 = {"a2a-version": "1.0", "content-type": "application/json"}

# name, verb, path, query, headers, body, reason
KNOWN_BUGS = [
    ("surrogate-in-text", "POST", "/", "", V1,
     _rpc("SendMessage", {"message": _message("\ud800")}), LONE_SURROGATE),
    ("surrogate-in-text-rest", "POST", "/message:send", "", V1,
     json.dumps({"message": _message("\ud800")}).encode(), LONE_SURROGATE),
    ("surrogate-in-text-stream", "POST", "/message:stream", "", V1,
     json.dumps({"message": _message("\udc00")}).encode(), LONE_SURROGATE),
    ("surrogate-in-metadata-key", "POST", "/", "", V1,
     _rpc("SendMessage", {"message": _message(metadata={"\udc00": 1})}), LONE_SURROGATE),
    ("surrogate-in-method", "POST", "/", "", V1, _rpc("\ud800", {}), LONE_SURROGATE),
    ("surrogate-in-id", "POST", "/", "", V1,
     _rpc("GetTask", {"id": "x"}, request_id="\ud800"), LONE_SURROGATE),
    ("surrogate-in-task-id", "POST", "/", "", V1, _rpc("GetTask", {"id": "\ud800"}),
     LONE_SURROGATE),
    ("surrogate-in-message-task-id", "POST", "/message:send", "", V1,
     json.dumps({"message": _message(taskId="\ud800")}).encode(), LONE_SURROGATE),
    ("surrogate-as-utf8-bytes", "POST", "/", "", V1,
     b'{"jsonrpc":"2.0","id":1,"method":"\xed\xa0\x80","params":{}}', LONE_SURROGATE),
    ("nan-in-metadata", "POST", "/", "", V1,
     _rpc("SendMessage", {"message": _message()}).replace(
         b'"parts"', b'"metadata":{"x":NaN},"parts"'), NON_FINITE),
    ("infinity-in-data-part", "POST", "/message:send", "", V1,
     b'{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"data":1e999}]}}', NON_FINITE),
    ("superscript-last-event-id", "POST", "/", "", {**V1, "last-event-id": "\u00b2"},
     _rpc("GetTask", {"id": "x"}), ODD_DIGIT),
    ("superscript-last-event-id-rest", "GET", "/tasks/x:subscribe", "", {**V1,
     "last-event-id": "\u00b2"}, b"", ODD_DIGIT),
    ("superscript-status-in-query", "GET", "/tasks", "status=%C2%B2", V1, b"", ODD_DIGIT),
    ("deep-page-token", "POST", "/", "", V1,
     _rpc("ListTasks", {"pageToken": _token("[" * 5000 + "]" * 5000)}), DEEP_TOKEN),
    ("deep-page-token-in-query", "GET", "/tasks",
     "pageToken=" + _token("[" * 5000 + "]" * 5000), V1, b"", DEEP_TOKEN),
]


def _non_finite(value):
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_non_finite(v) for v in value)
    return False


def _event(text):
    """hypothesis.event(), which counts only inside a search (the regression
    tests below call the same checks outside one)."""
    try:
        event(text)
    except hypothesis.errors.InvalidArgument:
        pass


def _known_bug(check):
    """Run ``check`` on a fresh server; fail (plainly, without a traceback) with
    what went wrong: an exception, or an error the server logged."""
    server = a2a_min.Server(fuzz_agent, keepalive_interval=0.01, max_workers=2)
    log = ErrorLog()
    logging.getLogger("a2a_min").addHandler(log)
    try:
        try:
            check(server, log)
            problem = None
        except Exception as exc:                     # AssertionError included
            problem = f"{type(exc).__name__}: {exc}"
        time.sleep(0.1)                              # a streamed turn ends on a worker
        errors = log.take()
    finally:
        logging.getLogger("a2a_min").removeHandler(log)
    if problem or errors:
        pytest.fail(problem or f"logged: {errors[0]}", pytrace=False)


@pytest.mark.parametrize("verb, path, query, hdrs, body", [
    pytest.param(verb, path, query, hdrs, body, id=name)
    for name, verb, path, query, hdrs, body, reason in KNOWN_BUGS])
def test_fixed_bug(verb, path, query, hdrs, body):
    _known_bug(lambda server, log: check_exchange(server, verb, path, query, hdrs, body, None))


def test_fixed_bug_head_opens_a_stream():
    def check(server, log):
        task_id = _send(server, "wait")
        response = server.handle_http("HEAD", f"/tasks/{task_id}:subscribe", "", V1, b"")
        if response.stream is not None:
            response.stream.close()
        assert response.stream is None, "HEAD got a stream"
    _known_bug(check)


def _deepest_accepted(server, make_body):
    """The deepest nesting the server's JSON parser takes (searched by halves):
    deeper bodies are refused with ParseError ("nested too deeply")."""
    low, high = 1, 50_000
    while low < high:
        depth = (low + high + 1) // 2
        response = server.handle_http("POST", "/", "", dict(V1),
                                      make_body(depth))
        if b"nested too deeply" in response.body:
            high = depth - 1
        else:
            low = depth
    return low


def _nested_request(where, depth):
    value = '{"x":' * depth + "1" + "}" * depth
    if where == "metadata":
        content = '"parts":[{"text":"hi"}],"metadata":%s' % value
    else:
        content = '"parts":[{"data":%s}]' % value
    return ('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
            '{"messageId":"m","role":"ROLE_USER",%s}}}' % content).encode()


@pytest.mark.parametrize("where", ["metadata", "data-part"])
def test_fixed_bug_nesting_near_the_parsers_limit(where):
    def check(server, log):
        deepest = _deepest_accepted(server, lambda depth: _nested_request(where, depth))
        for depth in range(max(1, deepest - 12), deepest + 1):
            answer = strict_json(server.handle_http(
                "POST", "/", "", dict(V1), _nested_request(where, depth)).body)
            errors = log.take()
            assert not errors, f"depth {depth} of {deepest}: {errors[0]}"
            assert "result" in answer or answer["error"]["code"] == -32602, \
                f"depth {depth} of {deepest}: {answer['error']}"
    _known_bug(check)


def test_fixed_bug_sse_frame_of_a_lone_surrogate():
    def check(server, log):
        frame = a2a_min._sse_frame(1, {"text": "\ud800"})
        assert json.loads(FRAME.match(frame).group(2)) == {"text": "\ud800"}
    _known_bug(check)


def test_fixed_bug_timestamp_year_not_four_digits():
    def check(server, log):
        problems = []
        for given in ("0999-01-01T00:00:00Z", "9999-12-31T23:59:59-00:01"):
            try:
                out = a2a_min.parse("ListTasksRequest", {"statusTimestampAfter": given})
            except a2a_min.InvalidParamsError:
                continue                             # refusing one is right too
            if ODD_YEAR.match(out["statusTimestampAfter"]):
                problems.append(f"{given} -> {out['statusTimestampAfter']}")
        _send(server, "hi")
        listed = server.call("ListTasks", {"statusTimestampAfter": "0999-01-01T00:00:00Z"})
        if listed["totalSize"] != 1:
            problems.append(f"after 0999-01-01T00:00:00Z: {listed['totalSize']} tasks of 1")
        assert not problems, "; ".join(problems)
    _known_bug(check)


@pytest.mark.parametrize("host", ["threads", "asyncio"])
def test_fixed_bug_superscript_content_length(host):
    import socket
    from harness import AsyncioHostClient, Live

    def check(server, log):
        running = Live(server, timeout=3) if host == "threads" else AsyncioHostClient(server)
        try:
            with socket.create_connection(("127.0.0.1", running.port), timeout=5) as conn:
                conn.sendall(b"POST / HTTP/1.1\r\nHost: a2a\r\nA2A-Version: 1.0\r\n"
                             b"Content-Length: \xb2\r\n\r\n")
                head = conn.recv(64)
        finally:
            running.close()
        assert head.startswith(b"HTTP/1.1 400 "), head
    _known_bug(check)
