"""A2A 1.1 (the draft, branch dev-1.1): a task's generation and ifGenerationMatch,
served only to a client that sends A2A-Version: 1.1.

A task's generation starts at 1 and moves by one at each status or artifact
update, one event each; every Task and update event a 1.1 client reads
carries it (on a stream, the event's SSE id + 1). A message to a task with
configuration.ifGenerationMatch is refused with TASK_GENERATION_MISMATCH
(JSON-RPC -32010, HTTP 409, gRPC ABORTED) unless the task is at that
generation, at the moment it is written, also when two senders race, and
also across two Servers on one SQLite file. A 1.0 client sees none of it.

JSON-RPC and HTTP+JSON go over real sockets to the threaded host (Live);
gRPC over a real channel (harness.GrpcClient).
"""

import json
import threading
import types

import pytest

import a2a_min
from harness import GrpcClient, Live, RestClient, grpc_available, user_message

V10 = {"a2a-version": "1.0", "content-type": "application/json"}
V11 = {"a2a-version": "1.1", "content-type": "application/json"}
BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
SHAPE = {"JSONRPC": -32010, "HTTP+JSON": 409, "GRPC": "ABORTED"}


def agent(ctx):
    """"ask": INPUT_REQUIRED (the task waits for more); "gate": WORKING, then
    waits for the test's Event; else WORKING, two chunks, COMPLETED."""
    if ctx.text == "ask":
        yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "say more")
        return
    yield a2a_min.status_update("TASK_STATE_WORKING")
    if ctx.text == "gate":
        GATE.wait(10)
    yield "one "
    yield "two"


GATE = threading.Event()


def _response(resp, data):
    """http.client's answer as the harness clients read a Server's Response."""
    stream = [data] if resp.getheader("Content-Type", "").startswith("text/event-stream") \
        else None
    return types.SimpleNamespace(status=resp.status, body=data, stream=stream)


class _Socket:
    """The harness clients' handle_http, over a real socket to ``live``."""

    def __init__(self, live):
        self.live = live

    def handle_http(self, verb, path, query, headers, body):
        resp, data = self.live.request(verb, path + ("?" + query if query else ""),
                                       body or None, headers)
        return _response(resp, data)


def client(binding, server, live):
    from harness import Client
    if binding == "GRPC":
        if not grpc_available():
            pytest.skip("needs grpcio (the grpc extra)")
        return GrpcClient(server)
    made = (Client if binding == "JSONRPC" else RestClient)(server)
    made.server = _Socket(live)
    return made


@pytest.fixture(params=BINDINGS)
def site(request):
    server = a2a_min.Server(agent, name="gen", streaming=True)
    live = Live(server, timeout=5)
    made = client(request.param, server, live)
    made.binding = request.param
    yield made
    if request.param == "GRPC":
        made.close()
    live.close()
    server.shutdown(1)


def send(c, text, headers=V11, **fields):
    message = user_message(text, **{k: v for k, v in fields.items() if k != "configuration"})
    params = {"message": message}
    if "configuration" in fields:
        params["configuration"] = fields["configuration"]
    return c.call("SendMessage", params, headers=headers)


def events(c, method, params, headers=V11):
    out = c.stream(method, params, headers=headers)
    assert isinstance(out, list), out
    return [(i, e["result"]) for i, e in out]


def payload(event):
    (kind, body), = event.items()
    return kind, body


