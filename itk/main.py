"""The a2a_min agent of the A2A interop kit (a2aproject/a2a-itk).

The kit starts this file as its "current" agent, with the a2a_min checkout
mounted at agents/repo (so this file is agents/repo/itk/main.py)::

    uv run main.py --httpPort N --grpcPort M

and then sends it, and every other agent of its cluster, one nested
protobuf message, ``itk.Instruction`` (the kit's protos/instruction.proto),
serialized into a ``raw`` part of the user message (mediaType
application/x-protobuf, filename instruction.bin). The agent does what the
instruction says and answers with the texts it collected:

- ReturnResponse: its ``response`` text (``hold_task``: the task stays
  WORKING, saying "<texts>\\ntask-finished", for up to ten seconds or until it
  is canceled, so that a caller can disconnect and subscribe again);
- SeriesOfSteps: each step in turn, their texts concatenated (CONCAT);
- CallAgent: read the card at ``agent_card_uri``, call that agent over
  ``transport`` (jsonrpc, grpc, http_json) with a2a_client, streaming or not,
  with the nested instruction; ``push_notification``: ask it for webhooks to
  ``<url>/notifications``; ``resubscribe``: take the first event's task,
  disconnect, SubscribeToTask until "task-finished", then cancel the task.

The answer is the task's final status message: COMPLETED with the texts
joined by newlines (FAILED, with the reason, when a step failed). Served:
JSON-RPC at /jsonrpc (the kit posts to /jsonrpc/), HTTP+JSON at the root,
gRPC on the gRPC port (a2a_grpc), A2A 0.3 clients on all three too
(a2a_v03), webhooks to 127.0.0.1 only.

The instruction's schema is written below as a protobuf descriptor built by
hand from the field numbers of instruction.proto (no generated code): the
protobuf package builds the message class from it at start-up.
"""

import argparse
import base64
import logging
import os
import re
import sys
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)                 # a2a_min and its companions, from the checkout

from google.protobuf import descriptor_pb2, descriptor_pool  # noqa: E402

try:
    from google.protobuf.message_factory import GetMessageClass  # noqa: E402
except ImportError:                      # protobuf < 4.21
    from google.protobuf.message_factory import MessageFactory  # noqa: E402
    GetMessageClass = lambda d: MessageFactory().GetPrototype(d)  # noqa: E731

import a2a_client  # noqa: E402
import a2a_grpc  # noqa: E402
import a2a_min  # noqa: E402

log = logging.getLogger("itk-a2a_min")

HOLD_SECONDS = 10.0                      # how long a held task stays WORKING at most
FINISHED = "task-finished"               # the held task's marker, the kit's convention
CALL_TIMEOUT = 110.0                     # the kit waits 120 s for the whole chain

# -- the instruction schema (the kit's protos/instruction.proto, package itk) ----

# message name -> fields (name, number, type, message type or None, label, oneof index);
# and the oneofs of each message, in order.
_T = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _T.LABEL_OPTIONAL, _T.LABEL_REPEATED
_MSG, _STR, _BOOL, _ENUM = _T.TYPE_MESSAGE, _T.TYPE_STRING, _T.TYPE_BOOL, _T.TYPE_ENUM
SCHEMA = {
    "Instruction": ([("call_agent", 1, _MSG, "CallAgent", _OPT, 0),
                     ("return_response", 2, _MSG, "ReturnResponse", _OPT, 0),
                     ("steps", 3, _MSG, "SeriesOfSteps", _OPT, 0)], ["step"]),
    "SendMessageBehavior": ([], []),
    "PushNotificationBehavior": ([("url", 1, _STR, None, _OPT, None)], []),
    "ResubscribeBehavior": ([], []),
    "CallAgent": ([("transport", 1, _STR, None, _OPT, None),
                   ("agent_card_uri", 2, _STR, None, _OPT, None),
                   ("instruction", 3, _MSG, "Instruction", _OPT, None),
                   ("streaming", 4, _BOOL, None, _OPT, None),
                   ("send_message", 5, _MSG, "SendMessageBehavior", _OPT, 0),
                   ("push_notification", 6, _MSG, "PushNotificationBehavior", _OPT, 0),
                   ("resubscribe", 7, _MSG, "ResubscribeBehavior", _OPT, 0)], ["behavior"]),
    "ReturnResponse": ([("response", 1, _STR, None, _OPT, None),
                        ("hold_task", 2, _BOOL, None, _OPT, None)], []),
    "SeriesOfSteps": ([("instructions", 1, _MSG, "Instruction", _REP, None),
                       ("response_generator", 2, _ENUM, "SeriesOfSteps.ResponseGenerator",
                        _OPT, None)], []),
}
ENUMS = {"SeriesOfSteps": ("ResponseGenerator", [("RESPONSE_GENERATOR_UNSPECIFIED", 0),
                                                 ("RESPONSE_GENERATOR_CONCAT", 1)])}


