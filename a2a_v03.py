"""a2a_v03: A2A 0.3 on an a2a_min server, by translation to and from 1.0.

The companion of a2a_min.py that lets clients that still speak A2A 0.3 (the
a2a-sdk 0.3 line, frameworks pinned to it, platforms documented with its
shapes) call the same Server, agent and task store as 1.0 clients:
``Server(compat="0.3")``, or ``python a2a_min.py --compat 0.3``. Why a
companion: STYLE.md names "a translation for an older protocol version" as
one; a reader learning how a 1.0 request is answered must not scroll past 0.3,
and a server that speaks only 1.0 needs none of it. Delete this file and
a2a_min still serves 1.0 (and says how to serve 0.3 when a 0.3 call comes).

What 0.3 is, next to 1.0 (the A2A 0.3.0 specification):

- JSON-RPC methods with slash-separated names: message/send, message/stream,
  tasks/get, tasks/cancel, tasks/resubscribe, tasks/pushNotificationConfig/
  set|get|list|delete, agent/getAuthenticatedExtendedCard (a2a_min's
  LEGACY_METHODS names the 1.0 method of each). A request names no
  A2A-Version (a missing header means 0.3, section 3.2.1 of 1.0).
- Objects carry a ``kind`` discriminator: "task", "message", "status-update",
  "artifact-update"; parts are {"kind": "text" | "file" | "data", ...}, a
  file part nesting {"bytes" | "uri", "name", "mimeType"} under "file".
- Enums are lower case: roles "user" and "agent", states "submitted",
  "working", "input-required", "auth-required", "completed", "canceled",
  "failed", "rejected" (and "unknown").
- message/send answers the Task or the Message itself (no {"task": ...}
  wrapper); a stream's events are those objects, a status update saying
  ``final`` when it is the stream's last; ``configuration.blocking: false``
  is 1.0's returnImmediately.
- A push notification config nests under "pushNotificationConfig" beside the
  taskId; its authentication lists ``schemes``.
- The card names one ``url`` with its ``preferredTransport``, more in
  ``additionalInterfaces``, and the ``protocolVersion`` ("0.3.0").

How: a 0.3 request is translated to its 1.0 method and params, answered by
Server.call() exactly as a 1.0 request is (the same checks, the same task
store: a task made by a 0.3 client is read, followed and canceled by a 1.0
client, and the other way round), and the answer translated back. The 1.0
core does not know 0.3 exists: it calls this module at two points, the
JSON-RPC dispatch (a 0.3 method name) and the card. Each translation is a
function of one object, driven by the tables below; a 0.3 object that does
not say what it is (a ``kind`` that does not match its fields, an unknown
state) is an InvalidParamsError naming the field, never a half-translated
request.

The same tables serve the caller's side the other way round (request_v03,
answer_from_v03, event_from_v03): a2a_client calls a 0.3-only agent with them.

A webhook registered through 0.3 (tasks/pushNotificationConfig/set, or in
message/send's configuration) is sent 0.3's payload, the task in 0.3 shape
(push_payload); the store keeps which version each config was made in.
"""

__all__ = ["VERSION", "jsonrpc_response", "rest_response", "speaks_rest", "push_payload",
           "check_v10", "card", "to_v03", "from_v03", "request_v03",
           "answer_from_v03", "event_from_v03", "rest_request_v03", "rest_answer_from_v03",
           "rest_event_from_v03", "rest_error_from_v03", "PROTO_PACKAGE", "PROTO_ENUMS",
           "PROTO_MESSAGES", "PROTO_SERVICE", "GRPC_RPCS", "GRPC_RPC_OF", "grpc_call", "grpc_answer", "grpc_event_out",
           "grpc_request_v03"]

import base64
import json
import re

import a2a_min
from a2a_min import (INTERRUPTED_STATES, LEGACY_METHODS, METHODS, PROTOCOL_VERSION,
                     TERMINAL_STATES, CallContext, InvalidParamsError, InvalidRequestError,
                     Response, _JSON, _LINK, _answer, _error_headers, _json_body, _last_event_id,
                     _parse_json_body, _query_params, _sse_response)

VERSION = "0.3.0"

# -- tables ------------------------------------------------------------------------

_ROLES = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
_STATES = {"submitted": "TASK_STATE_SUBMITTED", "working": "TASK_STATE_WORKING",
           "input-required": "TASK_STATE_INPUT_REQUIRED", "completed": "TASK_STATE_COMPLETED",
           "canceled": "TASK_STATE_CANCELED", "failed": "TASK_STATE_FAILED",
           "rejected": "TASK_STATE_REJECTED", "auth-required": "TASK_STATE_AUTH_REQUIRED"}
_ROLES_BACK = {v: k for k, v in _ROLES.items()}
_STATES_BACK = {v: k for k, v in _STATES.items()}
_STREAM_ENDS = TERMINAL_STATES | INTERRUPTED_STATES

# JSON-RPC error codes 0.3 does not have (section 8 of 0.3 stops at -32007):
# the nearest one it has.
_CODES_BACK = {-32008: -32600, -32009: -32600, -31401: -32600}
# ... and for one method: 1.0 says UnsupportedOperation for an extended card
# the agent card does not promise; 0.3 had its own code for that.
_METHOD_CODES = {("GetExtendedAgentCard", -32004): -32007}

# Fields copied as they are, each object's own (1.0 name = 0.3 name).
_MESSAGE_FIELDS = ("messageId", "taskId", "contextId", "referenceTaskIds", "extensions",
                   "metadata")
_ARTIFACT_FIELDS = ("artifactId", "name", "description", "metadata", "extensions")


def _bad(path, problem):
    return InvalidParamsError(f"{path}: {problem} (an A2A 0.3 request)", field=path)


def _object(value, path):
    if not isinstance(value, dict):
        raise _bad(path, "must be an object")
    return value


def _kind(value, path, expected, fields):
    """Check an object's ``kind``: absent is taken as ``expected``; another
    kind, or an object of this kind without the field that makes it one, is
    refused with what to send."""
    kind = value.get("kind", expected)
    if kind != expected:
        raise _bad(f"{path}.kind", f"is {kind!r}, but this must be a {expected!r}")
    if fields and not any(f in value for f in fields):
        raise _bad(path, f"says kind {expected!r} but has no {' or '.join(fields)}")


# -- 0.3 to 1.0 (requests) ----------------------------------------------------------

def _part_in(part, path):
    if type(part) is dict and part.get("kind") == "text" and len(part) == 2 and \
            type(part.get("text")) is str:              # (the common case, first)
        return {"text": part["text"]}
    part = _object(part, path)
    kind = part.get("kind") or ("text" if "text" in part else "file" if "file" in part else
                                "data" if "data" in part else None)
    out = {"metadata": part["metadata"]} if part.get("metadata") else {}
    if kind == "text":
        _kind(part, path, "text", ("text",))
        return {"text": part["text"], **out}
    if kind == "data":
        _kind(part, path, "data", ("data",))
        return {"data": part["data"], **out}
    if kind == "file":
        _kind(part, path, "file", ("file",))
        file = _object(part["file"], f"{path}.file")
        if ("bytes" in file) == ("uri" in file):
            raise _bad(f"{path}.file", 'needs exactly one of "bytes" and "uri"')
        out.update({"raw": file["bytes"]} if "bytes" in file else {"url": file["uri"]})
        if file.get("name"):
            out["filename"] = file["name"]
        if file.get("mimeType"):
            out["mediaType"] = file["mimeType"]
        return out
    raise _bad(f"{path}.kind", f"must be 'text', 'file' or 'data', not {part.get('kind')!r}")


def _message_in(message, path="message"):
    message = _object(message, path)
    _kind(message, path, "message", ())
    role = message.get("role")
    if role not in _ROLES:
        raise _bad(f"{path}.role", f"must be 'user' or 'agent' in 0.3, not {role!r}")
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise _bad(f"{path}.parts", "must be a list of parts")
    out = {"messageId": message["messageId"]} if "messageId" in message else {}
    out["role"] = _ROLES[role]
    out["parts"] = [_part_in(p, f"{path}.parts[{i}]") for i, p in enumerate(parts)]
    for key in _MESSAGE_FIELDS[1:]:                 # (messageId first: as 1.0 clients send it)
        if key in message:
            out[key] = message[key]
    return out


