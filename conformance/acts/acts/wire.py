"""HTTP, SSE, and the two bindings: abstract operation -> request, response -> result."""

import http.client
import itertools
import json
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from .assertions import MISSING

# A2A-FACTS.md section 2 (the A2A 1.0.1 specification's tables).
ERRORS = {
    # name: (JSON-RPC code, HTTP status, ErrorInfo.reason, gRPC status)
    "TaskNotFoundError": (-32001, 404, "TASK_NOT_FOUND", "NOT_FOUND"),
    "TaskNotCancelableError": (-32002, 400, "TASK_NOT_CANCELABLE", "FAILED_PRECONDITION"),
    "PushNotificationNotSupportedError": (-32003, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED",
                                          "FAILED_PRECONDITION"),
    "UnsupportedOperationError": (-32004, 400, "UNSUPPORTED_OPERATION", "FAILED_PRECONDITION"),
    "ContentTypeNotSupportedError": (-32005, 400, "CONTENT_TYPE_NOT_SUPPORTED",
                                     "INVALID_ARGUMENT"),
    "InvalidAgentResponseError": (-32006, 500, "INVALID_AGENT_RESPONSE", "INTERNAL"),
    "ExtendedAgentCardNotConfiguredError": (-32007, 400, "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                                            "FAILED_PRECONDITION"),
    "ExtensionSupportRequiredError": (-32008, 400, "EXTENSION_SUPPORT_REQUIRED",
                                      "FAILED_PRECONDITION"),
    "VersionNotSupportedError": (-32009, 400, "VERSION_NOT_SUPPORTED", "FAILED_PRECONDITION"),
    "JSONParseError": (-32700, 400, None, "INVALID_ARGUMENT"),
    "InvalidRequestError": (-32600, 400, None, "INVALID_ARGUMENT"),
    "MethodNotFoundError": (-32601, 404, None, "UNIMPLEMENTED"),
    "InvalidParamsError": (-32602, 400, None, "INVALID_ARGUMENT"),
    "InternalError": (-32603, 500, None, "INTERNAL"),
}
BY_CODE = {code: name for name, (code, _, _, _) in ERRORS.items()}
BY_REASON = {reason: name for name, (_, _, reason, _) in ERRORS.items() if reason}
# gRPC status -> the HTTP status the same error has on HTTP+JSON (A2A-FACTS section 2),
# so that a test's `expect: status: 200` reads the same on every binding.
GRPC_HTTP_STATUS = {"OK": 200, "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400,
                    "OUT_OF_RANGE": 400, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403,
                    "NOT_FOUND": 404, "ALREADY_EXISTS": 409, "ABORTED": 409,
                    "RESOURCE_EXHAUSTED": 429, "CANCELLED": 499, "UNIMPLEMENTED": 501,
                    "INTERNAL": 500, "UNKNOWN": 500, "DATA_LOSS": 500, "UNAVAILABLE": 503,
                    "DEADLINE_EXCEEDED": 504}

# ACTS transport names; the CLI's http_json is ACTS's "rest".
JSONRPC_METHODS = {
    "send_message": "SendMessage",
    "send_streaming_message": "SendStreamingMessage",
    "get_task": "GetTask",
    "list_tasks": "ListTasks",
    "cancel_task": "CancelTask",
    "subscribe_to_task": "SubscribeToTask",
    "get_extended_agent_card": "GetExtendedAgentCard",
    "create_push_config": "CreateTaskPushNotificationConfig",
    "get_push_config": "GetTaskPushNotificationConfig",
    "list_push_configs": "ListTaskPushNotificationConfigs",
    "delete_push_config": "DeleteTaskPushNotificationConfig",
}
# Names the corpus uses that are not in ACTS 4.1's list.
OPERATION_ALIASES = {
    "set_push_notification_config": "create_push_config",
    "create_push_notification_config": "create_push_config",
    "get_push_notification_config": "get_push_config",
    "list_push_notification_configs": "list_push_configs",
    "delete_push_notification_config": "delete_push_config",
}
STREAMING = {"send_streaming_message", "subscribe_to_task"}


@dataclass
class Result:
    http_status: int = 0
    headers: dict = field(default_factory=dict)
    body: Any = MISSING          # parsed JSON body (raw wire), MISSING when empty/unparseable
    text: str = ""
    root: Any = MISSING          # the unwrapped A2A object (ACTS 4.2)
    error: dict | None = None    # normalized error: name, code, message, data, wire
    events: list | None = None   # streams: list of wire events (parsed data lines)
    stream_error: str | None = None
    raw_events: list | None = None  # streams: the wire events before unwrapping
    request: dict = field(default_factory=dict)


class Http:
    def __init__(self, base_url, timeout=30.0):
        parts = urllib.parse.urlsplit(base_url)
        self.host = parts.hostname
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout

    def request(self, method, path, headers=None, body=None, stream_timeout=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            data = body if isinstance(body, (bytes, type(None))) else body.encode()
            headers = dict(headers or {})
            headers.setdefault("Connection", "close")
            conn.request(method, self.prefix + path, body=data, headers=headers)
            resp = conn.getresponse()
            result = Result(http_status=resp.status,
                            headers={k.lower(): v for k, v in resp.getheaders()})
            if result.headers.get("content-type", "").startswith("text/event-stream"):
                result.events, result.stream_error = read_sse(resp, stream_timeout or 30.0)
            else:
                result.text = resp.read().decode("utf-8", "replace")
                if result.text.strip():
                    try:
                        result.body = json.loads(result.text)
                    except ValueError:
                        result.body = MISSING
            return result
        finally:
            conn.close()


def read_sse(resp, timeout):
    """Parse events until the server closes the stream or `timeout` seconds pass."""
    events, data_lines, deadline = [], [], time.monotonic() + timeout
    while True:
        if time.monotonic() > deadline:
            return events, f"stream still open after {timeout:.0f}s"
        line = resp.readline()
        if not line:
            break
        line = line.decode("utf-8", "replace").rstrip("\r\n")
        if line == "":
            if data_lines:
                text = "\n".join(data_lines)
                try:
                    events.append(json.loads(text))
                except ValueError:
                    return events, f"event data is not JSON: {text[:80]!r}"
                data_lines = []
        elif line.startswith(":"):
            continue
        elif line.startswith("data:"):
            data_lines.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
    if data_lines:
        try:
            events.append(json.loads("\n".join(data_lines)))
        except ValueError:
            pass
    return events, None


class Binding:
    """Maps abstract operations to one binding (ACTS 4.1, A2A-FACTS section 1)."""

    _ids = itertools.count(1)

    def __init__(self, http, transport, version="1.0", auth_token=None):
        self.http = http
        self.transport = transport        # "jsonrpc" or "rest"
        self.version = version
        self.auth_token = auth_token      # --auth-token: sent on every abstract operation

    def with_token(self, token):
        """The same binding with other credentials (None: none)."""
        return type(self)(self.http, self.transport, self.version, token)

    def headers(self, extra=None):
        h = {"Content-Type": "application/json", "Accept": "application/json",
             "A2A-Version": self.version}
        if self.auth_token:
            h["Authorization"] = f"Bearer {self.auth_token}"
        h.update(extra or {})
        return h

    def close(self):
        pass

    def call(self, operation, params, stream_timeout=None):
        operation = OPERATION_ALIASES.get(operation, operation)
        params = dict(params or {})
        if operation == "get_agent_card":
            if params.pop("extended", False):
                operation = "get_extended_agent_card"
            else:
                result = self.http.request("GET", "/.well-known/agent-card.json",
                                           self.headers())
                result.request = {"method": "GET", "path": "/.well-known/agent-card.json"}
                return unwrap_plain(result)
        if operation not in JSONRPC_METHODS:
            raise ValueError(f"unknown abstract operation {operation!r}")
        if self.transport == "jsonrpc":
            return self._jsonrpc(operation, params, stream_timeout)
        return self._rest(operation, params, stream_timeout)

    # -- JSON-RPC ---------------------------------------------------------
    def _jsonrpc(self, operation, params, stream_timeout):
        request_id = f"acts-{next(self._ids)}"
        envelope = {"jsonrpc": "2.0", "id": request_id, "method": JSONRPC_METHODS[operation],
                    "params": request_body(operation, params)}
        headers = self.headers()
        if operation in STREAMING:
            headers["Accept"] = "text/event-stream"
        result = self.http.request("POST", "/", headers, json.dumps(envelope),
                                   stream_timeout=stream_timeout)
        result.request = {"method": "POST", "path": "/", "body": envelope}
        return unwrap_jsonrpc(result)

    # -- HTTP+JSON ----------------------------------------------------------
    def _rest(self, operation, params, stream_timeout):
        q = urllib.parse.quote
        body = None
        query = {}
        if operation in ("send_message", "send_streaming_message"):
            method = "POST"
            path = "/message:send" if operation == "send_message" else "/message:stream"
            body = request_body(operation, params)
        elif operation == "get_task":
            method, path = "GET", f"/tasks/{q(str(params.get('id', '')), safe='')}"
            query = {k: v for k, v in params.items() if k != "id"}
        elif operation == "list_tasks":
            method, path = "GET", "/tasks"
            query = dict(params)
            if "cursor" in query:
                query["pageToken"] = query.pop("cursor")
        elif operation == "cancel_task":
            method, path = "POST", f"/tasks/{q(str(params.get('id', '')), safe='')}:cancel"
            body = {k: v for k, v in params.items() if k != "id"}
        elif operation == "subscribe_to_task":
            method, path = "GET", f"/tasks/{q(str(params.get('id', '')), safe='')}:subscribe"
        elif operation == "get_extended_agent_card":
            method, path = "GET", "/extendedAgentCard"
        else:
            task_id = q(str(params.get("taskId", "")), safe="")
            base = f"/tasks/{task_id}/pushNotificationConfigs"
            if operation == "create_push_config":
                method, path, body = "POST", base, request_body(operation, params)
            elif operation == "list_push_configs":
                method, path = "GET", base
                query = {k: v for k, v in params.items() if k != "taskId"}
            else:
                method = "GET" if operation == "get_push_config" else "DELETE"
                path = f"{base}/{q(str(params.get('id', '')), safe='')}"
        if query:
            path += "?" + urllib.parse.urlencode(
                {k: (json.dumps(v) if isinstance(v, bool) else v) for k, v in query.items()})
        headers = self.headers()
        if operation in STREAMING:
            headers["Accept"] = "text/event-stream"
        data = None if body is None else json.dumps(body)
        if data is None:
            headers.pop("Content-Type")
        result = self.http.request(method, path, headers, data, stream_timeout=stream_timeout)
        result.request = {"method": method, "path": path, "body": body}
        return unwrap_rest(result)


def request_body(operation, params):
    """The request message for an operation from ACTS's abstract params (4.3)."""
    if operation in ("send_message", "send_streaming_message"):
        return dict(params)
    if operation == "create_push_config":
        config = dict(params.get("pushNotificationConfig") or {})
        config.setdefault("taskId", params.get("taskId"))
        for key, value in params.items():
            if key not in ("pushNotificationConfig", "taskId"):
                config.setdefault(key, value)
        return config
    if operation == "list_tasks" and "cursor" in params:
        params = dict(params)
        params["pageToken"] = params.pop("cursor")
    return dict(params)


def unwrap_plain(result):
    if result.http_status >= 400:
        result.error = normalize_rest_error(result)
    else:
        result.root = result.body
    return result


def unwrap_jsonrpc(result):
    if result.events is not None:
        events = []
        for event in result.events:
            if isinstance(event, dict) and "error" in event:
                result.error = normalize_jsonrpc_error(event["error"])
                break
            events.append(event.get("result", MISSING) if isinstance(event, dict) else event)
        result.raw_events = result.events
        result.events = events
        return result
    body = result.body
    if isinstance(body, dict) and "error" in body:
        result.error = normalize_jsonrpc_error(body["error"])
    elif isinstance(body, dict) and "result" in body:
        result.root = body["result"]
    else:
        result.error = {"name": f"HTTP {result.http_status} (no JSON-RPC response)",
                        "code": None, "message": result.text[:200], "data": MISSING,
                        "wire": MISSING}
    return result


def unwrap_rest(result):
    if result.events is not None:
        result.raw_events = result.events
        return result
    if result.http_status >= 400:
        result.error = normalize_rest_error(result)
    else:
        result.root = result.body if result.body is not MISSING else {}
    return result


def normalize_jsonrpc_error(error):
    if not isinstance(error, dict):
        return {"name": "malformed error", "code": None, "message": MISSING,
                "data": MISSING, "wire": error}
    code = error.get("code")
    name = BY_CODE.get(code, f"JSON-RPC error {code}")
    data = error.get("data", MISSING)
    reason = error_reason(data)
    if reason and BY_REASON.get(reason) not in (None, name):
        name = f"{name} (but ErrorInfo.reason {reason})"
    return {"name": name, "code": code, "reason": reason,
            "message": error.get("message", MISSING), "data": data, "wire": error}


def normalize_rest_error(result):
    body = result.body
    wire = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) \
        else MISSING
    details = wire.get("details", MISSING) if wire is not MISSING else MISSING
    reason = error_reason(details)
    status = result.http_status
    if reason and reason in BY_REASON:
        name = BY_REASON[reason]
        if ERRORS[name][1] != status:
            name = f"{name} (but HTTP {status}, expected {ERRORS[name][1]})"
    else:
        generic = {400: "InvalidParamsError", 500: "InternalError"}
        name = generic.get(status, f"HTTP {status}" + (f" reason {reason}" if reason else ""))
    message = wire.get("message", MISSING) if wire is not MISSING else MISSING
    return {"name": name, "code": status, "reason": reason, "message": message,
            "data": details, "wire": wire if wire is not MISSING else body}


def error_reason(details):
    if isinstance(details, list):
        for item in details:
            if isinstance(item, dict) and "ErrorInfo" in str(item.get("@type", "")):
                return item.get("reason")
    return None


# ------------------------------------------------------------------- gRPC --

class UnencodableParams(Exception):
    """The test's params cannot be written as the rpc's protobuf request."""


class GrpcBinding:
    """Abstract operations over gRPC (lf.a2a.v1.A2AService, ACTS 4.1): the
    ProtoJSON params parsed into the request message with json_format, the
    answer turned back into a ProtoJSON dict, so the assertions read the same
    as on the HTTP bindings. Errors: the gRPC status and the ErrorInfo in
    grpc-status-details-bin (A2A-FACTS section 2). `http_status` of a result
    is the HTTP status the same outcome has on HTTP+JSON (200 on OK), so a
    test's `expect: status: 200` applies unchanged. The card
    (get_agent_card) is an HTTP GET on every binding (ACTS 4.1)."""

    transport = "grpc"
    _METHODS = dict(JSONRPC_METHODS, create_push_config="CreateTaskPushNotificationConfig",
                    get_push_config="GetTaskPushNotificationConfig",
                    list_push_configs="ListTaskPushNotificationConfigs",
                    delete_push_config="DeleteTaskPushNotificationConfig")

    def __init__(self, http, target, version="1.0", auth_token=None, pb2=None, timeout=30.0,
                 required_defaults=True, _channel=None):
        self.required_defaults = required_defaults
        import grpc
        from google.protobuf import json_format, symbol_database  # noqa: F401
        from google.rpc import error_details_pb2, status_pb2  # noqa: F401 (registers ErrorInfo)
        self.grpc, self.json_format, self.status_pb2 = grpc, json_format, status_pb2
        self.http, self.target, self.version = http, target, version
        self.auth_token, self.timeout = auth_token, timeout
        self.pb2 = pb2
        self.service = pb2.DESCRIPTOR.services_by_name["A2AService"]
        self.channel = _channel or grpc.insecure_channel(target)
        self._owns_channel = _channel is None

    def with_token(self, token):
        return GrpcBinding(self.http, self.target, self.version, token, self.pb2, self.timeout,
                           self.required_defaults, _channel=self.channel)

    def close(self):
        if self._owns_channel:
            self.channel.close()

    def metadata(self):
        md = [("a2a-version", self.version)]
        if self.auth_token:
            md.append(("authorization", f"Bearer {self.auth_token}"))
        return md

    def headers(self, extra=None):          # for get_agent_card over HTTP
        h = {"Accept": "application/json", "A2A-Version": self.version}
        if self.auth_token:
            h["Authorization"] = f"Bearer {self.auth_token}"
        h.update(extra or {})
        return h

    def _message_class(self, descriptor):
        from google.protobuf import message_factory
        return message_factory.GetMessageClass(descriptor)

    def call(self, operation, params, stream_timeout=None):
        operation = OPERATION_ALIASES.get(operation, operation)
        params = dict(params or {})
        if operation == "get_agent_card":
            if params.pop("extended", False):
                operation = "get_extended_agent_card"
            else:
                result = self.http.request("GET", "/.well-known/agent-card.json",
                                           self.headers())
                result.request = {"method": "GET", "path": "/.well-known/agent-card.json"}
                return unwrap_plain(result)
        if operation not in self._METHODS:
            raise ValueError(f"unknown abstract operation {operation!r}")
        name = self._METHODS[operation]
        method = self.service.methods_by_name[name]
        body = request_body(operation, params)
        request = self._message_class(method.input_type)()
        try:
            self.json_format.ParseDict(body, request, ignore_unknown_fields=True)
        except self.json_format.ParseError as exc:
            raise UnencodableParams(f"{name}: params cannot be encoded as "
                                    f"{method.input_type.name}: {exc}") from None
        response_class = self._message_class(method.output_type)
        path = f"/{self.service.full_name}/{name}"
        result = Result(request={"rpc": name, "message": body})
        if method.server_streaming:
            rpc = self.channel.unary_stream(path, request_serializer=lambda m: m.SerializeToString(),
                                            response_deserializer=response_class.FromString)
            result.events = []
            try:
                for message in rpc(request, metadata=self.metadata(),
                                   timeout=stream_timeout or 30.0):
                    result.events.append(self.to_dict(message))
                result.http_status = 200
            except self.grpc.RpcError as exc:
                if exc.code() == self.grpc.StatusCode.DEADLINE_EXCEEDED and result.events:
                    result.http_status = 200
                    result.stream_error = (f"stream still open after "
                                           f"{stream_timeout or 30.0:.0f}s")
                else:
                    self._fail(result, exc)
                    if not result.events:
                        result.events = None
            result.raw_events = result.events
            return result
        rpc = self.channel.unary_unary(path, request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=response_class.FromString)
        try:
            answer = rpc(request, metadata=self.metadata(), timeout=self.timeout)
        except self.grpc.RpcError as exc:
            self._fail(result, exc)
            return result
        result.http_status = 200
        result.body = result.root = self.to_dict(answer)
        return result

    def to_dict(self, message):
        """ProtoJSON of an answer. proto3 cannot tell an empty REQUIRED field
        (ListTasksResponse.nextPageToken "" on the last page) from an absent
        one, and MessageToDict omits both; the JSON bindings must write
        required fields (spec 5.6.3, A2A-FACTS section 4), so they are written
        here at their default too. `required_defaults=False`
        (--grpc-plain-protojson) gives MessageToDict's output as it is."""
        d = self.json_format.MessageToDict(message)
        if self.required_defaults:
            self._fill_required(message, d)
        return d

    def _fill_required(self, message, d):
        from google.api import field_behavior_pb2
        from google.protobuf.descriptor import FieldDescriptor as F
        required = field_behavior_pb2.REQUIRED
        for f in message.DESCRIPTOR.fields:
            repeated = f.is_repeated if hasattr(f, "is_repeated") else \
                f.label == F.LABEL_REPEATED         # (protobuf < 5.28 has no is_repeated)
            is_map = f.message_type is not None and f.message_type.GetOptions().map_entry
            behaviors = f.GetOptions().Extensions[field_behavior_pb2.field_behavior]
            if required in behaviors and f.json_name not in d and not (
                    f.has_presence and not repeated):
                if is_map:
                    d[f.json_name] = {}
                elif repeated:
                    d[f.json_name] = []
                elif f.type == F.TYPE_ENUM:
                    d[f.json_name] = f.enum_type.values_by_number[0].name
                elif f.type == F.TYPE_BOOL:
                    d[f.json_name] = False
                elif f.type in (F.TYPE_STRING, F.TYPE_BYTES):
                    d[f.json_name] = ""
                elif f.message_type is None:
                    d[f.json_name] = 0
            if f.message_type is None or is_map or \
                    f.message_type.full_name.startswith("google.protobuf."):
                continue
            sub = d.get(f.json_name)
            if repeated:
                for item, item_d in zip(getattr(message, f.name), sub or []):
                    if isinstance(item_d, dict):
                        self._fill_required(item, item_d)
            elif isinstance(sub, dict) and message.HasField(f.name):
                self._fill_required(getattr(message, f.name), sub)

    def _fail(self, result, exc):
        code = exc.code().name if exc.code() is not None else "UNKNOWN"
        details = []
        for key, value in exc.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                status = self.status_pb2.Status.FromString(value)
                for any_message in status.details:
                    try:
                        details.append(self.json_format.MessageToDict(any_message))
                    except Exception:      # an Any of a type this process does not know
                        details.append({"@type": any_message.type_url})
        result.http_status = GRPC_HTTP_STATUS.get(code, 500)
        result.headers = {"grpc-status": code}
        result.error = normalize_grpc_error(code, exc.details(), details)


def normalize_grpc_error(code, message, details):
    """The abstract error of a gRPC status: the ErrorInfo reason names it (and
    the status must be the one the spec gives that error), else the status."""
    reason = error_reason(details)
    wire = {"code": code, "status": code, "message": message, "details": details}
    if reason and reason in BY_REASON:
        name = BY_REASON[reason]
        if ERRORS[name][3] != code:
            name = f"{name} (but gRPC {code}, expected {ERRORS[name][3]})"
    else:
        generic = {"INVALID_ARGUMENT": "InvalidParamsError", "INTERNAL": "InternalError",
                   "UNIMPLEMENTED": "MethodNotFoundError"}
        name = generic.get(code, f"gRPC {code}" + (f" reason {reason}" if reason else ""))
    return {"name": name, "code": code, "reason": reason, "message": message,
            "data": details, "wire": wire}