def instruction_class():
    """The itk.Instruction message class, from SCHEMA, in a pool of its own."""
    proto = descriptor_pb2.FileDescriptorProto(name="itk/instruction.proto", package="itk",
                                               syntax="proto3")
    for name, (fields, oneofs) in SCHEMA.items():
        message = proto.message_type.add(name=name)
        for oneof in oneofs:
            message.oneof_decl.add(name=oneof)
        for fname, number, ftype, type_name, label, oneof in fields:
            field = message.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                field.type_name = ".itk." + type_name
            if oneof is not None:
                field.oneof_index = oneof
        if name in ENUMS:
            enum_name, values = ENUMS[name]
            enum = message.enum_type.add(name=enum_name)
            for value_name, number in values:
                enum.value.add(name=value_name, number=number)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return GetMessageClass(pool.FindMessageTypeByName("itk.Instruction"))


Instruction = instruction_class()


_BASE64 = re.compile(rb"[A-Za-z0-9+/_-]+={0,2}")


def _unbase64(text):
    if isinstance(text, str):
        text = text.encode("ascii")
    text = text.replace(b"-", b"+").replace(b"_", b"/")
    return base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)


def instruction_of(message):
    """The Instruction in a Message dict: a raw part (application/x-protobuf or
    instruction.bin), else a text part holding it in base64; None if none.

    A raw part whose bytes are themselves base64 text is decoded once more:
    a2a-sdk (Python) puts the base64 text of a 0.3 FileWithBytes into the proto
    ``bytes`` field (its proto_utils encodes the str as UTF-8), so over gRPC
    and HTTP+JSON its 0.3 clients send the instruction base64-encoded twice.
    A serialized Instruction is never base64 text: its first byte, a field
    tag (0x0a, 0x12, 0x1a), is not a base64 character."""
    for part in (message or {}).get("parts") or ():
        for blob in (part.get("raw"), part.get("text")):
            if not blob:
                continue
            try:
                data = _unbase64(blob)
                if _BASE64.fullmatch(data):
                    data = _unbase64(data)
                return Instruction.FromString(data)
            except Exception:       # noqa: BLE001 - not an instruction: try the next part
                continue
    return None


def instruction_part(instruction):
    return {"raw": base64.b64encode(instruction.SerializeToString()).decode("ascii"),
            "mediaType": "application/x-protobuf", "filename": "instruction.bin"}


def holds(instruction):
    """Whether any ReturnResponse in it (not in a call's nested one) asks to hold."""
    step = instruction.WhichOneof("step")
    if step == "return_response":
        return instruction.return_response.hold_task
    if step == "steps":
        return any(holds(s) for s in instruction.steps.instructions)
    return False


# -- what the instruction says, done --------------------------------------------

def run(instruction):
    """The texts the instruction answers with, in order."""
    step = instruction.WhichOneof("step")
    if step == "return_response":
        return [instruction.return_response.response]
    if step == "steps":
        texts = []
        for each in instruction.steps.instructions:
            texts.extend(run(each))
        return texts
    if step == "call_agent":
        return call_agent(instruction.call_agent)
    raise ValueError("an Instruction with no step")


BINDINGS = {"jsonrpc": "JSONRPC", "grpc": "GRPC", "http_json": "HTTP+JSON",
            "http+json": "HTTP+JSON", "rest": "HTTP+JSON"}


def texts_of(event):
    """The text parts of the agent's message in an answer or stream event: a
    Message, a Task's status message, a status update's message."""
    message = event.get("message")
    if message is None and "task" in event:
        message = (event["task"].get("status") or {}).get("message")
    if message is None and "statusUpdate" in event:
        message = (event["statusUpdate"].get("status") or {}).get("message")
    return [p["text"] for p in (message or {}).get("parts") or () if p.get("text")]


def history_texts(event):
    """Agent texts in a Task event's history (where a held task's answer may be)."""
    task = event.get("task") or {}
    return [p["text"] for m in task.get("history") or () if m.get("role") == "ROLE_AGENT"
            for p in m.get("parts") or () if p.get("text")]


def _check(event, uri):
    """A task the called agent failed or rejected is an error, with its reason."""
    task = event.get("task") or event.get("statusUpdate") or {}
    state = (task.get("status") or {}).get("state")
    if state in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED"):
        raise RuntimeError(f"{uri} answered {state}: {' '.join(texts_of(event)) or '(no reason)'}")