def _push_config_in(config, path, task_id=None):
    config = _object(config, path)
    out = {k: config[k] for k in ("id", "url", "token") if k in config}
    auth = config.get("authentication")
    if auth:
        schemes = _object(auth, f"{path}.authentication").get("schemes") or []
        if not isinstance(schemes, list) or len(schemes) != 1:
            raise _bad(f"{path}.authentication.schemes", "must name one scheme (1.0 takes one)")
        out["authentication"] = {"scheme": schemes[0], **(
            {"credentials": auth["credentials"]} if auth.get("credentials") else {})}
    if task_id is not None:
        out["taskId"] = task_id
    return out


def _send_in(params):
    out = {"message": _message_in(params.get("message"))}
    config = params.get("configuration")
    if config:
        config = _object(config, "configuration")
        mine = {k: config[k] for k in ("acceptedOutputModes", "historyLength") if k in config}
        if config.get("blocking") is False:
            mine["returnImmediately"] = True
        if config.get("pushNotificationConfig"):
            mine["taskPushNotificationConfig"] = _push_config_in(
                config["pushNotificationConfig"], "configuration.pushNotificationConfig")
        out["configuration"] = mine
    if params.get("metadata"):
        out["metadata"] = params["metadata"]
    return out


def _task_id_in(params, *fields):
    if not isinstance(params.get("id"), str) or not params["id"]:
        raise _bad("id", "the task's id (a string) is required")
    return {"id": params["id"], **{f: params[f] for f in fields if f in params}}


def _set_config_in(params):
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise _bad("taskId", "the task's id (a string) is required")
    return _push_config_in(params.get("pushNotificationConfig"), "pushNotificationConfig",
                           task_id)


def _config_ref_in(params):
    out = {"taskId": _task_id_in(params)["id"]}
    if params.get("pushNotificationConfigId"):
        out["id"] = params["pushNotificationConfigId"]
    return out


def _list_in(params):
    out = {k: params[k] for k in ("contextId", "pageSize", "pageToken", "historyLength",
                                  "statusTimestampAfter", "includeArtifacts") if k in params}
    if "status" in params:
        if params["status"] not in _STATES:
            raise _bad("status", f"must be a 0.3 task state ({', '.join(_STATES)})")
        out["status"] = _STATES[params["status"]]
    return out


# method (0.3) -> what its params become in 1.0
_REQUESTS = {
    "message/send": _send_in,
    "message/stream": _send_in,
    "tasks/get": lambda p: _task_id_in(p, "historyLength"),
    "tasks/list": _list_in,
    "tasks/cancel": lambda p: _task_id_in(p, "metadata"),
    "tasks/resubscribe": lambda p: _task_id_in(p),
    "tasks/pushNotificationConfig/set": _set_config_in,
    "tasks/pushNotificationConfig/get": _config_ref_in,
    "tasks/pushNotificationConfig/list": lambda p: {"taskId": _task_id_in(p)["id"]},
    "tasks/pushNotificationConfig/delete": _config_ref_in,
    "agent/getAuthenticatedExtendedCard": lambda p: {},
}


def from_v03(method, params):
    """(1.0 method, 1.0 params) for a 0.3 JSON-RPC request."""
    return LEGACY_METHODS[method], _REQUESTS[method](params)


# -- 1.0 to 0.3 (answers) -------------------------------------------------------------

def _part_out(part):
    if "text" in part and len(part) == 1:           # (the common case, first)
        return {"kind": "text", "text": part["text"]}
    out = {"metadata": part["metadata"]} if part.get("metadata") else {}
    if "text" in part:
        return {"kind": "text", "text": part["text"], **out}
    if "data" in part:
        data = part["data"]
        return {"kind": "data", "data": data if isinstance(data, dict) else {"value": data}, **out}
    file = {"bytes": part["raw"]} if "raw" in part else {"uri": part.get("url", "")}
    if part.get("filename"):
        file["name"] = part["filename"]
    if part.get("mediaType"):
        file["mimeType"] = part["mediaType"]
    return {"kind": "file", "file": file, **out}


def _message_out(message):
    out = {"kind": "message", "role": _ROLES_BACK.get(message.get("role"), "agent"),
           "parts": [_part_out(p) for p in message.get("parts", ())]}
    for key in _MESSAGE_FIELDS:
        if key in message:
            out[key] = message[key]
    return out


# A status, an artifact and a task have the same structure in each 0.3
# dialect (JSON-RPC's, and the 0.3 proto's JSON on HTTP+JSON): only their
# messages, parts and state spellings differ, which the callers pass in.

def _status_in_dialect(status, message_out, state_out):
    out = {"state": state_out(status.get("state"))}
    if status.get("message"):
        out["message"] = message_out(status["message"])
    if status.get("timestamp"):
        out["timestamp"] = status["timestamp"]
    return out


def _artifact_in_dialect(artifact, part_out):
    out = {k: artifact[k] for k in _ARTIFACT_FIELDS if k in artifact}
    out["parts"] = [part_out(p) for p in artifact.get("parts", ())]
    return out


def _task_in_dialect(task, head, message_out, part_out, state_out):
    out = {**head, "id": task["id"], "contextId": task.get("contextId", ""),
           "status": _status_in_dialect(task.get("status", {}), message_out, state_out)}
    if "artifacts" in task:
        out["artifacts"] = [_artifact_in_dialect(a, part_out) for a in task["artifacts"]]
    if "history" in task:
        out["history"] = [message_out(m) for m in task["history"]]
    if task.get("metadata"):
        out["metadata"] = task["metadata"]
    return out


def _state_out(state):
    return _STATES_BACK.get(state, "unknown")


def _status_out(status):
    return _status_in_dialect(status, _message_out, _state_out)


def _artifact_out(artifact):
    return _artifact_in_dialect(artifact, _part_out)


_TASK_HEAD = {"kind": "task"}


def _task_out(task):
    return _task_in_dialect(task, _TASK_HEAD, _message_out, _part_out, _state_out)


def _event_out(event):
    """A 1.0 StreamResponse as the 0.3 event (Task, Message or update)."""
    if "task" in event:
        return _task_out(event["task"])
    if "message" in event:
        return _message_out(event["message"])
    if "statusUpdate" in event:
        update = event["statusUpdate"]
        out = {"kind": "status-update", "taskId": update["taskId"],
               "contextId": update.get("contextId", ""), "status": _status_out(update["status"]),
               "final": update["status"].get("state") in _STREAM_ENDS}
    else:
        update = event["artifactUpdate"]
        out = {"kind": "artifact-update", "taskId": update["taskId"],
               "contextId": update.get("contextId", ""),
               "artifact": _artifact_out(update["artifact"])}
        out.update((k, update[k]) for k in ("append", "lastChunk") if k in update)
    if update.get("metadata"):
        out["metadata"] = update["metadata"]
    return out


def _push_config_out(config):
    inner = {k: config[k] for k in ("id", "url", "token") if k in config}
    auth = config.get("authentication")
    if auth:
        inner["authentication"] = {"schemes": [auth["scheme"]], **(
            {"credentials": auth["credentials"]} if auth.get("credentials") else {})}
    return {"taskId": config.get("taskId", ""), "pushNotificationConfig": inner}


def _send_out(answer):
    return _task_out(answer["task"]) if "task" in answer else _message_out(answer["message"])


def _list_out(answer):
    return {**answer, "tasks": [_task_out(t) for t in answer.get("tasks", ())]}


# method (1.0) -> what its answer becomes in 0.3
_ANSWERS = {
    "SendMessage": _send_out,
    "GetTask": _task_out,
    "ListTasks": _list_out,
    "CancelTask": _task_out,
    "CreateTaskPushNotificationConfig": _push_config_out,
    "GetTaskPushNotificationConfig": _push_config_out,
    "ListTaskPushNotificationConfigs": lambda a: [_push_config_out(c)
                                                  for c in a.get("configs", ())],
    "DeleteTaskPushNotificationConfig": lambda a: None,
    "GetExtendedAgentCard": lambda card_: card(card_),
}


