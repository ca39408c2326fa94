"""Enum values this version does not know, from a newer agent (issue 54).

ProtoJSON writes an enum as its name and a parser accepts its number too; a
newer peer may send a value this version lacks, as a number ("state": 99,
"role": 7) or as a name ("TASK_STATE_PAUSED"), and fields this version does
not have ("generation", "futureField"). The client carries them through
unchanged (the interop kit's wire vectors: {"state": 99} stays 99) and fails
open: an unknown state is neither an error nor the end of a stream, and a
known one given as its number (3: COMPLETED) counts as that state.

The agent is a fake on 127.0.0.1 (http.server in a thread) with crafted
answers, on both JSON bindings (JSON-RPC and HTTP+JSON), with the card of
a2a_min; and, if grpcio is here, a raw gRPC handler whose answers carry
state 99 in the protobuf."""

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import a2a_cli
import a2a_client
import a2a_min

BINDINGS = ("JSONRPC", "HTTP+JSON")
# A part and an artifact with a field this version does not have.
PART = {"text": "done", "futureField": {"x": 1}}


def message(role=7, text_id="m1"):
    return {"messageId": text_id, "role": role, "parts": [dict(PART)], "futureField": True}


def task(task_id, state):
    return {"id": task_id, "contextId": "c1", "generation": 5, "futureField": "x",
            "status": {"state": state, "timestamp": "2026-12-07T00:00:00.000Z",
                       "message": message(7, "s-" + task_id), "futureField": 1},
            "artifacts": [{"artifactId": "a1", "parts": [dict(PART)], "futureField": 2}],
            "history": [message(7)]}


def status(task_id, state, **extra):
    return {"statusUpdate": {"taskId": task_id, "contextId": "c1", "status": {"state": state},
                             "generation": 6, "futureField": 1, **extra}}


TASKS = {"t99": task("t99", 99), "tpaused": task("tpaused", "TASK_STATE_PAUSED"),
         "tended": task("tended", 99)}
# SendStreamingMessage, by the text sent: every kind of unknown value, then a
# known terminal state ("hi"); or the stream ended by the agent at state 99
# ("stop99": the task ended, in a state this version does not know).
STREAMS = {
    "hi": [{"task": task("t99", "TASK_STATE_SUBMITTED")}, status("t99", 99),
           {"artifactUpdate": {"taskId": "t99", "contextId": "c1", "generation": 7,
                               "artifact": {"artifactId": "a1", "parts": [dict(PART)]}}},
           status("t99", "TASK_STATE_PAUSED"), {"futureEvent": {"taskId": "t99"}},
           status("t99", "TASK_STATE_COMPLETED")],
    "stop99": [{"task": task("tended", "TASK_STATE_SUBMITTED")}, status("tended", 99)],
}
# SubscribeToTask: the task's snapshot, unknown states, then FAILED given as its number (4).
SUBSCRIBE = {"t99": [{"task": TASKS["t99"]}, status("t99", "TASK_STATE_PAUSED"),
                     status("t99", 99), status("t99", 4)]}


