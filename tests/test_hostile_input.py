"""Content the server cannot keep, the races a terminal state must win, and the
smaller holes an attack review found. In-process (handle_http, with the
client's address given as ``peer``), over JSON-RPC and HTTP+JSON. The store's
own bounds (each caller's share, memory counted in bytes) are in test_store.py;
the hosts' own attacks in test_http_reader.py (and the asyncio server's client
that does not read, in test_asyncio_server.py)."""

import json
import threading
import time

import pytest

import a2a_min
from harness import V1, Client, answer, parse_sse, rpc, scenario_agent, user_message


# -- nothing unstorable gets in ------------------------------------------------------

UNSTORABLE = [  # (params, field named in the error)
    ({"message": {**user_message("x"), "parts": [{"text": "a\ud800b"}]}}, "message.parts[0].text"),
    ({"message": {**user_message("x"), "messageId": "\udfff"}}, "message.messageId"),
    ({"message": user_message("x"), "metadata": {"k": "\ud800"}}, "metadata.k"),
    ({"message": user_message("x"), "metadata": {"\ud800": 1}}, "metadata"),
    ({"message": {**user_message("x"), "parts": [{"data": {"a": ["\udc00"]}}]}},
     "message.parts[0].data.a[0]"),
    ({"message": user_message("x"), "metadata": json.loads('{"a":' * 40 + "1" + "}" * 40)},
     "metadata"),
    ({"message": {**user_message("x"), "parts": [{"data": json.loads("[" * 200 + "]" * 200)}]}},
     "message.parts[0].data"),
]


@pytest.mark.parametrize("params, field", UNSTORABLE, ids=range(len(UNSTORABLE)))
def test_unstorable_content_is_refused_at_parse_naming_the_field(params, field):
    server = a2a_min.Server(scenario_agent)
    got = answer(rpc(server, "SendMessage", params))
    assert got["error"]["code"] == -32602, got
    violation = got["error"]["data"][1]["fieldViolations"][0]["field"]
    assert violation.startswith(field), violation
    rest = server.handle_http("POST", "/message:send", "", dict(V1),
                              json.dumps(params, ensure_ascii=True).encode())
    assert rest.status == 400 and b"INVALID_PARAMS" in rest.body
    assert answer(rpc(server, "ListTasks", {}))["result"]["tasks"] == []   # nothing was made


def test_a_lone_surrogate_in_a_jsonrpc_id_is_answered_not_crashed():
    server = a2a_min.Server(scenario_agent)
    body = b'{"jsonrpc":"2.0","id":"\\ud800","method":"tasks/get\\udfff","params":{}}'
    got = server.handle_http("POST", "/", "", dict(V1), body)
    assert got.status == 200
    assert json.loads(got.body)["id"] == "\ud800"                # escaped, as JSON allows