def to_v03(method, answer):
    """The 0.3 answer for a 1.0 method's answer (unary methods)."""
    return _ANSWERS[method](answer)


# -- the one shortcut: a Task's 0.3 JSON, written as text ---------------------------------
#
# The answers 0.3 clients wait for most (message/send, tasks/get and
# tasks/cancel: a Task) are written as JSON text directly, instead of being
# built as the 0.3 dicts above and then encoded: a 1.0 answer splices the
# task's stored JSON, and 0.3 has none stored. Measured on the task of a
# one-artifact message/send: 4.5 us against 8.5 us, and a dozen fewer objects
# for the garbage collector. The text is exactly that of _task_out(task): a
# test holds the two equal, task by task. Anything but a plain text part (a
# file, data) and free-form values (metadata) go through the tables above.

_text = json.encoder.encode_basestring          # a str as JSON, characters as they are (C)
# The tasks written here were stored as JSON: they cannot hold a cycle.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"),
                           check_circular=False).encode
_ROLE_TEXT = {role: _text(name) for role, name in _ROLES_BACK.items()}


def _value_text(value):
    # (Each JSONEncoder.encode() call builds an encoder, 1 us; a str needs none.)
    return _text(value) if type(value) is str else _encode(value)


def _parts_text(parts):
    return "[" + ",".join('{"kind":"text","text":' + _text(part["text"]) + "}"
                          if len(part) == 1 and type(part.get("text")) is str
                          else _encode(_part_out(part)) for part in parts) + "]"


def _message_text(message):
    text = ('{"kind":"message","role":' + _ROLE_TEXT.get(message.get("role"), '"agent"')
            + ',"parts":' + _parts_text(message.get("parts", ())))
    for key in _MESSAGE_FIELDS:
        if key in message:
            text += ',"' + key + '":' + _value_text(message[key])
    return text + "}"


def _artifact_text(artifact):
    text = "{"
    for key in _ARTIFACT_FIELDS:
        if key in artifact:
            text += '"' + key + '":' + _value_text(artifact[key]) + ","
    return text + '"parts":' + _parts_text(artifact.get("parts", ())) + "}"


def _task_text(task):
    status = task.get("status", {})
    text = ('{"kind":"task","id":' + _text(task["id"]) + ',"contextId":'
            + _text(task.get("contextId", "")) + ',"status":{"state":'
            + _text(_state_out(status.get("state"))))
    if status.get("message"):
        text += ',"message":' + _message_text(status["message"])
    if status.get("timestamp"):
        text += ',"timestamp":' + _text(status["timestamp"])
    text += "}"
    if "artifacts" in task:
        text += ',"artifacts":[' + ",".join(map(_artifact_text, task["artifacts"])) + "]"
    if "history" in task:
        text += ',"history":[' + ",".join(map(_message_text, task["history"])) + "]"
    if task.get("metadata"):
        text += ',"metadata":' + _encode(task["metadata"])
    return text + "}"


# method (1.0) -> the Task its answer is (None: not a Task)
_TASK_OF = {"GetTask": lambda answer: answer, "CancelTask": lambda answer: answer,
            "SendMessage": lambda answer: answer.get("task")}


def _result_body(request_id, method, answer):
    """The body of the JSON-RPC Response carrying the 0.3 form of a 1.0 answer."""
    task = _TASK_OF[method](answer) if method in _TASK_OF else None
    if task is not None:
        rid = str(request_id) if type(request_id) is int else _value_text(request_id)
        try:
            return ('{"jsonrpc":"2.0","id":' + rid + ',"result":' + _task_text(task)
                    + "}\n").encode("utf-8")
        except UnicodeEncodeError:              # (a lone surrogate: _json_body escapes it)
            pass
    return _json_body({"jsonrpc": "2.0", "id": request_id, "result": to_v03(method, answer)})


# -- the caller's side: a2a_client calling a 0.3 agent ------------------------------------
#
# The same tables the other way round: a 1.0 call becomes the 0.3 request,
# and the 0.3 answer the 1.0 one, so that a2a_client.Client (and the command
# line) speak to a 0.3-only agent in 1.0 terms.

_METHODS_V03 = {v: k for k, v in LEGACY_METHODS.items()}


def _config_v03(config):
    out = {k: config[k] for k in ("acceptedOutputModes", "historyLength") if k in config}
    out["blocking"] = not config.get("returnImmediately", False)
    if config.get("taskPushNotificationConfig"):
        out["pushNotificationConfig"] = _push_config_out(
            config["taskPushNotificationConfig"])["pushNotificationConfig"]
    return out


def _send_v03(params):
    out = {"message": _message_out(params["message"])}
    if params.get("configuration"):
        out["configuration"] = _config_v03(params["configuration"])
    if params.get("metadata"):
        out["metadata"] = params["metadata"]
    return out


def _list_v03(params):
    out = dict(params)
    if "status" in out:
        out["status"] = _STATES_BACK.get(out["status"], out["status"])
    return out


# method (1.0) -> its 0.3 params
_REQUESTS_V03 = {
    "SendMessage": _send_v03,
    "SendStreamingMessage": _send_v03,
    "GetTask": lambda p: {k: p[k] for k in ("id", "historyLength") if k in p},
    "ListTasks": _list_v03,
    "CancelTask": lambda p: {k: p[k] for k in ("id", "metadata") if k in p},
    "SubscribeToTask": lambda p: {"id": p["id"]},
    "CreateTaskPushNotificationConfig": _push_config_out,
    "GetTaskPushNotificationConfig": lambda p: {"id": p["taskId"],
                                                "pushNotificationConfigId": p["id"]},
    "ListTaskPushNotificationConfigs": lambda p: {"id": p["taskId"]},
    "DeleteTaskPushNotificationConfig": lambda p: {"id": p["taskId"],
                                                   "pushNotificationConfigId": p["id"]},
    "GetExtendedAgentCard": lambda p: {},
}


def request_v03(method, params):
    """(0.3 method, 0.3 params) of a 1.0 call. 0.3 has no tenants: a tenant
    is refused, not dropped."""
    params = dict(params)
    if params.pop("tenant", None):
        raise InvalidParamsError("A2A 0.3 has no tenants: this agent speaks only 0.3; call it "
                                 "without a tenant", field="tenant")
    return _METHODS_V03[method], _REQUESTS_V03[method](params)


def _status_in(status, path):
    status = _object(status, path)
    state = status.get("state")
    out = {"state": _STATES.get(state, "TASK_STATE_UNSPECIFIED")}
    if status.get("message"):
        out["message"] = _message_in(status["message"], f"{path}.message")
    if status.get("timestamp"):
        out["timestamp"] = status["timestamp"]
    return out


def _artifact_in(artifact, path):
    artifact = _object(artifact, path)
    out = {k: artifact[k] for k in _ARTIFACT_FIELDS if k in artifact}
    out["parts"] = [_part_in(p, f"{path}.parts[{i}]")
                    for i, p in enumerate(artifact.get("parts") or ())]
    return out


def _task_in(task, path="result"):
    task = _object(task, path)
    _kind(task, path, "task", ("id",))
    out = {"id": task["id"], "contextId": task.get("contextId", ""),
           "status": _status_in(task.get("status", {}), f"{path}.status")}
    if "artifacts" in task:
        out["artifacts"] = [_artifact_in(a, f"{path}.artifacts[{i}]")
                            for i, a in enumerate(task["artifacts"])]
    if "history" in task:
        out["history"] = [_message_in(m, f"{path}.history[{i}]")
                          for i, m in enumerate(task["history"])]
    if task.get("metadata"):
        out["metadata"] = task["metadata"]
    return out