class Agent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    calls = None                      # set per server: [(method, params)]

    def log_message(self, *args):
        pass

    def _answer(self, status_code, body):
        data = json.dumps(body).encode()
        self.send_response(status_code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _events(self, events):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for seq, event in enumerate(events):
            self.wfile.write(b"id: %d\ndata: %s\n\n" % (seq, json.dumps(event).encode()))
            self.wfile.flush()
        self.close_connection = True

    def _run(self, method, params):
        """(result, or an A2AError; stream events or None)."""
        self.server.calls.append((method, params))
        if method in ("SendMessage", "SendStreamingMessage"):
            text = params["message"]["parts"][0]["text"]
            if method == "SendStreamingMessage":
                return None, STREAMS[text]
            if text == "role":
                return {"message": message(7)}, None
            return {"task": TASKS["tpaused" if text == "paused" else "t99"]}, None
        if method in ("GetTask", "CancelTask", "SubscribeToTask"):
            if params["id"] not in TASKS:
                return a2a_min.TaskNotFoundError(f"no task {params['id']}"), None
            if method == "SubscribeToTask":
                if params["id"] == "tended":         # (a terminal task cannot be followed)
                    return a2a_min.UnsupportedOperationError("the task has ended"), None
                return None, SUBSCRIBE[params["id"]]
            return TASKS[params["id"]], None
        if method == "ListTasks":
            return {"tasks": [TASKS["t99"], TASKS["tpaused"]], "nextPageToken": "",
                    "pageSize": 50, "totalSize": 2, "futureField": 1}, None
        return a2a_min.UnsupportedOperationError(method), None

    def _reply(self, binding, request_id, result, events):
        if events is not None:
            if binding == "JSONRPC":
                events = [{"jsonrpc": "2.0", "id": request_id, "result": e} for e in events]
            return self._events(events)
        if isinstance(result, a2a_min.A2AError):
            if binding == "JSONRPC":
                return self._answer(200, a2a_min._jsonrpc_error(request_id, result))
            return self._answer(result.http_status, a2a_min._status_error(result))
        if binding == "JSONRPC":
            return self._answer(200, {"jsonrpc": "2.0", "id": request_id, "result": result})
        return self._answer(200, result)

    def _route(self, verb):
        path, _, query = self.path.partition("?")
        for route_verb, pattern, method in a2a_min.ROUTES:
            if route_verb != verb:
                continue
            head, _, tail = pattern.partition("{id}")
            if "{" not in pattern and path == pattern:
                return method, {}
            if "{id}" in pattern and "{taskId}" not in pattern and path.startswith(head) \
                    and path.endswith(tail) and "/" not in path[len(head):len(path) - len(tail)]:
                return method, {"id": path[len(head):len(path) - len(tail) or None]}
        return None, {}

    def do_GET(self):
        if self.path == "/.well-known/agent-card.json":
            return self._answer(200, card(self.server.server_port))
        method, params = self._route("GET")
        if method is None:
            return self._answer(404, {"error": {"code": 404, "message": "no such route"}})
        self._reply("HTTP+JSON", None, *self._run(method, params))

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path == "/":
            return self._reply("JSONRPC", body["id"], *self._run(body["method"], body["params"]))
        method, params = self._route("POST")
        if method is None:
            return self._answer(404, {"error": {"code": 404, "message": "no such route"}})
        self._reply("HTTP+JSON", None, *self._run(method, {**body, **params}))


def card(port):
    """The card of a2a_min (python3 a2a_min.py; its /.well-known/agent-card.json)."""
    return {"name": "future agent", "description": "Answers with enums of a newer version.",
            "supportedInterfaces": [
                {"url": f"http://127.0.0.1:{port}/", "protocolBinding": "JSONRPC",
                 "protocolVersion": "1.0"},
                {"url": f"http://127.0.0.1:{port}", "protocolBinding": "HTTP+JSON",
                 "protocolVersion": "1.0"}],
            "version": "1.0.0",
            "capabilities": {"streaming": True, "pushNotifications": False,
                             "extendedAgentCard": False},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "future", "name": "Future", "description": "Newer enums.",
                        "tags": ["demo"]}]}


@pytest.fixture(scope="module")
def agent():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    server.daemon_threads = True
    server.calls = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_port}"
    yield server
    server.shutdown()
    server.server_close()


def client(agent, binding):
    return a2a_client.Client(agent.url, binding=binding, timeout=5)


# -- the unary operations: every value as it came --------------------------------------

@pytest.mark.parametrize("binding", BINDINGS)
def test_unary_answers_carry_unknown_values_unchanged(agent, binding):
    with client(agent, binding) as c:
        assert c.send("hi") == {"task": TASKS["t99"]}
        assert c.send("paused") == {"task": TASKS["tpaused"]}
        assert c.send("role") == {"message": message(7)}
        assert c.get_task("t99") == TASKS["t99"]
        assert c.get_task("tpaused")["status"]["state"] == "TASK_STATE_PAUSED"
        listed = c.list_tasks()
        assert listed["tasks"] == [TASKS["t99"], TASKS["tpaused"]] and listed["futureField"] == 1
        assert c.cancel_task("t99") == TASKS["t99"]
        assert c.get_task("t99")["status"]["message"]["role"] == 7


# -- the streams: every event, unchanged; they end where the agent ends them ----------