def test_a_1_0_client_sees_no_generation(site):
    task = send(site, "ask", V10)["result"]["task"]
    assert "generation" not in task
    got = site.call("GetTask", {"id": task["id"]}, headers=V10)["result"]
    assert "generation" not in got and got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    listed = site.call("ListTasks", {}, headers=V10)["result"]["tasks"]
    assert listed and all("generation" not in t for t in listed)
    streamed = events(site, "SendStreamingMessage", {"message": user_message("chunks")}, V10)
    assert streamed and all("generation" not in body for _, e in streamed
                            for _, body in [payload(e)])
    cancel = send(site, "gate", V10, configuration={"returnImmediately": True})
    done = site.call("CancelTask", {"id": cancel["result"]["task"]["id"]}, headers=V10)
    GATE.set()
    assert "generation" not in done["result"]
    GATE.clear()
    # a 1.0 client's ifGenerationMatch is a field 1.0 does not have: ignored, as before
    again = send(site, "more", V10, taskId=task["id"], contextId=task["contextId"],
                 configuration={"ifGenerationMatch": 99})
    assert again["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_generations_count_the_updates_one_event_each(site):
    streamed = events(site, "SendStreamingMessage", {"message": user_message("chunks")})
    generations = [int(payload(e)[1]["generation"]) for _, e in streamed]
    assert generations == list(range(1, len(generations) + 1)), streamed
    kinds = [payload(e)[0] for _, e in streamed]
    assert kinds[0] == "task" and set(kinds[1:]) <= {"statusUpdate", "artifactUpdate"}
    if site.binding != "GRPC":                    # an SSE event's id is its generation - 1
        assert [i + 1 for i, _ in streamed] == generations
    task_id = payload(streamed[0][1])[1]["id"]
    got = site.call("GetTask", {"id": task_id}, headers=V11)["result"]
    assert int(got["generation"]) == generations[-1]
    listed = site.call("ListTasks", {}, headers=V11)["result"]["tasks"]
    assert [int(t["generation"]) for t in listed if t["id"] == task_id] == [generations[-1]]
    sub = site.call("SendMessage", {"message": user_message("x")}, headers=V11)["result"]
    assert int(sub["task"]["generation"]) >= 4     # made, WORKING, two chunks, COMPLETED


def test_a_waiting_task_moves_on_with_the_next_message(site):
    first = send(site, "ask")["result"]["task"]
    g = int(first["generation"])
    assert g == 2                                   # made, then INPUT_REQUIRED
    follow = events(site, "SendStreamingMessage", {"message": user_message(
        "go on", taskId=first["id"], contextId=first["contextId"])})
    generations = [int(payload(e)[1]["generation"]) for _, e in follow]
    # the Task as the message left it (WORKING again: g + 1), then one more per update
    assert generations == list(range(g + 1, g + 1 + len(generations))), follow
    got = site.call("GetTask", {"id": first["id"]}, headers=V11)["result"]
    assert int(got["generation"]) == generations[-1]


def test_if_generation_match(site):
    task = send(site, "ask")["result"]["task"]
    g = int(task["generation"])
    ids = {"taskId": task["id"], "contextId": task["contextId"]}
    refused = send(site, "ask", **ids, configuration={"ifGenerationMatch": g - 1})["error"]
    shape = {"JSONRPC": refused["code"], "HTTP+JSON": refused.get("httpStatus"),
             "GRPC": refused.get("grpcStatus")}[site.binding]
    assert shape == SHAPE[site.binding], refused
    assert refused["code"] == -32010
    info = next(d for d in refused["data"] if d.get("reason"))
    assert info["reason"] == "TASK_GENERATION_MISMATCH"
    assert info["metadata"] == {"taskId": task["id"], "expectedGeneration": str(g - 1),
                                "currentGeneration": str(g)}
    unchanged = site.call("GetTask", {"id": task["id"]}, headers=V11)["result"]
    assert int(unchanged["generation"]) == g and len(unchanged["history"]) == len(task["history"])
    # the generation it is at: taken (ProtoJSON's int64 may come as a string too)
    taken = send(site, "ask", **ids, configuration={"ifGenerationMatch": str(g)})["result"]
    assert int(taken["task"]["generation"]) == g + 2          # WORKING, INPUT_REQUIRED again
    # a message that makes a task: ignored
    new = send(site, "ask", configuration={"ifGenerationMatch": 42})["result"]["task"]
    assert int(new["generation"]) == 2


def test_version_negotiation(site):
    if site.binding == "GRPC":
        pytest.skip("the version is metadata: the same check (test_grpc covers it)")
    refused = send(site, "x", {**V11, "a2a-version": "1.2"})["error"]
    assert "1.2" in refused["message"]
    assert "generation" in send(site, "x", {**V11, "a2a-version": "1.1.0"})["result"]["task"]


# -- two senders racing on one task -------------------------------------------------

def _race(servers, task, g):
    """Two threads send to ``task`` with ifGenerationMatch ``g`` at once, one
    through each of ``servers``: the JSON-RPC answers."""
    from harness import Client
    barrier, answers = threading.Barrier(2), []

    def one(server, n):
        c = Client(server)
        barrier.wait()
        answers.append(send(c, "ask", taskId=task["id"], contextId=task["contextId"],
                            configuration={"ifGenerationMatch": g}))
    threads = [threading.Thread(target=one, args=(s, n)) for n, s in enumerate(servers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    return answers


def _one_wins(answers):
    won = [a for a in answers if "result" in a]
    lost = [a["error"] for a in answers if "error" in a]
    assert len(won) == 1 and len(lost) == 1, answers
    reason = next(d["reason"] for d in lost[0]["data"] if d.get("reason"))
    assert reason in ("TASK_GENERATION_MISMATCH", "UNSUPPORTED_OPERATION"), lost


def test_two_racing_senders_one_wins():
    from harness import Client
    server = a2a_min.Server(agent, name="gen")
    try:
        for _ in range(10):
            task = send(Client(server), "ask")["result"]["task"]
            answers = _race([server, server], task, int(task["generation"]))
            _one_wins(answers)
    finally:
        server.shutdown(1)


_SCHEMAS = iter(range(1 << 30))


def shared_stores(kind, tmp_path):
    """A maker of stores that share one place: an SQLite file, or a PostgreSQL
    schema on the suite's own server."""
    if kind == "sqlite":
        import a2a_store
        path = str(tmp_path / "tasks.db")
        return lambda: a2a_store.SQLiteStore(path, store_poll=0.05)
    from conftest import postgres_server
    import os
    url = postgres_server().url          # (or a skip, a failure with A2A_REQUIRE_ALL=1)
    import a2a_postgres
    schema = f"gen{os.getpid()}_{next(_SCHEMAS)}"
    return lambda: a2a_postgres.PostgresStore(url, schema=schema)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_two_servers_on_one_store(tmp_path, kind):
    """Two Servers (two workers) on one store, then a third (a restart): the
    generation is the store's, and of two racing senders one wins."""
    from harness import Client
    store = shared_stores(kind, tmp_path)
    servers = [a2a_min.Server(agent, name="gen", store=store()) for _ in range(2)]
    try:
        for _ in range(6):
            task = send(Client(servers[0]), "ask")["result"]["task"]
            g = int(task["generation"])
            got = Client(servers[1]).call("GetTask", {"id": task["id"]}, headers=V11)
            assert int(got["result"]["generation"]) == g
            _one_wins(_race(servers, task, g))
        later = a2a_min.Server(agent, name="gen", store=store())
        got = Client(later).call("GetTask", {"id": task["id"]}, headers=V11)["result"]
        assert int(got["generation"]) == g + 2
        assert json.dumps(Client(later).call("GetTask", {"id": task["id"]}, headers=V10)
                          ).count("generation") == 0
        later.shutdown(1)
    finally:
        for s in servers:
            s.shutdown(1)


# -- long-poll: GetTask with currentGeneration ----------------------------------------

def _later(seconds, fn, *args):
    timer = threading.Timer(seconds, fn, args)
    timer.start()
    return timer


@pytest.fixture(params=BINDINGS)
def polled(request):
    """A site whose long-polls end after 0.8 s."""
    server = a2a_min.Server(agent, name="gen", streaming=True, long_poll_wait=0.8)
    live = Live(server, timeout=5)
    made = client(request.param, server, live)
    made.binding = request.param
    yield made, server
    if request.param == "GRPC":
        made.close()
    live.close()
    server.shutdown(1)


def _wake(server, task):
    from harness import Client
    send(Client(server), "ask", taskId=task["id"], contextId=task["contextId"])


def test_a_long_poll_wakes_when_the_task_moves_past_it(polled):
    import time
    site, server = polled
    task = send(site, "ask")["result"]["task"]
    g = int(task["generation"])
    _later(0.2, _wake, server, task)
    started = time.monotonic()
    got = site.call("GetTask", {"id": task["id"], "currentGeneration": g}, headers=V11)["result"]
    took = time.monotonic() - started
    assert int(got["generation"]) > g and 0.15 < took < 0.7, (got, took)


def test_a_long_poll_ends_at_its_wait_with_the_task_as_it_is(polled):
    import time
    site, server = polled
    task = send(site, "ask")["result"]["task"]
    g = int(task["generation"])
    for asked in (g, g + 5):             # (a generation still to come: the same wait)
        started = time.monotonic()
        got = site.call("GetTask", {"id": task["id"], "currentGeneration": asked},
                        headers=V11)["result"]
        took = time.monotonic() - started
        assert int(got["generation"]) == g and 0.75 < took < 2.5, (got, took)


def test_a_long_poll_answers_at_once_when_there_is_nothing_to_wait_for(polled):
    import time
    site, server = polled
    task = send(site, "ask")["result"]["task"]
    g = int(task["generation"])
    done = send(site, "x")["result"]["task"]
    for params, headers in (({"id": task["id"], "currentGeneration": g - 1}, V11),  # past it
                            ({"id": done["id"], "currentGeneration": 99}, V11),     # ended
                            ({"id": task["id"], "currentGeneration": g}, V10)):     # a 1.0 client
        started = time.monotonic()
        got = site.call("GetTask", params, headers=headers)["result"]
        assert time.monotonic() - started < 0.4 and got["id"] == params["id"]


def test_long_polls_wait_without_a_thread_each_on_the_event_loop():
    """200 long-polls on the asyncio host: no thread each; one message wakes
    them all, each with the task past the generation it asked about."""
    import http.client
    import time
    from harness import AsyncioHostClient, Client
    server = a2a_min.Server(agent, name="gen", long_poll_wait=20.0, max_caller_streams=500)
    host = AsyncioHostClient(server)
    try:
        task = send(Client(server), "ask")["result"]["task"]
        g = int(task["generation"])
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                           "params": {"id": task["id"], "currentGeneration": g}}).encode()
        conns = []
        before = threading.active_count()
        for _ in range(200):
            conn = host.connection(timeout=30)
            conn.request("POST", "/", body, V11)
            conns.append(conn)
        time.sleep(0.5)                   # (all read, all waiting)
        assert threading.active_count() - before < 10
        started = time.monotonic()
        _wake(server, task)
        answers = [json.loads(c.getresponse().read())["result"] for c in conns]
        assert time.monotonic() - started < 5
        assert all(int(a["generation"]) > g for a in answers)
        for c in conns:
            c.close()
    finally:
        host.close()
        server.shutdown(1)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_long_poll_sees_another_server_on_the_same_store(tmp_path, kind):
    """Two Servers on one store: a long-poll on one wakes at a message sent
    through the other (the store's news)."""
    import time
    from harness import Client
    store = shared_stores(kind, tmp_path)
    one, two = (a2a_min.Server(agent, name="gen", long_poll_wait=5.0, store=store())
                for _ in range(2))
    try:
        task = send(Client(one), "ask")["result"]["task"]
        g = int(task["generation"])
        _later(0.5, _wake, two, task)
        started = time.monotonic()
        got = Client(one).call("GetTask", {"id": task["id"], "currentGeneration": g},
                               headers=V11)["result"]
        took = time.monotonic() - started
        assert int(got["generation"]) > g and 0.4 < took < 3, (got, took)
    finally:
        one.shutdown(1)
        two.shutdown(1)


def test_long_polls_count_as_their_callers_streams():
    from harness import Client
    server = a2a_min.Server(agent, name="gen", long_poll_wait=0.8, max_caller_streams=1)
    try:
        task = send(Client(server), "ask")["result"]["task"]
        params = {"id": task["id"], "currentGeneration": int(task["generation"])}
        first = threading.Thread(target=Client(server).call, args=("GetTask", params),
                                 kwargs={"headers": V11})
        first.start()
        import time
        time.sleep(0.3)
        refused = Client(server).call("GetTask", params, headers=V11)["error"]
        assert "max_caller_streams" in refused["message"]
        first.join(5)
    finally:
        server.shutdown(1)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_long_poll_on_the_event_loop_sees_another_server(tmp_path, kind):
    """The same on the asyncio host, where the wait is a pending answer that
    the store's news settles."""
    import time
    from harness import AsyncioHostClient, Client
    store = shared_stores(kind, tmp_path)
    one, two = (a2a_min.Server(agent, name="gen", long_poll_wait=5.0, store=store())
                for _ in range(2))
    host = AsyncioHostClient(one)
    try:
        task = send(Client(two), "ask")["result"]["task"]
        g = int(task["generation"])
        _later(0.5, _wake, two, task)
        conn = host.connection(timeout=10)
        started = time.monotonic()
        conn.request("POST", "/", json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "GetTask",
            "params": {"id": task["id"], "currentGeneration": g}}).encode(), V11)
        got = json.loads(conn.getresponse().read())["result"]
        took = time.monotonic() - started
        conn.close()
        assert int(got["generation"]) > g and 0.4 < took < 3, (got, took)
    finally:
        host.close()
        one.shutdown(1)
        two.shutdown(1)


