"""a2a_min: the smallest complete A2A 1.0 server, in one standard-library file.

A2A (Agent2Agent, https://a2a-protocol.org) lets one AI agent discover and call
another. This module is a whole A2A 1.0 server: the JSON-RPC 2.0 and HTTP+JSON
bindings on one port, Server-Sent Events streaming, the agent card, an in-memory
task store and a hand-written ProtoJSON codec. It needs Python 3.10+ and nothing
else. Copy this file into your project: it is meant to be vendored, read and
changed (the companions named below add what deployment needs).

Quick start::

    import a2a_min

    def agent(text):                       # the user's message, as text
        return "You said: " + text         # becomes an artifact; the task completes

    server = a2a_min.Server(agent, name="Echo", description="Repeats you.")
    a2a_min.serve(server, port=8000)       # http://127.0.0.1:8000/

    # curl -s localhost:8000/.well-known/agent-card.json
    # curl -s localhost:8000/ -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \\
    #   -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":
    #        {"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}'

Run ``python a2a_min.py`` for a demo agent and ready-to-paste curl lines.

Protocol: A2A 1.0 (specification v1.0.1, package ``lf.a2a.v1``); section numbers
in the comments are that specification's. Each section uses only what came before
it (but for the hosts' hooks). The protocol is synchronous and free of sockets and
event loops, but for the webhooks it sends; the last three sections meet the world:

1. tables: operations, routes, task states and their transitions, limits;
2. errors: one class per protocol error, knowing its code in every binding;
3. the data model: ProtoJSON dicts checked against the proto's table; _apply changes a task;
4. the task store: where tasks live, bounded, behind a small interface;
5. authentication, and which webhook addresses are allowed;
6. agent execution: how your function becomes task updates and stream events (the live tasks and
   their turns), and the observers that watch requests, turns and webhooks (logs, metrics, spans);
7. operations: the eleven A2A operations, free of any binding, and call(), their door;
8. bindings: JSON-RPC, HTTP+JSON, SSE and the agent card, as bytes;
9. webhook delivery: push notifications, sent from background threads;
10. the server: the Server that wires them together;
11. running on an event loop: the core's hooks, turned into asyncio;
12. adapters: threaded or asyncio HTTP/1.1 servers, WSGI, ASGI, AWS Lambda;
13. the command line demo.

The rule: this file alone answers every A2A 1.0 request in one process, with the bounded in-memory
store, on every bundled host: all eleven operations on JSON-RPC and HTTP+JSON, SSE with
Last-Event-ID, the card (ETag, caching) and the extended card, tenants, authentication hooks
(Bearer, API key, the certificate subject from an ssl.SSLContext it is given), per-caller shares,
push notification configs and their delivery with the address guard, graceful shutdown and stats().
What deployment needs lives in companion modules beside it, each imported only when asked for
(through _companion(), which names the file to copy):

- a2a_store.py: tasks in SQLite, shared by processes (--store, --workers, serve(workers=N));
  a2a_postgres.py: in PostgreSQL (psycopg);
- a2a_cli.py: the command line's deployment flags (--tls-* from files and their reload, --metrics,
  --access-log, --exec, --sign-key...) and the client's verbs; a2a_client.py: for programs;
- a2a_console.py: the page a browser gets at GET /;
- a2a_catalog.py: the RFC 9727 API catalog and the AI catalog of the agents served here;
- a2a_signing.py: signed cards (RFC 8785, JWS; keys need cryptography);
- a2a_metrics.py: Prometheus metrics; a2a_otel.py: OpenTelemetry spans;
- a2a_grpc.py: the gRPC binding (grpcio); a2a_v03.py: A2A 0.3 clients.

TLS here is an ssl.SSLContext given to serve(). This file trusts the agent it is given; what it is
sent is network input, held to the limits of section 1 (DEFAULT_LIMITS).

MIT License. Copyright (c) 2026 the a2a_min authors. The full text is in the LICENSE file beside it
in its repository and must accompany copies of this file.
"""

__all__ = [
    # the server, and the hosts that put it on a socket or under another server
    "Server", "Observer", "serve", "serve_asyncio", "make_http_server", "wsgi_app", "asgi_app",
    "lambda_handler",
    # what an agent is given, and what it returns or yields
    "RequestContext", "text_part", "data_part", "file_part", "status_update", "artifact_update",
    "agent_message",
    # who is calling, and where tasks live
    "CallContext", "BearerAuth", "ApiKeyAuth", "MutualTlsAuth", "TaskStore",
    # (A TraceContext, W3C Trace Context, is what CallContext.trace and
    # RequestContext.trace give; a Request and its Response are what a host
    # adapter and an Observer are handed: each is reached, not named.)
    # errors: the base, and those an agent, a hook or a store raises (the rest: the server's)
    "A2AError", "InvalidParamsError", "TaskNotFoundError", "UnsupportedOperationError",
    "ContentTypeNotSupportedError", "InvalidAgentResponseError", "ExtensionSupportRequiredError",
    "AuthenticationRequiredError", "InternalError", "TaskStoreFullError", "ConflictError",
    # the protocol as data
    "PROTOCOL_VERSION", "METHODS", "ROUTES", "TRANSITIONS", "TERMINAL_STATES",
    "INTERRUPTED_STATES", "MESSAGES", "ENUMS", "parse",
]

# The private names a companion module may use besides __all__ (not for applications:
# they change with this file). tests/test_architecture.py fails on any other one.
COMPANION_API = (
    # reaching companions; the log; ids; the command line that a2a_cli.py extends
    "_companion", "_log", "_new_id", "_parse_traceparent", "_prog", "_demo_parser", "_demo_options", "_serve_demo",
    "_one_line_errors", "_tls_arguments", "_tls_context",
    # ProtoJSON's field names and base64, as the data model writes them
    "_snake", "_b64encode", "_b64decode", "_dumps",
    # the store contract (section 4): the one bounds policy, and what every store shares
    "_Bounds", "_IDLE_STATES", "_StoredTask", "_StoredEvent", "_decode_stored", "_decoded_size",
    "_RECENT", "_RECENT_BYTES", "_RECENT_DECODED", "_check_version", "_cut_history",
    "_no_longer_stored", "_over_share", "_store_full", "_too_many_configs", "_with_pending",
    # a shared store's live tasks (agent execution) and its threads on an event loop
    "_LiveTasks", "_call_on",
    # the bindings' pieces that another binding or page builds on; what
    # a binding tells the observers (Observer)
    "_started", "_returned", "_answered",
    "_JSON", "_LINK", "_CARD_PATH", "_answer", "_card_response", "_error_headers",
    "_json_body", "_jsonrpc_error", "_discovery_headers", "_last_event_id", "_parse_json_body",
    "_query_params", "_sse_response", "_Peer", "_may_reach",
    # whom a listener of a companion's answers (a Host header the server answers to)
    "_answers_to",
)

__version__ = "0.3.0"
PROTOCOL_VERSION = "1.0"
PREVIEW_VERSION = "1.1"    # the draft (branch dev-1.1), served to a client that asks for it

import binascii
import contextvars
import functools
import json
import os
import sys
import threading
import time
from collections import OrderedDict, deque
from types import AsyncGeneratorType, GeneratorType

if sys.version_info < (3, 10):        # (once, here: an older Python fails later, and obscurely)
    _OLD = (f"a2a_min needs Python 3.10 or newer; this is Python "
            f"{'.'.join(map(str, sys.version_info[:3]))} ({sys.executable})")
    if __name__ == "__main__":
        sys.exit(_OLD)
    raise ImportError(_OLD)

# Start-up time matters (serverless hosts start a process per cold request), so modules
# needed only on some paths (logging, re, asyncio, ...) are imported where used, and
# base64 is done with binascii (the base64 module imports re, ~12 ms).

# Companions import this module; it reaches them only through _companion(), so the
# import graph stays a tree. ``a2a_min.SQLiteStore`` works through __getattr__ (PEP 562).
_FORWARDED = dict.fromkeys(("SQLiteStore", "SQLITE_SCHEMA_VERSION"), "a2a_store")


def _companion(name, wanted_by):
    """The companion module ``name``, imported when ``wanted_by`` (an option, a
    class) first asks for it; if missing, ModuleNotFoundError names the file to copy."""
    try:
        return __import__(name)          # (sys.modules' entry, once imported)
    except ModuleNotFoundError as error:
        if error.name != name:                  # (what the companion itself needs)
            raise
        raise ModuleNotFoundError(
            f"{wanted_by} needs the companion module {name}.py: copy it from the a2a_min "
            f"repository beside a2a_min.py ({os.path.dirname(os.path.abspath(__file__))})",
            name=name) from None


def __getattr__(name):
    if name in _FORWARDED:
        return getattr(_companion(_FORWARDED[name], f"a2a_min.{name}"), name)
    raise AttributeError(f"module 'a2a_min' has no attribute {name!r}")


def _log():
    """The "a2a_min" logger (imported on first use: logging costs ~10 ms to import)."""
    import logging
    return logging.getLogger("a2a_min")


def _in_trace(holder):
    """" (trace <id>)" for an error line about a request or turn (its CallContext
    or RequestContext, or None) that runs in a trace: W3C Trace Context below."""
    trace = holder and holder.trace
    return f" (trace {trace.trace_id})" if trace else ""


def _new_id():
    """A new id: a version 7 UUID (RFC 9562, section 5.7): the Unix time in ms, then
    random bits, so ids made in turn sort together and a store's index grows at its end."""
    return _uuid7_head(int(time.time() * 1000)) + _uuid7_tail(os.urandom(10).hex())


def _uuid7_head(ms):
    """A version 7 UUID's first 15 characters: the time, and its version."""
    t = f"{ms:012x}"
    return f"{t[:8]}-{t[8:]}-7"


def _uuid7_tail(h):
    """... and the rest, from 19 random hex digits (the variant is 10)."""
    return f"{h[:3]}-{'89ab'[int(h[3], 16) & 3]}{h[4:7]}-{h[7:19]}"


# =============================================================================
# 1. Tables
# =============================================================================
#
# The protocol as data. A2A 1.0 defines eleven operations (section 3.1) and maps each onto every
# binding. The JSON-RPC binding (section 9) names its methods like the gRPC rpcs of service
# lf.a2a.v1.A2AService. Each entry: JSON-RPC method -> (request message, response message,
# streams?); OPERATIONS, after the Server class, names the method implementing each.

METHODS = {
    "SendMessage": ("SendMessageRequest", "SendMessageResponse", False),
    "SendStreamingMessage": ("SendMessageRequest", "StreamResponse", True),
    "GetTask": ("GetTaskRequest", "Task", False),
    "ListTasks": ("ListTasksRequest", "ListTasksResponse", False),
    "CancelTask": ("CancelTaskRequest", "Task", False),
    "SubscribeToTask": ("SubscribeToTaskRequest", "StreamResponse", True),
    "CreateTaskPushNotificationConfig": (
        "TaskPushNotificationConfig", "TaskPushNotificationConfig", False),
    "GetTaskPushNotificationConfig": (
        "GetTaskPushNotificationConfigRequest", "TaskPushNotificationConfig", False),
    "ListTaskPushNotificationConfigs": (
        "ListTaskPushNotificationConfigsRequest", "ListTaskPushNotificationConfigsResponse", False),
    "DeleteTaskPushNotificationConfig": (
        "DeleteTaskPushNotificationConfigRequest", "google.protobuf.Empty", False),
    "GetExtendedAgentCard": ("GetExtendedAgentCardRequest", "AgentCard", False),
}

# The HTTP+JSON binding (section 11.3): the same operations as REST routes, from the proto's
# google.api.http annotations. {name} is a path variable filling the request field of that name;
# every route is also served under /{tenant}/..., which fills the request's tenant. GET and
# DELETE take their other fields from the query string, POST from the body. SubscribeToTask is
# GET in the proto and POST in the specification's table: both are served.
ROUTES = (
    ("POST", "/message:send", "SendMessage"),
    ("POST", "/message:stream", "SendStreamingMessage"),
    ("GET", "/tasks/{id}", "GetTask"),
    ("GET", "/tasks", "ListTasks"),
    ("POST", "/tasks/{id}:cancel", "CancelTask"),
    ("GET", "/tasks/{id}:subscribe", "SubscribeToTask"),
    ("POST", "/tasks/{id}:subscribe", "SubscribeToTask"),
    ("POST", "/tasks/{taskId}/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
    ("GET", "/tasks/{taskId}/pushNotificationConfigs/{id}", "GetTaskPushNotificationConfig"),
    ("GET", "/tasks/{taskId}/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
    ("DELETE", "/tasks/{taskId}/pushNotificationConfigs/{id}", "DeleteTaskPushNotificationConfig"),
    ("GET", "/extendedAgentCard", "GetExtendedAgentCard"),
)

# A2A 0.3's slash-separated JSON-RPC names: not aliases (a 0.3 client would misread 1.0
# answers), they only say which 1.0 method the caller wants.
LEGACY_METHODS = {
    "message/send": "SendMessage", "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask", "tasks/list": "ListTasks", "tasks/cancel": "CancelTask",
    "tasks/resubscribe": "SubscribeToTask",
    "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigs",
    "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
    "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
}

# Task states (section 4.1.3). A task is born SUBMITTED with the user's first message; while an
# agent works on it, it is SUBMITTED or WORKING; an interrupted task waits for the client (more
# input, or authentication); a terminal task never changes again.
TERMINAL_STATES = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_FAILED",
                             "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"})
INTERRUPTED_STATES = frozenset({"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"})
_WORKING_STATES = frozenset({"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"})
_OPEN_STATES = _WORKING_STATES | INTERRUPTED_STATES     # every state but the terminal ones
_IDLE_STATES = TERMINAL_STATES | INTERRUPTED_STATES     # no agent is working on the task

# Every change to a task is one of these events, applied by _apply (section 3): event -> (the
# states it may meet, the state it leaves). None is a task not yet made; "=" keeps the state,
# "*" takes the one the event names; any other state refuses the event. A task takes one message
# at a time: "input" meets only a task waiting for it (a working one has a turn running, perhaps
# in another process) and takes it to WORKING, never back to SUBMITTED: a stream hears of it as
# a TaskStatusUpdateEvent, since a Task comes only first (section 3.1.2).
TRANSITIONS = {
    "message": ({None}, "TASK_STATE_SUBMITTED"),                  # the user: a new task
    "input": (INTERRUPTED_STATES, "TASK_STATE_WORKING"),          # the user: a waiting task's next turn
    "statusUpdate": (_OPEN_STATES, "*"),                          # the agent: where the task stands
    "artifactUpdate": (_OPEN_STATES, "="),                        # the agent: an artifact, or more of one
    "cancel": (_OPEN_STATES, "TASK_STATE_CANCELED"),              # the client: CancelTask
}

# Default limits. Every one is a keyword argument of Server or TaskStore.
DEFAULT_LIMITS = {
    "max_body_bytes": 1 << 20,        # 1 MiB request body
    "blocking_timeout": 60.0,         # seconds a blocking SendMessage waits
    "long_poll_wait": 25.0,           # seconds a GetTask with currentGeneration (1.1) may wait
                                      # (under a 30 s client timeout, and API Gateway's 29 s)
    "keepalive_interval": 15.0,       # seconds between SSE keep-alive comments
    "first_event_wait": 0.04,         # seconds a new task's stream waits for the agent's first
                                      # output before it sends the Task (its first event)
    "replay_buffer": 256,             # stream events kept per task for Last-Event-ID
    "max_tasks": 10_000,              # tasks in the in-memory store
    "task_ttl": 3600.0,               # seconds a finished task is kept
    "max_history": 100,               # messages kept in a task's history
    "max_store_bytes": 128 << 20,     # bytes of tasks in the in-memory store
    "max_tasks_per_caller": 2_500,    # tasks one caller may hold in the store
    "max_bytes_per_caller": 32 << 20, # bytes of tasks one caller may hold
    "max_page_bytes": 4 << 20,        # bytes of tasks in one ListTasks page
    "replay_buffer_bytes": 1 << 20,   # bytes of stream events kept per task
    "default_page_size": 50, "max_page_size": 100,      # ListTasks
    "max_workers": 64,                # threads running sync agents at once
    "max_push_configs": 10,           # webhooks per task
    "push_timeout": 10.0,             # seconds for one whole webhook attempt (connect to answer)
    "push_retries": 3,                # further attempts after a connection error or 5xx
    "push_backoff": 0.5,              # seconds before the first retry (doubles, with jitter)
    "push_queue": 1000,               # deliveries waiting per caller; more are dropped, counted
    "push_workers": 4,                # delivery threads, shared by the callers in turn
    "push_per_caller": 2,             # a caller's attempts in flight at once (other destinations)
    "push_breaker": 5,                # attempts failed in a row that pause a destination...
    "push_pause": 30.0,               # ...for this many seconds (its deliveries are dropped)
    "push_destinations": 100,         # destinations remembered per caller (their failure counts)
    "push_max_response": 65536,       # bytes of a webhook's answer read to find its status
    "push_callers": 10_000,           # callers whose delivery counters are kept (idle ones go)
    "push_queue_bytes": 8 << 20,      # bytes of event bodies waiting per caller; more are dropped
    "push_log_interval": 10.0,        # seconds between two warnings summing up failed deliveries
    "max_turn_events": 100_000,       # events one turn of an agent may produce (then it FAILS)
    "max_turn_bytes": 32 << 20,       # bytes of JSON of the events one turn may produce (ditto)
    "max_caller_streams": 100,        # streams one caller may have open at once (then 429)
    "idempotency_window": 3600.0,     # seconds a repeated send answers as its first (0: off)
}


# =============================================================================
# 2. Errors
# =============================================================================
#
# One hierarchy, one table (section 5.4). Every error knows how it looks in each
# binding: its JSON-RPC code, gRPC status, HTTP status and google.rpc.ErrorInfo
# reason, so rendering it is a pure function of the error (see _jsonrpc_error).
# Messages are written for the person at the other end: each says what to do next.

ERROR_DOMAIN = "a2a-protocol.org"


class A2AError(Exception):
    """Base of every error this server answers with. ``message`` is shown to the
    client; ``metadata`` lands in the ErrorInfo detail (string values); ``field``
    names the offending request field (a google.rpc.BadRequest field violation);
    ``challenge``, the HTTP WWW-Authenticate value of an error about credentials
    (RFC 6750 section 3), makes JSON-RPC answer with the error's HTTP status too."""
    code, grpc_status, http_status, reason = -32603, "INTERNAL", 500, "INTERNAL_ERROR"
    retry_after = challenge = None  # (retry_after: seconds, for errors to try again after)

    def __init__(self, message, *, field=None, metadata=None, challenge=None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.metadata = metadata or {}
        self.challenge = challenge or self.challenge

    def details(self):
        """The typed details of this error (google.rpc.Status.details)."""
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": self.reason, "domain": ERROR_DOMAIN}
        if self.metadata:
            info["metadata"] = {k: str(v) for k, v in self.metadata.items()}
        out = [info]
        if self.field is not None:
            out.append({"@type": "type.googleapis.com/google.rpc.BadRequest",
                        "fieldViolations": [{"field": self.field, "description": self.message}]})
        return out


# JSON-RPC 2.0's own errors (JSON-RPC 2.0 specification, section 5.1).

class ParseError(A2AError):
    """The body is not valid JSON (or not UTF-8)."""
    code, grpc_status, http_status, reason = -32700, "INVALID_ARGUMENT", 400, "PARSE_ERROR"

class InvalidRequestError(A2AError):
    """The JSON is not a single JSON-RPC 2.0 Request object."""
    code, grpc_status, http_status, reason = -32600, "INVALID_ARGUMENT", 400, "INVALID_REQUEST"

class MethodNotFoundError(A2AError):
    """The method is not one of the eleven A2A 1.0 methods."""
    code, grpc_status, http_status, reason = -32601, "UNIMPLEMENTED", 404, "METHOD_NOT_FOUND"

class InvalidParamsError(A2AError):
    """The params do not match the request message of the proto."""
    code, grpc_status, http_status, reason = -32602, "INVALID_ARGUMENT", 400, "INVALID_PARAMS"

class InternalError(A2AError):
    """Something failed inside the server; details are in the server log."""

class PayloadTooLargeError(InvalidRequestError):
    """The request body is larger than the server accepts (max_body_bytes)."""
    grpc_status, http_status, reason = "RESOURCE_EXHAUSTED", 413, "PAYLOAD_TOO_LARGE"

class TaskStoreFullError(InternalError):
    """Every slot of the task store holds an unfinished task."""
    grpc_status, http_status, reason = "RESOURCE_EXHAUSTED", 503, "TASK_STORE_FULL"
    retry_after = 5

class CallerLimitError(TaskStoreFullError):
    """One caller reached a limit of its own (the ErrorInfo metadata names the
    limit and its value); HTTP answers carry Retry-After."""
    http_status, reason = 429, "CALLER_LIMIT"

class ServerBusyError(A2AError):
    """The server is at its connection limit; try again shortly."""
    code, grpc_status, http_status, reason = -32603, "UNAVAILABLE", 503, "SERVER_BUSY"
    retry_after = 1


class AuthenticationRequiredError(A2AError):
    """Missing or invalid credentials (section 3.3.2); ``challenge`` is the HTTP
    WWW-Authenticate value. -31401: the specification gives JSON-RPC no code for it."""
    code, grpc_status, http_status, reason = -31401, "UNAUTHENTICATED", 401, "UNAUTHENTICATED"
    challenge = "Bearer"


# The A2A errors (section 5.4, table of error codes).

class TaskNotFoundError(A2AError):
    """No task with that id, or none the caller may see."""
    code, grpc_status, http_status, reason = -32001, "NOT_FOUND", 404, "TASK_NOT_FOUND"

class TaskNotCancelableError(A2AError):
    """The task is in a state that cannot be canceled (it already ended)."""
    code, grpc_status, http_status, reason = -32002, "FAILED_PRECONDITION", 400, "TASK_NOT_CANCELABLE"

class PushNotificationNotSupportedError(A2AError):
    """The agent card says pushNotifications: false."""
    code, grpc_status, http_status, reason = (
        -32003, "FAILED_PRECONDITION", 400, "PUSH_NOTIFICATION_NOT_SUPPORTED")

class UnsupportedOperationError(A2AError):
    """The operation is not supported here, or not in the task's state."""
    code, grpc_status, http_status, reason = -32004, "FAILED_PRECONDITION", 400, "UNSUPPORTED_OPERATION"

class ConflictError(UnsupportedOperationError):
    """The task changed since the writer read it: the store refused a lost update. The
    server reads again and retries; one reaching a client means two requests raced."""

class ContentTypeNotSupportedError(A2AError):
    """A media type the agent (or this binding) does not accept."""
    code, grpc_status, http_status, reason = (
        -32005, "INVALID_ARGUMENT", 400, "CONTENT_TYPE_NOT_SUPPORTED")

class InvalidAgentResponseError(A2AError):
    """The agent produced something that is not valid A2A."""
    code, grpc_status, http_status, reason = -32006, "INTERNAL", 500, "INVALID_AGENT_RESPONSE"

class ExtendedAgentCardNotConfiguredError(A2AError):
    """The card promises an extended card but none is configured."""
    code, grpc_status, http_status, reason = (
        -32007, "FAILED_PRECONDITION", 400, "EXTENDED_AGENT_CARD_NOT_CONFIGURED")

class ExtensionSupportRequiredError(A2AError):
    """The card marks an extension required and the request did not announce it."""
    code, grpc_status, http_status, reason = (
        -32008, "FAILED_PRECONDITION", 400, "EXTENSION_SUPPORT_REQUIRED")

class VersionNotSupportedError(A2AError):
    """The A2A-Version asked for is not one this server speaks."""
    code, grpc_status, http_status, reason = -32009, "FAILED_PRECONDITION", 400, "VERSION_NOT_SUPPORTED"


class TaskGenerationMismatchError(A2AError):
    """A2A 1.1 (draft): ifGenerationMatch names a generation the task has left."""
    code, grpc_status, http_status, reason = -32010, "ABORTED", 409, "TASK_GENERATION_MISMATCH"


# This server's own: a send that may be repeated (IDEMPOTENT_SEND).

class IdempotencyKeyReusedError(InvalidParamsError):
    """A send repeats an earlier one's messageId (or Idempotency-Key) with another message."""
    http_status, reason = 422, "IDEMPOTENCY_KEY_REUSED"

class SendInFlightError(ConflictError):
    """A repeated send whose first is still running and has made no task yet."""
    grpc_status, http_status, reason, retry_after = "ABORTED", 409, "SEND_IN_FLIGHT", 1


# =============================================================================
# 3. The data model: ProtoJSON dictionaries
# =============================================================================
#
# A2A's normative data model is the proto file (section 4, specification/
# a2a.proto). Over JSON it travels as ProtoJSON (section 5.5): lowerCamelCase
# names, enums as their full names, bytes as base64, timestamps as RFC 3339.
#
# This server uses the wire form as its model: a Task *is* the dict you see in the JSON.
# MESSAGES mirrors the proto field by field (number, JSON name, type, labels: "required" for
# field_behavior REQUIRED, "optional" for proto3 optional, which keeps presence even at the
# default, "repeated", "oneof:NAME"; a map's type is "map<K,V>"); a test holds it to
# proto/a2a.proto. parse() checks a request, or what an agent produces, against it and returns
# the canonical form: camelCase names (snake_case accepted), enum names (integers accepted),
# standard base64, normalized timestamps, defaults dropped, unknown fields ignored. The section
# ends with _apply, the one function taking a task and an event to the next task.

MESSAGES = {
    # How a SendMessage is to be answered (section 3.2).
    "SendMessageConfiguration": (
        (1, "acceptedOutputModes", "string", "repeated"),
        (2, "taskPushNotificationConfig", "TaskPushNotificationConfig", ""),
        (3, "historyLength", "int32", "optional"), (4, "returnImmediately", "bool", ""),
        (5, "ifGenerationMatch", "int64", "optional")),       # (1.1, and the rest of "int64")
    # The core objects (section 4.1): a task, its status, history and artifacts.
    "Task": (
        (1, "id", "string", "required"), (2, "contextId", "string", ""),
        (3, "status", "TaskStatus", "required"), (4, "artifacts", "Artifact", "repeated"),
        (5, "history", "Message", "repeated"), (6, "metadata", "Struct", ""),
        (7, "generation", "int64", "")),
    "TaskStatus": (
        (1, "state", "TaskState", "required"), (2, "message", "Message", ""),
        (3, "timestamp", "Timestamp", "")),
    "Part": (
        (1, "text", "string", "oneof:content"), (2, "raw", "bytes", "oneof:content"),
        (3, "url", "string", "oneof:content"), (4, "data", "Value", "oneof:content"),
        (5, "metadata", "Struct", ""), (6, "filename", "string", ""),
        (7, "mediaType", "string", "")),
    "Message": (
        (1, "messageId", "string", "required"), (2, "contextId", "string", ""),
        (3, "taskId", "string", ""), (4, "role", "Role", "required"),
        (5, "parts", "Part", "repeated required"), (6, "metadata", "Struct", ""),
        (7, "extensions", "string", "repeated"), (8, "referenceTaskIds", "string", "repeated")),
    "Artifact": (
        (1, "artifactId", "string", "required"), (2, "name", "string", ""),
        (3, "description", "string", ""), (4, "parts", "Part", "repeated required"),
        (5, "metadata", "Struct", ""), (6, "extensions", "string", "repeated")),
    # The streaming events (section 4.2): what a stream or a webhook says changed.
    "TaskStatusUpdateEvent": (
        (1, "taskId", "string", "required"), (2, "contextId", "string", "required"),
        (3, "status", "TaskStatus", "required"), (4, "metadata", "Struct", ""),
        (5, "generation", "int64", "")),
    "TaskArtifactUpdateEvent": (
        (1, "taskId", "string", "required"), (2, "contextId", "string", "required"),
        (3, "artifact", "Artifact", "required"), (4, "append", "bool", ""),
        (5, "lastChunk", "bool", ""), (6, "metadata", "Struct", ""),
        (7, "generation", "int64", "")),
    # How a webhook call authenticates itself (section 4.3.2).
    "AuthenticationInfo": ((1, "scheme", "string", "required"), (2, "credentials", "string", "")),
    # The agent discovery objects (section 4.4): the card and what it holds.
    "AgentInterface": (
        (1, "url", "string", "required"), (2, "protocolBinding", "string", "required"),
        (3, "tenant", "string", ""), (4, "protocolVersion", "string", "required")),
    "AgentCard": (
        (1, "name", "string", "required"), (2, "description", "string", "required"),
        (3, "supportedInterfaces", "AgentInterface", "repeated required"),
        (4, "provider", "AgentProvider", ""), (5, "version", "string", "required"),
        (6, "documentationUrl", "string", "optional"),
        (7, "capabilities", "AgentCapabilities", "required"),
        (8, "securitySchemes", "map<string,SecurityScheme>", ""),
        (9, "securityRequirements", "SecurityRequirement", "repeated"),
        (10, "defaultInputModes", "string", "repeated required"),
        (11, "defaultOutputModes", "string", "repeated required"),
        (12, "skills", "AgentSkill", "repeated required"),
        (13, "signatures", "AgentCardSignature", "repeated"),
        (14, "iconUrl", "string", "optional")),
    "AgentProvider": ((1, "url", "string", "required"), (2, "organization", "string", "required")),
    "AgentCapabilities": (
        (1, "streaming", "bool", "optional"), (2, "pushNotifications", "bool", "optional"),
        (3, "extensions", "AgentExtension", "repeated"),
        (4, "extendedAgentCard", "bool", "optional")),
    "AgentExtension": (
        (1, "uri", "string", ""), (2, "description", "string", ""), (3, "required", "bool", ""),
        (4, "params", "Struct", "")),
    "AgentSkill": (
        (1, "id", "string", "required"), (2, "name", "string", "required"),
        (3, "description", "string", "required"), (4, "tags", "string", "repeated required"),
        (5, "examples", "string", "repeated"), (6, "inputModes", "string", "repeated"),
        (7, "outputModes", "string", "repeated"),
        (8, "securityRequirements", "SecurityRequirement", "repeated")),
    "AgentCardSignature": (
        (1, "protected", "string", "required"), (2, "signature", "string", "required"),
        (3, "header", "Struct", "")),
    # A webhook registered for a task (section 4.3.1), as the operations carry it.
    "TaskPushNotificationConfig": (
        (1, "tenant", "string", ""), (2, "id", "string", ""), (3, "taskId", "string", ""),
        (4, "url", "string", "required"), (5, "token", "string", ""),
        (6, "authentication", "AuthenticationInfo", "")),
    # The security objects (section 4.5): a card's schemes and their OAuth flows.
    "StringList": ((1, "list", "string", "repeated"),),
    "SecurityRequirement": ((1, "schemes", "map<string,StringList>", ""),),
    "SecurityScheme": (
        (1, "apiKeySecurityScheme", "APIKeySecurityScheme", "oneof:scheme"),
        (2, "httpAuthSecurityScheme", "HTTPAuthSecurityScheme", "oneof:scheme"),
        (3, "oauth2SecurityScheme", "OAuth2SecurityScheme", "oneof:scheme"),
        (4, "openIdConnectSecurityScheme", "OpenIdConnectSecurityScheme", "oneof:scheme"),
        (5, "mtlsSecurityScheme", "MutualTlsSecurityScheme", "oneof:scheme")),
    "APIKeySecurityScheme": (
        (1, "description", "string", ""), (2, "location", "string", "required"),
        (3, "name", "string", "required")),
    "HTTPAuthSecurityScheme": (
        (1, "description", "string", ""), (2, "scheme", "string", "required"),
        (3, "bearerFormat", "string", "")),
    "OAuth2SecurityScheme": (
        (1, "description", "string", ""), (2, "flows", "OAuthFlows", "required"),
        (3, "oauth2MetadataUrl", "string", "")),
    "OpenIdConnectSecurityScheme": (
        (1, "description", "string", ""), (2, "openIdConnectUrl", "string", "required")),
    "MutualTlsSecurityScheme": ((1, "description", "string", ""),),
    "OAuthFlows": (
        (1, "authorizationCode", "AuthorizationCodeOAuthFlow", "oneof:flow"),
        (2, "clientCredentials", "ClientCredentialsOAuthFlow", "oneof:flow"),
        (3, "implicit", "ImplicitOAuthFlow", "oneof:flow"),
        (4, "password", "PasswordOAuthFlow", "oneof:flow"),
        (5, "deviceCode", "DeviceCodeOAuthFlow", "oneof:flow")),
    "AuthorizationCodeOAuthFlow": (
        (1, "authorizationUrl", "string", "required"), (2, "tokenUrl", "string", "required"),
        (3, "refreshUrl", "string", ""), (4, "scopes", "map<string,string>", "required"),
        (5, "pkceRequired", "bool", "")),
    "ClientCredentialsOAuthFlow": (
        (1, "tokenUrl", "string", "required"), (2, "refreshUrl", "string", ""),
        (3, "scopes", "map<string,string>", "required")),
    "ImplicitOAuthFlow": (
        (1, "authorizationUrl", "string", ""), (2, "refreshUrl", "string", ""),
        (3, "scopes", "map<string,string>", "")),
    "PasswordOAuthFlow": (
        (1, "tokenUrl", "string", ""), (2, "refreshUrl", "string", ""),
        (3, "scopes", "map<string,string>", "")),
    "DeviceCodeOAuthFlow": (
        (1, "deviceAuthorizationUrl", "string", "required"), (2, "tokenUrl", "string", "required"),
        (3, "refreshUrl", "string", ""), (4, "scopes", "map<string,string>", "required")),
    # The operations' requests (section 3.1), and ListTasks' answer (3.1.4).
    "SendMessageRequest": (
        (1, "tenant", "string", ""), (2, "message", "Message", "required"),
        (3, "configuration", "SendMessageConfiguration", ""), (4, "metadata", "Struct", "")),
    "GetTaskRequest": (
        (1, "tenant", "string", ""), (2, "id", "string", "required"),
        (3, "historyLength", "int32", "optional"), (4, "currentGeneration", "int64", "optional")),
    "ListTasksRequest": (
        (1, "tenant", "string", ""), (2, "contextId", "string", ""), (3, "status", "TaskState", ""),
        (4, "pageSize", "int32", "optional"), (5, "pageToken", "string", ""),
        (6, "historyLength", "int32", "optional"), (7, "statusTimestampAfter", "Timestamp", ""),
        (8, "includeArtifacts", "bool", "optional")),
    "ListTasksResponse": (
        (1, "tasks", "Task", "repeated required"), (2, "nextPageToken", "string", "required"),
        (3, "pageSize", "int32", "required"), (4, "totalSize", "int32", "required")),
    "CancelTaskRequest": (
        (1, "tenant", "string", ""), (2, "id", "string", "required"),
        (3, "metadata", "Struct", "")),
    "GetTaskPushNotificationConfigRequest": (
        (1, "tenant", "string", ""), (2, "taskId", "string", "required"),
        (3, "id", "string", "required")),
    "DeleteTaskPushNotificationConfigRequest": (
        (1, "tenant", "string", ""), (2, "taskId", "string", "required"),
        (3, "id", "string", "required")),
    "SubscribeToTaskRequest": ((1, "tenant", "string", ""), (2, "id", "string", "required")),
    "ListTaskPushNotificationConfigsRequest": (
        (4, "tenant", "string", ""), (1, "taskId", "string", "required"),
        (2, "pageSize", "int32", ""), (3, "pageToken", "string", "")),
    "GetExtendedAgentCardRequest": ((1, "tenant", "string", ""),),
    # What SendMessage, the streams (section 3.2.3) and ListTaskPushNotificationConfigs answer.
    "SendMessageResponse": (
        (1, "task", "Task", "oneof:payload"), (2, "message", "Message", "oneof:payload")),
    "StreamResponse": (
        (1, "task", "Task", "oneof:payload"), (2, "message", "Message", "oneof:payload"),
        (3, "statusUpdate", "TaskStatusUpdateEvent", "oneof:payload"),
        (4, "artifactUpdate", "TaskArtifactUpdateEvent", "oneof:payload")),
    "ListTaskPushNotificationConfigsResponse": (
        (1, "configs", "TaskPushNotificationConfig", "repeated"),
        (2, "nextPageToken", "string", "")),
}

ENUMS = {
    # A task's states (section 4.1.3) and a message's roles (4.1.5); the first
    # of each, UNSPECIFIED, is the proto default, which no valid value has.
    "TaskState": (
        "TASK_STATE_UNSPECIFIED", "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
        "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED"),
    "Role": ("ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"),
}

# Messages whose oneof must have exactly one member set (not "at most one").
_ONEOF_REQUIRED = {"Part": "content", "SecurityScheme": "scheme", "OAuthFlows": "flow"}


def _snake(name):
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


class _Field:
    """One row of MESSAGES, prepared for parse()."""
    __slots__ = "name", "type", "repeated", "optional", "oneof", "map_value", "plain", "names"

    def __init__(self, name, type_, labels):
        words = labels.split()
        self.name = name
        self.type = type_
        self.repeated = "repeated" in words
        self.optional = "optional" in words
        self.oneof = next((w[6:] for w in words if w.startswith("oneof:")), None)
        self.map_value = type_[4:-1].split(",")[1] if type_.startswith("map<") else None
        # The commonest fields, checked first by parse(): a string or an enum, in no oneof.
        single = not self.repeated and self.oneof is None
        self.plain = type_ == "string" and single
        self.names = frozenset(ENUMS[type_]) if type_ in ENUMS and single else None


# message -> {accepted JSON key: _Field}; both camelCase and snake_case keys.
_FIELDS = {msg: {key: _Field(name, type_, labels)
                 for _, name, type_, labels in rows for key in {name, _snake(name)}}
           for msg, rows in MESSAGES.items()}
# message -> names of its required fields; the enum zero values never count as set.
_REQUIRED = {msg: tuple(row[1] for row in rows if "required" in row[3].split())
             for msg, rows in MESSAGES.items()}
_UNSPECIFIED = ("TASK_STATE_UNSPECIFIED", "ROLE_UNSPECIFIED")


def _parse_timestamp(text):
    """RFC 3339 -> (epoch seconds, canonical 'YYYY-MM-DDTHH:MM:SS.mmmZ'), or ValueError."""
    import re
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?"
                 r"([Zz]|[+-]\d\d:\d\d)\Z", text)
    if not m:
        raise ValueError
    import calendar
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 61):
        raise ValueError
    nanos = int((m.group(7) or "0").ljust(9, "0"))
    zone = m.group(8)
    whole = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) - (   # less the zone's signed offset
        0 if zone in "Zz" else int(zone[:3]) * 3600 + int(zone[0] + zone[4:6]) * 60)
    millis = whole * 1000 - (-nanos // 1_000_000)   # round up: ">= after" stays exact
    utc = time.gmtime(millis // 1000)
    if not 1 <= utc.tm_year <= 9999:               # google.protobuf.Timestamp's range
        raise ValueError
    return whole + nanos / 1e9, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (*utc[:6], millis % 1000)


def _b64encode(data):
    """bytes -> standard, padded base64 text (ProtoJSON's form of bytes)."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _b64decode(text):
    """base64 text, standard or URL-safe, padded or not -> bytes (binascii.Error if bad)."""
    text = text.replace("-", "+").replace("_", "/").rstrip("=")
    if len(text) % 4 == 1 or text.translate(_NOT_BASE64):
        raise binascii.Error("not base64")
    return binascii.a2b_base64(text + "=" * (-len(text) % 4))


# str.translate() with this table deletes every base64 character: what is left is invalid.
_NOT_BASE64 = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _bad(path, problem):
    return InvalidParamsError(f"{path} {problem}", field=path)


# What a value of each scalar (or well-known) type must be, as _scalar says it.
_BITS = {"int32": 31, "int64": 63}
_MUST_BE = {
    "string": "a string", "bool": "true or false", "int32": "a 32-bit integer",
    "int64": "a 64-bit integer",
    "Struct": "a JSON object",
    "bytes": "base64-encoded bytes (standard or URL-safe alphabet)",
    "Timestamp": "an RFC 3339 timestamp such as 2025-10-28T10:30:00.000Z"}


def _scalar(type_, value, path):
    """Check and canonicalize one scalar (or well-known type) value."""
    text = isinstance(value, str)
    if type_ in _BITS:               # ProtoJSON also accepts integers as strings, and 1.0
        if text and (digits := value.removeprefix("-")).isdecimal() and len(digits) <= 19 \
                or isinstance(value, float) and value.is_integer():
            value = int(value)
    try:
        if type_ == "string" and text:
            return value if value.isascii() else _check_text(value, path)
        if type_ == "bool" and isinstance(value, bool):
            return value
        if type_ in _BITS and isinstance(value, int) and not isinstance(value, bool) \
                and -2**_BITS[type_] <= value < 2**_BITS[type_]:
            return value
        if type_ == "bytes" and text:
            return _b64encode(_b64decode(value))
        if type_ == "Timestamp" and text:
            return _parse_timestamp(value)[1]
        if type_ == "Value" or type_ == "Struct" and isinstance(value, dict):
            return _check_value(value, path, 1)
    except (binascii.Error, ValueError, OverflowError):
        pass
    if type_ in _MUST_BE:
        raise _bad(path, f"must be {_MUST_BE[type_]}" + (
            "" if type_ in ("bytes", "Timestamp") else f", not {_json_type(value)}"))
    names = ENUMS[type_]
    if text and value in names:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    near = [n for n in names if text and value and n.endswith(
        "_" + value.upper().replace("-", "_"))]     # (A2A 0.3's "user", "input-required")
    raise _bad(path, f"must be one of {', '.join(names[1:])}; got {json.dumps(value)[:60]}" + (
        f" (A2A 0.3's name for {near[0]}: 0.3 clients need Server(compat='0.3'), --compat 0.3)"
        if near else ""))


# How deep free-form JSON (metadata, data parts) may nest: deeper could be stored but
# never encoded again (json's encoder recurses).
_MAX_NESTING = 32


def _check_text(text, path):
    """Text UTF-8 can encode (JSON's \\ud800 escapes make lone surrogates), else InvalidParams."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _bad(path, f"holds a lone surrogate ({text[exc.start]!r} at {exc.start}); text "
                   "must be valid Unicode: pair every \\uD800-\\uDFFF escape") from None
    return text


def _check_value(value, path, depth):
    """A google.protobuf.Value (any JSON), checked for depth and text; returned as it is."""
    kind = type(value)
    if kind is dict or kind is list:
        if depth > _MAX_NESTING:
            raise _bad(path, f"nests deeper than {_MAX_NESTING} levels, the most this server "
                       "accepts in free-form JSON; flatten it")
        if kind is dict:
            for key, item in value.items():
                if not key.isascii():
                    _check_text(key, f"{path}.{key!r}")
                _check_value(item, f"{path}.{key}", depth + 1)
        else:
            for i, item in enumerate(value):
                _check_value(item, f"{path}[{i}]", depth + 1)
    elif kind is str and not value.isascii():
        _check_text(value, path)
    elif kind is float and (value != value or value in (float("inf"), float("-inf"))):
        raise _bad(path, "must be a finite number (JSON has no NaN or Infinity)")
    return value


def _json_type(value):
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "a value")


def parse(message_type, value, path=""):
    """Check ``value`` against the proto message ``message_type``; return it canonical.
    The first problem raises InvalidParamsError naming the field."""
    if type(value) is not dict:
        raise _bad(path or "the request",
                   f"must be a JSON object ({message_type}), not {_json_type(value)}")
    fields = _FIELDS[message_type]
    out = {}
    oneofs = None
    for key, item in value.items():
        field = fields.get(key)
        if field is None or item is None:      # unknown fields are ignored; null means unset
            continue
        if field.plain and type(item) is str:
            if not item.isascii():             # (ASCII, the usual case, is known in O(1))
                _check_text(item, f"{path}.{key}" if path else key)
            if item or field.optional:         # "" is the default: not sent in ProtoJSON
                out[field.name] = item
            continue
        if field.names and type(item) is str and item in field.names:
            out[field.name] = item
            continue
        name = field.name
        type_ = field.type
        if type_ == "string" and type(item) is str and not field.repeated:
            if not item.isascii():             # the common case, checked
                _check_text(item, f"{path}.{name}" if path else name)
        else:
            item = _parse_field(field, item, f"{path}.{name}" if path else name)
        if field.oneof:
            if oneofs is None:
                oneofs = {}
            if field.oneof in oneofs and oneofs[field.oneof] != name:
                raise _bad(path or message_type, f"may set only one of its '{field.oneof}' "
                           f"fields; got both {oneofs[field.oneof]} and {name}")
            oneofs[field.oneof] = name
        elif not field.optional and type_ not in _FIELDS and item in (False, "", []):
            continue                           # defaults (0 == False) are not sent in ProtoJSON
        out[name] = item
    for name in _REQUIRED[message_type]:
        got = out.get(name)
        if not got or got in _UNSPECIFIED:
            raise _bad(f"{path}.{name}" if path else name, "is required")
    must = _ONEOF_REQUIRED.get(message_type)
    if must and (oneofs is None or must not in oneofs):
        members = [row[1] for row in MESSAGES[message_type] if row[3] == f"oneof:{must}"]
        raise _bad(path or message_type, f"must set exactly one of {', '.join(members)}")
    return out


def _parse_field(field, item, where, message=parse):
    """parse() of one field that is not a plain string: a map, a list, a
    message or another scalar, each item checked (and named) in turn;
    ``message``, what checks a message (_exact_names: another check)."""
    value_type = field.map_value
    if value_type:
        if type(item) is not dict:
            raise _bad(where, f"must be a JSON object, not {_json_type(item)}")
        check = message if value_type in _FIELDS else _scalar
        return {k: check(value_type, v, f"{where}.{k}") for k, v in item.items()}
    check = message if field.type in _FIELDS else _scalar      # (the same arguments)
    if not field.repeated:
        return check(field.type, item, where)
    if type(item) is not list:
        raise _bad(where, f"must be a JSON array, not {_json_type(item)}")
    return [check(field.type, v, f"{where}[{i}]") for i, v in enumerate(item)]


def _check_card(card):
    """Check a Server's agent card at start-up: it must parse, and every key must be a
    field's JSON name (a typo, or a field of A2A 0.3, is an error that names it)."""
    try:
        parse("AgentCard", card)
    except InvalidParamsError as exc:
        raise ValueError(f"the agent card is not valid: {exc.message}") from None
    _exact_names("AgentCard", card, "card")


def _exact_names(message_type, value, path):
    """ValueError for the first key of ``value`` (parsed already) that is not
    a field's JSON name, in it or in the messages it holds."""
    fields = _FIELDS[message_type]
    for key, item in value.items():
        field = fields.get(key)
        if field is None or field.name != key:
            hint = f"; did you mean {field.name}?" if field else ""
            raise ValueError(f"{path}.{key} is not a field of {message_type}{hint} (its fields: "
                             f"{', '.join(row[1] for row in MESSAGES[message_type])})")
        if (field.map_value or field.type) in _FIELDS and item is not None:
            _parse_field(field, item, f"{path}.{key}", _exact_names)


# Small constructors for what agents produce. Each returns the ProtoJSON dict.

def text_part(text, **extra):
    """A Part holding text: ``{"text": ...}``; extra keys such as mediaType are kept."""
    return {"text": text, **extra}


def data_part(data, **extra):
    """A Part holding any JSON value: ``{"data": ...}``."""
    return {"data": data, **extra}


def file_part(*, raw=None, url=None, filename=None, media_type=None):
    """A Part holding a file, by content (bytes) or by URL."""
    part = {"raw": _b64encode(raw)} if raw is not None else {"url": url}
    if filename:
        part["filename"] = filename
    if media_type:
        part["mediaType"] = media_type
    return part


def _parts(content):
    """A str, a Part dict or a list of them -> a list of Parts."""
    if isinstance(content, (str, dict)):
        content = [content]
    return [text_part(p) if isinstance(p, str) else p for p in content]


def new_message(content, *, role="ROLE_AGENT", **fields):
    """A Message with a fresh messageId; ``content`` is text, a Part or a list of Parts."""
    return {"messageId": _new_id(), "role": role, "parts": _parts(content), **fields}


def status_update(state, content=None, **fields):
    """Agent output: move the task to ``state`` (e.g. "TASK_STATE_INPUT_REQUIRED"),
    optionally with an agent message (text, a Part or Parts)."""
    status = {"state": state}
    if content is not None:
        status["message"] = content if isinstance(content, dict) and "parts" in content \
            else new_message(content)
    return {"statusUpdate": {"status": status, **fields}}


def artifact_update(content, *, artifact_id=None, name=None, append=False, last_chunk=False,
                    **fields):
    """Agent output: an artifact, or one chunk of it (``append``/``last_chunk``)."""
    artifact = {"artifactId": artifact_id or _new_id(), "parts": _parts(content), **fields}
    if name:
        artifact["name"] = name
    event = {"artifact": artifact}
    if append:
        event["append"] = True
    if last_chunk:
        event["lastChunk"] = True
    return {"artifactUpdate": event}


def agent_message(content, **fields):
    """Agent output: answer with a Message instead of a task (section 3.1.1)."""
    return {"message": new_message(content, **fields)}


# -- writing JSON ---------------------------------------------------------------------
#
# Every answer and every stored task is compact UTF-8 JSON (section 5.5). Encoding is
# most of what a small request costs after parsing, so json's C encoder is called directly.

def _dumps(obj):
    """A JSON value -> compact UTF-8 JSON bytes."""
    try:
        return _encode_json(obj).encode()
    except UnicodeEncodeError:      # a lone surrogate (a JSON-RPC id's, say): sent escaped
        return json.dumps(obj, separators=(",", ":")).encode("ascii")


def _json_codec():
    """(encode, decode_stored): json's C encoder and scanner, called directly, which skips
    JSONEncoder.encode's new encoder per call and json.loads' checks (over half the cost
    of a 200-byte event). decode_stored is only for JSON this process wrote. No circular
    reference check (RecursionError). Without the C accelerator, the plain calls."""
    from json import encoder, scanner
    plain = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    if encoder.c_make_encoder is None or scanner.c_make_scanner is None:
        return plain.encode, json.loads
    chunks = encoder.c_make_encoder(None, plain.default, encoder.encode_basestring, None,
                                    ":", ",", False, False, True)
    scan = scanner.c_make_scanner(json.JSONDecoder())

    def encode(obj):
        return "".join(chunks(obj, 0))

    def decode_stored(body):
        return scan(body.decode(), 0)[0]
    return encode, decode_stored


_encode_json, _decode_stored = _json_codec()


def _digest(message):
    """A message's SHA-256, whatever the order of its members (hex)."""
    import hashlib
    return hashlib.sha256(json.dumps(message, sort_keys=True).encode()).hexdigest()


# -- a task's life: the one function that changes it ----------------------------

def _apply(task, kind, body, now, grown=None):
    """The task after one event of TRANSITIONS: ``kind`` names it, ``body`` is the Message or
    update event it carries, ``now`` the timestamp of a status it sets; ``task`` is None for a new
    task. Tasks are copy-on-write; raises the protocol's error when the event may not meet the
    task's state. ``grown`` is a parts list the caller owns (_Channel.grown), which an append
    extends in place rather than copy it at every chunk (the square of the chunks)."""
    state = None if task is None else task["status"]["state"]
    meets, leaves = TRANSITIONS[kind]
    if state not in meets:
        raise _refusal(kind, task)
    if kind == "artifactUpdate":
        artifact = body["artifact"]
        artifacts = list(task.get("artifacts", ()))
        i = len(artifacts) - 1              # (a streamed artifact is usually the last)
        while i >= 0 and artifacts[i]["artifactId"] != artifact["artifactId"]:
            i -= 1
        if i >= 0 and body.get("append"):
            if artifact["parts"] == [{"text": ""}]:   # (an empty chunk says lastChunk, no more)
                return {**task}
            parts = artifacts[i]["parts"]
            if parts is grown:
                parts += artifact["parts"]
            else:                           # a new list, which the next append may grow
                parts = parts + artifact["parts"]
            artifact = {**artifacts[i], "parts": parts}
        else:                               # (a list of its own, not the event's: the
            artifact = {**artifact, "parts": list(artifact["parts"])}   # next append's)
        if i < 0:
            artifacts.append(artifact)
        else:
            artifacts[i] = artifact
        return {**task, "artifacts": artifacts}
    if kind == "statusUpdate":
        status = body["status"]                # (its timestamp set by whoever made it)
        task = {**task, "status": status}
        if "message" in status:                # what the agent said is part of the history
            task["history"] = task.get("history", []) + [status["message"]]
        return task
    status = {"state": leaves, "timestamp": now}
    if kind == "cancel":
        return {**task, "status": status}
    if task is None:                           # "message": a new task
        return {"id": body["taskId"], "contextId": body["contextId"], "status": status,
                "history": [body]}
    return {**task, "history": task.get("history", []) + [body], "status": status}   # "input"


def _parts_of(task, artifact_id):
    """The parts list of ``task``'s artifact ``artifact_id`` (newest first)."""
    for artifact in reversed(task["artifacts"]):
        if artifact["artifactId"] == artifact_id:
            return artifact["parts"]


def _still_working(task_id):
    return UnsupportedOperationError(
        f"task {task_id} is still working on the previous message; wait for it "
        "(SubscribeToTask) or cancel it first", metadata={"taskId": task_id})


def _check_event(kind, task):
    """Raise what _apply would if ``kind`` met ``task`` now (to refuse early)."""
    if task["status"]["state"] not in TRANSITIONS[kind][0]:
        raise _refusal(kind, task)


def _refusal(kind, task):
    """The error for an event that may not meet ``task``'s state (a terminal one)."""
    task_id, state = task["id"], task["status"]["state"]
    metadata = {"taskId": task_id, "state": state}
    if kind == "cancel":
        return TaskNotCancelableError(
            f"task {task_id} is already {state} and can no longer be canceled", metadata=metadata)
    if kind == "input":
        if state in _WORKING_STATES:
            return _still_working(task_id)
        return UnsupportedOperationError(
            f"task {task_id} is {state} and accepts no new messages; send the message without "
            "taskId to start a new task (keep contextId to stay in the conversation)",
            metadata=metadata)
    return UnsupportedOperationError(f"task {task_id} is {state} and never changes again",
                                     metadata=metadata)


# =============================================================================
# 4. The task store
# =============================================================================
#
# Where tasks live between requests, and what hangs off them. One contract:
# TaskStore, here, keeps tasks in this process's memory; a2a_store.py keeps
# them in an SQLite file that processes share, a2a_postgres.py in PostgreSQL.
#
#   get(task_id, owner)              the task (with .version, .next_seq), or None
#   commit(task, owner, version, event=None, caller=None, holder=None)
#                                    -> (JSON bytes, new version, event id): the task
#                                    and its event, at once; refused (ConflictError)
#                                    unless the stored version is ``version`` (0: new)
#   events(task_id, after)           (oldest id kept, [(id, event) after ``after``])
#   changed()                        a number that moves when another process commits
#   list(owner, *, context_id, status, after, cursor, limit)   ListTasks' page
#   put_config / get_config / configs / delete_config         push configs
#   delete(task_id) / stats()        and ``shared``: may other processes write?
#   claim_send / settle_send         a send's key, so that a repeat runs nothing (below)
#
# A store may say (the server uses them if so): ``appends`` (commit(..., derived=True) keeps the
# event alone), ``batches`` (commit(..., first=events) appends those first), ``raw_events``
# (events(..., raw=True) may give an event as its JSON). A shared one adds leases (``holder``: the
# process whose agent runs a task), the watch's reads and its own live tasks: a2a_store.py,
# "Sharing a store between processes", and docs/deploying.md ("Your own store").
#
# Versions keep two writers of one task from losing an update: the second to commit the version it
# read is refused, reads the task again, and the state table decides again (_Channel.change). The
# event log is how a stream follows a task and how a client resumes one with Last-Event-ID (section
# 3.1.6): the newest ``replay_buffer`` events (``replay_buffer_bytes``) kept.
#
# Writing the whole task at each chunk of a streamed artifact would cost the square of the chunks
# (10,000 tokens took 14 s). So a store that ``appends`` keeps a derived event alone until the
# pending events weigh as much as the task did when last written whole (at least _APPEND_FLOOR):
# each byte streamed is written a bounded number of times.
#
# Tasks are copy-on-write: a reader never sees one change under it. Each is
# stored with its owner (tenant, principal), and someone else's task is
# reported exactly like a missing one (section 13.1).
#
# The in-memory store keeps every task as its JSON (a fifth of the dict's memory), bounded in tasks
# and bytes, in all and per caller (_make_room). Idle tasks (ended, or waiting for the client)
# expire after ``task_ttl``; a running one is never evicted, so a stuck agent's tasks cost their
# caller its share and nobody else anything. ListTasks (section 3.1.4) sorts by status timestamp,
# newest first; its page token, the (timestamp, id) of the last task returned, stays valid whatever
# changes in between.

# What an entry, and a kept event, cost beyond their JSON (tracemalloc).
_ENTRY_OVERHEAD, _EVENT_OVERHEAD = 512, 160


# The limits of DEFAULT_LIMITS a store keeps (with max_bytes: max_store_bytes).
_STORE_LIMITS = ("max_tasks", "task_ttl", "max_history", "max_tasks_per_caller",
                 "max_bytes_per_caller", "max_page_bytes", "replay_buffer", "replay_buffer_bytes")


class _Bounds:
    """What every store is given: the limits (DEFAULT_LIMITS' by default),
    ``on_evict`` (the Server sets it) and the policy that keeps within them."""

    def __init__(self, *, max_bytes=DEFAULT_LIMITS["max_store_bytes"], **limits):
        unknown = set(limits) - set(_STORE_LIMITS)
        if unknown:
            raise TypeError(f"unknown store limits: {', '.join(sorted(unknown))}")
        for name in _STORE_LIMITS:
            setattr(self, name, limits.get(name, DEFAULT_LIMITS[name]))
        self.max_bytes = max_bytes
        self.on_evict = None                # callable(task_id), set by the Server

    # -- the one eviction policy; each store gives its steps, on ``ctx`` (its transaction):
    #   _expire(ctx, now, task_id, evicted)   remove the expired tasks (not task_id)
    #   _held(ctx, caller)                    (tasks, bytes, the caller's tasks, its bytes)
    #   _idle_batch(ctx, task_id, caller)     up to 64 of the oldest idle tasks, as
    #                                         (id, size): the caller's, or anyone's (None)
    #   _evict(ctx, task_ids, evicted)        remove those

    def _make_room(self, ctx, task_id, new, grows, caller, now, evicted):
        """Make room for ``task_id`` (one task more if ``new``, ``grows`` bytes
        more), evicting (into ``evicted``) the expired tasks, the caller's oldest
        idle ones while it is past its share, then anyone's while the store is
        full; else refuse the write (CallerLimitError, 429; TaskStoreFullError, 503)."""
        self._expire(ctx, now, task_id, evicted)
        tasks, size, share_tasks, share_bytes = self._held(ctx, caller)
        freed = (0, 0)       # (what the caller's evictions free, the store's counts too)
        for whose, held_tasks, held_bytes, max_tasks, max_bytes, refusal in (
                (caller, share_tasks, share_bytes, self.max_tasks_per_caller,
                 self.max_bytes_per_caller, _over_share),
                (None, tasks, size, self.max_tasks, self.max_bytes, _store_full)):
            held_tasks, held_bytes = held_tasks - freed[0], held_bytes - freed[1]
            if held_tasks + new > max_tasks or held_bytes + grows > max_bytes:
                freed = self._evict_down(ctx, task_id, whose, held_tasks + new,
                                         held_bytes + grows, max_tasks, max_bytes, evicted)
                held_tasks, held_bytes = held_tasks - freed[0], held_bytes - freed[1]
                if held_tasks + new > max_tasks or held_bytes + grows > max_bytes:
                    raise refusal(held_tasks, held_bytes, new, max_tasks, max_bytes)

    def _evict_down(self, ctx, task_id, caller, held_tasks, held_bytes, max_tasks, max_bytes,
                    evicted, batches=None):
        """Evict the oldest idle tasks (``caller``'s, or anyone's if None) until
        (held_tasks, held_bytes) is a 64th below (max_tasks, max_bytes), so the
        writes that follow find room without evicting one each; or none is
        left, or ``batches`` of 64 are gone. Returns (tasks, bytes) freed."""
        room_tasks, room_bytes = max_tasks - (max_tasks >> 6), max_bytes - (max_bytes >> 6)
        tasks, size = held_tasks, held_bytes
        while tasks > room_tasks or size > room_bytes:
            batch, chosen = self._idle_batch(ctx, task_id, caller), []
            for gone, gone_size in batch:
                if tasks <= room_tasks and size <= room_bytes:
                    break
                tasks, size = tasks - 1, size - gone_size
                chosen.append(gone)
            if chosen:
                self._evict(ctx, chosen, evicted)
            if len(batch) < 64 or batches is not None and held_tasks - tasks >= 64 * batches:
                break
        return held_tasks - tasks, held_bytes - size


class _StoredTask(dict):
    """A Task dict that remembers the JSON it was stored as (``json``), which
    an answer splices in (_encoded_result) instead of encoding the task again."""

    __slots__ = "json", "version", "next_seq"

    @classmethod
    def decode(cls, body):
        task = cls(_decode_stored(body))
        task.json = body
        task.version = 0
        task.next_seq = 0
        return task


class _StoredEvent(dict):
    """A StreamResponse with the JSON the store keeps (``json``), which every
    stream splices into its frames (_SSEStream): encoded once, at commit."""

    __slots__ = "json", "__weakref__"

    @classmethod
    def encode(cls, event, task, body):
        """``event`` with its JSON (a Task event's made of ``task``'s, ``body``)."""
        stored = cls(event)
        stored.json = b'{"task":' + body + b"}" if task is not None and \
            event.get("task") is task and len(event) == 1 else _dumps(event)
        return stored

    @classmethod
    def decode(cls, body):
        event = cls(_decode_stored(body))
        event.json = body
        return event


def _decoded_size(body):
    """About the bytes json.loads(body) takes in memory (CPython, 64 bits), to
    within a factor of two: from 1x the JSON (plain text) to 25x. 1 ms a MB."""
    marks = body.translate(None, _NOT_MARKS)  # one pass: then only the marks are counted
    colons, commas = marks.count(b":"), marks.count(b",")
    return len(body) + 64 * (len(marks) - colons - commas) + 96 * colons + 32 * commas


# bytes.translate() with this deletes all but the marks _decoded_size counts.
_NOT_MARKS = bytes(c for c in range(256) if c not in b"{[:,")


# A task polled with GetTask until it ends is decoded once per version: the
# store keeps the last _RECENT tasks it decoded (GetTask: 5.0 us, not 8.0 us),
# if small (4 KiB of JSON may be 100 KiB parsed): at most 8 MiB in all.
_RECENT, _RECENT_BYTES, _RECENT_DECODED = 256, 4096, 32768


def _recently_read(recent, task_id, body):
    """The task whose stored JSON is ``body``, decoded, or from ``recent``
    (a new version is a new bytes object)."""
    task = recent.get(task_id)
    if task is not None and task.json is body:
        return task
    task = _StoredTask.decode(body)
    if len(body) <= _RECENT_BYTES and _decoded_size(body) <= _RECENT_DECODED:
        if len(recent) >= _RECENT:             # the oldest goes
            try:
                recent.pop(next(iter(recent)), None)
            except (RuntimeError, StopIteration):   # another thread changed it meanwhile
                pass
        recent[task_id] = task
    return task


def _limits(given):
    """DEFAULT_LIMITS with those ``given`` (a Server's keyword arguments)."""
    unknown = set(given) - set(DEFAULT_LIMITS)
    if unknown:     # (the last three: what only a store shared by processes has, a2a_store's
                    # and a2a_postgres': its leases, its watch's look for the others' commits, its
                    # threads under an event loop)
        raise TypeError(f"unknown Server options: {', '.join(sorted(unknown))}" + (
            "; lease_ttl, store_poll and store_threads are a shared store's own options: "
            "SQLiteStore(path, store_poll=...)"
            if unknown & {"lease_ttl", "store_poll", "store_threads"} else ""))
    return {**DEFAULT_LIMITS, **given}


def open_store(location=None, **limits):
    """The task store a location names (the command line's --store, the examples' A2A_STORE): None
    or "" for none (the Server keeps its tasks in memory), a file name or an ``sqlite:`` URL for
    a2a_store's SQLiteStore, a ``postgresql://`` (or ``postgres://``) URL for a2a_postgres's
    PostgresStore (it needs psycopg). Each companion is imported only then."""
    if not location:
        return
    scheme = location.partition(":")[0].lower()
    if scheme in ("postgresql", "postgres"):
        return _companion("a2a_postgres", "a postgresql:// store").PostgresStore(location, **limits)
    if ":" in location and len(scheme) > 1 and scheme != "sqlite":
        raise ValueError(f"{scheme}: URLs are not a store this a2a_min has: it keeps tasks in "
                         "memory, in SQLite (a file name, or sqlite:PATH), or in PostgreSQL "
                         "(postgresql://...)")
    return _companion("a2a_store", "a store file").SQLiteStore(location, **limits)


class _Entry:
    """What TaskStore keeps of a task: its JSON (``body``, as last written whole) and what it needs
    without decoding it. ``size`` counts the kept events, its push configs (``configs`` bytes) and
    ``live`` (the running turn's parsed copy); ``pending`` holds a streamed artifact's chunks not
    yet in the JSON ([update, ...], how many are this version's, their bytes). Readers take no
    lock: but for ``size`` and ``configs``, which only a holder of the lock reads, an entry never
    changes once stored."""

    __slots__ = ("body", "owner", "context_id", "state", "stamp", "caller", "size", "version",
                 "next_seq", "live", "pending", "configs")

    def __init__(self, body, owner, context_id, state, stamp, caller, size, version, next_seq,
                 live, pending, configs):
        self.body = body
        self.owner = owner
        self.context_id = context_id
        self.state = state
        self.stamp = stamp
        self.caller = caller
        self.size = size
        self.version = version
        self.next_seq = next_seq
        self.live = live
        self.pending = pending
        self.configs = configs


class TaskStore(_Bounds):
    """The store contract in this process's memory: thread-safe, bounded, lost when it exits."""

    shared = False          # only this process writes its tasks
    appends = True          # a streamed artifact's chunks are kept as events a while
    batches = True          # commit(..., first=events) stores several events at once
    raw_events = True       # events(..., raw=True): a settled event as the JSON it keeps

    def __init__(self, **limits):
        super().__init__(**limits)
        self._lock = threading.Lock()
        self._tasks = {}                    # id -> _Entry
        self._logs = {}                     # id -> _EventLog, the task's newest events
        self._configs = {}                  # id -> {config id: push config}, in order made
        self._bytes = 0
        self._idle = {}                     # id -> when it ended or began to wait, oldest first
        self._callers = {}                  # caller -> [tasks, bytes]
        self._recent = {}                   # id -> _StoredTask, decoded (_recently_read)
        self._settling = {}                 # id -> _EventLog of a task just idle (_settle)
        self._sends = OrderedDict()         # (owner, key) -> (task id, reply, digest, when)

    def get(self, task_id, owner):
        """The task with this id if ``owner`` owns it, else None: a _StoredTask,
        with its version and its next event's id, read without the lock."""
        entry = self._tasks.get(task_id)
        if entry is None or entry.owner != owner:
            return
        task = _recently_read(self._recent, task_id, entry.body)
        pending = entry.pending
        if pending is not None:             # a streamed artifact's chunks, not yet in the JSON
            task = _with_pending(task, pending[0][:pending[1]])
        task.version, task.next_seq = entry.version, entry.next_seq
        return task

    def commit(self, task, owner, version, event=None, caller=None, holder=None,
               derived=False, first=()):
        """Write ``task`` and append ``event`` to its log, as one change (see the contract above),
        after the events ``first`` (``batches``); the JSON is None when only the event was kept."""
        if not derived:                         # (an artifact update adds no history)
            task, event = _cut_history(task, event, self.max_history)
        if first:                               # (the chunks made just before it)
            first = [e if type(e) is _StoredEvent else _StoredEvent.encode(e, None, None)
                     for e in first]
        old = self._tasks.get(task["id"]) if derived else None
        if old is not None and old.version == version:      # (else refused by _write)
            if type(event) is not _StoredEvent:
                event = _StoredEvent.encode(event, None, None)
            updates, count, weight = old.pending or ([], 0, 0)
            pending = (updates, count + 1 + len(first),
                       weight + len(event.json) + sum(len(e.json) for e in first))
            body = old.body                     # the JSON as last written, and the events
            size = len(body) + pending[2] + _ENTRY_OVERHEAD
        else:
            pending = None
            body = _dumps(task)                 # raises on what cannot be stored
            size = len(body) + _ENTRY_OVERHEAD
            if event is not None and type(event) is not _StoredEvent:
                event = _StoredEvent.encode(event, task, body)      # kept as its JSON
        evicted = []
        try:
            with self._lock:
                seq = self._write(task, owner, version, event, caller, body, size, evicted, pending,
                                  first)
        finally:
            for gone in evicted:                # (told even if the write was refused)
                if self.on_evict:
                    self.on_evict(gone)
        return None if pending else body, version + 1, seq

    def _write(self, task, owner, version, event, caller, body, size, evicted, pending=None,
               first=()):
        """commit(), with the store's lock held: returns the event's id."""
        task_id, status = task["id"], task["status"]
        state = status["state"]
        now = time.monotonic()
        old = self._tasks.get(task_id)
        if (version != 0 if old is None else old.version != version or old.owner != owner
                or old.state in TERMINAL_STATES):     # (else: the version the writer read)
            _check_version(task_id, old and (old.owner == owner, old.state, old.version), version)
        new = old is None
        if new:
            caller = owner if caller is None else caller
            log, old_size, live, configs = None, 0, 0, 0
        else:
            caller, log, old_size = old.caller, self._logs.get(task_id), old.size
            live, configs = old.live, old.configs
        size += configs
        idle_now = state in _IDLE_STATES          # ended, or waiting for the client
        if idle_now:
            live = 0
        elif live and event is not None and "task" not in event:
            for kept in (*first, event):
                live += _decoded_size(kept.json)
        else:   # its channel holds it parsed: counted whole as its turn begins, then per event
            live = _decoded_size(body)
        size += live
        kept = 0 if log is None else log.weight
        event_size = 0 if event is None else len(event.json)
        grows = size + kept + event_size + _EVENT_OVERHEAD - old_size      # at most
        if first:
            grows += sum(len(earlier.json) + _EVENT_OVERHEAD for earlier in first)
        share = self._room(task_id, new, grows, caller, now, evicted)
        if pending is not None:     # (shared by versions, each reading its first ``count``)
            pending[0].extend(kept["artifactUpdate"] for kept in (*first, event))
        seq = None
        if event is not None:                   # kept, after ``first``, in a log made now
            if log is None:                     # if it has none (most tasks of a plain answer)
                log = self._logs[task_id] = _EventLog()
            for kept in (*first, event):
                seq = log.append(kept, len(kept.json), self.replay_buffer,
                                 self.replay_buffer_bytes)
        if log is not None:
            if idle_now:
                self._settle(task_id, log)
            elif self._settling:
                self._settling.pop(task_id, None)   # a new turn: its events are live again
            size += log.weight            # a task weighs its JSON, its events and its configs
        self._tasks[task_id] = _Entry(body, owner, task.get("contextId", ""), state,
                                      status.get("timestamp", ""), caller, size, version + 1,
                                      0 if log is None else log.next_seq, live, pending, configs)
        self._bytes += size - old_size
        share[0] += new
        share[1] += size - old_size
        if idle_now:
            self._idle.setdefault(task_id, now)         # (idle since it first was)
        else:
            self._idle.pop(task_id, None)
        return seq

    def _room(self, task_id, new, grows, caller, now, evicted):
        """Room for a task that is ``new`` or ``grows`` by so many bytes, made
        if a bound is over (_make_room; lock held): the caller's share, counted."""
        share = self._callers.get(caller)
        if share is None:
            share = self._callers[caller] = [0, 0]
        idle = self._idle
        if (len(self._tasks) + new > self.max_tasks or self._bytes + grows > self.max_bytes
                or share[0] + new > self.max_tasks_per_caller
                or share[1] + grows > self.max_bytes_per_caller
                or idle and idle[next(iter(idle))] < now - self.task_ttl):
            try:
                self._make_room(share, task_id, new, grows, caller, now, evicted)
            except A2AError:
                if not share[0]:            # a new caller refused: nothing to count
                    self._callers.pop(caller, None)
                raise
            self._callers[caller] = share   # (back, if its last task was just evicted)
        return share

    def _settle(self, task_id, log):
        """A task ended or waits: its events keep only their JSON, a few writes
        later if they are small (_SETTLING), so that the streams that read them
        next, most at once, need not parse them again."""
        settling = self._settling
        if log.size > _SETTLING_BYTES:
            return log.settle()
        settling.pop(task_id, None)
        settling[task_id] = log
        if len(settling) > _SETTLING:
            settling.pop(next(iter(settling))).settle()

    def claim_send(self, owner, key, task_id, window):
        """None the first time ``owner`` sends ``key`` within ``window`` seconds
        (recorded, with the ``task_id`` it makes or continues); for a repeat,
        the first's (task id, reply, digest): settle_send's, if it was called."""
        now = time.monotonic()
        with self._lock:
            sends = self._sends
            while sends and (len(sends) >= self.max_tasks or next(iter(sends.values()))[3] <
                             now - window):
                sends.popitem(last=False)      # (the oldest: each is kept as long)
            first = sends.get((owner, key))
            if first is None:
                sends[owner, key] = task_id, None, None, now   # (a tuple: no GC to follow)
            return first

    def settle_send(self, owner, key, reply, digest=None):
        """The first send of ``key`` made no task: it answered with the Message
        ``reply`` (``digest``: its message's), or (None) was refused: the key is free."""
        with self._lock:
            first = self._sends.get((owner, key))
            if reply is None or first is None:
                self._sends.pop((owner, key), None)
            else:                              # (in its place: the oldest stay first)
                self._sends[owner, key] = first[0], reply, digest, first[3]

    def events(self, task_id, after=-1, raw=False):
        """(the id of the oldest event kept, [(id, event) after ``after``]),
        or None if the task is not stored. ``raw``: an event whose task has
        settled may be given as its JSON (bytes), not parsed again."""
        with self._lock:
            log = self._logs.get(task_id)
            if log is None:                   # no events yet (or no such task)
                return None if task_id not in self._tasks else (0, [])
            oldest = log.events[0][0] if log.events else log.next_seq
            found = log.events[max(after + 1 - oldest, 0):]     # (the ids run on by one)
        return oldest, found if raw else [     # (bytes if idle: decoded outside the lock)
            (seq, _StoredEvent.decode(event) if type(event) is bytes else event)
            for seq, event in found]

    def changed(self):
        """Nobody else writes to memory: nothing changes behind this process."""
        return 0

    # -- push notification configs, kept with their task and counted in its size --

    def put_config(self, task_id, config, max_configs):
        """Keep ``config`` with its task, within the bounds as for a commit."""
        size = _decoded_size(_dumps(config))   # (kept as the dict it is)
        evicted = []
        try:
            with self._lock:
                entry = self._tasks.get(task_id)
                if entry is None:
                    raise _no_longer_stored(task_id)
                configs = self._configs.get(task_id, {})
                old = configs.get(config["id"])
                if old is None and len(configs) >= max_configs:
                    raise _too_many_configs(task_id, len(configs))
                grows = size - (0 if old is None else _decoded_size(_dumps(old)))
                self._room(task_id, 0, grows, entry.caller, time.monotonic(), evicted)
                self._configs.setdefault(task_id, {})[config["id"]] = config
                self._resize(task_id, grows)
        finally:
            for gone in evicted:                # (told even if the config was refused)
                if self.on_evict:
                    self.on_evict(gone)

    def get_config(self, task_id, config_id):
        return self._configs.get(task_id, {}).get(config_id)

    def configs(self, task_id):
        return list(self._configs.get(task_id, {}).values())

    def delete_config(self, task_id, config_id):
        with self._lock:
            old = self._configs.get(task_id, {}).pop(config_id, None)
            if old is not None and task_id in self._tasks:
                self._resize(task_id, -_decoded_size(_dumps(old)))

    def _resize(self, task_id, grows):
        """A task's configs grew by ``grows`` bytes: so did it (lock held)."""
        entry = self._tasks[task_id]
        entry.size += grows
        entry.configs += grows
        self._bytes += grows
        self._callers[entry.caller][1] += grows

    # -- forgetting tasks, and _make_room's steps (``ctx``: the caller's [tasks, bytes]) --

    def delete(self, task_id):
        """Forget a task (no error if it is unknown)."""
        with self._lock:
            self._remove(task_id)

    def _remove(self, task_id):
        """Forget a task and what it counted for (with the store's lock held)."""
        entry = self._tasks.pop(task_id, None)
        for kept in (self._recent, self._logs, self._configs, self._idle, self._settling):
            kept.pop(task_id, None)
        if entry is None:
            return
        self._bytes -= entry.size
        share = self._callers[entry.caller]
        share[0] -= 1
        share[1] -= entry.size
        if not share[0]:
            del self._callers[entry.caller]

    def _expire(self, share, now, task_id, evicted):
        deadline, expired = now - self.task_ttl, []
        for oldest, ended in self._idle.items():    # oldest first
            if ended >= deadline or oldest == task_id:
                break
            expired.append(oldest)
        self._evict(share, expired, evicted)

    def _held(self, share, caller):
        return len(self._tasks), self._bytes, share[0], share[1]

    def _idle_batch(self, share, task_id, caller):
        batch = []
        for i in self._idle:
            entry = self._tasks[i]
            if i != task_id and (caller is None or entry.caller == caller):
                batch.append((i, entry.size))
                if len(batch) == 64:
                    break
        return batch

    def _evict(self, share, task_ids, evicted):
        for task_id in task_ids:
            self._remove(task_id)
        evicted += task_ids

    def stats(self):
        """What the store holds: tasks, bytes, idle tasks and callers."""
        with self._lock:
            return {"tasks": len(self._tasks), "bytes": self._bytes, "idle": len(self._idle),
                    "callers": len(self._callers), "max_tasks": self.max_tasks,
                    "max_bytes": self.max_bytes}

    def list(self, owner, *, context_id=None, status=None, after=None, cursor=None, limit=50):
        """One page of the owner's tasks, newest status first, at most
        ``max_page_bytes`` (one task at least): (tasks, total matches, the
        last task's cursor or None). ``after`` is a canonical timestamp."""
        with self._lock:
            entries = list(self._tasks.items())
        matches = sorted(
            (((e.stamp, task_id), e) for task_id, e in entries
             if e.owner == owner and (not context_id or e.context_id == context_id)
             and (not status or e.state == status) and (not after or e.stamp >= after)),
            reverse=True)
        total = len(matches)
        if cursor is not None:
            cursor = tuple(cursor)
            matches = [m for m in matches if m[0] < cursor]
        page, size = [], 0
        for key, entry in matches[:limit]:
            size += len(entry.body)
            if page and size > self.max_page_bytes:
                break
            page.append((key, entry))
        return [_decode_stored(entry.body) if entry.pending is None else
                _with_pending(_decode_stored(entry.body), entry.pending[0][:entry.pending[1]])
                for _, entry in page], total, (page[-1][0] if len(matches) > len(page) else None)


class _EventLog:
    """A task's newest events: (id, StreamResponse) pairs, at most ``count``
    of them and ``limit`` bytes of JSON (the newest always); ids count from 0
    for the task's life. Once the task ends or waits (settle()), only their
    JSON stays: parsed, it may take 25 times its bytes, for an hour."""

    __slots__ = "events", "sizes", "size", "weight", "next_seq", "live"

    def __init__(self):
        self.events = []          # (lists: a few events each; a deque costs 600 bytes empty)
        self.sizes = []
        self.size = 0
        self.weight = 0           # what the log counts for in its task's size
        self.next_seq = 0
        self.live = 0             # how many of the newest events still have their dict

    def settle(self):
        """Keep only the JSON of the events (the task no longer runs)."""
        events = self.events
        for i in range(len(events) - min(self.live, len(events)), len(events)):
            events[i] = events[i][0], events[i][1].json
        self.live = 0

    def append(self, event, size, count, limit):
        """Keep ``event`` (of ``size`` bytes); returns its id."""
        seq = self.next_seq
        events = self.events
        events.append((seq, event))
        self.sizes.append(size)
        self.size += size
        self.live += 1
        drop = 0                                        # the oldest go (the newest stays)
        while len(events) - drop > count or self.size > limit and len(events) - drop > 1:
            self.size -= self.sizes[drop]
            drop += 1
        del events[:drop], self.sizes[:drop]
        self.weight = self.size + len(events) * _EVENT_OVERHEAD
        self.next_seq = seq + 1
        return seq


# How many idle tasks keep their events parsed a while (TaskStore._settle),
# each with at most _SETTLING_BYTES of them as JSON: 6 MiB parsed at most.
_SETTLING, _SETTLING_BYTES = 16, 16384

# The least a task's events kept alone may weigh before it is written whole.
_APPEND_FLOOR = 16384


def _with_pending(task, updates):
    """``task`` with the artifact updates ``updates`` applied (a new dict:
    ``task`` is left as it is), as _Channel.change applied them."""
    grown = None
    for update in updates:
        task = _apply(task, "artifactUpdate", update, None, grown)
        grown = _parts_of(task, update["artifact"]["artifactId"]) if update.get("append") else None
    return _StoredTask(task)


def _check_version(task_id, stored, version):
    """The store's guard of a commit: ``stored`` is the stored task's (owned
    by the writer, state, version), or None; ``version`` is what the writer read."""
    if version == 0:
        if stored is not None:
            raise ConflictError(f"task {task_id} exists already", metadata={"taskId": task_id})
        return
    if stored is None or not stored[0]:
        raise ConflictError(f"task {task_id} is no longer stored", metadata={"taskId": task_id})
    if stored[1] in TERMINAL_STATES:      # _apply's rule (section 4.1.3), for a racing writer
        raise UnsupportedOperationError(
            f"task {task_id} is {stored[1]} and never changes again",
            metadata={"taskId": task_id, "state": stored[1]})
    if stored[2] != version:
        raise ConflictError(f"task {task_id} changed meanwhile (version {stored[2]}, not "
                            f"{version}); read it again", metadata={"taskId": task_id})


def _cut_history(task, event, keep):
    """(``task`` with the newest ``keep`` messages of its history, ``event``
    showing that task if it showed the old one): new dicts only if cut."""
    history = task.get("history")
    if history and len(history) > keep:
        cut = {**task, "history": history[-keep:]}
        if event is not None and event.get("task") is task:
            event = {"task": cut}
        return cut, event
    return task, event


def _over_share(tasks, size, new, max_tasks, max_bytes):
    """The error for a caller still past its share once its idle tasks are gone."""
    limit, value = (("max_tasks_per_caller", max_tasks) if tasks + new > max_tasks
                    else ("max_bytes_per_caller", max_bytes))
    return CallerLimitError(
        f"you hold {tasks} unfinished tasks in {size} bytes, your share of this server's task "
        f"store ({limit} is {value}); let some finish or cancel them, then try again",
        metadata={"limit": limit, "value": value})


def _store_full(tasks, size, new, max_tasks, max_bytes):
    """The error for a store still past its bounds once its idle tasks are gone."""
    return TaskStoreFullError(
        f"the task store is full of unfinished tasks ({tasks} tasks, {size} bytes; max_tasks "
        f"{max_tasks}, max_store_bytes {max_bytes}); finish or cancel some, or start the "
        "server with larger limits",
        metadata={"limit": "max_tasks" if tasks + new > max_tasks else "max_store_bytes"})


def _no_longer_stored(task_id):
    return TaskNotFoundError(f"task {task_id} is no longer stored (it expired, or was evicted)",
                             metadata={"taskId": task_id})


def _too_many_configs(task_id, count):
    return InvalidParamsError(
        f"task {task_id} already has {count} push notification configs, the most this server "
        "keeps; delete one first", field="taskId")


# =============================================================================
# 5. Authentication, and which webhook addresses are allowed
# =============================================================================
#
# Authentication (sections 7, 13.1). A2A carries credentials in the transport (HTTP headers, gRPC
# metadata), as the card's securitySchemes describe. The Server takes one hook,
# authenticate(CallContext) -> principal, which raises AuthenticationRequiredError to refuse (HTTP
# 401 with WWW-Authenticate, gRPC UNAUTHENTICATED, JSON-RPC -31401). The principal owns the tasks
# it creates: another's task is reported exactly like one that does not exist. Secrets are compared
# in constant time. The extended card is for authenticated callers alone (section 13.3): a server
# with one must authenticate, and anonymous=True lets a caller with no credentials reach the rest
# as nobody.
#
# Webhook addresses (section 13.2). A caller could aim a webhook at what only the server can reach
# (its loopback, the cloud's metadata address, its private network: request forgery), so a webhook
# may reach only globally routable unicast addresses, or what push_allow names. A literal address
# is checked when the config is created, a host name at each delivery (section 8).


class BearerAuth:
    """Authorization: Bearer <token>. ``tokens`` maps each token to its principal;
    ``anonymous``: a caller without a token is let in, as principal None."""

    def __init__(self, tokens, *, name="bearer", anonymous=False):
        self.tokens = [(token.encode(), principal) for token, principal in dict(tokens).items()]
        self.anonymous = anonymous
        self.security_schemes = {name: {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}

    def __call__(self, call):
        header = call.headers.get("authorization", "")
        kind, _, token = header.partition(" ")
        hint, challenge = "send -H 'Authorization: Bearer <token>'", 'Bearer realm="a2a"'
        if header.strip() and kind.lower() != "bearer":
            # (said apart from "missing": a token sent without its scheme is a common slip)
            raise AuthenticationRequiredError(
                "the Authorization header is not 'Bearer <token>'"
                f"{'' if token.strip() else ' (it has no scheme)'}: {hint}", challenge=challenge)
        return _match_secret(self, self.tokens, token.strip(), hint, challenge)  # (blank: none)


class ApiKeyAuth:
    """An API key in a header, a query parameter or a cookie (``location``).
    ``keys`` maps each key to its principal; ``anonymous`` as for BearerAuth."""

    def __init__(self, keys, *, name="X-API-Key", location="header", scheme_name="apiKey",
                 anonymous=False):
        if location not in ("header", "query", "cookie"):
            raise ValueError("location must be header, query or cookie")
        self.keys = [(key.encode(), principal) for key, principal in dict(keys).items()]
        self.name, self.location, self.anonymous = name, location, anonymous
        self.security_schemes = {scheme_name: {"apiKeySecurityScheme": {
            "location": location, "name": name}}}

    def __call__(self, call):
        if self.location == "header":
            given, hint = call.headers.get(self.name.lower(), ""), f"send -H '{self.name}: <key>'"
        elif self.location == "query":
            given, hint = call.query.get(self.name, ""), f"add ?{self.name}=<key>"
        else:
            cookies = (c.strip().partition("=") for c in call.headers.get("cookie", "").split(";"))
            given = next((value for name, _, value in cookies if name == self.name), "")
            hint = f"send the cookie {self.name}=<key>"
        return _match_secret(self, self.keys, given, hint, f'ApiKey name="{self.name}"')


class MutualTlsAuth:
    """Mutual TLS (MutualTlsSecurityScheme): the caller is who the client certificate says,
    once verified against the server's client CA (tls={"client_ca": ...}). ``principal``
    (older name ``principal_of``) maps getpeercert()'s dict (on every binding) to a string,
    or raises an A2AError to refuse; by default it is ``certificate_principal``."""

    def __init__(self, *, principal=None, principal_of=None, scheme_name="mtls"):
        self.principal_of = principal or principal_of or certificate_principal
        self.security_schemes = {scheme_name: {"mtlsSecurityScheme": {
            "description": "a client certificate issued by the CA this agent trusts"}}}

    def __call__(self, call):
        if not call.certificate:
            raise AuthenticationRequiredError(
                "this agent needs a client certificate (mutual TLS): connect over https with "
                "one its CA issued (curl --cert client.pem --key client.key ...)",
                challenge='Certificate realm="a2a"')
        return self.principal_of(call.certificate)


# A subject is a sequence of RDNs, each a set of type=value pairs (RFC 5280 section 4.1.2.4). As
# RFC 4514 text, with every character its section 2.4 names escaped, two subjects never give one
# string: a CN "alice,O=Example" is "CN=alice\,O=Example". An empty subject (SPIFFE, much current
# PKI) gives "URI:..." or "DNS:..." from the subjectAltName, which no subject's text can be (ssl's
# type names hold no ":"); neither is refused, never "".
_SUBJECT_SHORT_NAMES = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
                        "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
                        "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}


def _rfc4514_value(value):
    """An attribute value escaped as RFC 4514 section 2.4 says."""
    return "".join(f"\\{c}" if c in '"+,;<>\\' or c == " " and i in (0, len(value) - 1)
                   or c == "#" and i == 0 else "\\00" if c == "\0" else c
                   for i, c in enumerate(value))


def certificate_principal(certificate):
    """The principal of a verified client certificate: its subject as RFC 4514
    text ("CN=alice,O=Example"), else "URI:<first URI SAN>" or "DNS:<first DNS SAN>"."""
    rdns = certificate.get("subject", ())
    if rdns:
        return ",".join("+".join(f"{_SUBJECT_SHORT_NAMES.get(k, k)}={_rfc4514_value(v)}"
                                 for k, v in rdn) for rdn in reversed(rdns))
    for wanted in ("URI", "DNS"):
        for kind, value in certificate.get("subjectAltName", ()):
            if kind == wanted and value:
                return f"{kind}:{value}"
    raise AuthenticationRequiredError(
        "this client certificate names nobody: its subject is empty and it has no URI or DNS "
        "subjectAltName (give MutualTlsAuth(principal=...) to name such certificates)",
        challenge='Certificate realm="a2a"')


class _Peer(str):
    """The client's address (a str), carrying its TLS connection's verified certificate."""
    __slots__ = ("certificate",)

    def __new__(cls, address, certificate):
        peer = super().__new__(cls, address or "")
        peer.certificate = certificate
        return peer


def _match_secret(auth, known, given, hint, challenge):
    """The principal of ``given`` among ``known`` (bytes, principal), all compared;
    None for no credentials when ``auth.anonymous`` lets anonymous callers in."""
    import hmac
    if not given and auth.anonymous:
        return None
    given = given.encode()
    found = [principal for secret, principal in known if hmac.compare_digest(secret, given)]
    if not (given and found):
        raise AuthenticationRequiredError(f"{'invalid' if given else 'missing'} credentials: "
                                          f"{hint}", challenge=challenge)
    return found[0]


# Ranges Python 3.10's is_global still counts as global: IETF protocol
# assignments, IPv6 site-local, local-use NAT64, IPv6 documentation.
_NOT_GLOBAL = ("192.0.0.0/24", "fec0::/10", "64:ff9b:1::/48", "3fff::/20")
_NAT64 = 0x0064_ff9b << 64          # 64:ff9b::/96, as the top 96 bits of an address
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._")   # an IDNA host name's
_HEADER_CONTROLS = bytes(range(9)) + bytes(range(10, 32)) + b"\x7f"  # C0 but HTAB, and DEL
# The largest webhook URL, config id (when the client chooses it) and header
# value a push config may hold: it is kept with its task, and counts in its size.
_MAX_URL, _MAX_CONFIG_ID, _MAX_HEADER_VALUE = 2048, 256, 4096


def _parse_allow(entries):
    """push_allow -> (host names in IDNA form, networks)."""
    import ipaddress
    names, networks = set(), []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.lower().rstrip(".").encode("idna").decode("ascii"))
    return names, networks


def _may_reach(address, networks):
    """Whether webhooks may be sent to ``address``: push_allow names its network, or it
    is a globally routable unicast address. An IPv6 address that leads to IPv4 ones
    (IPv4-mapped, 6to4, NAT64, Teredo's server and client) is judged by all of those."""
    import ipaddress
    if any(address in network for network in networks):
        return True
    if address.version == 6:
        embedded = [a for a in (address.ipv4_mapped, address.sixtofour, *(address.teredo or ()),
                                ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
                                if int(address) >> 32 == _NAT64 else None) if a is not None]
        if embedded:
            return all(_may_reach(a, networks) for a in embedded)
    return (address.is_global and not address.is_multicast and not address.is_reserved
            and not any(address in ipaddress.ip_network(n) for n in _NOT_GLOBAL))


def _public_config(config):
    """A stored push config as the protocol shows it: without payloadVersion (0.3's)."""
    return config if "payloadVersion" not in config else {
        k: v for k, v in config.items() if k != "payloadVersion"}


def _webhook_target(url, allow, resolve):
    """Check a webhook URL, or raise InvalidParamsError. With ``resolve``
    (host, port -> addresses: _resolve_host, at delivery), or for a literal
    address, return (scheme, host, port, path, vetted addresses)."""
    import ipaddress
    from urllib.parse import quote, urlsplit
    if not url.isprintable():          # (urlsplit drops LF, CR and TAB; the log would not)
        raise InvalidParamsError("the webhook URL must not contain control characters (line "
                                 "breaks, ESC...): percent-encode them (%0A)", field="url")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InvalidParamsError(f"the webhook URL is not valid (its port or its [address]): "
                                 f"{url[:60]!r}", field="url") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidParamsError(f"webhook URLs must be http or https, not {url[:40]!r}",
                                 field="url")
    if "@" in parts.netloc:
        raise InvalidParamsError("webhook URLs must not carry credentials (user@host); put "
                                 "them in authentication", field="url")
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    host = (parts.hostname or "").rstrip(".")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
        try:                       # the form DNS, TLS and the Host header all see
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            host = ""
    if literal is None and not (host and set(host) <= _NAME_CHARS) or port == 0:
        raise InvalidParamsError(f"the webhook URL needs a host (a name or an address) and a "
                                 f"port other than 0: {url[:60]!r}", field="url")
    if literal is None and not resolve:
        return None                        # names are resolved when a delivery is made
    names, networks = allow
    addresses = [literal] if literal is not None else [
        ipaddress.ip_address(a) for a in resolve(host, port)]
    for address in addresses:
        if host not in names and not _may_reach(address, networks):
            raise InvalidParamsError(
                f"the webhook address {address}{'' if literal is not None else ' of ' + host} "
                "is not globally routable (loopback, private, shared, link-local, multicast, "
                "reserved...); start the server with push_allow=[...] (the demo: --push-allow) "
                "to allow it", field="url")
    path = quote(parts.path or "/", safe="/%!$&'()*+,;=:@~")   # as the request line may hold it
    if parts.query:
        path += "?" + quote(parts.query, safe="/%!$&'()*+,;=:@~?")
    return parts.scheme, host, port, path, [str(a) for a in dict.fromkeys(addresses)]


# =============================================================================
# 6. Agent execution
# =============================================================================
#
# Your agent is a callable. It receives a RequestContext, which *is* the text of the user's message
# (a str subclass), so the simplest agent is ``lambda text: "You said " + text``. The context also
# carries the whole message, the task so far, the context id, the caller, the extensions the client
# asked for and the request metadata.
#
# What the agent returns (or yields, as a generator; sync or async) becomes the task's story
# (section 3.1.1, 4.2):
#
#   a str                 -> an artifact with that text (a generator's strs are chunks of one
#                            artifact, each sent as it is made: append; the turn's end says
#                            lastChunk, on the last one if it has not gone yet, else by an empty
#                            append)
#   status_update(...)    -> a TaskStatusUpdateEvent (WORKING, INPUT_REQUIRED...)
#   artifact_update(...)  -> a TaskArtifactUpdateEvent
#   agent_message(...)    -> a direct Message reply and no task, as the first output of a new
#                            conversation (on a stream, within first_event_wait); within a task, or
#                            later on a stream, the agent's last word: the task completes with it
#   None                  -> nothing (yielded now and then, it lets a blocking SendMessage past its
#                            blocking_timeout answer)
#
# A stream shows what happens as it happens. Its first event is the agent's first output or, if the
# agent has said nothing within first_event_wait seconds (40 ms), the new Task (SUBMITTED): the
# client learns the task id at once and can cancel it. An agent_message(...) after that comes late:
# the task exists, and the message is its last word (as above); an A2AError raised then fails the
# task rather than the request.
#
# When the agent finishes without saying so, the task is COMPLETED; an exception FAILS it (the
# traceback goes to the log, not the client). CancelTask marks the task CANCELED at once; the agent
# sees ``context.cancelled`` set and its further output is dropped. An agent may have two methods
# more: ``admit(context)``, called before a new task exists (what it raises refuses the request,
# e.g. ServerBusyError), and ``close()``, called when the server shuts down, once its grace has
# passed.
#
# A task's new state is computed by _apply (the state table, section 3) and written in one place,
# _Channel.publish: under one lock it stores the task, appends the event to its log, and wakes
# every stream watching it. A new stream reads the task and the log position under that lock too,
# so it never misses or repeats an event.
#
# A threaded host runs the agent's turn on the request's thread (or a worker) and waits on a
# threading condition; a host on an event loop gets hooks: a stream to poll() and watch(), a
# pending answer to add_done_callback() to, and CallContext.spawn to run ``async def`` agents.


# Distributed tracing: W3C Trace Context (Level 1). A request may carry ``traceparent: 00-<trace
# id>-<the caller's span id>-<flags>`` and ``tracestate`` (vendors' entries, passed along unread).
# The server reads them only when something asks (CallContext.trace: most requests never do), gives
# the request's turn a span id of its own, and sends that span as the parent on every webhook POST
# of the turn and on every call its agent makes with a2a_client, so one trace follows the user's
# request through the agents it reaches. A malformed header is ignored (the request begins a new
# trace), never an error: tracing must not fail a call. The turn running in a thread or asyncio
# task is a context variable (a key; its values live in each thread's and task's context, not in
# this module). A later request about a task (SubscribeToTask, a message that continues it) is in a
# trace of its own, its caller's: what ties the two is the task's id.

_HEX = frozenset("0123456789abcdef")
_TRACESTATE_KEY = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-*/")
_TURN = contextvars.ContextVar("a2a_min_turn")


def _parse_traceparent(value):
    """(trace id, parent id, flags) of a ``traceparent`` value, or None if it
    is malformed (W3C Trace Context sections 3.2 and 4.3): a version after 00
    is read as 00 where it has 00's fields, and ff is none; ids of zeros are
    refused; of the flags only "sampled" is defined (others are sent as 0)."""
    if len(value) < 55 or value[2] != "-" or value[35] != "-" or value[52] != "-":
        return
    version, trace_id, parent_id, flags = value[:2], value[3:35], value[36:52], value[53:55]
    if version == "ff" or not _HEX.issuperset(version + trace_id + parent_id + flags) \
            or (len(value) > 55 and (version == "00" or value[55] != "-")) \
            or trace_id == "0" * 32 or parent_id == "0" * 16:
        return
    return trace_id, parent_id, int(flags, 16) & 1


def _parse_tracestate(value):
    """A ``tracestate`` value as it is passed on (section 3.3): its list members joined by commas,
    or "" when it is malformed (a member that is not key=value by the rules, a key twice, more than
    32 members). Past 512 characters, members over 128 go first, then the last ones."""
    members, keys = [m.strip(" \t") for m in value.split(",") if m.strip(" \t")], set()
    if len(members) > 32:
        return ""
    for member in members:
        key, _, val = member.partition("=")
        tenant, at, system = key.partition("@")
        if not (0 < len(val) <= 256 and val[-1] != " " and "=" not in val
                and all(" " <= c <= "~" for c in val) and key not in keys
                and (0 < len(key) <= 256 and "a" <= key[0] <= "z" if not at else
                     0 < len(tenant) <= 241 and tenant[0] not in "_-*/"
                     and 0 < len(system) <= 14 and "a" <= system[0] <= "z")
                and _TRACESTATE_KEY.issuperset(tenant + system)):
            return ""
        keys.add(key)
    while len(",".join(members)) > 512:
        long = [m for m in members if len(m) > 128]
        members.remove(long[0] if long else members[-1])
    return ",".join(members)


class TraceContext:
    """Where a request's turn sits in a distributed trace (W3C Trace Context): ``trace_id`` (32 hex
    digits), ``parent_id`` (the caller's span, 16 hex digits; None when this server began the
    trace), ``span_id`` (the turn's, new: a call made from the turn names it as its parent),
    ``flags`` (1: sampled, the caller records this trace) and ``tracestate`` ("" if none).
    ``headers()`` are the ones to send on a call made from here."""

    __slots__ = "trace_id", "parent_id", "span_id", "flags", "tracestate"

    def __init__(self, trace_id, parent_id=None, span_id=None, flags=1, tracestate=""):
        self.trace_id, self.parent_id, self.flags = trace_id, parent_id, flags & 1
        self.span_id = span_id or os.urandom(8).hex()
        self.tracestate = tracestate

    @classmethod
    def from_headers(cls, headers):
        """The turn's context for a request with these (lower-case) headers: a
        span under its valid traceparent, or else the first of a new trace."""
        value = headers.get("traceparent")
        found = value and _parse_traceparent(value)
        ids = os.urandom(24).hex()
        if not found:
            return cls(ids[:32], None, ids[32:])
        return cls(found[0], found[1], ids[32:], found[2],
                   _parse_tracestate(headers.get("tracestate", "")))

    @property
    def traceparent(self):
        return f"00-{self.trace_id}-{self.span_id}-0{self.flags}"     # (flags: 0 or 1)

    def headers(self):
        """``traceparent`` (and ``tracestate``) for a call made from this span."""
        headers = {"traceparent": self.traceparent}
        if self.tracestate:
            headers["tracestate"] = self.tracestate
        return headers

    def __repr__(self):
        return f"TraceContext({self.traceparent!r}, parent_id={self.parent_id!r})"


# -- Observers: what watches a server's work -------------------------------
#
# A log, metrics and spans watch requests, agent turns and webhook attempts; none of them changes
# an answer. They come in through one door, Server(observers=[...]): each an Observer, called at
# each event below in list order, on the thread doing that work. What a *_started call returns is
# the observer's own (a span, say), handed back to the call that ends it. The access log is the
# built-in one (Server(access_log=True)); a2a_metrics's Metrics (metrics=True) and a2a_otel's Spans
# (tracing="opentelemetry") are companions built on this class. A server with none pays nothing for
# them.

class Observer:
    """What watches a Server: its requests on every binding, its agents'
    turns, its webhook attempts. Each method here does nothing; override
    those you need. They must be quick and must not raise."""

    def request_started(self, request):
        """A Request arrived (``binding`` is None until it is answered, but
        for gRPC's). Returns this observer's mark for it."""

    def request_returned(self, request, mark):
        """The request's code returned on the thread it arrived on; an event
        loop may finish its answer later, and a stream runs on."""

    def request_answered(self, request, mark):
        """Its answer is known: ``request.status``, ``.error``, ``.size``,
        ``.seconds``, ``.binding`` and ``.call`` (see Request)."""

    def turn_started(self, ctx, call):
        """An agent's turn begins: ``ctx`` its RequestContext, ``call`` the
        CallContext of the request that began it (a span of the turn's own
        says so in ``call.trace``). Returns this observer's mark for it."""

    def turn_ended(self, ctx, state, mark):
        """The turn is over, its task in ``state`` (None: it made no task)."""

    def webhook_started(self, url, headers):
        """A webhook POST to ``url`` is about to go; ``headers``: the trace
        headers it sends, a dict this may change. Returns this observer's mark."""

    def webhook_ended(self, url, status, failure, mark):
        """The attempt ended: the HTTP ``status`` it got (None: none), and
        ``failure``, None when delivered, else its outcome ("failed", ...)."""


def _started(server, request):
    request.started = time.perf_counter()
    request.marks = {observer: observer.request_started(request) for observer in server.observers}


def _returned(request):
    for observer, mark in request.marks.items():
        observer.request_returned(request, mark)


def _answered(request, status, size, stream):
    request.status, request.size, request.stream = status, size, stream
    request.seconds = time.perf_counter() - request.started
    for observer, mark in request.marks.items():
        observer.request_answered(request, mark)


def _observers(server, access_log, tracing, metrics, more):
    """What watches ``server`` (its options of the same names): the access log, then the metrics
    and spans it asks for by name (companions), then the caller's own Observers."""
    if access_log not in (None, False, True, "json", "plain"):
        raise ValueError(f"access_log={access_log!r}: True (or \"plain\"), \"json\" or False")
    if tracing not in (True, False, "opentelemetry") and not hasattr(tracing, "get_tracer"):
        raise ValueError(f"tracing={tracing!r}: True, False, \"opentelemetry\" or an "
                         "OpenTelemetry TracerProvider")
    observers = [_companion("a2a_metrics", "Server(access_log=...)").AccessLog(
        server, access_log)] if access_log else []
    if metrics:
        server.metrics = _companion("a2a_metrics", "Server(metrics=True)").Metrics(server)
        observers.append(server.metrics)
    if tracing not in (True, False) and os.environ.get("OTEL_SDK_DISABLED", "").lower() != "true":
        observers.append(_companion("a2a_otel", "Server(tracing=...)").Spans(
            server, None if isinstance(tracing, str) else tracing))
    return observers + list(more)


# SendStreamingMessage ends when the task ends or waits for the client
# (section 3.1.2); SubscribeToTask only when the task ends (section 3.1.6).
_STREAM_END = TERMINAL_STATES | INTERRUPTED_STATES


class _Follower:
    """One stream's reading of a channel: (seq, StreamResponse) pairs from ``start`` on, until a
    final event; (None, None) is a keep-alive tick after ``keepalive`` seconds without news.
    ``first`` are events to give before the channel's. ``begin``: a new task's turn, whose begin()
    makes the task at ``begin_at`` (time.monotonic()) if nothing came before. Read it blocking
    (``for``: threads, WSGI, gRPC), or with poll() and watch() (a host on an event loop, which
    polls with ``idle`` at ``begin_at`` too).
    """

    def __init__(self, channel, start, keepalive, end_states, first=(), ended=False,
                 counted=False, begin=None):
        self.channel = channel
        self.seq = start
        self.keepalive = keepalive
        self.end_states = end_states
        self.ready = deque(first)
        self.ended = ended            # nothing more after ``ready``
        self.counted = counted        # counted in channel.followers until closed
        self.retry = False            # ended by a shutdown: the client should come back
        self.tail_seen = 0            # how many of channel.tail were given
        self.raw = False              # the reader takes an artifact update as its JSON (bytes)
        self.begin = begin            # the turn that makes the task, if it is not made yet
        self.begin_at = begin and time.monotonic() + begin.live.limits["first_event_wait"]
        self.on_close = None          # called once when closed (_counted_stream)

    def _take(self):
        """Move the task's new events (from the store) to ``ready``, with the channel's lock held;
        a shared store is asked whatever this process knows, as another process may write to it."""
        channel = self.channel
        if self.ended:
            return False
        news = False
        task = channel.task
        if task is not None and (channel.next_seq > self.seq or channel.store.shared):
            try:
                found = (channel.store.events(task["id"], self.seq - 1, raw=True) if self.raw
                         else channel.store.events(task["id"], self.seq - 1))
                if found and found[0] > self.seq:                 # fell behind the kept events:
                    # the task as it is now instead, which holds them all (one copy of its
                    # JSON for every reader that fell behind at this version of it)
                    if channel.store.shared:            # (another process may be ahead)
                        channel.reload()
                    self.ready.append((channel.next_seq - 1, channel.shared_task()))
                    self.seq, news, found = channel.next_seq, True, None
            except (ServerBusyError, TaskNotFoundError):    # a shared store is away (read on
                found = None                                # once it is back), or it is gone
            if found and found[1]:
                self.ready.extend(found[1])
                self.seq, news = found[1][-1][0] + 1, True
        if len(channel.tail) > self.tail_seen:
            self.ready.extend(channel.tail[self.tail_seen:])
            self.tail_seen, news = len(channel.tail), True
        return news

    def _give(self):
        """The next ready event. An error ends the stream, and so does a final
        event: a Message, or a status in ``end_states`` (an update's, or a
        whole task's, given to a reader that fell behind the replay buffer)."""
        seq, event = self.ready.popleft()
        if type(event) is bytes:      # (raw: a settled event, as the store keeps it)
            if event.startswith(b'{"artifactUpdate":'):
                return seq, event     # (nothing in it can end the stream)
            event = _StoredEvent.decode(event)
        if "error" in event:
            self.close()
            raise event["error"]
        update = event.get("statusUpdate") or event.get("task")
        if "message" in event or update and update["status"]["state"] in self.end_states:
            self.close()
        return seq, event

    def __iter__(self):
        return self

    def __next__(self):
        """The next event, waiting for it up to ``keepalive``: then the tick (None, None)."""
        if not self.ready:
            if self.ended:
                raise StopIteration
            channel = self.channel
            self._end_if_stopped()
            with channel.lock:
                if not self._take():
                    self._end_if_closing()
                    self._wait(channel)
                    self._end_if_stopped()
                    if self.begin and time.monotonic() >= self.begin_at - 0.001:
                        self._begin()
                    if not self._take():
                        self._end_if_closing()
                        return None, None
        return self._give()

    def _wait(self, channel):
        """Wait for news, up to ``keepalive``, with the channel's lock held."""
        if channel.cond is None:
            channel.cond = threading.Condition(channel.lock)
        channel.waiting += 1
        try:
            wait = self.keepalive
            if self.begin:                      # (a new task's first event is due at begin_at)
                if channel.task is None and not channel.tail:
                    wait = min(wait, max(0.0, self.begin_at - time.monotonic()))
                else:
                    self.begin = None
            channel.cond.wait(wait)
        finally:
            channel.waiting -= 1

    def _end_if_stopped(self):
        """_end_if_closing, past where the channel stopped (what comes later: the resume)."""
        stopped = self.channel.stopped
        if stopped is not None and self.seq >= stopped:
            self._end_if_closing()

    def _end_if_closing(self):
        """If the server is shutting down, end here (StopIteration), telling the
        client to come back (``retry``) and resume with Last-Event-ID; a turn
        still running here is followed to its end first (shutdown's grace)."""
        closing = self.channel.closing
        if closing and closing.is_set() and \
                (self.channel.active is None or self.channel.stopped is not None):
            self.retry = True
            self.close()
            raise StopIteration

    # -- for a host on an event loop, which must not block in __next__ ------------

    def poll(self, idle=False):
        """The next (seq, StreamResponse) without waiting, or None if nothing
        is new (with ``idle``, the host waited ``keepalive`` seconds: the tick
        (None, None) instead). Raises StopIteration at the end."""
        if not self.ready:
            if self.ended:
                raise StopIteration
            channel = self.channel
            self._end_if_stopped()
            news = False
            if channel.next_seq > self.seq or channel.store.shared or \
                    len(channel.tail) > self.tail_seen:     # (else nothing is new: no lock)
                with channel.lock:
                    news = self._take()
            if not news and idle and self.begin:                # (its first event is due)
                off_loop = self.begin.live.off_loop
                if off_loop and channel.task is None:               # (a shared store's
                    off_loop.run(self.begin.begin)                  # write may wait: not here)
                    self.begin = None
                else:
                    with channel.lock:
                        self._begin()
                        news = self._take()
            if not news:
                self._end_if_closing()
                return (None, None) if idle else None
        return self._give()

    def _begin(self):
        """The first event is due: the task, if nothing else came first."""
        begin, self.begin = self.begin, None
        if self.channel.task is None:
            begin.begin()

    def watch(self, wake):
        """Have ``wake()`` called, from any thread, whenever the channel has news."""
        with self.channel.lock:
            self.channel.wakers.add(wake)

    def unwatch(self, wake):
        with self.channel.lock:
            self.channel.wakers.discard(wake)

    def close(self):
        self.ended = True
        self.ready.clear()
        on_close, self.on_close = self.on_close, None
        if on_close:
            on_close()
        if self.counted:
            self.counted = False
            with self.channel.lock:
                self.channel.followers -= 1


class _Done:
    """A one-shot signal (a turn is over): threads wait() for it; anyone may
    add_waker() to be called when it is set."""

    __slots__ = "is_set", "wakers"

    def __init__(self):
        self.is_set, self.wakers = False, []

    def set(self):
        self.is_set = True
        wakers, self.wakers = self.wakers, []   # (dropped: frees what their closures hold)
        for wake in wakers:
            wake()

    def wait(self, timeout):
        """Block the calling thread until set (True) or ``timeout`` seconds (False)."""
        event = threading.Event()
        self.wakers.append(event.set)
        if not self.is_set:
            event.wait(timeout)
        return self.is_set

    def add_waker(self, wake):
        """Have ``wake()`` called once set (at once, if it is). It may be called
        twice when set() runs meanwhile: wakers must not mind."""
        self.wakers.append(wake)
        if self.is_set:
            wake()


class _Workers:
    """A bounded pool of daemon threads (a stuck agent never blocks exit).
    Sync agents of streams, of returnImmediately and of every request on an
    event loop run here, at most ``limit`` at once; the rest wait (SUBMITTED)."""

    def __init__(self, limit):
        from queue import SimpleQueue
        self.limit, self.count, self.jobs = limit, 0, SimpleQueue()
        self.idle, self.lock = threading.Semaphore(0), threading.Lock()

    def submit(self, fn, *args):
        self.jobs.put((fn, args))
        if self.idle.acquire(blocking=False):
            return                             # an idle worker will take it
        with self.lock:
            if self.count >= self.limit:
                return                         # all busy: it waits in the queue
            self.count += 1
        threading.Thread(target=self._work, name="a2a-worker", daemon=True).start()

    def _work(self):
        while True:
            fn, args = self.jobs.get()
            try:
                fn(*args)
            except Exception:
                _log().exception("unexpected error in a worker")
            fn = args = None                   # (not held while it waits: a dropped Server goes)
            self.idle.release()


class _PendingAnswer:
    """SendMessage's answer while its turn still runs, for a host on an event loop, which must not
    wait. It is settled when the turn ends, or at ``deadline`` (time.monotonic():
    blocking_timeout), when the host calls expire(): ``answer()`` is its value then.
    ``add_done_callback(fn, *args)`` has ``fn(self, *args)`` called once settled, in the thread
    that settled it (arguments, not closures: a closure holding what holds it is a reference
    cycle)."""

    __slots__ = "answer", "deadline", "lock", "settled", "value", "error", "callbacks"

    def __init__(self, answer, turn, deadline):
        self.answer, self.deadline, self.lock = answer, deadline, threading.Lock()
        self.settled, self.value, self.error, self.callbacks = False, None, None, []
        if turn is not None:                   # (None: a long-poll GetTask's, settled by it)
            turn.finished.add_waker(self.expire)

    def expire(self):
        """Settle now: with the turn's answer if it has ended, else with the task
        as it is (the deadline passed). Later calls do nothing."""
        with self.lock:
            if self.settled:
                return
            try:
                self.value = self.answer()
            except Exception as exc:
                self.error = exc
            self.settled = True
            callbacks, self.callbacks = self.callbacks, None
        for fn, args in callbacks:
            fn(self, *args)

    def done(self):
        return self.settled

    def add_done_callback(self, fn, *args):
        with self.lock:
            if not self.settled:
                self.callbacks.append((fn, args))
                return
        fn(self, *args)

    def result(self):
        if self.error:
            raise self.error
        return self.value


# The most bytes of ready SSE frames joined into one write (_SSEStream._joined).
_JOINED = 65536


class _TurnWriter:
    """Turns one agent turn's outputs into task changes and events."""

    __slots__ = ("live", "ctx", "channel", "ids", "watched", "done", "reply", "error", "chunk",
                 "chunk_id", "finished", "events", "bytes", "batch")

    def __init__(self, live, ctx, channel, watched=False):
        self.live, self.ctx, self.channel = live, ctx, channel
        self.ids = {"taskId": ctx.task_id, "contextId": ctx.context_id}   # in every update
        self.watched = watched     # a stream follows this turn from its start
        self.done = False          # the task reached an end state for this turn
        self.reply = None          # a direct Message reply, if the agent gave one
        self.error = None          # an A2AError that fails the request (before any task)
        self.chunk = None          # the turn's last text chunk while its artifact is open
        self.chunk_id = None       # the artifact a generator's str chunks make (one a turn)
        self.finished = _Done()    # set when the turn is over
        self.events = self.bytes = 0    # the updates of this turn and their bytes of JSON (limits)
        self.batch = None          # a list while outputs are held to be written together (flush)

    def emit(self, item, chunked):
        """One output of the agent (the table above). A generator's strs are chunks of one artifact
        (``chunked``), each published as it comes; the artifact's end (lastChunk, section 4.2.3) is
        told when the turn ends (_close_chunk)."""
        if self.done or item is None:
            return
        if self.ctx._canceled:
            self.done = True
            return
        if isinstance(item, str):
            if not item.isascii():
                _check_agent_text(item)
            first = not chunked or self.chunk_id is None
            artifact_id = self.live.new_id() if first else self.chunk_id
            body = {**self.ids, "artifact": {"artifactId": artifact_id, "parts": [{"text": item}]}}
            if chunked:                        # a chunk: the first makes the artifact, the
                if first:                      # others append to it
                    self.chunk_id = artifact_id
                else:
                    body["append"] = True
                self.chunk = body
            return self._publish("artifactUpdate", body, None)
        elif isinstance(item, dict) and "parts" in item and "messageId" in item:
            item = {"message": item}
        if not isinstance(item, dict) or len(item) != 1:
            raise InvalidAgentResponseError(
                f"the agent produced {type(item).__name__}; agents return or yield str, "
                "status_update(...), artifact_update(...) or agent_message(...)"
                + ("; to send data, yield artifact_update([data_part(your_dict)])"
                   if isinstance(item, dict) else ""))
        (kind, body), = item.items()
        handler = _OUTPUT_HANDLERS.get(kind)
        if handler is None:
            raise InvalidAgentResponseError(
                f"the agent produced a dict whose key is {kind!r}, which is no output; a dict "
                "must be one of statusUpdate, artifactUpdate or message (status_update(...), "
                "artifact_update(...), agent_message(...)); to send data, yield "
                "artifact_update([data_part(your_dict)])")
        handler(self, body)

    def begin(self):
        """Make the task now, if the agent has said nothing yet: its stream's
        first event is due (first_event_wait), and the Task is it."""
        channel, ctx = self.channel, self.ctx
        with channel.lock:
            if channel.task is not None or channel.tail or self.done or ctx._canceled:
                return
            try:
                self.live.make_task(ctx, channel)
            except Exception as exc:            # no task: the stream ends with the error,
                _log().error("task %s could not be made%s", ctx.task_id, _in_trace(ctx),
                             exc_info=exc)
                ctx._cancel()                   # and the agent's outputs have nowhere to go
                self._refuse(exc)

    def complete(self, result):
        """The agent returned one answer (not a generator): its output, then the end."""
        if isinstance(result, str) and not result.isascii():
            _check_agent_text(result)
        events = [] if self.watched else None
        with self.channel.lock:                # (a stream's reader may make the task: begin)
            task = self.at_once(result, events)
            if events:                         # a stream follows: its events, stored with it
                self.channel.publish(task, events.pop(), first=events)
            elif task is not None:             # nobody could have watched it: no events
                self.channel.save(task)
        if task is None:
            self.emit(result, chunked=False)
            self.finish()
        else:
            self._end_turn(kept=False)

    def at_once(self, result, events=None):
        """The task this turn leaves, if it can be stored in one write (else
        None): a new task whose agent returned a str, which no webhook follows,
        nor a stream unless the store ``batches`` (then ``events`` gets the three
        it is told: the Task, the artifact, COMPLETED). Its snapshots are made by
        _apply; the commonest request writes the store once instead of three times."""
        channel, ctx = self.channel, self.ctx
        if not (isinstance(result, str) and channel.task is None and channel.on_event is None
                and not ctx._canceled
                and (not self.watched or getattr(channel.store, "batches", False))):
            return
        now, ids = self.live.now(), self.ids
        artifact = {**ids, "artifact": {"artifactId": self.live.new_id(),
                                        "parts": [{"text": result}]}}
        status = {**ids, "status": {"state": "TASK_STATE_COMPLETED", "timestamp": now}}
        submitted = _apply(None, "message", ctx.message, now)
        if events is not None:                 # (as make_task, _artifact and _status would)
            events += ({"task": submitted}, self._counted({"artifactUpdate": artifact}),
                       {"statusUpdate": status})
        return _StoredTask(_apply(_apply(submitted, "artifactUpdate", artifact, None),
                                  "statusUpdate", status, None))

    def _close_chunk(self):
        """The turn ends: its chunked artifact's last chunk says lastChunk. If
        that chunk is still held to be written with others (``batch``),
        it says so itself; if it went out already (the agent waited after it),
        an empty chunk follows that says it. Nothing is held back to know."""
        body, self.chunk = self.chunk, None
        waiting = self.batch
        if waiting and waiting[-1][1] is body:
            kind, body, now, event = waiting[-1]
            body["lastChunk"] = True
            again = _StoredEvent.encode({kind: body}, None, None)
            self.bytes += len(again.json) - len(event.json)
            waiting[-1] = kind, body, now, again
            return
        self._publish("artifactUpdate", {**self.ids, "append": True, "lastChunk": True,
                                         "artifact": {"artifactId": self.chunk_id,
                                                      "parts": [{"text": ""}]}}, None)

    def _status(self, body, trusted=False):
        """Publish a status update, with the turn's task and context ids (``trusted``: built here;
        the agent's own is checked against the proto first)."""
        body = {**self.ids, **body} if trusted else \
            parse("TaskStatusUpdateEvent", {**body, **self.ids}, "agent statusUpdate")
        status = body["status"]
        if self.chunk is not None and status["state"] in _STREAM_END:
            self._close_chunk()                 # (its artifact ends before the turn does)
        now = status["timestamp"] = self.live.now()
        if "message" in status:
            status["message"] = {**status["message"], **self.ids}
        if self._publish("statusUpdate", body, now) and status["state"] in _STREAM_END:
            self.done = True

    def _artifact(self, body):
        """Publish the agent's artifact update, checked against the proto, with the turn's ids."""
        self._publish("artifactUpdate", parse("TaskArtifactUpdateEvent", {**body, **self.ids},
                                              "agent artifactUpdate"), None)

    def _publish(self, kind, body, now, event=None, earlier=()):
        """Apply the update (after those ``earlier``, from flush()) to the task,
        made now if there is none, and publish it, or hold it in ``batch`` for
        flush(); False if the task was canceled meanwhile (all are dropped)."""
        if event is None:
            event = {kind: body}
            if kind == "artifactUpdate" or body["status"]["state"] not in _STREAM_END:
                event = self._counted(event)
            if self.batch is not None:
                self.batch.append((kind, body, now, event))
                return True
        channel = self.channel
        with channel.lock:
            if channel.task is None:
                self.live.make_task(self.ctx, channel)
            if self.ctx._canceled:
                self.done = True
                return False
            try:
                channel.change(kind, body, now, event, earlier=earlier)
            except UnsupportedOperationError:
                if channel.task["status"]["state"] not in TERMINAL_STATES:
                    raise
                self.ctx._cancel()          # canceled meanwhile by another process
                self.done = True
                return False
        return True

    def flush(self):
        """Write the outputs held in ``batch`` at once: an async agent's, made
        without waiting in between (_drive_async), one commit not one each."""
        batch = self.batch
        if batch:
            self.batch = []
            try:
                self._publish(*batch.pop(), earlier=batch)
            except BaseException:
                self.done = False           # (an end it held was not written either)
                raise

    def _counted(self, event):
        """``event`` encoded (a _StoredEvent), and counted against the turn's
        bounds (max_turn_events, max_turn_bytes): past one the turn fails. A
        status that ends it is not counted."""
        event = _StoredEvent.encode(event, None, None)
        self.events += 1
        self.bytes += len(event.json)
        limits = self.live.limits
        if self.events > limits["max_turn_events"] or self.bytes > limits["max_turn_bytes"]:
            limit, unit = (("max_turn_events", "events") if self.events > limits["max_turn_events"]
                           else ("max_turn_bytes", "bytes of events"))
            raise InvalidAgentResponseError(
                f"the agent produced more than {limits[limit]} {unit} in one turn, the "
                f"most this server takes ({limit}); the turn was stopped there",
                metadata={"limit": limit, "value": limits[limit]})
        return event

    def _message(self, body):
        """A Message from the agent. Before any task exists it is the whole
        answer, and no task is made (section 3.1.1); within a task it
        completes the turn, as the status message of COMPLETED."""
        message = parse("Message", {"role": "ROLE_AGENT", **body,
                                    "contextId": self.ctx.context_id}, "agent message")
        with self.channel.lock:                # (a stream's reader may make the task: begin)
            if self.channel.task is None and not self.batch:
                message.pop("taskId", None)
                self.reply, self.done = message, True
                self.settle_send(message)
                self.channel.publish(None, {"message": message})
                return
        self._status({"status": {"state": "TASK_STATE_COMPLETED", "message": message}}, True)

    def finish(self):
        """The agent returned: COMPLETED unless it said otherwise (which ends
        its chunked artifact too: _status)."""
        if not self.done:
            self._status({"status": {"state": "TASK_STATE_COMPLETED"}}, True)
        self.flush()
        self._end_turn()

    def fail(self, exc):
        """The agent raised: FAILED, with a message that names the error, not
        the traceback. An A2AError raised before any task fails the request."""
        self.chunk = None
        try:
            self.flush()                    # what it made before it raised goes first
        except Exception as lost:
            _log().error("task %s: the agent's last outputs could not be stored%s",
                         self.ctx.task_id, _in_trace(self.ctx), exc_info=lost)
        self.batch = None
        with self.channel.lock:                # (a stream's reader may make the task: begin)
            refused = self.channel.task is None and isinstance(exc, A2AError)
            if refused:
                _log().info("agent refused the request: %s", exc.message)
                self._refuse(exc)
        if not refused:
            _log().error("agent failed on task %s%s", self.ctx.task_id, _in_trace(self.ctx),
                         exc_info=exc)
            if not self.done:
                try:
                    self._status({"status": {"state": "TASK_STATE_FAILED", "message": new_message(
                        exc.message if isinstance(exc, A2AError)
                        else f"the agent failed ({type(exc).__name__}); see the server log")}},
                        True)
                except Exception as again:
                    self._fail_plainly(again)
        self._end_turn()

    def _fail_plainly(self, exc):
        """Recording the failure failed too: the task still ends FAILED, as a
        plain task without what the agent made (unstorable); streams are told."""
        _log().error("could not record the failure of task %s%s", self.ctx.task_id,
                     _in_trace(self.ctx), exc_info=exc)
        channel, ctx = self.channel, self.ctx
        with channel.lock:
            if channel.task is not None and not ctx._canceled:
                now, ids = self.live.now(), self.ids
                status = {"state": "TASK_STATE_FAILED", "timestamp": now,
                          "message": new_message("the agent failed, and what it produced could "
                                                 "not be stored; see the server log", **ids)}
                task = _apply(_apply(None, "message", ctx.message, now), "statusUpdate",
                              {"status": status}, now)
                try:
                    return channel.publish(task, {"statusUpdate": {**ids, "status": status}})
                except Exception as again:
                    _log().error("task %s could not be stored at all%s", ctx.task_id,
                                 _in_trace(ctx), exc_info=again)
            self._refuse(exc)                  # nothing could be stored

    def _refuse(self, exc):
        """The request fails with ``exc`` (an A2AError, else InternalError) and
        no task: the streams waiting for one end with it."""
        self.error = exc if isinstance(exc, A2AError) else InternalError(
            "the task could not be stored; see the server log")
        self.settle_send(None)
        self.channel.publish(None, {"error": self.error})

    def settle_send(self, reply):
        """A turn that made no task: a repeat of its send is answered with its
        Message ``reply``; or (None: it was refused) the send's key is free again."""
        if self.ctx.send_key is not None:
            key, message = self.ctx.send_key
            self.live.store.settle_send(self.channel.owner, key, reply,
                                        reply and _digest(message))

    def saved(self, task, committed):
        """A turn that at_once() ended was committed elsewhere (a shared
        store's loop commits, a2a_store): the rest of its end."""
        self.channel.save(task, committed)
        self._end_turn()

    def _end_turn(self, kept=True):
        """The turn is over: the task takes messages again, and a task that
        ended or waits for the client lets go of its channel (_LiveTasks.forget;
        not ``kept``: the live tasks never held it, as at_once's)."""
        self.done = True
        self.channel.active = None
        task = self.channel.task
        if self.ctx.marks is not None:         # (observers watch the turn)
            marks, self.ctx.marks = self.ctx.marks, None
            for observer, mark in marks.items():
                observer.turn_ended(self.ctx, task and task["status"]["state"], mark)
        if kept and task is not None:
            state = task["status"]["state"]
            if state in _IDLE_STATES:          # ended, or waiting: nobody writes until the client
                self.live.forget(self.ctx.task_id, unless_followed=state not in TERMINAL_STATES)
            else:                          # its end was not written (a shared store away)
                self.live.unrecorded(self.ctx.task_id, self.channel.owner)
        self.finished.set()


_OUTPUT_HANDLERS = {"statusUpdate": _TurnWriter._status,
                    "artifactUpdate": _TurnWriter._artifact, "message": _TurnWriter._message}


class _Channel:
    """The live side of one task in this process: where its writers and the streams following it
    meet. The store keeps the task's events; the channel holds the newest snapshot and its version
    (what a writer read, so the store can refuse a lost update), the running turn (``active``) and
    the wake-ups: threads wait on ``cond``, streams on an event loop put a callable in ``wakers``.
    ``tail`` holds what is not stored but ends the streams: a direct reply of a turn that made no
    task, or an error."""

    __slots__ = ("lock", "cond", "waiting", "wakers", "task", "version", "next_seq", "tail",
                 "owner", "caller", "holder", "store", "active", "on_event", "limits",
                 "followers", "ended", "closing", "grown", "written", "appended", "shared",
                 "stopped")

    def __init__(self, store, owner, limits, on_event, caller, closing):
        self.lock, self.wakers = threading.RLock(), set()
        self.cond, self.waiting = None, 0   # a Condition on lock (made on first wait), its waiters
        self.task, self.version = None, 0   # newest snapshot, its version in the store (0: none)
        self.next_seq = 0         # the id of the task's next event, as far as this process knows
        self.tail = []            # (id, event) pairs that are not stored (see above)
        self.store, self.owner = store, owner
        self.caller = caller      # whom a new task counts against in the store
        self.holder = None        # this process, as a shared store's leases name it
        self.active = None        # the RequestContext of the running turn, if any
        self.on_event = on_event  # told of every task event (push notifications)
        self.limits = limits      # the server's: max_history
        self.followers = 0        # SubscribeToTask streams, which follow it across turns
        self.ended = False        # the server let go of it: no event will come again
        self.closing = closing    # the server's threading.Event: set when it shuts down
        self.stopped = None       # grace over: the seq its streams end at (a turn running or not)
        self.grown = None         # the parts list the last append made, if only ``task`` has it
        self.written = 0          # bytes of the task's JSON when the store last wrote it whole
        self.appended = None      # bytes of the events it kept alone since (None: not known)
        self.shared = None        # (seq, version, weakref: the Task event subscribers share)

    def publish(self, task, event, tell=True, derived=False, first=()):
        """Commit the new task snapshot with its event (after the events ``first``, to a store that
        ``batches``); wake the streams, and (``tell``) the webhooks. ``task`` None: an event that
        is not stored (see ``tail``). ``derived``: ``event`` is an artifactUpdate applied to the
        stored task, which the store may keep alone (see "The task store")."""
        with self.lock:
            if task is None:
                self.tail.append((self.next_seq, event))
                self.wake()
                return
            if not derived:                     # (an artifact update adds no history)
                task, event = _cut_history(task, event, self.limits["max_history"])
            size = len(event.json) if type(event) is _StoredEvent else None
            if derived and first and size is not None:    # (and the chunks made just before)
                size += sum(len(earlier.json) for earlier in first)
            alone = derived and size is not None and self.appended is not None and \
                self.appended + size <= max(self.written, _APPEND_FLOOR) and \
                getattr(self.store, "appends", False)
            if first:                           # (a store that ``batches``)
                stored, self.version, seq = self.store.commit(
                    task, self.owner, self.version, event, self.caller, self.holder,
                    derived=alone, first=first)
            else:
                stored, self.version, seq = self.store.commit(
                    task, self.owner, self.version, event, self.caller, self.holder,
                    derived=alone)
            if alone and stored is None:
                self.appended += size
            else:
                self.written, self.appended = len(stored or b""), 0
            self.task, self.next_seq = task, seq + 1
            self.wake()
            if tell:
                self.tell(event)                # in order: under the lock

    def tell(self, event):
        """Tell the webhooks (``on_event``) of the task's ``event``."""
        if self.on_event:
            self.on_event(self.caller or self.owner, self.task, event)

    def change(self, kind, body, now, event=None, tell=True, earlier=(), expect=None):
        """Apply one event of TRANSITIONS to the task and publish it (as ``event``, or else as the
        whole task). If another writer committed first, read the task again: the table decides
        again. ``earlier``: the (kind, body, now, event) changes one turn made just before it,
        without waiting (_TurnWriter.batch), published in the same commit (batched). ``expect``:
        the generation the task must be at (1.1's ifGenerationMatch), at each try."""
        with self.lock:
            if earlier:
                return self._batched(earlier + [(kind, body, now, event)])
            for _ in range(16):
                if expect is not None:
                    self.expecting(expect)
                grown, self.grown = self.grown, None    # an append grows it in place (_apply)
                mark = 0 if grown is None else len(grown)   # taken back if the store refuses
                task = _apply(self.task, kind, body, now,
                              grown if kind == "artifactUpdate" else None)
                try:
                    self.publish(task, event or {"task": task}, tell,
                                 derived=kind == "artifactUpdate")
                except BaseException as error:
                    if grown is not None and self.task is not task:    # (not committed)
                        del grown[mark:]
                    if not isinstance(error, UnsupportedOperationError) or self.task is None:
                        raise
                    self.reload()           # a conflict, or the task ended meanwhile
                    continue
                if kind == "artifactUpdate" and body.get("append"):
                    self.grown = _parts_of(task, body["artifact"]["artifactId"])
                return task
            raise ConflictError(f"task {self.task['id']} changes too fast to write to; retry")

    def _batched(self, batch):
        """change() for several: in one commit, when the store ``batches`` and
        no webhook needs telling of each; else one by one."""
        with self.lock:
            if self.on_event or not getattr(self.store, "batches", False):
                for kind, body, now, event in batch:
                    self.change(kind, body, now, event)
                return
            grown = first_grown = self.grown
            self.grown, mark = None, 0 if grown is None else len(grown)
            task, derived = self.task, True
            for kind, body, now, event in batch:
                derived = derived and kind == "artifactUpdate"
                task = _apply(task, kind, body, now, grown if kind == "artifactUpdate" else None)
                grown = (_parts_of(task, body["artifact"]["artifactId"])
                         if kind == "artifactUpdate" and body.get("append") else None)
            try:
                self.publish(task, batch[-1][3], derived=derived,
                             first=[event for _, _, _, event in batch[:-1]])
            except BaseException:
                if first_grown is not None and self.task is not task:   # (not committed)
                    del first_grown[mark:]
                raise
            self.grown = grown

    def expecting(self, generation):
        """TaskGenerationMismatchError unless the task is at ``generation`` (see _as_of): as
        stored now, if another process may have moved it."""
        if self.store.shared:
            self.reload()
        now = max(self.next_seq, 1)
        if generation != now:
            raise TaskGenerationMismatchError(
                f"task {self.task['id']} is at generation {now}, not {generation} "
                "(ifGenerationMatch): it changed since you read it; GetTask shows it as it is "
                "now, then send again if you still mean to",
                metadata={"taskId": self.task["id"], "expectedGeneration": generation,
                          "currentGeneration": now})

    def snapshot(self):
        """The task as it is now, for a reader outside the turn: the next
        append copies its parts again rather than grow this one's."""
        with self.lock:
            self.grown = None
            return self.task

    def reload(self):
        """Read the task again from the store (TaskNotFoundError if it is gone)."""
        with self.lock:
            task = self.store.get(self.task["id"], self.owner)
            if task is None:
                raise _no_longer_stored(self.task["id"])
            self.task, self.version = task, task.version
            self.next_seq = max(self.next_seq, task.next_seq)
            self.grown = self.appended = None       # (what the store keeps is not known)

    def save(self, task, committed=None):
        """Store a snapshot no stream or webhook hears of (the shortcut of a
        turn nobody could watch); ``committed``: what the store's commit
        returned, if the caller committed it already (a2a_store)."""
        with self.lock:
            stored, self.version, _ = committed or self.store.commit(
                task, self.owner, self.version, None, self.caller, self.holder)
            self.written, self.appended, self.grown = len(stored or b""), 0, None
            if type(task) is _StoredTask:
                task.json, task.version, task.next_seq = stored, self.version, self.next_seq
            self.task = task

    def shared_task(self):
        """{"task": the task now}, as JSON encoded once for every stream that sends this version of
        it whole (SubscribeToTask's first event, a reader that fell behind): they send that one
        copy (_SSEStream), kept while one is sending it."""
        import weakref
        with self.lock:
            shared = self.shared
            shared = shared[2]() if shared and shared[:2] == (self.next_seq, self.version) \
                else None
            if shared is None:
                shared = _StoredEvent.encode({"task": self.task}, None, None)
                self.shared = self.next_seq, self.version, weakref.ref(shared)
            return shared

    def wake(self):
        """Tell every stream watching this channel to look again."""
        with self.lock:
            if self.waiting:
                self.cond.notify_all()
            for wake in tuple(self.wakers):     # (a waker may leave: _stop_looking)
                wake()


class RequestContext(str):
    """What the agent is told about a request. Its string value is the text
    of the user's message (all text parts, joined by newlines).

    Attributes: ``message`` (the Message dict), ``task`` (the Task dict so far,
    None for a new task), ``task_id``, ``context_id``, ``caller`` (the
    CallContext), ``extensions`` (URIs the client announced), ``metadata``,
    ``configuration``, ``cancelled`` (a threading.Event) and ``trace`` (the
    turn's TraceContext, W3C Trace Context); ``marks``, while observers
    watch the turn, what each one's turn_started returned, by observer."""

    marks = None
    send_key = None             # (key, message) of a send whose repeat answers as it did

    def __new__(cls, message, *, task=None, task_id=None, context_id=None, caller=None,
                extensions=(), metadata=None, configuration=None):
        parts = message.get("parts", ())       # (the usual message: one part, first below)
        self = super().__new__(cls, parts[0].get("text", "") if len(parts) == 1 else
                               "\n".join(p["text"] for p in parts if "text" in p))
        self.message = message
        self.task = task
        self.task_id = task_id
        self.context_id = context_id
        self.caller = caller
        self.extensions = extensions
        self.metadata = {} if metadata is None else metadata
        self.configuration = {} if configuration is None else configuration
        self._canceled = False      # what the server checks; ``cancelled`` shows it as an Event
        return self

    @property
    def cancelled(self):
        """A threading.Event, set when the task is canceled (made on first use)."""
        event = self.__dict__.get("_event")
        if event is None:
            event = self.__dict__.setdefault("_event", threading.Event())
            if self._canceled:
                event.set()
        return event

    def _cancel(self):
        self._canceled = True
        if "_event" in self.__dict__:
            self._event.set()

    @property
    def trace(self):
        """The turn's TraceContext (W3C Trace Context: the caller's trace, a
        span of the turn's own), or None when the server's tracing is off."""
        return None if self.caller is None else self.caller.trace

    @staticmethod
    def current():
        """The RequestContext of the turn this thread or asyncio task runs (a
        thread the agent starts: contextvars.copy_context().run), or None; kept
        while the server's ``tracing`` is on: a2a_client sends its ``trace`` on."""
        return _TURN.get(None)

    @property
    def text(self):
        """The user's text as a plain str."""
        return str.__str__(self)

    def require_extension(self, uri):
        """Raise ExtensionSupportRequiredError unless the client announced ``uri``
        (section 3.3.2). Raised before any output, it fails the request."""
        if uri not in self.extensions:
            raise _extension_required(uri)


def _check_agent_text(text):
    """The agent's text, if UTF-8 can encode it (else no task could hold it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidAgentResponseError(
            f"the agent produced text with a lone surrogate ({text[exc.start]!r} at "
            f"{exc.start}), which cannot be stored or sent") from None


def _extension_required(uri):
    return ExtensionSupportRequiredError(
        f"this agent requires the extension {uri}; announce it with "
        f"-H 'A2A-Extensions: {uri}' (gRPC metadata a2a-extensions)", metadata={"extension": uri})


class CallContext:
    """Who is calling and how: binding-neutral facts about one request.

    ``headers`` has lower-case names (HTTP headers or gRPC metadata), ``tenant`` the tenant the
    request addresses, ``principal`` whoever the authentication hook said the caller is (None:
    anonymous), ``extensions`` the URIs of A2A-Extensions, ``version`` the A2A-Version served,
    ``base_url`` how the client reached the server, ``peer`` the client's address (behind a trusted
    proxy, the one the proxy saw).

    ``spawn``, set by a host on an event loop, runs a coroutine there; it also
    says this thread must never wait: an ``async def`` agent runs through it,
    and a turn still running is answered with a _PendingAnswer."""

    __slots__ = ("headers", "query", "tenant", "principal", "extensions", "version",
                 "last_event_id", "base_url", "spawn", "peer", "translated_from", "_trace",
                 "method", "task_id")

    def __init__(self, headers=None, query=None, tenant="", principal=None, base_url=None,
                 spawn=None, peer=None, tracing=True):
        # (its trace is read on first use; the operation, and the task it names: the log)
        self._trace, self.method, self.task_id = None if tracing else False, None, None
        self.headers = headers or {}
        self.query = query or {}
        self.base_url = base_url
        self.peer = peer
        self.spawn = spawn
        self.tenant = tenant
        self.principal = principal
        self.extensions = ()
        self.version = PROTOCOL_VERSION
        self.last_event_id = None
        self.translated_from = None   # the older version a translation answers in ("0.3"), if any

    @property
    def trace(self):
        """The request's TraceContext, from its traceparent header (read on
        first use); None when the server's tracing is off. An observer that
        makes a turn's span sets it to the span's (what the turn sends on)."""
        trace = self._trace
        if trace is None:
            trace = self._trace = TraceContext.from_headers(self.headers)
        return trace or None

    @trace.setter
    def trace(self, trace):
        if self._trace is not False:                # (tracing off: it stays off)
            self._trace = trace

    @property
    def owner(self):
        """Who the tasks of this request belong to: (tenant, principal)."""
        return self.tenant, self.principal

    @property
    def certificate(self):
        """The client's verified TLS certificate (mutual TLS: ssl's
        getpeercert() dict, with its subject), or None."""
        return getattr(self.peer, "certificate", None)

    @property
    def caller(self):
        """Whom the per-caller limits count this request against: the
        principal, or else the client's address (not the tenant: an anonymous
        client picks that, and would get a share per tenant it names)."""
        return ("principal", self.principal) if self.principal is not None else ("peer", self.peer)


# -- the live tasks: clock, ids, channels and turns ------------------------------


class _Ids:
    """_new_id() for one server: one read of the OS's random source makes the
    random part of 64 ids (a system call each cost 0.6 us). list.pop() is
    atomic; a forked child starts a pool of its own, or its ids would repeat."""

    __slots__ = "pool", "memo", "__weakref__"

    def __init__(self):
        import weakref
        self.pool = []
        self.memo = (0, "")                     # (a millisecond, _uuid7_head of it)
        if hasattr(os, "register_at_fork"):     # (POSIX; held weakly: a Server may go)
            mine = weakref.ref(self)
            os.register_at_fork(after_in_child=lambda: mine() and setattr(mine(), "pool", []))

    def __call__(self):
        ms = int(time.time() * 1000)
        memo = self.memo
        if memo[0] != ms:                       # the time part, formatted once a millisecond
            memo = self.memo = ms, _uuid7_head(ms)
        try:
            return memo[1] + self.pool.pop()
        except IndexError:
            # 64 random parts of version 7 UUIDs (as _uuid7_tail's), built a column at a time:
            # each of their 22 places is one slice assignment for all of them, 20 random hex
            # digits each; the spaces after them split them.
            digits = os.urandom(10 * 64).hex().encode("ascii")
            out = bytearray(b"-" * (22 * 64))      # "xxx-Vxxx-xxxxxxxxxxxx "
            for place, digit in _TAIL_DIGITS:
                out[place::22] = digits[digit::20]
            out[4::22] = digits[3::20].translate(_VARIANT_DIGITS)
            out[21::22] = b" " * 64
            self.pool = out.decode("ascii").split()
            return memo[1] + self.pool.pop()


# Where each random digit goes in a tail (place, digit); the variant (10xx in
# binary, keeping the digit's two low bits) is place 4, made of digit 3.
_TAIL_DIGITS = tuple(zip((0, 1, 2, 5, 6, 7, *range(9, 21)), (0, 1, 2, 4, 5, 6, *range(7, 19))))
_VARIANT_DIGITS = bytes.maketrans(b"0123456789abcdef", b"89ab89ab89ab89ab")


class _Clock:
    """A server's clock: now as an RFC 3339 UTC timestamp with milliseconds
    (section 5.5); or, given ``form`` (time.strftime's), to the second (a
    host's Date header). The part to the second is formatted again only when
    the second changes: 0.42 us a timestamp against 1.13 us, and a turn writes three."""

    __slots__ = "memo", "form"

    def __init__(self, form=None):
        self.memo, self.form = (None, ""), form

    def __call__(self):
        t = time.time()
        second = int(t)
        memo = self.memo
        if memo[0] != second:                  # one tuple, replaced whole: thread-safe
            memo = self.memo = (second, time.strftime(self.form or "%Y-%m-%dT%H:%M:%S",
                                                      time.gmtime(second)))
        return memo[1] if self.form else f"{memo[1]}.{int(t * 1000) % 1000:03d}Z"

class _LiveTasks:
    """This process's tasks that can still change, and the agent's turns that change them. Each
    live task has a _Channel (``channels``, by task id, under ``lock``), made when a turn begins or
    a stream follows it and let go when it ends or nobody needs it. A turn begins here (begin, or
    continue_task for a task that waits for input), is driven here (start, drive: the one agent
    driver; _drive_async for an async agent), and its TurnWriter writes what the agent makes
    through the channel. Server holds one (``Server.live``): the operations ask it for channels and
    turns, and never drive the agent themselves.

    A store shared by several processes brings its own subclass of it (``store.live_tasks``:
    a2a_store's SharedLiveTasks), which watches the others' commits (from ``keep``), names this
    process in the store's leases (``new_channel``), refuses new turns while the store is away
    (``begin``) and ends the turns another process left unfinished; ``off_loop`` is where a host on
    an event loop has such a store's writes run."""

    off_loop = None                 # a shared store's threads for an event loop's writes

    def __init__(self, agent, store, limits, observers, tracing, closing, on_event, add_push):
        # Is ``agent``, or its __call__, an ``async def`` (generator) function? (0x280:
        # CO_COROUTINE | CO_ASYNC_GENERATOR)
        code = getattr(agent, "__code__", None) or getattr(
            getattr(agent, "__call__", None), "__code__", None)
        self.agent, self.agent_is_async = agent, code is not None and bool(code.co_flags & 0x280)
        self.store, self.limits, self.observers, self.tracing = store, limits, observers, tracing
        self.closing = closing      # set by Server.shutdown(): streams end, with a retry hint
        self.on_event = on_event    # callable(owner, task, event) for each event: webhooks
        self.add_push = add_push    # callable(ctx, owner): a turn's inline push config, kept
        self.now, self.new_id = _Clock(), _Ids()   # timestamps and ids (just above)
        self.lock = threading.Lock()
        self.channels = {}          # task id -> _Channel, while the task can change
        self.own_loop = None        # runs async agents for threaded hosts
        self.workers = None         # the worker threads of sync agents (pool)
        store.on_evict = self.evicted   # its streams end when the store drops a task

    def new_channel(self, owner, caller=None):
        """A channel for a task of ``owner``'s (``caller``: whom it counts against)."""
        return _Channel(self.store, owner, self.limits, self.on_event, caller, self.closing)

    def keep(self, task_id, channel):
        """Hold ``channel`` in ``channels`` (with ``lock`` held): the task is live here."""
        self.channels[task_id] = channel

    def begin(self, ctx, call):
        """A new task's turn: its channel, not yet in ``channels`` (the task is
        made by the turn's first event: make_task)."""
        admit = getattr(self.agent, "admit", None)
        if admit:                          # an agent with no room refuses here (ServerBusy)
            admit(ctx)
        self.observe(ctx, call)
        channel = self.new_channel(call.owner, call.caller)
        channel.active = ctx
        return channel

    def observe(self, ctx, call):
        """Tell the observers a turn begins (a turn's span, under its request's:
        a2a_otel); they keep their marks in ctx.marks, for _end_turn."""
        if self.observers:
            ctx.marks = {observer: observer.turn_started(ctx, call) for observer in self.observers}

    def running(self):
        """How many turns run here now."""
        with self.lock:
            return sum(channel.active is not None for channel in self.channels.values())

    def unrecorded(self, task_id, owner):
        """A turn ended but its task is not idle in the store: the store could
        not be written. Nothing to do in memory; a shared store's live tasks
        end it FAILED once they can (SharedLiveTasks)."""

    def stop(self, channel):
        """Tell the turn running on ``channel``, if any, that its task ended
        (canceled, here or by another process): its further output is dropped."""
        if channel.active is not None:         # (a RequestContext: a str, maybe empty)
            channel.active._cancel()

    def cut(self):
        """Shutdown, its grace over with turns still running: the streams following them end at the
        event they reached; what comes later is theirs when they resume (Last-Event-ID)."""
        with self.lock:
            for channel in self.channels.values():
                channel.stopped = channel.next_seq
        self.wake_streams()

    def channel(self, task_id, owner, caller=None):
        """The live channel of an existing task, made from the store if it has
        none. With ``lock`` held."""
        channel = self.channels.get(task_id)
        if channel is None:
            task = self.store.get(task_id, owner)
            if task is None:                # (its callers saw it: gone since)
                raise _no_longer_stored(task_id)
            channel = self.new_channel(owner, caller)
            channel.task, channel.version, channel.next_seq = task, task.version, task.next_seq
            self.keep(task_id, channel)
        return channel

    def wake_streams(self):
        """Wake every waiting stream to check that its client is still there
        (hosts call this when one leaves)."""
        with self.lock:
            channels = list(self.channels.values())
        for channel in channels:
            channel.wake()

    def forget(self, task_id, unless_followed=False):
        """Let go of a task's channel: it has ended, or it waits for the client
        (``unless_followed``: and no stream follows it, nor has a turn begun)."""
        with self.lock:
            self._let_go(task_id, unless_followed)

    def _let_go(self, task_id, unless_followed):
        """forget(), with ``lock`` held."""
        channel = self.channels.get(task_id)
        if channel is None or unless_followed and (channel.followers or channel.active):
            return
        del self.channels[task_id]
        channel.ended = True

    def evicted(self, task_id):
        """The store dropped an idle task: end any stream still watching it."""
        with self.lock:
            channel = self.channels.pop(task_id, None)
        if channel:
            channel.publish(None, {"error": TaskNotFoundError(
                f"task {task_id} expired and was removed from the store",
                metadata={"taskId": task_id})})

    def continue_task(self, ctx, call, message):
        """_start_turn (in Operations) for a message that continues a task: it
        is recorded (the task WORKING again) unless a turn runs, here or in
        another process; (its channel, where its stream begins)."""
        task_id, context_id = ctx.task_id, ctx.context_id
        expect = None if call.version == PROTOCOL_VERSION else \
            ctx.configuration.get("ifGenerationMatch")     # (1.1, section 3.2.2)
        while True:
            with self.lock:
                channel = self.channel(task_id, call.owner, call.caller)
            try:
                with channel.lock:
                    if channel.ended:       # let go of meanwhile (the store's watch): anew
                        continue
                    if channel.active is not None:         # a turn runs here, maybe ending
                        raise _still_working(task_id)
                    self.add_push(ctx, call.owner)
                    # Record the message; refused if a turn began meanwhile, in
                    # any process. A webhook is sent the whole task each turn.
                    now = self.now()
                    status = {"state": TRANSITIONS["input"][1], "timestamp": now}
                    channel.change("input", message, now, {"statusUpdate": {
                        "taskId": task_id, "contextId": context_id, "status": status}},
                        tell=False, expect=expect)
                    joined = channel.next_seq - 1, {"task": channel.task}
                    channel.tell(joined[1])
                    self.observe(ctx, call)
                    channel.active = ctx
            except BaseException:              # the turn never began: unwatched, it goes
                self.forget(task_id,
                            unless_followed=channel.task["status"]["state"] not in TERMINAL_STATES)
                raise
            return channel, joined

    def make_task(self, ctx, channel):
        """Make a new turn's task exist (store and first event), unless it does."""
        with channel.lock:
            if channel.task is None:
                task = _apply(None, "message", ctx.message, self.now())
                # Known before the store has the task: none makes a second channel.
                with self.lock:
                    self.keep(ctx.task_id, channel)
                try:
                    channel.publish(task, {"task": task}, tell=False)
                    self.add_push(ctx, channel.owner)   # its webhook, told first
                    channel.tell({"task": channel.task})
                except BaseException:
                    with self.lock:
                        if self.channels.get(ctx.task_id) is channel:
                            del self.channels[ctx.task_id]
                    self.store.delete(ctx.task_id)
                    if ctx.send_key is not None:      # (refused: the send's key is free)
                        self.store.settle_send(channel.owner, ctx.send_key[0], None)
                    raise
            return channel.task

    # -- driving the agent -----------------------------------------------------
    #
    # A blocking SendMessage on a threaded host runs a sync agent on its own thread: a hand-off is
    # most of a small request's cost. Past the deadline, the rest of a generator moves to a worker
    # thread. Async agents run on an event loop (CallContext.spawn, or the server's own); otherwise
    # sync ones run on a bounded pool (max_workers), so a client that leaves stops nothing.

    def start(self, turn, spawn=None):
        """Run a turn in the background: an async agent through ``spawn``, else a worker."""
        if spawn and self.agent_is_async:
            self.drive(turn, None, spawn)     # only makes the coroutine: no wait
        else:
            self.pool().submit(self.drive, turn, None, spawn)

    def pool(self):
        """The worker threads of sync agents, made on first use."""
        with self.lock:
            if self.workers is None:
                self.workers = _Workers(self.limits["max_workers"])
            return self.workers

    def drive(self, turn, deadline=None, spawn=None, gen=None):
        """Call the agent and feed what it produces to ``turn`` (``gen``: the
        rest of its generator, on a worker: it outlasted its request's thread)."""
        if turn.ctx._canceled and gen is None:   # canceled while it waited for a worker
            return turn.finish()
        # The turn, for RequestContext.current() (an async agent's: in its task, _drive_async).
        running = _TURN.set(turn.ctx) if self.tracing and not self.agent_is_async else None
        try:
            result = self.agent(turn.ctx) if gen is None else gen
            if isinstance(result, AsyncGeneratorType) or hasattr(result, "__await__"):
                (spawn or self.spawn_own)(_drive_async(self, result, turn))
            elif isinstance(result, GeneratorType):
                self.drain(result, turn, deadline)
            else:
                turn.complete(result)
        except Exception as exc:                       # the agent failed: fail the task
            turn.fail(exc)
        finally:
            if running:
                _TURN.reset(running)

    def spawn_own(self, coroutine):
        """Run ``coroutine`` on the server's own event loop (_LoopThread)."""
        with self.lock:
            if self.own_loop is None:
                self.own_loop = _LoopThread()
        self.own_loop.spawn(coroutine)

    def drain(self, gen, turn, deadline):
        """Run a generator agent to its end (or, past ``deadline``, hand it to a worker)."""
        try:
            for item in gen:
                turn.emit(item, chunked=True)
                if turn.done:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    self.pool().submit(self.drive, turn, None, None, gen)
                    gen = None                 # now the worker's to finish and close
                    return
            turn.finish()
        except Exception as exc:
            turn.fail(exc)
        finally:
            if gen:
                gen.close()


# =============================================================================
# 7. Operations
# =============================================================================
#
# Section 5.1 asks every binding to give the same results and errors: each of the eleven operations
# of section 3.1 is one function of (server, request, call) on ProtoJSON dicts, and every binding
# reaches them through one door, Server.call() (_call, at the end of this section). It first
# authenticates the caller (section 7), checks the service parameters (section 3.2), parses the
# request (MESSAGES) and takes the tenant (section 3.2.5). The operations on tasks share three
# ideas:
#
# - Ownership. A task belongs to (tenant, principal); another caller's task is
#   reported exactly as a missing one: TaskNotFoundError (section 13.1).
# - One channel per live task. Its writers (the turn, CancelTask, a new
#   message) and readers (streams) meet on one _Channel (section 6); when the
#   task ends or waits for the client, the store alone holds it.
# - Turns. Each user message starts one turn of the agent. A blocking
#   SendMessage waits for it (up to blocking_timeout), a stream follows it.
#
# Each function takes the server, the request parsed into its proto message's dict
# (SendMessageRequest, GetTaskRequest, ...) and the caller's CallContext; it returns the response's
# dict, or for a stream a _Follower of its events. The live side of a task (its channel and turn)
# is the server's _LiveTasks' (section "Agent execution"); these functions only ask it.


# -- tasks -----------------------------------------------------------------

def _visible_task(server, task_id, call):
    """The task, if the caller may see it; else TaskNotFoundError, the
    same whether it does not exist or is someone else's (section 13.1).
    The call keeps the id: the access log and spans name the task."""
    call.task_id = task_id
    task = server.store.get(task_id, call.owner)
    if task is None:
        raise TaskNotFoundError(
            f"no task with id {task_id!r}; ListTasks shows the tasks you can see",
            metadata={"taskId": task_id})
    return task


def _view(task, history_length, include_artifacts=True):
    """A task as a response shows it (section 3.2.4 historyLength)."""
    out = task
    if history_length is not None and "history" in task:
        out = dict(task)                   # a copy: the store's task stays whole
        if history_length == 0:
            del out["history"]
        else:
            out["history"] = task["history"][-history_length:]
    if not include_artifacts and "artifacts" in out:
        out = dict(out)
        del out["artifacts"]
    return out


# A2A 1.1 (the draft's section 3.2.7) gives a task a ``generation``: 1 when made, one more at each
# status or artifact update, one event each. Here that is the count of the task's events, which
# the store keeps already: the event with SSE id N takes the task to generation N + 1 (a task
# answered in one write, which nobody could watch, is made at 1). A 1.0 client is answered as
# before, without it; a 1.1 one gets it in every Task and update event.

def _as_of(task, holder, call):
    """``task`` as ``call`` is answered: with its generation if the client speaks 1.1, from
    ``holder``'s next_seq (the stored task's, or its channel's: the id of its next event)."""
    return task if call.version == PROTOCOL_VERSION else {
        "generation": max(holder.next_seq, 1), **task}


def _with_generation(event, seq):
    """A stream's event (SSE id ``seq``) as a 1.1 client reads it, as JSON: a Task or an update
    with the generation it leaves the task at."""
    body = event if type(event) is bytes else getattr(event, "json", None) or _dumps(event)
    at = body.index(b'"', 2) + 3           # (past '{"kind":{')
    return body if body[2:at - 3] not in (b"task", b"statusUpdate", b"artifactUpdate") else \
        body[:at] + b'"generation":%d,' % (seq + 1) + body[at:]


# -- SendMessage, SendStreamingMessage (sections 3.1.1, 3.1.2) ------------
#
# A message's parts must be of media types the agent takes (section 3.3.2):
# those of its card's defaultInputModes and of its skills' inputModes (a
# message does not say which skill it is for). A part's type is its
# mediaType; a text part without one is text/plain, a data part
# application/json, and a file without one is the agent's to judge. An
# agent whose modes hold */*, or none at all, takes anything; type/* takes
# that type's every subtype.

def _media_type(value):
    """A media type without its parameters, in lower case ("Text/HTML; q=1": "text/html")."""
    return value.partition(";")[0].strip().lower()


def _start_turn(server, request, call):
    """Check a new user message and prepare its turn: (context, channel,
    joined), ``joined`` where a continuing task's stream begins: (seq of the
    status update that told the others, {"task": Task}); None for a new task.
    A repeated send: (None, the first's (task id, reply, digest), None)."""
    message = request["message"]
    if message["role"] != "ROLE_USER":
        raise InvalidParamsError("message.role must be ROLE_USER for a message from a client",
                                 field="message.role")
    accepted = server.card.accepts
    if accepted is not None:               # (else any): each part's type, as above
        for part in message["parts"]:
            media = part.get("mediaType")
            if media is None:
                media = "text/plain" if "text" in part else \
                    "application/json" if "data" in part else ""
            kind = _media_type(media)
            if kind and kind not in accepted and kind.partition("/")[0] + "/*" not in accepted:
                modes = ", ".join(sorted(accepted))
                raise ContentTypeNotSupportedError(
                    f"this agent does not take {media[:80]} parts; it takes {modes} (its card's "
                    "defaultInputModes and skills' inputModes): send one of those (an agent of "
                    "your own declares more with Server(input_modes=[...]))",
                    metadata={"mediaType": media[:80], "supportedMediaTypes": modes})
    task_id = message.get("taskId")
    task = _visible_task(server, task_id, call) if task_id else None
    if not task_id:
        task_id = call.task_id = server.live.new_id()   # always the server's (section 3.1.1)
    key = call.headers.get("idempotency-key", "").strip('"') or (
        message["messageId"] if IDEMPOTENT_SEND in call.extensions else None)
    window = server.limits["idempotency_window"]
    if key and window:
        first = server.store.claim_send(call.owner, key, task_id, window)
        if first is not None:
            return None, first, None
    try:
        if task is not None:
            _check_event("input", task)
            if message.get("contextId") and message["contextId"] != task.get("contextId"):
                raise InvalidParamsError(
                    f"message.contextId {message['contextId']!r} contradicts task {task_id}, "
                    f"whose contextId is {task.get('contextId')!r}; omit contextId or send "
                    "the task's", field="message.contextId")
        context_id = message.get("contextId") or server.live.new_id() if task is None else \
            task.get("contextId")
        message = {**message, "contextId": context_id, "taskId": task_id}
        ctx = RequestContext(
            message, task=task, task_id=task_id, context_id=context_id, caller=call,
            extensions=call.extensions, metadata=request.get("metadata", {}),
            configuration=request.get("configuration", {}))
        ctx.send_key = (key, request["message"]) if key and window else None
        if task is None:                   # its stream begins at its first event
            return ctx, server.live.begin(ctx, call), None
        return (ctx,) + server.live.continue_task(ctx, call, message)
    except BaseException:
        if key and window:                 # refused: the key is free for another try
            server.store.settle_send(call.owner, key, None)
        raise


# A client whose connection drops after SendMessage cannot tell whether the agent ran. So a send
# may be repeated: the same messageId (when the request announces IDEMPOTENT_SEND in
# A2A-Extensions, section 3.2: a client that reuses messageIds is served as before) or HTTP
# Idempotency-Key, from the same caller within idempotency_window, answers as the first did and
# runs nothing. The store records each send's key and its task (claim_send); a repeat's message
# must be the first's, as the task's history holds it (or its digest, beside a Message reply:
# settle_send), else it is refused (422); one while the first has no task yet is told to try
# again (409). The card declares it (docs/idempotency.md).
IDEMPOTENT_SEND = "urn:a2a-min:idempotent-send"


def _repeated(server, request, first, history_length, call, stream=False):
    """A repeated send's answer (IDEMPOTENT_SEND): the first's Message reply,
    else its task as it is now (a stream follows it to its end). The first's
    message is its task's history's (or, for a reply, its digest)."""
    message, (task_id, reply, digest) = request["message"], first[:3]
    task = None if reply else server.store.get(task_id, call.owner)
    if reply:
        seq, answer, same = 0, {"message": reply}, digest == _digest(message)
    elif task is None:
        raise SendInFlightError(
            "this message's first send is still running and has no task yet; try again in a "
            "second (if it never ends, its server stopped: send it with a new messageId)",
            metadata={"taskId": task_id})
    else:
        seq, answer = task.next_seq - 1, {"task": _view(task, history_length)}
        same = {**message, "contextId": task.get("contextId"), "taskId": task_id} in \
            task.get("history", ())
    if not same:
        raise IdempotencyKeyReusedError(
            f"message {message['messageId']!r} (or its Idempotency-Key) was sent before with "
            "other content; a repeat must be the same message, and a new message needs a new "
            "messageId (or key)", metadata={"taskId": task_id})
    if stream and task is not None and task["status"]["state"] not in _IDLE_STATES:
        return _subscribe_to_task(server, {"id": task_id}, call, _STREAM_END)
    if stream:                             # a stream of the one answer
        return _Follower(server.live.new_channel(call.owner), seq, 0, (), [(seq, answer)], True)
    return answer if task is None else {"task": _as_of(answer["task"], task, call)}


def _send_message(server, request, call):
    """SendMessage: {"task": Task} or {"message": Message}, once the turn ends
    or is interrupted, or after blocking_timeout; returnImmediately: at once."""
    config = request.get("configuration", {})
    history_length = None
    if config:
        history_length = _history_length(config, "configuration.historyLength")
        _check_inline_push(server, config)
    ctx, channel, _ = _start_turn(server, request, call)
    if ctx is None:
        return _repeated(server, request, channel, history_length, call)
    turn = _TurnWriter(server.live, ctx, channel)
    if config.get("returnImmediately"):
        server.live.make_task(ctx, channel)
        server.live.start(turn, call.spawn)
        with channel.lock:
            return {"task": _as_of(_view(channel.snapshot(), history_length), channel, call)}
    deadline = time.monotonic() + server.limits["blocking_timeout"]
    if call.spawn is None:                 # a thread: it may wait for the turn
        server.live.drive(turn, deadline)
        if not turn.finished.is_set:       # async, or handed to a worker at the deadline
            turn.finished.wait(max(0.0, deadline - time.monotonic()))
    else:                                  # a host on an event loop must not wait: the turn
        server.live.start(turn, call.spawn)     # starts, and if it has not ended yet the host
        if not turn.finished.is_set:            # gets a pending answer and its deadline
            return _PendingAnswer(functools.partial(
                _turn_result, server, turn, history_length, call), turn, deadline)
    return _turn_result(server, turn, history_length, call)


def _turn_result(server, turn, history_length, call):
    """SendMessage's answer once the turn has ended, or its deadline passed."""
    if turn.error is not None:
        raise turn.error
    if turn.reply is not None:
        return {"message": turn.reply}
    with turn.channel.lock:
        return {"task": _as_of(_view(turn.channel.snapshot() or server.live.make_task(
            turn.ctx, turn.channel), history_length), turn.channel, call)}


def _send_streaming_message(server, request, call):
    """SendStreamingMessage: an iterator of (seq, StreamResponse), from the
    new task's first event, or from the continuing task as ``joined``."""
    _require_streaming(server)
    _check_inline_push(server, request.get("configuration", {}))
    ctx, channel, joined = _start_turn(server, request, call)
    if ctx is None:
        return _repeated(server, request, channel, None, call, stream=True)
    keepalive = server.limits["keepalive_interval"]   # (seconds between SSE comments)
    turn = _TurnWriter(server.live, ctx, channel, watched=True)
    server.live.start(turn, call.spawn)
    return _Follower(channel, 0, keepalive, _STREAM_END, begin=turn) if joined is None else \
        _Follower(channel, joined[0] + 1, keepalive, _STREAM_END, first=[joined])


def _require_streaming(server):
    """UnsupportedOperationError unless the card says the agent streams
    (capabilities.streaming; section 3.1.2 and 3.1.6)."""
    if not server.capabilities.get("streaming"):
        raise UnsupportedOperationError(
            "this agent does not stream (capabilities.streaming is false); use SendMessage")


# -- GetTask, ListTasks, CancelTask (sections 3.1.3-3.1.5) -----------------

def _get_task(server, request, call):
    """GetTask: the task, its history cut to historyLength; for a 1.1 client's
    currentGeneration, once the task is past it (a long-poll, below)."""
    history_length = _history_length(request)
    task = _visible_task(server, request["id"], call)
    after = None if call.version == PROTOCOL_VERSION else request.get("currentGeneration")
    if after is not None and task.next_seq <= after and \
            task["status"]["state"] not in TERMINAL_STATES:
        return _long_poll(server, request["id"], after, functools.partial(
            _get_task, server, {**request, "currentGeneration": None}, call), call)
    return _as_of(_view(task, history_length), task, call)


# A long-poll (1.1, section 3.2.7) follows the task as a stream does, from the event that takes
# it past ``currentGeneration`` (the one with that SSE id), and answers GetTask when it comes, or
# after long_poll_wait seconds, or at once if the task has ended (it will not change). It counts
# as a stream of its caller's (max_caller_streams): on the threaded host it holds a thread and a
# connection; on an event loop, nothing but its follower (a pending answer, as SendMessage's).

def _long_poll(server, task_id, after, answer, call):
    """GetTask's ``answer()`` once an event past generation ``after`` has come, or at the wait's
    end: on a thread, by waiting; on an event loop, as a _PendingAnswer."""
    follower = _counted_stream(server, lambda server, _, call: _Follower(
        _followed(server, task_id, call), after, server.limits["long_poll_wait"], (),
        counted=True), None, call)
    if call.spawn is None:
        try:
            next(follower, None)       # an event past it, or the tick at the wait's end
        finally:
            follower.close()
        return answer()
    pending = _PendingAnswer(answer, None, time.monotonic() + follower.keepalive)
    look = functools.partial(_look, follower, pending)
    follower.watch(look)
    pending.add_done_callback(_stop_looking, follower, look)
    look()                             # (it may have come meanwhile)
    return pending


def _followed(server, task_id, call):
    """The channel of a task a stream follows, counted (its followers)."""
    with server.live.lock:                 # (a waiting task's channel is made again)
        channel = server.live.channel(task_id, call.owner, call.caller)
        with channel.lock:                 # counted before the turn can let it go
            channel.followers += 1
    return channel


def _look(follower, pending):
    """A long-poll's task has news: settle ``pending`` if it is past the generation."""
    try:
        if follower.poll() is None:
            return
    except StopIteration:              # (the server is stopping)
        pass
    pending.expire()


def _stop_looking(pending, follower, look):
    follower.unwatch(look)
    follower.close()


def _list_tasks(server, request, call):
    """ListTasks: one page of the caller's tasks, newest first."""
    history_length = _history_length(request)
    size = _page_size(server, request.get("pageSize", server.limits["default_page_size"]))
    status = request.get("status")
    tasks, total, last = server.store.list(
        call.owner, context_id=request.get("contextId"), limit=size,
        cursor=_decode_page_token(request["pageToken"]) if request.get("pageToken") else None,
        status=None if status == "TASK_STATE_UNSPECIFIED" else status,
        after=request.get("statusTimestampAfter"))
    include = request.get("includeArtifacts", False)
    if call.version != PROTOCOL_VERSION:   # (1.1: with their generations, as stored now)
        tasks = list(filter(None, (server.store.get(t["id"], call.owner) for t in tasks)))
    return {"tasks": [_as_of(_view(t, history_length, include), t, call)
                      for t in tasks],
            "nextPageToken": _b64encode(json.dumps(list(last)).encode()).replace(   # (below)
                "+", "-").replace("/", "_").rstrip("=") if last else "",
            "pageSize": size, "totalSize": total}


def _page_size(server, size):
    """``size``, if it is a page size this server serves (else InvalidParams)."""
    if not 1 <= size <= server.limits["max_page_size"]:
        raise InvalidParamsError(
            f"pageSize must be between 1 and {server.limits['max_page_size']} (default "
            f"{server.limits['default_page_size']}); got {size}", field="pageSize")
    return size


def _cancel_task(server, request, call):
    """CancelTask: the task, now CANCELED; the running agent is told."""
    task_id = request["id"]
    _check_event("cancel", _visible_task(server, task_id, call))
    with server.live.lock:
        channel = server.live.channel(task_id, call.owner, call.caller)
    now = server.live.now()
    with channel.lock:                     # (the turn may have ended meanwhile)
        task = _as_of(channel.change("cancel", None, now, {"statusUpdate": {
            "taskId": task_id, "contextId": channel.task.get("contextId", ""),
            "status": {"state": "TASK_STATE_CANCELED", "timestamp": now}}}), channel, call)
        server.live.stop(channel)          # the agent, if it runs here (elsewhere:
                                           # a2a_store.py, "Sharing a store")
    server.live.forget(task_id)
    return task


# -- SubscribeToTask (section 3.1.6) -----------------------------------------

def _subscribe_to_task(server, request, call, end_states=TERMINAL_STATES):
    """SubscribeToTask: the current Task, then every event until it ends (or
    one of ``end_states``: a repeated send's stream ends where the send's does)."""
    _require_streaming(server)
    task_id = request["id"]
    task = _visible_task(server, task_id, call)
    state = task["status"]["state"]
    if state in TERMINAL_STATES:
        raise UnsupportedOperationError(
            f"task {task_id} is {state}: a finished task has no more events to stream; "
            "use GetTask to read it", metadata={"taskId": task_id, "state": state})
    channel = _followed(server, task_id, call)
    # The stream: from after Last-Event-ID if that event is still kept, else
    # from the current Task (section 3.1.6), numbered as the event before the
    # next. Task and next id are read together, from the store.
    last_event_id = call.last_event_id
    keepalive = server.limits["keepalive_interval"]
    with channel.lock:
        channel.reload()
        task, seq = channel.task, channel.next_seq
        oldest = (server.store.events(task["id"], seq - 1) or (seq,))[0]
        if last_event_id is not None and oldest - 1 <= last_event_id < seq:
            return _Follower(channel, last_event_id + 1, keepalive, end_states, counted=True)
        shared = channel.shared_task()
    return _Follower(channel, seq, keepalive, end_states, first=[(seq - 1, shared)],
                     ended=task["status"]["state"] in end_states, counted=True)


# -- push notification configs (sections 3.1.7-3.1.10) ------------------------

# A push config names a webhook sent every event of a task as a
# StreamResponse (section 4.3.3). Configs are kept, scoped and evicted with
# their task. Without push_notifications, PushNotificationNotSupported (3.1.7).


def _require_push(server):
    """PushNotificationNotSupportedError unless the card says the agent
    sends webhooks (capabilities.pushNotifications; section 3.1.7)."""
    if not server.capabilities.get("pushNotifications"):
        raise PushNotificationNotSupportedError(
            "this agent does not send push notifications (capabilities.pushNotifications "
            "is false); use SendStreamingMessage or poll GetTask instead")


def _push_task(server, task_id, call):
    """The id of the task whose webhooks a config operation reaches, if the
    agent sends webhooks and the caller may see the task."""
    _require_push(server)
    return _visible_task(server, task_id, call)["id"]


def _create_task_push_notification_config(server, request, call):
    """CreateTaskPushNotificationConfig: register a webhook for a task."""
    return _public_config(_add_push_config(
        server, _push_task(server, request.get("taskId", ""), call), request, call.tenant,
        call.translated_from))


def _get_task_push_notification_config(server, request, call):
    """GetTaskPushNotificationConfig: one webhook of a task."""
    task_id = _push_task(server, request["taskId"], call)
    config = server.store.get_config(task_id, request["id"])
    if config is None:                     # section 3.1.8: TaskNotFoundError
        raise TaskNotFoundError(
            f"task {task_id} has no push notification config {request['id']!r}; "
            "ListTaskPushNotificationConfigs shows its configs",
            metadata={"taskId": task_id, "id": request["id"]})
    return _public_config(config)


def _list_task_push_notification_configs(server, request, call):
    """ListTaskPushNotificationConfigs: a task's webhooks, one page at a time."""
    task_id = _push_task(server, request["taskId"], call)
    size = _page_size(server, request.get("pageSize") or server.limits["default_page_size"])
    configs = server.store.configs(task_id)
    ids = [c["id"] for c in configs]
    token = request.get("pageToken")
    if token and token not in ids:
        raise InvalidParamsError("pageToken is not one this server issued; pass the "
                                 "nextPageToken of the previous answer unchanged",
                                 field="pageToken")
    start = ids.index(token) + 1 if token else 0     # after the token's config
    page = configs[start:start + size]
    return {"configs": [_public_config(c) for c in page],
            "nextPageToken": page[-1]["id"] if start + size < len(configs) else ""}


def _delete_task_push_notification_config(server, request, call):
    """DeleteTaskPushNotificationConfig: remove a webhook (a missing one is fine)."""
    server.store.delete_config(_push_task(server, request["taskId"], call), request["id"])
    return {}


def _check_push_config(server, config):
    """Refuse what can be refused without the network (section 13.2): a scheme other than http(s),
    userinfo, port 0, a literal address that is not globally routable, header values that cannot be
    sent as they are. Host names are resolved and checked at delivery."""
    if len(config["url"]) > _MAX_URL:
        raise InvalidParamsError(f"url is longer than {_MAX_URL} characters", field="url")
    if len(config.get("id", "")) > _MAX_CONFIG_ID:
        raise InvalidParamsError(f"id is longer than {_MAX_CONFIG_ID} characters", field="id")
    _webhook_target(config["url"], server.push_allow, resolve=False)
    auth = config.get("authentication", {})
    for field, value in (("token", config.get("token", "")),
                         ("authentication.scheme", auth.get("scheme", "")),
                         ("authentication.credentials", auth.get("credentials", ""))):
        if len(value) > _MAX_HEADER_VALUE:
            raise InvalidParamsError(f"{field} is longer than {_MAX_HEADER_VALUE} characters "
                                     "(it is sent in an HTTP header)", field=field)
        try:                               # headers are latin-1 on the wire
            raw = value.encode("latin-1")
        except UnicodeEncodeError:
            raise InvalidParamsError(f"{field} must be latin-1 text: it is sent in an HTTP "
                                     "header", field=field) from None
        if raw.translate(None, _HEADER_CONTROLS) != raw:   # would end or corrupt it
            raise InvalidParamsError(f"{field} must not contain control characters (line "
                                     "breaks, NUL...): it is sent in an HTTP header", field=field)


def _add_push_config(server, task_id, config, tenant, payload_version):
    """Keep a checked webhook config (a few KiB at most) with its task, under
    a fresh id unless the client chose one, which it replaces. A config
    registered through 0.3 keeps that version for what its webhook is sent."""
    _check_push_config(server, config)
    config = {**config, "taskId": task_id, "id": config.get("id") or server.live.new_id()}
    if tenant:
        config["tenant"] = tenant
    if payload_version:
        config["payloadVersion"] = payload_version
    server.store.put_config(task_id, config, server.limits["max_push_configs"])
    return config


def _check_inline_push(server, configuration):
    """SendMessage's configuration.taskPushNotificationConfig, checked up front."""
    config = configuration.get("taskPushNotificationConfig")
    if config is not None:
        _require_push(server)
        _check_push_config(server, config)


def _add_inline_push(server, ctx, owner):
    config = ctx.configuration.get("taskPushNotificationConfig")
    if config is not None:
        _add_push_config(server, ctx.task_id, config, owner[0], ctx.caller.translated_from)


# -- GetExtendedAgentCard (section 3.1.11) -------------------------------------

def _get_extended_agent_card(server, request, call):
    """GetExtendedAgentCard: the card for authenticated callers."""
    if not server.capabilities.get("extendedAgentCard"):
        raise UnsupportedOperationError(
            "this agent has no extended card (capabilities.extendedAgentCard is false); "
            "the public card is at /.well-known/agent-card.json")
    if server.authenticate and call.principal is None:
        raise AuthenticationRequiredError(
            "the extended agent card is for authenticated callers; send the credentials "
            "the card's securitySchemes describe")
    extended = server.extended_card
    extended = extended(call) if callable(extended) else extended
    if not extended:
        raise ExtendedAgentCardNotConfiguredError(
            "the card promises an extended card but the server has none configured")
    return {**server.agent_card(call.base_url), **extended}


# JSON-RPC method -> the function that implements it (a table, not getattr).
OPERATIONS = {
    "SendMessage": _send_message, "SendStreamingMessage": _send_streaming_message,
    "GetTask": _get_task, "ListTasks": _list_tasks,
    "CancelTask": _cancel_task, "SubscribeToTask": _subscribe_to_task,
    "CreateTaskPushNotificationConfig": _create_task_push_notification_config,
    "GetTaskPushNotificationConfig": _get_task_push_notification_config,
    "ListTaskPushNotificationConfigs": _list_task_push_notification_configs,
    "DeleteTaskPushNotificationConfig": _delete_task_push_notification_config,
    "GetExtendedAgentCard": _get_extended_agent_card,
}


def _history_length(request, field="historyLength"):
    """historyLength: None (unset: the whole history), 0 (none) or N > 0 (newest N)."""
    value = request.get("historyLength")
    if value is not None and value < 0:
        raise InvalidParamsError(f"{field} must be 0 or more (0 omits the history); got {value}",
                                 field=field)
    return value


# ListTasks page tokens (section 3.1.4: opaque to the client): the sort key of
# the page's last task, (status timestamp, id), as URL-safe base64 JSON; the
# next page is every matching task after it. Holding no server state, a token
# never expires, survives restarts, and is not moved by changes between pages.

def _decode_page_token(token):
    """A pageToken -> (status timestamp, task id); one not ours is InvalidParams."""
    try:
        stamp, task_id = json.loads(_b64decode(token))
        if isinstance(stamp, str) and isinstance(task_id, str):
            (stamp + task_id).encode()         # (UnicodeEncodeError: a lone surrogate)
            return stamp, task_id
    except (ValueError, TypeError, binascii.Error, RecursionError):
        pass
    raise InvalidParamsError(
        "pageToken is not one this server issued; pass the nextPageToken of the previous "
        "ListTasks answer unchanged, or omit it for the first page", field="pageToken")


# -- the one door: call() -----------------------------------------------------

def _call(server, method, params, call=None):
    """Server.call(): run one operation by its JSON-RPC name on raw params (a
    dict): the response dict, or an iterator of (seq, StreamResponse) for a stream."""
    mounted = server.mounts and isinstance(params, dict) and server.mounts.get(
        str(params.get("tenant")))
    if mounted:                            # another agent's tenant (Server.mount): its call
        return mounted.call(method, params, call)
    call = call or CallContext(headers={"a2a-version": PROTOCOL_VERSION}, tracing=server.tracing)
    if server.store.shared:
        server.live.watched()         # this process's watch of the shared store
    call.method = method            # (first: a call refused below is counted and logged too)
    if server.authenticate:
        call.principal = server.authenticate(call)
    # The service parameters: the version (section 3.2.1), required extensions (section 3.2.2).
    version = call.headers.get("a2a-version") or call.query.get("A2A-Version") \
        or server.assume_version
    if not version:
        raise VersionNotSupportedError(
            "this request sent no A2A-Version, which means A2A 0.3; this server speaks "
            f"A2A {PROTOCOL_VERSION}. Add the header: -H 'A2A-Version: {PROTOCOL_VERSION}' "
            f"(or the query parameter ?A2A-Version={PROTOCOL_VERSION}; over gRPC "
            f"the metadata a2a-version: {PROTOCOL_VERSION})",
            metadata={"supportedVersions": PROTOCOL_VERSION})
    version = version.strip()
    if version != PROTOCOL_VERSION:        # ("1.1" and "1.0.2" are major.minor to us)
        version = ".".join(version.split(".")[:2])
    if version != PROTOCOL_VERSION and version != PREVIEW_VERSION:
        raise VersionNotSupportedError(
            f"A2A-Version {version!r} is not supported; this server speaks "
            f"A2A {PROTOCOL_VERSION}: send -H 'A2A-Version: {PROTOCOL_VERSION}' (over "
            f"gRPC, the metadata a2a-version: {PROTOCOL_VERSION})" + (
                "; for A2A 0.3 clients, serve with Server(compat='0.3') (--compat 0.3)"
                if version.startswith("0.3") else ""),
            metadata={"requestedVersion": version, "supportedVersions": PROTOCOL_VERSION})
    call.version = version
    raw = call.headers.get("a2a-extensions")
    if raw:
        call.extensions = tuple(u.strip() for u in raw.split(",") if u.strip())
    if method in ("SendMessage", "SendStreamingMessage"):
        for uri in server.required_extensions:
            if uri not in call.extensions:
                raise _extension_required(uri)
    if server.compat and call.translated_from is None:
        server.compat.check_v10(method, params)       # (0.3's fields in a 1.0 request)
    request = parse(METHODS[method][0], params)
    tenant = request.get("tenant", "")     # section 3.2.5
    if tenant:
        call.tenant = tenant
    if METHODS[method][2]:                 # a stream: counted against its caller while open
        return _counted_stream(server, OPERATIONS[method], request, call)
    return OPERATIONS[method](server, request, call)


def _counted_stream(server, operation, request, call):
    """``operation``'s stream, if its caller has fewer than max_caller_streams
    open (else CallerLimitError): one caller cannot hold every connection."""
    caller, limit = call.caller, server.limits["max_caller_streams"]
    with server._lock:
        held = server._streams.get(caller, 0)
        if held >= limit:
            raise CallerLimitError(
                f"you have {held} streams open, the most one caller may (max_caller_streams "
                f"is {limit}); close one, or poll with GetTask, then try again",
                metadata={"limit": "max_caller_streams", "value": limit})
        server._streams[caller] = held + 1
    try:
        follower = operation(server, request, call)
    except BaseException:
        _stream_closed(server, caller)
        raise
    follower.on_close = functools.partial(_stream_closed, server, caller)
    follower.generations = call.version != PROTOCOL_VERSION     # (1.1: _with_generation)
    return follower


def _stream_closed(server, caller):
    """A stream of ``caller``'s ended: one fewer counted against it."""
    with server._lock:
        held = server._streams.pop(caller) - 1
        if held:
            server._streams[caller] = held


# =============================================================================
# 8. Bindings: JSON-RPC 2.0, HTTP+JSON, SSE and the agent card
# =============================================================================
#
# Bytes in, bytes out. handle_http() takes an HTTP request's parts (method, path, query string,
# headers with lower-case names, body bytes) and returns a Response: status, headers and a body or
# a stream of SSE chunks. Nothing here knows about sockets; every host adapter ("Adapters") calls
# it.
#
# A binding is a codec around Server.call() (section 7): it finds the operation (a JSON-RPC method,
# or a REST route), turns the request into its params, and the result, errors included, into bytes
# in its own shape, with a Link header to the card (RFC 8288). The operations never see a binding,
# so a task looks the same through every binding (section 5.1).
#
# JSON-RPC (section 9): one Request object per HTTP POST (A2A has no batches). Every answer is HTTP
# 200 with a JSON-RPC Response (but where HTTP itself has something to say: 413, 401, 429); error
# data is an array of typed details (ErrorInfo, BadRequest). A streaming method answers
# text/event-stream, each event's data a JSON-RPC Response carrying one StreamResponse (section
# 9.4); an error raised before the first event is an ordinary JSON answer.
#
# SSE (section 9.4, WHATWG event stream): each event is "id: N", "data: JSON" and a blank line; ":
# keep-alive" is sent after keepalive_interval seconds of silence, so proxies keep the stream open.


class Response:
    """What a binding answers: ``status`` (int), ``headers`` (list of pairs), ``body`` (bytes) or
    ``stream`` (an _SSEStream of bytes chunks, read by ``for``; the adapter close()s it when the
    client goes away). On an event loop (handle_http(..., spawn=...)), an answer still being worked
    on is ``pending`` (a _PendingAnswer), and ``render(pending)`` is the real one."""
    __slots__ = "status", "headers", "body", "stream", "pending", "render"

    def __init__(self, status, headers, body=b"", stream=None, pending=None, render=None):
        self.status, self.headers, self.body = status, headers, body
        self.stream, self.pending, self.render = stream, pending, render


_JSON = "application/json"
_CARD_PATH = "/.well-known/agent-card.json"
_CATALOG_PATH = "/.well-known/api-catalog"
_CATALOGS = (_CATALOG_PATH, "/.well-known/ai-catalog.json")     # (a2a_catalog.py's)
_LINK = ("Link", f'<{_CARD_PATH}>; rel="service-desc"; type="application/json", '
                 f'<{_CATALOG_PATH}>; rel="api-catalog"')
# The reason phrase of each status this server sends (RFC 9110 section 15), as
# a literal: the standard library's http.HTTPStatus costs a millisecond to import.
_HTTP_REASONS = {
    200: "OK", 204: "No Content", 304: "Not Modified", 400: "Bad Request", 401: "Unauthorized",
    403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
    409: "Conflict", 411: "Length Required", 413: "Content Too Large", 414: "URI Too Long",
    415: "Unsupported Media Type", 421: "Misdirected Request", 422: "Unprocessable Content",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large", 500: "Internal Server Error",
    501: "Not Implemented", 503: "Service Unavailable"}


def _json_body(obj):
    """Compact JSON and a newline (a shell prompt after curl starts on its own line)."""
    return _dumps(obj) + b"\n"


def _jsonrpc_error(request_id, error):
    """The JSON-RPC Response object for an error (a pure function of the error)."""
    return {"jsonrpc": "2.0", "id": request_id,
            "error": {"code": error.code, "message": error.message, "data": error.details()}}


def _sse_frame(seq, data):
    """One Server-Sent Event (WHATWG HTML 9.2): ``id: seq`` for a task's event
    (a client resumes from it with Last-Event-ID), one ``data:`` line, a blank line."""
    head = b"" if seq is None else b"id: %d\n" % seq
    return head + b"data: " + _dumps(data) + b"\n\n"


def _as_it_is(body):
    """HTTP+JSON's stream envelope: none (the StreamResponse as it is)."""
    return body


# A comment line and no blank line after it: the standard ignores a blank line
# that ends an event without data, but some parsers (httpx-sse's, under the
# a2a-sdk 0.3 client) hand it on as an empty event, which the client fails on.
_KEEPALIVE = b": keep-alive\n"


def _unsent(sock, before):
    """Bytes the kernel still holds for ``sock``'s client (Linux: TIOCOUTQ;
    0 where it cannot tell), or -1 if they are ``before``'s or more: the
    client read nothing since the last keep-alive (a kernel's buffers take a
    stream's megabytes without a write ever waiting), and its stream ends."""
    try:
        import fcntl
        import termios
        held = int.from_bytes(fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, bytes(4)),
                              sys.byteorder, signed=True)
    except (ImportError, AttributeError, OSError, ValueError):   # (AttributeError: no
        return 0                                   # TIOCOUTQ here, or a transport without a sock)
    return -1 if held and before and held >= before else held


# The last frame of a stream the server ends as it shuts down: come back in a
# second, and send Last-Event-ID to resume where this stream stopped.
_RETRY = b": the server is restarting; reconnect with Last-Event-ID\nretry: 1000\n\n"


# Who may call. A server on 127.0.0.1 is reachable by every web page its user visits, through the
# browser. Three rules keep pages of other sites out, with or without authentication (Fetch
# standard, "CORS protocol"; RFC 9110 section 7.2), each a dict or set lookup per request (gRPC has
# no browser surface, so none of this applies there):
#
# - Every POST's body is JSON (application/json, or any +json). A page may send a "simple" request
#   (a form post, a fetch() of text) to any origin without asking first, but none can say JSON:
#   that makes the browser ask first (an OPTIONS preflight), and the server refuses origins it was
#   not told of. A POST with no body may carry the A2A-Version header instead (:subscribe,
#   :cancel), which needs a preflight too. So a POST that gets past this was preflighted (as every
#   DELETE is), and may give its version in the query (section 3.6.1), as a GET may (EventSource
#   cannot set headers): a POST a page sends unasked never gets that far.
# - Cross-origin reading (CORS) only for the origins the user names (cors_origins, --cors-origin);
#   the card and the API catalog are readable from anywhere ("*"), as discovery expects.
# - The Host header names this server: localhost, its address (bound to 0.0.0.0 or ::, or not
#   saying, any IP address), public_url's host, and allowed_hosts (--allow-host); else 421. This
#   stops DNS rebinding: a page of rebind.attacker.example, a name pointed at 127.0.0.1, may read
#   every answer; only Host tells. Rebinding needs a name, so an IP address passes. A Host that is
#   not host[:port] (RFC 3986) is 400: the card's URLs are made of it (and so the card says
#   Vary: Host, for caches).

_JSON_TYPES = frozenset({"application/json", "application/a2a+json",
                         "application/json; charset=utf-8", "application/json;charset=utf-8",
                         "application/json; charset=UTF-8", "application/a2a+json; charset=utf-8"})


def _host_name(host):
    """The name in a Host header (or a host name or address on its own):
    lower case, without the port or a trailing dot; IPv6 in brackets."""
    if host[:1] == "[":
        end = host.find("]")
        return host[:end + 1].lower() if end > 0 else ""
    if host.count(":") > 1:                       # an IPv6 address on its own
        return f"[{host.lower()}]"
    return host.partition(":")[0].rstrip(".").lower()


def _is_host(host):
    """Is ``host`` host [":" port] (RFC 3986 section 3.2.2: a reg-name, an
    IPv4 address or an [IPv6] literal; a port of digits)?"""
    import re
    return re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|([\w.~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*)(:[0-9]*)?",
                        host, re.ASCII) is not None


def _answers_to(server, host):
    """Is ``host`` (a Host header) a name this server answers to?"""
    if not _is_host(host):
        return False
    name = _host_name(host)
    named = server._named
    if not (name in named or "*" in named or name and server._any_address is not False and (
            name[0] == "[" or not name.strip("0123456789."))):      # (any IP address)
        return False
    if len(server._hosts) < 256:                  # (remembered, up to a bound)
        server._hosts[host] = True
    return True


def _refused(server, path, headers, status, error):
    """An answer to a request refused before routing, in the shape of the
    binding its path belongs to (A2A 0.3's too, when it is served)."""
    return server.compat.refusal(server, status, error) if server.compat and \
        server.compat.speaks_rest(path, headers) else server.error_response(path, status, error)


def _preflight(server, path, headers):
    """OPTIONS (a browser's CORS preflight). The card and the catalog: any origin may read them.
    Anything else: only the origins the user named (cors_origins), with the headers A2A uses."""
    if path in _CATALOGS or path.endswith(_CARD_PATH):
        return Response(204, [
            ("Access-Control-Allow-Origin", "*"),
            ("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS"),
            ("Access-Control-Allow-Headers", "A2A-Version, A2A-Extensions, If-None-Match"),
            ("Access-Control-Max-Age", "600")])
    origin = headers.get("origin")
    if origin is None:                            # not from a browser
        return Response(204, [("Allow", "GET, POST, DELETE, OPTIONS")])
    if not _cors_allowed(server, origin):
        return _refused(server, path, headers, 403, InvalidRequestError(
            f"pages of {origin[:100]} may not call this server: the origins allowed are named "
            f"when it starts: --cors-origin {origin[:100]} (Server(cors_origins=[...]))",
            metadata={"origin": origin[:100]}))
    return Response(204, [("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
                          ("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"),
                          ("Access-Control-Allow-Headers", "Content-Type, A2A-Version, "
                           "A2A-Extensions, Authorization, Last-Event-ID"),
                          ("Access-Control-Max-Age", "600")])


def _cors_allowed(server, origin):
    """Whether pages of ``origin`` may call: cors_origins names it (any case), or "*"."""
    origins = server.cors_origins
    return origin in origins or "*" in origins or origin.lower() in origins


def _with_cors(origin, response):
    """``response`` readable by a page of ``origin`` (one the user named)."""
    if all(name != "Access-Control-Allow-Origin" for name, _ in response.headers):
        response.headers += [("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
                             ("Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate")]
    return response


class Request:
    """One request as the bindings see it (Server.handle_http's arguments): ``method``, ``path``,
    ``query``, ``headers`` (lower-case names), ``body`` bytes, the ``base_url`` the client reached,
    the client (``peer``: its address and certificate) and an event-loop host's ``spawn`` hook. The
    gRPC binding makes one too (``binding`` "GRPC", ``path`` the rpc's).

    What observers read: ``call``, the CallContext a binding made of it, and ``error``, the class
    of the A2AError it was answered with; once answered, ``binding``, ``status`` (HTTP's, or a gRPC
    status name), ``stream`` (is it one), ``size`` (the body's bytes; None for a stream or gRPC's)
    and ``seconds`` (a stream's: to its head)."""
    __slots__ = ("method", "path", "query", "headers", "body", "base_url", "peer", "spawn",
                 "call", "error", "binding", "marks", "started", "status", "size", "stream",
                 "seconds")

    def __init__(self, method, path, query, headers, body, base_url, peer, spawn, binding=None):
        self.method, self.path, self.query, self.headers = method, path, query, headers
        self.body, self.base_url, self.peer, self.spawn = body, base_url, peer, spawn
        self.call = self.error = None
        self.binding = binding


def _handle_http(server, method, path, query="", headers=None, body=b"", base_url=None,
                 peer=None, spawn=None, certificate=None):
    """Server.handle_http(): answer one HTTP request (section 7): ``headers`` with lower-case
    names, ``certificate`` the client's verified one (getpeercert()). A host on an event loop
    passes ``spawn`` ("Running on an event loop"): an unready answer is pending."""
    if certificate is not None:
        peer = _Peer(peer, certificate)
    request = Request(method, path, query, headers if headers is not None else {}, body,
                      base_url, peer, spawn)
    if not server.observers:
        return _route_http(server, request)
    _started(server, request)       # observers are told the request started, returned, and was
    try:                            # answered (what the gRPC binding tells them too)
        response = _route_http(server, request)
    finally:
        _returned(request)
    return _then(response, functools.partial(_answered_http, server, request))


def _route_http(server, request):
    """Route one HTTP request: the card, the JSON-RPC endpoint (and its help
    page), or an HTTP+JSON route; first, whether it may be answered at all
    (its Host, its content type: "Who may call")."""
    method, path, headers, body = request.method, request.path, request.headers, request.body
    host = headers.get("host")
    if host is not None and host not in server._hosts and not _answers_to(server, host):
        if not _is_host(host):
            return _refused(server, path, headers, 400, InvalidRequestError(
                f"the Host header {host[:80]!r} is not a host name or address with an optional "
                "port (RFC 3986): send the name this server is reached by, such as "
                "Host: localhost:8000 or Host: [::1]:8000", metadata={"host": host[:80]}))
        name = _host_name(host) or host[:80]      # 421, and the options that would name it
        return _refused(server, path, headers, 421, InvalidRequestError(
            f"this server does not answer to the name {name!r} (the request's Host header): a "
            "page of another site can reach a local server by a name it points at it (DNS "
            f"rebinding). If {name!r} is how clients reach this server, say so: --allow-host "
            f"{name} (Server(allowed_hosts=[{name!r}])), or --public-url",
            metadata={"host": name}))
    if method == "POST":
        ctype = headers.get("content-type", "")
        if ctype not in _JSON_TYPES and (body or "a2a-version" not in headers):
            media = _media_type(ctype)                # pages send others unasked: 415
            if not (media == _JSON or "/" in media and media.endswith("+json")):  # or any +json
                return _refused(server, path, headers, 415, ContentTypeNotSupportedError(
                    (f"a POST's body must be JSON, not {ctype[:80]}" if ctype else
                     "a POST must say that its body is JSON, and this one has no Content-Type")
                    + ": send -H 'Content-Type: application/json' (or, with no body, the "
                    "A2A-Version header); a page of another site can do neither, which keeps "
                    "it from calling this server", metadata={"contentType": ctype[:80]}))
    elif method == "OPTIONS":
        return _preflight(server, path, headers)
    if server.cors_origins and "origin" in headers and _cors_allowed(server, headers["origin"]):
        return _then(_routed(server, request), functools.partial(_with_cors, headers["origin"]))
    return _routed(server, request)


# (The servers bundled here refuse a body over max_body_bytes before reading
# it; _routed is the check for every other host, in one place for both bindings.)

def _routed(server, request):
    """_route_http, once the request may be answered."""
    method, path, headers, body = request.method, request.path, request.headers, request.body
    forwarded = server.trust_forwarded and headers.get(          # (the last proxy's peer)
        "x-forwarded-for", "").rpartition(",")[2].strip()
    if forwarded:
        request.peer = _Peer(forwarded, getattr(request.peer, "certificate", None))
    limit = server.limits["max_body_bytes"]
    if len(body) > limit:
        return server.error_response(path, 413, PayloadTooLargeError(
            f"the request body is {len(body)} bytes; this server accepts at most {limit}",
            metadata={"limit": limit}),
            _A2A_JSON if _A2A_JSON in headers.get("content-type", "") else None)
    try:
        card = server if path == server._card_path else path.endswith(_CARD_PATH) and \
            server.mounts.get(path[1:-len(_CARD_PATH)])   # (/{tenant}/...: Server.mount's)
        if card or path in _CATALOGS:
            if method not in ("GET", "HEAD"):
                raise _MethodNotAllowed("GET")
            if card:
                return _card_response(card, headers, request.base_url)
            try:                             # (the catalogs of the agents served here)
                return _companion("a2a_catalog", path).response(server, path, request.base_url)
            except ModuleNotFoundError as error:
                return server.error_response(path, 404, MethodNotFoundError(str(error)))
        if path.rstrip("/") == server.rpc_path.rstrip("/"):
            if method == "POST":
                return _jsonrpc_response(server, request)
            if method in ("GET", "HEAD"):      # the card in single-path mode, else the help page
                page = _card_response if server.single_path else _help_response
                return page(server, headers, request.base_url)
            raise _MethodNotAllowed("GET, POST")
        if server.single_path:                 # single-path mode: nothing else
            return server.error_response(server.single_path, 404, MethodNotFoundError(
                f"this server answers only at {server.single_path}: POST for JSON-RPC, GET for "
                "the agent card"))
        if path == "/metrics" and server.metrics and server.metrics.here:
            return server.metrics.response(request)     # (a2a_metrics: who may read it, how)
        if server.compat and server.compat.speaks_rest(path, headers):   # A2A 0.3
            return server.compat.rest_response(server, request)
        if path[:4] in ("/v1/", "/v1") and not headers.get("a2a-version") and \
                server.assume_version is None and "A2A-Version=" not in request.query:
            # 0.3's routes began /v1, 1.0's do not (1.0's /v1/... is the tenant "v1", 11.3).
            return server.error_response(path, 400, VersionNotSupportedError(
                f"{path} is an A2A 0.3 route (and a request without A2A-Version speaks 0.3); in "
                f"A2A {PROTOCOL_VERSION} the routes have no /v1 prefix (POST /message:send, "
                f"GET /tasks/{{id}}) and need -H 'A2A-Version: {PROTOCOL_VERSION}'. To serve "
                "0.3 clients too: Server(compat='0.3'), --compat 0.3. (With the header, "
                "/v1/... is the tenant \"v1\".)", metadata={"supportedVersions": PROTOCOL_VERSION}))
        return _rest_response(server, request)
    except _MethodNotAllowed as exc:
        resp = server.error_response(path, 405, UnsupportedOperationError(
            f"{method} is not allowed on {path}; use {exc.args[0]}"), *exc.args[1:])
        resp.headers.append(("Allow", exc.args[0]))
        return resp
    except Exception:                          # the last line of defence: never a traceback
        _log().exception("unexpected error answering %s %s%s", method, path,
                         _in_trace(request.call))
        return server.error_response(path, 500, InternalError("internal error; see the server log"))


class _MethodNotAllowed(Exception):
    """The method is not one the path takes; args: those it does (Allow), and
    the answer's media type when it is not application/json."""


def _answered_http(server, request, response):
    if request.binding is None:
        request.binding = "JSONRPC" if request.method == "POST" and \
            request.path.rstrip("/") == server.rpc_path.rstrip("/") else "HTTP+JSON"
    stream = response.stream is not None
    _answered(request, response.status, None if stream else len(response.body), stream)
    return response


def _jsonrpc_result(name, request_id, result):
    """The JSON-RPC answer to method ``name``'s ``result``: one object, or a
    stream of them (SSE), each with the request's id."""
    rid = b"%d" % request_id if type(request_id) is int else _dumps(request_id)
    if not METHODS[name][2]:
        return Response(200, [("Content-Type", _JSON), _LINK], b'{"jsonrpc":"2.0","id":' + rid
                        + b',"result":' + _encoded_result(result) + b"}\n")
    return _sse_response(result, lambda event: {
        "jsonrpc": "2.0", "id": request_id, "result": event},
        lambda error: _jsonrpc_error(request_id, error),
        lambda event: b'{"jsonrpc":"2.0","id":' + rid + b',"result":' + event + b"}")


def _jsonrpc_refused(server, request, request_id, error):
    """The JSON-RPC error answer. HTTP 200, except where HTTP itself has
    something to say: a body too large (413), credentials needed or short (401,
    403: a challenge), a caller over its limits (429)."""
    server.count_refusal(error)
    request.error = type(error)     # (its class: the error holds a frame that holds request)
    status = error.http_status if error.challenge or isinstance(
        error, (PayloadTooLargeError, CallerLimitError)) else 200
    return Response(status, [("Content-Type", _JSON), _LINK, *_error_headers(error)],
                    _json_body(_jsonrpc_error(request_id, error)))


def _jsonrpc_response(server, request):
    """POST to the JSON-RPC endpoint."""
    request_id = None
    try:
        envelope = _parse_json_body(request.body)        # (its Content-Type is JSON: _route_http)
        if isinstance(envelope, list):
            raise InvalidRequestError(
                "JSON-RPC batches are not supported by A2A; send one request object per HTTP POST")
        if not isinstance(envelope, dict):
            raise InvalidRequestError("a JSON-RPC request must be a JSON object")
        rid = envelope.get("id")
        id_ok = type(rid) is str or type(rid) is int       # (true and false are not ids)
        if id_ok or rid is None:
            request_id = rid
        if envelope.get("jsonrpc") != "2.0":
            raise InvalidRequestError('a JSON-RPC request needs "jsonrpc": "2.0"')
        if not id_ok:
            raise InvalidRequestError(
                'a JSON-RPC request needs an "id" (a string or an integer) to answer to')
        name = envelope.get("method")
        if not isinstance(name, str):
            raise InvalidRequestError('a JSON-RPC request needs a "method" string')
        params = envelope.get("params", {})
        if not isinstance(params, dict):
            raise InvalidParamsError("params must be a JSON object (by-name parameters)",
                                     field="params")
        call = _call_context(server, request)
        if name in METHODS:
            return _answer(server.call(name, params, call),
                           functools.partial(_jsonrpc_result, name, request_id),
                           functools.partial(_jsonrpc_refused, server, request, request_id))
        if name in LEGACY_METHODS:
            if server.compat:                      # A2A 0.3 (a2a_v03)
                return server.compat.jsonrpc_response(server, name, params, request_id, request)
            raise MethodNotFoundError(
                f"{name!r} is an A2A 0.3 method; in A2A {PROTOCOL_VERSION} it is "
                f"{LEGACY_METHODS[name]!r} (or serve 0.3 clients too: "
                "Server(compat='0.3'), --compat 0.3)", metadata={"method": name})
        raise MethodNotFoundError(f"no method {name!r}; A2A {PROTOCOL_VERSION} methods are "
                                  f"{', '.join(METHODS)}", metadata={"method": name})
    except A2AError as error:
        return _jsonrpc_refused(server, request, request_id, error)
    except Exception:
        _log().exception("unexpected error in a JSON-RPC call%s", _in_trace(request.call))
        return _jsonrpc_refused(server, request, request_id,
                                InternalError("internal error; see the server log"))


def _compat(version):
    """The module that translates an older protocol version (``compat``), or
    None. Only 0.3 has one: the companion a2a_v03, imported only then."""
    if version is None:
        return
    if str(version) not in ("0.3", "0.3.0"):
        raise ValueError(f"compat={version!r}: the one older version served is '0.3'")
    try:
        return _companion("a2a_v03", "compat='0.3'")
    except ModuleNotFoundError as error:
        raise RuntimeError(str(error)) from None


def _error_response(server, path, status, error, media_type=None):
    """Server.error_response(): an error answer for ``path``, for problems adapters
    find before handle_http (counted: count_refusal), in its binding's shape (section
    7): JSON-RPC's at the JSON-RPC endpoint, HTTP+JSON's (google.rpc.Status) elsewhere."""
    server.count_refusal(error)
    body = _jsonrpc_error(None, error) if path is not None and path.rstrip("/") == \
        server.rpc_path.rstrip("/") else _status_error(error, status)
    return Response(status, [("Content-Type", media_type or _JSON), _LINK,
                             *_error_headers(error)], _json_body(body))


def _error_headers(error):
    """The HTTP headers an error brings: a challenge (401, 403), when to retry (429, 503)."""
    if error.challenge:
        return [("WWW-Authenticate", error.challenge)]
    return [("Retry-After", str(error.retry_after))] if error.retry_after else []


def _call_context(server, request):
    """The CallContext of a request to either binding (request.call), Last-Event-ID too."""
    headers = request.headers
    query = _query_params(request.query) if request.query else {}
    call = request.call = CallContext(headers, query, base_url=request.base_url, spawn=
                                      request.spawn, peer=request.peer, tracing=server.tracing)
    if query or "last-event-id" in headers:
        call.last_event_id = _last_event_id(headers, query)
    return call


def _last_event_id(headers, query):
    """The SSE Last-Event-ID a client resumes from (header, or query
    parameter), or None: only a plain decimal number counts."""
    last = (headers.get("last-event-id") or query.get("lastEventId") or query.get("Last-Event-ID")
            or "").strip()
    if last.isascii() and last.isdigit() and len(last) < 19:      # (an int64)
        return int(last)


def _encoded_result(result):
    """The JSON of an operation's result; a task the store gave with its JSON
    (a _StoredTask, or {"task": a _StoredTask}) is spliced in, not encoded again."""
    if type(result) is _StoredTask:
        stored = getattr(result, "json", None)
        if stored is not None:
            return stored
    elif type(result) is dict and len(result) == 1 and type(result.get("task")) is _StoredTask:
        stored = getattr(result["task"], "json", None)
        if stored is not None:
            return b'{"task":' + stored + b"}"
    return _dumps(result)


def _answer(result, answer, refuse):
    """The Response to an operation's result: ``answer(result)``. For one still
    to come (a _PendingAnswer), a Response whose ``pending`` it is, and whose
    ``render(pending)`` makes the real one (by ``answer``, or ``refuse``)."""
    return answer(result) if type(result) is not _PendingAnswer else \
        Response(200, [], pending=result, render=functools.partial(_respond, answer, refuse))


def _then(response, finish):
    """``finish(response)``; for an answer still to come (pending, on an
    event loop), ``finish`` of the real one, once it is rendered."""
    if response.pending is None:
        return finish(response)
    render = response.render
    response.render = lambda pending: finish(render(pending))
    return response


def _respond(answer, refuse, pending):
    """_answer for a result that came later."""
    try:
        return answer(pending.result())
    except A2AError as error:
        return refuse(error)
    except Exception:
        _log().exception("unexpected error in an operation")
        return refuse(InternalError("internal error; see the server log"))


def _sse_response(events, wrap, wrap_error, splice=None):
    """An SSE Response over a _Follower of (seq, StreamResponse)."""
    return Response(200, [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                          _LINK], stream=_SSEStream(events, wrap, wrap_error, splice))


class _SSEStream:
    """The SSE frames (bytes) of a _Follower's events, each in its binding's
    envelope: by ``wrap``, or by ``splice`` as bytes for a _StoredEvent's JSON.
    An error ends the stream with one ``wrap_error`` frame, a shutdown with
    _RETRY. Read by ``for``, or by poll() and watch() like the follower itself."""

    def __init__(self, events, wrap, wrap_error, splice=None):
        self.events, self.wrap, self.wrap_error, self.splice = events, wrap, wrap_error, splice
        self.done, self.keepalive = False, getattr(events, "keepalive", None)
        self.begin_at = getattr(events, "begin_at", None)   # (its first event's due time)
        self.dry = False              # the last look found nothing more (see _LoopStream)
        self.after = deque()          # the rest of a frame given in pieces (_frame)
        self.generations = getattr(events, "generations", False)   # (a 1.1 client's)
        self.sending = None           # the event of those pieces (kept while they are sent)
        if splice and type(events) is _Follower:                  # (a stream's JSON, spliced:
            events.raw = getattr(events.channel.store, "raw_events", False)   # not parsed again)

    def __iter__(self):
        return self

    def __next__(self):
        return self._piece() if self.after else self._joined(self._frame(next, self.events))

    def _piece(self):
        piece = self.after.popleft()
        if not self.after:
            self.sending = None       # (a shared event goes once no stream sends it)
        return piece

    def poll(self, idle=False):
        """The next frames without waiting, or None (see _Follower.poll)."""
        if self.after:
            return self._piece()
        frame = self._frame(type(self.events).poll, self.events, idle)
        self.dry = frame is None or frame is _KEEPALIVE
        return self._joined(frame)

    def _joined(self, frame):
        """``frame`` and the frames of the events ready after it, as one chunk
        of at most _JOINED bytes: what is ready together goes out in one write
        (a fast agent's chunks, a reader that fell behind), not one each."""
        if frame is None or frame is _KEEPALIVE or self.done:
            return frame
        frames, size = [frame], len(frame)
        while size < _JOINED and not self.after:
            try:
                more = self._frame(type(self.events).poll, self.events)
            except StopIteration:               # (the next call ends the stream)
                break
            if more is None:
                self.dry = True
                break
            frames.append(more)
            size += len(more)
        return frame if len(frames) == 1 else b"".join(frames)

    def watch(self, wake):
        self.events.watch(wake)

    def unwatch(self, wake):
        self.events.unwatch(wake)

    def _frame(self, step, *args):
        """The frame of the event ``step(*args)`` gives: StopIteration at the end."""
        if self.done:
            raise StopIteration
        try:
            item = step(*args)
        except StopIteration:
            self.close()
            if getattr(self.events, "retry", False):
                return _RETRY
            raise
        except Exception as exc:                 # the last frame: an A2AError as it is,
            self.close()                         # anything else as InternalError (logged)
            if not isinstance(exc, A2AError):
                _log().error("unexpected error in a stream", exc_info=exc)
                exc = InternalError("internal error; see the server log")
            return _sse_frame(None, self.wrap_error(exc))
        if item is None:                         # nothing yet (poll)
            return
        seq, event = item
        if event is None:                        # nothing for keepalive_interval seconds
            return _KEEPALIVE
        if self.generations and self.splice:
            event = _with_generation(event, seq)
        if type(event) is _StoredEvent and self.splice:
            if len(event.json) > _JOINED:        # (a large one, in three pieces: the JSON is
                head, _, tail = (b"id: %d\ndata: %s\n\n" % (   # the event's, not a copy)
                    seq, self.splice(b"\0"))).partition(b"\0")
                self.after.extend((event.json, tail))
                self.sending = event
                return head
            event = event.json
        if type(event) is bytes:                 # (raw, from the store: see _Follower.raw)
            return b"id: %d\ndata: %s\n\n" % (seq, self.splice(event))
        return _sse_frame(seq, self.wrap(event))

    def close(self):
        self.done = True
        close = getattr(self.events, "close", None)
        if close:
            close()


# -- HTTP+JSON (section 11) ------------------------------------------------------
#
# The same operations as REST routes (the ROUTES table). Bodies, answers and stream events are the
# request message, the response message and the StreamResponse themselves. Errors are
# google.rpc.Status as JSON (section 11.6), with the HTTP status of the error table:
#
#   {"error": {"code": 404, "status": "NOT_FOUND", "message": "...",
#              "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", ...}]}}
#
# An answer has the media type of its request: application/a2a+json, or
# application/json (the default); any other is refused with 415 (RFC 9110).

_A2A_JSON = "application/a2a+json"
_CUSTOM_VERBS = frozenset(p.rsplit(":", 1)[1] for _, p, _ in ROUTES if ":" in p)


def _status_error(error, http_status=None):
    """The google.rpc.Status JSON of an error (a pure function of the error).
    ``code`` is the HTTP status of the answer, as AIP-193 has it."""
    return {"error": {"code": http_status or error.http_status, "status": error.grpc_status,
                      "message": error.message, "details": error.details()}}


def _route_index():
    """(number of segments, first segment, custom verb) -> [(verb, pattern, method)] of the routes
    that can match: every pattern starts with a literal, and a path that ends in a custom verb
    (":cancel") fits only the routes ending in it, so a lookup leaves one or two to try.
    '/tasks/{id}:cancel' is [(None, 'tasks'), ('id', ':cancel')]: (variable, or None for a literal;
    then the literal, or the variable's literal suffix)."""
    index = {}
    for verb, route, method in ROUTES:
        pattern = []
        for segment in route.strip("/").split("/"):
            name, _, suffix = segment[1:].partition("}")
            pattern.append((name, suffix) if segment.startswith("{") else (None, segment))
        index.setdefault((len(pattern), pattern[0][1],     # (and the custom verb, if any)
                          route.rpartition(":")[2] if ":" in route else None), []).append(
            (verb, pattern, method))
    return index


_ROUTE_INDEX = _route_index()


def _match_segments(pattern, segments):
    """The path variables if ``segments`` fit ``pattern`` (of their length), else None."""
    values = {}
    for (name, text), segment in zip(pattern, segments):
        if name is None:
            if segment != text:
                return
        elif text:                               # {id}:cancel (its verb chose the route)
            if len(segment) == len(text):
                return
            values[name] = segment[:-len(text)]
        else:                                    # {id}: any non-empty segment, but
            if not segment or segment.rpartition(":")[2] in _CUSTOM_VERBS and ":" in segment:
                return None                      # not one that names a custom verb
            values[name] = segment
    return values


def _routes_for(path):
    """[(verb, method, path variables)] of every route ``path`` matches, trying
    it without and then with a tenant prefix."""
    segments = path.strip("/").split("/")
    if "%" in path:
        from urllib.parse import unquote
        segments = [unquote(s) for s in segments]
    for tenant, rest in ((None, segments), (segments[0], segments[1:])):
        if not rest:
            return []
        custom = rest[-1].rpartition(":")[2] if ":" in rest[-1] else None
        found = []
        for verb, pattern, method in _ROUTE_INDEX.get(
                (len(rest), rest[0], custom if custom in _CUSTOM_VERBS else None), ()):
            values = _match_segments(pattern, rest)
            if values is not None:
                if tenant is not None:
                    values["tenant"] = tenant
                found.append((verb, method, values))
        if found:
            return found
    return []


def _query_to_params(message_type, query):
    """GET/DELETE query parameters -> a params dict for parse() (section 11.5): camelCase names,
    enums by name (or number), booleans as true/false, each given once, unknown names ignored. (No
    request of a GET or DELETE route has a repeated field: ROUTES, MESSAGES.)"""
    from urllib.parse import parse_qsl
    fields, params = _FIELDS[message_type], {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True, max_num_fields=100)
    except ValueError as exc:
        raise InvalidParamsError(f"the query string is malformed: {exc}", field="query") from None
    for key, value in pairs:
        field = fields.get(key)
        if field is None:
            continue
        name = field.name
        if name in params:
            raise InvalidParamsError(f"query parameter {name} is given more than once", field=name)
        if field.type == "bool":
            if value not in ("true", "false"):
                raise InvalidParamsError(f"{name} must be true or false, not {value!r}", field=name)
            value = value == "true"
        elif field.type in ENUMS and value.isascii() and value.isdigit():
            value = int(value)
        params[name] = value
    return params


def _rest_response(server, request):
    """An HTTP+JSON route: match, build the request message, call, answer."""
    verb, path, headers, body = request.method, request.path, request.headers, request.body
    media = _A2A_JSON if _media_type(headers.get("content-type", "")) == _A2A_JSON or \
        not body and _A2A_JSON in headers.get("accept", "") else _JSON

    def refuse(error):
        request.error = type(error)     # (its class: the error holds a frame that holds request)
        return server.error_response(path, error.http_status, error, media)

    try:
        matches = _routes_for(path)
        if not matches:
            raise MethodNotFoundError(
                f"nothing is served at {path}" + ("; the metrics are served with "
                "Server(metrics=True) (--metrics)" if path == "/metrics" else "") +
                "; the HTTP+JSON routes are /message:send, /tasks, /tasks/{id} ... (section 11 "
                f"of the A2A specification), JSON-RPC is at {server.rpc_path} and the "
                f"agent card at {_CARD_PATH}", metadata={"path": path})
        for route_verb, method, values in matches:
            if route_verb == verb or verb == "HEAD" and route_verb == "GET":
                break
        else:
            raise _MethodNotAllowed(", ".join(sorted({m[0] for m in matches})), media)
        if verb == "HEAD" and METHODS[method][2]:
            raise _MethodNotAllowed("GET, POST")   # a HEAD must not open a subscription

        def answer(result):
            if not METHODS[method][2]:
                return Response(200, [("Content-Type", media), _LINK],
                                _encoded_result(result) + b"\n")
            return _sse_response(result, _as_it_is, _status_error, _as_it_is)
        return _answer(server.call(method, _rest_params(request, METHODS[method][0], values),
                                   _call_context(server, request)), answer, refuse)
    except A2AError as error:
        return refuse(error)


def _rest_params(request, request_type, values):
    """An HTTP+JSON request's message (``request_type``'s fields): from its
    query (GET, DELETE) or its JSON body (POST), and the ``values`` its path
    gave, which the rest may repeat but not contradict."""
    verb, body = request.method, request.body
    if verb in ("GET", "DELETE", "HEAD"):
        if body.strip():
            raise InvalidRequestError(
                f"{verb} {request.path} takes no body; send its parameters in the query string")
        params = _query_to_params(request_type, request.query) if request.query else {}
    else:                                    # (a POST: its body is JSON, if any)
        params = _parse_json_body(body) if body.strip() else {}
        if not isinstance(params, dict):
            raise InvalidParamsError(f"the body must be a JSON object ({request_type}), "
                                     f"not {_json_type(params)}", field="body")
    for name, value in values.items():       # the path's values fill the request
        given = params.get(name, None if name.islower() else params.pop(_snake(name), None))
        if given not in (None, "", value):
            raise InvalidParamsError(
                f"{name} {given!r} in the request contradicts {value!r} in the path; "
                "send it once, in the path", field=name)
        params[name] = value
    return params


def _parse_json_body(body):
    """Bytes -> JSON value, or ParseError saying where it broke."""
    try:
        if body[:1] == b"{" and body[1:2] != b"\x00":
            # UTF-8, as json.loads would find (not UTF-16 or 32), without its search.
            body = body.decode("utf-8", "surrogatepass")
        return json.loads(body)
    except RecursionError:
        raise ParseError("the JSON is nested too deeply to parse") from None
    except UnicodeDecodeError as exc:
        raise ParseError(f"the body is not valid UTF-8 (byte {exc.start})") from None
    except ValueError as exc:
        raise ParseError(f"the body is not valid JSON: {exc}") from None


def _query_params(query):
    """A query string -> {name: last value} (repeated names: the last wins)."""
    from urllib.parse import parse_qs
    return {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}


# The card's signature (section 8.4): detached JWS (RFC 7515) in ``signatures``,
# over the card's canonical form (RFC 8785 JSON of the card as the proto knows
# it), made by a2a_signing.py's sign_card when the server has a card_signer.
def _card_response(server, headers, base_url):
    """GET /.well-known/agent-card.json (section 8.2), cacheable (ETag, max-age)."""
    key = server.public_url or base_url
    cached = server.card.cache
    if cached is None or cached[0] != key:
        card = server.agent_card(base_url)
        card = card if server.compat is None else server.compat.card(card)
        if server.card.signer:
            # What is signed is the card as served, as the proto knows it: with
            # compat on, its 0.3 interfaces too; the 0.3-only fields (url,
            # preferredTransport...) are not proto fields, so verifiers leave them out.
            card = _companion("a2a_signing", "card_signer=").sign_card(card, server.card.signer)
        body = _json_body(card)
        etag = f'"{binascii.crc32(body):08x}-{len(body):x}"'     # strong: any byte changes it
        modified = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(server.card.since))
        cached = server.card.cache = key, body, etag, modified
    _, body, etag, modified = cached
    common = [("ETag", etag), ("Last-Modified", modified),
              ("Link", f'<{_CATALOG_PATH}>; rel="api-catalog"'), *_discovery_headers(server)]
    match = headers.get("if-none-match", "")
    return Response(304, common) if etag in [t.strip() for t in match.split(",")] or \
        match.strip() == "*" else Response(200, [("Content-Type", _JSON)] + common, body)


def _discovery_headers(server):
    """The card's and the catalog's: cacheable, readable from any origin, and
    varying by Host when their URLs are made of the request's Host."""
    return [("Cache-Control", f"public, max-age={server.card.max_age}"),
            ("Access-Control-Allow-Origin", "*")] + ([] if server.public_url else [("Vary", "Host")])


def _help_response(server, headers, base_url):
    """GET / : curl lines to try; a browser gets the agent console instead
    (a2a_console.py, when it is beside this file), unless Server(console=False)."""
    text = _help_text(server, base_url or "http://127.0.0.1:8000")
    if server.console and "text/html" in headers.get("accept", ""):
        try:
            console = _companion("a2a_console", "the agent console")
        except ModuleNotFoundError as error:
            if error.name != "a2a_console":
                raise
            text += ("\nThe agent console, a browser's page here, is the companion a2a_console.py: "
                     "copy it from the a2a_min repository beside a2a_min.py.\n")
        else:                                  # (a copied a2a_min.py alone: the text)
            return console.console_response(server, headers, base_url)
    return Response(200, [("Content-Type", "text/plain; charset=utf-8"), ("Vary", "Accept"),
                          _LINK], text.encode())


def _help_text(server, base_url):
    """The JSON-RPC endpoint's help page: a curl line for each common call, to paste."""
    base = (server.public_url or base_url).rstrip("/")
    rpc = base + server.rpc_path
    head = f"curl -sS {rpc} -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' -d "
    send = ('{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
            '{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}')
    stream = ('{"jsonrpc":"2.0","id":2,"method":"SendStreamingMessage","params":{"message":'
              '{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"hello stream"}]}}}')
    listing = '{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"pageSize":5}}'
    get = '{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"TASK_ID"}}'
    return (
        f"{server.card.fields['name']}: an A2A {PROTOCOL_VERSION} agent (a2a_min {__version__})\n\n"
        f"The agent card:\n  curl -sS {base}{_CARD_PATH}\n\n"
        f"Send a message (JSON-RPC):\n  {head}'{send}'\n\n"
        f"Stream a reply (Server-Sent Events):\n  curl -sSN {rpc} -H 'A2A-Version: 1.0' "
        f"-H 'Content-Type: application/json' -d '{stream}'\n\n"
        f"List tasks:\n  {head}'{listing}'\n\n"
        f"Get a task (put an id from above):\n  {head}'{get}'\n")


# =============================================================================
# 9. Webhook delivery
# =============================================================================
#
# Push notifications (sections 3.1.7-3.1.10, 4.3.3, 13.2). Each task event is
# POSTed as a StreamResponse to every config of the task, from background
# threads, so a slow webhook never holds a request. Connection errors and 5xx
# are retried with exponential backoff and jitter; redirects are not followed.
#
# Fairness. Callers choose the webhooks, and a caller may choose a tarpit (a receiver that never
# answers, or answers a byte a second). So deliveries wait in one lane per caller
# (CallContext.caller), and within it in one queue per destination (scheme, host, port). The
# push_workers threads serve the callers in turn, one attempt per turn; a caller has at most
# push_per_caller attempts in flight, each to another destination, so its tarpits hold that many
# threads for at most push_timeout. A destination has one delivery in flight at a time, which keeps
# each webhook's events in order.
#
# Retries and the circuit breaker. A retry waits out its backoff on a timer (a heap), never in a
# thread, at the head of its destination's queue. A destination that failed push_breaker times in a
# row (no answer, or 5xx) is paused for push_pause seconds: what waits or comes for it meanwhile is
# dropped and counted ("paused"). Then one delivery may try again; an answer below 500 closes the
# breaker. A lane holds push_queue deliveries and push_queue_bytes of bodies; what overflows is
# dropped and counted, and the log gets one warning per push_log_interval summing up what was
# dropped, failed or refused, never one line per event. Shutdown waits for what may go now, never
# for a backoff or a paused destination.
#
# Deadline. An attempt (connect, TLS handshake, request, the answer's status
# line) has push_timeout seconds in all, however slowly the receiver trickles
# (http.client cannot: its timeout applies afresh to every read). At most
# push_max_response bytes are read to find the status; the rest never is.
#
# DNS rebinding. The host is resolved before each attempt and every address checked (section 6 of
# this file); the request then goes to a vetted address, https too (TLS starts on the connected
# socket, with the URL's host for SNI and the certificate), so a second DNS answer cannot send it
# elsewhere. The system resolver's timeouts are outside the deadline.


_PUSH_TOTALS = ("delivered", "failed", "retried", "refused", "dropped", "paused")  # push_stats
_CALLER_COUNTS = ("queued", "sent", "failed", "refused", "retried", "dropped", "paused")


def _resolve_host(host, port):
    """The addresses of a webhook's host, from the system resolver."""
    import socket
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InvalidParamsError(f"the webhook host {host} does not resolve ({exc})",
                                 field="url") from None
    return [info[4][0].split("%")[0] for info in infos]


def _time_left(deadline):
    """Seconds to ``deadline``; TimeoutError once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no answer within push_timeout")
    return left


def _read_status(sock, deadline, limit):
    """The status code of the final answer, within ``limit`` bytes and the
    deadline. Interim (1xx) answers are skipped, as HTTP/1.1 asks."""
    data, received = b"", 0
    while True:
        line_end = data.find(b"\n")
        if line_end >= 0:
            version, _, rest = data[:line_end].partition(b" ")
            code = rest[:3]
            if not (version.startswith(b"HTTP/1.") and len(code) == 3 and code.isdigit()):
                raise OSError(f"the webhook's answer is not HTTP/1: {data[:40]!r}")
            if code[:1] != b"1":
                return int(code)
            interim_end = data.find(b"\r\n\r\n")
            if interim_end >= 0:
                data = data[interim_end + 4:]
                continue
        if received >= limit:
            raise OSError(f"no status line in the first {limit} bytes of the webhook's answer")
        sock.settimeout(_time_left(deadline))
        chunk = sock.recv(min(16384, limit - received))
        if not chunk:
            raise OSError("the webhook closed the connection without answering")
        received += len(chunk)
        data += chunk


class _PushDestination:
    """A caller's deliveries to one destination, oldest first; ``failures``
    and ``paused_until`` are its circuit breaker."""
    __slots__ = "jobs", "busy", "backing_off", "failures", "paused_until"

    def __init__(self):
        self.jobs = deque()               # (config, body, attempt)
        self.busy = False                 # an attempt in flight
        self.backing_off = False          # a retry waiting on the timer (first in ``jobs``)
        self.failures = 0                 # attempts failed in a row (no answer, or 5xx)
        self.paused_until = 0.0           # time.monotonic() until which it is paused

    def idle(self):
        return not (self.jobs or self.busy)


class _PushLane:
    """One caller's deliveries, by destination, and the caller's counters."""
    __slots__ = "dests", "ready", "bytes", "in_flight", "queued", "counts"

    def __init__(self):
        self.dests = {}                   # (scheme, host, port) -> _PushDestination
        self.ready = deque()              # destinations whose next delivery may go, in turn
        self.bytes = 0                    # of the bodies waiting in ``dests``
        self.in_flight = 0                # attempts under way (at most push_per_caller)
        self.queued = False               # the caller is in line for a turn
        self.counts = dict.fromkeys(_CALLER_COUNTS, 0)

    def waiting(self):
        return sum(len(dest.jobs) for dest in self.dests.values())

    def idle(self):
        """Nothing queued, in flight or backing off: the lane may be forgotten."""
        return not self.in_flight and all(d.idle() for d in self.dests.values())


def _forget_idle(table, limit, idle):
    """Past ``limit`` entries, the first (least recently used) of ``table``
    for which ``idle`` is true is forgotten, to make room for one more."""
    if len(table) >= limit:
        key = next((key for key, value in table.items() if idle(value)), None)
        if key is not None:
            del table[key]


def _paused_why(key, dest, now):
    """Why a delivery to the paused destination ``key`` is dropped."""
    return (f"{key[0]}://{key[1][:80]}:{key[2]} is paused for "
            f"{dest.paused_until - now:.0f} s more, after {dest.failures} failed attempts "
            "in a row (push_breaker, push_pause)")


class _PushDelivery:
    """Background POSTs of task events to webhooks, fair between callers and their destinations
    (see the section comment). ``ready``'s lock guards all. It holds its Server weakly, and its
    threads end when the Server shuts down or is gone (as the store's watch): a thread must not
    keep alive what nobody else uses (the Server, and every task in its store)."""

    def __init__(self, server):
        import itertools
        import random
        import weakref
        self.server, self.limits, self.closing = weakref.ref(server), server.limits, server.closing
        self.stopped = False              # stop(): the workers end at their next turn
        self.stats = dict.fromkeys(_PUSH_TOTALS, 0)
        self.lanes = {}                   # caller -> _PushLane, least recently used first
        self.turns = deque()              # callers with a delivery that may go, in turn order
        self.later = []                   # heap of (time, n, caller, destination): backoffs
        self.numbers = itertools.count()  # the n above: the heap never compares two callers
        self.ready = threading.Condition(threading.Lock())
        self.unlogged = {}                # caller -> counts and last reason, since the last warning
        self.log_at = 0.0                 # when the next warning may be written
        self.tls = None                   # the SSLContext for https, made on first use
        self.jitter = random.Random()     # its own: the random module's state is the program's
        for _ in range(self.limits["push_workers"]):
            threading.Thread(target=self._work, name="a2a-push", daemon=True).start()
        weakref.finalize(server, self.stop)   # (a Server dropped without shutdown())

    def stop(self):
        """Server.shutdown (it waited for what could go), or the Server is gone:
        the workers end once their attempt in flight ends; the rest is dropped."""
        with self.ready:
            self.stopped = True
            self.ready.notify_all()

    # -- the callers' side: queue, count ------------------------------------------------
    def submit(self, caller, configs, event, task, trace):
        """Queue ``event`` (a StreamResponse) for each webhook in ``configs`` on ``caller``'s lane,
        never blocking: what does not fit, or goes to a paused destination, is dropped and counted.
        A webhook registered through 0.3 is sent what 0.3 sends (the server's translation makes
        it). ``trace``: the turn's trace context headers, sent on every attempt."""
        from urllib.parse import urlsplit
        bodies = {None: _dumps(event)}
        now = time.monotonic()
        with self.ready:
            lane = self.lanes.pop(caller, None)
            if lane is None:                     # (its counts stay in the totals)
                _forget_idle(self.lanes, self.limits["push_callers"], _PushLane.idle)
                lane = _PushLane()
            self.lanes[caller] = lane            # now the most recently used
            for config in configs:
                version = config.get("payloadVersion")
                body = bodies.get(version)
                if body is None:
                    compat = self.server().compat
                    body = bodies[version] = bodies[None] if compat is None \
                        else _dumps(compat.push_payload(task, event))
                parts = urlsplit(config["url"])  # (scheme and host name come lower-case)
                try:
                    port = parts.port
                except ValueError:
                    port = None
                key = (parts.scheme, parts.hostname or "",   # what its deliveries queue by
                       port or (443 if parts.scheme == "https" else 80))
                dest = lane.dests.get(key)
                if dest is None:                 # (with its failures)
                    _forget_idle(lane.dests, self.limits["push_destinations"],
                                 _PushDestination.idle)
                    dest = lane.dests[key] = _PushDestination()
                if dest.paused_until > now:
                    self._note(caller, lane, "paused", _paused_why(key, dest, now))
                    continue
                if (lane.bytes + len(body) > self.limits["push_queue_bytes"]
                        or lane.waiting() >= self.limits["push_queue"]):
                    self._note(caller, lane, "dropped", "its delivery queue was full")
                    continue
                dest.jobs.append((config, body, 0, trace))
                lane.bytes += len(body)
                lane.counts["queued"] += 1
                if len(dest.jobs) == 1 and not (dest.busy or dest.backing_off):
                    lane.ready.append(key)
            self._enqueue(caller, lane)
            self.ready.notify()

    def _enqueue(self, caller, lane):
        """Put the caller in line if it has a delivery that may go and room in its share."""
        if lane.ready and not lane.queued and lane.in_flight < self.limits["push_per_caller"]:
            lane.queued = True
            self.turns.append(caller)

    def _note(self, caller, lane, outcome, why=""):
        """Count an outcome; keep what went wrong for the next warning."""
        self.stats[outcome] += 1
        lane.counts["sent" if outcome == "delivered" else outcome] += 1
        if outcome not in ("delivered", "retried"):    # dropped, failed, refused, paused
            if caller not in self.unlogged and len(self.unlogged) >= self.limits["push_callers"]:
                caller = "(more callers)"
            noted = self.unlogged.setdefault(caller, {"dropped": 0, "failed": 0, "refused": 0})
            noted["dropped" if outcome == "paused" else outcome] += 1
            noted["last"] = why

    def totals(self):
        with self.ready:
            now = time.monotonic()
            return {**self.stats, "paused_destinations": sum(
                d.paused_until > now for lane in self.lanes.values() for d in lane.dests.values())}

    def by_caller(self):
        with self.ready:
            return {caller: {**lane.counts, "waiting": lane.waiting()}
                    for caller, lane in self.lanes.items()}

    def pending(self):
        """Deliveries that may go out now or are going: what shutdown waits for."""
        with self.ready:
            return sum(len(dest.jobs) + dest.busy for lane in self.lanes.values()
                       for dest in lane.dests.values() if not dest.backing_off)

    # -- the workers' side: take turns, deliver ---------------------------------------
    def _work(self):
        while True:
            with self.ready:
                taken = self._next()
            if taken is None:
                return                          # stopped: the Server shut down, or is gone
            caller, key, job, warning = taken
            if warning:
                _log().warning(warning)
            if job is None:
                continue
            server = self.server()              # (held while it delivers, never while it waits)
            if server is None:
                return
            url, trace, marks = job[0]["url"], job[3], {}
            if server.observers:               # (a span for each attempt: a2a_otel)
                trace = dict(trace or {})
                marks = {observer: observer.webhook_started(url, trace)
                         for observer in server.observers}
            try:
                outcome, why, status = self._attempt(job[0], job[1], trace)
            except Exception:
                _log().exception("unexpected error delivering to %s", url)
                outcome, why, status = "failed", "an unexpected error (logged)", None
            for observer, mark in marks.items():
                observer.webhook_ended(url, status, None if outcome == "delivered" else outcome,
                                       mark)
            with self.ready:
                self._settle(caller, key, job, outcome, why, status)
            del server

    def _next(self):
        """Wait for a turn to take or a warning to write: (caller, destination,
        job, warning), the job None when there is no turn; None once stopped."""
        import heapq
        while True:
            if self.stopped:
                return None
            now = time.monotonic()
            while self.later and self.later[0][0] <= now:
                _, _, caller, key = heapq.heappop(self.later)
                lane = self.lanes[caller]        # (a lane backing off is never forgotten)
                lane.dests[key].backing_off = False
                lane.ready.append(key)           # its retry's time has come: back in line
                self._enqueue(caller, lane)
            warning = self._warning(now)
            if warning or self.turns:
                break
            wake = [self.later[0][0]] if self.later else []
            if self.unlogged:
                wake.append(self.log_at)
            self.ready.wait(min(wake) - now if wake else None)
        if not self.turns:
            return None, None, None, warning
        caller = self.turns.popleft()
        lane = self.lanes[caller]
        lane.queued = False
        key = lane.ready.popleft()
        dest = lane.dests[key]
        job = dest.jobs.popleft()
        lane.bytes -= len(job[1])
        dest.busy = True
        lane.in_flight += 1
        self._enqueue(caller, lane)              # its other destinations: back in line
        if self.turns:
            self.ready.notify()                  # more turns than this thread: wake another
        return caller, key, job, warning

    def _settle(self, caller, key, job, outcome, why, status):
        """Count an attempt's outcome, feed the circuit breaker; put the retry
        on the timer, or the destination's next delivery in line."""
        import heapq
        config, body, attempt, trace = job
        lane = self.lanes[caller]
        dest = lane.dests[key]
        dest.busy = False
        lane.in_flight -= 1
        now = time.monotonic()
        if status is not None and status < 500:         # it answered: it is alive
            dest.failures, dest.paused_until = 0, 0.0
        elif outcome != "refused":
            dest.failures += 1
            if dest.failures >= self.limits["push_breaker"]:
                dest.paused_until = now + self.limits["push_pause"]
        paused = dest.paused_until > now
        if outcome == "retry" and attempt < self.limits["push_retries"] and not paused \
                and not self.closing.is_set():
            self._note(caller, lane, "retried")
            delay = self.limits["push_backoff"] * 2 ** attempt * (0.5 + self.jitter.random())
            dest.jobs.appendleft((config, body, attempt + 1, trace))
            lane.bytes += len(body)
            dest.backing_off = True
            heapq.heappush(self.later, (now + delay, next(self.numbers), caller, key))
        else:
            if outcome == "retry":
                outcome, why = "failed", f"{why}, after {attempt + 1} attempts"
            self._note(caller, lane, outcome, why)
            if paused:                           # the breaker opened: what waits is dropped
                why = _paused_why(key, dest, now)
                while dest.jobs:
                    lane.bytes -= len(dest.jobs.popleft()[1])
                    self._note(caller, lane, "paused", why)
            elif dest.jobs:
                lane.ready.append(key)
        self._enqueue(caller, lane)
        self.ready.notify()

    def _warning(self, now):
        """The warning summing up the failures since the last one, if one is due
        (one per push_log_interval): its text, or None."""
        if not self.unlogged or now < self.log_at:
            return None
        noted, self.unlogged = self.unlogged, {}
        self.log_at = now + self.limits["push_log_interval"]
        total = {what: sum(n[what] for n in noted.values())
                 for what in ("dropped", "failed", "refused")}
        worst = sorted(noted.items(), key=lambda item: -sum(item[1][w] for w in total))[:5]
        callers = "; ".join(f"{caller!r:.80}: {', '.join(f'{n[w]} {w}' for w in total if n[w])}"
                            f" (last: {n['last'][:160]})" for caller, n in worst)
        more = f"; and {len(noted) - len(worst)} more callers" if len(noted) > len(worst) else ""
        return (f"webhook deliveries since the last report: {total['dropped']} dropped, "
                f"{total['failed']} failed, {total['refused']} refused; by caller: {callers}{more}")

    def _attempt(self, config, body, trace):
        """One POST: (outcome, why, HTTP status or None), the outcome one of
        delivered, failed (final), refused (SSRF) and retry."""
        try:
            target = _webhook_target(config["url"], self.server().push_allow, _resolve_host)
        except InvalidParamsError as refused:
            return "refused", f"{config['url'][:80]}: {refused.message}", None
        try:
            status = self._post(config, target, body, trace)
        except OSError as exc:
            import ssl
            why = f"{config['url'][:80]}: {str(exc) or type(exc).__name__}"
            final = isinstance(exc, ssl.SSLCertVerificationError)   # would fail again: no retry
            return ("failed" if final else "retry"), why, None
        if 200 <= status < 300:
            return "delivered", "", status
        why = f"{config['url'][:80]}: HTTP {status}"     # 3xx (never followed), 4xx: final
        return ("retry" if status >= 500 else "failed"), why, status

    def _post(self, config, target, body, trace):
        """POST to a vetted address of ``target``: the status, within push_timeout. The header
        values were checked when the config was made (the trace's when they were parsed or made)."""
        import socket
        scheme, host, port, path, addresses = target
        authority = f"[{host}]" if ":" in host else host
        if port != (443 if scheme == "https" else 80):
            authority += f":{port}"
        lines = [f"POST {path} HTTP/1.1", f"Host: {authority}",
                 "Content-Type: application/a2a+json", f"Content-Length: {len(body)}",
                 f"User-Agent: a2a_min/{__version__}", "Connection: close"]
        auth = config.get("authentication") or {}
        value = f"{auth.get('scheme', '')} {auth.get('credentials', '')}".strip()
        if value:
            lines.append(f"Authorization: {value}")
        if config.get("token"):
            lines.append(f"X-A2A-Notification-Token: {config['token']}")
        lines += [f"{name}: {value}" for name, value in (trace or {}).items()]
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        deadline = time.monotonic() + self.limits["push_timeout"]
        error = OSError("no address to connect to")
        for address in addresses:              # the first that accepts a connection in time
            sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)  # TCP
            try:
                sock.settimeout(_time_left(deadline))
                sock.connect((address, port))
                break
            except OSError as exc:
                sock.close()
                error = exc
        else:
            raise error
        try:
            if scheme == "https":              # the socket is connected: TLS cannot re-resolve
                sock.settimeout(_time_left(deadline))   # the whole handshake, not each read
                if self.tls is None:
                    import ssl
                    self.tls = self.server().push_tls_context or ssl.create_default_context()
                sock = self.tls.wrap_socket(sock, server_hostname=host)
            view = memoryview(request)
            while view:                        # sendall() within the deadline: a receiver
                sock.settimeout(_time_left(deadline))   # that reads slowly gets no more time
                view = view[sock.send(view):]
            return _read_status(sock, deadline, self.limits["push_max_response"])
        finally:
            sock.close()


# =============================================================================
# 10. The server
# =============================================================================
#
# The Server ties the protocol together. It is wiring: it keeps the task store
# and its live tasks (_LiveTasks), the card, the hosts and origins it answers,
# and the webhooks' delivery, and opens two doors: handle_http() for every
# host adapter, call() for every binding. The operations are above it.


# -- the agent card (section 8.1) ----------------------------------------------------

class _Card:
    """A server's agent card: fixed fields, added interfaces, the signer
    (section 8.4), and the card as last served (_card_response)."""

    __slots__ = "fields", "interfaces", "signer", "max_age", "cache", "since", "accepts"

    def __init__(self, name, description, version, streaming, push_notifications, extended,
                 input_modes, output_modes, skills, auth, required_extensions, extensions,
                 card, signer, max_age):
        fields = {
            "name": name, "description": description, "version": version,
            "capabilities": {"streaming": bool(streaming),
                             "pushNotifications": bool(push_notifications),
                             "extendedAgentCard": extended},
            "defaultInputModes": list(input_modes), "defaultOutputModes": list(output_modes),
            "skills": skills or [{
                "id": "chat", "name": "Chat", "description": description, "tags": ["chat"]}],
        }
        schemes = getattr(auth, "security_schemes", None)   # (and security_requirements:
        if schemes:                                         # the scopes, of an OAuth2 hook)
            fields["securitySchemes"] = schemes
            if not getattr(auth, "anonymous", False):       # (else none are required)
                fields["securityRequirements"] = getattr(auth, "security_requirements", None) \
                    or [{"schemes": {s: {"list": []}}} for s in schemes]
        declared = [{"uri": uri, "required": True} for uri in required_extensions]
        declared += [dict(e) for e in extensions if e["uri"] not in required_extensions]
        if declared:
            fields["capabilities"]["extensions"] = declared
        self.fields, self.signer = fields | dict(card or {}), signer
        types = frozenset(map(_media_type, [      # the media types a message's parts may be
            *self.fields["defaultInputModes"],
            *(mode for skill in self.fields["skills"] for mode in skill.get("inputModes", ()))]))
        self.accepts = None if "*/*" in types or not types else types   # (None: anything)
        self.interfaces = []          # (protocolBinding, url) beyond JSON-RPC and HTTP+JSON
        self.max_age = max_age        # Cache-Control max-age, seconds
        self.cache = None             # (base URL, body, ETag, Last-Modified) as last served
        self.since = time.time()      # Last-Modified: the card is the server's since its start


class Server:
    """An A2A server: one agent, its card, a task store, and the operations.

    ``agent`` is the callable of section 5. The card is built from ``name``,
    ``description``, ``version``, ``skills`` and the other keyword arguments;
    ``card`` (a dict) overrides any of its fields. Keyword arguments:
      streaming             serve the streaming operations (True)
      public_url            base URL for the card (default: the bound address)
      rpc_path              where JSON-RPC is served ("/")
      assume_version        A2A-Version when a request sends none (None: 0.3, refused)
      compat                "0.3": serve A2A 0.3 clients too (a2a_v03.py)
      required_extensions   extension URIs every SendMessage must announce
      extensions            more AgentExtension dicts for the card
      store                 a TaskStore (default: in memory with the limits)
      extended_card         a dict, or callable(CallContext) -> dict
      card_max_age          Cache-Control max-age of the card, seconds (300)
      card_signer           sign the card (section 8.4; needs public_url):
                            a2a_signing.signer_from_pem() makes one
      authenticate          callable(CallContext) -> principal, raising
                            AuthenticationRequiredError (BearerAuth, ApiKeyAuth)
      push_notifications    deliver task events to webhooks (False)
      push_allow            non-global hosts webhooks may reach ("127.0.0.1/32")
      push_tls_context      the ssl.SSLContext for https webhooks
      trust_forwarded       the client is the last X-Forwarded-For (False)
      single_path           serve all under one path: POST JSON-RPC, GET card
      access_log            a line per request to "a2a_min.access" (False;
                            "json": one JSON object a line)
      tracing               read and pass on W3C trace context (True);
                            "opentelemetry" or a TracerProvider: spans too (a2a_otel)
      metrics               count requests, serve GET /metrics (Prometheus;
                            the companion a2a_metrics) (False)
      observers             more Observers of its requests, turns and webhooks
      console               the browser console of a2a_console.py (True)
      allowed_hosts         more Host names than localhost, the bound address
                            and public_url's ("*": any; others get 421)
      cors_origins          web origins allowed to call it (CORS; "*": any)
      and the limits of DEFAULT_LIMITS.
    """

    def __init__(self, agent, *, name="a2a_min agent", description="An A2A agent.",
                 version="1.0.0", skills=None, streaming=True, public_url=None,
                 rpc_path="/", assume_version=None, required_extensions=(), extensions=(),
                 store=None, extended_card=None, card=None, card_max_age=300,
                 input_modes=("text/plain",), output_modes=("text/plain",),
                 authenticate=None, push_notifications=False, push_allow=(),
                 push_tls_context=None, single_path=None, trust_forwarded=False, compat=None,
                 console=True, access_log=False, card_signer=None, allowed_hosts=(),
                 cors_origins=(), tracing=True, metrics=False, observers=(), **limits):
        self.limits = limits = _limits(limits)
        self.agent = agent
        self.store = store if store is not None else TaskStore(   # (bounded by the limits)
            max_bytes=limits["max_store_bytes"], **{name: limits[name] for name in _STORE_LIMITS})
        self.single_path = f"/{single_path.strip('/')}" if single_path else None
        self.rpc_path = self.single_path or f"/{rpc_path.strip('/')}"
        self._card_path = (self.single_path or "").rstrip("/") + _CARD_PATH
        self.assume_version, self.public_url = assume_version, public_url
        self._streams = {}                  # caller -> streams open (max_caller_streams)
        self._lock = threading.Lock()
        self.closing = threading.Event()   # set by shutdown(): streams end, with a retry hint
        self._refusals = {}                 # limit (or error reason) -> requests refused by it
        self._gauges = {}                   # host name -> callable: its connections, threads
        self.authenticate, self.trust_forwarded = authenticate, trust_forwarded
        self.push_allow, self.push_tls_context = _parse_allow(push_allow), push_tls_context
        self._pusher = None                 # the _PushDelivery, started on first use
        self.compat = _compat(compat)       # the 0.3 translation (a2a_v03), or None
        self.console = console              # the page at GET /
        self.tracing = tracing              # W3C trace context read, and sent on (CallContext.trace)
        self.metrics = None                 # GET /metrics, and what it counts (a2a_metrics)
        self.observers = _observers(self, access_log, tracing, metrics, observers)
        self._named = set()                 # names of Host headers we answer to (lower case)
        self._any_address = None            # any IP address in Host will do, unless False
        self._hosts = {}                    # Host header -> True, for those seen and accepted
        self.allow_hosts(("localhost",) + tuple(allowed_hosts))
        if public_url:                      # (its host[:port]; allow_hosts reads the name)
            from urllib.parse import urlsplit
            self.allow_hosts([urlsplit(public_url).netloc.rpartition("@")[2]])
        self.cors_origins = frozenset(o.strip().rstrip("/").lower() for o in cors_origins)
        if not hasattr(self.store, "claim_send"):      # (a store of your own, without it)
            limits["idempotency_window"] = 0
        elif limits["idempotency_window"]:
            extensions = (*extensions, {"uri": IDEMPOTENT_SEND, "description": "Announced, "
                          "a send repeated with the same messageId runs nothing: it is answered "
                          "as the first was (docs/idempotency.md)."})
        self.live = getattr(self.store, "live_tasks", _LiveTasks)(    # (a shared store's own)
            agent, self.store, limits, self.observers, tracing, self.closing,
            self._push_event if push_notifications else None,
            functools.partial(_add_inline_push, self))
        self.extended_card, self.required_extensions = extended_card, tuple(required_extensions)
        self.mounts, self.mounted = {}, None   # tenant -> Server; (Server, tenant) it is mounted at
        self.card = _Card(name, description, version, streaming, push_notifications,
                          extended_card is not None, input_modes, output_modes, skills,
                          authenticate, required_extensions, extensions, card, card_signer,
                          card_max_age)
        self._check_cards(card_signer)

    def _check_cards(self, signer):
        """The cards are valid as built, and a signer signs: now, not at the first request. A
        signed card is built from public_url alone (section 8.4), never from a request's headers:
        no request can have the server sign what it chose."""
        _check_card(self.agent_card())
        if self.extended_card is not None and self.authenticate is None:
            raise ValueError("the extended card is for authenticated callers (section 13.3), "
                             "and this server authenticates none: give authenticate= too, "
                             "e.g. BearerAuth(tokens, anonymous=True) to serve the rest to all")
        if isinstance(self.extended_card, dict):
            _check_card({**self.agent_card(), **self.extended_card})
        if signer:
            if not self.public_url:
                raise ValueError("a signed card needs public_url (the URL clients reach this "
                                 "server at): the card signed must not depend on the request")
            _card_response(self, {}, self.public_url)   # signed now: a failing signer fails now

    # -- the doors: every host adapter calls handle_http, every binding call ---

    handle_http = _handle_http  # one HTTP request, answered ("Bindings")
    call = _call                # one operation, from any binding ("Operations")
    error_response = _error_response    # an error answered before handle_http ("Bindings")

    # -- the agent card (section 8) -----------------------------------------

    def agent_card(self, base_url=None):
        """The public agent card, as a dict, for a server reached at ``base_url``."""
        base = (self.public_url or base_url or "http://127.0.0.1:8000").rstrip("/")
        ours = [("JSONRPC", base + self.rpc_path)] + (
            [] if self.single_path else [("HTTP+JSON", base)])
        interfaces = [{"url": url, "protocolBinding": binding, "protocolVersion": version}
                      for version in (PROTOCOL_VERSION, PREVIEW_VERSION)     # (1.0's first)
                      for binding, url in ours + self.card.interfaces]
        if self.mounted:                       # the interfaces of the server it is mounted at
            front, tenant = self.mounted
            interfaces = [{**i, "tenant": tenant}
                          for i in front.agent_card(base_url)["supportedInterfaces"]]
        fields = self.card.fields        # (name and description first: **fields keeps their place)
        return {"name": fields["name"], "description": fields["description"],
                "supportedInterfaces": interfaces, **fields}

    def mount(self, tenant, server):
        """Serve another agent (a Server) here as the tenant ``tenant`` (section 3.2.5): each
        request that names it, on every binding (/{tenant}/... over HTTP+JSON, the ``tenant`` field
        over JSON-RPC and gRPC), is that server's, with its own authentication, limits and store;
        its card, at /{tenant}/.well-known/agent-card.json, lists this server's interfaces with the
        tenant. /.well-known/ai-catalog.json lists every agent served here."""
        if not tenant or set(tenant) - _NAME_CHARS or tenant in self.mounts or server.mounted \
                or server is self or server.compat:
            raise ValueError(f"mount({tenant!r}): a new tenant name of lower-case letters, "
                             "digits and '-._', and a Server mounted nowhere else, speaking "
                             "1.0 alone (0.3 has no tenants)")
        self.mounts[tenant], server.mounted, server.card.cache = server, (self, tenant), None

    def add_interface(self, binding, url):
        """Advertise one more interface in the card (e.g. "GRPC", "host:port")."""
        self.card.interfaces.append((binding, url))
        self.card.cache = None

    def add_extension(self, extension):
        """Declare one more AgentExtension (a dict with "uri") in the card."""
        declared = self.card.fields["capabilities"].setdefault("extensions", [])
        if all(e["uri"] != extension["uri"] for e in declared):
            declared.append(dict(extension))
        self.card.cache = None

    def allow_hosts(self, names, bound=False):
        """Answer requests whose Host header names one of ``names`` (no port;
        "*": any). ``bound=True``: the address a host adapter bound to; another
        IP address is then refused, unless it listens on all (see "Who may call")."""
        for name in names:
            name = _host_name(str(name))
            if bound and name in ("", "0.0.0.0", "[::]"):
                self._any_address = True          # every address: any IP in Host will do
                continue
            if bound and self._any_address is None:
                self._any_address = False
            if bound and name in ("127.0.0.1", "[::1]"):
                self._named.update(("127.0.0.1", "[::1]"))
            self._named.add(name)
        self._hosts.clear()

    @property
    def capabilities(self):
        return self.card.fields["capabilities"]

    def _push_event(self, owner, task, event):
        """Channel hook: hand a task event to the task's webhooks, in its
        caller's queue (deliveries are fair between callers: section 8)."""
        configs = self.store.configs(task["id"])
        if not configs:
            return
        pusher = self._pusher
        if pusher is None:
            with self._lock:
                if self._pusher is None:
                    self._pusher = _PushDelivery(self)
                pusher = self._pusher
        channel = self.live.channels.get(task["id"])    # the running turn's trace goes along
        turn = channel and channel.active or _TURN.get(None)
        trace = turn.trace if turn is not None and self.tracing else None
        pusher.submit(owner, configs, event, task, trace and trace.headers())

    @property
    def push_stats(self):
        """Totals of webhook deliveries: delivered, failed, retried, refused, dropped,
        paused (dropped, their destination paused); and paused_destinations (held now)."""
        return self._pusher.totals() if self._pusher else {
            **dict.fromkeys(_PUSH_TOTALS, 0), "paused_destinations": 0}

    def push_stats_by_caller(self):
        """Webhook delivery counters per caller (the principal, or an anonymous client's address):
        {caller: {"queued", "sent" (2xx), "failed", "refused", "retried", "dropped", "paused",
        "waiting" (queued now)}}, for the push_callers callers most recently active."""
        return self._pusher.by_caller() if self._pusher else {}

    # -- what the limits are doing, and stopping ----------------------------------

    def stats(self):
        """The counters behind every cap and budget, as one dict: the store, the
        live tasks, SubscribeToTask streams and all streams, agent threads, refusals per limit,
        hosts' connections, webhooks."""
        with self.live.lock:
            live = len(self.live.channels)
            subscribers = sum(channel.followers for channel in self.live.channels.values())
        workers = self.live.workers.count if self.live.workers else 0
        with self._lock:
            streams = sum(self._streams.values())       # (of every kind: max_caller_streams)
        hosts = {name: gauge() for name, gauge in list(self._gauges.items())}   # (a copy)
        try:
            store = self.store.stats() if hasattr(self.store, "stats") else {}
        except Exception as error:      # (a store that cannot say now: never the caller's error)
            store = {"unavailable": getattr(error, "message", None) or type(error).__name__}
        return {"store": store, "live_tasks": live, "subscribers": subscribers, "streams": streams,
                "agent_threads": workers, "refused": dict(self._refusals), "hosts": hosts,
                "push": {**self.push_stats, "by_caller": self.push_stats_by_caller()}}

    def count_refusal(self, error):
        """Count a request refused by a limit (named in the error, if not its
        reason): what stats() says; a binding answering an error itself calls it."""
        limit = error.metadata.get("limit")
        if isinstance(limit, str) or isinstance(
                error, (PayloadTooLargeError, TaskStoreFullError, ServerBusyError)):
            key = limit if isinstance(limit, str) else error.reason
            with self._lock:
                self._refusals[key] = self._refusals.get(key, 0) + 1

    def shutdown(self, grace=10.0):
        """Stop within ``grace`` seconds: turns and webhook deliveries may finish, the streams that
        follow one to its end, the others at once with a ``retry:`` hint; then the webhook threads
        end, and the agent's ``close()`` is called, if any. Hosts call it when they stop. Returns
        {"turns", "deliveries"} left undone."""
        self.closing.set()
        self.live.wake_streams()
        deadline = time.monotonic() + grace
        while True:
            turns = self.live.running()
            deliveries = self._pusher.pending() if self._pusher else 0
            if not (turns or deliveries) or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if turns or deliveries:
            _log().warning("shut down with %d turns still running and %d webhook deliveries "
                           "queued", turns, deliveries)
        if turns:
            self.live.cut()
        if self._pusher:                       # its threads end (what waits on a retry: dropped)
            self._pusher.stop()
        close = getattr(self.agent, "close", None)
        if close:                              # what the agent still runs ends (serve --exec)
            close()
        for mounted in self.mounts.values():   # the agents mounted here, in the time left
            mounted.shutdown(deadline - time.monotonic())
        return {"turns": turns, "deliveries": deliveries}


# =============================================================================
# 11. Running on an event loop
# =============================================================================
#
# Everything above is synchronous: a thread calls handle_http() and may wait
# in it. A host on an asyncio event loop must never wait: one blocked call
# stops every connection. The core gives it three hooks, made asyncio here:
#
#   CallContext.spawn      runs ``async def`` agents on the loop (_Spawner),
#                          each turn driven by _drive_async
#   Response.pending       SendMessage's answer while the turn runs, told when
#                          it ends (_LoopAnswer brings that back to the loop)
#   stream.poll()/watch()  a stream read without waiting (_LoopStream)
#
# On Python 3.12+ an agent's task starts eagerly, so a turn that never waits
# has ended before handle_http() returns. Callbacks take arguments, not
# closures: nothing a request makes is left in a reference cycle.

_EAGER_TASKS = sys.version_info >= (3, 12)      # asyncio.Task(..., eager_start=True)


class _Spawner:
    """CallContext.spawn for a host on ``loop``: runs a coroutine there as a task, eagerly on
    Python 3.12+. asyncio holds a waiting task only weakly, so they are kept here, and let go of
    when their number has doubled (a done-callback each costs about 1 us a SendMessage)."""

    __slots__ = "loop", "tasks", "prune_at"

    def __init__(self, loop):
        self.loop, self.tasks = loop, set()
        self.prune_at = 64                      # prune the ended tasks at this many

    def __call__(self, coroutine):
        if _EAGER_TASKS:
            import asyncio
            task = asyncio.Task(coroutine, loop=self.loop, eager_start=True)
        else:
            task = self.loop.create_task(coroutine)
        if not task.done():
            tasks = self.tasks
            tasks.add(task)
            if len(tasks) >= self.prune_at:
                tasks.difference_update([t for t in tasks if t.done()])
                self.prune_at = max(64, 2 * len(tasks))


class _LoopThread:
    """An event loop in a daemon thread, for the async agents of a threaded host."""

    def __init__(self):
        import asyncio
        self.loop = asyncio.new_event_loop()
        self.spawner = _Spawner(self.loop)
        threading.Thread(target=self.loop.run_forever, name="a2a-asyncio", daemon=True).start()

    def spawn(self, coroutine):
        self.loop.call_soon_threadsafe(self.spawner, coroutine)


def _call_on(loop, fn, *args):
    """Call ``fn(*args)`` on ``loop``'s thread: now if this is it, else soon."""
    import asyncio
    try:
        here = asyncio.get_running_loop() is loop
    except RuntimeError:
        here = False
    if here:
        fn(*args)
    else:
        loop.call_soon_threadsafe(fn, *args)


class _LoopAnswer:
    """Follows a Response.pending on ``loop``: ``fn(response, *args)`` is called
    there with the real Response once the turn has ended or its deadline passed
    (a timer armed after the loop's next pass, when most turns have ended)."""

    __slots__ = "loop", "thread", "response", "fn", "args", "timer"

    def __init__(self, loop, response, fn, *args):
        self.loop, self.response, self.fn, self.args = loop, response, fn, args
        self.thread = threading.get_ident()    # the loop's: this runs on it
        self.timer = None                      # the deadline's, once armed
        response.pending.add_done_callback(self._done)
        loop.call_soon(self._arm)

    def _arm(self):
        pending = self.response.pending
        if not pending.done():
            self.timer = self.loop.call_later(pending.deadline - time.monotonic(), pending.expire)

    def _done(self, pending):
        if threading.get_ident() == self.thread:
            self._answer()
        else:                                  # a worker ended a sync agent's turn
            self.loop.call_soon_threadsafe(self._answer)

    def _answer(self):
        if self.timer:
            self.timer.cancel()
        response = self.response
        self.fn(response.render(response.pending), *self.args)


async def _drive_async(live, result, turn):
    """_LiveTasks.drive and drain for an async agent, on the event loop. Its
    writes run here, unless the store is shared (a write may wait for another
    process's): then on a store thread, through _LiveTasks.off_loop's ``run``
    (a shared store's StoreThreads), and a plain answer through its ``ended_on_loop``."""
    # (RequestContext.current(), in this task; taken back at the end, or the
    # task's context would hold the turn that holds the task: a cycle to collect)
    running = _TURN.set(turn.ctx) if live.tracing else None
    off_loop = live.off_loop
    write = _write_here if off_loop is None else off_loop.run
    try:
        if isinstance(result, AsyncGeneratorType):
            # Each step runs here until the agent yields or waits: what it yields without waiting
            # is held (turn.batch) and written at once when it waits or ends, so its chunks cost
            # one commit and one write together, and none waits on an agent that is waiting.
            turn.batch = []
            try:
                while not turn.done:
                    step = result.__anext__()
                    try:
                        waiting = step.send(None)      # until it yields, or waits
                    except StopIteration as made:      # it yielded, without waiting
                        turn.emit(made.value, chunked=True)
                        continue
                    except StopAsyncIteration:
                        break
                    if turn.batch:                     # it waits: out with what it made
                        await write(turn.flush)
                    try:
                        item = await _Resumed(step, waiting)
                    except StopAsyncIteration:
                        break
                    turn.emit(item, chunked=True)
            finally:
                await result.aclose()
            await write(turn.finish)
        else:
            answer = await result
            if off_loop is None or not off_loop.ended_on_loop(turn, answer):
                await write(turn.complete, answer)
    except Exception as exc:
        await write(turn.fail, exc)
    finally:
        if running:
            _TURN.reset(running)


async def _write_here(fn, *args):
    """_drive_async's write with no shared store: here, on the loop."""
    fn(*args)


class _Resumed:
    """The rest of an async generator's step that began outside its task (_drive_async sends it the
    first None itself) and now waits on ``waiting``. Awaited, the task waits on that as if it had
    run the step from the start: the result, an error or a cancellation reach the agent, and the
    step's output (StopIteration's value) is the await's."""

    __slots__ = "step", "waiting"

    def __init__(self, step, waiting):
        self.step, self.waiting = step, waiting

    def __await__(self):
        step, waiting = self.step, self.waiting
        while True:
            try:
                try:
                    sent = yield waiting           # (what the agent awaits, to the task)
                except BaseException as error:     # thrown into the task: into the agent
                    waiting = step.throw(error)
                else:
                    waiting = step.send(sent)
            except StopIteration as made:
                return made.value


async def _answer_async(response):
    """The real Response of one that may be pending, awaited."""
    if response.pending is None:
        return response
    import asyncio
    future = asyncio.get_running_loop().create_future()
    _LoopAnswer(future.get_loop(), response, _settle_future, future)
    return await future


def _settle_future(response, future):
    if not future.done():
        future.set_result(response)


class _LoopStream:
    """A Response.stream read on an event loop: ``async for`` gives its byte chunks, waiting
    without blocking for news or the keep-alive interval. It watches the stream for its whole life
    and keeps one keep-alive timer, moved on as chunks go rather than made again for each: with ten
    thousand streams, a timer and a watch made per event are garbage the collector spends its time
    on (and a timer cancelled waits in the loop's queue). close() when done: it stops watching."""

    def __init__(self, stream, loop):
        self.stream, self.loop = stream, loop
        self.keepalive = getattr(stream, "keepalive", None)    # (None: no keep-alives)
        self.idle_at = loop.time() + (self.keepalive or 0)    # a keep-alive is due then
        if getattr(stream, "begin_at", None):      # (or the first event, sooner: _Follower)
            self.idle_at = min(self.idle_at, stream.begin_at)   # (loop.time() is monotonic)
        self.waiter = None                         # what a waiting __anext__ awaits
        self.news = False                          # woken since the last look began
        self.timer = None
        self.wake = functools.partial(_call_on, loop, self._woken, False)
        stream.watch(self.wake)

    def __aiter__(self):
        return self

    async def __anext__(self):
        stream = self.stream
        try:
            chunk = None
            if self.news or not getattr(stream, "dry", False):   # (else nothing came since
                self.news = False                                # its last look found nothing)
                chunk = stream.poll()
            while chunk is None:                   # (woken by news that was already read)
                idle = await self._wait()
                self.news = False
                chunk = stream.poll(idle=idle)
        except StopIteration:
            raise StopAsyncIteration from None
        if self.keepalive is not None:
            self.idle_at = self.loop.time() + self.keepalive
        return chunk

    async def _wait(self):
        """Until news (False) or ``keepalive`` seconds without a chunk (True:
        the host writes a keep-alive, to find out whether its client is still there)."""
        self.waiter = self.loop.create_future()
        if self.timer is None and self.keepalive is not None:
            self.timer = self.loop.call_at(self.idle_at, self._woken, True)
        try:
            return await self.waiter
        finally:
            self.waiter = None

    def _woken(self, idle):
        self.news = self.news or not idle
        if idle:
            self.timer = None
            if self.loop.time() < self.idle_at:    # chunks went meanwhile: not yet
                self.timer = self.loop.call_at(self.idle_at, self._woken, True)
                return
        if self.waiter and not self.waiter.done():
            self.waiter.set_result(idle)

    def close(self):
        self.stream.unwatch(self.wake)
        self.wake = None                           # (it holds self: no cycle left behind)
        if self.timer:
            self.timer.cancel()
        self.stream.close()


# =============================================================================
# 12. Adapters: HTTP/1.1, the threaded and asyncio servers, WSGI, ASGI, Lambda
# =============================================================================
#
# A host adapter turns its world into handle_http() arguments and writes the
# Response back. It makes no protocol decision.
#
# Both servers bundled here read requests with one reader, _RequestReader: a pure object (no
# sockets) that says whether the bytes received so far hold a whole request yet (RFC 9112). It
# refuses whatever two HTTP parsers could read as ending in different places, the way a request is
# smuggled past a proxy (RFC 9112 section 11.2), and every refusal closes the connection: after a
# framing error nobody knows where the next request starts. Limits are counted in bytes as they
# arrive: the head (max_header_bytes, max_headers), the body (max_body_bytes, checked against
# Content-Length before it is read), a chunk-size line and the trailers. Time is bounded per
# request, not per read: a request must arrive whole within ``timeout`` seconds of the connection
# being ready for it, or it gets 408 and the connection closes (a client trickling a byte a second
# is cut off too).


class _BadRequest(Exception):
    """A request that cannot be served: ``status`` (400, 408, 413, 414, 431,
    501), ``error`` (the A2AError to show, in the binding's shape) and
    ``path`` (the request's path, when its head was read; else None)."""

    def __init__(self, status, error, path=None):
        super().__init__(error.message)
        self.status, self.error, self.path = status, error, path


class _HTTPRequest:
    """One request read by _RequestReader: ``method``, ``target`` (``path``, then ``query`` after a
    "?"), ``version``, ``headers`` (lower-case names; repeated ones joined with ", "), ``body``
    (bytes, de-chunked; None while it is read) and ``keep_alive``."""

    __slots__ = "method", "target", "path", "query", "version", "headers", "body", "keep_alive"

    def __init__(self, method, target, version, headers, keep_alive):
        self.method, self.target, self.version, self.headers = method, target, version, headers
        self.path, _, self.query = target.partition("?")
        self.body, self.keep_alive = None, keep_alive

    def keeps(self, response):
        """Is the connection kept after ``response``? (Not after a stream to an
        HTTP/1.0 client, which cannot read chunks: the close ends it.)"""
        return self.keep_alive and (response.stream is None or self.version == "HTTP/1.1")

    def arguments(self, scheme, local, peer):
        """handle_http's arguments: the base URL is ``scheme``, then Host or ``local``."""
        return (self.method, self.path, self.query, self.headers, self.body,
                scheme + (self.headers.get("host") or local), peer)


# Characters of an RFC 9110 token (a method, a header name).
_TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_NOT_TOKEN = str.maketrans("", "", _TOKEN_CHARS)
# Control bytes never allowed in a head: all but HTAB (allowed in values), as in a webhook's.
_CONTROLS = str.maketrans("", "", _HEADER_CONTROLS.decode("latin-1"))
# Methods and header names seen in most requests: valid tokens, not checked again.
_METHODS = frozenset({"GET", "POST", "HEAD", "DELETE", "OPTIONS", "PUT", "PATCH"})
_HEADER_NAMES = frozenset({
    "host", "content-type", "content-length", "transfer-encoding", "connection", "accept",
    "accept-encoding", "user-agent", "a2a-version", "a2a-extensions", "authorization",
    "last-event-id", "expect", "cookie", "x-forwarded-for", "cache-control", "origin"})
_NOT_HEX = str.maketrans("", "", "0123456789abcdefABCDEF")
_ODD_STARTS = (b"\r", b"\x16")       # what starts an empty line, or a TLS record
_MAX_CHUNK_LINE = 1024              # a chunk-size line, extensions included
_MAX_CHUNKS = 16384                 # chunks in one body: each costs a turn of the reader
# The registered transfer codings (RFC 9110 section 18.8); of them this server
# decodes chunked alone, and answers 501 to the others, and to unknown ones.
_KNOWN_CODINGS = frozenset({"chunked", "compress", "deflate", "gzip", "x-compress", "x-gzip"})


class _RequestReader:
    """Reads HTTP/1.1 requests from the front of a byte buffer; no I/O.

    ``read(buffer)`` (a bytearray of what the connection has received) returns the next whole
    request as an _HTTPRequest, or None while more bytes are needed. It takes what it has read off
    the front of the buffer as it goes (the head, then each chunk of a chunked body), so a body is
    held once and feeding it a byte at a time costs no more than feeding it whole; what is left is
    the start of the next request. A request that can never be valid raises _BadRequest; the host
    answers it and closes the connection. ``expects_continue`` is true while the body of a request
    whose head said "Expect: 100-continue" is awaited: the host answers "100 Continue" and sets it
    false (once answered, never again for that request).
    """

    def __init__(self, max_header_bytes=65536, max_headers=100,
                 max_body_bytes=DEFAULT_LIMITS["max_body_bytes"]):
        self.max_header_bytes, self.max_headers = max_header_bytes, max_headers
        self.max_body_bytes = max_body_bytes
        self._head = None        # the _HTTPRequest whose head is read, until its body is
        self._scan = 0           # where to look again for the end of the head
        self._length = None      # Content-Length, or None for a chunked body
        self._chunks = None      # a chunked body so far: [body, chunks, in trailers, trailer bytes]
        self.expects_continue = False

    def read(self, buffer):
        request = self._head
        if request is None:
            request = self._read_head(buffer)
            if request is None:
                return None
        length = self._length
        if length == 0:                     # (most requests: a GET)
            body = b""
        elif length is not None:
            if len(buffer) < length:
                return None
            body = bytes(buffer[:length])
            del buffer[:length]
        else:
            body = self._dechunk(buffer)
            if body is None:
                return None
        self._head = None
        self.expects_continue = False
        request.body = body
        return request

    def _refuse(self, status, message, error=InvalidRequestError, **kw):
        path = self._head.path if self._head else None
        raise _BadRequest(status, error(message, **kw), path)

    # -- the head (RFC 9112 sections 2-5) ------------------------------------

    def _fields(self, lines):
        """The header fields of a head's ``lines`` (the request line first), by
        lower-case name; one sent twice is joined with ", " but Host."""
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            lower = name.lower()
            if (not sep or lower not in _HEADER_NAMES and (not name or name.translate(_NOT_TOKEN))
                    or not value.isprintable() and len(value.translate(_CONTROLS)) != len(value)):
                # Also: "Name : value" and a folded line (one that starts with a
                # space), both of which other parsers read differently; and
                # control characters (a bare CR, a NUL) anywhere in the line.
                self._refuse(400, f"malformed header line {line[:40]!r}: send 'Name: value', "
                             "with no space before the colon, no folded lines and no control "
                             "characters")
            value = value.strip(" \t")
            if lower in headers:
                if lower == "host":                # (which one names the server? RFC 9112 3.2)
                    self._refuse(400, "the request has two Host headers: send one")
                value = f"{headers[lower]}, {value}"
            headers[lower] = value
        return headers

    def _read_head(self, buffer):
        """The request line and headers, once the blank line after them is in ``buffer`` (RFC 9112
        sections 3 and 5), checked as the theory above says; None while they are still arriving."""
        if buffer[:1] in _ODD_STARTS:
            while buffer.startswith(b"\r\n"):
                del buffer[:2]                    # empty lines before a request: ignored
            if buffer.startswith(_TLS_RECORD):   # a TLS client, on a plain HTTP port
                self._refuse(400, "this port speaks plain HTTP, not TLS: use http://")
        end = buffer.find(b"\r\n\r\n", self._scan - 3 if self._scan > 3 else 0)  # the blank line
        if end < 0:
            # ... or one ended by a bare LF ("\n\n", or "\n\r\n" not after a CR),
            # which no CRLF blank line may follow
            again = max(0, self._scan - 2)
            if buffer.find(b"\n\n", again) >= 0 or buffer.find(b"\n\r\n", again) >= 0:
                self._bare_lf()
            self._scan = len(buffer)
            if len(buffer) > self.max_header_bytes:
                self._too_long(buffer)
            return None
        size = end + 4
        if size > self.max_header_bytes:
            self._too_long(buffer)
        text = buffer[:end].decode("latin-1")
        lines = text.split("\r\n")
        if text.count("\n") != len(lines) - 1:   # an LF that is not a CRLF's
            self._bare_lf()
        if len(lines) - 1 > self.max_headers:
            self._refuse(431, f"the request has more than {self.max_headers} header lines",
                         metadata={"limit": "max_headers", "value": self.max_headers})
        request_line = lines[0]
        parts = request_line.split(" ")
        if (not request_line.isprintable() or len(parts) != 3 or not parts[1]
                or parts[0] not in _METHODS and (not parts[0] or parts[0].translate(_NOT_TOKEN))
                or parts[2] not in ("HTTP/1.1", "HTTP/1.0")):
            self._refuse(400, "the request line is not 'METHOD /path HTTP/1.1'")
        headers = self._fields(lines)
        method, target, version = parts
        connection = headers.get("connection")
        keep = version == "HTTP/1.1" if connection is None else "close" not in connection.lower() \
            and (version == "HTTP/1.1" or "keep-alive" in connection.lower())
        request = self._head = _HTTPRequest(method, target, version, headers, keep)
        del buffer[:size]
        self._scan = 0
        length = self._length = self._body_length(headers, version)
        if "host" not in headers and version == "HTTP/1.1":        # (RFC 9112 section 3.2)
            self._refuse(400, "an HTTP/1.1 request must name the host it is for: send a Host "
                         "header (Host: localhost:8000)")
        if length is None:
            self._chunks = [bytearray(), 0, False, 0]
        self.expects_continue = length != 0 and "expect" in headers and \
            headers["expect"].lower() == "100-continue"
        return request

    def _bare_lf(self):
        # RFC 9112 section 2.2 lets a server take a bare LF for CRLF; proxies disagree on it, and a
        # request two parsers split in two places is how requests are smuggled, so it is refused.
        self._refuse(400, "a line of the request head ends in a bare LF: end every line "
                     "with CRLF (\\r\\n)")

    def _too_long(self, buffer):
        line_end = buffer.find(b"\n")
        limit = {"limit": "max_header_bytes", "value": self.max_header_bytes}
        if line_end < 0 or line_end > self.max_header_bytes:
            self._refuse(414, f"the request line is longer than {self.max_header_bytes} bytes; "
                         "send large parameters in a POST body", metadata=limit)
        self._refuse(431, f"the request head is longer than {self.max_header_bytes} bytes",
                     metadata=limit)

    def _body_length(self, headers, version):
        """Content-Length, 0 for no body, or None for a chunked body (RFC 9112 6.3)."""
        coding = headers.get("transfer-encoding")
        length = headers.get("content-length")
        if coding is not None:
            if length is not None:
                self._refuse(400, "the request has both Content-Length and Transfer-Encoding; "
                             "send one of them")
            if version == "HTTP/1.0":
                self._refuse(400, "HTTP/1.0 has no Transfer-Encoding; send Content-Length")
            codings = [c.strip(" \t").lower() for c in coding.split(",") if c.strip(" \t")]
            if "chunked" in codings[:-1]:         # (not last, or more than once)
                self._refuse(400, "chunked must be the last transfer coding, and appear once")
            if set(codings) <= _KNOWN_CODINGS and codings[-1:] != ["chunked"]:
                self._refuse(400, "a request body's last transfer coding must be chunked")
            if codings != ["chunked"]:
                self._refuse(501, f"transfer coding {coding!r} is not supported; send the body "
                             "with Content-Length or Transfer-Encoding: chunked")
            return None
        if length is None:
            return 0
        if "," in length:                          # repeated: the same value, or refused
            values = {v.strip(" \t") for v in length.split(",")}
            if len(values) != 1:
                self._refuse(400, f"the request has differing Content-Lengths: {length[:40]!r}")
            length = values.pop()
        if not (length.isascii() and length.isdigit()) or len(length) > 18:   # (stripped)
            self._refuse(400, f"Content-Length {length[:40]!r} is not a number of bytes")
        length = int(length)
        if length > self.max_body_bytes:
            self._refuse(413, f"the request body is {length} bytes; this server accepts at "
                         f"most {self.max_body_bytes}", PayloadTooLargeError,
                         metadata={"limit": self.max_body_bytes})
        return length

    # -- a chunked body (RFC 9112 section 7.1) ---------------------------------

    def _dechunk(self, buffer):
        """The body once the last chunk and the trailers are here, else None."""
        state = self._chunks
        body, chunks, trailers, trailer_bytes = state
        while True:
            line_end = buffer.find(b"\r\n")
            if line_end < 0:
                if len(buffer) > (self.max_header_bytes if trailers else _MAX_CHUNK_LINE):
                    self._refuse(400, "a chunk-size line or trailer is too long")
                state[1:] = chunks, trailers, trailer_bytes
                return None
            line = buffer[:line_end].decode("latin-1")
            if not line.isprintable() and len(line.translate(_CONTROLS)) != len(line):
                self._refuse(400, "a chunk-size line or trailer holds control characters")
            if trailers:                                 # after the last chunk
                del buffer[:line_end + 2]
                if not line:
                    return bytes(body)
                trailer_bytes += line_end + 2
                name, sep, _ = line.partition(":")
                if (not sep or not name or name.translate(_NOT_TOKEN)
                        or trailer_bytes > self.max_header_bytes):
                    self._refuse(400, "malformed or oversized trailer fields")
                continue
            digits, _, extension = line.partition(";")
            digits = digits.rstrip(" \t")
            if (not digits or len(digits) > 16 or digits.translate(_NOT_HEX)
                    or extension and "\"" in extension):
                self._refuse(400, f"malformed chunk size {line[:20]!r}: a chunk starts with its "
                             "size in hex digits and CRLF")
            n = int(digits, 16)
            if n == 0:
                del buffer[:line_end + 2]
                trailers = True                          # the last chunk; trailers follow
                continue
            if len(body) + n > self.max_body_bytes:
                self._refuse(413, f"the chunked body exceeds {self.max_body_bytes} bytes",
                             PayloadTooLargeError, metadata={"limit": self.max_body_bytes})
            if chunks >= _MAX_CHUNKS:
                self._refuse(400, f"the chunked body has more than {_MAX_CHUNKS} chunks; send "
                             "larger chunks, or Content-Length")
            data_end = line_end + 2 + n
            if len(buffer) < data_end + 2:
                state[1:] = chunks, trailers, trailer_bytes
                return None
            if buffer[data_end:data_end + 2] != b"\r\n":
                self._refuse(400, "chunk data must be followed by CRLF")
            body += buffer[line_end + 2:data_end]
            del buffer[:data_end + 2]
            chunks += 1


# -- TLS ---------------------------------------------------------------------------
#
# Production deployments MUST use HTTPS (specification section 7.1). ``tls=`` is an ssl.SSLContext
# of your own, or a dict of file names for a2a_cli.py's tls_context() (TLS 1.2 at least, no
# renegotiation; mutual TLS optional or required). A handshake happens on its connection, never on
# the accept loop, within a deadline for the whole of it: on the connection's own thread
# (threaded), or a step each time bytes arrive (asyncio's SSL protocol). A verified client
# certificate reaches the operations as CallContext.certificate. Plain HTTP sent to an HTTPS port
# gets a hint on the threaded server, which can look at a connection's first byte before the
# handshake; asyncio cannot.

_TLS_RECORD = b"\x16"                 # the first byte of a TLS handshake record
_PLAIN_ON_TLS_TEXT = b"This port speaks HTTPS: use https:// (curl https://...).\n"
_PLAIN_ON_TLS = (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(_PLAIN_ON_TLS_TEXT), _PLAIN_ON_TLS_TEXT))


def _tls_context(tls):
    """``tls=`` as an ssl.SSLContext: one given stays as it is (None too); a
    dict of file names is a2a_cli.tls_context()'s to load."""
    if not isinstance(tls, dict):
        return tls
    return _companion("a2a_cli", "tls= as file names").tls_context(tls)


def _tls_arguments(parser):
    """The --tls-* options of a2a_cli's and a2a_grpc's commands (their files: _tls_context)."""
    parser.add_argument("--tls-cert", metavar="FILE",
                        help="serve HTTPS with this certificate (PEM; the chain may follow)")
    parser.add_argument("--tls-key", metavar="FILE",
                        help="its private key (PEM), unless it is in the --tls-cert file")
    parser.add_argument("--tls-client-ca", metavar="FILE",
                        help="mutual TLS: accept client certificates this CA issued; callers "
                             "are their certificates' subjects, or URI or DNS names "
                             "(MutualTlsAuth)")
    parser.add_argument("--tls-client-cert", choices=("optional", "required"), default="optional",
                        help="with --tls-client-ca: 'optional' (the default: the public card "
                             "needs none) or 'required' for every connection")


def _tls_handshake(sock, context, deadline_after):
    """The TLS socket for an accepted connection, its handshake done within
    ``deadline_after`` seconds; None (the connection closed) if it was not:
    a client that never finishes, one that fails (an untrusted certificate,
    no common version), or plain HTTP, which is answered with a hint first."""
    import selectors
    import socket
    import ssl
    deadline = time.monotonic() + deadline_after
    tls = None
    try:
        sock.settimeout(deadline_after)
        first = sock.recv(1, socket.MSG_PEEK)      # (the byte stays for the handshake)
        if first != _TLS_RECORD:
            if first:                              # plain HTTP: say so, read what it sent
                sock.sendall(_PLAIN_ON_TLS)        # (a close with it unread would reset
                sock.shutdown(socket.SHUT_WR)      # the connection before the answer)
                while time.monotonic() < deadline and sock.recv(65536):
                    pass
            sock.close()
            return None
        tls = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        tls.setblocking(False)
        # (a selector, not select.select(): that fails for descriptors past 1023)
        with selectors.DefaultSelector() as waiting:
            waiting.register(tls, selectors.EVENT_READ)
            while True:
                try:
                    tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    waiting.modify(tls, selectors.EVENT_READ)
                except ssl.SSLWantWriteError:
                    waiting.modify(tls, selectors.EVENT_WRITE)
                left = deadline - time.monotonic()
                if left <= 0 or not waiting.select(left):
                    raise TimeoutError("the TLS handshake did not finish in time")
        tls.setblocking(True)
        return tls
    except (OSError, ValueError) as error:         # (ssl.SSLError is an OSError)
        _log().debug("TLS handshake failed: %s", error)
        (tls or sock).close()


# -- writing an answer -------------------------------------------------------------
#
# Both servers write the bytes _WritePlan decides, each its own way: sendall on the connection's
# thread; transport.write on the loop, waiting while the client reads slowly. A stream's head goes
# with what of it is ready (a short stream is one write), or waits for a new task's first event
# (_Follower's begin_at), else goes at once. Each event goes as it is made, never held for the
# next, and the end goes with the last. On a kept connection each is a chunk (RFC 9112 section
# 7.1); an HTTP/1.0 client cannot read chunks: it gets the bytes, and the close ends them. A chunk
# over _JOINED bytes goes a slice at a time, not copied (streams share it). A client that has read
# nothing since the last keep-alive (_unsent) is a client gone.

_LAST_CHUNK = b"0\r\n\r\n"
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"     # (curl waits for it before a large body)


class _WritePlan:
    """The bytes a Response with a stream goes out as, in order; no I/O. Write ``head`` (if any:
    else it waits), then the pieces ``put(chunk)`` gives for ``first`` (if not None) and each chunk
    after it until ``done`` or the stream's end, then ``end()``."""

    __slots__ = "stream", "out", "chunked", "sock", "unsent", "done", "head", "first"

    def __init__(self, response, close, date, sock):
        self.stream, self.chunked, self.sock = response.stream, not close, sock
        self.out = _response_head(response, close, date)   # what goes with the next write
        self.unsent, self.done, self.head = 0, False, b""  # (unsent at the last keep-alive)
        try:
            self.first = response.stream.poll() if hasattr(response.stream, "poll") else None
        except StopIteration:
            self.first = None
        if self.first is None and not getattr(response.stream, "begin_at", None):
            self.head, self.out = self.out, b""

    def put(self, chunk):
        """The pieces to write now for ``chunk``: none when it ends the stream
        (it goes with end()). ConnectionAbortedError (a connection lost) when
        the client has read nothing since the last keep-alive."""
        if chunk is _KEEPALIVE:
            self.unsent = _unsent(self.sock, self.unsent)
            if self.unsent < 0:
                raise ConnectionAbortedError("the client reads nothing; its task goes on")
        out, pieces = self.out, ()
        if len(chunk) > _JOINED:                    # (its size line, then slices of it)
            view = memoryview(chunk)
            pieces = [out + b"%x\r\n" % len(chunk) if self.chunked else out]
            pieces += [view[at:at + _JOINED] for at in range(0, len(chunk), _JOINED)]
            out = b"\r\n" if self.chunked else b""
        else:
            out += b"%x\r\n%s\r\n" % (len(chunk), chunk) if self.chunked else chunk
        self.done = getattr(self.stream, "done", False)
        self.out = out if self.done else b""
        return pieces if self.done else (*pieces, out)

    def end(self):
        """The last bytes (b"" for none): what is held, then the last chunk."""
        return self.out + _LAST_CHUNK if self.chunked else self.out


def _response_head(response, close, date, body=False):
    """The status line and headers of ``response`` as bytes, up to the blank
    line; and its body after them if ``body`` (not a stream's, nor a HEAD's)."""
    status = response.status
    lines = [f"HTTP/1.1 {status} {_HTTP_REASONS.get(status, 'Status')}",
             f"Server: a2a_min/{__version__}", f"Date: {date()}"]
    for name, value in response.headers:          # (_header_list, unrolled: every answer's)
        lines.append(f"{name}: {value}")
    if response.stream is None and status != 304 and status != 204:
        lines.append(f"Content-Length: {len(response.body)}")
    if close:
        lines.append("Connection: close")
    elif response.stream is not None:              # (the connection stays for more)
        lines.append("Transfer-Encoding: chunked")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + response.body if body and response.stream is None else head


# The Date header's value (RFC 9110 section 6.6.1), one clock per host: made
# again only when the second changes, not for every response.
_DateHeader = functools.partial(_Clock, "%a, %d %b %Y %H:%M:%S GMT")


def _timed_out(server, timeout):
    """The answer (408) to a request that did not arrive whole in ``timeout`` s."""
    return server.error_response(None, 408, InvalidRequestError(
        f"the request did not arrive within {timeout:g} s; send the whole head and the "
        "body it announces", metadata={"limit": "timeout", "value": timeout}))


# -- the threaded server ---------------------------------------------------------
#
# socketserver's threaded TCP server, without http.server: that module and the email package it
# parses headers with cost about 100 ms of start-up and more CPU per request than the whole A2A
# call. One thread per connection, up to ``max_connections``: past it a new connection is answered
# 503 with Retry-After and closed, so a flood of idle connections costs a refusal each, not a
# thread each. HTTP/1.1 keep-alive, Nagle's algorithm off (or every SSE event would wait ~40 ms for
# a delayed ACK).


def make_http_server(server, host="127.0.0.1", port=8000, *, timeout=30.0, max_header_bytes=65536,
                     max_headers=100, max_connections=512, tls=None, handshake_timeout=10.0,
                     max_caller_connections=None):
    """A threaded HTTP/1.1 server (socketserver) serving ``server``.

    Call ``serve_forever()`` on it, ``shutdown()`` from another thread to stop. ``timeout``:
    seconds within which each request must arrive whole (and an idle keep-alive connection is
    closed); ``max_connections``: connections (threads) served at once, ``max_caller_connections``
    of them from one client address (default: half; past it, 429). ``tls``: serve HTTPS (see
    "TLS"), each handshake done within ``handshake_timeout`` seconds on its connection's thread.
    """
    import socketserver
    tls = _tls_context(tls)
    admission = _Admission(server, max_connections, max_caller_connections)

    class HTTPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
        """socketserver's threaded TCP server: a connection admitted is served
        on a thread of its own (_ThreadedConnection)."""
        daemon_threads = True
        allow_reuse_address = True
        request_queue_size = 128
        drain = _drain_threaded

        def process_request(self, request, client_address):
            refusal = admission.admit(client_address[0])
            if refusal is None:
                return super().process_request(request, client_address)
            try:
                request.settimeout(0)              # never wait for a client we refuse
                request.send(_response_head(refusal, True, self.date, True))
            except OSError:
                pass
            self.shutdown_request(request)

        def process_request_thread(self, request, client_address):
            try:
                super().process_request_thread(request, client_address)
            finally:
                admission.leave(client_address[0])

        def handle_error(self, request, client_address):
            _log().debug("connection from %s ended with an error", client_address, exc_info=True)

    httpd = HTTPServer((host, port), _ThreadedConnection)
    httpd.a2a, httpd.admission, httpd.tls, httpd.date = server, admission, tls, _DateHeader()
    httpd.readers = functools.partial(_RequestReader, max_header_bytes, max_headers,
                                      server.limits["max_body_bytes"])
    httpd.wait_for, httpd.handshake_timeout = timeout, handshake_timeout
    httpd.hangups = _Hangups()                     # a stream's client that closes, noticed
    httpd.open = set()                             # the connections' sockets
    httpd.local = "%s:%d" % httpd.server_address[:2]    # (for a request without a Host)
    server._gauges["threads"] = lambda: {"connections": admission.active,
                                         "threads": threading.active_count()}
    server.allow_hosts((host, httpd.server_address[0]), bound=True)   # (see "Who may call")
    return httpd


class _ThreadedConnection:
    """make_http_server's handler class: one connection, on a thread of its
    own, its requests read with a _RequestReader (receive) and answered
    (send) one after another, while it is kept and the server is not closing."""

    def __init__(self, sock, client_address, httpd):
        import socket
        server, self.httpd, self.timeout = httpd.a2a, httpd, httpd.wait_for
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        accepted, scheme, peer = sock, "http://", client_address[0]
        if httpd.tls:
            sock, scheme = _tls_handshake(sock, httpd.tls, httpd.handshake_timeout), "https://"
            if sock is None:
                return                     # (a TLS handshake that failed)
            peer = _Peer(peer, sock.getpeercert() or None)     # ssl's dict, if it sent one
        self.wait = self.timeout           # the socket's timeout now
        sock.settimeout(self.timeout)
        reader, buffer = httpd.readers(), bytearray()
        httpd.open.add(sock)
        try:
            while not server.closing.is_set() or buffer:
                request = self.receive(sock, reader, buffer, server)
                if request is None:
                    return
                response = server.handle_http(*request.arguments(scheme, httpd.local, peer))
                keep = request.keeps(response)
                if not self.send(sock, response, not keep, request.method == "HEAD") or not keep:
                    return
        finally:
            httpd.open.discard(sock)
            httpd.hangups.forget(sock)
            if sock is not accepted:       # (TLS: socketserver closes only its own)
                sock.close()

    def receive(self, sock, reader, buffer, server):
        """The next request on ``sock`` (read into ``buffer`` by ``reader``), or None when the
        connection is to close: its client closed it, or was answered 400 or 408."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                request = reader.read(buffer) if buffer else None
            except _BadRequest as bad:
                self.send(sock, server.error_response(bad.path, bad.status, bad.error), True)
                return None
            if request:
                return request
            if reader.expects_continue:
                reader.expects_continue = False
                sock.sendall(_CONTINUE)
            try:
                # Each wait ends at the request's deadline; the timeout is changed only
                # when it must be (a system call), and is whole before a request's first byte.
                if buffer or reader._head is not None:     # (a request has begun)
                    left = deadline - time.monotonic()
                    if left < self.wait - 1.0 or left <= 0:
                        self.wait = max(left, 0.001)
                        sock.settimeout(self.wait)
                data = sock.recv(16384)
            except TimeoutError:
                if buffer:                 # a request began and stalled
                    self.send(sock, _timed_out(server, self.timeout), True)
                return None
            except OSError:
                return None
            if not data:
                return None                # the client closed the connection
            buffer += data

    def send(self, sock, response, close, head_only=False):
        """Write ``response``, its stream as _WritePlan says; False if the client has gone."""
        stream, date, hangups = response.stream, self.httpd.date, self.httpd.hangups
        if self.wait != self.timeout:      # a client that stops reading is dropped
            self.wait = self.timeout
            sock.settimeout(self.timeout)
        try:
            if stream is None or head_only:    # (a HEAD's answer has no body, ever)
                sock.sendall(_response_head(response, close, date, not head_only))
                return True
            plan = _WritePlan(response, close, date, sock)
            gone = hangups.watch(sock, stream)    # (set: the client closed)
            if plan.head:
                sock.sendall(plan.head)
            chunk = next(stream, None) if plan.first is None else plan.first
            while chunk is not None and not gone:
                for piece in plan.put(chunk):
                    sock.sendall(piece)
                chunk = None if plan.done else next(stream, None)
            if not gone and (end := plan.end()):
                sock.sendall(end)
            return not gone
        except OSError:                    # the client went away, or reads nothing
            return False                   # (_WritePlan.put): the task goes on
        finally:
            if stream is not None:
                hangups.unwatch(sock)
                stream.close()


def _drain_threaded(self, grace=10.0):
    """The threaded server's drain(), after serve_forever() has returned: shut
    the Server down gracefully (Server.shutdown), let requests in flight
    finish within ``grace`` seconds, close idle connections, then the socket."""
    import socket
    deadline = time.monotonic() + grace
    self.a2a.shutdown(grace)
    # (streams woken at the grace's end write their last frame: a second at least)
    deadline = max(deadline, time.monotonic() + 1.0)
    self.hangups.draining = True
    while True:
        for sock in list(self.open):       # an idle keep-alive wakes up and closes
            try:
                sock.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        if not self.admission.active or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    self.server_close()


class _Hangups:
    """One thread per threaded server, while any of its streams waits: it polls their sockets for a
    client's close (EPOLLRDHUP: not for data, which a pipelined request may send) and wakes the
    stream, which then ends and frees its connection at once rather than at its next keep-alive
    write. A socket stays registered for its connection's life (forget()): the streams of a kept
    connection cost no system call each."""

    def __init__(self):
        self.poll, self.wakes, self.socks, self.lock = None, {}, set(), threading.Lock()
        self.draining = False         # drain() shuts every connection's read side: not a close

    def watch(self, sock, stream):
        """A list, [True] once ``sock``'s client has closed (Linux: elsewhere
        it stays empty, and a close is found at the next keep-alive write). A
        stream that has ended already (all of it ready at once) is not watched."""
        import select
        gone, channel = [], getattr(getattr(stream, "events", None), "channel", None)
        if channel is None or stream.done or not hasattr(select, "EPOLLRDHUP"):
            return gone
        fd = sock.fileno()
        with self.lock:
            if self.poll is None:             # (and socks is empty: _run emptied it)
                self.poll = select.epoll()
                threading.Thread(target=self._run, args=(self.poll,), daemon=True,
                                 name="a2a-hangups").start()
            self.wakes[fd] = (gone, channel)
            if fd not in self.socks:
                self.poll.register(fd, select.EPOLLRDHUP)
                self.socks.add(fd)
        return gone

    def unwatch(self, sock):
        with self.lock:
            self.wakes.pop(sock.fileno(), None)

    def forget(self, sock):
        """The connection ends: its socket is no longer watched (before it is
        closed, as its number may be given to the next one)."""
        with self.lock:
            fd = sock.fileno()
            self.wakes.pop(fd, None)
            if fd in self.socks:
                self.socks.discard(fd)
                self.poll.unregister(fd)

    def _run(self, poll):
        while True:
            for fd, _ in poll.poll(1.0):
                with self.lock:
                    gone, channel = self.wakes.pop(fd, (None, None)) if not self.draining \
                        else (None, None)          # (drain() shut its read side: no close)
                    if fd in self.socks:           # (closed: it would be told again and again)
                        self.socks.discard(fd)
                        poll.unregister(fd)
                    if gone is not None:
                        gone.append(True)
                if channel:
                    channel.wake()
            with self.lock:                        # none left to watch: the thread ends
                if not self.wakes:
                    self.poll, self.socks = None, set()
                    return poll.close()


def serve(server, host="127.0.0.1", port=8000, *, on_ready=None, grace=10.0, workers=1, tls=None):
    """Serve ``server`` on the threaded server until SIGTERM or Ctrl-C, then stop gracefully within
    ``grace`` seconds (HTTPServer.drain). ``workers``: processes sharing the listening socket and
    the store (a2a_store.serve_workers). ``on_ready(httpd)`` is called once listening (by default,
    a line saying where). ``tls``: serve HTTPS (see "TLS"). An address it cannot listen on stops
    the program with one line that says why (SystemExit, exit status 1)."""
    if workers > 1 and not server.store.shared:
        raise ValueError(
            f"{workers} worker processes would each keep their own tasks in memory, and a "
            "client would find its task on one process in four; give them a store they share "
            "(python3 a2a_min.py --store tasks.db, or Server(store=a2a_store.SQLiteStore(...)))")
    try:
        httpd = make_http_server(server, host, port, tls=tls)
    except (OSError, OverflowError) as error:
        raise _cannot_listen(error, host, port) from None
    (on_ready or _say_where)(httpd)
    if workers > 1:
        return _companion("a2a_store", "serve(workers=N)").serve_workers(
            httpd, workers, grace, _serve_until_stopped)
    _serve_until_stopped(httpd, grace)


def _cannot_listen(error, host, port):
    """What serve() and serve_asyncio() raise when they cannot listen: for an
    address taken, not here or not allowed, one line naming the fix and exit
    status 1 (SystemExit, as werkzeug's run_simple), not a traceback."""
    import errno
    code = getattr(error, "errno", None)
    if code is None and type(error) is OSError:    # asyncio (3.13) drops each address that is
        code = errno.EADDRNOTAVAIL                 # not here and says none was left (bpo-30945)
    fix = {errno.EADDRINUSE: "pick another port (--port N, serve(port=N)) or stop what uses it",
           errno.EADDRNOTAVAIL: f"this machine has no address {host}: listen on 127.0.0.1, "
                                "0.0.0.0 (all its addresses) or one of its own",
           errno.EACCES: "a port below 1024 needs privileges: pick one above 1023",
           }.get(code)
    if isinstance(error, OverflowError):       # (socket's "bind(): port must be 0-65535")
        return SystemExit(f"a2a_min: cannot listen on port {port}: a port is 0 to 65535 "
                          "(0: any free one)")
    return error if fix is None else SystemExit(
        f"a2a_min: cannot listen on {host}:{port}: {os.strerror(code)}; {fix}")


def _where(listener):
    """The base URL a listener serves at: the threaded server's, or asyncio's."""
    sockets = getattr(listener, "sockets", None)
    host, port = (sockets[0].getsockname() if sockets else listener.server_address)[:2]
    return f"{'https' if getattr(listener, 'tls', None) else 'http'}://{host}:{port}"


def _say_where(listener):
    """serve()'s and serve_asyncio()'s on_ready when none is given: say where."""
    print(f"a2a_min: serving on {_where(listener)}/ (Ctrl-C stops)", flush=True)


def _serve_until_stopped(httpd, grace):
    # SIGTERM (what a container, systemd or a platform sends) stops as Ctrl-C
    # does, where this thread may set signal handlers.
    if threading.current_thread() is threading.main_thread():
        import signal
        signal.signal(signal.SIGTERM, lambda signum, frame: threading.Thread(
            target=httpd.shutdown, daemon=True).start())
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.drain(grace)


class _Admission:
    """Who of the connections a server accepts it serves: at most ``most`` at
    once, ``per_peer`` of them from one client address (default: half)."""

    def __init__(self, server, most, per_peer=None):
        self.server, self.most, self.per_peer = server, most, per_peer or max(1, most // 2)
        self.active, self.peers, self.lock = 0, {}, threading.Lock()   # (and per address)

    def admit(self, peer, active=None):
        """None if a connection from ``peer`` is served (until leave(peer)), with
        ``active`` (else those admitted) open; if not, its 503 or 429 answer."""
        with self.lock:
            held = self.peers.get(peer, 0)
            full = (self.active if active is None else active) >= self.most
            if not full and held < self.per_peer:
                self.active, self.peers[peer] = self.active + 1, held + 1
                return None
        if full:
            return self.server.error_response(None, 503, ServerBusyError(
                f"the server is serving {self.most} connections, its most; try again shortly",
                metadata={"limit": "max_connections", "value": self.most}))
        return self.server.error_response(None, 429, CallerLimitError(
            f"you have {held} connections open, the most one client address may "
            f"(max_caller_connections is {self.per_peer}); close some (a kept-alive "
            "connection serves request after request), then try again",
            metadata={"limit": "max_caller_connections", "value": self.per_peer}))

    def leave(self, peer):
        with self.lock:
            held, self.active = self.peers.pop(peer) - 1, self.active - 1
            if held:
                self.peers[peer] = held


# -- an asyncio server ---------------------------------------------------------------
#
# One event loop, no thread per connection and none per stream. Each connection is an asyncio
# protocol (_LoopConnection) whose bytes go to its _RequestReader; a pipelined request waits for
# the answer before it. A request is answered on the loop by handle_http(..., spawn), with the
# hooks of section 11. One clock per connection bounds a request's arrival (408, or a close when
# idle) and a client that stops reading its answer (dropped after ``timeout``). Past
# ``max_connections`` (at most three quarters of the open-file limit, so accept() does not run out;
# counted from accept(), a TLS handshake included), a new connection gets 503.


async def serve_asyncio(server, host="127.0.0.1", port=8000, *, timeout=30.0,
                        max_header_bytes=65536, max_headers=100, max_connections=4096,
                        on_ready=None, grace=10.0, tls=None, handshake_timeout=10.0,
                        max_caller_connections=None):
    """Serve ``server`` on the running asyncio event loop until cancelled (or SIGTERM, when the
    loop runs in the main thread), then stop gracefully within ``grace`` seconds: Server.shutdown,
    requests in flight finish, idle connections close. ``on_ready(asyncio_server)`` and an address
    it cannot listen on: as serve(). The other options are make_http_server()'s; ``timeout`` also
    bounds how long a client may leave its answer unread."""
    import asyncio
    import signal
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    try:
        loop.add_signal_handler(signal.SIGTERM, lambda: stop.done() or stop.set_result(None))
    except (NotImplementedError, RuntimeError, ValueError):
        pass                                       # not the main thread: the caller stops us
    connections = set()                            # counted from accept(), TLS or not
    server._gauges["asyncio"] = lambda: {"connections": len(connections)}
    try:                       # at most three quarters of the open-file limit: past it,
        import resource        # accept() fails (and a connection needs a file)
        files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        max_connections = min(max_connections, files * 3 // 4) if files > 0 else max_connections
    except ImportError:                            # (Windows)
        pass
    limits = (timeout, functools.partial(_RequestReader, max_header_bytes, max_headers,
                                         server.limits["max_body_bytes"]),
              handshake_timeout if tls else None,
              _Admission(server, max_connections, max_caller_connections))
    tls = _tls_context(tls)    # (and async agents run on this loop: the _Spawner)
    connection = functools.partial(_LoopConnection, server, loop, connections, limits,
                                   _DateHeader(), _Spawner(loop))
    try:
        listener = await loop.create_server(
            connection, host, port, reuse_address=True, backlog=1024,
            ssl=tls, ssl_handshake_timeout=handshake_timeout if tls else None)
    except (OSError, OverflowError) as error:
        raise _cannot_listen(error, host, port) from None
    previous = loop.get_exception_handler()
    loop.set_exception_handler(functools.partial(_out_of_files, previous, [0.0]))
    listener.tls = tls                             # (the SSLContext, or None: plain HTTP)
    named = list(host) if isinstance(host, (list, tuple)) else [host or ""]  # "Who may call"
    server.allow_hosts(named + [s.getsockname()[0] for s in listener.sockets], bound=True)
    (on_ready or _say_where)(listener)
    try:
        await stop                                 # serving, until SIGTERM or cancelled
    finally:
        await _stop_asyncio(server, loop, listener, connections, grace)
        loop.set_exception_handler(previous)
        try:
            loop.remove_signal_handler(signal.SIGTERM)
        except (NotImplementedError, RuntimeError, ValueError):
            pass


async def _stop_asyncio(server, loop, listener, connections, grace):
    """serve_asyncio's end: stop listening, Server.shutdown (streams end, turns may finish within
    ``grace``), let requests in flight finish, then close every connection left, idle or not."""
    import asyncio
    deadline = loop.time() + grace
    listener.close()
    await loop.run_in_executor(None, server.shutdown, grace)    # streams end, turns finish
    while any(c.busy is not None for c in connections) and loop.time() < deadline:
        await asyncio.sleep(0.05)              # requests in flight
    busy = [c.busy for c in connections if hasattr(c.busy, "cancel")]
    for connection in list(connections):       # then the rest, idle or not, is closed
        if connection.transport:               # (else a TLS handshake, which asyncio ends)
            connection.transport.abort()
    for task in busy:
        task.cancel()
    await asyncio.gather(*busy, return_exceptions=True)


def _out_of_files(previous, said, loop, context):
    """serve_asyncio's loop exception handler. Out of descriptors, asyncio
    pauses accept() for a second, but tells of it once for every place in the
    backlog (a thousand tracebacks a second in a flood): once a minute will do."""
    error = context.get("exception")
    if isinstance(error, OSError) and error.errno in (23, 24):     # ENFILE, EMFILE
        if time.monotonic() < said[0]:
            return
        said[0] = time.monotonic() + 60.0
        context = {**context, "message": f"{context.get('message')}: the open-file limit is "
                   "reached; raise it (ulimit -n) or lower max_connections (said once a minute)"}
    if previous:
        return previous(loop, context)
    loop.default_exception_handler(context)


def _handle_on_loop(server, loop, spawn, args):
    """handle_http(*args) on an event loop: a Response, or a future of one (a
    shared store's write may wait: it runs on a store thread)."""
    off_loop = server.live.off_loop
    if off_loop is None:
        return server.handle_http(*args, spawn)
    return off_loop.handle_http(server.handle_http, loop, spawn, *args)


class _LoopConnection:
    """One HTTP/1.1 connection of serve_asyncio, as an asyncio protocol."""

    def __init__(self, server, loop, connections, limits, date, spawn):
        self.server, self.loop, self.connections = server, loop, connections
        self.date = date           # the host's Date header
        self.spawn = spawn         # CallContext.spawn: runs async agents on this loop
        self.timeout, readers, handshake, self.admission = limits
        self.counted = None        # the client's address, once admitted (_Admission)
        self.reader, self.buffer, self.closed, self.timer = readers(), bytearray(), False, None
        self.busy = None           # a slow answer: a _PendingAnswer, or a Task (a stream)
        self.drained = None        # a future while the transport's buffer is full
        self.ready_since = loop.time()
        self.transport = None      # (TLS: bytes may come before connection_made; they wait)
        connections.add(self)      # counted now, at accept(): a TLS handshake holds a socket
        if handshake is not None:  # (one that fails never reaches connection_made: forgotten)
            loop.call_later(handshake + 1.0, self.forget_unmade)

    def connection_made(self, transport):
        """A client connected: start its clock, or refuse it past the cap."""
        self.transport = transport
        self.timer = self.loop.call_later(self.timeout, self.check_timeout)
        self.peer = (transport.get_extra_info("peername") or ("",))[0]
        refusal = self.admission.admit(self.peer, len(self.connections) - 1)   # (this one:
        if refusal:                                # counted at accept) refused, and closed
            return self.close_after_answer(refusal)
        self.counted = self.peer
        self.local = "%s:%d" % transport.get_extra_info("sockname")[:2]
        self.scheme = "http://"
        if transport.get_extra_info("sslcontext"):
            self.scheme = "https://"
            self.peer = _Peer(self.peer, transport.get_extra_info("peercert") or None)
            if self.buffer:                        # what came with the end of the handshake
                self.serve_buffered()

    def forget_unmade(self):
        if self.transport is None:
            self.connections.discard(self)

    def data_received(self, data):
        """Bytes from the client: answer what is whole, unless an answer is
        still being worked on (then they wait, in order, in the buffer)."""
        if self.closed:
            return                 # a refused connection's request: not read
        self.buffer += data
        if self.busy is None and self.transport:
            self.serve_buffered()
        elif len(self.buffer) > self.reader.max_header_bytes + self.reader.max_body_bytes:
            self.transport.pause_reading()         # a client far ahead of its answers

    def eof_received(self):
        return False               # the client is done sending: close once answered

    def connection_lost(self, exc):
        """The client is gone: stop its clock and its stream, if any."""
        self.closed = True
        if self.timer:
            self.timer.cancel()
        self.connections.discard(self)
        if self.counted is not None:
            self.admission.leave(self.counted)
        if hasattr(self.busy, "cancel"):
            self.busy.cancel()     # stops pumping the stream; the agent's task goes on
        self.resume_writing()      # (a pump waiting for the client to read: woken)

    def pause_writing(self):
        # The client does not read its answers: read no more requests from it
        # either (pipelined answers would pile up in memory), until it does.
        self.drained = self.loop.create_future()
        self.paused_at = self.loop.time()          # (not read for ``timeout``: dropped)
        self.transport.pause_reading()

    def resume_writing(self):
        if self.drained and not self.drained.done():
            self.drained.set_result(None)
        self.drained = None
        if not self.closed:
            self.transport.resume_reading()
            if self.busy is None and self.buffer:
                self.loop.call_soon(self.serve_buffered)

    def check_timeout(self):
        """The connection's clock: has the request it waits for taken too long?"""
        if self.closed:
            return
        now = self.loop.time()
        if self.drained and now - self.paused_at >= self.timeout:
            return self.transport.abort()          # it stopped reading (a stream's, too)
        waited = now - self.ready_since
        if self.busy is None and waited >= self.timeout:
            if self.drained:                       # it has not read its answers: give up
                return self.transport.abort()
            if self.buffer:                        # a request began, and stalled
                return self.close_after_answer(_timed_out(self.server, self.timeout))
            return self.transport.close()
        wait = self.timeout - waited if self.busy is None else self.timeout
        if self.drained:
            wait = min(wait, self.paused_at + self.timeout - now)
        self.timer = self.loop.call_later(max(wait, 0.01), self.check_timeout)

    def serve_buffered(self):
        """Answer every whole request in the buffer, in order."""
        server = self.server
        while not self.closed and self.buffer and self.drained is None:
            try:
                request = self.reader.read(self.buffer)
            except _BadRequest as bad:
                return self.close_after_answer(
                    server.error_response(bad.path, bad.status, bad.error))
            if request is None:
                if self.reader.expects_continue:
                    self.reader.expects_continue = False
                    self.transport.write(_CONTINUE)
                return
            response = _handle_on_loop(server, self.loop, self.spawn,
                                       request.arguments(self.scheme, self.local, self.peer))
            if not isinstance(response, Response):     # it runs on a store thread
                self.busy = response
                response.add_done_callback(lambda done: self.answered_later(done.result(), request))
                return
            if not self.answer(response, request):
                return

    def answer(self, response, request):
        """Write ``response`` to ``request``, or begin to (a turn still running,
        a stream). True if the connection is ready for its next request."""
        if response.pending:                       # one request at a time: the rest waits
            self.busy = response.pending
            _LoopAnswer(self.loop, response, self.answered_later, request)
            return False
        method, keep = request.method, request.keeps(response)
        if response.stream is not None and method != "HEAD":   # (a HEAD's has no body, ever)
            task = self.busy = self.loop.create_task(self.pump(response, keep))
            task.add_done_callback(functools.partial(self.streamed, keep))
            return False
        self.transport.write(_response_head(response, not keep, self.date, method != "HEAD"))
        if response.stream is not None:
            response.stream.close()
        if not keep:
            self.transport.close()
            return False
        self.ready_since = self.loop.time()
        return True

    def close_after_answer(self, response):
        """Write ``response``, the last, and close once the client has (or after
        a second), reading nothing more meanwhile: closing a socket with input
        still unread makes the kernel reset the connection, which can destroy
        the answer before the client reads it (RFC 9112 section 9.6)."""
        self.transport.write(_response_head(response, True, self.date, True))
        self.closed = True
        if self.transport.can_write_eof():         # (a TLS transport cannot half-close)
            self.transport.write_eof()
        self.timer.cancel()
        self.timer = self.loop.call_later(1.0, self.transport.abort)

    def answered_later(self, response, request):
        """An agent's turn has given its answer, or handle_http() has returned
        on a store thread: answer, then go on."""
        self.busy = None
        if not self.closed and self.answer(response, request):
            self.go_on()

    def go_on(self):
        """An answer is written and the connection kept: its clock starts for
        the next request, and a pipelined one is served (after this callback)."""
        self.ready_since = self.loop.time()
        if self.drained is None:                   # (not while the client does not read)
            self.transport.resume_reading()
        if self.buffer:
            self.loop.call_soon(self.serve_buffered)

    async def pump(self, response, keep):
        """Write a stream's answer as _WritePlan says, each event as it comes,
        waiting while the client reads slowly (pause_writing)."""
        write = self.transport.write
        chunks = _LoopStream(response.stream, self.loop)
        plan = _WritePlan(response, not keep, self.date, self.transport.get_extra_info("socket"))
        chunk = plan.first
        try:
            if plan.head:
                write(plan.head)
            while not plan.done:
                if chunk is None:
                    try:
                        chunk = await chunks.__anext__()
                    except StopAsyncIteration:
                        break
                for piece in plan.put(chunk):
                    write(piece)
                    if self.drained:
                        await self.drained         # the client reads slowly: wait for it
                    if self.closed:
                        return
                chunk = None
            if end := plan.end():
                write(end)
        except ConnectionAbortedError:             # it reads nothing (_unsent): the task goes on
            self.closed = True
            self.transport.abort()
        finally:
            chunks.close()

    def streamed(self, keep, task):
        """The stream ended: the connection goes on to its next request if it
        was kept and the stream ended whole; else it closes."""
        self.busy = None
        if not task.cancelled() and task.exception():
            _log().error("unexpected error in a stream", exc_info=task.exception())
        elif keep and not task.cancelled() and not self.closed:
            return self.go_on()
        self.transport.close()


# -- WSGI (PEP 3333) and ASGI 3 -------------------------------------------------
#
# The same handle_http() under other people's servers: gunicorn, uwsgi or mod_wsgi through WSGI;
# uvicorn, hypercorn or a mount inside a Starlette or FastAPI app through ASGI. A stream is an
# iterator of byte chunks: WSGI servers send each as it comes and close() it when the client
# leaves; the ASGI adapter awaits each (no thread per stream), watching for the client's
# disconnect. A mount prefix (SCRIPT_NAME, root_path) is stripped from the path and kept in the
# base URL the card shows.


def _header_list(response):
    """``response``'s headers, and Content-Length if its body's is known."""
    headers = list(response.headers)
    if response.stream is None and response.status not in (204, 304):
        headers.append(("Content-Length", str(len(response.body))))
    return headers


def _too_large(server, path):
    """The answer (413) to a body over max_body_bytes, found before handle_http."""
    limit = server.limits["max_body_bytes"]
    return server.error_response(path, 413, PayloadTooLargeError(
        f"the request body is over {limit} bytes, the most this server accepts",
        metadata={"limit": limit}))


def wsgi_app(server):
    """A WSGI application serving ``server``: ``app = a2a_min.wsgi_app(server)``."""
    from urllib.parse import quote

    def app(environ, start_response):
        path = quote(environ.get("PATH_INFO", "") or "/", safe="/:@!$&'()*+,;=-._~")
        headers = {key[5:].replace("_", "-").lower(): value
                   for key, value in environ.items() if key.startswith("HTTP_")}
        for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            if environ.get(key):
                headers[key.replace("_", "-").lower()] = environ[key]
        host = headers.get("host") or f"{environ['SERVER_NAME']}:{environ['SERVER_PORT']}"
        base_url = f"{environ.get('wsgi.url_scheme', 'http')}://{host}" \
            f"{environ.get('SCRIPT_NAME', '')}"
        limit = server.limits["max_body_bytes"]
        length = headers.get("content-length", "").strip()
        if length.isascii() and length.isdigit():  # not read at all when too large
            body = environ["wsgi.input"].read(int(length)) if int(length) <= limit else None
        elif environ.get("wsgi.input_terminated") or "chunked" in headers.get(
                "transfer-encoding", "").lower():
            body = environ["wsgi.input"].read(limit + 1)    # a chunked body: to its end
        else:
            body = b""
        if body is None or len(body) > limit:
            response = _too_large(server, path)
        else:
            response = server.handle_http(environ["REQUEST_METHOD"], path,
                                          environ.get("QUERY_STRING", ""), headers, body, base_url,
                                          peer=environ.get("REMOTE_ADDR"))
        start_response(f"{response.status} {_HTTP_REASONS.get(response.status, 'Status')}",
                       _header_list(response))
        if environ["REQUEST_METHOD"] == "HEAD":    # no body, ever (wsgiref would write it)
            return [] if response.stream is None else response.stream.close() or []
        # (a stream: the WSGI server close()s it at the end)
        return [response.body] if response.stream is None else response.stream
    return app


def _asgi_request(scope):
    """An ASGI http scope's path (under its root_path), headers (lower-case
    names, repeats joined) and the base URL the client reached."""
    from urllib.parse import quote
    prefix = scope.get("root_path", "")
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else quote(scope["path"], safe="/:@!$&'()*+,;=-._~")
    if prefix and path.startswith(prefix):
        path = path[len(prefix):] or "/"
    headers = {}
    for name, value in scope["headers"]:
        name, value = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    host = headers.get("host") or "%s:%s" % tuple(scope.get("server") or ("127.0.0.1", 80))
    return path, headers, f"{scope.get('scheme', 'http')}://{host}{prefix}"


def asgi_app(server, *, grace=10.0):
    """An ASGI 3 application serving ``server``: ``app = a2a_min.asgi_app(server)``.

    At the ASGI server's lifespan shutdown it stops ``server`` gracefully
    (Server.shutdown, within ``grace`` seconds: streams end with a retry
    hint, running turns may finish), off the event loop."""
    spawners = []                                  # the _Spawner of the app's loop

    def spawner(loop):
        if not spawners or spawners[0].loop is not loop:
            spawners[:] = [_Spawner(loop)]
        return spawners[0]

    async def app(scope, receive, send):
        import asyncio
        while scope["type"] == "lifespan":         # started at once; at its shutdown,
            message = await receive()              # Server.shutdown, off the loop
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await asyncio.get_running_loop().run_in_executor(None, server.shutdown, grace)
                return await send({"type": "lifespan.shutdown.complete"})
        if scope["type"] != "http":
            return
        loop = asyncio.get_running_loop()
        path, headers, base_url = _asgi_request(scope)
        limit = server.limits["max_body_bytes"]
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > limit:
                response = _too_large(server, path)
                break
        else:
            args = (scope["method"], path, scope.get("query_string", b"").decode("latin-1"),
                    headers, b"".join(chunks), base_url, (scope.get("client") or (None,))[0])
            response = _handle_on_loop(server, loop, spawner(loop), args)
            if not isinstance(response, Response):         # it runs on a store thread
                response = await response
            response = await _answer_async(response)
        await send({"type": "http.response.start", "status": response.status,
                    "headers": [(k.lower().encode("latin-1"), v.encode("latin-1"))
                                for k, v in _header_list(response)]})
        if response.stream is None:
            await send({"type": "http.response.body", "body": response.body})
            return
        await _asgi_stream(response.stream, loop, receive, send)
    return app


async def _asgi_stream(stream, loop, receive, send):
    """Send each chunk of an SSE ``stream`` as it comes, until it ends or
    the client leaves (then the stream is closed: its task goes on)."""
    import asyncio
    chunks = _LoopStream(stream, loop)
    gone = loop.create_task(_disconnected(receive))
    try:
        while True:
            chunk = loop.create_task(chunks.__anext__())
            await asyncio.wait((chunk, gone), return_when=asyncio.FIRST_COMPLETED)
            if gone.done():
                chunk.cancel()
                break
            try:
                data = chunk.result()
            except StopAsyncIteration:
                await send({"type": "http.response.body", "body": b""})
                break
            await send({"type": "http.response.body", "body": data, "more_body": True})
    finally:
        gone.cancel()
        chunks.close()


async def _disconnected(receive):
    """Returns when the ASGI client has gone away."""
    while (await receive())["type"] != "http.disconnect":
        pass


# -- AWS Lambda ------------------------------------------------------------------
#
# API Gateway REST APIs send payload format 1.0 events; HTTP APIs and function URLs send 2.0. Both
# become one handle_http() call. Lambda's Python runtime answers with one response, so a stream is
# collected (until it ends, or until the invocation's remaining time runs low) and returned as one
# text/event-stream body, and the card says so (an extension, BUFFERED_STREAMS). The in-memory
# store lives as long as the execution environment: across warm invocations, not across cold starts
# or instances.


BUFFERED_STREAMS = "urn:a2a-min:buffered-streams"


def _lambda_request(event):
    """handle_http's arguments for an API Gateway (REST: payload 1.0; HTTP
    API and function URLs: 2.0) event."""
    import base64
    v2, context_of = event.get("version") == "2.0", event.get("requestContext", {})
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    if v2:
        method = context_of["http"]["method"]
        path, query = event.get("rawPath") or "/", event.get("rawQueryString", "")
        if event.get("cookies"):
            headers["cookie"] = "; ".join(event["cookies"])
    else:
        from urllib.parse import urlencode
        method, path = event["httpMethod"], event.get("path") or "/"
        multi = event.get("multiValueQueryStringParameters")
        query = urlencode(multi, doseq=True) if multi else urlencode(
            event.get("queryStringParameters") or {})
    body = event.get("body") or ""
    body = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()
    stage = context_of.get("stage", "$default")
    prefix = f"/{stage}" if not v2 and stage != "$default" and "execute-api" in \
        headers.get("host", "") else ""
    base_url = f"{headers.get('x-forwarded-proto', 'https')}://{headers.get('host', 'localhost')}{prefix}"
    peer = (context_of.get("http") or context_of.get("identity") or {}).get("sourceIp")
    # The Host check (see "Who may call") is the platform's: API Gateway and function URLs deliver
    # only requests addressed to their own names, and a function is not on the network of the
    # browsers that call it, where a rebound name could point. So Host is not passed on.
    headers.pop("host", None)
    return method, path, query, headers, body, base_url, peer


def lambda_handler(server, *, margin=1.0):
    """An AWS Lambda handler: ``handler = a2a_min.lambda_handler(server)``.

    ``margin``: seconds before the invocation's deadline at which a buffered
    stream is cut and returned. The card says streams come whole here
    (BUFFERED_STREAMS), so clients that need each event as it happens can tell.
    """
    import base64
    if server.capabilities.get("streaming"):
        server.add_extension({
            "uri": BUFFERED_STREAMS, "required": False,
            "description": "Streams are delivered whole, as one text/event-stream body, when "
                           "they end or the invocation's time runs low: this host (AWS Lambda) "
                           "cannot send a response as it is written."})

    def handler(event, context):
        response = server.handle_http(*_lambda_request(event))
        data = response.body
        if response.stream is not None:
            chunks = []
            remaining = getattr(context, "get_remaining_time_in_millis", None)
            try:
                for chunk in response.stream:
                    if chunk != _KEEPALIVE:
                        chunks.append(chunk)
                    if remaining and remaining() < margin * 1000:
                        break                          # out of time: return what we have
            finally:
                response.stream.close()
            data = b"".join(chunks)
        out_headers = {}
        for name, value in response.headers:
            out_headers[name] = f"{out_headers[name]}, {value}" if name in out_headers else value
        textual = any(t in out_headers.get("Content-Type", "") for t in ("json", "text"))
        return {"statusCode": response.status, "headers": out_headers,
                "body": data.decode() if textual else base64.b64encode(data).decode(),
                "isBase64Encoded": not textual}
    return handler


# =============================================================================
# 13. The demo
# =============================================================================
#
# ``python a2a_min.py`` runs a small agent that shows most of the protocol: a reply streamed in
# chunks of one artifact (section 3.1.2), a task that asks for more input and continues on the next
# message with its taskId (a multi-turn task, section 3.1.1), and the card, the JSON-RPC help page
# and the curl lines printed at start-up. main() is the command line: the host (threads or
# asyncio), the address, and the options that are Server's own (--public-url, --compat,
# --push-allow, --allow-host, --cors-origin...).
#
# What a deployment adds lives in a2a_cli.py: --store (A2A_STORE), --workers, --tls-*, --metrics,
# --access-log, --opentelemetry, --exec, --sign-key and the client's verbs (and the log's lines on
# stderr). main() reads its own options first, without abbreviations; anything left over goes to
# a2a_cli.main() whole, which builds on _demo_parser and serves through _serve_demo (without that
# file, one line names it). So this file alone never imports more than it uses, and starts in the
# time the demo takes to compile.


def _demo_agent(ctx):
    """Echo the user's text back in a few streamed chunks.

    A message starting with "wait" asks for more input instead (a multi-turn
    task: answer it by sending a message with its taskId).
    """
    if ctx.text.lower().startswith("wait") and ctx.task is None:
        yield status_update("TASK_STATE_INPUT_REQUIRED", "What should I echo? Reply with the taskId.")
        return
    yield status_update("TASK_STATE_WORKING")
    words = ("You said: " + (ctx.text or "(no text)")).split(" ")
    step = max(1, len(words) // 3)
    for i in range(0, len(words), step):
        yield " ".join(words[i:i + step]) + (" " if i + step < len(words) else "")


def demo_server(**options):
    """The demo: a Server with the echo agent."""
    return Server(_demo_agent, name="a2a_min echo",
                  description="Echoes what you say, streamed in a few chunks.",
                  skills=[{"id": "echo", "name": "Echo", "description": "Repeats your text.",
                           "tags": ["echo", "demo"], "examples": ["hello"]}], **options)


def _prog():
    """How this command was run, for its usage lines: a2a-min (installed), or
    python a2a_min.py (the file, or python -m a2a_min)."""
    name = os.path.basename((sys.argv or [""])[0] or "a2a_min.py")
    return f"python3 {name.replace('__main__', 'a2a_min')}" if name.endswith(".py") else name


def _one_line_errors(parser):
    """A usage error in one line that says where the options are listed, not
    the whole usage first; ``parser``, so changed."""
    parser.error = lambda message: parser.exit(
        2, f"{parser.prog}: {message} (options: {parser.prog} --help)\n")
    return parser


def _demo_parser(allow_abbrev=True):
    """The demo's command line: what this file does alone. (a2a_cli.py adds
    serve's deployment flags to it, and the client's verbs.)"""
    import argparse
    parser = _one_line_errors(argparse.ArgumentParser(
        prog=_prog(), allow_abbrev=allow_abbrev,
        description="Serve a demo A2A 1.0 agent (serve is the default verb).",
        epilog="With a2a_cli.py beside this file: --store, --workers, --tls-*, --metrics, "
               "--access-log, --opentelemetry, --exec, --sign-key, and the client's verbs "
               "(%(prog)s send URL TEXT)."))
    parser.add_argument("--version", action="version",
                        version=f"a2a_min {__version__} (A2A {PROTOCOL_VERSION})")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--public-url", help="base URL to put in the agent card")
    parser.add_argument("--assume-version", metavar="VERSION",
                        help="treat requests without A2A-Version as this version (e.g. 1.0)")
    parser.add_argument("--server", choices=("threads", "asyncio"), default="threads",
                        help="the host: a thread per connection (default) or one asyncio loop")
    parser.add_argument("--single-path", metavar="PATH",
                        help="serve JSON-RPC (POST) and the card (GET) on this one path only")
    parser.add_argument("--compat", choices=("0.3",), help="serve A2A 0.3 clients too (JSON-RPC, "
                        "and HTTP+JSON's /v1 routes), by translation (a2a_v03.py)")
    parser.add_argument("--push-allow", action="append", default=[], metavar="HOST|NET", help=(
        "send push notifications (webhooks), to this host or network too although it is not "
        "public, e.g. 127.0.0.1 for examples/webhook_receiver.py (repeatable)"))
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME", help=(
        "answer requests whose Host header names this too (repeatable; localhost, the bound "
        "address and --public-url's host always are; '*' for any): a name this machine is "
        "reached by"))
    parser.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN", help=(
        "let web pages from this origin (https://app.example) call the API from a browser "
        "(repeatable; none may by default)"))
    parser.add_argument("--echo", action="store_true",
                        help="the agent answers each message with its text (nothing else)")
    return parser


def _demo_options(args):
    """The Server options the demo's flags name."""
    return dict(public_url=args.public_url, assume_version=args.assume_version, compat=args.compat,
                single_path=args.single_path, push_notifications=bool(args.push_allow),
                push_allow=args.push_allow, allowed_hosts=args.allow_host,
                cors_origins=args.cors_origin)


def _serve_demo(args, server, *, what="echo agent", kept="tasks in memory", stop_now=None, **host):
    """Serve ``server`` as the command line does: the banner, Ctrl-C, and a port that is taken said
    in one line. ``host``: serve()'s further arguments (a2a_cli.py's tls=, workers=)."""
    if args.compat:
        kept += f"; A2A {args.compat} clients too"
    if args.push_allow:
        kept += f"; webhooks to {', '.join(args.push_allow)} allowed"

    def ready(listener):
        # The demo's first lines, once it listens: where, how, and curl lines.
        base = _where(listener)
        print(f"a2a_min {__version__}: an A2A {PROTOCOL_VERSION} {what} on {base}/ "
              f"({kept}; Ctrl-C stops)\n", flush=True)
        if host.get("tls"):
            print("HTTPS: give curl the certificate of the CA that issued this server's "
                  "(--cacert ca.pem; the server's own, if it is self-signed)\n", flush=True)
        print(_help_text(server, base), flush=True)

    def on_sigint(signum, frame):
        # The demo's Ctrl-C: the first stops gracefully, saying what it waits for (the host's
        # KeyboardInterrupt path: Server.shutdown within ``grace``); a second one stops at once
        # (after ``stop_now()``, if given), without a traceback.
        if pressed:
            if stop_now:
                stop_now()
            print("a2a_min: stopped now", file=sys.stderr, flush=True)
            os._exit(130)
        pressed.append(True)
        turns = server.live.running()          # the running turns Ctrl-C waits for
        waits = f"waiting up to {grace:g} s for {turns} running task{'s' * (turns != 1)}; " \
            if turns else ""
        print(f"\na2a_min: stopping: {waits}Ctrl-C again to stop now", file=sys.stderr, flush=True)
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            raise KeyboardInterrupt            # (not listening yet)
        signal.raise_signal(signal.SIGTERM)    # the hosts' graceful stop: streams see turns end
    # Ten seconds for running turns to finish once asked to stop (SIGTERM or Ctrl-C): a rolling
    # restart's usual grace. With workers, Ctrl-C reaches every worker, and each stops itself.
    grace, pressed = 10.0, []
    if host.get("workers", 1) == 1:
        import signal
        signal.signal(signal.SIGINT, on_sigint)
    if args.server == "asyncio":               # (an address it cannot have: one line, exit 1)
        import asyncio
        try:
            asyncio.run(serve_asyncio(server, args.host, args.port, on_ready=ready, grace=grace,
                                      **host))
        except KeyboardInterrupt:
            pass
    else:
        serve(server, args.host, args.port, on_ready=ready, grace=grace, **host)


def main(argv=None):
    """python a2a_min.py [serve] [--host 127.0.0.1] [--port 8000]: serve the
    echo demo. Any other flag or verb is the command line's, a2a_cli.py."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # "serve" is the default verb. This file's own options are read first,
    # without abbreviations (an abbreviation of an a2a_cli.py option would
    # otherwise be taken for one of these); what is left belongs to a2a_cli.
    words = argv[1:] if argv[:1] == ["serve"] else argv
    parser = _demo_parser(allow_abbrev=False)
    rest = words if {"-h", "--help"} & set(words) else parser.parse_known_args(words)[1]
    if os.environ.get("A2A_STORE"):            # (--store's default: a2a_cli.py's too)
        rest = rest or ["A2A_STORE"]
    if rest[:1] and rest[0].isdigit():         # (a command line that does not parse: 2)
        parser.exit(2, f"a2a_min: {rest[0]}: the port is an option: {_prog()} --port {rest[0]}\n")
    if rest:
        try:
            cli = _companion("a2a_cli", rest[0])
        except ModuleNotFoundError as error:
            if error.name != "a2a_cli":
                raise
            if rest[0] not in ("-h", "--help"):
                sys.exit(f"a2a_min: {rest[0]} needs a2a_cli.py beside a2a_min.py (copy it there): "
                         "serve's deployment flags (--store, --workers, --tls-*, --metrics, "
                         "--access-log, --exec...), A2A_STORE and the client's verbs (with "
                         f"a2a_client.py) are its; {_prog()} --help lists what this file does "
                         "alone")
        else:
            sys.exit(cli.main(argv))
    # Only this file's options: the demo (or --echo) on the host asked for.
    args = parser.parse_args(words)
    try:
        options = _demo_options(args)
        server = Server(lambda text: text, name="echo", description="Answers each message "
                        "with its text.", **options) if args.echo else demo_server(**options)
    except RuntimeError as error:
        parser.error(f"--compat: {error}")
    except ValueError as error:
        parser.error(f"--push-allow: {error}")
    _serve_demo(args, server, what="agent" if args.echo else "echo agent")


if __name__ == "__main__":
    # Run as a script, this module is __main__; the companions it loads (a2a_cli, a2a_store...)
    # import it as a2a_min: one module, not a second copy whose error classes would be others.
    sys.modules.setdefault("a2a_min", sys.modules[__name__])
    main()
