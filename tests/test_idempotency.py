"""A send that can be retried (IDEMPOTENT_SEND, urn:a2a-min:idempotent-send).

A client whose connection drops after SendMessage cannot tell whether the
agent ran, so it sends again. A repeat (the same messageId, or HTTP
Idempotency-Key / gRPC idempotency-key, from the same caller within
idempotency_window) is answered as the first send was and runs nothing; the
same key with another message is refused (IDEMPOTENCY_KEY_REUSED), a repeat
while the first has no task yet is told to retry (SEND_IN_FLIGHT), a repeat
as a stream follows the task to its end.

Everything here goes over real sockets on 127.0.0.1, on each binding
(JSON-RPC and HTTP+JSON behind the threaded http.server host, gRPC behind
a2a_grpc.create_server), to an agent that counts its runs; the window in
which a repeat meets a running first send is made by an agent that waits
for a threading.Event, never by sleeping. The stores that processes share
(SQLite, PostgreSQL) keep the key themselves: two Servers on one store (two
workers) and a Server started again on it (a restart) see one another's
sends.
"""

import itertools
import json
import os
import threading
import time

import pytest

import a2a_min
from harness import Live, MemoryTaskStore, grpc_available, need, user_message

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
EXTENSION = "urn:a2a-min:idempotent-send"
WAIT = 20.0                 # seconds an Event or an answer may take before the test fails
STORM = 20                  # threads sending the same message at once
_SCHEMAS = itertools.count()  # (a PostgreSQL schema of its own for each test)
COMPLETED, WORKING = "TASK_STATE_COMPLETED", "TASK_STATE_WORKING"

# reason -> (JSON-RPC code, HTTP status, gRPC status), as the issue has them
SHAPES = {
    "IDEMPOTENCY_KEY_REUSED": (-32602, 422, "INVALID_ARGUMENT"),
    "SEND_IN_FLIGHT": (-32004, 409, "ABORTED"),
    "UNSUPPORTED_OPERATION": (-32004, 400, "FAILED_PRECONDITION"),
}


# -- the agent ----------------------------------------------------------------------

class CountingAgent:
    """An agent that counts its runs (thread-safe). What it does, by the text:

    "direct"       answers with a Message (no task)
    "refuse"       raises an A2AError before any output: the send is refused
    "hold-silent"  says nothing until ``gate`` is set (the send has no task yet)
    "hold"         WORKING, then waits for ``gate``, then an artifact
    "ask"          INPUT_REQUIRED: the task waits for the client's next message
    "hold-ask"     WORKING, then waits for ``gate``, then INPUT_REQUIRED
    anything else  WORKING, then the artifact "echo: <text>"

    ``entered`` is set once a holding run is waiting; ``cond`` is notified
    at every run (a test waiting for answers also stops at a second run)."""

    def __init__(self):
        self.cond = threading.Condition()
        self.runs = 0
        self.texts = []
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, ctx):
        text = ctx.text
        with self.cond:
            self.runs += 1
            self.texts.append(text)
            self.cond.notify_all()
        if text == "direct":
            yield a2a_min.agent_message("a direct reply")
            return
        if text == "refuse":
            raise a2a_min.UnsupportedOperationError("this agent refuses that")
        if text == "ask":
            yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "say more")
            return
        if text == "hold-ask":
            yield a2a_min.status_update(WORKING)
            self.entered.set()
            self.gate.wait(WAIT)
            yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "say more")
            return
        if text == "hold-silent":
            self.entered.set()
            self.gate.wait(WAIT)
            yield "released"
            return
        yield a2a_min.status_update(WORKING)
        if text == "hold":
            self.entered.set()
            self.gate.wait(WAIT)
        yield "echo: " + text


# -- a server on the three bindings, and a client of each over real sockets --------

class Site:
    """``server`` behind the threaded HTTP host (JSON-RPC, HTTP+JSON) and, when
    grpcio is here, a gRPC server: both on 127.0.0.1, ports the OS chose."""

    def __init__(self, server):
        self.server = server
        self.live = Live(server, timeout=5)
        self.grpc_server = self.grpc_port = None
        if grpc_available():
            import a2a_grpc
            self.grpc_server, self.grpc_port = a2a_grpc.create_server(server, "127.0.0.1:0")
            self.grpc_server.start()

    def card(self, tenant=""):
        resp, data = self.live.request(
            "GET", (f"/{tenant}" if tenant else "") + "/.well-known/agent-card.json")
        assert resp.status == 200, data
        return json.loads(data)

    def close(self):
        self.live.close()
        if self.grpc_server is not None:
            self.grpc_server.stop(0)
        self.server.shutdown(1)


def _sse(resp):
    """The data of each Server-Sent Event of ``resp``, parsed, as it arrives."""
    data = None
    while True:
        line = resp.readline()
        if not line:
            if data is not None:
                yield json.loads(data)
            return
        line = line.rstrip(b"\r\n")
        if not line:
            if data is not None:
                yield json.loads(data)
            data = None
        elif line.startswith(b"data:"):
            data = line[5:].strip()