def test_a_long_poll_on_every_host(make_client):
    """Every binding and host (conftest.BINDINGS: in-process JSON-RPC and
    HTTP+JSON, gRPC, the threaded and asyncio servers, WSGI, ASGI under
    uvicorn, Lambda): a long-poll wakes at the message, and ends at its wait."""
    import time
    server = a2a_min.Server(agent, name="gen", long_poll_wait=0.6)
    client_ = make_client(server)
    task = send(client_, "ask")["result"]["task"]
    g = int(task["generation"])
    started = time.monotonic()
    got = client_.call("GetTask", {"id": task["id"], "currentGeneration": g}, headers=V11)
    assert int(got["result"]["generation"]) == g and 0.55 < time.monotonic() - started < 3
    _later(0.15, _wake, server, task)
    started = time.monotonic()
    got = client_.call("GetTask", {"id": task["id"], "currentGeneration": g}, headers=V11)
    assert int(got["result"]["generation"]) > g and time.monotonic() - started < 0.55
    server.shutdown(1)


def test_a_repeated_send_answers_with_the_generation_once(site):
    """A send repeated (the same message, the same Idempotency-Key), unary and
    as a stream: the task's generation, once (a JSON member given twice is no
    JSON two parsers agree on)."""
    headers = {**V11, "idempotency-key": "k-" + site.binding}
    message = user_message("x")
    first = site.call("SendMessage", {"message": message}, headers=headers)["result"]["task"]
    again = site.call("SendMessage", {"message": message}, headers=headers)["result"]["task"]
    assert again["id"] == first["id"] and again["generation"] == first["generation"]
    if site.binding == "GRPC":
        return
    headers["idempotency-key"] += "-stream"
    body = {"message": user_message("y")}
    path = "/message:stream"
    if site.binding == "JSONRPC":
        path, body = "/", {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                           "params": body}
    for _ in range(2):                      # the first, then its repeat
        raw = site.server.handle_http("POST", path, "", headers, json.dumps(body).encode())
        frames = [line for line in raw.body.split(b"\n") if line.startswith(b"data: ")]
        assert frames and all(f.count(b'"generation"') == 1 for f in frames), frames