def event_from_v03(event, path="result"):
    """The 1.0 StreamResponse of a 0.3 stream event (or message/send answer)."""
    event = _object(event, path)
    kind = event.get("kind")
    if kind == "task":
        return {"task": _task_in(event, path)}
    if kind == "message":
        return {"message": _message_in(event, path)}
    if kind == "status-update":
        out = {"taskId": event.get("taskId", ""), "contextId": event.get("contextId", ""),
               "status": _status_in(event.get("status", {}), f"{path}.status")}
        key = "statusUpdate"
    elif kind == "artifact-update":
        out = {"taskId": event.get("taskId", ""), "contextId": event.get("contextId", ""),
               "artifact": _artifact_in(event.get("artifact", {}), f"{path}.artifact")}
        out.update((k, event[k]) for k in ("append", "lastChunk") if k in event)
        key = "artifactUpdate"
    else:
        raise _bad(f"{path}.kind", f"is {kind!r}: not a 0.3 task, message or update")
    if event.get("metadata"):
        out["metadata"] = event["metadata"]
    return {key: out}


def _config_in(config):
    """A 0.3 TaskPushNotificationConfig as the 1.0 one (flat)."""
    config = _object(config, "result")
    return _push_config_in(config.get("pushNotificationConfig") or {},
                           "result.pushNotificationConfig", config.get("taskId", ""))


# method (1.0) -> its answer, from the 0.3 result
_ANSWERS_FROM_V03 = {
    "SendMessage": event_from_v03,
    "GetTask": _task_in,
    "ListTasks": lambda a: {**a, "tasks": [_task_in(t) for t in a.get("tasks", ())]},
    "CancelTask": _task_in,
    "CreateTaskPushNotificationConfig": _config_in,
    "GetTaskPushNotificationConfig": _config_in,
    "ListTaskPushNotificationConfigs": lambda a: {"configs": [_config_in(c) for c in a or ()]},
    "DeleteTaskPushNotificationConfig": lambda a: {},
    "GetExtendedAgentCard": lambda a: a,
}


def answer_from_v03(method, result):
    """The 1.0 answer of a 1.0 call, from what the 0.3 agent answered."""
    return _ANSWERS_FROM_V03[method](result)


# -- the card ---------------------------------------------------------------------------

def card(card_):
    """The card with what a 0.3 client reads added: ``url`` and
    ``preferredTransport`` (the JSON-RPC interface, the one that speaks 0.3),
    ``protocolVersion``, ``additionalInterfaces``, and
    ``supportsAuthenticatedExtendedCard``; and in ``supportedInterfaces`` one
    more entry for that interface, saying it speaks 0.3 too (a 1.0 client
    keeps choosing the 1.0 entries)."""
    speaks = [i for i in card_.get("supportedInterfaces", ())
              if i.get("protocolBinding") in ("JSONRPC", "HTTP+JSON") and
              i.get("protocolVersion") == PROTOCOL_VERSION]
    if not speaks:
        return card_
    # a2a_grpc serves 0.3's service (a2a.v1.A2AService) beside 1.0's on its port.
    speaks += [i for i in card_.get("supportedInterfaces", ())
               if i.get("protocolBinding") == "GRPC" and i.get("protocolVersion") == PROTOCOL_VERSION]
    out = dict(card_)
    out["supportedInterfaces"] = list(card_["supportedInterfaces"]) + [
        {"url": i["url"], "protocolBinding": i["protocolBinding"], "protocolVersion": "0.3"}
        for i in speaks]
    out.update(url=speaks[0]["url"], preferredTransport=speaks[0]["protocolBinding"],
               protocolVersion=VERSION, additionalInterfaces=[
                   {"url": i["url"], "transport": i["protocolBinding"]} for i in speaks])
    if card_.get("capabilities", {}).get("extendedAgentCard"):
        out["supportsAuthenticatedExtendedCard"] = True
    return out


# -- the HTTP+JSON binding of 0.3: the 0.3 proto's JSON --------------------------------------
#
# 0.3's REST routes live under /v1 and carry the JSON of the 0.3 proto (package
# a2a.v1), a dialect of its own: no ``kind``; a message's parts are its
# ``content``; a file part nests fileWithUri or fileWithBytes; the states are
# 1.0's names but for TASK_STATE_CANCELLED; a push config is named
# "tasks/{id}/pushNotificationConfigs/{configId}". Errors are {"message": ...}
# with the HTTP status of the error.

_PROTO_STATES_BACK = {"TASK_STATE_CANCELED": "TASK_STATE_CANCELLED"}
_PROTO_STATES = {v: k for k, v in _PROTO_STATES_BACK.items()}


def _proto_part_in(part, path):
    part = _object(part, path)
    out = {"metadata": part["metadata"]} if part.get("metadata") else {}
    if "text" in part:
        return {"text": part["text"], **out}
    if "data" in part:
        return {"data": _object(part["data"], f"{path}.data").get("data", {}), **out}
    if "file" in part:
        file = _object(part["file"], f"{path}.file")
        if ("fileWithUri" in file) == ("fileWithBytes" in file):
            raise _bad(f"{path}.file", 'needs exactly one of "fileWithUri" and "fileWithBytes"')
        out.update({"url": file["fileWithUri"]} if "fileWithUri" in file
                   else {"raw": _bytes_in(file["fileWithBytes"])})
        if file.get("name"):
            out["filename"] = file["name"]
        if file.get("mimeType"):
            out["mediaType"] = file["mimeType"]
        return out
    raise _bad(path, 'needs one of "text", "file" and "data"')


# The bytes of a file part. a2a-sdk (Python) 0.3 keeps a FileWithBytes' content
# as base64 text and puts that text, encoded as UTF-8, into the proto's bytes
# field (its proto_utils): over HTTP+JSON and gRPC it sends the bytes base64
# twice, and reads a file's bytes field as base64 text. The 0.3 specification
# and @a2a-js/sdk send them once. Read: decoded once, base64 text is taken as
# the SDK's (an ambiguity only for a file whose own bytes are base64 text);
# sent (answers, and a2a_client's requests): as the SDK reads them, which a
# client that follows the specification reads as the base64 text of the bytes.
_BASE64_TEXT = re.compile(rb"(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?|"
                          rb"[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=")


def _bytes_in(value):
    """1.0's ``raw`` (the bytes' base64) of a 0.3 proto JSON fileWithBytes."""
    if not isinstance(value, str):
        return value                      # (refused further on, as any wrong type)
    try:
        once = base64.b64decode(value.replace("-", "+").replace("_", "/")
                                + "=" * (-len(value) % 4), validate=True)
    except ValueError:
        return value
    return once.decode("ascii") if _BASE64_TEXT.fullmatch(once) else value


def _bytes_out(raw):
    """A 0.3 proto JSON fileWithBytes for 1.0's ``raw``, as a2a-sdk 0.3 reads it."""
    return base64.b64encode(str(raw).encode("ascii")).decode("ascii")


def _proto_message_in(message, path="message"):
    message = _object(message, path)
    if "parts" in message or "kind" in message:
        raise _bad(path, 'is a JSON-RPC 0.3 message (parts, kind); over HTTP+JSON 0.3 a '
                         'message carries "content", as the 0.3 proto has it')
    out = {k: message[k] for k in _MESSAGE_FIELDS if k in message}
    out["role"] = message.get("role", "ROLE_USER")
    out["parts"] = [_proto_part_in(p, f"{path}.content[{i}]")
                    for i, p in enumerate(message.get("content") or ())]
    return out


def _proto_push_in(config, path, task_id):
    config = _object(config, path)
    return _push_config_in(config, path, task_id)


def _proto_send_in(body):
    out = {"message": _proto_message_in(body.get("message"))}
    config = body.get("configuration")
    if config is not None:                  # (present, even empty: blocking is then false)
        config = _object(config, "configuration")
        mine = {k: config[k] for k in ("acceptedOutputModes", "historyLength") if k in config}
        if not config.get("blocking"):      # (proto3: a false bool is left out of the JSON)
            mine["returnImmediately"] = True
        if config.get("pushNotification"):
            mine["taskPushNotificationConfig"] = _proto_push_in(
                config["pushNotification"], "configuration.pushNotification", None)
        out["configuration"] = mine
    if body.get("metadata"):
        out["metadata"] = body["metadata"]
    return out