@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_yields_every_event_and_ends_at_the_known_terminal_state(agent, binding):
    with client(agent, binding) as c:
        stream = c.stream("hi")
        events = list(stream)
    assert events == STREAMS["hi"]
    assert stream.state == "TASK_STATE_COMPLETED" and stream.ended


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_the_agent_ends_at_an_unknown_state(agent, binding):
    """The agent ends the stream at state 99: the client asks where the task
    is (SubscribeToTask: it has ended, so the agent refuses), reads it with
    GetTask, gives it as the last event, and ends: no error, no loop."""
    agent.calls.clear()
    with client(agent, binding) as c:
        stream = c.stream("stop99")
        events = list(stream)
    assert events == STREAMS["stop99"] + [{"task": TASKS["tended"]}]
    assert stream.state == 99 and stream.ended
    assert [m for m, _ in agent.calls] == ["SendStreamingMessage", "SubscribeToTask", "GetTask"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_subscribe_carries_unknown_states_to_a_state_given_as_its_number(agent, binding):
    with client(agent, binding) as c:
        stream = c.subscribe("t99")
        events = list(stream)
    assert events == SUBSCRIBE["t99"]
    assert stream.state == "TASK_STATE_FAILED" and stream.ended   # (4, as ProtoJSON allows)


# -- the command line ------------------------------------------------------------------

def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = a2a_cli.verbs_main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("binding", ("jsonrpc", "http+json"))
def test_command_line_prints_unknown_states(agent, binding):
    b = ("--binding", binding)
    code, out, err = cli("send", agent.url, "hi", *b)
    assert (code, err) == (0, "") and "task t99  99  context c1" in out
    code, out, err = cli("send", agent.url, "paused", *b)
    assert (code, err) == (0, "") and "task tpaused  PAUSED  context c1" in out
    code, out, err = cli("get", agent.url, "t99", *b)
    assert (code, err) == (0, "") and "task t99  99" in out
    code, out, err = cli("list", agent.url, *b)
    assert (code, err) == (0, "") and "t99  99 " in out and "tpaused  PAUSED " in out
    code, out, err = cli("cancel", agent.url, "tpaused", *b)
    assert (code, err) == (0, "") and "PAUSED" in out
    code, out, err = cli("send", agent.url, "hi", "--stream", *b)
    assert (code, err) == (0, ""), err
    assert "status 99" in out and "status PAUSED" in out and "status COMPLETED" in out
    code, out, err = cli("send", agent.url, "stop99", "--stream", *b)
    assert (code, err) == (0, ""), err
    assert out.splitlines()[-1].endswith("task tended 99")
    code, out, err = cli("watch", agent.url, "t99", *b)      # FAILED, given as 4: exit 1
    assert code == 1 and "status 99" in out and out.splitlines()[-1].endswith("status FAILED")


@pytest.mark.parametrize("binding", ("jsonrpc", "http+json"))
def test_command_line_json_prints_the_answers_as_they_came(agent, binding):
    b = ("--binding", binding, "--json")
    code, out, _ = cli("send", agent.url, "hi", *b)
    assert code == 0 and json.loads(out) == {"task": TASKS["t99"]}
    code, out, _ = cli("get", agent.url, "tpaused", *b)
    assert code == 0 and json.loads(out) == TASKS["tpaused"]
    code, out, _ = cli("list", agent.url, *b)
    assert code == 0 and json.loads(out)["tasks"] == [TASKS["t99"], TASKS["tpaused"]]
    code, out, _ = cli("watch", agent.url, "t99", *b)
    assert code == 1 and [json.loads(line)["event"] for line in out.splitlines()] == \
        SUBSCRIBE["t99"]


def test_exit_status_help_says_an_unknown_state_is_0():
    assert "a state this version does not know" in a2a_cli._EXIT_HELP


# -- gRPC: an unknown enum number in the protobuf, carried through as the number -------

def test_grpc_carries_an_unknown_enum_number():
    grpc = pytest.importorskip("grpc")
    try:
        import a2a_grpc
        import a2a_min_pb2 as pb
    except ImportError as missing:
        pytest.skip(f"gRPC binding: {missing}")
    from google.protobuf import json_format

    def answer(state):
        found = json_format.ParseDict({"id": "t99", "contextId": "c1"}, pb.Task())
        found.status.state = state                   # (proto3 enums are open: 99 is kept)
        found.history.add(message_id="m1", role=7).parts.add(text="done")
        return found

    def get_task(request, context):
        return answer(99)

    def send_stream(request, context):
        yield pb.StreamResponse(task=answer(1))
        update = pb.StreamResponse()
        update.status_update.task_id, update.status_update.context_id = "t99", "c1"
        update.status_update.status.state = 99
        yield update
        yield pb.StreamResponse(task=answer(3))

    bytes_out = dict(response_serializer=lambda m: m.SerializeToString())
    handler = grpc.method_handlers_generic_handler(a2a_grpc.SERVICE_NAME, {
        "GetTask": grpc.unary_unary_rpc_method_handler(get_task, **bytes_out),
        "SendStreamingMessage": grpc.unary_stream_rpc_method_handler(send_stream, **bytes_out)})
    from concurrent import futures
    server = grpc.server(futures.ThreadPoolExecutor(2), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        grpc_card = {**card(port), "supportedInterfaces": [
            {"url": f"127.0.0.1:{port}", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]}
        with a2a_client.Client(grpc_card, card_url=f"http://127.0.0.1:{port}",
                               timeout=5) as c:
            got = c.get_task("t99")
            assert got["status"]["state"] == 99 and got["history"][0]["role"] == 7
            events = list(c.stream("hi"))
        assert [e.get("task", e.get("statusUpdate"))["status"]["state"] for e in events] == \
            ["TASK_STATE_SUBMITTED", 99, "TASK_STATE_COMPLETED"]
    finally:
        server.stop(0)