def call_agent(call):
    binding = BINDINGS.get(call.transport.lower())
    if binding is None:
        raise ValueError(f"unknown transport {call.transport!r}")
    behavior = call.WhichOneof("behavior") or "send_message"
    if behavior == "resubscribe" and not call.streaming:
        raise ValueError("resubscribe needs streaming")
    params = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER",
                          "parts": [instruction_part(call.instruction)]}}
    if behavior == "push_notification":
        url = call.push_notification.url
        if not url:
            raise ValueError("push_notification without a url")
        if "://" not in url:
            url = "http://" + url
        params["configuration"] = {"taskPushNotificationConfig": {
            "url": url.rstrip("/") + "/notifications", "token": "itk-token"}}
    log.info("calling %s over %s (%s, streaming %s)", call.agent_card_uri, binding, behavior,
             call.streaming)
    with a2a_client.Client(call.agent_card_uri, binding=binding, timeout=CALL_TIMEOUT) as client:
        log.info("  %s interface: %s %s", call.agent_card_uri, client.binding, client.url)
        if behavior == "resubscribe":
            return resubscribe(client, params, call.agent_card_uri)
        if not call.streaming:
            answer = client.call("SendMessage", params)
            _check(answer, call.agent_card_uri)
            return texts_of(answer)
        texts = []
        with client.call_stream("SendStreamingMessage", params) as stream:
            for event in stream:
                _check(event, call.agent_card_uri)
                texts.extend(texts_of(event))
        return texts


def resubscribe(client, params, uri):
    """Send (streaming), disconnect after the first event, follow the task
    again with SubscribeToTask until it says task-finished, cancel it."""
    with client.call_stream("SendStreamingMessage", params) as stream:
        first = next(stream)
    task_id = a2a_client._task_id(first)
    if not task_id:
        raise RuntimeError(f"{uri}: the first event names no task: {first}")
    log.info("  disconnected from task %s; subscribing again", task_id)
    texts, finished = [], False
    with client.subscribe(task_id) as stream:
        for event in stream:
            _check(event, uri)
            found = texts_of(event) or [t for t in history_texts(event) if FINISHED in t][-1:]
            texts.extend(t.replace(FINISHED, "") for t in found)
            if any(FINISHED in t for t in found):
                finished = True
                break
    if not finished:
        raise RuntimeError(f"{uri}: task {task_id} ended without saying {FINISHED}")
    try:
        client.cancel_task(task_id)
    except a2a_min.A2AError as error:      # (it may have completed meanwhile)
        log.info("  cancel of %s: %s", task_id, error)
    return texts


# -- the agent ---------------------------------------------------------------------

def agent(ctx):
    instruction = instruction_of(ctx.message)
    if instruction is None:
        yield a2a_min.status_update("TASK_STATE_FAILED", "No valid instruction found in request")
        return
    yield a2a_min.status_update("TASK_STATE_WORKING")
    try:
        text = "\n".join(run(instruction))
    except Exception as error:            # noqa: BLE001 - the caller sees why
        log.exception("instruction failed")
        yield a2a_min.status_update("TASK_STATE_FAILED", f"{type(error).__name__}: {error}")
        return
    if holds(instruction):
        yield a2a_min.status_update("TASK_STATE_WORKING", text + "\n" + FINISHED)
        if ctx.cancelled.wait(HOLD_SECONDS):
            return
        yield a2a_min.status_update("TASK_STATE_COMPLETED", text + "\n" + FINISHED)
        return
    yield a2a_min.status_update("TASK_STATE_COMPLETED", text)


# What a message may carry (section 3.3.2): the instruction, as the kit's agents
# send it (application/x-protobuf; some SDKs, application/octet-stream), and text.
INPUT_MODES = ["text/plain", "application/x-protobuf", "application/octet-stream"]


def make_server(**options):
    """The agent's server: JSON-RPC at /jsonrpc, 0.3 clients too, no console."""
    return a2a_min.Server(
        agent, name="ITK a2a_min agent", description="a2a_min following the ITK instructions.",
        version=a2a_min.__version__, rpc_path="/jsonrpc", compat="0.3", input_modes=INPUT_MODES,
        console=False, **options)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--httpPort", type=int, default=10102)
    parser.add_argument("--grpcPort", type=int, default=11002)
    args = parser.parse_args(argv)
    logging.basicConfig(level=getattr(logging, os.environ.get("ITK_LOG_LEVEL", "INFO").upper(),
                                      logging.INFO),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    host = "127.0.0.1"
    server = make_server(public_url=f"http://{host}:{args.httpPort}", push_notifications=True,
                         push_allow=("127.0.0.1/32",))
    log.info("a2a_min %s: JSON-RPC http://%s:%d/jsonrpc, HTTP+JSON http://%s:%d/, gRPC %s:%d",
             a2a_min.__version__, host, args.httpPort, host, args.httpPort, host, args.grpcPort)
    a2a_grpc.serve(server, host, args.httpPort, args.grpcPort)


if __name__ == "__main__":
    main()