def _proto_part_out(part):
    out = {"metadata": part["metadata"]} if part.get("metadata") else {}
    if "text" in part:
        return {"text": part["text"], **out}
    if "data" in part:
        data = part["data"]
        return {"data": {"data": data if isinstance(data, dict) else {"value": data}}, **out}
    file = {"fileWithBytes": _bytes_out(part["raw"])} if "raw" in part else \
        {"fileWithUri": part.get("url")}
    if part.get("filename"):
        file["name"] = part["filename"]
    if part.get("mediaType"):
        file["mimeType"] = part["mediaType"]
    return {"file": file, **out}


def _proto_message_out(message):
    out = {k: message[k] for k in _MESSAGE_FIELDS if k in message}
    out["role"] = message.get("role", "ROLE_AGENT")
    out["content"] = [_proto_part_out(p) for p in message.get("parts", ())]
    return out


def _proto_state_out(state):
    return _PROTO_STATES_BACK.get(state, state)


def _proto_status_out(status):
    return _status_in_dialect(status, _proto_message_out, _proto_state_out)


def _proto_artifact_out(artifact):
    return _artifact_in_dialect(artifact, _proto_part_out)


def _proto_task_out(task):
    return _task_in_dialect(task, {}, _proto_message_out, _proto_part_out, _proto_state_out)


def _proto_event_out(event):
    if "task" in event:
        return {"task": _proto_task_out(event["task"])}
    if "message" in event:
        return {"message": _proto_message_out(event["message"])}
    if "statusUpdate" in event:
        update = event["statusUpdate"]
        return {"statusUpdate": {
            "taskId": update["taskId"], "contextId": update.get("contextId", ""),
            "status": _proto_status_out(update["status"]),
            "final": update["status"].get("state") in _STREAM_ENDS,
            **({"metadata": update["metadata"]} if update.get("metadata") else {})}}
    update = event["artifactUpdate"]
    out = {k: update[k] for k in ("taskId", "contextId", "append", "lastChunk", "metadata")
           if k in update}
    out["artifact"] = _proto_artifact_out(update["artifact"])
    return {"artifactUpdate": out}


def _proto_config_out(config):
    inner = _push_config_out(config)["pushNotificationConfig"]
    return {"name": f"tasks/{config.get('taskId', '')}/pushNotificationConfigs/"
                    f"{config.get('id', '')}", "pushNotificationConfig": inner}


def _proto_create_in(body, task_id):
    config = _object(body.get("config") or {}, "config")
    inner = dict(config.get("pushNotificationConfig") or {})
    if body.get("configId") and not inner.get("id"):
        inner["id"] = body["configId"]
    return _push_config_in(inner, "config.pushNotificationConfig", task_id)


# (verb, path after /v1 with {id} and {config} for segments) -> (1.0 method,
# params from (body, query, path values), answer in 0.3 proto JSON)
_REST = {
    ("POST", "/message:send"): ("SendMessage", lambda b, q, v: _proto_send_in(b),
                                lambda a: {"task": _proto_task_out(a["task"])} if "task" in a
                                else {"message": _proto_message_out(a["message"])}),
    ("POST", "/message:stream"): ("SendStreamingMessage", lambda b, q, v: _proto_send_in(b), None),
    ("GET", "/tasks"): ("ListTasks", lambda b, q, v: _list_query(q),
                        lambda a: {**a, "tasks": [_proto_task_out(t) for t in a["tasks"]]}),
    ("GET", "/tasks/{id}"): ("GetTask", lambda b, q, v: {"id": v["id"], **_history(q)},
                             _proto_task_out),
    ("POST", "/tasks/{id}:cancel"): ("CancelTask", lambda b, q, v: {"id": v["id"]},
                                     _proto_task_out),
    ("GET", "/tasks/{id}:subscribe"): ("SubscribeToTask", lambda b, q, v: {"id": v["id"]}, None),
    ("POST", "/tasks/{id}:subscribe"): ("SubscribeToTask", lambda b, q, v: {"id": v["id"]},
                                        None),
    ("POST", "/tasks/{id}/pushNotificationConfigs"): (
        "CreateTaskPushNotificationConfig", lambda b, q, v: _proto_create_in(b, v["id"]),
        _proto_config_out),
    ("GET", "/tasks/{id}/pushNotificationConfigs"): (
        "ListTaskPushNotificationConfigs", lambda b, q, v: {"taskId": v["id"]},
        lambda a: {"configs": [_proto_config_out(c) for c in a.get("configs", ())],
                   "nextPageToken": a.get("nextPageToken", "")}),
    ("GET", "/tasks/{id}/pushNotificationConfigs/{config}"): (
        "GetTaskPushNotificationConfig", lambda b, q, v: {"taskId": v["id"], "id": v["config"]},
        _proto_config_out),
    ("DELETE", "/tasks/{id}/pushNotificationConfigs/{config}"): (
        "DeleteTaskPushNotificationConfig",
        lambda b, q, v: {"taskId": v["id"], "id": v["config"]}, lambda a: {}),
    ("GET", "/card"): ("GetExtendedAgentCard", lambda b, q, v: {}, lambda a: card(a)),
}


def _history(query):
    value = query.get("historyLength")
    if value is None:
        return {}
    if not value.isdigit():
        raise _bad("historyLength", "must be a whole number")
    return {"historyLength": int(value)}


def _list_query(query):
    out = {k: query[k] for k in ("contextId", "pageToken") if k in query}
    for name in ("pageSize", "historyLength"):
        if name in query:
            if not query[name].isdigit():
                raise _bad(name, "must be a whole number")
            out[name] = int(query[name])
    if "status" in query:
        out["status"] = _PROTO_STATES.get(query["status"], query["status"])
    return out


def _rest_route(verb, path):
    """(route key, path values) of a /v1 path, or None."""
    rest = path[3:]                                 # after "/v1"
    segments = rest.strip("/").split("/")
    values, shape = {}, []
    for i, segment in enumerate(segments):
        head, colon, verb_part = segment.partition(":")
        if i == 1 and segments[0] == "tasks":
            values["id"], head = head, "{id}"
        elif i == 3 and segments[0] == "tasks":
            values["config"], head = head, "{config}"
        shape.append(head + (colon + verb_part if colon else ""))
    from urllib.parse import unquote
    values = {k: unquote(v) for k, v in values.items()}
    key = (verb, "/" + "/".join(shape))
    return (key, values) if key in _REST else None


def speaks_rest(path, headers):
    """Whether an HTTP request is 0.3's HTTP+JSON: a /v1 path, and no
    A2A-Version that says 1.x (with one, /v1 is the 1.0 tenant "v1")."""
    said = (headers.get("a2a-version") or "").strip()
    return (path == "/v1" or path.startswith("/v1/")) and (not said or said.startswith("0."))


def refusal(server, status, error):
    """A 0.3 HTTP+JSON error answer: HTTP ``status``, and the error's message
    and JSON-RPC code in a JSON object (0.3 had no google.rpc.Status)."""
    server.count_refusal(error)
    return Response(status, [("Content-Type", _JSON), *_error_headers(error)],
                    _json_body({"message": error.message, "code": error.code}))