class Wire:
    """A client of one binding of a Site, its answers in one shape:
    {"result": SendMessageResponse} or {"error": refusal}, a stream as an
    iterator of {"result": StreamResponse} / {"error": refusal}. A refusal
    keeps what its binding said: {"reason", "domain", "metadata", "message"}
    and "jsonrpc" (the code), or "http" (status), "status" (the body's) and
    "retry_after" (header), or "grpc" (the status code's name)."""

    def __init__(self, site, binding, *, token=None, tenant=None, announce=True):
        self.site, self.binding, self.token, self.tenant = site, binding, token, tenant
        self.announce = announce          # A2A-Extensions: the extension (its messageIds count)
        self.channel = None
        if binding == "GRPC":
            import grpc
            assert site.grpc_port, "no gRPC server"
            self.channel = grpc.insecure_channel(f"127.0.0.1:{site.grpc_port}")

    def close(self):
        if self.channel is not None:
            self.channel.close()

    # -- requests --

    def _headers(self, key):
        headers = {"A2A-Version": "1.0", "Content-Type": "application/json",
                   "Connection": "close"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if key is not None:
            headers["Idempotency-Key"] = key
        if self.announce:
            headers["A2A-Extensions"] = EXTENSION
        return headers

    def _params(self, message, configuration):
        params = {"message": message}
        if configuration:
            params["configuration"] = configuration
        if self.tenant and self.binding != "HTTP+JSON":
            params["tenant"] = self.tenant
        return params

    def _http(self, method, params, key):
        """The http.client response of a send (JSON-RPC or HTTP+JSON)."""
        conn = self.site.live.connection(timeout=2 * WAIT)
        if self.binding == "JSONRPC":
            path, body = "/", {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        else:
            verb = "message:send" if method == "SendMessage" else "message:stream"
            path = (f"/{self.tenant}" if self.tenant else "") + "/" + verb
            body = params
        conn.request("POST", path, json.dumps(body).encode(), self._headers(key))
        resp = conn.getresponse()
        resp.conn = conn                  # (closed with the response)
        return resp

    def _grpc(self, method, params, key):
        from google.protobuf import json_format
        import a2a_min_pb2
        request = json_format.ParseDict(params, a2a_min_pb2.SendMessageRequest())
        metadata = [("a2a-version", "1.0")]
        if self.token:
            metadata.append(("authorization", "Bearer " + self.token))
        if key is not None:
            metadata.append(("idempotency-key", key))
        if self.announce:
            metadata.append(("a2a-extensions", EXTENSION))
        if method == "SendMessage":
            rpc = self.channel.unary_unary(
                "/lf.a2a.v1.A2AService/SendMessage",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=a2a_min_pb2.SendMessageResponse.FromString)
        else:
            rpc = self.channel.unary_stream(
                "/lf.a2a.v1.A2AService/SendStreamingMessage",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=a2a_min_pb2.StreamResponse.FromString)
        return rpc(request, metadata=metadata, timeout=2 * WAIT)

    def send(self, message, *, key=None, configuration=None):
        """SendMessage: {"result": ...} or {"error": ...}."""
        params = self._params(message, configuration)
        if self.binding == "GRPC":
            import grpc
            from google.protobuf import json_format
            try:
                return {"result": json_format.MessageToDict(
                    self._grpc("SendMessage", params, key))}
            except grpc.RpcError as exc:
                return {"error": _grpc_refusal(exc)}
        resp = self._http("SendMessage", params, key)
        try:
            data = resp.read()
        finally:
            resp.conn.close()
        if self.binding == "JSONRPC":
            answer = json.loads(data)
            if "error" in answer:
                return {"error": _jsonrpc_refusal(answer["error"])}
            return {"result": answer["result"]}
        if resp.status != 200:
            return {"error": _rest_refusal(resp, data)}
        return {"result": json.loads(data)}

    def stream(self, message, *, key=None):
        """SendStreamingMessage: an iterator of its events as they come, each
        {"result": StreamResponse} or {"error": ...} (a refusal before the
        stream: one such event)."""
        params = self._params(message, None)
        if self.binding == "GRPC":
            import grpc
            from google.protobuf import json_format
            try:
                for event in self._grpc("SendStreamingMessage", params, key):
                    yield {"result": json_format.MessageToDict(event)}
            except grpc.RpcError as exc:
                yield {"error": _grpc_refusal(exc)}
            return
        resp = self._http("SendStreamingMessage", params, key)
        try:
            if resp.getheader("Content-Type", "").partition(";")[0] != "text/event-stream":
                data = resp.read()
                if self.binding == "JSONRPC":
                    yield {"error": _jsonrpc_refusal(json.loads(data)["error"])}
                else:
                    yield {"error": _rest_refusal(resp, data)}
                return
            for data in _sse(resp):
                if self.binding == "JSONRPC":
                    data = data["result"] if "result" in data else {"error": data["error"]}
                if "error" in data:
                    yield {"error": data["error"]}
                else:
                    yield {"result": data}
        finally:
            resp.conn.close()


def _info(details):
    """The google.rpc.ErrorInfo among ``details`` (exactly one)."""
    infos = [d for d in details if d.get("@type") == "type.googleapis.com/google.rpc.ErrorInfo"]
    assert len(infos) == 1, details
    return infos[0]


def _jsonrpc_refusal(error):
    info = _info(error["data"])
    return {"jsonrpc": error["code"], "message": error["message"], "reason": info["reason"],
            "domain": info["domain"], "metadata": info.get("metadata", {})}


def _rest_refusal(resp, data):
    error = json.loads(data)["error"]
    assert error["code"] == resp.status, error
    info = _info(error["details"])
    return {"http": resp.status, "status": error["status"], "message": error["message"],
            "retry_after": resp.getheader("Retry-After"), "reason": info["reason"],
            "domain": info["domain"], "metadata": info.get("metadata", {})}


def _grpc_refusal(exc):
    from google.protobuf import json_format
    from google.rpc import error_details_pb2, status_pb2  # noqa: F401  (ErrorInfo's type)
    trailer = dict(exc.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert trailer is not None, f"{exc.code()}: {exc.details()} (no google.rpc.Status)"
    status = json_format.MessageToDict(status_pb2.Status.FromString(trailer))
    assert status["code"] == exc.code().value[0] and status["message"] == exc.details()
    info = _info(status["details"])
    return {"grpc": exc.code().name, "message": exc.details(), "reason": info["reason"],
            "domain": info["domain"], "metadata": info.get("metadata", {})}


def assert_refused(answer, binding, reason):
    """``answer`` is the refusal ``reason`` in its binding's shape (SHAPES)."""
    assert "error" in answer, f"expected {reason}, got {answer}"
    error = answer["error"]
    code, http, grpc_status = SHAPES[reason]
    assert error["reason"] == reason and error["domain"] == "a2a-protocol.org", error
    if binding == "JSONRPC":
        assert error["jsonrpc"] == code, error
    elif binding == "HTTP+JSON":
        assert error["http"] == http and error["status"] == grpc_status, error
        assert error["retry_after"] == ("1" if reason == "SEND_IN_FLIGHT" else None), error
    else:
        assert error["grpc"] == grpc_status, error
    return error


def task_of(answer):
    """The task of a SendMessage answer (failing if it is anything else)."""
    assert "result" in answer and "task" in answer["result"], answer
    return answer["result"]["task"]


def state(task):
    return task["status"]["state"]


def artifact_text(task):
    return "".join(p.get("text", "") for a in task.get("artifacts", ()) for p in a["parts"])


def in_thread(function, *args, cond=None):
    """Run ``function`` in a thread: join(timeout) gives its result (or raises
    its error); ``done`` is set when it has returned (``cond`` notified)."""
    box = {}
    done = threading.Event()

    def run():
        try:
            box["result"] = function(*args)
        except BaseException as exc:      # noqa: BLE001  (raised again in join)
            box["error"] = exc
        done.set()
        if cond is not None:
            with cond:
                cond.notify_all()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def join(timeout=2 * WAIT):
        thread.join(timeout)
        assert not thread.is_alive(), f"{function.__name__} did not return within {timeout} s"
        if "error" in box:
            raise box["error"]
        return box["result"]
    join.done = done
    return join


# -- fixtures --------------------------------------------------------------------------

@pytest.fixture(params=BINDINGS)
def binding(request):
    if request.param == "GRPC":
        need("grpc", "gRPC binding: needs grpcio, protobuf and googleapis-common-protos "
                     "(pip install -e '.[grpc]')")
        need("google.rpc", "gRPC binding: needs googleapis-common-protos")
    return request.param


@pytest.fixture
def agent():
    made = CountingAgent()
    yield made
    made.gate.set()                       # (a run still waiting ends)


@pytest.fixture
def serve(agent):
    """serve(server) -> a Site on 127.0.0.1; wire(site, binding, ...) -> a Wire.
    All closed (the agent's gate opened first) when the test ends."""
    sites, wires = [], []

    def serve_(server):
        sites.append(Site(server))
        return sites[-1]

    def wire(site, binding, **options):
        wires.append(Wire(site, binding, **options))
        return wires[-1]
    serve_.wire = wire
    yield serve_
    agent.gate.set()
    for made in wires:
        made.close()
    for site in sites:
        site.close()


@pytest.fixture
def site(agent, serve):
    return serve(a2a_min.Server(agent, name="Counting agent", description="Counts its runs."))


@pytest.fixture
def wire(site, binding, serve):
    return serve.wire(site, binding)


# -- whose sends count: announced, or keyed ----------------------------------------------

def test_a_client_that_does_not_announce_it_is_served_as_before(site, binding, serve, agent):
    """The conformance kit reuses a messageId for messages of other texts: without the
    extension announced (A2A-Extensions) nor an Idempotency-Key, each send is a turn."""
    plain = serve.wire(site, binding, announce=False)
    message = user_message("hi")
    first, second = task_of(plain.send(message)), task_of(plain.send(message))
    other = task_of(plain.send({**message, "parts": [{"text": "ho"}]}))
    assert len({first["id"], second["id"], other["id"]}) == 3 and agent.runs == 3
    once = user_message("k")
    keyed = task_of(plain.send(once, key="k-1"))                   # a key is enough
    assert task_of(plain.send(once, key="k-1"))["id"] == keyed["id"]
    assert agent.runs == 4, agent.texts


# -- a repeat answers as the first did --------------------------------------------------

def test_a_repeated_send_answers_with_the_first_task_and_runs_nothing(wire, agent):
    message = user_message("hi")
    first = task_of(wire.send(message))
    assert state(first) == COMPLETED and artifact_text(first) == "echo: hi"
    for _ in range(2):
        again = task_of(wire.send(message))
        assert again["id"] == first["id"] and again["contextId"] == first["contextId"]
        assert state(again) == COMPLETED and artifact_text(again) == "echo: hi"
    assert agent.runs == 1, agent.texts
    other = task_of(wire.send(user_message("hi")))      # a new messageId: a new turn
    assert other["id"] != first["id"] and agent.runs == 2


def test_a_repeated_send_of_a_direct_reply_is_the_same_message(wire, agent):
    message = user_message("direct")
    first = wire.send(message)
    assert "message" in first.get("result", {}), first
    reply = first["result"]["message"]
    assert reply["parts"][0]["text"] == "a direct reply" and "taskId" not in reply
    for _ in range(2):
        again = wire.send(message)
        assert again == first, (again, first)
    assert agent.runs == 1, agent.texts


def test_the_same_key_with_another_message_is_refused(wire, agent, binding):
    message = user_message("hi")
    first = task_of(wire.send(message))
    other = {**message, "parts": [{"text": "something else"}]}
    error = assert_refused(wire.send(other), binding, "IDEMPOTENCY_KEY_REUSED")
    assert error["metadata"].get("taskId") == first["id"], error          # (the first's)
    events = list(wire.stream(other))                  # as a stream: the same refusal
    assert len(events) == 1, events
    assert_refused(events[0], binding, "IDEMPOTENCY_KEY_REUSED")
    with_metadata = {**message, "metadata": {"attempt": 2}}   # (the whole message counts)
    assert_refused(wire.send(with_metadata), binding, "IDEMPOTENCY_KEY_REUSED")
    assert agent.runs == 1, agent.texts
    again = task_of(wire.send(message))                # the first is still answered
    assert again["id"] == first["id"] and state(again) == COMPLETED
    assert agent.runs == 1, agent.texts


def test_a_repeated_continuation_answers_its_task_not_a_refusal(wire, agent):
    """The repeat of the message that continued a task (and ended it) is
    answered with the task; it is not refused as a message to a task that
    has ended, nor run again."""
    asked = task_of(wire.send(user_message("ask")))
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED"
    answer = user_message("more", taskId=asked["id"])
    ended = task_of(wire.send(answer))
    assert ended["id"] == asked["id"] and state(ended) == COMPLETED
    again = task_of(wire.send(answer))
    assert again["id"] == asked["id"] and state(again) == COMPLETED
    assert artifact_text(again) == "echo: more"
    events = list(wire.stream(answer))
    assert len(events) == 1 and events[0]["result"]["task"]["id"] == asked["id"], events
    assert agent.texts == ["ask", "more"], agent.texts


# -- a repeat while the first still runs ------------------------------------------------

def test_a_repeat_while_the_first_runs_gets_its_task_as_it_is_now(wire, agent):
    message = user_message("hold")
    first = in_thread(wire.send, message)
    assert agent.entered.wait(WAIT), "the agent did not start"
    now = task_of(wire.send(message))                  # the task, still WORKING
    assert state(now) == WORKING and artifact_text(now) == "", now
    assert agent.runs == 1, agent.texts
    agent.gate.set()
    ended = task_of(first())
    assert ended["id"] == now["id"] and state(ended) == COMPLETED
    later = task_of(wire.send(message))                # and once it ended: ended
    assert later["id"] == now["id"] and state(later) == COMPLETED
    assert artifact_text(later) == "echo: hold"
    assert agent.runs == 1, agent.texts


def test_a_repeat_before_the_first_made_a_task_is_told_to_try_again(wire, agent, binding):
    message = user_message("hold-silent")
    first = in_thread(wire.send, message)
    assert agent.entered.wait(WAIT), "the agent did not start"
    error = assert_refused(wire.send(message), binding, "SEND_IN_FLIGHT")
    assert error["metadata"].get("taskId"), error          # (the task it will be)
    events = list(wire.stream(message))                    # a stream: the same answer
    assert len(events) == 1, events
    assert_refused(events[0], binding, "SEND_IN_FLIGHT")
    other = {**message, "parts": [{"text": "something else"}]}   # not a repeat at all, but
    assert_refused(wire.send(other), binding, "SEND_IN_FLIGHT")  # nothing to tell it by yet
    assert agent.runs == 1, agent.texts
    agent.gate.set()
    ended = task_of(first())
    assert_refused(wire.send(other), binding, "IDEMPOTENCY_KEY_REUSED")   # now there is
    assert state(ended) == COMPLETED and artifact_text(ended) == "released"
    assert ended["id"] == error["metadata"]["taskId"]
    retried = task_of(wire.send(message))                  # the retry it was told to make
    assert retried["id"] == ended["id"] and state(retried) == COMPLETED
    assert agent.runs == 1, agent.texts


@pytest.mark.parametrize("kind", ["generator", "function"])
def test_a_first_send_slower_than_blocking_timeout_is_still_in_flight(agent, serve, binding,
                                                                     kind):
    """The first send's agent is still at work, with nothing to show yet,
    after blocking_timeout (an agent that thinks for a while before its first
    output; a plain function agent, which shows nothing until it returns): a
    repeat is still told SEND_IN_FLIGHT; it does not take the send over and
    run the agent a second time."""
    if kind == "generator":
        run = agent
    else:
        def run(ctx):                          # (its one answer, when it returns)
            return "".join(agent(ctx))
    site = serve(a2a_min.Server(run, name="Counting agent", blocking_timeout=0.3))
    wire = serve.wire(site, binding)
    message = user_message("hold-silent")
    first = in_thread(wire.send, message)
    assert agent.entered.wait(WAIT), "the agent did not start"
    time.sleep(0.5)                     # (past blocking_timeout: time itself, nothing to wait on)
    second = in_thread(wire.send, message, cond=agent.cond)
    with agent.cond:                    # its answer, or a second run (which waits too)
        agent.cond.wait_for(lambda: second.done.is_set() or agent.runs > 1, WAIT)
    assert agent.runs == 1, f"the agent ran {agent.runs} times"
    assert_refused(second(), binding, "SEND_IN_FLIGHT")
    agent.gate.set()
    ended = task_of(first())
    assert task_of(wire.send(message))["id"] == ended["id"] and agent.runs == 1


@pytest.mark.parametrize("first_as", ["SendMessage", "SendStreamingMessage"])
def test_a_repeated_stream_follows_the_running_task_to_its_end(wire, agent, first_as):
    message = user_message("hold")
    if first_as == "SendMessage":
        first = in_thread(wire.send, message)
    else:
        first = in_thread(lambda: list(wire.stream(message)))
    assert agent.entered.wait(WAIT), "the agent did not start"
    events = wire.stream(message)
    opening = next(events)
    assert "task" in opening.get("result", {}), opening     # as SubscribeToTask begins
    task = opening["result"]["task"]
    assert state(task) == WORKING, task
    agent.gate.set()                                        # the first goes on: followed
    rest = [event["result"] for event in events]            # (no error among them)
    assert rest and rest[-1].get("statusUpdate", {}).get("status", {}).get("state") == \
        COMPLETED, rest
    assert all((e.get("statusUpdate") or e.get("artifactUpdate"))["taskId"] == task["id"]
               for e in rest), rest
    text = "".join(p.get("text", "") for e in rest if "artifactUpdate" in e
                   for p in e["artifactUpdate"]["artifact"]["parts"])
    assert text == "echo: hold", rest
    answered = first()
    if first_as == "SendMessage":
        assert task_of(answered)["id"] == task["id"]
    else:
        assert answered[0]["result"]["task"]["id"] == task["id"], answered
        assert answered[-1]["result"]["statusUpdate"]["status"]["state"] == COMPLETED
    assert agent.runs == 1, agent.texts


def test_a_repeated_stream_of_an_ended_send_is_one_event(wire, agent):
    message = user_message("hi")
    first = task_of(wire.send(message))
    events = list(wire.stream(message))
    assert len(events) == 1 and "task" in events[0].get("result", {}), events
    assert events[0]["result"]["task"]["id"] == first["id"]
    assert state(events[0]["result"]["task"]) == COMPLETED
    direct = user_message("direct")
    reply = wire.send(direct)["result"]["message"]
    events = list(wire.stream(direct))
    assert events == [{"result": {"message": reply}}], events
    assert agent.runs == 2, agent.texts


def test_a_repeated_stream_of_a_send_that_waits_for_input_is_one_event(wire, agent):
    """The first's turn ended with the task waiting for input (its stream
    closed there): the task is not running, so a repeated stream is the one
    event, the task, and closes; it does not wait for the task to end."""
    message = user_message("ask")
    asked = task_of(wire.send(message))
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED"
    first = list(wire.stream(user_message("ask")))          # (a first stream closes there)
    assert first[-1]["result"]["statusUpdate"]["status"]["state"] == \
        "TASK_STATE_INPUT_REQUIRED", first
    repeated = in_thread(lambda: list(wire.stream(message)))
    assert repeated.done.wait(5), "the repeated stream did not close (it waits for an end)"
    events = repeated()
    assert len(events) == 1 and events[0]["result"]["task"]["id"] == asked["id"], events
    assert state(events[0]["result"]["task"]) == "TASK_STATE_INPUT_REQUIRED"
    assert agent.runs == 2, agent.texts


def test_a_repeated_stream_ends_where_the_first_stream_ends(wire, agent):
    """A repeat that follows the running task closes when the first's stream
    does: when the turn leaves the task waiting for input, not only at its end."""
    message = user_message("hold-ask")
    first = in_thread(lambda: list(wire.stream(message)))
    assert agent.entered.wait(WAIT), "the agent did not start"
    events = wire.stream(message)
    opening = next(events)
    assert state(opening["result"]["task"]) == WORKING, opening
    repeated = in_thread(lambda: list(events))
    agent.gate.set()
    ended = first()
    assert ended[-1]["result"]["statusUpdate"]["status"]["state"] == \
        "TASK_STATE_INPUT_REQUIRED", ended
    assert repeated.done.wait(5), "the repeated stream did not close at INPUT_REQUIRED"
    rest = repeated()
    assert rest[-1]["result"]["statusUpdate"]["status"]["state"] == \
        "TASK_STATE_INPUT_REQUIRED", rest
    assert agent.runs == 1, agent.texts


def test_a_stream_repeated_as_a_send_answers_its_task(wire, agent):
    message = user_message("hi")
    events = list(wire.stream(message))
    task_id = events[0]["result"]["task"]["id"]
    assert events[-1]["result"]["statusUpdate"]["status"]["state"] == COMPLETED
    again = task_of(wire.send(message))
    assert again["id"] == task_id and state(again) == COMPLETED
    assert artifact_text(again) == "echo: hi"
    again = list(wire.stream(message))
    assert len(again) == 1 and again[0]["result"]["task"]["id"] == task_id, again
    assert agent.runs == 1, agent.texts


def test_a_retry_over_another_binding_is_a_repeat(agent, site, serve):
    """A client that falls back to another binding for its retry (the card
    lists them all) sends the same message: the same task, no second run."""
    message = user_message("hi")
    first = task_of(serve.wire(site, "JSONRPC").send(message))
    bindings = ["HTTP+JSON"] + (["GRPC"] if site.grpc_port else [])
    for other in bindings:
        again = task_of(serve.wire(site, other).send(message))
        assert again["id"] == first["id"], (other, again)
    assert agent.runs == 1, agent.texts


def test_the_same_message_with_its_members_in_another_order_is_a_repeat(agent, site, serve,
                                                                       binding):
    """JSON's objects are unordered (RFC 8259, section 4): a retry whose
    client wrote the message's members in another order (another JSON
    library, a message rebuilt for the retry, gRPC's field order) sends the
    same message, and is a repeat, not IDEMPOTENCY_KEY_REUSED."""
    message_id = user_message("")["messageId"]
    written = {"role": "ROLE_USER", "metadata": {"b": "2", "a": "1"},
               "parts": [{"mediaType": "text/plain", "text": "hi"}], "messageId": message_id}
    rebuilt = {"messageId": message_id, "role": "ROLE_USER",
               "parts": [{"text": "hi", "mediaType": "text/plain"}],
               "metadata": {"a": "1", "b": "2"}}
    first = task_of(serve.wire(site, "JSONRPC").send(written))
    again = serve.wire(site, binding).send(rebuilt)
    assert "error" not in again, again["error"]
    assert task_of(again)["id"] == first["id"] and agent.runs == 1, agent.texts


# -- the Idempotency-Key header (gRPC: idempotency-key metadata) ---------------------

def test_the_idempotency_key_is_the_key_instead_of_the_message_id(wire, agent, binding):
    # Two messages (two messageIds) under one key: the second reuses the key.
    first = task_of(wire.send(user_message("hi"), key="order-1"))
    assert_refused(wire.send(user_message("other"), key="order-1"), binding,
                   "IDEMPOTENCY_KEY_REUSED")
    assert agent.runs == 1, agent.texts
    # One message under a quoted key and the same key bare (the IETF draft's
    # sf-string): a repeat.
    message = user_message("quoted")
    quoted = task_of(wire.send(message, key='"order-2"'))
    bare = task_of(wire.send(message, key="order-2"))
    assert bare["id"] == quoted["id"] != first["id"] and agent.runs == 2, agent.texts
    events = list(wire.stream(message, key="order-2"))       # a stream under it: the task
    assert len(events) == 1 and events[0]["result"]["task"]["id"] == quoted["id"], events
    events = list(wire.stream(user_message("other"), key="order-1"))
    assert len(events) == 1, events
    assert_refused(events[0], binding, "IDEMPOTENCY_KEY_REUSED")
    # One message under two keys: two sends (the key, not the messageId, is it).
    message = user_message("twice")
    one = task_of(wire.send(message, key="order-3"))
    two = task_of(wire.send(message, key="order-4"))
    assert one["id"] != two["id"] and agent.runs == 4, agent.texts
    again = task_of(wire.send(message, key="order-4"))
    assert again["id"] == two["id"] and agent.runs == 4, agent.texts


# -- other callers are isolated ------------------------------------------------------

def _a_turn_each(one, two, agent):
    """One message from two callers: a turn each, and each one's repeat its own task."""
    message = user_message("hi")
    first, second = task_of(one.send(message)), task_of(two.send(message))
    assert first["id"] != second["id"] and agent.runs == 2, agent.texts
    assert task_of(one.send(message))["id"] == first["id"]
    assert task_of(two.send(message))["id"] == second["id"]
    assert agent.runs == 2, agent.texts
    return message

def test_another_principal_sending_the_same_message_id_gets_its_own_turn(agent, serve, binding):
    site = serve(a2a_min.Server(agent, name="Counting agent",
                                authenticate=a2a_min.BearerAuth({"ta": "ann", "tb": "bob"})))
    ann = serve.wire(site, binding, token="ta")
    bob = serve.wire(site, binding, token="tb")
    message = _a_turn_each(ann, bob, agent)
    # Another message under ann's messageId is no reuse of bob's key.
    other = {**user_message("other"), "messageId": message["messageId"] + "-2"}
    task_of(ann.send(other))
    carol = task_of(bob.send({**other, "parts": [{"text": "bob's own"}]}))
    assert artifact_text(carol) == "echo: bob's own" and agent.runs == 4, agent.texts
    direct = user_message("direct")                 # a Message reply, kept as the caller's
    reply = ann.send(direct)
    assert "message" in reply.get("result", {}), reply
    assert ann.send(direct) == reply and agent.runs == 5, agent.texts
    assert "message" in bob.send(direct)["result"] and agent.runs == 6, agent.texts


def test_another_tenant_sending_the_same_message_id_gets_its_own_turn(agent, serve, binding):
    one_store = a2a_min.TaskStore()             # (both keys in one store: still apart)
    front = a2a_min.Server(agent, name="Front", store=one_store)
    alpha = a2a_min.Server(agent, name="Alpha", store=one_store)
    front.mount("alpha", alpha)
    site = serve(front)
    at_front = serve.wire(site, binding)
    at_alpha = serve.wire(site, binding, tenant="alpha")
    _a_turn_each(at_front, at_alpha, agent)
    changed = {**user_message("alpha's own"), "messageId": "shared-id"}
    task_of(at_front.send({**changed, "parts": [{"text": "front's own"}]}))
    assert artifact_text(task_of(at_alpha.send(changed))) == "echo: alpha's own"
    assert agent.runs == 4, agent.texts
    direct = user_message("direct")                 # a Message reply, kept as the tenant's
    reply = at_alpha.send(direct)
    assert "message" in reply.get("result", {}), reply
    assert at_alpha.send(direct) == reply and agent.runs == 5, agent.texts
    assert "message" in at_front.send(direct)["result"] and agent.runs == 6, agent.texts
    assert EXTENSION in [e["uri"] for e in
                         site.card("alpha")["capabilities"].get("extensions", ())]


# -- a refused send leaves the key free -----------------------------------------------

def test_a_send_refused_by_the_server_leaves_the_key_free(wire, agent, binding):
    ended = task_of(wire.send(user_message("hi")))
    assert state(ended) == COMPLETED and agent.runs == 1
    late = user_message("more", taskId=ended["id"])     # to a terminal task: refused
    for _ in range(2):                                  # again: refused again, not a task
        error = assert_refused(wire.send(late), binding, "UNSUPPORTED_OPERATION")
        assert error["metadata"].get("taskId") == ended["id"], error
    events = list(wire.stream(late))
    assert len(events) == 1, events
    assert_refused(events[0], binding, "UNSUPPORTED_OPERATION")
    assert agent.runs == 1, agent.texts
    # The key is free: another message under it is a fresh send, not a reuse.
    fresh = {**user_message("fresh"), "messageId": late["messageId"]}
    task = task_of(wire.send(fresh))
    assert task["id"] != ended["id"] and artifact_text(task) == "echo: fresh"
    assert agent.runs == 2, agent.texts


def test_a_send_the_agent_refused_leaves_the_key_free(wire, agent, binding):
    """The agent raised an A2AError before any output: the send is refused
    (no task), so a retry is a fresh send that gets the same refusal; it is
    not told that the first is still in flight."""
    message = user_message("refuse")
    error = assert_refused(wire.send(message), binding, "UNSUPPORTED_OPERATION")
    assert error["message"] == "this agent refuses that"
    again = wire.send(message)
    assert_refused(again, binding, "UNSUPPORTED_OPERATION")
    assert agent.runs == 2, agent.texts                 # (a fresh send: the agent asked again)


# -- the card, and turning it off ----------------------------------------------------

def test_the_card_declares_the_extension(site):
    extensions = site.card()["capabilities"].get("extensions", [])
    declared = [e for e in extensions if e["uri"] == EXTENSION]
    assert len(declared) == 1 and declared[0].get("required", False) is False, extensions


def test_a_window_of_zero_turns_it_off(agent, serve, binding):
    site = serve(a2a_min.Server(agent, name="Counting agent", idempotency_window=0))
    assert EXTENSION not in [e["uri"] for e in site.card()["capabilities"].get("extensions", ())]
    wire = serve.wire(site, binding)
    message = user_message("hi")
    one, two = task_of(wire.send(message)), task_of(wire.send(message))
    assert one["id"] != two["id"] and agent.runs == 2, agent.texts
    task_of(wire.send({**message, "parts": [{"text": "other"}]}))   # no reuse either
    assert agent.runs == 3, agent.texts


def test_a_repeat_after_the_window_is_a_new_send(agent, serve):
    site = serve(a2a_min.Server(agent, name="Counting agent", idempotency_window=1.0))
    wire = serve.wire(site, "JSONRPC")
    message = user_message("hi")
    first = task_of(wire.send(message))
    answered = time.monotonic()
    assert task_of(wire.send(message))["id"] == first["id"] and agent.runs == 1
    time.sleep(max(0.0, answered + 1.2 - time.monotonic()))   # (the window is time itself)
    later = task_of(wire.send(message))
    assert later["id"] != first["id"] and agent.runs == 2, agent.texts
    assert task_of(wire.send(message))["id"] == later["id"] and agent.runs == 2


# -- a retry storm -----------------------------------------------------------------------

def storm(agent, wires, message):
    """``message`` sent at once from len(wires) threads, each its own Wire;
    the agent's gate opens once every send but the first has been answered
    (or a second run shows). The answers, in order of ``wires``."""
    answers = [None] * len(wires)
    barrier = threading.Barrier(len(wires))

    def send(i):
        barrier.wait(WAIT)
        answer = wires[i].send(message)
        with agent.cond:
            answers[i] = answer
            agent.cond.notify_all()
    threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(len(wires))]
    for thread in threads:
        thread.start()
    assert agent.entered.wait(WAIT), "the agent did not start"
    with agent.cond:
        agent.cond.wait_for(lambda: agent.runs > 1 or
                            sum(a is not None for a in answers) >= len(wires) - 1, WAIT)
    agent.gate.set()
    for thread in threads:
        thread.join(2 * WAIT)
    assert all(a is not None for a in answers), answers
    return answers


def check_storm(agent, answers, binding, retry, silent, before=0):
    """One run (``before`` were made earlier); every answer names its task,
    or is SEND_IN_FLIGHT (every one but the first's, if the agent said
    nothing before it waited), which a retry resolves into the same task."""
    assert agent.runs == before + 1, f"the agent ran {agent.runs - before} times"
    tasks = [task_of(a) for a in answers if "error" not in a]
    in_flight = [a for a in answers if "error" in a]
    for answer in in_flight:
        assert_refused(answer, binding, "SEND_IN_FLIGHT")
    if silent:
        assert len(tasks) == 1 and len(in_flight) == len(answers) - 1, answers
    ids = {t["id"] for t in tasks}
    assert len(ids) == 1, ids
    assert {t["status"]["state"] for t in tasks} <= {COMPLETED, WORKING, "TASK_STATE_SUBMITTED"}
    assert any(state(t) == COMPLETED for t in tasks)          # (the first's own answer)
    for i, answer in enumerate(answers):
        if "error" in answer:
            retried = task_of(retry(i))
            assert retried["id"] in ids and state(retried) == COMPLETED, retried
    assert agent.runs == before + 1, f"the agent ran {agent.runs - before} times"


@pytest.mark.parametrize("hold", ["hold", "hold-silent"])
def test_a_retry_storm_runs_the_agent_once(agent, site, serve, binding, hold):
    wires = [serve.wire(site, binding) for _ in range(STORM)]
    message = user_message(hold)
    answers = storm(agent, wires, message)
    check_storm(agent, answers, binding, lambda i: wires[i].send(message),
                silent=hold == "hold-silent")


def test_a_storm_of_sends_and_streams_runs_the_agent_once(agent, site, serve, binding):
    """A third of the storm streams (7: under gRPC's default per-client
    stream limit, 8): whichever of the twenty is first runs the agent; a
    repeated stream follows the task to its end (or is told SEND_IN_FLIGHT
    before the task exists), a repeated send answers the task."""
    message = user_message("hold")
    n = STORM
    wires = [serve.wire(site, binding) for _ in range(n)]
    firsts, answers = [None] * n, [None] * n       # (a stream's first event; all it said)
    barrier = threading.Barrier(n)

    def send(i):
        barrier.wait(WAIT)
        if i % 3:
            answer = wires[i].send(message)
            with agent.cond:
                firsts[i] = answers[i] = answer
                agent.cond.notify_all()
            return
        events = wires[i].stream(message)
        first = next(events)
        with agent.cond:
            firsts[i] = first
            agent.cond.notify_all()
        answers[i] = [first] + list(events)
    threads = [threading.Thread(target=send, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    assert agent.entered.wait(WAIT), "the agent did not start"
    with agent.cond:                # every stream has begun, every send but one answered
        agent.cond.wait_for(lambda: agent.runs > 1 or
                            sum(f is not None for f in firsts) >= n - 1, WAIT)
    agent.gate.set()
    for thread in threads:
        thread.join(2 * WAIT)
    assert all(a is not None for a in answers), answers
    assert agent.runs == 1, f"the agent ran {agent.runs} times"
    ids = set()
    for i, answer in enumerate(answers):
        if isinstance(answer, dict):                   # a send's
            if "error" in answer:
                assert_refused(answer, binding, "SEND_IN_FLIGHT")
                answer = wires[i].send(message)
            ids.add(task_of(answer)["id"])
            continue
        if "error" in answer[0]:                       # a stream's, refused at once
            assert len(answer) == 1, answer
            assert_refused(answer[0], binding, "SEND_IN_FLIGHT")
            answer = list(wires[i].stream(message))
        assert all("result" in e for e in answer), answer
        if len(answer) == 1:                           # the task, ended by then
            task = answer[0]["result"]["task"]
            assert state(task) == COMPLETED, answer
        else:                                          # the task followed to its end
            task = answer[0]["result"]["task"]
            assert answer[-1]["result"]["statusUpdate"]["status"]["state"] == COMPLETED
        ids.add(task["id"])
    assert len(ids) == 1, ids
    assert agent.runs == 1, f"the agent ran {agent.runs} times"


# -- the stores processes share: SQLite, PostgreSQL ------------------------------------

@pytest.fixture(params=["memory", "sqlite", "postgres"])
def shared(request, tmp_path):
    """open() -> a new store on one database (one SQLite file, or one
    PostgreSQL schema), as each worker process, or a restarted one, opens it;
    "memory": one in-memory TaskStore, the same object each time (Servers of
    one process: what the others are held to)."""
    opened = []
    if request.param == "memory":
        one = MemoryTaskStore()             # (in memory even with A2A_TEST_STORE=sqlite)

        def open_():
            return one
    elif request.param == "sqlite":
        path = str(tmp_path / "tasks.db")

        def open_():
            opened.append(a2a_min.open_store(path))
            return opened[-1]
    else:
        from conftest import postgres_server
        url = postgres_server().url          # (or a skip, a failure with A2A_REQUIRE_ALL=1)
        import a2a_postgres
        schema = f"idem{os.getpid()}_{next(_SCHEMAS)}"

        def open_():
            opened.append(a2a_postgres.PostgresStore(url, schema=schema))
            return opened[-1]
    yield open_
    for store in opened:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def _lacks(store):
    return "" if hasattr(store, "claim_send") else \
        f" ({type(store).__name__} has no claim_send: the Server turns idempotency off)"


def test_a_shared_store_keeps_the_key_across_workers_and_a_restart(agent, serve, shared,
                                                                   binding):
    one, two = shared(), shared()
    worker_a = serve(a2a_min.Server(agent, name="Counting agent", store=one))
    worker_b = serve(a2a_min.Server(agent, name="Counting agent", store=two))
    for worker in (worker_a, worker_b):
        assert EXTENSION in [e["uri"] for e in
                             worker.card()["capabilities"].get("extensions", ())], _lacks(one)
    at_a, at_b = serve.wire(worker_a, binding), serve.wire(worker_b, binding)
    # Sent to one worker, repeated to the other.
    message = user_message("hi")
    first = task_of(at_a.send(message))
    again = task_of(at_b.send(message))
    assert again["id"] == first["id"] and agent.runs == 1, _lacks(one)
    assert_refused(at_b.send({**message, "parts": [{"text": "other"}]}), binding,
                   "IDEMPOTENCY_KEY_REUSED")
    direct = user_message("direct")                 # a Message reply: kept as well
    reply = at_b.send(direct)
    assert "message" in reply.get("result", {}), reply
    assert at_a.send(direct) == reply and agent.runs == 2, _lacks(one)
    # A storm across both while the first runs.
    wires = [serve.wire(worker_a if i % 2 else worker_b, binding) for i in range(STORM)]
    stormed = user_message("hold")
    answers = storm(agent, wires, stormed)
    assert agent.runs == 3, f"the agent ran {agent.runs - 2} times in the storm{_lacks(one)}"
    check_storm(agent, answers, binding, lambda i: wires[i].send(stormed), silent=False,
                before=2)
    stormed_id = next(task_of(a)["id"] for a in answers if "error" not in a)
    # A restart: a new Server on the same database.
    for wire in wires + [at_a, at_b]:
        wire.close()
    worker_a.server.shutdown(1)
    worker_b.server.shutdown(1)
    restarted = serve(a2a_min.Server(agent, name="Counting agent", store=shared()))
    at_new = serve.wire(restarted, binding)
    assert task_of(at_new.send(message))["id"] == first["id"]
    after = task_of(at_new.send(stormed))
    assert after["id"] == stormed_id and state(after) == COMPLETED
    assert artifact_text(after) == "echo: hold"
    assert_refused(at_new.send({**stormed, "parts": [{"text": "other"}]}), binding,
                   "IDEMPOTENCY_KEY_REUSED")
    assert at_new.send(direct) == reply
    assert agent.runs == 3, f"runs after the restart: {agent.runs}{_lacks(one)}"


def test_a_shared_store_tells_the_other_worker_the_first_is_in_flight(agent, serve, shared,
                                                                     binding):
    worker_a = serve(a2a_min.Server(agent, name="Counting agent", store=shared()))
    worker_b = serve(a2a_min.Server(agent, name="Counting agent", store=shared()))
    at_a, at_b = serve.wire(worker_a, binding), serve.wire(worker_b, binding)
    message = user_message("hold-silent")
    first = in_thread(at_a.send, message)
    assert agent.entered.wait(WAIT), "the agent did not start"
    second = in_thread(at_b.send, message, cond=agent.cond)
    with agent.cond:                    # its answer, or a second run (then it waits too)
        agent.cond.wait_for(lambda: second.done.is_set() or agent.runs > 1, WAIT)
    assert agent.runs == 1, f"the agent ran {agent.runs} times{_lacks(worker_a.server.store)}"
    assert_refused(second(), binding, "SEND_IN_FLIGHT")
    agent.gate.set()
    ended = task_of(first())
    assert task_of(at_b.send(message))["id"] == ended["id"]
    assert agent.runs == 1, agent.texts
