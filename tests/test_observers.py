"""Server(observers=[...]): the one door for what watches a server. An
Observer is told each request on every binding (JSON-RPC, HTTP+JSON and gRPC,
over real sockets and a real channel), each agent turn with the state it
left, and each webhook attempt to a real receiver; the access log and the
metrics are observers too, so the gRPC binding is logged like HTTP's."""

import json
import logging
import threading
import time

import pytest

import a2a_min
from harness import V1, Live, grpc_available, user_message
from webhook_receiver import Receiver


class Recorder(a2a_min.Observer):
    """Every event, in order: (event, what it was about)."""

    def __init__(self):
        self.events, self.lock = [], threading.Lock()

    def note(self, *event):
        with self.lock:
            self.events.append(event)

    def request_started(self, request):
        self.note("started", request.path)
        return ("mark", request.path)

    def request_returned(self, request, mark):
        assert mark == ("mark", request.path)
        self.note("returned", request.path)

    def request_answered(self, request, mark):
        assert mark == ("mark", request.path) and request.seconds >= 0
        call = request.call
        self.note("answered", request.binding, call and call.method, request.status,
                  request.error and request.error.__name__, request.stream)

    def turn_started(self, ctx, call):
        self.note("turn", ctx.task_id)
        return ctx.task_id

    def turn_ended(self, ctx, state, mark):
        assert mark == ctx.task_id
        self.note("turn ended", ctx.task_id, state)

    def webhook_started(self, url, headers):
        headers["traceparent"] = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
        self.note("webhook", url)
        return url

    def webhook_ended(self, url, status, failure, mark):
        assert mark == url
        self.note("webhook ended", url, status, failure)

    def of(self, kind):
        with self.lock:
            return [event[1:] for event in self.events if event[0] == kind]


def CALL():
    return a2a_min.CallContext(dict(V1))


def agent(ctx):
    if ctx.text == "fail":
        raise RuntimeError("the agent broke")
    return "ok " + ctx.text


def test_an_observer_is_told_each_request_on_each_http_binding_in_order():
    seen = Recorder()
    live = Live(a2a_min.Server(agent, observers=[seen]))
    try:
        task = live.rpc("SendMessage", {"message": user_message("hi")})["result"]["task"]
        resp, _ = live.request("GET", f"/tasks/{task['id']}", headers=dict(V1))
        assert resp.status == 200
        assert live.rpc("GetTask", {"id": "nope"})["error"]["code"] == -32001
        resp, body = live.request("POST", "/message:stream",
                                  {"message": user_message("stream me")},
                                  dict(V1))
        assert resp.status == 200 and b"TASK_STATE_COMPLETED" in body
    finally:
        live.httpd.shutdown()
    assert seen.of("answered") == [
        ("JSONRPC", "SendMessage", 200, None, False),
        ("HTTP+JSON", "GetTask", 200, None, False),
        ("JSONRPC", "GetTask", 200, "TaskNotFoundError", False),
        ("HTTP+JSON", "SendStreamingMessage", 200, None, True)]
    # Each request: started, then returned, then answered, the one before done first.
    kinds = [event[0] for event in seen.events if event[0] in ("started", "returned",
                                                              "answered")]
    assert kinds == ["started", "returned", "answered"] * 4


def test_an_observer_is_told_each_turn_and_the_state_it_left():
    seen = Recorder()
    server = a2a_min.Server(agent, observers=[seen])
    done = server.call("SendMessage", {"message": user_message("hi")}, CALL())
    failed = server.call("SendMessage", {"message": user_message("fail")}, CALL())
    assert seen.of("turn") == [(done["task"]["id"],), (failed["task"]["id"],)]
    assert seen.of("turn ended") == [(done["task"]["id"], "TASK_STATE_COMPLETED"),
                                     (failed["task"]["id"], "TASK_STATE_FAILED")]


def test_a_turn_the_client_continues_is_a_second_turn():
    seen = Recorder()

    def asks(ctx):
        if ctx.task is None:
            return a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "which one?")
        return "this one"
    server = a2a_min.Server(asks, observers=[seen])
    first = server.call("SendMessage", {"message": user_message("pick")}, CALL())
    task_id = first["task"]["id"]
    again = user_message("the red one")
    again["taskId"] = task_id
    server.call("SendMessage", {"message": again}, CALL())
    assert seen.of("turn ended") == [(task_id, "TASK_STATE_INPUT_REQUIRED"),
                                     (task_id, "TASK_STATE_COMPLETED")]


def test_an_observer_is_told_each_webhook_attempt_and_may_set_its_trace_headers():
    seen = Recorder()
    receiver = Receiver()
    server = a2a_min.Server(agent, observers=[seen], push_notifications=True,
                            push_allow=["127.0.0.1/32"])
    ok, failing = receiver.url("/ok"), receiver.url("/fail/1")    # (/fail/1: 500, then 204)
    try:
        for url in (ok, failing):
            server.call("SendMessage", {"message": user_message("hi"), "configuration": {
                "taskPushNotificationConfig": {"url": url}}}, CALL())
        deadline = time.monotonic() + 10
        while (failing, 204, None) not in seen.of("webhook ended") and \
                time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        server.shutdown()
        receiver.close()
    ended = seen.of("webhook ended")
    assert [e for e in ended if e[0] == failing][:2] == [(failing, 500, "retry"),
                                                         (failing, 204, None)], ended
    assert {e for e in ended if e[0] == ok} == {(ok, 204, None)}
    assert [w for w, in seen.of("webhook")] == [url for url, _, _ in ended]
    assert len(receiver.requests) == len(ended)
    assert all(r["headers"]["traceparent"] == "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
               for r in receiver.requests)


def test_grpc_calls_are_told_to_observers_and_written_in_the_access_log(caplog):
    if not grpc_available():
        pytest.skip("grpcio is not installed (pip install -e '.[grpc]')")
    from harness import GrpcClient
    seen = Recorder()
    server = a2a_min.Server(agent, observers=[seen], access_log="json")
    client = GrpcClient(server)
    try:
        with caplog.at_level(logging.INFO, logger="a2a_min.access"):
            client.result("SendMessage", {"message": user_message("hi")})
            client.call("GetTask", {"id": "nope"})
    finally:
        client.close()
    assert seen.of("answered") == [("GRPC", "SendMessage", "OK", None, False),
                                   ("GRPC", "GetTask", "NOT_FOUND", "TaskNotFoundError", False)]
    assert seen.of("started") == [("/lf.a2a.v1.A2AService/SendMessage",),
                                  ("/lf.a2a.v1.A2AService/GetTask",)]
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "a2a_min.access"]
    assert [(line["path"], line["a2a_method"], line["status"]) for line in lines] == [
        ("/lf.a2a.v1.A2AService/SendMessage", "SendMessage", "OK"),
        ("/lf.a2a.v1.A2AService/GetTask", "GetTask", "NOT_FOUND")]


def test_a_server_without_observers_has_none_and_options_come_first():
    assert a2a_min.Server(agent).observers == []
    mine = a2a_min.Observer()
    server = a2a_min.Server(agent, access_log=True, observers=[mine])
    assert [type(o).__name__ for o in server.observers] == ["AccessLog", "Observer"]
    assert server.observers[-1] is mine
    # The base class does nothing at each event: a server with it answers as without.
    answer = server.handle_http("GET", "/tasks/nope", "", dict(V1))
    assert answer.status == 404