def rest_response(server, request):
    """The Response to a 0.3 HTTP+JSON ``request`` (a2a_min's _Request). (A
    POST's body is JSON: a2a_min saw to that before, for every binding.)"""
    verb, path, query = request.method, request.path, request.query
    headers, body = request.headers, request.body

    def refuse(error):
        request.error = type(error)             # (what metrics and spans count it as)
        return refusal(server, error.http_status, error)
    try:
        found = _rest_route("GET" if verb == "HEAD" else verb, path)
        if found is None:
            raise a2a_min.MethodNotFoundError(
                f"nothing is served at {verb} {path} in A2A 0.3's HTTP+JSON binding (/v1/message:"
                "send, /v1/message:stream, /v1/tasks/{id}, ...); for A2A 1.0 send "
                "-H 'A2A-Version: 1.0'", metadata={"path": path})
        key, values = found
        method, make_params, answer_out = _REST[key]
        if verb == "HEAD" and answer_out is None:      # a HEAD must not open a subscription
            refused = refuse(a2a_min.UnsupportedOperationError(
                f"HEAD is not allowed on {path}, a stream; use GET"))
            return Response(405, refused.headers + [("Allow", "GET")], refused.body)
        data = {}
        if verb == "POST" and body.strip():
            data = _parse_json_body(body)
            if not isinstance(data, dict):
                raise InvalidParamsError("the body must be a JSON object", field="body")
        query_values = _query_params(query)
        params = make_params(data, query_values, values)
        call = request.call = _as_v10(CallContext(
            headers, query_values, base_url=request.base_url, spawn=request.spawn,
            peer=request.peer, tracing=server.tracing))
        if query_values or "last-event-id" in headers:
            call.last_event_id = _last_event_id(headers, query_values)

        def answer(result):
            if answer_out is None:
                return _sse_response(result, _proto_event_out,
                                     lambda error: {"message": error.message, "code": error.code})
            return Response(200, [("Content-Type", _JSON), _LINK], _json_body(answer_out(result)))
        return _answer(server.call(method, params, call), answer, refuse)
    except a2a_min.A2AError as error:
        return refuse(error)


# -- the caller's side of 0.3's HTTP+JSON ----------------------------------------------------
#
# a2a_client calls an agent that serves 0.3's HTTP+JSON (a2a-sdk 0.3's
# A2ARESTFastAPIApplication, @a2a-js/sdk 0.3's REST handler, a2a_min with
# compat) with the tables above read the other way: a 1.0 call becomes the
# route under the interface's /v1 and a body in the 0.3 proto's JSON (as
# a2a-sdk 0.3's client sends it: MessageToDict of the request message); the
# answer and each stream event (a StreamResponse) come back to 1.0. Errors are
# {"message": ...} with the HTTP status (a2a_min adds the JSON-RPC "code").

def _proto_state_in(state):
    return _PROTO_STATES.get(state, state or "TASK_STATE_UNSPECIFIED")


def _proto_status_in(status, path):
    status = _object(status, path)
    out = {"state": _proto_state_in(status.get("state"))}
    if status.get("message"):
        out["message"] = _proto_message_in(status["message"], f"{path}.message")
    if status.get("timestamp"):
        out["timestamp"] = status["timestamp"]
    return out


def _proto_artifact_in(artifact, path):
    artifact = _object(artifact, path)
    out = {k: artifact[k] for k in _ARTIFACT_FIELDS if k in artifact}
    out["parts"] = [_proto_part_in(p, f"{path}.parts[{i}]")
                    for i, p in enumerate(artifact.get("parts") or ())]
    return out


def _proto_task_in(task, path="task"):
    task = _object(task, path)
    if not isinstance(task.get("id"), str):
        raise _bad(f"{path}.id", "a task's id (a string) is required")
    out = {"id": task["id"], "contextId": task.get("contextId", ""),
           "status": _proto_status_in(task.get("status") or {}, f"{path}.status")}
    if "artifacts" in task:
        out["artifacts"] = [_proto_artifact_in(a, f"{path}.artifacts[{i}]")
                            for i, a in enumerate(task["artifacts"])]
    if "history" in task:
        out["history"] = [_proto_message_in(m, f"{path}.history[{i}]")
                          for i, m in enumerate(task["history"])]
    if task.get("metadata"):
        out["metadata"] = task["metadata"]
    return out


def rest_event_from_v03(event, path="event"):
    """The 1.0 StreamResponse of a 0.3 HTTP+JSON StreamResponse (a stream
    event, or a SendMessageResponse: the same oneof of task and message)."""
    event = _object(event, path)
    if "task" in event:
        return {"task": _proto_task_in(event["task"], f"{path}.task")}
    if "message" in event:
        return {"message": _proto_message_in(event["message"], f"{path}.message")}
    if "statusUpdate" in event:
        update = _object(event["statusUpdate"], f"{path}.statusUpdate")
        out = {"taskId": update.get("taskId", ""), "contextId": update.get("contextId", ""),
               "status": _proto_status_in(update.get("status") or {},
                                          f"{path}.statusUpdate.status")}
        key = "statusUpdate"
    elif "artifactUpdate" in event:
        update = _object(event["artifactUpdate"], f"{path}.artifactUpdate")
        out = {"taskId": update.get("taskId", ""), "contextId": update.get("contextId", ""),
               "artifact": _proto_artifact_in(update.get("artifact") or {},
                                              f"{path}.artifactUpdate.artifact")}
        out.update((k, update[k]) for k in ("append", "lastChunk") if k in update)
        key = "artifactUpdate"
    else:
        raise _bad(path, "has none of task, message, statusUpdate and artifactUpdate")
    if update.get("metadata"):
        out["metadata"] = update["metadata"]
    return {key: out}


def _proto_config_in(config, path="config"):
    """A 0.3 TaskPushNotificationConfig (named tasks/{id}/pushNotificationConfigs/
    {configId}) as the 1.0 one."""
    config = _object(config, path)
    name = str(config.get("name", "")).split("/")
    inner = dict(_object(config.get("pushNotificationConfig") or {},
                         f"{path}.pushNotificationConfig"))
    if len(name) == 4 and name[0] == "tasks" and name[3] and not inner.get("id"):
        inner["id"] = name[3]
    return _push_config_in(inner, f"{path}.pushNotificationConfig",
                           name[1] if len(name) >= 2 and name[0] == "tasks" else "")


def _call_push_out(config):
    return _push_config_out(config)["pushNotificationConfig"]


def _call_send_out(params):
    out = {"message": _proto_message_out(params["message"])}
    config = params.get("configuration") or {}
    mine = {k: config[k] for k in ("acceptedOutputModes", "historyLength") if k in config}
    mine["blocking"] = not config.get("returnImmediately", False)
    if config.get("taskPushNotificationConfig"):
        mine["pushNotification"] = _call_push_out(config["taskPushNotificationConfig"])
    out["configuration"] = mine
    if params.get("metadata"):
        out["metadata"] = params["metadata"]
    return out


def _call_create_out(params):
    name = f"tasks/{params['taskId']}"
    return {"parent": name, **({"configId": params["id"]} if params.get("id") else {}),
            "config": {"name": f"{name}/pushNotificationConfigs/{params.get('id', '')}",
                       "pushNotificationConfig": _call_push_out(params)}}


def _call_list_query(params):
    out = {k: params[k] for k in ("contextId", "pageSize", "pageToken", "historyLength",
                                  "statusTimestampAfter", "includeArtifacts") if k in params}
    if "status" in params:
        out["status"] = _PROTO_STATES_BACK.get(params["status"], params["status"])
    return out


# 1.0 method -> (verb, route under /v1: {name} is that param, the body (None: a
# query of these params), the 1.0 answer of the 0.3 answer (None: a stream))
_CALLS = {
    "SendMessage": ("POST", "/message:send", _call_send_out, rest_event_from_v03),
    "SendStreamingMessage": ("POST", "/message:stream", _call_send_out, None),
    "GetTask": ("GET", "/tasks/{id}", lambda p: {k: p[k] for k in ("historyLength",) if k in p},
                _proto_task_in),
    "ListTasks": ("GET", "/tasks", _call_list_query, lambda a: {
        **a, "tasks": [_proto_task_in(t, f"tasks[{i}]")
                       for i, t in enumerate(a.get("tasks") or ())]}),
    "CancelTask": ("POST", "/tasks/{id}:cancel", lambda p: {"name": f"tasks/{p['id']}"},
                   _proto_task_in),
    # (GET, as 0.3's proto annotation has it: a2a-sdk 0.3 serves only GET)
    "SubscribeToTask": ("GET", "/tasks/{id}:subscribe", lambda p: {}, None),
    "CreateTaskPushNotificationConfig": ("POST", "/tasks/{taskId}/pushNotificationConfigs",
                                         _call_create_out, _proto_config_in),
    "GetTaskPushNotificationConfig": ("GET", "/tasks/{taskId}/pushNotificationConfigs/{id}",
                                      lambda p: {}, _proto_config_in),
    "ListTaskPushNotificationConfigs": (
        "GET", "/tasks/{taskId}/pushNotificationConfigs",
        lambda p: {k: p[k] for k in ("pageSize", "pageToken") if k in p},
        lambda a: {"configs": [_proto_config_in(c, f"configs[{i}]") for i, c in enumerate(
            (a.get("configs") if isinstance(a, dict) else a) or ())],
            **({"nextPageToken": a["nextPageToken"]} if isinstance(a, dict)
               and a.get("nextPageToken") else {})}),
    "DeleteTaskPushNotificationConfig": ("DELETE", "/tasks/{taskId}/pushNotificationConfigs/{id}",
                                         lambda p: {}, lambda a: {}),
    "GetExtendedAgentCard": ("GET", "/card", lambda p: {}, lambda a: a),
}