@pytest.mark.parametrize("output", [
    "text \ud800",
    a2a_min.artifact_update({"data": json.loads("[" * 50 + "]" * 50)}),
    a2a_min.status_update("TASK_STATE_WORKING", "bad \udc00"),
])
@pytest.mark.parametrize("kind", ["yield", "stream"])
def test_agent_output_that_cannot_be_stored_fails_the_task_and_is_stored(output, kind):
    def agent(ctx):
        yield a2a_min.status_update("TASK_STATE_WORKING")
        yield output
    server = a2a_min.Server(agent)
    client = Client(server)
    if kind == "stream":
        events = client.stream("SendStreamingMessage", {"message": user_message("x")})
        final = events[-1][1]["result"]
        task_id = events[0][1]["result"]["task"]["id"]
        assert final["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"
    else:
        task_id = client.send("x")["task"]["id"]
    task = client.result("GetTask", {"id": task_id})
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    json.dumps(task).encode("utf-8")                             # storable, sendable
    assert server.store.stats()["idle"] == 1                     # not WORKING forever


def test_a_first_answer_that_cannot_be_stored_fails_the_request_and_leaves_no_task():
    server = a2a_min.Server(lambda ctx: "text \ud800")
    client = Client(server)
    assert client.error("SendMessage", {"message": user_message("x")})["code"] == -32006
    assert client.result("ListTasks", {})["tasks"] == []


# -- a terminal state is final, whatever races it ---------------------------------------

def test_cancel_racing_a_continuing_message_ends_canceled():
    def agent(ctx):
        if ctx.task is None:
            yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "more?")
        else:
            yield "done"
    for _ in range(30):
        server = a2a_min.Server(agent)
        client = Client(server)
        task_id = client.send("start")["task"]["id"]
        out = {}
        threads = [
            threading.Thread(target=lambda: out.update(cancel=client.call(
                "CancelTask", {"id": task_id}))),
            threading.Thread(target=lambda: out.update(send=client.call(
                "SendMessage", {"message": user_message("go", taskId=task_id)})))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        final = client.result("GetTask", {"id": task_id})["status"]["state"]
        if "result" in out["cancel"]:
            assert out["cancel"]["result"]["status"]["state"] == "TASK_STATE_CANCELED"
            assert final == "TASK_STATE_CANCELED"
        else:
            assert final == "TASK_STATE_COMPLETED"


def test_subscribe_racing_the_end_of_a_turn_never_hangs():
    def agent(ctx):
        yield a2a_min.status_update("TASK_STATE_WORKING")
        yield "x"
    server = a2a_min.Server(agent, keepalive_interval=0.2)
    client = Client(server)
    for _ in range(50):
        task_id = client.send("go", configuration={"returnImmediately": True})["task"]["id"]
        started = time.monotonic()
        resp = client.raw({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
                           "params": {"id": task_id}})
        if resp.stream is not None:
            frames = b""
            for chunk in resp.stream:
                frames += chunk
                assert time.monotonic() - started < 5
            assert b"TASK_STATE_COMPLETED" in frames
        else:
            assert json.loads(resp.body)["error"]["code"] == -32004   # already finished


# -- smaller holes ---------------------------------------------------------------------

def test_head_on_a_stream_route_opens_no_subscription():
    server = a2a_min.Server(scenario_agent)
    client = Client(server)
    task_id = client.send("wait")["task"]["id"]
    got = server.handle_http("HEAD", f"/tasks/{task_id}:subscribe", "", dict(V1), b"")
    assert got.status == 405 and got.stream is None
    with server.live.lock:
        assert task_id not in server.live.channels or not server.live.channels[task_id].followers


@pytest.mark.parametrize("value", ["\u00b2", "-1", "1e3", "9" * 40, " 3 "])
def test_odd_last_event_ids_are_ignored_not_500(value):
    server = a2a_min.Server(scenario_agent)
    task_id = Client(server).send("wait")["task"]["id"]
    for headers, query in (({**V1, "last-event-id": value}, ""),
                           (V1, "lastEventId=" + value.encode("utf-8").hex())):
        got = server.handle_http("POST", "/", query, dict(headers), json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": task_id}}).encode())
        assert got.status == 200


def test_cookie_authentication_refuses_a_cross_site_simple_post():
    auth = a2a_min.ApiKeyAuth({"k": "alice"}, name="session", location="cookie")
    server = a2a_min.Server(scenario_agent, authenticate=auth)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                       "params": {"message": user_message("x")}}).encode()
    headers = {"a2a-version": "1.0", "cookie": "session=k"}
    got = server.handle_http("POST", "/", "", headers, body)
    assert json.loads(got.body)["error"]["code"] == -32005
    got = server.handle_http("POST", "/message:send", "", headers, json.dumps(
        {"message": user_message("x")}).encode())
    assert got.status == 415 and b"CONTENT_TYPE_NOT_SUPPORTED" in got.body
    ok = server.handle_http("POST", "/", "", {**headers, "content-type": "application/json"}, body)
    assert "result" in json.loads(ok.body)


# -- what the attack review found ------------------------------------------------------

def test_a_continuing_message_that_fails_to_begin_leaves_the_task_open():
    server = a2a_min.Server(scenario_agent, push_notifications=True, push_allow=["127.0.0.1/32"],
                            max_push_configs=1)
    client = Client(server)
    task_id = client.send("wait")["task"]["id"]
    client.result("CreateTaskPushNotificationConfig",
                  {"taskId": task_id, "url": "http://127.0.0.1:9/a"})
    error = client.error("SendMessage", {"message": user_message("go", taskId=task_id),
                                         "configuration": {"taskPushNotificationConfig": {
                                             "url": "http://127.0.0.1:9/b"}}})
    assert error["code"] == -32602                         # the config limit
    client.result("DeleteTaskPushNotificationConfig",
                  {"taskId": task_id, "id": client.result("ListTaskPushNotificationConfigs", {
                      "taskId": task_id})["configs"][0]["id"]})
    done = client.send("go", **{"message": user_message("go", taskId=task_id)})
    assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"   # not "still working"
    assert server.shutdown(grace=1) == {"turns": 0, "deliveries": 0}


def test_push_config_fields_are_bounded():
    server = a2a_min.Server(scenario_agent, push_notifications=True)
    client = Client(server)
    task_id = client.send("wait")["task"]["id"]
    for config, field in (({"url": "https://example.com/" + "a" * 3000}, "url"),
                          ({"url": "https://example.com/", "token": "t" * 5000}, "token")):
        error = client.error("CreateTaskPushNotificationConfig", {"taskId": task_id, **config})
        assert error["data"][1]["fieldViolations"][0]["field"] == field