def rest_request_v03(method, params):
    """(verb, path under the interface's /v1, query dict, body dict or None)
    of a 1.0 call on 0.3's HTTP+JSON binding. 0.3 has no tenants: a tenant
    is refused, not dropped."""
    from urllib.parse import quote
    params = dict(params)
    if params.pop("tenant", None):
        raise InvalidParamsError("A2A 0.3 has no tenants: this agent speaks only 0.3; call it "
                                 "without a tenant", field="tenant")
    verb, path, make, _ = _CALLS[method]
    while "{" in path:
        name = path[path.index("{") + 1:path.index("}")]
        if not params.get(name):
            raise InvalidParamsError(f"{method} needs {name}", field=name)
        path = path.replace("{" + name + "}", quote(str(params[name]), safe=""), 1)
    made = make(params)
    return (verb, path, made, None) if verb in ("GET", "DELETE") else (verb, path, {}, made)


def rest_answer_from_v03(method, answer):
    """The 1.0 answer of a 1.0 call, from a 0.3 HTTP+JSON answer's JSON."""
    return _CALLS[method][3](answer)


def rest_error_from_v03(answer):
    """(JSON-RPC code or None, message) of a 0.3 HTTP+JSON error answer
    ({"message": ...}; a2a_min adds "code"), or None if it is not one."""
    if isinstance(answer, dict) and isinstance(answer.get("message"), str) and \
            set(answer) <= {"message", "code", "details", "error"}:
        code = answer.get("code")
        return (code if isinstance(code, int) else None), answer["message"]
    return None


# -- the gRPC binding of 0.3: service a2a.v1.A2AService ---------------------------------------
#
# 0.3's gRPC carries the messages whose JSON the HTTP+JSON routes above speak,
# so a2a_grpc serves and calls it with the same translation: a request message
# as its JSON, through the route of _REST (or _CALLS) that does the same. The
# messages are described here as facts of the 0.3 specification's proto
# (package a2a.v1): per message, "name number type [repeated] [oneof=...]
# [json=...]"; a2a_grpc builds the descriptors from them (in a pool of their
# own: a process may also hold the reference SDK's). GetAgentCard is left out
# (UNIMPLEMENTED): its card is the one at /.well-known/agent-card.json.

PROTO_PACKAGE = "a2a.v1"
PROTO_ENUMS = {
    "TaskState": ("TASK_STATE_UNSPECIFIED", "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING",
                  "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELLED",
                  "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_REJECTED", "TASK_STATE_AUTH_REQUIRED"),
    "Role": ("ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"),
}
_STRUCT, _TIME = ".google.protobuf.Struct", ".google.protobuf.Timestamp"
PROTO_MESSAGES = {
    "SendMessageConfiguration": ("accepted_output_modes 1 string repeated",
                                 "push_notification 2 PushNotificationConfig",
                                 "history_length 3 int32", "blocking 4 bool"),
    "Task": ("id 1 string", "context_id 2 string", "status 3 TaskStatus",
             "artifacts 4 Artifact repeated", "history 5 Message repeated", f"metadata 6 {_STRUCT}"),
    "TaskStatus": ("state 1 TaskState", "update 2 Message json=message", f"timestamp 3 {_TIME}"),
    "Part": ("text 1 string oneof=part", "file 2 FilePart oneof=part",
             "data 3 DataPart oneof=part", f"metadata 4 {_STRUCT}"),
    "FilePart": ("file_with_uri 1 string oneof=file", "file_with_bytes 2 bytes oneof=file",
                 "mime_type 3 string", "name 4 string"),
    "DataPart": (f"data 1 {_STRUCT}",),
    "Message": ("message_id 1 string", "context_id 2 string", "task_id 3 string", "role 4 Role",
                "content 5 Part repeated", f"metadata 6 {_STRUCT}", "extensions 7 string repeated"),
    "Artifact": ("artifact_id 1 string", "name 3 string", "description 4 string",
                 "parts 5 Part repeated", f"metadata 6 {_STRUCT}", "extensions 7 string repeated"),
    "TaskStatusUpdateEvent": ("task_id 1 string", "context_id 2 string", "status 3 TaskStatus",
                              "final 4 bool", f"metadata 5 {_STRUCT}"),
    "TaskArtifactUpdateEvent": ("task_id 1 string", "context_id 2 string", "artifact 3 Artifact",
                                "append 4 bool", "last_chunk 5 bool", f"metadata 6 {_STRUCT}"),
    "PushNotificationConfig": ("id 1 string", "url 2 string", "token 3 string",
                               "authentication 4 AuthenticationInfo"),
    "AuthenticationInfo": ("schemes 1 string repeated", "credentials 2 string"),
    "TaskPushNotificationConfig": ("name 1 string",
                                   "push_notification_config 2 PushNotificationConfig"),
    "SendMessageRequest": ("request 1 Message json=message",
                           "configuration 2 SendMessageConfiguration", f"metadata 3 {_STRUCT}"),
    "GetTaskRequest": ("name 1 string", "history_length 2 int32"),
    "CancelTaskRequest": ("name 1 string",),
    "GetTaskPushNotificationConfigRequest": ("name 1 string",),
    "DeleteTaskPushNotificationConfigRequest": ("name 1 string",),
    "CreateTaskPushNotificationConfigRequest": ("parent 1 string", "config_id 2 string",
                                                "config 3 TaskPushNotificationConfig"),
    "TaskSubscriptionRequest": ("name 1 string",),
    "ListTaskPushNotificationConfigRequest": ("parent 1 string", "page_size 2 int32",
                                              "page_token 3 string"),
    "SendMessageResponse": ("task 1 Task oneof=payload", "msg 2 Message oneof=payload json=message"),
    "StreamResponse": ("task 1 Task oneof=payload", "msg 2 Message oneof=payload json=message",
                       "status_update 3 TaskStatusUpdateEvent oneof=payload",
                       "artifact_update 4 TaskArtifactUpdateEvent oneof=payload"),
    "ListTaskPushNotificationConfigResponse": ("configs 1 TaskPushNotificationConfig repeated",
                                               "next_page_token 2 string"),
}
PROTO_SERVICE = "a2a.v1.A2AService"

# rpc -> (request message, response message, streams, the 1.0 method and
# _REST's route for it, which fields of the request name the task or config)
GRPC_RPCS = {
    "SendMessage": ("SendMessageRequest", "SendMessageResponse", False,
                    ("POST", "/message:send")),
    "SendStreamingMessage": ("SendMessageRequest", "StreamResponse", True,
                             ("POST", "/message:stream")),
    "GetTask": ("GetTaskRequest", "Task", False, ("GET", "/tasks/{id}")),
    "CancelTask": ("CancelTaskRequest", "Task", False, ("POST", "/tasks/{id}:cancel")),
    "TaskSubscription": ("TaskSubscriptionRequest", "StreamResponse", True,
                         ("GET", "/tasks/{id}:subscribe")),
    "CreateTaskPushNotificationConfig": ("CreateTaskPushNotificationConfigRequest",
                                         "TaskPushNotificationConfig", False,
                                         ("POST", "/tasks/{id}/pushNotificationConfigs")),
    "GetTaskPushNotificationConfig": ("GetTaskPushNotificationConfigRequest",
                                      "TaskPushNotificationConfig", False,
                                      ("GET", "/tasks/{id}/pushNotificationConfigs/{config}")),
    "ListTaskPushNotificationConfig": ("ListTaskPushNotificationConfigRequest",
                                       "ListTaskPushNotificationConfigResponse", False,
                                       ("GET", "/tasks/{id}/pushNotificationConfigs")),
    "DeleteTaskPushNotificationConfig": ("DeleteTaskPushNotificationConfigRequest",
                                         "google.protobuf.Empty", False,
                                         ("DELETE", "/tasks/{id}/pushNotificationConfigs/{config}")),
}
# 1.0 method -> its 0.3 rpc
GRPC_RPC_OF = {_REST[route][0]: rpc for rpc, (_, _, _, route) in GRPC_RPCS.items()}


def _resource(name):
    """{"id", "config"} of a resource name: tasks/{id}, tasks/{id}/pushNotificationConfigs/{c}."""
    parts = str(name or "").split("/")
    if len(parts) < 2 or parts[0] != "tasks" or not parts[1]:
        raise _bad("name", f"must be tasks/{{id}}[/pushNotificationConfigs/{{configId}}], "
                           f"not {name!r}")
    values = {"id": parts[1]}
    if len(parts) == 4 and parts[2] == "pushNotificationConfigs":
        values["config"] = parts[3]
    return values


def grpc_call(rpc, request, call):
    """(1.0 method, 1.0 params, the answer in 0.3 JSON or None for a stream)
    of a 0.3 gRPC request (its message as JSON: json_format.MessageToDict);
    ``call``, its CallContext, is made the one a 1.0 operation reads."""
    _as_v10(call)
    route = GRPC_RPCS[rpc][3]
    method, make_params, answer_out = _REST[route]
    values = {} if "{id}" not in route[1] else _resource(request.get("name") or
                                                         request.get("parent"))
    query = {k: str(v) for k, v in request.items() if not isinstance(v, (dict, list))}
    return method, make_params(request, query, values), answer_out


def grpc_answer(rpc, answer):
    """A unary rpc's 1.0 answer as its 0.3 response message's JSON."""
    return _REST[GRPC_RPCS[rpc][3]][2](answer)


def grpc_event_out(event):
    """A 1.0 StreamResponse as the 0.3 StreamResponse's JSON."""
    return _proto_event_out(event)


def grpc_request_v03(method, params):
    """(rpc, request message's JSON) of a 1.0 call on 0.3's gRPC binding (the
    caller's side); UnsupportedOperationError for what 0.3's gRPC lacks."""
    rpc = GRPC_RPC_OF.get(method)
    if rpc is None:
        raise a2a_min.UnsupportedOperationError(
            f"A2A 0.3's gRPC binding has no {method}; this agent speaks only 0.3 there: use its "
            "JSON-RPC or HTTP+JSON interface")
    _, _, query, body = rest_request_v03(method, params)
    if body is None:
        body = dict(query)
    task = params.get("taskId") or params.get("id")
    if method in ("GetTask", "CancelTask", "SubscribeToTask"):
        body["name"] = f"tasks/{task}"
    elif method in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        body["name"] = f"tasks/{task}/pushNotificationConfigs/{params['id']}"
    elif method == "ListTaskPushNotificationConfigs":
        body["parent"] = f"tasks/{task}"
    return rpc, body


# -- 0.3 inside a 1.0 request -----------------------------------------------------------------

def check_v10(method, params):
    """Refuse a 1.0 SendMessage that carries 0.3's fields (a ``kind``, a 0.3
    file part): ProtoJSON would drop them unread, and the agent would get
    less than was meant. Server.call() asks this when the server speaks 0.3."""
    if method not in ("SendMessage", "SendStreamingMessage"):
        return
    message = params.get("message")
    if not isinstance(message, dict):
        return
    if "kind" in message:
        raise InvalidParamsError(
            "message.kind is an A2A 0.3 field; a 1.0 message has none: leave it out, or send "
            "the 0.3 method message/send without A2A-Version", field="message.kind")
    for i, part in enumerate(message.get("parts") or ()):
        if isinstance(part, dict) and ("kind" in part or "file" in part):
            field = "kind" if "kind" in part else "file"
            raise InvalidParamsError(
                f"message.parts[{i}].{field} is an A2A 0.3 field; a 1.0 part is "
                '{"text": ...}, {"data": ...}, {"url": ...} or {"raw": ...}: send 1.0 parts, or '
                "the 0.3 method message/send without A2A-Version",
                field=f"message.parts[{i}].{field}")


# -- push notifications ---------------------------------------------------------------------

def push_payload(task, event):
    """What a webhook registered through 0.3 is sent for an event: the task
    as it is now, in 0.3 shape (0.3 posts the Task, not the event)."""
    return _task_out(task)


# -- the JSON-RPC binding ------------------------------------------------------------------

def _error_out(request_id, error, method=None):
    body = a2a_min._jsonrpc_error(request_id, error)
    code = _METHOD_CODES.get((method, error.code), error.code)
    body["error"]["code"] = _CODES_BACK.get(code, code)
    return body


def jsonrpc_response(server, name, params, request_id, request):
    """The Response to a 0.3 JSON-RPC request (a2a_min's JSON-RPC binding
    calls this for a 0.3 method name, when the server speaks 0.3, with the
    _Request whose ``call`` it made)."""
    method, call = LEGACY_METHODS[name], request.call

    def answer(result):
        if METHODS[method][2]:
            return _sse_response(result, lambda event: {
                "jsonrpc": "2.0", "id": request_id, "result": _event_out(event)},
                lambda error: _error_out(request_id, error, method))
        return Response(200, [("Content-Type", _JSON), _LINK],
                        _result_body(request_id, method, result))

    def refuse(error):
        server.count_refusal(error)
        request.error = type(error)             # (what metrics and spans count it as)
        status = error.http_status if error.challenge or isinstance(   # (as 1.0 answers)
            error, (a2a_min.PayloadTooLargeError, a2a_min.CallerLimitError)) else 200
        return Response(status, [("Content-Type", _JSON), _LINK, *_error_headers(error)],
                        _json_body(_error_out(request_id, error, method)))

    try:
        said = call.headers.get("a2a-version") or call.query.get("A2A-Version")
        if said and not said.strip().startswith("0."):
            raise InvalidRequestError(
                f"{name!r} is an A2A 0.3 method, but this request says A2A-Version: "
                f"{said.strip()}; send the {said.strip()} method {method!r}, or leave the "
                "header out to speak 0.3", metadata={"method": name})
        method, params = from_v03(name, params)
        if method == "GetTaskPushNotificationConfig" and "id" not in params:
            # 0.3 may ask for "the" config of a task: its first.
            listed = server.call("ListTaskPushNotificationConfigs",
                                 {"taskId": params["taskId"]}, _as_v10(call))
            if not listed.get("configs"):
                raise a2a_min.TaskNotFoundError(
                    f"task {params['taskId']!r} has no push notification config",
                    metadata={"taskId": params["taskId"]})
            params["id"] = listed["configs"][0]["id"]
        return _answer(server.call(method, params, _as_v10(call)), answer, refuse)
    except a2a_min.A2AError as error:
        return refuse(error)


def _as_v10(call):
    """The CallContext of a 0.3 request, as the 1.0 operations read it: the
    version it is answered in, and its extensions (0.3 also sent them as
    X-A2A-Extensions)."""
    headers = dict(call.headers)
    headers["a2a-version"] = PROTOCOL_VERSION
    call.translated_from = "0.3"             # (its webhooks get 0.3 payloads)
    if "a2a-extensions" not in headers and "x-a2a-extensions" in headers:
        headers["a2a-extensions"] = headers["x-a2a-extensions"]
    call.headers = headers
    return call
